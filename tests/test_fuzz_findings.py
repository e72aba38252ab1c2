"""Regression tests for what the first fuzz pass found: each bad input in its own dump pair.

Every case must end in a structured result — valid ``--json`` with exit 0/1/3 and an error row
that names the file and the fix — never a traceback, never a hang, and never run code from a file.
Each dump is built here in ``tmp_path`` (msprobe layout: dump.json + dump_tensor_data/).
"""

from __future__ import annotations

import json
import os
import pickle
import shutil
import struct
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import ml_dtypes
import numpy as np
import pytest
import torch

from acc_agent.cli import main

REPO = Path(__file__).resolve().parents[1]
NAMES = [f"Functional.op{i}.{i}.forward.output.0" for i in range(3)]
BAD = NAMES[1]  # the middle row: the candidate first divergence when it cannot be read
#: A generous bound for a three-row comparison in a fresh interpreter; a hang is what it catches.
SUBPROCESS_TIMEOUT_S = 120


class _Payload:
    """A pickle that creates a folder when unpickled: proof that nothing was executed if it is absent."""

    def __init__(self, marker: str) -> None:
        self.marker = marker

    def __reduce__(self) -> tuple[object, tuple[str]]:
        return (os.makedirs, (self.marker,))


def _write_dump(root: Path, arrays: dict[str, np.ndarray], data_names: dict[str, str] | None = None) -> Path:
    data_dir = root / "dump_tensor_data"
    data_dir.mkdir(parents=True, exist_ok=True)
    data: dict[str, Any] = {}
    for name, arr in arrays.items():
        np.save(data_dir / f"{name}.npy", arr)
        leaf = {"type": "torch.Tensor", "dtype": "torch.float32", "shape": list(arr.shape),
                "data_name": (data_names or {}).get(name, f"{name}.npy")}
        data.setdefault(name.rsplit(".output.", 1)[0], {"input_args": [], "output": []})["output"].append(leaf)
    (root / "dump.json").write_text(json.dumps({"task": "tensor", "level": "L1", "framework": "pytorch",
                                                "dump_data_dir": str(data_dir), "data": data}))
    return root


def _pair(tmp_path: Path, data_names: dict[str, str] | None = None,
          golden_data_names: dict[str, str] | None = None) -> tuple[Path, Path, Path]:
    """A golden and a target dump of three fp32/fp16 rows; returns (golden, target, target's BAD file)."""
    rng = np.random.default_rng(19)
    golden = {n: rng.standard_normal((4, 8)).astype(np.float32) for n in NAMES}
    g = _write_dump(tmp_path / "golden", golden, golden_data_names)
    t = _write_dump(tmp_path / "target", {n: a.astype(np.float16) for n, a in golden.items()}, data_names)
    return g, t, t / "dump_tensor_data" / f"{BAD}.npy"


def _cli(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, dict[str, Any]]:
    """Run the CLI in-process; the output must be one valid JSON document."""
    with pytest.raises(SystemExit) as exc:
        main(argv)
    out = capsys.readouterr().out
    return int(exc.value.code or 0), json.loads(out)


