"""Where the difference enters: the earliest tensor in the dataflow that is beyond precision.

Walking one pass (forward, or backward when the forward agrees) in execution order, the first
tensor judged beyond precision is where the difference enters, and what kind of tensor it is says
how:

- an output of a call whose inputs are all within: the operator itself (``operator``), unless one
  of its scalar arguments or kwargs differs (``argument``), or its outputs are the first to hold
  Inf/NaN from finite inputs (``overflow``);
- an input no dumped call produced: the network's data (``data_input``) or a parameter, buffer,
  mask or undumped operator's result (``argument``);
- an input that differs from the dumped output it is: changed in between (``between_operators``:
  a hook, an in-place change, an undumped operator); inside a module the module is named.

Overflow follows msprobe's overflow check: the first call with finite inputs and Inf/NaN outputs
(where the golden has none) is named unless a gross difference already entered before it.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from acc_agent.numerics import budgets
from acc_agent.numerics.diagnosis.defaults import default_of
from acc_agent.numerics.diagnosis.graph import Graph, Node, Tensor, api_name, fingerprint, is_integer
from acc_agent.numerics.diagnosis.judge import ELEMENTWISE_SLOPE, inputs_bit_identical
from acc_agent.numerics.diagnosis.measure import entry

if TYPE_CHECKING:
    from acc_agent.io.dumps import Dump, DumpEntry

#: A difference this many times beyond precision before the first overflow is its cause, not noise.
GROSS_BEFORE_OVERFLOW = 10.0
#: Differences at most this many times beyond precision, each under the single-jump error, are precision-level:
#: another device's reduced-precision GEMMs (TF32, Ascend's HF32) put them in every layer.
MILD_EXCESS = 10.0
#: A later output this many times beyond precision, a single-jump error or more, with inputs a tenth of it or less, is
#: the fault even after precision-level differences.
GROSS_JUMP = 100.0


@dataclass
class Finding:
    tensor: Tensor
    node: Node
    enters: str  # operator | argument | between_operators | data_input | overflow
    argument: str | None = None
    scalar: tuple[str, object, object] | None = None  # (argument, golden value, target value)
    container: Node | None = None  # module named when the change sits between its recorded children
    notes: list[str] = field(default_factory=list)
    #: for a call whose statistics cannot show the difference (values moved to other places): the later
    #: output where it first shows
    shows_at: Tensor | None = None
    #: a differing scalar argument whose effect stays within precision (every tensor of the pass is within)
    hidden: bool = False
    #: for an input no dumped call of the target produced: the golden's call whose output holds its data
    golden_producer: str | None = None
    #: that golden call has no partner on the target (the target does not make it)
    golden_producer_unpaired: bool = False
    #: the first output beyond precision, when it is only precision-level and this finding is a jump far beyond it
    after_mild: Tensor | None = None
    #: for a hidden argument: the output of the call's own backward that differs beyond precision while the
    #: gradients it received agree (the gradient shows what the forward output's rounding hides)
    backward_shows: Tensor | None = None
    #: for an input no compared call produced: the target's call that made it, which the golden does not make
    target_producer: str | None = None

    @property
    def integers_made_by_target(self) -> bool:
        """An argument whose statistics agree (integers: Max and Min only) that a call only the target makes produced."""
        return self.enters == "argument" and self.target_producer is not None and self.tensor.err == 0.0


def in_pass(graph: Graph, direction: str) -> list[Tensor]:
    return [t for t in graph.tensors if t.direction == direction]


def _walked(tensors: list[Tensor]) -> list[Tensor]:
    """Tensors of innermost calls, plus inputs of containers (the network input may only be there)."""
    return [t for t in tensors if t.node is not None and (t.node.computing or t.is_input)]


def find(graph: Graph, direction: str, golden: Dump | None, target: Dump | None) -> Finding | None:
    tensors = _walked(in_pass(graph, direction))
    first = next((t for t in tensors if t.beyond), None)
    mild = first
    first = _gross_after_mild(first, tensors) if first is not None else None
    if first is None or first is mild:
        first, mild = mild, None
    if first is not None and first.role == "parameter_grad":
        first = _incoming_gradient(first, graph) or first
    overflow = _first_overflow(graph, direction, golden, target)
    if overflow is not None and (first is None or first.pos >= overflow.tensor.pos
                                 or first.excess < GROSS_BEFORE_OVERFLOW):
        return overflow
    inner = _container_fault(graph, direction)
    if inner is not None and (first is None or inner[1] < first.pos):
        return inner[0]
    if first is None:
        return _hidden_argument(tensors, golden, target, graph)
    found = _classify(first, graph, golden, target)
    if mild is not None:
        found.after_mild = mild
    return found


def _gross_after_mild(first: Tensor, tensors: list[Tensor]) -> Tensor | None:
    """A later single jump that dwarfs ``first`` when ``first`` is only a precision-level difference, else None.

    With every GEMM of another device in a reduced precision, the first output beyond float32 precision is the
    first GEMM's, a few times beyond; a wrong kernel after it is hundreds of times beyond, with inputs that carry
    only the GEMMs' error. Naming the GEMM would hide the fault behind a precision setting."""
    if first.strict or first.err is None or not math.isfinite(first.err) or first.err >= budgets.SINGLE_JUMP_ERR \
            or first.excess >= MILD_EXCESS:
        return None
    for t in tensors:
        if t.pos <= first.pos or not t.beyond or t.is_input or t.err is None or not math.isfinite(t.err) \
                or t.err < budgets.SINGLE_JUMP_ERR or t.excess < GROSS_JUMP or t.node is None:
            continue
        ins = [x.err for x in t.node.inputs if x.err is not None]
        if all(math.isfinite(e) and 10.0 * e <= t.err for e in ins):
            return t
    return None


