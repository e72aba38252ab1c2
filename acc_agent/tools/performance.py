"""The performance skill: measure latency/throughput reproducibly, and compare two measurements.

``measure_performance`` runs only when the migration rules allow it (the trigger conditions):
the user asked (running the CLI command with --callable/--command/--from-log *is* asking), or the
environment verdict is ``auto``
and the user agreed, or the acceptance criteria contain a latency/throughput KPI. Otherwise it
returns ``not_executed`` with exactly the reason, the missing conditions and a command template.

``compare_performance`` refuses like-for-unlike comparisons unless told, gives target/baseline
ratios with bootstrap confidence intervals, a verdict against the configured target ratio, the
stage that explains most of the gap and the one or two likeliest causes.
"""

from __future__ import annotations

import contextlib
import json
import platform
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from pydantic import ValidationError

from acc_agent import frontend, progress
from acc_agent.atomic import atomic_write_text
from acc_agent.errors import AccAgentError
from acc_agent.models.common import Evidence
from acc_agent.models.performance import (
    SCOPE_TEXT,
    BatchResult,
    ComparePerformanceInput,
    ComparePerformanceOutput,
    MeasurementSettings,
    MeasurePerformanceInput,
    MeasurePerformanceOutput,
    NotExecuted,
    OutlierReport,
    RatioRow,
    StageGap,
    StageStats,
    WarmupReport,
)
from acc_agent.text_safety import terminal_lines
from acc_agent.tools.spec import tool

WARMUP_REASON = (
    "untimed iterations first, so one-off costs (graph compilation, operator selection, allocator "
    "growth, caches) stay out of the statistics; at least 10 are recommended"
)
ITERATIONS_REASON = "enough samples for a stable p95 (at least 100 recommended); raw timings are kept for confidence intervals"
_CHUNK = 16  # iterations between timeout checks of an in-process callable
#: Output kept per stream of a measured command (its tail, for the error message); the rest is dropped.
_OUTPUT_TAIL_BYTES = 64 << 10
#: Largest results file compare_performance reads (a real one is a few kilobytes).
_MAX_RESULTS_BYTES = 64 << 20


def _trigger(p: MeasurePerformanceInput) -> tuple[str | None, list[str]]:
    """Which trigger condition holds (the user asked; the environment check says auto and the user agreed;
    acceptance has a latency/throughput KPI), or the list of conditions still missing."""
    if p.requested:
        return "the user explicitly asked for a performance measurement", []
    if p.latency_kpi:
        return "the acceptance criteria contain a latency/throughput KPI", []
    if p.environment_verdict == "auto" and p.user_agreed:
        return "the environment check says tests can run directly (auto) and the user agreed", []
    asked = ("pass requested=true only when the user asked" if frontend.current() == "mcp"
             else "running `acc-agent measure-performance` counts")
    missing = [f"the user explicitly asks for a performance test ({asked})"]
    if p.environment_verdict != "auto":
        missing.append(
            f"check_environment verdict is auto (now: {p.environment_verdict or 'not checked'}) and the user agrees to run tests"
        )
    else:
        missing.append("the user agrees to run tests (environment verdict is already auto)")
    missing.append("the acceptance criteria state a latency or throughput KPI")
    return None, missing


def _template(p: MeasurePerformanceInput) -> str:
    """The measurement to hand over: a command line for a shell user, a tool call for an MCP caller."""
    if frontend.current() == "mcp":
        target: dict[str, Any] = (
            {"command": p.command} if p.command else {"from_log": str(p.from_log)} if p.from_log
            else {"callable": p.callable or "<module>:<function>", "setup": p.setup})
        sizes: Any = _batches(p.batch_sizes)[0] if p.batch_sizes != [1] else "<[1, target batch]>"
        return frontend.invoke("measure_performance", **target, batch_sizes=sizes, warmup=max(p.warmup, 10),
                               iterations=max(p.iterations, 100), scope=p.scope or "end_to_end",
                               requested=True, out="perf_<npu|gpu>.json")
    if p.command:
        what = f"--command {json.dumps(p.command)}"
    elif p.from_log:
        what = f"--from-log {p.from_log}"
    else:
        what = f"--callable {p.callable or '<module>:<function>'}" + (f" --setup {p.setup}" if p.setup else "")
    batches = ",".join(str(b) for b in _batches(p.batch_sizes)[0]) if p.batch_sizes != [1] else "1,<target batch>"
    return (
        f"acc-agent measure-performance {what} --batch-sizes {batches} --warmup {max(p.warmup, 10)} "
        f"--iterations {max(p.iterations, 100)} --scope {p.scope or 'end_to_end'} --out perf_<npu|gpu>.json --json"
    )


def _batches(sizes: list[int]) -> tuple[list[int], str | None]:
    bad = [b for b in sizes if b < 1]
    if bad:
        raise AccAgentError("invalid_batch", f"batch sizes must be >= 1, got {bad}",
                            hint=f"Example: {frontend.option('batch_sizes', [1, 8])}", field="batch_sizes")
    ordered = list(dict.fromkeys(sizes))
    if 1 in ordered:
        return ordered, None
    return [1, *ordered], "batch size 1 added: a measurement covers batch 1 and the target batch"


