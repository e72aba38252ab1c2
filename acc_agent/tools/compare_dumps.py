"""``compare_dumps``: every tensor of a migrated run's dump against the golden run's, msprobe-style.

The rows carry msprobe's six metrics with its exact definitions (so users can check us against
the msprobe CSV they trust) plus acc-agent's extras; the layer-level diagnosis (first divergence,
cause category, rank at fault) comes from ``acc_agent.numerics.diagnosis``.
Output stays small for agents: the worst rows inline, the whole table in a CSV.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from acc_agent.errors import AccAgentError
from acc_agent.models.common import Evidence
from acc_agent.models.compare import CompareDumpsInput, CompareDumpsOutput, DumpRow
from acc_agent.text_columns import Column, Table, render
from acc_agent.text_safety import terminal_text
from acc_agent.tools.spec import tool

if TYPE_CHECKING:
    from acc_agent.models.diagnosis import Diagnosis
    from acc_agent.tools._background_csv import BackgroundCsv
    from acc_agent.tools._rank_tasks import DumpInfo, RankOutcome
    from acc_agent.tools._stat_rows import ScalarRow

#: Unmatched names listed inline by default (totals are always given).
UNMATCHED_INLINE = 40
_STATUS_RANK = {"error": 0, "warning": 1, "unmatched": 2, "skipped": 3, "pass": 4}


def _sort_key(r: DumpRow) -> tuple[int, float, float, str, int]:
    # read through __dict__ with the fields' defaults: statistics rows are sparse (DumpRow.__getattr__)
    # and this runs over every row
    d = r.__dict__
    status = d.get("status", "pass")
    cosine = d.get("cosine")
    cos = cosine if cosine is not None else (2.0 if status == "pass" else -2.0)
    if cosine is None and d.get("compare_mode", "tensor") != "tensor":
        # statistics/md5 rows: the largest NormRelativeErr first (the figure msprobe's rules judge)
        rel = d.get("norm_rel_diff")
        return (_STATUS_RANK.get(status, 5), cos, -(rel if rel is not None and rel == rel else 0.0),
                d.get("rank") or "", d.get("index", 0))
    return (_STATUS_RANK.get(status, 5), cos, -(d.get("max_abs_err") or 0.0), d.get("rank") or "", d.get("index", 0))


def worst_first(rows: list[DumpRow], top: int | None = None) -> list[DumpRow]:
    """Rows worst first; with ``top``, only that many (a partial sort: 300k statistics rows are common)."""
    if top is not None and top < len(rows):
        import heapq

        return heapq.nsmallest(top, rows, key=_sort_key)
    return sorted(rows, key=_sort_key)


def _once(rows: list[DumpRow], top: int) -> list[DumpRow]:
    """The first ``top`` rows, a tensor listed once: an input that is an earlier call's output (``same_as``)
    repeats that output's numbers and is left out when the output is listed."""
    names = {r.name for r in rows}
    return [r for r in rows if r.__dict__.get("same_as") not in names][:top]


def _fmt(v: float | None, spec: str = ".6f") -> str:
    return "-" if v is None else format(v, spec)


def _md5(r: DumpRow) -> str:
    return "-" if r.md5_equal is None else ("same" if r.md5_equal else "differ")


def _short(name: str, width: int) -> str:
    """A name cut from the left to ``width`` (the end of a row name says which tensor it is)."""
    return name if len(name) <= width else "…" + name[-(width - 1):]


#: Figures of a row, right-aligned under their titles: (title, cell, width).
Figure = tuple[str, Callable[[DumpRow], str], int]
#: Tensor rows: msprobe's real-data metrics and the share within tolerance.
_TENSOR_FIGURES: list[Figure] = [
    ("cosine", lambda r: _fmt(r.cosine), 10),
    ("max_abs", lambda r: _fmt(r.max_abs_err, ".3e"), 11),
    ("max_rel", lambda r: _fmt(r.max_rel_err, ".3e"), 11),
    ("1e-3 ratio", lambda r: _fmt(r.one_thousandth_ratio, ".4f"), 10),
    ("in_tol", lambda r: _fmt(r.within_tolerance_ratio, ".4f"), 8),
]
#: Statistics/md5 rows: msprobe's figures (its rules judge NormRelativeErr).
_STATISTICS_FIGURES: list[Figure] = [
    ("max_diff", lambda r: _fmt(r.max_diff, ".3e"), 11),
    ("norm_diff", lambda r: _fmt(r.norm_diff, ".3e"), 11),
    ("norm_rel", lambda r: _fmt(r.norm_rel_diff, ".3%"), 11),
    ("md5", _md5, 6),
]


@dataclass(frozen=True)
class _Titled:
    title: str
    column: Column[DumpRow]


