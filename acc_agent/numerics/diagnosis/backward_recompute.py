"""A backward call's input gradient re-computed in float64 from what the dump recorded around it.

A wrong backward kernel with a right forward (a fused norm whose gradient formula drops a term, a
custom ``autograd.Function`` scaled on part of the data) leaves every forward tensor agreeing. In
BF16 a gradient 5 % off on a third of its elements is 3 % off in relative L2: inside one operator's
6 % budget, so the dataflow judgement alone calls it rounding. But the call's input gradient is a
closed formula of tensors msprobe recorded on the target itself: the forward call's inputs (and
output) and the backward call's incoming gradient. Re-computed in float64 from those, it differs
from the kernel's result by the result's own rounding only (about 0.4 of a unit roundoff in relative
L2 on clean BF16 runs, as for the forward re-computation in ``recheck``).

A max pool's backward is re-computed too: it sends each window's incoming gradient to the element the
forward pass chose, and in FP16 rounding decides near-ties (a window holding one small positive value and
zeros after a ReLU on one side, only zeros on the other), so a clean run's pooled gradient lands elsewhere
in a few windows, 9x beyond one operator's budget. Routed by the target's own recorded forward input, the
kernel's result is reproduced exactly: the choice is rounding's, not the kernel's.

Only the gradient of the call's first input is re-computed, and only where ``output.0`` of the
backward entry has that input's shape: msprobe records the gradients the call's autograd node
returns, in that node's order. A norm, softmax or activation node returns the input's gradient
first; a linear's does not (``addmm`` gives the bias gradient first; a 3-d input's view node gives
the flattened product's gradient), so GEMMs are left out.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import TYPE_CHECKING

import numpy as np

from acc_agent.numerics.arrays import FloatArray
from acc_agent.numerics.diagnosis.graph import api_name
from acc_agent.numerics.diagnosis.probes import (
    Args,
    as_number,
    axis_ints,
    family,
    leaky_slope,
    norm_axes,
    pool_window,
    relative_residual,
    sampled,
)

if TYPE_CHECKING:
    from acc_agent.io.dumps import Dump
    from acc_agent.numerics.diagnosis.graph import Node

_Pair = tuple[FloatArray, FloatArray]


def backward_residual(node: Node, forward: Node | None, target: Dump | None) -> float | None:
    """Relative L2 distance of the target's input gradient of the backward call ``node`` from the one
    re-computed in float64 from the target's forward call ``forward`` and incoming gradient (None: not a
    call this can re-compute, or data missing)."""
    if (target is None or forward is None or node.direction != "backward" or not node.outputs
            or node.outputs[0].arg != "output.0" or node.outputs[0].m.measure != "tensor"):
        return None
    compute = _max_pool if _pool_axes(api_name(node.key)) else _BACKWARD.get(family(node.key))
    if compute is None:
        return None
    try:
        with np.errstate(all="ignore"):
            pair = compute(Args(forward, target, False), Args(node, target, False), node.key.lower())
    except (ValueError, TypeError, IndexError, ArithmeticError):
        return None
    if pair is None:
        return None
    res = relative_residual(*pair)
    return res if math.isfinite(res) else None


def forward_of(node: Node, by_key: dict[str, Node]) -> Node | None:
    """The forward call of a backward API call (``X.backward`` -> ``X.forward``); None for modules."""
    if node.is_module or not node.key.endswith(".backward"):
        return None
    return by_key.get(node.key[: -len(".backward")] + ".forward")


def _grad_pair(f: Args, b: Args) -> tuple[FloatArray, FloatArray, FloatArray] | None:
    """The forward call's first input, the incoming gradient and the kernel's input gradient, all one shape."""
    x, g, gx = f.tensor("0"), b.tensor("0"), b.output()
    if x is None or g is None or gx is None or not (x.shape == g.shape == gx.shape):
        return None
    return x, g, gx


def _norm(f: Args, b: Args, name: str) -> _Pair | None:
    if "group" in name or "instance" in name:
        return None
    got = _grad_pair(f, b)
    if got is None:
        return None
    x, g, gx = got
    rms = "rms" in name
    w = f.tensor("weight", "2" if not rms else "1", "gamma")
    eps = as_number(f.scalar("eps", "4" if not rms else "2", "epsilon"))
    if eps is None:
        return None
    axes = norm_axes(x, w)
    xs, gs, gxs = sampled([x, g, gx], len(axes))
    if xs is None or gs is None or gxs is None:
        return None
    x, g, gx = xs, gs, gxs
    gy = g * w if w is not None else g
    if rms:
        r = 1.0 / np.sqrt(np.mean(x**2, axis=axes, keepdims=True) + eps)
        xhat = x * r
        return gx, r * (gy - xhat * np.mean(gy * xhat, axis=axes, keepdims=True))
    r = 1.0 / np.sqrt(np.var(x, axis=axes, keepdims=True) + eps)
    xhat = (x - np.mean(x, axis=axes, keepdims=True)) * r
    return gx, r * (gy - np.mean(gy, axis=axes, keepdims=True) - xhat * np.mean(gy * xhat, axis=axes, keepdims=True))


def _softmax(f: Args, b: Args, name: str) -> _Pair | None:
    y, g, gx = f.output(), b.tensor("0"), b.output()
    dim = as_number(f.scalar("dim", "1"))
    if y is None or g is None or gx is None or dim is None or "gumbel" in name or not (y.shape == g.shape == gx.shape):
        return None
    axis = int(dim)
    if "log_softmax" in name:
        return gx, g - np.exp(y) * g.sum(axis=axis, keepdims=True)
    return gx, y * (g - (g * y).sum(axis=axis, keepdims=True))


def _activation(f: Args, b: Args, name: str) -> _Pair | None:
    got = _grad_pair(f, b)
    if got is None:
        return None
    x, g, gx = got
    slope: Callable[[FloatArray], FloatArray]
    if "gelu" in name:
        approximate = f.scalar("approximate")
        if approximate == "tanh":
            c = math.sqrt(2.0 / math.pi)
            t = np.tanh(c * (x + 0.044715 * x**3))
            return gx, g * (0.5 * (1.0 + t) + 0.5 * x * (1.0 - t**2) * c * (1.0 + 3 * 0.044715 * x**2))
        if approximate not in (None, "none"):
            return None
        cdf = 0.5 * (1.0 + np.asarray(np.frompyfunc(math.erf, 1, 1)(x / math.sqrt(2.0)), dtype=np.float64))
        return gx, g * (cdf + x * np.exp(-0.5 * x**2) / math.sqrt(2.0 * math.pi))
    if "silu" in name:
        def slope(v: FloatArray) -> FloatArray:
            s = 1.0 / (1.0 + np.exp(-v))
            return s * (1.0 + v * (1.0 - s))
    elif "relu" in name and "leaky" not in name and "relu6" not in name:
        def slope(v: FloatArray) -> FloatArray:
            return (v > 0).astype(np.float64)
    elif "leaky_relu" in name:
        negative = leaky_slope(f)

        def slope(v: FloatArray) -> FloatArray:
            return np.where(v > 0, 1.0, negative)
    elif "sigmoid" in name and "log" not in name and "hard" not in name:
        def slope(v: FloatArray) -> FloatArray:
            s = 1.0 / (1.0 + np.exp(-v))
            return s * (1.0 - s)
    elif "tanh" in name and "hard" not in name:
        def slope(v: FloatArray) -> FloatArray:
            return 1.0 - np.tanh(v) ** 2
    else:
        return None
    return gx, g * slope(x)


def _max_pool(f: Args, b: Args, name: str) -> _Pair | None:
    """A max pool call's input gradient (see :func:`_routed`), with the geometry its recorded arguments give. Only
    plain max pools of 1 to 3 spatial axes without ``ceil_mode``."""
    nd = _pool_axes(name)
    x, g, gx = f.tensor("0"), b.tensor("0"), b.output()
    window = pool_window(f, nd) if nd is not None else None
    if nd is None or window is None or x is None or g is None or gx is None or gx.shape != x.shape \
            or f.scalar("5", "ceil_mode"):
        return None
    kernel, stride, padding = window
    dilation = axis_ints(f, "4", "dilation", nd) or (1,) * nd
    routed = _routed(x, g, kernel, stride, padding, dilation)
    return (gx, routed) if routed is not None else None


def _pool_axes(name: str) -> int | None:
    """Spatial axes of a plain max pool (``max_pool2d``, ``MaxPool2d``: 2); None for anything else."""
    plain = name.lower().replace("_", "")
    if "maxpool" not in plain or "adaptive" in plain or "fractional" in plain:
        return None
    return next((n for n in (1, 2, 3) if f"pool{n}d" in plain), None)


def _routed(x: FloatArray, g: FloatArray, kernel: tuple[int, ...], stride: tuple[int, ...], padding: tuple[int, ...],
            dilation: tuple[int, ...]) -> FloatArray | None:
    """A max pool's input gradient: each window's incoming gradient ``g`` goes to the window's first largest element
    of ``x`` (the order PyTorch's kernels scan a window in), summed where windows overlap. None where ``g`` does not
    have the pooled shape or ``x`` holds NaN (a NaN wins its window there)."""
    nd = len(kernel)
    if x.ndim <= nd or np.isnan(x).any() or min(stride) < 1:
        return None
    lead, spatial = x.shape[:-nd], x.shape[-nd:]
    span = tuple(d * (k - 1) + 1 for k, d in zip(kernel, dilation, strict=True))
    out = tuple((n + 2 * p - s) // st + 1 for n, p, s, st in zip(spatial, padding, span, stride, strict=True))
    if g.shape != lead + out or min(out) < 1:
        return None
    padded = np.pad(x, [(0, 0)] * len(lead) + [(p, p) for p in padding], constant_values=-np.inf)
    windows = np.lib.stride_tricks.sliding_window_view(padded, span, axis=tuple(range(-nd, 0)))
    windows = windows[(...,) + tuple(slice(0, o * st, st) for o, st in zip(out, stride, strict=True))
                      + tuple(slice(None, None, d) for d in dilation)]
    chosen = np.unravel_index(windows.reshape(lead + out + (-1,)).argmax(axis=-1), kernel)
    grids = np.meshgrid(*(np.arange(o) for o in out), indexing="ij")
    coords = [grid * st + c * d - p for grid, st, c, d, p in zip(grids, stride, chosen, dilation, padding, strict=True)]
    flat = np.ravel_multi_index(coords, spatial).reshape(-1, math.prod(out))
    offsets = np.arange(flat.shape[0])[:, None] * math.prod(spatial)
    summed = np.bincount((flat + offsets).ravel(), weights=g.reshape(-1), minlength=x.size)
    return np.asarray(summed, dtype=np.float64).reshape(x.shape)


#: Geometries an ``nn.MaxPool`` module is tried with when the dump records no arguments (levels L0 and mix): the
#: pooled size's own ratio (``MaxPool2d(2)``) and the 3-wide windows of ResNet stems and same-size pooling.
_MODULE_POOL_GUESSES = ((None, None, 0), (3, 2, 1), (3, 1, 1), (2, 1, 0))


def module_pool_residual(node: Node, by_key: dict[str, Node], target: Dump | None) -> float | None:
    """Relative L2 distance of a max-pool module's recorded input gradient from the one routed by the target's own
    forward input, under the first common geometry that its shapes allow and that reproduces it (None: none does,
    or this is no max-pool module's backward).

    A module records no kernel size or stride, so the geometry is a guess, and a guess may only clear: a wrong one
    routes other windows and reproduces nothing, which says nothing about the kernel."""
    nd = _pool_axes(api_name(node.key))
    if target is None or nd is None or not node.is_module or ".backward." not in node.key or not node.outputs:
        return None
    forward = by_key.get(node.key.replace(".backward.", ".forward.", 1))
    if forward is None:
        return None
    f, b = Args(forward, target, False), Args(node, target, False)
    x, g, gx = f.tensor("0"), b.tensor("0"), b.output()
    if x is None or g is None or gx is None or gx.shape != x.shape or x.ndim <= nd or g.ndim != x.ndim:
        return None
    ratios = tuple(n // o if o and n % o == 0 else 0 for n, o in zip(x.shape[-nd:], g.shape[-nd:], strict=True))
    best: float | None = None
    for size, step, pad in _MODULE_POOL_GUESSES:
        kernel = ratios if size is None else (size,) * nd
        stride = ratios if step is None else (step,) * nd
        if min(kernel) < 1 or min(stride) < 1:
            continue
        with np.errstate(all="ignore"):
            routed = _routed(x, g, kernel, stride, (pad,) * nd, (1,) * nd)
        if routed is None:
            continue
        res = relative_residual(gx, routed)
        if math.isfinite(res) and (best is None or res < best):
            best = res
    return best


_BACKWARD: dict[str, Callable[[Args, Args, str], _Pair | None]] = {
    "layer_norm": _norm,
    "softmax": _softmax,
    "activation": _activation,
}
