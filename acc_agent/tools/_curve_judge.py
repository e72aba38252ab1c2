"""One metric of compare_loss_curves: align the two series, evaluate the profile's criteria on it.

Kept apart from the tool so that the tool module only chooses runs, metrics and the verdict; the
numbers themselves come from :mod:`acc_agent.numerics.curve_criteria`.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Literal, TypedDict

import numpy as np

from acc_agent.frontend import option
from acc_agent.io.curve_plot import CurvePanel
from acc_agent.models.training import CriterionResult, CurveComparison
from acc_agent.numerics.curve_criteria import (
    Outcome,
    judge_curves,
    judge_first_step,
    smoothed_deviation,
    step_noise,
)
from acc_agent.numerics.curves import FloatArray, align, relative_deviation
from acc_agent.numerics.loss_profiles import (
    STATISTIC_LABELS,
    Criterion,
    Profile,
    is_performance,
    metric_label,
)


def pct(value: float) -> str:
    return f"{value * 100:.2f} %"


def limit_text(limit: float) -> str:
    return f"{limit * 100:g} %"


@dataclass
class MetricJudgement:
    """What one metric contributes: its comparison row, its criteria, and a plot panel's data."""

    comparison: CurveComparison
    criteria: list[CriterionResult] = field(default_factory=list)
    panel: CurvePanel | None = None
    notes: list[str] = field(default_factory=list)


class _FirstStepHead(TypedDict):
    """What a first-step criterion says whether or not it could be judged."""

    name: str
    label: str
    metric: str
    statistic: Literal["first_step"]
    kind: Literal["accuracy", "performance"]
    limit: float
    limit_source: str
    absolute_limit: float | None
    curve: Literal["first step"]


class _Row(TypedDict):
    """What a metric's comparison row holds from the start: the metric and its main limit."""

    metric: str
    kind: Literal["accuracy", "performance"]
    tolerance: float | None
    tolerance_source: str


class _AlignedRow(_Row, total=False):
    """What the row gains once the series are aligned (and smoothed, when the baseline is noisy)."""

    skipped_steps: list[int]
    alignment: str
    smoothed_mean_rel_dev: float
    smoothed_max_rel_dev: float
    judged_on: Literal["raw", "smoothed"]
    smoothing_window: int


def _limit(criterion: Criterion, metric: str, profile: Profile, overrides: Mapping[str, float]) -> tuple[float, str]:
    key = f"{metric}.first_step" if criterion.statistic == "first_step" else metric
    if key in overrides:
        return overrides[key], option("tolerances")
    return criterion.limit, f"{profile.name} profile"


def na_criterion(criterion: Criterion, metric: str, profile: Profile, overrides: Mapping[str, float], reason: str) -> CriterionResult:
    limit, source = _limit(criterion, metric, profile, overrides)
    return CriterionResult(
        name=f"{metric}.{criterion.statistic}", label=criterion.label(metric), metric=metric, statistic=criterion.statistic,
        kind=criterion.kind, status="na", limit=limit, limit_source=source, absolute_limit=criterion.abs_limit,
        detail="N/A", note=reason,
    )


def _status(passed: bool | None) -> Literal["pass", "fail", "na"]:
    return "na" if passed is None else ("pass" if passed else "fail")