def _columns(name_width: int, figures: list[Figure], rank_width: int = 0) -> list[_Titled]:
    """The table's columns; ``rank_width`` > 0 adds the rank each row comes from (rows of several ranks)."""
    ranks = [_Titled("rank", Column(lambda r: terminal_text(r.rank or ""), width=rank_width))] if rank_width else []
    return [_Titled("status", Column(lambda r: r.status, width=8)), *ranks,
            _Titled("name", Column(lambda r: _short(terminal_text(r.name), name_width), width=name_width)),
            *(_Titled(title, Column(cell, width=width, align=">")) for title, cell, width in figures),
            _Titled("", Column(lambda r: "")),  # a blank column: the note stands two spaces off the figures
            _Titled("note", Column(lambda r: r.message[:80]))]


def _constant(text: str) -> Callable[[None], str]:
    return lambda _: text


def _table_lines(columns: list[_Titled], rows: list[DumpRow]) -> list[str]:
    """The titles, each laid out like the column under it, then a line per row."""
    titles = Table[None]([Column(_constant(c.title), c.column.width, c.column.align) for c in columns], indent="")
    return titles.lines([None]) + Table[DumpRow]([c.column for c in columns], indent="").lines(rows)


def render_text(out: CompareDumpsOutput) -> str:
    """Terminal table, worst rows first."""
    found = []
    if out.first_divergence is not None:
        found.append(f"first divergence: {out.first_divergence.name} — {out.first_divergence.reason}")
    if out.diagnosis is not None:
        found.append(f"diagnosis: {out.diagnosis.category} — {out.diagnosis.explanation}")
    shown = worst_first(out.rows)
    width = min(70, max([len(terminal_text(r.name)) for r in shown] + [4]))
    statistics = bool(shown) and all(r.compare_mode != "tensor" for r in shown)
    ranks = {r.rank or "" for r in shown}
    columns = _columns(width, _STATISTICS_FIGURES if statistics else _TENSOR_FIGURES,
                       max(len(terminal_text(k)) for k in ranks) if len(ranks) > 1 else 0)
    rest = []
    if out.rows_truncated:
        rest.append(f"... {out.rows_total - len(out.rows)} more rows in {out.csv_path}")
    if out.unmatched_golden or out.unmatched_target:
        rest.append(f"unmatched: {out.unmatched_golden_total} golden, {out.unmatched_target_total} target "
                    f"(first: {(out.unmatched_target or out.unmatched_golden)[0]})")
    return render(out, found, _table_lines(columns, shown), rest)


def _verdict(rows: list[DumpRow], scalar_rows: Sequence[ScalarRow] | None = None, no_fault: bool = False,
             cancelled: frozenset[str] = frozenset(), not_judged: frozenset[str] = frozenset(),
             autocast: bool = False) -> Literal["pass", "fail", "inconclusive"]:
    """pass / fail, or inconclusive when not one row could be compared in any mode.

    A comparison whose rows are all skipped (no tensor data, statistics or md5 on both sides, e.g.
    ``task: structure``) or that paired nothing must not read as a pass: exit code 3 tells scripts.
    ``no_fault``: the diagnosis found every tensor within the target's precision, so rows flagged
    only for running in another float type (:func:`precision_change_only`) do not fail the run, nor
    do the rows msprobe's NormRelativeErr rules flag on the parameter gradients the diagnosis found
    cancelled to rounding level (``cancelled``, :func:`cancelled_gradient_only`), nor the outputs it left unjudged
    because msprobe recorded other tensors there (``not_judged``: other shapes, consumers agreeing), nor the
    warnings of msprobe's relative rule alone (:func:`_relative_warning_only`). Under
    ``autocast`` (the diagnosis found the target computing in a lower precision than its float32 tensors say), the
    tensor bar's warnings on float32 rows are the lower precision's too."""
    statuses = {r.__dict__.get("status", "pass") for r in rows}  # statistics rows are sparse (DumpRow.__getattr__)
    if not statuses - {"skipped", "unmatched"}:
        return "inconclusive"
    bad = {"error", "warning"}
    calls = _calls_of(cancelled)
    if any(s.status in bad and not (no_fault and (s.key in calls and set(s.messages) <= _norm_rules()
                                                  or _relative_warning_messages(s.messages)
                                                  or float_type_limits_only(s)))
           for s in scalar_rows or ()):
        return "fail"
    if not statuses & bad:
        return "pass"
    if not no_fault:
        return "fail"
    rest = [r for r in rows if r.__dict__.get("status", "pass") in bad and not (
        precision_change_only(r) or cancelled_gradient_only(r, cancelled) or r.name in not_judged
        or (autocast and _float_tensor_warning(r)) or _relative_warning_only(r))]
    if not rest:
        return "pass"
    # a float32 tensor that is a lower-precision output cast up (``model(x).float()`` before the loss) carries that
    # output's rounding: the same excuse as the output it is the data of
    sources = {r.__dict__.get("same_as") for r in rest} - {None}
    lower = {r.name for r in rows if r.name in sources and _lower_precision_target(r.__dict__.get("golden_dtype"),
                                                                                 r.__dict__.get("target_dtype"))}
    return "pass" if all(r.__dict__.get("same_as") in lower for r in rest) else "fail"


