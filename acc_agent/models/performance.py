"""Models of the performance skill: ``measure_performance`` and ``compare_performance``.

Field names follow design.md (``results[]`` with ``batch_size``, ``p50_ms``, ``p95_ms``, ``mean_ms``,
``throughput``, ``warmup``, ``iterations``, ``scope``). A results file carries the raw per-iteration
timings (``samples_ms``) so a later comparison can compute confidence intervals, and the settings
and environment needed to reproduce it (Compare.md §2.3 and §4).
"""

from __future__ import annotations

from pathlib import Path
from typing import ClassVar, Literal

from pydantic import Field

from acc_agent.models.common import CsvInts, Model, ToolInput, ToolOutput

Scope = Literal["end_to_end", "device_only", "segmented", "training_step"]
SCOPE_TEXT: dict[str, str] = {
    "end_to_end": "end-to-end: from input ready to output ready, including pre/post-processing in the timed call",
    "device_only": "device-only: model execution on the device, excluding Python pre/post-processing",
    "segmented": "segmented: end-to-end, with per-stage timings (preprocess / inference / postprocess / IO)",
    "training_step": "training step: one optimizer iteration (forward + backward + update) as timed by the training framework",
}


class StageStats(Model):
    """Timing of one stage marked with ``acc_agent.timing.stage`` (per iteration, ms)."""

    p50_ms: float
    p95_ms: float
    mean_ms: float
    share_of_total: float | None = Field(default=None, description="mean stage time / mean iteration time")
    samples_ms: list[float] = Field(default_factory=list)


class OutlierReport(Model):
    count: int
    indices: list[int] = Field(default_factory=list, description="Positions in samples_ms (0-based, after warm-up).")
    rule: str
    included_in_statistics: bool = Field(default=True, description="Outliers are reported, not dropped.")


class WarmupReport(Model):
    configured: int = Field(description="Untimed warm-up iterations run before timing.")
    reason: str
    residual_detected: int = Field(
        default=0, description="Timed iterations at the start that still look like warm-up (kept, reported)."
    )
    rule: str = ""


class BatchResult(Model):
    """Statistics for one batch size. On error every number is None and ``error`` says why."""

    batch_size: int
    status: Literal["ok", "error"]
    error: str | None = None
    scope: Scope
    warmup: int
    iterations: int
    p50_ms: float | None = None
    p95_ms: float | None = None
    p99_ms: float | None = None
    mean_ms: float | None = None
    std_ms: float | None = None
    min_ms: float | None = None
    max_ms: float | None = None
    throughput: float | None = Field(default=None, description="units per second, see throughput_unit")
    throughput_unit: str = Field(description="samples/s (batch_size / mean latency) or requests/s (1 / mean latency)")
    outliers: OutlierReport | None = None
    warmup_detection: WarmupReport | None = None
    stages: dict[str, StageStats] = Field(default_factory=dict)
    peak_host_memory_mb: float | None = Field(default=None, description="Peak resident memory of the measuring process (ru_maxrss).")
    device_max_allocated_mb: float | None = Field(default=None, description="torch.cuda/npu max_memory_allocated, when used.")
    samples_ms: list[float] = Field(default_factory=list, description="Per-iteration latencies after warm-up, in order.")


class MeasurementSettings(Model):
    """What a performance report states about a measurement, so it can be repeated and compared."""

    source: Literal["callable", "command", "log"]
    target: str = Field(description="The callable, command line or log that was measured.")
    scope: Scope
    scope_description: str
    batch_sizes: list[int]
    concurrency: str = "sequential, single request at a time"
    warmup: int
    warmup_reason: str
    iterations: int
    iterations_reason: str
    statistics: list[str] = Field(default_factory=lambda: ["p50", "p95", "p99", "mean", "std"])
    percentile_method: str = "linear interpolation (numpy default)"
    throughput_definition: str
    synchronisation: str
    clock: str = "time.perf_counter_ns (monotonic, ns)"
    timeout_s: float | None = None


class NotExecuted(Model):
    """When performance work was not triggered: why, which trigger conditions are missing, and the command to run."""

    reason: str
    missing_conditions: list[str]
    command_template: str