def _first_step_result(c: Criterion, metric: str, limit: float, source: str, b: tuple[FloatArray, FloatArray],
                       t: tuple[FloatArray, FloatArray]) -> CriterionResult:
    head = _FirstStepHead(name=f"{metric}.first_step", label=c.label(metric), metric=metric, statistic="first_step",
                          kind=c.kind, limit=limit, limit_source=source, absolute_limit=c.abs_limit, curve="first step")
    b0, t0 = int(b[0][0]), int(t[0][0])
    if b0 != t0:
        return CriterionResult(status="na", detail="N/A", note=f"the logs start at different steps (baseline {b0}, target {t0}): "
                               "no common first step", **head)
    o = judge_first_step(float(b[1][0]), float(t[1][0]), limit, c.abs_limit)
    if o.value is None or o.abs_value is None:
        return CriterionResult(status=_status(o.passed), step=b0, detail="N/A", note=f"{metric_label(metric)} is NaN/Inf at step {b0}", **head)
    rel_ok, abs_ok = o.value <= limit, c.abs_limit is not None and o.abs_value <= c.abs_limit
    detail = f"{pct(o.value)} {'≤' if rel_ok else '>'} {limit_text(limit)}"
    if c.abs_limit is not None:
        detail += f" relative, {o.abs_value:.4g} {'≤' if abs_ok else '>'} {c.abs_limit:g} absolute"
    return CriterionResult(status=_status(o.passed), value=o.value, raw_value=o.value, absolute_value=o.abs_value, step=b0,
                           step_range=[b0, b0], detail=detail, **head)


def _curve_result(c: Criterion, metric: str, limit: float, source: str, o: Outcome, grid: FloatArray, noise: float) -> CriterionResult:
    steps = [int(grid[0]), int(grid[-1])]
    note = None
    if o.smoothed_value is not None:
        raw = pct(o.raw_value) if o.raw_value is not None else "N/A"
        which = (f"judged on the smoothed curves ({pct(o.smoothed_value)}; raw {raw})" if o.curve == "smoothed"
                 else f"judged on the raw curves ({raw}), which meet the limit; smoothed {pct(o.smoothed_value)}")
        note = (f"the baseline's own step-to-step {metric_label(metric)} noise ({pct(noise)}) is larger than the "
                f"{limit_text(limit)} limit of the {STATISTIC_LABELS[c.statistic]}: curves smoothed over {o.window} points "
                f"compared as well, {which}")
    if o.nonfinite_steps:
        note = (note + "; " if note else "") + f"the target is NaN/Inf at step(s) {', '.join(map(str, o.nonfinite_steps[:5]))}"
    detail = "N/A" if o.value is None else f"{pct(o.value)} {'≤' if o.value <= limit else '>'} {limit_text(limit)}"
    return CriterionResult(
        name=f"{metric}.{c.statistic}", label=c.label(metric), metric=metric, statistic=c.statistic, kind=c.kind,
        status=_status(o.passed), value=o.value, limit=limit, limit_source=source, curve="smoothed" if o.curve == "smoothed" else "raw",
        raw_value=o.raw_value, smoothed_value=o.smoothed_value, smoothing_window=o.window if o.smoothed_value is not None else None,
        step=o.worst_step, step_range=steps, detail=detail, note=note,
    )


