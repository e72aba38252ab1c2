"""Dumps that record part of a step: msprobe's ``data_mode`` (outputs only, one pass only), ``scope`` and ``list``.

Users cut a dump down to what they can store: ``data_mode: ["output"]`` records no call's inputs,
``["backward"]`` no forward pass, ``scope`` a range of calls and ``list`` some APIs only. The dataflow
judgement then misses links it relies on, and several of its sentences would claim what was not
recorded: "inputs that agree" of a call whose inputs are not in the dump, "the network's input" of
an activation that calls before the recorded range computed, "not the same thing" of an output whose
data went on through calls the dump leaves out. This module says what a partial dump can and cannot
show instead.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from acc_agent.models.diagnosis import Diagnosis, FirstDivergence
from acc_agent.numerics import budgets
from acc_agent.numerics.diagnosis import explain
from acc_agent.numerics.diagnosis.graph import Graph, Tensor, pass_of
from acc_agent.numerics.diagnosis.localise import Finding
from acc_agent.numerics.diagnosis.measure import entry

if TYPE_CHECKING:
    from acc_agent.io.dumps import Dump


def may_travel_unrecorded(t: Tensor, graph: Graph) -> bool:
    """Whether ``t``'s data may go on through calls the dump does not record: its pass records no inputs at all
    (``data_mode`` ``["output"]``), or later inputs come from unrecorded calls (``list``/``scope``, see
    ``Graph.after_unrecorded_calls``). Then that no recorded call takes it, and a final loss that averages it away,
    do not make it a comparison mismatch."""
    return t.direction not in graph.passes_with_inputs or graph.after_unrecorded_calls(t)


def say_what_was_not_recorded(graph: Graph, fd: FirstDivergence | None, diag: Diagnosis) -> None:
    """Name the limits of a dump that leaves inputs or a whole pass out where they bear on the answer: a call named
    with no recorded input may have been handed the difference through an argument, and a backward call reads what
    its unrecorded forward call saved."""
    if fd is None:
        return
    if fd.direction not in graph.passes_with_inputs:
        diag.judgement_note += (f" The dump records no inputs in the {fd.direction} pass (msprobe's data_mode leaves "
                                "them out): each output was judged against the largest error recorded before it in "
                                "the pass, and a difference that enters through an argument (a weight, a scalar "
                                'setting) reads as the call\'s own. Dump with data_mode ["all"] to tell them apart.')
    key = fd.module or ""
    if fd.direction == "backward" and "forward" not in graph.recorded_passes and key.endswith(".backward"):
        forward = key[:-len(".backward")] + ".forward"
        diag.explanation += (' The dump records no forward pass (msprobe\'s data_mode ["backward"]): a backward call '
                             "also reads the tensors its forward call saved, so a difference in the forward pass at or "
                             f"before {forward} shows first here. Dump the forward pass too, to tell a forward "
                             "difference from a wrong gradient.")
        diag.details["forward_recorded"] = False


def computed_before_the_dump(f: Finding, golden: Dump | None, target: Dump | None) -> bool:
    """Whether the first tensor of a forward pass that already differs is an activation, not data fed in: a float
    tensor that requires grad on both sides (a network's input does not; ``scope`` or ``list`` started the dump
    after the calls that computed it)."""
    t = f.tensor
    if t.direction != "forward" or not budgets.is_float(budgets.canonical_dtype(t.m.dtype)):
        return False
    g = entry(golden, t.row.__dict__.get("golden_name") or t.name)  # sparse statistics rows (DumpRow.__getattr__)
    o = entry(target, t.name)
    return g is not None and o is not None and g.requires_grad is True and o.requires_grad is True


def before_the_dump(f: Finding, base: explain.JudgementFields) -> tuple[FirstDivergence, Diagnosis]:
    """The first recorded tensor differs and calls the dump does not record computed it (see
    :func:`computed_before_the_dump`)."""
    t = f.tensor
    fd = explain.divergence_at(t, "the first compared tensor already differs, and it requires grad: calls before the "
                                  "recorded part of the step computed it", argument=t.arg, enters_through="data_input")
    explanation = (f"{t.name}, which the first calls this dump records take in, already differs "
                   f"({explain.error_text(t)}), and it requires grad on both sides: the network computed it, in calls "
                   f"before the ones this dump records ({t.key} is the first to take it), so it is not data fed in. "
                   "The dump holds part of the step only (msprobe's scope or list leaves the earlier calls out): the "
                   "difference enters before that part.")
    return fd, Diagnosis(
        category="input_mismatch", explanation=explanation,
        next_actions=[
            f"Dump the calls before {t.key} too (start msprobe's scope earlier, or clear scope and list), then compare "
            "again: the first call whose inputs agree and whose output differs is then named.",
            "If both runs were meant to start from the same state here, check what they load before this point "
            "(weights, the batch, the random seed).",
        ],
        details={"first_input": t.name, "computed_before_the_dump": True}, **base)


def backward_starts_otherwise(f: Finding, graph: Graph, base: explain.JudgementFields
                              ) -> tuple[FirstDivergence, Diagnosis]:
    """The first recorded input of the backward pass (the gradient it starts from) differs: not data the runs were fed,
    but the result of what follows the last recorded forward call (the loss, or calls the dump leaves out)."""
    t = f.tensor
    last = next((n.key for n in reversed(graph.nodes) if n.direction == "forward" and n.computing), None)
    where = (f"the calls after the last recorded forward call ({last}) compute another result on the two sides: the "
             "loss, or calls the dump does not record (msprobe's list or scope leaves them out)" if last is not None
             else "the dump records no forward pass (msprobe's data_mode): the loss or a forward call computes "
                  "another result on the two sides")
    fd = explain.divergence_at(t, "the gradient the backward pass starts from already differs: what follows the last "
                                  "recorded forward call computes otherwise", argument=t.arg,
                               enters_through="between_operators")
    explanation = (f"the gradient the backward pass starts from, {t.name}, already differs "
                   f"({explain.error_text(t)}), so the runs part ways before any recorded backward call: {where}.")
    return fd, Diagnosis(
        category="operator_fault", explanation=explanation,
        next_actions=[
            "Dump the forward pass up to the loss (clear msprobe's list and scope, data_mode [\"all\"]) and compare "
            "again: the first call whose inputs agree and whose output differs is then named.",
            "Compare the loss both runs compute from the same outputs: its reduction, label smoothing, ignored index "
            "and any scaling.",
        ],
        details={"first_input": t.name, "last_recorded_forward_call": last}, **base)


def say_which_pass_one_side_lacks(graph: Graph, golden: Dump | None, target: Dump | None, diag: Diagnosis) -> None:
    """Say so when one run records a pass the other does not (``data_mode: ["forward"]`` on one side only): none of its
    tensors has a partner, so a verdict on the rest says nothing about it."""
    for direction in ("forward", "backward"):
        if direction in graph.recorded_passes:
            continue
        counts = {side: _entries_in_pass(dump, direction) for side, dump in (("golden", golden), ("target", target))}
        for side, other in (("golden", "target"), ("target", "golden")):
            if counts[side] and not counts[other]:
                diag.explanation += (f" The {side} records the {direction} pass ({counts[side]} tensors) and the "
                                     f"{other} does not (msprobe's data_mode leaves it out there): the {direction} "
                                     "pass was not compared.")
                diag.details[f"{direction}_recorded_by"] = side


def _entries_in_pass(dump: Dump | None, direction: str) -> int:
    if dump is None:
        return 0
    return sum(1 for e in dump.entries if pass_of(e.module_key) == direction)
