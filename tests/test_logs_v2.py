"""Training logs v2: ImageNet-example logs, wrapped lines, TensorBoard, HF steps, configs and speed from logs.

Real logs are in tests/data/logs_v2 (SOURCE.md names each file's public origin); where a case needs
a variant the public files do not show, it is built from their real lines and says how.
"""

from __future__ import annotations

import json
import math
import shutil
from pathlib import Path
from typing import Any

import pytest

from acc_agent.errors import AccAgentError
from acc_agent.io.logs import RunData, parse_log
from acc_agent.registry import call_tool

DATA = Path(__file__).resolve().parent / "data" / "logs_v2"
JETSON = DATA / "dusty-nv-jetson-inference__docs_pytorch-cat-dog.md.excerpt.txt"
ELASTIC = DATA / "microsoft-frameworkcontroller__example_framework_scenario_pytorch_elastic_README.md.excerpt.txt"
MMENGINE = DATA / "open-mmlab-mmengine__docs_zh_cn_get_started_15_minutes.md.excerpt.txt"
STATE = DATA / "Tashu014-lora-imdb-distilbert__trainer_state.json"
DS3 = DATA / "ascend-MindSpeed-Core-MS__tests_st_net_test_ds3_pretrain__pta_det.txt"
HF_ORDER = ("loss", "grad_norm", "learning_rate", "eval_loss", "eval_runtime", "eval_samples_per_second",
            "eval_steps_per_second", "train_runtime", "train_samples_per_second", "train_steps_per_second",
            "total_flos", "train_loss", "epoch")
HF_HEADER = """***** Running training *****
  Num examples = 2,000
  Num Epochs = 3
  Instantaneous batch size per device = 16
  Total train batch size (w. parallel, distributed & accumulation) = 16
  Gradient Accumulation steps = 1
  Total optimization steps = 375
  Number of trainable parameters = 739,586
"""


def _points(run: RunData, metric: str) -> list[tuple[int, float]]:
    s = run.series[metric]
    return list(zip(s.steps, s.values, strict=True))


def _hf_console(round_epoch: bool = False, summary: bool = False) -> str:
    """The dicts the Trainer prints for the real trainer_state.json's log_history (no step key, as printed)."""
    lines = []
    for entry in json.loads(STATE.read_text(encoding="utf-8"))["log_history"]:
        printed = {k: entry[k] for k in HF_ORDER if k in entry}
        if round_epoch:
            printed["epoch"] = round(printed["epoch"], 2)
        lines.append(repr(printed))
    if summary:
        lines.append(repr({"train_runtime": 120.5, "train_samples_per_second": 49.79, "train_steps_per_second": 3.112,
                           "train_loss": 0.45, "epoch": 3.0}))
    return "\n".join(lines) + "\n"


# --------------------------------------------------------------------------- ImageNet example


def test_imagenet_example_real_log_step_values_and_running_averages() -> None:
    p = parse_log(JETSON)
    assert p.format == "pytorch_imagenet" and len(p.runs) == 1
    r = p.runs[0]
    assert r.device == "GPU" and "Use GPU: 0" in r.device_evidence
    assert [s for s, _ in _points(r, "loss")] == list(range(0, 101, 10))
    assert _points(r, "loss")[1] == (10, 23.263)  # the first number is this step's loss ...
    assert _points(r, "loss_avg")[1] == (10, 21.19)  # ... the bracketed one the running average
    assert _points(r, "step_time_ms")[0] == (0, pytest.approx(932.0))  # Time is printed in seconds
    assert _points(r, "acc1")[-1] == (100, 50.0) and _points(r, "acc1_avg")[-1] == (100, 50.12)


def test_imagenet_example_epochs_eval_and_summary_line() -> None:
    r = parse_log(ELASTIC).runs[0]
    assert [s for s, _ in _points(r, "loss")] == [0, 10, 782, 792]  # epoch x 782 + batch index
    assert _points(r, "loss")[2] == (782, 4.4326)
    # evaluation after epoch 0 belongs to its last batch; the last Test line's averages, then " * Acc@1"
    assert _points(r, "eval_loss") == [(781, 7.0174)]
    assert _points(r, "eval_acc1") == [(781, 0.39)] and _points(r, "eval_acc5") == [(781, 1.42)]
    assert r.device == "GPU"


