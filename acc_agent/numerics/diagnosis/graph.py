"""The dump as a dataflow graph: calls, the tensors they take and give, and which output feeds which input.

Execution order alone blames the wrong operator as soon as a difference enters through something
that is not the previous call's output: a weight converted wrongly, a mask built by an API msprobe
does not dump, a hook that scales a gradient. So every input is linked to the earlier output it *is*
(same data: equal md5, or equal dtype, element count and Max/Min/Mean/Norm; shape may differ, so
undumped views and transposes still link). An input that no dumped call produced is a *leaf*: the
network's data, a parameter, a mask or index tensor, or the result of an undumped operator.

Links are made on the golden dump (the trusted run) and fall back to the target's statistics; a
dump without statistics (a plain folder of .npy files) is linked by execution order and shape.
Calls nest (modules around the APIs they call): ``construct.json`` says so where msprobe wrote it,
module paths otherwise. Only innermost calls ("computing" nodes) produce outputs for linking.
"""

from __future__ import annotations

import functools
import json
import math
import operator
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from acc_agent.numerics import budgets
from acc_agent.numerics.diagnosis.measure import (
    NO_MIXED_PRECISION,
    STAT_KEYS,
    Fingerprint,
    Measured,
    MixedPrecision,
    entry,
    exclude_fills,
    measure_and_fingerprint,
    numel,
)

_GET_STATS = operator.itemgetter(*STAT_KEYS)

if TYPE_CHECKING:
    from acc_agent.io.dumps import Dump, DumpEntry
    from acc_agent.models.compare import DumpRow

ROOT_MODULE_PATHS = frozenset({"root", ""})
_KEY_RE = re.compile(r"^(?P<key>.+?\.(?:forward|backward)(?:\.\d+)?)\.(?P<role>input|output|parameters_grad|parameters)"
                     r"(?:\.|$)")
_GRAD_KEY_RE = re.compile(r"^(?P<key>.+?\.parameters_grad(?:\.\d+)?)(?:\.|$)")
#: API arguments that hold parameters or buffers (positional index), by API name.
PARAM_ARGS: dict[str, frozenset[int]] = {
    **{k: frozenset({1, 2}) for k in ("linear", "conv1d", "conv2d", "conv3d", "conv_transpose1d",
                                      "conv_transpose2d", "conv_transpose3d", "addmm_weight")},
    "embedding": frozenset({1}), "layer_norm": frozenset({2, 3}), "group_norm": frozenset({2, 3}),
    "batch_norm": frozenset({1, 2, 3, 4}), "instance_norm": frozenset({1, 2, 3, 4}), "rms_norm": frozenset({2}),
    "npu_rms_norm": frozenset({1}), "prelu": frozenset({1}), "bilinear": frozenset({2, 3}),
}
PARAM_KWARGS = frozenset({"weight", "bias", "running_mean", "running_var", "gamma", "beta"})
COLLECTIVE_PREFIXES = ("Distributed.", "distributed.")


def split_name(name: str) -> tuple[str, str]:
    """``Functional.linear.0.forward.input.1`` -> (``Functional.linear.0.forward``, ``input``)."""
    m = _KEY_RE.match(name)
    if m is not None:
        return m.group("key"), m.group("role")
    g = _GRAD_KEY_RE.match(name)
    if g is not None:
        return g.group("key"), "parameter_grad"
    return name, "tensor"


def module_path(key: str) -> str | None:
    """``Module.encoder.layer.0.BertLayer.forward.0`` -> ``encoder.layer.0``; None for API calls."""
    if not key.startswith("Module."):
        return None
    parts = key[len("Module."):].split(".")
    for i in range(len(parts) - 1, 0, -1):
        if parts[i] in ("forward", "backward", "parameters_grad"):
            return ".".join(parts[: i - 1])
    return None


def api_name(key: str) -> str:
    """``Functional.linear.0.forward`` -> ``linear``; ``Module...`` -> the class name."""
    parts = key.split(".")
    if parts[0] == "Module":
        for i in range(len(parts) - 1, 0, -1):
            if parts[i] in ("forward", "backward", "parameters_grad"):
                return parts[i - 1]
        return parts[-1]
    return parts[1] if len(parts) > 1 else key


