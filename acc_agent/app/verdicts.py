"""The acceptance decisions the deliverables state: which boxes are ticked, what accuracy,
performance and the migration as a whole reach.

Why here and not in the renderer: these are migration policy (a short run slightly above its band
still passes; accuracy needs the golden check and the dump comparison; the latency KPI, when
acceptance has one, outranks the comparison with the baseline). Deciding them once, from the typed
results, lets every document and language print the same decision and lets the renderer only say it.
"""

from __future__ import annotations

import math
from dataclasses import replace

from acc_agent.models.common import ToolOutput
from acc_agent.models.compare import CompareDumpsOutput, CompareTensorsOutput
from acc_agent.models.performance import ComparePerformanceOutput, MeasurePerformanceOutput
from acc_agent.models.project import Project
from acc_agent.models.training import CompareLossCurvesOutput, JudgeShortRunOutput, ParseTrainingLogOutput
from acc_agent.models.workflow import Acceptance, Box, BoxKey, Overall, SkillResult, Verdicts

#: Short-run verdicts that meet the criterion: slightly above the band is allowed (the percentage is written down).
SHORT_RUN_MET = frozenset({"pass", "pass_above_band"})
#: Loss-curve verdicts that count as formal training verified.
CURVES_MET = frozenset({"pass", "match", "identical"})


def overall(accuracy: Acceptance | None, performance: Acceptance | None) -> Overall:
    """Both met: pass; either not met: fail; only one judged: pass with conditions; neither: N/A."""
    verdicts = [v for v in (accuracy, performance) if v is not None]
    if "not_met" in verdicts:
        return "fail"
    if len(verdicts) == 2:
        return "pass"
    return "pass_with_conditions" if verdicts else "na"


def _verdict(result: SkillResult, kind: type[ToolOutput]) -> str | None:
    out = result.output_as(kind)
    return out.verdict if out is not None else None


def batch_sizes(project: Project, baseline: MeasurePerformanceOutput | None,
                target: MeasurePerformanceOutput | None) -> list[int]:
    """The batch sizes the performance table lists: those either timing result holds, else mig.yaml's."""
    measured = {row.batch_size for out in (baseline, target) if out is not None for row in out.results}
    return sorted(measured) or project.performance.batch_sizes


def _kpi(project: Project, results: dict[str, SkillResult]) -> tuple[int | None, Acceptance | None]:
    """The KPI's batch (the smallest listed) and whether the NPU p50 there is within the latency KPI."""
    target = results["target_perf"].output_as(MeasurePerformanceOutput)
    batches = batch_sizes(project, results["baseline_perf"].output_as(MeasurePerformanceOutput), target)
    kpi_batch = min(batches) if batches else None
    kpi = project.thresholds.latency_p50_ms
    if kpi is None or kpi_batch is None or target is None:
        return kpi_batch, None
    p50 = next((row.p50_ms for row in target.results if row.batch_size == kpi_batch), None)
    if p50 is None or not math.isfinite(p50):
        return kpi_batch, None
    return kpi_batch, "met" if p50 <= kpi else "not_met"


def _nan_free(golden: CompareTensorsOutput | None) -> bool | None:
    if golden is None or not golden.outputs:
        return None
    return all(o.target_nan == 0 and o.target_inf == 0 for o in golden.outputs)


def _first_loss_finite(project: Project, target_log: ParseTrainingLogOutput | None) -> bool:
    points = target_log.series.get(project.thresholds.loss_metric) if target_log is not None else None
    first = points[0].value if points else None
    return first is not None and math.isfinite(first)


def _attested(project: Project, key: BoxKey) -> str | None:
    """The reference proving ``key`` when mig.yaml attests it done."""
    for name, evidence in project.attested.items():
        if name == key and evidence.done:
            return evidence.ref
    return None


def _boxes(project: Project, results: dict[str, SkillResult], v: Verdicts) -> tuple[Box, ...]:
    """Mig_report §6: a box is ticked only when a named piece of evidence supports it."""

    def attested_or(key: BoxKey, tool_evidence: bool) -> Box:
        ref = _attested(project, key)
        if ref is not None:
            return Box(key, True, "attested", ref)
        return Box(key, tool_evidence, "tool" if tool_evidence else "none")

    def judged(key: BoxKey, verdict: str | None, ticked: bool) -> Box:
        return Box(key, ticked, "tool" if verdict else "none")

    return (
        attested_or("code_migration", False),
        attested_or("npu_load", results["dumps"].ok),
        attested_or("inference_smoke", v.golden_nan_free is True),
        judged("golden", v.golden, v.golden == "pass"),
        attested_or("training_smoke", v.first_loss_finite),
        judged("short_run", v.short_run, v.short_run_met),
        judged("formal_training", v.curves, v.curves in CURVES_MET),
        attested_or("full_accuracy", False),
        judged("performance", v.performance, v.performance == "met"),
    )


def decide(project: Project, results: dict[str, SkillResult]) -> Verdicts:
    """Every decision the documents print, from the slots' results (``results`` holds every slot)."""
    golden = results["golden"].output_as(CompareTensorsOutput)
    dumps = _verdict(results["dumps"], CompareDumpsOutput)
    short_run = _verdict(results["short_run"], JudgeShortRunOutput)
    kpi_batch, kpi = _kpi(project, results)
    base = _verdict(results["performance"], ComparePerformanceOutput)
    base_acceptance: Acceptance | None = "met" if base == "met" else "not_met" if base == "not_met" else None
    performance = kpi if project.thresholds.latency_p50_ms is not None else base_acceptance
    golden_verdict = golden.verdict if golden is not None else None
    accuracy: Acceptance | None = None
    if golden_verdict == "pass" and dumps in (None, "pass"):
        accuracy = "met"
    elif golden_verdict == "fail" or dumps == "fail":
        accuracy = "not_met"
    undecided = Verdicts(
        golden=golden_verdict, golden_nan_free=_nan_free(golden), dumps=dumps, short_run=short_run,
        short_run_met=short_run in SHORT_RUN_MET, curves=_verdict(results["loss_curves"], CompareLossCurvesOutput),
        first_loss_finite=_first_loss_finite(project, results["target_log"].output_as(ParseTrainingLogOutput)),
        kpi_batch=kpi_batch, kpi=kpi, baseline_performance=base, accuracy=accuracy, performance=performance,
        overall=overall(accuracy, performance), boxes=())
    return replace(undecided, boxes=_boxes(project, results, undecided))
