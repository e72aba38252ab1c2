"""When a performance measurement may run, and what to hand over when it may not.

Why a module of its own: the migration rules allow timing only on a trigger (the user asked; the
environment check says auto and the user agreed; the acceptance criteria have a latency KPI). When
none holds, the answer is not an error but the missing conditions and a ready measurement to run,
worded for the front end that asked (a command line for a shell user, a tool call for an agent).
"""

from __future__ import annotations

import json
from typing import TypedDict

from acc_agent import frontend
from acc_agent.models.performance import MeasurePerformanceInput, NotExecuted
from acc_agent.tools.perf.measurement import plan_batches


class _Target(TypedDict, total=False):
    """What the handed-over tool call times: exactly one of a command, a log, or a callable (with its setup)."""

    command: str
    from_log: str
    callable: str
    setup: str | None


def trigger_condition(p: MeasurePerformanceInput) -> tuple[str | None, list[str]]:
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


def command_template(p: MeasurePerformanceInput) -> str:
    """The measurement to hand over: a command line for a shell user, a tool call for an MCP caller."""
    if frontend.current() == "mcp":
        target: _Target = (
            {"command": p.command} if p.command else {"from_log": str(p.from_log)} if p.from_log
            else {"callable": p.callable or "<module>:<function>", "setup": p.setup})
        sizes: list[int] | str = plan_batches(p.batch_sizes)[0] if p.batch_sizes != [1] else "<[1, target batch]>"
        return frontend.invoke("measure_performance", **target, batch_sizes=sizes, warmup=max(p.warmup, 10),
                               iterations=max(p.iterations, 100), scope=p.scope or "end_to_end",
                               requested=True, out="perf_<npu|gpu>.json")
    if p.command:
        what = f"--command {json.dumps(p.command)}"
    elif p.from_log:
        what = f"--from-log {p.from_log}"
    else:
        what = f"--callable {p.callable or '<module>:<function>'}" + (f" --setup {p.setup}" if p.setup else "")
    batches = ",".join(str(b) for b in plan_batches(p.batch_sizes)[0]) if p.batch_sizes != [1] else "1,<target batch>"
    return (
        f"acc-agent measure-performance {what} --batch-sizes {batches} --warmup {max(p.warmup, 10)} "
        f"--iterations {max(p.iterations, 100)} --scope {p.scope or 'end_to_end'} --out perf_<npu|gpu>.json --json"
    )


def not_executed(p: MeasurePerformanceInput, trigger: str | None, missing: list[str]) -> NotExecuted:
    """Why nothing was timed (no trigger, or a trigger but no target), what is missing, and what to run."""
    reason = (
        "performance measurement was not triggered: no trigger condition holds"
        if trigger is None
        else f"triggered ({trigger}) but nothing to measure was given"
    )
    if trigger is not None:
        missing = ["a target to time: " + ", ".join(
            (frontend.option("callable", "<MODULE:FUNC>"), frontend.option("command", "<CMD>"))) + " or "
            + frontend.option("from_log", "<LOG>")]
    return NotExecuted(reason=reason, missing_conditions=missing, command_template=command_template(p))
