"""Low-precision calls re-computed from the target's own inputs: a fault smaller than a per-tensor budget.

Without a bench, an output is judged against what its inputs' error and one operator's rounding
explain, and in BF16 one operator's budget is 6 %: a layer norm 4 % off on a quarter of its elements
stays inside it. When the dump holds the tensors, the call re-computed in float64 from the target's
own recorded inputs and arguments differs from the target's output by that output's rounding only
(at most one unit roundoff per element; about 0.4 of one in relative L2, measured on clean BF16 and
FP16 runs). A residual beyond ``RECOMPUTE_ROUNDINGS`` roundoffs means the kernel computed something
else from what it was given: an operator fault, whatever the budget says.

Backward calls are re-checked the same way on their input gradient (``output.0``), from the forward
call's recorded tensors and the incoming gradient (see ``backward_recompute``): a wrong backward
kernel under a right forward leaves every forward tensor agreeing.

Only BF16/FP16 outputs are re-checked: FP32 is already judged at msprobe's 2^-14, and an FP32 GEMM's
own accumulation order moves it by more than its roundoff. Each pass re-computes at most
``MAX_RECHECKS`` calls, those closest to their allowance, so a 2,000-call dump loads a few tensors.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from acc_agent.numerics import budgets
from acc_agent.numerics.diagnosis import probes
from acc_agent.numerics.diagnosis.backward_recompute import (
    backward_residual,
    forward_of,
    module_pool_residual,
)
from acc_agent.numerics.diagnosis.extremes import ACTIVATION_KEY, extremes_excess
from acc_agent.numerics.diagnosis.graph import other_api_partner
from acc_agent.numerics.diagnosis.judge import golden_norm
from acc_agent.numerics.diagnosis.localise import setting_differs
from acc_agent.numerics.diagnosis.measure import numel
from acc_agent.numerics.diagnosis.sums import (
    ADDITIVE_KEY,
    SOFTMAX_KEY,
    ZERO_SUM_BACKWARD_KEY,
    softmax_mean_excess,
    sum_excess,
    zero_sum_excess,
)

if TYPE_CHECKING:
    from acc_agent.io.dumps import Dump, ScalarArg
    from acc_agent.numerics.diagnosis.graph import Graph, Tensor

RECOMPUTE_ROUNDINGS = 2.0
MAX_RECHECKS = 8


def recheck(tensors: list[Tensor], target: Dump | None, graph: Graph, golden: Dump | None = None) -> None:
    """Mark the low-precision outputs of one pass, before its first one beyond precision, that their inputs
    do not give (``golden``: to tell a call given another setting, which is not cleared)."""
    if target is None:
        return
    checked = 0
    start: float = -1
    while True:
        first_t = next((t for t in tensors if t.beyond), None)
        first = first_t.pos if first_t is not None else math.inf
        candidates = [t for t in tensors if start < t.pos < first and _eligible(t)]
        candidates.sort(key=lambda t: t.excess, reverse=True)
        for t in candidates[:MAX_RECHECKS]:
            residual = _residual(t, target, graph)
            if residual is None:
                continue
            allowed = _allowed(t)
            if residual > allowed:
                t.excess = residual / allowed
                t.strict = "recomputed"
                t.recomputed = residual
        if any(t.beyond for t in candidates):
            return  # a re-computed call before it is the first divergence now
        if first_t is None or checked >= MAX_RECHECKS or not _clears(first_t, target, graph, golden):
            return
        checked += 1
        start = first


def _residual(t: Tensor, target: Dump, graph: Graph) -> float | None:
    assert t.node is not None  # _eligible
    if t.direction == "backward":
        return backward_residual(t.node, forward_of(t.node, graph.by_key), target)
    return probes.kernel_residual(t.node, target)


def _clears(t: Tensor, target: Dump, graph: Graph, golden: Dump | None) -> bool:
    """Whether the first output beyond precision is what its call computes from the target's own recorded inputs.

    Then the call did its job and the error came in with what it read: a ReLU's backward passes the gradient
    where its saved forward input is positive, and rounding moves inputs near zero across that line (a clean
    fp16 CNN's ReLU backward is 2x beyond what its incoming gradient's error explains). Only an output judged
    by the general rule is cleared; a bound that holds whatever the inputs (``strict``) stands, and so does a call
    given another setting than the golden's (see ``localise.setting_differs``)."""
    if t.strict or not _eligible(t) or other_api_partner(t) is not None or setting_differs(t, golden, target):
        return False
    residual = _residual(t, target, graph)
    if residual is None and t.direction == "backward":
        assert t.node is not None  # _eligible
        residual = module_pool_residual(t.node, graph.by_key, target)  # clears only: its geometry is a guess
    if residual is None or residual > _allowed(t):
        return False
    t.excess = residual / _allowed(t)
    return True


