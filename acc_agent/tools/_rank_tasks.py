"""The per-rank work of ``compare_dumps``, and the drivers that run it in this process, in a local
process pool, or as Dask tasks.

One rank is one unit: its worker parses the rank's dump.json files, pairs the tensors, computes
every row (tensor metrics, statistics rows), diagnoses the rank, and hands back a
:class:`RankOutcome` — rows, the rank's diagnosis and a few names, never a tensor or a parsed
dump. The process that gave out the work only merges outcomes as they arrive and decides across
ranks (``combine_ranks``), so it stays small however many ranks there are, and with Dask the
dumps are read on the machines that run the tasks.

A rank too big for one worker (or with cores left idle because ranks are fewer than workers) is
split: its first task returns the list of pairs instead (:class:`RankSplit`), batches of pairs are
computed as separate tasks, and a last task diagnoses the rank from the batches' rows. Rows always
come back in the same order (pairs in pairing order, ranks in key order), so every way of running
gives identical results.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import FIRST_COMPLETED, Future
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, ParamSpec, Protocol, TypedDict, TypeVar

from acc_agent.numerics.blas_threads import one_blas_thread
from acc_agent.tools import spec as _spec  # noqa: F401 - a worker process (Dask) phrases hints as the CLI does
from acc_agent.tools._dump_rows import PARALLEL_MIN_BYTES, Job, compute_row

if TYPE_CHECKING:
    from acc_agent.io.dumps import Dump
    from acc_agent.io.pairing import Pair
    from acc_agent.models.compare import DumpRow
    from acc_agent.models.diagnosis import Diagnosis, FirstDivergence
    from acc_agent.tools._stat_rows import ScalarRow

P = ParamSpec("P")
R = TypeVar("R")
T = TypeVar("T")

#: A rank with more tensor data than this is split into batches even when every core has a rank:
#: one 300 GB rank must not leave the other workers idle at the end of the run.
HUGE_RANK_BYTES = 8 << 30
#: Tensor data per batch of a split rank (a few minutes of work for one worker).
BATCH_BYTES = 2 << 30


@dataclass(frozen=True)
class DumpInfo:
    """What the merge step needs of a dump: its file, kind, size and dump.json header (no entries)."""

    source: Path
    kind: str
    n_entries: int
    meta: dict[str, object]


def dump_info(d: Dump) -> DumpInfo:
    return DumpInfo(Path(d.source), d.kind, len(d.entries), dict(d.meta))


@dataclass(frozen=True)
class RankTask:
    """One rank pair to compare: where its dumps are and how to compare them.

    ``golden``/``target``/``bench`` are what :func:`acc_agent.io.dumps.rank_sources` gives (the
    rank's dump.json, or the dump path for a single dump); ``multi``: several ranks are compared,
    so names and notes carry the rank."""

    key: str
    golden: str
    target: str
    bench: str | None
    mapping: dict[str, str] | None
    precision: str | None
    pair_by_order: bool
    multi: bool


class FusedRegion(TypedDict):
    """A fused API paired with the run of decomposed APIs it replaces, as the diagnosis's details list it.

    ``fused_side`` says which run holds the fused call: ``target`` (``target`` is it, ``golden`` the
    decomposed golden run) or ``golden`` (``golden`` is it, ``target_run`` the decomposed target run)."""

    rank: str | None
    fused_side: str
    target: str
    target_run: list[str]
    golden: list[str]
    note: str


@dataclass
class RankPlan:
    """One rank's pairing: the tensor pairs to compute and what goes into the merged result."""

    jobs: list[Job]
    stat_pairs: list[Pair]
    with_scalars: bool
    notes: list[str]
    regions: list[FusedRegion]
    unmatched_golden: list[str]
    unmatched_target: list[str]


@dataclass
class RankOutcome:
    """Everything the merge step keeps of one rank (small: rows and names, no tensors)."""

    key: str
    rows: list[DumpRow]
    scalar_rows: list[ScalarRow]
    first_divergence: FirstDivergence | None
    diagnosis: Diagnosis
    notes: list[str]
    regions: list[FusedRegion]
    unmatched_golden: list[str]
    unmatched_target: list[str]
    golden: DumpInfo
    target: DumpInfo
    bench: DumpInfo | None


@dataclass
class RankSplit:
    """A rank too big for one task: its pairs, for batches computed as separate tasks."""

    jobs: list[Job]
    nbytes: int


# ------------------------------------------------------------------------------------------ one rank


def plan_rank(g: Dump, t: Dump, b: Dump | None, key: str, multi: bool, mapping: dict[str, str] | None,
              pair_by_order: bool) -> RankPlan:
    """Pair one rank's tensors; pairs with tensor files on both sides become jobs, the rest statistics pairs."""
    from acc_agent.io.pairing import pair_entries

    pairing = pair_entries(g, t, mapping, by_order=pair_by_order)
    prefix_note = f"{key}: " if key and multi else ""
    prefix = f"{key}/" if multi else ""
    bench_names = set(b.by_name) if b is not None else set()
    g_by, t_by = g.by_name, t.by_name
    tensor_pairs: list[Pair] = []
    stat_pairs: list[Pair] = []
    for p in pairing.pairs:
        (tensor_pairs if t_by[p.target_name].has_data and g_by[p.golden_name].has_data else stat_pairs).append(p)
    jobs = [Job(p.golden_name, p.target_name, p.method, t.entry(p.target_name).index,
                p.golden_name if p.golden_name in bench_names else
                (p.target_name if p.target_name in bench_names else None))
            for p in tensor_pairs]
    return RankPlan(
        jobs=jobs, stat_pairs=stat_pairs, with_scalars=not tensor_pairs,
        notes=[prefix_note + n for n in pairing.notes],
        regions=[FusedRegion(rank=key or None, fused_side=r.fused_side, target=r.target_key,
                             target_run=list(r.target_keys or (r.target_key,)), golden=list(r.golden_keys),
                             note=r.note)
                 for r in pairing.regions],
        unmatched_golden=[prefix + n for n in pairing.unmatched_golden],
        unmatched_target=[prefix + n for n in pairing.unmatched_target],
    )


def finish_rank(g: Dump, t: Dump, b: Dump | None, key: str, plan: RankPlan, rows: list[DumpRow],
                precision: str | None,
                before_diagnosis: Callable[[list[DumpRow], list[ScalarRow]], None] | None = None) -> RankOutcome:
    """Add the statistics/md5 rows to the tensor rows (in execution order) and diagnose the rank.

    Non-tensor arguments are compared (msprobe-style) only where the rank has no tensor pair at
    all: that is a statistics comparison, which msprobe judges with them. ``before_diagnosis``
    sees the rows and scalar rows once they are complete, before the diagnosis refines statuses."""
    from acc_agent.numerics import diagnosis as diagnosis_mod

    scalar_rows: list[ScalarRow] = []
    if plan.stat_pairs or plan.with_scalars:
        from acc_agent.tools._stat_rows import statistics_rows

        stat = statistics_rows(g, t, plan.stat_pairs, key or None, scalars=plan.with_scalars)
        plan.stat_pairs = []  # ~300k pairs on a default dump: their memory goes to the diagnosis's graph
        scalar_rows = stat.scalar_rows
        if stat.rows:
            if rows:
                rows = rows + stat.rows
                rows.sort(key=lambda r: (r.rank or "", r.index))
            else:
                rows = stat.rows
    if before_diagnosis is not None:
        before_diagnosis(rows, scalar_rows)
    fd, diag = diagnosis_mod.diagnose(rows, g, t, b, precision)
    if plan.regions:
        from acc_agent.numerics.diagnosis.regions import region_context

        region_context(fd, diag, plan.regions, g, t)
    return RankOutcome(key, rows, scalar_rows, fd, diag, plan.notes, plan.regions, plan.unmatched_golden,
                       plan.unmatched_target, dump_info(g), dump_info(t), dump_info(b) if b is not None else None)


_OPEN: dict[tuple[str, str, str | None], tuple[Dump, Dump, Dump | None]] = {}


def open_task(task: RankTask) -> tuple[Dump, Dump, Dump | None]:
    """The task's three dumps, parsed once per worker process (a split rank's batches reuse them)."""
    from acc_agent.io.dumps import DumpSet, open_dump_set

    key = (task.golden, task.target, task.bench)
    hit = _OPEN.get(key)
    if hit is not None:
        return hit
    g = open_dump_set(task.golden).ranks[""]
    t = open_dump_set(task.target, like=DumpSet(Path(task.golden), {"": g})).ranks[""]
    b = open_dump_set(task.bench).ranks[""] if task.bench else None
    _OPEN.clear()  # one rank at a time per worker: a parsed statistics dump.json can be 1 GB
    _OPEN[key] = (g, t, b)
    return g, t, b


def _rows(g: Dump, t: Dump, b: Dump | None, jobs: Sequence[Job], task: RankTask) -> list[DumpRow]:
    return [compute_row(g, t, b, j, task.precision, task.key or None) for j in jobs]


def rank_start(task: RankTask, split_bytes: int | None) -> RankOutcome | RankSplit:
    """A worker's whole job for one rank, or the rank's pairs when it has more than ``split_bytes`` of data."""
    from acc_agent.io.dumps import gc_paused

    with one_blas_thread(), gc_paused():  # millions of small objects per statistics rank (see compare_dumps)
        return _rank_start(task, split_bytes)


def _rank_start(task: RankTask, split_bytes: int | None) -> RankOutcome | RankSplit:
    g, t, b = open_task(task)
    plan = plan_rank(g, t, b, task.key, task.multi, task.mapping, task.pair_by_order)
    if split_bytes is not None and len(plan.jobs) >= 2:
        try:
            nbytes = g.nbytes() + t.nbytes() + (b.nbytes() if b is not None else 0)
        except OSError:
            nbytes = 0
        if nbytes > split_bytes:
            return RankSplit(plan.jobs, nbytes)
    return finish_rank(g, t, b, task.key, plan, _rows(g, t, b, plan.jobs, task), task.precision)


def rank_rows(task: RankTask, jobs: Sequence[Job]) -> list[DumpRow]:
    """One batch of a split rank's rows."""
    with one_blas_thread():
        g, t, b = open_task(task)
        return _rows(g, t, b, jobs, task)


def rank_finish(task: RankTask, parts: int, *batches: list[DumpRow]) -> RankOutcome:
    """The last task of a split rank: its batches' rows back in pairing order, statistics rows, diagnosis."""
    from acc_agent.io.dumps import gc_paused

    with one_blas_thread(), gc_paused():
        g, t, b = open_task(task)
        plan = plan_rank(g, t, b, task.key, task.multi, task.mapping, task.pair_by_order)
        return finish_rank(g, t, b, task.key, plan, interleave(list(batches), parts), task.precision)


def describe(source: str) -> DumpInfo:
    """Only the evidence line of a dump no task compares (a rank without partner, an unused bench rank)."""
    from acc_agent.io.dumps import open_dump_set

    return dump_info(open_dump_set(source).ranks[""])


def split_jobs(jobs: Sequence[Job], parts: int) -> list[list[Job]]:
    """Interleaved batches (big and small tensors spread evenly); :func:`interleave` undoes it."""
    return [list(jobs[k::parts]) for k in range(parts)]


def interleave(batches: list[list[T]], parts: int) -> list[T]:
    """The inverse of :func:`split_jobs`: item ``i`` of the original list was item ``i // parts`` of batch ``i % parts``."""
    total = sum(len(x) for x in batches)
    return [batches[i % parts][i // parts] for i in range(total)]


# ------------------------------------------------------------------------------------------ drivers


class TaskFuture(Protocol):
    """What the drivers need of a submitted task (a concurrent.futures or a Dask future): its result.

    The result is whatever the task's function returned; :func:`run_ranks` knows by the kind of
    task what that is and checks it."""

    def result(self) -> object: ...


class Backend:
    """Where tasks run. ``submit`` gives a future; ``wait_first`` waits until one of them is done.

    ``passes_futures``: a future can be an argument of another task and is resolved where that
    task runs (Dask), so a split rank's rows go from worker to worker, not through here (see
    :meth:`submit_finish`)."""

    passes_futures = False
    slots = 1

    def submit(self, fn: Callable[P, R], *args: P.args, **kwargs: P.kwargs) -> TaskFuture:
        raise NotImplementedError

    def submit_finish(self, task: RankTask, parts: int, batches: list[TaskFuture]) -> TaskFuture:
        """:func:`rank_finish` on a split rank's batch futures, resolved where it runs (``passes_futures`` only)."""
        raise NotImplementedError

    def wait_first(self, futures: set[TaskFuture]) -> set[TaskFuture]:
        raise NotImplementedError

    def cancel(self, futures: set[TaskFuture]) -> None:
        """Drop work not started yet (on cancellation)."""


class InlineBackend(Backend):
    """Runs each task at once in this process (one worker: no pool to start)."""

    def submit(self, fn: Callable[P, R], *args: P.args, **kwargs: P.kwargs) -> TaskFuture:
        fut: Future[R] = Future()
        fut.set_result(fn(*args, **kwargs))
        return fut

    def wait_first(self, futures: set[TaskFuture]) -> set[TaskFuture]:
        return set(futures)


class PoolBackend(Backend):
    """A local process pool, one worker per core (fork where the platform has it: no re-import)."""

    def __init__(self, workers: int) -> None:
        import multiprocessing as mp
        from concurrent.futures import ProcessPoolExecutor

        method = "fork" if "fork" in mp.get_all_start_methods() else "spawn"
        self.slots = workers
        self.pool = ProcessPoolExecutor(max_workers=workers, mp_context=mp.get_context(method))

    def submit(self, fn: Callable[P, R], *args: P.args, **kwargs: P.kwargs) -> TaskFuture:
        return self.pool.submit(fn, *args, **kwargs)

    def wait_first(self, futures: set[TaskFuture]) -> set[TaskFuture]:
        from concurrent.futures import wait

        return set(wait([f for f in futures if isinstance(f, Future)], return_when=FIRST_COMPLETED).done)

    def cancel(self, futures: set[TaskFuture]) -> None:
        self.pool.shutdown(wait=False, cancel_futures=True)

    def close(self) -> None:
        self.pool.shutdown(wait=True)


@contextmanager
def local_backend(workers: int) -> Iterator[Backend]:
    if workers <= 1:
        yield InlineBackend()
        return
    backend = PoolBackend(workers)
    try:
        yield backend
    finally:
        backend.close()


@dataclass
class _Split:
    """A split rank waiting for its batches: their rows by batch number."""

    task: RankTask
    parts: int
    batches: list[list[DumpRow]] = field(default_factory=list)
    left: int = 0


@dataclass(frozen=True)
class _Start:
    task: RankTask


@dataclass(frozen=True)
class _Describe:
    source: str


@dataclass(frozen=True)
class _Batch:
    state: _Split
    index: int


@dataclass(frozen=True)
class _Finish:
    task: RankTask


#: What a pending future is: a rank's first task, a dump to describe, a batch of a split rank, its last task.
_Pending = _Start | _Describe | _Batch | _Finish


def run_ranks(tasks: Sequence[RankTask], extra: Sequence[str], backend: Backend,
              on_outcome: Callable[[RankOutcome], None]) -> dict[str, DumpInfo]:
    """Run every rank task on ``backend``, calling ``on_outcome`` as each rank finishes (in finishing
    order), and describe the ``extra`` dumps; returns the descriptions by source."""
    from acc_agent import progress

    slots = max(1, backend.slots)
    # Idle cores (fewer ranks than workers): split any rank big enough to be worth a process each.
    split_bytes: int | None = None
    if slots > 1:
        split_bytes = PARALLEL_MIN_BYTES if len(tasks) < slots else HUGE_RANK_BYTES
    pending: dict[TaskFuture, _Pending] = {}
    for task in tasks:
        pending[backend.submit(rank_start, task, split_bytes)] = _Start(task)
    for source in extra:
        pending[backend.submit(describe, source)] = _Describe(source)
    described: dict[str, DumpInfo] = {}
    done_ranks = 0
    progress.report(0, len(tasks), "comparing ranks")
    try:
        while pending:
            for fut in backend.wait_first(set(pending)):
                job = pending.pop(fut)
                result = fut.result()  # a worker's exception is raised here
                if isinstance(job, _Describe) and isinstance(result, DumpInfo):
                    described[job.source] = result
                elif isinstance(job, _Start) and isinstance(result, RankSplit):
                    _submit_split(backend, job.task, result, slots, len(tasks), pending)
                elif isinstance(job, _Batch) and isinstance(result, list):
                    state = job.state
                    state.batches[job.index] = result
                    state.left -= 1
                    if state.left == 0:
                        pending[backend.submit(rank_finish, state.task, state.parts, *state.batches)] = \
                            _Finish(state.task)
                elif isinstance(result, RankOutcome):
                    on_outcome(result)
                    done_ranks += 1
                    progress.report(done_ranks, len(tasks), f"compared rank {result.key or '(single)'}")
                else:
                    raise TypeError(f"a {type(job).__name__[1:].lower()} task returned a {type(result).__name__}")
    except BaseException:
        backend.cancel(set(pending))
        raise
    return described


def _submit_split(backend: Backend, task: RankTask, split: RankSplit, slots: int, n_ranks: int,
                  pending: dict[TaskFuture, _Pending]) -> None:
    """Batches of a split rank: enough to fill the idle workers, and none above BATCH_BYTES."""
    parts = max(math.ceil(split.nbytes / BATCH_BYTES), slots // n_ranks if n_ranks < slots else 1, 2)
    parts = min(parts, len(split.jobs))
    batches = split_jobs(split.jobs, parts)
    futures = [backend.submit(rank_rows, task, batch) for batch in batches]
    if backend.passes_futures:
        pending[backend.submit_finish(task, parts, futures)] = _Finish(task)
        return
    state = _Split(task, parts, [[] for _ in range(parts)], parts)
    for index, fut in enumerate(futures):
        pending[fut] = _Batch(state, index)
