"""Tolerances by target precision, and where each number comes from.

The source is the migration guide's Compare §3.1 table (deliverables.md): FP16 (the default
target) rtol 1e-3…1e-2 with atol ≈ 1e-3; BF16 rtol 1e-3…1e-2 with atol ≈ 1e-2; FP32 rtol
1e-5…1e-4 with atol 1e-6…1e-5. We take the loose end of each rtol range and the stated atol:
the golden check is a gate for "the migration is right", and the tight end of an FP16 range
already fails on pure rounding (FP16 carries about 3 significant digits and its smallest normal
is ≈6e-5). FP32-level ``atol=1e-5`` is never chosen for an FP16 or BF16 run; an explicit user
override is honoured but flagged in ``note``.
"""

from __future__ import annotations

from dataclasses import dataclass

from acc_agent.models.tolerance import TABLE

SOURCE = "reference tolerances by target precision"

PRECISIONS = ("fp16", "bf16", "fp32")
DEFAULT_PRECISION = "fp16"


_ALIASES = {
    "float16": "fp16", "half": "fp16", "fp16": "fp16",
    "bfloat16": "bf16", "bf16": "bf16",
    "float32": "fp32", "float": "fp32", "fp32": "fp32", "float64": "fp32", "fp64": "fp32",
}


@dataclass(frozen=True)
class Tolerance:
    rtol: float
    atol: float
    precision: str
    source: str
    note: str = ""


def normalize_precision(value: str | None) -> str | None:
    """``float16``/``half``/``FP16`` -> ``fp16``; ``None`` stays ``None``; unknown -> ``None``."""
    if value is None:
        return None
    return _ALIASES.get(value.strip().lower())


def precision_of_dtype(dtype: str | None) -> str | None:
    """Target precision implied by a tensor dtype (integers and bools imply none)."""
    if not dtype:
        return None
    return _ALIASES.get(dtype.lower())


def resolve(precision: str | None, rtol: float | None = None, atol: float | None = None) -> Tolerance:
    """The tolerance to apply: table entry for ``precision`` (FP16 when unknown), user values win."""
    prec = normalize_precision(precision) or DEFAULT_PRECISION
    t_rtol, t_atol, stated = TABLE[prec]
    parts = []
    notes = []
    if rtol is None and atol is None:
        source = f"{SOURCE}: {stated}"
    else:
        if rtol is not None:
            parts.append(f"rtol={rtol:g}")
        if atol is not None:
            parts.append(f"atol={atol:g}")
        source = f"user override ({', '.join(parts)}); other value from {SOURCE}: {stated}"
        if prec in ("fp16", "bf16") and atol is not None and atol < TABLE[prec][1] / 10:
            notes.append(
                f"atol={atol:g} is far below what {prec.upper()} can resolve (table: {TABLE[prec][1]:g}); "
                "expect failures from rounding alone"
            )
    return Tolerance(
        rtol=t_rtol if rtol is None else rtol,
        atol=t_atol if atol is None else atol,
        precision=prec,
        source=source,
        note="; ".join(notes),
    )
