"""Error that every matrix multiplication adds on its own: a lower-precision GEMM setting, not one faulty call.

TF32 on NVIDIA GPUs (``torch.backends.cuda.matmul.allow_tf32``) and HF32 on Ascend
(``torch.npu.matmul.allow_hf32``) round a float32 GEMM's operands to a 10-bit mantissa. Every linear
and matmul output is then off by a few 1e-4, the calls between them add nothing, and the error does
not grow (rounding noise is zero-mean and the next layers damp it). Judged call by call it looks
like one faulty first linear. Re-computed in float64 from the target's own recorded inputs, a float32
GEMM is off by its accumulation order only (around 1e-7 relative L2); one computed in TF32/HF32 is
off by ~1e-4, and so is every other GEMM of the pass. That is a precision setting, not an operator.
"""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from acc_agent.numerics import budgets
from acc_agent.numerics.arrays import FloatArray
from acc_agent.numerics.diagnosis import probes
from acc_agent.numerics.diagnosis.graph import api_name
from acc_agent.numerics.diagnosis.measure import SUMMARIES

if TYPE_CHECKING:
    from acc_agent.io.dumps import Dump
    from acc_agent.numerics.diagnosis.graph import Graph, Node, Tensor

#: Fewer GEMMs than this in the pass say nothing about a setting applied to all of them.
MIN_GEMMS = 3
#: GEMMs re-computed at most (evenly spaced over the pass, the first divergence's always among them).
MAX_GEMMS = 8
#: A float32 GEMM re-computed in float64 from its own inputs is off by far less than this (relative L2):
#: its accumulation order moves it by ~1e-7 to ~1e-6 for inner dimensions up to a few thousand; TF32/HF32
#: rounding of the operands gives ~1e-4.
COARSE_RESIDUAL = 2.0 ** -16
#: The first divergence's residual within this factor of the other GEMMs' median: the same setting.
SPREAD = 4.0


#: In a statistics dump, the first GEMM beyond precision is at most this many times the others' median error: a
#: faulty GEMM among GEMMs that all add rounding of their own stands out by more. The others' errors themselves
#: spread wider (a statistic is a lower bound of a tensor's error: TF32 blocks give 1.8e-5 to 4e-4 on one pass).
STATISTICS_SPREAD = 16.0
#: Re-computed on 10-bit-mantissa operands, a TF32/HF32 GEMM is this much closer (at least) than in float64.
TF32_FIT = 0.2


@dataclass(frozen=True)
class CoarseGemms:
    """The GEMMs re-computed and how far each is from its float64 re-computation (relative L2); how many of
    them the TF32/HF32 hypothesis (operands rounded to a 10-bit mantissa) reproduces, and its residual."""

    residuals: list[tuple[str, float]]
    median: float
    tf32_fits: int = 0
    tf32_median: float | None = None
    # "recomputed" (tensor dumps: residuals from float64 re-computation) or "statistics" (residuals are the
    # output errors of the GEMMs beyond precision given their own inputs; ``checked`` GEMMs in the pass)
    measured_by: str = "recomputed"
    checked: int = 0


def coarse_gemms(graph: Graph, direction: str, t: Tensor, target: Dump | None) -> CoarseGemms | None:
    """The re-computed GEMMs of the pass when all of them, the one at ``t`` included, add error of their own
    of about the same size (in a statistics dump: none standing out); None otherwise (one faulty GEMM, too few GEMMs,
    data missing)."""
    if (t.node is None or direction != "forward" or budgets.canonical_dtype(t.m.dtype) != "float32"
            or probes.family(t.node.key) != "linear"):
        return None
    if t.m.measure in SUMMARIES:
        return _from_statistics(graph, direction, t)
    if target is None or t.m.measure != "tensor":
        return None
    gemms = [n for n in graph.nodes if n.computing and n.direction == direction and n.outputs
             and n.outputs[0].m.measure == "tensor" and probes.family(n.key) == "linear"]
    if len(gemms) < MIN_GEMMS:
        return None
    residuals: list[tuple[str, float]] = []
    for node in _spread(gemms, t.node):
        r = probes.kernel_residual(node, target)
        if r is not None:
            residuals.append((node.key, r))
    own = next((r for key, r in residuals if key == t.node.key), None)
    others = [r for key, r in residuals if key != t.node.key]
    if own is None or len(others) < MIN_GEMMS - 1 or min(r for _, r in residuals) <= COARSE_RESIDUAL:
        return None
    median = statistics.median(others)
    if own > SPREAD * median:
        return None
    by_key = {n.key: n for n in gemms}
    fits = []
    for key, r in residuals:
        tf32 = _tf32_residual(by_key[key], target)
        if tf32 is not None and tf32 <= TF32_FIT * r:
            fits.append(tf32)
    return CoarseGemms(residuals, median, len(fits), statistics.median(fits) if fits else None,
                       checked=len(residuals))