def _csv_evidence(path: str) -> Evidence:
    return Evidence(kind="file", ref=path, detail="full comparison table (msprobe column names)")


def _listed(outcomes: list[RankOutcome], detail: str = "cancelled_gradients") -> frozenset[str]:
    """The row names every rank's diagnosis lists under ``detail`` (parameter gradients found cancelled to
    rounding level; outputs left unjudged)."""
    names: set[str] = set()
    for o in outcomes:
        listed = o.diagnosis.details.get(detail) if o.diagnosis is not None else None
        if isinstance(listed, list):
            names.update(str(n) for n in listed)
    return frozenset(names)


def _norm_rules() -> frozenset[str]:
    """msprobe's rules on an API call's output NormRelativeErr (alone, or against its inputs')."""
    from acc_agent.tools._stat_rows import MSG_REL_ERR, MSG_REL_WARN

    return frozenset({MSG_REL_ERR, MSG_REL_WARN})


def _calls_of(names: frozenset[str]) -> frozenset[str]:
    if not names:
        return frozenset()
    from acc_agent.numerics.diagnosis.graph import split_name

    return frozenset(split_name(n)[0] for n in names)


def cancelled_gradient_only(row: DumpRow, cancelled: frozenset[str]) -> bool:
    """A parameter gradient the diagnosis found cancelled to rounding level, flagged by msprobe's
    NormRelativeErr rules only (and, at another float type, its dtype rule).

    A conv bias before a train-mode BatchNorm has a gradient of zero in theory: 1e-8 on the golden,
    1e-5 in fp16, a NormRelativeErr of 1,000 that is rounding noise. The diagnosis judges such a
    gradient against what rounding leaves of its summed terms; the CSV keeps msprobe's Result. At another float
    type its md5 digests differ too, as every tensor's do."""
    d = row.__dict__
    if d["name"] not in cancelled or d.get("status") not in ("error", "warning"):
        return False
    from acc_agent.tools._stat_rows import MSG_DTYPE, MSG_MD5

    rest = set(str(d.get("message") or "").split("; ")) - _norm_rules() - {""}
    return not rest or (MSG_DTYPE in rest and rest <= {MSG_DTYPE, MSG_MD5} and _float_types_differ(d))


def precision_change_only(row: DumpRow) -> bool:
    """A row msprobe flags only because the target runs in another float type.

    msprobe's statistics rules flag every tensor whose dtype differs, so a float32 golden against a
    bfloat16 target is "error" on every row however close the numbers are (and so is a boolean attention
    mask against an additive float one); its tensor bar warns on a
    lower-precision target's clean rows. The CSV keeps msprobe's Result; when the diagnosis finds every
    tensor within the target's precision, the verdict follows it.
    """
    from acc_agent.numerics.diagnosis.measure import other_representation
    from acc_agent.tools._stat_rows import MSG_DTYPE, MSG_MD5, MSG_REL_WARN

    d = row.__dict__
    if d.get("status") == "warning" and d.get("compare_mode", "tensor") == "tensor":
        return _lower_precision_target(d.get("golden_dtype"), d.get("target_dtype"))
    if d.get("status") != "error":
        return False
    # msprobe's "output norm error 10x the inputs'" warning rides along: at another precision the inputs'
    # error is often a rounding-sized 1e-8, and the judgement measured the output against its budget; in
    # an md5 dump the digests of two float types always differ
    if not {MSG_DTYPE} <= set(str(d.get("message") or "").split("; ")) <= {MSG_DTYPE, MSG_REL_WARN, MSG_MD5}:
        return False
    # a boolean mask on one side, an additive float mask on the other (a fused attention takes the one, the
    # written-out one adds the other): another form of the same argument, which the diagnosis does not measure
    return _float_types_differ(d) or other_representation(str(d.get("golden_dtype") or "") or None,
                                                          str(d.get("target_dtype") or "") or None)


def float_type_limits_only(s: ScalarRow) -> bool:
    """A scalar argument msprobe flags only because each side passes its own float type's limit.

    Attention masks are filled with ``torch.finfo(dtype).min`` (Hugging Face models do so): -3.40282e38 in a float32
    run, -3.38953e38 in a bfloat16 one. The same setting, which msprobe's scalar rule flags as a difference."""
    from acc_agent.numerics.budgets import float_type_limits
    from acc_agent.tools._stat_rows import MSG_MD5, MSG_SCALAR

    # an md5 dump digests the two values too
    return {MSG_SCALAR} <= set(s.messages) <= {MSG_SCALAR, MSG_MD5} and float_type_limits(s.golden.value,
                                                                                           s.target.value)


