"""Mig_report §6: each box with the evidence that ticks it, or what is missing.

Which boxes are ticked is decided in the application layer (app/verdicts.py); here each decision
is only said, with its source, in the document's language.
"""

from __future__ import annotations

from dataclasses import dataclass

from markupsafe import Markup

from acc_agent.models.workflow import Box, WorkflowResult
from acc_agent.render.cells import Ctx
from acc_agent.render.i18n import word


@dataclass(frozen=True)
class BoxView:
    label: Markup
    key: str
    ticked: bool
    evidence: Markup


def _tool_evidence(c: Ctx, wf: WorkflowResult, box: Box) -> Markup:
    """The cell naming the tool result behind a box (its basis is "tool")."""
    p, v = wf.project, wf.verdicts
    if box.key == "npu_load":
        return c.val(c.t("v_target_dump"), p.artefacts.target_dump)
    if box.key == "inference_smoke":
        return c.val(c.t("v_golden_nan_free"), wf.get("golden").command)
    if box.key == "golden":
        return c.val(c.t("ev_golden").format(word=word("tensor", v.golden or "", c.lang)), wf.get("golden").command)
    if box.key == "training_smoke":
        return c.val(c.t("v_first_loss"), f"{p.artefacts.target_log}, {c.t('first_step')}")
    if box.key == "short_run":
        return c.val(c.t("ev_short_run").format(word=word("short_run", v.short_run or "", c.lang)),
                     wf.get("short_run").command)
    if box.key == "formal_training":
        return c.val(c.t("ev_curves").format(word=word("curves", v.curves or "", c.lang)), wf.get("loss_curves").command)
    # performance: the KPI verdict comes from the NPU timing and the KPI, the baseline one from the comparison's command
    if p.thresholds.latency_p50_ms is not None:
        basis, source = "ev_perf_kpi", ", ".join(x for x in (p.artefacts.target_perf, "mig.yaml thresholds.latency_p50_ms") if x)
    else:
        basis, source = "ev_perf_baseline", wf.get("performance").command
    return c.val(c.t(basis).format(word=word("performance", v.performance or "", c.lang)), source)


def _missing(c: Ctx, wf: WorkflowResult, box: Box, perf_triggered: bool) -> Markup:
    """What the box lacks: the gap of the slot that would tick it, or the evidence to give."""
    if box.key == "npu_load":
        return c.na(c.t("na_no_target_dump"))
    if box.key == "inference_smoke":
        return c.na(c.t("na_needs_golden"), wf.get("golden").command)
    if box.key == "golden":
        return c.gap(wf.get("golden"))
    if box.key == "training_smoke":
        return c.na(c.t("na_target_not_parsed"), wf.get("target_log").command)
    if box.key == "short_run":
        return c.gap(wf.get("short_run"))
    if box.key == "formal_training":
        return c.gap(wf.get("loss_curves"))
    if box.key == "performance":
        return c.na(c.t("na_perf_no_result" if perf_triggered else "na_perf_not_triggered"))
    return c.na(c.t("na_no_code_evidence" if box.key == "code_migration" else "na_no_full_acc"))


def box_views(c: Ctx, wf: WorkflowResult) -> list[BoxView]:
    views = []
    for box in wf.verdicts.boxes:
        if box.basis == "attested":
            evidence = c.val(c.t("v_attested"), f"mig.yaml attested.{box.key}: {box.attested_ref}")
        elif box.basis == "tool":
            evidence = _tool_evidence(c, wf, box)
        else:
            evidence = _missing(c, wf, box, wf.project.performance.triggered)
        views.append(BoxView(label=c.word("v_" + box.key), key=box.key, ticked=box.ticked, evidence=evidence))
    return views
