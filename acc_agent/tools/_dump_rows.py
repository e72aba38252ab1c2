"""The row engine of ``compare_dumps``: one metrics row per paired tensor, with its initial status.

Kept apart from the tool so it can run in worker processes: a worker gets dump *paths* and the
list of pairs, reopens the dumps itself and streams one tensor pair at a time, so memory per
process stays at one pair's chunk buffers whatever the dump size. Per-row failures (unreadable
file, unsafe name, shape mismatch) become the row's status and message; the other rows go on.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, TypedDict

import numpy as np

from acc_agent.errors import AccAgentError
from acc_agent.io.dumps import Dump, open_dump_set
from acc_agent.io.tensors import NpyStream
from acc_agent.models.compare import DumpRow, RowStatus, TensorMetrics
from acc_agent.numerics import tolerance as tol
from acc_agent.numerics.metrics import compute_metrics

if TYPE_CHECKING:
    from acc_agent.io.arrays import Array

#: msprobe's documented bar (Cosine > 0.99); below it a row is at least a warning.
COSINE_BAR = 0.99
#: Share of elements within the precision's rtol/atol a row needs to pass.
WITHIN_BAR = 0.99
#: Below this much tensor data, worker processes cost more than they save.
PARALLEL_MIN_BYTES = 16 << 20


class _RowBase(TypedDict):
    """What a row knows before its tensors are read: the pair, and what dump.json says of each side."""

    name: str
    golden_name: str
    index: int
    golden_dtype: str | None
    target_dtype: str | None
    golden_shape: list[int] | None
    target_shape: list[int] | None
    pair_method: str
    rank: str | None
    golden_stats: dict[str, float | None] | None
    target_stats: dict[str, float | None] | None
    golden_requires_grad: bool | None
    target_requires_grad: bool | None
    golden_md5: str | None
    target_md5: str | None
    md5_equal: bool | None


@dataclass(frozen=True)
class Job:
    """One pair to compute; ``index`` is the target's execution order."""

    golden_name: str
    target_name: str
    method: str
    index: int
    bench_name: str | None = None


def row_precision(user: str | None, target_dtype: str | None) -> str:
    """Precision a row is judged at: the user's; else BF16 for a bf16 tensor; else FP16, the default target.

    A float32 tensor does not imply an FP32 run: emulated or mixed-precision runs store fp16-rounded
    values as float32, and judging those with FP32's atol=1e-5 flags rounding noise as errors.
    """
    if user:
        return tol.normalize_precision(user) or tol.DEFAULT_PRECISION
    return "bf16" if tol.precision_of_dtype(target_dtype) == "bf16" else tol.DEFAULT_PRECISION


def judge(m: TensorMetrics) -> tuple[RowStatus, str]:
    """Initial status of a computed row (the diagnosis may refine it)."""
    hard = [r for k, r in m.na_reasons.items()
            if k in ("cosine", "max_abs_err") and r.startswith(("shape unmatched", "N/A", "unsupported: dtype"))]
    if hard:
        return "error", hard[0]
    if m.na_reasons.get("max_abs_err", "").startswith("unsupported: empty"):
        return "skipped", m.na_reasons["max_abs_err"]
    notes = []
    if m.cosine is not None and m.cosine < COSINE_BAR:
        notes.append(f"cosine {m.cosine:.6f} < {COSINE_BAR}")
    if m.within_tolerance_ratio is not None and m.within_tolerance_ratio < WITHIN_BAR:
        notes.append(f"only {m.within_tolerance_ratio:.2%} of elements within tolerance (< {WITHIN_BAR:.0%})")
    if (m.target_nan or m.target_inf) and not (m.golden_nan or m.golden_inf):
        return "error", f"target has NaN/Inf ({m.target_nan} NaN, {m.target_inf} Inf) where golden has none"
    if notes:
        return "warning", "; ".join(notes)
    return "pass", ""


def compute_row(golden: Dump, target: Dump, bench: Dump | None, job: Job, precision: str | None,
                rank: str | None = None) -> DumpRow:
    """One row; any problem with one side's file is the row's error, never an exception."""
    ge = golden.entry(job.golden_name)
    te = target.entry(job.target_name)
    base: _RowBase = {
        "name": job.target_name,
        "golden_name": job.golden_name,
        "index": job.index,
        "golden_dtype": ge.dtype,
        "target_dtype": te.dtype,
        "golden_shape": ge.shape,
        "target_shape": te.shape,
        "pair_method": job.method,
        "rank": rank or None,
        # what dump.json says besides the data (cheap, and the diagnosis and CSV use it)
        "golden_stats": ge.stats or None,
        "target_stats": te.stats or None,
        "golden_requires_grad": ge.requires_grad,
        "target_requires_grad": te.requires_grad,
        "golden_md5": ge.md5,
        "target_md5": te.md5,
        "md5_equal": ge.md5 == te.md5 if ge.md5 is not None and te.md5 is not None else None,
    }
    prec = row_precision(precision, te.dtype)
    opened: list[Array | NpyStream] = []
    try:
        return _compute_opened(golden, target, bench, job, prec, base, opened)
    finally:
        for src in opened:
            if isinstance(src, NpyStream):  # an array (memory-mapped or read) has nothing to close
                src.close()