def _relative_warning_only(row: DumpRow) -> bool:
    """A warning of msprobe's "output NormRelativeErr 10x its inputs'" rule alone (with md5's "differs"): a ratio
    of two errors that rounding makes (1e-7 out of 1e-9 in, when a kernel sums in another order); the diagnosis judged the output
    against its inputs' error and its own rounding instead."""
    d = row.__dict__
    return d.get("status") == "warning" and _relative_warning_messages(str(d.get("message") or "").split("; "))


def _relative_warning_messages(messages: Sequence[str]) -> bool:
    """Messages that are msprobe's "output NormRelativeErr 10x its inputs'" warning alone (with md5's "differs").

    msprobe applies that rule to every output row of the call, a None output of a backward (the gradient of an
    input that needs none) included: on such a scalar row it says nothing the call's tensors do not."""
    from acc_agent.tools._stat_rows import MSG_MD5, MSG_REL_WARN

    # in an md5 dump the digest of any value that moved by a rounding differs too
    return {MSG_REL_WARN} <= set(messages) <= {MSG_REL_WARN, MSG_MD5}


def _float_tensor_warning(row: DumpRow) -> bool:
    """A warning of msprobe's tensor bar on a row whose two sides are float tensors."""
    from acc_agent.numerics.budgets import is_float

    d = row.__dict__
    return d.get("status") == "warning" and d.get("compare_mode", "tensor") == "tensor" \
        and is_float(d.get("golden_dtype")) and is_float(d.get("target_dtype"))


def _float_types_differ(d: dict[str, object]) -> bool:
    """Whether a row's golden and target are two different float types (a sparse row's ``__dict__``)."""
    from acc_agent.numerics.budgets import canonical_dtype, is_float

    g, t = canonical_dtype(d.get("golden_dtype")), canonical_dtype(d.get("target_dtype"))
    return g is not None and t is not None and g != t and is_float(g) and is_float(t)


def _lower_precision_target(golden: str | None, target: str | None) -> bool:
    """A target in a less precise float type than the golden (float32 golden, bfloat16 target).

    msprobe's tensor bar (cosine 0.99, 99 % of elements within tolerance) does not scale with the
    target's precision: a clean BF16 attention score matmul has 91 % of its elements within it."""
    from acc_agent.numerics.budgets import canonical_dtype, is_float, unit_roundoff

    g, t = canonical_dtype(golden), canonical_dtype(target)
    return is_float(g) and is_float(t) and unit_roundoff(t) > unit_roundoff(g)


def _summary(rows: list[DumpRow], scalar_rows: Sequence[ScalarRow], keep: list[DumpRow], verdict: str,
             unmatched: tuple[int, int], golden: DumpInfo | None, target: DumpInfo | None) -> str:
    """One line: counts per status (and per mode), scalar arguments that differ, the worst row; or why
    nothing could be compared and how to fix it."""
    counts = {s: 0 for s in ("pass", "warning", "error", "skipped")}
    modes: dict[str, int] = {}
    for r in rows:
        d = r.__dict__  # statistics rows are sparse (DumpRow.__getattr__): read with the defaults
        status = d.get("status", "pass")
        counts[status] = counts.get(status, 0) + 1
        if status != "skipped":
            mode = d.get("compare_mode", "tensor")
            modes[mode] = modes.get(mode, 0) + 1
    if verdict == "inconclusive":
        return _why_inconclusive(rows, unmatched, golden, target)
    by = ", ".join(f"{n} by {m if m != 'md5' else 'md5 (+statistics)'}" for m, n in modes.items())
    summary = (f"{len(rows)} tensor pairs compared ({by}): {counts['pass']} pass, {counts['warning']} warning, "
               f"{counts['error']} error, {counts['skipped']} skipped; unmatched {unmatched[0]} golden / "
               f"{unmatched[1]} target")
    differ = [s for s in scalar_rows if s.status != "pass"]
    if scalar_rows:
        summary += f"; {len(scalar_rows)} non-tensor arguments compared, {len(differ)} flagged"
        if differ:
            from acc_agent.numerics.diagnosis.explain import value_text

            first = differ[0]
            if first.target.value == first.golden.value and type(first.target.value) is type(first.golden.value):
                # equal values flagged by msprobe's rule on the call's first output (an output that is None)
                summary += f" (first: {first.name}: {first.message})"
            else:
                summary += (f" (first: {first.name}: target {value_text(first.target.value)} vs golden "
                            f"{value_text(first.golden.value)})")
    worst = keep[0] if keep else None
    if worst is not None and worst.status != "pass":
        # msprobe's messages open with their own status ("error: The dtype of NPU and Bench are inconsistent.")
        said = worst.message if worst.message.startswith(f"{worst.status}: ") else \
            f"{worst.status}: {worst.message or 'see metrics'}"
        summary += f"; worst: {worst.name} ({said})"
    return summary