@dataclass(eq=False, slots=True)
class Tensor:
    """One compared row as a graph element, with its error and (after judging) its verdict."""

    row: DumpRow
    pos: int
    name: str
    key: str
    role: str  # input | parameters | output | parameter_grad | tensor
    arg: str  # the part of the name after the call key: input.1, output.0, input.approximate
    m: Measured
    node: Node | None = None
    producer: Tensor | None = None
    link: str | None = None  # how the producer was found: data | statistics | order
    leaf: str | None = None  # data | parameter | mask | other (inputs without producer)
    excess: float = math.nan  # > 1 beyond precision; nan not judged
    gross: bool = False
    # beyond a bound rounding cannot break, not a heuristic allowance (never an excursion, never accumulation):
    # "slope" (an activation's slope bound) | "sum" (a sum's: its inputs' errors added) | "product" | "reordered"
    # (bit-identical inputs, the same values moved) | "recomputed" (the call re-computed from the target's
    # own inputs does not give its output; see recheck) | "extremes" (an activation's recorded Max/Min are not
    # the function of its input's) | "mean_sum" (an add's recorded Mean is not its inputs' Means added)
    # | "mean_zero" (a softmax or normalisation backward's recorded input-gradient Mean is not zero)
    # | "mean_one" (a softmax's recorded output Mean is not one over its axis's length)
    # | "ill_conditioned" (sin/cos/exp of arguments whose rounding alone moves the value: see conditioning)
    strict: str | None = None
    recomputed: float | None = None  # relative L2 residual of that re-computation
    # strict "extremes" / "mean_sum" / "mean_zero" / "mean_one": (Max | Min | lowest | Mean, recorded, expected)
    extreme: tuple[str, float, float] | None = None
    cancelled: bool = False  # a parameter gradient whose terms cancel to rounding level, judged in absolute terms
    direction: str = "forward"  # forward | backward (backward and parameters_grad calls)

    @property
    def err(self) -> float | None:
        return self.m.err

    @property
    def judged(self) -> bool:
        return not math.isnan(self.excess)

    @property
    def beyond(self) -> bool:
        return self.judged and self.excess > 1.0

    @property
    def is_input(self) -> bool:
        return self.role in ("input", "parameters")


@dataclass(eq=False, slots=True)
class Node:
    key: str
    pos: int
    direction: str = "forward"
    inputs: list[Tensor] = field(default_factory=list)
    outputs: list[Tensor] = field(default_factory=list)
    parent: Node | None = None
    children: list[Node] = field(default_factory=list)

    @property
    def is_module(self) -> bool:
        return self.key.startswith("Module.")

    @property
    def path(self) -> str | None:
        return module_path(self.key)

    @property
    def computing(self) -> bool:
        return not self.children

    def ancestors(self) -> list[Node]:
        out, cur = [], self.parent
        while cur is not None:
            out.append(cur)
            cur = cur.parent
        return out

    def worst_output(self) -> Tensor | None:
        judged = [t for t in self.outputs if t.judged]
        return max(judged, key=lambda t: t.excess) if judged else None


