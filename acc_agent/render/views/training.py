"""Training: final losses of both logs, the short-run judgement and the loss-curve comparison
(Compare §3, Mig_Readme §5.3)."""

from __future__ import annotations

from dataclasses import dataclass

from markupsafe import Markup

from acc_agent.models.training import (
    CompareLossCurvesOutput,
    JudgeShortRunOutput,
    MetricPoint,
    ParseTrainingLogOutput,
)
from acc_agent.models.workflow import WorkflowResult
from acc_agent.render.cells import Ctx, Row, finite
from acc_agent.render.curve_cells import curve_cells
from acc_agent.render.env import fmt_num


@dataclass(frozen=True)
class TrainingView:
    baseline_log: Markup  # the baseline log's final loss, or why there is none
    target_log: Markup
    diff: Markup
    short_run: Markup
    short_run_verdict: str | None
    short_run_met: bool
    curves: Markup
    curve_criteria: list[Row]
    curve_notes: list[Markup]


def _last_point(series: list[MetricPoint] | None) -> tuple[int, float] | None:
    if not series:
        return None
    value = finite(series[-1].value)
    return (series[-1].step, value) if value is not None else None


def training_view(c: Ctx, wf: WorkflowResult) -> TrainingView:
    p = wf.project
    metric = p.thresholds.loss_metric
    cells: dict[str, Markup] = {}
    finals: dict[str, tuple[int, float] | None] = {}
    for side, rel in (("baseline_log", p.artefacts.baseline_log), ("target_log", p.artefacts.target_log)):
        r = wf.get(side)
        log = r.output_as(ParseTrainingLogOutput)
        if log is None:
            cells[side] = c.gap(r)
            finals[side] = None
            continue
        last = _last_point(log.series.get(metric))
        finals[side] = last
        cells[side] = (c.val(last[1], c.t("src_step").format(log=rel, step=last[0])) if last
                       else c.na(c.t("na_no_series").format(metric=metric, log=rel), r.command))
    b, tg = finals["baseline_log"], finals["target_log"]
    if b and tg:
        difference = tg[1] - b[1]
        rel_pct = f" ({fmt_num(difference / b[1] * 100, 3)} %)" if b[1] else ""
        diff = c.val(f"{fmt_num(difference)}{rel_pct}", c.t("src_final_difference"))
    else:
        diff = c.na(c.t("na_both_logs"))
    sr = wf.get("short_run")
    judged = sr.output_as(JudgeShortRunOutput)
    if judged is not None:
        drop = finite(judged.relative_drop)
        src = c.t("src_steps").format(log=p.artefacts.target_log, a=judged.window.start_step,
                                      b=judged.window.end_step, command=sr.command)
        short_run = c.val(f"{drop * 100:.1f} %", src) if drop is not None else c.na(c.t("na_drop"), sr.command)
    else:
        short_run = c.gap(sr)
    lc = wf.get("loss_curves")
    curves = curve_cells(c, lc.output_as(CompareLossCurvesOutput), lc.command)
    return TrainingView(
        baseline_log=cells["baseline_log"], target_log=cells["target_log"], diff=diff, short_run=short_run,
        short_run_verdict=wf.verdicts.short_run, short_run_met=wf.verdicts.short_run_met,
        curves=curves.curves if curves.curves is not None else c.gap(lc),
        curve_criteria=curves.criteria, curve_notes=curves.notes,
    )
