"""The terminal text of check_environment: one line per check, why and fix under each that needs action.

Why its own module: the layout (columns, which statuses carry a why/fix) is what a terminal user
reads, and it changes for different reasons than the checks themselves.
"""

from __future__ import annotations

from typing import NamedTuple

from acc_agent.models.environment import Check, CheckEnvironmentOutput
from acc_agent.text_columns import Column, Table, render

#: Statuses whose line is followed by the reason and the fix: the ones a user has to act on.
_NEEDS_ACTION = ("fail", "warn", "unknown")


class CheckLine(NamedTuple):
    """One line under a check: its status and name on the check's own line, blank on its why/fix lines."""

    status: str
    name: str
    text: str


def _lines_of(check: Check) -> list[CheckLine]:
    lines = [CheckLine(check.status, check.name, check.value or "-")]
    if check.status in _NEEDS_ACTION:
        lines.append(CheckLine("", "", f"why: {check.reason}"))
        if check.fix:
            lines.append(CheckLine("", "", f"fix: {check.fix}"))
    return lines


def render_check(out: CheckEnvironmentOutput) -> str:
    width = max((len(c.name) for c in out.checks), default=10)
    # The name column is one wider than the longest name: two spaces then part it from the value.
    table = Table[CheckLine]([
        Column(lambda line: line.status, width=8),
        Column(lambda line: line.name, width=width + 1),
        Column(lambda line: line.text),
    ])
    rows = [line for check in out.checks for line in _lines_of(check)]
    snapshot = ["", f"snapshot written to {out.snapshot_path}"] if out.snapshot_path else []
    return render(out, [""], table.lines(rows), snapshot)
