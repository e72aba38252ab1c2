"""Compare.md's loss-curve line and criteria table, from compare_loss_curves' output.

Why a module of its own: the verdict and every criterion (value, limit, met?) are printed in words
of the report's language, never as the tool's machine names, and the table must quote the very
numbers the tool computed.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from markupsafe import Markup

from acc_agent.models.training import CompareLossCurvesOutput, CriterionResult
from acc_agent.numerics.loss_profiles import metric_label
from acc_agent.render.cells import Ctx, Row
from acc_agent.render.env import md_escape
from acc_agent.render.i18n import word


@dataclass(frozen=True)
class CurveCells:
    """``curves`` (verdict words, standard and summary with its source; None without a comparison),
    ``criteria`` rows and ``notes`` (the tool's warnings: step units, intervals, the baseline's noise)."""

    curves: Markup | None = None
    criteria: list[Row] = field(default_factory=list)
    notes: list[Markup] = field(default_factory=list)


def _pct(value: float) -> str:
    return f"{float(value) * 100:.2f} %"


def _criterion_row(c: Ctx, crit: CriterionResult) -> Row:
    label = f"{metric_label(crit.metric)} {c.t('st_' + crit.statistic)}"
    if crit.value is None:
        cell = c.na(c.tt(crit.note or c.t("na")))
    else:
        text = _pct(crit.value)
        if crit.absolute_value is not None:
            text += f" ({float(crit.absolute_value):.4g} {c.t('lc_absolute')})"
        if crit.curve == "smoothed":
            text += f", {c.t('lc_smoothed').format(n=crit.smoothing_window)}"
        cell = c.val(text)
    limit = f"≤ {float(crit.limit) * 100:g} %"
    if crit.absolute_limit is not None:
        limit += f" {c.t('lc_or')} ≤ {float(crit.absolute_limit):g} {c.t('lc_absolute')}"
    met = c.word("yes") if crit.status == "pass" else (c.word("no") if crit.status == "fail" else c.na(c.t("na")))
    return [Markup(md_escape(label)), cell, Markup(md_escape(limit)), met]


def curve_cells(c: Ctx, output: CompareLossCurvesOutput | None, command: str) -> CurveCells:
    if output is None:
        return CurveCells()
    words = word("curves", output.verdict, c.lang)
    title = output.profile_title
    head = f"{words} ({c.t('lc_standard')}: {c.tt(title)})" if title else words
    return CurveCells(curves=c.val(f"{head} — {c.tt(output.summary)}", command),
                      criteria=[_criterion_row(c, crit) for crit in output.criteria],
                      notes=[Markup(md_escape(c.tt(w))) for w in output.warnings])
