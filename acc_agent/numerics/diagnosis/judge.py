"""Which tensors carry more error than precision explains: against a bench run, or against the data's own flow.

With a bench (the baseline hardware at the target's precision) a row is beyond precision when its
error exceeds ``BENCH_RATIO`` times the bench's on the same row (msprobe's benchmark idea, per row).

Without a bench, a fixed per-tensor budget is too blunt: it calls a 3 % weight error in BF16
"noise" (the budget for computed BF16 tensors is 6 %) and a rounding excursion after a
cancellation "a fault". So each tensor is judged by where it sits in the dataflow:

- a **leaf** (network data, parameter, mask, index tensor) is only cast or copied from the golden:
  ``LEAF_ROUNDINGS`` unit roundoffs of relative error at most (integers and bools exactly);
- an **input with a producer** is the same data as that earlier output: beyond when it differs from
  it by more than a leaf's budget (something changed it in between);
- an **output** may amplify its incoming error by ``AMPLIFICATION`` and add the dtype budget of one
  operator's rounding; more than that is an error *jump* at this operator — the fingerprint of a
  fault, where rounding noise and accumulation grow gradually;
- an input no dumped call produced and that is none of the above (an undumped operator's result)
  may carry what the outputs before it carry.
Every threshold is a format property or a ratio; nothing is fitted to a model.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence

from acc_agent.numerics import budgets
from acc_agent.numerics.diagnosis.backward_recompute import forward_of
from acc_agent.numerics.diagnosis.graph import Graph, Node, Tensor, api_name
from acc_agent.numerics.diagnosis.measure import SUMMARIES, numel
from acc_agent.numerics.diagnosis.sums import bias_sum_excess

AMPLIFICATION = 4.0
LEAF_ROUNDINGS = 4.0
#: A normalisation's input gradient is the incoming gradient with its mean and its component along the
#: normalised input taken out: the subtraction cancels, so what is left carries the incoming gradient's error
#: (and the saved forward statistics') enlarged. Its recorded Max/Min are single elements of that remainder:
#: clean bf16 MiniLM layer-norm backwards move them up to 7.7 times the incoming gradient's statistics error.
NORM_BACKWARD_AMPLIFICATION = 2.0 * AMPLIFICATION
#: An operator's own rounding when the jump is confirmed by elements leaving tolerance (see _flow_excess).
TIGHT_ROUNDINGS = 4.0
#: Statistics average rounding out: an operator's own rounding moves them by a few roundoffs at most.
STAT_ROUNDINGS = 8.0
WITHIN_BAR = 0.99
#: Rounding leaves a tensor's L2 norm nearly unchanged (errors of both signs cancel); a call that moves it by
#: more than this many roundoffs beyond what its inputs' norms moved is scaling its output: a systematic bias.
NORM_ROUNDINGS = 3.0
#: An activation computes each element in a wider type and rounds it once, without bias: its output's norm moves
#: by the recorded norm's own rounding (one roundoff) beyond what its input's moved. Clean fp16/bf16 activations
#: (CNNs, MiniLM, Llama and RoPE blocks) move it at most 0.9 roundoffs beyond four times their input's; a GELU 3 %
#: too large on every third element of a bf16 MiniLM layer moves it 2.9.
ACTIVATION_NORM_ROUNDINGS = 2.0
#: FP32 kernels for the same call (fused or not, another blocking) sum in other orders: their norms differ by
#: several roundoffs more than one rounding explains.
FP32_KERNEL_ROUNDINGS = 4.0
#: A parameter's gradient sums every sample's and position's contribution, and those cancel: a clean BF16
#: ResNet's BatchNorm weight gradient moves 7 % from rounding alone (the per-operator BF16 budget is 6 %).
#: Its rounding allowance is this many per-operator budgets; a wrong gradient kernel or hook (x0.5, x2)
#: moves it by 50 % and more.
REDUCTION_BUDGETS = 4.0
#: A low-precision kernel that sums K products in its output's precision rounds every partial sum: its error
#: grows like sqrt(K) roundoffs. The recorded Max/Min of clean fp16/bf16 conv input gradients on the CPU move by
#: 12 to 39 roundoffs for K = 144 and 288 (the forward convs of the same runs by under 3); a backward GEMM's own
#: rounding in a statistics dump is allowed this many roundoffs times sqrt(K), at most REDUCTION_BUDGETS budgets.
ACCUMULATION_ROUNDINGS = 4.0
#: Activations whose backward passes the incoming gradient on, or a fixed share of it, by the sign (or range) of the
#: saved forward input: rounding that moves an input across zero routes that element's gradient otherwise.
ROUTING = frozenset({"relu", "leaky_relu", "relu6", "hardtanh", "prelu", "rrelu", "threshold"})
#: Share of Gaussian values whose sign an independent Gaussian change of ``e`` times their spread flips, per unit of
#: ``e``: ``arctan(e) / pi``, about ``e / pi`` for small ``e``.
FLIP_SHARE = 1.0 / math.pi
#: GEMM-like APIs whose weight is ``[out, in, *kernel]``: an input gradient sums ``out * kernel`` products.
WEIGHT_GEMMS = frozenset({"conv1d", "conv2d", "conv3d", "linear"})
#: GEMM-like APIs of two operands ``a @ b``: an input gradient of ``a`` sums over ``b``'s last axis.
OPERAND_GEMMS = frozenset({"matmul", "mm", "bmm", "rmatmul"})
#: Largest slope |f'(x)| of elementwise activations. Element by element |f(x_t) - f(x_g)| <= L |x_t - x_g|, so
#: the output's absolute L2 error is at most L times its input's plus the target's own rounding of the output:
#: a tight bound with no model-dependent factor, where a 5 % error on a fifth of a BF16 tensor stays inside
#: any per-tensor budget.
ELEMENTWISE_SLOPE = {
    "relu": 1.0, "relu6": 1.0, "hardtanh": 1.0, "tanh": 1.0, "softsign": 1.0, "softplus": 1.0,
    "logsigmoid": 1.0, "sigmoid": 0.25, "hardsigmoid": 1.0 / 6.0, "gelu": 1.13, "silu": 1.1, "mish": 1.09,
    "hardswish": 1.5,
}
#: Sums and differences: |(a_t + b_t) - (a_g + b_g)| <= |a_t - a_g| + |b_t - b_g| element by element (a residual
#: add that is wrong on part of its elements hides behind the larger stream's small relative error otherwise).
ADDITIVE = frozenset({"add", "radd", "iadd", "sub", "rsub", "isub"})
#: Products: |a_t b_t - a_g b_g| <= |a_t - a_g| |b_t| + |a_g| |b_t - b_g| element by element, so the output's L2 error
#: is at most each input's L2 error times the other's largest magnitude (a gate multiplied in, an attention mask).
PRODUCT = frozenset({"mul", "rmul", "imul", "multiply"})
#: Powers, roots, exponentials and logarithms: each element's relative change is scaled by the exponent (or the value),
#: so the output's Norm follows the input's largest elements, not its Norm.
POWER_LIKE = frozenset({"pow", "__pow__", "square", "rsqrt", "sqrt", "reciprocal", "exp", "exp2", "expm1", "log", "log2",
                        "log10", "log1p"})
#: Roundings of the output an elementwise kernel adds on each side: it computes in a wider type and rounds
#: once (an L2 error of at most one unit roundoff of the output's norm; uniform rounding gives about 0.6 of it).
ELEMENTWISE_ROUNDINGS = 1.0


def leaf_budget(dtype: str | None) -> float:
    """Relative error of a tensor that was only cast to ``dtype`` (0 for integers: exact)."""
    return LEAF_ROUNDINGS * budgets.unit_roundoff(dtype)


#: float32 roundoffs per halving of the element count that two devices' Mean/Norm of the same tensor may differ by.
REDUCTION_ROUNDINGS = 4.0


def summed_leaf_budget(t: Tensor) -> float:
    """:func:`leaf_budget` for a loaded tensor judged on its recorded statistics: its Max and Min are exact wherever
    they are taken, but its Mean and Norm are sums each device reduces in its own order (in float32 for float32 and
    bfloat16 data), a pairwise sum of n terms moving by about log2(n) roundoffs. Two devices' statistics of the same
    weight may differ by that much; only statistics computed by the same code, as in a CPU test, agree exactly."""
    dtype = t.m.dtype
    base = leaf_budget(dtype)
    # a bfloat16 or float16 leaf's own cast budget is larger than any reduction's: only float32 needs the count
    if t.m.measure not in SUMMARIES or budgets.canonical_dtype(dtype) != "float32":
        return base
    shape = t.row.golden_shape
    return max(base, _order_budget(tuple(shape) if shape is not None else ()))


@functools.lru_cache(maxsize=4096)
def _order_budget(shape: tuple[int, ...]) -> float:
    n = numel(list(shape)) or 0
    return REDUCTION_ROUNDINGS * budgets.unit_roundoff("float32") * math.log2(max(n, 2))


def _ratio(err: float, allowed: float) -> float:
    if allowed > 0:
        return err / allowed
    return 0.0 if err == 0 else math.inf


def judge(graph: Graph, use_bench: bool) -> None:
    """Set ``excess`` and ``gross`` on every measured tensor, in execution order.

    A default statistics dump has ~300k rows: the common cases (an input that is an earlier output's
    data, an output judged against its inputs) are inlined with the dtype's budgets looked up once."""
    upstream = {"forward": 0.0, "backward": 0.0}
    routed = 0.0  # what a ReLU-like backward passed on unseen (see routed_gradient_error)
    gradients = graph.parameter_gradients
    isfinite, inf = math.isfinite, math.inf
    per_dtype: dict[str | None, tuple[float, float]] = {}
    for t in graph.tensors:
        m = t.m
        err = m.err
        if err is None:
            continue
        dtype = m.dtype
        b = per_dtype.get(dtype)
        if b is None:
            b = per_dtype[dtype] = (budgets.budget(dtype), leaf_budget(dtype))
        budget, leaf = b
        reduction = bool(gradients) and id(t) in gradients
        t.gross = err > budget * (REDUCTION_BUDGETS if reduction else 1.0) or err == inf
        role = t.role
        is_input = role == "input" or role == "parameters"
        producer = t.producer
        if use_bench and m.bench_err is not None:
            t.excess = _ratio(err, budgets.BENCH_RATIO * max(m.bench_err, budgets.ratio_floor(dtype)))
        elif reduction and not _has_measured_producer(t):
            t.excess = _ratio(err, AMPLIFICATION * upstream[t.direction] + REDUCTION_BUDGETS * budget)
        elif is_input and producer is not None and producer.m.err is not None and isfinite(producer.m.err):
            allowed = 2.0 * producer.m.err + leaf  # the same data as that output: a cast or copy at most
            t.excess = err / allowed if allowed > 0 else (0.0 if err == 0 else inf)
        else:
            t.excess = _flow_excess(t, err, upstream[t.direction], graph, routed)
        if reduction and t.excess > 1.0:
            cancelled = _cancelled_excess(t, budget, graph)
            if cancelled is not None:
                t.excess, t.gross, t.cancelled = cancelled, False, True
            elif not use_bench:
                summed = bias_sum_excess(t, summing_call(t, graph))
                if summed is not None and summed <= 1.0:
                    # the channel sum of what came in (see sums.bias_sum_excess): the incoming gradient carries
                    # that difference elementwise, where its statistics do not show it, and so do the calls after
                    t.excess, t.gross = summed, False
                    carried = min(err, REDUCTION_BUDGETS * budget)
                    if carried > upstream[t.direction]:
                        upstream[t.direction] = carried
        # a parameter's gradient goes to the optimizer, not to a later call: its error (a cancelled bias
        # gradient's relative 1,000) must not widen what the rest of the pass is allowed
        if not is_input and not reduction and isfinite(err):
            direction = t.direction
            if err > upstream[direction]:
                upstream[direction] = err
            if direction == "backward" and m.measure in SUMMARIES:
                flips = routed_gradient_error(t, graph)
                if flips is not None and flips > routed:
                    routed = flips


