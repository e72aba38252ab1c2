"""One error figure per compared row, whatever the dump holds: tensor data, statistics or md5 digests.

Users mostly bring msprobe's default dumps (statistics only), so the diagnosis cannot rest on
tensor metrics alone. Each row gets a *relative error* on one scale:

- tensor data: ``EucDist / ||golden||`` (the relative L2 error; the cosine angle when the norm is
  unknown);
- statistics (Max/Min/Mean/Norm in dump.json): the largest of ``|dNorm| / Norm`` and
  ``|dMax|, |dMin|, |dMean|`` over the tensor's amplitude. It is a lower bound of the tensor error
  (a permutation of the elements leaves it at 0), but rounding noise keeps it near the unit
  roundoff while a wrong operator moves it by far more;
- md5: equal digests are an exact match (error 0); different digests fall back to statistics.

Non-finite values are recorded on their own (``target_nonfinite``): overflow localisation needs to
know where Inf/NaN first appear, not only that a row is bad.
"""

from __future__ import annotations

import math
import operator
from collections import Counter
from dataclasses import dataclass
from itertools import chain, repeat
from typing import TYPE_CHECKING, cast

from acc_agent.numerics import budgets

if TYPE_CHECKING:
    from acc_agent.io.dumps import Dump, DumpEntry
    from acc_agent.models.compare import DumpRow, TensorMetrics
    from acc_agent.numerics.arrays import BoolArray, FloatArray

STAT_KEYS = ("Max", "Min", "Mean", "Norm")
#: Measures that carry only a summary of each tensor (an md5 dump records the statistics beside the digest).
SUMMARIES = frozenset({"statistics", "md5"})
#: How compare rows mark a metric that could not be computed because a tensor file could not be read.
UNREADABLE_PREFIX = "unsupported: "
PRECISION_NAMES = {"fp16": "float16", "bf16": "bfloat16", "fp32": "float32"}
#: Elements per unit roundoff of extra error in an fp16 Norm (see :func:`norm_slack`).
FP16_NORM_ELEMENTS = 1 << 16


@dataclass(slots=True)
class Measured:
    """A row's error figures and what they were computed from."""

    err: float | None
    bench_err: float | None
    measure: str  # tensor | statistics | md5 | none
    target_nonfinite: bool
    golden_nonfinite: bool
    dtype: str | None
    same_stats_other_bytes: bool = False  # md5 differs, dtype and statistics equal: same values reordered?
    norm_err: float | None = None  # |dNorm| / Norm from dump.json: a systematic scale shows here even at cosine 1
    fill: float | None = None  # a mask fill value left out of ``err`` (see exclude_fills)
    fill_share: float = 0.0  # share of elements filled on both sides
    # md5 differs on the same dtype: other bytes, whatever the statistics say (a digest is taken of the bytes on the
    # host, while the statistics are reduced on the device, where a GPU and an NPU sum in other orders)
    other_bytes: bool = False


def entry(dump: Dump | None, name: str | None) -> DumpEntry | None:
    if dump is None or name is None:
        return None
    return dump.by_name.get(name)


def stats_nonfinite(stats: dict[str, float | None] | None) -> bool:
    """Whether the tensor holds Inf/NaN, as far as its statistics say: its Max or Min is not finite.

    Mean and Norm are reductions msprobe computes in the tensor's own dtype: an fp16 attention mask of
    2,048 fills of -10000 has a Norm of 3.1e5, recorded as Infinity over finite data."""
    if not stats:
        return False
    extremes = [v for v in (stats.get("Max"), stats.get("Min")) if v is not None]
    return any(not math.isfinite(v) for v in (extremes or [v for v in stats.values() if v is not None]))


def _overflowed_reductions(stats: dict[str, float | None]) -> set[str]:
    """Mean/Norm recorded as Inf/NaN while Max and Min are finite: the reduction overflowed, not the data."""
    lo, hi = stats.get("Min"), stats.get("Max")
    if lo is None or hi is None or not (math.isfinite(lo) and math.isfinite(hi)):
        return set()
    return {k for k in ("Mean", "Norm") if stats.get(k) is not None and not math.isfinite(stats[k])}  # type: ignore[arg-type]


def norm_slack(dtypes: tuple[str | None, ...], count: int | float | None) -> float:
    """Relative error of the recorded Norms beyond their own rounding, from the precision they were summed in.

    msprobe records ``torch.norm`` of the tensor in its own dtype. An fp16 sum of squares over many
    elements no longer resolves the terms it adds: the CPU kernel's single-thread fp16 Norm of random data
    is off by 4.8 roundoffs at 4M elements, 19 at 11.7M (an embedding table) and 78 at 30M, while fp32
    and bf16 Norms (summed in fp32) stay within one. So each fp16 side is allowed one roundoff per
    ``FP16_NORM_ELEMENTS`` elements: nothing below 65k elements, 2.8 % at 11.7M, what those kernels need."""
    if not count or count != count or count <= FP16_NORM_ELEMENTS:
        return 0.0
    return norm_slack_rate(dtypes) * float(count)


def norm_slack_rate(dtypes: tuple[str | None, ...]) -> float:
    """:func:`norm_slack` per element (above ``FP16_NORM_ELEMENTS``): one fp16 roundoff per that many, per fp16 side."""
    sides = sum(1 for d in dtypes if budgets.canonical_dtype(d) == "float16")
    return sides * budgets.unit_roundoff("float16") / FP16_NORM_ELEMENTS


