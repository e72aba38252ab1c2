"""Models of the accuracy-comparison tools: ``compare_tensors`` and ``compare_dumps``.

Field names are the public contract (design.md): reports, agents and scripts read them.
The diagnosis part (first divergence, category, next actions) lives in ``models/diagnosis.py``.
"""

from __future__ import annotations

from typing import ClassVar, Literal

from pydantic import Field

from acc_agent.models.common import Model, ToolOutput
from acc_agent.models.diagnosis import Diagnosis, FirstDivergence

RowStatus = Literal["pass", "warning", "error", "unmatched", "skipped"]


class TensorMetrics(Model):
    """msprobe's six real-data metrics (same definitions) plus the extra ones acc-agent adds.

    A metric that cannot be computed is ``None`` and its reason is in ``na_reasons[metric]``
    (msprobe's "unsupported"/"N/A"/"Nan" cases map here).
    """

    cosine: float | None = Field(default=None, description="msprobe's Cosine: 12 decimals, rounded to 6 above 0.9999.")
    cosine_exact: float | None = Field(default=None, description="Cosine before msprobe's rounding (float64).")
    euc_dist: float | None = None
    golden_norm: float | None = Field(default=None, description="||golden||2 (NaN/Inf zeroed), for relative errors.")
    max_abs_err: float | None = None
    max_rel_err: float | None = None
    one_thousandth_ratio: float | None = None
    five_thousandths_ratio: float | None = None
    mean_abs_err: float | None = None
    mean_rel_err: float | None = None
    rmse: float | None = None
    within_tolerance_ratio: float | None = Field(default=None, description="Share of elements with |t-g| <= atol + rtol*|g|.")
    max_ulp_err: float | None = None
    ulp_gt1_ratio: float | None = None
    top1_agreement: float | None = None
    golden_nan: int = 0
    golden_inf: int = 0
    target_nan: int = 0
    target_inf: int = 0
    numel: int | None = Field(default=None, description="Elements compared (after squeeze).")
    na_reasons: dict[str, str] = Field(default_factory=dict)


class DumpRow(TensorMetrics):
    """One compared tensor of a dump pair; ``name`` is msprobe's row name (data_name without extension)."""

    name: str
    golden_name: str | None = None
    index: int = Field(default=0, description="Execution order of the row in the target dump.")
    golden_dtype: str | None = None
    target_dtype: str | None = None
    golden_shape: list[int] | None = None
    target_shape: list[int] | None = None
    status: RowStatus = "pass"
    message: str = ""
    pair_method: str | None = Field(default=None, description="How golden and target were matched: exact, mapping, ...")
    rank: str | None = Field(default=None, description="Rank key (e.g. step0/rank1) for multi-rank dumps.")
    bench: TensorMetrics | None = Field(default=None, description="Bench run's metrics against golden, with --bench.")


class CompareDumpsOutput(ToolOutput):
    failing_verdicts: ClassVar[frozenset[str]] = frozenset({"fail"})

    verdict: Literal["pass", "fail", "error"]
    golden: str
    target: str
    bench: str | None = None
    rows: list[DumpRow] = Field(default_factory=list)
    unmatched_golden: list[str] = Field(default_factory=list)
    unmatched_target: list[str] = Field(default_factory=list)
    first_divergence: FirstDivergence | None = None
    diagnosis: Diagnosis | None = None
    rows_total: int = 0
    rows_truncated: bool = False
    unmatched_golden_total: int = Field(default=0, description="Unmatched golden tensors, before any inline cut.")
    unmatched_target_total: int = Field(default=0, description="Unmatched target tensors, before any inline cut.")
    csv_path: str | None = None


class ToleranceUsed(Model):
    """The tolerance a verdict was judged with, and where it came from."""

    rtol: float
    atol: float
    precision: str
    source: str
    note: str = ""


class TensorCheck(TensorMetrics):
    """One output pair of the golden check."""

    name: str
    golden: str
    target: str
    golden_dtype: str | None = None
    target_dtype: str | None = None
    golden_shape: list[int] | None = None
    target_shape: list[int] | None = None
    verdict: Literal["pass", "fail", "error"] = "pass"
    message: str = ""


class CompareTensorsOutput(ToolOutput):
    failing_verdicts: ClassVar[frozenset[str]] = frozenset({"fail", "error"})

    verdict: Literal["pass", "fail", "error"]
    tolerance: ToleranceUsed
    min_within_ratio: float = Field(description="Share of elements within tolerance an output needs to pass.")
    outputs: list[TensorCheck] = Field(default_factory=list)