def _resolve(spec: str, what: str) -> Callable[..., Any]:
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
    obj: Any = module
    for part in attr.split("."):
        obj = getattr(obj, part, None)
        if obj is None:
            raise AccAgentError("callable_not_found", f"{module_name} has no attribute {attr} ({frontend.option(what)} {spec})",
                                hint=f"Check the function name in {module_name}.")
    if not callable(obj):
        raise AccAgentError("invalid_callable", f"{spec} is not callable", hint="Point at a function.")
    return obj  # type: ignore[no-any-return]


def _check_takes_one_argument(func: Callable[..., Any], spec: str, what: str) -> None:
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


def _err(exc: BaseException) -> str:
    tb = exc.__traceback__
    where = ""
    while tb is not None:
        where = f" (at {Path(tb.tb_frame.f_code.co_filename).name}:{tb.tb_lineno} in {tb.tb_frame.f_code.co_name})"
        tb = tb.tb_next
    return f"{type(exc).__name__}: {exc}{where}"[:600]


def _peak_host_mb() -> float | None:
    try:
        import resource
    except ImportError:
        return None
    kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return round(kb / 1024.0 if sys.platform != "darwin" else kb / 1024.0 / 1024.0, 1)


def _device_module(kind: str) -> Any:
    torch: Any = sys.modules.get("torch")
    if torch is None or kind not in ("cuda", "npu"):
        return None
    return getattr(torch, kind, None)


def _stats(
    bs: int,
    samples_ns: list[int],
    p: MeasurePerformanceInput,
    warmup: int,
    stages: dict[str, list[int]] | None = None,
) -> BatchResult:
    from acc_agent.numerics.stats import detect_outliers, detect_warmup, summarize

    ms = [v / 1e6 for v in samples_ns]
    s = summarize(ms)
    per = bs if p.throughput_unit == "samples" else 1
    out = detect_outliers(ms)
    wu = detect_warmup(ms)
    stage_stats: dict[str, StageStats] = {}
    for name, values in (stages or {}).items():
        if not values:
            continue
        st = summarize([v / 1e6 for v in values])
        stage_stats[name] = StageStats(
            p50_ms=st.p50, p95_ms=st.p95, mean_ms=st.mean, share_of_total=st.mean / s.mean if s.mean > 0 else None,
            samples_ms=[v / 1e6 for v in values],
        )
    return BatchResult(
        batch_size=bs,
        status="ok",
        scope=p.scope or "end_to_end",
        warmup=warmup,
        iterations=len(ms),
        p50_ms=s.p50,
        p95_ms=s.p95,
        p99_ms=s.p99,
        mean_ms=s.mean,
        std_ms=s.std,
        min_ms=s.min,
        max_ms=s.max,
        throughput=per / (s.mean / 1000.0) if s.mean > 0 else None,
        throughput_unit=f"{p.throughput_unit}/s",
        outliers=OutlierReport(count=len(out.indices), indices=out.indices, rule=out.rule),
        warmup_detection=WarmupReport(configured=warmup, reason=WARMUP_REASON, residual_detected=wu.count, rule=wu.rule),
        stages=stage_stats,
        samples_ms=ms,
    )


def _error_row(bs: int, p: MeasurePerformanceInput, message: str) -> BatchResult:
    return BatchResult(batch_size=bs, status="error", error=message, scope=p.scope or "end_to_end", warmup=p.warmup,
                       iterations=0, throughput_unit=f"{p.throughput_unit}/s")


def _measure_callable(p: MeasurePerformanceInput, batches: list[int]) -> tuple[list[BatchResult], str]:
    assert p.callable is not None
    func = _resolve(p.callable, "callable")
    setup = _resolve(p.setup, "setup") if p.setup else None
    _check_takes_one_argument(func, p.callable, "the setup hook's return value" if setup else "the batch size")
    rows: list[BatchResult] = []
    sync_text = "none"
    for k, bs in enumerate(batches):
        tick = _ticker(p, k, len(batches), bs)
        try:
            with _alarm(p.timeout_s):
                row, sync_text = _measure_one(p, bs, func, setup, tick)
            rows.append(row)
        except progress.Cancelled:
            raise
        except Exception as exc:  # noqa: BLE001 - the user's callable failing is a result, not a crash
            rows.append(_error_row(bs, p, f"batch {bs}: {_err(exc)}"))
    return rows, sync_text


def _ticker(p: MeasurePerformanceInput, k: int, n_batches: int, bs: int) -> Callable[[int], None]:
    """Progress for batch ``k`` of ``n_batches``: one unit per warm-up or timed iteration.

    Reported between iterations (never inside a timed interval); raises when the caller cancelled.
    """
    per = p.warmup + p.iterations

    def tick(done: int) -> None:
        progress.report(k * per + done, n_batches * per, f"batch size {bs}: {done} of {per} iterations")

    return tick