def routed_gradient_error(t: Tensor, graph: Graph) -> float | None:
    """The relative L2 error a low-precision ReLU-like backward leaves in the input gradient ``t`` where its recorded
    statistics cannot show it (None: not such a gradient).

    The call passes each element's gradient on or not (or a share of it) by the sign of the saved forward input,
    and the error that input carries from earlier calls (``e`` relative to its spread, at least one rounding) moves
    about ``FLIP_SHARE * e`` of the elements across zero, each of whose gradient is then wholly another: about
    ``sqrt(FLIP_SHARE * e)`` in relative L2 (1.2 % in float16, 3.5 % in bfloat16 at one rounding; 2.2 % on a clean
    float16 leaky ReLU whose input carried 0.1 %). Those few elements leave the gradient's Max, Min, Mean and
    Norm where they were, and every later backward call carries them (see :func:`gemm_cancellation` for where they
    show)."""
    node = t.node
    if node is None or t.arg != "output.0" or _op_name(node) not in ROUTING or not node.key.endswith(".backward"):
        return None
    dtype = budgets.canonical_dtype(t.m.dtype)
    if dtype not in budgets.LOW_PRECISION:
        return None
    forward = forward_of(node, graph.by_key)
    x = next((i for i in forward.inputs if i.arg == "input.0"), None) if forward is not None else None
    moved = x.err if x is not None and x.err is not None and math.isfinite(x.err) else 0.0
    return math.sqrt(FLIP_SHARE * min(max(moved, budgets.unit_roundoff(dtype)), 1.0))


