"""Tensor-pair metrics: msprobe's six with its exact definitions, plus the ones it lacks.

Why msprobe's definitions to the letter: Ascend users judge a migration by its CSV, so our numbers
must be the same numbers (same squeeze, same NaN/Inf zeroing, same float32 relative error, same
cosine rounding). What we add — mean errors, RMSE, share within tolerance, ULP error, top-1
agreement, NaN/Inf counts — answers the question msprobe leaves open: is a difference rounding
noise of a low-precision run, or a bug?

The pair is streamed in chunks: sums are float64 accumulators, so memory stays at a few chunk
buffers whatever the tensor size, and a memory-mapped ``.npy`` is read from disk once.
"""

from __future__ import annotations

import contextlib
import math
from dataclasses import dataclass
from typing import Literal, Protocol, TypeAlias, TypedDict, TypeGuard

import numpy as np

from acc_agent.models.compare import TensorMetrics
from acc_agent.numerics import tolerance as tol
from acc_agent.numerics.arrays import (
    Array,
    BoolArray,
    DType,
    Float32Array,
    FloatArray,
    Int32Array,
    Int64Array,
)
from acc_agent.numerics.blas_threads import numpy_blas_controlled, one_blas_thread

#: Elements per pass: ~40 numpy calls of 1-3 µs each per chunk outweigh cache misses below this
#: (on the 2-core VM 64 K ran ~8 % and 32 K ~12 % slower, 256 K ~20 % slower: the buffers leave L3).
CHUNK = 1 << 17
THOUSANDTH = 0.001
FIVE_THOUSANDTHS = 0.005
#: msprobe rounds a cosine above this to 6 decimals (CompareConst.COSINE_THRESHOLD).
COSINE_ROUND_ABOVE = 0.9999
_F64_EPS = float(np.finfo(np.float64).eps)

MetricName = Literal["cosine", "euc_dist", "max_abs_err", "max_rel_err", "one_thousandth_ratio",
                     "five_thousandths_ratio", "mean_abs_err", "mean_rel_err", "rmse", "within_tolerance_ratio",
                     "max_ulp_err", "ulp_gt1_ratio"]
SIX: tuple[MetricName, ...] = ("cosine", "euc_dist", "max_abs_err", "max_rel_err", "one_thousandth_ratio",
                               "five_thousandths_ratio")
EXTRA: tuple[MetricName, ...] = ("mean_abs_err", "mean_rel_err", "rmse", "within_tolerance_ratio", "max_ulp_err",
                                 "ulp_gt1_ratio")


class _Values(TypedDict, total=False):
    """The float fields of ``TensorMetrics`` as they are filled in: a key left out keeps the model's default."""

    cosine: float | None
    cosine_exact: float | None
    euc_dist: float | None
    golden_norm: float | None
    max_abs_err: float | None
    max_rel_err: float | None
    one_thousandth_ratio: float | None
    five_thousandths_ratio: float | None
    mean_abs_err: float | None
    mean_rel_err: float | None
    rmse: float | None
    within_tolerance_ratio: float | None
    max_ulp_err: float | None
    ulp_gt1_ratio: float | None
    top1_agreement: float | None


class _Counts(TypedDict):
    golden_nan: int
    golden_inf: int
    target_nan: int
    target_inf: int


#: The dtype relative errors are computed in: result_type(target, golden, float32) of float kinds.
RelDType: TypeAlias = "np.dtype[np.float32 | np.float64 | np.longdouble]"

#: (mantissa bits, smallest normal exponent) of the formats whose ULP error we report.
_ULP_FORMATS = {"fp16": (10, -14), "bf16": (7, -126)}


#: How a row says its tensors hold NaN/Inf at other positions (msprobe leaves its six metrics N/A then).
NONFINITE_POSITIONS_DIFFER = "N/A: NaN/Inf positions differ"

def msprobe_round(value: float) -> float:
    """msprobe's ``format_value``: the value as printed with 12 decimals."""
    return float(f"{value:.12f}")


def _is_ml_dtype(dt: DType) -> bool:
    """bf16/fp8 from ml-dtypes: numpy sees them as opaque 'V' kinds; msprobe reads them as fp32."""
    return dt.kind == "V" and not dt.names