def _subprocess_cli(argv: list[str]) -> tuple[int, dict[str, Any]]:
    """Run the CLI in a fresh interpreter under a timeout, so a blocking read fails the test, not CI."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")]))
    proc = subprocess.run([sys.executable, "-m", "acc_agent", *argv], capture_output=True, text=True,
                          timeout=SUBPROCESS_TIMEOUT_S, env=env, check=False)
    assert "Traceback" not in proc.stderr, proc.stderr[-2000:]
    return proc.returncode, json.loads(proc.stdout)


def _npy_with_header(header: str, payload: bytes = b"\0" * 8) -> bytes:
    """A .npy v1.0 file with an arbitrary header text (numpy pads headers to 64 bytes)."""
    raw = header.encode("latin1")
    raw += b" " * (63 - (len(raw) + 10) % 64) + b"\n"
    return b"\x93NUMPY\x01\x00" + struct.pack("<H", len(raw)) + raw + payload


def _truncate_data(p: Path) -> None:
    p.write_bytes(p.read_bytes()[:-40])


def _truncate_header(p: Path) -> None:
    p.write_bytes(p.read_bytes()[:20])


def _bad_magic(p: Path) -> None:
    p.write_bytes(b"XXNUMPY" + p.read_bytes()[7:])


def _code_in_header(p: Path) -> None:
    marker = p.parent.parent.parent / "PWNED"
    p.write_bytes(_npy_with_header(f"{{'descr': __import__('os').makedirs({str(marker)!r}), "
                                   "'fortran_order': False, 'shape': (2,), }"))


def _object_dtype(p: Path) -> None:
    np.save(p, np.array([None, {"a": 1}], dtype=object), allow_pickle=True)


def _npy_is_pickle(p: Path) -> None:
    p.write_bytes(pickle.dumps(_Payload(str(p.parent.parent.parent / "PWNED"))))


def _fp8(p: Path) -> None:
    np.save(p, np.zeros((4, 8), ml_dtypes.float8_e4m3fn))


def _int4(p: Path) -> None:
    np.save(p, np.zeros((4, 8), ml_dtypes.int4))


def _void(p: Path) -> None:
    np.save(p, np.zeros((4, 8), "V4"))


def _symlink_to_itself(p: Path) -> None:
    p.unlink()
    os.symlink(p.name, p)


def _symlink_cycle(p: Path) -> None:
    p.unlink()
    os.symlink("other.npy", p)
    os.symlink(p.name, p.parent / "other.npy")


#: case -> (damage to the target's BAD file, words the error row's message must hold)
UNREADABLE: dict[str, tuple[Callable[[Path], None], tuple[str, ...]]] = {
    "truncated_data": (_truncate_data, ("truncated",)),
    "truncated_header": (_truncate_header, ("cannot read",)),
    "bad_magic": (_bad_magic, ("not a .npy file",)),
    "code_in_header": (_code_in_header, ("cannot read",)),
    "object_dtype": (_object_dtype, ("object dtype", "refused")),
    "npy_is_a_pickle": (_npy_is_pickle, ("pickle", "refused")),
    "fp8_saved_by_numpy": (_fp8, ("raw 1-byte", "float32")),
    "int4_saved_by_numpy": (_int4, ("raw 1-byte", "float32")),
    "void_dtype": (_void, ("raw 4-byte",)),
    "symlink_to_itself": (_symlink_to_itself, ("loops",)),
    "symlink_cycle": (_symlink_cycle, ("loops",)),
}


def _bad_row(out: dict[str, Any]) -> dict[str, Any]:
    rows = {r["name"]: r for r in out["rows"]}
    assert set(rows) == set(NAMES), sorted(rows)
    for name in NAMES:
        if name != BAD:
            assert rows[name]["status"] == "pass", rows[name]
    return rows[BAD]


@pytest.mark.parametrize("case", sorted(UNREADABLE))
def test_unreadable_tensor_file_is_an_error_row(case: str, tmp_path: Path,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    damage, words = UNREADABLE[case]
    g, t, bad = _pair(tmp_path)
    damage(bad)
    code, out = _cli(["compare-dumps", str(g), str(t), "--all-rows", "--json"], capsys)
    assert code in (0, 1, 3) and out["verdict"] == "fail"
    row = _bad_row(out)
    assert row["status"] == "error" and row["cosine"] is None
    assert bad.name in row["message"], row["message"]
    for word in words:
        assert word in row["message"], (word, row["message"])
    assert row["message"].rstrip().endswith("."), "the message ends with the fix (the error's hint)"
    assert not (tmp_path / "PWNED").exists()


@pytest.mark.parametrize("dtype", ["structured", "string", "bytes"])
def test_non_numeric_tensor_is_an_error_row_naming_the_file(dtype: str, tmp_path: Path,
                                                            capsys: pytest.CaptureFixture[str]) -> None:
    arrays = {"structured": np.zeros((4, 8), [("a", "f4"), ("b", "i4")]),
              "string": np.full((4, 8), "abc"), "bytes": np.full((4, 8), b"abc")}
    g, t, bad = _pair(tmp_path)
    np.save(bad, arrays[dtype])
    code, out = _cli(["compare-dumps", str(g), str(t), "--all-rows", "--json"], capsys)
    assert code == 1
    row = _bad_row(out)
    assert row["status"] == "error" and "not numeric" in row["message"]
    assert f"target file {bad.name}" in row["message"] and "re-dump" in row["message"]


@pytest.mark.parametrize("suffix", [".pt", ".pth"])
def test_malicious_torch_pickle_is_refused_and_the_json_stays_valid(suffix: str, tmp_path: Path,
                                                                    capsys: pytest.CaptureFixture[str]) -> None:
    g, t, bad = _pair(tmp_path, {BAD: f"{BAD}{suffix}"})
    bad.unlink()
    pt = bad.with_suffix(suffix)
    torch.save({"t": _Payload(str(tmp_path / "PWNED"))}, pt)
    code, out = _cli(["compare-dumps", str(g), str(t), "--all-rows", "--json"], capsys)
    assert code == 1
    row = _bad_row(out)
    assert row["status"] == "error" and pt.name in row["message"] and "refused" in row["message"]
    assert not (tmp_path / "PWNED").exists()


def test_missing_dump_tensor_data_folder(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    g, t, _ = _pair(tmp_path)
    shutil.rmtree(t / "dump_tensor_data")
    code, out = _cli(["compare-dumps", str(g), str(t), "--all-rows", "--json"], capsys)
    assert code in (1, 3)
    for row in out["rows"]:
        assert row["status"] == "error" and "does not exist" in row["message"] and "dump_tensor_data" in row["message"]


def test_tensor_name_longer_than_the_file_system_allows(tmp_path: Path,
                                                        capsys: pytest.CaptureFixture[str]) -> None:
    long_name = "Functional." + "x" * 300 + ".0.forward.output.0.npy"
    g, t, _ = _pair(tmp_path, {BAD: long_name}, {BAD: long_name})  # same row name on both sides: paired
    code, out = _cli(["compare-dumps", str(g), str(t), "--all-rows", "--json"], capsys)
    assert code == 1
    row = next(r for r in out["rows"] if r["status"] != "pass")
    assert row["status"] == "error" and row["name"].startswith("Functional.xxx")
    assert "longer than the file system allows" in row["message"] and "dump.json" in row["message"]


def test_fifo_tensor_file_does_not_block(tmp_path: Path) -> None:
    g, t, bad = _pair(tmp_path)
    bad.unlink()
    os.mkfifo(bad)
    code, out = _subprocess_cli(["compare-dumps", str(g), str(t), "--all-rows", "--json"])
    assert code == 1
    row = _bad_row(out)
    assert row["status"] == "error" and "named pipe" in row["message"] and bad.name in row["message"]


def test_fifo_given_to_compare_tensors_does_not_block(tmp_path: Path) -> None:
    np.save(tmp_path / "g.npy", np.ones(4, np.float32))
    os.mkfifo(tmp_path / "t.npy")
    code, out = _subprocess_cli(["compare-tensors", str(tmp_path / "g.npy"), str(tmp_path / "t.npy"), "--json"])
    # one unreadable pair is bad input (exit 2, the deliverables issue's exit-code contract), said at once
    assert code == 2 and "named pipe" in out["error"]["message"] and out["error"]["hint"]


@pytest.mark.parametrize("case", ["truncated_data", "npy_is_a_pickle", "fp8_saved_by_numpy", "symlink_to_itself"])
def test_compare_tensors_bad_file_is_an_error_output(case: str, tmp_path: Path,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    np.save(tmp_path / "g.npy", np.ones((4, 8), np.float32))
    bad = tmp_path / "t.npy"
    np.save(bad, np.ones((4, 8), np.float16))
    UNREADABLE[case][0](bad)
    code, out = _cli(["compare-tensors", str(tmp_path / "g.npy"), str(bad), "--json"], capsys)
    # a single unreadable pair is bad input: exit 2 with a structured error naming the file and the fix
    assert code == 2 and out["error"]["hint"], out
    assert "t.npy" in out["error"]["message"] or out["error"]["code"] == "symlink_loop"
    assert not (tmp_path / "PWNED").exists()


def test_compare_tensors_over_long_name_is_a_structured_error(tmp_path: Path,
                                                              capsys: pytest.CaptureFixture[str]) -> None:
    np.save(tmp_path / "g.npy", np.ones(4, np.float32))
    code, out = _cli(["compare-tensors", str(tmp_path / "g.npy"), str(tmp_path / ("y" * 300 + ".npy")), "--json"],
                     capsys)
    assert code == 2 and out["error"]["code"] == "name_too_long" and out["error"]["hint"]


def test_unreadable_first_divergence_is_not_judged(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    g, t, bad = _pair(tmp_path)
    _truncate_data(bad)
    _, out = _cli(["compare-dumps", str(g), str(t), "--all-rows", "--json"], capsys)
    fd = out.get("first_divergence") or {}
    assert "far beyond precision" not in str(fd.get("reason", ""))


def _short_run_log(path: Path, huge_note: str) -> Path:
    """A 100-step run whose loss drops 38 %: a pass, whatever one field of one record holds."""
    if path.suffix == ".csv":
        rows = [f"{i},{5 - 0.02 * i},{huge_note if i == 3 else ''}" for i in range(100)]
        path.write_text("step,loss,note\n" + "\n".join(rows) + "\n")
    else:
        path.write_text("\n".join(json.dumps({"step": i, "loss": 5 - 0.02 * i, "note": huge_note if i == 0 else ""})
                                  for i in range(100)) + "\n")
    return path


@pytest.mark.parametrize("suffix", [".jsonl", ".csv"])
def test_log_with_one_huge_field(suffix: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    log = _short_run_log(tmp_path / f"train{suffix}", "y" * 200_000)  # above csv's 131072 field limit
    code, out = _cli(["judge-short-run", str(log), "--no-record", "--json"], capsys)
    assert code == 0 and out["verdict"] == "pass"


def test_fifo_passed_as_the_dump_itself(tmp_path: Path) -> None:
    g, _, _ = _pair(tmp_path)
    os.mkfifo(tmp_path / "dump.json")
    code, out = _subprocess_cli(["compare-dumps", str(g), str(tmp_path / "dump.json"), "--json"])
    assert code == 2 and out["error"]["hint"]


def test_over_long_dump_path_is_a_structured_error(tmp_path: Path) -> None:
    g, _, _ = _pair(tmp_path)
    code, out = _subprocess_cli(["compare-dumps", str(g), str(tmp_path / ("d" * 300)), "--json"])
    assert code == 2 and out["error"]["hint"]


def _stat_leaf(v: float) -> dict[str, object]:
    return {"type": "torch.Tensor", "dtype": "torch.float32", "shape": [4], "Max": v, "Min": -v, "Mean": 0.0,
            "Norm": 2 * v, "requires_grad": False}


@pytest.mark.parametrize("layout", ["tensor", "statistics"])
def test_csv_cells_never_run_as_formulas(layout: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A tensor named like a formula is written with a leading quote in both CSV layouts; numbers stay numbers."""
    name = "=HYPERLINK(1+2)"
    for side, scale in (("g", 1.0), ("t", 2.0)):
        folder = tmp_path / side
        folder.mkdir()
        if layout == "tensor":
            np.save(folder / f"{name}.npy", np.full(4, scale, np.float32))
        else:
            doc = {"task": "statistics", "level": "L1", "framework": "pytorch", "data": {
                f"{name}.0.forward": {"input_args": [_stat_leaf(1.0)], "input_kwargs": {},
                                      "output": [_stat_leaf(-scale)]}}}
            (folder / "dump.json").write_text(json.dumps(doc), encoding="utf-8")
    out_csv = tmp_path / "out.csv"
    code, _ = _cli(["compare-dumps", str(tmp_path / "g"), str(tmp_path / "t"), "--csv", str(out_csv), "--json"],
                   capsys)
    assert code in (0, 1)
    import csv

    with out_csv.open(newline="", encoding="utf-8") as fh:
        rows = list(csv.reader(fh))
    cells = [c for row in rows[1:] for c in row]
    assert cells and not any(c[:1] and c[:1] in "=+@" for c in cells), [c for c in cells if c[:1] and c[:1] in "=+@"]
    assert any(c.startswith("'=HYPERLINK") for c in cells)
    assert any(c.startswith("-") and c[1:2].isdigit() for c in cells) or layout == "tensor", "negative numbers kept"