def golden_norm(t: Tensor) -> float | None:
    """The golden tensor's L2 norm, as the row or the dump records it."""
    d = t.row.__dict__  # sparse statistics rows (DumpRow.__getattr__)
    norm = d.get("golden_norm")
    if norm is None:
        norm = (d.get("golden_stats") or {}).get("Norm")
    return float(norm) if isinstance(norm, int | float) and math.isfinite(norm) else None


def summing_call(t: Tensor, graph: Graph) -> Node | None:
    """The backward call whose incoming gradient the parameter gradient ``t`` sums: its own call, or for a
    ``parameters_grad`` record (levels mix and L0) its module's backward call."""
    node = t.node
    if node is not None and ".parameters_grad" in node.key:
        return graph.backward_of_parameters(node.key)
    return node


def _cancelled_excess(t: Tensor, budget: float, graph: Graph) -> float | None:
    """A parameter gradient whose terms cancel to rounding level, judged in absolute terms (None: it is not one).

    A conv bias before a train-mode BatchNorm has a gradient of exactly zero in theory: the golden's is
    1e-8, an fp16 target's 1e-5, a relative error of 1,000 that means nothing. So has an attention's key
    bias (it adds the same number to a whole row of scores, which softmax ignores). Each of the N terms summed
    into one element carries the incoming gradient's rounding, so sqrt(N) times the incoming gradient's
    norm, times the reduction allowance, is what rounding leaves; a gradient that small on the golden
    side is rounding noise itself, and so is a difference within it."""
    g_norm = golden_norm(t)
    node = summing_call(t, graph)
    if g_norm is None or node is None or t.err is None or not math.isfinite(t.err):
        return None
    incoming = [(n, x) for x in node.inputs if x.arg == "input.0"
                for n in (golden_norm(x),) if n is not None and n > 0]
    out_n, in_n = numel(t.row.golden_shape), numel(incoming[0][1].row.golden_shape) if incoming else None
    if not incoming or not out_n or not in_n:
        return None
    noise = REDUCTION_BUDGETS * budget * incoming[0][0] * math.sqrt(max(in_n / out_n, 1.0))
    if noise <= 0 or g_norm > noise:
        return None
    return t.err * g_norm / noise


