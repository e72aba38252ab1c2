"""The terminal text of the two performance tools, declared as columns for the shared renderer.

Why apart from the computations: the JSON results are the contract; this text is one view of them
for a person at a shell, and its layout changes without touching how anything is measured.
"""

from __future__ import annotations

from acc_agent.models.performance import (
    BatchResult,
    ComparePerformanceOutput,
    MeasurePerformanceOutput,
    RatioRow,
    StageGap,
    StageStats,
)
from acc_agent.text_columns import Column, Table, labelled, render


def _batch_result(r: BatchResult) -> str:
    if r.status != "ok":
        return f"error: {r.error}"
    if r.p50_ms is None:
        return f"latency N/A, throughput {r.throughput:.2f} {r.throughput_unit}"
    return (f"p50 {r.p50_ms:9.3f}  p95 {r.p95_ms:9.3f}  p99 {r.p99_ms:9.3f}  mean {r.mean_ms:9.3f} ms"
            f"  {r.throughput:10.2f} {r.throughput_unit}  outliers {r.outliers.count if r.outliers else 0}")


#: One line per batch size: its latency percentiles and throughput, or why it has none.
_BATCH_LINES = Table[BatchResult]([
    Column(lambda r: f"bs {r.batch_size:>4}:"),
    Column(_batch_result),
])

#: Under a measured batch size, one line per marked stage: its p50 and share of the mean iteration.
_STAGE_LINES = Table[tuple[str, StageStats]]([
    Column(lambda s: s[0], width=12),
    Column(lambda s: f"p50 {s[1].p50_ms:9.3f} ms  ({(s[1].share_of_total or 0) * 100:4.1f} % of mean)"),
], indent=" " * 8)

#: Bullets under "missing conditions:".
_BULLETS = Table[str]([Column(lambda _: "-"), Column(lambda text: text)], indent=" " * 4)


def render_measure(out: MeasurePerformanceOutput) -> str:
    """Why nothing ran (with the measurement to run instead), or how it was measured and each batch size's numbers."""
    lines: list[str] = []
    if out.not_executed is not None:
        ne = out.not_executed
        lines += labelled("reason", [ne.reason]) + ["  missing conditions:"] + _BULLETS.lines(ne.missing_conditions)
        lines += labelled("command template", [ne.command_template])
    if out.settings is not None:
        s = out.settings
        lines += labelled("scope", [s.scope_description])
        lines.append(f"  warmup {s.warmup}, iterations {s.iterations}, sync: {s.synchronisation}")
    for r in out.results:
        lines += _BATCH_LINES.lines([r])
        if r.status == "ok" and r.p50_ms is not None:
            lines += _STAGE_LINES.lines(r.stages.items())
    return render(out, lines, labelled("note", out.notes))


def _decision(r: RatioRow) -> str:
    return {True: "met", False: "not met", None: "undecided (the interval straddles the target)"}[r.met]


def _interval(r: RatioRow) -> str:
    return f" [{r.ci_low:.3f}, {r.ci_high:.3f}]" if r.ci_low is not None and r.ci_high is not None else ""


#: One line per compared batch size: both latencies, the ratio with its interval, met or not.
_RATIO_LINES = Table[RatioRow]([
    Column(lambda r: f"bs {r.batch_size:>4}:"),
    Column(lambda r: f"{r.statistic} {r.baseline_ms:.3f} -> {r.target_ms:.3f} ms, ratio {r.ratio:.3f}{_interval(r)}, "
                     f"{_decision(r)}"),
])

#: One line per stage timed on both sides: mean time on each and the difference.
_GAP_LINES = Table[StageGap]([
    Column(lambda _: "stage"),
    Column(lambda g: g.stage, width=12),
    Column(lambda g: f"{g.baseline_ms:.3f} -> {g.target_ms:.3f} ms ({g.delta_ms:+.3f})"),
])


def render_compare(out: ComparePerformanceOutput) -> str:
    """The ratios first (the verdict rests on them), then where the time went and what to check."""
    return render(out, _RATIO_LINES.lines(out.rows), _GAP_LINES.lines(out.stage_gaps),
                  labelled("mismatch", out.mismatches), labelled("likely cause", out.likely_causes))
