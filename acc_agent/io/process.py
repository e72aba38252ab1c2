"""Run one external command with a deadline and bounded output: the only place acc-agent starts processes.

Why not ``subprocess.run(capture_output=True, timeout=...)``, which the callers used before:

- it keeps all output in memory: a measured command that prints a gigabyte of logs, or a
  wedged ``npu-smi`` that loops on one line, would take the checker's (or the MCP server's)
  memory with it; here each stream keeps at most ``max_bytes`` (its head or its tail) and the rest
  is read and dropped, so the child never blocks on a full pipe;
- its timeout kills the child but then waits, unbounded, for the pipes to close: a child that
  started a grandchild (a shell script, ``torchrun``, a driver helper) keeps them open, and the
  "timed out" call hangs after all. Here the child runs in a process group of its own, a timeout
  kills the whole group, and pipes still held open afterwards are abandoned after a short grace.

Commands are argument lists, never shell strings (no ``shell=True`` anywhere), and callers build
them from constants or from the user's own argument (``--command``), never from file contents.
"""

from __future__ import annotations

import contextlib
import os
import selectors
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import IO, Literal, TypedDict

__all__ = ["Finished", "run_bounded"]

#: poll(2) where there is one (as subprocess itself uses): no epoll descriptor to create per run.
_Selector = getattr(selectors, "PollSelector", selectors.SelectSelector)
#: Seconds to keep reading the pipes after the child exited (or was killed) before giving up on them.
PIPE_GRACE_S = 2.0
_READ = 65536


@dataclass(frozen=True)
class Finished:
    """What a bounded run gives back. ``returncode`` is None when it could not start or was killed."""

    returncode: int | None
    stdout: str
    stderr: str
    elapsed_ns: int
    timed_out: bool = False
    start_error: str | None = None  # why the program could not be started (not found, not executable)
    stdout_dropped: int = 0  # bytes read past max_bytes and not kept
    stderr_dropped: int = 0

    @property
    def truncated(self) -> bool:
        return bool(self.stdout_dropped or self.stderr_dropped)


class _Keep:
    """At most ``limit`` bytes of one stream: its first bytes (``head``) or its last (``tail``)."""

    def __init__(self, limit: int, keep: Literal["head", "tail"]) -> None:
        self.limit, self.keep = limit, keep
        self.data = bytearray()
        self.dropped = 0

    def add(self, chunk: bytes) -> None:
        if self.keep == "head":
            room = self.limit - len(self.data)
            self.data += chunk[:max(room, 0)]
            self.dropped += max(len(chunk) - max(room, 0), 0)
            return
        self.data += chunk
        extra = len(self.data) - self.limit
        if extra > 0:
            del self.data[:extra]
            self.dropped += extra

    def text(self) -> str:
        return self.data.decode("utf-8", errors="replace")


class _GroupArgs(TypedDict, total=False):
    """The Popen keyword that starts the child in a process group of its own (one of the two)."""

    process_group: int
    start_new_session: bool


def _own_group() -> _GroupArgs:
    """Popen arguments that put the child in a process group of its own (POSIX), so a kill reaches
    everything it started. ``process_group=0`` (Python 3.11+) keeps the fast vfork start, which
    ``start_new_session`` turns off (+1 ms a run: it would show in measure-performance timings)."""
    if os.name != "posix":
        return {}
    return {"process_group": 0} if sys.version_info >= (3, 11) else {"start_new_session": True}


def _kill_group(proc: subprocess.Popen[bytes]) -> None:
    """SIGKILL the child and everything it started in its session (POSIX), else the child alone."""
    if os.name == "posix":
        with contextlib.suppress(OSError):
            os.killpg(proc.pid, signal.SIGKILL)
    with contextlib.suppress(OSError):
        proc.kill()