def test_imagenet_variants_torchvision_metric_logger_and_rank_prefix(tmp_path: Path) -> None:
    """Layouts seen beside the example: torchvision's MetricLogger, an Ascend ModelZoo rank prefix."""
    log = tmp_path / "train.log"
    log.write_text(
        "[npu id: 0 ] Epoch: [0][0/569]\tTime 13.567 (13.567)\tData 9.401 (9.401)\tLoss 6.97378 (6.97378)\tAcc@1 0.00 (0.00)\n"
        "[npu id: 0 ] Epoch: [0][10/569]\tTime 0.312 (1.512)\tData 0.001 (0.855)\tLoss 6.91207 (6.94612)\tAcc@1 0.39 (0.11)\n"
        "Epoch: [1]  [  0/569]  eta: 1 day, 1:07:27  lr: 0.1  img/s: 94.7  loss: 6.0512 (6.0512)  acc1: 1.5625 (1.5625)"
        "  time: 3.0512  data: 1.1955  max mem: 10410\n"
        "[npu id: 0 ] Test: [0/196]\tTime 2.100 (2.100)\tLoss 1.2031 (1.2031)\tAcc@1 70.31 (70.31)\tAcc@5 90.62 (90.62)\n"
        "[npu id: 0 ] [AVG-ACC] * Acc@1 75.640 Acc@5 92.700\n"
        "[npu id: 0 ] * FPS@all 1843.372, TIME@all 0.139\n", encoding="utf-8")
    r = parse_log(log).runs[0]
    assert _points(r, "eval_acc1") == [(1137, 75.64)] and _points(r, "eval_loss") == [(1137, 1.2031)]
    assert _points(r, "throughput")[-1] == (1137, 1843.372)
    assert _points(r, "loss") == [(0, 6.97378), (10, 6.91207), (569, 6.0512)]
    assert _points(r, "loss_avg")[1] == (10, 6.94612)
    assert _points(r, "throughput")[0] == (569, 94.7) and _points(r, "memory_mb") == [(569, 10410.0)]
    assert _points(r, "lr") == [(569, 0.1)] and r.device == "NPU"


# --------------------------------------------------------------------------- wrapped lines


def test_trailing_backslash_continuation_keeps_the_last_value(tmp_path: Path) -> None:
    """The real mmengine lines, the last one wrapped with a trailing backslash as display-wrapped logs do."""
    lines = MMENGINE.read_text(encoding="utf-8").splitlines()
    wrapped = []
    for line in lines:
        if "[1][70/1563]" in line:
            head, _, tail = line.partition("  memory:")
            wrapped += [head + " \\", "    memory:" + tail.replace("  loss:", "\\\n    loss:")]
        elif "[1][60/1563]" in line:
            wrapped.append(line + "\\")  # the value glued to the backslash, the next line a new record
        else:
            wrapped.append(line)
    log = tmp_path / "wrapped.log"
    log.write_text("\n".join(wrapped) + "\n", encoding="utf-8")
    assert log.read_text(encoding="utf-8").count("\\\n") == 3
    plain, joined = parse_log(MMENGINE).runs[0], parse_log(log).runs[0]
    assert _points(joined, "loss") == _points(plain, "loss")  # 2.7351 at step 70 is not lost
    assert _points(joined, "loss")[-1] == (70, 2.7351) and _points(joined, "loss")[-2] == (60, 2.5956)
    assert _points(joined, "memory_mb")[-1] == (70, 392.0)
    assert _points(joined, "eval_accuracy") == [(1563, 35.7)]


# --------------------------------------------------------------------------- TensorBoard


def _write_events(logdir: Path, loss: list[float], start: int = 1, every: int = 1) -> None:
    pytest.importorskip("tensorboard")
    tb = pytest.importorskip("torch.utils.tensorboard")
    writer = tb.SummaryWriter(str(logdir))
    for i, value in enumerate(loss):
        step = start + i * every
        writer.add_scalar("train/loss", value, step)
        writer.add_scalar("train/learning_rate", 1e-4, step)
        writer.add_scalar("train/grad_norm", 2.0 + 0.01 * i, step)
    writer.add_scalar("eval/loss", 3.25, start + (len(loss) - 1) * every)
    writer.add_text("note", "not a scalar", 1)
    writer.close()