def type_limit_fills(golden: dict[str, float | None], other: dict[str, float | None]) -> bool:
    """Whether the two sides' Min (or Max) are each a float type's limit, and differ: a mask filled with
    ``torch.finfo(dtype).min`` holds -3.40282e38 in a float32 run and -65504 in a float16 one. The fill then
    dominates every statistic (its Mean and Norm too), so they measure the two types' limits, not the data: no
    error is measured (the calls after it, a softmax, are compared as usual)."""
    return any(budgets.float_type_limits(golden.get(k), other.get(k)) for k in ("Min", "Max"))


def stat_error(golden: dict[str, float | None] | None, other: dict[str, float | None] | None,
               numel: int | None, slack: float = 0.0) -> float | None:
    """Relative difference of two tensors' statistics (see the module docstring); None if incomplete.

    ``slack``: the Norms' own summation error (:func:`norm_slack`), taken off their difference."""
    if not golden or not other or type_limit_fills(golden, other):
        return None
    overflowed = _overflowed_reductions(golden) | _overflowed_reductions(other)
    keys = [k for k in STAT_KEYS if golden.get(k) is not None and other.get(k) is not None and k not in overflowed]
    if "Max" not in keys or "Min" not in keys:
        return None
    g = {k: float(golden[k]) for k in keys}  # type: ignore[arg-type]
    o = {k: float(other[k]) for k in keys}  # type: ignore[arg-type]
    if not all(math.isfinite(v) for v in g.values()):
        return None  # golden itself non-finite: nothing to measure against
    if not all(math.isfinite(v) for v in o.values()):
        return math.inf
    rms = g["Norm"] / math.sqrt(numel) if "Norm" in g and numel and numel > 0 else 0.0
    scale = max(abs(g["Max"]), abs(g["Min"]), rms)
    diffs = [abs(o[k] - g[k]) for k in ("Max", "Min", "Mean") if k in g]
    norm_diff = abs(o["Norm"] - g["Norm"]) if "Norm" in g else 0.0
    if scale == 0.0:
        return 0.0 if max(diffs) == 0.0 and norm_diff == 0.0 else math.inf
    norm_err = 0.0
    if "Norm" in g:
        norm_err = norm_diff / g["Norm"] if g["Norm"] > 0 else (0.0 if o["Norm"] == 0 else math.inf)
    return max(norm_err - slack, max(diffs) / scale)


def tensor_error(metrics: TensorMetrics | None, golden_norm: float | None) -> float | None:
    """Relative L2 error from a metrics object: EucDist/||golden||, else the cosine angle."""
    if metrics is None:
        return None
    euc = metrics.euc_dist
    if euc is not None and golden_norm is not None and math.isfinite(golden_norm):
        if golden_norm > 0:
            return float(euc) / golden_norm
        return 0.0 if euc == 0 else math.inf
    cos = metrics.cosine
    if cos is None:
        return None
    return math.sqrt(max(0.0, 2.0 * (1.0 - float(cos))))


def numel(shape: list[int] | None) -> int | None:
    """Element count of a recorded shape (None when the dump has no shape)."""
    if shape is None:
        return None
    n = 1
    for s in shape:
        n *= int(s)
    return n


def _golden_norm(row: DumpRow, g_entry: DumpEntry | None, golden: Dump | None) -> float | None:
    """||golden||: from the metrics, else dump.json's Norm, else the tensor itself (plain .npy folders)."""
    if row.golden_norm is not None:
        return float(row.golden_norm)
    if g_entry is not None and g_entry.stats.get("Norm") is not None:
        return g_entry.stats["Norm"]
    if golden is None or row.status in ("skipped", "unmatched") or row.euc_dist is None:
        return None
    try:
        import numpy as np

        arr = golden.load(row.golden_name or row.name)
        if arr.dtype.kind not in "fiub":
            return None
        return float(np.linalg.norm(np.nan_to_num(arr.astype(np.float64, copy=False), posinf=0.0, neginf=0.0)))
    except Exception:  # noqa: BLE001 - unreadable golden tensor: fall back to the cosine angle
        return None


#: Share of a dump's float tensors in bf16/fp16 for an autocast target: its convs and GEMMs (and their gradients).
AUTOCAST_SHARE = 0.1
#: ... and at least this many of them (a GEMM's input, weight and output each).
AUTOCAST_MIN = 4


def row_dtype(row: DumpRow, t_entry: DumpEntry | None, precision: str | None, autocast: str | None = None
              ) -> str | None:
    """The dtype whose rounding the row is judged by: the user's precision, else the least precise side (and the
    ``autocast`` dtype, for a float row of a target that computes under autocast; integer rows stay exact)."""
    if precision:
        return PRECISION_NAMES.get(precision, precision)
    declared = t_entry.dtype if t_entry is not None else None
    stored = row.target_dtype
    if budgets.is_float(declared) or budgets.is_float(stored):
        return budgets.lowest_precision(declared, stored, autocast)
    return budgets.canonical_dtype(declared or stored)


#: A loss scale is a power of two at least this large (GradScaler starts at 2**16; static scales are 128 to 2**15):
#: an exact factor of 2 or 4 on a gradient is as likely a wrong backward kernel.
MIN_LOSS_SCALE = 8.0
#: The four statistics of the backward pass's first gradient agree with the scale to this relative error.
LOSS_SCALE_FIT = 2.0**-6


