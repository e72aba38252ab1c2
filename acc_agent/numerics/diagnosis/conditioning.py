"""Functions that turn an argument's rounding into a large error of their own: sin and cos of large arguments,
exp of a large one.

A diffusion model's sinusoidal timestep embedding takes ``sin(t * freqs)`` with t up to 1000: in bf16 the product
is right to its own rounding (0.4 %) and still off by several radians, so sin and cos return other numbers
altogether. Nothing is wrong with the kernel (sin is exact to its input), and nothing is wrong with the product
(within its dtype): the function is ill-conditioned at those arguments, and the fix is to compute it (and the
product that feeds it) in float32. Judged as relative errors the call looks like a fault, or like a mismatch of
what was compared when the network damps the difference; this module says which it is.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

from acc_agent.numerics import budgets
from acc_agent.numerics.diagnosis.graph import api_name

if TYPE_CHECKING:
    from acc_agent.numerics.diagnosis.graph import Tensor

#: sin and cos move by at most their argument's move (slope 1): the output's L2 error is at most the argument's.
_PERIODIC = frozenset({"sin", "cos"})
#: exp's relative error is its argument's absolute error (d exp(x) / exp(x) = dx).
_EXPONENTIAL = frozenset({"exp", "exp2", "expm1"})
#: The function amplifies its argument's relative error at least this much (the flow rule allows 4x).
MIN_AMPLIFICATION = 8.0
#: An argument whose rounding alone is this large in absolute terms (radians for sin/cos, a relative error of exp's
#: value) leaves the function's value wrong by as much, whatever the kernel: flagged even where statistics, which
#: keep sin's Max/Min near +-1, cannot show it.
SENSITIVE_ARGUMENT_ERROR = 0.05


@dataclass(frozen=True)
class IllConditioned:
    """The function, its largest argument, the argument's relative error and what that is in absolute terms."""

    function: str
    magnitude: float
    input_error: float
    argument_error: float
    dtype: str | None


def ill_conditioned(t: Tensor) -> IllConditioned | None:
    """The output of sin/cos/exp whose error its input's own error explains once that is read in absolute terms,
    where the function amplifies it ``MIN_AMPLIFICATION`` times or more (None for any other call)."""
    node = t.node
    if node is None or t.is_input or node.direction != "forward" or not node.inputs or t.err is None:
        return None
    name = api_name(node.key).lower().strip("_")
    if name not in _PERIODIC and name not in _EXPONENTIAL:
        return None
    x = node.inputs[0]
    x_stats, y_stats = x.row.golden_stats or {}, t.row.golden_stats or {}
    mx, mn, x_norm, y_norm = x_stats.get("Max"), x_stats.get("Min"), x_stats.get("Norm"), y_stats.get("Norm")
    if x.err is None or x.beyond or None in (mx, mn, x_norm, y_norm):
        return None
    assert mx is not None and mn is not None and x_norm is not None and y_norm is not None
    if not all(math.isfinite(v) for v in (mx, mn, x_norm, y_norm)) or y_norm <= 0:
        return None
    magnitude = max(abs(mx), abs(mn))
    # the dtype the target computed the argument in (not the one it is judged at: under autocast a float32 angle
    # table is judged at bf16, but it was computed in float32)
    dtype = budgets.canonical_dtype(x.row.target_dtype) if budgets.is_float(x.row.target_dtype) else x.m.dtype
    # the argument's error is at least its dtype's rounding (a statistics error of 0 says little about the elements)
    rel = max(x.err, budgets.unit_roundoff(dtype) if budgets.is_float(dtype) else 0.0)
    bound = rel * (x_norm / y_norm if name in _PERIODIC else magnitude)
    if rel <= 0 or bound < MIN_AMPLIFICATION * rel or t.err > bound:
        return None
    return IllConditioned(name, magnitude, rel, rel * magnitude, dtype)


def flag_ill_conditioned(tensors: list[Tensor]) -> None:
    """Mark the sin/cos/exp outputs whose argument's rounding alone is ``SENSITIVE_ARGUMENT_ERROR`` or more in
    absolute terms (strict kind ``ill_conditioned``): their value cannot be right in that dtype."""
    for t in tensors:
        if t.is_input or t.err is None or t.beyond:
            continue
        found = ill_conditioned(t)
        if found is None:
            continue
        rounding = found.magnitude * (budgets.unit_roundoff(found.dtype) if budgets.is_float(found.dtype) else 0.0)
        if rounding >= SENSITIVE_ARGUMENT_ERROR:
            t.excess, t.strict = rounding / SENSITIVE_ARGUMENT_ERROR, "ill_conditioned"
