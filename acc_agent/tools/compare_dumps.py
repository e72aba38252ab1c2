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
    pair_by_order: bool = Field(default=False, description="When names differ (renamed or fused layers), also "
                                                           "pair leftover tensors by execution order and shape. "
                                                           "Off by default: msprobe leaves them unmatched, and "
                                                           "pairing by position can join unrelated tensors.")
    workers: int | None = Field(default=None, ge=1, description="Worker processes (default: automatic by dump "
                                                                "size and ranks).")


def _sort_key(r: DumpRow) -> tuple[int, float, float, str, int]:
    cos = r.cosine if r.cosine is not None else (2.0 if r.status == "pass" else -2.0)
    return (_STATUS_RANK.get(r.status, 5), cos, -(r.max_abs_err or 0.0), r.rank or "", r.index)


def worst_first(rows: list[DumpRow]) -> list[DumpRow]:
    return sorted(rows, key=_sort_key)


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
    width = min(70, max([len(r.name) for r in shown] + [4]))
    lines.append(f"{'status':8} {'name':{width}} {'cosine':>10} {'max_abs':>11} {'max_rel':>11} "
                 f"{'1e-3 ratio':>10} {'in_tol':>8}  note")
    for r in shown:
        name = r.name if len(r.name) <= width else "…" + r.name[-(width - 1):]
        lines.append(f"{r.status:8} {name:{width}} {_fmt(r.cosine):>10} {_fmt(r.max_abs_err, '.3e'):>11} "
                     f"{_fmt(r.max_rel_err, '.3e'):>11} {_fmt(r.one_thousandth_ratio, '.4f'):>10} "
                     f"{_fmt(r.within_tolerance_ratio, '.4f'):>8}  {r.message[:80]}")
    if out.rows_truncated:
        lines.append(f"... {out.rows_total - len(out.rows)} more rows in {out.csv_path}")
    if out.unmatched_golden or out.unmatched_target:
        lines.append(f"unmatched: {out.unmatched_golden_total} golden, {out.unmatched_target_total} target "
                     f"(first: {(out.unmatched_target or out.unmatched_golden)[0]})")
    return "\n".join(lines)


def _verdict(rows: list[DumpRow]) -> str:
    if not rows:
        return "error"
    return "fail" if any(r.status in ("error", "warning") for r in rows) else "pass"


@tool(
    description="Compare every tensor of a migrated (target, NPU) dump with the golden run's dump, like "
    "msprobe compare: same row names and the same six metrics (Cosine, EucDist, MaxAbsErr, MaxRelativeErr, "
    "one-/five-thousandths error ratios) plus mean/RMS error, share within the precision's tolerance, ULP "
    "error and NaN/Inf counts. Lists unmatched tensors on both sides, marks each row pass/warning/error, "
    "writes an msprobe-compatible CSV, and names the first diverging layer when diagnosis is available.",
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
    target_set = open_dump_set(params.target)
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
    per_rank: dict[str, tuple[Any, Any, Any]] = {}
    for key in rank_keys:
        g, t = golden_set.ranks[key], target_set.ranks[key]
        b = None
        if bench_set is not None:
            b = bench_set.ranks.get(key) or (next(iter(bench_set.ranks.values())) if len(bench_set.ranks) == 1
                                             else None)
        pairing = pair_entries(g, t, mapping, by_order=params.pair_by_order)
        prefix = f"{key}/" if len(rank_keys) > 1 else ""
        unmatched_g += [prefix + n for n in pairing.unmatched_golden]
        unmatched_t += [prefix + n for n in pairing.unmatched_target]
        bench_names = set(b.by_name) if b is not None else set()
        jobs = [Job(p.golden_name, p.target_name, p.method, t.entry(p.target_name).index,
                    p.golden_name if p.golden_name in bench_names else
                    (p.target_name if p.target_name in bench_names else None))
                for p in pairing.pairs]
        units.append((str(g.source), str(t.source), str(b.source) if b is not None else None, jobs,
                      params.precision, key or None))
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

    results = []
    for key in rank_keys:
        g, t, b = per_rank[key]
        rank_rows = [r for r in rows if (r.rank or "") == (key or "")]
        fd, diag = diagnose(rank_rows, g, t, b, params.precision)
        results.append(RankResult(key, fd, diag))
    first_divergence, diagnosis = combine_ranks(results)

    verdict = _verdict(rows)
    counts = {s: sum(1 for r in rows if r.status == s) for s in ("pass", "warning", "error", "skipped")}
    csv_path = None
    keep = rows if params.all_rows else worst_first(rows)[: params.top]
    truncated = len(keep) < len(rows)
    if params.csv or truncated:
        if params.csv:
            target_csv = Path(params.csv)
        else:
            from acc_agent.compact import results_dir

            tag = hashlib.sha256(f"{params.golden}|{params.target}".encode()).hexdigest()[:12]
            target_csv = results_dir() / f"compare_dumps-{tag}.csv"
        csv_path = str(write_csv(rows, target_csv))
        evidence.append(Evidence(kind="file", ref=csv_path, detail="full comparison table (msprobe column names)"))
    keep_ids = {id(r) for r in keep}
    inline = [r for r in rows if id(r) in keep_ids]

    worst = worst_first(rows)[0] if rows else None
    summary = (f"{len(rows)} tensor pairs compared: {counts['pass']} pass, {counts['warning']} warning, "
               f"{counts['error']} error, {counts['skipped']} skipped; unmatched {len(unmatched_g)} golden / "
               f"{len(unmatched_t)} target")
    if worst is not None and worst.status != "pass":
        summary += f"; worst: {worst.name} ({worst.status}: {worst.message or 'see metrics'})"
    if first_divergence is not None:
        summary += f"; first divergence: {first_divergence.name}"
    if not rows:
        summary = "no tensor of the target dump matched the golden dump by name; check the mapping file"
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