def is_backward(name: str) -> bool:
    """Whether a row belongs to the backward pass (a ``.backward`` call or a parameter gradient)."""
    return ".backward" in name or "parameters_grad" in name


def loss_scale(golden: Dump | None, target: Dump | None) -> float | None:
    """The factor the target's backward pass is scaled by, when it is a loss scale: the first recorded gradient
    (the loss's own, or the first backward call's incoming one) is a power of two of at least ``MIN_LOSS_SCALE``
    times the golden's in all four statistics. Mixed-precision training multiplies the loss by it before
    ``backward()`` (``torch.amp.GradScaler``, a static loss scale) so that fp16 gradients do not underflow; every
    gradient msprobe records carries it, the optimizer divides it out later."""
    if golden is None or target is None:
        return None
    # the first gradient both runs recorded (the scaling multiply itself is a target-only call)
    g_by = golden.by_name
    first = next((e for e in target.entries if is_backward(e.name) and e.role == "input" and e.stats
                  and e.name in g_by and g_by[e.name].stats), None)
    if first is None:
        return None
    g = g_by[first.name]
    # a loss the forward pass already computed that many times larger (summed where the golden averages) is a real
    # difference, not a scale applied to it afterwards
    call = first.name.split(".backward", 1)[0]
    g_out, t_out = g_by.get(call + ".forward.output.0"), target.by_name.get(call + ".forward.output.0")
    if g_out is not None and t_out is not None:
        gn, tn = g_out.stats.get("Norm"), t_out.stats.get("Norm")
        if gn is not None and tn is not None and gn > 0 and abs(tn / gn - 1.0) > LOSS_SCALE_FIT:
            return None
    ratios = []
    for key in STAT_KEYS:
        gv, tv = g.stats.get(key), first.stats.get(key)
        if gv is None or tv is None or not math.isfinite(gv) or not math.isfinite(tv):
            return None
        if gv == 0.0:
            if tv != 0.0:
                return None
            continue
        ratios.append(tv / gv)
    if not ratios or ratios[0] <= 0:
        return None
    scale = 2.0 ** round(math.log2(ratios[0]))
    if scale < MIN_LOSS_SCALE or any(abs(r / scale - 1.0) > LOSS_SCALE_FIT for r in ratios):
        return None
    return scale


def unscaled_error(row: DumpRow, scale: float, golden_norm: float | None, target_norm: float | None
                   ) -> float | None:
    """Relative L2 error of ``target / scale`` against the golden, from a tensor row's cosine and the two norms:
    ||t/s - g||^2 = (||t||/s)^2 - 2 cos ||t|| ||g|| / s + ||g||^2 (no tensor is loaded again)."""
    cos = row.__dict__.get("cosine_exact")
    cos = row.cosine if cos is None else cos
    if cos is None or golden_norm is None or target_norm is None or not golden_norm > 0:
        return None
    t = target_norm / scale
    sq = t * t - 2.0 * float(cos) * t * golden_norm + golden_norm * golden_norm
    return math.sqrt(max(sq, 0.0)) / golden_norm


def _float_counts(dump: Dump) -> Counter[str]:
    """How many of a dump's tensors hold each float dtype (canonical names)."""
    counts: Counter[str] = Counter()
    for dtype, n in Counter(e.dtype for e in dump.entries).items():
        if budgets.is_float(dtype):
            counts[budgets.canonical_dtype(dtype) or "float32"] += n
    return counts


def autocast_precision(golden: Dump | None, target: Dump | None) -> str | None:
    """The low-precision dtype when the target mixes float32 with bf16/fp16 tensors and the golden holds no
    bf16/fp16 tensor: an autocast (AMP) target. Its float32 tensors (BatchNorm, softmax, losses) carry the
    low-precision calls' error into everything after them, so they are judged at that precision too."""
    if target is None:
        return None
    floats = _float_counts(target)
    low = {d: n for d, n in floats.items() if d not in ("float32", "float64")}
    # autocast computes every GEMM and conv in the low precision: a share of the dump, not one odd tensor
    if not low or not floats["float32"] or sum(low.values()) < max(AUTOCAST_MIN, AUTOCAST_SHARE * sum(floats.values())):
        return None
    if golden is not None and set(_float_counts(golden)) - {"float32", "float64"}:
        return None
    return budgets.lowest_precision(*low)


@dataclass(frozen=True)
class MixedPrecision:
    """How the target's mixed-precision training shows in its dump: the dtype its float rows are judged at
    (``autocast``, see :func:`autocast_precision`) and the loss scale divided out of its backward rows."""

    autocast: str | None = None
    loss_scale: float = 1.0


NO_MIXED_PRECISION = MixedPrecision()


def mixed_precision(golden: Dump | None, target: Dump | None, precision: str | None) -> MixedPrecision:
    """The target's :class:`MixedPrecision` (no autocast inference where the user gave a precision)."""
    return MixedPrecision(None if precision else autocast_precision(golden, target),
                          loss_scale(golden, target) or 1.0)


