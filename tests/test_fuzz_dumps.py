"""Property-based tests of msprobe dump.json reading: structure, types, names and paths.

The generated dump.json files mix msprobe's layout with damage: not JSON, invalid UTF-8, wrong
types at every level, deep nesting, duplicate keys, bare NaN/Infinity, and data_name values that
try to leave the dump (``..``, absolute paths, symbolic links out of dump_tensor_data/). Reading
must give entries or an AccAgentError naming the file and the fix, and no tensor outside the
dump folder may ever be read (the "secret" tensor below is never returned).
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Any

import numpy as np
from fuzzing import examples, outcome
from hypothesis import given
from hypothesis import strategies as st

from acc_agent.errors import AccAgentError
from acc_agent.io import dumps
from acc_agent.registry import all_tools

#: The value of the tensor placed outside the dump: finding it in a loaded tensor means a path escaped.
SECRET = 31337.0
_FILES = ["Functional.a.0.forward.input.0.npy", "Functional.a.0.forward.output.0.npy", "sub/b.npy", "f.pt",
          "link_out.npy", "link_abs.npy", "link_loop.npy", "link_dir", "fifo.npy"]
_HOSTILE_NAMES = ["../outside.npy", "../../outside.npy", "/etc/passwd", "", "-1", "sub/../../outside.npy",
                  "..\\outside.npy", "a\x00b.npy", "x" * 300 + ".npy", ".", "sub", "sub/", "C:\\x.npy",
                  "link_dir/outside.npy", "dump_tensor_data/../outside.npy"]
_JSON_LEAF = st.one_of(st.none(), st.booleans(), st.integers(-(2**65), 2**65), st.floats(), st.text(max_size=8))
_JSON = st.recursive(_JSON_LEAF, lambda inner: st.one_of(st.lists(inner, max_size=3),
                                                          st.dictionaries(st.text(max_size=5), inner, max_size=3)),
                     max_leaves=12)


@st.composite
def leaves(draw: st.DrawFn) -> Any:
    """One argument/output of a call: a tensor leaf (sometimes damaged) or any JSON value."""
    if draw(st.integers(0, 6)) == 0:
        return draw(_JSON)
    leaf: dict[str, Any] = {
        "type": draw(st.sampled_from(["torch.Tensor"] * 4 + ["mindspore.Tensor", "numpy.ndarray", "int", "slice",
                                                            "torch.dtype", "torch.Size", 5, None])),
        "dtype": draw(st.one_of(st.sampled_from(["torch.float32", "torch.float16", "torch.bfloat16", "torch.int64",
                                                 "torch.bool", "torch.complex64", "NaN", ""]), _JSON_LEAF)),
        "shape": draw(st.one_of(st.lists(st.integers(0, 8), max_size=3), st.lists(_JSON_LEAF, max_size=3), _JSON_LEAF)),
        "data_name": draw(st.sampled_from(_FILES + _HOSTILE_NAMES) if draw(st.integers(0, 5)) else _JSON_LEAF),
    }
    for stat in ("Max", "Min", "Mean", "Norm"):
        if draw(st.booleans()):
            leaf[stat] = draw(_JSON_LEAF)
    if draw(st.integers(0, 6)) == 0:
        leaf["class_type"] = "torch.distributed.P2POp"
        leaf["tensor"] = draw(st.one_of(_JSON_LEAF, st.just({"type": "torch.Tensor", "data_name": "f.pt"})))
    return leaf


@st.composite
def dump_json_texts(draw: st.DrawFn) -> bytes:
    """The bytes of a dump.json: msprobe-shaped with damage, or anything at all."""
    calls: dict[str, Any] = {}
    for i in range(draw(st.integers(1, 4))):
        key = draw(st.sampled_from([f"Functional.a.{i}.forward", f"Module.m.{i}.backward", "Module.m.parameters_grad",
                                    ""]) if draw(st.integers(0, 4)) else st.text(max_size=10))
        parts = ["input_args", "output", *draw(st.lists(st.sampled_from(["input_kwargs", "parameters", "weight"]),
                                                        max_size=2))]
        body: Any = {part: draw(st.lists(leaves(), min_size=1, max_size=3) if draw(st.integers(0, 5)) else leaves())
                     for part in parts}
        calls[key] = body if draw(st.integers(0, 7)) else draw(_JSON)
    doc: Any = {"task": draw(st.sampled_from(["tensor", "statistics", None, 5])), "level": "L1", "framework": "pytorch",
                "data": calls if draw(st.integers(0, 6)) else draw(_JSON)}
    text = json.dumps(doc, allow_nan=True)
    kind = draw(st.sampled_from(["plain"] * 4 + ["duplicate", "deep", "truncated", "utf8", "nan", "garbage"]))
    if kind == "duplicate":  # two "data" keys: JSON keeps the last one
        text = text[:-1] + ', "data": ' + json.dumps(calls) + "}"
    elif kind == "deep":
        depth = draw(st.sampled_from([50, 900, 5000]))
        text = text[:-1] + ', "data": {"Functional.d.0.forward": {"input_args": ' + "[" * depth + "]" * depth + "}}}"
    elif kind == "truncated":
        text = text[: draw(st.integers(0, max(0, len(text) - 1)))]
    elif kind == "nan":
        text = text.replace('"Max": null', '"Max": NaN').replace('"Min": null', '"Min": -Infinity')
    elif kind == "garbage":
        return draw(st.binary(max_size=200))
    raw = text.encode("utf-8", "surrogatepass")
    if kind == "utf8":
        raw = raw[:10] + b"\xff\xfe" + raw[10:]
    return raw


def _folder(root: Path, text: bytes) -> Path:
    """An msprobe rank folder with tensors, a sub-folder and links pointing out of it."""
    if root.exists():
        shutil.rmtree(root)
    data = root / "rank0" / "dump_tensor_data"
    (data / "sub").mkdir(parents=True)
    for name in _FILES[:3]:
        np.save(data / name, np.arange(4, dtype=np.float32))
    np.save(root / "rank0" / "outside.npy", np.full(4, SECRET, np.float32))
    np.save(root / "outside.npy", np.full(4, SECRET, np.float32))
    os.symlink("../outside.npy", data / "link_out.npy")
    os.symlink(str(root / "outside.npy"), data / "link_abs.npy")
    os.symlink("link_loop.npy", data / "link_loop.npy")
    os.symlink(str(root), data / "link_dir")
    os.mkfifo(data / "fifo.npy")
    (root / "rank0" / "dump.json").write_bytes(text)
    return root / "rank0"


def _read_everything(dump: dumps.Dump) -> None:
    """What compare-dumps does with each entry: its path, its data, its stream; no secret may come back."""
    for entry in dump.entries:
        for how in ("path_of", "load", "stream"):
            got = outcome(f"dump.json {how}", lambda how=how, e=entry: getattr(dump, how)(e.name))  # type: ignore[misc]
            if isinstance(got, Path):
                assert dump.data_dir is not None
                assert got.resolve().is_relative_to(dump.data_dir.resolve()) or not got.exists(), got
            elif isinstance(got, np.ndarray):
                assert not (got.size and np.any(np.asarray(got, dtype=np.float64) == SECRET)), f"read outside: {entry}"
            elif got is not None and not isinstance(got, AccAgentError):
                close = getattr(got, "close", None)
                if close is not None:
                    close()
    outcome("dump.json nbytes", dump.nbytes)


@examples(60)
@given(text=dump_json_texts())
def test_dump_json_reader(tmp_path: Path, text: bytes) -> None:
    rank = _folder(tmp_path / "d", text)
    for target in (rank, rank / "dump.json"):
        dump = outcome("dump.json", lambda target=target: dumps.open_dump(target), names=("dump.json",))  # type: ignore[misc]
        if isinstance(dump, dumps.Dump):
            _read_everything(dump)


def _golden(root: Path) -> Path:
    data = root / "dump_tensor_data"
    data.mkdir(parents=True, exist_ok=True)
    leaves = {}
    for role in ("input", "output"):
        name = f"Functional.a.0.forward.{role}.0"
        np.save(data / f"{name}.npy", np.arange(4, dtype=np.float32))
        leaves[role] = {"type": "torch.Tensor", "dtype": "torch.float32", "shape": [4], "data_name": f"{name}.npy",
                        "Max": 3.0, "Min": 0.0, "Mean": 1.5, "Norm": 3.74}
    doc = {"task": "tensor", "level": "L1", "framework": "pytorch",
           "data": {"Functional.a.0.forward": {"input_args": [leaves["input"]], "output": [leaves["output"]]}}}
    (root / "dump.json").write_text(json.dumps(doc), encoding="utf-8")
    return root


@examples(15)
@given(text=dump_json_texts())
def test_compare_dumps_on_hostile_target(tmp_path: Path, text: bytes) -> None:
    """The whole tool (pairing, metrics, CSV, diagnosis) on a damaged target dump."""
    golden = _golden(tmp_path / "golden")
    target = _folder(tmp_path / "t", text)
    spec = all_tools()["compare_dumps"]
    with np.errstate(all="ignore"):
        out = outcome("compare_dumps", lambda: spec.run({"golden": str(golden), "target": str(target), "workers": 1,
                                                          "all_rows": True, "csv": str(tmp_path / "out.csv")}))
    if not isinstance(out, AccAgentError):
        for row in out.rows:
            assert row.status in ("pass", "warning", "error", "skipped", "fail", "unmatched", "info"), row.status
        json.loads(out.model_dump_json())


_NONFINITE_PIECES = [b"NaN", b"Infinity", b"-Infinity", b"-", b"N", b"a", b"Inf", b"inity", b"1.5", b",", b'"', b"NaNaN",
                     b"--Infinity", b"-NaN", b"\x00", b"\xff"]


@examples(200)
@given(pieces=st.lists(st.sampled_from(_NONFINITE_PIECES), max_size=16))
def test_nonfinite_tokens_are_quoted_as_the_regex_quotes_them(pieces: list[bytes]) -> None:
    """msprobe writes bare NaN/Infinity, which orjson refuses: the reader quotes them with plain byte replacements
    (5x faster than the regex on an overflowed 99 MB dump.json) and must quote exactly what the regex does."""
    raw = b"".join(pieces)
    assert dumps._quote_nonfinite(raw) == dumps._NONFINITE.sub(rb'"\g<0>"', raw)