def _allowed(t: Tensor) -> float:
    """A re-computation's residual that the output's own rounding explains: a unit roundoff of each element, and
    below the dtype's smallest normal number half the fixed spacing of its subnormals. A float16 layer norm's input
    gradient behind inputs of amplitude 400 is at most 3.1e-5, where float16 keeps a few significant bits."""
    u = budgets.unit_roundoff(t.m.dtype)
    spacing = _SUBNORMAL_SPACING.get(budgets.canonical_dtype(t.m.dtype) or "", 0.0)
    n = numel(t.row.golden_shape or t.row.target_shape)
    norm = golden_norm(t)
    floor = math.sqrt(n) * spacing / 2.0 / norm if spacing and n and norm else 0.0
    return RECOMPUTE_ROUNDINGS * (u + floor)


#: The distance between neighbouring subnormal numbers of the low-precision formats (bfloat16's are too small to show).
_SUBNORMAL_SPACING = {"float16": 2.0**-24}


def _eligible(t: Tensor) -> bool:
    return (t.judged and not t.is_input and t.arg == "output.0" and t.m.measure == "tensor" and t.node is not None
            and t.node.computing and budgets.canonical_dtype(t.m.dtype) in budgets.LOW_PRECISION)


def recheck_extremes(tensors: list[Tensor], target: Dump | None = None) -> None:
    """Mark the statistics-measured outputs, before the first one beyond precision, whose recorded statistics
    their inputs' do not give: an activation's Max/Min (see ``extremes``), a sum's Mean, a softmax input
    gradient's Mean, a softmax output's Mean (see ``sums``)."""
    first = next((t.pos for t in tensors if t.excess > 1.0), math.inf)  # t.beyond, 300k times without the property
    activation, additive, zero_sum = ACTIVATION_KEY.match, ADDITIVE_KEY.match, ZERO_SUM_BACKWARD_KEY.match
    softmax = SOFTMAX_KEY.match
    scalars = getattr(target, "scalars", None) or {}
    for t in tensors:
        if t.arg != "output.0" or t.pos >= first or t.node is None:
            continue
        key = t.node.key
        if activation(key) is not None:
            found, kind = extremes_excess(t), "extremes"
        elif additive(key) is not None:
            found, kind = sum_excess(t, _arguments(scalars, key)), "mean_sum"
        elif zero_sum(key) is not None:
            found, kind = zero_sum_excess(t), "mean_zero"
        elif softmax(key) is not None:
            found, kind = softmax_mean_excess(t, _arguments(scalars, key)), "mean_one"
        else:
            continue
        if found is not None and found[0] > 1.0:
            t.excess, t.strict, t.extreme = found[0], kind, found[1:]


def _arguments(scalars: dict[str, list[ScalarArg]], key: str) -> dict[str, object]:
    """The recorded non-tensor arguments of call ``key``, by argument (``input.1``, ``input.dim``)."""
    return {s.name[len(key) + 1:]: s.value for s in scalars.get(key, [])}