class MeasurePerformanceInput(ToolInput):
    callable: str | None = Field(
        default=None,
        description="Callable to time, MODULE:FUNC. FUNC (e.g. mypkg.infer:run) is called with the setup hook's "
        "return value, or with the batch size when there is no setup hook.",
    )
    setup: str | None = Field(
        default=None,
        description="Untimed setup MODULE:FUNC. Called once per batch size with the batch size; its return "
        "value is passed to the timed callable.",
    )
    command: str | None = Field(
        default=None,
        description="Command to time, {batch_size} replaced. It is split like a shell but run without one; "
        "ACC_AGENT_BATCH_SIZE is also set.",
    )
    from_log: Path | None = Field(
        default=None,
        description="Log to read timings from instead. For runs that cannot be repeated (step time / per step "
        "time / FPS lines).",
    )
    batch_sizes: CsvInts = Field(
        default=[1],
        description="Batch sizes; 1 is always added. Measure 1 and the target batch; with --from-log, the last "
        "entry is the batch size the logged run used.",
    )
    warmup: int = Field(default=10, ge=0, description="Untimed warm-up iterations per batch size.")
    iterations: int = Field(default=100, ge=1, description="Timed iterations per batch size.")
    scope: Scope | None = Field(
        default=None,
        description="What the timing covers. segmented has stages; default: training_step for --from-log, "
        "end_to_end otherwise.",
    )
    throughput_unit: Literal["samples", "requests"] = Field(
        default="samples", description="samples: batch_size / latency; requests: 1 / latency."
    )
    sync: Literal["auto", "none", "cuda", "npu"] = Field(
        default="auto", description="Device sync around timestamps. auto detects torch CUDA/NPU use."
    )
    timeout_s: float = Field(default=600.0, gt=0, description="Seconds per command run, or for all iterations of a callable.")
    requested: bool = Field(
        default=True,
        description="The user asked for this measurement. Running the CLI command is an explicit request; agents "
        "and report generators pass false and the conditions below unless the user asked.",
    )
    environment_verdict: str | None = Field(default=None, description="check_environment's verdict, if known.")
    user_agreed: bool = Field(default=False, description="The user agreed to run tests (after auto).")
    latency_kpi: bool = Field(default=False, description="Acceptance has a latency/throughput KPI.")
    out: Path | None = Field(default=None, description="Write the results JSON here. It holds settings, environment and raw "
                             "timings; compare_performance reads it.")


class MeasurePerformanceOutput(ToolOutput):
    """Verdict: ``measured`` (all batch sizes ok), ``partial`` (some failed), ``error`` (none could be
    measured) or ``not_executed`` (no trigger condition holds, see ``not_executed``)."""

    failing_verdicts: ClassVar[frozenset[str]] = frozenset({"error"})
    inconclusive_verdicts: ClassVar[frozenset[str]] = frozenset({"not_executed"})

    verdict: Literal["measured", "partial", "error", "not_executed"]
    results: list[BatchResult] = Field(default_factory=list)
    settings: MeasurementSettings | None = None
    environment: dict[str, str | None] = Field(default_factory=dict)
    not_executed: NotExecuted | None = None
    trigger: str | None = Field(default=None, description="Which trigger condition started the measurement.")
    notes: list[str] = Field(default_factory=list)
    results_path: str | None = None


class ComparePerformanceInput(ToolInput):
    baseline: Path = Field(description="Baseline (GPU/CPU) results JSON written by measure_performance out.")
    target: Path = Field(description="Target (NPU) results JSON written by measure_performance out.")
    statistic: Literal["p50", "p95", "mean"] = Field(default="p50", description="Latency statistic the verdict uses.")
    target_ratio: float = Field(
        default=1.0,
        gt=0,
        description="Allowed latency ratio target/baseline. 1.0: NPU at least as fast; 1.2: up to 20 % slower.",
    )
    confidence: float = Field(default=0.95, gt=0.5, lt=1.0, description="Confidence level of the ratio intervals.")
    allow_scope_mismatch: bool = Field(
        default=False, description="Compare even if scopes differ. The output still states the mismatch."
    )


class RatioRow(Model):
    batch_size: int
    statistic: str
    baseline_ms: float
    target_ms: float
    ratio: float = Field(description="target / baseline latency; > 1 means the target is slower")
    ci_low: float | None = None
    ci_high: float | None = None
    ci_method: str | None = None
    baseline_throughput: float | None = None
    target_throughput: float | None = None
    throughput_ratio: float | None = None
    mann_whitney_p: float | None = None
    met: bool | None = Field(default=None, description="Upper CI bound (or ratio without CI) <= target_ratio.")


class StageGap(Model):
    stage: str
    baseline_ms: float
    target_ms: float
    delta_ms: float
    share_of_gap: float | None = None


class ComparePerformanceOutput(ToolOutput):
    """Verdict: ``met``, ``not_met``, ``inconclusive`` (CI straddles the target) or ``not_comparable``."""

    failing_verdicts: ClassVar[frozenset[str]] = frozenset({"not_met"})
    inconclusive_verdicts: ClassVar[frozenset[str]] = frozenset({"inconclusive", "not_comparable"})

    verdict: Literal["met", "not_met", "inconclusive", "not_comparable"]
    rows: list[RatioRow] = Field(default_factory=list)
    mismatches: list[str] = Field(default_factory=list, description="Differences in scope/batch/statistics/settings, stated.")
    target_ratio: float
    statistic: str
    bottleneck_stage: str | None = None
    stage_gaps: list[StageGap] = Field(default_factory=list)
    likely_causes: list[str] = Field(default_factory=list)
    baseline_settings: MeasurementSettings | None = None
    target_settings: MeasurementSettings | None = None