def _hidden_argument(tensors: list[Tensor], golden: Dump | None, target: Dump | None,
                     graph: Graph) -> Finding | None:
    """The first call of a pass that is within precision everywhere whose scalar argument differs materially.

    An RMSNorm's eps set to 1e-2 instead of 1e-6 moves a bf16 output by less than bf16 rounding, so no tensor
    shows it, while the argument itself says the runs compute different things: a configuration error that
    larger inputs or another precision will expose. A value one side leaves out (None, the default) counts too
    when the call's own backward shows it: an attention's ``scale`` of 0.125 where the golden uses the default
    1/sqrt(8) moves its near-uniform forward output by rounding only, and its query gradient by 65 %."""
    for node in dict.fromkeys(t.node for t in tensors if t.node is not None and t.node.computing):
        out = next((x for x in node.outputs if x.judged), None)
        if out is None and not node.outputs:
            # a dump of inputs only (msprobe's data_mode ["input"]) records no output: the argument still says what
            # the call was told
            out = next((x for x in node.inputs if x.judged), None)
        if out is None:
            continue
        scalar = differing_scalar(node.key, golden, target, out)
        if scalar is None:
            continue
        shows = _backward_shows(node, graph) if node.direction == "forward" else None
        if _material(scalar[1], scalar[2]) or _off_default(node.key, *scalar) \
                or (shows is not None and _set_on_one_side(scalar[1], scalar[2])):
            return Finding(out, node, "argument", argument=scalar[0], scalar=scalar, hidden=True, backward_shows=shows)
    return None


def setting_differs(t: Tensor, golden: Dump | None, target: Dump | None) -> bool:
    """Whether the call that made ``t`` was given another setting on the target: a scalar argument that differs
    materially, or one the target leaves at a default the golden does not use (``F.leaky_relu(x)`` against the
    golden's slope 0.2). Such a call computes what it was told: re-computing it from the target's own arguments
    reproduces its output and says nothing about the difference."""
    node = t.node
    if node is None:
        return False
    scalar = differing_scalar(node.key, golden, target, t)
    return scalar is not None and (_material(scalar[1], scalar[2]) or _off_default(node.key, *scalar))


def _off_default(key: str, argument: str, golden: object, target: object) -> bool:
    """A keyword one run leaves out where the other passes a value the API's default is not (``approximate="tanh"``
    against a GELU called without it): a setting that differs, as much as two values that differ."""
    if not _set_on_one_side(golden, target):
        return False
    known, default = default_of(api_name(key), argument)
    return known and _material(default, target if golden is None else golden)


def _set_on_one_side(golden: object, target: object) -> bool:
    """A value one run passes where the other leaves the argument at its default (None or left out)."""
    return (golden is None) != (target is None) and not isinstance(golden, TensorValue) \
        and not isinstance(target, TensorValue)