def _na_row(base: _RowBase, err: AccAgentError) -> DumpRow:
    status: RowStatus = "skipped" if err.code == "no_tensor_data" else "error"
    reasons = {k: f"unsupported: {err.message}" for k in ("cosine", "euc_dist", "max_abs_err", "max_rel_err",
                                                           "one_thousandth_ratio", "five_thousandths_ratio")}
    return DumpRow(**base, status=status, message=f"{err.message}. {err.hint}".strip(), na_reasons=reasons)


def _compute_opened(golden: Dump, target: Dump, bench: Dump | None, job: Job, prec: str, base: _RowBase,
                    opened: list[Array | NpyStream]) -> DumpRow:
    try:
        t_src = target.stream(job.target_name)
        opened.append(t_src)
        g_src = golden.stream(job.golden_name)
        opened.append(g_src)
    except AccAgentError as err:
        return _na_row(base, err)
    base["golden_dtype"] = _dtype_name(g_src) or base["golden_dtype"]
    base["target_dtype"] = _dtype_name(t_src) or base["target_dtype"]
    base["golden_shape"] = [int(s) for s in g_src.shape]
    base["target_shape"] = [int(s) for s in t_src.shape]
    try:
        m = compute_metrics(g_src, t_src, precision=prec)
    except AccAgentError as err:  # e.g. a file truncated while being read
        return _na_row(base, err)
    except (ValueError, TypeError, OSError) as exc:
        return DumpRow(**base, status="error", message=f"could not compute metrics: {exc}")
    verdict, message = judge(m)
    if message.startswith("unsupported: dtype"):
        message += _non_numeric_note(golden, target, job, g_src, t_src)
    if base["golden_dtype"] != base["target_dtype"] and not message:
        message = f"dtype differs: target {base['target_dtype']} vs golden {base['golden_dtype']}"
    row = DumpRow(**base, **m.model_dump(), status=verdict, message=message)
    if bench is not None and job.bench_name is not None:
        try:
            b_src = bench.stream(job.bench_name)
            opened.append(b_src)
            row.bench = compute_metrics(g_src, b_src, precision=prec)
        except AccAgentError as err:
            row.bench = TensorMetrics(na_reasons={"cosine": f"unsupported: bench {err.message}"})
    return row


def _is_numeric(arr: Array | NpyStream) -> bool:
    """Numbers the metrics can read: bool/int/float/complex, or an ml-dtypes type (bf16, fp8)."""
    dt = arr.dtype
    return bool(dt.kind in "biufc" or (dt.kind == "V" and not dt.names and dt.type is not np.void))


def _non_numeric_note(golden: Dump, target: Dump, job: Job, g_src: Array | NpyStream, t_src: Array | NpyStream) -> str:
    """Which file holds text/bytes/records and what to do: the metrics only know the dtypes.

    Why: "dtype <U3 is not numeric" alone leaves the user to find the file among thousands."""
    files = []
    for side, dump, name, src in (("target", target, job.target_name, t_src), ("golden", golden, job.golden_name, g_src)):
        if not _is_numeric(src):
            try:
                path = dump.path_of(name)
            except AccAgentError:
                path = None
            files.append(f"{side} file {path.name if path is not None else name}")
    if not files:
        return ""
    return (f" ({', '.join(files)}). Only numeric tensors can be compared: re-dump it as a numeric array "
            "(strings, bytes and record arrays are not tensors).")


def _dtype_name(arr: Array | NpyStream) -> str | None:
    try:
        return str(arr.dtype.name)
    except AttributeError:
        return None


#: Dumps already parsed in the process that starts a pool: fork children find them here instead of
#: parsing every dump.json again for each batch (a 7B model's L1 dump.json runs to tens of MB).
_INHERITED: dict[tuple[str, str, str | None], tuple[Dump, Dump, Dump | None]] = {}


def _worker(args: tuple[str, str, str | None, Sequence[Job], str | None, str | None]) -> list[DumpRow]:
    g_src, t_src, b_src, jobs, precision, rank = args
    dumps = _INHERITED.get((g_src, t_src, b_src))
    if dumps is None:  # a spawned worker: parse once, then every later batch of this process reuses it
        dumps = _INHERITED[(g_src, t_src, b_src)] = (_reopen(g_src), _reopen(t_src),
                                                     _reopen(b_src) if b_src else None)
    golden, target, bench = dumps
    return [compute_row(golden, target, bench, j, precision, rank) for j in jobs]


def _reopen(source: str) -> Dump:
    """A worker's own view of one rank's dump (``source`` is that rank's dump.json or file)."""
    return open_dump_set(source).ranks[""]


