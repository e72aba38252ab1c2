"""compare_loss_curves on real logs: determinism check, interpolation across intervals, divergence, plot."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from acc_agent.models.training import CompareLossCurvesOutput
from acc_agent.registry import call_tool

LOGS = Path(__file__).resolve().parent / "data" / "realdata" / "logs"
QWEN = LOGS / "ascend-MindSpeed-Core-MS__tests_st_net_test_qwen_sft__pta_det.txt"
DS3 = LOGS / "ascend-MindSpeed-Core-MS__tests_st_net_test_ds3_pretrain__pta_det.txt"
GOLDEN = LOGS / "NVIDIA-Megatron-LM__gpt3_mcore_te_tp1_pp1_dist_optimizer_no_mmap_bin_files__golden_values_dev_dgx_a100.json"


def compare(**kw: object) -> CompareLossCurvesOutput:
    out = call_tool("compare_loss_curves", {k: str(v) if isinstance(v, Path) else v for k, v in kw.items()})
    assert isinstance(out, CompareLossCurvesOutput)
    return out


def _npu_log_from_golden(path: Path, scale_from: int | None = None, factor: float = 1.0, noise: float = 0.0) -> None:
    """A Megatron text log on NPU logging every step, its loss the golden curve interpolated (+ changes)."""
    golden = json.loads(GOLDEN.read_text(encoding="utf-8"))["lm loss"]["values"]
    gx = np.array([int(k) for k in golden], dtype=float)
    gy = np.array(list(golden.values()), dtype=float)
    rng = np.random.default_rng(1)
    lines = ["[W compiler_depend.ts:41] Warning: torch_npu kernel runs on AiCore"]
    for step in range(1, 51):
        loss = float(np.interp(step, gx, gy)) * (1 + noise * rng.standard_normal())
        if scale_from is not None and step >= scale_from:
            loss *= factor
        lines.append(f" iteration {step:>8}/      50 | elapsed time per iteration (ms): 120.0 | lm loss: {loss:.6E} | loss scale: 1.0 |")
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


def test_deterministic_run_against_its_repeat_is_identical_not_a_failure(tmp_path: Path) -> None:
    repeat = tmp_path / "pta_det_repeat.txt"
    shutil.copy(QWEN, repeat)
    out = compare(baseline_log=QWEN, target_log=repeat)
    assert out.verdict == "identical" and not out.is_failure()
    assert out.comparison == "same_platform" and out.determinism and "deterministic" in out.determinism
    loss = next(m for m in out.metrics if m.metric == "loss")
    assert loss.max_rel_dev == 0.0 and loss.step_range == [1, 10] and loss.skipped_steps == []  # ascend profile: from step 1


def test_different_logging_intervals_are_interpolated(tmp_path: Path) -> None:
    target = tmp_path / "npu.log"
    _npu_log_from_golden(target, noise=0.003)
    out = compare(baseline_log=GOLDEN, target_log=target)
    assert out.verdict == "match" and out.comparison == "cross_platform"
    assert out.baseline_device == "GPU" and out.target_device == "NPU"
    loss = next(m for m in out.metrics if m.metric == "loss")
    assert loss.steps_compared == 11 and loss.step_range == [1, 50]  # every golden step: the ascend profile skips none
    assert "values at the same steps" in loss.alignment  # the every-step target has a point at each golden step
    assert loss.max_rel_dev is not None and 0 < loss.max_rel_dev < 0.02


def test_divergence_step_is_found(tmp_path: Path) -> None:
    target = tmp_path / "npu.log"
    _npu_log_from_golden(target, scale_from=30, factor=1.05)
    out = compare(baseline_log=GOLDEN, target_log=target, plot=tmp_path / "curves.png")
    assert out.verdict == "diverged" and out.is_failure()
    assert out.first_divergent_step == 30 and out.first_divergent_metric == "loss"
    loss = next(m for m in out.metrics if m.metric == "loss")
    assert loss.max_rel_dev == pytest.approx(0.05, rel=1e-4)
    assert out.plot_path and Path(out.plot_path).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    loose = compare(baseline_log=GOLDEN, target_log=target, tolerances="loss=6%")
    assert loose.verdict == "match"


def test_two_different_models_diverge_from_the_first_compared_step() -> None:
    out = compare(baseline_log=DS3, target_log=QWEN, profile="ci")  # ci: first 5 steps left out, speed reported
    assert out.verdict == "diverged" and out.first_divergent_step == 6
    assert "step time" in out.summary  # performance deviation reported, not judged


def test_no_common_data_is_insufficient(tmp_path: Path) -> None:
    prose = tmp_path / "notes.txt"
    prose.write_text("nothing to see\n", encoding="utf-8")
    out = compare(baseline_log=GOLDEN, target_log=prose)
    assert out.verdict == "insufficient_data" and not out.is_failure()