def _has_measured_producer(t: Tensor) -> bool:
    """Whether ``t`` is the same data as an earlier output whose error is known (then it is judged against it)."""
    return t.producer is not None and t.producer.err is not None and math.isfinite(t.producer.err)


def other_apis_convention(t: Tensor) -> bool:
    """An argument of a call paired with another API's call (a written-out run against a fused op) whose outputs agree
    with the golden's to one rounding: whatever differs in it is that API's convention, not a fault.

    ``torch.addmm(b, x, w_t)`` written out for ``F.linear(x, w, b)`` with the weight stored transposed (no ``w.t()``
    call the region could take in, see pairing's ``_feeders``): paired with the golden's weight (same values, a
    square one the same shape), it reads as a transposed weight while the call gives the golden's output. A weight a
    bug transposed changes the output, which keeps the argument judged. So does one whose Norm moved beyond a
    rounding: other values, not the same ones laid out otherwise (a bfloat16 GEMM's output can stay within its
    budget with a weight 5 % off)."""
    if t.row.__dict__.get("pair_method") != "region" or t.node is None:  # sparse statistics rows (DumpRow.__getattr__)
        return False
    if t.m.norm_err is not None and t.m.norm_err > op_budget(t.m.dtype, "statistics"):
        return False
    errors = [(o.m.err, op_budget(o.m.dtype, o.m.measure)) for o in t.node.outputs]
    measured = [(e, b) for e, b in errors if e is not None]
    return bool(measured) and all(e <= b for e, b in measured)