def measure_row(row: DumpRow, golden: Dump | None, target: Dump | None, bench: Dump | None,
                precision: str | None, mixed: MixedPrecision = NO_MIXED_PRECISION) -> Measured:
    """One row's error (``mixed``: the target's autocast dtype and loss scale, see :class:`MixedPrecision`)."""
    g_entry = entry(golden, row.golden_name or row.name)
    t_entry = entry(target, row.name)
    b_entry = entry(bench, row.golden_name or row.name) or entry(bench, row.name)
    dtype = row_dtype(row, t_entry, precision, mixed.autocast)
    grad_scale = mixed.loss_scale
    g_stats = g_entry.stats if g_entry is not None else None
    t_stats = t_entry.stats if t_entry is not None else None
    scaled = grad_scale != 1.0 and is_backward(row.name)
    if scaled and t_stats:
        t_stats = {k: (v / grad_scale if isinstance(v, float | int) and not isinstance(v, bool) else v)
                   for k, v in t_stats.items()}
    count = numel((g_entry.shape if g_entry is not None else None) or row.golden_shape)
    data = _has_tensor_metrics(row)  # the data itself was compared: its Inf/NaN counts are the truth
    t_bad = bool(row.target_nan or row.target_inf) or (not data and stats_nonfinite(t_stats))
    g_bad = bool(row.golden_nan or row.golden_inf) or (not data and stats_nonfinite(g_stats))
    if row.status == "unmatched" or (g_entry is not None and t_entry is not None
                                     and other_representation(g_entry.dtype, t_entry.dtype)):
        return Measured(None, None, "none", t_bad, g_bad, dtype)
    g_md5 = getattr(g_entry, "md5", None)
    t_md5 = getattr(t_entry, "md5", None)
    slack = norm_slack((g_entry.dtype if g_entry is not None else None,
                        t_entry.dtype if t_entry is not None else None), count)
    if scaled:
        g_md5 = t_md5 = None  # the scaled bytes never match: the statistics decide
    m = _measure(row, golden, g_entry, t_entry, b_entry, bench, dtype, g_stats, t_stats, count, t_bad, g_bad,
                 g_md5, t_md5, slack)
    if scaled and m.measure == "tensor" and _has_tensor_metrics(row):
        unscaled = unscaled_error(row, grad_scale, _golden_norm(row, g_entry, golden),
                                  t_entry.stats.get("Norm") if t_entry is not None else None)
        if unscaled is not None:
            m.err = unscaled
    m.norm_err = _norm_err(g_stats, t_stats, slack)
    return m


def other_representation(golden_dtype: str | None, target_dtype: str | None) -> bool:
    """Whether one side holds floats and the other booleans or integers: the same information in another form
    (an additive float attention mask of 0 and -inf against a boolean one), whose numbers do not compare."""
    if golden_dtype is None or target_dtype is None or golden_dtype == target_dtype:
        return False
    return budgets.is_float(golden_dtype) != budgets.is_float(target_dtype)


def _norm_err(g: dict[str, float | None] | None, t: dict[str, float | None] | None, slack: float) -> float | None:
    a = g.get("Norm") if g else None
    b = t.get("Norm") if t else None
    if a is None or b is None or not math.isfinite(a) or not math.isfinite(b) or a <= 0:
        return None
    return max(0.0, abs(b - a) / a - slack)


def _measure(row: DumpRow, golden: Dump | None, g_entry: DumpEntry | None, t_entry: DumpEntry | None,
             b_entry: DumpEntry | None, bench: Dump | None, dtype: str | None,
             g_stats: dict[str, float | None] | None, t_stats: dict[str, float | None] | None,
             numel: int | None, t_bad: bool, g_bad: bool, g_md5: str | None, t_md5: str | None,
             slack: float) -> Measured:
    has_tensor_metrics = row.euc_dist is not None or row.cosine is not None
    if has_tensor_metrics:
        err = tensor_error(row, _golden_norm(row, g_entry, golden))
        bench_err = tensor_error(row.bench, _golden_norm(row, g_entry, golden)) if row.bench is not None else None
        return Measured(err, bench_err, "tensor", t_bad, g_bad, dtype)
    unreadable = row.status == "error" and any(str(v).startswith(UNREADABLE_PREFIX) for v in row.na_reasons.values())
    if unreadable and not shapes_differ(row) and not (g_stats and t_stats):
        # a file that could not be read says nothing about the numbers: not judged (the row keeps its error)
        return Measured(None, None, "none", t_bad, g_bad, dtype)
    if shapes_differ(row) or (row.status == "error" and row.na_reasons
                              and not (_has_extremes(g_stats) and _has_extremes(t_stats))):
        # both tensors exist but are not comparable (shape unmatched, NaN/Inf at other positions); msprobe may record
        # a keyword tensor holding -inf with no Min, Mean or Norm (an additive attention mask)
        return Measured(math.inf, None, "tensor", t_bad, g_bad, dtype)
    if g_md5 is not None and t_md5 is not None and g_md5 == t_md5:
        b_md5 = getattr(b_entry, "md5", None)
        bench_err = 0.0 if b_md5 == g_md5 and b_md5 is not None else stat_error(
            g_stats, b_entry.stats if b_entry is not None else None, numel, slack)
        return Measured(0.0, bench_err, "md5", t_bad, g_bad, dtype)
    err = stat_error(g_stats, t_stats, numel, slack)
    same_dtype = g_entry is not None and t_entry is not None and g_entry.dtype == t_entry.dtype
    if err is None and g_md5 is not None and t_md5 is not None and same_dtype and not budgets.is_float(dtype):
        return Measured(math.inf, None, "md5", t_bad, g_bad, dtype)  # integer/bool bytes differ: not equal
    if err is None:
        if row.status == "error" and g_entry is not None and t_entry is not None:
            if nonfinite_elsewhere(row):  # the tensors were read: Inf/NaN at other positions
                return Measured(math.inf, None, "tensor", t_bad, g_bad, dtype)
            if not _same_nonfinite(g_stats, t_stats) and not (g_stats and t_stats
                                                              and type_limit_fills(g_stats, t_stats)):
                return Measured(math.inf, None, "statistics", t_bad, g_bad, dtype)
        return Measured(None, None, "none", t_bad, g_bad, dtype)
    reordered = False
    if err == 0.0 and g_md5 is not None and t_md5 is not None and same_dtype and _constant(g_stats) \
            and _constant(t_stats):
        # every element holds the one value both sides print: the bytes are equal, whatever the digests say (an
        # in-place call's input digested after its write, as msprobe does for BatchNorm's step counter)
        return Measured(0.0, None, "statistics", t_bad, g_bad, dtype)
    if err == 0.0 and g_md5 is not None and t_md5 is not None and same_dtype and not budgets.is_float(dtype):
        return Measured(math.inf, None, "md5", t_bad, g_bad, dtype, True)
    if err == 0.0 and g_md5 is not None and t_md5 is not None:
        # equal statistics, different bytes: a difference below what the statistics resolve, or (same
        # dtype) the same values in another order
        err = 0.5 * budgets.unit_roundoff(dtype)
        reordered = g_entry is not None and t_entry is not None and g_entry.dtype == t_entry.dtype
    bench_err = stat_error(g_stats, b_entry.stats if b_entry is not None else None, numel, slack) if bench else None
    return Measured(err, bench_err, "md5" if g_md5 is not None and t_md5 is not None else "statistics",
                    t_bad, g_bad, dtype, reordered,
                    other_bytes=same_dtype and g_md5 is not None and t_md5 is not None and g_md5 != t_md5)