def test_tensorboard_event_file_written_by_summary_writer(tmp_path: Path) -> None:
    _write_events(tmp_path / "run", [10.0 / (1 + i) for i in range(20)])
    files = list((tmp_path / "run").glob("events.out.tfevents.*"))
    assert len(files) == 1
    for target in (files[0], tmp_path / "run"):  # the event file itself, or its run directory
        p = parse_log(target)
        assert p.format == "tensorboard" and len(p.runs) == 1
        r = p.runs[0]
        assert [s for s, _ in _points(r, "loss")] == list(range(1, 21))
        assert _points(r, "loss")[1][1] == pytest.approx(5.0)
        assert _points(r, "lr")[0][1] == pytest.approx(1e-4, rel=1e-6)  # float32 as TensorBoard stores it
        assert _points(r, "eval_loss") == [(20, pytest.approx(3.25))]
        assert "grad_norm" in r.series and "note" not in r.series
    out = call_tool("parse_training_log", {"log": str(files[0])})
    assert out.verdict == "parsed" and out.format == "tensorboard"


def test_tensorboard_curves_compare_with_a_text_log(tmp_path: Path) -> None:
    loss = [10.0 / (1 + 0.05 * i) for i in range(30)]
    _write_events(tmp_path / "gpu", loss)
    npu = tmp_path / "npu.log"
    npu.write_text("".join(f" iteration {i + 1:>8}/      30 | lm loss: {v * 1.002:.6E} | grad norm: {2.0 + 0.01 * i:.4f} |\n"
                           for i, v in enumerate(loss)), encoding="utf-8")
    out = call_tool("compare_loss_curves", {"baseline_log": str(tmp_path / "gpu"), "target_log": str(npu)})
    assert out.verdict == "match" and out.baseline_format == "tensorboard"
    mean = next(c for c in out.criteria if c.name == "loss.mean_relative_error")
    assert mean.value == pytest.approx(0.002, rel=1e-3) and mean.status == "pass"


def test_tensorboard_missing_package_is_a_clear_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    event = tmp_path / "events.out.tfevents.1700000000.host.1.0"
    event.write_bytes(b"\x18\x00\x00\x00\x00\x00\x00\x00 not really a record")
    import sys

    monkeypatch.setitem(sys.modules, "tensorboard", None)
    monkeypatch.setitem(sys.modules, "tensorboard.backend.event_processing.event_file_loader", None)
    with pytest.raises(AccAgentError) as err:
        parse_log(event)
    assert err.value.code == "missing_dependency" and "pip install" in (err.value.hint or "")


# --------------------------------------------------------------------------- Hugging Face steps


def test_hf_console_numbered_from_trainer_state_beside_it(tmp_path: Path) -> None:
    shutil.copy(STATE, tmp_path / "trainer_state.json")
    log = tmp_path / "train.log"
    log.write_text(_hf_console(), encoding="utf-8")
    r = parse_log(log).runs[0]
    assert r.step_unit == "iteration" and "trainer_state.json" in r.step_numbering
    assert [s for s, _ in _points(r, "loss")] == list(range(20, 361, 20))  # optimisation steps, not 1..18
    assert [s for s, _ in _points(r, "eval_loss")] == [125, 250, 375]


@pytest.mark.parametrize("round_epoch", [False, True])
def test_hf_console_numbered_from_the_training_header(tmp_path: Path, round_epoch: bool) -> None:
    log = tmp_path / "train.log"
    log.write_text(HF_HEADER + _hf_console(round_epoch=round_epoch, summary=True), encoding="utf-8")
    p = parse_log(log)
    r = p.runs[0]
    assert [s for s, _ in _points(r, "loss")] == list(range(20, 361, 20))
    assert _points(r, "loss")[0] == (20, 0.6899)
    assert "logging interval 20" in r.step_numbering and "125 steps per epoch" in r.step_numbering
    assert r.declared_total == 375 and r.scalars["global_batch_size"] == 16.0
    assert r.scalars["throughput"] == 49.79  # train_samples_per_second, a whole-run figure
    assert not p.warnings


def test_hf_console_evaluation_bars_do_not_move_the_step(tmp_path: Path) -> None:
    log = tmp_path / "train.log"
    log.write_text(" 5%|5         | 20/375 [00:02<00:40,  9.0it/s]\n{'loss': 0.6899, 'learning_rate': 0.00019, 'epoch': 0.16}\n"
                   "100%|##########| 32/32 [00:01<00:00, 30.1it/s]\n{'eval_loss': 0.51, 'eval_runtime': 1.1, 'epoch': 0.16}\n"
                   "11%|#         | 40/375 [00:04<00:38,  9.0it/s]\n{'loss': 0.6425, 'learning_rate': 0.00018, 'epoch': 0.32}\n",
                   encoding="utf-8")
    r = parse_log(log).runs[0]
    assert _points(r, "loss") == [(20, 0.6899), (40, 0.6425)] and _points(r, "eval_loss") == [(20, 0.51)]


