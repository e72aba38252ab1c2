"""An activation's recorded Max/Min checked against its input's, on the target alone: a statistics-dump re-check.

A statistics dump cannot re-compute a call, but for an elementwise activation it does not need to: an
increasing function maps the input's largest element to the output's largest, so the output's Max is
``f(input Max)`` up to one rounding of the output, and where the input stays on the increasing part,
its Min is ``f(input Min)``. GELU and SiLU also never go below their global minimum (-0.17 and -0.28).
A kernel that is a few percent off on part of its elements breaks one of these as soon as an extreme
element is among them, whatever the error budget of a BF16 operator says (6 %): the target's own
numbers disagree with each other. The target's statistics are judged on their own, as ``recheck`` uses
only the target's tensors; the golden's must keep the same relation, or the call is not checked (a
hook or an in-place change between the recorded input and the output, another kernel).
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from typing import TYPE_CHECKING

from acc_agent.numerics import budgets
from acc_agent.numerics.diagnosis.graph import api_name
from acc_agent.numerics.diagnosis.measure import SUMMARIES

if TYPE_CHECKING:
    from acc_agent.numerics.diagnosis.graph import Tensor

#: Output roundings (of the output's dtype) allowed between a recorded extreme and ``f`` of the input's.
ROUNDINGS = 2.0
#: Relative slack for another approximation of the same function (tanh-GELU, a fast NPU kernel): 1e-3.
APPROXIMATION = 1e-3


def _gelu(x: float) -> float:
    return 0.5 * x * (1.0 + math.erf(x / math.sqrt(2.0)))


def _silu(x: float) -> float:
    return x / (1.0 + math.exp(-x)) if x > -700 else 0.0


def _sigmoid(x: float) -> float:
    return 1.0 / (1.0 + math.exp(-x)) if x > -700 else 0.0


#: name -> (f, x from which f increases, f's global minimum)
_FUNCTIONS: dict[str, tuple[Callable[[float], float], float, float]] = {
    "gelu": (_gelu, -0.7518, -0.169971),
    "silu": (_silu, -1.2785, -0.278465),
    "relu": (lambda x: max(x, 0.0), -math.inf, 0.0),
    "sigmoid": (_sigmoid, -math.inf, 0.0),
    "tanh": (math.tanh, -math.inf, -1.0),
}


#: Call keys of the functions above (``Functional.gelu.3.forward``, ``Torch.tanh.0.forward``): a statistics dump
#: has ~100k calls, and a match in C is what picks the few thousand activations among them.
ACTIVATION_KEY = re.compile(r"^[A-Za-z]+\.(?:" + "|".join(_FUNCTIONS) + r")\.\d+\.forward$")


def extremes_excess(t: Tensor) -> tuple[float, str, float, float] | None:
    """How far the activation output ``t``'s Max/Min are from what its input's give (> 1: beyond what rounding
    and another approximation of the function explain): (excess, which extreme, recorded, expected); None when
    not checkable."""
    node = t.node
    if node is None or t.is_input or t.arg != "output.0" or t.direction != "forward" or t.m.measure not in SUMMARIES:
        return None
    fn = _FUNCTIONS.get(api_name(node.key).lower().strip("_"))
    tensor_inputs = [x for x in node.inputs if x.row.__dict__.get("target_stats")]
    if fn is None or len(tensor_inputs) != 1 or node.key.startswith("Module."):
        return None
    x_row, y_row = tensor_inputs[0].row.__dict__, t.row.__dict__
    golden = _check(x_row.get("golden_stats"), y_row.get("golden_stats"), fn, x_row.get("golden_dtype") or t.m.dtype)
    if golden is None or golden[0] > 1.0:
        return None  # the golden's own numbers do not keep the relation: a hook, an in-place change, another kernel
    return _check(x_row.get("target_stats"), y_row.get("target_stats"), fn, t.m.dtype)


def _check(x_stats: dict[str, float | None] | None, y_stats: dict[str, float | None] | None,
           fn: tuple[Callable[[float], float], float, float], dtype: str | None) -> tuple[float, str, float, float] | None:
    """The worst extreme of one side's recorded output against ``f`` of its recorded input (see extremes_excess)."""
    if not x_stats or not y_stats:
        return None
    values = [x_stats.get("Max"), x_stats.get("Min"), y_stats.get("Max"), y_stats.get("Min")]
    if not all(isinstance(v, int | float) and math.isfinite(v) for v in values):
        return None
    x_max, x_min, y_max, y_min = (float(v) for v in values)  # type: ignore[arg-type]
    f, rising_from, lowest = fn
    u = budgets.unit_roundoff(dtype)
    scale = max(abs(y_max), abs(y_min), abs(lowest))

    def check(which: str, recorded: float, expected: float) -> tuple[float, str, float, float]:
        allowed = ROUNDINGS * u * abs(expected) + APPROXIMATION * scale
        return abs(recorded - expected) / allowed, which, recorded, expected

    found = [check("Max", y_max, f(x_max))]
    if x_min >= rising_from:
        found.append(check("Min", y_min, f(x_min)))
    elif y_min < lowest:
        found.append(check("lowest", y_min, lowest))
    return max(found)
