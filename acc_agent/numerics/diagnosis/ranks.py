"""Which rank diverges first in a multi-rank dump, and which ranks are clean.

Each rank is diagnosed on its own. A rank whose first divergence is a collective (all_reduce,
all_gather, ...) whose own inputs agree only *receives* another rank's difference, so the rank at
fault is the earliest one whose divergence does not arrive through a collective (msprobe's
multi-rank first-diff analysis has the same idea along the communication graph).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from acc_agent.models.compare import DumpRow
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
    """``step0/rank1`` -> ``rank1``; a single-rank key stays as it is; a step alone (the lone ``proc<pid>`` folder of a
    run without a process group) names no rank: ""."""
    last = key.rsplit("/", 1)[-1] if key else key
    return "" if _STEP_ONLY.match(last) else last


_STEP_KEY = re.compile(r"step(\d+)(?:/|$)")
_STEP_ONLY = re.compile(r"^step\d+$")
#: Said when only one rank was compared and its divergence enters through a collective.
OTHER_RANKS_ACTION = ("Compare every rank: pass the dump roots that hold all the rank folders (golden and target) so "
                      "that the rank where the difference starts is found; this rank only receives it through {call}.")


def step_of(key: str) -> int | None:
    """``step3/rank1`` -> 3; None for a key without a step folder."""
    m = _STEP_KEY.match(key)
    return int(m.group(1)) if m else None


def other_dump_note(golden_key: str, target_key: str) -> str | None:
    """What a reviewer must know when the one golden dump is compared with a target dump of another step or rank."""
    if not golden_key or not target_key or golden_key == target_key:
        return None
    g_step, t_step = step_of(golden_key), step_of(target_key)
    g_rank, t_rank = rank_name(golden_key), rank_name(target_key)
    whats = []
    if g_step is not None and t_step is not None and g_step != t_step:
        whats.append("another training step, which starts from weights that the steps between have updated")
    if g_rank and t_rank and g_rank != t_rank:
        whats.append("another rank, which is fed other data or holds another shard of the model")
    if not whats:
        return None
    return (f" The golden dump is {golden_key} and the target's is {target_key}: " + " and ".join(whats)
            + ", so some differences are expected there; dump the same step and rank on both sides to compare like "
              "with like.")


def _label(key: str, several_steps: bool) -> str:
    """How a rank dump is named to the reader: its rank, with its step where the dump holds several steps."""
    return key if several_steps and step_of(key) is not None else (rank_name(key) or key)


#: What to check when the weights differ only from a later step on (see _updated_between_steps).
OPTIMIZER_ACTION = ("Compare the optimizer of the two runs: its type, learning rate and schedule, momentum or Adam "
                    "betas and eps, weight decay, gradient clipping and loss scaling, and which parameters it updates; "
                    "the step before agrees everywhere, so only the update between the steps changed the weights.")


def _updated_between_steps(diag: Diagnosis, step: int, findings: list[RankFinding]) -> bool:
    """Whether a parameter first differs at a step after earlier steps that are clean everywhere (forward and backward):
    nothing but the optimizer's update stands between them."""
    if step <= 0 or diag.details.get("argument_kind") != "parameter":
        return False
    earlier = [f for f in findings if f.step is not None and f.step < step]
    return bool(earlier) and all(f.status == "clean" for f in earlier)


def _same_call(finding: RankFinding, fd: FirstDivergence | None) -> bool:
    """Whether another rank's first divergence is at the same call as the one named."""
    return fd is not None and finding.module is not None and finding.module == fd.module \
        and finding.first_divergence == fd.name


def _via_collective(fd: FirstDivergence | None) -> bool:
    if fd is None or fd.module is None:
        return False
    return fd.module.startswith(COLLECTIVE_PREFIXES) and fd.enters_through in ("operator", "overflow")


def _evidence(fd: FirstDivergence | None) -> int:
    """How directly a rank's first divergence shows, for ranks that diverge at the same call: an overflow from finite
    inputs first, then a difference measured in values, then one seen only in a digest (md5 differs while the
    statistics agree). A digest is the weakest sign: msprobe hashes a CPU tensor in a background thread, so an in-place
    call right after (an all_reduce of that output) can change what it hashes, and another kernel's last bits change
    it too."""
    if fd is None:
        return 3
    if fd.enters_through == "overflow":
        return 0
    measured = fd.output_metrics.get("excess") is not None or fd.output_metrics.get("cosine") is not None
    return 1 if measured else 2


