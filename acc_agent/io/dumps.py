"""Dump containers: the msprobe layout users already have, plus plain tensor folders and files.

``open_dump`` turns a path into a :class:`Dump` (entries in execution order, ``load(name)``
streaming one tensor at a time) or, for a ``step*/rank*`` tree with several ranks, a
:class:`DumpSet` whose ranks are paired rank by rank. Names follow msprobe: a row is called by its
``data_name`` without extension (``Functional.linear.0.forward.input.0``) so results line up with
msprobe's CSV.

Accepted:
- an msprobe ``dump.json`` file, or the rank/proc directory holding it;
- a dump root with ``step*/rank*`` (or ``step*/proc*``, or ``rank*``) sub-directories;
- a directory of ``.npy`` (or ``.pt``/``.safetensors``) files, one tensor per file, named by tensor;
- a single ``.npz`` or ``.safetensors`` file (one entry per array).
"""

from __future__ import annotations

import gc
import json
import operator
import os
import re
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import cast

from acc_agent.errors import AccAgentError
from acc_agent.io import tensors
from acc_agent.io.arrays import Array

_TENSOR_TYPES = ("torch.Tensor", "mindspore.Tensor", "numpy.ndarray", "torch.nn.parameter.Parameter")
_RANK_DIR = re.compile(r"^(rank|proc)\d*$")
_STEP_DIR = re.compile(r"^step\d+$")


@dataclass(slots=True)
class DumpEntry:
    """One tensor of a dump, as its dump.json (or file) describes it.

    ``stats`` keeps msprobe's Max/Min/Mean/Norm as dump.json wrote them (float, int, or bool for
    bool tensors; None for an empty tensor): msprobe's statistics compare tells ``6`` from ``6.0``
    and ``true`` from ``1``, so converting here would lose what its CSV prints. Slots, because a
    statistics dump holds ~300k of these per side.
    """

    name: str
    data_name: str | None
    module_key: str
    role: str
    dtype: str | None = None
    shape: list[int] | None = None
    stats: dict[str, float | None] = field(default_factory=dict)
    requires_grad: bool | None = None
    index: int = 0
    container_key: str | None = None
    md5: str | None = None

    @property
    def has_data(self) -> bool:
        """Whether a tensor file stands behind the entry (statistics-only dumps have none)."""
        return self.data_name is not None or self.container_key is not None


@dataclass(frozen=True, slots=True)
class ScalarArg:
    """A non-tensor argument or output (int, float, bool, str, None, slice, torch.dtype, ...).

    ``name`` is msprobe's row name (``Functional.gelu.0.forward.input.approximate``); ``type`` is
    dump.json's ``type`` ("int", "str", "slice", ...; "None" for a null leaf). msprobe compares these
    too: a differing scalar argument is one of its error rules, and their NormRelativeErr counts
    among an API's inputs in its warning rule.
    """

    name: str
    value: object
    type: str


def normalize_dtype(raw: object) -> str | None:
    """``torch.float32`` / ``Float32`` / ``float32`` -> ``float32`` (``None`` if unknown)."""
    if raw is None:
        return None
    text = str(raw).strip()
    for prefix in ("torch.", "mindspore.", "numpy.", "np."):
        if text.startswith(prefix):
            text = text[len(prefix):]
    text = text.lower()
    aliases = {"half": "float16", "float": "float32", "double": "float64", "bf16": "bfloat16", "fp16": "float16",
               "fp32": "float32", "bool_": "bool"}
    return aliases.get(text, text)