def _effective_dtype(dt: DType) -> DType:
    return np.dtype(np.float32) if _is_ml_dtype(dt) else dt


def _rel_dtype(t: DType, g: DType) -> RelDType:
    """msprobe's get_relative_err dtype: non-floats go to float64, then result_type(.., float32)."""
    t = t if t.kind == "f" else np.dtype(np.float64)
    g = g if g.kind == "f" else np.dtype(np.float64)
    return np.result_type(t, g, np.float32)


@dataclass
class _Acc:
    """float64 accumulators over chunks."""

    dot: float = 0.0
    ss_t: float = 0.0
    ss_g: float = 0.0
    ss_d: float = 0.0
    max_abs: float = 0.0
    sum_abs: float = 0.0
    max_rel: float = 0.0
    rel_nan: bool = False
    n_1e3: int = 0
    n_5e3: int = 0
    sum_rel_mean: float = 0.0
    n_within: int = 0
    max_ulp: float = 0.0
    n_ulp_gt1: int = 0
    t_nan: int = 0
    t_inf: int = 0
    g_nan: int = 0
    g_inf: int = 0
    positions_match: bool = True


#: Longest slice handed to BLAS ``ddot`` at once where this process cannot set numpy's BLAS to one
#: thread. Why BLAS: about twice as fast as ``einsum``. Why short then: OpenBLAS runs ``ddot``
#: single-threaded only up to 10,000 elements, and its threads on a busy 2-core machine made one
#: long dot 40x slower. Where the thread count is ours (numpy's OpenBLAS, see ``blas_threads``)
#: ``compute_metrics`` holds it at one and hands BLAS whole chunks: 8 calls per 64 K chunk were
#: ~0.5 ns per element of call overhead. Either way always the same routine (never chosen by
#: timing), so the same data gives the same bits in every process of a run.
DOT_SLICE = 8192

#: The reductions as ufunc methods: ``arr.max()`` goes through two Python layers more (~1.5 µs a call).
_MAX = np.maximum.reduce
_MIN = np.minimum.reduce
_SUM = np.add.reduce
_F32_EPS = np.float32(np.finfo(np.float32).eps)
#: fp16's smallest normal and its spacing there, as float32: ULP = max(2**exponent(g), 2**-14) * 2**-10.
_F16_MIN_NORMAL = np.float32(2.0 ** -14)
_F16_ULP_SCALE = np.float32(2.0 ** -10)
_F32_EXPONENT = np.int32(0x7F800000)


#: Whether ``_dot`` may hand BLAS a whole chunk: set by ``compute_metrics`` on its first call.
_WHOLE_DOTS: bool | None = None


def _dot(a: FloatArray, b: FloatArray) -> float:
    """float64 dot product: one BLAS call, or slices BLAS keeps on one thread whatever its setting (see DOT_SLICE)."""
    n = a.size
    if _WHOLE_DOTS or n <= DOT_SLICE:
        return float(np.dot(a, b))
    total = 0.0
    for i in range(0, n, DOT_SLICE):
        total += float(np.dot(a[i:i + DOT_SLICE], b[i:i + DOT_SLICE]))
    return total


class _Work:
    """Chunk-sized buffers reused for every chunk and every tensor of a process.

    Why: numpy allocates each temporary above 128 KB with mmap, and every fresh page is a page
    fault; with ~15 temporaries per chunk that was 300 k faults (0.5 s of system time) per 226 MB
    of dumps. Writing into these buffers with ``out=`` makes the kernel allocation-free.
    """

    def __init__(self, size: int) -> None:
        self.size = size
        self.g64 = np.empty(size)
        self.t64 = np.empty(size)
        self.d64 = np.empty(size)
        self.g32 = np.empty(size, np.float32)
        self.t32 = np.empty(size, np.float32)
        self.ad = np.empty(size, np.float32)
        self.ag = np.empty(size, np.float32)
        self.buf = np.empty(size, np.float32)
        self.i32 = np.empty(size, np.int32)
        self.e64 = np.empty(size, np.int64)
        self.mask = np.empty(size, bool)
        #: The clamp of ``_ulp_fp16_f32`` as a whole array: numpy's float32 ``maximum`` against a
        #: scalar runs unvectorized here (0.82 ns an element), against an array 0.25.
        self.f16_min_normal = np.full(size, _F16_MIN_NORMAL, np.float32)