@dataclass
class Graph:
    tensors: list[Tensor]
    nodes: list[Node]
    by_key: dict[str, Node]
    linked_by: str  # data | statistics | order | none

    def consumers(self, t: Tensor) -> list[Tensor]:
        return [x for x in self.tensors if x.producer is t]

    def backward_of(self, node: Node) -> Node | None:
        """The backward call of a forward call (``X.forward`` -> ``X.backward``, ``Module.m.C.forward.0`` ->
        ``Module.m.C.backward.0``); None when the dump has none."""
        key = node.key
        back = self.by_key.get(key[:-len(".forward")] + ".backward" if key.endswith(".forward")
                               else key.replace(".forward.", ".backward.", 1))
        return back if back is not node else None

    def backward_of_parameters(self, key: str) -> Node | None:
        """The backward call of the module whose parameter gradients are recorded under ``key``.

        msprobe records a module's parameter gradients (``Module.fc2.Linear.parameters_grad.0``, level mix / L0)
        apart from the module's backward call, whose first input is the gradient they are summed from."""
        if ".parameters_grad" not in key:
            return None
        return self.by_key.get(key.replace(".parameters_grad", ".backward", 1))

    @functools.cached_property
    def forward_bit_identical(self) -> bool:
        """Whether every measured forward tensor has the golden's exact bytes (error 0).

        A backward call also reads the forward tensors it saved, which its recorded inputs do not show: only then do
        bit-identical recorded inputs of a backward call rule rounding out."""
        return all(t.m.err == 0.0 for t in self.tensors if t.direction == "forward" and t.m.err is not None)

    @functools.cached_property
    def passes_with_inputs(self) -> frozenset[str]:
        """The passes (forward, backward) in which the dump records some call's inputs: msprobe's ``data_mode``
        ``["output"]`` records none, and then no input can be checked, only the outputs recorded before a call."""
        return frozenset(t.direction for t in self.tensors if t.is_input)

    @functools.cached_property
    def recorded_passes(self) -> frozenset[str]:
        """The passes the dump records any tensor of (``data_mode`` ``["backward"]`` records no forward pass)."""
        return frozenset(t.direction for t in self.tensors)

    def after_unrecorded_calls(self, t: Tensor) -> bool:
        """Whether a later input of ``t``'s pass came from calls the dump does not record (no recorded call produced
        it, and it is no weight, mask or network input), and either an API call takes it (an API dump records the
        calls in between unless msprobe's ``list`` or ``scope`` leaves them out) or it is beyond its dtype's budget
        (a difference went on through them): then that no recorded call takes ``t`` says nothing about where its
        data went. Between the modules of an L0 dump, unrecorded calls are the rule: only a difference counts."""
        return any(x.pos > t.pos and x.is_input and x.producer is None and x.leaf == "other"
                   and x.direction == t.direction and (x.gross or (x.node is not None and not x.node.is_module))
                   for x in self.tensors)

    @functools.cached_property
    def parameter_gradients(self) -> set[int]:
        """``id``s of the tensors that are gradients of a parameter: the optimizer, not a later call, reads them.

        A ``parameters_grad`` entry is one; so is a backward call's output other than its first (the
        gradient of the data input) that no later backward call takes, such as a linear's weight and bias
        gradients or a norm layer's. Such a gradient is a sum over every sample and position whose terms
        cancel, so rounding moves it far more than one operator's budget, and "nothing downstream is
        wrong" says nothing about it.
        """
        # a ``parameters_grad`` record (levels mix and L0) is that same gradient as the optimizer sees it, not a call
        # that takes it
        consumed = {id(x.producer) for x in self.tensors if x.producer is not None and x.role != "parameter_grad"}
        return {id(t) for t in self.tensors
                if t.role == "parameter_grad"
                or (t.direction == "backward" and t.role == "output" and t.arg != "output.0"
                    and t.arg.startswith("output.") and id(t) not in consumed)}


# --------------------------------------------------------------------------- building


_ROLE_OF_ENTRY = {"parameter": "parameters"}


def _key_role(name: str, e: DumpEntry | None) -> tuple[str, str]:
    if e is not None and e.module_key and name.startswith(e.module_key):
        role = _ROLE_OF_ENTRY.get(e.role, e.role)
        if role == "tensor":
            return split_name(name)
        return e.module_key, role
    return split_name(name)


def build(rows: list[DumpRow], golden: Dump | None, target: Dump | None, bench: Dump | None,
          precision: str | None, mixed: MixedPrecision = NO_MIXED_PRECISION) -> Graph:
    tensors: list[Tensor] = []
    nodes: dict[str, Node] = {}
    measured, bulk_prints = measure_and_fingerprint(rows, golden, target, bench, precision, mixed)
    exclude_fills(rows, measured, golden, target)
    t_by = target.by_name if target is not None else {}
    get_entry, get_node, append = t_by.get, nodes.get, tensors.append
    for pos, row in enumerate(rows):
        name = row.name
        key, role = _key_role(name, get_entry(name))
        n_key = len(key)
        arg = name[n_key + 1:] if name.startswith(key) and name[n_key:n_key + 1] == "." else name
        node = get_node(key)
        if node is None:
            node = nodes[key] = Node(key, pos, direction=pass_of(key))
        t = Tensor(row, pos, name, key, role, arg, measured[pos], node, direction=node.direction)
        (node.inputs if role == "input" or role == "parameters" else node.outputs).append(t)
        append(t)
    ordered = sorted(nodes.values(), key=lambda n: n.pos)
    _nest(ordered, nodes, target or golden)
    graph = Graph(tensors, ordered, nodes, "none")
    golden_prints: dict[int, tuple[object, ...] | None] = {}
    graph.linked_by = _link(graph, golden, target, golden_prints, bulk_prints)
    _classify_leaves(graph, golden, golden_prints)
    return graph


def _construct(dump: Dump | None) -> dict[str, str | None]:
    """msprobe's construct.json (call -> enclosing module call) beside dump.json, if any."""
    if dump is None or dump.source.suffix.lower() != ".json":
        return {}
    path = Path(dump.source).parent / "construct.json"
    try:
        if not path.is_file() or path.stat().st_size > 512 << 20:
            return {}
        doc = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError, UnicodeDecodeError):
        return {}
    return {str(k): (str(v) if isinstance(v, str) else None) for k, v in doc.items()} if isinstance(doc, dict) else {}


