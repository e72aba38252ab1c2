"""Which rank diverges first in a multi-rank dump, and which ranks are clean.

Each rank is diagnosed on its own. A rank whose first divergence is a collective (all_reduce,
all_gather, ...) whose own inputs agree only *receives* another rank's difference, so the rank at
fault is the earliest one whose divergence does not arrive through a collective (msprobe's
multi-rank first-diff analysis has the same idea along the communication graph).
"""

from __future__ import annotations

from dataclasses import dataclass

from acc_agent.models.diagnosis import Diagnosis, FirstDivergence, RankFinding
from acc_agent.numerics.diagnosis.graph import COLLECTIVE_PREFIXES

_SEVERITY = {"operator_fault": 0, "input_mismatch": 1, "precision_accumulation": 2, "layer_mismatch": 3,
             "no_layer_fault": 9}


@dataclass
class RankResult:
    key: str
    first_divergence: FirstDivergence | None
    diagnosis: Diagnosis


def rank_name(key: str) -> str:
    """``step0/rank1`` -> ``rank1``; a single-rank key stays as it is."""
    return key.rsplit("/", 1)[-1] if key else key


def _via_collective(fd: FirstDivergence | None) -> bool:
    if fd is None or fd.module is None:
        return False
    return fd.module.startswith(COLLECTIVE_PREFIXES) and fd.enters_through in ("operator", "overflow")


def combine_ranks(results: list[RankResult]) -> tuple[FirstDivergence | None, Diagnosis]:
    """One answer for all ranks: the rank at fault named, the clean ones listed."""
    if len(results) == 1:
        r = results[0]
        if r.first_divergence is not None and r.key:
            r.first_divergence.rank, r.first_divergence.rank_key = rank_name(r.key), r.key
        return r.first_divergence, r.diagnosis
    findings: list[RankFinding] = []
    for r in results:
        fd = r.first_divergence
        if r.diagnosis.rows_judged == 0:
            status = "not_judged"
        elif fd is None and r.diagnosis.category == "no_layer_fault":
            status = "clean"
        elif _via_collective(fd):
            status = "via_collective"
        else:
            status = "diverges"
        findings.append(RankFinding(rank=rank_name(r.key), status=status,  # type: ignore[arg-type]
                                    first_divergence=fd.name if fd else None, module=fd.module if fd else None,
                                    category=r.diagnosis.category, position=fd.index if fd else None))
    order = sorted(range(len(results)), key=lambda i: (
        {"diverges": 0, "via_collective": 1, "clean": 2, "not_judged": 3}[findings[i].status],
        0 if results[i].diagnosis.pass_walked == "forward" else 1,
        _SEVERITY.get(results[i].diagnosis.category, 5) if results[i].first_divergence is None else 0,
        findings[i].position if findings[i].position is not None else 1 << 60,
        results[i].key))
    pick = results[order[0]]
    fd, diag = pick.first_divergence, pick.diagnosis.model_copy(deep=True)
    if fd is not None:
        fd = fd.model_copy(deep=True)
        fd.rank, fd.rank_key = rank_name(pick.key), pick.key
    clean = [f.rank for f in findings if f.status == "clean"]
    received = [f.rank for f in findings if f.status == "via_collective"]
    others = [f.rank for f, r in zip(findings, results, strict=True) if f.status == "diverges" and r is not pick]
    if fd is not None:
        text = f" Ranks: the divergence starts on {rank_name(pick.key)}"
        if received:
            verb = "receives" if len(received) == 1 else "receive"
            text += f"; {', '.join(received)} only {verb} it through a collective (its own inputs agree)"
        if others:
            text += f"; {', '.join(others)} diverge too (later or on their own)"
        text += f"; clean: {', '.join(clean) if clean else 'none'}."
        diag.explanation += text
    elif len(clean) == len(findings):
        diag.explanation += f" All {len(findings)} ranks are clean."
    diag.ranks = findings
    return fd, diag
