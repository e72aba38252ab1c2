"""judge_short_run on real logs: band verdicts, window/band parsing, instability, §8.2, do-not-repeat."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from acc_agent.errors import AccAgentError
from acc_agent.models.training import JudgeShortRunOutput
from acc_agent.registry import call_tool

LOGS = Path(__file__).resolve().parent / "data" / "realdata" / "logs"
FIX = Path(__file__).resolve().parent / "fixtures" / "logs"
DS3 = LOGS / "ascend-MindSpeed-Core-MS__tests_st_net_test_ds3_pretrain__pta_det.txt"
HF = LOGS / "Tashu014-lora-imdb-distilbert__trainer_state.json"
MS = LOGS / "mindspore-ai-docs__tutorials_source_en_parallel_multiple_copy.md"


def judge(**kw: object) -> JudgeShortRunOutput:
    kw.setdefault("record", False)
    out = call_tool("judge_short_run", {k: str(v) if isinstance(v, Path) else v for k, v in kw.items()})
    assert isinstance(out, JudgeShortRunOutput)
    return out


def test_large_model_ten_iterations_is_below_band_and_says_what_window_would() -> None:
    out = judge(log=DS3)
    assert out.verdict == "below_band" and out.is_failure()
    # k = 2 points per endpoint: median(13.4216, 13.3997) -> median(13.2756, 13.1001)
    start = (13.4216022491455078 + 13.3996791839599609) / 2
    end = (13.2756052017211914 + 13.1001281738281250) / 2
    assert out.relative_drop == pytest.approx((start - end) / start, rel=1e-12)
    assert out.window.start_step == 1 and out.window.end_step == 10 and out.endpoint_points == 2
    assert out.trend_slope is not None and out.trend_slope < 0
    assert out.suggested_end_step is not None and out.suggested_end_step > 50
    assert out.band_fit and "does not fit" in out.band_fit and "Mig_Readme §3.1" in out.band_fit
    assert {c.name: c.status for c in out.checks}["loss_scale"] == "pass"


def test_band_override_in_percent_passes_the_same_run() -> None:
    out = judge(log=DS3, band="1,5")
    assert out.band.low == 0.01 and out.band.high == 0.05
    assert out.verdict == "pass" and not out.is_failure()


def test_hf_run_inside_default_band_and_window_form() -> None:
    out = judge(log=HF)
    assert out.verdict == "pass" and 0.3 <= (out.relative_drop or 0) <= 0.5
    sub = judge(log=HF, window="40:200")
    assert sub.window.start_step == 40 and sub.window.end_step == 200 and sub.points == 9


def test_small_model_drop_above_band_is_a_pass_with_the_percentage() -> None:
    out = judge(log=MS)
    assert out.verdict == "pass_above_band" and not out.is_failure()
    assert f"{out.relative_drop_pct:.1f}%" in out.summary


def test_nan_loss_and_overflow_are_unstable() -> None:
    out = judge(log=FIX / "megatron_npu_overflow.log")
    assert out.verdict == "unstable" and out.is_failure()
    checks = {c.name: c for c in out.checks}
    assert checks["loss_finite"].status == "fail" and checks["loss_finite"].steps == [12]
    assert checks["loss_scale"].status == "fail" and checks["nan_iterations"].steps == [12]


def test_insufficient_data_is_not_a_failure() -> None:
    few = judge(log=DS3, window="9:")
    assert few.verdict == "insufficient_data" and not few.is_failure() and few.points == 2
    missing = judge(log=DS3, metric="eval_loss")
    assert missing.verdict == "insufficient_data" and "eval_loss" in (missing.reason or "")


def test_beyond_500_steps_without_improvement_is_stalled_with_the_checklist(tmp_path: Path) -> None:
    rng = np.random.default_rng(0)
    log = tmp_path / "metrics.jsonl"
    loss = 2.0 + 0.05 * rng.standard_normal(800)
    log.write_text("\n".join(json.dumps({"step": i + 1, "loss": float(v)}) for i, v in enumerate(loss)), encoding="utf-8")
    out = judge(log=log)
    assert out.verdict == "stalled" and out.is_failure()
    assert any("Labels and loss" in item for item in out.checklist) and len(out.checklist) >= 5


def test_bad_window_and_band_are_structured_errors() -> None:
    with pytest.raises(AccAgentError) as exc:
        judge(log=DS3, window="ten")
    assert exc.value.code == "invalid_input" and "window" in exc.value.message
    with pytest.raises(AccAgentError):
        judge(log=DS3, band="0.5,0.3")


def test_passed_short_run_is_recorded_and_a_repeat_is_flagged(tmp_path: Path) -> None:
    record = tmp_path / "record.json"
    first = tmp_path / "run1" / "trainer_state.json"
    first.parent.mkdir()
    shutil.copy(HF, first)
    out = judge(log=first, record=True, record_file=record)
    assert out.verdict == "pass" and "recorded" in out.repeat_check
    again = judge(log=first, record=True, record_file=record)
    assert again.verdict == "pass" and "already judged" in again.repeat_check
    # a second run of the same configuration (different numbers, same trainer settings)
    doc = json.loads(HF.read_text(encoding="utf-8"))
    doc["log_history"][0]["loss"] = 0.6901
    second = tmp_path / "run2" / "trainer_state.json"
    second.parent.mkdir()
    second.write_text(json.dumps(doc), encoding="utf-8")
    rep = judge(log=second, record=True, record_file=record)
    assert rep.verdict == "repeat_of_passed" and not rep.is_failure()
    assert rep.repeat is not None and rep.repeat.log_path == str(first.resolve())
    assert "do not rerun" in rep.summary
    assert len(json.loads(record.read_text(encoding="utf-8"))["records"]) == 1


def test_unreadable_record_file_does_not_break_the_judgement(tmp_path: Path) -> None:
    record = tmp_path / "record.json"
    record.write_text("{not json", encoding="utf-8")
    out = judge(log=HF, record=True, record_file=record)
    assert out.verdict == "pass" and "unreadable" in out.repeat_check
    assert record.read_text(encoding="utf-8") == "{not json"


def test_log_without_configuration_says_repeat_check_impossible(tmp_path: Path) -> None:
    out = judge(log=MS, record=True, record_file=tmp_path / "r.json")
    assert out.repeat_check.startswith("not possible") and "--config" in out.repeat_check


def test_cli_short_forms(capsys: pytest.CaptureFixture[str]) -> None:
    from acc_agent.cli import main

    with pytest.raises(SystemExit) as exc:
        main(["judge-short-run", str(DS3), "--window", "1:10", "--band", "0.3,0.5", "--no-record", "--json"])
    assert exc.value.code == 1
    data = json.loads(capsys.readouterr().out)
    assert data["window"] == {"start_step": 1, "end_step": 10} and data["band"] == {"low": 0.3, "high": 0.5}
    assert data["verdict"] == "below_band"


def test_unwritable_record_file_is_reported_not_raised(tmp_path: Path) -> None:
    blocker = tmp_path / "not_a_dir"
    blocker.write_text("", encoding="utf-8")
    out = judge(log=HF, record=True, record_file=blocker / "record.json")  # parent is a file: mkdir fails, even as root
    assert out.verdict == "pass" and "NOT recorded" in out.repeat_check