_WORK: _Work | None = None


def _work(n: int) -> _Work:
    global _WORK
    if _WORK is None or _WORK.size < n:
        _WORK = _Work(max(n, CHUNK))
    return _WORK


def _ulp(g64: FloatArray, fmt: str, e: Int64Array) -> FloatArray:
    """Spacing of the target format at each golden value (subnormal spacing below the normals).

    Built from the float64 exponent bits: spacing = 2**(max(exponent, emin) - mantissa bits), so no
    transcendental function runs per element. ``e`` is an int64 buffer the result lives in.
    """
    mant, emin = _ULP_FORMATS[fmt]
    np.bitwise_and(g64.view(np.int64), np.int64(0x7FF << 52), out=e)
    np.maximum(e, np.int64((1023 + emin) << 52), out=e)
    e -= np.int64(mant << 52)
    return e.view(np.float64)


def _ulp_fp16_f32(g32: Float32Array, e: Int32Array, floor: Float32Array) -> Float32Array:
    """fp16 spacing from float32 exponent bits (half the memory traffic of the float64 version).

    The masked exponent read as float32 is 2**exponent (0 below the normals), so the clamp to the
    smallest normal (``floor``, an array of 2**-14) and the shift by the mantissa width are a float32
    ``maximum`` and an exact multiply by 2**-10. ``g32`` holds no Inf/NaN here.
    """
    p = np.bitwise_and(g32.view(np.int32), _F32_EXPONENT, out=e).view(np.float32)
    np.maximum(p, floor, out=p)
    np.multiply(p, _F16_ULP_SCALE, out=p)
    return p


def _zero_bad(acc: _Acc, g64: FloatArray, t64: FloatArray) -> BoolArray:
    """Count NaN/Inf, note whether positions match, zero them on both sides (msprobe's rule)."""
    gn, gi, tn, ti = np.isnan(g64), np.isinf(g64), np.isnan(t64), np.isinf(t64)
    acc.g_nan += int(np.count_nonzero(gn))
    acc.g_inf += int(np.count_nonzero(gi))
    acc.t_nan += int(np.count_nonzero(tn))
    acc.t_inf += int(np.count_nonzero(ti))
    if not (np.array_equal(gn, tn) and np.array_equal(gi, ti)):
        acc.positions_match = False
    bad = gn | gi | tn | ti
    g64[bad] = 0.0
    t64[bad] = 0.0
    return bad


#: 2**112: an fp16 bit pattern shifted into float32's place reads 2**-112 times its value (normal
#: and subnormal alike); multiplying by this is exact.
_F16_SCALE = np.float32(2.0 ** 112)
#: Bit patterns of fp16 Inf/NaN: exponent 31, i.e. int16 >= 0x7C00 (positive) or uint16 >= 0xFC00 (negative).
_F16_POS_NONFINITE = 0x7C00
_F16_NEG_NONFINITE = 0xFC00


def _f16_to_f32(src: Array, out: Float32Array, bits: Int32Array) -> Float32Array:
    """fp16 -> fp32, exactly as numpy's cast, in 4 integer/float passes (numpy's cast is ≈4x slower here).

    The sign-extended int16 shifted left 13 puts the sign in bit 31 and exponent+mantissa in bits
    13-27 (bits 28-30 are sign copies and are masked off); read as float32 that is the value times
    2**-112. Inf/NaN (exponent 31) would come out finite, so a chunk holding any is cast by numpy;
    they are found on the 2-byte patterns (two maxima), a quarter of the bytes of the result."""
    np.copyto(bits, src.view(np.int16), casting="unsafe")
    np.left_shift(bits, 13, out=bits)
    np.bitwise_and(bits, np.int32(-0x70002000), out=bits)  # 0x8FFFE000
    np.multiply(bits.view(np.float32), _F16_SCALE, out=out)
    if int(_MAX(src.view(np.int16))) >= _F16_POS_NONFINITE or int(_MAX(src.view(np.uint16))) >= _F16_NEG_NONFINITE:
        np.copyto(out, src, casting="unsafe")
    return out


