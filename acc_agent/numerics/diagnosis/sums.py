"""A sum's recorded Mean checked against its inputs' Means, on the target alone: a statistics-dump re-check.

The mean is linear: ``mean(a + b) = mean(a) + mean(b)`` and ``mean(a - b) = mean(a) - mean(b)``, and a
broadcast input keeps its mean. So an addition's recorded output Mean must equal its inputs' recorded
Means added, whatever error the inputs carry from earlier calls: the identity holds within one run.
What may separate them is rounding only: each recorded Mean is rounded to the tensor's dtype, and each
output element carries one rounding of its own, which averages out over the elements (round to nearest
is unbiased). A residual add that is a few percent off on part of its elements moves its output Mean by
far more, while its Max, Min and Norm stay inside a BF16 operator's error budget (6 %). The check sees what
moves the Mean beyond the recorded Means' own rounding (up to one BF16 rounding each): a scaling of a stream
whose mean is a sizeable part of its spread. A fault on zero-mean values leaves the Mean where it was, and
a 4 % change on a third of the elements is at the edge; nothing here is flagged that rounding can explain.

As in ``extremes``, the golden's own numbers must keep the identity, or the call is not checked (a hook
or an in-place change between the recorded inputs and the output, an ``alpha`` the dump does not show).

The same reasoning gives a backward identity: a softmax's input gradient ``y * (dy - sum(y * dy))`` sums to
zero along the softmax axis (the probabilities sum to one), and so does a log-softmax's ``dy - softmax *
sum(dy)`` and a layer norm's ``(g - mean(g) - x_hat * mean(g * x_hat)) / sigma`` (the normalised input
sums to zero; likewise group, instance and train-mode batch norm over what they normalise); so the recorded
Mean of that gradient is zero up to its elements' roundings. A backward kernel that is a few percent off
on part of the elements moves it; rounding does not.

A bias gradient is the incoming gradient summed over every axis but the channel one, so its channels together sum
what the incoming gradient sums: ``C * mean(bias gradient) = n * mean(incoming)``. Statistics show the incoming
gradient's error at its extremes only (a ReLU or max-pool backward that rounding routes differently in a few
places leaves its Max, Min, Mean and Norm where they were), while a bias gradient gathers that difference into
one channel, where it shows: 9 % on one of 8 channels of a clean fp16 CNN. Where the identity holds on the target
as on the golden, the call summed what it received, and the difference came in with it.
"""

from __future__ import annotations

import math
import re
from typing import TYPE_CHECKING

from acc_agent.numerics import budgets
from acc_agent.numerics.diagnosis.measure import SUMMARIES, numel

if TYPE_CHECKING:
    from acc_agent.numerics.diagnosis.graph import Node, Tensor

#: Roundings of each recorded Mean (one for the rounding to the tensor's dtype, one for the summation).
MEAN_ROUNDINGS = 2.0
#: Standard deviations of the averaged element roundings allowed (each element's rounding is at most one unit
#: roundoff of its magnitude and averages out as 1/sqrt(n) over n elements).
ELEMENT_SIGMAS = 4.0
#: Smallest unit roundoff used: float32 statistics are summed in float32 over up to millions of elements.
FLOOR_ROUNDOFF = 2.0**-20

#: Calls whose output is the sum (+1) or the difference (-1) of their two operands, by API name.
_SIGNS = {"add": 1.0, "add_": 1.0, "__add__": 1.0, "__radd__": 1.0, "__iadd__": 1.0,
          "sub": -1.0, "sub_": -1.0, "subtract": -1.0, "__sub__": -1.0, "__isub__": -1.0}
#: Call keys of those calls (``Tensor.__add__.3.forward``, ``Torch.sub.0.forward``), matched in C among ~100k calls.
ADDITIVE_KEY = re.compile(r"^(?:Tensor|Torch)\.(?:" + "|".join(re.escape(k) for k in _SIGNS) + r")\.\d+\.forward$")


#: Backward calls whose first output (the input gradient) sums to zero: softmax, log-softmax, and the
#: normalisations that subtract a mean (layer, group, instance, and train-mode batch norm; an eval-mode batch
#: norm's golden does not keep the identity, so it is not checked).
ZERO_SUM_BACKWARD_KEY = re.compile(r"^(?:Functional|Torch|Tensor)\.(?:_?log_softmax|_?softmax|layer_norm|group_norm|"
                                   r"instance_norm|batch_norm)\.\d+\.backward$")
#: Target dtypes whose output rounding dominates a softmax backward's own fp32 arithmetic (the zero-sum check is
#: only as tight as that: an fp32 kernel's cancellation errors can exceed one rounding of its output).
_ROUNDED_OUTPUT = frozenset({"float16", "bfloat16"})


