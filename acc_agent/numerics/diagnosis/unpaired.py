"""Calls one run records before the first paired tensor and the other does not: not grounds for an input mismatch.

"The network input already differs" holds when the first tensor both runs record is the data both were fed. When
one run records calls before it that the other does not, that tensor is what those calls made, and they were not
compared: the runs executed different code. In eval mode or under ``torch.no_grad()``, ``nn.TransformerEncoderLayer``
and ``nn.MultiheadAttention`` take a fused fast path that msprobe does not record, so a golden in eval mode against a
target left in train mode records one call against twenty, and pairing by order and shape pairs the golden's head
with the target's. The answer names what was not paired instead of blaming the data.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from acc_agent.models.diagnosis import Diagnosis, FirstDivergence
from acc_agent.numerics.diagnosis import explain

if TYPE_CHECKING:
    from acc_agent.io.dumps import Dump
    from acc_agent.numerics.diagnosis.graph import Graph, Tensor

#: Call names listed in the answer, at most.
_LISTED = 12


def unpaired_before(t: Tensor, graph: Graph, golden: Dump | None, target: Dump | None) -> tuple[list[str], list[str]]:
    """Forward calls each run records before the tensor ``t`` that no compared row pairs: (the target's, the
    golden's), each in execution order."""
    if golden is None or target is None:
        return [], []
    t_entry = target.by_name.get(t.name)
    g_entry = golden.by_name.get(t.row.__dict__.get("golden_name") or t.name)
    paired_target, paired_golden = paired_calls(graph, golden)
    return (_before(target, t_entry.index if t_entry is not None else 0, paired_target),
            _before(golden, g_entry.index if g_entry is not None else 0, paired_golden))


def paired_calls(graph: Graph, golden: Dump | None) -> tuple[set[str], set[str]]:
    """The call keys some compared row pairs: (the target's, the golden's)."""
    paired_golden = {e.module_key for x in graph.tensors
                     if (e := golden.by_name.get(x.row.__dict__.get("golden_name") or x.name)) is not None} \
        if golden is not None else set()
    return {x.key for x in graph.tensors}, paired_golden


def _is_forward(key: str) -> bool:
    return key.endswith(".forward") or ".forward." in key


def recomputed_by_side(graph: Graph, golden: Dump | None, target: Dump | None) -> list[tuple[str, list[str]]]:
    """(side, :func:`recomputed_calls`) for the target and then the golden; the paired call keys are gathered only
    where a side records a forward call after a backward one (300k rows of a forward-only dump skip it)."""
    sides = [(side, dump) for side, dump in (("target", target), ("golden", golden))
             if dump is not None and _forward_after_backward(dump)]
    if not sides:
        return []
    paired_target, paired_golden = paired_calls(graph, golden)
    return [(side, recomputed_calls(dump, paired_target if side == "target" else paired_golden))
            for side, dump in sides]


def _forward_after_backward(dump: Dump) -> bool:
    """Whether some forward call's entry comes after a backward call's (what :func:`recomputed_calls` needs)."""
    backward = False
    for e in dump.entries:
        if not backward:
            backward = ".backward" in e.module_key
        elif ".forward" in e.module_key:
            return True
    return False


def recomputed_calls(dump: Dump | None, paired: set[str]) -> list[str]:
    """Forward calls one side records inside its backward pass that no compared row pairs (``paired``: that side's
    paired call keys): what activation checkpointing runs again to rebuild the activations a backward call needs
    (``torch.utils.checkpoint``, Megatron's recompute). Only a part of the forward pass, with backward calls after it:
    a second micro-batch runs the whole forward pass again and then its own backward."""
    if dump is None:
        return []
    before: set[str] = set()
    found: dict[str, None] = {}
    backward = resumed = False
    for e in dump.entries:
        key = e.module_key
        if key.endswith(".backward") or ".backward." in key:
            backward = True
            resumed = bool(found)
        elif _is_forward(key):
            if not backward:
                before.add(key)
            elif key not in paired:
                found[key] = None
                resumed = False
    return list(found) if found and resumed and len(found) < len(before) else []


def forward_tail(graph: Graph, golden: Dump | None, target: Dump | None, target_calls: list[str],
                 golden_calls: list[str]) -> tuple[str, list[str], str] | None:
    """(side, its unpaired calls, the last forward call both runs record) when every call one run records and the
    other does not comes after the last forward call both record: that run ends its forward pass with more calls (a
    loss with another term, a head the other leaves out). None otherwise."""
    paired_target, paired_golden = paired_calls(graph, golden)
    for side, dump, calls, paired in (("golden", golden, golden_calls, paired_golden),
                                      ("target", target, target_calls, paired_target)):
        other_calls = target_calls if side == "golden" else golden_calls
        if dump is None or not calls or other_calls:
            continue
        first_of: dict[str, int] = {}
        for entry in dump.entries:
            first_of.setdefault(entry.module_key, entry.index)
        last = max((k for k in paired if _is_forward(k)), key=lambda k: first_of.get(k, -1), default=None)
        if last is not None and all(first_of.get(c, -1) > first_of.get(last, -1) for c in calls):
            return side, calls, last
    return None


def _before(dump: Dump, index: int, paired: set[str]) -> list[str]:
    calls: dict[str, None] = {}
    for e in dump.entries[:index]:
        key = e.module_key
        if key not in paired and ".backward" not in key and "parameters_grad" not in key:
            calls[key] = None
    return list(calls)


def unpaired_calls(t: Tensor, target_calls: list[str], golden_calls: list[str], base: explain.JudgementFields,
                   tail: tuple[str, list[str], str] | None = None) -> tuple[FirstDivergence, Diagnosis]:
    """The first paired tensor differs after calls only one run recorded (see the module docstring); ``tail``: they
    all end one run's forward pass (see :func:`forward_tail`)."""
    if tail is not None and t.direction == "backward":
        return _longer_forward(t, target_calls, golden_calls, base, tail)
    unpaired = "; ".join(f"the {side} records {len(calls)} call{'s' * (len(calls) > 1)} before it that the {other} "
                         f"does not (first: {calls[0]})"
                         for side, other, calls in (("target", "golden", target_calls), ("golden", "target", golden_calls))
                         if calls)
    fd = explain.divergence_at(t, f"the first tensor both runs record already differs, but {unpaired}: what those "
                                  "calls computed was not compared")
    explanation = (f"The first tensor both runs record, {t.name}, already differs ({explain.error_text(t)}), but "
                   f"{unpaired}. So it is what calls that were not compared made, not necessarily the data both runs "
                   "were fed: the runs execute different code. In eval mode or under torch.no_grad(), "
                   "nn.TransformerEncoderLayer and nn.MultiheadAttention run a fused fast path that msprobe does not "
                   "record; a layer fused or renamed on one side leaves calls unpaired too.")
    return fd, Diagnosis(
        category="layer_mismatch", explanation=explanation,
        next_actions=["Run both sides in the same mode (model.train() or model.eval()) and the same torch.no_grad() "
                      "use, so that they execute the same calls, then dump and compare again.",
                      "If one side fuses or renames these layers, dump both at level mix, or pass a mapping "
                      "(target_name: golden_name) for the renamed calls.",
                      "Only once the calls before it pair, check the input data itself (preprocessing, tokenizer)."],
        details={"first_paired": t.name, "unpaired_target_calls_before": target_calls[:_LISTED],
                 "unpaired_golden_calls_before": golden_calls[:_LISTED]},
        **base)


def _longer_forward(t: Tensor, target_calls: list[str], golden_calls: list[str], base: explain.JudgementFields,
                    tail: tuple[str, list[str], str]) -> tuple[FirstDivergence, Diagnosis]:
    """One run's forward pass goes on after the last call both record: the backward starts from another gradient."""
    side, calls, last = tail
    other = "target" if side == "golden" else "golden"
    many = len(calls) > 1
    span = f"{calls[0]} .. {calls[-1]}" if many else calls[0]
    fd = explain.divergence_at(t, f"the {side}'s forward pass goes on after {last}, the last forward call both runs "
                                  f"record, with {len(calls)} call{'s' * many} the {other} does not make ({span}), so "
                                  "the backward pass starts from another gradient")
    explanation = (f"Every forward tensor both runs record agrees, but the {side} ends its forward pass with "
                   f"{len(calls)} more call{'s' * many} after {last} ({span}): the two runs compute another result "
                   f"there (a loss with another term, a head one side leaves out). The backward pass starts from that "
                   f"result's gradient, so the first tensor both runs record there, {t.name}, already differs "
                   f"({explain.error_text(t)}).")
    return fd, Diagnosis(
        category="layer_mismatch", explanation=explanation,
        next_actions=[f"Make both runs end the forward pass the same way: the {side}'s computes {span} after {last}.",
                      "Then dump and compare again: the backward pass is compared once both start from the same "
                      "result."],
        details={"first_paired": t.name, "unpaired_target_calls_before": target_calls[:_LISTED],
                 "unpaired_golden_calls_before": golden_calls[:_LISTED], "forward_ends_after": last},
        **base)