def gemm_cancellation(t: Tensor, graph: Graph) -> float | None:
    """How much a GEMM's backward call ``t`` (the gradient of one operand) can enlarge its inputs' relative error:
    ``|g| |b| / |g @ b.T|`` from the golden's recorded Norms, ``b`` the other operand the forward call saved (None:
    no such gradient, or a Norm missing).

    ``|d(g @ b.T)| <= |dg| |b| + |g| |db|`` in L2, so the product's relative error is at most that ratio times its
    operands' added. It is about sqrt(K) for unrelated operands and larger where the products cancel: an attention's
    gradient with respect to its probabilities (``bmm`` backward) is 12.8 on a small clean float16 block, whose Max
    there moved 8 % from a routed incoming gradient that is 2 % off in relative L2 while its statistics agreed to
    0.1 % (2.4 % in relative L2 in the tensor dump of the same run)."""
    node = t.node
    other = {"output.0": "input.1", "output.1": "input.0"}.get(t.arg)
    if node is None or other is None or _op_name(node) not in OPERAND_GEMMS | {"linear"}:
        return None
    forward = forward_of(node, graph.by_key)
    g = next((x for x in node.inputs if x.arg == "input.0"), None)
    b = next((x for x in forward.inputs if x.arg == other), None) if forward is not None else None
    g_norm, b_norm, out_norm = (golden_norm(x) if x is not None else None for x in (g, b, t))
    if g_norm is None or b_norm is None or out_norm is None or out_norm <= 0:
        return None
    return g_norm * b_norm / out_norm


