"""Layer-level comparison: compare_dumps' rows around the first divergence and its diagnosis
(Compare §3.2, Mig_report §6, Summary's next steps)."""

from __future__ import annotations

from dataclasses import dataclass, field

from markupsafe import Markup

from acc_agent.models.compare import CompareDumpsOutput, DumpRow
from acc_agent.models.workflow import SkillResult
from acc_agent.render.cells import Ctx, Row, finite
from acc_agent.render.env import code
from acc_agent.tools.compare_dumps import precision_change_only


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
    #: The rank (step/rank where the dump holds several steps) the first divergence is on, when several were compared.
    first_rank: str | None = None
    first_reason: Markup = Markup("")
    explanation: Markup = Markup("")
    next_actions: list[Markup] = field(default_factory=list)
    total: int = 0
    shown: int = 0
    unique: int = 0
    window: str = "0"
    csv_command: Markup = Markup("")
    #: The rows hold statistics only (msprobe's default dump): their columns are msprobe's statistics differences.
    statistics: bool = False


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


def _statistics_cells(c: Ctx, row: DumpRow) -> Row:
    """msprobe's statistics differences (target − golden) and its NormRelativeErr, the figure its rules judge."""
    cells: Row = []
    for value in (row.max_diff, row.min_diff, row.mean_diff, row.norm_diff):
        number = finite(value)
        cells.append(c.val(number) if number is not None else c.na(c.t("na_not_computable")))
    rel = finite(row.norm_rel_diff)
    cells.append(c.val(f"{rel:.3%}") if rel is not None else c.na(c.t("na_not_computable")))
    return cells


def _first_rank(out: CompareDumpsOutput) -> str | None:
    """Where the first divergence is, when several ranks (or steps) were compared: one rank alone needs no name."""
    fd, diagnosis = out.first_divergence, out.diagnosis
    if fd is None or diagnosis is None or len(diagnosis.ranks) < 2:
        return None
    steps = {f.step for f in diagnosis.ranks}
    return (fd.rank_key if len(steps) > 1 else fd.rank) or None


def _tensor_cell(row: DumpRow, with_rank: bool) -> Markup:
    return code(row.name) + Markup(" ") + code(row.rank) if with_rank and row.rank else code(row.name)


def dumps_view(c: Ctx, r: SkillResult, limit: int = 40) -> DumpsView:
    out = r.output_as(CompareDumpsOutput)
    if out is None:
        return DumpsView(ok=False, gap=c.gap(r), summary=c.gap(r), first=c.gap(r), category=c.gap(r))
    fd, diagnosis = out.first_divergence, out.diagnosis
    fd_name = fd.name if fd is not None else None
    # one row per tensor (an input that is the previous call's output repeats it), a window around the
    # first divergence: what a reviewer checks is what agrees just before it and what follows
    unique = [x for x in out.rows if not x.same_as or x.name == fd_name]
    fd_rank = fd.rank_key if fd is not None else None
    several = len({x.rank for x in unique}) > 1
    of_rank = ""
    if several and fd_rank is not None and any(x.rank == fd_rank for x in unique):
        # rows of several ranks: the window is the named rank's (each row still says its rank)
        unique = [x for x in unique if x.rank == fd_rank]
        of_rank = f" ({fd_rank})"
    at = next((i for i, x in enumerate(unique) if x.name == fd_name), 0)
    start = max(0, min(at - limit // 3, len(unique) - limit))
    window = unique[start:start + limit]
    statistics = bool(window) and all(row.compare_mode != "tensor" for row in window)
    figures = _statistics_cells if statistics else _metric_cells
    # every tensor within the target's precision: a row msprobe flags only for its float type says so
    clean = diagnosis is not None and diagnosis.category == "no_layer_fault" and out.verdict == "pass"
    rows = [[_tensor_cell(row, several), *figures(c, row),
             c.vw("row", "dtype_only" if clean and precision_change_only(row) else row.status)] for row in window]
    category = diagnosis.category if diagnosis is not None else None
    return DumpsView(
        ok=True, rows=rows, verdict=out.verdict,
        total=max(len(out.rows), out.rows_total), shown=len(rows),
        unique=len(unique), window=f"{start + 1}–{start + len(rows)}{of_rank}" if rows else "0",
        csv_command=code(f"{r.command} --csv compare_dumps.csv"), statistics=statistics,
        first=c.val(fd.name, r.command) if fd is not None and fd.name else c.val(c.t("v_none_found"), r.command),
        first_name=fd_name, first_rank=_first_rank(out),
        first_reason=c.val(c.tt(fd.reason or "")) if fd is not None else Markup(""),
        category=c.vw("category", category) if category else c.na(c.t("na_no_diagnosis")),
        explanation=c.val(c.tt(diagnosis.explanation if diagnosis is not None else "")),
        next_actions=[c.val(c.tt(a)) for a in (diagnosis.next_actions if diagnosis is not None else [])],
        summary=c.val(c.tt(out.summary), r.command),
    )