def _bf16_to_f32(src: Array, out: Float32Array, bits: Int32Array) -> Float32Array:
    """bf16 -> fp32: bf16 is the upper half of a float32, so a 16-bit shift is the exact cast."""
    u = bits.view(np.uint32)
    np.copyto(u, src.view(np.uint16), casting="unsafe")
    np.left_shift(u, 16, out=u)
    np.copyto(out, u.view(np.float32))
    return out


def _is_float32(a: Array) -> TypeGuard[Float32Array]:
    """The dtype test that lets a float32 chunk be used as it is (and be typed so)."""
    return a.dtype == np.float32


def _as_f32(src: Array, w32: Float32Array, bits: Int32Array) -> Float32Array:
    """A float32 view or copy of an fp16/bf16/fp32 chunk."""
    if _is_float32(src):
        return src
    if src.dtype == np.float16:
        return _f16_to_f32(src, w32, bits)
    if src.dtype.name == "bfloat16":
        return _bf16_to_f32(src, w32, bits)
    np.copyto(w32, src.astype(np.float32), casting="same_kind")
    return w32


def _as_f64(src: Array, w64: FloatArray) -> FloatArray:
    """A float64 copy of a chunk for the float64 path (ints, bools, float64; all exact)."""
    if _is_ml_dtype(src.dtype):
        src = src.astype(np.float32)
    np.copyto(w64, src, casting="unsafe")
    return w64


def _cos_sums(acc: _Acc, g64: FloatArray, t64: FloatArray) -> BoolArray | None:
    """Add the chunk's cosine sums; returns the NaN/Inf mask where the chunk had any (then zeroed)."""
    ss_g = _dot(g64, g64)
    ss_t = _dot(t64, t64)
    bad = None
    if not (math.isfinite(ss_g) and math.isfinite(ss_t)):  # NaN/Inf, or squares beyond float64
        bad = _zero_bad(acc, g64, t64)
        ss_g = _dot(g64, g64)
        ss_t = _dot(t64, t64)
    acc.ss_g += ss_g
    acc.ss_t += ss_t
    acc.dot += _dot(t64, g64)
    return bad


def _dist(acc: _Acc, g64: FloatArray, t64: FloatArray, d64: FloatArray) -> None:
    """Distance and max abs error in float64, as msprobe computes them (max |d| = max(max d, -min d))."""
    np.subtract(t64, g64, out=d64)
    acc.ss_d += _dot(d64, d64)
    acc.max_abs = max(acc.max_abs, float(_MAX(d64)), -float(_MIN(d64)))


def _chunk(acc: _Acc, gc: Array, tc: Array, rel_dt: RelDType, tolerance: tol.Tolerance | None,
           ulp_fmt: str | None) -> None:
    """Accumulate one chunk. float16/float32/bf16 data take the float32 path (msprobe's own relative-error
    arithmetic); cosine, distance and max abs error are always float64 like msprobe's."""
    n = int(gc.size)
    w = _work(n)
    if rel_dt != np.float32:
        g64, t64 = _as_f64(gc, w.g64[:n]), _as_f64(tc, w.t64[:n])
        _cos_sums(acc, g64, t64)
        _dist(acc, g64, t64, w.d64[:n])
        _tail_f64(acc, w, n, g64, t64, w.d64[:n], tolerance, ulp_fmt, float(np.finfo(rel_dt).eps))
        return
    g32 = _as_f32(gc, w.g32[:n], w.i32[:n])
    t32 = _as_f32(tc, w.t32[:n], w.i32[:n])
    g64, t64 = w.g64[:n], w.t64[:n]
    np.copyto(g64, g32)
    np.copyto(t64, t32)
    bad = _cos_sums(acc, g64, t64)
    if bad is not None:
        g32 = np.where(bad, np.float32(0), g32)
        t32 = np.where(bad, np.float32(0), t32)
    _dist(acc, g64, t64, w.d64[:n])
    _tail_f32(acc, w, n, g32, t32, g64, tolerance, ulp_fmt)