def _flow_excess(t: Tensor, err: float, upstream: float, graph: Graph, routed: float = 0.0) -> float:
    dtype = t.m.dtype
    if t.is_input or t.role == "parameter_grad":
        produced = t.producer.err if t.producer is not None else None
        if produced is not None and math.isfinite(produced):
            return _ratio(err, 2.0 * produced + leaf_budget(dtype))
        if t.role == "parameter_grad":
            return _ratio(err, AMPLIFICATION * upstream + budgets.budget(dtype))
        if t.leaf in ("data", "parameter", "mask"):
            if other_apis_convention(t):
                return math.nan
            excess = _ratio(err, summed_leaf_budget(t))
            if t.m.same_stats_other_bytes or (t.m.other_bytes and excess <= 1.0 and t.leaf != "data"):
                # a loaded weight or mask has no rounding of its own: other bytes in the same dtype are other data,
                # though its statistics agree within what the device's summation order moves (a transposed weight);
                # the network input may have been prepared on each device, where rounding may leave other bytes
                return math.inf
            return excess
        return _ratio(err, AMPLIFICATION * upstream + budgets.budget(dtype))
    if t.m.same_stats_other_bytes and (t.direction == "forward" or graph.forward_bit_identical) \
            and inputs_bit_identical(t):
        # bit-identical inputs in, the same values in other places out (md5 differs, every statistic equal): no
        # rounding reorders values, the call moved them
        t.strict = "reordered"
        return math.inf
    node = t.node
    inputs = node.inputs if node is not None else ()
    incoming = _incoming_error(inputs)
    if incoming is None:
        incoming = upstream
    measure = t.m.measure
    amplification = AMPLIFICATION
    own = op_budget(dtype, measure)
    if t.direction == "backward" and measure in SUMMARIES:
        # a gradient's recorded statistics show its error at its extremes only: elementwise it carries what the pass
        # carries (a clean fp16 CNN's incoming conv gradient is 4.9 % off in relative L2, its Max 0.5 %: ReLU masks
        # flip where rounding moved the saved forward input across zero; under autocast the float32 BatchNorm
        # backwards carry the bf16 convs' error)
        incoming = max(incoming, upstream)
        if node is not None:
            if "norm" in api_name(node.key).lower():
                amplification = NORM_BACKWARD_AMPLIFICATION
            own = max(own, accumulation_budget(node, dtype))
            cancelling = gemm_cancellation(t, graph) if routed > incoming else None
            if cancelling is not None and cancelling > amplification:
                # a routed gradient's few wholly other elements, which its statistics do not show, come out of a
                # cancelling product enlarged (see routed_gradient_error)
                incoming, amplification = routed, cancelling
    summed = t.direction == "backward" and node is not None and _broadcast_gradient(t, node)
    if summed:
        own = max(own, REDUCTION_BUDGETS * budgets.budget(dtype))
    excess = _ratio(err, amplification * incoming + own)
    if excess <= 1.0 and not summed and _leaves_tolerance(t):
        # the call turned inputs that are (almost) all within tolerance into an output of which more than 1 %
        # is not: an element-level jump, judged against a tighter own-rounding allowance
        tight = budgets.unit_roundoff(dtype) * TIGHT_ROUNDINGS
        excess = max(excess, _ratio(err, AMPLIFICATION * incoming + tight))
    if excess <= 1.0 and measure == "tensor":
        bound, kind = _elementwise_excess(t)
        if bound > 1.0:
            t.strict = kind
            excess = bound
    norm_err = t.m.norm_err
    if excess <= 1.0 and norm_err is not None and inputs:
        ins = [x.m.norm_err for x in inputs if x.m.norm_err is not None]
        if ins and node is not None and _op_name(node) in POWER_LIKE:
            # x ** p moves each element by p times its relative change, and the norm of x ** 2 is set by the largest
            # elements: an input whose Max moved 3.8 % while its Norm moved 0.3 % (one row of an attention output
            # changed) gives an x ** 2 whose Norm moves 4.6 %. Its input's error, not its Norm's, bounds it
            ins.append(incoming)
        if ins and t.direction == "backward":
            # a backward call also reads the forward activations it saved, which its recorded inputs (the
            # incoming gradients) do not show, and its cancelling differences (softmax, norm layers) turn their
            # elementwise error into a norm shift: a clean fp16 attention backward moves its norm 5 roundoffs
            ins.append(incoming)
        if ins:
            own_norm = own if summed else norm_rounding(dtype)  # a summed gradient's norm moves as its elements do
            if t.direction == "forward" and node is not None and _op_name(node) in ELEMENTWISE_SLOPE \
                    and budgets.canonical_dtype(dtype) in budgets.LOW_PRECISION:
                own_norm = ACTIVATION_NORM_ROUNDINGS * budgets.unit_roundoff(dtype)
            allowed = max(AMPLIFICATION, amplification) * max(ins) + own_norm
            excess = max(excess, _ratio(norm_err, allowed))
    return excess