class Dump:
    """One rank's dump: entries in execution order and a safe per-tensor loader."""

    def __init__(self, source: Path, kind: str, entries: list[DumpEntry], data_dir: Path | None,
                 meta: dict[str, object] | None = None, scalars: dict[str, list[ScalarArg]] | None = None) -> None:
        self.source = source
        self.kind = kind
        self.entries = entries
        self.data_dir = data_dir
        self.meta: dict[str, object] = meta or {}
        #: Non-tensor arguments per API/module key (msprobe dump.json only), in dump order.
        self.scalars: dict[str, list[ScalarArg]] = scalars or {}
        self.by_name: dict[str, DumpEntry] = {}
        for e in entries:
            self.by_name.setdefault(e.name, e)

    def __repr__(self) -> str:
        return f"Dump({self.kind}, {self.source}, {len(self.entries)} entries)"

    def __iter__(self) -> Iterator[DumpEntry]:
        return iter(self.entries)

    def __len__(self) -> int:
        return len(self.entries)

    def entry(self, name: str) -> DumpEntry:
        try:
            return self.by_name[name]
        except KeyError:
            raise AccAgentError("missing_entry", f"{self.source} has no tensor named {name!r}",
                                hint="Use a row name from this dump (see the comparison's rows).",
                                path=str(self.source)) from None

    def path_of(self, name: str) -> Path | None:
        """File behind an entry (inside the dump directory), or None for container members."""
        e = self.entry(name)
        if e.container_key is not None:
            return self.source
        if e.data_name is None or self.data_dir is None:
            return None
        return tensors.safe_join(self.data_dir, e.data_name)

    def load(self, name: str) -> Array:
        """The tensor ``name`` (memory-mapped where the format allows). Raises AccAgentError."""
        e = self.entry(name)
        if e.container_key is not None:
            if self.source.suffix.lower() == ".npz":
                return tensors.read_npz_key(self.source, e.container_key)
            return tensors.read_safetensors_key(self.source, e.container_key)
        if e.data_name is None or self.data_dir is None:
            raise AccAgentError(
                "no_tensor_data",
                f"{name} has statistics only in {self.source} (task={self.meta.get('task')!r})",
                hint="Re-dump with msprobe task 'tensor' to compare real data.",
                path=str(self.source),
            )
        path = tensors.safe_join(self.data_dir, e.data_name)
        if not path.exists():
            raise tensors.missing_file(path)
        return tensors.read_tensor(path)

    def stream(self, name: str) -> Array | tensors.NpyStream:
        """Like :meth:`load`, but a C-ordered ``.npy`` comes back as a chunk reader (see NpyStream)."""
        e = self.entry(name)
        if e.container_key is None and e.data_name is not None and self.data_dir is not None \
                and e.data_name.lower().endswith(".npy"):
            path = tensors.safe_join(self.data_dir, e.data_name)
            if not path.exists():
                raise tensors.missing_file(path)
            stream = tensors.NpyStream(path)
            if not stream.fortran:
                return stream
        return self.load(name)

    def nbytes(self) -> int:
        """Bytes of tensor data on disk (for choosing parallelism and for reports)."""
        if self.data_dir is None:
            return self.source.stat().st_size if self.source.is_file() else 0
        if not self.data_dir.is_dir():
            return 0
        with os.scandir(self.data_dir) as it:
            return sum(e.stat().st_size for e in it if e.is_file(follow_symlinks=False))


@dataclass
class DumpSet:
    """Several ranks (and/or steps) of one run; keys like ``step0/rank1``."""

    root: Path
    ranks: dict[str, Dump]


# --------------------------------------------------------------------------- msprobe dump.json

_TENSOR_TYPE_SET = frozenset(_TENSOR_TYPES)
_STAT_KEYS = ("Max", "Min", "Mean", "Norm")
#: What json.loads gives for a number (or a bool tensor's Max/Min); kept as it is (see DumpEntry).
_STAT_TYPES = frozenset({float, int, bool, type(None)})
_GET_STATS = operator.itemgetter(*_STAT_KEYS)
_P2P = "torch.distributed.P2POp"
_NONFINITE_TEXT = frozenset({"NaN", "Infinity", "-Infinity"})

_ROLE_OF = {
    "input_args": ("input", "input"),
    "input_kwargs": ("input", "input"),
    "input": ("input", "input"),
    "output": ("output", "output"),
    "parameters": ("parameters", "parameter"),
}


@contextmanager
def gc_paused() -> Iterator[None]:
    """Pause the cyclic garbage collector while hundreds of thousands of small objects are built.

    A 90 MB statistics dump.json becomes ~3M containers; with the collector on, its generation
    scans re-traverse everything built so far and almost double the parse time. Nothing built here
    forms reference cycles, so reference counting still frees all of it.

    On the way out everything built moves to the oldest generation (``freeze`` then ``unfreeze``):
    left in the youngest, the first allocation after ``enable`` would start a collection that walks
    all of it (0.7 s of a 13 s statistics comparison). The oldest generation is scanned only after
    many more survivors, by which time a caller that lives on (a server) has dropped the comparison.
    """
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.freeze()
            gc.unfreeze()
            gc.enable()


def _num(v: object) -> float | None:
    if not isinstance(v, (str, int, float)):  # None, a list or an object: float() would raise TypeError
        return None
    try:
        return float(v)
    except ValueError:
        return None


