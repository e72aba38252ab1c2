"""``compare_loss_curves``: baseline vs target training curves, held to a named standard.

A *profile* (``acc_agent.numerics.loss_profiles``) says what "the curves agree" means: the default
``ascend`` profile is the bar Ascend migrations are accepted against (mean relative loss error
≤ 1 %, first-step loss within 0.5 % or 0.005, grad norm within 10 % on average); ``ci`` is the
Megatron-LM / MindSpeed functional-test convention (worst point within 2 % loss, 10 % grad norm,
5 % throughput, 10 % memory, first 5 steps left out). Every criterion comes back with its value, its
limit and pass/fail, and the summary names the one that failed. Steps are aligned by the numbers the
logs carry; different step units or logging intervals are warned about, and where the baseline's
own step-to-step noise exceeds a limit the smoothed curves decide (and the output says so). Two
runs on one platform make the same comparison a non-determinism check.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Literal, TypedDict

from acc_agent.models.common import Evidence
from acc_agent.models.training import (
    CompareLossCurvesInput,
    CompareLossCurvesOutput,
    CriterionResult,
    CurveComparison,
)
from acc_agent.text_columns import Column, Table, labelled, render
from acc_agent.tools.spec import tool

if TYPE_CHECKING:
    from acc_agent.io.curve_plot import CurvePanel
    from acc_agent.numerics.loss_profiles import Profile

VERDICT_WORDS = {"identical": "identical", "match": "match", "diverged": "diverged", "insufficient_data": "insufficient data"}
STATUS_WORDS = {"pass": "met", "fail": "NOT met", "na": "N/A", "identical": "identical", "reported": "reported", "raw": "raw"}


@dataclass(frozen=True)
class _Headline:
    """The headline's verdict in words (``insufficient data``, not ``insufficient_data``)."""

    verdict: str
    summary: str


def _where(c: CriterionResult) -> str:
    """Which curve the criterion was judged on, and over which steps."""
    curve = f"{c.curve} curves" if c.curve != "first step" else "first step"
    return f"{curve}; steps {c.step_range[0]}-{c.step_range[1]}" if c.step_range else curve


def _deviation(m: CurveComparison) -> str:
    if m.max_rel_dev is not None and m.mean_rel_dev is not None:
        return f"max {m.max_rel_dev:.3%} @ {m.max_dev_step}, mean {m.mean_rel_dev:.3%}"
    return m.reason or ""


#: One line per criterion of the profile: what it is, met or not, the comparison, where it was judged.
_CRITERION_LINES = Table[CriterionResult]([
    Column(lambda c: c.label, width=42),
    Column(lambda c: STATUS_WORDS[c.status], width=8),
    Column(lambda c: c.detail, width=46),
    Column(_where),
])

#: A criterion's note (why smoothed, NaN/Inf steps), indented under it.
_NOTE_LINES = Table[str]([Column(lambda note: note)], indent="      ")

#: One line per metric compared: its status, the steps compared and the deviation (or why none).
_METRIC_LINES = Table[CurveComparison]([
    Column(lambda m: m.metric, width=24),
    Column(lambda m: STATUS_WORDS.get(m.status, m.status), width=10),
    Column(lambda m: str(m.steps_compared), width=5, align=">"),
    Column(lambda m: f"steps  {_deviation(m)}"),
])

#: A line of its own, indented like the rest (the determinism finding).
_PLAIN_LINES = Table[str]([Column(lambda text: text)])


def _criteria_lines(out: CompareLossCurvesOutput) -> list[str]:
    """Each criterion's line, followed by its note unless the note is already one of the warnings."""
    lines: list[str] = []
    for c in out.criteria:
        lines += _CRITERION_LINES.lines([c])
        if c.note and c.note not in out.warnings:
            lines += _NOTE_LINES.lines([c.note])
    return lines


def _render(out: CompareLossCurvesOutput) -> str:
    standard = [f"{out.profile_title} ({out.profile_description})"] if out.profile_title else []
    return render(_Headline(VERDICT_WORDS.get(out.verdict, out.verdict), out.summary),
                  labelled("standard", standard), _criteria_lines(out), _METRIC_LINES.lines(out.metrics),
                  _PLAIN_LINES.lines([out.determinism] if out.determinism else []), labelled("warning", out.warnings),
                  labelled("plot", [out.plot_path] if out.plot_path else []))


class _Runs(TypedDict):
    """What every result says of the two logs and the standard, whatever the verdict."""

    baseline_log: str
    target_log: str
    baseline_format: str
    target_format: str
    profile: str
    profile_title: str
    profile_description: str


class _ParsedRuns(_Runs, total=False):
    """What a result adds once both logs have metrics: the runs' devices, step units, the platforms."""

    baseline_device: str | None
    target_device: str | None
    step_units: dict[str, str]
    comparison: Literal["cross_platform", "same_platform", "unknown"]


