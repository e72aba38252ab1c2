"""Selections that precision decides: top-k routing, argmax, a threshold on floats.

A mixture-of-experts router picks each token's experts by top-k over its logits. In bf16 two
nearly equal logits can come out the other way round, so the target sends a few tokens to another
expert, and every call after that works on other rows. msprobe shows it as an index output that
differs (tensor or md5 dumps), or, since its statistics hold only Max and Min of integer and bool
tensors, first as an expert call with another number of rows (statistics dumps), made by indexing
that msprobe does not dump. Neither is a faulty operator nor a mismatch of what was compared: the
choice follows from inputs that differ only at a precision level.

Where the tensors are recorded the claim is tested: at every position where the two runs chose
differently, the golden's two candidates must be closer than twice the largest difference between
the two runs' inputs in that slice (the most a perturbation of that size can reorder); at every
value where a mask ``x > threshold`` flipped, the golden's value must lie closer to its threshold than
the runs' operands differ there. A choice that differs beyond that is left to the rest of the
diagnosis: the selection itself went wrong.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import numpy.typing as npt

from acc_agent.numerics import budgets
from acc_agent.numerics.diagnosis.graph import Graph, Node, Tensor, api_name, is_integer
from acc_agent.numerics.diagnosis.localise import Finding

if TYPE_CHECKING:
    from acc_agent.io.arrays import Array
    from acc_agent.io.dumps import Dump

#: Calls that return the positions of chosen elements along one axis, with the positional place of ``dim``.
INDEX_CHOICES = {"topk": 2, "sort": 1, "argsort": 1, "argmax": 1, "argmin": 1, "max": 1, "min": 1, "kthvalue": 2}
#: Comparisons that turn floats into a mask (``x > threshold``).
COMPARISONS = frozenset({"gt", "lt", "ge", "le", "__gt__", "__lt__", "__ge__", "__le__", "greater", "less",
                         "greater_equal", "less_equal"})
#: Calls whose output is drawn at random: another draw is the random-number generator's, not rounding's.
RANDOM_CALLS = frozenset({"multinomial", "bernoulli", "randint", "randint_like", "randperm", "rand", "rand_like",
                          "randn", "randn_like", "normal", "poisson", "dropout", "dropout1d", "dropout2d", "dropout3d",
                          "alpha_dropout", "feature_alpha_dropout", "gumbel_softmax"})
#: A row count that differs by more than this share is not a few near-ties flipping.
MAX_COUNT_SHARE = 0.25
#: A first divergence at most this many times beyond precision may come from a choice its statistics cannot show.
MILD_EXCESS = 10.0
#: Calls walked back from the first divergence when looking for an integer input a choice made.
_MAX_WALKED = 4096
#: Tensors above this many elements are not loaded for the check (a float64 copy of each is made).
_MAX_ELEMENTS = 1 << 22


@dataclass(frozen=True, slots=True)
class ChoiceCheck:
    """The two runs' choices compared against their inputs' difference."""

    differing: int  # positions where the two runs chose another element
    total: int
    largest_gap: float  # the golden's largest distance between the two chosen candidates (or value and threshold)
    input_difference: float  # the largest input difference in the slices concerned (in both operands' at a threshold)
    threshold: bool = False  # a comparison against a threshold, not an ordering
    # positions where the gap is larger than the inputs' difference can reorder (or NaN): rounding does not explain
    # them, and ``largest_gap`` / ``input_difference`` are then those of the widest such position
    unexplained: int = 0


@dataclass(frozen=True, slots=True)
class PrecisionSelection:
    """A choice made from inputs that agree within precision, seen where its result first differs."""

    node: Node  # the call that chooses
    choice: Tensor  # its integer or bool output
    inputs_error: float  # the largest error of its float inputs (within precision, not zero)
    shows_at: Tensor  # the choice itself, or a later tensor holding another number of elements
    counts: tuple[int, int] | None  # (golden, target) rows of ``shows_at`` when they differ
    check: ChoiceCheck | None  # measured on the recorded tensors, where they were
    followed: bool = True  # calls of the pass come after the choice (they work on what it chose)
    # statistics only: the integer input, no dumped call's output, through which the choice plausibly reaches
    # ``shows_at`` (its recorded Max and Min are the choice's; msprobe records no more of integer tensors)
    unseen: Tensor | None = None


def precision_selection(finding: Finding, graph: Graph, direction: str,
                        check: ChoiceCheck | bool | None) -> PrecisionSelection | None:
    """The selection behind the first divergence when precision decides it, else None; ``check`` is
    :func:`choice_check` of the finding."""
    if direction != "forward":
        return None
    t = finding.tensor
    if finding.enters == "operator" and not t.is_input and is_integer(t) and t.node is not None:
        error = _deciding_error(t.node)
        if error is None or refuted(check):
            return None
        followed = any(n.pos > t.node.pos and n.computing and n.direction == direction for n in graph.nodes)
        return PrecisionSelection(t.node, t, error, t, None, check if isinstance(check, ChoiceCheck) else None,
                                  followed)
    counts = _picked_rows(finding)
    if counts is not None:
        rows = max(counts)
        for node, error in _choosers_before(graph, direction, finding.node.pos):
            choices = [o for o in node.outputs if is_integer(o) and rows <= _choices(o)]
            if choices:
                return PrecisionSelection(node, choices[0], error, t, counts, None)
    return _behind_unseen_choice(finding, graph, direction)


def choice_check(finding: Finding, golden: Dump | None, target: Dump | None) -> ChoiceCheck | bool | None:
    """The first divergence's choice checked on the recorded tensors (see :func:`_check`); None when it is no choice
    (not an integer or bool output of a call whose float inputs are within precision). Made once: it loads tensors."""
    t = finding.tensor
    if finding.enters != "operator" or t.is_input or not is_integer(t) or t.node is None \
            or _deciding_error(t.node) is None:
        return None
    return _check(t.node, t, golden, target)


def refuted(check: ChoiceCheck | bool | None) -> ChoiceCheck | None:
    """``check`` when the recorded tensors show precision does not explain the choice (``unexplained`` > 0): the same
    call on the same data chose otherwise, so the call is at fault whatever the final outputs say (one token of 256
    routed elsewhere leaves them within tolerance)."""
    return check if isinstance(check, ChoiceCheck) and check.unexplained else None


def _choosers_before(graph: Graph, direction: str, pos: int) -> list[tuple[Node, float]]:
    """Calls before ``pos`` that make a choice rounding can decide (latest first), each with its inputs' error; their
    integer outputs are not beyond precision (one that is, is where the difference shows, not a hidden choice)."""
    found = []
    for node in graph.nodes:
        if node.pos >= pos:
            break
        if not node.computing or node.direction != direction:
            continue
        outs = [o for o in node.outputs if is_integer(o)]
        if not outs or any(o.beyond for o in outs):
            continue
        error = _deciding_error(node)
        if error is not None:
            found.append((node, error))
    return found[::-1]


def undumped_choice_hint(finding: Finding, graph: Graph, direction: str) -> str | None:
    """A sentence for rows picked by code msprobe did not dump, after tensors that differ only at a precision level.

    At level L0 msprobe records modules only: an expert's input with one row more or fewer may be a routing choice
    that rounding decided, or a bug in the code that picks the rows; the dump cannot tell, so it is said, not judged.
    """
    t = finding.tensor
    counts = _picked_rows(finding) if direction == "forward" else None
    if counts is None:
        return None
    before = [x.err for x in graph.tensors if x.pos < t.pos and x.direction == direction and x.err is not None
              and x.m.dtype is not None and budgets.is_float(x.m.dtype) and math.isfinite(x.err)]
    if not before or max(before) <= 0.0:
        return None
    return (f"{t.name} holds {counts[1]} rows on the target and {counts[0]} on the golden, and every tensor before it "
            "differs only at a precision level: if code msprobe did not dump picks these rows by a choice (top-k "
            "routing in a mixture of experts, argmax, a threshold), rounding may decide it the other way. A dump at "
            "level mix or L1 records the choice itself.")


def _behind_unseen_choice(finding: Finding, graph: Graph, direction: str) -> PrecisionSelection | None:
    """A mild first divergence on statistics whose data comes through integers an earlier choice plausibly made.

    Greedy decoding feeds each step the argmax of the last: when a near-tie swaps one token, the next step's ids
    still have the same Max and Min, all msprobe records of them, and the difference first shows a little
    beyond precision a few calls later."""
    t = finding.tensor
    if finding.enters != "operator" or t.strict or t.gross or t.m.measure != "statistics" or t.node is None \
            or not t.excess <= MILD_EXCESS:
        return None
    leaves = _integer_leaves_upstream(t.node)
    if not leaves:
        return None
    choosers = _choosers_before(graph, direction, t.node.pos)
    for leaf in leaves:
        for node, error in choosers:
            if node.pos >= leaf.pos:
                continue
            choices = [o for o in node.outputs if is_integer(o) and _same_record(o, leaf)]
            if choices:
                return PrecisionSelection(node, choices[0], error, t, None, None, unseen=leaf)
    return None


def _integer_leaves_upstream(start: Node) -> list[Tensor]:
    """Integer inputs no dumped call produced, whose statistics hold no Mean or Norm, from ``start`` back."""
    found: list[Tensor] = []
    seen = {id(start)}
    todo = [start]
    while todo and len(seen) < _MAX_WALKED:
        node = todo.pop()
        for x in node.inputs:
            if x.producer is None:
                if is_integer(x) and x.leaf != "data" and not _has_sums(x):
                    found.append(x)
            elif x.producer.node is not None and id(x.producer.node) not in seen:
                seen.add(id(x.producer.node))
                todo.append(x.producer.node)
    return sorted(found, key=lambda x: -x.pos)


def _has_sums(t: Tensor) -> bool:
    stats = t.row.__dict__.get("golden_stats") or {}
    return stats.get("Mean") is not None or stats.get("Norm") is not None


def _same_record(out: Tensor, leaf: Tensor) -> bool:
    """Same golden shape, dtype and recorded Max/Min (not one value everywhere): plausibly the same tensor."""
    a, b = out.row.__dict__, leaf.row.__dict__
    sa, sb = a.get("golden_stats") or {}, b.get("golden_stats") or {}
    mx, mn = sa.get("Max"), sa.get("Min")
    return (a.get("golden_shape") == b.get("golden_shape") and a.get("golden_dtype") == b.get("golden_dtype")
            and mx is not None and mn is not None and mx != mn and (mx, mn) == (sb.get("Max"), sb.get("Min")))


def _deciding_error(node: Node) -> float | None:
    """The largest error of the call's float inputs when all are within precision and one is not exact (None for a
    call that draws at random)."""
    if api_name(node.key) in RANDOM_CALLS:
        return None
    floats = [x for x in node.inputs if x.m.dtype is not None and budgets.is_float(x.m.dtype)]
    errors = [x.err for x in floats if x.err is not None and math.isfinite(x.err)]
    if not errors or any(x.beyond for x in floats) or max(errors) <= 0.0:
        return None
    return max(errors)


def _picked_rows(finding: Finding) -> tuple[int, int] | None:
    """(golden, target) rows of the first divergence when it is a tensor no dumped call made, differing from the
    golden in its first axis only, by a small share: rows picked by code msprobe did not dump. In a training forward
    such a tensor needs a gradient and reads as a parameter (see graph). A weight padded to another size differs the
    same way, but holds more rows than there are choices (see the callers)."""
    t = finding.tensor
    if finding.enters != "argument" or t.producer is not None or t.leaf not in ("other", "parameter"):
        return None
    g, x = t.row.golden_shape, t.row.target_shape
    if not g or not x or len(g) != len(x) or g[1:] != x[1:] or g[0] == x[0]:
        return None
    if abs(g[0] - x[0]) > MAX_COUNT_SHARE * max(g[0], x[0]):
        return None
    return g[0], x[0]


def _choices(t: Tensor) -> int:
    shape = t.row.golden_shape or t.row.target_shape
    return math.prod(shape) if shape is not None else 0


def _check(node: Node, choice: Tensor, golden: Dump | None, target: Dump | None) -> ChoiceCheck | bool:
    """The choices checked on the recorded tensors; True where they cannot be."""
    name = api_name(node.key)
    source = next((x for x in node.inputs if x.m.dtype is not None and budgets.is_float(x.m.dtype)), None)
    if golden is None or target is None or source is None or choice.m.measure != "tensor" \
            or source.m.measure != "tensor":
        return True
    if name in COMPARISONS:
        return _check_comparison(node, choice, golden, target)
    if name not in INDEX_CHOICES:
        return True
    try:
        xg, xt = _load(golden, source, "golden"), _load(target, source, "target")
        ig, it = _load(golden, choice, "golden"), _load(target, choice, "target")
    except Exception:  # noqa: BLE001 - an unreadable tensor: its row already says so
        return True
    if xg is None or xt is None or ig is None or it is None:
        return True
    try:
        return index_swaps(xg, xt, ig, it, _dim(node, target, name))
    except (ValueError, TypeError):  # tensors numpy cannot compare as numbers: nothing to check on
        return True


def index_swaps(xg: Array, xt: Array, ig: Array, it: Array, dim: int | None) -> ChoiceCheck | bool:
    """Positions chosen along one axis (top-k, argmax...) checked against the inputs' difference: a ChoiceCheck
    (``unexplained`` counts the differing choices beyond what that difference can reorder), True when the arrays do
    not allow the check."""
    axis = _axis(xg.shape, ig.shape, dim)
    if axis is None or xg.shape != xt.shape or ig.shape != it.shape or ig.dtype.kind not in "iu" \
            or it.dtype.kind not in "iu":
        return True
    if ig.ndim < xg.ndim:
        ig, it = np.expand_dims(ig, axis), np.expand_dims(it, axis)
    size = xg.shape[axis]
    if ig.size == 0 or ig.min() < 0 or it.min() < 0 or ig.max() >= size or it.max() >= size:
        return True
    gf: npt.NDArray[np.float64] = xg.astype(np.float64)
    tf: npt.NDArray[np.float64] = xt.astype(np.float64)
    gi: npt.NDArray[np.int64] = ig.astype(np.int64)
    ti: npt.NDArray[np.int64] = it.astype(np.int64)
    with np.errstate(invalid="ignore"):
        slack = np.max(np.abs(tf - gf), axis=axis, keepdims=True)
        differ = gi != ti
        gap = np.abs(np.take_along_axis(gf, gi, axis) - np.take_along_axis(gf, ti, axis))
        bound = np.broadcast_to(2.0 * slack, gap.shape)
        gaps, bounds = gap[differ], bound[differ]
    if not gaps.size:
        return True
    return _judged(gaps, bounds / 2.0, bounds, int(ig.size))


def _check_comparison(node: Node, mask: Tensor, golden: Dump, target: Dump) -> ChoiceCheck | bool:
    """``x > y`` (or <, >=, <=): where the masks differ, the golden's x and y must be closer than the runs' x and y
    differ there; y is the second tensor input or, when the threshold is a number, that number on both sides."""
    tensors = [x for x in node.inputs if x.m.measure == "tensor"]
    try:
        xg, xt = _load(golden, tensors[0], "golden"), _load(target, tensors[0], "target")
        mg, mt = _load(golden, mask, "golden"), _load(target, mask, "target")
        yg: Array | float | None
        yt: Array | float | None
        if len(tensors) > 1:
            yg, yt = _load(golden, tensors[1], "golden"), _load(target, tensors[1], "target")
        else:
            yg = yt = _threshold(node, golden)
    except Exception:  # noqa: BLE001 - an unreadable tensor: its row already says so
        return True
    if xg is None or xt is None or mg is None or mt is None or yg is None or yt is None:
        return True
    try:
        return threshold_flips(xg, xt, yg, yt, mg, mt)
    except (ValueError, TypeError):  # shapes that do not broadcast, values that are not numbers
        return True


def threshold_flips(xg: Array, xt: Array, yg: Array | float, yt: Array | float, mg: Array, mt: Array
                    ) -> ChoiceCheck | bool:
    """Masks of ``x > y`` (or <, >=, <=) checked against the operands' difference: where they differ, the golden's x
    must lie closer to y than the runs' x and y differ there. ChoiceCheck / True as :func:`index_swaps`."""
    x_g, x_t = np.broadcast_arrays(np.asarray(xg).astype(np.float64), np.asarray(xt).astype(np.float64))
    y_g = np.broadcast_to(np.asarray(yg).astype(np.float64), x_g.shape)
    y_t = np.broadcast_to(np.asarray(yt).astype(np.float64), x_g.shape)
    differ = np.asarray(mg) != np.asarray(mt)
    if differ.shape != x_g.shape:
        return True
    with np.errstate(invalid="ignore"):
        gap = np.abs(x_g - y_g)[differ]
        moved = (np.abs(x_t - x_g) + np.abs(y_t - y_g))[differ]
    if not gap.size:
        return True
    return _judged(gap, moved, moved, int(differ.size), threshold=True)


