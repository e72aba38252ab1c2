"""``compare_dumps``: every tensor of a migrated run's dump against the golden run's, msprobe-style.

The rows carry msprobe's six metrics with its exact definitions (so users can check us against
the msprobe CSV they trust) plus acc-agent's extras; the layer-level diagnosis (first divergence,
cause category, rank at fault) comes from ``acc_agent.numerics.diagnosis``.
Output stays small for agents: the worst rows inline, the whole table in a CSV.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path
from typing import Any, Literal

from pydantic import Field

from acc_agent.errors import AccAgentError
from acc_agent.models.common import Evidence, ToolInput
from acc_agent.models.compare import CompareDumpsOutput, DumpRow
from acc_agent.registry import tool
from acc_agent.text_safety import terminal_lines, terminal_text

#: Rows inline by default: keeps a 2,000-row result under 20 KB of JSON for an agent; the CSV has all.
DEFAULT_TOP = 12
#: Unmatched names listed inline by default (totals are always given).
UNMATCHED_INLINE = 40
_STATUS_RANK = {"error": 0, "warning": 1, "unmatched": 2, "skipped": 3, "pass": 4}


class CompareDumpsInput(ToolInput):
    golden: str = Field(description="Golden (trusted GPU/CPU) dump: msprobe dump.json, its rank folder, a "
                                    "step*/rank* dump root, a folder of .npy files, or one .npz/.safetensors file.")
    target: str = Field(description="Target (migrated NPU) dump, same forms as GOLDEN.")
    bench: str | None = Field(default=None, description="Optional bench dump: the baseline hardware run at the "
                                                        "target's precision, compared against golden too.")
    mapping: str | None = Field(default=None, description="YAML file mapping renamed target tensor names to "
                                                          "golden names ('target: golden'; a key ending in '.' "
                                                          "maps a name prefix).")
    csv: str | None = Field(default=None, description="Write the full table here, with msprobe's column names.")
    precision: Literal["fp16", "bf16", "fp32"] | None = Field(
        default=None, description="Target precision for tolerances; default FP16 (the default migration "
                                  "target), BF16 for bf16 tensors. Pass fp32 for an FP32 run.")
    top: int = Field(default=DEFAULT_TOP, ge=1, description="Rows kept inline (the worst first); the CSV has all.")
    all_rows: bool = Field(default=False, description="Return every row (and every unmatched name) inline instead "
                                                      "of the worst --top.")
    pair_by_order: bool = Field(default=False, description="Also pair every leftover tensor by execution order and "
                                                           "shape. Without it this happens automatically where most "
                                                           "names do not pair (renamed or fused layers), and the "
                                                           "diagnosis says so.")
    workers: int | None = Field(default=None, ge=1, description="Worker processes (default: automatic by dump "
                                                                "size and ranks).")


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


def render_text(out: CompareDumpsOutput) -> str:
    """Terminal table, worst rows first."""
    lines = [f"[{out.verdict}] {out.summary}"]
    if out.first_divergence is not None:
        lines.append(f"first divergence: {out.first_divergence.name} — {out.first_divergence.reason}")
    if out.diagnosis is not None:
        lines.append(f"diagnosis: {out.diagnosis.category} — {out.diagnosis.explanation}")
    shown = worst_first(out.rows)
    width = min(70, max([len(terminal_text(r.name)) for r in shown] + [4]))
    if shown and all(r.compare_mode != "tensor" for r in shown):
        # statistics/md5 rows: msprobe's figures (its rules judge NormRelativeErr)
        lines.append(f"{'status':8} {'name':{width}} {'max_diff':>11} {'norm_diff':>11} {'norm_rel':>11} "
                     f"{'md5':>6}  note")
        for r in shown:
            shown_name = terminal_text(r.name)
            name = shown_name if len(shown_name) <= width else "…" + shown_name[-(width - 1):]
            md5 = "-" if r.md5_equal is None else ("same" if r.md5_equal else "differ")
            lines.append(f"{r.status:8} {name:{width}} {_fmt(r.max_diff, '.3e'):>11} {_fmt(r.norm_diff, '.3e'):>11} "
                         f"{_fmt(r.norm_rel_diff, '.3%'):>11} {md5:>6}  {r.message[:80]}")
    else:
        lines.append(f"{'status':8} {'name':{width}} {'cosine':>10} {'max_abs':>11} {'max_rel':>11} "
                     f"{'1e-3 ratio':>10} {'in_tol':>8}  note")
        for r in shown:
            shown_name = terminal_text(r.name)
            name = shown_name if len(shown_name) <= width else "…" + shown_name[-(width - 1):]
            lines.append(f"{r.status:8} {name:{width}} {_fmt(r.cosine):>10} {_fmt(r.max_abs_err, '.3e'):>11} "
                         f"{_fmt(r.max_rel_err, '.3e'):>11} {_fmt(r.one_thousandth_ratio, '.4f'):>10} "
                         f"{_fmt(r.within_tolerance_ratio, '.4f'):>8}  {r.message[:80]}")
    if out.rows_truncated:
        lines.append(f"... {out.rows_total - len(out.rows)} more rows in {out.csv_path}")
    if out.unmatched_golden or out.unmatched_target:
        lines.append(f"unmatched: {out.unmatched_golden_total} golden, {out.unmatched_target_total} target "
                     f"(first: {(out.unmatched_target or out.unmatched_golden)[0]})")
    return terminal_lines(lines)


def _verdict(rows: list[DumpRow], scalar_rows: list[Any] | None = None) -> str:
    """pass / fail, or inconclusive when not one row could be compared in any mode.

    A comparison whose rows are all skipped (no tensor data, statistics or md5 on both sides, e.g.
    ``task: structure``) or that paired nothing must not read as a pass: exit code 3 tells scripts."""
    statuses = {r.__dict__.get("status", "pass") for r in rows}  # statistics rows are sparse (DumpRow.__getattr__)
    if not statuses - {"skipped", "unmatched"}:
        return "inconclusive"
    bad = {"error", "warning"}
    if statuses & bad or any(s.status in bad for s in scalar_rows or ()):
        return "fail"
    return "pass"


def _split_pairs(golden: Any, target: Any, pairs: list[Any]) -> tuple[list[Any], list[Any]]:
    """(pairs with tensor files on both sides, the rest): the rest is compared by statistics/md5."""
    g_by, t_by = golden.by_name, target.by_name
    tensor: list[Any] = []
    stat: list[Any] = []
    for p in pairs:
        (tensor if t_by[p.target_name].has_data and g_by[p.golden_name].has_data else stat).append(p)
    return tensor, stat


def _summary(rows: list[DumpRow], scalar_rows: list[Any], keep: list[DumpRow], verdict: str,
             unmatched: tuple[int, int], golden: Any, target: Any) -> str:
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

            summary += (f" (first: {differ[0].name}: target {value_text(differ[0].target.value)} vs golden "
                        f"{value_text(differ[0].golden.value)})")
    worst = keep[0] if keep else None
    if worst is not None and worst.status != "pass":
        summary += f"; worst: {worst.name} ({worst.status}: {worst.message or 'see metrics'})"
    return summary


def _why_inconclusive(rows: list[DumpRow], unmatched: tuple[int, int], golden: Any, target: Any) -> str:
    from acc_agent.frontend import option
    from acc_agent.tools._stat_rows import REDUMP_HINT

    tasks = f"golden task '{golden.meta.get('task')}', target task '{target.meta.get('task')}'" \
        if golden is not None and target is not None else "tasks unknown"
    if not rows:
        return (f"inconclusive: no tensor of the target dump matched the golden dump by name (unmatched "
                f"{unmatched[0]} golden / {unmatched[1]} target); check the mapping file ({option('mapping')}) or "
                f"try {option('pair_by_order', True)}")
    return (f"inconclusive: none of the {len(rows)} paired tensors could be compared ({tasks}): no pair has "
            f"tensor data, statistics or md5 on both sides. {REDUMP_HINT}")


def _with_statistics_rows(rows: list[DumpRow], stat_units: list[tuple[str, list[Any], bool]],
                          per_rank: dict[str, tuple[Any, Any, Any]]) -> tuple[list[DumpRow], list[Any]]:
    """Add the statistics/md5 rows of every rank to the tensor rows, in (rank, execution) order.

    Non-tensor arguments are compared (msprobe-style) only where a rank has no tensor pair at all:
    that is a statistics comparison, which msprobe judges with them."""
    from acc_agent.tools._stat_rows import statistics_rows

    scalar_rows: list[Any] = []
    stat_rows: list[DumpRow] = []
    for key, pairs, with_scalars in stat_units:
        if not pairs and not with_scalars:
            continue
        g, t, _ = per_rank[key]
        result = statistics_rows(g, t, pairs, key or None, scalars=with_scalars)
        stat_rows.extend(result.rows)
        scalar_rows.extend(result.scalar_rows)
    if not stat_rows:
        return rows, scalar_rows
    if not rows:
        return stat_rows, scalar_rows
    merged = rows + stat_rows
    merged.sort(key=lambda r: (r.rank or "", r.index))
    return merged, scalar_rows


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
    from acc_agent.io.dumps import open_dump_set
    from acc_agent.io.pairing import load_mapping, pair_entries
    from acc_agent.numerics.diagnosis import diagnose
    from acc_agent.numerics.diagnosis.ranks import RankResult, combine_ranks
    from acc_agent.tools._compare_csv import write_csv
    from acc_agent.tools._dump_rows import Job, compute_rows, run_parallel

    golden_set = open_dump_set(params.golden)
    target_set = open_dump_set(params.target, like=golden_set)
    bench_set = open_dump_set(params.bench) if params.bench else None
    mapping = load_mapping(params.mapping) if params.mapping else None
    evidence = [Evidence(kind="file", ref=str(d.source), detail=f"{side} dump ({d.kind}, {len(d.entries)} tensors"
                         + (f", rank {k}" if k else "") + ")")
                for side, s in (("golden", golden_set), ("target", target_set), ("bench", bench_set)) if s
                for k, d in s.ranks.items()]
    if params.mapping:
        evidence.append(Evidence(kind="file", ref=params.mapping, detail="name mapping target -> golden"))

    rank_keys = [k for k in target_set.ranks if k in golden_set.ranks]
    if len(golden_set.ranks) == 1 and len(target_set.ranks) == 1:
        rank_keys = [next(iter(target_set.ranks))]
        golden_set.ranks = {rank_keys[0]: next(iter(golden_set.ranks.values()))}
    unmatched_g: list[str] = [f"{k}/*" for k in golden_set.ranks if k not in rank_keys]
    unmatched_t: list[str] = [f"{k}/*" for k in target_set.ranks if k not in rank_keys]
    if not rank_keys:
        raise AccAgentError("no_common_ranks", "golden and target dumps share no rank directory",
                            hint=f"golden ranks: {list(golden_set.ranks)}; target ranks: {list(target_set.ranks)}.",
                            path=params.target)

    units = []
    pairing_notes: list[str] = []
    regions: list[dict[str, Any]] = []
    stat_units: list[tuple[str, list[Any], bool]] = []
    per_rank: dict[str, tuple[Any, Any, Any]] = {}
    for key in rank_keys:
        g, t = golden_set.ranks[key], target_set.ranks[key]
        b = None
        if bench_set is not None:
            b = bench_set.ranks.get(key) or (next(iter(bench_set.ranks.values())) if len(bench_set.ranks) == 1
                                             else None)
        pairing = pair_entries(g, t, mapping, by_order=params.pair_by_order)
        prefix_note = f"{key}: " if key and len(rank_keys) > 1 else ""
        pairing_notes += [prefix_note + n for n in pairing.notes]
        regions += [{"rank": key or None, "target": r.target_key, "golden": list(r.golden_keys), "note": r.note}
                    for r in pairing.regions]
        prefix = f"{key}/" if len(rank_keys) > 1 else ""
        unmatched_g += [prefix + n for n in pairing.unmatched_golden]
        unmatched_t += [prefix + n for n in pairing.unmatched_target]
        bench_names = set(b.by_name) if b is not None else set()
        tensor_pairs, stat_pairs = _split_pairs(g, t, pairing.pairs)
        jobs = [Job(p.golden_name, p.target_name, p.method, t.entry(p.target_name).index,
                    p.golden_name if p.golden_name in bench_names else
                    (p.target_name if p.target_name in bench_names else None))
                for p in tensor_pairs]
        units.append((str(g.source), str(t.source), str(b.source) if b is not None else None, jobs,
                      params.precision, key or None))
        stat_units.append((key, stat_pairs, not tensor_pairs))
        per_rank[key] = (g, t, b)

    if len(units) > 1:
        # Several ranks: every rank's pairs go to one process pool (ranks are independent).
        workers = params.workers or max(1, min(os.cpu_count() or 1, 8))
        if workers > 1:
            rows = run_parallel(units, workers)
        else:
            rows = [r for key, unit in zip(rank_keys, units, strict=True)
                    for r in compute_rows(*per_rank[key], unit[3], params.precision, key or None, workers=1)]
    else:
        key = rank_keys[0]
        rows = compute_rows(*per_rank[key], units[0][3], params.precision, key or None, workers=params.workers)
    rows, scalar_rows = _with_statistics_rows(rows, stat_units, per_rank)

    results = []
    for key in rank_keys:
        g, t, b = per_rank[key]
        rank_rows = [r for r in rows if (r.rank or "") == (key or "")]
        fd, diag = diagnose(rank_rows, g, t, b, params.precision)
        results.append(RankResult(key, fd, diag))
    first_divergence, diagnosis = combine_ranks(results)
    if pairing_notes or regions:
        diagnosis.details["pairing_notes"] = pairing_notes[:12]
        diagnosis.details["fused_regions"] = regions[:20]
        diagnosis.judgement_note += " Pairing: " + "; ".join(pairing_notes[:3]) + "."

    verdict = _verdict(rows, scalar_rows)
    csv_path = None
    keep = rows if params.all_rows else _once(worst_first(rows, 2 * params.top), params.top)
    truncated = len(keep) < len(rows)
    if params.csv or truncated:
        if params.csv:
            target_csv = Path(params.csv)
        else:
            from acc_agent.compact import results_dir

            tag = hashlib.sha256(f"{params.golden}|{params.target}".encode()).hexdigest()[:12]
            target_csv = results_dir() / f"compare_dumps-{tag}.csv"
        dumps = {k or "": (per_rank[k][0], per_rank[k][1]) for k in rank_keys}
        csv_path = str(write_csv(rows, target_csv, scalar_rows=scalar_rows, dumps=dumps))
        evidence.append(Evidence(kind="file", ref=csv_path, detail="full comparison table (msprobe column names)"))
    if params.all_rows:
        keep = worst_first(rows, 1)
        inline = rows
    else:
        keep_ids = {id(r) for r in keep}
        inline = [r for r in rows if id(r) in keep_ids]

    g0, t0, _ = per_rank[rank_keys[0]]
    summary = _summary(rows, scalar_rows, keep, verdict, (len(unmatched_g), len(unmatched_t)), g0, t0)
    if first_divergence is not None:
        summary += f"; first divergence: {first_divergence.name}"
    if any(r.compare_mode != "tensor" for r in rows):
        evidence.append(Evidence(kind="threshold", ref="msprobe statistics Result rules",
                                 detail="statistics/md5 rows: NaN/Inf in target Max/Min, output NormRelativeErr > 0.5 "
                                        "with inputs < 0.1, or > 10x the inputs', dtype/shape/requires_grad/scalar "
                                        "argument differ (msprobe 26.2 indicator_analysis)"))
    evidence.append(Evidence(kind="threshold", ref="cosine >= 0.99 and >= 99% of elements within tolerance",
                             detail="row pass bar; tolerance per precision from numerics/tolerance.py "
                                    "(Compare §3.1 table)"))
    return CompareDumpsOutput(
        verdict=verdict,  # type: ignore[arg-type]
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