def _backward_shows(node: Node, graph: Graph) -> Tensor | None:
    """The first output of ``node``'s own backward call beyond precision while every gradient it received is within:
    the call, not what reached it, changed the gradient."""
    back = graph.backward_of(node)
    if back is None or any(x.beyond for x in back.inputs):
        return None
    own = next((x for x in back.outputs if x.beyond), None)
    if own is not None or any(x.judged for x in back.outputs):
        return own
    return _gradient_sent_on(node, graph)


def _gradient_sent_on(node: Node, graph: Graph) -> Tensor | None:
    """The gradient ``node``'s backward sends to the call that made its input, when it is the first tensor of the
    backward pass beyond precision.

    msprobe may record another tensor as a call's input gradient than the one the call sends on (a cross-entropy's
    backward records its log-softmax's gradient, or a 0-d tensor when label smoothing is on), so its own outputs are
    not judged. The gradient of an input produced by ``P.forward``'s ``output.k`` is what ``P.backward`` receives as
    its ``input.k``: the dataflow names it even where the recorded tensors do not link."""
    first = next((t for t in graph.tensors if t.direction == "backward" and t.beyond), None)
    if first is None or not first.is_input or first.producer is not None or first.node is None:
        return None
    for x in node.inputs:
        made = x.producer
        if made is None or made.node is None or not made.arg.startswith("output."):
            continue
        if graph.backward_of(made.node) is first.node and first.arg == "input." + made.arg[len("output."):]:
            return first
    return None


#: A float argument this much off (relative) is another setting, not a value computed in another precision.
MATERIAL_FLOAT_CHANGE = 0.1


def _material(golden: object, target: object) -> bool:
    """Whether two recorded values of one argument are different settings, not the same one computed otherwise.

    A float read off a tensor (``.item()``) moves by its precision's rounding and summing order, a few percent at
    most; a flag, a mode, a count or an eps changed by a factor is a setting. An argument one side leaves out may be
    the default written out, so it does not count."""
    if golden is None or target is None:
        return False
    if isinstance(golden, bool) or isinstance(target, bool):
        return golden != target
    if isinstance(golden, int | float) and isinstance(target, int | float):
        g, t = float(golden), float(target)
        if math.isnan(g) or math.isnan(t):
            return math.isnan(g) != math.isnan(t)
        if isinstance(golden, int) and isinstance(target, int):
            return golden != target
        return abs(g - t) > MATERIAL_FLOAT_CHANGE * max(abs(g), abs(t))
    if isinstance(golden, str) and isinstance(target, str):
        return golden != target
    return False


def _descendants(node: Node) -> list[Node]:
    out, stack = [], list(node.children)
    while stack:
        n = stack.pop()
        out.append(n)
        stack.extend(n.children)
    return out


def _container_fault(graph: Graph, direction: str) -> tuple[Finding, int] | None:
    """A module whose output differs beyond what its inputs and everything recorded inside it explain.

    That is a fault in the module's own code between its recorded children (a functional call, an
    attention mask applied inline), which no recorded call inside it shows. Returns the finding and
    the position at which the difference appears (after the module's recorded children).
    """
    best: tuple[Finding, int] | None = None
    for node in graph.nodes:
        if node.computing or not node.is_module or node.path in ("root", "") or not node.outputs:
            continue
        out = node.worst_output()
        if out is None or out.direction != direction or not out.beyond or not out.gross or out.err is None:
            continue
        inside = [t for n in _descendants(node) for t in n.inputs + n.outputs if t.judged]
        if any(t.beyond for t in inside) or any(t.beyond for t in node.inputs):
            continue
        explained = [t.err for t in inside + node.inputs if t.err is not None and math.isfinite(t.err)]
        allowed = 4.0 * max(explained, default=0.0) + budgets.budget(out.m.dtype)
        if out.err <= allowed:
            continue
        when = max((t.pos for t in inside), default=out.pos)
        when = max(when, out.pos) if not inside else when
        if best is None or when < best[1] or (when == best[1] and node in _descendants(best[0].node)):
            best = (Finding(out, node, "operator", notes=["inside"]), when)
    return best