def _tail_f32(acc: _Acc, w: _Work, n: int, g32: Float32Array, t32: Float32Array, g64: FloatArray,
              tolerance: tol.Tolerance | None, ulp_fmt: str | None) -> None:
    ad = np.subtract(t32, g32, out=w.ad[:n])
    np.abs(ad, out=ad)
    acc.sum_abs += float(_SUM(ad, dtype=np.float64))
    ag = np.abs(g32, out=w.ag[:n])
    buf = w.buf[:n]
    mask = w.mask[:n]
    if tolerance is not None:
        np.multiply(ag, np.float32(tolerance.rtol), out=buf)
        np.add(buf, np.float32(tolerance.atol), out=buf)
        acc.n_within += int(np.count_nonzero(np.less_equal(ad, buf, out=mask)))
    if ulp_fmt == "fp16":
        np.divide(ad, _ulp_fp16_f32(g32, w.i32[:n], w.f16_min_normal[:n]), out=buf)
        acc.max_ulp = max(acc.max_ulp, float(_MAX(buf)))
        acc.n_ulp_gt1 += int(np.count_nonzero(np.greater(buf, 1.0, out=mask)))
    elif ulp_fmt is not None:
        ulp_err = np.divide(ad, _ulp(g64, ulp_fmt, w.e64[:n]), out=w.d64[:n])  # d64 is free again
        acc.max_ulp = max(acc.max_ulp, float(_MAX(ulp_err)))
        acc.n_ulp_gt1 += int(np.count_nonzero(np.greater(ulp_err, 1.0, out=mask)))
    np.add(ag, _F32_EPS, out=buf)
    np.divide(ad, buf, out=buf)
    acc.sum_rel_mean += float(_SUM(buf, dtype=np.float64))
    # msprobe's relative error |(t-g)/g| in float32 (== |t-g|/|g| exactly); where g == 0 it adds eps to
    # both sides first: |((t+eps)-eps)/eps|. A zero in golden makes the quotient Inf or NaN, so the
    # zeros are looked for only when the maximum is not finite.
    rel = np.divide(ad, ag, out=buf)
    top = float(_MAX(rel))
    if not math.isfinite(top):
        zero = np.equal(ag, 0, out=mask)
        if zero.any():
            tz = t32[zero] + _F32_EPS
            rel[zero] = np.abs((tz - _F32_EPS) / _F32_EPS)
            top = float(_MAX(rel))
    _rel_stats(acc, rel, top, mask)


def _tail_f64(acc: _Acc, w: _Work, n: int, g64: FloatArray, t64: FloatArray, d64: FloatArray,
              tolerance: tol.Tolerance | None, ulp_fmt: str | None, eps: float) -> None:
    ad = np.abs(d64, out=d64)
    acc.sum_abs += float(_SUM(ad))
    ag = np.abs(g64, out=w.g64[:n])  # golden itself is not needed again: only its magnitude
    mask = w.mask[:n]
    buf = np.empty_like(ag)
    if tolerance is not None:
        np.multiply(ag, tolerance.rtol, out=buf)
        buf += tolerance.atol
        acc.n_within += int(np.count_nonzero(np.less_equal(ad, buf, out=mask)))
    if ulp_fmt is not None:
        np.divide(ad, _ulp(ag, ulp_fmt, w.e64[:n]), out=buf)
        acc.max_ulp = max(acc.max_ulp, float(_MAX(buf)))
        acc.n_ulp_gt1 += int(np.count_nonzero(np.greater(buf, 1.0, out=mask)))
    np.add(ag, eps, out=buf)
    np.divide(ad, buf, out=buf)
    acc.sum_rel_mean += float(_SUM(buf))
    rel = np.divide(ad, ag, out=buf)
    zero = np.equal(ag, 0, out=mask)
    if zero.any():
        rel[zero] = np.abs(((t64[zero] + eps) - eps) / eps)
    _rel_stats(acc, rel, float(_MAX(rel)), mask)


