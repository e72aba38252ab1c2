"""Property-based tests of the tensor readers: .npy, .npz, .pt and .safetensors, headers and bodies.

Each property builds a real file (valid, then damaged: truncated, wrong magic, flipped bytes, a
forged header claiming a huge or negative shape on a tiny file, object/void/complex/bf16/fp8/int/
bool dtypes, 0-d and empty arrays) and reads it the way the tools do. The rule (see fuzzing.py):
an array or an AccAgentError naming the file with a fix, within bounded memory and time.
"""

from __future__ import annotations

import io
import json
import struct
import zipfile
from pathlib import Path
from typing import Any

import ml_dtypes
import numpy as np
import pytest
import torch
from fuzzing import examples, outcome
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from acc_agent.errors import AccAgentError
from acc_agent.io import dumps, tensors
from acc_agent.registry import all_tools

#: Python/numpy memory one read of a file of a few kilobytes may take (the files here are tiny:
#: anything near this means an allocation sized by a header's claim).
PEAK_MIB = 64

_PLAIN_DTYPES = ["<f2", "<f4", "<f8", ">f4", "|i1", "<i2", "<i4", "<i8", "|u1", "<u2", "<u4", "<u8", "|b1",
                 "<c8", "<c16"]
_EXOTIC = {"bfloat16": ml_dtypes.bfloat16, "float8_e4m3fn": ml_dtypes.float8_e4m3fn,
           "float8_e5m2": ml_dtypes.float8_e5m2, "int4": ml_dtypes.int4}
_SHAPES = hnp.array_shapes(min_dims=0, max_dims=3, min_side=0, max_side=4)


@st.composite
def arrays(draw: st.DrawFn) -> np.ndarray:
    """Numeric arrays of every dtype the readers meet, 0-d and empty included."""
    if draw(st.booleans()):
        return draw(hnp.arrays(st.sampled_from(_PLAIN_DTYPES), _SHAPES))
    base = draw(hnp.arrays("<f4", _SHAPES, elements=st.floats(-1e4, 1e4, width=32)))
    with np.errstate(invalid="ignore", over="ignore"):  # values past int4/fp8 range wrap or saturate: fine here
        return base.astype(_EXOTIC[draw(st.sampled_from(sorted(_EXOTIC)))])


def _npy_bytes(arr: np.ndarray) -> bytes:
    buf = io.BytesIO()
    np.save(buf, arr, allow_pickle=False)
    return buf.getvalue()


_DESCRS = ["<f4", "<f8", "|O", "<c8", "|V4", "|V2", "|b1", "<M8[D]", "|S3", "<U2", "[('a', '<f4'), ('b', '<i4')]",
           "<f16", "bogus", "'<f4'"]
_DIMS = st.one_of(st.integers(0, 8), st.integers(-5, -1), st.integers(2**31, 2**64), st.just(10**10))


@st.composite
def forged_headers(draw: st.DrawFn) -> bytes:
    """A .npy whose header text is written by hand: any dtype, any claimed shape, any payload length."""
    descr = draw(st.sampled_from(_DESCRS))
    descr_text = descr if descr.startswith("[") or descr.startswith("'") else repr(descr)
    shape = tuple(draw(st.lists(_DIMS, max_size=4)))
    fortran = draw(st.sampled_from(["False", "True", "1", "'x'"]))
    body = draw(st.sampled_from([
        f"{{'descr': {descr_text}, 'fortran_order': {fortran}, 'shape': {shape!r}, }}",
        f"{{'descr': {descr_text}, 'shape': {shape!r}}}",
        f"{{'descr': {descr_text}, 'fortran_order': False, 'shape': {list(shape)!r}, }}",
        draw(st.text(max_size=60)),
    ]))
    raw = body.encode("utf-8", "replace")
    raw += b" " * (63 - (len(raw) + 10) % 64) + b"\n"
    version = draw(st.sampled_from([b"\x01\x00", b"\x02\x00", b"\x03\x00", b"\x09\x00"]))
    length = struct.pack("<H", len(raw)) if version == b"\x01\x00" else struct.pack("<I", len(raw))
    return b"\x93NUMPY" + version + length + raw + draw(st.binary(max_size=64))


@st.composite
def damaged(draw: st.DrawFn, data: bytes) -> bytes:
    """``data`` with one kind of damage (or none)."""
    kind = draw(st.sampled_from(["none", "truncate", "flip", "magic", "append", "empty"]))
    if kind == "truncate" and data:
        return data[: draw(st.integers(0, len(data) - 1))]
    if kind == "flip" and data:
        out = bytearray(data)
        for _ in range(draw(st.integers(1, 4))):
            out[draw(st.integers(0, len(out) - 1))] = draw(st.integers(0, 255))
        return bytes(out)
    if kind == "magic":
        return b"XXNUMPY" + data[7:]
    if kind == "append":
        return data + draw(st.binary(min_size=1, max_size=32))
    if kind == "empty":
        return b""
    return data