def _precision_change_note(rows: list[DumpRow]) -> str:
    """Why a run with msprobe "error" rows passes: they differ only in float type and are within its precision."""
    flagged = [r for r in rows if precision_change_only(r)]
    if not flagged:
        return ""
    first = flagged[0]
    if first.__dict__.get("status") == "warning":
        return (f"; {len(flagged)} rows miss msprobe's bar (cosine 0.99, 99% of elements within tolerance) at the "
                f"target's lower precision (golden {first.golden_dtype}, target {first.target_dtype}, e.g. "
                f"{first.name}): every tensor is within that precision, so the run passes")
    return (f"; {len(flagged)} rows are errors under msprobe's rules only because the float type differs (golden "
            f"{first.golden_dtype}, target {first.target_dtype}, e.g. {first.name}): every tensor is within the "
            "target's precision, so the run passes (the CSV keeps msprobe's Result)")


def _limits_note(scalar_rows: Sequence[ScalarRow]) -> str:
    """Why a run with a flagged scalar argument passes: each side passes its own float type's limit."""
    flagged = [s for s in scalar_rows if s.status != "pass" and float_type_limits_only(s)]
    if not flagged:
        return ""
    first = flagged[0]
    many = len(flagged) > 1
    return (f"; {len(flagged)} non-tensor argument{'s' * many} (e.g. {first.name}: target {first.target.value:g}, "
            f"golden {first.golden.value:g}) {'are' if many else 'is'} each side's own float type's limit (torch.finfo(dtype).min or max, a mask "
            "fill): the same setting, flagged by msprobe's scalar rule only (the CSV keeps msprobe's Result)")


def _cancelled_note(rows: list[DumpRow], cancelled: frozenset[str]) -> str:
    """Why a run with msprobe NormRelativeErr errors on parameter gradients passes."""
    flagged = [r.name for r in rows if r.__dict__.get("status") in ("error", "warning") and not precision_change_only(r)
               and cancelled_gradient_only(r, cancelled)]
    if not flagged:
        return ""
    return (f"; {len(flagged)} parameter gradients (e.g. {flagged[0]}) fail msprobe's NormRelativeErr rule but cancel "
            "to rounding level (their terms sum to almost zero, so rounding alone moves them by far more than their "
            "size): within what the incoming gradients' rounding explains, so the run passes (the CSV keeps "
            "msprobe's Result)")


def _why_inconclusive(rows: list[DumpRow], unmatched: tuple[int, int], golden: DumpInfo | None,
                      target: DumpInfo | None) -> str:
    from acc_agent.frontend import option
    from acc_agent.tools._stat_rows import REDUMP_HINT

    tasks = f"golden task '{golden.meta.get('task')}', target task '{target.meta.get('task')}'" \
        if golden is not None and target is not None else "tasks unknown"
    if not rows and unmatched == (0, 0):
        levels = sorted({str(d.meta.get("level")) for d in (golden, target) if d is not None and d.meta.get("level")})
        at = f" at level {' and '.join(levels)}" if levels else ""  # both sides' levels, when they differ
        return (f"inconclusive: neither dump records a tensor (msprobe wrote no call{at}). Level L0 records only "
                "nn.Module calls, so a model that calls torch.nn.functional or tensor methods directly records "
                "nothing: dump both runs again at level L1 (API calls) or mix")
    if not rows:
        return (f"inconclusive: no tensor of the target dump matched the golden dump by name (unmatched "
                f"{unmatched[0]} golden / {unmatched[1]} target); check the mapping file ({option('mapping')}) or "
                f"try {option('pair_by_order', True)}")
    return (f"inconclusive: none of the {len(rows)} paired tensors could be compared ({tasks}): no pair has "
            f"tensor data, statistics or md5 on both sides. {REDUMP_HINT}")


@tool(
    description="Call when NPU outputs or loss differ beyond precision: compares every tensor of two msprobe dumps and "
    "finds where the fault enters. Returns verdict, first_divergence, diagnosis with next_actions, key rows.",
    title="Compare msprobe dumps",
    read_only=False,
    destructive=False,
    idempotent=True,
    positional=("golden", "target"),
    text_renderer=render_text,
)
def compare_dumps(params: CompareDumpsInput) -> CompareDumpsOutput:
    from acc_agent.io.dumps import gc_paused, rank_sources  # loads numpy, and so its BLAS
    from acc_agent.numerics.blas_threads import one_blas_thread

    # A statistics dump pair is millions of small objects that live until the result is built; with
    # the cyclic collector on, every few thousand new objects re-scan all of them (pairing a 300k-row
    # pair took 5.4 s instead of 0.6 s). The few cycles the diagnosis graph makes are freed when the
    # collector is back on.
    with one_blas_thread(), gc_paused():  # one process per core already (see numerics.blas_threads)
        return _compare(params, rank_sources)


