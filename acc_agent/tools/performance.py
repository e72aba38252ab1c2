"""The performance skill: measure latency/throughput reproducibly, and compare two measurements.

``measure_performance`` runs only when the migration rules allow it (the trigger conditions):
the user asked (running the CLI command with --callable/--command/--from-log *is* asking), or the
environment verdict is ``auto``
and the user agreed, or the acceptance criteria contain a latency/throughput KPI. Otherwise it
returns ``not_executed`` with exactly the reason, the missing conditions and a command template.

``compare_performance`` refuses like-for-unlike comparisons unless told, gives target/baseline
ratios with bootstrap confidence intervals, a verdict against the configured target ratio, the
stage that explains most of the gap and the one or two likeliest causes.

This module holds the two tools and the order of their steps; the steps live in
:mod:`acc_agent.tools.perf` (runners, log reading, statistics, comparison, text).
"""

from __future__ import annotations

from typing import Literal

from acc_agent import frontend
from acc_agent.atomic import atomic_write_text
from acc_agent.errors import AccAgentError
from acc_agent.models.common import Evidence
from acc_agent.models.performance import (
    SCOPE_TEXT,
    ComparePerformanceInput,
    ComparePerformanceOutput,
    MeasurementSettings,
    MeasurePerformanceInput,
    MeasurePerformanceOutput,
)
from acc_agent.tools.perf.comparison import (
    bottleneck,
    load_results,
    overall_verdict,
    ratio_rows,
    settings_mismatches,
)
from acc_agent.tools.perf.from_log import measure_log
from acc_agent.tools.perf.measurement import (
    ITERATIONS_REASON,
    WARMUP_REASON,
    host_environment,
    plan_batches,
    summary_line,
)
from acc_agent.tools.perf.runners import measure_callable, measure_command
from acc_agent.tools.perf.text import render_compare, render_measure
from acc_agent.tools.perf.trigger import not_executed, trigger_condition
from acc_agent.tools.spec import tool


@tool(
    description="Call only when performance testing is triggered (user asked; environment auto and user agreed; latency "
    "KPI): times a callable or command per batch size. Returns results[] (p50_ms, p95_ms) or not_executed.",
    title="Measure latency and throughput",
    read_only=False,
    destructive=True,
    idempotent=False,
    open_world=True,
    text_renderer=render_measure,
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
        plan_batches(batches)  # validates >= 1
    else:
        batches, batch_note = plan_batches(params.batch_sizes)
    trigger, missing = trigger_condition(params)
    if trigger is None or not targets:
        ne = not_executed(params, trigger, missing)
        return MeasurePerformanceOutput(verdict="not_executed", summary=f"not_executed: {ne.reason}", not_executed=ne,
                                        evidence=[Evidence(kind="setting", ref="trigger", detail=ne.reason)])
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
        rows, sync_text = measure_callable(params, batches)
        source: Literal["callable", "command", "log"] = "callable"
        target = params.callable + (f" (setup {params.setup})" if params.setup else "")
        evidence.append(Evidence(kind="command", ref=f"callable {target}", detail="timed in-process"))
    elif params.command:
        rows = measure_command(params, batches)
        source, target = "command", params.command
        sync_text = "not needed: each iteration is a whole process, and process exit waits for device work"
        notes.append("command timing includes process start-up and model loading on every run; use "
                     f"{frontend.option('callable')} to time the call alone")
        evidence.append(Evidence(kind="command", ref=params.command, detail="timed per process run, shell not used"))
    else:
        assert params.from_log is not None
        rows, log_notes, how = measure_log(params, batches)
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
        verdict=verdict, summary="", results=rows, settings=settings, environment=host_environment(),
        trigger=trigger, notes=notes, evidence=evidence,
    )
    out.summary = summary_line(out)
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


@tool(
    description="Call with two measure_performance result files (baseline, NPU): latency ratios with confidence intervals "
    "vs target_ratio, the stage behind the gap. Returns verdict met | not_met | inconclusive.",
    title="Compare performance",
    read_only=True,
    positional=("baseline", "target"),
    text_renderer=render_compare,
)
def compare_performance(params: ComparePerformanceInput) -> ComparePerformanceOutput:
    base, targ = load_results(params.baseline, "baseline"), load_results(params.target, "target")
    evidence = [Evidence(kind="file", ref=str(params.baseline), detail="baseline results"),
                Evidence(kind="file", ref=str(params.target), detail="target results"),
                Evidence(kind="threshold", ref=f"target_ratio={params.target_ratio}", detail=f"{params.statistic} latency, target/baseline")]

    def not_comparable(reason: str, mismatches: list[str]) -> ComparePerformanceOutput:
        return ComparePerformanceOutput(verdict="not_comparable", summary=f"not_comparable: {reason}",
                                        target_ratio=params.target_ratio, statistic=params.statistic, evidence=evidence,
                                        baseline_settings=base.settings, target_settings=targ.settings,
                                        mismatches=mismatches)

    for side, res in (("baseline", base), ("target", targ)):
        if res.settings is None or not any(r.status == "ok" for r in res.results):
            return not_comparable(f"the {side} file has no measured results ({res.verdict})", [f"{side} verdict {res.verdict}"])
    bs_, ts_ = base.settings, targ.settings
    assert bs_ is not None and ts_ is not None
    mismatches: list[str] = []
    if bs_.scope != ts_.scope:
        mismatches.append(f"scope differs: baseline {bs_.scope}, target {ts_.scope}")
        if not params.allow_scope_mismatch:
            return not_comparable(mismatches[0] + f" (rerun with the same {frontend.option('scope')}, or pass "
                                  f"{frontend.option('allow_scope_mismatch', True)} to compare anyway)", mismatches)
    mismatches += settings_mismatches(bs_, ts_)
    bmap = {r.batch_size: r for r in base.results if r.status == "ok"}
    tmap = {r.batch_size: r for r in targ.results if r.status == "ok"}
    only = sorted(set(bmap) ^ set(tmap))
    if only:
        mismatches.append(f"batch sizes measured on one side only (not compared): {only}")
    shared = sorted(set(bmap) & set(tmap))
    if not shared:
        return not_comparable("no batch size was measured on both sides", mismatches)
    rows, skipped = ratio_rows(bmap, tmap, shared, params)
    mismatches += skipped
    if not rows:
        return not_comparable("no batch size has latency on both sides", mismatches)
    verdict = overall_verdict(rows)
    gaps, stage, causes = bottleneck(bmap, tmap, rows)
    worst = max(rows, key=lambda r: r.ratio)
    ci = f" [{worst.ci_low:.3f}, {worst.ci_high:.3f}]" if worst.ci_low is not None and worst.ci_high is not None else ""
    summary = (f"{verdict}: {params.statistic} latency ratio target/baseline up to {worst.ratio:.3f}{ci} at batch {worst.batch_size} "
               f"(target <= {params.target_ratio:g})" + (f"; gap mostly in {stage}" if stage else "")
               + (f"; {len(mismatches)} mismatch(es) stated" if mismatches else ""))
    return ComparePerformanceOutput(verdict=verdict, summary=summary, target_ratio=params.target_ratio, statistic=params.statistic,
                                    evidence=evidence, baseline_settings=base.settings, target_settings=targ.settings,
                                    rows=rows, mismatches=mismatches, bottleneck_stage=stage, stage_gaps=gaps,
                                    likely_causes=causes)
