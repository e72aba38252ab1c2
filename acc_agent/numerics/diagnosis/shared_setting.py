"""Error that starts at a call of one kind in a float32 run: that call, or a setting all calls of its kind share.

Precision accumulation is many layers each adding rounding. In float32 on both sides the only calls that
round coarsely enough to start it are matrix multiplications computed in a reduced format (TF32/HF32,
a kernel's accumulation; see ``gemm_precision``). A float32 error that starts at any other call, beyond
what float32 rounding and its inputs explain, is that call's own: growing after it is the error
travelling on. A migration that changes a layer type's default (BatchNorm's eps 1e-5 read as 1e-3) puts
such an error at every call of that kind, and in a module-level (L0) dump the setting is not recorded:
the calls of that kind are then where the error grows fastest, and the first of them is named.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from acc_agent.numerics import budgets
from acc_agent.numerics.diagnosis.graph import api_name

if TYPE_CHECKING:
    from acc_agent.numerics.diagnosis.graph import Graph, Node, Tensor

#: Matrix multiplications (API names and module classes): in float32 only these round coarsely enough to start
#: precision accumulation (a reduced-precision GEMM setting).
GEMM_CALLS = frozenset({
    "linear", "matmul", "mm", "bmm", "addmm", "addbmm", "baddbmm", "einsum", "conv1d", "conv2d", "conv3d",
    "conv_transpose1d", "conv_transpose2d", "conv_transpose3d", "scaled_dot_product_attention",
    "npu_fusion_attention", "Linear", "Conv1d", "Conv2d", "Conv3d", "ConvTranspose1d", "ConvTranspose2d",
    "ConvTranspose3d", "MultiheadAttention", "NonDynamicallyQuantizableLinear"})
#: The layers where the error grows fastest that are looked at for one kind.
FASTEST = 3


def starts_in_float32_call(start: Tensor) -> bool:
    """Whether ``start`` is the output of a call other than a matrix multiplication, judged at float32."""
    node = start.node
    return node is not None and not start.is_input and budgets.canonical_dtype(start.m.dtype) == "float32" \
        and api_name(node.key) not in GEMM_CALLS


def layer_growth(graph: Graph, direction: str, after: int) -> list[tuple[Node, Tensor, Tensor]]:
    """Each computing call of the pass from position ``after`` on with an error figure on both sides: the call,
    its worst input (largest finite error) and its worst output. How much a call grows the error it receives."""
    out: list[tuple[Node, Tensor, Tensor]] = []
    for n in graph.nodes:
        if not n.computing or n.pos < after:
            continue
        o = n.worst_output()
        ins = [x for x in n.inputs if x.err is not None and math.isfinite(x.err)]
        i = max(ins, key=lambda x: x.err or 0.0, default=None)
        if o is None or o.err is None or i is None or not i.err or o.direction != direction:
            continue
        out.append((n, i, o))
    return out


def same_kind_growth(start: Tensor, graph: Graph, direction: str) -> list[Node]:
    """The calls of ``start``'s kind among the layers after it where the error grows fastest (at least two of
    ``FASTEST``; empty otherwise): a setting those calls share, with ``start``'s call first."""
    node = start.node
    if node is None:
        return []
    kind = api_name(node.key)
    growth = [(o.err / i.err, n) for n, i, o in layer_growth(graph, direction, node.pos + 1)
              if o.err is not None and i.err]
    fastest = [n for _, n in sorted(growth, key=lambda g: -g[0])[:FASTEST]]
    same = [n for n in fastest if api_name(n.key) == kind]
    return sorted([node, *same], key=lambda n: n.pos) if len(same) >= 2 else []
