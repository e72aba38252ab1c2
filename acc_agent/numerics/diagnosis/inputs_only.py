"""Dumps that record inputs only (msprobe ``data_mode: ["input"]``): the call before the first differing input.

With no output recorded, no input can be linked to the call that produced it, so the first input that
differs reads as "a tensor no dumped call produced" and the call that takes it is named. In a run of
calls the input of one is the output of the one before: that call, whose own inputs agree, is where the
difference most likely enters.
"""

from __future__ import annotations

from acc_agent.numerics.diagnosis.graph import Graph, Node
from acc_agent.numerics.diagnosis.localise import Finding


def producer_before(finding: Finding, graph: Graph, direction: str) -> Node | None:
    """The call just before the first divergence's call, when the pass records inputs only and its inputs agree."""
    t = finding.tensor
    if finding.enters != "argument" or finding.scalar is not None or t.producer is not None or t.leaf != "other":
        return None
    in_pass = [x for x in graph.tensors if x.direction == direction]
    if not in_pass or any(not x.is_input for x in in_pass):
        return None
    before = [n for n in graph.nodes if n.pos < finding.node.pos and n.computing and n.direction == direction
              and n.inputs]
    if not before:
        return None
    prev = before[-1]
    if any(x.beyond for x in prev.inputs):
        return None
    return prev
