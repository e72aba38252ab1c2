"""Latency statistics that can be trusted: percentiles, outliers, warm-up, and ratio confidence.

Everything here is pure numpy and deterministic (bootstrap uses a fixed seed) so that the same
timings always give the same report. Outliers and warm-up are *detected and reported*, never
silently dropped: the caller decides what to exclude and must say so.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Final

if TYPE_CHECKING:
    import numpy as np

    from acc_agent.numerics.arrays import FloatArray

# Percentile method: numpy's default "linear" interpolation, the one pyperf and most papers use.
PERCENTILE_METHOD: Final = "linear"


@dataclass(frozen=True)
class Summary:
    """Summary statistics of one sample of durations (milliseconds)."""

    n: int
    mean: float
    std: float
    min: float
    max: float
    p50: float
    p95: float
    p99: float


def summarize(values_ms: Sequence[float]) -> Summary:
    """p50/p95/p99 (linear interpolation), mean and sample std (ddof=1) of ``values_ms``."""
    import numpy as np

    arr = np.asarray(values_ms, dtype=np.float64)
    if arr.size == 0:
        raise ValueError("no values to summarize")
    p50, p95, p99 = np.percentile(arr, [50, 95, 99], method=PERCENTILE_METHOD)
    std = float(arr.std(ddof=1)) if arr.size > 1 else 0.0
    return Summary(
        n=int(arr.size),
        mean=float(arr.mean()),
        std=std,
        min=float(arr.min()),
        max=float(arr.max()),
        p50=float(p50),
        p95=float(p95),
        p99=float(p99),
    )


@dataclass(frozen=True)
class Outliers:
    """Points outside Tukey's fences (Q1 - k*IQR, Q3 + k*IQR); reported, not removed."""

    indices: list[int]
    low_fence: float
    high_fence: float
    rule: str


def detect_outliers(values_ms: Sequence[float], k: float = 3.0) -> Outliers:
    """Tukey fences with ``k`` (3.0 = "far out"): robust to the long right tail of timings."""
    import numpy as np

    arr = np.asarray(values_ms, dtype=np.float64)
    if arr.size < 4:
        return Outliers([], float("nan"), float("nan"), f"Tukey fences k={k} (needs >= 4 values)")
    q1, q3 = np.percentile(arr, [25, 75])
    iqr = q3 - q1
    lo, hi = float(q1 - k * iqr), float(q3 + k * iqr)
    idx = [int(i) for i in np.nonzero((arr < lo) | (arr > hi))[0]]
    return Outliers(idx, lo, hi, f"outside [Q1 - {k}*IQR, Q3 + {k}*IQR]")


@dataclass(frozen=True)
class WarmupDetection:
    """How many leading values look like warm-up (compilation, caches, allocator growth)."""

    count: int
    steady_median: float
    threshold: float
    rule: str
    leading_values: list[float] = field(default_factory=list)