class CallTimeout(Exception):
    """Raised inside a measured callable when --timeout-s is exceeded."""


@contextlib.contextmanager
def _alarm(seconds: float) -> Iterator[None]:
    """Interrupt a hung callable after ``seconds`` (SIGALRM, main thread on Unix). Elsewhere (MCP worker
    threads) the chunked loop of :func:`_measure_one` still stops a slow callable between calls."""
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


def _measure_one(
    p: MeasurePerformanceInput, bs: int, func: Callable[..., Any], setup: Callable[..., Any] | None,
    tick: Callable[[int], None] | None = None,
) -> tuple[BatchResult, str]:
    """Setup, warm-up, then timed iterations for one batch size; raises on any failure of user code."""
    from acc_agent.timing import StageTimer, device_sync, run_iterations, torch_device_in_use

    payload = setup(bs) if setup is not None else bs

    def call(payload: Any = payload) -> Any:
        return func(payload)

    tick = tick or (lambda _done: None)
    tick(0)
    sync, _ = device_sync(p.sync)
    run_iterations(call, p.warmup, 0, sync=sync)
    tick(p.warmup)
    sync, sync_text = device_sync(p.sync)  # the warm-up may have initialised the device
    kind = p.sync if p.sync in ("cuda", "npu") else (torch_device_in_use() or "") if p.sync == "auto" else ""
    dev = _device_module(kind)
    if dev is not None:
        dev.reset_peak_memory_stats()
    timer = StageTimer(sync=sync)
    samples: list[int] = []
    start = time.perf_counter()
    while len(samples) < p.iterations:
        n = min(_CHUNK, p.iterations - len(samples))
        samples += run_iterations(call, 0, n, sync=sync, timer=timer)
        tick(p.warmup + len(samples))
        if time.perf_counter() - start > p.timeout_s and len(samples) < p.iterations:
            raise CallTimeout(f"stopped after {len(samples)} of {p.iterations} iterations: "
                              f"{frontend.option('timeout_s', f'{p.timeout_s:g}')} s exceeded")
    row = _stats(bs, samples, p, p.warmup, timer.durations)
    row.peak_host_memory_mb = _peak_host_mb()
    if dev is not None:
        row.device_max_allocated_mb = round(dev.max_memory_allocated() / 2**20, 1)
    return row, sync_text


def _measure_command(p: MeasurePerformanceInput, batches: list[int]) -> list[BatchResult]:
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
        tick = _ticker(p, k, len(batches), bs)
        for i in range(p.warmup + p.iterations):
            tick(i)  # between runs, outside the timed interval; raises if the caller cancelled
            # Bounded: the last 64 KiB of each stream is all an error message needs, and a timeout
            # kills the command's whole process group (see acc_agent.io.process).
            proc = run_bounded(argv, timeout_s=p.timeout_s, env=env, max_bytes=_OUTPUT_TAIL_BYTES)
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
        rows.append(_error_row(bs, p, error) if error else _stats(bs, samples, p, p.warmup))
    return rows


@dataclass
class _LogTimings:
    """What a log says about speed: per-step times, printed throughput, the run's batch size."""

    step_ms: list[float] = field(default_factory=list)
    throughput: list[float] = field(default_factory=list)
    how: str = "no step-time or throughput lines recognised"
    batch_size: int | None = None
    batch_source: str = ""
    run_throughput: float | None = None  # one whole-run figure (HF train_samples_per_second)


_BATCH_SOURCES = {
    "megatron": "the log's 'global batch size' field",
    "hf_trainer_text": "the training header's 'Total train batch size'",
}


def _log_timings(path: Path) -> _LogTimings:
    """Step times, throughput and global batch size from a training/inference log, via parse_training_log."""
    if not path.exists():
        raise AccAgentError("file_not_found", f"log {path} does not exist", hint="Pass an existing log file.", path=str(path))
    from acc_agent.tools.training_log import ParseTrainingLogInput, parse_training_log

    out: Any = parse_training_log(ParseTrainingLogInput(log=path, metrics=["step_time_ms", "throughput",
                                                                           "global_batch_size"]))
    series = getattr(out, "series", {}) or {}
    found = _LogTimings(
        step_ms=[pt.value for pt in series.get("step_time_ms", []) if pt.value is not None],
        throughput=[pt.value for pt in series.get("throughput", []) if pt.value is not None],
    )
    runs = getattr(out, "runs", []) or []
    run = next((r for r in runs if r.index == getattr(out, "selected_run", None)), None)
    scalars = dict(run.scalars) if run is not None else {}
    batches = sorted({int(pt.value) for pt in series.get("global_batch_size", []) if pt.value is not None and pt.value >= 1})
    if batches:
        found.batch_size = batches[-1]
        found.batch_source = _BATCH_SOURCES.get(out.format, "the log's global batch size") + (
            f" (it changes during the run: {', '.join(map(str, batches))}; the last is used)" if len(batches) > 1 else "")
    elif scalars.get("global_batch_size", 0) >= 1:
        found.batch_size = int(scalars["global_batch_size"])
        found.batch_source = _BATCH_SOURCES.get(out.format, "the log's summary")
    if not found.throughput and scalars.get("throughput"):
        found.run_throughput = float(scalars["throughput"])
    if found.step_ms or found.throughput or found.run_throughput:
        found.how = f"parse_training_log ({getattr(out, 'format', '?')})"
    return found


