"""The timing harness synchronises around every timestamp; a fake asynchronous device proves why it must."""

from __future__ import annotations

import sys

import pytest

from acc_agent.timing import StageTimer, active_timer, device_sync, run_iterations, stage

WORK_NS = 5_000_000  # each launched kernel runs 5 ms on the fake device
LAUNCH_NS = 1_000  # queueing it costs the host 1 us


class FakeAsyncDevice:
    """A device whose work completes asynchronously: launch() only queues, synchronize() waits.

    Time is virtual (the device owns the clock), so the test is exact and fast.
    """

    def __init__(self) -> None:
        self.now = 0
        self.busy_until = 0
        self.events: list[str] = []

    def clock(self) -> int:
        self.events.append("clock")
        return self.now

    def launch(self, ns: int = WORK_NS) -> None:
        self.events.append("launch")
        start = max(self.now, self.busy_until)
        self.busy_until = start + ns
        self.now += LAUNCH_NS

    def synchronize(self) -> None:
        self.events.append("sync")
        self.now = max(self.now, self.busy_until)


def test_sync_around_every_timestamp_gives_the_true_duration() -> None:
    dev = FakeAsyncDevice()
    samples = run_iterations(dev.launch, warmup=3, iterations=20, sync=dev.synchronize, clock=dev.clock)
    assert samples == [WORK_NS] * 20
    timed = dev.events[dev.events.index("clock") - 1 :]  # from the first timed iteration on
    assert timed == ["sync", "clock", "launch", "sync", "clock"] * 20
    # Every clock read is immediately preceded by a sync.
    for i, event in enumerate(dev.events):
        if event == "clock":
            assert dev.events[i - 1] == "sync"


def test_without_sync_the_numbers_are_wrong() -> None:
    dev = FakeAsyncDevice()
    samples = run_iterations(dev.launch, warmup=0, iterations=20, sync=None, clock=dev.clock)
    # Only the queueing is measured: 5000x too fast, while the device is still 100 ms behind.
    assert samples == [LAUNCH_NS] * 20
    assert dev.busy_until - dev.now > 19 * WORK_NS


def test_warmup_is_untimed_and_drains_the_queue() -> None:
    dev = FakeAsyncDevice()
    run_iterations(dev.launch, warmup=5, iterations=0, sync=dev.synchronize, clock=dev.clock)
    assert "clock" not in dev.events and dev.now == dev.busy_until


def test_stages_are_synchronised_and_summed_per_iteration() -> None:
    dev = FakeAsyncDevice()
    timer = StageTimer(sync=dev.synchronize, clock=dev.clock)

    def step() -> None:
        with stage("preprocess"):
            dev.now += 200_000  # 0.2 ms of host work
        with stage("inference"):
            dev.launch(3_000_000)
            dev.launch(1_000_000)
        with stage("postprocess"):
            dev.launch(500_000)
        with stage("postprocess"):  # entered twice in one iteration: summed
            dev.launch(500_000)

    samples = run_iterations(step, warmup=2, iterations=4, sync=dev.synchronize, clock=dev.clock, timer=timer)
    assert timer.durations["preprocess"] == [200_000] * 4  # warm-up iterations are dropped
    assert timer.durations["inference"] == [4_000_000] * 4
    assert timer.durations["postprocess"] == [1_000_000] * 4
    assert samples == [5_200_000] * 4


def test_stage_outside_a_measurement_does_nothing() -> None:
    ran = []
    with stage("inference"):
        ran.append(1)
    assert ran == [1]
    timer = StageTimer()
    with active_timer(timer), stage("io"):
        pass
    timer.end_iteration(keep=True)
    assert list(timer.durations) == ["io"]


def test_auto_sync_is_a_noop_without_an_initialised_device() -> None:
    sync, text = device_sync("auto")
    assert sync is None and text.startswith("none")
    _, text = device_sync("none")
    assert "disabled" in text


class _FakeCuda:
    """torch.cuda stand-in whose kernels finish 2 ms after launch (real clock); counts syncs."""

    def __init__(self) -> None:
        self.busy_until = 0.0
        self.syncs = 0
        self.peak = 0

    def is_available(self) -> bool:
        return True

    def is_initialized(self) -> bool:
        return True

    def launch(self) -> None:
        import time

        self.busy_until = max(time.perf_counter(), self.busy_until) + 0.002
        self.peak = 3 * 2**20

    def synchronize(self) -> None:
        import time

        self.syncs += 1
        while time.perf_counter() < self.busy_until:
            pass

    def reset_peak_memory_stats(self) -> None:
        self.peak = 0

    def max_memory_allocated(self) -> int:
        return self.peak


FAKE_CUDA = _FakeCuda()


def fake_kernel(_batch_size: int) -> None:
    FAKE_CUDA.launch()


def test_measure_performance_detects_the_device_and_syncs(monkeypatch: pytest.MonkeyPatch) -> None:
    """Through the real tool path: auto sync finds the (fake) CUDA device; without sync the p50 is wrong."""
    import types

    from acc_agent.registry import call_tool

    fake_torch = types.SimpleNamespace(cuda=FAKE_CUDA, __version__="fake")
    monkeypatch.setitem(sys.modules, "torch", fake_torch)
    args = {"callable": f"{__name__}:fake_kernel", "warmup": 2, "iterations": 10}
    synced = call_tool("measure_performance", args)
    r = synced.results[0]
    assert "torch.cuda.synchronize" in (synced.settings.synchronisation if synced.settings else "")
    assert min(r.samples_ms) >= 2.0  # every interval contains the whole kernel (more only if the host was preempted)
    assert FAKE_CUDA.syncs >= 2 * 10
    assert r.device_max_allocated_mb == 3.0
    FAKE_CUDA.synchronize()
    unsynced = call_tool("measure_performance", {**args, "sync": "none"})
    assert (unsynced.results[0].p50_ms or 1) < 0.5  # only the launch was timed: confidently wrong
