"""Progress and cancellation for long tool runs, without the tools knowing who listens.

Why a context variable: a dump comparison or a timing run can take minutes, and an agent host
shows progress (and lets its user cancel) only if the tool reports it. Tools must not import the
MCP SDK, so a front end installs a :class:`Reporter` around the call (:func:`reporting`) and the
tools call :func:`report` between units of work. Without a reporter (CLI, scripts, tests)
``report`` only checks nothing and returns: it costs a context-variable lookup.

Cancellation is cooperative: the front end's ``cancelled`` callable turns true, and the next
:func:`report` (or :func:`check_cancelled`) raises :class:`Cancelled`, which unwinds the tool the
way any exception does (open files close, worker pools shut down).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar

Send = Callable[[float, float | None, str | None], None]

#: Fewest seconds between two notifications; the first and the last of a stage always go out.
MIN_INTERVAL_S = 0.2


class Cancelled(Exception):
    """The caller cancelled the running tool; raised from :func:`report` at the next checkpoint."""


class Reporter:
    """Turns per-stage ``(done, total)`` reports into one rising progress value, throttled.

    A tool may report several stages one after another (one rank's tensors, then the next);
    progress values must never go down, so a stage that starts again from a lower ``done`` is
    added after the previous stages.
    """

    def __init__(self, send: Send, cancelled: Callable[[], bool] | None = None,
                 min_interval_s: float = MIN_INTERVAL_S) -> None:
        self._send = send
        self._cancelled = cancelled or (lambda: False)
        self._interval = min_interval_s
        self._offset = 0.0
        self._last_done = 0.0
        self._last_total: float | None = None
        self._last_sent = float("-inf")
        self.sent = 0

    def cancelled(self) -> bool:
        return self._cancelled()

    def report(self, done: float, total: float | None, message: str | None) -> None:
        if done < self._last_done:  # a new stage: continue after the previous ones
            self._offset += self._last_total if self._last_total is not None else self._last_done
        self._last_done, self._last_total = done, total
        now = time.monotonic()
        finished = total is not None and done >= total
        if not finished and now - self._last_sent < self._interval:
            return
        self._last_sent = now
        overall_total = None if total is None else self._offset + total
        try:
            self._send(self._offset + done, overall_total, message)
            self.sent += 1
        except Exception:  # noqa: BLE001 - a lost notification must not fail the tool
            pass


_REPORTER: ContextVar[Reporter | None] = ContextVar("acc_agent_progress", default=None)


@contextmanager
def reporting(reporter: Reporter) -> Iterator[Reporter]:
    """Route :func:`report` calls made inside the block to ``reporter``."""
    token = _REPORTER.set(reporter)
    try:
        yield reporter
    finally:
        _REPORTER.reset(token)


def check_cancelled() -> None:
    """Raise :class:`Cancelled` if the caller gave up on this run."""
    reporter = _REPORTER.get()
    if reporter is not None and reporter.cancelled():
        raise Cancelled("cancelled by the caller")


def report(done: float, total: float | None = None, message: str | None = None) -> None:
    """Tell the listening front end how far the tool is; raises :class:`Cancelled` when cancelled."""
    reporter = _REPORTER.get()
    if reporter is None:
        return
    if reporter.cancelled():
        raise Cancelled("cancelled by the caller")
    reporter.report(done, total, message)
