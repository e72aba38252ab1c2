"""pytest fixture: every case generated once per session, in parallel, from the shared cache.

Import the fixture into a test module (``from msprobe_cases.fixtures import msprobe_cases``); there is
deliberately no conftest.py, so only the modules that want these (slow, torch + msprobe) cases pay.
"""

from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor

import pytest

from . import CASE_NAMES, Case, default_cache_root, make_case

#: Cases with the most dump processes first, so the pool's tail is short.
_SLOW_FIRST = ("two_ranks", "fp16_gelu_bench")


def generate_all(names: tuple[str, ...] = CASE_NAMES, workers: int | None = None) -> dict[str, Case | BaseException]:
    """Make every case (threads only wait on the dump subprocesses); a failure is kept, not raised.

    Keeping failures per case lets the other cases' tests run and report the generator error
    against the case it belongs to. ``ACC_AGENT_CASE_WORKERS`` overrides the pool size (default:
    the CPU count, since each dump process is single-threaded).
    """
    workers = workers or int(os.environ.get("ACC_AGENT_CASE_WORKERS", "0")) or (os.cpu_count() or 2)
    root = default_cache_root()
    ordered = sorted(names, key=lambda n: (n not in _SLOW_FIRST, names.index(n)))
    results: dict[str, Case | BaseException] = {}
    with ThreadPoolExecutor(max_workers=workers) as pool:
        futures = {name: pool.submit(make_case, name, root) for name in ordered}
        for name in names:
            try:
                results[name] = futures[name].result()
            except Exception as exc:  # noqa: BLE001 - reported by the case's own test
                results[name] = exc
    return results


@pytest.fixture(scope="session")
def msprobe_cases() -> dict[str, Case | BaseException]:
    """All cases by name (a generation error in place of a case that could not be made)."""
    return generate_all()