def _rel_stats(acc: _Acc, rel: Float32Array | FloatArray, top: float, mask: BoolArray) -> None:
    if math.isnan(top):
        acc.rel_nan = True
    else:
        acc.max_rel = max(acc.max_rel, top)
    acc.n_1e3 += int(np.count_nonzero(np.less(rel, THOUSANDTH, out=mask)))
    acc.n_5e3 += int(np.count_nonzero(np.less(rel, FIVE_THOUSANDTHS, out=mask)))


def _null_six(out: _Values, reasons: dict[str, str], why: str, names: tuple[MetricName, ...] = SIX) -> None:
    for k in names:
        out[k] = None
        reasons[k] = why


def _scalar(g: Array, t: Array, out: _Values, reasons: dict[str, str],
            tolerance: tol.Tolerance | None) -> None:
    """0-d pair: msprobe computes only MaxAbsErr/MaxRelativeErr, in the data's own arithmetic."""
    why = "unsupported: 0-d tensor (a scalar): cosine, distance and error ratios need at least 2 elements"
    _null_six(out, reasons, why, ("cosine", "euc_dist", "one_thousandth_ratio", "five_thousandths_ratio"))
    gv, tv = g, t
    if gv.dtype == bool:
        gv, tv = gv.astype(float), tv.astype(float)
    with np.errstate(all="ignore"):
        diff = np.abs(np.subtract(tv, gv))
    mx = float(np.max(diff))
    if math.isnan(mx):
        out["max_abs_err"] = None
        reasons["max_abs_err"] = "Nan: the data contains NaN/Inf"
    else:
        out["max_abs_err"] = mx
    rel_dt = _rel_dtype(t.dtype, g.dtype)
    tr, gr = t.astype(rel_dt), g.astype(rel_dt)
    if gr == 0:
        eps = rel_dt.type(np.finfo(rel_dt).eps)
        tr, gr = np.add(tr, eps), np.add(gr, eps)
    with np.errstate(all="ignore"):
        rel = float(np.abs(np.divide(np.subtract(tr, gr), gr)))
    if math.isnan(rel):
        out["max_rel_err"] = None
        reasons["max_rel_err"] = "Nan: the data contains NaN/Inf"
    else:
        out["max_rel_err"] = rel
    g64, t64 = float(g.astype(np.float64)), float(t.astype(np.float64))
    if math.isfinite(g64) and math.isfinite(t64):
        ad = abs(t64 - g64)
        out["mean_abs_err"] = ad
        out["rmse"] = ad
        out["mean_rel_err"] = ad / (abs(g64) + float(np.finfo(rel_dt).eps))
        if tolerance is not None:
            out["within_tolerance_ratio"] = 1.0 if ad <= tolerance.atol + tolerance.rtol * abs(g64) else 0.0


class ChunkSource(Protocol):
    """A tensor that can be read in flat chunks (e.g. io.tensors.NpyStream); arrays work too."""

    shape: tuple[int, ...]
    dtype: DType

    def read(self, start: int, count: int) -> Array: ...

    def to_array(self) -> Array: ...


class _Flat:
    """Uniform chunked view of an array or a ChunkSource, with msprobe's squeeze applied to the shape."""

    def __init__(self, x: Array | ChunkSource) -> None:
        self.src = x
        self.dtype: DType = np.dtype(x.dtype)
        self.shape = tuple(int(d) for d in x.shape if d != 1)
        self.size = math.prod(self.shape) if self.shape else (0 if 0 in x.shape else 1)
        self._flat = np.asarray(x).reshape(-1) if isinstance(x, np.ndarray) else None

    def chunk(self, start: int, count: int) -> Array:
        if self._flat is not None:
            return self._flat[start:start + count]
        return self.src.read(start, count)  # type: ignore[union-attr]

    def array(self) -> Array:
        """The squeezed tensor, whole."""
        whole = self.src if isinstance(self.src, np.ndarray) else self.src.to_array()
        return np.squeeze(whole)