def judge_metric(metric: str, base: tuple[Iterable[int], Iterable[float]], targ: tuple[Iterable[int], Iterable[float]],
                 criteria: list[Criterion], profile: Profile, overrides: Mapping[str, float], skip_first: int,
                 warmup: set[int], patience: int) -> MetricJudgement:
    """Align ``metric`` of both runs, leave out the start (and warm-up for speed metrics), judge it."""
    kind: Literal["accuracy", "performance"] = "performance" if is_performance(metric) else "accuracy"
    b_steps, b_vals = np.asarray(list(base[0]), float), np.asarray(list(base[1]), float)
    t_steps, t_vals = np.asarray(list(targ[0]), float), np.asarray(list(targ[1]), float)
    main = next((c for c in criteria if c.statistic != "first_step"), None)
    tol, tol_src = _limit(main, metric, profile, overrides) if main is not None else (None, "no criterion in the profile")
    row = _AlignedRow(metric=metric, kind=kind, tolerance=tol, tolerance_source=tol_src)

    def unavailable(reason: str) -> MetricJudgement:
        return MetricJudgement(CurveComparison(status="na", reason=reason, **row),
                               [na_criterion(c, metric, profile, overrides, reason) for c in criteria])

    grid, b_on, t_on = align(b_steps, b_vals, t_steps, t_vals)
    if grid.size == 0:
        return unavailable(f"no overlapping steps (baseline {int(b_steps[0])}-{int(b_steps[-1])}, "
                           f"target {int(t_steps[0])}-{int(t_steps[-1])})")
    keep = grid >= grid[0] + skip_first
    if kind == "performance" and warmup:
        keep &= ~np.isin(grid, list(warmup))
    skipped = [int(s) for s in grid[~keep]]
    grid, b_on, t_on = grid[keep], b_on[keep], t_on[keep]
    sparser = "baseline" if b_steps.size <= t_steps.size else "target"
    if np.array_equal(b_steps, t_steps):
        alignment = "same steps"
    else:
        exact = bool(np.isin(grid, b_steps).all() and np.isin(grid, t_steps).all())
        alignment = f"on the {sparser}'s steps, " + ("the other side's values at the same steps" if exact
                                                     else "the other side linearly interpolated")
    row["skipped_steps"], row["alignment"] = skipped, alignment
    if grid.size == 0:
        return unavailable(f"every overlapping step was left out (first {skip_first} steps / warm-up)")
    noise = step_noise(b_on)
    dev = relative_deviation(b_on, t_on)
    finite = np.isfinite(dev)
    results: list[CriterionResult] = []
    first_div: int | None = None
    smoothed: Outcome | None = None
    for c in criteria:
        limit, source = _limit(c, metric, profile, overrides)
        if c.statistic == "first_step":
            results.append(_first_step_result(c, metric, limit, source, (b_steps, b_vals), (t_steps, t_vals)))
            continue
        o = judge_curves(c.statistic, grid, b_on, t_on, limit, noise, patience)
        results.append(_curve_result(c, metric, limit, source, o, grid, noise))
        if c is main:
            first_div = o.first_exceeding_step if not o.passed else None
            smoothed = o if o.smoothed_value is not None else None
    imax = int(np.argmax(np.where(finite, dev, -np.inf))) if finite.any() else 0
    identical = bool(np.array_equal(b_on, t_on))
    statuses = {r.status for r in results}
    status: Literal["identical", "pass", "fail", "na", "reported"]
    if identical:
        status = "identical"
    elif not criteria:
        status = "reported"
    else:
        status = "fail" if "fail" in statuses else ("pass" if "pass" in statuses else "na")
    if smoothed is not None:
        sdev = smoothed_deviation(b_on, t_on, smoothed.window)
        sfinite = np.isfinite(sdev)
        if sfinite.any():
            row["smoothed_mean_rel_dev"] = float(np.mean(sdev[sfinite]))
            row["smoothed_max_rel_dev"] = float(np.max(sdev[sfinite]))
        row["judged_on"] = "smoothed" if smoothed.curve == "smoothed" else "raw"
        row["smoothing_window"] = smoothed.window
    comparison = CurveComparison(
        status=status, steps_compared=int(grid.size), step_range=[int(grid[0]), int(grid[-1])],
        baseline_noise=noise if math.isfinite(noise) else None,
        max_rel_dev=float(dev[imax]) if finite.any() else None, mean_rel_dev=float(np.mean(dev[finite])) if finite.any() else None,
        max_abs_dev=float(np.nanmax(np.abs(t_on - b_on))) if finite.any() else None, max_dev_step=int(grid[imax]),
        first_divergent_step=first_div, **row,
    )
    notes = [r.note for r in results if r.note and r.smoothed_value is not None]
    panel = CurvePanel(metric, list(b_steps), list(b_vals), list(t_steps), list(t_vals), list(grid), list(dev),
                       tol if tol is not None else 0.0, first_div)
    return MetricJudgement(comparison, results, panel, notes)


def statistic_words(statistic: str) -> str:
    return STATISTIC_LABELS.get(statistic, statistic.replace("_", " "))
