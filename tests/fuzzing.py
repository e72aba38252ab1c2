"""Shared pieces of the property-based (hypothesis) suites: profiles, the outcome rule, the tally.

Profiles — chosen with the environment variable ``ACC_AGENT_FUZZ`` (default ``ci``):

- ``ci``: few examples per property, derandomized (the same inputs every run, so CI never turns
  red by luck), no example database; the whole fuzz suite then runs in about one minute on a
  2-core runner (≈ 2,200 hostile inputs).
- ``long``: 20x the examples, random, with hypothesis' example database (``.hypothesis/``, which
  hypothesis git-ignores itself), for a
  local run before a release: ``ACC_AGENT_FUZZ=long pytest tests/test_fuzz_*.py`` (≈ 15 min on
  2 cores, ≈ 44,000 inputs).
- ``dev``: 4x, random: a quick local look for new failures.

Every property states the same rule (issue 17): a hostile input gives a result or an
:class:`AccAgentError` that names the file (or argument) and says what to do — never another
exception, never a hang, and no allocation sized by what a header claims. :func:`outcome` checks
it and counts, per reader, the inputs tried and survived; set ``ACC_AGENT_FUZZ_REPORT=FILE.json``
to get those figures written at the end of the run.
"""

from __future__ import annotations

import atexit
import faulthandler
import json
import os
import tempfile
import time
import tracemalloc
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from hypothesis import HealthCheck, settings
from hypothesis.configuration import set_hypothesis_home_dir

from acc_agent.errors import AccAgentError

PROFILE = os.environ.get("ACC_AGENT_FUZZ", "ci")
_SCALE = {"ci": 1, "dev": 4, "long": 20}
_COMMON: dict[str, Any] = {
    "deadline": None,  # a shared CI runner is too noisy for per-example deadlines; SLOW_S bounds each call
    "suppress_health_check": [HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.function_scoped_fixture,
                              HealthCheck.filter_too_much],
    "print_blob": True,
}
settings.register_profile("ci", max_examples=10, derandomize=True, database=None, **_COMMON)
settings.register_profile("dev", max_examples=40, **_COMMON)
settings.register_profile("long", max_examples=200, **_COMMON)
settings.load_profile(PROFILE if PROFILE in _SCALE else "ci")
if PROFILE not in ("dev", "long"):
    # CI writes nothing into the checkout (hypothesis keeps failure patches in its home folder)
    set_hypothesis_home_dir(str(Path(tempfile.gettempdir()) / "acc-agent-hypothesis"))

#: One call on a tiny hostile input taking longer than this is a hang, not slowness.
SLOW_S = 30.0
#: A call still running after this long is stopped by the watchdog (stacks printed, run ended).
HANG_S = 300.0

T = TypeVar("T")


def examples(base: int) -> settings:
    """Settings for a property worth ``base`` examples under the ci profile (scaled by the profile)."""
    return settings(max_examples=max(1, base * _SCALE.get(PROFILE, 1)))


TRIED: Counter[str] = Counter()
SURVIVED: Counter[str] = Counter()
OUTCOMES: Counter[str] = Counter()


def outcome(reader: str, call: Callable[[], T], *, names: tuple[str, ...] = (), peak_mib: float | None = None) -> T | AccAgentError:
    """Run ``call`` under the hostile-input rule; return its result or the structured error.

    ``names``: what an error must mention (the file's name, or the argument) in its message, path
    or field. ``peak_mib``: the most Python/numpy memory the call may allocate (tracemalloc),
    which catches an allocation sized by a header's claim before the file size was checked.
    Anything but a result or an :class:`AccAgentError` propagates and fails the property.
    """
    TRIED[reader] += 1
    if peak_mib is not None:
        tracemalloc.start()
    # A real hang never returns to be timed: the watchdog then prints every thread's stack and ends
    # the run, so CI fails with the place it hung instead of waiting for its own job timeout.
    faulthandler.dump_traceback_later(HANG_S, exit=True)
    start = time.monotonic()
    try:
        result: T | AccAgentError = call()
        OUTCOMES[f"{reader}: result"] += 1
    except AccAgentError as err:
        assert err.hint, f"{reader}: error without a fix: {str(err)[:500]}"
        where = f"{err.message} {err.path or ''} {err.field or ''}"
        assert all(n in where for n in names), f"{reader}: error does not name {names}: {str(err)[:500]}"
        OUTCOMES[f"{reader}: {err.code}"] += 1
        result = err
    finally:
        faulthandler.cancel_dump_traceback_later()
        elapsed = time.monotonic() - start
        if peak_mib is not None:
            peak = tracemalloc.get_traced_memory()[1] / 2**20
            tracemalloc.stop()
    assert elapsed < SLOW_S, f"{reader}: {elapsed:.1f} s on a tiny input (a hang)"
    if peak_mib is not None:
        assert peak < peak_mib, f"{reader}: allocated {peak:.0f} MiB (limit {peak_mib:.0f} MiB)"
    SURVIVED[reader] += 1
    return result


def _report() -> None:
    target = os.environ.get("ACC_AGENT_FUZZ_REPORT")
    if not target or not TRIED:
        return
    doc = {"profile": PROFILE, "readers": {r: {"tried": TRIED[r], "survived": SURVIVED[r]} for r in sorted(TRIED)},
           "outcomes": dict(sorted(OUTCOMES.items()))}
    path = Path(target)
    path.write_text(json.dumps(doc, indent=1, sort_keys=True), encoding="utf-8")


atexit.register(_report)