def _same_nonfinite(g: dict[str, float | None] | None, t: dict[str, float | None] | None) -> bool:
    """Whether both sides hold the same infinities and NaNs in their statistics, and some: a -inf mask fill on both
    sides (Min -inf, Mean -inf, Norm inf) leaves nothing to measure, as in the golden alone, but no disagreement.

    msprobe's dtype rule makes every row of a bfloat16 target against a float32 golden an error; that alone must not
    make such a row incomparable."""
    if not g or not t:
        return False
    some = False
    for k in STAT_KEYS:
        a, b = g.get(k), t.get(k)
        a_bad = isinstance(a, float) and not math.isfinite(a)
        b_bad = isinstance(b, float) and not math.isfinite(b)
        if a_bad != b_bad or (a_bad and not (a == b or (a != a and b != b))):
            return False
        some = some or a_bad
    return some


def nonfinite_elsewhere(row: DumpRow) -> bool:
    """Whether the row's tensors were read and hold NaN/Inf at other positions: they differ, whatever their
    statistics say (an additive attention mask with -inf one position off keeps its Min, Mean and Norm)."""
    from acc_agent.numerics.metrics import NONFINITE_POSITIONS_DIFFER

    return any(str(v).startswith(NONFINITE_POSITIONS_DIFFER) for v in row.na_reasons.values())


def _has_extremes(stats: dict[str, float | None] | None) -> bool:
    return bool(stats) and stats.get("Max") is not None and stats.get("Min") is not None  # type: ignore[union-attr]


def _constant(stats: dict[str, float | None] | None) -> bool:
    """Whether the statistics show one value in every element (Max equal to Min, both finite)."""
    if not stats:
        return False
    mx, mn = stats.get("Max"), stats.get("Min")
    return mx is not None and mx == mn and math.isfinite(mx)


def shapes_differ(row: DumpRow) -> bool:
    """Both shapes known and different after squeezing (msprobe's "shape unmatched")."""
    if row.golden_shape is None or row.target_shape is None:
        return False
    return [s for s in row.golden_shape if s != 1] != [s for s in row.target_shape if s != 1]



def _has_tensor_metrics(row: DumpRow) -> bool:
    return row.euc_dist is not None or row.cosine is not None


#: What identifies an entry's data across calls (see ``graph.fingerprint``).
Fingerprint = tuple[object, ...]


def measure_rows(rows: list[DumpRow], golden: Dump | None, target: Dump | None, bench: Dump | None,
                 precision: str | None) -> list[Measured]:
    """:func:`measure_row` for every row, with the statistics-only rows computed in bulk."""
    return measure_and_fingerprint(rows, golden, target, bench, precision)[0]


