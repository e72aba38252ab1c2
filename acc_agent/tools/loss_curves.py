"""``compare_loss_curves``: baseline vs target training curves, aligned by step.

Defaults follow how real CI compares training runs (Megatron-LM / MindSpeed functional tests):
relative tolerances loss 2 %, grad norm 10 %, throughput 5 %, memory 10 %, step time 5 %, and the
first 5 steps left out (plus any warm-up step either run shows). Two runs on one platform make
the same comparison a non-determinism check.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from pydantic import Field

from acc_agent.models.common import CsvStrs, Evidence, ToolInput
from acc_agent.models.training import CompareLossCurvesOutput, CurveComparison, TolerancesArg
from acc_agent.registry import tool

DEFAULT_TOLERANCES: dict[str, float] = {
    "loss": 0.02,
    "grad_norm": 0.10,
    "throughput": 0.05,
    "tflops_per_device": 0.05,
    "step_time_ms": 0.05,
    "memory_mb": 0.10,
    "memory_allocated_mb": 0.10,
    "memory_max_allocated_mb": 0.10,
    "eval_loss": 0.02,
}
PERFORMANCE = ("throughput", "tflops_per_device", "step_time_ms", "memory_")
FALLBACK_TOLERANCE = 0.02


class CompareLossCurvesInput(ToolInput):
    baseline_log: Path = Field(description="Baseline run's log (GPU, or the earlier run of a repeat).")
    target_log: Path = Field(description="Target run's log (NPU, or the repeat).")
    metrics: CsvStrs | None = Field(default=None, description="Canonical metrics to compare (default: every metric with a default tolerance found in both logs).")
    tolerances: TolerancesArg = Field(default_factory=dict, description="Relative tolerances overriding the defaults, e.g. loss=0.02,grad_norm=0.1.")
    skip_first: int = Field(default=5, ge=0, description="Leave out the first N steps of the overlap (start-up noise), as CI does.")
    patience: int = Field(default=1, ge=1, description="Consecutive out-of-tolerance points needed to call a divergence.")
    baseline_run: int | None = Field(default=None, ge=0, description="Run index in the baseline log (default: the longest).")
    target_run: int | None = Field(default=None, ge=0, description="Run index in the target log (default: the longest).")
    plot: Path | None = Field(default=None, description="Write a PNG of both curves and their deviation here.")


def _is_perf(name: str) -> bool:
    return any(name == p or (p.endswith("_") and name.startswith(p)) for p in PERFORMANCE)


def _render(out: CompareLossCurvesOutput) -> str:
    lines = [f"[{out.verdict}] {out.summary}"]
    for m in out.metrics:
        dev = f"max {m.max_rel_dev:.3%} @ {m.max_dev_step}, mean {m.mean_rel_dev:.3%}" if m.max_rel_dev is not None else (m.reason or "")
        tol = f"tol {m.tolerance:.1%}" if m.tolerance is not None else ""
        first = f", first divergence @ {m.first_divergent_step}" if m.first_divergent_step is not None else ""
        lines.append(f"  {m.metric:<24} {m.status:<9} {tol:<10} {m.steps_compared:>5} steps  {dev}{first}")
    if out.determinism:
        lines.append(f"  {out.determinism}")
    if out.plot_path:
        lines.append(f"  plot: {out.plot_path}")
    return "\n".join(lines)


@tool(
    description="Compare baseline and target training curves (loss, grad norm, throughput, memory, step time) step by step.\n"
    "Aligns different logging intervals, leaves out warm-up and the first steps, reports max/mean deviation, the first divergent step and a PNG plot.",
    positional=("baseline_log", "target_log"),
    text_renderer=_render,
)
def compare_loss_curves(params: CompareLossCurvesInput) -> CompareLossCurvesOutput:
    import numpy as np

    from acc_agent.io.logs import parse_log
    from acc_agent.numerics.curves import align, first_exceeding, relative_deviation

    base_log = parse_log(params.baseline_log)
    targ_log = parse_log(params.target_log)
    head: dict[str, Any] = {
        "baseline_log": str(base_log.path), "target_log": str(targ_log.path),
        "baseline_format": base_log.format, "target_format": targ_log.format,
    }
    evidence = [Evidence(kind="file", ref=str(base_log.path), detail=f"baseline, format {base_log.format}"),
                Evidence(kind="file", ref=str(targ_log.path), detail=f"target, format {targ_log.format}")]
    if not base_log.has_metrics or not targ_log.has_metrics:
        empty = base_log if not base_log.has_metrics else targ_log
        reason = f"no recognisable metric in {empty.path} ({empty.detection})"
        return CompareLossCurvesOutput(verdict="insufficient_data", summary=reason, evidence=evidence, **head)
    b_run, t_run = base_log.run(params.baseline_run), targ_log.run(params.target_run)
    head.update(baseline_device=b_run.device, target_device=t_run.device)
    if b_run.device and t_run.device:
        head["comparison"] = "same_platform" if b_run.device == t_run.device else "cross_platform"
    common = sorted(set(b_run.series) & set(t_run.series))
    wanted = params.metrics or [m for m in common if m in DEFAULT_TOLERANCES or m in params.tolerances]
    warm = set(b_run.warmup_steps) | set(t_run.warmup_steps)
    results: list[CurveComparison] = []
    panels = []
    for metric in wanted:
        kind: Literal["accuracy", "performance"] = "performance" if _is_perf(metric) else "accuracy"
        if metric in params.tolerances:
            tol, tol_src = params.tolerances[metric], "--tolerances"
        elif metric in DEFAULT_TOLERANCES:
            tol, tol_src = DEFAULT_TOLERANCES[metric], "default (CI convention)"
        else:
            tol, tol_src = FALLBACK_TOLERANCE, f"fallback {FALLBACK_TOLERANCE:.0%} (no default for this metric)"
        if metric not in b_run.series or metric not in t_run.series:
            missing = "baseline" if metric not in b_run.series else "target"
            results.append(CurveComparison(metric=metric, kind=kind, status="na", tolerance=tol, tolerance_source=tol_src, reason=f"no '{metric}' series in the {missing} log"))
            continue
        bs, ts = b_run.series[metric], t_run.series[metric]
        b_steps, b_vals = np.asarray(bs.steps, float), np.asarray(bs.values, float)
        t_steps, t_vals = np.asarray(ts.steps, float), np.asarray(ts.values, float)
        grid, b_on, t_on = align(b_steps, b_vals, t_steps, t_vals)
        if grid.size == 0:
            results.append(CurveComparison(metric=metric, kind=kind, status="na", tolerance=tol, tolerance_source=tol_src,
                                           reason=f"no overlapping steps (baseline {int(b_steps[0])}-{int(b_steps[-1])}, target {int(t_steps[0])}-{int(t_steps[-1])})"))
            continue
        first = grid[0]
        keep = (grid >= first + params.skip_first) & ~np.isin(grid, list(warm))
        skipped = [int(s) for s in grid[~keep]]
        grid, b_on, t_on = grid[keep], b_on[keep], t_on[keep]
        sparser = "baseline" if b_steps.size <= t_steps.size else "target"
        alignment = "same steps" if np.array_equal(b_steps, t_steps) else f"on the {sparser}'s steps, the other side linearly interpolated"
        if grid.size == 0:
            results.append(CurveComparison(metric=metric, kind=kind, status="na", tolerance=tol, tolerance_source=tol_src, skipped_steps=skipped,
                                           alignment=alignment, reason=f"every overlapping step was skipped (first {params.skip_first} steps / warm-up)"))
            continue
        dev = relative_deviation(b_on, t_on)
        absdev = np.abs(t_on - b_on)
        idx = first_exceeding(grid, dev, tol, params.patience)
        finite = np.isfinite(dev)
        imax = int(np.nanargmax(np.where(finite, dev, np.inf))) if dev.size else 0
        identical = bool(np.array_equal(b_on, t_on))
        status: Literal["identical", "pass", "fail", "na"] = "identical" if identical else ("fail" if idx is not None else "pass")
        results.append(CurveComparison(
            metric=metric, kind=kind, status=status, tolerance=tol, tolerance_source=tol_src, steps_compared=int(grid.size),
            step_range=[int(grid[0]), int(grid[-1])], skipped_steps=skipped, alignment=alignment,
            max_rel_dev=float(dev[imax]) if finite.any() else None, mean_rel_dev=float(np.mean(dev[finite])) if finite.any() else None,
            max_abs_dev=float(np.nanmax(absdev)) if finite.any() else None, max_dev_step=int(grid[imax]),
            first_divergent_step=int(grid[idx]) if idx is not None else None,
        ))
        if params.plot is not None:
            from acc_agent.render.plot_curves import CurvePanel

            panels.append(CurvePanel(metric, list(b_steps), list(b_vals), list(t_steps), list(t_vals), list(grid), list(dev), tol,
                                     int(grid[idx]) if idx is not None else None))
    acc = [r for r in results if r.kind == "accuracy" and r.status != "na"]
    perf_fail = [r.metric for r in results if r.kind == "performance" and r.status == "fail"]
    out_extra: dict[str, Any] = {}
    verdict: Literal["identical", "match", "diverged", "insufficient_data"]
    if not acc:
        reason = f"no accuracy metric could be compared (common metrics: {', '.join(common) or 'none'})"
        verdict = "insufficient_data"
        summary = reason
    else:
        failing = [r for r in acc if r.status == "fail"]
        if failing:
            first = min(failing, key=lambda r: (r.first_divergent_step if r.first_divergent_step is not None else 1 << 62, r.metric != "loss"))
            verdict = "diverged"
            out_extra.update(first_divergent_step=first.first_divergent_step, first_divergent_metric=first.metric)
            summary = (f"{first.metric} leaves its {first.tolerance:.1%} tolerance at step {first.first_divergent_step} "
                       f"(max deviation {first.max_rel_dev:.2%} at step {first.max_dev_step})")
        elif all(r.status == "identical" for r in acc):
            verdict = "identical"
            summary = f"{', '.join(r.metric for r in acc)} bit-identical over {acc[0].steps_compared} compared steps"
        else:
            verdict = "match"
            worst = max(acc, key=lambda r: r.max_rel_dev or 0.0)
            summary = f"all accuracy curves within tolerance; largest deviation {worst.metric} {worst.max_rel_dev:.3%} (tolerance {worst.tolerance:.1%})"
        if perf_fail:
            summary += f"; performance metrics outside tolerance (reported, not judged here): {', '.join(perf_fail)}"
    if head.get("comparison") == "same_platform" and acc:
        loss = next((r for r in acc if r.metric == "loss"), acc[0])
        out_extra["determinism"] = (
            f"same platform ({b_run.device}): bit-identical {loss.metric} — deterministic" if loss.status == "identical"
            else f"same platform ({b_run.device}): {loss.metric} differs by up to {loss.max_rel_dev:.3%} — run-to-run non-determinism"
            + (" within tolerance" if loss.status == "pass" else ", beyond tolerance")
        )
    for r in results:
        if r.step_range:
            evidence.append(Evidence(kind="threshold", ref=f"{r.metric} tolerance {r.tolerance:.1%}", detail=f"{r.tolerance_source}; steps {r.step_range[0]}-{r.step_range[1]}"))
    if params.plot is not None:
        if panels:
            try:
                from acc_agent.render.plot_curves import plot_curves

                path = plot_curves(panels, params.plot, f"baseline ({b_run.device or base_log.format})", f"target ({t_run.device or targ_log.format})")
                out_extra["plot_path"] = str(path)
                evidence.append(Evidence(kind="file", ref=str(path), detail="curve plot"))
            except (ImportError, OSError, ValueError) as exc:
                out_extra["plot_note"] = f"plot not written: {type(exc).__name__}: {exc}"
        else:
            out_extra["plot_note"] = "plot not written: no metric had overlapping steps"
    return CompareLossCurvesOutput(verdict=verdict, summary=summary, evidence=evidence, metrics=results, **head, **out_extra)
