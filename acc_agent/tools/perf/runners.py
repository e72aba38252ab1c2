"""How a repeatable measurement is driven: the user's callable in-process, or the user's command per run.

Why these live together: both run the user's own code warm-up first, then timed, with progress
reported between iterations (never inside a timed interval), a time limit that stops a hung target,
and a failure of the user's code turned into an error row for that batch size rather than a crash.
"""

from __future__ import annotations

import contextlib
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Protocol, runtime_checkable

from acc_agent import frontend, progress
from acc_agent.errors import AccAgentError
from acc_agent.models.performance import BatchResult, MeasurePerformanceInput
from acc_agent.tools.perf.measurement import batch_statistics, error_row

#: Iterations between timeout checks of an in-process callable.
CHUNK = 16
#: Output kept per stream of a measured command (its tail, for the error message); the rest is dropped.
OUTPUT_TAIL_BYTES = 64 << 10

#: What the timed callable (and its setup hook) is: the user's function, called with one argument.
UserFunction = Callable[[object], object]


@runtime_checkable
class DeviceMemory(Protocol):
    """The peak-memory counters ``torch.cuda`` and ``torch.npu`` share (the only part of them used here)."""

    def reset_peak_memory_stats(self) -> None: ...

    def max_memory_allocated(self) -> int: ...


class CallTimeout(Exception):
    """Raised inside a measured callable when --timeout-s is exceeded."""


def resolve_callable(spec: str, what: str) -> UserFunction:
    """Import MODULE:FUNC named by the user on the command line (this runs the user's own code)."""
    import importlib

    module_name, sep, attr = spec.partition(":")
    if not sep or not module_name or not attr:
        raise AccAgentError("invalid_callable", f"{frontend.option(what)} \"{spec}\" is not MODULE:FUNC",
                            hint=f"Example: {frontend.option(what, 'mypkg.infer:run')}", field=what)
    cwd = str(Path.cwd())
    added = cwd not in sys.path
    if added:
        sys.path.insert(0, cwd)
    try:
        module = importlib.import_module(module_name)
    except Exception as exc:  # noqa: BLE001 - any import failure of user code is bad input
        raise AccAgentError(
            "callable_not_found",
            f"cannot import module {module_name} for {frontend.option(what)} {spec}: {type(exc).__name__}: {exc}",
            hint="Run from the project directory or add it to PYTHONPATH.",
        ) from None
    finally:
        if added:
            sys.path.remove(cwd)
    obj: object = module
    for part in attr.split("."):
        obj = getattr(obj, part, None)
        if obj is None:
            raise AccAgentError("callable_not_found", f"{module_name} has no attribute {attr} ({frontend.option(what)} {spec})",
                                hint=f"Check the function name in {module_name}.")
    if not callable(obj):
        raise AccAgentError("invalid_callable", f"{spec} is not callable", hint="Point at a function.")
    return obj


def check_takes_one_argument(func: UserFunction, spec: str, what: str) -> None:
    """The timed callable gets one argument; a function that takes none is bad input, named as such, not a
    TypeError inside every timed call."""
    import inspect

    try:
        inspect.signature(func).bind(None)
    except TypeError:
        raise AccAgentError(
            "invalid_callable", f"{frontend.option('callable')} {spec} takes no argument, but it is called with {what}",
            hint="Give it one parameter (def run(batch_size): ...), or wrap it: def run(_): return my_func().",
            field="callable") from None
    except ValueError:
        return  # a builtin without a readable signature: let the call say what is wrong


def describe_failure(exc: BaseException) -> str:
    """The exception and the innermost frame it came from: where in the user's code to look."""
    tb = exc.__traceback__
    where = ""
    while tb is not None:
        where = f" (at {Path(tb.tb_frame.f_code.co_filename).name}:{tb.tb_lineno} in {tb.tb_frame.f_code.co_name})"
        tb = tb.tb_next
    return f"{type(exc).__name__}: {exc}{where}"[:600]


def peak_host_mb() -> float | None:
    """Peak resident memory of this process (ru_maxrss is KiB on Linux, bytes on macOS); None off Unix."""
    try:
        import resource
    except ImportError:
        return None
    kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return round(kb / 1024.0 if sys.platform != "darwin" else kb / 1024.0 / 1024.0, 1)


def device_memory(kind: str) -> DeviceMemory | None:
    """``torch.cuda`` or ``torch.npu`` when the user's code imported torch; torch is never imported here."""
    torch = sys.modules.get("torch")
    if torch is None or kind not in ("cuda", "npu"):
        return None
    module = getattr(torch, kind, None)  # the device namespace named at run time
    return module if isinstance(module, DeviceMemory) else None


def ticker(p: MeasurePerformanceInput, k: int, n_batches: int, bs: int) -> Callable[[int], None]:
    """Progress for batch ``k`` of ``n_batches``: one unit per warm-up or timed iteration.

    Reported between iterations (never inside a timed interval); raises when the caller cancelled.
    """
    per = p.warmup + p.iterations

    def tick(done: int) -> None:
        progress.report(k * per + done, n_batches * per, f"batch size {bs}: {done} of {per} iterations")

    return tick


