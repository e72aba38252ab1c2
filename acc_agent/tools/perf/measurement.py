"""What a measurement records: statistics over raw timings, the batch sizes it covers, the host it ran on.

Why apart from the runners: a callable, a command and a log produce the same list of per-iteration
times, and every one of them must be summarised the same way (percentiles, outliers, residual
warm-up, throughput) for two results files to be comparable at all.
"""

from __future__ import annotations

import platform
import sys

from acc_agent import frontend
from acc_agent.errors import AccAgentError
from acc_agent.models.performance import (
    BatchResult,
    MeasurePerformanceInput,
    MeasurePerformanceOutput,
    OutlierReport,
    StageStats,
    WarmupReport,
)

WARMUP_REASON = (
    "untimed iterations first, so one-off costs (graph compilation, operator selection, allocator "
    "growth, caches) stay out of the statistics; at least 10 are recommended"
)
ITERATIONS_REASON = "enough samples for a stable p95 (at least 100 recommended); raw timings are kept for confidence intervals"


def plan_batches(sizes: list[int]) -> tuple[list[int], str | None]:
    """The batch sizes to measure, in order and once each, with batch 1 added (and a note saying so)."""
    bad = [b for b in sizes if b < 1]
    if bad:
        raise AccAgentError("invalid_batch", f"batch sizes must be >= 1, got {bad}",
                            hint=f"Example: {frontend.option('batch_sizes', [1, 8])}", field="batch_sizes")
    ordered = list(dict.fromkeys(sizes))
    if 1 in ordered:
        return ordered, None
    return [1, *ordered], "batch size 1 added: a measurement covers batch 1 and the target batch"


def batch_statistics(
    bs: int,
    samples_ns: list[int],
    p: MeasurePerformanceInput,
    warmup: int,
    stages: dict[str, list[int]] | None = None,
) -> BatchResult:
    """One batch size's result from its timed iterations (ns) and, when marked, its stages' durations."""
    from acc_agent.numerics.stats import detect_outliers, detect_warmup, summarize

    ms = [v / 1e6 for v in samples_ns]
    s = summarize(ms)
    per = bs if p.throughput_unit == "samples" else 1
    out = detect_outliers(ms)
    wu = detect_warmup(ms)
    stage_stats: dict[str, StageStats] = {}
    for name, values in (stages or {}).items():
        if not values:
            continue
        st = summarize([v / 1e6 for v in values])
        stage_stats[name] = StageStats(
            p50_ms=st.p50, p95_ms=st.p95, mean_ms=st.mean, share_of_total=st.mean / s.mean if s.mean > 0 else None,
            samples_ms=[v / 1e6 for v in values],
        )
    return BatchResult(
        batch_size=bs,
        status="ok",
        scope=p.scope or "end_to_end",
        warmup=warmup,
        iterations=len(ms),
        p50_ms=s.p50,
        p95_ms=s.p95,
        p99_ms=s.p99,
        mean_ms=s.mean,
        std_ms=s.std,
        min_ms=s.min,
        max_ms=s.max,
        throughput=per / (s.mean / 1000.0) if s.mean > 0 else None,
        throughput_unit=f"{p.throughput_unit}/s",
        outliers=OutlierReport(count=len(out.indices), indices=out.indices, rule=out.rule),
        warmup_detection=WarmupReport(configured=warmup, reason=WARMUP_REASON, residual_detected=wu.count, rule=wu.rule),
        stages=stage_stats,
        samples_ms=ms,
    )


def error_row(bs: int, p: MeasurePerformanceInput, message: str) -> BatchResult:
    """A batch size that could not be measured: no numbers, and the reason."""
    return BatchResult(batch_size=bs, status="error", error=message, scope=p.scope or "end_to_end", warmup=p.warmup,
                       iterations=0, throughput_unit=f"{p.throughput_unit}/s")


def host_environment() -> dict[str, str | None]:
    """The versions and settings a reader needs to repeat the measurement on the same kind of host."""
    from importlib import metadata

    env: dict[str, str | None] = {
        "python": sys.version.split()[0],
        "platform": platform.platform(),
        "machine": platform.machine(),
        "processor": platform.processor() or None,
    }
    for name in ("torch", "torch_npu", "numpy", "acc-agent"):
        try:
            env[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            env[name] = None
    import os

    env["cpu_count"] = str(os.cpu_count())
    for var in ("ASCEND_RT_VISIBLE_DEVICES", "CUDA_VISIBLE_DEVICES", "OMP_NUM_THREADS"):
        env[var] = os.environ.get(var)
    return env


def summary_line(out: MeasurePerformanceOutput) -> str:
    """``verdict: bs N: p50 .., p95 .., throughput`` per measured batch size, then the first failure."""
    ok = [r for r in out.results if r.status == "ok"]
    parts = [f"bs {r.batch_size}: p50 {r.p50_ms:.3f} ms, p95 {r.p95_ms:.3f} ms, {r.throughput:.1f} {r.throughput_unit}"
             if r.p50_ms is not None and r.p95_ms is not None
             else f"bs {r.batch_size}: latency N/A, throughput {r.throughput:.1f} ({r.throughput_unit})"
             for r in ok if r.throughput is not None]
    bad = [r for r in out.results if r.status == "error"]
    text = "; ".join(parts)
    if bad:
        text += ("; " if text else "") + f"{len(bad)} batch size(s) failed: {bad[0].error}"
    return f"{out.verdict}: {text}"