def _from_statistics(graph: Graph, direction: str, t: Tensor) -> CoarseGemms | None:
    """A statistics dump cannot re-compute a call, but it shows the same pattern: several GEMMs, each given inputs
    that carry less error than it, turn them into an output beyond float32 precision. One faulty GEMM is beyond once;
    the GEMMs after it carry its error and stay within the allowance. A faulty GEMM among GEMMs that all add
    rounding of their own stands out from their median error."""
    outputs = [x for x in graph.tensors if x.direction == direction and not x.is_input and x.arg == "output.0"
               and x.judged and x.node is not None and x.node.computing and x.m.measure in SUMMARIES
               and budgets.canonical_dtype(x.m.dtype) == "float32" and probes.family(x.node.key) == "linear"]
    beyond = [x for x in outputs if x.beyond and x.err is not None and math.isfinite(x.err) and x.err > 0]
    if t not in beyond or len(beyond) < MIN_GEMMS or 2 * len(beyond) < len(outputs):
        return None
    errs = [x.err for x in beyond if x.err is not None]
    median = statistics.median(errs)
    others = [x.err for x in beyond if x is not t and x.err is not None]
    if t.err is None or t.err > STATISTICS_SPREAD * statistics.median(others):
        return None
    return CoarseGemms([(x.node.key, x.err) for x in beyond if x.node is not None and x.err is not None], median,
                       measured_by="statistics", checked=len(outputs))


def _tf32_residual(node: Node, target: Dump) -> float | None:
    """Relative L2 distance of the target's output from the GEMM re-computed on its operands rounded to a 10-bit
    mantissa (to nearest, or truncated: the closer of the two), in float64."""
    args = probes.Args(node, target, False)
    x, y = args.tensor("0"), args.output()
    api = api_name(node.key)
    if x is None or y is None:
        return None
    best = math.inf
    with np.errstate(all="ignore"):
        for nearest in (True, False):
            if api == "linear":
                w, b = args.tensor("1", "weight"), args.tensor("2", "bias")
                if w is None:
                    return None
                ref = _round10(x, nearest) @ _round10(w, nearest).T + (b if b is not None else 0.0)
            else:
                other = args.tensor("1", "other", "mat2")
                if other is None:
                    return None
                ref = _round10(x, nearest) @ _round10(other, nearest)
            if ref.shape != y.shape:
                return None
            best = min(best, probes.relative_residual(y, ref))
    return best if math.isfinite(best) else None


def _round10(a: FloatArray, nearest: bool) -> FloatArray:
    """float32 values with the mantissa cut to 10 bits (to nearest with ties to even, or truncated)."""
    bits = np.ascontiguousarray(a, dtype=np.float32).view(np.int32)
    if nearest:
        bits = bits + 0xFFF + ((bits >> 13) & 1)
    return (bits & ~0x1FFF).view(np.float32).astype(np.float64)


def _spread(nodes: list[Node], must: Node) -> list[Node]:
    if len(nodes) <= MAX_GEMMS:
        return nodes
    step = len(nodes) / (MAX_GEMMS - 1)
    picked = {nodes[min(len(nodes) - 1, round(i * step))].key: nodes[min(len(nodes) - 1, round(i * step))]
              for i in range(MAX_GEMMS - 1)}
    picked[must.key] = must
    return sorted(picked.values(), key=lambda n: n.pos)