def compute_metrics(
    golden: Array | ChunkSource,
    target: Array | ChunkSource,
    *,
    rtol: float | None = None,
    atol: float | None = None,
    precision: str | None = None,
    top1: bool = False,
) -> TensorMetrics:
    """All metrics of one pair; ``golden`` is the trusted side (msprobe's "bench"), ``target`` the NPU.

    Tolerance-based fields need a tolerance: given ``precision`` (fp16/bf16/fp32) and/or
    ``rtol``/``atol``, else they are null with the reason. ULP error is reported for an fp16/bf16
    target (by ``precision`` or the target dtype). ``top1`` adds argmax agreement along the last
    axis (for logits).
    """
    g = _Flat(golden)
    t = _Flat(target)
    out: _Values = {}
    reasons: dict[str, str] = {}
    tolerance = tol.resolve(precision, rtol, atol) if (precision or rtol is not None or atol is not None) else None
    if tolerance is None:
        reasons["within_tolerance_ratio"] = "no precision or rtol/atol given"
    t_dt = _effective_dtype(t.dtype)
    g_dt = _effective_dtype(g.dtype)
    ulp_fmt = tol.normalize_precision(precision) if precision else None
    if ulp_fmt not in _ULP_FORMATS:
        name = "bfloat16" if t.dtype.name == "bfloat16" else t.dtype.name
        ulp_fmt = tol.precision_of_dtype(name)
    if ulp_fmt not in _ULP_FORMATS:
        ulp_fmt = None
        for k in ("max_ulp_err", "ulp_gt1_ratio"):
            reasons[k] = "ULP error is reported for fp16/bf16 targets only"

    if t.size == 0:
        _null_six(out, reasons, "unsupported: empty tensor, nothing to compare", SIX + EXTRA)
        return TensorMetrics(**out, na_reasons=reasons)
    if t.shape != g.shape:
        why = f"shape unmatched: target {list(t.shape)} vs golden {list(g.shape)} (after squeeze)"
        _null_six(out, reasons, why, SIX + EXTRA)
        return TensorMetrics(**out, na_reasons=reasons)
    if not (t_dt.kind in "fiub" and g_dt.kind in "fiub"):
        _null_six(out, reasons, f"unsupported: dtype {t.dtype}/{g.dtype} is not numeric", SIX + EXTRA)
        return TensorMetrics(**out, na_reasons=reasons)
    if not t.shape:
        ga, ta = g.array(), t.array()
        gv = ga.astype(np.float32) if _is_ml_dtype(ga.dtype) else np.asarray(ga)
        tv = ta.astype(np.float32) if _is_ml_dtype(ta.dtype) else np.asarray(ta)
        _scalar(gv, tv, out, reasons, tolerance)
        counts = _nonfinite_counts(gv, tv)
        return TensorMetrics(**out, **counts, na_reasons=reasons)

    rel_dt = _rel_dtype(t_dt, g_dt)
    if rel_dt not in (np.float32, np.float64):
        rel_dt = np.dtype(np.float64)
    acc = _Acc()
    n = t.size
    _accumulate(acc, g, t, rel_dt, tolerance, ulp_fmt)

    counts = {"golden_nan": acc.g_nan, "golden_inf": acc.g_inf, "target_nan": acc.t_nan, "target_inf": acc.t_inf}
    norm_t, norm_g = math.sqrt(acc.ss_t), math.sqrt(acc.ss_g)
    if norm_t <= _F64_EPS and norm_g <= _F64_EPS:
        out["cosine"] = 1.0
        out["cosine_exact"] = 1.0
    elif norm_t <= _F64_EPS:
        _null_six(out, reasons, "Nan: all target data is zero, cosine undefined", ("cosine",))
    elif norm_g <= _F64_EPS:
        _null_six(out, reasons, "Nan: all golden data is zero, cosine undefined", ("cosine",))
    else:
        cos = acc.dot / (norm_t * norm_g)
        if math.isnan(cos):
            _null_six(out, reasons, "Nan: the data has NaN", ("cosine",))
        else:
            shown = msprobe_round(cos)
            out["cosine"] = round(shown, 6) if shown > COSINE_ROUND_ABOVE else shown
            out["cosine_exact"] = cos
    out["euc_dist"] = math.sqrt(acc.ss_d)
    out["golden_norm"] = norm_g
    out["max_abs_err"] = acc.max_abs
    if acc.rel_nan:
        _null_six(out, reasons, "Nan: relative error is NaN", ("max_rel_err",))
    else:
        out["max_rel_err"] = acc.max_rel
    out["one_thousandth_ratio"] = acc.n_1e3 / n
    out["five_thousandths_ratio"] = acc.n_5e3 / n
    out["mean_abs_err"] = acc.sum_abs / n
    out["mean_rel_err"] = acc.sum_rel_mean / n
    out["rmse"] = math.sqrt(acc.ss_d / n)
    if tolerance is not None:
        out["within_tolerance_ratio"] = acc.n_within / n
    if ulp_fmt is not None:
        out["max_ulp_err"] = acc.max_ulp
        out["ulp_gt1_ratio"] = acc.n_ulp_gt1 / n
    if not acc.positions_match:
        why = (f"{NONFINITE_POSITIONS_DIFFER} (target NaN {acc.t_nan}, Inf {acc.t_inf}; "
               f"golden NaN {acc.g_nan}, Inf {acc.g_inf})")
        _null_six(out, reasons, why)
        out.pop("cosine_exact", None)
        for k in EXTRA:
            if out.get(k) is not None:
                reasons.setdefault(k, "computed with NaN/Inf positions of either side set to 0")
    if top1:
        out["top1_agreement"], why_top1 = _top1(g.array(), t.array())
        if why_top1:
            reasons["top1_agreement"] = why_top1
    return TensorMetrics(**out, **counts, na_reasons=reasons, numel=n)