def _classify(t: Tensor, graph: Graph, golden: Dump | None, target: Dump | None) -> Finding:
    node = t.node
    assert node is not None
    if t.is_input:
        if t.leaf == "data":
            return Finding(t, node, "data_input", argument=t.arg)
        if t.producer is None:
            container = _container(node) if t.leaf == "other" else None
            made_by = golden_producer(t, golden) if t.leaf == "other" else None
            # a call only the target makes (the backward of a written-out run that stands for a fused call)
            target_made = target_only_producer(t, graph, target) if t.leaf == "other" and made_by is None else None
            return Finding(t, node, "between_operators" if container else "argument", argument=t.arg,
                           container=container, golden_producer=made_by,
                           golden_producer_unpaired=made_by is not None and not _paired(graph, made_by),
                           target_producer=target_made)
        return Finding(t, node, "between_operators", argument=t.arg, container=_container(node))
    scalar = differing_scalar(node.key, golden, target, t)
    if scalar is not None:
        return Finding(t, node, "argument", argument=scalar[0], scalar=scalar)
    made = _integers_made_by_the_target_only(node, graph, target)
    if made is not None:
        return made
    if keeps_positions(node):
        return Finding(t, node, "operator")
    rearranged = _rearranged_weight(node) if (t.err or 0.0) >= budgets.SINGLE_JUMP_ERR else None
    if rearranged is not None:
        return Finding(rearranged, node, "argument", argument=rearranged.arg)
    upstream = _reordering_argument(node, golden, target) or (
        _moving_call(node, golden, target) if node.direction == "forward" or graph.forward_bit_identical else None)
    if upstream is not None:
        upstream.shows_at = t
        return upstream
    return Finding(t, node, "operator")


#: How many producing calls back from the first divergence a differing argument is looked for.
REORDER_HOPS = 4


def _rearranged_weight(node: Node) -> Tensor | None:
    """A weight of ``node`` whose statistics say its values were moved: Max and Min exactly the golden's, Mean or Norm
    not (another summation order), while the call's output is beyond precision.

    A square weight stored transposed (a checkpoint conversion that forgot it) keeps every value and only changes
    the order its Mean and Norm are summed in; that difference is within what another device's reduction order
    allows, so the weight is not beyond precision itself, but it is the one input of the failing call that is not
    exactly the golden's. Two devices' statistics of one weight can differ the same way, which the explanation says;
    so only a call whose output is off by a single jump's error (1 % or more), which no precision setting gives, is
    read this way. A weight holding one value (Max equal to Min: a norm layer's initial ones) has nothing to move,
    and at another float type the target's Mean and Norm are rounded to it: a difference within that rounding is
    the statistic's own (32 float16 ones record a Norm of 5.65625, not the golden's 5.65685)."""
    for x in node.inputs:
        if x.leaf != "parameter" or x.m.measure != "statistics" or x.beyond or not x.err:
            continue
        d = x.row.__dict__  # sparse statistics rows (DumpRow.__getattr__)
        g, t = d.get("golden_stats") or {}, d.get("target_stats") or {}
        if g.get("Max") is None or g.get("Max") == g.get("Min") or g.get("Max") != t.get("Max") \
                or g.get("Min") != t.get("Min"):
            continue
        rounding = _statistic_rounding(d.get("golden_dtype"), d.get("target_dtype"))
        if any(_differs(g.get(k), t.get(k), rounding) for k in ("Mean", "Norm")):
            return x
    return None


def _statistic_rounding(golden_dtype: object, target_dtype: object) -> float:
    """Relative difference the rounding of a recorded Mean or Norm to the target's dtype leaves (0 on one dtype)."""
    g = budgets.canonical_dtype(golden_dtype if isinstance(golden_dtype, str) else None)
    t = budgets.canonical_dtype(target_dtype if isinstance(target_dtype, str) else None)
    if g is None or t is None or g == t or not budgets.is_float(t):
        return 0.0
    return max(budgets.unit_roundoff(g), budgets.unit_roundoff(t))


def _differs(golden: object, target: object, rounding: float) -> bool:
    """Whether two recorded statistics differ by more than ``rounding`` relative to the golden's."""
    if golden == target:
        return False
    if not isinstance(golden, int | float) or not isinstance(target, int | float):
        return True
    return abs(float(target) - float(golden)) > rounding * abs(float(golden))