def _nest(ordered: list[Node], nodes: dict[str, Node], dump: Dump | None) -> None:
    parents = _construct(dump)
    if parents:
        for n in ordered:
            p = parents.get(n.key)
            while p is not None and p not in nodes:
                p = parents.get(p)  # an enclosing call with no compared row: skip to the next one up
            if p is not None and p != n.key:
                n.parent = nodes[p]
        for n in ordered:
            if n.parent is not None:
                n.parent.children.append(n)
        return
    by_path: dict[tuple[str, str], list[Node]] = {}
    paths = {n.key: n.path for n in ordered}
    for n in ordered:
        path = paths[n.key]
        if n.is_module and path is not None:
            by_path.setdefault((n.direction, path), []).append(n)
    for n in ordered:
        path = paths[n.key]
        if not n.is_module or path is None:
            continue
        d = n.direction
        parts = path.split(".") if path not in ROOT_MODULE_PATHS else []
        prefixes = [".".join(parts[:i]) for i in range(len(parts) - 1, 0, -1)]
        prefixes += [r for r in ROOT_MODULE_PATHS if r != path]
        for prefix in prefixes:
            cands = by_path.get((d, prefix))
            if cands:
                n.parent = _nearest(cands, n.pos)
                break
    roots = {d: nodes_ for (d, p), nodes_ in by_path.items() if p in ROOT_MODULE_PATHS}
    for n in ordered:
        if not n.is_module and n.direction in roots:
            n.parent = _nearest(roots[n.direction], n.pos)
    for n in ordered:
        if n.parent is not None:
            n.parent.children.append(n)


def _nearest(cands: list[Node], pos: int) -> Node:
    """The call among repeated calls of one module that encloses position ``pos`` (the latest before it)."""
    before = [c for c in cands if c.pos <= pos]
    return before[-1] if before else cands[0]


def pass_of(key: str) -> str:
    """The pass a call key belongs to: ``backward`` for a backward call or a parameter gradient, else ``forward``."""
    return "backward" if (".backward" in key or "parameters_grad" in key) else "forward"


def fingerprint(e: DumpEntry | None, numels: dict[int, tuple[object, int | None]] | None = None
                 ) -> tuple[object, ...] | None:
    """What identifies an entry's data across calls; ``numels`` caches element counts by shape list
    (a dump shares one list per distinct shape)."""
    if e is None:
        return None
    shape = e.shape
    if numels is None:
        n = numel(shape)
    else:
        hit = numels.get(id(shape))
        if hit is None or hit[0] is not shape:
            hit = numels[id(shape)] = (shape, numel(shape))  # the list is kept: its id stays unique
        n = hit[1]
    md5 = e.md5
    if md5:
        return ("md5", e.dtype, n, md5)
    try:
        stats = _GET_STATS(e.stats)
    except KeyError:
        return None
    if None in stats:
        return None
    return ("stats", e.dtype, n, *stats)


def _link(graph: Graph, golden: Dump | None, target: Dump | None,
          golden_prints: dict[int, Fingerprint | None], bulk_prints: list[Fingerprint | None]) -> str:
    """Give every input its producer (the latest earlier computing output holding the same data).

    ``golden_prints`` gets each input's fingerprint from the golden side (by ``id``), which
    :func:`_classify_leaves` reuses for the inputs left without a producer. ``bulk_prints`` holds
    the golden fingerprints the measuring pass made (by row position; None: make it here)."""
    g_by = golden.by_name if golden is not None else {}
    t_by = target.by_name if target is not None else {}

    numels: dict[int, tuple[object, int | None]] = {}

    def prints(t: Tensor) -> Fingerprint | None:
        fp = bulk_prints[t.pos]
        if fp is None:
            fp = fingerprint(g_by.get(t.row.__dict__.get("golden_name") or t.name), numels)
        if t.role == "input" or t.role == "parameters":
            golden_prints[id(t)] = fp
        return fp if fp is not None else fingerprint(t_by.get(t.name), numels)

    have_prints = any(prints(t) is not None for t in graph.tensors[:64])
    latest: dict[tuple[object, ...], Tensor] = {}
    last_outputs: list[Tensor] = []
    for node in graph.nodes:
        for t in node.inputs:
            if have_prints:
                fp = prints(t)
                if fp is not None and fp in latest:
                    t.producer, t.link = latest[fp], "data"
            else:
                t.producer = _by_order(t, last_outputs)
                t.link = "order" if t.producer is not None else None
        for t in node.outputs:
            if t.role == "parameter_grad" and have_prints:
                fp = prints(t)
                if fp is not None and fp in latest:
                    t.producer, t.link = latest[fp], "data"
                continue
            if node.computing:
                if have_prints:
                    fp = prints(t)
                    if fp is not None:
                        latest[fp] = t
                last_outputs.append(t)
    return "data" if have_prints else "order"