@st.composite
def npy_files(draw: st.DrawFn) -> bytes:
    if draw(st.integers(0, 3)) == 0:
        return draw(forged_headers())
    return draw(damaged(_npy_bytes(draw(arrays()))))


def _stream_all(path: Path) -> None:
    """Open the chunked reader the dump comparison uses and read every element, in a few chunks."""
    stream = tensors.NpyStream(path)
    try:
        step = max(1, stream.size // 3)
        for start in range(0, stream.size, step):
            stream.read(start, min(step, stream.size - start))
    finally:
        stream.close()


@examples(60)
@given(data=npy_files())
def test_npy_reader_and_stream(tmp_path: Path, data: bytes) -> None:
    (tmp_path / "folder").mkdir(exist_ok=True)
    path = tmp_path / "folder" / "t.npy"
    path.write_bytes(data)
    # a folder of .npy files is a dump too: its headers are read for dtype/shape when it is opened
    dump = outcome("npy folder", lambda: dumps.open_dump(path.parent), names=("folder",), peak_mib=PEAK_MIB)
    if isinstance(dump, dumps.Dump):
        outcome("npy folder", lambda: dump.load("t"), names=("t.npy",), peak_mib=PEAK_MIB)
    got = outcome("npy", lambda: np.asarray(tensors.read_tensor(path)), names=("t.npy",), peak_mib=PEAK_MIB)
    if not isinstance(got, AccAgentError):
        assert got.dtype.kind in "biufcVMmSUO" or got.dtype.names
    outcome("npy stream", lambda: _stream_all(path), names=("t.npy",), peak_mib=PEAK_MIB)


def test_claimed_shape_is_checked_before_any_allocation(tmp_path: Path) -> None:
    """A 200-byte .npy claiming 10^10 float64 (75 GiB) is refused without allocating it."""
    header = "{'descr': '<f8', 'fortran_order': False, 'shape': (100000, 100000), }"
    raw = header.encode() + b" " * (63 - (len(header) + 10) % 64) + b"\n"
    path = tmp_path / "bomb.npy"
    path.write_bytes(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(raw)) + raw + b"\0" * 16)
    for read in (tensors.read_tensor, tensors.NpyStream):
        err = outcome("npy claimed size", lambda read=read: read(path), names=("bomb.npy",), peak_mib=PEAK_MIB)  # type: ignore[misc]
        assert isinstance(err, AccAgentError) and "truncated" in err.message


@examples(20)
@given(a=arrays(), b=st.one_of(arrays(), npy_files().map(lambda d: d)))
def test_compare_tensors_on_any_pair(tmp_path: Path, a: np.ndarray, b: np.ndarray | bytes) -> None:
    """The tool end to end (metrics included) on any dtype pair, damaged target files included."""
    golden, target = tmp_path / "g.npy", tmp_path / "t.npy"
    golden.write_bytes(_npy_bytes(a))
    target.write_bytes(b if isinstance(b, bytes) else _npy_bytes(b))
    spec = all_tools()["compare_tensors"]
    with np.errstate(all="ignore"):
        out = outcome("compare_tensors", lambda: spec.run({"golden": str(golden), "target": str(target)}))
    if not isinstance(out, AccAgentError):
        assert out.verdict in ("pass", "fail", "error", "warning", "inconclusive"), out.verdict
        json.loads(out.model_dump_json())  # NaN/Inf never leak into the JSON as bare tokens


# --------------------------------------------------------------------------- .npz


@st.composite
def npz_files(draw: st.DrawFn) -> tuple[bytes, list[str]]:
    names = draw(st.lists(st.text(st.characters(codec="ascii", exclude_categories=("Cc", "Cs")), min_size=1, max_size=8),
                          min_size=1, max_size=3, unique=True))
    buf = io.BytesIO()
    method = draw(st.sampled_from([zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED]))
    with zipfile.ZipFile(buf, "w", method) as zf:
        for name in names:
            zf.writestr(f"{name}.npy", draw(npy_files()))
    return draw(damaged(buf.getvalue())), names


@examples(30)
@given(npz=npz_files())
def test_npz_members(tmp_path: Path, npz: tuple[bytes, list[str]]) -> None:
    data, names = npz
    path = tmp_path / "t.npz"
    path.write_bytes(data)
    for key in [*names, "no_such_key"]:
        outcome("npz", lambda key=key: tensors.read_npz_key(path, key), names=("t.npz",), peak_mib=PEAK_MIB)  # type: ignore[misc]
    dump = outcome("npz dump", lambda: dumps.open_dump(path), names=("t.npz",), peak_mib=PEAK_MIB)
    if isinstance(dump, dumps.Dump):
        for entry in dump.entries:
            outcome("npz dump", lambda e=entry: dump.load(e.name), names=("t.npz",), peak_mib=PEAK_MIB)  # type: ignore[misc]


