"""Tensor readers: every format reads real data; every unsafe or broken file is a named, structured error."""

from __future__ import annotations

import os
import sys
import zipfile
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest
import torch

from acc_agent.errors import AccAgentError
from acc_agent.io import tensors
from acc_agent.io.dumps import open_dump
from acc_agent.io.tensors import read_tensor, safe_join


def test_npy_is_memory_mapped(tmp_path: Path) -> None:
    a = np.arange(12, dtype=np.float32).reshape(3, 4)
    np.save(tmp_path / "a.npy", a)
    got = read_tensor(tmp_path / "a.npy")
    assert np.array_equal(got, a)
    big = np.arange(1 << 19, dtype=np.float32)
    np.save(tmp_path / "big.npy", big)
    mapped = read_tensor(tmp_path / "big.npy")
    assert isinstance(mapped, np.memmap) and np.array_equal(mapped, big)


def test_npz_key_and_ambiguity(tmp_path: Path) -> None:
    np.savez(tmp_path / "o.npz", logits=np.ones(3), feat=np.zeros(2))
    assert np.array_equal(read_tensor(tmp_path / "o.npz", "logits"), np.ones(3))
    with pytest.raises(AccAgentError) as exc:
        read_tensor(tmp_path / "o.npz")
    assert exc.value.code == "ambiguous_container"
    with pytest.raises(AccAgentError) as exc:
        read_tensor(tmp_path / "o.npz", "nope")
    assert exc.value.code == "missing_key" and "logits" in exc.value.hint


def test_safetensors_including_bf16(tmp_path: Path) -> None:
    from safetensors.torch import save_file

    w = torch.randn(4, 5)
    save_file({"w": w, "wb": w.to(torch.bfloat16)}, str(tmp_path / "m.safetensors"))
    assert np.array_equal(read_tensor(tmp_path / "m.safetensors", "w"), w.numpy())
    wb = read_tensor(tmp_path / "m.safetensors", "wb")
    assert wb.dtype == np.dtype(ml_dtypes.bfloat16)
    assert np.array_equal(wb.astype(np.float32), w.to(torch.bfloat16).float().numpy())
    dump = open_dump(tmp_path / "m.safetensors")
    assert [e.name for e in dump.entries] == ["w", "wb"]  # type: ignore[union-attr]


def test_truncated_safetensors(tmp_path: Path) -> None:
    from safetensors.numpy import save_file

    save_file({"w": np.ones(1000, np.float32)}, str(tmp_path / "m.safetensors"))
    data = (tmp_path / "m.safetensors").read_bytes()
    (tmp_path / "m.safetensors").write_bytes(data[:-100])
    with pytest.raises(AccAgentError) as exc:
        read_tensor(tmp_path / "m.safetensors", "w")
    assert exc.value.code == "corrupt_tensor" and "truncated" in exc.value.message


def test_pt_tensor_and_bf16(tmp_path: Path) -> None:
    t = torch.randn(3, 2)
    torch.save(t, tmp_path / "t.pt")
    assert np.array_equal(read_tensor(tmp_path / "t.pt"), t.numpy())
    torch.save(t.to(torch.bfloat16), tmp_path / "b.pt")
    b = read_tensor(tmp_path / "b.pt")
    assert b.dtype == np.dtype(ml_dtypes.bfloat16)
    assert np.array_equal(b.astype(np.float32), t.to(torch.bfloat16).float().numpy())


def test_truncated_npy_is_corrupt_not_traceback(tmp_path: Path) -> None:
    np.save(tmp_path / "a.npy", np.arange(1000, dtype=np.float32))
    raw = (tmp_path / "a.npy").read_bytes()
    (tmp_path / "a.npy").write_bytes(raw[:500])
    with pytest.raises(AccAgentError) as exc:
        read_tensor(tmp_path / "a.npy")
    assert exc.value.code == "corrupt_tensor" and "a.npy" in exc.value.message and exc.value.hint