def _judged(gaps: npt.NDArray[np.float64], differences: npt.NDArray[np.float64], bounds: npt.NDArray[np.float64],
            total: int, threshold: bool = False) -> ChoiceCheck:
    """The differing choices' ChoiceCheck: each gap against the bound its inputs' difference sets (a NaN gap or bound
    is unexplained: nothing then says rounding did it)."""
    with np.errstate(invalid="ignore"):
        bad = ~(gaps <= bounds * (1.0 + 1e-9))
    if bool(bad.any()):
        widest = int(np.argmax(np.where(bad, np.nan_to_num(gaps, nan=np.inf), -np.inf)))
        return ChoiceCheck(int(gaps.size), total, float(gaps[widest]), float(differences[widest]), threshold,
                           unexplained=int(bad.sum()))
    return ChoiceCheck(int(gaps.size), total, float(gaps.max()), float(differences.max()), threshold)


def _threshold(node: Node, dump: Dump) -> float | None:
    """The number a comparison was given as its second argument, as the dump recorded it."""
    for s in getattr(dump, "scalars", {}).get(node.key, []):
        if s.name in (f"{node.key}.input.1", f"{node.key}.input.other") and type(s.value) in (int, float):
            return float(s.value)
    return None


def _load(dump: Dump, t: Tensor, side: str) -> Array | None:
    arr = np.asarray(dump.load((t.row.golden_name or t.name) if side == "golden" else t.name))
    return None if arr.size > _MAX_ELEMENTS else arr


def _dim(node: Node, target: Dump, name: str) -> int | None:
    """The ``dim`` the call was given (keyword or positional), or None when it was not recorded."""
    wanted = {f"{node.key}.input.dim", f"{node.key}.input.{INDEX_CHOICES[name]}"}
    for s in getattr(target, "scalars", {}).get(node.key, []):
        if s.name in wanted and type(s.value) is int:
            return s.value
    return None


def _axis(source: tuple[int, ...], chosen: tuple[int, ...], dim: int | None) -> int | None:
    """The axis the choice runs along: ``dim`` when given, else the last one that fits the shapes."""
    n = len(source)
    if n == 0:
        return None
    candidates = [a for a in range(n)
                  if (len(chosen) == n and all(chosen[i] == source[i] for i in range(n) if i != a))
                  or (len(chosen) == n - 1 and chosen == source[:a] + source[a + 1:])]
    if dim is not None:
        a = dim % n if -n <= dim < n else None
        return a if a in candidates else None
    return candidates[-1] if candidates else None