def _log_batch(p: MeasurePerformanceInput, batches: list[int], t: _LogTimings) -> tuple[int, str]:
    """The batch size of the logged run: --batch-sizes when given, else what the log states, else 1."""
    given = "batch_sizes" in p.model_fields_set
    if given or t.batch_size is None:
        note = f"batch size {batches[-1]} is taken from {frontend.option('batch_sizes')} (last entry)" if given else (
            f"batch size {batches[-1]} is the default: the log does not state its batch size; pass "
            f"{frontend.option('batch_sizes')}")
        if given and t.batch_size is not None and t.batch_size != batches[-1]:
            note += f"; the log states {t.batch_size} ({t.batch_source}): check which one the run used"
        return batches[-1], note
    return t.batch_size, f"batch size {t.batch_size} read from {t.batch_source}"


def _measure_log(p: MeasurePerformanceInput, batches: list[int]) -> tuple[list[BatchResult], list[str], str]:
    from acc_agent.numerics.stats import detect_warmup, summarize

    assert p.from_log is not None
    t = _log_timings(p.from_log)
    steps, thr, how = t.step_ms, t.throughput, t.how
    bs, batch_note = _log_batch(p, batches, t)
    notes = [batch_note]
    printed = "as printed in the log (median of its throughput/FPS values)"
    if len(steps) < 2 and not thr and t.run_throughput is not None:
        row = BatchResult(batch_size=bs, status="ok", scope=p.scope or "training_step", warmup=0, iterations=1,
                          throughput=t.run_throughput,
                          throughput_unit="samples/s as the Trainer reports it (train_samples_per_second: samples over the "
                          "whole training time, start-up and evaluation pauses included)",
                          warmup_detection=WarmupReport(configured=0, rule="none", reason=(
                              "the run was not repeated and the log gives one whole-run figure: warm-up cannot be "
                              f"separated from it; {frontend.option('warmup')} does not apply to logs")))
        notes.append(f"{p.from_log} states one whole-run throughput (train_samples_per_second) and no per-step times: "
                     "latency statistics are N/A")
        return [row], notes, how
    if len(steps) < 2 and thr:
        twu = detect_warmup([1.0 / v if v > 0 else float("inf") for v in thr])  # slow = low throughput
        row = BatchResult(batch_size=bs, status="ok", scope=p.scope or "training_step", warmup=twu.count,
                          iterations=len(thr) - twu.count, throughput=summarize(thr[twu.count :]).p50,
                          throughput_unit=printed,
                          warmup_detection=WarmupReport(configured=twu.count, rule=twu.rule, reason=(
                              f"the run was not repeated: the first {twu.count} logged throughput value(s) were detected as "
                              f"warm-up (on 1/throughput) and excluded; {frontend.option('warmup')} does not apply to logs")))
        notes.append(f"{p.from_log} has {len(thr)} throughput value(s) but no per-step times: latency statistics are N/A")
        return [row], notes, how
    if len(steps) < 2:
        return [_error_row(bs, p, f"{p.from_log}: {how}; found {len(steps)} step time(s), need at least 2")], notes, how
    wu = detect_warmup(steps)
    kept = steps[wu.count :]
    row = _stats(bs, [int(v * 1e6) for v in kept], p, wu.count)
    row.warmup_detection = WarmupReport(
        configured=wu.count,
        reason=f"the run was not repeated: the first {wu.count} logged step(s) were detected as warm-up and excluded "
        f"({wu.rule}); {frontend.option('warmup')} does not apply to logs",
        residual_detected=0,
        rule=wu.rule,
    )
    if thr:
        row.throughput = summarize(thr[wu.count :] if len(thr) == len(steps) and len(thr) > wu.count else thr).p50
        row.throughput_unit = printed
    elif t.batch_size is not None and row.throughput is not None and p.throughput_unit == "samples":
        row.throughput_unit = f"samples/s = global batch size {bs} / mean step time"
    notes.append(f"log step times read with {how}; {len(steps)} step(s), {wu.count} excluded as warm-up")
    return [row], notes, how