def test_hf_console_logging_steps_from_training_arguments(tmp_path: Path) -> None:
    log = tmp_path / "train.log"
    args = "Training/evaluation parameters TrainingArguments(\n_n_gpu=1,\nlearning_rate=0.0002,\nlogging_steps=20,\nseed=42,\n)\n"
    log.write_text(args + _hf_console(), encoding="utf-8")
    r = parse_log(log).runs[0]
    assert [s for s, _ in _points(r, "loss")][:3] == [20, 40, 60] and "logging_steps=20" in r.step_numbering


def test_hf_console_without_step_information_is_numbered_by_record_and_says_so(tmp_path: Path) -> None:
    log = tmp_path / "train.log"
    log.write_text(_hf_console(), encoding="utf-8")
    p = parse_log(log)
    r = p.runs[0]
    assert r.step_unit == "record" and [s for s, _ in _points(r, "loss")][:3] == [1, 2, 3]
    assert any("numbered by record" in w for w in p.warnings)


def test_hf_header_and_arguments_feed_compare_run_configs(tmp_path: Path) -> None:
    gpu, npu = tmp_path / "gpu.log", tmp_path / "npu.log"
    gpu.write_text(HF_HEADER + _hf_console(), encoding="utf-8")
    npu.write_text(HF_HEADER.replace("= 16\n  Total train", "= 32\n  Total train").replace("(w. parallel, distributed & accumulation) = 16",
                                                                                             "(w. parallel, distributed & accumulation) = 32")
                   + _hf_console(), encoding="utf-8")
    out = call_tool("compare_run_configs", {"baseline": str(gpu), "target": str(npu)})
    diffs = {d.name: d for d in out.diffs}
    assert out.verdict == "mismatch" and "training header" in out.baseline_source
    assert diffs["micro_batch_size"].status == "different" and diffs["micro_batch_size"].target == 32
    assert diffs["global_batch_size"].status == "different"
    assert diffs["train_steps"].baseline == 375 and diffs["train_examples"].status == "same"
    assert diffs["train_epochs"].status == "same"


# --------------------------------------------------------------------------- measure-performance --from-log


def _measure(**kw: Any) -> Any:
    return call_tool("measure_performance", kw)


def test_from_log_hf_throughput_and_header_batch_size(tmp_path: Path) -> None:
    log = tmp_path / "train.log"
    log.write_text(HF_HEADER + _hf_console(summary=True), encoding="utf-8")
    out = _measure(from_log=str(log))
    r = out.results[0]
    assert out.verdict == "measured" and r.throughput == 49.79 and r.p50_ms is None
    assert r.batch_size == 16 and "train_samples_per_second" in r.throughput_unit
    assert any("Total train batch size" in n for n in out.notes)


def test_from_log_megatron_global_batch_size(tmp_path: Path) -> None:
    out = _measure(from_log=str(DS3))
    r = out.results[0]
    assert r.batch_size == 8 and out.settings.batch_sizes == [8]  # "global batch size: 8" on every iteration line
    assert r.throughput == pytest.approx(8 / (r.mean_ms / 1000.0)) and "global batch size 8" in r.throughput_unit
    given = _measure(from_log=str(DS3), batch_sizes=[16])
    assert given.results[0].batch_size == 16 and any("the log states 8" in n for n in given.notes)


# --------------------------------------------------------------------------- the fast Megatron path


def _megatron_lines(steps: range, loss_at: Any = lambda s: 10.0 / s) -> list[str]:
    return [f" [2025-04-25 16:46:58] iteration {s:>8}/ 1000 | consumed samples: {s * 8:>8} | elapsed time per iteration (ms): "
            f"{3250.0 + s % 7:.1f} | learning rate: {1e-5 / s:.6E} | global batch size:     8 | lm loss: {loss_at(s):.16f} | "
            f"loss scale: 1.0 | grad norm: {11.0 + s % 13 / 10:.16f} | number of skipped iterations:   0 |" for s in steps]


