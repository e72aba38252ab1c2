"""Explain a mismatching tensor pair by a simple transformation of the golden tensor.

When the very first tensor already differs, the usual causes are preprocessing (RGB/BGR order,
NCHW/NHWC layout, a different mean/std) and, for a middle tensor, a layout difference (stored
transposed or reshaped). Each hypothesis is tested on the real data: the target must equal the
transformed golden tensor within the dtype's error budget, so the answer is a measured fact
("matches after reversing axis 1, relative error 0.0"), not a guess.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field

import numpy as np

from acc_agent.numerics.arrays import Array, FloatArray

_MAX_PERM_NDIM = 5


@dataclass
class TransformMatch:
    """One hypothesis that explains ``target`` from ``golden``, with the residual it leaves."""

    kind: str  # identity | channel_reverse | permute | reshape | affine | channel_affine | ...
    description: str
    residual: float  # relative L2 error left after applying the transformation
    params: dict[str, object] = field(default_factory=dict)


def _rel(target: FloatArray, guess: FloatArray) -> float:
    denom = float(np.linalg.norm(target))
    diff = float(np.linalg.norm(target - guess))
    if denom == 0.0:
        return 0.0 if diff == 0.0 else float("inf")
    return diff / denom


def _fit_affine(g: FloatArray, t: FloatArray) -> tuple[float, float]:
    """Least-squares ``t ~ scale * g + offset``."""
    gm, tm = float(g.mean()), float(t.mean())
    gc = g - gm
    var = float((gc * gc).sum())
    scale = float((gc * (t - tm)).sum()) / var if var > 0 else 1.0
    return scale, tm - scale * gm


def _channel_axes(shape: tuple[int, ...]) -> list[int]:
    """Axes that can hold colour/feature channels: NCHW's 1 and NHWC's last, for 3-D/4-D tensors."""
    if len(shape) == 4:
        return [1, 3]
    if len(shape) == 3:
        return [0, 2]
    if len(shape) == 2:
        return [1]
    return []


def _affine_candidates(g: FloatArray, t: FloatArray, label: str, budget: float) -> list[TransformMatch]:
    out: list[TransformMatch] = []
    scale, offset = _fit_affine(g, t)
    res = _rel(t, scale * g + offset)
    if res <= budget:
        out.append(TransformMatch(
            "affine", f"{label}target = {scale:.6g} * golden + {offset:.6g} (a mean/std normalisation mismatch)",
            res, {"scale": scale, "offset": offset},
        ))
        return out
    for axis in _channel_axes(g.shape):
        channels = g.shape[axis]
        if channels > 64:
            continue
        gs = np.moveaxis(g, axis, 0).reshape(channels, -1)
        ts = np.moveaxis(t, axis, 0).reshape(channels, -1)
        fits = [_fit_affine(gs[c], ts[c]) for c in range(channels)]
        guess = np.stack([a * gs[c] + b for c, (a, b) in enumerate(fits)])
        res = _rel(ts, guess)
        if res <= budget:
            scales = [round(a, 6) for a, _ in fits]
            offsets = [round(b, 6) for _, b in fits]
            out.append(TransformMatch(
                "channel_affine",
                f"{label}per-channel affine map on axis {axis}: scale {scales}, offset {offsets} "
                "(per-channel mean/std differ between the two preprocessings)",
                res, {"axis": axis, "scale": scales, "offset": offsets},
            ))
            break
    return out


def explain_pair(golden: Array, target: Array, budget: float, *, input_side: bool) -> list[TransformMatch]:
    """Transformations under which ``target`` equals ``golden`` within ``budget`` (simplest first).

    ``input_side`` adds the preprocessing hypotheses (channel order, normalisation); a middle
    tensor is tested for layout only (transpose/permutation, reshape).
    """
    g = np.asarray(golden, dtype=np.float64)
    t = np.asarray(target, dtype=np.float64)
    tol = max(budget, 1e-12)
    matches: list[TransformMatch] = []
    if g.shape == t.shape and _rel(t, g) <= tol:
        return [TransformMatch("identity", "target equals golden", _rel(t, g))]
    if g.ndim <= _MAX_PERM_NDIM and g.size == t.size:
        for perm in itertools.permutations(range(g.ndim)):
            if perm == tuple(range(g.ndim)) or tuple(g.shape[i] for i in perm) != t.shape:
                continue
            res = _rel(t, g.transpose(perm))
            if res <= tol:
                layout = ""
                if g.ndim == 4 and perm == (0, 2, 3, 1):
                    layout = " (NCHW golden stored as NHWC)"
                elif g.ndim == 4 and perm == (0, 3, 1, 2):
                    layout = " (NHWC golden stored as NCHW)"
                matches.append(TransformMatch("permute", f"target = golden with axes permuted {list(perm)}{layout}",
                                              res, {"axes": list(perm)}))
                return matches
    if g.size == t.size and g.shape != t.shape:
        res = _rel(t.reshape(-1), g.reshape(-1))
        if res <= tol:
            return [TransformMatch("reshape", f"same data in another shape: golden {list(g.shape)} "
                                   f"vs target {list(t.shape)}", res, {})]
        if g.ndim >= 2:
            # a transpose that was stored then viewed in the original shape
            for perm in itertools.permutations(range(g.ndim)):
                if perm == tuple(range(g.ndim)):
                    continue
                res = _rel(t.reshape(-1), g.transpose(perm).reshape(-1))
                if res <= tol:
                    return [TransformMatch("permute_reshape", f"golden permuted {list(perm)} then reshaped "
                                           f"to {list(t.shape)}", res, {"axes": list(perm)})]
    if g.shape != t.shape:
        return matches
    if not input_side:
        return matches
    for axis in _channel_axes(g.shape):
        if g.shape[axis] != 3:
            continue
        flipped = np.flip(g, axis=axis)
        res = _rel(t, flipped)
        if res <= tol:
            return [TransformMatch("channel_reverse", f"target = golden with channels reversed on axis {axis} "
                                   "(RGB/BGR order differs)", res, {"axis": axis})]
        for m in _affine_candidates(flipped, t, f"channels reversed on axis {axis}, then ", tol):
            m.kind = "channel_reverse+" + m.kind
            m.params["reversed_axis"] = axis
            return [m]
    matches.extend(_affine_candidates(g, t, "", tol))
    return matches
