"""``compare_run_configs``: are baseline and target configured alike before their curves are compared?

Seed 001: "ensure both sides use the same configuration before comparing" — learning rate, batch
sizes, parallel split, warm-up, model size, precision, flash attention. Settings are read from the
logs' argument/config dumps or from YAML/JSON/python config files (python is parsed, never run).
"""

from __future__ import annotations

import math
from typing import TypedDict

from acc_agent.models.common import Evidence
from acc_agent.models.training import (
    CompareRunConfigsInput,
    CompareRunConfigsOutput,
    ConfigDiff,
    ConfigStatus,
)
from acc_agent.text_columns import Column, Table, render
from acc_agent.tools.spec import tool


def _same(a: object, b: object) -> bool:
    if isinstance(a, bool) or isinstance(b, bool):
        return bool(a) == bool(b) if isinstance(a, bool) and isinstance(b, bool) else str(a).lower() == str(b).lower()
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return math.isclose(float(a), float(b), rel_tol=1e-9, abs_tol=0.0)
    return str(a).strip().lower() == str(b).strip().lower()


def _show(value: object) -> str:
    """A setting as a person writes it: 2e-05, 16, bf16, yes/no, not stated — never a Python repr."""
    if value is None:
        return "not stated"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        return f"{value:g}"
    if isinstance(value, (list, tuple)):
        return ", ".join(_show(v) for v in value)
    return str(value)


_STATUS: dict[ConfigStatus, str] = {"same": "same", "different": "DIFFERENT", "baseline_only": "baseline only", "target_only": "target only"}

#: One line per setting: how the two sides compare, its name, then each side's value.
_DIFF_LINES = Table[ConfigDiff]([
    Column(lambda d: _STATUS[d.status], width=13),
    Column(lambda d: d.name, width=22),
    Column(lambda d: "baseline"),
    Column(lambda d: _show(d.baseline), width=20),
    Column(lambda d: "target"),
    Column(lambda d: _show(d.target)),
])


def _render(out: CompareRunConfigsOutput) -> str:
    return render(out, _DIFF_LINES.lines(out.diffs))


class _Sides(TypedDict):
    """What every result names, whatever the verdict: the two sources and each setting's comparison."""

    baseline: str
    target: str
    baseline_source: str
    target_source: str
    diffs: list[ConfigDiff]


@tool(
    description="Call before comparing loss curves: settings that differ between baseline and target runs (lr, batch, "
    "parallelism, precision), from logs or configs. Returns verdict consistent | mismatch and diffs[].",
    title="Diff run configurations",
    read_only=True,
    positional=("baseline", "target"),
    text_renderer=_render,
)
def compare_run_configs(params: CompareRunConfigsInput) -> CompareRunConfigsOutput:
    from acc_agent.io.logs.config import canonical_config, raw_config_from_file

    b_flat, b_src = raw_config_from_file(params.baseline)
    t_flat, t_src = raw_config_from_file(params.target)
    b, t = canonical_config(b_flat), canonical_config(t_flat)
    diffs: list[ConfigDiff] = []
    for name in sorted(set(b) | set(t)):
        if name in params.ignore:
            continue
        if name in b and name in t:
            status: ConfigStatus = "same" if _same(b[name][0], t[name][0]) else "different"
            diffs.append(ConfigDiff(name=name, status=status, baseline=b[name][0], target=t[name][0], baseline_key=b[name][1], target_key=t[name][1]))
        elif name in b:
            diffs.append(ConfigDiff(name=name, status="baseline_only", baseline=b[name][0], baseline_key=b[name][1]))
        else:
            diffs.append(ConfigDiff(name=name, status="target_only", target=t[name][0], target_key=t[name][1]))
    evidence = [Evidence(kind="file", ref=str(params.baseline), detail=f"baseline settings: {b_src}"),
                Evidence(kind="file", ref=str(params.target), detail=f"target settings: {t_src}")]
    both = [d for d in diffs if d.status in ("same", "different")]
    different = [d for d in both if d.status == "different"]
    head = _Sides(baseline=str(params.baseline), target=str(params.target), baseline_source=b_src, target_source=t_src, diffs=diffs)
    one_sided = [d.name for d in diffs if d.status in ("baseline_only", "target_only")]
    tail = f"; stated on one side only: {', '.join(one_sided)}" if one_sided else ""
    if not both:
        return CompareRunConfigsOutput(verdict="insufficient_data", summary=f"no setting could be read on both sides (baseline: {b_src}; target: {t_src}){tail}", evidence=evidence, **head)
    if different:
        text = ", ".join(f"{d.name} {_show(d.baseline)} vs {_show(d.target)}" for d in different)
        return CompareRunConfigsOutput(verdict="mismatch", summary=f"{len(different)} of {len(both)} common settings differ: {text}{tail}", evidence=evidence, **head)
    return CompareRunConfigsOutput(verdict="consistent", summary=f"all {len(both)} common settings agree ({', '.join(d.name for d in both)}){tail}", evidence=evidence, **head)
