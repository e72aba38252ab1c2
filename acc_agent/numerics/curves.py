"""Curve arithmetic for training logs: robust endpoints, relative drop, trend, alignment, divergence.

Pure numpy, no I/O: the tools pass arrays in and explain the numbers. Robustness matters because
single-step losses are noisy (a batch of hard samples, a warm-up step), so endpoints are medians of
a few points rather than single values.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike

from acc_agent.numerics.arrays import FloatArray


def as_arrays(steps: ArrayLike, values: ArrayLike) -> tuple[FloatArray, FloatArray]:
    return np.asarray(steps, dtype=np.float64), np.asarray(values, dtype=np.float64)


def endpoint_k(n: int) -> int:
    """How many points each robust endpoint uses: a fifth of the window, 1 to 5 points."""
    return max(1, min(5, n // 5))


@dataclass(frozen=True)
class Drop:
    start_value: float
    end_value: float
    relative_drop: float
    k: int


def relative_drop(values: ArrayLike) -> Drop:
    """Cumulative relative drop from the window's start: (start - end) / |start|, medians of k points."""
    v = np.asarray(values, dtype=np.float64)
    k = endpoint_k(v.size)
    start = float(np.median(v[:k]))
    end = float(np.median(v[-k:]))
    denom = abs(start) if start != 0 else float("nan")
    return Drop(start, end, (start - end) / denom, k)


def theil_sen_slope(steps: ArrayLike, values: ArrayLike, max_points: int = 400) -> float:
    """Median of pairwise slopes: a trend that a few spikes cannot flip. Subsampled above ``max_points``."""
    x, y = as_arrays(steps, values)
    if x.size < 2:
        return float("nan")
    if x.size > max_points:
        idx = np.linspace(0, x.size - 1, max_points).astype(int)
        x, y = x[idx], y[idx]
    i, j = np.triu_indices(x.size, k=1)
    dx = x[j] - x[i]
    ok = dx != 0
    if not ok.any():
        return float("nan")
    return float(np.median((y[j] - y[i])[ok] / dx[ok]))


def rolling_median(values: ArrayLike, k: int = 3) -> FloatArray:
    """Centred running median (window ``k``, shrinking at the edges)."""
    v = np.asarray(values, dtype=np.float64)
    if v.size == 0 or k <= 1:
        return v.copy()
    half = k // 2
    return np.array([np.median(v[max(0, i - half) : i + half + 1]) for i in range(v.size)])


def falling_fraction(values: ArrayLike) -> float:
    """Share of steps where the running median does not rise: 1.0 is a perfectly steady descent."""
    s = rolling_median(values, 3)
    if s.size < 2:
        return float("nan")
    return float(np.mean(np.diff(s) <= 0))


def align(b_steps: ArrayLike, b_vals: ArrayLike, t_steps: ArrayLike, t_vals: ArrayLike) -> tuple[FloatArray, FloatArray, FloatArray]:
    """Put two curves on common steps: the sparser side's steps inside the overlap, the other interpolated.

    Interpolating the denser curve onto the sparser one's steps never invents points between
    the sparse side's samples.
    """
    bx, by = as_arrays(b_steps, b_vals)
    tx, ty = as_arrays(t_steps, t_vals)
    if bx.size == 0 or tx.size == 0:
        empty = np.empty(0)
        return empty, empty, empty
    lo, hi = max(bx.min(), tx.min()), min(bx.max(), tx.max())
    if hi < lo:
        empty = np.empty(0)
        return empty, empty, empty
    base_x = bx if bx.size <= tx.size else tx
    grid = base_x[(base_x >= lo) & (base_x <= hi)]
    b_on = by[np.isin(bx, grid)] if base_x is bx else np.interp(grid, bx, by)
    t_on = ty[np.isin(tx, grid)] if base_x is tx else np.interp(grid, tx, ty)
    return grid, b_on, t_on


def relative_deviation(baseline: ArrayLike, target: ArrayLike, eps: float = 1e-12) -> FloatArray:
    b = np.asarray(baseline, dtype=np.float64)
    t = np.asarray(target, dtype=np.float64)
    return np.abs(t - b) / np.maximum(np.abs(b), eps)