def compute_rows(golden: Dump, target: Dump, bench: Dump | None, jobs: list[Job], precision: str | None,
                 rank: str | None = None, workers: int | None = None) -> list[DumpRow]:
    """All rows of one rank pair in ``jobs`` order, in parallel processes when the data is large enough to pay off."""
    from acc_agent import progress

    n_workers = workers if workers is not None else _auto_workers(target, len(jobs))
    if n_workers <= 1 or len(jobs) < 2:
        rows = []
        where = f" of rank {rank}" if rank else ""
        for done, job in enumerate(jobs):
            progress.report(done, len(jobs), f"comparing tensor pairs{where}")  # raises if cancelled
            rows.append(compute_row(golden, target, bench, job, precision, rank))
        progress.report(len(jobs), len(jobs), f"compared {len(jobs)} tensor pairs{where}")
        return rows
    key = (str(golden.source), str(target.source), str(bench.source) if bench else None)
    _INHERITED[key] = (golden, target, bench)
    try:
        return run_parallel([(*key, jobs, precision, rank)], n_workers, sizes=[_sizes(target, jobs)])
    finally:
        _INHERITED.pop(key, None)


def _sizes(target: Dump, jobs: Sequence[Job]) -> list[int]:
    """Elements of each job's target tensor as dump.json gives its shape (1 where it does not)."""
    out = []
    for j in jobs:
        shape = target.by_name[j.target_name].shape if j.target_name in target.by_name else None
        n = 1
        for d in shape or ():
            n *= d if isinstance(d, int) and d > 0 else 1
        out.append(n)
    return out


def balanced_batches(sizes: Sequence[int], parts: int) -> list[list[int]]:
    """Positions of the jobs in ``parts`` batches of near-equal total size, largest batch first.

    Greedy longest-first: each job, biggest first, joins the lightest batch. Why: one 4 M-element
    tensor among hundreds of small ones left one worker busy after the others had finished when
    batches were cut by count; dispatching the heaviest batches first leaves only small ones for
    the end. Within a batch the jobs keep their order."""
    import heapq

    heap = [(0, k) for k in range(parts)]
    batches: list[list[int]] = [[] for _ in range(parts)]
    for pos in sorted(range(len(sizes)), key=lambda i: -sizes[i]):
        load, k = heapq.heappop(heap)
        batches[k].append(pos)
        heapq.heappush(heap, (load + sizes[pos], k))
    weight = {k: sum(sizes[i] for i in b) for k, b in enumerate(batches)}
    return [sorted(batches[k]) for k in sorted(range(parts), key=lambda k: -weight[k]) if batches[k]]


def run_parallel(units: Sequence[tuple[str, str, str | None, list[Job], str | None, str | None]],
                 n_workers: int, sizes: Sequence[Sequence[int]] | None = None) -> list[DumpRow]:
    """Compute every unit's jobs in ``n_workers`` processes, in batches balanced by ``sizes`` (elements
    per job; equal when not given). Rows come back unit after unit, each in its ``jobs`` order."""
    import multiprocessing as mp
    from concurrent.futures import ProcessPoolExecutor

    batches: list[tuple[str, str, str | None, Sequence[Job], str | None, str | None]] = []
    where: list[tuple[int, list[int]]] = []  # (unit, positions of its jobs) of every batch
    for u, (g_src, t_src, b_src, jobs, precision, rank) in enumerate(units):
        parts = max(1, min(len(jobs), n_workers * 8))
        for positions in balanced_batches(sizes[u] if sizes else [1] * len(jobs), parts):
            batches.append((g_src, t_src, b_src, [jobs[i] for i in positions], precision, rank))
            where.append((u, positions))
    from acc_agent import progress

    method = "fork" if "fork" in mp.get_all_start_methods() else "spawn"
    out: list[list[DumpRow | None]] = [[None] * len(unit[3]) for unit in units]
    total = sum(len(b[3]) for b in batches)
    done = 0
    progress.report(0, total, "comparing tensor pairs")
    with ProcessPoolExecutor(max_workers=n_workers, mp_context=mp.get_context(method)) as pool:
        try:
            for (u, positions), result in zip(where, pool.map(_worker, batches), strict=True):
                for pos, row in zip(positions, result, strict=True):
                    out[u][pos] = row
                done += len(result)
                progress.report(done, total, "comparing tensor pairs")  # raises if cancelled
        except progress.Cancelled:
            pool.shutdown(wait=False, cancel_futures=True)  # batches not started are dropped
            raise
    return [row for rows in out for row in rows if row is not None]


def cores() -> int:
    """Cores this process may run on (the affinity mask, which containers and batch systems set)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return max(1, os.cpu_count() or 1)


def _auto_workers(target: Dump, n_jobs: int) -> int:
    """One worker per core for a dump big enough to pay for the processes, else 1."""
    if n_jobs < 8:
        return 1
    try:
        size = target.nbytes()
    except OSError:
        return 1
    if size < PARALLEL_MIN_BYTES:
        return 1
    return cores()