def _reordering_argument(node: Node, golden: Dump | None, target: Dump | None) -> Finding | None:
    """An earlier call on the way into ``node`` whose scalar argument differs while its output's statistics agree.

    Max/Min/Mean/Norm cannot see values moved to other places: a ``permute`` with two axes swapped gives
    the same statistics, and the first call that mixes positions (a matmul) is where they first differ.
    When a call on the data path into it, within a few producing calls, took a different argument
    (``permute(0, 2, 1, 3)`` against ``permute(0, 1, 2, 3)``), that argument is where the difference
    entered. Only outputs whose statistics are all that compares them are walked: tensor data or a digest in the
    same dtype would have shown the move (a digest in another dtype differs whatever the values)."""
    for out in _upstream(node, lambda o: o.m.measure == "statistics" or _digest_of_another_dtype(o)):
        assert out.node is not None  # _upstream
        scalar = differing_scalar(out.node.key, golden, target, out)
        if scalar is not None:
            return Finding(out, out.node, "argument", argument=scalar[0], scalar=scalar)
    return None


#: Calls that map each element on its own (the output's statistics are a function of the input's values, wherever
#: they sit): values moved to other places upstream cannot change what such a call's output statistics say.
UNARY_ELEMENTWISE = frozenset({*ELEMENTWISE_SLOPE, "gelu", "silu", "exp", "log", "abs", "neg", "sqrt", "rsqrt",
                               "square", "erf", "reciprocal", "sin", "cos", "clamp", "clip", "dropout"})


def keeps_positions(node: Node) -> bool:
    """Whether ``node`` is a unary elementwise call (one tensor input): no earlier move of values shows in it."""
    tensors = [x for x in node.inputs if x.err is not None]
    return len(tensors) == 1 and api_name(node.key).lower().strip("_") in UNARY_ELEMENTWISE


def _moving_call(node: Node, golden: Dump | None, target: Dump | None) -> Finding | None:
    """An earlier call on the way into ``node`` that gets bit-identical inputs and returns the same values
    in other places, in an md5 dump.

    Rolling or permuting a tensor keeps its Max and Min; its Mean and Norm, summed in another order,
    can move by a rounding. So the call's output has another digest while its statistics agree within
    precision, and the first call that mixes positions (a matmul, a linear) is where the difference
    first shows. Only md5-measured outputs with another digest are walked (bit-identical inputs are
    what rules rounding out), and only when the output's Max and Min are the golden's exactly. The walk
    goes only through such outputs too (a view or a reshape of the moved values): an output whose extremes
    moved is rounding at work, and what came before it (a fused kernel against its decomposed twin, whose
    digest differs by rounding alone) did not move values into the first divergence."""
    for out in _upstream(node, lambda o: o.m.measure == "md5" and bool(o.err) and _same_extremes(o)):
        if inputs_bit_identical(out):
            assert out.node is not None  # _upstream
            scalar = differing_scalar(out.node.key, golden, target, out)
            if scalar is not None:  # the call was told to move them (an einsum's "bkq" for "bqk")
                return Finding(out, out.node, "argument", argument=scalar[0], scalar=scalar)
            out.strict, out.excess = "moved", math.inf
            return Finding(out, out.node, "operator")
    return None


def _digest_of_another_dtype(t: Tensor) -> bool:
    """An md5-compared tensor whose two digests differ because the dtypes do: only its statistics compare it."""
    return t.m.measure == "md5" and not t.m.other_bytes and bool(t.err)


def _upstream(node: Node, through: Callable[[Tensor], bool]) -> Iterator[Tensor]:
    """The outputs on the data path into ``node``, nearest first, up to ``REORDER_HOPS`` producing calls back,
    walking only through outputs within precision that ``through`` accepts."""
    seen: set[int] = set()
    frontier = [x.producer for x in node.inputs if x.producer is not None and x.link == "data"]
    for _ in range(REORDER_HOPS):
        nxt: list[Tensor] = []
        for out in frontier:
            if out is None or id(out) in seen or out.node is None or out.beyond or not through(out):
                continue
            seen.add(id(out))
            yield out
            nxt.extend(x.producer for x in out.node.inputs if x.producer is not None and x.link == "data")
        frontier = nxt


def _same_extremes(t: Tensor) -> bool:
    d = t.row.__dict__  # statistics rows are sparse (DumpRow.__getattr__)
    g, o = d.get("golden_stats") or {}, d.get("target_stats") or {}
    return all(g.get(k) is not None and g.get(k) == o.get(k) for k in ("Max", "Min"))