def first_exceeding(steps: ArrayLike, deviation: ArrayLike, tolerance: float, patience: int = 1) -> int | None:
    """Index of the first of ``patience`` consecutive points above ``tolerance``; None if none."""
    d = np.asarray(deviation, dtype=np.float64)
    over = (d > tolerance) | ~np.isfinite(d)
    run = 0
    for i, flag in enumerate(over):
        run = run + 1 if flag else 0
        if run >= patience:
            return i - patience + 1
    return None


@dataclass(frozen=True)
class CheckResult:
    name: str
    status: str  # pass | warn | fail | na
    detail: str
    steps: tuple[int, ...] = ()


def smoke_checks(series: dict[str, tuple[ArrayLike, ArrayLike]], explode_factor: float = 10.0) -> list[CheckResult]:
    """Floating-point-exception and smoke checks over a run's series (a short training run must stay finite and must not explode)."""
    out: list[CheckResult] = []
    # A series with no point (in the judged window) says nothing: the same as no series, and numpy's
    # max/min of an empty array would raise.
    series = {k: v for k, v in series.items() if np.size(v[1]) > 0}
    loss = series.get("loss")
    if loss is None:
        out.append(CheckResult("loss_finite", "na", "no loss series in the log"))
    else:
        x, y = as_arrays(*loss)
        bad = x[~np.isfinite(y)].astype(int).tolist()
        out.append(
            CheckResult("loss_finite", "fail", f"loss is NaN/Inf at {len(bad)} step(s), first {bad[0]}", tuple(bad[:20]))
            if bad else CheckResult("loss_finite", "pass", f"all {x.size} loss values finite")
        )
    grad = series.get("grad_norm")
    if grad is None:
        out.append(CheckResult("grad_norm", "na", "no gradient-norm series in the log"))
    else:
        x, y = as_arrays(*grad)
        finite = np.isfinite(y)
        med = float(np.median(y[finite])) if finite.any() else float("nan")
        nonfinite = x[~finite].astype(int).tolist()
        zeros = x[finite & (y == 0)].astype(int).tolist()
        huge = x[finite & (y > explode_factor * med)].astype(int).tolist() if med > 0 else []
        if nonfinite:
            out.append(CheckResult("grad_norm", "fail", f"gradient norm NaN/Inf at {len(nonfinite)} step(s), first {nonfinite[0]}", tuple(nonfinite[:20])))
        elif zeros and len(zeros) == x.size:
            out.append(CheckResult("grad_norm", "fail", "gradient norm is 0 at every step: no gradient reaches the weights (frozen or detached graph?)", tuple(zeros[:20])))
        elif huge:
            out.append(CheckResult("grad_norm", "fail", f"gradient norm above {explode_factor:g}x its median ({med:.4g}) at {len(huge)} step(s): exploding", tuple(huge[:20])))
        elif zeros:
            out.append(CheckResult("grad_norm", "warn", f"gradient norm is 0 at {len(zeros)} step(s)", tuple(zeros[:20])))
        else:
            out.append(CheckResult("grad_norm", "pass", f"finite, non-zero, max {float(y.max()):.4g} <= {explode_factor:g}x median {med:.4g}"))
    scale = series.get("loss_scale")
    if scale is None:
        out.append(CheckResult("loss_scale", "na", "no loss-scale series (no dynamic loss scaling logged)"))
    else:
        x, y = as_arrays(*scale)
        drops = x[1:][np.diff(y) < 0].astype(int).tolist()
        if y.size and y[0] > 1 and y[-1] <= 1:
            out.append(CheckResult("loss_scale", "fail", f"loss scale fell from {y[0]:g} to {y[-1]:g}: repeated overflow", tuple(drops[:20])))
        elif len(drops) >= 3:
            out.append(CheckResult("loss_scale", "warn", f"loss scale fell {len(drops)} times (overflow steps skipped)", tuple(drops[:20])))
        else:
            out.append(CheckResult("loss_scale", "pass", f"{len(drops)} drop(s); range {float(y.min()):g}-{float(y.max()):g}"))
    for name, label in (("skipped_iterations", "skipped iterations"), ("nan_iterations", "NaN iterations")):
        counter = series.get(name)
        if counter is None:
            continue
        x, y = as_arrays(*counter)
        hit = x[y > 0].astype(int).tolist()
        status = "fail" if hit and name == "nan_iterations" else ("warn" if hit else "pass")
        detail = f"{label} reported at {len(hit)} step(s), first {hit[0]}" if hit else f"no {label} in {x.size} steps"
        out.append(CheckResult(name, status, detail, tuple(hit[:20])))
    return out
