"""CSV export of ``compare_dumps`` rows with msprobe's column names first.

Existing msprobe users have scripts that read ``compare_result_*.csv`` by column name (``NPU Name``,
``Cosine``, ``MaxAbsErr``, ...). Writing those columns, with msprobe's words for values it cannot
compute (``unsupported``, ``shape unmatched``, ``N/A``, ``Nan``), keeps those scripts working;
acc-agent's extra metrics follow in columns of their own.
"""

from __future__ import annotations

import csv
from pathlib import Path

from acc_agent.errors import AccAgentError
from acc_agent.models.compare import DumpRow, TensorMetrics
from acc_agent.numerics.metrics import msprobe_round

SIX = [
    ("Cosine", "cosine"),
    ("EucDist", "euc_dist"),
    ("MaxAbsErr", "max_abs_err"),
    ("MaxRelativeErr", "max_rel_err"),
    ("One Thousandth Err Ratio", "one_thousandth_ratio"),
    ("Five Thousandths Err Ratio", "five_thousandths_ratio"),
]
EXTRA = [
    ("MeanAbsErr", "mean_abs_err"),
    ("MeanRelErr", "mean_rel_err"),
    ("RMSE", "rmse"),
    ("WithinToleranceRatio", "within_tolerance_ratio"),
    ("MaxULPErr", "max_ulp_err"),
    ("ULPGt1Ratio", "ulp_gt1_ratio"),
]
HEADER = (
    ["NPU Name", "Bench Name", "NPU Dtype", "Bench Dtype", "NPU Tensor Shape", "Bench Tensor Shape"]
    + [c for c, _ in SIX]
    + ["Result", "Err_message"]
    + ["Rank", "Index", "Pair Method", "Cosine Exact"]
    + [c for c, _ in EXTRA]
    + ["NPU NaN", "NPU Inf", "Bench NaN", "Bench Inf"]
    + [f"Bench-run {c}" for c, _ in SIX]
)

_TOKENS = ("unsupported", "shape unmatched", "N/A", "Nan")


def na_token(reason: str | None) -> str:
    """msprobe's word for a value it cannot compute, from our reason text."""
    if not reason:
        return "N/A"
    for token in _TOKENS:
        if reason.startswith(token):
            return token
    return "N/A"


def _cell(m: TensorMetrics, field: str, msprobe_format: bool) -> str:
    value = getattr(m, field)
    if value is None:
        return na_token(m.na_reasons.get(field))
    if msprobe_format and field != "euc_dist":
        return repr(msprobe_round(float(value)))
    return repr(float(value))


def write_csv(rows: list[DumpRow], path: str | Path) -> Path:
    """Write every row; returns the path written."""
    out = Path(path)
    try:
        out.parent.mkdir(parents=True, exist_ok=True)
        with out.open("w", newline="", encoding="utf-8") as fh:
            w = csv.writer(fh)
            w.writerow(HEADER)
            for r in rows:
                bench = r.bench
                w.writerow(
                    [r.name, r.golden_name or r.name, r.target_dtype or "N/A", r.golden_dtype or "N/A",
                     str(r.target_shape) if r.target_shape is not None else "N/A",
                     str(r.golden_shape) if r.golden_shape is not None else "N/A"]
                    + [_cell(r, f, True) for _, f in SIX]
                    + [r.status, r.message]
                    + [r.rank or "", r.index, r.pair_method or "",
                       "N/A" if r.cosine_exact is None else repr(r.cosine_exact)]
                    + [_cell(r, f, False) for _, f in EXTRA]
                    + [r.target_nan, r.target_inf, r.golden_nan, r.golden_inf]
                    + ([_cell(bench, f, True) for _, f in SIX] if bench is not None else [""] * len(SIX))
                )
    except OSError as exc:
        raise AccAgentError("cannot_write", f"cannot write CSV {out}: {exc}",
                            hint="Choose a writable path for --csv.", path=str(out)) from None
    return out
