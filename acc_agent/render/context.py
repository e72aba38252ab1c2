"""Everything the templates print, assembled from one view per report section (render/views/).

Why one assembly: the four documents (and both languages) read the same views, so a fact stated
in two documents is the very same cell, which is what the consistency check then verifies. The
decisions (verdicts, ticked boxes) arrive already taken on the workflow result; here they are only
said in the document's language.
"""

from __future__ import annotations

from dataclasses import dataclass

from markupsafe import Markup

from acc_agent.models.workflow import Overall, WorkflowResult
from acc_agent.render.cells import Ctx, generation_date
from acc_agent.render.env import code
from acc_agent.render.views.baseline import baseline_view
from acc_agent.render.views.dumps import dumps_view
from acc_agent.render.views.environment import environment_view
from acc_agent.render.views.golden import golden_view
from acc_agent.render.views.localisation import localisation_view
from acc_agent.render.views.performance import performance_view
from acc_agent.render.views.problems import found_problem_rows
from acc_agent.render.views.project import (
    PROBLEM_COLUMNS,
    dataset_names,
    dataset_rows,
    listed_rows,
    parameter_rows,
    project_date,
    thresholds_view,
)
from acc_agent.render.views.training import training_view
from acc_agent.render.views.verification import box_views

__all__ = ["Ctx", "build_context", "generation_date"]

#: Summary's status line for each overall verdict.
_STATUS: dict[Overall, str] = {"pass": "st_adapted", "fail": "st_failed", "pass_with_conditions": "st_conditional",
                               "na": "st_in_progress"}


@dataclass(frozen=True)
class GapView:
    slot: str
    tool: str
    reason: Markup
    command: Markup


@dataclass(frozen=True)
class VerdictCells:
    accuracy: Markup
    performance: Markup
    overall: Markup


def build_context(wf: WorkflowResult, lang: str, plots: dict[str, str] | None = None,
                  generated: str | None = None, config: str = "mig.yaml") -> dict[str, object]:
    """Everything the templates print. ``generated`` is the report's date (default: :func:`generation_date`),
    ``config`` the project file as seen from the documents' folder (recorded so ``report --check`` finds it)."""
    p = wf.project
    v = wf.verdicts
    c = Ctx(lang, p.base_dir.resolve() if p.base_dir else None)
    generated = generated or generation_date()
    env = environment_view(c, wf)
    gaps = [GapView(slot=r.slot, tool=r.tool, reason=c.val(c.why(r)), command=code(r.command))
            for r in wf.results.values() if not r.ok and r.status != "not_applicable"]
    return {
        "p": p,
        "generated": generated,
        "config": config,
        "project_date": project_date(c, p),
        "baseline": baseline_view(c, wf),
        "datasets": dataset_rows(c, p),
        "dataset_names": dataset_names(c, p),
        "th": thresholds_view(c, p),
        "training": training_view(c, wf),
        "golden": golden_view(c, wf),
        "dumps": dumps_view(c, wf.get("dumps")),
        "loc": localisation_view(c, wf),
        "perf": performance_view(c, wf),
        "env": env,
        "boxes": box_views(c, wf),
        "accuracy": v.accuracy,
        "performance": v.performance,
        "overall": v.overall,
        "status": _STATUS[v.overall],
        "gaps": gaps,
        "plots": plots or {},
        "io_rows": listed_rows(c, p.model.io_contract, ("name", "shape", "dtype")),
        "param_rows": parameter_rows(c, p),
        "changes": listed_rows(c, p.changes, ("area", "change")),
        "risks": listed_rows(c, p.risks, ("risk", "level", "mitigation")),
        "problems": listed_rows(c, p.problems, PROBLEM_COLUMNS) + found_problem_rows(c, wf, generated,
                                                                                     env.recorded_failing),
        "cell": c,
        "vc": VerdictCells(
            accuracy=c.vw("accuracy", v.accuracy) if v.accuracy else c.na(c.t("na_no_acc_verdict")),
            performance=c.vw("performance", v.performance) if v.performance else c.na(c.t("na_no_perf_verdict")),
            overall=c.vw("overall", v.overall) if v.overall != "na" else c.na(c.t("na_nothing")),
        ),
    }