def _broadcast_gradient(t: Tensor, node: Node) -> bool:
    """Whether ``t`` is a sum's or a product's gradient for an operand the forward call broadcast: fewer elements than
    the gradient the call received, which it sums over the broadcast axes. Those terms cancel as a parameter
    gradient's do (a clean fp16 gate ``x * x.mean(-1, keepdim=True)`` moves that operand's gradient by 0.5 %, and a
    share of its elements out of tolerance), so it gets a reduction's rounding allowance and no element-level test."""
    if t.is_input or _op_name(node) not in ADDITIVE | PRODUCT:
        return False
    n = numel(t.row.golden_shape) or 0
    return n > 0 and any((numel(x.row.golden_shape) or 0) > n for x in node.inputs)


def accumulation_budget(node: Node, dtype: str | None) -> float:
    """Rounding a low-precision GEMM-like backward call adds by summing K products in its own precision (0 where
    the call is no such GEMM, the dtype is not fp16/bf16 or K is unknown); K comes from the weight or second
    operand gradient the call also returns (``output.1``: a weight's shape)."""
    if budgets.canonical_dtype(dtype) not in budgets.LOW_PRECISION:
        return 0.0
    name = _op_name(node)
    if name not in WEIGHT_GEMMS and name not in OPERAND_GEMMS:
        return 0.0
    second = next((x for x in node.outputs if x.arg == "output.1"), None)
    shape = (second.row.golden_shape or second.row.target_shape) if second is not None else None
    if not shape or len(shape) < 2 or not all(isinstance(d, int) and d > 0 for d in shape):
        return 0.0
    k = (numel(shape) or 0) // shape[1] if name in WEIGHT_GEMMS else shape[-1]
    if k <= 1:
        return 0.0
    return min(REDUCTION_BUDGETS * budgets.budget(dtype), ACCUMULATION_ROUNDINGS * budgets.unit_roundoff(dtype)
               * math.sqrt(k))


def _op_name(node: Node) -> str:
    """The API or module class a call is judged as: ``Functional.gelu`` and ``Module...GELU`` both ``gelu``."""
    return api_name(node.key).lower().strip("_")


def inputs_bit_identical(t: Tensor) -> bool:
    """Whether every measured input of the call that produced ``t`` has the golden's md5 digest."""
    if t.node is None:
        return False
    measured = [x for x in t.node.inputs if x.err is not None]
    return bool(measured) and all(x.m.measure == "md5" and x.err == 0.0 for x in measured)


