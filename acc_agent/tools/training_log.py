"""``parse_training_log``: read a training log of any supported framework into canonical series.

Kept thin: detection and parsing live in ``acc_agent.io.logs``; this module only turns the parsed
runs into the public output model and its evidence.
"""

from __future__ import annotations

import math

from acc_agent.models.common import Evidence
from acc_agent.models.training import (
    MetricPoint,
    ParseTrainingLogInput,
    ParseTrainingLogOutput,
    RunSummary,
    StepRange,
)
from acc_agent.text_columns import Column, Table, labelled, render
from acc_agent.tools.spec import tool

UNITS = {
    "step_time_ms": "ms",
    "data_time_ms": "ms",
    "epoch_time_ms": "ms",
    "memory_mb": "MB",
    "memory_allocated_mb": "MB",
    "memory_max_allocated_mb": "MB",
    "memory_reserved_mb": "MB",
    "memory_max_reserved_mb": "MB",
    "tflops_per_device": "TFLOP/s per device",
    "throughput": "samples/s as printed (fps, samples_per_second)",
    "lr": "learning rate",
}


def run_summary(run: object) -> RunSummary:
    from acc_agent.io.logs import RunData

    assert isinstance(run, RunData)
    loss = run.series.get("loss") or next(iter(run.series.values()), None)
    steps = StepRange(first=loss.steps[0], last=loss.steps[-1], count=len(loss)) if loss is not None and len(loss) else StepRange()
    return RunSummary(
        index=run.index,
        name=run.name,
        line_range=[run.start_line, run.end_line] if run.start_line else None,
        step_unit=run.step_unit,
        step_numbering=run.step_numbering,
        steps=steps,
        declared_total_steps=run.declared_total,
        epochs=run.max_epoch,
        record_kinds=dict(run.record_kinds),
        warmup_steps=run.warmup_steps,
        device=run.device,
        device_evidence=run.device_evidence,
        metrics=sorted(run.series),
        scalars=dict(run.scalars),
    )


#: A series as (name, its points' finite values, how many points it has).
_Series = tuple[str, list[float], int]

#: One line per series with at least one finite value: name, point count, first/last/min/max.
_SERIES_LINES = Table[_Series]([
    Column(lambda s: s[0], width=28),
    Column(lambda s: f"{s[2]:>7} pts  first {s[1][0]:.6g}  last {s[1][-1]:.6g}  min {min(s[1]):.6g}  max {max(s[1]):.6g}"),
])

#: One line per run when the file holds several: its lines, steps, device and name.
_RUN_LINES = Table[RunSummary]([
    Column(lambda r: f"run {r.index}: lines {r.line_range}, steps {r.steps.first}-{r.steps.last} ({r.step_unit}), "
                     f"device {r.device or 'unknown'}"),
    Column(lambda r: r.name or None),
], separator=", ")


def _render(out: ParseTrainingLogOutput) -> str:
    series: list[_Series] = []
    for name, points in out.series.items():
        values = [p.value for p in points if p.value is not None]
        if values:
            series.append((name, values, len(points)))
    runs = out.runs if len(out.runs) > 1 else []
    return render(out, _SERIES_LINES.lines(series), _RUN_LINES.lines(runs), labelled("warning", out.warnings))


@tool(
    description="Call to see what a training log holds (Megatron/MindSpeed, HF Trainer, mmcv, MindSpore, TensorBoard, "
    "JSON/CSV). Returns the format and series (loss, grad_norm, lr, ...) as {step, value} lists.",
    title="Parse a training log",
    read_only=True,
    positional=("log",),
    text_renderer=_render,
)
def parse_training_log(params: ParseTrainingLogInput) -> ParseTrainingLogOutput:
    from acc_agent.io.logs import parse_log

    parsed = parse_log(params.log, params.format)
    path = str(parsed.path)
    evidence = [Evidence(kind="file", ref=path, detail=f"format {parsed.format}: {parsed.detection}")]
    if not parsed.has_metrics:
        reason = f"no recognisable metric in {path}: {parsed.detection}" + (f"; {'; '.join(parsed.warnings)}" if parsed.warnings else "")
        return ParseTrainingLogOutput(
            verdict="no_metrics", summary=reason, evidence=evidence, log_path=path, format=parsed.format,
            detection=parsed.detection, lines_read=parsed.lines_read, warnings=parsed.warnings, reason=reason,
        )
    run = parsed.run(params.run)
    summary_run = run_summary(run)
    wanted = set(params.metrics) if params.metrics else None
    series: dict[str, list[MetricPoint]] = {}
    non_finite: dict[str, list[int]] = {}
    for name, s in run.series.items():
        if wanted is not None and name not in wanted:
            continue
        points = []
        for step, value in zip(s.steps, s.values, strict=False):
            finite = math.isfinite(value)
            points.append(MetricPoint(step=step, value=value if finite else None))
            if not finite:
                non_finite.setdefault(name, []).append(step)
        series[name] = points
    if summary_run.line_range:
        evidence.append(Evidence(kind="steps", ref=f"{path}:{summary_run.line_range[0]}-{summary_run.line_range[1]}", detail=f"run {run.index}, steps {summary_run.steps.first}-{summary_run.steps.last}"))
    device = run.device
    summary = (
        f"{parsed.format} log, {len(parsed.runs)} run(s); run {run.index}: {summary_run.steps.count} {run.step_unit} point(s)"
        + (f" ({summary_run.steps.first}-{summary_run.steps.last})" if summary_run.steps.count else "")
        + f", metrics: {', '.join(sorted(series)) or 'none with steps'}; device {device or 'not stated'}"
        + (f"; steps from {run.step_numbering}" if run.step_numbering else "")
    )
    return ParseTrainingLogOutput(
        verdict="parsed",
        summary=summary,
        evidence=evidence,
        log_path=path,
        format=parsed.format,
        format_label=parsed.format_label,
        detection=parsed.detection,
        device=device,
        device_evidence=run.device_evidence,
        selected_run=run.index,
        series=series,
        units={k: v for k, v in UNITS.items() if k in series},
        steps=summary_run.steps,
        epochs=summary_run.epochs,
        record_kinds=summary_run.record_kinds,
        non_finite=non_finite,
        runs=[run_summary(r) for r in parsed.runs],
        lines_read=parsed.lines_read,
        warnings=parsed.warnings,
    )