def _compare(params: CompareDumpsInput, rank_sources: Callable[[str], dict[str, Path]]) -> CompareDumpsOutput:
    g_src = rank_sources(params.golden)
    if params.scheduler is None and len(g_src) == 1:
        t_src = rank_sources(params.target)
        if len(t_src) == 1:
            return _compare_single(params)
    else:
        t_src = rank_sources(params.target)
    b_src = rank_sources(params.bench) if params.bench else None
    return _compare_ranks(params, g_src, t_src, b_src)


def _compare_single(params: CompareDumpsInput) -> CompareDumpsOutput:
    """One rank on each side, in this process: large dumps are spread over worker processes tensor by tensor."""
    from acc_agent.io.dumps import open_dump_set
    from acc_agent.io.pairing import load_mapping
    from acc_agent.io.parallel_open import open_pair
    from acc_agent.numerics.diagnosis.ranks import other_dump_note
    from acc_agent.process_exit import free_at_exit
    from acc_agent.tools._background_csv import BackgroundCsv
    from acc_agent.tools._compare_csv import statistics_layout
    from acc_agent.tools._dump_rows import compute_rows
    from acc_agent.tools._rank_tasks import dump_info, finish_rank, plan_rank

    golden_set, target_set = open_pair(params.golden, params.target)  # the target parsed beside the golden
    bench_set = open_dump_set(params.bench) if params.bench else None
    mapping = load_mapping(params.mapping) if params.mapping else None
    infos = [(side, k, dump_info(d)) for side, s in (("golden", golden_set), ("target", target_set),
                                                      ("bench", bench_set)) if s for k, d in s.ranks.items()]
    key = next(iter(target_set.ranks))
    g, t = next(iter(golden_set.ranks.values())), target_set.ranks[key]
    b = None
    if bench_set is not None:
        b = bench_set.ranks.get(key) or (next(iter(bench_set.ranks.values())) if len(bench_set.ranks) == 1 else None)
    plan = plan_rank(g, t, b, key, False, mapping, params.pair_by_order)
    rows = compute_rows(g, t, b, plan.jobs, params.precision, key or None, workers=params.workers)
    background: list[BackgroundCsv] = []

    def start_csv(all_rows: list[DumpRow], scalar_rows: list[ScalarRow]) -> None:
        # a large statistics CSV is written by a forked child while this process diagnoses
        if statistics_layout(all_rows, scalar_rows) and (params.csv or (not params.all_rows
                                                                       and len(all_rows) > params.top)):
            writer = BackgroundCsv.start(all_rows, scalar_rows, {key or "": (dump_info(g), dump_info(t))},
                                         _csv_path(params))
            background.extend([writer] if writer is not None else [])

    try:
        outcome = finish_rank(g, t, b, key, plan, rows, params.precision, before_diagnosis=start_csv)
        g_key = next(iter(golden_set.ranks))
        note = other_dump_note(g_key, key)
        if note is not None:
            outcome.diagnosis.explanation += note
            outcome.diagnosis.details["compared_dumps"] = {"golden": g_key, "target": key}
        merged = _merged(params, [outcome], infos, [], [], background[0] if background else None)
        free_at_exit(golden_set, target_set, bench_set, plan, rows, outcome)  # millions of objects (see process_exit)
        return merged
    finally:
        for writer in background:
            writer.abandon()  # no-op once finished