class _Findings(TypedDict):
    """The criteria and the warnings of a comparison that ran."""

    criteria: list[CriterionResult]
    failed_criteria: list[str]
    warnings: list[str]
    performance_failed: list[str]


class _Extras(_Findings, total=False):
    """What only some comparisons have: a first divergence, a determinism finding, a plot."""

    first_divergent_step: int | None
    first_divergent_metric: str
    determinism: str
    plot_path: str
    plot_note: str


def _wanted(params: CompareLossCurvesInput, profile: Profile, common: list[str]) -> list[str]:
    from acc_agent.numerics.loss_profiles import is_performance

    if params.metrics:
        return list(params.metrics)
    names = [m for m in common if profile.criteria_for(m) or m in params.tolerances or is_performance(m)]
    for c in profile.criteria:  # accuracy metrics of the profile are listed even when a log lacks them (N/A, with why)
        if c.kind == "accuracy" and not c.metric.endswith("_") and c.metric not in names:
            names.append(c.metric)
    return names


def _summary(verdict: str, profile: Profile, criteria: list[CriterionResult], metrics: list[CurveComparison],
             first: CurveComparison | None) -> str:
    acc = [c for c in criteria if c.kind == "accuracy" and c.status != "na"]
    failed = [c for c in acc if c.status == "fail"]
    if verdict == "diverged":
        text = "; ".join(f"{c.label} {c.detail}" for c in failed) + f" ({profile.title} profile)"
        if first is not None and first.first_divergent_step is not None:
            text += f"; {first.metric.replace('_', ' ')} first leaves its limit at step {first.first_divergent_step}"
    elif verdict == "identical":
        same = [m for m in metrics if m.kind == "accuracy" and m.status == "identical"]
        text = f"{', '.join(m.metric.replace('_', ' ') for m in same)} bit-identical over {same[0].steps_compared} compared steps"
    else:
        text = f"all {len(acc)} accuracy criteria of the {profile.title} profile met: " + ", ".join(f"{c.label} {c.detail}" for c in acc)
    smoothed = [c for c in acc if c.curve == "smoothed"]
    if smoothed:
        text += "; judged on smoothed curves (the baseline's own noise is above the limit): " + ", ".join(c.label for c in smoothed)
    perf = [c for c in criteria if c.kind == "performance" and c.status == "fail"]
    if perf:
        text += "; performance outside its limits (reported, not judged here): " + ", ".join(f"{c.label} {c.detail}" for c in perf)
    return text