def _container(node: Node) -> Node | None:
    """The innermost module around ``node`` whose inputs agree and whose output differs.

    A change between two recorded calls happened in that module's own code (a functional call or an
    in-place operation the dump does not record), so the module is the place to look.
    """
    for anc in node.ancestors():
        if not anc.is_module or anc.path in ("root", ""):
            continue
        ins = [x for x in anc.inputs if x.judged]
        outs = [x for x in anc.outputs if x.judged]
        # its inputs agree: not beyond precision, and not grossly off either (an input judged against the error
        # the calls recorded inside the module already carry, as mix level records the module after them, is
        # "within" without agreeing)
        if outs and any(x.gross or x.beyond for x in outs) and ins and all(not x.beyond and not x.gross for x in ins):
            return anc
    return None


def _incoming_gradient(t: Tensor, graph: Graph) -> Tensor | None:
    """The differing incoming gradient of the module whose parameter gradient ``t`` is, if any.

    msprobe records a module's parameter gradients before the module's backward call, whose first input is the
    gradient they are summed from: when that gradient already differs, the difference came in with it (from whatever
    ran between this module and the next recorded one)."""
    backward = graph.backward_of_parameters(t.key)
    if backward is None:
        return None
    return next((x for x in backward.inputs if x.beyond), None)


def differing_scalar(key: str, golden: Dump | None, target: Dump | None,
                     t: Tensor) -> tuple[str, object, object] | None:
    """A scalar/kwarg argument of call ``key`` whose value differs between the runs, if any."""
    g_scalars = getattr(golden, "scalars", None) or {}
    t_scalars = getattr(target, "scalars", None) or {}
    g_key = key
    golden_name = t.row.golden_name
    if golden_name and golden_name.endswith(t.arg):
        g_key = golden_name[: -len(t.arg) - 1]
    # a call's non-tensor outputs are no arguments: a None gradient one run lists and the other leaves out (a
    # bias-free conv's backward in two dtypes) says nothing about what went in
    g_list = {s.name[len(g_key) + 1:]: s.value for s in g_scalars.get(g_key, []) if ".output" not in s.name[len(g_key):]}
    t_list = {s.name[len(key) + 1:]: s.value for s in t_scalars.get(key, []) if ".output" not in s.name[len(key):]}
    for arg, t_value in t_list.items():
        if arg in g_list and not _same(g_list[arg], t_value):
            return arg, g_list[arg], t_value
    if callee(g_key) != callee(key):
        return None  # a different API (relu paired with gelu by position) has other arguments by nature
    # a None one run lists where the other lists nothing passed nothing on either side: a backward's None input is
    # the gradient of an output nothing used (a norm's saved mean), and a forward's the default left out
    for arg in sorted(g_list.keys() - t_list.keys()):
        other = _tensor_at(target, f"{key}.{arg}")
        if g_list[arg] is not None or other is not None:
            return arg, g_list[arg], other
    for arg in sorted(t_list.keys() - g_list.keys()):
        other = _tensor_at(golden, f"{g_key}.{arg}")
        if t_list[arg] is not None or other is not None:
            return arg, other, t_list[arg]
    return None


@dataclass(frozen=True)
class TensorValue:
    """A tensor recorded where the other run recorded a scalar or None (a bias passed on one side only)."""

    shape: tuple[int, ...] | None

    def __str__(self) -> str:
        return "a tensor" + (f" of shape {list(self.shape)}" if self.shape is not None else "")


def _tensor_at(dump: Dump | None, name: str) -> TensorValue | None:
    """The tensor ``dump`` recorded under ``name``, where the other run recorded a non-tensor; None if none."""
    e = entry(dump, name)
    if e is None:
        return None
    return TensorValue(tuple(e.shape) if e.shape is not None else None)


_API_CALL = re.compile(r"^(?P<api>.+)\.\d+\.(?:forward|backward)$")
_MODULE_CALL = re.compile(r"^Module\..*?(?P<cls>[^.]+)\.(?:forward|backward)\.\d+$")


