"""Stage timing that user code can wrap, and the device synchronisation every timestamp needs.

Accelerators run work asynchronously: ``model(x)`` on CUDA or Ascend returns as soon as the
kernels are queued. A timestamp taken without synchronising measures the queueing, not the work,
and produces confident nonsense. Every timestamp here is therefore preceded by ``sync()``.

User code marks its stages once and leaves them in::

    from acc_agent.timing import stage

    def infer(batch):
        with stage("preprocess"):
            x = prepare(batch)
        with stage("inference"):
            y = model(x)
        with stage("postprocess"):
            return decode(y)

Outside a measurement ``stage`` costs one context-variable lookup; inside ``measure_performance``
each stage's duration is recorded per iteration and reported (Compare.md §4.1).
"""

from __future__ import annotations

import contextvars
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager

Clock = Callable[[], int]
Sync = Callable[[], None]

#: The canonical stage names Compare.md §4.1 and the bottleneck analysis understand.
KNOWN_STAGES = ("preprocess", "inference", "postprocess", "io")


def _noop() -> None:
    return None


def torch_device_in_use() -> str | None:
    """``"npu"`` or ``"cuda"`` when user code has already imported torch and initialised that device.

    Torch is never imported here: if the user's code did not import it, no device work exists to
    wait for, and importing it would cost seconds.
    """
    torch = sys.modules.get("torch")
    if torch is None:
        return None
    npu = getattr(torch, "npu", None)
    if npu is not None and "torch_npu" in sys.modules:
        try:
            if npu.is_available() and npu.is_initialized():
                return "npu"
        except Exception:  # noqa: BLE001 - a broken plug-in must not break timing
            pass
    cuda = getattr(torch, "cuda", None)
    try:
        if cuda is not None and cuda.is_available() and cuda.is_initialized():
            return "cuda"
    except Exception:  # noqa: BLE001
        pass
    return None


def device_sync(kind: str = "auto") -> tuple[Sync | None, str]:
    """Return ``(sync function or None, description)`` for ``kind`` in auto | none | cuda | npu.

    ``auto`` resolves at call time to whichever torch device user code initialised; None means
    there is nothing to wait for (host-only work).
    """
    if kind == "auto":
        detected = torch_device_in_use()
        if detected is None:
            return None, "none (no torch CUDA/NPU device initialised by the measured code)"
        kind = detected
    if kind == "none":
        return None, "none (disabled by the caller)"
    if kind not in ("cuda", "npu"):
        raise ValueError(f"unknown sync kind {kind!r} (use auto, none, cuda or npu)")
    import importlib

    try:
        torch = importlib.import_module("torch")
        if kind == "npu":
            importlib.import_module("torch_npu")
    except ImportError as exc:
        raise RuntimeError(f"--sync {kind} needs {exc.name or 'torch'}, which is not importable here") from None
    device = getattr(torch, kind, None)
    if device is None or not device.is_available():
        raise RuntimeError(f"--sync {kind}: torch.{kind} reports no available device")
    return device.synchronize, f"torch.{kind}.synchronize() before every timestamp"


class _StageBlock:
    """One timed stage: sync, clock on enter; sync, clock, accumulate on exit (a class, not a generator,
    because this sits inside user loops and ``@contextmanager`` costs several microseconds)."""

    __slots__ = ("timer", "name", "start")

    def __init__(self, timer: StageTimer, name: str) -> None:
        self.timer = timer
        self.name = name
        self.start = 0

    def __enter__(self) -> None:
        timer = self.timer
        timer.sync()
        self.start = timer.clock()

    def __exit__(self, *exc: object) -> None:
        timer = self.timer
        timer.sync()
        elapsed = timer.clock() - self.start
        current = timer._current
        current[self.name] = current.get(self.name, 0) + elapsed


class StageTimer:
    """Collects per-stage durations (ns) for one measurement; sync before every timestamp."""

    __slots__ = ("sync", "clock", "durations", "_current")

    def __init__(self, sync: Sync | None = None, clock: Clock = time.perf_counter_ns) -> None:
        self.sync: Sync = sync or _noop
        self.clock = clock
        self.durations: dict[str, list[int]] = {}
        self._current: dict[str, int] = {}

    def stage(self, name: str) -> _StageBlock:
        return _StageBlock(self, name)

    def end_iteration(self, keep: bool) -> None:
        """Close one iteration: stages entered several times in it are summed; warm-up is dropped."""
        if keep:
            for name, ns in self._current.items():
                self.durations.setdefault(name, []).append(ns)
        self._current = {}


class _NullBlock:
    __slots__ = ()

    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: object) -> None:
        return None


_NULL = _NullBlock()
_ACTIVE: contextvars.ContextVar[StageTimer | None] = contextvars.ContextVar("acc_agent_stage_timer", default=None)


def stage(name: str) -> _StageBlock | _NullBlock:
    """Time the enclosed ``with`` block as stage ``name`` when a measurement is running; else do nothing."""
    timer = _ACTIVE.get()
    if timer is None:
        return _NULL
    return _StageBlock(timer, name)


@contextmanager
def active_timer(timer: StageTimer) -> Iterator[StageTimer]:
    """Make ``timer`` the one :func:`stage` records into, for the duration of the block."""
    token = _ACTIVE.set(timer)
    try:
        yield timer
    finally:
        _ACTIVE.reset(token)


def run_iterations(
    fn: Callable[[], object],
    warmup: int,
    iterations: int,
    sync: Sync | None = None,
    clock: Clock = time.perf_counter_ns,
    timer: StageTimer | None = None,
) -> list[int]:
    """Call ``fn`` ``warmup`` times untimed, then ``iterations`` times timed; durations in ns.

    Each timed call is bracketed as sync → clock → fn → sync → clock, so queued device work is
    inside the interval. The loop body is kept minimal: its overhead is measured by
    ``bench/bench_timing.py``.
    """
    do_sync = sync or _noop
    if timer is not None:
        token = _ACTIVE.set(timer)
    try:
        for _ in range(warmup):
            fn()
            do_sync()
            if timer is not None:
                timer.end_iteration(keep=False)
        out = [0] * iterations
        end = timer.end_iteration if timer is not None else None
        if sync is None:  # host-only work: keep even a no-op call out of the timed interval
            for i in range(iterations):
                t0 = clock()
                fn()
                out[i] = clock() - t0
                if end is not None:
                    end(True)
            return out
        for i in range(iterations):
            do_sync()
            t0 = clock()
            fn()
            do_sync()
            out[i] = clock() - t0
            if end is not None:
                end(True)
        return out
    finally:
        if timer is not None:
            _ACTIVE.reset(token)