def measure_and_fingerprint(rows: list[DumpRow], golden: Dump | None, target: Dump | None, bench: Dump | None,
                            precision: str | None, mixed: MixedPrecision = NO_MIXED_PRECISION
                            ) -> tuple[list[Measured], list[Fingerprint | None]]:
    """Every row's :class:`Measured`, and the golden entry's fingerprint where the bulk pass had it at hand.

    msprobe's default dumps give ~300k statistics rows; one Python pass gathers their numbers and
    numpy computes the errors, so the diagnosis stays a small part of the comparison. The dataflow
    links need each golden entry's (dtype, element count, Max/Min/Mean/Norm) too: made here from the
    same columns, they cost a tenth of what building them entry by entry does. A row left None
    (md5, a missing or NaN statistic, a row measured on its own) is fingerprinted by the caller.
    """
    import numpy as np

    out: list[Measured | None] = [None] * len(rows)
    prints: list[Fingerprint | None] = [None] * len(rows)
    print_numels: list[int | None] = []
    g_dtypes: list[str | None] = []
    idx: list[int] = []
    g_stats: list[dict[str, float | None]] = []
    t_stats: list[dict[str, float | None]] = []
    b_rows: list[tuple[float | None, ...]] = []
    numels: list[float] = []
    numel_of: dict[int, tuple[list[int], float, int | None]] = {}
    nan = math.nan
    g_by = golden.by_name if golden is not None else {}
    t_by = target.by_name if target is not None else {}
    b_by = bench.by_name if bench is not None else None
    dtypes: dict[tuple[str | None, str | None], str | None] = {}
    row_dtypes: list[str | None] = []
    md5: list[tuple[str | None, str | None, bool] | None] = []
    slack_per: dict[tuple[str | None, str | None], float] = {}
    slack_rates: list[float] = []
    errored: set[int] = set()  # positions in ``idx`` of rows whose status is "error"
    for i, row in enumerate(rows):
        d = row.__dict__  # statistics rows are sparse (DumpRow.__getattr__): read with the defaults
        name = d["name"]
        g_name = d.get("golden_name") or name
        g_e = g_by.get(g_name)
        t_e = t_by.get(name)
        status = d.get("status", "pass")
        g_shape, t_shape = d.get("golden_shape"), d.get("target_shape")
        # an "error" row is measured here too: between two float types msprobe's rules make every row one (the dtype
        # differs), and row by row that took 10 s of a bfloat16 target's 300k rows; its own cases are below
        if (status == "unmatched" or g_e is None or t_e is None
                or (g_e.dtype != t_e.dtype and other_representation(g_e.dtype, t_e.dtype))
                or d.get("euc_dist") is not None or d.get("cosine") is not None
                or (g_shape != t_shape and shapes_differ(row))):
            out[i] = measure_row(row, golden, target, bench, precision, mixed)
            continue
        idx.append(i)
        if status == "error":
            errored.add(len(idx) - 1)
        g_stats.append(g_e.stats)
        t_stats.append(t_e.stats)
        if b_by is not None:
            b_e = b_by.get(g_name) or b_by.get(name)
            bs = b_e.stats if b_e is not None else {}
            b_rows.append(tuple(bs.get(k) for k in STAT_KEYS))
        shape = g_e.shape or g_shape
        if shape is None:
            numels.append(nan)
            print_numels.append(None)
        else:
            n = numel_of.get(id(shape))
            if n is None or n[0] is not shape:
                count = numel(shape)  # the list is kept: its id stays unique
                n = numel_of[id(shape)] = (shape, float(count or 0), count)
            numels.append(n[1])
            print_numels.append(n[2] if shape is g_e.shape else numel(g_e.shape))
        g_dtypes.append(g_e.dtype)
        t_dtype = t_e.dtype
        per = slack_per.get((g_e.dtype, t_dtype))
        if per is None:
            per = slack_per[(g_e.dtype, t_dtype)] = norm_slack_rate((g_e.dtype, t_dtype))
        slack_rates.append(per)
        key = (t_dtype, d.get("target_dtype"))
        dt = dtypes.get(key, "")
        if dt == "":
            dt = dtypes[key] = row_dtype(row, t_e, precision, mixed.autocast)
        row_dtypes.append(dt)
        g_md5, t_md5 = g_e.md5, t_e.md5
        md5.append(None if g_md5 is None and t_md5 is None else (g_md5, t_md5, g_e.dtype == t_dtype))
    if idx:
        g_arr, g_plain = _stat_columns(g_stats)
        t_arr, _ = _stat_columns(t_stats)
        if mixed.loss_scale != 1.0:
            backward = np.array([is_backward(rows[i].name) for i in idx], dtype=bool)
            t_arr[:, backward] /= mixed.loss_scale
            for j in np.flatnonzero(backward).tolist():
                md5[j] = None  # the scaled bytes never match: the statistics decide
        b_arr = _stat_array(b_rows) if b_by is not None else None
        n_arr = np.array(numels, dtype=np.float64)
        with np.errstate(all="ignore"):
            # norm_slack on columns: nothing at or below FP16_NORM_ELEMENTS elements
            slack = np.where(n_arr > FP16_NORM_ELEMENTS, np.array(slack_rates) * np.nan_to_num(n_arr), 0.0)
            err = _bulk_stat_error(g_arr, t_arr, n_arr, slack)
            bench_err = _bulk_stat_error(g_arr, b_arr, n_arr, slack) if b_arr is not None else None
            g_bad = np.any(np.isinf(g_arr[:2]), axis=0).tolist()  # Max/Min: Mean/Norm may overflow over finite data
            t_bad = np.any(np.isinf(t_arr[:2]), axis=0).tolist()
            norm_ok = np.isfinite(g_arr[3]) & np.isfinite(t_arr[3]) & (g_arr[3] > 0)
            norm_err = np.where(norm_ok, np.maximum(
                np.abs(t_arr[3] - g_arr[3]) / np.where(norm_ok, g_arr[3], 1.0) - slack, 0.0), np.nan)
        if g_plain and md5.count(None) == len(md5):  # md5 rows are fingerprinted by their digest, elsewhere
            # a None read as NaN: no fingerprint (see graph.fingerprint)
            complete_list = cast("list[bool]", (~np.isnan(g_arr).any(axis=0)).tolist())
            # the dump's own float objects (not copies): 300k fingerprints stay ~30 MB smaller
            fps = zip(repeat("stats"), g_dtypes, print_numels,
                      *(map(operator.itemgetter(k), g_stats) for k in STAT_KEYS), strict=False)  # repeat: endless
            for i, fp, ok in zip(idx, fps, complete_list, strict=True):
                if ok:
                    prints[i] = fp
        errs = err.tolist()
        norm_errs = norm_err.tolist()
        bench_errs = bench_err.tolist() if bench_err is not None else None
        # a NaN Max or Min reads like a missing one in the columns (None becomes NaN there): a tensor holding NaN
        # (msprobe's torch.max of it) is measured row by row, where NaN and None are told apart
        constant = ((g_arr[0] == g_arr[1]) & (t_arr[0] == t_arr[1]) & np.isfinite(g_arr[0])).tolist()
        odd = set(np.nonzero(np.isnan(g_arr[0]) | np.isnan(g_arr[1]) | np.isnan(t_arr[0]) | np.isnan(t_arr[1]))[0]
                  .tolist())
        for j, i in enumerate(idx):
            if j in odd or (j in errored and errs[j] != errs[j]):
                # an error row without a complete measure: measure_row tells an unreadable file from an incomparable
                # pair (see _measure)
                out[i] = measure_row(rows[i], golden, target, bench, precision, mixed)
                prints[i] = None
                continue
            e = errs[j]
            dtype = row_dtypes[j]
            kind = "statistics"
            reordered = other_bytes = False
            value: float | None = None if e != e else e
            digests = md5[j]
            if digests is not None and digests[0] is not None and digests[1] is not None:
                g_md5, t_md5, same_dtype = digests
                kind = "md5"
                if g_md5 == t_md5 or (value == 0.0 and same_dtype and constant[j]):
                    value = 0.0  # equal digests, or one value in every element on both sides (see _measure)
                    kind = "md5" if g_md5 == t_md5 else "statistics"
                else:
                    other_bytes = same_dtype
                    if same_dtype and not budgets.is_float(dtype) and (value is None or value == 0.0):
                        value, reordered = math.inf, True
                    elif value == 0.0:
                        value = 0.5 * budgets.unit_roundoff(dtype)
                        reordered = same_dtype
            if value is None:
                kind = "none"
            b = None
            if bench_errs is not None:
                b = bench_errs[j]
                b = None if b != b else b
            ne = norm_errs[j]
            out[i] = Measured(value, b, kind, t_bad[j], g_bad[j], dtype, reordered, None if ne != ne else ne,
                              other_bytes=other_bytes)
    return [m for m in out if m is not None], prints