class _Walker:
    """Turns dump.json's ``data`` into entries and scalar arguments, named like msprobe's rows.

    One pass with the common case (a list of tensor leaves) handled inline: this runs over ~300k
    leaves per side of a default (statistics) L1 dump, where every call per leaf shows. dtype
    strings and shape lists are shared between entries that have the same ones.
    """

    __slots__ = ("entries", "scalars", "_dtypes", "_shapes", "_quoted", "_like")

    def __init__(self, nonfinite_quoted: bool = False, like: Dump | None = None) -> None:
        self._quoted = nonfinite_quoted
        # the other run's entries by name: an equal name (and API key) reuses its string objects
        self._like: dict[str, DumpEntry] = like.by_name if like is not None else {}
        self.entries: list[DumpEntry] = []
        self.scalars: dict[str, list[ScalarArg]] = {}
        self._dtypes: dict[str, str | None] = {}
        self._shapes: dict[tuple[object, ...], list[int]] = {}

    def api(self, key: str, body: dict[str, object]) -> None:
        """One API/module entry of dump.json."""
        grad = ".parameters_grad" in key
        found: list[ScalarArg] = []
        for part, value in body.items():
            if grad:
                # msprobe names a parameter gradient ``{key}.{param}`` and numbers no list inside it.
                self._value(value, f"{key}.{part}", key, "parameter_grad", False, found)
                continue
            roles = _ROLE_OF.get(part)
            if roles is None:
                continue
            prefix = f"{key}.{roles[0]}"
            if type(value) is list:
                tensor = self._tensor
                for i, item in enumerate(value):
                    if type(item) is dict and item.get("type") in _TENSOR_TYPE_SET and "class_type" not in item:
                        tensor(item, f"{prefix}.{i}", key, roles[1])
                    else:
                        self._value(item, f"{prefix}.{i}", key, roles[1], True, found)
            else:
                self._value(value, prefix, key, roles[1], True, found)
        if found:
            self.scalars[key] = found

    def _value(self, value: object, prefix: str, key: str, role: str, numbered: bool,
               found: list[ScalarArg]) -> None:
        # type() is, not isinstance: a third of the cost on the hot path; the casts say what it found
        kind = type(value)
        if kind is list or kind is tuple:
            for i, item in enumerate(cast("list[object] | tuple[object, ...]", value)):
                self._value(item, f"{prefix}.{i}" if numbered else prefix, key, role, numbered, found)
        elif kind is dict:
            self._dict(cast("dict[str, object]", value), prefix, key, role, numbered, found)
        elif value is None:
            found.append(ScalarArg(prefix, None, "None"))  # msprobe keeps a null argument as a row
        # a bare number or string outside a {"type": ..., "value": ...} leaf is not a row in msprobe

    def _dict(self, d: dict[str, object], name: str, key: str, role: str, numbered: bool,
              found: list[ScalarArg]) -> None:
        kind = d.get("type")
        if d.get("class_type") == _P2P:  # a P2POp wraps its tensor
            inner = d.get("tensor")
            if type(inner) is dict:
                self._tensor(inner, name, key, role)
            else:
                found.append(ScalarArg(name, None, "None"))
            return
        if type(kind) is str:
            if "data_name" in d or kind in _TENSOR_TYPE_SET or ("value" not in d and "shape" in d and "dtype" in d):
                self._tensor(d, name, key, role)
            else:
                value = d["value"] if "value" in d else d.get("group_ranks")
                if self._quoted and type(value) is str and value in _NONFINITE_TEXT:
                    value = float(value)
                found.append(ScalarArg(name, value, kind))
            return
        for k, v in d.items():
            self._value(v, f"{name}.{k}", key, role, numbered, found)

    def _tensor(self, leaf: dict[str, object], name: str, key: str, role: str) -> None:
        data_name = leaf.get("data_name")
        if data_name is not None:
            data_name, name = _data_name(data_name, name)
        try:
            mx, mn, mean, norm = _GET_STATS(leaf)
        except KeyError:
            stats = {k: _stat(leaf[k]) for k in _STAT_KEYS if k in leaf}
        else:
            if type(mx) is float and type(mn) is float and type(mean) is float and type(norm) is float:
                stats = {"Max": mx, "Min": mn, "Mean": mean, "Norm": norm}
            else:
                stats = {"Max": _stat(mx), "Min": _stat(mn), "Mean": _stat(mean), "Norm": _stat(norm)}
        raw_dtype = leaf.get("dtype")
        if type(raw_dtype) is str:
            dtype = self._dtypes.get(raw_dtype, "")
            if dtype == "":
                dtype = self._dtypes[raw_dtype] = normalize_dtype(raw_dtype)
        else:
            dtype = normalize_dtype(raw_dtype)
        shape = leaf.get("shape")
        if type(shape) is list:
            try:  # noqa: SIM105 - contextlib.suppress costs a context manager per leaf
                shape = self._shapes.setdefault(tuple(shape), shape)
            except TypeError:  # a nested or odd shape: keep it as written
                pass
        else:
            shape = None
        grad = leaf.get("requires_grad")
        md5 = leaf.get("md5")
        twin = self._like.get(name)
        if twin is not None:
            name = twin.name  # one string for both runs' rows: ~30 MB less on a 300k-tensor pair
            if twin.module_key == key:
                key = twin.module_key
        entries = self.entries
        entries.append(DumpEntry(name, data_name, key, role, dtype, shape, stats,
                                 grad if type(grad) is bool else None, len(entries), None,
                                 md5 if type(md5) is str else None))