#: Softmax calls: their output holds probabilities that sum to one along the softmax axis.
SOFTMAX_KEY = re.compile(r"^(?:Functional|Torch|Tensor)\.softmax\.\d+\.forward$")


def softmax_mean_excess(t: Tensor, scalars: dict[str, object]) -> tuple[float, str, float, float] | None:
    """How far a softmax's output ``t`` has its recorded Mean from one over the softmax axis's length (> 1: beyond
    rounding), on the target: (excess, "Mean", recorded, expected); None when not checkable.

    Each slice along the axis sums to one (a masked position holds 0), so the whole tensor's Mean is 1 / (the axis's
    length) whatever the inputs were: a kernel a few percent off on part of its elements moves it, rounding does
    not. ``scalars``: the call's recorded non-tensor arguments (``input.dim`` or ``input.1``)."""
    if t.is_input or t.arg != "output.0" or t.m.measure not in SUMMARIES:
        return None
    shape = t.row.golden_shape or t.row.target_shape
    dim = scalars.get("input.dim", scalars.get("input.1"))
    if not shape or isinstance(dim, bool) or not isinstance(dim, int) or not -len(shape) <= dim < len(shape):
        return None
    n, length = numel(shape), shape[dim]
    if not n or not length:
        return None
    return _identity_mean(t, 1.0 / length, n)  # a slice masked everywhere is NaN: the golden does not keep it


def zero_sum_gradient(key: str) -> str:
    """What a zero-sum backward call returns, in words (for explanations)."""
    if "softmax" in key:
        return "a softmax's input gradient, which sums to zero along the softmax axis"
    return "a normalisation's input gradient, which sums to zero over what it normalises"


def zero_sum_excess(t: Tensor) -> tuple[float, str, float, float] | None:
    """How far a softmax/log-softmax backward's input gradient ``t`` has its recorded Mean from zero (> 1: beyond
    rounding): (excess, "Mean", recorded, 0.0); None when not checkable (see the module docstring)."""
    if t.is_input or t.arg != "output.0" or t.m.measure not in SUMMARIES \
            or budgets.canonical_dtype(t.m.dtype) not in _ROUNDED_OUTPUT:
        return None
    n = numel(t.row.golden_shape or t.row.target_shape)
    if not n:
        return None
    return _identity_mean(t, 0.0, n)


def _identity_mean(t: Tensor, expected: float, n: int) -> tuple[float, str, float, float] | None:
    """:func:`_mean_off` of the target's recorded Mean, where the golden's own numbers keep the identity (else it is
    not what this call computes: None)."""
    out = t.row.__dict__  # sparse statistics rows (DumpRow.__getattr__)
    golden = _mean_off(out.get("golden_stats"), expected, n, out.get("golden_dtype") or t.m.dtype)
    if golden is None or golden[0] > 1.0:
        return None
    return _mean_off(out.get("target_stats"), expected, n, t.m.dtype)


def _mean_off(stats: dict[str, float | None] | None, expected: float, n: int, dtype: str | None
              ) -> tuple[float, str, float, float] | None:
    """How far a recorded Mean is from the value an identity gives it, in what rounding allows (> 1: beyond)."""
    recorded, norm = (stats.get("Mean"), stats.get("Norm")) if stats else (None, None)
    if not isinstance(recorded, int | float) or not isinstance(norm, int | float) \
            or not math.isfinite(recorded) or not math.isfinite(norm):
        return None
    allowed = _mean_allowance((recorded,), norm, n, dtype)
    off = abs(recorded - expected)
    if allowed <= 0:
        return (0.0 if off == 0 else math.inf), "Mean", float(recorded), expected
    return off / allowed, "Mean", float(recorded), expected


def bias_sum_excess(t: Tensor, node: Node | None) -> float | None:
    """How far a backward call's 1-d output ``t`` has its recorded Mean from the channel sum of the incoming gradient
    of ``node`` (its call, or for a ``parameters_grad`` record its module's backward call; > 1: beyond rounding), on
    the target; None where the golden's numbers do not keep the identity (``t`` is no bias gradient) or it cannot be
    checked (see the module docstring)."""
    if node is None or t.direction != "backward" or t.is_input or t.m.measure not in SUMMARIES:
        return None
    shape = t.row.golden_shape or t.row.target_shape
    incoming = next((x for x in node.inputs if x.arg == "input.0"), None)
    in_shape = (incoming.row.golden_shape or incoming.row.target_shape) if incoming is not None else None
    if incoming is None or not shape or len(shape) != 1 or not in_shape or shape[0] not in in_shape[1:] \
            or len(in_shape) < 2:
        return None
    channels, n = shape[0], numel(in_shape)
    if not channels or not n or n % channels:
        return None
    out, into = t.row.__dict__, incoming.row.__dict__
    golden = _channel_sum(into.get("golden_stats"), out.get("golden_stats"), channels, n,
                          out.get("golden_dtype") or t.m.dtype)
    if golden is None or golden > 1.0:
        return None
    return _channel_sum(into.get("target_stats"), out.get("target_stats"), channels, n, t.m.dtype)