_STAT_GETTER = operator.itemgetter(*STAT_KEYS)


def _stat_columns(stats: list[dict[str, float | None]]) -> tuple[FloatArray, bool]:
    """(4, n) float64 array of the entries' Max/Min/Mean/Norm (a missing key or None reads as NaN), and
    whether every entry had all four keys.

    The usual dump has all four as floats: one flat list built in C loops, which numpy reads about
    twice as fast as a list of tuples (300k rows a side)."""
    import numpy as np

    try:
        flat = list(chain.from_iterable(map(_STAT_GETTER, stats)))
        return np.array(flat, dtype=np.float64).reshape(-1, 4).T, True
    except (KeyError, TypeError, ValueError):
        return _stat_array([tuple(s.get(k) for k in STAT_KEYS) for s in stats]), False


def _stat_array(rows: list[tuple[float | None, ...]]) -> FloatArray:
    """(4, n) float64 array of Max/Min/Mean/Norm tuples; None (an empty tensor's statistics) reads as NaN."""
    import numpy as np

    try:
        return np.array(rows, dtype=np.float64).reshape(-1, 4).T
    except (TypeError, ValueError):  # None or a non-numeric value somewhere: convert one by one
        return np.array([[_as_float(v) for v in r] for r in rows], dtype=np.float64).reshape(-1, 4).T


def _as_float(v: float | None) -> float:
    try:
        return math.nan if v is None else float(v)
    except (TypeError, ValueError):
        return math.nan


def _drop_overflowed_reductions(a: FloatArray) -> FloatArray:
    """Columns of Max/Min/Mean/Norm with a non-finite Mean or Norm over a finite Max and Min read as NaN
    (missing): the reduction overflowed in the tensor's dtype (see :func:`stats_nonfinite`)."""
    import numpy as np

    finite_extremes = np.isfinite(a[0]) & np.isfinite(a[1])
    out = a.copy()
    out[2:] = np.where(finite_extremes & ~np.isfinite(a[2:]) & ~np.isnan(a[2:]), np.nan, a[2:])
    return out