def _elementwise_excess(t: Tensor) -> tuple[float, str]:
    """An elementwise call's output error against the bound its inputs' errors set, and which bound
    (``slope`` or ``sum``; 0 when the call is neither).

    An activation moves each element by at most its largest slope times the input's difference; a sum
    or difference by at most the inputs' differences added (an input broadcast over the output counts
    once per copy). Either way the target adds one rounding of the output."""
    node = t.node
    if node is None or t.direction != "forward" or t.row.euc_dist is None or not t.row.golden_norm:
        return 0.0, ""
    if t.row.__dict__.get("pair_method") == "region":
        # the call closes a written-out run paired with a fused call: the run's inner calls have no partner, so
        # its inputs made inside the run were not compared and the bound would count only the ones from outside
        # (a bfloat16 layer norm written out, ``... * w + b``, read as a sum 1.2x beyond its bias's error)
        return 0.0, ""
    name = _op_name(node)
    tensors = [x for x in node.inputs if x.row.euc_dist is not None]
    if not tensors or not all(math.isfinite(x.row.euc_dist or 0.0) for x in tensors):
        return 0.0, ""
    slope = ELEMENTWISE_SLOPE.get(name)
    if slope is not None and len(tensors) == 1 and tensors[0].row.golden_shape == t.row.golden_shape:
        incoming, kind = slope * (tensors[0].row.euc_dist or 0.0), "slope"
    elif name in ADDITIVE and len(tensors) <= 2:
        total = numel(t.row.golden_shape)
        counts = [numel(x.row.golden_shape) for x in tensors]
        if not total or any(not n or total % n for n in counts):
            return 0.0, ""
        kind = "sum"
        incoming = sum((x.row.euc_dist or 0.0) * math.sqrt(total // n) for x, n in zip(tensors, counts, strict=True)
                       if n)
    elif name in PRODUCT and len(tensors) == 2:
        product = _product_bound(t, tensors)
        if product is None:
            return 0.0, ""
        incoming, kind = product, "product"
    else:
        return 0.0, ""
    dtype = t.m.dtype
    # each side rounds its own output: a bf16 golden (a GPU run) adds its rounding to the target's
    golden_u = budgets.unit_roundoff(t.row.golden_dtype) if budgets.is_float(t.row.golden_dtype) else 0.0
    own = ELEMENTWISE_ROUNDINGS * (budgets.unit_roundoff(dtype) + min(golden_u, budgets.unit_roundoff(dtype)))
    if budgets.canonical_dtype(dtype) == "float32":
        own = max(own, budgets.ratio_floor(dtype))  # FP32 kernels differ by more than their roundings
    return _ratio(t.row.euc_dist, incoming + own * t.row.golden_norm), kind


def _product_bound(t: Tensor, tensors: list[Tensor]) -> float | None:
    """The L2 error a product of two recorded tensors carries in from theirs: each input's error (times the square
    root of how often broadcasting repeats it) times the other's largest magnitude on the side that multiplies it
    (the target's for the first factor, the golden's for the second); None when a figure is missing."""
    total = numel(t.row.golden_shape)
    counts = [n for x in tensors if (n := numel(x.row.golden_shape))]
    if not total or len(counts) != len(tensors) or any(total % n for n in counts):
        return None
    peaks = []
    for x, side in zip(tensors, ("golden_stats", "target_stats"), strict=True):
        stats = x.row.__dict__.get(side) or {}
        hi, lo = stats.get("Max"), stats.get("Min")
        if not isinstance(hi, int | float) or not isinstance(lo, int | float) or not math.isfinite(hi - lo):
            return None
        peaks.append(max(abs(float(hi)), abs(float(lo))))
    a, b = tensors
    return ((a.row.euc_dist or 0.0) * math.sqrt(total // counts[0]) * peaks[1]
            + (b.row.euc_dist or 0.0) * math.sqrt(total // counts[1]) * peaks[0])


@functools.lru_cache(maxsize=64)
def norm_rounding(dtype: str | None) -> float:
    """How far one call's own arithmetic may move its output's norm: a few roundoffs, and for float32 what two
    FP32 kernels of the same call may differ by in summation order (a fused attention against its decomposed
    matmul/softmax moves the next linear's output norm by 4 FP32 roundoffs; a TF32 GEMM moves it by hundreds)."""
    own = NORM_ROUNDINGS * budgets.unit_roundoff(dtype)
    return FP32_KERNEL_ROUNDINGS * own if budgets.canonical_dtype(dtype) == "float32" else own


@functools.lru_cache(maxsize=64)
def op_budget(dtype: str | None, measure: str) -> float:
    """Error one operator's rounding explains, on the scale of the measure used."""
    if measure in SUMMARIES:
        return min(budgets.budget(dtype), max(STAT_ROUNDINGS * budgets.unit_roundoff(dtype),
                                              budgets.ratio_floor(dtype) if budgets.canonical_dtype(dtype)
                                              == "float32" else 0.0))
    return budgets.budget(dtype)


def _leaves_tolerance(t: Tensor) -> bool:
    within = t.row.__dict__.get("within_tolerance_ratio")  # sparse statistics rows have none (DumpRow.__getattr__)
    if within is None or within >= WITHIN_BAR or t.node is None:
        return False
    ins = [x.row.within_tolerance_ratio for x in t.node.inputs if x.row.within_tolerance_ratio is not None]
    return bool(ins) and min(ins) >= WITHIN_BAR


def _incoming_error(inputs: Sequence[Tensor]) -> float | None:
    """Largest error among the inputs of a call (None when none has one; inf when one is not finite)."""
    worst: float | None = None
    for x in inputs:
        e = x.m.err
        if e is None:
            continue
        if not math.isfinite(e):
            return math.inf
        if worst is None or e > worst:
            worst = e
    return worst