def _compare_ranks(params: CompareDumpsInput, g_src: dict[str, Path], t_src: dict[str, Path],
                   b_src: dict[str, Path] | None) -> CompareDumpsOutput:
    """Rank by rank, each rank a task of its own: in worker processes (one per core) or on Dask."""
    from acc_agent.io.pairing import load_mapping
    from acc_agent.tools._dump_rows import cores
    from acc_agent.tools._rank_tasks import RankTask, local_backend, run_ranks

    mapping = load_mapping(params.mapping) if params.mapping else None
    rank_keys = [k for k in t_src if k in g_src]
    g_keys = dict(g_src)
    if len(g_src) == 1 and len(t_src) == 1:
        rank_keys = [next(iter(t_src))]
        g_keys = {rank_keys[0]: next(iter(g_src.values()))}
    unmatched_g = [f"{k}/*" for k in g_keys if k not in rank_keys]
    unmatched_t = [f"{k}/*" for k in t_src if k not in rank_keys]
    if not rank_keys:
        raise AccAgentError("no_common_ranks", "golden and target dumps share no rank directory",
                            hint=f"golden ranks: {list(g_src)}; target ranks: {list(t_src)}.", path=params.target)
    multi = len(rank_keys) > 1
    tasks = []
    for key in rank_keys:
        bench = None
        if b_src is not None:
            bench = b_src.get(key) or (next(iter(b_src.values())) if len(b_src) == 1 else None)
        tasks.append(RankTask(key, str(g_keys[key]), str(t_src[key]), str(bench) if bench else None, mapping,
                              params.precision, params.pair_by_order, multi))
    used = {src for t in tasks for src in (t.golden, t.target, t.bench) if src}
    sides = [("golden", g_src), ("target", t_src)] + ([("bench", b_src)] if b_src is not None else [])
    extra = sorted({str(src) for _, srcs in sides for src in srcs.values()} - used)
    outcomes: dict[str, RankOutcome] = {}

    def merge(outcome: RankOutcome) -> None:
        outcomes[outcome.key] = outcome  # rows stay as they came; ranks are put in order at the end

    if params.scheduler is not None:
        from acc_agent.tools._dask_backend import dask_backend

        with dask_backend(params.scheduler, params.workers) as dask:
            described = run_ranks(tasks, extra, dask, merge)
    else:
        workers = min(params.workers or cores(), len(tasks) + len(extra))
        with local_backend(workers) as local:
            described = run_ranks(tasks, extra, local, merge)
    info_by_src = dict(described)
    for task in tasks:
        o = outcomes[task.key]
        info_by_src[task.golden], info_by_src[task.target] = o.golden, o.target
        if task.bench and o.bench is not None:
            info_by_src[task.bench] = o.bench
    infos = [(side, k, info_by_src[str(src)]) for side, srcs in sides for k, src in srcs.items()]
    return _merged(params, [outcomes[k] for k in rank_keys], infos, unmatched_g, unmatched_t)


def _say_ranks_not_compared(diagnosis: Diagnosis, unmatched_g: list[str], unmatched_t: list[str]) -> None:
    """Whole rank dumps one side has and the other lacks: a verdict on the others must not read as one on them."""
    golden_only = [k[:-2] for k in unmatched_g if k.endswith("/*")]
    target_only = [k[:-2] for k in unmatched_t if k.endswith("/*")]
    if not golden_only and not target_only:
        return
    diagnosis.details["ranks_not_compared"] = {"golden": golden_only, "target": target_only}
    parts = []
    if golden_only:
        parts.append(f"the golden's {', '.join(golden_only[:8])}{' …' if len(golden_only) > 8 else ''} "
                     f"({len(golden_only)}) {'has' if len(golden_only) == 1 else 'have'} no target dump")
    if target_only:
        parts.append(f"the target's {', '.join(target_only[:8])}{' …' if len(target_only) > 8 else ''} "
                     f"({len(target_only)}) {'has' if len(target_only) == 1 else 'have'} no golden dump")
    diagnosis.explanation += (" Not compared: " + "; ".join(parts) + ", so nothing here speaks for "
                              f"{'it' if len(golden_only) + len(target_only) == 1 else 'them'}.")


def _csv_path(params: CompareDumpsInput) -> Path:
    """Where the full table goes: ``--csv``, else a file per golden/target pair in the results folder."""
    if params.csv:
        return Path(params.csv)
    from acc_agent.results_folder import results_dir

    tag = hashlib.sha256(f"{params.golden}|{params.target}".encode()).hexdigest()[:12]
    return results_dir() / f"compare_dumps-{tag}.csv"