def run_bounded(
    argv: Sequence[str],
    *,
    timeout_s: float,
    env: Mapping[str, str] | None = None,
    max_bytes: int = 1 << 20,
    keep: Literal["head", "tail"] = "tail",
    cwd: str | None = None,
) -> Finished:
    """Run ``argv`` (no shell) for at most ``timeout_s`` seconds, keeping ``max_bytes`` of each stream.

    ``keep="tail"`` suits error messages (the last lines say what failed), ``"head"`` a report
    that is parsed from its start (``npu-smi info``). stdin is closed, so a command waiting for
    input ends instead of hanging. Never raises for the command's own failures: a program that
    cannot start comes back with ``start_error``, a deadline passed with ``timed_out``.
    """
    if not argv:
        raise ValueError("run_bounded needs a program to run")
    start = time.perf_counter_ns()
    try:
        proc = subprocess.Popen(  # noqa: S603 - an argument list, never a shell string
            list(argv), stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            env=dict(env) if env is not None else None, cwd=cwd, close_fds=True, **_own_group(),
        )
    except (OSError, ValueError) as exc:  # ValueError: an argument with a NUL byte
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        return Finished(None, "", "", time.perf_counter_ns() - start, start_error=reason)
    out, err = _Keep(max_bytes, keep), _Keep(max_bytes, keep)
    assert proc.stdout is not None and proc.stderr is not None
    deadline = time.monotonic() + timeout_s
    try:
        if os.name == "posix":
            timed_out, exited_ns = _pump_select(proc, {proc.stdout: out, proc.stderr: err}, deadline)
        else:  # pragma: no cover - pipes cannot be select()ed on Windows
            timed_out, exited_ns = _pump_threads(proc, {proc.stdout: out, proc.stderr: err}, deadline)
    finally:
        if proc.poll() is None:
            _kill_group(proc)
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(timeout=PIPE_GRACE_S)
        for pipe in (proc.stdout, proc.stderr):
            with contextlib.suppress(OSError):
                pipe.close()
    return Finished(
        None if timed_out else proc.returncode, out.text(), err.text(), (exited_ns or time.perf_counter_ns()) - start,
        timed_out=timed_out, stdout_dropped=out.dropped, stderr_dropped=err.dropped,
    )


def _pump_select(proc: subprocess.Popen[bytes], streams: dict[IO[bytes], _Keep], deadline: float) -> tuple[bool, int | None]:
    """Read both pipes until they close and the child exits, or the deadline passes (then kill).

    Returns (timed out, perf_counter_ns when the child's exit was seen).
    """
    exited_ns: int | None = None
    grace_end: float | None = None
    with _Selector() as sel:
        for pipe in streams:
            os.set_blocking(pipe.fileno(), False)
            sel.register(pipe, selectors.EVENT_READ, pipe)  # data: the pipe, to find its buffer
        while True:
            now = time.monotonic()
            if exited_ns is None and proc.poll() is not None:
                exited_ns = time.perf_counter_ns()
                grace_end = now + PIPE_GRACE_S
            if not sel.get_map():
                break
            if exited_ns is None and now >= deadline:
                _kill_group(proc)
                with contextlib.suppress(subprocess.TimeoutExpired):
                    proc.wait(timeout=PIPE_GRACE_S)
                return True, None
            if grace_end is not None and now >= grace_end:
                break  # the child is gone; a background process of its own still holds the pipe
            limit = (grace_end if grace_end is not None else deadline) - now
            # Poll the child's exit at least every 0.1 s: pipes held open by a grandchild never close.
            for key, _ in sel.select(timeout=max(0.0, min(limit, 0.1))):
                pipe = key.data
                try:
                    chunk = os.read(key.fd, _READ)
                except BlockingIOError:
                    continue
                except OSError:
                    chunk = b""
                if chunk:
                    streams[pipe].add(chunk)
                else:
                    sel.unregister(pipe)
    if exited_ns is None:
        remaining = max(0.0, deadline - time.monotonic())
        try:
            proc.wait(timeout=remaining)
        except subprocess.TimeoutExpired:
            _kill_group(proc)
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(timeout=PIPE_GRACE_S)
            return True, None
        exited_ns = time.perf_counter_ns()
    return False, exited_ns


def _pump_threads(proc: subprocess.Popen[bytes], streams: dict[IO[bytes], _Keep],
                  deadline: float) -> tuple[bool, int | None]:  # pragma: no cover - Windows only
    """The same with one reader thread per pipe, for platforms where pipes cannot be selected."""

    def drain(pipe: IO[bytes], keep: _Keep) -> None:
        with contextlib.suppress(OSError, ValueError):
            for chunk in iter(lambda: pipe.read(_READ), b""):
                keep.add(chunk)

    threads = [threading.Thread(target=drain, args=item, daemon=True) for item in streams.items()]
    for t in threads:
        t.start()
    try:
        proc.wait(timeout=max(0.0, deadline - time.monotonic()))
    except subprocess.TimeoutExpired:
        _kill_group(proc)
        return True, None
    exited = time.perf_counter_ns()
    for t in threads:
        t.join(PIPE_GRACE_S)
    return False, exited
