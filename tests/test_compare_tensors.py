"""compare_tensors: the golden check judged with the target precision's tolerance, named with its source."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import ml_dtypes
import numpy as np
import pytest

from acc_agent.cli import main


def run_cli(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, dict[str, Any]]:
    with pytest.raises(SystemExit) as exc:
        main(["compare-tensors", *argv, "--json"])
    return int(exc.value.code or 0), json.loads(capsys.readouterr().out)


@pytest.fixture()
def outputs(tmp_path: Path) -> dict[str, Path]:
    rng = np.random.default_rng(11)
    logits = rng.standard_normal((8, 10)).astype(np.float32)
    feat = rng.standard_normal((8, 32)).astype(np.float32)
    paths = {
        "golden": tmp_path / "golden.npy",
        "fp16": tmp_path / "fp16.npy",
        "bf16": tmp_path / "bf16.npy",
        "bug": tmp_path / "bug.npy",
        "nan": tmp_path / "nan.npy",
        "shape": tmp_path / "shape.npy",
        "g_npz": tmp_path / "golden.npz",
        "t_npz": tmp_path / "target.npz",
    }
    np.save(paths["golden"], logits)
    np.save(paths["fp16"], logits.astype(np.float16))
    np.save(paths["bf16"], logits.astype(ml_dtypes.bfloat16))
    bug = logits.copy()
    bug[3] = bug[3][::-1]  # one sample's scores permuted: a real bug, not rounding
    np.save(paths["bug"], bug)
    nan = logits.astype(np.float16)
    nan[0, 0] = np.nan
    np.save(paths["nan"], nan)
    np.save(paths["shape"], logits.reshape(10, 8))
    np.savez(paths["g_npz"], logits=logits, feat=feat)
    np.savez(paths["t_npz"], logits=logits.astype(np.float16), feat=feat.astype(np.float16))
    return paths


def test_fp16_rounding_passes_with_default_fp16_tolerance(outputs: dict[str, Path],
                                                           capsys: pytest.CaptureFixture[str]) -> None:
    code, out = run_cli([str(outputs["golden"]), str(outputs["fp16"])], capsys)
    assert code == 0 and out["verdict"] == "pass"
    t = out["tolerance"]
    assert (t["rtol"], t["atol"], t["precision"]) == (1e-2, 1e-3, "fp16")
    assert "reference tolerances" in t["source"] and "default" in t["source"]
    assert "the target data is float16" not in t["source"]  # fp16 data: nothing to warn about
    o = out["outputs"][0]
    assert o["within_tolerance_ratio"] == 1.0 and o["top1_agreement"] == 1.0
    assert o["max_ulp_err"] <= 0.5 and o["cosine"] is not None


def test_fp32_tolerance_fails_an_fp16_run(outputs: dict[str, Path], capsys: pytest.CaptureFixture[str]) -> None:
    code, out = run_cli([str(outputs["golden"]), str(outputs["fp16"]), "--precision", "fp32"], capsys)
    assert code == 1 and out["verdict"] == "fail"
    assert out["tolerance"]["atol"] == 1e-5
    assert out["outputs"][0]["within_tolerance_ratio"] < 0.9


def test_user_override_is_named_and_flagged(outputs: dict[str, Path], capsys: pytest.CaptureFixture[str]) -> None:
    _, out = run_cli([str(outputs["golden"]), str(outputs["fp16"]), "--atol", "1e-5", "--rtol", "1e-3"], capsys)
    t = out["tolerance"]
    assert (t["rtol"], t["atol"]) == (1e-3, 1e-5)
    assert "user override" in t["source"] and "far below" in t["note"]


def test_real_bug_fails_and_is_explained(outputs: dict[str, Path], capsys: pytest.CaptureFixture[str]) -> None:
    code, out = run_cli([str(outputs["golden"]), str(outputs["bug"])], capsys)
    assert code == 1
    o = out["outputs"][0]
    assert o["verdict"] == "fail" and o["within_tolerance_ratio"] < 1.0 and o["top1_agreement"] < 1.0
    assert "within rtol=0.01" in o["message"] and o["name"] in out["summary"]


def test_bf16_target_uses_bf16_tolerance(outputs: dict[str, Path], capsys: pytest.CaptureFixture[str]) -> None:
    code, out = run_cli([str(outputs["golden"]), str(outputs["bf16"])], capsys)
    assert out["tolerance"]["precision"] == "bf16" and out["tolerance"]["atol"] == 1e-2
    assert code == 0 and out["outputs"][0]["target_dtype"] == "bfloat16"


def test_nan_in_target_fails(outputs: dict[str, Path], capsys: pytest.CaptureFixture[str]) -> None:
    code, out = run_cli([str(outputs["golden"]), str(outputs["nan"])], capsys)
    o = out["outputs"][0]
    assert code == 1 and o["verdict"] == "fail" and o["target_nan"] == 1 and "NaN" in o["message"]


def test_shape_mismatch_is_an_error_row(outputs: dict[str, Path], capsys: pytest.CaptureFixture[str]) -> None:
    code, out = run_cli([str(outputs["golden"]), str(outputs["shape"])], capsys)
    o = out["outputs"][0]
    assert code == 1 and o["verdict"] == "error" and "shape unmatched" in o["message"]


def test_several_outputs_of_two_npz(outputs: dict[str, Path], capsys: pytest.CaptureFixture[str]) -> None:
    code, out = run_cli([str(outputs["g_npz"]), str(outputs["t_npz"])], capsys)
    assert code == 0 and {o["name"] for o in out["outputs"]} == {"logits", "feat"}


def test_npz_key_against_a_file(outputs: dict[str, Path], capsys: pytest.CaptureFixture[str]) -> None:
    code, out = run_cli([f"{outputs['g_npz']}:logits", str(outputs["fp16"])], capsys)
    assert code == 0 and out["outputs"][0]["golden"].endswith("golden.npz:logits")


def test_unreadable_single_target_is_bad_input(outputs: dict[str, Path], tmp_path: Path,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    """One file that cannot be read is bad input (exit 2), not a comparison that failed (exit 1)."""
    np.save(tmp_path / "obj.npy", np.array([None], dtype=object), allow_pickle=True)
    code, out = run_cli([str(outputs["golden"]), str(tmp_path / "obj.npy")], capsys)
    assert code == 2 and out["error"]["code"] == "unsafe_pickle" and "obj.npy" in out["error"]["message"]
    (tmp_path / "text.npy").write_text("hello world\n", encoding="utf-8")
    code, out = run_cli([str(outputs["golden"]), str(tmp_path / "text.npy")], capsys)
    assert code == 2 and out["error"]["message"] == "not a .npy file: text.npy starts with 'hello world\\n'"
    assert out["error"]["hint"]


def test_fp32_data_says_which_precision_judged_it(outputs: dict[str, Path], tmp_path: Path,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    """float32 data judged at the FP16 default says so, and the required share is not read as a measurement."""
    np.save(tmp_path / "t32.npy", np.load(outputs["golden"]) * np.float32(1.02))
    code, out = run_cli([str(outputs["golden"]), str(tmp_path / "t32.npy")], capsys)
    assert code == 1 and "(FP16 tolerances)" in out["summary"] and "the target data is float32" in out["tolerance"]["source"]
    assert out["min_within_ratio"] == 1.0 and out["lowest_within_ratio"] < 1.0


def test_missing_file_exits_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out = run_cli([str(tmp_path / "a.npy"), str(tmp_path / "b.npy")], capsys)
    assert code == 2 and out["error"]["code"] == "missing_file"
