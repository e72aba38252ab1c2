"""Framework families beyond the real-log folder, several runs in one file, and bad input."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from acc_agent.errors import AccAgentError
from acc_agent.io.logs import RunData, parse_log
from acc_agent.io.logs.source import MAX_LINE_CHARS
from acc_agent.registry import call_tool

FIX = Path(__file__).resolve().parent / "fixtures" / "logs"
LOGS = Path(__file__).resolve().parent / "data" / "realdata" / "logs"


def _value(run: RunData, metric: str, step: int) -> float:
    s = run.series[metric]
    return s.values[list(s.steps).index(step)]


def test_megatron_gpu_fp16_with_rank_prefixes_and_validation() -> None:
    p = parse_log(FIX / "megatron_gpu_fp16.log")
    assert p.format == "megatron" and len(p.runs) == 1
    r = p.runs[0]
    assert len(r.series["loss"]) == 40  # "[default0]:" prefixes on odd steps do not hide lines
    assert _value(r, "loss", 1) == pytest.approx(10.0 * math.exp(-1 / 25) + 1.0, rel=1e-6)
    assert _value(r, "loss_scale", 3) == 32768.0 and _value(r, "skipped_iterations", 17) == 1.0
    assert _value(r, "eval_loss", 20) == 5.012345 and _value(r, "eval_ppl", 20) == 150.2745
    assert r.device == "GPU" and r.warmup_steps == [1]


def test_megatron_restarted_job_gives_two_runs() -> None:
    p = parse_log(FIX / "megatron_two_runs.log")
    assert [len(r.series["loss"]) for r in p.runs] == [6, 8]
    assert p.run(None).index == 1  # default: the run with the most loss points
    assert p.runs[1].start_line == 7


def test_mmengine_train_and_val() -> None:
    r = parse_log(FIX / "mmengine_train.log").runs[0]
    assert list(r.series["loss"].steps) == [50, 100, 150, 200, 250, 300]
    assert math.isnan(_value(r, "grad_norm", 50))  # "grad_norm: nan" kept as NaN, not dropped
    assert _value(r, "step_time_ms", 50) == pytest.approx(252.6)
    assert _value(r, "eval_coco/bbox_map", 150) == 0.374
    assert "eval_memory_mb" not in r.series  # validation progress lines carry no metric


def test_hf_trainer_console_plain_and_quoted() -> None:
    plain = parse_log(FIX / "hf_trainer_plain.txt")
    assert plain.format == "hf_trainer_text"
    r = plain.runs[0]
    assert list(r.series["loss"].steps) == [10, 20, 30]  # steps from the tqdm bar before each dict
    assert math.isnan(_value(r, "loss", 30))
    assert _value(r, "eval_loss", 30) == 0.5123
    assert r.scalars["summary_train_loss"] == 0.66  # the mean over the run, not a step loss
    quoted = parse_log(FIX / "hf_trainer_quoted.txt").runs[0]
    assert list(quoted.series["loss"].steps) == [20, 40]
    assert _value(quoted, "loss", 40) == 0.5533 and _value(quoted, "lr", 20) == 4.75e-05


def test_mindspore_lossmonitor_global_steps_and_cpu() -> None:
    r = parse_log(FIX / "mindspore_cpu.log").runs[0]
    assert list(r.series["loss"].steps) == [100, 200, 300, 400, 500, 600, 700, 800, 900]
    assert _value(r, "loss", 400) == pytest.approx(2.3 * math.exp(-1.0), rel=1e-12)
    assert _value(r, "step_time_ms", 300) == pytest.approx(10.8)
    assert r.device == "CPU"


def test_timm_train_and_test_lines() -> None:
    r = parse_log(FIX / "timm_train.log").runs[0]
    assert list(r.series["loss"].steps) == [0, 50, 99, 100, 150, 199]
    assert _value(r, "throughput", 50) == 500.0
    assert _value(r, "eval_acc1", 199) == 62.0  # running average of the last Test line


def test_generic_jsonl_and_csv() -> None:
    j = parse_log(FIX / "metrics.jsonl").runs[0]
    assert _value(j, "loss", 3) == pytest.approx(2.7) and _value(j, "eval_loss", 5) == pytest.approx(2.4)
    c = parse_log(FIX / "timm_summary.csv")
    assert c.format == "csv" and c.runs[0].step_unit == "epoch"
    assert _value(c.runs[0], "eval_top1", 4) == 70.0


def test_forced_format_and_unknown_format() -> None:
    assert parse_log(FIX / "metrics.jsonl", "jsonl").format == "jsonl"
    with pytest.raises(AccAgentError) as exc:
        parse_log(FIX / "metrics.jsonl", "nope")
    assert exc.value.code == "unknown_format" and "megatron" in exc.value.hint


# ---- bad input ----------------------------------------------------------------------------

def test_empty_file_is_a_structured_error(tmp_path: Path) -> None:
    empty = tmp_path / "train.log"
    empty.write_bytes(b"")
    with pytest.raises(AccAgentError) as exc:
        parse_log(empty)
    assert exc.value.code == "empty_log" and str(empty) in exc.value.message


def test_binary_file_is_a_structured_error(tmp_path: Path) -> None:
    binary = tmp_path / "model.ckpt"
    binary.write_bytes(bytes(range(256)) * 64)
    with pytest.raises(AccAgentError) as exc:
        parse_log(binary)
    assert exc.value.code == "binary_file" and exc.value.hint


def test_invalid_utf8_lines_are_counted_and_the_rest_parses(tmp_path: Path) -> None:
    src = (FIX / "megatron_two_runs.log").read_bytes().splitlines(keepends=True)
    bad = tmp_path / "latin.log"
    bad.write_bytes(b"".join(src[:3]) + "warning: caf\xe9 \xff\xfe\n".encode("latin-1") + b"".join(src[3:]))
    p = parse_log(bad)
    assert len(p.runs[0].series["loss"]) == 6
    assert any("invalid UTF-8" in w for w in p.warnings)


def test_truncated_json_is_a_structured_error(tmp_path: Path) -> None:
    full = json.dumps({"log_history": [{"loss": 0.5, "step": i} for i in range(1, 50)], "global_step": 49}, indent=2)
    cut = tmp_path / "trainer_state.json"
    cut.write_text(full[: len(full) // 2], encoding="utf-8")
    with pytest.raises(AccAgentError) as exc:
        parse_log(cut)
    assert exc.value.code == "invalid_json" and "truncated" in exc.value.message


@pytest.mark.slow
def test_100mb_without_newline_streams_and_reports(tmp_path: Path) -> None:
    big = tmp_path / "one_line.log"
    chunk = b"x" * (1 << 20)
    with big.open("wb") as fh:
        for _ in range(100):
            fh.write(chunk)
    out = call_tool("parse_training_log", {"log": str(big)})
    assert out.verdict == "no_metrics"
    assert "longer than 1 MiB" in (out.reason or "")
    assert MAX_LINE_CHARS == 1 << 20


def test_log_without_metrics_is_an_empty_result_with_reason(tmp_path: Path) -> None:
    prose = tmp_path / "notes.txt"
    prose.write_text("We trained the model yesterday.\nIt went fine.\n", encoding="utf-8")
    out = call_tool("parse_training_log", {"log": str(prose)})
    assert out.verdict == "no_metrics" and out.series == {} and "no recognisable metric" in (out.reason or "")
    assert not out.is_failure()


def test_cli_exit_codes(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from acc_agent.cli import main

    empty = tmp_path / "e.log"
    empty.write_text("", encoding="utf-8")
    with pytest.raises(SystemExit) as exc:
        main(["parse-training-log", str(empty), "--json"])
    assert exc.value.code == 2
    assert json.loads(capsys.readouterr().out)["error"]["code"] == "empty_log"
    with pytest.raises(SystemExit) as exc:
        main(["parse-training-log", str(FIX / "timm_train.log"), "--json", "--metrics", "loss"])
    assert exc.value.code == 0
    assert set(json.loads(capsys.readouterr().out)["series"]) == {"loss"}


def test_iteration_based_openmmlab_runners(tmp_path: Path) -> None:
    mmcv = tmp_path / "mmseg.log"
    mmcv.write_text(
        "2022-03-01 10:00:00,000 - mmseg - INFO - Iter [50/80000]\tlr: 9.997e-03, eta: 9:01:02, time: 0.406, data_time: 0.010, memory: 7018, decode.loss_ce: 1.9617, decode.acc_seg: 43.5, loss: 2.7514\n"
        "2022-03-01 10:00:20,000 - mmseg - INFO - Iter [100/80000]\tlr: 9.994e-03, eta: 9:00:02, time: 0.400, data_time: 0.009, memory: 7018, decode.loss_ce: 1.5, decode.acc_seg: 50.1, loss: 2.2010\n"
        "2022-03-01 10:10:00,000 - mmseg - INFO - Iter(val) [500]\taAcc: 0.8012, mIoU: 0.3567, mAcc: 0.4521\n",
        encoding="utf-8",
    )
    r = parse_log(mmcv).runs[0]
    assert parse_log(mmcv).format == "mmcv" and r.declared_total == 80000
    assert _value(r, "loss", 100) == 2.2010 and _value(r, "step_time_ms", 50) == pytest.approx(406.0)
    assert _value(r, "eval_miou", 500) == 0.3567
    eng = tmp_path / "mmengine_iter.log"
    eng.write_text(
        "06/19 01:21:51 - mmengine - INFO - Iter(train) [  50/90000]  base_lr: 1.0e-02 lr: 1.0e-02  eta: 1 day, 2:03:04  time: 0.5123  data_time: 0.0100  memory: 5000  loss: 1.2345  decode.loss_ce: 1.2345\n"
        "06/19 01:22:16 - mmengine - INFO - Iter(train) [ 100/90000]  base_lr: 1.0e-02 lr: 1.0e-02  eta: 1 day, 2:02:04  time: 0.5000  data_time: 0.0100  memory: 5000  loss: 1.1000  decode.loss_ce: 1.1000\n",
        encoding="utf-8",
    )
    e = parse_log(eng)
    assert e.format == "mmengine" and _value(e.runs[0], "loss", 100) == 1.1


def test_older_megatron_without_timestamps_and_dynamic_loss_scale(tmp_path: Path) -> None:
    log = tmp_path / "gpt.log"
    log.write_text(
        " iteration      100/  500000 | consumed samples:        51200 | elapsed time per iteration (ms): 512.3 | learning rate: 1.500E-04 | "
        "global batch size:   512 | lm loss: 7.123456E+00 | loss scale: 65536.0 | grad norm: 1.234 | number of skipped iterations:   0 | number of nan iterations:   0 |\n"
        " iteration      200/  500000 | consumed samples:       102400 | elapsed time per iteration (ms): 510.0 | learning rate: 1.500E-04 | "
        "global batch size:   512 | lm loss: 6.543210E+00 | loss scale: 32768.0 | grad norm: 1.100 | number of skipped iterations:   1 | number of nan iterations:   0 |\n",
        encoding="utf-8",
    )
    r = parse_log(log).runs[0]
    assert _value(r, "loss", 200) == 6.54321 and _value(r, "loss_scale", 200) == 32768.0 and r.declared_total == 500000