def other_api_partner(t: Tensor) -> str | None:
    """The golden call ``t``'s call is paired with, when it is another API (``silu`` where the golden calls ``gelu``:
    paired by position or as a region); None for a partner of the same API."""
    golden_name = t.row.__dict__.get("golden_name")  # sparse statistics rows (DumpRow.__getattr__)
    if not golden_name or golden_name == t.name:
        return None
    key = split_name(golden_name)[0]
    return key if api_name(key) != api_name(t.key) else None


def _by_order(t: Tensor, outputs: list[Tensor]) -> Tensor | None:
    shape = t.row.golden_shape or t.row.target_shape
    for out in reversed(outputs[-16:]):
        if out.direction == t.direction and (shape is None or (out.row.golden_shape or out.row.target_shape) == shape):
            return out
    return None


def is_integer(t: Tensor, e: DumpEntry | None = None) -> bool:
    """Whether ``t`` holds integers or bools (by ``e``'s dtype when given, else its row's): they must match exactly."""
    dtype = (e.dtype if e is not None else None) or t.row.golden_dtype or t.row.target_dtype
    d = budgets.canonical_dtype(dtype)
    return d is not None and not budgets.is_float(d) and (d.startswith(("int", "uint")) or d == "bool")


def _classify_leaves(graph: Graph, golden: Dump | None, golden_prints: dict[int, tuple[object, ...] | None]) -> None:
    first_input: dict[str, Tensor] = {}
    for node in graph.nodes:
        if node.inputs:
            d = node.direction
            first_input.setdefault(d, node.inputs[0])
    data_in = first_input.get("forward")
    if data_in is not None and _requires_grad(golden, data_in):
        # a pass that opens on a weight (``weight.t()`` fed to ``addmm``) does not open on its data: the network input
        # is the first tensor that needs no gradient, when the run records one
        first_input["forward"] = next((t for t in graph.tensors if t.direction == "forward" and t.is_input
                                       and t.producer is None and _requires_grad(golden, t) is False), data_in)
    numels: dict[int, tuple[object, int | None]] = {}
    data_prints = {d: fingerprint(entry(golden, t.row.__dict__.get("golden_name") or t.name), numels)
                   for d, t in first_input.items()}
    data_in = first_input.get("forward")
    data_shape = (data_in.row.golden_shape or data_in.row.target_shape) if data_in is not None else None
    batch = data_shape[0] if data_shape else None
    for t in graph.tensors:
        if t.producer is not None or not (t.role == "input" or t.role == "parameters"):
            continue
        g = entry(golden, t.row.__dict__.get("golden_name") or t.name)
        fp = golden_prints[id(t)] if id(t) in golden_prints else fingerprint(g, numels)
        if first_input.get(t.direction) is t or (fp is not None and fp == data_prints.get(t.direction)):
            t.leaf = "data"
        elif t.role == "parameters" or _is_param_arg(t):
            t.leaf = "parameter"
        elif is_integer(t, g):
            t.leaf = "mask"
        elif t.direction == "forward" and g is not None and g.requires_grad is True and not _batched(t, batch):
            # in a training forward every activation requires grad too: one that carries the network input's batch
            # axis was computed by calls msprobe did not dump (an LSTM through torch._VF), not loaded
            t.leaf = "parameter"
        else:
            t.leaf = "other"


def _requires_grad(golden: Dump | None, t: Tensor) -> bool | None:
    g = entry(golden, t.row.__dict__.get("golden_name") or t.name)
    return g.requires_grad if g is not None else None


def _batched(t: Tensor, batch: int | None) -> bool:
    """Whether ``t`` has two or more axes and the network input's leading (batch) size first."""
    shape = t.row.golden_shape or t.row.target_shape
    return batch is not None and batch > 1 and shape is not None and len(shape) >= 2 and shape[0] == batch


def _is_param_arg(t: Tensor) -> bool:
    parts = t.arg.split(".")
    if len(parts) < 2 or parts[0] != "input" or t.direction != "forward":
        return False
    if parts[1] in PARAM_KWARGS:
        return True
    if not parts[1].isdigit():
        return False
    return int(parts[1]) in PARAM_ARGS.get(api_name(t.key), frozenset())