def test_garbage_npy_is_never_unpickled(tmp_path: Path) -> None:
    # numpy treats a file without the .npy magic as a pickle stream: we refuse it, saying what it is instead
    (tmp_path / "g.npy").write_bytes(b"this is not numpy at all")
    with pytest.raises(AccAgentError) as exc:
        read_tensor(tmp_path / "g.npy")
    assert exc.value.code in ("not_a_tensor_file", "unsafe_pickle") and "g.npy" in exc.value.message
    assert "starts with" in exc.value.message or "pickle" in exc.value.message


def test_bad_npy_header(tmp_path: Path) -> None:
    (tmp_path / "h.npy").write_bytes(b"\x93NUMPY\x01\x00\x10\x00{'descr': 'zz'}    \n")
    with pytest.raises(AccAgentError) as exc:
        read_tensor(tmp_path / "h.npy")
    assert exc.value.code == "corrupt_tensor"


def test_object_array_refused(tmp_path: Path) -> None:
    np.save(tmp_path / "o.npy", np.array([{"a": 1}, None], dtype=object), allow_pickle=True)
    with pytest.raises(AccAgentError) as exc:
        read_tensor(tmp_path / "o.npy")
    assert exc.value.code == "unsafe_pickle" and "o.npy" in exc.value.message


class _Payload:
    """Unpickling this would create a directory: proof of code execution if it ever appears."""

    def __init__(self, marker: str) -> None:
        self.marker = marker

    def __reduce__(self) -> tuple[object, tuple[str]]:
        return (os.makedirs, (self.marker,))


def test_pt_pickle_payload_refused_and_not_executed(tmp_path: Path) -> None:
    marker = tmp_path / "PWNED"
    torch.save({"x": _Payload(str(marker))}, tmp_path / "evil.pt")
    with pytest.raises(AccAgentError) as exc:
        read_tensor(tmp_path / "evil.pt")
    assert exc.value.code == "unsafe_pickle" and "evil.pt" in exc.value.message
    assert not marker.exists()


def test_pt_holding_a_dict_is_reported(tmp_path: Path) -> None:
    torch.save({"a": torch.ones(2)}, tmp_path / "d.pt")
    with pytest.raises(AccAgentError) as exc:
        read_tensor(tmp_path / "d.pt")
    assert exc.value.code == "corrupt_tensor" and "dict" in exc.value.message