def _channel_sum(incoming: dict[str, float | None] | None, output: dict[str, float | None] | None, channels: int,
                 n: int, dtype: str | None) -> float | None:
    """One side's ``channels * mean(output)`` against ``n * mean(incoming)``, in units of what rounding allows: each
    recorded Mean's own rounding, and the incoming elements' roundings averaged out over ``n``."""
    a = incoming.get("Mean") if incoming else None
    norm = incoming.get("Norm") if incoming else None
    b = output.get("Mean") if output else None
    if not all(isinstance(v, int | float) and math.isfinite(v) for v in (a, norm, b)):
        return None
    # on the incoming gradient's scale: the output's channels summed, spread over the incoming elements
    expected, recorded = float(a), float(b) * channels / n  # type: ignore[arg-type]
    allowed = _mean_allowance((expected, recorded), float(norm), n, dtype)  # type: ignore[arg-type]
    residual = abs(recorded - expected)
    if allowed <= 0:
        return 0.0 if residual == 0 else math.inf
    return residual / allowed


def sum_excess(t: Tensor, scalars: dict[str, object]) -> tuple[float, str, float, float] | None:
    """How far the additive call's output ``t`` has its recorded Mean from its inputs' Means added (> 1: beyond
    rounding): (excess, "Mean", recorded, expected); None when not checkable. ``scalars``: the call's scalar
    arguments by argument name (``input.1``: a number added; ``alpha``: not checked)."""
    node = t.node
    if node is None or t.is_input or t.arg != "output.0" or t.direction != "forward" \
            or t.m.measure not in SUMMARIES or any("alpha" in name for name in scalars):
        return None
    sign = _SIGNS.get(node.key.split(".")[1])
    tensors = [x for x in node.inputs if x.row.__dict__.get("target_stats")]
    numbers = [v for name, v in scalars.items() if name.startswith("input.")
               and isinstance(v, int | float) and not isinstance(v, bool)]
    if sign is None or len(tensors) + len(numbers) != 2 or not tensors or tensors[0].arg != "input.0":
        return None
    n = numel(t.row.golden_shape or t.row.target_shape)
    if not n or any(not (m := numel(x.row.golden_shape or x.row.target_shape)) or n % m for x in tensors):
        return None  # not a broadcast of every input over the output: the means do not add
    out, golden_dtype = t.row.__dict__, t.row.__dict__.get("golden_dtype") or t.m.dtype
    golden = _check([x.row.__dict__.get("golden_stats") for x in tensors], numbers, out.get("golden_stats"), sign, n,
                    golden_dtype)
    if golden is None or golden[0] > 1.0:
        return None  # the golden's own numbers do not keep the identity: not what this call computes
    return _check([x.row.__dict__.get("target_stats") for x in tensors], numbers, out.get("target_stats"), sign, n,
                  t.m.dtype)


def _check(inputs: list[dict[str, float | None] | None], numbers: list[float], output: dict[str, float | None] | None,
           sign: float, n: int, dtype: str | None) -> tuple[float, str, float, float] | None:
    """One side's recorded output Mean against its inputs' (see sum_excess)."""
    means = [s.get("Mean") if s else None for s in inputs] + list(numbers)
    recorded, norm = (output.get("Mean"), output.get("Norm")) if output else (None, None)
    values = [*means, recorded, norm]
    if not all(isinstance(v, int | float) and math.isfinite(v) for v in values):
        return None
    a, b = float(means[0]), float(means[1])  # type: ignore[arg-type]
    expected = a + sign * b
    allowed = _mean_allowance((float(recorded), a, b), float(norm), n, dtype)  # type: ignore[arg-type]
    residual = abs(float(recorded) - expected)  # type: ignore[arg-type]
    if allowed <= 0:
        return (0.0 if residual == 0 else math.inf), "Mean", float(recorded), expected  # type: ignore[arg-type]
    return residual / allowed, "Mean", float(recorded), expected  # type: ignore[arg-type]


def _mean_allowance(means: tuple[float, ...], norm: float, n: int, dtype: str | None) -> float:
    """What rounding lets a relation between recorded Means miss by: each Mean's own rounding (``MEAN_ROUNDINGS``
    roundoffs of its size), and the ``n`` elements' roundings averaged out (``ELEMENT_SIGMAS`` standard deviations of
    one roundoff of the elements' rms ``norm / sqrt(n)``)."""
    u = max(budgets.unit_roundoff(dtype), FLOOR_ROUNDOFF)
    return (MEAN_ROUNDINGS * u * sum(abs(m) for m in means)
            + min(1.0, ELEMENT_SIGMAS / math.sqrt(n)) * u * norm / math.sqrt(n))
