"""How much error a dtype explains: unit roundoff, a per-tensor budget, and a floor for ratios.

Low-precision runs differ from FP32 everywhere; these numbers say how large a difference rounding
alone can produce, so the diagnosis can tell rounding noise from bugs without a bench run. They are
derived from the format (bits of precision), not fitted to a model:

- ``unit_roundoff``: half an ulp at 1.0, the largest relative error of one rounding (2^-p).
- ``budget``: ``BUDGET_ROUNDINGS`` unit roundoffs of relative L2 error (at least msprobe's min_err). A tensor produced through a
  chain of roundings (each adding about one unit roundoff, mostly uncorrelated) stays well inside
  that unless something other than rounding changed it. Judged against a budget, a real fault
  smaller than the budget is missed; that is why ``--bench`` is the stronger judgement.
- ``ratio_floor``: msprobe's ``min_err`` of its benchmark standard (2^-11 fp16, 2^-8 bf16, 2^-14 fp32),
  used as the smallest bench error a ratio divides by, so an exact bench row does not make every
  target rounding look infinitely worse.
- ``BENCH_RATIO``: msprobe's benchmark standard fails an API whose RMSE exceeds twice the bench's; the
  diagnosis applies the same factor to each row's relative error.
"""

from __future__ import annotations

from functools import lru_cache

BENCH_RATIO = 2.0
BUDGET_ROUNDINGS = 16.0
GROWTH_RATIO = 2.0  # the error at least doubled after the first divergence: more error was injected
#: An error this large entering at one call is not one layer's rounding in any precision (1 % is the
#: FP16/BF16 relative tolerance): growth after it is the fault travelling on, not accumulation.
SINGLE_JUMP_ERR = 0.01

_PRECISION_BITS = {
    "float64": 53,
    "float32": 24,
    "tfloat32": 11,
    "hfloat32": 11,
    "float16": 11,
    "bfloat16": 8,
    "float8_e4m3fn": 4,
    "float8_e5m2": 3,
}
#: The half-precision float types (their own rounding is what low-precision checks look at).
LOW_PRECISION = frozenset({"float16", "bfloat16"})
_MSPROBE_MIN_ERR = {"float16": 2.0**-11, "bfloat16": 2.0**-8, "float32": 2.0**-14}
_ALIASES = {
    "fp64": "float64", "double": "float64", "fp32": "float32", "float": "float32", "fp16": "float16",
    "half": "float16", "bf16": "bfloat16", "tf32": "tfloat32", "hf32": "hfloat32",
}


@lru_cache(maxsize=256)
def canonical_dtype(raw: str | None) -> str | None:
    """``torch.bfloat16`` / ``BFloat16`` / ``bf16`` -> ``bfloat16``; ``None`` stays ``None``."""
    if raw is None:
        return None
    text = str(raw).strip().lower()
    for prefix in ("torch.", "mindspore.", "numpy.", "np."):
        if text.startswith(prefix):
            text = text[len(prefix):]
    return _ALIASES.get(text, text)


@lru_cache(maxsize=256)
def is_float(dtype: str | None) -> bool:
    d = canonical_dtype(dtype)
    return d is not None and d in _PRECISION_BITS


@lru_cache(maxsize=256)
def unit_roundoff(dtype: str | None) -> float:
    """2^-p for a float format; 0.0 for integers and bools (they must match exactly)."""
    d = canonical_dtype(dtype)
    if d is None:
        return 2.0**-24
    bits = _PRECISION_BITS.get(d)
    return 0.0 if bits is None else 2.0**-bits


@lru_cache(maxsize=256)
def budget(dtype: str | None) -> float:
    """Relative L2 error that rounding in ``dtype`` explains on its own (0 for integer tensors).

    Never below msprobe's ``min_err`` for the dtype: in FP32 the rounding of the output is not what
    dominates, long reductions accumulate about sqrt(K) roundings and differ between kernels (measured
    on MiniLM: two CPU GEMM back-ends differ by up to 1e-6, i.e. 16 FP32 roundoffs), so FP32 is
    judged at msprobe's 2^-14, the smallest FP32 error its benchmark standard distinguishes.
    """
    u = unit_roundoff(dtype)
    if u == 0.0:
        return 0.0
    return max(BUDGET_ROUNDINGS * u, ratio_floor(dtype))


@lru_cache(maxsize=256)
def ratio_floor(dtype: str | None) -> float:
    """Smallest bench error a target/bench ratio divides by (msprobe's min_err; else one roundoff)."""
    d = canonical_dtype(dtype)
    if d in _MSPROBE_MIN_ERR:
        return _MSPROBE_MIN_ERR[d]
    return max(unit_roundoff(d), 2.0**-24)


def lowest_precision(*dtypes: str | None) -> str | None:
    """The least precise float dtype among ``dtypes`` (the one that decides the budget)."""
    floats = [canonical_dtype(d) for d in dtypes if is_float(d)]
    if not floats:
        return None
    return min(floats, key=lambda d: _PRECISION_BITS[d or "float32"])


#: The largest finite values of float16, bfloat16, float32 and float64 (``torch.finfo(dtype).max``).
FLOAT_TYPE_LIMITS = frozenset({65504.0, 3.3895313892515355e38, 3.4028234663852886e38, 1.7976931348623157e308})


def float_type_limits(a: object, b: object) -> bool:
    """Whether two different recorded values are each a float type's limit, of one sign: ``torch.finfo(dtype).min`` as
    a mask fill is -3.40282e38 in a float32 run and -65504 in a float16 one, the same setting in each run's type."""
    return (isinstance(a, float) and isinstance(b, float) and a != b and abs(a) in FLOAT_TYPE_LIMITS
            and abs(b) in FLOAT_TYPE_LIMITS and (a < 0) == (b < 0))
