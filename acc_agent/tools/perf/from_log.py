"""Timings of a run that cannot be repeated, read from its log (``--from-log``).

Why apart from the runners: nothing is timed here. The framework already timed the run, so the
step times, printed throughput and batch size come from ``parse_training_log``, warm-up is detected
in the logged steps instead of configured, and a log with only throughput (or one whole-run figure)
still gives a result, with latency stated as N/A.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from acc_agent import frontend
from acc_agent.errors import AccAgentError
from acc_agent.models.performance import BatchResult, MeasurePerformanceInput, WarmupReport
from acc_agent.tools.perf.measurement import batch_statistics, error_row

if TYPE_CHECKING:
    from acc_agent.models.training import ParseTrainingLogOutput


@dataclass
class LogTimings:
    """What a log says about speed: per-step times, printed throughput, the run's batch size."""

    step_ms: list[float] = field(default_factory=list)
    throughput: list[float] = field(default_factory=list)
    how: str = "no step-time or throughput lines recognised"
    batch_size: int | None = None
    batch_source: str = ""
    run_throughput: float | None = None  # one whole-run figure (HF train_samples_per_second)


_BATCH_SOURCES = {
    "megatron": "the log's 'global batch size' field",
    "hf_trainer_text": "the training header's 'Total train batch size'",
}


def log_timings(path: Path) -> LogTimings:
    """Step times, throughput and global batch size from a training/inference log, via parse_training_log."""
    if not path.exists():
        raise AccAgentError("file_not_found", f"log {path} does not exist", hint="Pass an existing log file.", path=str(path))
    from acc_agent.tools.training_log import ParseTrainingLogInput, parse_training_log

    out: ParseTrainingLogOutput = parse_training_log(
        ParseTrainingLogInput(log=path, metrics=["step_time_ms", "throughput", "global_batch_size"]))
    series = out.series
    found = LogTimings(
        step_ms=[pt.value for pt in series.get("step_time_ms", []) if pt.value is not None],
        throughput=[pt.value for pt in series.get("throughput", []) if pt.value is not None],
    )
    run = next((r for r in out.runs if r.index == out.selected_run), None)
    scalars = dict(run.scalars) if run is not None else {}
    batches = sorted({int(pt.value) for pt in series.get("global_batch_size", []) if pt.value is not None and pt.value >= 1})
    if batches:
        found.batch_size = batches[-1]
        found.batch_source = _BATCH_SOURCES.get(out.format, "the log's global batch size") + (
            f" (it changes during the run: {', '.join(map(str, batches))}; the last is used)" if len(batches) > 1 else "")
    elif scalars.get("global_batch_size", 0) >= 1:
        found.batch_size = int(scalars["global_batch_size"])
        found.batch_source = _BATCH_SOURCES.get(out.format, "the log's summary")
    if not found.throughput and scalars.get("throughput"):
        found.run_throughput = float(scalars["throughput"])
    if found.step_ms or found.throughput or found.run_throughput:
        found.how = f"parse_training_log ({out.format})"
    return found


def logged_batch(p: MeasurePerformanceInput, batches: list[int], t: LogTimings) -> tuple[int, str]:
    """The batch size of the logged run: --batch-sizes when given, else what the log states, else 1."""
    given = "batch_sizes" in p.model_fields_set
    if given or t.batch_size is None:
        note = f"batch size {batches[-1]} is taken from {frontend.option('batch_sizes')} (last entry)" if given else (
            f"batch size {batches[-1]} is the default: the log does not state its batch size; pass "
            f"{frontend.option('batch_sizes')}")
        if given and t.batch_size is not None and t.batch_size != batches[-1]:
            note += f"; the log states {t.batch_size} ({t.batch_source}): check which one the run used"
        return batches[-1], note
    return t.batch_size, f"batch size {t.batch_size} read from {t.batch_source}"


def measure_log(p: MeasurePerformanceInput, batches: list[int]) -> tuple[list[BatchResult], list[str], str]:
    """The one batch size of a logged run: its row, the notes on where each number came from, and how it was read."""
    from acc_agent.numerics.stats import detect_warmup, summarize

    assert p.from_log is not None
    t = log_timings(p.from_log)
    steps, thr, how = t.step_ms, t.throughput, t.how
    bs, batch_note = logged_batch(p, batches, t)
    notes = [batch_note]
    printed = "as printed in the log (median of its throughput/FPS values)"
    if len(steps) < 2 and not thr and t.run_throughput is not None:
        row = BatchResult(batch_size=bs, status="ok", scope=p.scope or "training_step", warmup=0, iterations=1,
                          throughput=t.run_throughput,
                          throughput_unit="samples/s as the Trainer reports it (train_samples_per_second: samples over the "
                          "whole training time, start-up and evaluation pauses included)",
                          warmup_detection=WarmupReport(configured=0, rule="none", reason=(
                              "the run was not repeated and the log gives one whole-run figure: warm-up cannot be "
                              f"separated from it; {frontend.option('warmup')} does not apply to logs")))
        notes.append(f"{p.from_log} states one whole-run throughput (train_samples_per_second) and no per-step times: "
                     "latency statistics are N/A")
        return [row], notes, how
    if len(steps) < 2 and thr:
        twu = detect_warmup([1.0 / v if v > 0 else float("inf") for v in thr])  # slow = low throughput
        row = BatchResult(batch_size=bs, status="ok", scope=p.scope or "training_step", warmup=twu.count,
                          iterations=len(thr) - twu.count, throughput=summarize(thr[twu.count :]).p50,
                          throughput_unit=printed,
                          warmup_detection=WarmupReport(configured=twu.count, rule=twu.rule, reason=(
                              f"the run was not repeated: the first {twu.count} logged throughput value(s) were detected as "
                              f"warm-up (on 1/throughput) and excluded; {frontend.option('warmup')} does not apply to logs")))
        notes.append(f"{p.from_log} has {len(thr)} throughput value(s) but no per-step times: latency statistics are N/A")
        return [row], notes, how
    if len(steps) < 2:
        return [error_row(bs, p, f"{p.from_log}: {how}; found {len(steps)} step time(s), need at least 2")], notes, how
    wu = detect_warmup(steps)
    kept = steps[wu.count :]
    row = batch_statistics(bs, [int(v * 1e6) for v in kept], p, wu.count)
    row.warmup_detection = WarmupReport(
        configured=wu.count,
        reason=f"the run was not repeated: the first {wu.count} logged step(s) were detected as warm-up and excluded "
        f"({wu.rule}); {frontend.option('warmup')} does not apply to logs",
        residual_detected=0,
        rule=wu.rule,
    )
    if thr:
        row.throughput = summarize(thr[wu.count :] if len(thr) == len(steps) and len(thr) > wu.count else thr).p50
        row.throughput_unit = printed
    elif t.batch_size is not None and row.throughput is not None and p.throughput_unit == "samples":
        row.throughput_unit = f"samples/s = global batch size {bs} / mean step time"
    notes.append(f"log step times read with {how}; {len(steps)} step(s), {wu.count} excluded as warm-up")
    return [row], notes, how
