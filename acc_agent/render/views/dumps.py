"""Layer-level comparison: compare_dumps' rows around the first divergence and its diagnosis
(Compare §3.2, Mig_report §6, Summary's next steps)."""

from __future__ import annotations

from dataclasses import dataclass, field

from markupsafe import Markup

from acc_agent.models.compare import CompareDumpsOutput, DumpRow
from acc_agent.models.workflow import SkillResult
from acc_agent.render.cells import Ctx, Row, finite
from acc_agent.render.env import code


@dataclass(frozen=True)
class DumpsView:
    ok: bool
    summary: Markup
    first: Markup
    category: Markup
    gap: Markup = Markup("")
    rows: list[Row] = field(default_factory=list)
    verdict: str | None = None
    first_name: str | None = None
    first_reason: Markup = Markup("")
    explanation: Markup = Markup("")
    next_actions: list[Markup] = field(default_factory=list)
    total: int = 0
    shown: int = 0
    unique: int = 0
    window: str = "0"
    csv_command: Markup = Markup("")


def rel_l2(row: DumpRow) -> float | None:
    """‖target − golden‖₂ / ‖golden‖₂ of a row: EucDist over the golden norm (both computed by compare_dumps)."""
    euc, norm = finite(row.euc_dist), finite(row.golden_norm)
    return euc / norm if euc is not None and norm else None


def _metric_cells(c: Ctx, row: DumpRow) -> Row:
    cells: Row = []
    for key, value in (("cosine", finite(row.cosine)), ("rel_l2", rel_l2(row)), ("max_abs_err", finite(row.max_abs_err)),
                       ("max_rel_err", finite(row.max_rel_err)),
                       ("one_thousandth_ratio", finite(row.one_thousandth_ratio))):
        if value is None:
            cells.append(c.na(c.tt(row.na_reasons.get(key) or c.t("na_not_computable"))))
        else:
            cells.append(c.val(f"{value:.6f}" if key == "cosine" else value))
    return cells


def _tensor_cell(row: DumpRow, with_rank: bool) -> Markup:
    return code(row.name) + Markup(" ") + code(row.rank) if with_rank and row.rank else code(row.name)


def dumps_view(c: Ctx, r: SkillResult, limit: int = 40) -> DumpsView:
    out = r.output_as(CompareDumpsOutput)
    if out is None:
        return DumpsView(ok=False, gap=c.gap(r), summary=c.gap(r), first=c.gap(r), category=c.gap(r))
    fd = out.first_divergence
    fd_name = fd.name if fd is not None else None
    # one row per tensor (an input that is the previous call's output repeats it), a window around the
    # first divergence: what a reviewer checks is what agrees just before it and what follows
    unique = [x for x in out.rows if not x.same_as or x.name == fd_name]
    fd_rank = fd.rank_key if fd is not None else None
    # rows of several ranks: the window is the named rank's, and each row says its rank
    at = next((i for i, x in enumerate(unique) if x.name == fd_name and (fd_rank is None or x.rank == fd_rank)), 0)
    start = max(0, min(at - limit // 3, len(unique) - limit))
    several = len({x.rank for x in unique}) > 1
    rows = [[_tensor_cell(row, several), *_metric_cells(c, row), c.vw("row", row.status)]
            for row in unique[start:start + limit]]
    diagnosis = out.diagnosis
    category = diagnosis.category if diagnosis is not None else None
    return DumpsView(
        ok=True, rows=rows, verdict=out.verdict,
        total=max(len(out.rows), out.rows_total), shown=len(rows),
        unique=len(unique), window=f"{start + 1}–{start + len(rows)}" if rows else "0",
        csv_command=code(f"{r.command} --csv compare_dumps.csv"),
        first=c.val(fd.name, r.command) if fd is not None and fd.name else c.val(c.t("v_none_found"), r.command),
        first_name=fd_name,
        first_reason=c.val(c.tt(fd.reason or "")) if fd is not None else Markup(""),
        category=c.vw("category", category) if category else c.na(c.t("na_no_diagnosis")),
        explanation=c.val(c.tt(diagnosis.explanation if diagnosis is not None else "")),
        next_actions=[c.val(c.tt(a)) for a in (diagnosis.next_actions if diagnosis is not None else [])],
        summary=c.val(c.tt(out.summary), r.command),
    )