def callee(key: str) -> str:
    """What a dump key calls: the API without its call number (``Functional.gelu.1.forward`` ->
    ``Functional.gelu``) or a module's class (``Module.blocks.0.act.GELU.forward.0`` -> ``GELU``).

    Two paired calls with different callees take different arguments, so an argument only one of them
    has says nothing about a fault."""
    m = _MODULE_CALL.match(key)
    if m is not None:
        return m.group("cls")
    m = _API_CALL.match(key)
    return m.group("api") if m is not None else key


#: How many golden entries before an input are searched for the output that holds its data.
PRODUCER_LOOKBACK = 4096


def golden_producer(t: Tensor, golden: Dump | None) -> str | None:
    """The golden call whose output holds the data of input ``t``, where no call of the target produced it.

    Inputs are linked to their producers in the target's order; a call the golden makes and the target does not
    (a scaling left out in the port) shifts the call numbers after it, so its namesake on the target comes later
    and the input it fed reads as made by no dumped call. The golden's own dump still says who made it."""
    if golden is None:
        return None
    g_e = golden.by_name.get(t.row.golden_name or t.name)
    made = _earlier_output(golden, g_e, fingerprint) if g_e is not None else None
    return made.module_key if made is not None else None


def _earlier_output(dump: Dump, e: DumpEntry, same: Callable[[DumpEntry], tuple[object, ...] | None]
                    ) -> DumpEntry | None:
    """The nearest output of another call before entry ``e`` whose ``same`` key is ``e``'s (None: no key)."""
    key = same(e)
    if key is None:
        return None
    entries = dump.entries
    for i in range(e.index - 1, max(e.index - PRODUCER_LOOKBACK, 0) - 1, -1):
        out = entries[i]
        if out.role == "output" and out.module_key != e.module_key and same(out) == key:
            return out
    return None


def _integers_made_by_the_target_only(node: Node, graph: Graph, target: Dump | None) -> Finding | None:
    """An integer input of ``node`` that a call only the target makes produced, whose statistics cannot compare it.

    msprobe records only Max and Min of an integer tensor, so labels rolled by one (``(arange(n) + 1) % n``), position
    ids or indices built otherwise agree in every recorded statistic. When such an input of the first call whose
    output differs was made on the target by calls the golden does not make, the tensor is where the two runs part:
    it is named at its first consumer (the first call that takes the same data)."""
    for x in node.inputs:
        if x.producer is not None or x.err != 0.0 or x.m.measure != "statistics" or not is_integer(x):
            continue
        made = target_only_producer(x, graph, target)
        if made is None:
            continue
        same = [y for y in graph.tensors if y.is_input and y.producer is None and y.node is not None
                and y.pos < x.pos and y.row.__dict__.get("target_stats") == x.row.__dict__.get("target_stats")
                and y.row.target_shape == x.row.target_shape and is_integer(y)]
        first = same[0] if same else x
        assert first.node is not None
        return Finding(first, first.node, "argument", argument=first.arg, target_producer=made, shows_at=node.outputs[0]
                       if first.node is not node and node.outputs else None)
    return None


def target_only_producer(t: Tensor, graph: Graph, target: Dump | None) -> str | None:
    """The target's call whose output holds the data of input ``t`` (same dtype, shape and statistics) when no
    compared row pairs it: a call the golden does not make."""
    t_e = target.by_name.get(t.name) if target is not None else None
    made = _earlier_output(target, t_e, _same_data) if target is not None and t_e is not None else None
    if made is None:
        return None
    node = graph.by_key.get(made.module_key)
    return made.module_key if node is None or not any(y.judged for y in node.outputs) else None


def _same_data(e: DumpEntry) -> tuple[object, ...] | None:
    """:func:`graph.fingerprint`, or for an integer tensor (Max and Min only) its dtype, shape, Max and Min."""
    fp = fingerprint(e)
    if fp is not None or e.stats.get("Max") is None or e.stats.get("Min") is None:
        return fp
    return ("extremes", e.dtype, tuple(e.shape or ()), e.stats.get("Max"), e.stats.get("Min"))


def _paired(graph: Graph, golden_key: str) -> bool:
    """Whether any compared row pairs a tensor of golden call ``golden_key`` with one of the target's."""
    prefix = golden_key + "."
    return any((x.row.__dict__.get("golden_name") or x.name).startswith(prefix) for x in graph.tensors)


def _nonfinite_number(v: object) -> bool:
    return isinstance(v, float) and not math.isfinite(v)


