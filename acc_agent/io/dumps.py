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

import json
import os
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from acc_agent.errors import AccAgentError
from acc_agent.io import tensors

_TENSOR_TYPES = ("torch.Tensor", "mindspore.Tensor", "numpy.ndarray", "torch.nn.parameter.Parameter")
_RANK_DIR = re.compile(r"^(rank|proc)\d*$")
_STEP_DIR = re.compile(r"^step\d+$")


@dataclass
class DumpEntry:
    """One tensor of a dump, as its dump.json (or file) describes it."""

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

    @property
    def has_data(self) -> bool:
        """Whether a tensor file stands behind the entry (statistics-only dumps have none)."""
        return self.data_name is not None or self.container_key is not None


def normalize_dtype(raw: Any) -> str | None:
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
                 meta: dict[str, Any] | None = None) -> None:
        self.source = source
        self.kind = kind
        self.entries = entries
        self.data_dir = data_dir
        self.meta = meta or {}
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
                                path=str(self.source)) from None

    def path_of(self, name: str) -> Path | None:
        """File behind an entry (inside the dump directory), or None for container members."""
        e = self.entry(name)
        if e.container_key is not None:
            return self.source
        if e.data_name is None or self.data_dir is None:
            return None
        return tensors.safe_join(self.data_dir, e.data_name)

    def load(self, name: str) -> np.ndarray:
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

    def stream(self, name: str) -> np.ndarray | tensors.NpyStream:
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


def _leaf_is_tensor(leaf: dict[str, Any]) -> bool:
    return "data_name" in leaf or str(leaf.get("type", "")) in _TENSOR_TYPES


def _walk(value: Any, prefix: str) -> Iterator[tuple[str, dict[str, Any]]]:
    """Tensor leaves of an input/output structure with msprobe's positional suffixes."""
    if isinstance(value, dict):
        if _leaf_is_tensor(value):
            yield prefix, value
            return
        if "type" in value and "value" in value:
            return  # non-tensor argument (int, str, ...)
        for k, v in value.items():
            yield from _walk(v, f"{prefix}.{k}")
    elif isinstance(value, list | tuple):
        for i, v in enumerate(value):
            yield from _walk(v, f"{prefix}.{i}")


_ROLE_OF = {
    "input_args": ("input", "input"),
    "input_kwargs": ("input", "input"),
    "input": ("input", "input"),
    "output": ("output", "output"),
    "parameters": ("parameters", "parameter"),
}


def _parse_msprobe(dump_json: Path) -> Dump:
    try:
        raw = dump_json.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise AccAgentError("missing_file", f"{dump_json} does not exist",
                            hint="Pass the dump.json, its rank directory, or the dump root.",
                            path=str(dump_json)) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise AccAgentError("invalid_dump_json", f"cannot read {dump_json.name}: {exc}",
                            hint="Re-copy the dump; dump.json must be UTF-8 JSON.", path=str(dump_json)) from None
    try:
        doc = json.loads(raw)
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
    data_dir = dump_json.parent / "dump_tensor_data"
    entries: list[DumpEntry] = []
    for key, body in doc["data"].items():
        if not isinstance(body, dict):
            continue
        grad = ".parameters_grad" in key
        for part, value in body.items():
            if part not in _ROLE_OF and not grad:
                continue
            word, role = _ROLE_OF.get(part, ("", "parameter_grad"))
            prefix = f"{key}.{word}" if word else key
            for name, leaf in _walk(value, prefix):
                data_name = leaf.get("data_name")
                if isinstance(data_name, str) and data_name not in ("", "-1"):
                    # msprobe names a row by its file name; a name with a path in it is kept as the
                    # data_name (and refused on load) but the row keeps its structural name.
                    plain = not any(c in data_name for c in "/\\") and not data_name.startswith("..")
                    row_name = data_name.rsplit(".", 1)[0] if plain and "." in data_name else name
                else:
                    data_name = None
                    row_name = name
                shape = leaf.get("shape")
                entries.append(DumpEntry(
                    name=row_name,
                    data_name=data_name,
                    module_key=key,
                    role=role if not grad else "parameter_grad",
                    dtype=normalize_dtype(leaf.get("dtype")),
                    shape=[int(s) for s in shape] if isinstance(shape, list) else None,
                    stats={k: _num(leaf.get(k)) for k in ("Max", "Min", "Mean", "Norm") if k in leaf},
                    requires_grad=leaf.get("requires_grad") if isinstance(leaf.get("requires_grad"), bool) else None,
                    index=len(entries),
                ))
    meta = {k: doc.get(k) for k in ("task", "level", "framework")}
    return Dump(dump_json, "msprobe", entries, data_dir if data_dir.is_dir() else data_dir, meta)


def _num(v: Any) -> float | None:
    try:
        return float(v) if v is not None else None
    except (TypeError, ValueError):
        return None


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
        with path.open("rb") as fh:
            fmt = np.lib.format
            version = fmt.read_magic(fh)
            reader = fmt.read_array_header_1_0 if version == (1, 0) else fmt.read_array_header_2_0
            shape, _, dtype = reader(fh)
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
            shape=[int(s) for s in info.get("shape", [])] if isinstance(info, dict) else None,
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


def open_dump_set(path: str | Path) -> DumpSet:
    """Like :func:`open_dump`, always as a set (a single dump becomes one rank keyed ``""``)."""
    p = Path(path)
    if p.is_dir() and not (p / "dump.json").is_file():
        ranks = _rank_dirs(p)
        if ranks:
            return DumpSet(p, {k: _parse_msprobe(d / "dump.json") for k, d in ranks.items()})
    return DumpSet(p, {"": _open_single(p)})


def open_dump(path: str | Path) -> Dump | DumpSet:
    """Open any supported dump; a multi-rank tree gives a :class:`DumpSet`, anything else a :class:`Dump`."""
    ds = open_dump_set(path)
    if len(ds.ranks) == 1:
        return next(iter(ds.ranks.values()))
    return ds


def _open_single(p: Path) -> Dump:
    if not p.exists():
        raise AccAgentError("missing_file", f"{p} does not exist",
                            hint="Pass an msprobe dump.json, its rank directory, a step*/rank* dump root, "
                                 "a folder of .npy files, or one .npz/.safetensors file.", path=str(p))
    if p.is_file():
        suffix = p.suffix.lower()
        if suffix == ".json":
            return _parse_msprobe(p)
        if suffix == ".npz":
            return _npz(p)
        if suffix == ".safetensors":
            return _safetensors(p)
        raise AccAgentError("unsupported_format", f"{p.name} is not a dump",
                            hint="For one tensor file per side use compare-tensors; compare-dumps takes a "
                                 "dump.json, a dump directory, or an .npz/.safetensors file.", path=str(p))
    if (p / "dump.json").is_file():
        return _parse_msprobe(p / "dump.json")
    dump = _tensor_dir(p)
    if not dump.entries:
        raise AccAgentError("empty_dump", f"{p} holds no dump.json and no tensor files",
                            hint="Point at the msprobe rank directory (the one with dump.json) or at a "
                                 "folder of .npy files.", path=str(p))
    return dump