def _data_name(data_name: object, name: str) -> tuple[str | None, str]:
    """(data_name, row name): msprobe names a row by its file name without the extension.

    A name with a path in it is kept as the data_name (and refused on load) but the row keeps its
    structural name; "" and "-1" mean no file."""
    if type(data_name) is not str or data_name in ("", "-1"):
        return None, name
    plain = not any(c in data_name for c in "/\\") and not data_name.startswith("..")
    return data_name, data_name.rsplit(".", 1)[0] if plain and "." in data_name else name


def _stat(v: object) -> float | None:
    return cast("float | None", v) if type(v) in _STAT_TYPES else _num(v)


def _parse_msprobe(dump_json: Path, like: Dump | None = None) -> Dump:
    try:
        raw = dump_json.read_bytes()
    except FileNotFoundError:
        raise AccAgentError("missing_file", f"{dump_json} does not exist",
                            hint="Pass the dump.json, its rank directory, or the dump root.",
                            path=str(dump_json)) from None
    except OSError as exc:
        raise AccAgentError("invalid_dump_json", f"cannot read {dump_json.name}: {exc}",
                            hint="Re-copy the dump; dump.json must be UTF-8 JSON.", path=str(dump_json)) from None
    with gc_paused():
        doc, data, quoted = _load_json(raw, dump_json)
        del raw
        walker = _Walker(quoted, like)
        try:
            for key in list(data):
                # each call's JSON is freed as soon as it is walked, so the entries built next reuse
                # its memory: with the whole document freed at the end, the entries sat scattered over
                # all its memory and kept ~2x their size resident
                body = data.pop(key)
                if isinstance(body, dict):
                    walker.api(key, body)
        except RecursionError:  # the walker recurses per nesting level; msprobe nests a few levels
            raise _too_deep(dump_json, f"call {key!r}") from None
    data_dir = dump_json.parent / "dump_tensor_data"
    meta = {k: doc.get(k) for k in ("task", "level", "framework")}
    return Dump(dump_json, "msprobe", walker.entries, data_dir, meta, walker.scalars)


_NONFINITE = re.compile(rb"-?Infinity|NaN")


def _fast_loads(raw: bytes) -> object:
    """orjson's parse when it is installed (about 2x faster than json on a 90 MB dump.json), else None.

    msprobe writes NaN/Infinity as bare tokens, which orjson refuses; they are quoted first and the
    walker reads the strings back as floats. A token inside a string breaks the quoted text's JSON,
    so such a file (and any other orjson refusal) falls back to json, which then decides."""
    try:
        import orjson
    except ImportError:
        return None
    if b"NaN" in raw or b"Infinity" in raw:
        raw = _quote_nonfinite(raw)
    try:
        return orjson.loads(raw)
    except orjson.JSONDecodeError:
        return None


def _quote_nonfinite(raw: bytes) -> bytes:
    """``raw`` with every ``NaN``, ``Infinity`` and ``-Infinity`` token in double quotes.

    Four ``bytes.replace`` passes quote them as the regex ``-?Infinity|NaN`` finds them (its leftmost, longest
    match: "-Infinity" whole), 5x faster on an overflowed 99 MB dump.json (0.5 s against 2.8 s). "-Infinity" is
    parked on a NUL byte, which valid JSON text never holds; a file that has one goes through the regex."""
    if b"\x00" in raw:
        return _NONFINITE.sub(rb'"\g<0>"', raw)
    return (raw.replace(b"-Infinity", b"\x00").replace(b"Infinity", b'"Infinity"').replace(b"NaN", b'"NaN"')
            .replace(b"\x00", b'"-Infinity"'))


