"""Compare.md's loss-curve line and criteria table, from compare_loss_curves' output.

Why a module of its own: the verdict and every criterion (value, limit, met?) are printed in words
of the report's language, never as the tool's machine names, and the table must quote the very
numbers the tool computed.
"""

from __future__ import annotations

from typing import Any

from markupsafe import Markup

from acc_agent.numerics.loss_profiles import metric_label
from acc_agent.render.env import md_escape
from acc_agent.render.i18n import word


def _pct(value: Any) -> str:
    return f"{float(value) * 100:.2f} %"


def curve_cells(c: Any, output: dict[str, Any] | None, command: str) -> dict[str, Any]:
    """``curves`` (verdict words, standard and summary with its source), ``curve_criteria`` rows and
    ``curve_notes`` (the tool's warnings: step units, intervals, the baseline's noise)."""
    if not output:
        return {"curve_criteria": [], "curve_notes": []}
    verdict = str(output.get("verdict", ""))
    title = str(output.get("profile_title") or "")
    words = word("curves", verdict, c.lang)
    head = f"{words} ({c.t('lc_standard')}: {c.tt(title)})" if title else words
    rows = []
    for crit in output.get("criteria") or []:
        label = f"{metric_label(str(crit.get('metric', '')))} {c.t('st_' + str(crit.get('statistic')))}"
        value = crit.get("value")
        if value is None:
            cell = c.na(c.tt(crit.get("note") or c.t("na")))
        else:
            text = _pct(value)
            if crit.get("absolute_value") is not None:
                text += f" ({float(crit['absolute_value']):.4g} {c.t('lc_absolute')})"
            if crit.get("curve") == "smoothed":
                text += f", {c.t('lc_smoothed').format(n=crit.get('smoothing_window'))}"
            cell = c.val(text)
        limit = f"≤ {float(crit.get('limit', 0.0)) * 100:g} %"
        if crit.get("absolute_limit") is not None:
            limit += f" {c.t('lc_or')} ≤ {float(crit['absolute_limit']):g} {c.t('lc_absolute')}"
        status = crit.get("status")
        met = c.word("yes") if status == "pass" else (c.word("no") if status == "fail" else c.na(c.t("na")))
        rows.append([Markup(md_escape(label)), cell, Markup(md_escape(limit)), met])
    notes = [Markup(md_escape(c.tt(w))) for w in output.get("warnings") or []]
    return {"curves": c.val(f"{head} — {c.tt(output.get('summary', ''))}", command), "curves_verdict_words": words,
            "curve_criteria": rows, "curve_notes": notes}
