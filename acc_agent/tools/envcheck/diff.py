"""Compare two environment snapshots (baseline machine, target machine) key by key.

Why typed: a snapshot is read into :class:`EnvironmentSnapshot`, which settles once how a damaged
or hand-edited file reads; the comparison then works on plain ``key -> text`` pairs and only decides
what a difference means (see :data:`rules.DIFF_IMPACT`).
"""

from __future__ import annotations

import json
from pathlib import Path

from acc_agent import frontend
from acc_agent.errors import AccAgentError
from acc_agent.models.common import Evidence
from acc_agent.models.environment import (
    DiffEnvironmentsOutput,
    EnvDifference,
    EnvironmentSnapshot,
)
from acc_agent.tools.envcheck import rules
from acc_agent.tools.envcheck.probes import read_recorded_text


def load_snapshot(path: Path) -> EnvironmentSnapshot:
    """A snapshot file: JSON holding at least the 'checks' and 'versions' sections check_environment writes."""
    text = read_recorded_text(path, "snapshot")
    hint = f"Pass a file written by {frontend.invoke('check_environment', snapshot_out='<FILE>')}."
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise AccAgentError("invalid_snapshot", f"{path} is not JSON ({exc.msg} at line {exc.lineno})",
                            hint=hint, path=str(path)) from None
    if not isinstance(data, dict) or "checks" not in data or "versions" not in data:
        raise AccAgentError("invalid_snapshot", f"{path} is not an environment snapshot (no 'checks'/'versions')",
                            hint=hint, path=str(path))
    return EnvironmentSnapshot.model_validate(data)


def _devices(names: list[str | None], kind: str) -> str:
    return f"{len(names)} x {names[0]} ({kind})"


def flatten(snapshot: EnvironmentSnapshot) -> dict[str, str | None]:
    """``section.key -> text`` for every version and system fact, plus the devices (NPUs before GPUs)."""
    flat = {f"versions.{k}": v for k, v in snapshot.versions.items()}
    flat.update({f"system.{k}": v for k, v in snapshot.system.items()})
    chips, gpus = snapshot.npu_smi.chips, snapshot.nvidia_smi.gpus
    flat["devices"] = _devices(chips, "NPU") if chips else _devices(gpus, "GPU") if gpus else None
    return flat


def difference(key: str, baseline: str | None, target: str | None) -> EnvDifference:
    """One differing key, with its impact (a torch difference is judged by its release line) and a note."""
    impact: rules.Impact = rules.DIFF_IMPACT.get(key, "review")
    note = ""
    if key == "versions.torch" and baseline and target:
        bb, tb = rules.base_version(baseline), rules.base_version(target)
        if bb and tb and bb[:2] != tb[:2]:
            note = "different torch minor releases: operator numerics and defaults may differ"
        else:
            note = "same torch release line; build tags differ (cpu/cuda vs npu adapter)"
            impact = "expected" if bb == tb else "review"
    if (baseline is None) != (target is None):
        note = note or ("missing on the baseline side" if baseline is None else "missing on the target side")
    return EnvDifference(key=key, baseline=baseline, target=target, impact=impact, note=note)


def diff_snapshots(baseline: EnvironmentSnapshot, target: EnvironmentSnapshot, evidence: list[Evidence]) -> DiffEnvironmentsOutput:
    """Every key either side records, in order: equal ones listed as same, the others as differences."""
    base, targ = flatten(baseline), flatten(target)
    diffs: list[EnvDifference] = []
    same: list[str] = []
    for key in sorted(set(base) | set(targ)):
        b, t = base.get(key), targ.get(key)
        if b == t:
            if b is not None:
                same.append(key)
            continue
        diffs.append(difference(key, b, t))
    review = [d.key for d in diffs if d.impact == "review"]
    summary = (
        "the two environments are the same on every recorded key"
        if not diffs
        else f"{len(diffs)} difference(s); to review before comparing numbers: {', '.join(review) or 'none'}"
    )
    return DiffEnvironmentsOutput(verdict="differs" if diffs else "same", summary=summary, differences=diffs, same=same,
                                  evidence=evidence)
