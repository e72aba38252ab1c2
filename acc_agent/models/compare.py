"""Models of the accuracy-comparison tools: ``compare_tensors`` and ``compare_dumps``.

Field names are the public contract (design.md): reports, agents and scripts read them.
The diagnosis part (first divergence, category, next actions) lives in ``models/diagnosis.py``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar, Literal

from pydantic import Field, model_serializer

from acc_agent.models.common import Model, ToolInput, ToolOutput
from acc_agent.models.diagnosis import Diagnosis, FirstDivergence

#: Rows inline by default: keeps a 2,000-row result under 20 KB of JSON for an agent; the CSV has all.
DEFAULT_TOP = 12

RowStatus = Literal["pass", "warning", "error", "unmatched", "skipped"]
#: The precisions a user may judge a migrated run at (the tolerance table's rows).
Precision = Literal["fp16", "bf16", "fp32"]
#: How a row was compared: real tensor data, msprobe's Max/Min/Mean/Norm statistics, or CRC32 digests.
CompareMode = Literal["tensor", "statistics", "md5"]


class CompareTensorsInput(ToolInput):
    golden: str = Field(description="Baseline output(s): .npy/.pt/.safetensors/.npz file, FILE.npz:KEY, or a folder. "
                                    "Several outputs in one file or folder are paired by name.")
    target: str = Field(description="Migrated (NPU) output(s), same forms as golden.")
    precision: Precision | None = Field(
        default=None, description="Target precision; sets rtol/atol. Default: bf16 if the target tensor is "
                                  "bf16, else fp16 (the default migration target).")
    rtol: float | None = Field(default=None, ge=0, description="Override the table's relative tolerance.")
    atol: float | None = Field(default=None, ge=0, description="Override the table's absolute tolerance.")
    min_within: float = Field(default=1.0, gt=0, le=1, description="Share of elements within |t-g| <= atol + rtol*|g|. "
                                                                    "1.0 = every element, like numpy.allclose.")


class CompareDumpsInput(ToolInput):
    golden: str = Field(description="Golden (trusted GPU/CPU) dump: msprobe dump.json, its rank folder, a "
                                    "step*/rank* dump root, a folder of .npy files, or one .npz/.safetensors file.")
    target: str = Field(description="Target (migrated NPU) dump, same forms as GOLDEN.")
    bench: str | None = Field(default=None, description="Optional bench dump: the baseline hardware run at the "
                                                        "target's precision, compared against golden too.")
    mapping: str | None = Field(default=None, description="YAML file mapping renamed target tensor names to "
                                                          "golden names ('target: golden'; a key ending in '.' "
                                                          "maps a name prefix).")
    csv: str | None = Field(default=None, description="Write the full table here, with msprobe's column names.")
    precision: Precision | None = Field(
        default=None, description="Target precision every tensor is judged at. Default: each tensor's recorded "
                                  "dtype decides — the diagnosis judges it by the rounding of its dtype (dump.json's, "
                                  "else the stored array's), and the rtol/atol share uses BF16 for a bf16 tensor and "
                                  "FP16 otherwise (float32 storage does not show an FP32 run). Pass fp32 for an FP32 "
                                  "run, fp16 or bf16 to judge every tensor at that precision.")
    top: int = Field(default=DEFAULT_TOP, ge=1, description="Rows kept inline (the worst first); the CSV has all.")
    all_rows: bool = Field(default=False, description="Return every row (and every unmatched name) inline instead "
                                                      "of the worst --top.")
    pair_by_order: bool = Field(default=False, description="Also pair every leftover tensor by execution order and "
                                                           "shape. Without it this happens automatically where most "
                                                           "names do not pair (renamed or fused layers), and the "
                                                           "diagnosis says so.")
    workers: int | None = Field(default=None, ge=1, le=4096, description="Worker processes (default: one per core for "
                                                                "several ranks or a large dump, else 1).")
    scheduler: str | None = Field(default=None, description="Run the ranks as Dask tasks: a scheduler address "
                                                            "(tcp://host:8786) whose workers can read the dump "
                                                            "paths, or 'local' for a cluster on this machine. "
                                                            "Needs pip install 'acc-agent[distributed]'.")


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
    compare_mode: CompareMode = Field(default="tensor", description="tensor: real data; statistics: msprobe's "
                                      "Max/Min/Mean/Norm only; md5: CRC32 digests (plus statistics when dumped).")
    golden_stats: dict[str, float | None] | None = Field(default=None, description="Golden Max/Min/Mean/Norm from "
                                                         "dump.json, when it carries them.")
    target_stats: dict[str, float | None] | None = Field(default=None, description="Target Max/Min/Mean/Norm.")
    max_diff: float | None = Field(default=None, description="Target Max - golden Max (msprobe's 'Max diff').")
    min_diff: float | None = None
    mean_diff: float | None = None
    norm_diff: float | None = Field(default=None, description="Target Norm - golden Norm (msprobe's 'L2norm diff').")
    max_rel_diff: float | None = Field(default=None, description="|max_diff| / |golden Max| as a fraction (msprobe "
                                                                 "prints it in %); None where golden is 0.")
    min_rel_diff: float | None = None
    mean_rel_diff: float | None = None
    norm_rel_diff: float | None = Field(default=None, description="|norm_diff| / |golden Norm|: msprobe's "
                                                                  "NormRelativeErr, which its Result rules judge.")
    golden_md5: str | None = Field(default=None, description="Golden CRC32 (msprobe summary_mode md5).")
    target_md5: str | None = None
    md5_equal: bool | None = Field(default=None, description="Whether both CRC32 digests agree (bit-identical data).")
    golden_requires_grad: bool | None = None
    target_requires_grad: bool | None = None
    same_as: str | None = Field(default=None, description="The earlier row holding the same tensor (an input that "
                                                          "is a previous call's output, linked by its data): "
                                                          "listings show the tensor once.")

    # Statistics rows are built sparse: a default msprobe dump gives ~300k of them, and a full
    # ``__dict__`` of 49 fields is 1.6 KB a row (over half of a 1 GB budget) where ~21 keys fit in
    # 0.4 KB. A field missing from ``__dict__`` reads as its default (pydantic-core's serializer
    # skips missing keys; the serializer below fills them back in for the output).
    if not TYPE_CHECKING:

        def __getattr__(self, name: str) -> object:
            derived = _DERIVED.get(name)
            if derived is not None:
                return self._derived(*derived)
            try:
                return _ROW_DEFAULTS[name]
            except KeyError:
                pass
            factory = _ROW_FACTORIES.get(name)
            if factory is None:
                return super().__getattr__(name)
            value = factory()  # stored, so that changing it (row.na_reasons[k] = ...) sticks
            self.__dict__[name] = value
            return value

    def _derived(self, stat: str, relative: bool) -> float | None:
        """A difference a statistics row left out of ``__dict__``: the engine leaves them out only
        where both values are finite floats and golden is not 0 unless they are equal, so msprobe's
        plain arithmetic applies (target - golden; |diff / golden * 100| / 100)."""
        d = self.__dict__
        ts, gs = d.get("target_stats"), d.get("golden_stats")
        if d.get("compare_mode", "tensor") == "tensor" or not ts or not gs:
            return None
        t, g = ts.get(stat), gs.get(stat)
        if type(t) is not float or type(g) is not float:
            return None
        if t == g:
            return 0.0
        diff = t - g
        if not relative:
            return diff
        return abs(diff / g * 100) / 100 if g != 0.0 else None

    # No return annotation on purpose: pydantic would then derive the serialization JSON schema
    # (the MCP output schema) from it instead of from the fields.
    @model_serializer(mode="wrap")
    def _compact(self, handler):
        """Each kind of row leaves out the other kind's fields it has no value for.

        The inline result is sized for an agent (~20 KB for the worst rows): a tensor row's sixteen
        ``null`` statistics fields, or a statistics row's twenty tensor metrics, would cost a
        quarter of that and say nothing. A sparse (statistics) row gets its other defaults back."""
        data = handler(self)
        if not isinstance(data, dict):
            return data
        tensor = data.get("compare_mode", "tensor") == "tensor"
        if tensor:
            for key in _STATISTICS_ONLY:
                if data.get(key, 0) is None:
                    del data[key]
            if data.get("same_as", 0) is None:
                del data["same_as"]
            return data
        full = {}
        for key in _FIELD_ORDER:
            if key in data:
                value = data[key]
            elif key in _TENSOR_ONLY:
                continue
            else:
                value = getattr(self, key)  # a default: None, "", 0, "pass" or {}
            if (key in _TENSOR_ONLY and value in (None, 0)) or (key == "same_as" and value is None):
                continue
            full[key] = value
        return full


_STATISTICS_ONLY = ("golden_stats", "target_stats", "max_diff", "min_diff", "mean_diff", "norm_diff", "max_rel_diff",
                    "min_rel_diff", "mean_rel_diff", "norm_rel_diff", "golden_md5", "target_md5", "md5_equal",
                    "golden_requires_grad", "target_requires_grad")
_TENSOR_ONLY = frozenset(TensorMetrics.model_fields) - {"na_reasons"}
_FIELD_ORDER = tuple(DumpRow.model_fields)
_DERIVED = {f"{prefix}_{kind}": (stat, kind == "rel_diff") for prefix, stat in
            (("max", "Max"), ("min", "Min"), ("mean", "Mean"), ("norm", "Norm")) for kind in ("diff", "rel_diff")}
_ROW_DEFAULTS = {n: f.default for n, f in DumpRow.model_fields.items() if f.default_factory is None}
_ROW_FACTORIES = {n: f.default_factory for n, f in DumpRow.model_fields.items() if f.default_factory is not None}


class CompareDumpsOutput(ToolOutput):
    failing_verdicts: ClassVar[frozenset[str]] = frozenset({"fail"})
    inconclusive_verdicts: ClassVar[frozenset[str]] = frozenset({"inconclusive"})

    verdict: Literal["pass", "fail", "error", "inconclusive"]
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
    min_within_ratio: float = Field(description="Required, not measured: the share of elements within tolerance "
                                                "each output needs to pass (the min_within setting).")
    lowest_within_ratio: float | None = Field(default=None, description="Measured: the smallest share of elements "
                                                                        "within tolerance over the outputs compared.")
    outputs: list[TensorCheck] = Field(default_factory=list)