def _too_deep(dump_json: Path, where: str) -> AccAgentError:
    return AccAgentError(
        "invalid_dump_json",
        f"{dump_json.name} nests lists/objects too deeply ({where}) to be an msprobe dump",
        hint="msprobe writes a few levels per call: the file is damaged or not a dump.json; re-run the dump.",
        path=str(dump_json),
    )


def _load_json(raw: bytes, dump_json: Path) -> tuple[dict[str, object], dict[str, object], bool]:
    """The parsed document, its ``data`` object, and whether NaN/Infinity in it were read as strings
    (see _fast_loads)."""
    doc = _fast_loads(raw)
    quoted = doc is not None and (b"NaN" in raw or b"Infinity" in raw)
    if doc is None:
        try:
            doc = json.loads(raw.decode("utf-8"))
        except RecursionError:
            raise _too_deep(dump_json, "the JSON document") from None
        except UnicodeDecodeError as exc:
            raise AccAgentError("invalid_dump_json", f"cannot read {dump_json.name}: {exc}",
                                hint="Re-copy the dump; dump.json must be UTF-8 JSON.", path=str(dump_json)) from None
        except json.JSONDecodeError as exc:
            raise AccAgentError(
                "invalid_dump_json",
                f"{dump_json.name} is not valid JSON (line {exc.lineno}, column {exc.colno}: {exc.msg})",
                hint="The dump was probably cut off while writing; re-run the msprobe dump or restore the file.",
                path=str(dump_json),
            ) from None
    if not isinstance(doc, dict) or not isinstance(doc.get("data"), dict):
        raise AccAgentError(
            "invalid_dump_json",
            f"{dump_json.name} has no 'data' object: not an msprobe dump.json",
            hint="Point at the dump.json written by msprobe's PrecisionDebugger.",
            path=str(dump_json),
        )
    return doc, doc["data"], quoted


# --------------------------------------------------------------------------- plain containers


def _tensor_dir(directory: Path) -> Dump:
    files = sorted(p for p in directory.iterdir()
                   if p.is_file() and p.suffix.lower() in (".npy", ".pt", ".pth", ".safetensors"))
    entries = [DumpEntry(name=p.stem, data_name=p.name, module_key=p.stem, role="tensor", index=i)
               for i, p in enumerate(files)]
    for e, p in zip(entries, files, strict=True):
        if p.suffix.lower() == ".npy":
            _fill_npy_header(e, p)
    return Dump(directory, "tensor_dir", entries, directory)


def _fill_npy_header(entry: DumpEntry, path: Path) -> None:
    """dtype and shape from the .npy header, without reading data (errors surface on load)."""
    try:
        with tensors.open_regular(path) as fh:
            # tensors' reader, not numpy's: numpy reads whatever header length a file claims first
            shape, _, dtype, _ = tensors._npy_header(fh)
        entry.dtype = normalize_dtype(str(dtype))
        entry.shape = [int(s) for s in shape]
    except Exception:  # noqa: BLE001 - header problems are reported when the tensor is loaded
        pass


def _npz(path: Path) -> Dump:
    keys = tensors.npz_keys(path)
    entries = [DumpEntry(name=k, data_name=None, module_key=k, role="tensor", index=i, container_key=k)
               for i, k in enumerate(keys)]
    return Dump(path, "npz", entries, None)


def _safetensors(path: Path) -> Dump:
    _, header = tensors.safetensors_index(path)
    entries = []
    for i, (k, info) in enumerate(header.items()):
        code = str(info.get("dtype")) if isinstance(info, dict) else None
        entries.append(DumpEntry(
            name=k, data_name=None, module_key=k, role="tensor", index=i, container_key=k,
            dtype=tensors._SAFETENSORS_DTYPES.get(code or "", None),
            shape=tensors.safetensors_shape(info),  # None for a damaged entry: its load says why
        ))
    return Dump(path, "safetensors", entries, None)


# --------------------------------------------------------------------------- discovery