def test_missing_torch_names_the_extra(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    torch.save(torch.ones(2), tmp_path / "t.pt")
    monkeypatch.setitem(sys.modules, "torch", None)
    with pytest.raises(AccAgentError) as exc:
        read_tensor(tmp_path / "t.pt")
    assert exc.value.code == "missing_dependency" and "acc-agent[torch]" in exc.value.hint


def test_unknown_suffix(tmp_path: Path) -> None:
    (tmp_path / "x.h5").write_bytes(b"")
    with pytest.raises(AccAgentError) as exc:
        read_tensor(tmp_path / "x.h5")
    assert exc.value.code == "unsupported_format"


@pytest.mark.parametrize("name", ["../../etc/x", "/etc/passwd", "a/../../b.npy", "..\\..\\x.npy"])
def test_safe_join_refuses_escapes(tmp_path: Path, name: str) -> None:
    with pytest.raises(AccAgentError) as exc:
        safe_join(tmp_path, name)
    assert exc.value.code == "unsafe_path"


def test_safe_join_refuses_symlink_out(tmp_path: Path) -> None:
    outside = tmp_path / "outside.npy"
    np.save(outside, np.ones(2))
    inner = tmp_path / "dump"
    inner.mkdir()
    (inner / "link.npy").symlink_to(outside)
    with pytest.raises(AccAgentError) as exc:
        safe_join(inner, "link.npy")
    assert exc.value.code == "unsafe_path"
    assert safe_join(tmp_path, "outside.npy") == outside


def test_missing_file_error(tmp_path: Path) -> None:
    with pytest.raises(AccAgentError) as exc:
        read_tensor(tmp_path / "nope.npy")
    assert exc.value.code == "missing_file" and exc.value.hint


def test_npy_header_dtype_and_shape_in_tensor_dir(tmp_path: Path) -> None:
    np.save(tmp_path / "a.npy", np.zeros((2, 3), np.float16))
    dump = open_dump(tmp_path)
    (entry,) = dump.entries  # type: ignore[union-attr]
    assert (entry.name, entry.dtype, entry.shape) == ("a", "float16", [2, 3])
    assert tensors.numpy_dtype("bfloat16") == np.dtype(ml_dtypes.bfloat16)


def test_pt_fp8_kept_bit_exact(tmp_path: Path) -> None:
    t = torch.tensor([0.5, -1.25, 3.0, 0.0]).to(torch.float8_e4m3fn)
    torch.save(t, tmp_path / "f8.pt")
    got = read_tensor(tmp_path / "f8.pt")
    assert got.dtype == np.dtype(ml_dtypes.float8_e4m3fn)
    assert np.array_equal(got.astype(np.float32), t.float().numpy())


def test_npy_stream_reads_chunks_and_reports_damage(tmp_path: Path) -> None:
    a = np.arange(10_000, dtype=np.float32).reshape(100, 100)
    np.save(tmp_path / "a.npy", a)
    s = tensors.NpyStream(tmp_path / "a.npy")
    assert (s.shape, s.dtype, s.size) == ((100, 100), np.dtype(np.float32), 10_000)
    assert np.array_equal(s.read(250, 10), a.reshape(-1)[250:260])
    raw = (tmp_path / "a.npy").read_bytes()
    (tmp_path / "a.npy").write_bytes(raw[:-4])  # shrinks after opening: caught on read
    with pytest.raises(AccAgentError) as exc:
        s.read(9_990, 10)
    assert exc.value.code == "corrupt_tensor"
    s.close()
    with pytest.raises(AccAgentError) as exc:
        tensors.NpyStream(tmp_path / "a.npy")
    assert exc.value.code == "corrupt_tensor" and "truncated" in exc.value.message


def test_dump_streams_c_order_and_loads_fortran_order(tmp_path: Path) -> None:
    np.save(tmp_path / "c.npy", np.ones((3, 4), np.float32))
    np.save(tmp_path / "f.npy", np.asfortranarray(np.ones((3, 4), np.float32)))
    dump = open_dump(tmp_path)
    assert isinstance(dump.stream("c"), tensors.NpyStream)  # type: ignore[union-attr]
    assert isinstance(dump.stream("f"), np.ndarray)  # type: ignore[union-attr]


def test_npz_zip_bomb_refused_before_inflating(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A bomb whose zip directory tells the truth (claimed size = real size) is refused by its ratio."""
    monkeypatch.setattr(tensors, "NPZ_RATIO_FREE_BYTES", 1 << 20)  # a 4 MB bomb stands for a 4 GB one
    bomb = tmp_path / "bomb.npz"
    np.savez_compressed(bomb, x=np.zeros(1 << 20, np.float32))
    with zipfile.ZipFile(bomb) as zf:
        info = zf.getinfo("x.npy")
        assert info.file_size > 200 * info.compress_size  # genuine: its header claims what it holds
    inflated: list[int] = []
    real_read = zipfile.ZipExtFile.read
    monkeypatch.setattr(zipfile.ZipExtFile, "read",
                        lambda self, n=-1: inflated.append(n) or real_read(self, n))  # type: ignore[func-returns-value]
    with pytest.raises(AccAgentError) as exc:
        read_tensor(bomb, "x")
    err = exc.value
    assert err.code == "compression_bomb" and "bomb.npz" in err.message and "x.npy" in err.message
    assert err.path == str(bomb) and "uncompressed" in err.hint
    assert not inflated  # refused from the zip directory alone, nothing decompressed
    # the same member below the bound, and a stored (uncompressed) big one, still read
    small = tmp_path / "small.npz"
    np.savez_compressed(small, x=np.zeros(1000, np.float32))
    assert read_tensor(small, "x").shape == (1000,)
    stored = tmp_path / "stored.npz"
    np.savez(stored, x=np.zeros(1 << 20, np.float32))
    assert read_tensor(stored, "x").shape == (1 << 20,)