def _accumulate(acc: _Acc, g: _Flat, t: _Flat, rel_dt: RelDType, tolerance: tol.Tolerance | None,
                ulp_fmt: str | None) -> None:
    """Every chunk of the pair into ``acc``.

    Floating-point warnings are off: huge values (±1e308) overflow sums and differences to Inf
    exactly as in msprobe's arithmetic, and the results say so (Inf, or a null with the reason);
    a RuntimeWarning per chunk would only be noise, or an error under ``-W error``. One BLAS thread
    meanwhile, so that a dot product is the same routine (the same bits) in every process."""
    global _WHOLE_DOTS
    if _WHOLE_DOTS is None:
        _WHOLE_DOTS = numpy_blas_controlled()
    n = t.size
    # below DOT_SLICE no BLAS call is split: the thread count is left alone (~10 µs a tensor)
    threads = one_blas_thread() if _WHOLE_DOTS and n > DOT_SLICE else contextlib.nullcontext()
    with np.errstate(all="ignore"), threads:
        for i in range(0, n, CHUNK):
            count = min(CHUNK, n - i)
            _chunk(acc, g.chunk(i, count), t.chunk(i, count), rel_dt, tolerance, ulp_fmt)


def _nonfinite_counts(g: Array, t: Array) -> _Counts:
    def count(a: Array) -> tuple[int, int]:
        if a.dtype.kind != "f":
            return 0, 0
        return int(np.isnan(a).sum()), int(np.isinf(a).sum())

    gn, gi = count(g)
    tn, ti = count(t)
    return {"golden_nan": gn, "golden_inf": gi, "target_nan": tn, "target_inf": ti}


def _top1(g: Array, t: Array) -> tuple[float | None, str]:
    """Share of rows (all axes but the last) whose argmax agrees: the class/token the model picks."""
    if g.ndim < 1 or g.shape[-1] < 2:
        return None, "needs a last axis of at least 2 classes"
    classes = g.shape[-1]
    g2 = g.reshape(-1, classes)
    t2 = t.reshape(-1, classes)
    rows = g2.shape[0]
    step = max(1, CHUNK // classes)
    agree = 0
    for i in range(0, rows, step):
        gc, tc = g2[i:i + step], t2[i:i + step]
        if _is_ml_dtype(gc.dtype):
            gc = gc.astype(np.float32)
        if _is_ml_dtype(tc.dtype):
            tc = tc.astype(np.float32)
        agree += int(np.count_nonzero(np.argmax(gc, axis=-1) == np.argmax(tc, axis=-1)))
    return agree / rows, ""
