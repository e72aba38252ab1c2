"""``compare-dumps --scheduler``: the per-rank (and per-batch) tasks of ``_rank_tasks`` on Dask.

Needs the optional ``[distributed]`` extra (``dask`` and ``distributed``), imported only here.
``ADDRESS`` is a running scheduler (``tcp://host:8786``): every worker must be able to read the
dump paths exactly as given (a shared file system, or the same mount on every machine) and have
acc-agent installed. ``local`` starts a ``LocalCluster`` on this machine, one single-threaded
worker process per core, for the run only. Tasks return only the small per-rank outcomes; the
rows of a split rank go from the batch tasks to the rank's last task on the workers.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from typing import TYPE_CHECKING, ParamSpec, TypeVar

from acc_agent.errors import AccAgentError
from acc_agent.tools._dump_rows import cores
from acc_agent.tools._rank_tasks import Backend, RankTask, TaskFuture, rank_finish

if TYPE_CHECKING:
    from distributed import Client

P = ParamSpec("P")
R = TypeVar("R")

#: Seconds to wait for a remote scheduler to answer before giving up with a structured error.
CONNECT_TIMEOUT_S = 30


class DaskBackend(Backend):
    """Tasks as Dask futures; futures passed as task arguments are resolved on the workers."""

    passes_futures = True

    def __init__(self, client: Client) -> None:
        self.client = client
        self.slots = max(1, sum(client.nthreads().values()))

    def submit(self, fn: Callable[P, R], *args: P.args, **kwargs: P.kwargs) -> TaskFuture:
        # pure=False: two ranks with equal arguments never exist, and hashing the arguments would
        # walk every job of a split rank for nothing
        return self.client.submit(fn, *args, pure=False, **kwargs)

    def submit_finish(self, task: RankTask, parts: int, batches: list[TaskFuture]) -> TaskFuture:
        # the batch futures become their rows on the worker that runs rank_finish
        return self.client.submit(rank_finish, task, parts, *batches, pure=False)

    def wait_first(self, futures: set[TaskFuture]) -> set[TaskFuture]:
        from distributed import wait

        return set(wait(list(futures), return_when="FIRST_COMPLETED").done)

    def cancel(self, futures: set[TaskFuture]) -> None:
        with suppress(Exception):
            self.client.cancel(list(futures))


def _missing() -> AccAgentError:
    return AccAgentError(
        "missing_dependency",
        "--scheduler needs Dask (dask and distributed), which is not installed",
        hint="pip install 'acc-agent[distributed]', or leave out --scheduler to use the local worker processes.",
    )


@contextmanager
def dask_backend(address: str, workers: int | None = None) -> Iterator[DaskBackend]:
    """A client on ``address`` (or on a LocalCluster for ``local``), closed after the run."""
    try:
        from distributed import Client, LocalCluster
    except ImportError:
        raise _missing() from None
    cluster = None
    try:
        if address == "local":
            cluster = LocalCluster(n_workers=workers or cores(), threads_per_worker=1, processes=True,
                                   dashboard_address=None)
            client = Client(cluster)
        else:
            client = Client(address, timeout=CONNECT_TIMEOUT_S)
    except (OSError, TimeoutError, ValueError) as exc:  # ValueError: an address that is not one
        if cluster is not None:
            cluster.close()
        raise AccAgentError("scheduler_unreachable", f"cannot reach the Dask scheduler at {address}: {exc}",
                            hint="Start it with `dask scheduler` (and workers with `dask worker ADDRESS`), "
                                 "or pass --scheduler local.") from None
    try:
        yield DaskBackend(client)
    finally:
        client.close()
        if cluster is not None:
            cluster.close()