def _environment() -> dict[str, str | None]:
    from importlib import metadata

    env: dict[str, str | None] = {
        "python": sys.version.split()[0],
        "platform": platform.platform(),
        "machine": platform.machine(),
        "processor": platform.processor() or None,
    }
    for name in ("torch", "torch_npu", "numpy", "acc-agent"):
        try:
            env[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            env[name] = None
    import os

    env["cpu_count"] = str(os.cpu_count())
    for var in ("ASCEND_RT_VISIBLE_DEVICES", "CUDA_VISIBLE_DEVICES", "OMP_NUM_THREADS"):
        env[var] = os.environ.get(var)
    return env


def _summary(out: MeasurePerformanceOutput) -> str:
    ok = [r for r in out.results if r.status == "ok"]
    parts = [f"bs {r.batch_size}: p50 {r.p50_ms:.3f} ms, p95 {r.p95_ms:.3f} ms, {r.throughput:.1f} {r.throughput_unit}"
             if r.p50_ms is not None and r.p95_ms is not None
             else f"bs {r.batch_size}: latency N/A, throughput {r.throughput:.1f} ({r.throughput_unit})"
             for r in ok if r.throughput is not None]
    bad = [r for r in out.results if r.status == "error"]
    text = "; ".join(parts)
    if bad:
        text += ("; " if text else "") + f"{len(bad)} batch size(s) failed: {bad[0].error}"
    return f"{out.verdict}: {text}"


def _render_measure(out: MeasurePerformanceOutput) -> str:
    lines = [f"[{out.verdict}] {out.summary}"]
    if out.not_executed is not None:
        ne = out.not_executed
        lines += [f"  reason: {ne.reason}", "  missing conditions:"] + [f"    - {m}" for m in ne.missing_conditions]
        lines.append(f"  command template: {ne.command_template}")
    if out.settings is not None:
        s = out.settings
        lines.append(f"  scope: {s.scope_description}")
        lines.append(f"  warmup {s.warmup}, iterations {s.iterations}, sync: {s.synchronisation}")
    for r in out.results:
        if r.status == "ok" and r.p50_ms is None:
            lines.append(f"  bs {r.batch_size:>4}: latency N/A, throughput {r.throughput:.2f} {r.throughput_unit}")
        elif r.status == "ok":
            lines.append(f"  bs {r.batch_size:>4}: p50 {r.p50_ms:9.3f}  p95 {r.p95_ms:9.3f}  p99 {r.p99_ms:9.3f}  mean {r.mean_ms:9.3f} ms"
                         f"  {r.throughput:10.2f} {r.throughput_unit}  outliers {r.outliers.count if r.outliers else 0}")
            for name, st in r.stages.items():
                lines.append(f"        {name:<12} p50 {st.p50_ms:9.3f} ms  ({(st.share_of_total or 0) * 100:4.1f} % of mean)")
        else:
            lines.append(f"  bs {r.batch_size:>4}: error: {r.error}")
    lines += [f"  note: {n}" for n in out.notes]
    return terminal_lines(lines)


@tool(
    description="Call only when performance testing is triggered (user asked; environment auto and user agreed; latency "
    "KPI): times a callable or command per batch size. Returns results[] (p50_ms, p95_ms) or not_executed.",
    title="Measure latency and throughput",
    read_only=False,
    destructive=True,
    idempotent=False,
    open_world=True,
    text_renderer=lambda out: _render_measure(out),
)
def measure_performance(params: MeasurePerformanceInput) -> MeasurePerformanceOutput:
    targets = [t for t in (params.callable, params.command, params.from_log) if t]
    if len(targets) > 1:
        raise AccAgentError("conflicting_targets", "give only one of " + ", ".join(
                            frontend.option(k) for k in ("callable", "command", "from_log")),
                            hint="Measure each target in its own run, then compare the results files.")
    if params.setup and not params.callable:
        setup, func = frontend.option("setup"), frontend.option("callable")
        raise AccAgentError("invalid_setup", f"{setup} only applies to {func}", hint=f"Drop {setup} or add {func}.",
                            field="setup")
    if params.scope is None:
        params = params.model_copy(update={"scope": "training_step" if params.from_log else "end_to_end"})
    if params.from_log:
        batches, batch_note = list(dict.fromkeys(params.batch_sizes)), None
        _batches(batches)  # validates >= 1
    else:
        batches, batch_note = _batches(params.batch_sizes)
    trigger, missing = _trigger(params)
    if trigger is None or not targets:
        reason = (
            "performance measurement was not triggered: no trigger condition holds"
            if trigger is None
            else f"triggered ({trigger}) but nothing to measure was given"
        )
        if trigger is not None:
            missing = ["a target to time: " + ", ".join(
                (frontend.option("callable", "<MODULE:FUNC>"), frontend.option("command", "<CMD>"))) + " or "
                + frontend.option("from_log", "<LOG>")]
        ne = NotExecuted(reason=reason, missing_conditions=missing, command_template=_template(params))
        return MeasurePerformanceOutput(verdict="not_executed", summary=f"not_executed: {reason}", not_executed=ne,
                                        evidence=[Evidence(kind="setting", ref="trigger", detail=reason)])
    if params.sync in ("cuda", "npu") and not params.from_log:
        from acc_agent.timing import device_sync

        try:
            device_sync(params.sync)
        except RuntimeError as exc:
            raise AccAgentError("sync_unavailable", str(exc), field="sync",
                                hint=f"Use {frontend.option('sync', 'auto')} (detects the device the code uses) or none.") from None
    notes = [batch_note] if batch_note else []
    evidence: list[Evidence] = []
    warmup_reason, iterations_reason = WARMUP_REASON, ITERATIONS_REASON
    if params.callable:
        rows, sync_text = _measure_callable(params, batches)
        source: Literal["callable", "command", "log"] = "callable"
        target = params.callable + (f" (setup {params.setup})" if params.setup else "")
        evidence.append(Evidence(kind="command", ref=f"callable {target}", detail="timed in-process"))
    elif params.command:
        rows = _measure_command(params, batches)
        source, target = "command", params.command
        sync_text = "not needed: each iteration is a whole process, and process exit waits for device work"
        notes.append("command timing includes process start-up and model loading on every run; use "
                     f"{frontend.option('callable')} to time the call alone")
        evidence.append(Evidence(kind="command", ref=params.command, detail="timed per process run, shell not used"))
    else:
        assert params.from_log is not None
        rows, log_notes, how = _measure_log(params, batches)
        batches = [rows[0].batch_size]
        notes += log_notes
        source, target = "log", str(params.from_log)
        sync_text = "as logged by the framework (its own timing method)"
        warmup_reason = rows[0].warmup_detection.reason if rows[0].warmup_detection else "see results"
        iterations_reason = "as many steps as the log has after warm-up"
        evidence.append(Evidence(kind="file", ref=str(params.from_log), detail=how))
    if params.warmup < 10 and source != "log":
        notes.append(f"warmup {params.warmup} is below the 10 recommended")
    if params.iterations < 100 and source != "log":
        notes.append(f"iterations {params.iterations} is below the 100 recommended; p95/p99 are less stable")
    scope = params.scope or "end_to_end"
    settings = MeasurementSettings(
        source=source,
        target=target,
        scope=scope,
        scope_description=SCOPE_TEXT[scope],
        batch_sizes=batches,
        warmup=rows[0].warmup if source == "log" and rows else params.warmup,
        warmup_reason=warmup_reason,
        iterations=rows[0].iterations if source == "log" and rows else params.iterations,
        iterations_reason=iterations_reason,
        throughput_definition=(
            "samples/s = batch_size / mean latency (per sample)"
            if params.throughput_unit == "samples"
            else "requests/s = 1 / mean latency (per request, one call = one request)"
        ),
        synchronisation=sync_text,
        timeout_s=params.timeout_s if source != "log" else None,
    )
    ok = sum(r.status == "ok" for r in rows)
    verdict: Literal["measured", "partial", "error"] = "measured" if ok == len(rows) else ("partial" if ok else "error")
    out = MeasurePerformanceOutput(
        verdict=verdict, summary="", results=rows, settings=settings, environment=_environment(),
        trigger=trigger, notes=notes, evidence=evidence,
    )
    out.summary = _summary(out)
    if params.out is not None:
        out.results_path = str(params.out)
        try:
            params.out.parent.mkdir(parents=True, exist_ok=True)
            atomic_write_text(params.out, out.model_dump_json(indent=2))  # compare_performance reads it back
        except OSError as exc:
            raise AccAgentError("write_failed", f"cannot write {params.out}: {exc.strerror}", field="out",
                                hint=f"Pick a writable {frontend.option('out')} path.",
                                path=str(params.out)) from None
    return out


# --------------------------------------------------------------------------- compare_performance

_STAGE_CAUSES = {
    "preprocess": "host-side preprocessing (decode/resize/normalise) is slower on the target host CPU: check dataloader "
    "workers, CPU affinity/NUMA binding, and whether the baseline ran preprocessing on the GPU",
    "postprocess": "postprocessing (NMS, decoding, .cpu()/.item() copies) is slower: operators falling back to AICPU/host, "
    "or synchronising device-to-host copies inside the loop",
    "io": "data loading or host-device transfer: use pinned memory and non_blocking copies, check file I/O and batch collation",
    "inference": "device execution is slower on the target (the timed forward pass itself): to check — dynamic shapes "
    "causing recompilation (fix shapes), FP32 where FP16/BF16 was intended, and on an Ascend NPU operators falling "
    "back from AI Core to AICPU; a profile (torch_npu.profiler / msprof) shows which operators take the time",
}


def _load(path: Path, side: str) -> MeasurePerformanceOutput:
    if not path.is_file():
        raise AccAgentError("file_not_found", f"{side} results {path} do not exist", path=str(path), field=side,
                            hint=f"Pass the file written by {frontend.invoke('measure_performance', out='<FILE>')}.")
    hint = f"Pass the JSON written by {frontend.invoke('measure_performance', out='<FILE>')}."
    try:
        if path.stat().st_size > _MAX_RESULTS_BYTES:
            raise AccAgentError("invalid_results", f"{side} file {path} is {path.stat().st_size >> 20} MiB: not a results file",
                                hint=hint, path=str(path), field=side)
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise AccAgentError("invalid_results", f"cannot read {side} file {path} as UTF-8 JSON ({type(exc).__name__})",
                            hint=hint, path=str(path), field=side) from None
    try:
        return MeasurePerformanceOutput.model_validate_json(text)
    except ValidationError as exc:
        first = exc.errors()[0]
        raise AccAgentError(
            "invalid_results",
            f"{side} file {path} is not a measure-performance results file ({'.'.join(map(str, first['loc']))}: {first['msg']})",
            hint=f"Pass the JSON written by {frontend.invoke('measure_performance', out='<FILE>')}.",
            path=str(path),
        ) from None


def _stat_value(r: BatchResult, statistic: str) -> float | None:
    return {"p50": r.p50_ms, "p95": r.p95_ms, "mean": r.mean_ms}[statistic]


@tool(
    description="Call with two measure_performance result files (baseline, NPU): latency ratios with confidence intervals "
    "vs target_ratio, the stage behind the gap. Returns verdict met | not_met | inconclusive.",
    title="Compare performance",
    read_only=True,
    positional=("baseline", "target"),
    text_renderer=lambda out: _render_compare(out),
)
def compare_performance(params: ComparePerformanceInput) -> ComparePerformanceOutput:
    from acc_agent.numerics.stats import bootstrap_ratio, mann_whitney

    base, targ = _load(params.baseline, "baseline"), _load(params.target, "target")
    evidence = [Evidence(kind="file", ref=str(params.baseline), detail="baseline results"),
                Evidence(kind="file", ref=str(params.target), detail="target results"),
                Evidence(kind="threshold", ref=f"target_ratio={params.target_ratio}", detail=f"{params.statistic} latency, target/baseline")]

    def result(verdict: Literal["met", "not_met", "inconclusive", "not_comparable"], summary: str, **fields: Any) -> ComparePerformanceOutput:
        return ComparePerformanceOutput(verdict=verdict, summary=summary, target_ratio=params.target_ratio, statistic=params.statistic,
                                        evidence=evidence, baseline_settings=base.settings, target_settings=targ.settings, **fields)

    for side, res in (("baseline", base), ("target", targ)):
        if res.settings is None or not any(r.status == "ok" for r in res.results):
            return result("not_comparable", f"not_comparable: the {side} file has no measured results ({res.verdict})",
                          mismatches=[f"{side} verdict {res.verdict}"])
    bs_, ts_ = base.settings, targ.settings
    assert bs_ is not None and ts_ is not None
    mismatches: list[str] = []
    if bs_.scope != ts_.scope:
        mismatches.append(f"scope differs: baseline {bs_.scope}, target {ts_.scope}")
        if not params.allow_scope_mismatch:
            return result("not_comparable", "not_comparable: " + mismatches[0]
                          + f" (rerun with the same {frontend.option('scope')}, or pass "
                          f"{frontend.option('allow_scope_mismatch', True)} to compare anyway)", mismatches=mismatches)
    pairs: list[tuple[str, object, object]] = [
        ("warmup", bs_.warmup, ts_.warmup),
        ("iterations", bs_.iterations, ts_.iterations),
        ("source", bs_.source, ts_.source),
        ("throughput definition", bs_.throughput_definition, ts_.throughput_definition),
        ("synchronisation", bs_.synchronisation, ts_.synchronisation),
        ("statistics", bs_.statistics, ts_.statistics),
        ("percentile method", bs_.percentile_method, ts_.percentile_method),
        ("concurrency", bs_.concurrency, ts_.concurrency),
    ]
    for name, bval, tval in pairs:
        if bval != tval:
            mismatches.append(f"{name} differs: baseline {json.dumps(bval, default=str)}, "
                              f"target {json.dumps(tval, default=str)}")
    bmap = {r.batch_size: r for r in base.results if r.status == "ok"}
    tmap = {r.batch_size: r for r in targ.results if r.status == "ok"}
    only = sorted(set(bmap) ^ set(tmap))
    if only:
        mismatches.append(f"batch sizes measured on one side only (not compared): {only}")
    shared = sorted(set(bmap) & set(tmap))
    if not shared:
        return result("not_comparable", "not_comparable: no batch size was measured on both sides", mismatches=mismatches)
    rows: list[RatioRow] = []
    for bsz in shared:
        b, t = bmap[bsz], tmap[bsz]
        bv, tv = _stat_value(b, params.statistic), _stat_value(t, params.statistic)
        if bv is None or tv is None:
            mismatches.append(f"batch {bsz}: no {params.statistic} latency on the {'baseline' if bv is None else 'target'} side "
                              "(a throughput-only log); not compared")
            continue
        row = RatioRow(batch_size=bsz, statistic=params.statistic, baseline_ms=bv, target_ms=tv, ratio=tv / bv,
                       baseline_throughput=b.throughput, target_throughput=t.throughput,
                       throughput_ratio=(t.throughput / b.throughput) if b.throughput and t.throughput else None)
        if len(b.samples_ms) >= 2 and len(t.samples_ms) >= 2:
            boot = bootstrap_ratio(b.samples_ms, t.samples_ms, params.statistic, params.confidence)
            row.ci_low, row.ci_high, row.ci_method = boot.low, boot.high, f"{int(params.confidence * 100)} % {boot.method}"
            row.mann_whitney_p = mann_whitney(b.samples_ms, t.samples_ms).p_value
            row.met = True if boot.high <= params.target_ratio else False if boot.low > params.target_ratio else None
        else:
            row.ci_method = "not available: a side has fewer than 2 raw timings"
            row.met = row.ratio <= params.target_ratio
        rows.append(row)
    if not rows:
        return result("not_comparable", "not_comparable: no batch size has latency on both sides", mismatches=mismatches)
    if any(r.met is False for r in rows):
        verdict: Literal["met", "not_met", "inconclusive"] = "not_met"
    elif any(r.met is None for r in rows):
        verdict = "inconclusive"
    else:
        verdict = "met"
    gaps, stage, causes = _bottleneck(bmap, tmap, rows)
    worst = max(rows, key=lambda r: r.ratio)
    ci = f" [{worst.ci_low:.3f}, {worst.ci_high:.3f}]" if worst.ci_low is not None and worst.ci_high is not None else ""
    summary = (f"{verdict}: {params.statistic} latency ratio target/baseline up to {worst.ratio:.3f}{ci} at batch {worst.batch_size} "
               f"(target <= {params.target_ratio:g})" + (f"; gap mostly in {stage}" if stage else "")
               + (f"; {len(mismatches)} mismatch(es) stated" if mismatches else ""))
    return result(verdict, summary, rows=rows, mismatches=mismatches, bottleneck_stage=stage, stage_gaps=gaps, likely_causes=causes)


def _bottleneck(
    bmap: dict[int, BatchResult], tmap: dict[int, BatchResult], rows: list[RatioRow]
) -> tuple[list[StageGap], str | None, list[str]]:
    """The stage with the largest added time (largest shared batch), then scaling/variance hints."""
    causes: list[str] = []
    gaps: list[StageGap] = []
    stage: str | None = None
    bsz = max(r.batch_size for r in rows)
    b, t = bmap[bsz], tmap[bsz]
    total_gap = (t.mean_ms or 0.0) - (b.mean_ms or 0.0)
    for name in sorted(set(b.stages) & set(t.stages)):
        delta = t.stages[name].mean_ms - b.stages[name].mean_ms
        gaps.append(StageGap(stage=name, baseline_ms=b.stages[name].mean_ms, target_ms=t.stages[name].mean_ms, delta_ms=delta,
                             share_of_gap=delta / total_gap if total_gap > 0 else None))
    gaps.sort(key=lambda g: g.delta_ms, reverse=True)
    if gaps and gaps[0].delta_ms > 0:
        stage = gaps[0].stage
        causes.append(_STAGE_CAUSES.get(stage, f"the '{stage}' stage takes {gaps[0].delta_ms:.3f} ms longer on the target"))
    elif not gaps and t.scope == "device_only" and total_gap > 0:
        stage = "inference"
        causes.append(_STAGE_CAUSES["inference"])
    if len(rows) >= 2:
        first, last = rows[0], rows[-1]
        if first.ratio > 1.2 * last.ratio and first.ratio > 1:
            causes.append(f"per-call overhead: the ratio falls from {first.ratio:.2f} at batch {first.batch_size} to {last.ratio:.2f} "
                          f"at batch {last.batch_size} (host-bound Python, kernel launch latency, small-batch inefficiency)")
        elif last.ratio > 1.2 * first.ratio and last.ratio > 1:
            causes.append(f"device throughput: the ratio grows from {first.ratio:.2f} to {last.ratio:.2f} with batch size "
                          "(compute or memory-bandwidth bound kernels, precision mode)")
    if t.warmup_detection and t.warmup_detection.residual_detected:
        causes.append(f"warm-up not finished: {t.warmup_detection.residual_detected} early timed iteration(s) on the target still look "
                      f"like warm-up (compilation); raise {frontend.option('warmup')}")
    if t.p50_ms and t.p95_ms and t.p95_ms / t.p50_ms > 1.5:
        causes.append(f"unstable target timings (p95/p50 = {t.p95_ms / t.p50_ms:.2f}): background load or a busy device; "
                      "run check-environment and look at npu_busy")
    return gaps, stage, causes[:2]


def _render_compare(out: ComparePerformanceOutput) -> str:
    lines = [f"[{out.verdict}] {out.summary}"]
    for r in out.rows:
        ci = f" [{r.ci_low:.3f}, {r.ci_high:.3f}]" if r.ci_low is not None and r.ci_high is not None else ""
        met = {True: "met", False: "not met", None: "undecided (the interval straddles the target)"}[r.met]
        lines.append(f"  bs {r.batch_size:>4}: {r.statistic} {r.baseline_ms:.3f} -> {r.target_ms:.3f} ms, ratio {r.ratio:.3f}{ci}, {met}")
    for g in out.stage_gaps:
        lines.append(f"  stage {g.stage:<12} {g.baseline_ms:.3f} -> {g.target_ms:.3f} ms ({g.delta_ms:+.3f})")
    lines += [f"  mismatch: {m}" for m in out.mismatches]
    lines += [f"  likely cause: {c}" for c in out.likely_causes]
    return terminal_lines(lines)
