"""One BLAS thread while ``compare_dumps`` runs: its parallelism is one process per core already.

Why: numpy's OpenBLAS starts a thread per core and, after any call long enough to be split (a
``np.dot`` over a whole tensor in the diagnosis), its threads spin waiting for more work. With a
worker process per core that oversubscribes the machine: on the 2-core VM a 64-rank comparison
spent ~15 % more CPU (the same work, ``OPENBLAS_NUM_THREADS=1``: 3.0 s against 2.5 s). The
environment variable only acts before numpy loads, so the loaded library's own
``openblas_set_num_threads`` is called (found in the process's mapped libraries, as threadpoolctl
does); where there is none (another BLAS, another platform) nothing changes. The count is
restored afterwards: other tools (``measure_performance`` timing a user's code) keep theirs.
"""

from __future__ import annotations

import ctypes
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress

_PREFIXES = ("scipy_openblas_", "openblas_")
_SUFFIXES = ("64_", "")
#: An OpenBLAS's ``set_num_threads(n)`` and ``get_num_threads()``, as ctypes foreign functions.
ThreadControl = tuple[Callable[[int], object], Callable[[], int]]
_FOUND: list[ThreadControl] | None = None
_CONTROLLED: bool | None = None


def _openblas() -> list[ThreadControl]:
    """(set, get) function pairs of every OpenBLAS mapped into this process."""
    global _FOUND
    if _FOUND is not None:
        return _FOUND
    found: list[ThreadControl] = []
    try:
        with open("/proc/self/maps", encoding="utf-8", errors="replace") as fh:
            paths = sorted({line.split()[-1] for line in fh if "openblas" in line.lower() and "/" in line})
    except OSError:
        paths = []
    for path in paths:
        try:
            lib = ctypes.CDLL(path)
        except OSError:
            continue
        for prefix in _PREFIXES:
            for suffix in _SUFFIXES:
                setter = getattr(lib, f"{prefix}set_num_threads{suffix}", None)
                getter = getattr(lib, f"{prefix}get_num_threads{suffix}", None)
                if setter is not None and getter is not None:
                    setter.argtypes, getter.restype = [ctypes.c_int], ctypes.c_int
                    found.append((setter, getter))
                    break
            else:
                continue
            break
    _FOUND = found
    return found


def numpy_blas_controlled() -> bool:
    """Whether numpy's own BLAS is an OpenBLAS whose thread count this module sets.

    Why it matters: with one thread a BLAS sum is one fixed routine, so the metrics can hand it a
    whole chunk and still get the same bits in every process; without that control they keep to
    slices short enough that OpenBLAS never splits them (``numerics/metrics.py`` ``DOT_SLICE``).
    """
    global _CONTROLLED
    if _CONTROLLED is None:
        try:
            import numpy as np

            blas = str(np.__config__.CONFIG["Build Dependencies"]["blas"]["name"])
        except Exception:  # noqa: BLE001 - an unknown build: assume no control
            blas = ""
        _CONTROLLED = "openblas" in blas.lower() and bool(_openblas())
    return _CONTROLLED


def limit_blas_threads(n: int = 1) -> None:
    """Set every loaded OpenBLAS to ``n`` threads (worker processes: for the rest of their life)."""
    with suppress(Exception):  # a hint for speed: never a reason to fail the comparison
        for setter, _ in _openblas():
            setter(n)


@contextmanager
def one_blas_thread() -> Iterator[None]:
    """One BLAS thread inside the block, the previous counts after it."""
    before: list[int] = []
    with suppress(Exception):
        before = [int(getter()) for _, getter in _openblas()]
    if before and all(n == 1 for n in before):  # already one (a worker, or nested): nothing to set
        yield
        return
    limit_blas_threads(1)
    try:
        yield
    finally:
        with suppress(Exception):
            for (setter, _), n in zip(_openblas(), before, strict=False):
                setter(n)