def _same(a: object, b: object) -> bool:
    """Equal values, or each run's own float type's limit (``torch.finfo(dtype).min`` as a mask fill)."""
    if isinstance(a, float) and isinstance(b, float):
        return a == b or (math.isnan(a) and math.isnan(b)) or budgets.float_type_limits(a, b)
    return a == b


def _first_overflow(graph: Graph, direction: str, golden: Dump | None = None,
                    target: Dump | None = None) -> Finding | None:
    """msprobe's overflow check: the first innermost call with finite inputs and new Inf/NaN outputs.

    A call handed an infinite scalar where the golden's is finite (``masked_fill(mask, -inf)`` for -10000) did not
    overflow: the argument put the Inf there, and it is named as such."""
    for node in graph.nodes:
        if not node.computing or not node.outputs or node.outputs[0].direction != direction:
            continue
        bad = [t for t in node.outputs if t.m.target_nonfinite and not t.m.golden_nonfinite]
        if not bad:
            continue
        if any(x.m.target_nonfinite and not x.m.golden_nonfinite for x in node.inputs):
            continue  # non-finite came in: an earlier call produced it (or a leaf holds it)
        return _overflow_or_argument(node, bad[0], golden, target, infinite_on_target=True)
    return None


def first_golden_overflow(graph: Graph, direction: str, golden: Dump | None = None,
                          target: Dump | None = None) -> Finding | None:
    """The overflow check on the golden side: the first innermost call whose inputs are finite on both sides and
    whose output holds Inf/NaN on the golden only (a baseline run in FP16 that overflows where the target does not).
    Every later tensor that carries the golden's Inf/NaN has nothing to be judged against. An infinite scalar that
    the golden hands the call (``masked_fill(mask, -inf)`` for the target's -10000) is that argument instead."""
    for node in graph.nodes:
        if not node.computing or not node.outputs or node.outputs[0].direction != direction:
            continue
        bad = [t for t in node.outputs if t.m.golden_nonfinite and not t.m.target_nonfinite]
        if bad and not any(x.m.golden_nonfinite or x.m.target_nonfinite for x in node.inputs):
            return _overflow_or_argument(node, bad[0], golden, target, infinite_on_target=False)
    return None


def _overflow_or_argument(node: Node, out: Tensor, golden: Dump | None, target: Dump | None,
                          infinite_on_target: bool) -> Finding:
    """The overflow at ``node``, or the scalar argument that put the Inf there: infinite on the overflowing side
    and finite on the other (``masked_fill(mask, -inf)`` against -10000)."""
    scalar = differing_scalar(node.key, golden, target, out)
    if scalar is not None:
        overflowing, other = (scalar[2], scalar[1]) if infinite_on_target else (scalar[1], scalar[2])
        if _nonfinite_number(overflowing) and not _nonfinite_number(other):
            return Finding(out, node, "argument", argument=scalar[0], scalar=scalar)
    return Finding(out, node, "overflow")


def final_tensor(graph: Graph, direction: str) -> Tensor | None:
    """The pass's end result: the worst output of the last innermost call that has one.

    An output holding Inf/NaN that the golden does not is not judged (nothing bounds it), and it is still
    the end result: an overflow that reaches the end must not read as a finite earlier output."""
    for node in reversed(graph.nodes):
        if node.computing and node.outputs and node.outputs[0].direction == direction:
            if node.key.startswith("Module.") and "parameters_grad" in node.key:
                continue
            worst = node.worst_output()
            if worst is not None:
                return worst
            overflowed = next((x for x in node.outputs if x.m.target_nonfinite and not x.m.golden_nonfinite), None)
            if overflowed is not None:
                return overflowed
    return None


def dead_end(t: Tensor, graph: Graph) -> bool | None:
    """Whether a bad output stops at the dump: every call that takes it received the golden data.

    None when no call is known to take it (no dataflow link), so the question cannot be answered.
    """
    consumers = [x for x in graph.consumers(t) if x.judged]
    if not consumers:
        return None
    if t.m.target_nonfinite and not t.m.golden_nonfinite:
        return all(not x.m.target_nonfinite and not x.gross for x in consumers)
    return all(not x.gross and x.err is not None and t.err is not None and x.err < 0.5 * t.err for x in consumers)
