"""md5 digests that describe a later write, not the call's result.

msprobe digests a tensor (``summary_mode: md5``) in a background thread. On an accelerator it first
copies the tensor to the host, so the digest is of the call's result; on the CPU it digests the tensor
itself, so a write that lands before the thread gets to it (an in-place ``all_reduce`` of an
activation, an ``add_``, an optimizer step) is digested too. Run twice, the same CPU program then
records different digests for the same output. Its statistics are computed at the call, so they stay
equal, and the digest differs with every statistic equal: the mark of values moved. A real move
changes what the next call computes. When the next calls' outputs are bit-identical to the golden's,
the bytes they read were the golden's, and the digest is the race.

The same mark is left by two kernels of one dtype that round a few elements otherwise (a GPU's and an
NPU's bf16 matmul summing in other orders): bit-identical inputs, another digest, every statistic equal.
Values moved show in the next call that mixes positions (a matmul, a softmax); a rounding does not.

A digest taken after a later write can also give itself away when that write brought other values (another rank's
Inf through an all_reduce): the later tensor is recorded with the same digest and other statistics.
"""

from __future__ import annotations

import math

from acc_agent.numerics import budgets
from acc_agent.numerics.diagnosis.graph import Graph, Tensor
from acc_agent.numerics.diagnosis.localise import REORDER_HOPS, keeps_positions


def _moved(graph: Graph) -> list[Tensor]:
    """Outputs judged as "values moved" (md5 differs, statistics equal, inputs bit-identical)."""
    return [t for t in graph.tensors if t.strict == "reordered" and not t.is_input]


def _readers(graph: Graph) -> dict[int, list[Tensor]]:
    """The inputs that are an output's data, by the ``id`` of that output."""
    readers: dict[int, list[Tensor]] = {}
    for x in graph.tensors:
        if x.is_input and x.producer is not None:
            readers.setdefault(id(x.producer), []).append(x)
    return readers


def racing_digests(graph: Graph) -> list[Tensor]:
    """Outputs judged as "values moved" (md5 differs, statistics equal) whose digest describes a later write: every
    consumer call returns exactly the golden's bytes, or the same digest is recorded again on a later tensor that
    holds other values. They and the inputs that are their data are left unjudged and returned, outputs first."""
    moved = _moved(graph)
    if not moved:
        return []
    consumers = _readers(graph)
    later = _digested_later(graph, moved)
    left = [t for t in moved if id(t) in later
            or (consumers.get(id(t)) and all(_returns_golden_bytes(x) for x in consumers[id(t)]))]
    readers = [x for t in left for x in consumers.get(id(t), [])]
    for t in left + readers:  # a reader holds the same recorded digest: no more a difference than its producer
        t.excess, t.strict = math.nan, None
    return left + readers


def _digested_later(graph: Graph, moved: list[Tensor]) -> set[int]:
    """``id``s of the outputs among ``moved`` whose digest on one side is recorded again, on that side, on a later
    tensor with other statistics: one digest cannot describe two different tensors (CRC32 collides once in 4e9), so
    it was taken after the later call wrote its result into the same memory (an in-place all_reduce that brought
    another rank's Inf), and it says nothing about what this call returned. Either run's thread may be late."""
    found: set[int] = set()
    for side in ("golden", "target"):
        wanted: dict[str, Tensor] = {}
        for t in moved:
            digest = _digest(t, side)
            if digest is not None:
                wanted.setdefault(digest, t)
        if not wanted:
            continue
        for x in graph.tensors:
            digest = _digest(x, side)
            first = wanted.get(digest) if digest is not None else None
            if first is not None and x.pos > first.pos and _stats(x, side) != _stats(first, side):
                found.add(id(first))
    return found


def _digest(t: Tensor, side: str) -> str | None:
    digest = t.row.__dict__.get(f"{side}_md5")  # sparse statistics rows (DumpRow.__getattr__)
    return digest if isinstance(digest, str) else None


def _stats(t: Tensor, side: str) -> tuple[str, ...]:
    stats = t.row.__dict__.get(f"{side}_stats") or {}
    return tuple(repr(stats.get(k)) for k in ("Max", "Min", "Mean", "Norm"))  # repr: NaN equals NaN


def _returns_golden_bytes(x: Tensor) -> bool:
    """Whether the call that reads ``x`` gives outputs with the golden's digests, every one of them."""
    node = x.node
    if node is None:
        return False
    outputs = [o for o in node.outputs if o.err is not None]
    return bool(outputs) and all(o.m.measure == "md5" and o.err == 0.0 for o in outputs)


def rounding_digests(graph: Graph) -> list[Tensor]:
    """Outputs judged as "values moved" whose move shows nowhere downstream: judged as rounding, and returned.

    From each such output the calls that read it are followed through elementwise calls (which carry moved values
    along with their statistics unchanged) for ``REORDER_HOPS`` calls; the move is seen when a call that mixes
    positions returns an output beyond precision. An elementwise reader that goes beyond precision on its own is
    its own fault, not this output's."""
    moved = _moved(graph)
    if not moved:
        return []
    readers = _readers(graph)
    rounded = [t for t in moved if not _move_shows(t, readers)]
    for t in rounded:
        t.strict = None
        t.excess = t.err / budgets.budget(t.m.dtype) if t.err is not None else math.nan
    return rounded


def _move_shows(t: Tensor, readers: dict[int, list[Tensor]]) -> bool:
    frontier, seen = [t], {id(t)}
    for _ in range(REORDER_HOPS):
        nxt: list[Tensor] = []
        for out in frontier:
            for x in readers.get(id(out), []):
                node = x.node
                if node is None or id(node) in seen:
                    continue
                seen.add(id(node))
                outputs = [o for o in node.outputs if o.judged]
                if not keeps_positions(node):
                    if any(o.beyond for o in outputs):
                        return True
                    continue
                nxt.extend(o for o in outputs if not o.beyond)
        frontier = nxt
    return False
