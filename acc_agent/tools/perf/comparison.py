"""Comparing two results files: what differs in how they were measured, the latency ratios with
confidence intervals, and the stage and likely causes behind a gap.

Why apart from the tool: a ratio of two percentiles means little without the spread of the raw
timings behind it, and a gap means little without where it comes from; these computations are the
substance of ``compare_performance`` and are kept here, free of argument handling and front ends.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Literal

from pydantic import ValidationError

from acc_agent import frontend
from acc_agent.errors import AccAgentError
from acc_agent.models.performance import (
    BatchResult,
    ComparePerformanceInput,
    MeasurementSettings,
    MeasurePerformanceOutput,
    RatioRow,
    StageGap,
)

#: Largest results file compare_performance reads (a real one is a few kilobytes).
MAX_RESULTS_BYTES = 64 << 20

STAGE_CAUSES = {
    "preprocess": "host-side preprocessing (decode/resize/normalise) is slower on the target host CPU: check dataloader "
    "workers, CPU affinity/NUMA binding, and whether the baseline ran preprocessing on the GPU",
    "postprocess": "postprocessing (NMS, decoding, .cpu()/.item() copies) is slower: operators falling back to AICPU/host, "
    "or synchronising device-to-host copies inside the loop",
    "io": "data loading or host-device transfer: use pinned memory and non_blocking copies, check file I/O and batch collation",
    "inference": "device execution is slower on the target (the timed forward pass itself): to check — dynamic shapes "
    "causing recompilation (fix shapes), FP32 where FP16/BF16 was intended, and on an Ascend NPU operators falling "
    "back from AI Core to AICPU; a profile (torch_npu.profiler / msprof) shows which operators take the time",
}


def load_results(path: Path, side: str) -> MeasurePerformanceOutput:
    """A results file written by measure_performance, or an error naming the side and what is wrong with it."""
    if not path.is_file():
        raise AccAgentError("file_not_found", f"{side} results {path} do not exist", path=str(path), field=side,
                            hint=f"Pass the file written by {frontend.invoke('measure_performance', out='<FILE>')}.")
    hint = f"Pass the JSON written by {frontend.invoke('measure_performance', out='<FILE>')}."
    try:
        if path.stat().st_size > MAX_RESULTS_BYTES:
            raise AccAgentError("invalid_results", f"{side} file {path} is {path.stat().st_size >> 20} MiB: not a results file",
                                hint=hint, path=str(path), field=side)
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise AccAgentError("invalid_results", f"cannot read {side} file {path} as UTF-8 JSON ({type(exc).__name__})",
                            hint=hint, path=str(path), field=side) from None
    try:
        return MeasurePerformanceOutput.model_validate_json(text)
    except ValidationError as exc:
        first = exc.errors()[0]
        raise AccAgentError(
            "invalid_results",
            f"{side} file {path} is not a measure-performance results file ({'.'.join(map(str, first['loc']))}: {first['msg']})",
            hint=f"Pass the JSON written by {frontend.invoke('measure_performance', out='<FILE>')}.",
            path=str(path),
        ) from None


def settings_mismatches(base: MeasurementSettings, target: MeasurementSettings) -> list[str]:
    """Every measurement setting (other than scope) that differs between the two sides, stated."""
    pairs: list[tuple[str, object, object]] = [
        ("warmup", base.warmup, target.warmup),
        ("iterations", base.iterations, target.iterations),
        ("source", base.source, target.source),
        ("throughput definition", base.throughput_definition, target.throughput_definition),
        ("synchronisation", base.synchronisation, target.synchronisation),
        ("statistics", base.statistics, target.statistics),
        ("percentile method", base.percentile_method, target.percentile_method),
        ("concurrency", base.concurrency, target.concurrency),
    ]
    return [f"{name} differs: baseline {json.dumps(bval, default=str)}, target {json.dumps(tval, default=str)}"
            for name, bval, tval in pairs if bval != tval]


def _stat_value(r: BatchResult, statistic: str) -> float | None:
    return {"p50": r.p50_ms, "p95": r.p95_ms, "mean": r.mean_ms}[statistic]


def ratio_rows(
    bmap: dict[int, BatchResult], tmap: dict[int, BatchResult], shared: list[int], params: ComparePerformanceInput
) -> tuple[list[RatioRow], list[str]]:
    """Target/baseline latency per shared batch size, with a bootstrap interval when both sides kept raw
    timings; and the batch sizes left out because a side has no latency (a throughput-only log)."""
    from acc_agent.numerics.stats import bootstrap_ratio, mann_whitney

    rows: list[RatioRow] = []
    skipped: list[str] = []
    for bsz in shared:
        b, t = bmap[bsz], tmap[bsz]
        bv, tv = _stat_value(b, params.statistic), _stat_value(t, params.statistic)
        if bv is None or tv is None:
            skipped.append(f"batch {bsz}: no {params.statistic} latency on the {'baseline' if bv is None else 'target'} side "
                           "(a throughput-only log); not compared")
            continue
        row = RatioRow(batch_size=bsz, statistic=params.statistic, baseline_ms=bv, target_ms=tv, ratio=tv / bv,
                       baseline_throughput=b.throughput, target_throughput=t.throughput,
                       throughput_ratio=(t.throughput / b.throughput) if b.throughput and t.throughput else None)
        if len(b.samples_ms) >= 2 and len(t.samples_ms) >= 2:
            boot = bootstrap_ratio(b.samples_ms, t.samples_ms, params.statistic, params.confidence)
            row.ci_low, row.ci_high, row.ci_method = boot.low, boot.high, f"{int(params.confidence * 100)} % {boot.method}"
            row.mann_whitney_p = mann_whitney(b.samples_ms, t.samples_ms).p_value
            row.met = True if boot.high <= params.target_ratio else False if boot.low > params.target_ratio else None
        else:
            row.ci_method = "not available: a side has fewer than 2 raw timings"
            row.met = row.ratio <= params.target_ratio
        rows.append(row)
    return rows, skipped


def overall_verdict(rows: list[RatioRow]) -> Literal["met", "not_met", "inconclusive"]:
    """Not met when any batch size misses the target, inconclusive when any interval straddles it."""
    if any(r.met is False for r in rows):
        return "not_met"
    if any(r.met is None for r in rows):
        return "inconclusive"
    return "met"


def bottleneck(
    bmap: dict[int, BatchResult], tmap: dict[int, BatchResult], rows: list[RatioRow]
) -> tuple[list[StageGap], str | None, list[str]]:
    """The stage with the largest added time (largest shared batch), then scaling/variance hints."""
    causes: list[str] = []
    gaps: list[StageGap] = []
    stage: str | None = None
    bsz = max(r.batch_size for r in rows)
    b, t = bmap[bsz], tmap[bsz]
    total_gap = (t.mean_ms or 0.0) - (b.mean_ms or 0.0)
    for name in sorted(set(b.stages) & set(t.stages)):
        delta = t.stages[name].mean_ms - b.stages[name].mean_ms
        gaps.append(StageGap(stage=name, baseline_ms=b.stages[name].mean_ms, target_ms=t.stages[name].mean_ms, delta_ms=delta,
                             share_of_gap=delta / total_gap if total_gap > 0 else None))
    gaps.sort(key=lambda g: g.delta_ms, reverse=True)
    if gaps and gaps[0].delta_ms > 0:
        stage = gaps[0].stage
        causes.append(STAGE_CAUSES.get(stage, f"the '{stage}' stage takes {gaps[0].delta_ms:.3f} ms longer on the target"))
    elif not gaps and t.scope == "device_only" and total_gap > 0:
        stage = "inference"
        causes.append(STAGE_CAUSES["inference"])
    if len(rows) >= 2:
        first, last = rows[0], rows[-1]
        if first.ratio > 1.2 * last.ratio and first.ratio > 1:
            causes.append(f"per-call overhead: the ratio falls from {first.ratio:.2f} at batch {first.batch_size} to {last.ratio:.2f} "
                          f"at batch {last.batch_size} (host-bound Python, kernel launch latency, small-batch inefficiency)")
        elif last.ratio > 1.2 * first.ratio and last.ratio > 1:
            causes.append(f"device throughput: the ratio grows from {first.ratio:.2f} to {last.ratio:.2f} with batch size "
                          "(compute or memory-bandwidth bound kernels, precision mode)")
    if t.warmup_detection and t.warmup_detection.residual_detected:
        causes.append(f"warm-up not finished: {t.warmup_detection.residual_detected} early timed iteration(s) on the target still look "
                      f"like warm-up (compilation); raise {frontend.option('warmup')}")
    if t.p50_ms and t.p95_ms and t.p95_ms / t.p50_ms > 1.5:
        causes.append(f"unstable target timings (p95/p50 = {t.p95_ms / t.p50_ms:.2f}): background load or a busy device; "
                      "run check-environment and look at npu_busy")
    return gaps, stage, causes[:2]