def test_columnar_megatron_reading_equals_line_by_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    lines = _megatron_lines(range(1, 301))
    lines.insert(100, "[Rank 0] (after 100 iterations) memory (MB) | allocated: 100.5 | max allocated: 200.25")
    lines.insert(101, "[Rank 1] (after 100 iterations) memory (MB) | allocated: 101.5 | max allocated: 190.0")
    lines.insert(150, " [2025-04-25] validation loss at iteration 150 | lm loss value: 5.5E+00 | lm loss PPL: 2.4E+02 |")
    lines += _megatron_lines(range(1, 41))  # a restarted job: the counter goes back, a new run
    log = tmp_path / "m.log"
    log.write_text("\n".join(lines) + "\n", encoding="utf-8")
    fast = parse_log(log)
    from acc_agent.io.logs.formats import BY_NAME
    from acc_agent.io.logs.source import LogSource

    tables = [rec.columns for rec in BY_NAME["megatron"].parse(LogSource.open(log)) if rec.columns is not None]
    assert sum(int(t.steps.size) for t in tables) >= 330  # the runs between memory/validation lines went column-wise
    import acc_agent.io.logs.formats.megatron as megatron

    monkeypatch.setattr(megatron, "read_columns", lambda lines, first, ats=None: None)
    slow = parse_log(log)
    assert [len(r.series["loss"]) for r in fast.runs] == [300, 40]
    for a, b in zip(fast.runs, slow.runs, strict=True):
        assert a.series.keys() == b.series.keys()
        for name in a.series:
            assert list(a.series[name].steps) == list(b.series[name].steps), name
            assert list(a.series[name].values) == list(b.series[name].values), name
        assert (a.start_line, a.end_line, a.declared_total, dict(a.record_kinds)) == (b.start_line, b.end_line, b.declared_total, dict(b.record_kinds))
    r = fast.runs[0]
    assert _points(r, "memory_max_allocated_mb") == [(100, 200.25)]  # the peak over the ranks
    assert _points(r, "eval_loss") == [(150, 5.5)]
    assert math.isclose(_points(r, "loss")[9][1], 1.0)


def _line_by_line(monkeypatch: pytest.MonkeyPatch) -> None:
    import acc_agent.io.logs.formats.megatron as megatron

    monkeypatch.setattr(megatron, "read_columns", lambda lines, first, ats=None: None)
    monkeypatch.setattr(megatron, "_memory_table", lambda lines: None)


def _same_runs(fast: Any, slow: Any) -> None:
    assert len(fast.runs) == len(slow.runs)
    for a, b in zip(fast.runs, slow.runs, strict=True):
        assert a.series.keys() == b.series.keys()
        for name in a.series:
            assert a.series[name].steps.tobytes() == b.series[name].steps.tobytes(), name
            assert a.series[name].values.tobytes() == b.series[name].values.tobytes(), name  # bit for bit: -0.0, NaN
        assert (a.start_line, a.end_line, a.declared_total, dict(a.record_kinds), a.last_train_step, a.warmup_steps) == (
            b.start_line, b.end_line, b.declared_total, dict(b.record_kinds), b.last_train_step, b.warmup_steps)
    assert (fast.warnings, fast.lines_read) == (slow.warnings, slow.lines_read)


def _memory_lines(step: int, ranks: int = 8, value: str = "17975.59765625") -> list[str]:
    return [f"[Rank {r}] (after {step} iterations) memory (MB) | allocated: {value} | max allocated: {24000.25 + r % 3} | "
            f"reserved: 28276.0 | max reserved: 28276.0" for r in range(ranks)]