def _bulk_stat_error(g: FloatArray, o: FloatArray, numel: FloatArray, slack: FloatArray | float = 0.0) -> FloatArray:
    """:func:`stat_error` on columns (rows of Max, Min, Mean, Norm); NaN where it is undefined."""
    import numpy as np

    g, o = _drop_overflowed_reductions(g), _drop_overflowed_reductions(o)
    gmax, gmin, gmean, gnorm = g
    omax, omin, omean, onorm = o
    defined = ~np.isnan(gmax) & ~np.isnan(gmin) & ~np.isnan(omax) & ~np.isnan(omin)
    g_finite = np.isfinite(np.nan_to_num(g, nan=0.0)).all(axis=0)
    o_finite = np.isfinite(np.nan_to_num(o, nan=0.0)).all(axis=0)
    rms = np.where(np.isnan(gnorm) | ~(numel > 0), 0.0, gnorm / np.sqrt(np.where(numel > 0, numel, 1.0)))
    scale = np.maximum(np.maximum(np.abs(gmax), np.abs(gmin)), np.nan_to_num(rms))
    mean_d = np.where(np.isnan(gmean) | np.isnan(omean), 0.0, np.abs(omean - gmean))
    diffs = np.maximum(np.maximum(np.abs(omax - gmax), np.abs(omin - gmin)), mean_d)
    has_norm = ~np.isnan(gnorm) & ~np.isnan(onorm)
    norm_diff = np.where(has_norm, np.abs(onorm - gnorm), 0.0)
    norm_err = np.where(has_norm & (gnorm > 0), norm_diff / np.where(gnorm > 0, gnorm, 1.0),
                        np.where(norm_diff == 0, 0.0, np.inf))
    rel = np.where(scale > 0, diffs / np.where(scale > 0, scale, 1.0),
                   np.where((diffs == 0) & (norm_diff == 0), 0.0, np.inf))
    err = np.maximum(np.where(scale > 0, norm_err - slack, 0.0), rel)
    err = np.where(o_finite, err, np.inf)
    return np.where(defined & g_finite & ~_type_limit_fills(g, o), err, np.nan)


def _type_limit_fills(g: FloatArray, o: FloatArray) -> BoolArray:
    """:func:`type_limit_fills` on columns (rows of Max, Min, Mean, Norm)."""
    import numpy as np

    limits = np.array(sorted(budgets.FLOAT_TYPE_LIMITS))
    out = np.zeros(g.shape[1], dtype=bool)
    for k in (0, 1):
        a, b = g[k], o[k]
        out |= np.isin(np.abs(a), limits) & np.isin(np.abs(b), limits) & (a != b) & ((a < 0) == (b < 0))
    return out


#: A value at least this large in magnitude that fills at least ``FILL_SHARE`` of a tensor is a mask fill.
FILL_MAGNITUDE = 1e3
FILL_SHARE = 0.01
_FILL_MAX_ELEMENTS = 1 << 24


def exclude_fills(rows: list[DumpRow], measured: list[Measured], golden: Dump | None, target: Dump | None) -> None:
    """Re-measure tensor rows whose golden holds a large constant fill (attention masks: -10000, dtype min).

    Positions filled on both sides dominate the norm: a score tensor whose real entries are all wrong
    still has cosine ~1 when a third of it is -10000 on both sides, so the fault looks like it starts
    at the softmax after it. Positions where both sides hold their fill are left out of the error
    used for judging (a fill on one side only stays in: that is a mask difference)."""
    if golden is None or target is None:
        return
    import numpy as np

    checks = 0
    for row, m in zip(rows, measured, strict=True):
        if m.measure != "tensor" or m.err is None or not math.isfinite(m.err):
            continue
        g_e = golden.by_name.get(row.golden_name or row.name)
        if g_e is None or not _may_hold_fill(g_e.stats):
            continue
        checks += 1
        if checks > _MAX_FILL_CHECKS:
            break
        try:
            g = np.asarray(golden.load(row.golden_name or row.name))
            t = np.asarray(target.load(row.name))
        except Exception:  # noqa: BLE001 - unreadable: the row carries the error already
            continue
        if g.shape != t.shape or g.size > _FILL_MAX_ELEMENTS or g.size == 0 or g.dtype.kind != "f":
            continue
        g64, t64 = g.astype(np.float64).ravel(), t.astype(np.float64).ravel()
        fill = _fill_value(g64)
        if fill is None:
            continue
        t_fill = _fill_value(t64)
        both = (g64 == fill) & (t64 == (t_fill if t_fill is not None else fill))
        keep = ~both & np.isfinite(g64) & np.isfinite(t64)
        if not both.any() or not keep.any():
            continue
        denom = float(np.linalg.norm(g64[keep]))
        num = float(np.linalg.norm(t64[keep] - g64[keep]))  # the fills left out first: -inf - -inf is NaN
        m.err = num / denom if denom > 0 else (0.0 if num == 0 else math.inf)
        m.fill = fill
        m.fill_share = float(both.mean())


#: Largest finite values of fp16, bf16 and fp32: masks are often filled with the dtype's minimum.
_DTYPE_LIMITS = (65504.0, 3.3895313892515355e38, 3.4028234663852886e38)
#: Tensors loaded to look for fills, at most: large activations are common in big models, fills are few.
_MAX_FILL_CHECKS = 128


def _fill_like(v: float) -> bool:
    """A mask fill is a round number (-10000, -1e9), a dtype's limit or an infinity, not a measured value."""
    a = abs(v)
    if math.isinf(a):
        return True
    if a < FILL_MAGNITUDE or math.isnan(a):
        return False
    return float(f"{a:.2g}") == a or any(abs(a - lim) <= 1e-6 * lim for lim in _DTYPE_LIMITS)


def _may_hold_fill(stats: dict[str, float | None]) -> bool:
    lo, hi = stats.get("Min"), stats.get("Max")
    return any(isinstance(v, float | int) and not isinstance(v, bool) and _fill_like(float(v)) for v in (lo, hi))


def _fill_value(x: FloatArray) -> float | None:
    """The large constant filling at least FILL_SHARE (and not all) of ``x``, or None."""
    import numpy as np

    for v in (float(np.min(x)), float(np.max(x))):
        if not math.isfinite(v) and not math.isinf(v):
            continue
        if abs(v) < FILL_MAGNITUDE:
            continue
        share = float(np.mean(x == v))
        if FILL_SHARE <= share < 1.0:
            return v
    return None