def detect_warmup(values_ms: Sequence[float], factor: float = 1.5, max_fraction: float = 0.5) -> WarmupDetection:
    """Count the leading run of values above ``factor`` x the median of the later half.

    Real logs (see shared/realdata/logs/INDEX.md) show the first step several times slower than
    the steady state; this finds that prefix so a report can state it instead of averaging it in.
    """
    import numpy as np

    arr = np.asarray(values_ms, dtype=np.float64)
    rule = f"leading values > {factor} x median of the second half (at most {int(max_fraction * 100)} %)"
    if arr.size < 3:
        return WarmupDetection(0, float(np.median(arr)) if arr.size else float("nan"), float("nan"), rule)
    steady = float(np.median(arr[arr.size // 2 :]))
    threshold = factor * steady
    limit = int(arr.size * max_fraction)
    count = 0
    while count < limit and arr[count] > threshold:
        count += 1
    return WarmupDetection(count, steady, threshold, rule, [float(v) for v in arr[:count]])


@dataclass(frozen=True)
class RatioCI:
    """Ratio target/baseline of one statistic with a percentile-bootstrap confidence interval."""

    statistic: str
    ratio: float
    low: float
    high: float
    confidence: float
    resamples: int
    method: str
    extra: dict[str, object] = field(default_factory=dict)


def _stat(arr: FloatArray, statistic: str) -> FloatArray | np.float64:
    """The statistic along the last axis: one value for a run, a value per row for a batch of resamples."""
    import numpy as np

    if statistic == "mean":
        return arr.mean(axis=-1)
    q = {"p50": 50.0, "p95": 95.0, "p99": 99.0}[statistic]
    return np.percentile(arr, q, axis=-1, method=PERCENTILE_METHOD)


def bootstrap_ratio(
    baseline_ms: Sequence[float],
    target_ms: Sequence[float],
    statistic: str = "p50",
    confidence: float = 0.95,
    resamples: int = 2000,
    seed: int = 0,
) -> RatioCI:
    """Percentile bootstrap of stat(target)/stat(baseline), resampling each side independently.

    A ratio > 1 means the target is slower. Deterministic for a given seed so reports are stable.
    """
    import numpy as np

    base = np.asarray(baseline_ms, dtype=np.float64)
    targ = np.asarray(target_ms, dtype=np.float64)
    if base.size == 0 or targ.size == 0:
        raise ValueError("both sides need at least one value")
    point = float(_stat(targ, statistic) / _stat(base, statistic))
    rng = np.random.default_rng(seed)
    # Chunked so memory stays bounded for long runs (n x resamples floats per chunk).
    ratios: list[FloatArray | np.float64] = []
    chunk = max(1, min(resamples, 2_000_000 // max(base.size, targ.size)))
    done = 0
    while done < resamples:
        m = min(chunk, resamples - done)
        b = base[rng.integers(0, base.size, size=(m, base.size))]
        t = targ[rng.integers(0, targ.size, size=(m, targ.size))]
        ratios.append(_stat(t, statistic) / _stat(b, statistic))
        done += m
    all_ratios = np.concatenate(ratios)
    alpha = (1.0 - confidence) / 2.0
    low, high = np.quantile(all_ratios, [alpha, 1.0 - alpha])
    return RatioCI(
        statistic=statistic,
        ratio=point,
        low=float(low),
        high=float(high),
        confidence=confidence,
        resamples=resamples,
        method=f"percentile bootstrap, {resamples} resamples per side, seed {seed}",
    )


@dataclass(frozen=True)
class RankTest:
    """Mann-Whitney U (normal approximation with tie correction): is one side stochastically slower?"""

    u: float
    z: float
    p_value: float
    probability_target_slower: float


def mann_whitney(baseline_ms: Sequence[float], target_ms: Sequence[float]) -> RankTest:
    """Two-sided Mann-Whitney U test in numpy; ``probability_target_slower`` = P(T > B) + P(T = B)/2."""
    import math

    import numpy as np

    b = np.asarray(baseline_ms, dtype=np.float64)
    t = np.asarray(target_ms, dtype=np.float64)
    n1, n2 = b.size, t.size
    if n1 == 0 or n2 == 0:
        raise ValueError("both sides need at least one value")
    both = np.concatenate([b, t])
    order = both.argsort(kind="mergesort")
    ranks = np.empty(both.size, dtype=np.float64)
    sorted_vals = both[order]
    # Average ranks for ties.
    i = 0
    tie_term = 0.0
    while i < both.size:
        j = i
        while j + 1 < both.size and sorted_vals[j + 1] == sorted_vals[i]:
            j += 1
        ranks[order[i : j + 1]] = (i + j) / 2.0 + 1.0
        size = j - i + 1
        tie_term += size**3 - size
        i = j + 1
    r_t = float(ranks[n1:].sum())
    u_t = r_t - n2 * (n2 + 1) / 2.0
    mean_u = n1 * n2 / 2.0
    n = n1 + n2
    var_u = n1 * n2 / 12.0 * ((n + 1) - tie_term / (n * (n - 1))) if n > 1 else 0.0
    if var_u <= 0:
        return RankTest(u_t, 0.0, 1.0, u_t / (n1 * n2))
    z = (u_t - mean_u - math.copysign(0.5, u_t - mean_u) * (u_t != mean_u)) / math.sqrt(var_u)
    p = math.erfc(abs(z) / math.sqrt(2.0))
    return RankTest(u=u_t, z=z, p_value=p, probability_target_slower=u_t / (n1 * n2))