def test_memory_lines_read_inside_the_table_equal_line_by_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The ranks' memory lines inside runs of iteration lines (read with the table, merged per step) give the
    same series, line numbers and counts as the per-line reader, odd values and misplaced lines included."""
    lines: list[str] = []
    for s in range(1, 401):
        lines += _megatron_lines(range(s, s + 1))
        if s % 10 == 0:
            value = {100: "nan", 200: "-0.0", 210: "0.0", 300: "1e400"}.get(s, f"{17000 + s}.5")
            lines += _memory_lines(s, value=value)
        if s == 250:
            lines += _memory_lines(249, ranks=2)  # a step behind the row before it: a new run, as line by line
        if s == 330:
            lines.append("[Rank 0] (after 330 iterations) memory (MB) | allocated: 5.0 | max allocated: 6.0")  # another layout
            lines.append("[W compiler_depend.ts:41] Warning: kernel [ArgSort] runs on AiCpu.")
        if s == 360:
            lines += _memory_lines(360, ranks=3) + _megatron_lines(range(360, 361))  # a repeated step after its memory
    lines += _memory_lines(400)  # after the last row: held until the end
    log = tmp_path / "mem.log"
    log.write_text("\n".join(lines) + "\n", encoding="utf-8")
    from acc_agent.io.logs.formats import BY_NAME
    from acc_agent.io.logs.source import LogSource

    tables = [rec.columns for rec in BY_NAME["megatron"].parse(LogSource.open(log)) if rec.columns is not None]
    assert max(len(t.memory) for t in tables) >= 20  # the memory lines went with the rows
    fast = parse_log(log)
    _line_by_line(monkeypatch)
    slow = parse_log(log)
    _same_runs(fast, slow)
    assert len(fast.runs) >= 2
    r = fast.runs[0]
    assert _points(r, "memory_allocated_mb")[:2] == [(10, 17010.5), (20, 17020.5)]
    assert math.isnan(dict(_points(r, "memory_allocated_mb"))[100])


@pytest.mark.parametrize("case", ["colon", "two_totals", "keys_after_colon", "leading_zero", "other_digits", "rank_prefix",
                                  "cut_key", "step_20_digits", "junk_after_bar", "iteration_in_prefix", "total_changes"])
def test_table_headers_the_per_line_reader_refuses_are_not_read(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, case: str) -> None:
    """One kind of odd line among runs of good ones (a header the per-line reader does not take: a ":" after
    the total, a second total with a row without one, a leading zero, other digits, its header in another
    column...): the table reader gives exactly what the per-line reader gives."""
    good = _megatron_lines(range(1, 61))
    edits = {
        "colon": {5: lambda t: t.replace("/ 1000 |", "/ 1000 :"), 30: lambda t: t.replace("| elapsed", "| x: 1 | elapsed")},
        "two_totals": {12: lambda t: t.replace("/ 1000 |", "/ 1000/ 7 |"), 13: lambda t: t.replace("13/ 1000 |", "1000 |")},
        "keys_after_colon": {7: lambda t: t.replace("/ 1000 | consumed samples:", "/ 1000 : consumed samples|")},
        "leading_zero": {20: lambda t: t.replace("       20/", "     0020/")},
        "other_digits": {27: lambda t: t.replace("       27/", "       ٢٧/")},
        "rank_prefix": {33: lambda t: "[rank12]: " + t},
        "cut_key": {40: lambda t: t[: t.index("| grad norm") + 11]},
        "step_20_digits": {44: lambda t: t.replace("/ 1000 |", "/ 10000000000000000000 |")},
        "junk_after_bar": {50: lambda t: t + " junk: 5"},
        "iteration_in_prefix": {9: lambda t: t.replace(" [2025-04-25 16:46:58]", "iteration 3/ 4 iteration 5/")},
        # a restarted job that plans more steps: each run declares the total its own last line declares
        "total_changes": {i: (lambda t: t.replace("/ 1000 |", "/ 2000 |").replace("iteration       3", "iteration       ")) for i in range(31, 61)},
    }[case]
    for i, edit in edits.items():
        good[i - 1] = edit(good[i - 1])
    log = tmp_path / "odd.log"
    log.write_text("\n".join(good) + "\n", encoding="utf-8")
    fast = parse_log(log)
    _line_by_line(monkeypatch)
    _same_runs(fast, parse_log(log))


def test_megatron_fields_do_not_depend_on_the_lines_read_before(tmp_path: Path) -> None:
    """A line's fields are its own: not those of the first line of its layout (in this file or an earlier one),
    and a line cut after a key does not share the layout of a whole one."""
    from acc_agent.io.logs.formats.megatron import _fields

    assert _fields(" lm loss: n/a | grad norm: 2.0 |") == (("grad_norm",), [2.0])
    assert _fields(" lm loss: 1.5 | grad norm: 2.0 |") == (("loss", "grad_norm"), [1.5, 2.0])
    assert _fields(" lm loss: 1.5 | grad norm") == (("loss",), [1.5])
    assert _fields(" lm loss: 1.5 | grad norm: 2.0") == (("loss", "grad_norm"), [1.5, 2.0])
    lines = _megatron_lines(range(1, 30))
    lines[3] = lines[3][: lines[3].index("| grad norm") + len("| grad norm")]  # cut after a key
    log = tmp_path / "cut.log"
    log.write_text("\n".join(lines) + "\n", encoding="utf-8")
    run = parse_log(log).runs[0]
    assert len(run.series["loss"]) == 29 and len(run.series["grad_norm"]) == 28