@tool(
    description="Call when baseline and NPU training logs both exist: aligns the curves step by step against a profile's "
    "limits. Returns verdict identical | match | diverged | insufficient_data, first divergent step.",
    title="Compare loss curves",
    read_only=False,
    destructive=False,
    idempotent=True,
    positional=("baseline_log", "target_log"),
    text_renderer=_render,
)
def compare_loss_curves(params: CompareLossCurvesInput) -> CompareLossCurvesOutput:
    from acc_agent.io.logs import parse_log
    from acc_agent.numerics.loss_profiles import PROFILES
    from acc_agent.numerics.step_alignment import step_warnings
    from acc_agent.tools._curve_judge import judge_metric, na_criterion

    profile = PROFILES[params.profile]
    base_log = parse_log(params.baseline_log)
    targ_log = parse_log(params.target_log)
    head = _ParsedRuns(
        baseline_log=str(base_log.path), target_log=str(targ_log.path),
        baseline_format=base_log.format, target_format=targ_log.format,
        profile=profile.name, profile_title=profile.title, profile_description=profile.description,
    )
    evidence = [Evidence(kind="file", ref=str(base_log.path), detail=f"baseline, format {base_log.format}"),
                Evidence(kind="file", ref=str(targ_log.path), detail=f"target, format {targ_log.format}")]
    if not base_log.has_metrics or not targ_log.has_metrics:
        empty = base_log if not base_log.has_metrics else targ_log
        reason = f"no recognisable metric in {empty.path} ({empty.detection})"
        return CompareLossCurvesOutput(verdict="insufficient_data", summary=reason, evidence=evidence, **head)
    b_run, t_run = base_log.run(params.baseline_run), targ_log.run(params.target_run)
    head["baseline_device"], head["target_device"] = b_run.device, t_run.device
    head["step_units"] = {"baseline": b_run.step_unit, "target": t_run.step_unit}
    if b_run.device and t_run.device:
        head["comparison"] = "same_platform" if b_run.device == t_run.device else "cross_platform"
    common = sorted(set(b_run.series) & set(t_run.series))
    axis = "loss" if "loss" in common else (common[0] if common else None)
    warnings: list[str] = []
    if axis is not None:
        warnings += step_warnings(b_run.step_unit, t_run.step_unit, b_run.series[axis].steps, t_run.series[axis].steps)
    warnings += [f"baseline log: {w}" for w in base_log.warnings] + [f"target log: {w}" for w in targ_log.warnings]
    skip_first = profile.skip_first if params.skip_first is None else params.skip_first
    warm = set(b_run.warmup_steps) | set(t_run.warmup_steps)
    results: list[CurveComparison] = []
    criteria: list[CriterionResult] = []
    panels: list[CurvePanel] = []
    for metric in _wanted(params, profile, common):
        rules = profile.criteria_for(metric)
        if not rules and (metric in params.tolerances or params.metrics):
            from acc_agent.numerics.loss_profiles import Criterion, is_performance

            rules = [Criterion(metric, profile.default_statistic, profile.fallback_limit,
                               kind="performance" if is_performance(metric) else "accuracy")]
        if metric not in b_run.series or metric not in t_run.series:
            missing = "baseline" if metric not in b_run.series else "target"
            reason = f"no {metric.replace('_', ' ')} series in the {missing} log"
            kind: Literal["accuracy", "performance"] = rules[0].kind if rules else "accuracy"
            results.append(CurveComparison(metric=metric, kind=kind, status="na", reason=reason))
            criteria += [na_criterion(c, metric, profile, params.tolerances, reason) for c in rules]
            continue
        bs, ts = b_run.series[metric], t_run.series[metric]
        judged = judge_metric(metric, (bs.steps, bs.values), (ts.steps, ts.values), rules, profile, params.tolerances,
                              skip_first, warm, params.patience)
        results.append(judged.comparison)
        criteria += judged.criteria
        warnings += judged.notes
        if params.plot is not None and judged.panel is not None and judged.comparison.steps_compared:
            panels.append(judged.panel)
    acc = [c for c in criteria if c.kind == "accuracy" and c.status != "na"]
    failed = [c for c in acc if c.status == "fail"]
    out_extra = _Extras(
        criteria=criteria, failed_criteria=[c.label for c in failed], warnings=warnings,
        performance_failed=[c.label for c in criteria if c.kind == "performance" and c.status == "fail"],
    )
    verdict: Literal["identical", "match", "diverged", "insufficient_data"]
    first: CurveComparison | None = None
    acc_metrics = [r for r in results if r.kind == "accuracy" and r.status != "na"]
    if not acc:
        why = "; ".join(f"{c.label}: {c.note}" for c in criteria if c.kind == "accuracy" and c.note) or "no accuracy metric in both logs"
        verdict, summary = "insufficient_data", f"no accuracy criterion of the {profile.title} profile could be evaluated ({why}; common metrics: {', '.join(common) or 'none'})"
    else:
        if failed:
            verdict = "diverged"
            failing = [r for r in acc_metrics if r.status == "fail"]
            first = min(failing, key=lambda r: (r.first_divergent_step if r.first_divergent_step is not None else 1 << 62, r.metric != "loss"))
            out_extra["first_divergent_step"], out_extra["first_divergent_metric"] = first.first_divergent_step, first.metric
        elif acc_metrics and all(r.status == "identical" for r in acc_metrics):
            verdict = "identical"
        else:
            verdict = "match"
        summary = _summary(verdict, profile, criteria, results, first)
    if warnings and verdict != "insufficient_data":
        summary += f"; {len(warnings)} warning(s) about the step axes or the baseline's noise, listed with the result"
    if head.get("comparison") == "same_platform" and acc_metrics:
        loss = next((r for r in acc_metrics if r.metric == "loss"), acc_metrics[0])
        if loss.status == "identical":
            out_extra["determinism"] = f"same platform ({b_run.device}): bit-identical {loss.metric} — deterministic"
        else:
            within = "within the profile's limits" if loss.status == "pass" else "beyond the profile's limits"
            out_extra["determinism"] = (f"same platform ({b_run.device}): {loss.metric} differs by up to {loss.max_rel_dev or 0.0:.3%} — "
                                        f"run-to-run non-determinism, {within}")
    for c in criteria:
        if c.step_range:
            evidence.append(Evidence(kind="threshold", ref=f"{c.label} ≤ {c.limit * 100:g} %",
                                     detail=f"{c.limit_source}; steps {c.step_range[0]}-{c.step_range[1]}, {c.curve}"))
    if params.plot is not None:
        _plot(params.plot, panels, out_extra, evidence, f"baseline ({b_run.device or base_log.format})", f"target ({t_run.device or targ_log.format})")
    return CompareLossCurvesOutput(verdict=verdict, summary=summary, evidence=evidence, metrics=results, **head, **out_extra)


def _plot(path: Path, panels: list[CurvePanel], out_extra: _Extras, evidence: list[Evidence], b_label: str, t_label: str) -> None:
    if not panels:
        out_extra["plot_note"] = "plot not written: no metric had overlapping steps"
        return
    try:
        from acc_agent.io.curve_plot import plot_curves

        written = plot_curves(panels, path, b_label, t_label)
        out_extra["plot_path"] = str(written)
        evidence.append(Evidence(kind="file", ref=str(written), detail="curve plot"))
    except (ImportError, OSError, ValueError) as exc:
        out_extra["plot_note"] = f"plot not written: {type(exc).__name__}: {exc}"