# --------------------------------------------------------------------------- .pt


def _torch_tensor(arr: np.ndarray) -> torch.Tensor:
    name = arr.dtype.name
    if name == "bfloat16":
        return torch.from_numpy(arr.view(np.int16).copy()).view(torch.bfloat16)
    if name.startswith("float8"):
        return torch.from_numpy(arr.view(np.uint8).copy()).view(getattr(torch, name))
    if name == "int4" or arr.dtype.byteorder == ">":
        return torch.from_numpy(arr.astype(np.float32))
    return torch.from_numpy(np.ascontiguousarray(arr))


_PT_OBJECTS = st.sampled_from([
    {"a": torch.ones(2)}, [torch.ones(1)], 5, None, "text", torch.ones(3).to_sparse(),
    torch.quantize_per_tensor(torch.ones(3), 0.1, 0, torch.qint8), torch.empty(0, 3), torch.tensor(2.5),
    torch.ones(2, 3).t(), torch.ones(4)[::2],
])


@st.composite
def pt_files(draw: st.DrawFn) -> bytes:
    obj: Any = _torch_tensor(draw(arrays())) if draw(st.booleans()) else draw(_PT_OBJECTS)
    buf = io.BytesIO()
    torch.save(obj, buf)
    return draw(damaged(buf.getvalue()))


@pytest.mark.filterwarnings("ignore::UserWarning")
@examples(30)
@given(data=pt_files(), suffix=st.sampled_from([".pt", ".pth", ".bin"]))
def test_pt_reader(tmp_path: Path, data: bytes, suffix: str) -> None:
    path = tmp_path / f"t{suffix}"
    path.write_bytes(data)
    outcome("pt", lambda: tensors.read_tensor(path), names=(path.name,))


# --------------------------------------------------------------------------- .safetensors

_CODES = [*tensors._SAFETENSORS_DTYPES, "F8_E8M0", "C64", "x", ""]
_JSON_SCALARS = st.one_of(st.none(), st.booleans(), st.integers(-(2**70), 2**70), st.floats(allow_nan=False),
                          st.text(max_size=5))


@st.composite
def safetensors_files(draw: st.DrawFn) -> tuple[bytes, list[str]]:
    header: dict[str, Any] = {}
    offset = 0
    body = b""
    names = draw(st.lists(st.text(max_size=6), max_size=3, unique=True))
    for name in names:
        shape = draw(st.one_of(st.lists(st.integers(0, 4), max_size=3), st.lists(_DIMS, max_size=3),
                               _JSON_SCALARS, st.lists(_JSON_SCALARS, max_size=2)))
        code = draw(st.sampled_from(_CODES))
        size = (int(np.prod(shape)) if isinstance(shape, list) and all(type(d) is int and 0 <= d < 5 for d in shape)
                else 1) * 4
        offsets: Any = draw(st.one_of(st.just([offset, offset + size]), st.lists(_JSON_SCALARS, max_size=3),
                                      st.tuples(st.integers(-8, 64), st.integers(-8, 64)).map(list)))
        header[name] = draw(st.one_of(st.just({"dtype": code, "shape": shape, "data_offsets": offsets}),
                                      _JSON_SCALARS, st.just({"dtype": code})))
        body += draw(st.binary(min_size=size, max_size=size))
        offset += size
    if draw(st.booleans()):
        header["__metadata__"] = draw(st.one_of(_JSON_SCALARS, st.just({"format": "pt"})))
    text = json.dumps(header).encode()
    if draw(st.integers(0, 5)) == 0:
        text = b"[" * 5000 + b"]" * 5000  # a header nested far deeper than any index
    length = draw(st.sampled_from([len(text), len(text) + 100, 2**40, 0]))
    data = struct.pack("<Q", length) + text + body
    return draw(damaged(data)), names


@examples(50)
@given(st_file=safetensors_files())
def test_safetensors_reader(tmp_path: Path, st_file: tuple[bytes, list[str]]) -> None:
    data, names = st_file
    path = tmp_path / "t.safetensors"
    path.write_bytes(data)
    for key in [*names, "missing"]:
        outcome("safetensors", lambda key=key: tensors.read_safetensors_key(path, key), names=("t.safetensors",),  # type: ignore[misc]
                peak_mib=PEAK_MIB)
    outcome("safetensors", lambda: tensors.read_tensor(path), names=("t.safetensors",), peak_mib=PEAK_MIB)
    dump = outcome("safetensors dump", lambda: dumps.open_dump(path), names=("t.safetensors",), peak_mib=PEAK_MIB)
    if isinstance(dump, dumps.Dump):
        for entry in dump.entries:
            outcome("safetensors dump", lambda e=entry: dump.load(e.name), names=("t.safetensors",), peak_mib=PEAK_MIB)  # type: ignore[misc]
