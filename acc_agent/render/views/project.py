"""What mig.yaml itself states: datasets, thresholds, the rows a person lists (IO contract, changes,
risks, problems) and the project's date. Nothing here comes from a tool."""

from __future__ import annotations

from dataclasses import dataclass

from markupsafe import Markup

from acc_agent.models.project import Project
from acc_agent.render.cells import Ctx, Row
from acc_agent.render.env import code, fmt_num


def dataset_rows(c: Ctx, p: Project) -> list[Row]:
    rows: list[Row] = []
    for d in p.datasets:
        same = c.word("yes") if d.same_as_baseline else c.word("no") if d.same_as_baseline is False else c.na(c.t("na_not_stated"))
        rows.append([c.word("p_" + d.purpose), c.val(d.dataset) if d.dataset else c.na(c.t("na_no_dataset_name")),
                     c.val(d.subset or "—"), same,
                     code(d.path) if d.path else c.na(c.t("na_no_local_path"))])
    return rows


def dataset_names(c: Ctx, p: Project) -> str:
    """Summary names the datasets from the same rows Compare §2.4 lists (a row without a name shows its path)."""
    return ", ".join(dict.fromkeys(d.dataset or d.path or c.t("p_" + d.purpose) for d in p.datasets))


@dataclass(frozen=True)
class ThresholdsView:
    band: Markup
    window: Markup
    flat: Markup
    metric: Markup
    rtol: Markup
    atol: Markup
    tolerance: Markup
    precision: Markup
    latency_kpi: Markup
    target_log: Markup


def thresholds_view(c: Ctx, p: Project) -> ThresholdsView:
    t = p.thresholds
    rtol, atol, tol_src = p.tolerance()
    tol_src = c.t("tol_reference").format(precision=p.model.target_precision.upper()) \
        if tol_src.startswith("reference for") else tol_src
    return ThresholdsView(
        band=c.val(f"{t.short_run_band[0] * 100:g} %–{t.short_run_band[1] * 100:g} %", "mig.yaml thresholds.short_run_band"),
        window=c.val(t.short_run_window or c.t("whole_log"), "mig.yaml thresholds.short_run_window"),
        flat=c.val(str(t.flat_steps_limit), "mig.yaml thresholds.flat_steps_limit"),
        metric=c.val(t.loss_metric, "mig.yaml thresholds.loss_metric"),
        rtol=c.val(fmt_num(rtol), tol_src),
        atol=c.val(fmt_num(atol), tol_src),
        tolerance=c.val(f"rtol {fmt_num(rtol)}, atol {fmt_num(atol)}", tol_src),
        precision=c.val(p.model.target_precision, "mig.yaml model.target_precision"),
        latency_kpi=c.val(f"{fmt_num(t.latency_p50_ms)} ms", "mig.yaml thresholds.latency_p50_ms")
        if t.latency_p50_ms is not None else c.na(c.t("na_no_latency_kpi")),
        target_log=code(p.artefacts.target_log) if p.artefacts.target_log else c.na(c.t("na_no_target_log")),
    )


def project_date(c: Ctx, p: Project) -> Markup:
    return c.val(p.project.date, "mig.yaml project.date") if p.project.date else c.na(c.t("na_no_project_date"))


def listed_rows(c: Ctx, rows: list[dict[str, str]], keys: tuple[str, ...]) -> list[Row]:
    """Rows a person lists in mig.yaml (risks, changes, logged problems), one cell per column, a missing one empty."""
    return [[c.val(row.get(k, "")) for k in keys] for row in rows]


def parameter_rows(c: Ctx, p: Project) -> list[Row]:
    return [[code(r.get("parameter", "")), c.val(r.get("meaning", "")), c.val(r.get("default", ""))]
            for r in p.entry.parameters]


#: Mig_report §7.1 columns of a problem logged by hand.
PROBLEM_COLUMNS = ("date", "problem", "command", "error", "tried", "root_cause", "fix")
