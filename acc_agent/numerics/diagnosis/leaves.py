"""What differs about an argument where a difference enters: measured on the data, never guessed.

A reviewer acts on "the q-projection weight is the golden one transposed" or "every element is
1.03x the golden's", not on "input.1 has cosine 0.003". Each hypothesis is tested on the tensors
when the dump has them (the target must equal the transformed golden within a cast's rounding), on
the statistics otherwise (a constant factor moves Max, Min, Mean and Norm alike; a reordering
leaves them equal while the md5 differs). Integer and bool tensors are only tested for equality,
reordering and mask shifts: fitting scales to token ids would claim what was not measured.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import numpy as np

from acc_agent.numerics import budgets
from acc_agent.numerics.arrays import Array, FloatArray
from acc_agent.numerics.diagnosis.measure import STAT_KEYS, entry

if TYPE_CHECKING:
    from acc_agent.io.dumps import Dump
    from acc_agent.numerics.diagnosis.graph import Tensor

_MAX_ELEMENTS = 1 << 24


def describe(t: Tensor, golden: Dump | None, target: Dump | None) -> str | None:
    """One plain sentence on how the target's argument differs from the golden's, or None."""
    arrays = _arrays(t, golden, target)
    if arrays is not None:
        text = _describe_arrays(*arrays, dtype=t.m.dtype)
        if text is not None:
            return text
    return _describe_stats(t, golden, target)


def _arrays(t: Tensor, golden: Dump | None, target: Dump | None) -> tuple[Array, Array] | None:
    if golden is None or target is None or t.m.measure != "tensor":
        return None
    try:
        g = golden.load(t.row.golden_name or t.name)
        x = target.load(t.name)
    except Exception:  # noqa: BLE001 - unreadable tensors: the row already carries that error
        return None
    if g.size > _MAX_ELEMENTS or x.size > _MAX_ELEMENTS:
        return None
    return np.asarray(g), np.asarray(x)


def _as_float(a: Array) -> FloatArray:
    if a.dtype.kind in "fiub":
        return a.astype(np.float64)
    return np.asarray(a, dtype=np.float64)


def _describe_arrays(g: Array, t: Array, dtype: str | None) -> str | None:
    integer = g.dtype.kind in "iub" and t.dtype.kind in "iub"
    gf, tf = _as_float(g), _as_float(t)
    tol = max(4.0 * budgets.unit_roundoff(dtype), 1e-6)
    if g.shape != t.shape:
        if g.size == t.size and np.array_equal(np.sort(gf, axis=None), np.sort(tf, axis=None)):
            return f"the same values with another shape ({list(t.shape)} vs golden {list(g.shape)})"
        return f"another shape: {list(t.shape)} vs golden {list(g.shape)}"
    g_bad, t_bad = ~np.isfinite(gf), ~np.isfinite(tf)
    if not np.array_equal(g_bad, t_bad):
        # an additive mask: -inf where masked, 0 elsewhere
        return (f"Inf/NaN at other positions ({int(t_bad.sum())} on the target, {int(g_bad.sum())} on the golden): "
                + _describe_mask(g_bad.astype(np.float64), t_bad.astype(np.float64)))
    if g.ndim >= 2 and g.shape[-1] == g.shape[-2] and _close(tf, np.swapaxes(gf, -1, -2), tol):
        return "the golden tensor transposed (same values, last two axes swapped): a layout or checkpoint-conversion error"
    if integer or g.dtype == np.bool_:
        return _describe_mask(gf, tf)
    if g.size and np.array_equal(np.sort(gf, axis=None), np.sort(tf, axis=None)):
        return "the same values in another order (a reordering, e.g. permuted channels or heads)"
    scale = _fit_scale(gf, tf)
    if scale is not None and abs(scale - 1.0) > tol and _close(tf, scale * gf, tol):
        return f"every element is {scale:.4g}x the golden's (a constant factor: a scaling or a wrong config value)"
    if g.ndim >= 2 and g.shape[-1] == g.shape[-2]:
        # another API's layout (addmm takes the weight transposed) with a scaled weight: the factor is the fault
        swapped = np.swapaxes(gf, -1, -2)
        scale = _fit_scale(swapped, tf)
        if scale is not None and abs(scale - 1.0) > tol and _close(tf, scale * swapped, tol):
            return (f"the golden tensor transposed (last two axes swapped) with every element {scale:.4g}x the "
                    "golden's (a constant factor: a scaling or a wrong config value)")
    if gf.size and np.all(gf == gf.flat[0]) and np.all(tf == tf.flat[0]):
        return f"another constant: {float(tf.flat[0]):.6g} everywhere instead of {float(gf.flat[0]):.6g}"
    offset = float(np.mean(tf - gf))
    if abs(offset) > 0 and _close(tf, gf + offset, tol):
        return f"every element is shifted by {offset:.4g} (a constant offset)"
    diff = ~np.isclose(tf, gf, rtol=tol, atol=0.0)
    share = float(diff.mean()) if diff.size else 0.0
    return f"{share:.1%} of its elements differ (relative error above {tol:.1g})"


def _describe_mask(g: FloatArray, t: FloatArray) -> str:
    differ = g != t
    share = float(differ.mean()) if differ.size else 0.0
    text = f"{int(differ.sum())} of {differ.size} elements differ ({share:.1%})"
    if g.ndim >= 2 and g.shape[-1] == g.shape[-2]:
        for k in (-2, -1, 1, 2):
            shifted = np.zeros_like(g)
            if k > 0:
                shifted[..., :, k:] = g[..., :, :-k]
            else:
                shifted[..., :, :k] = g[..., :, -k:]
            if np.array_equal(_band(shifted), _band(t)):
                return text + f"; the mask equals the golden one shifted by {k:+d} column(s): an off-by-one in how it is built"
        gd, td = _diagonal_offset(g), _diagonal_offset(t)
        if gd is not None and td is not None and gd != td:
            return text + (f"; a triangular mask whose diagonal is {td:+d} on the target vs {gd:+d} on the golden: "
                           "an off-by-one in how the mask is built (e.g. triu/tril diagonal)")
    return text


def _band(a: FloatArray) -> FloatArray:
    return a[..., 2:-2, 2:-2] if a.shape[-1] > 4 else a


def _diagonal_offset(a: FloatArray) -> int | None:
    """k when the (last two axes of the) mask is triu(ones, k)-shaped (non-zero on and above diagonal k)."""
    m = a.reshape(-1, a.shape[-2], a.shape[-1])[0] != 0
    n = m.shape[-1]
    for k in range(-n + 1, n):
        if np.array_equal(m, np.triu(np.ones((n, n), dtype=bool), k)):
            return k
        if np.array_equal(~m, np.triu(np.ones((n, n), dtype=bool), k)):
            return k
    return None


def _fit_scale(g: FloatArray, t: FloatArray) -> float | None:
    denom = float(np.dot(g.ravel(), g.ravel()))
    if denom == 0.0 or not math.isfinite(denom):
        return None
    return float(np.dot(g.ravel(), t.ravel()) / denom)


def _close(t: FloatArray, guess: FloatArray, tol: float) -> bool:
    denom = float(np.linalg.norm(t))
    diff = float(np.linalg.norm(t - guess))
    return diff <= tol * denom if denom > 0 else diff == 0.0


def _describe_stats(t: Tensor, golden: Dump | None, target: Dump | None) -> str | None:
    g = entry(golden, t.row.golden_name or t.name)
    x = entry(target, t.name)
    if g is None or x is None:
        return None
    if g.shape is not None and x.shape is not None and g.shape != x.shape:
        return f"another shape: {x.shape} vs golden {g.shape}"
    gs = [g.stats.get(k) for k in STAT_KEYS]
    xs = [x.stats.get(k) for k in STAT_KEYS]
    if any(v is None for v in gs + xs):
        # msprobe records only Max/Min for integer and bool tensors (an attention mask, token ids): say which moved
        parts = [f"{k} {_number(xv)} vs {_number(gv)}" for k, gv, xv in zip(STAT_KEYS, gs, xs, strict=True)
                 if gv is not None and xv is not None and gv != xv]
        if parts:
            return "statistics differ: " + ", ".join(parts)
        if g.md5 is not None and x.md5 is not None and g.md5 != x.md5:
            return ("the same Max and Min, the only statistics msprobe records for an integer or bool tensor, but "
                    "another md5 digest: other elements hold other values")
        return None
    if t.m.target_nonfinite and not t.m.golden_nonfinite:
        shown = ", ".join(f"{k} {_number(xv)} vs {_number(gv)}" for k, gv, xv in zip(STAT_KEYS, gs, xs, strict=True)
                          if gv != xv)
        return f"Inf/NaN on the target where the golden is finite ({shown})"
    if t.m.same_stats_other_bytes:
        return ("the same statistics (Max/Min/Mean/Norm) but other bytes (md5): most likely the same values in "
                "another order, e.g. transposed")
    ratios = [xv / gv for gv, xv in zip(gs, xs, strict=True) if gv not in (0.0, None) and xv is not None]
    tol = max(4.0 * budgets.unit_roundoff(t.m.dtype), 1e-6)
    if _same_values_summed_apart(gs, xs, tol):  # type: ignore[arg-type]
        return ("the same Max and Min, and a Mean and Norm that differ only by the order they were summed in: "
                "most likely the same values in another arrangement, e.g. transposed or permuted (a layout or "
                "checkpoint-conversion error)")
    if gs[0] == gs[1] and xs[0] == xs[1]:
        # one value in every element on both sides (a position or step counter, a 1-element tensor): say which
        return f"one value in every element: {_number(xs[0])} on the target, {_number(gs[0])} on the golden"
    offset = _common_offset(gs, xs, tol)  # type: ignore[arg-type]  # None returned above
    if offset is not None:
        return (f"Max, Min and Mean are all {offset:+.6g} from the golden's: most likely every element shifted by a "
                "constant (an offset: positions or indices counted from another start, a bias added twice or left out)")
    spread = max(ratios) - min(ratios) if ratios else math.inf
    # a constant factor c moves every statistic by c, each within its own rounding (a few roundoffs): the four
    # ratios agree much more closely than they differ from 1 (5 % on every 5th element moves Max/Min 5 % and
    # Mean/Norm 1 %)
    if len(ratios) == 4 and abs(ratios[0] - 1.0) > tol and spread <= min(tol, 0.25 * abs(ratios[0] - 1.0)):
        factor = f"{ratios[0]:.4g}" if abs(ratios[0] - 1.0) >= 0.01 else f"{ratios[0]:.6g}"
        return (f"Max, Min, Mean and Norm are all {factor}x the golden's: most likely every element scaled by "
                "a constant factor (a scaling or a wrong config value)")
    parts = [f"{k} {_number(xv)} vs {_number(gv)}" for k, gv, xv in zip(STAT_KEYS, gs, xs, strict=True) if gv != xv]
    return "statistics differ: " + ", ".join(parts) if parts else None


def _common_offset(gs: list[float], xs: list[float], tol: float) -> float | None:
    """The constant every element was shifted by, when Max, Min and Mean all moved by it (Norm is no shift's
    function), and no constant factor says the same as well; None otherwise."""
    shifts = [x - g for g, x in zip(gs[:3], xs[:3], strict=True)]
    d = shifts[1]
    scale = max(abs(gs[0]), abs(gs[1]), abs(d))
    if d == 0.0 or not math.isfinite(d) or any(abs(s - d) > tol * scale for s in shifts):
        return None
    factors = [x / g for g, x in zip(gs[:3], xs[:3], strict=True) if g != 0.0]
    if len(factors) == 3 and max(factors) - min(factors) <= tol * max(abs(f) for f in factors):
        return None  # a constant factor fits too (all three statistics the same size): the factor is said
    return d


def _same_values_summed_apart(gs: list[float], xs: list[float], tol: float) -> bool:
    """Equal Max and Min, and Mean and Norm within summation-order rounding (but not all four equal).

    Moving the elements of a tensor (a transpose, a permutation) keeps its extremes exactly and changes
    only the order its Mean and Norm are summed in, which moves them by a few roundoffs of their scale."""
    g_max, g_min, g_mean, g_norm = gs
    x_max, x_min, x_mean, x_norm = xs
    if g_max != x_max or g_min != x_min or (g_mean == x_mean and g_norm == x_norm):
        return False
    scale = max(abs(g_max), abs(g_min))
    return abs(x_mean - g_mean) <= tol * scale and abs(x_norm - g_norm) <= tol * abs(g_norm)


def _number(v: float | None) -> str:
    """A recorded statistic as a reader reads it: Inf, -Inf and NaN spelled as msprobe's reports spell them."""
    if v is None:
        return "n/a"
    if math.isnan(v):
        return "NaN"
    if math.isinf(v):
        return "Inf" if v > 0 else "-Inf"
    return f"{v:.6g}"
