"""One loss-curve criterion on two aligned curves: its value, against its limit, raw or smoothed.

Why smoothing is part of the criterion: a 1 % limit is meaningless point by point when the
baseline itself jumps 3 % from one step to the next (batches of different difficulty). Then the
difference of two raw curves is mostly that noise, and the question "does the target follow the
baseline" is answered on both curves smoothed alike — a moving average long enough to push the
noise well under the limit. Smoothing removes noise, not offsets: a target 1.5 % above the
baseline at every step is 1.5 % above it after smoothing too. Pure numpy, no I/O.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike

from acc_agent.numerics.curves import FloatArray, first_exceeding, relative_deviation

MAD_TO_SIGMA = 1.4826
MIN_NOISE_POINTS = 5


def step_noise(values: ArrayLike) -> float:
    """Relative step-to-step noise of a curve: a robust standard deviation of one point's scatter.

    Second differences (``y[i-1] - 2·y[i] + y[i+1]``), relative to the point: a falling trend,
    even a curved one, nearly cancels in them while scatter does not. The median absolute deviation
    makes a few spikes harmless; √6 turns the scatter of a second difference into that of one point.
    NaN when there are too few finite points.
    """
    v = np.asarray(values, dtype=np.float64)
    v = v[np.isfinite(v)]
    if v.size < MIN_NOISE_POINTS:
        return float("nan")
    d2 = (v[:-2] - 2.0 * v[1:-1] + v[2:]) / np.maximum(np.abs(v[1:-1]), 1e-12)
    return float(MAD_TO_SIGMA * np.median(np.abs(d2 - np.median(d2))) / math.sqrt(6.0))


def smoothing_window(noise: float, limit: float, points: int) -> int:
    """Odd moving-average length that brings ``noise`` to half the limit: (2·noise/limit)², 3..points/4."""
    if not (math.isfinite(noise) and limit > 0):
        return 1
    want = math.ceil((2.0 * noise / limit) ** 2)
    cap = max(3, points // 4)
    w = max(3, min(want, cap))
    return w if w % 2 else w - 1 if w > 3 else 3


def smooth(values: ArrayLike, window: int) -> FloatArray:
    """Centred moving mean over ``window`` points, the window shrinking at both ends."""
    v = np.asarray(values, dtype=np.float64)
    if window <= 1 or v.size == 0:
        return v.copy()
    half = window // 2
    csum = np.concatenate(([0.0], np.cumsum(v)))
    idx = np.arange(v.size)
    lo = np.maximum(idx - half, 0)
    hi = np.minimum(idx + half + 1, v.size)
    return (csum[hi] - csum[lo]) / (hi - lo)


def smoothed_deviation(base: FloatArray, targ: FloatArray, window: int) -> FloatArray:
    """|t - b| / |b| of both curves smoothed alike (finite points only; NaN elsewhere)."""
    ok = np.isfinite(base) & np.isfinite(targ)
    dev = np.full(base.shape, np.nan)
    dev[ok] = relative_deviation(smooth(base[ok], window), smooth(targ[ok], window))
    return dev


@dataclass(frozen=True)
class Outcome:
    """A criterion evaluated: the deciding value and the raw/smoothed ones behind it."""

    value: float | None
    passed: bool | None
    curve: str  # raw | smoothed | first step
    raw_value: float | None = None
    smoothed_value: float | None = None
    window: int = 1
    worst_step: int | None = None
    first_exceeding_step: int | None = None
    nonfinite_steps: tuple[int, ...] = ()
    abs_value: float | None = None


def _stat(statistic: str, dev: FloatArray) -> tuple[float | None, int | None]:
    finite = np.isfinite(dev)
    if not finite.any():
        return None, None
    if statistic == "mean_relative_error":
        return float(np.mean(dev[finite])), None
    i = int(np.argmax(np.where(finite, dev, -np.inf)))
    return float(dev[i]), i


def judge_curves(statistic: str, steps: FloatArray, base: FloatArray, targ: FloatArray, limit: float,
                 noise: float, patience: int = 1) -> Outcome:
    """Mean relative error or max relative deviation of ``targ`` against ``base`` on common ``steps``.

    Where the baseline's ``noise`` exceeds ``limit``, the curves smoothed with :func:`smoothing_window`
    are compared as well. The raw curves decide when they meet the limit (runs fed the same batches
    share their noise, so it cancels point by point); otherwise, with noise above the limit, the
    smoothed curves decide — a raw miss made of noise is not a difference, while a real offset
    survives smoothing. ``curve`` says which decided. A NaN/Inf in the target where the baseline is
    finite fails the criterion whatever the average says.
    """
    bad = np.isfinite(base) & ~np.isfinite(targ)
    nonfinite = tuple(int(s) for s in steps[bad][:20])
    raw_dev = relative_deviation(base, targ)
    raw_value, raw_i = _stat(statistic, raw_dev)
    dev, value, worst_i, curve, window, smoothed_value = raw_dev, raw_value, raw_i, "raw", 1, None
    if math.isfinite(noise) and noise > limit:
        window = smoothing_window(noise, limit, int(steps.size))
        sdev = smoothed_deviation(base, targ, window)
        smoothed_value, s_worst = _stat(statistic, sdev)
        if (raw_value is None or raw_value > limit) and smoothed_value is not None:
            dev, value, worst_i, curve = sdev, smoothed_value, s_worst, "smoothed"
    first = first_exceeding(steps, np.where(np.isfinite(dev) | bad, dev, 0.0), limit, patience)
    passed = None if value is None else bool(value <= limit and not nonfinite)
    return Outcome(
        value=value, passed=passed, curve=curve, raw_value=raw_value, smoothed_value=smoothed_value, window=window,
        worst_step=int(steps[worst_i]) if worst_i is not None else None,
        first_exceeding_step=int(steps[first]) if first is not None else None, nonfinite_steps=nonfinite,
    )


def judge_first_step(b0: float, t0: float, limit: float, abs_limit: float | None) -> Outcome:
    """First logged step of both runs: met when within ``limit`` relative or ``abs_limit`` absolute."""
    if not (math.isfinite(b0) and math.isfinite(t0)):
        return Outcome(value=None, passed=False if math.isfinite(b0) else None, curve="first step")
    diff = abs(t0 - b0)
    rel = diff / max(abs(b0), 1e-12)
    passed = rel <= limit or (abs_limit is not None and diff <= abs_limit)
    return Outcome(value=rel, passed=passed, curve="first step", raw_value=rel, abs_value=diff)