def _merged(params: CompareDumpsInput, outcomes: list[RankOutcome], infos: list[tuple[str, str, DumpInfo]],
            unmatched_g: list[str], unmatched_t: list[str], background: BackgroundCsv | None = None
            ) -> CompareDumpsOutput:
    """One result from the ranks' outcomes (in rank order): the verdict, the diagnosis across ranks,
    the CSV and the compact inline rows. Every way of running the ranks ends here; ``background``
    is a CSV writer already started on these rows (it is handed the diagnosis's changes)."""
    from acc_agent.numerics.diagnosis.ranks import RankResult, combine_ranks, mark_rank_rows
    from acc_agent.tools._compare_csv import write_csv

    evidence = [Evidence(kind="file", ref=str(d.source), detail=f"{side} dump ({d.kind}, {d.n_entries} tensors"
                         + (f", rank {k}" if k else "") + ")") for side, k, d in infos]
    if params.mapping:
        evidence.append(Evidence(kind="file", ref=params.mapping, detail="name mapping target -> golden"))
    rows: list[DumpRow] = [r for o in outcomes for r in o.rows]
    scalar_rows = [s for o in outcomes for s in o.scalar_rows]
    pairing_notes = [n for o in outcomes for n in o.notes]
    regions = [r for o in outcomes for r in o.regions]
    unmatched_g = unmatched_g + [n for o in outcomes for n in o.unmatched_golden]
    unmatched_t = unmatched_t + [n for o in outcomes for n in o.unmatched_target]
    first_divergence, diagnosis = combine_ranks([RankResult(o.key, o.first_divergence, o.diagnosis)
                                                 for o in outcomes])
    # each rank's diagnosis marked its own first divergence: only the one named keeps the plain mark
    named_row = mark_rank_rows([(o.key, o.first_divergence, o.rows) for o in outcomes], first_divergence)
    _say_ranks_not_compared(diagnosis, unmatched_g, unmatched_t)
    if pairing_notes or regions:
        diagnosis.details["pairing_notes"] = pairing_notes[:12]
        diagnosis.details["fused_regions"] = regions[:20]
        diagnosis.judgement_note += " Pairing: " + "; ".join(pairing_notes[:3]) + "."

    if background is not None:
        background.send()  # the CSV's children finish the table while the rest of the result is built
    no_fault = diagnosis.category == "no_layer_fault"
    cancelled = _listed(outcomes) if no_fault else frozenset()
    not_judged = _listed(outcomes, "other_shapes_not_judged") | _listed(outcomes, "digests_after_a_later_write") \
        if no_fault else frozenset()
    autocast = no_fault and any(o.diagnosis is not None and o.diagnosis.details.get("autocast_precision")
                                for o in outcomes)
    verdict = _verdict(rows, scalar_rows, no_fault=no_fault, cancelled=cancelled, not_judged=not_judged,
                       autocast=autocast)
    csv_path = None
    keep = rows if params.all_rows else _once(worst_first(rows, 2 * params.top), params.top)
    if named_row is not None and not any(r is named_row for r in keep):
        # where the difference starts is listed whatever its size (later rows are usually further off)
        keep = [*keep[:params.top - 1], named_row] if params.top > 1 else [named_row]
    truncated = len(keep) < len(rows)
    csv_at = len(evidence)  # where the background CSV's evidence goes once it is written (below)
    if background is None and (params.csv or truncated):
        dumps = {o.key or "": (o.golden, o.target) for o in outcomes}
        csv_path = str(write_csv(rows, _csv_path(params), scalar_rows=scalar_rows, dumps=dumps))
        evidence.append(_csv_evidence(csv_path))
    if params.all_rows:
        keep = worst_first(rows, 1)
        inline = rows
    else:
        keep_ids = {id(r) for r in keep}
        inline = [r for r in rows if id(r) in keep_ids]

    g0, t0 = outcomes[0].golden, outcomes[0].target
    summary = _summary(rows, scalar_rows, keep, verdict, (len(unmatched_g), len(unmatched_t)), g0, t0)
    if first_divergence is not None:
        summary += f"; first divergence: {first_divergence.name}"
    if verdict == "pass":
        summary += _precision_change_note(rows) + _cancelled_note(rows, cancelled) + _limits_note(scalar_rows)
    if any(r.compare_mode != "tensor" for r in rows):
        evidence.append(Evidence(kind="threshold", ref="msprobe statistics Result rules",
                                 detail="statistics/md5 rows: NaN/Inf in target Max/Min, output NormRelativeErr > 0.5 "
                                        "with inputs < 0.1, or > 10x the inputs', dtype/shape/requires_grad/scalar "
                                        "argument differ (msprobe 26.2 indicator_analysis)"))
    evidence.append(Evidence(kind="threshold", ref="cosine >= 0.99 and >= 99% of elements within tolerance",
                             detail="row pass bar; rtol/atol by target precision: FP16 rtol 1e-2, atol 1e-3; "
                                    "BF16 rtol 1e-2, atol 1e-2; FP32 rtol 1e-4, atol 1e-5"))
    if background is not None:
        csv_path = str(background.finish())
        evidence.insert(csv_at, _csv_evidence(csv_path))
    return CompareDumpsOutput(
        verdict=verdict,
        summary=summary,
        evidence=evidence,
        golden=params.golden,
        target=params.target,
        bench=params.bench,
        rows=inline,
        unmatched_golden=unmatched_g if params.all_rows else unmatched_g[:UNMATCHED_INLINE],
        unmatched_target=unmatched_t if params.all_rows else unmatched_t[:UNMATCHED_INLINE],
        unmatched_golden_total=len(unmatched_g),
        unmatched_target_total=len(unmatched_t),
        first_divergence=first_divergence,
        diagnosis=diagnosis,
        rows_total=len(rows),
        rows_truncated=truncated,
        csv_path=csv_path,
    )