@contextlib.contextmanager
def alarm(seconds: float) -> Iterator[None]:
    """Interrupt a hung callable after ``seconds`` (SIGALRM, main thread on Unix). Elsewhere (MCP worker
    threads) the chunked loop of :func:`measure_one` still stops a slow callable between calls."""
    import signal
    import threading

    if not hasattr(signal, "setitimer") or threading.current_thread() is not threading.main_thread():
        yield
        return

    def fire(_signum: int, _frame: object) -> None:
        raise CallTimeout(f"{frontend.option('timeout_s', f'{seconds:g}')} s exceeded (the callable was interrupted)")

    previous = signal.signal(signal.SIGALRM, fire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def measure_callable(p: MeasurePerformanceInput, batches: list[int]) -> tuple[list[BatchResult], str]:
    """Every batch size of ``--callable`` timed in-process; the rows and how the device was synchronised."""
    assert p.callable is not None
    func = resolve_callable(p.callable, "callable")
    setup = resolve_callable(p.setup, "setup") if p.setup else None
    check_takes_one_argument(func, p.callable, "the setup hook's return value" if setup else "the batch size")
    rows: list[BatchResult] = []
    sync_text = "none"
    for k, bs in enumerate(batches):
        tick = ticker(p, k, len(batches), bs)
        try:
            with alarm(p.timeout_s):
                row, sync_text = measure_one(p, bs, func, setup, tick)
            rows.append(row)
        except progress.Cancelled:
            raise
        except Exception as exc:  # noqa: BLE001 - the user's callable failing is a result, not a crash
            rows.append(error_row(bs, p, f"batch {bs}: {describe_failure(exc)}"))
    return rows, sync_text


def measure_one(
    p: MeasurePerformanceInput, bs: int, func: UserFunction, setup: UserFunction | None,
    tick: Callable[[int], None] | None = None,
) -> tuple[BatchResult, str]:
    """Setup, warm-up, then timed iterations for one batch size; raises on any failure of user code."""
    from acc_agent.timing import StageTimer, device_sync, run_iterations, torch_device_in_use

    payload = setup(bs) if setup is not None else bs

    def call(payload: object = payload) -> object:
        return func(payload)

    tick = tick or (lambda _done: None)
    tick(0)
    sync, _ = device_sync(p.sync)
    run_iterations(call, p.warmup, 0, sync=sync)
    tick(p.warmup)
    sync, sync_text = device_sync(p.sync)  # the warm-up may have initialised the device
    kind = p.sync if p.sync in ("cuda", "npu") else (torch_device_in_use() or "") if p.sync == "auto" else ""
    dev = device_memory(kind)
    if dev is not None:
        dev.reset_peak_memory_stats()
    timer = StageTimer(sync=sync)
    samples: list[int] = []
    start = time.perf_counter()
    while len(samples) < p.iterations:
        n = min(CHUNK, p.iterations - len(samples))
        samples += run_iterations(call, 0, n, sync=sync, timer=timer)
        tick(p.warmup + len(samples))
        if time.perf_counter() - start > p.timeout_s and len(samples) < p.iterations:
            raise CallTimeout(f"stopped after {len(samples)} of {p.iterations} iterations: "
                              f"{frontend.option('timeout_s', f'{p.timeout_s:g}')} s exceeded")
    row = batch_statistics(bs, samples, p, p.warmup, timer.durations)
    row.peak_host_memory_mb = peak_host_mb()
    if dev is not None:
        row.device_max_allocated_mb = round(dev.max_memory_allocated() / 2**20, 1)
    return row, sync_text


def measure_command(p: MeasurePerformanceInput, batches: list[int]) -> list[BatchResult]:
    """Every batch size of ``--command`` timed one whole process run per iteration, without a shell."""
    import os
    import shlex

    from acc_agent.io.process import run_bounded

    assert p.command is not None
    try:
        template = shlex.split(p.command)  # the user's own argument, never file contents
    except ValueError as exc:
        raise AccAgentError("invalid_command", f"cannot split {frontend.option('command')}: {exc}", hint="Check the quotes.",
                            field="command") from None
    if not template:
        raise AccAgentError("invalid_command", f"{frontend.option('command')} is empty", field="command",
                            hint=f"Example: {frontend.option('command', 'python infer.py --batch {batch_size}')}")
    rows: list[BatchResult] = []
    for k, bs in enumerate(batches):
        argv = [a.replace("{batch_size}", str(bs)) for a in template]
        env = dict(os.environ, ACC_AGENT_BATCH_SIZE=str(bs))
        samples: list[int] = []
        error = None
        tick = ticker(p, k, len(batches), bs)
        for i in range(p.warmup + p.iterations):
            tick(i)  # between runs, outside the timed interval; raises if the caller cancelled
            # Bounded: the last 64 KiB of each stream is all an error message needs, and a timeout
            # kills the command's whole process group (see acc_agent.io.process).
            proc = run_bounded(argv, timeout_s=p.timeout_s, env=env, max_bytes=OUTPUT_TAIL_BYTES)
            if proc.start_error is not None:
                error = f"batch {bs}: cannot run `{argv[0]}`: {proc.start_error}"
                break
            if proc.timed_out:
                error = f"batch {bs}: `{shlex.join(argv)}` did not finish within {p.timeout_s:g} s (run {i + 1})"
                break
            if proc.returncode != 0:
                tail = (proc.stderr or proc.stdout).strip().splitlines()
                error = f"batch {bs}: `{shlex.join(argv)}` exited with code {proc.returncode} (run {i + 1})" + (
                    f": {tail[-1][:300]}" if tail else ""
                )
                break
            if i >= p.warmup:
                samples.append(proc.elapsed_ns)
        rows.append(error_row(bs, p, error) if error else batch_statistics(bs, samples, p, p.warmup))
    return rows