def _rank_dirs(root: Path) -> dict[str, Path]:
    """``step*/rank*`` (or ``rank*``/``proc*``) directories holding a dump.json, keyed by relative path."""
    found: dict[str, Path] = {}
    for child in sorted(root.iterdir()):
        if not child.is_dir():
            continue
        if _STEP_DIR.match(child.name):
            subs = [sub for sub in sorted(child.iterdir())
                    if sub.is_dir() and _RANK_DIR.match(sub.name) and (sub / "dump.json").is_file()]
            for sub in subs:
                # A lone proc<pid> folder (non-distributed run) is keyed by its step only: the pid
                # differs between the golden and the target run and must not block pairing.
                lone_proc = len(subs) == 1 and sub.name.startswith("proc")
                found[child.name if lone_proc else f"{child.name}/{sub.name}"] = sub
            if (child / "dump.json").is_file():
                found[child.name] = child
        elif _RANK_DIR.match(child.name) and (child / "dump.json").is_file():
            found[child.name] = child
    return found


def open_dump_set(path: str | Path, like: DumpSet | None = None) -> DumpSet:
    """Like :func:`open_dump`, always as a set (a single dump becomes one rank keyed ``""``).

    ``like``: the other run's dumps, already open; equal row names then share one string (memory
    only: nothing else changes)."""
    p = Path(path)
    _require_dump_path(p)
    if p.is_dir() and not (p / "dump.json").is_file():
        ranks = _rank_dirs(p)
        if ranks:
            return DumpSet(p, {k: _parse_msprobe(d / "dump.json", _like(like, k)) for k, d in ranks.items()})
    return DumpSet(p, {"": _open_single(p, _like(like, ""))})


def rank_sources(path: str | Path) -> dict[str, Path]:
    """The rank keys of a dump and the file each one opens from, without parsing any dump.json.

    ``{"step0/rank0": .../step0/rank0/dump.json, ...}`` for a ``step*/rank*`` tree, else
    ``{"": path}``; ``open_dump_set(source).ranks[""]`` then gives what ``open_dump_set(path)``
    has under that key. Why: with hundreds of ranks each rank's dump.json is parsed by the worker
    that compares it, not one after the other by the process that hands out the work."""
    p = Path(path)
    _require_dump_path(p)
    if p.is_dir() and not (p / "dump.json").is_file():
        ranks = _rank_dirs(p)
        if ranks:
            return {k: d / "dump.json" for k, d in ranks.items()}
    return {"": p}


def _require_dump_path(p: Path) -> None:
    """A dump is a regular file or a folder: anything else (a FIFO, a device, an over-long name, a link
    loop) is refused with the reason before any open could block or raise."""
    if not tensors.path_exists(p):
        raise AccAgentError("missing_file", f"{p} does not exist",
                            hint="Pass an msprobe dump.json, its rank directory, a step*/rank* dump root, "
                                 "a folder of .npy files, or one .npz/.safetensors file.", path=str(p))
    if not p.is_dir():
        tensors.require_regular(p)


def _like(like: DumpSet | None, key: str) -> Dump | None:
    if like is None:
        return None
    if key in like.ranks:
        return like.ranks[key]
    return next(iter(like.ranks.values())) if len(like.ranks) == 1 else None


def open_dump(path: str | Path) -> Dump | DumpSet:
    """Open any supported dump; a multi-rank tree gives a :class:`DumpSet`, anything else a :class:`Dump`."""
    ds = open_dump_set(path)
    if len(ds.ranks) == 1:
        return next(iter(ds.ranks.values()))
    return ds


def _open_single(p: Path, like: Dump | None = None) -> Dump:
    if not p.exists():
        raise AccAgentError("missing_file", f"{p} does not exist",
                            hint="Pass an msprobe dump.json, its rank directory, a step*/rank* dump root, "
                                 "a folder of .npy files, or one .npz/.safetensors file.", path=str(p))
    if p.is_file():
        suffix = p.suffix.lower()
        if suffix == ".json":
            return _parse_msprobe(p, like)
        if suffix == ".npz":
            return _npz(p)
        if suffix == ".safetensors":
            return _safetensors(p)
        raise AccAgentError("unsupported_format", f"{p.name} is not a dump",
                            hint="For one tensor file per side use compare-tensors; compare-dumps takes a "
                                 "dump.json, a dump directory, or an .npz/.safetensors file.", path=str(p))
    if (p / "dump.json").is_file():
        return _parse_msprobe(p / "dump.json", like)
    dump = _tensor_dir(p)
    if not dump.entries:
        raise AccAgentError("empty_dump", f"{p} holds no dump.json and no tensor files",
                            hint="Point at the msprobe rank directory (the one with dump.json) or at a "
                                 "folder of .npy files.", path=str(p))
    return dump