def combine_ranks(results: list[RankResult]) -> tuple[FirstDivergence | None, Diagnosis]:
    """One answer for all ranks: the rank at fault named, the clean ones listed.

    A dump of several training steps (``step0/…``, ``step1/…``) is judged in time order: a later
    step starts from weights that the earlier step's differing gradients already updated, so it
    diverges as a consequence and the earliest diverging step is the one named."""
    if len(results) == 1:
        r = results[0]
        if r.first_divergence is not None and r.key:
            r.first_divergence.rank, r.first_divergence.rank_key = rank_name(r.key) or None, r.key
            r.first_divergence.step = step_of(r.key)
        if _via_collective(r.first_divergence):
            assert r.first_divergence is not None  # _via_collective
            call = r.first_divergence.module
            r.diagnosis.explanation += (
                f" Only one rank was compared and {call} is a collective: its output combines the inputs of every "
                "rank in its group, and this rank's inputs agree, so the difference most likely comes from another "
                "rank (with a single rank in the group, the collective itself computes otherwise, e.g. its reduce op).")
            r.diagnosis.next_actions.insert(0, OTHER_RANKS_ACTION.format(call=call))
        return r.first_divergence, r.diagnosis
    several_steps = len({step_of(r.key) for r in results}) > 1
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
        findings.append(RankFinding(rank=rank_name(r.key) or r.key, step=step_of(r.key), status=status,  # type: ignore[arg-type]
                                    first_divergence=fd.name if fd else None, module=fd.module if fd else None,
                                    category=r.diagnosis.category, position=fd.index if fd else None))
    order = sorted(range(len(results)), key=lambda i: (
        {"diverges": 0, "via_collective": 1, "clean": 2, "not_judged": 3}[findings[i].status],
        step_of(results[i].key) or 0,
        0 if results[i].diagnosis.pass_walked == "forward" else 1,
        _SEVERITY.get(results[i].diagnosis.category, 5) if results[i].first_divergence is None else 0,
        findings[i].position if findings[i].position is not None else 1 << 60,
        _evidence(results[i].first_divergence),
        results[i].key))
    pick = results[order[0]]
    fd, diag = pick.first_divergence, pick.diagnosis.model_copy(deep=True)
    if fd is not None:
        fd = fd.model_copy(deep=True)
        fd.rank, fd.rank_key, fd.step = rank_name(pick.key) or None, pick.key, step_of(pick.key)
    labels = [_label(r.key, several_steps) for r in results]
    clean = [lab for lab, f in zip(labels, findings, strict=True) if f.status == "clean"]
    received = [lab for lab, f in zip(labels, findings, strict=True) if f.status == "via_collective"]
    diverging = [(lab, f) for lab, f, r in zip(labels, findings, results, strict=True)
                 if f.status == "diverges" and r is not pick]
    # other ranks of the same step whose first divergence is the very call named: the same cause on each rank
    alike = [lab for lab, f in diverging if f.step == step_of(pick.key) and _same_call(f, fd)]
    others = [lab for lab, _ in diverging if lab not in alike]
    pick_step = step_of(pick.key) or 0
    later_steps = several_steps and any((f.step or 0) > pick_step for f in findings
                                        if f.status in ("diverges", "via_collective"))
    if fd is not None:
        text = f" {'Steps and ranks' if several_steps else 'Ranks'}: the divergence starts on " \
               f"{_label(pick.key, several_steps)}"
        if received:
            verb = "receives" if len(received) == 1 else "receive"
            text += (f"; {', '.join(received)} only {verb} it through a collective "
                     f"({'its' if len(received) == 1 else 'their'} own inputs agree)")
        if alike:
            text += (f"; {', '.join(alike)} {'diverges' if len(alike) == 1 else 'diverge'} at the same call "
                     f"({fd.module}) on {'its' if len(alike) == 1 else 'their'} own")
        if others:
            text += f"; {', '.join(others)} {'diverges' if len(others) == 1 else 'diverge'} too (later or on their own)"
        text += f"; clean: {', '.join(clean) if clean else 'none'}."
        if later_steps:
            text += (" A later step starts from weights the earlier step's differing gradients already updated, so its "
                     "divergence follows from this one and is not a fault of its own.")
        diag.explanation += text
        if _updated_between_steps(diag, pick_step, findings):
            diag.explanation += (f" The weights that enter step {pick_step} differ while every earlier step agrees, its "
                                 "gradients included: the optimizer's update between the steps differs.")
            diag.next_actions.insert(0, OPTIMIZER_ACTION)
    elif len(clean) == len(findings):
        diag.explanation += (f" All {len(findings)} step and rank dumps are clean." if several_steps
                             else f" All {len(findings)} ranks are clean.")
    diag.ranks = findings
    return fd, diag


#: How a rank's own first divergence is marked in its row when another rank is the one named: each rank's diagnosis
#: marks its own, and a reader of the merged table must not take a rank that only receives the difference for the
#: place it starts.
FIRST_MARK = "first divergence"
RECEIVED_MARK = "this rank's first divergence, received through a collective"
OWN_MARK = "this rank's first divergence"


def mark_rank_rows(ranks: list[tuple[str, FirstDivergence | None, list[DumpRow]]],
                   named: FirstDivergence | None) -> DumpRow | None:
    """Re-word the first-divergence marks of the ranks not named; the named first divergence's row, if any.

    ``ranks``: each rank's key, its own first divergence and its rows."""
    found = None
    for key, fd, rows in ranks:
        if fd is None:
            continue
        mine = named is not None and (len(ranks) == 1 or key == named.rank_key)
        for row in rows:
            if row.name != fd.name or not row.message.startswith(FIRST_MARK):
                continue
            if mine:
                found = row
            else:
                mark = RECEIVED_MARK if _via_collective(fd) else OWN_MARK
                row.message = mark + row.message[len(FIRST_MARK):]
            break
    return found
