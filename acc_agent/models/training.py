"""Models of the training-log tools, inputs and outputs: ``parse_training_log``, ``judge_short_run``,
``compare_loss_curves`` and ``compare_run_configs``.

Field names marked as contract in design.md (``format``, ``series``, ``relative_drop``, ``window``,
``band``) are relied on by reports and agents.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, ClassVar, Literal

from pydantic import BeforeValidator, Field, model_validator

from acc_agent.models.common import CsvStrs, Model, ToolInput, ToolOutput

#: Cumulative steps beyond which a short run that shows no clear improvement stops being extended.
STALL_STEPS = 500


class ParseTrainingLogInput(ToolInput):
    log: Path = Field(description="Training log: text (Megatron/MindSpeed, mmcv/mmengine, MindSpore, timm, PyTorch ImageNet example, HF printed dicts), JSON (trainer_state.json, Megatron golden values, MindSpeed baseline), JSON lines, CSV, or a TensorBoard event file / run directory (needs the tensorboard package).")
    format: str | None = Field(default=None, description="Force a format by name instead of detecting it (e.g. megatron, hf_trainer_state, mmcv).")
    run: int | None = Field(default=None, ge=0, description="Which run of the file to return series for (default: the one with the most loss points).")
    metrics: CsvStrs | None = Field(default=None, description="Only return these canonical metrics, comma-separated (default: all).")


class MetricPoint(Model):
    """One value of a metric; ``value`` is null when the log printed NaN/Inf."""

    step: int
    value: float | None


class StepRange(Model):
    first: int | None = None
    last: int | None = None
    count: int = 0


class RunSummary(Model):
    """One run found in the file (logs often hold several: a restarted job, several tables)."""

    index: int
    name: str | None = Field(default=None, description="Row name for result tables (e.g. '8p-NPU').")
    line_range: list[int] | None = Field(default=None, description="[first, last] line holding this run's metrics.")
    step_unit: str = Field(description="iteration | epoch | record | none: what the step numbers count.")
    step_numbering: str = Field(default="", description="How the steps were numbered when the log prints none (Hugging Face dicts).")
    steps: StepRange
    declared_total_steps: int | None = Field(default=None, description="Total the log announces (Megatron 'N/ M').")
    epochs: float | None = None
    record_kinds: dict[str, int] = Field(description="Records per kind: warmup, train, eval, summary.")
    warmup_steps: list[int] = Field(default_factory=list, description="Leading steps whose step time is >2x the steady median.")
    device: str | None = None
    device_evidence: str = ""
    metrics: list[str] = Field(default_factory=list)
    scalars: dict[str, float] = Field(default_factory=dict, description="Values with no step (final summaries, result-table cells).")


class ParseTrainingLogOutput(ToolOutput):
    """``verdict``: ``parsed`` or ``no_metrics`` (nothing recognisable; ``reason`` says why). Neither fails;
    ``no_metrics`` is inconclusive (CLI exit 3)."""

    failing_verdicts: ClassVar[frozenset[str]] = frozenset()
    inconclusive_verdicts: ClassVar[frozenset[str]] = frozenset({"no_metrics"})
    verdict: Literal["parsed", "no_metrics"]
    log_path: str
    format: str = Field(description="Detected format name, e.g. megatron, hf_trainer_state, mmcv, mindspore.")
    format_label: str = ""
    detection: str = Field(default="", description="Why this format was chosen (confidence and runner-up).")
    device: str | None = Field(default=None, description="GPU | NPU | CPU when the log says so, else null.")
    device_evidence: str = ""
    selected_run: int | None = Field(default=None, description="Index of the run whose series are returned.")
    series: dict[str, list[MetricPoint]] = Field(default_factory=dict, description="Canonical metric name -> points of the selected run.")
    units: dict[str, str] = Field(default_factory=dict)
    steps: StepRange = Field(default_factory=StepRange)
    epochs: float | None = None
    record_kinds: dict[str, int] = Field(default_factory=dict)
    non_finite: dict[str, list[int]] = Field(default_factory=dict, description="Metric -> steps where the log printed NaN/Inf.")
    runs: list[RunSummary] = Field(default_factory=list)
    lines_read: int = 0
    warnings: list[str] = Field(default_factory=list)
    reason: str | None = None


def _parse_window(value: object) -> object:
    """Accept ``"START:END"``, ``"START:"``, ``":END"`` or ``[start, end]`` from a command line."""
    if isinstance(value, str):
        text = value.strip()
        if text.startswith("{"):
            return text
        if ":" not in text:
            raise ValueError("window must look like START:END (either side may be empty), e.g. 1:100")
        start, _, end = text.partition(":")
        return {"start_step": int(start) if start.strip() else None, "end_step": int(end) if end.strip() else None}
    if isinstance(value, (list, tuple)):
        if len(value) != 2:
            raise ValueError("window needs two numbers: start and end step")
        return {"start_step": value[0], "end_step": value[1]}
    return value


def _parse_band(value: object) -> object:
    """Accept ``"0.3,0.5"``, ``"30,50"`` / ``"30%,50%"`` (percent) or a pair of fractions."""
    if isinstance(value, str):
        parts = [p.strip() for p in value.strip().strip("[]").split(",") if p.strip()]
        if len(parts) != 2:
            raise ValueError("band must be two numbers LOW,HIGH such as 0.3,0.5 (or 30,50 in percent)")
        pct = any(p.endswith("%") for p in parts)
        nums = [float(p.rstrip("%")) for p in parts]
        if pct or max(nums) > 1.0:
            nums = [n / 100.0 for n in nums]
        return {"low": nums[0], "high": nums[1]}
    if isinstance(value, (list, tuple)):
        if len(value) != 2:
            raise ValueError("band needs two numbers: low and high")
        return {"low": value[0], "high": value[1]}
    return value


class Window(Model):
    """Steps (inclusive) the judgement used; null ends mean the run's first/last logged step."""

    start_step: int | None = None
    end_step: int | None = None

    @model_validator(mode="after")
    def _ordered(self) -> Window:
        if self.start_step is not None and self.end_step is not None and self.end_step <= self.start_step:
            raise ValueError("window end must be after its start")
        return self


class Band(Model):
    """Expected cumulative relative loss drop over the window, as fractions (0.3 = 30 %)."""

    low: float = Field(default=0.3, ge=-1.0, le=1.0)
    high: float = Field(default=0.5, ge=-1.0, le=1.0)

    @model_validator(mode="after")
    def _ordered(self) -> Band:
        if self.high < self.low:
            raise ValueError("band high must be >= low")
        return self


WindowArg = Annotated[Window, BeforeValidator(_parse_window)]
BandArg = Annotated[Band, BeforeValidator(_parse_band)]


class JudgeShortRunInput(ToolInput):
    log: Path = Field(description="Training log of the short run (any format parse-training-log reads).")
    window: WindowArg = Field(default_factory=Window, description="Steps to judge, START:END inclusive; either side may be empty (default: the whole run).")
    band: BandArg = Field(default_factory=Band, description="Expected cumulative loss drop LOW,HIGH as fractions (0.3,0.5) or percent (30,50). The dataset notes (Mig_Readme §3.1) may narrow it.")
    metric: str = Field(default="loss", description="Canonical metric to judge (the single main loss named in Mig_Readme §3.1).")
    run: int | None = Field(default=None, ge=0, description="Run index inside the log (default: the run with the most loss points).")
    stall_steps: int = Field(default=STALL_STEPS, ge=1, description="Beyond this many cumulative steps without clear improvement, stop adding steps and suspect the model, code or data pipeline.")
    improvement_threshold: float = Field(default=0.05, ge=0.0, le=1.0, description="Relative drop below which a run beyond stall_steps counts as 'no clear improvement'.")
    config: Path | None = Field(default=None, description="Run configuration file (YAML/JSON/log) that identifies 'the same short run' for the do-not-repeat rule.")
    record_file: Path | None = Field(default=None, description="Where passed short runs are recorded (default: .acc-agent/short_run_record.json beside the project's mig.yaml, found from the current folder upwards, else in the current folder; never beside the log).")
    record: bool = Field(default=True, description="Record a pass and check for repeats (--no-record to judge without touching the record file).")


class Check(Model):
    """One smoke / floating-point-exception check on the log."""

    name: str
    status: Literal["pass", "warn", "fail", "na"]
    detail: str
    steps: list[int] = Field(default_factory=list)


class RepeatRecord(Model):
    """One judged short run, as kept in the project's record file."""

    fingerprint: str
    fingerprint_source: str
    log_path: str
    log_sha256: str
    metric: str
    window: Window
    band: Band
    verdict: str
    relative_drop: float | None
    judged_at: str


ShortRunVerdict = Literal["pass", "pass_above_band", "below_band", "unstable", "stalled", "repeat_of_passed", "insufficient_data"]


class JudgeShortRunOutput(ToolOutput):
    """Short-run judgement: the loss falls steadily and its cumulative relative drop over the window lands
    in the band (30–50 % by default); once passed, the same short run is not repeated.

    Verdicts: ``pass`` (drop inside the band), ``pass_above_band`` (dropped more than the band; the
    actual % is in the summary; slightly outside is allowed when the actual figure is written down), ``below_band`` (fails: not enough drop, or
    rising), ``unstable`` (fails: NaN/Inf loss, NaN iterations or exploding gradients), ``stalled``
    (fails: beyond the 500-step threshold with no clear improvement — suspect model/code/data, see
    ``checklist``), ``repeat_of_passed`` (the same short run already passed with this configuration:
    stop, do not repeat; not a numeric failure), ``insufficient_data`` (N/A: too few points or no
    such metric; not a failure; CLI exit 3).
    """

    failing_verdicts: ClassVar[frozenset[str]] = frozenset({"below_band", "unstable", "stalled"})
    inconclusive_verdicts: ClassVar[frozenset[str]] = frozenset({"insufficient_data"})
    verdict: ShortRunVerdict
    log_path: str
    metric: str
    run: int | None = None
    window: Window = Field(description="Steps actually used (inclusive).")
    band: Band
    relative_drop: float | None = Field(default=None, description="(start - end) / |start| over the window; 0.05 = 5 %.")
    relative_drop_pct: float | None = None
    start_value: float | None = Field(default=None, description="Median of the first k points of the window.")
    end_value: float | None = Field(default=None, description="Median of the last k points of the window.")
    endpoint_points: int | None = Field(default=None, description="k: points per robust endpoint (a fifth of the window, 1-5).")
    points: int = 0
    trend_slope: float | None = Field(default=None, description="Theil-Sen slope of the metric per step (negative = falling).")
    falling_fraction: float | None = Field(default=None, description="Share of steps where the running median does not rise.")
    band_fit: str | None = Field(default=None, description="When the band does not fit the window: why, and what window would.")
    suggested_end_step: int | None = Field(default=None, description="Step where the trend reaches the band's low end, if it falls.")
    checks: list[Check] = Field(default_factory=list, description="Smoke / floating-point-exception checks on the run.")
    checklist: list[str] = Field(default_factory=list, description="What to check (model, code, data pipeline) when the loss shows no clear "
                                                                 "improvement beyond the step threshold (500 by default).")
    repeat: RepeatRecord | None = Field(default=None, description="The earlier passed record this run repeats, if any.")
    repeat_check: str = Field(default="", description="What the do-not-repeat check did (recorded, matched, or why not possible).")
    record_file: str | None = None
    reason: str | None = None


def _parse_tolerances(value: object) -> object:
    """Accept ``"loss=0.02,grad_norm=0.1"`` (or ``loss=2%``) as well as a mapping."""
    if isinstance(value, str):
        text = value.strip()
        if text.startswith("{"):
            import json

            return json.loads(text)
        out: dict[str, float] = {}
        for part in text.split(","):
            if not part.strip():
                continue
            name, sep, number = part.partition("=")
            if not sep:
                raise ValueError("tolerances look like metric=fraction pairs, e.g. loss=0.02,grad_norm=0.1")
            n = number.strip()
            out[name.strip()] = float(n.rstrip("%")) / 100.0 if n.endswith("%") else float(n)
        return out
    return value


TolerancesArg = Annotated[dict[str, float], BeforeValidator(_parse_tolerances)]


class CompareLossCurvesInput(ToolInput):
    baseline_log: Path = Field(description="Baseline run's log (GPU, or the earlier run of a repeat); a TensorBoard event file or run directory works too.")
    target_log: Path = Field(description="Target run's log (NPU, or the repeat).")
    profile: Literal["ascend", "ci"] = Field(
        default="ascend",
        description="Standard to hold the curves to: ascend (default; mean relative loss error <= 1 %, first-step loss within "
        "0.5 % or 0.005, grad norm mean relative error <= 10 %) or ci (max relative deviation: loss 2 %, grad norm 10 %, "
        "throughput 5 %, memory 10 %, after the first 5 steps).")
    metrics: CsvStrs | None = Field(default=None, description="Canonical metrics to compare (default: the profile's metrics plus speed/memory metrics found in both logs).")
    tolerances: TolerancesArg = Field(
        default_factory=dict,
        description="Relative limits overriding the profile's, e.g. loss=0.02,grad_norm=0.1; loss.first_step=0.01 for the first-step rule.")
    skip_first: int | None = Field(default=None, ge=0, description="Leave out the first N steps of the overlap (default: the profile's, 0 for ascend, 5 for ci).")
    patience: int = Field(default=1, ge=1, description="Consecutive points over the limit that mark the first divergent step.")
    baseline_run: int | None = Field(default=None, ge=0, description="Run index in the baseline log (default: the longest).")
    target_run: int | None = Field(default=None, ge=0, description="Run index in the target log (default: the longest).")
    plot: Path | None = Field(default=None, description="Write a PNG of both curves and their deviation here.")


class CurveComparison(Model):
    """One metric of baseline vs target, aligned on common steps."""

    metric: str
    kind: Literal["accuracy", "performance"] = Field(description="accuracy metrics decide the verdict; performance ones are reported.")
    status: Literal["identical", "pass", "fail", "na", "reported"] = Field(
        description="pass/fail: the profile's criteria on this metric; reported: compared, no criterion in the profile.")
    tolerance: float | None = Field(default=None, description="Limit of the metric's main criterion (relative).")
    tolerance_source: str = ""
    baseline_noise: float | None = Field(default=None, description="Baseline's relative step-to-step noise (robust sigma of one point).")
    judged_on: Literal["raw", "smoothed"] = Field(default="raw", description="smoothed when the baseline noise exceeds the limit.")
    smoothing_window: int | None = Field(default=None, description="Points of the centred moving average, when smoothed.")
    smoothed_max_rel_dev: float | None = None
    smoothed_mean_rel_dev: float | None = None
    steps_compared: int = 0
    step_range: list[int] | None = None
    skipped_steps: list[int] = Field(default_factory=list, description="Warm-up and the first N steps, left out.")
    alignment: str = ""
    max_rel_dev: float | None = None
    mean_rel_dev: float | None = None
    max_abs_dev: float | None = None
    max_dev_step: int | None = None
    first_divergent_step: int | None = Field(default=None, description="First step where |t-b|/|b| exceeds the tolerance.")
    reason: str | None = None


class CriterionResult(Model):
    """One criterion of the profile: its value, its limit and whether it is met."""

    name: str = Field(description="Machine name: <metric>.<statistic>, e.g. loss.mean_relative_error.")
    label: str = Field(description="The criterion in words, e.g. 'loss mean relative error'.")
    metric: str
    statistic: Literal["mean_relative_error", "max_relative_deviation", "first_step"]
    kind: Literal["accuracy", "performance"]
    status: Literal["pass", "fail", "na"]
    value: float | None = Field(default=None, description="The deciding value (relative; 0.015 = 1.5 %).")
    limit: float = Field(description="Relative limit; value <= limit passes.")
    limit_source: str = ""
    absolute_value: float | None = Field(default=None, description="First step: |target - baseline|.")
    absolute_limit: float | None = Field(default=None, description="First step: also met within this absolute difference.")
    curve: Literal["raw", "smoothed", "first step"] = "raw"
    raw_value: float | None = None
    smoothed_value: float | None = None
    smoothing_window: int | None = None
    step: int | None = Field(default=None, description="Worst step (max deviation) or the first step compared.")
    step_range: list[int] | None = None
    detail: str = Field(default="", description="The comparison in words: '1.50 % > 1 %'.")
    note: str | None = Field(default=None, description="Why smoothed, why N/A, NaN/Inf steps.")


class CompareLossCurvesOutput(ToolOutput):
    """Verdicts: ``identical`` (bit-equal accuracy curves), ``match`` (every accuracy criterion of the
    profile met), ``diverged`` (fails: an accuracy criterion is not met; ``failed_criteria`` names it),
    ``insufficient_data`` (N/A: no common metric or no overlapping steps; not a failure)."""

    failing_verdicts: ClassVar[frozenset[str]] = frozenset({"diverged"})
    inconclusive_verdicts: ClassVar[frozenset[str]] = frozenset({"insufficient_data"})
    verdict: Literal["identical", "match", "diverged", "insufficient_data"]
    baseline_log: str
    target_log: str
    baseline_format: str = ""
    target_format: str = ""
    baseline_device: str | None = None
    target_device: str | None = None
    comparison: Literal["cross_platform", "same_platform", "unknown"] = "unknown"
    determinism: str | None = Field(default=None, description="For two runs on one platform: bit-identical or the size of the run-to-run noise.")
    profile: str = Field(default="ascend", description="Named standard the curves were held to (ascend | ci).")
    profile_title: str = ""
    profile_description: str = ""
    criteria: list[CriterionResult] = Field(default_factory=list, description="Every criterion of the profile, with value, limit, pass/fail.")
    failed_criteria: list[str] = Field(default_factory=list, description="Labels of the accuracy criteria that failed.")
    performance_failed: list[str] = Field(default_factory=list, description="Labels of performance criteria outside their limits (reported, not in the verdict).")
    step_units: dict[str, str] = Field(default_factory=dict, description="What each log's step numbers count: baseline/target -> iteration | epoch | record.")
    warnings: list[str] = Field(default_factory=list, description="Step units, intervals or ranges that differ; baseline noise above a limit.")
    metrics: list[CurveComparison] = Field(default_factory=list)
    first_divergent_step: int | None = None
    first_divergent_metric: str | None = None
    plot_path: str | None = None
    plot_note: str | None = None


class CompareRunConfigsInput(ToolInput):
    baseline: Path = Field(description="Baseline run's log or config file (YAML/JSON/python config, Megatron log with its argument dump, mmcv log with its Config dump, trainer_state.json).")
    target: Path = Field(description="Target run's log or config file.")
    ignore: list[str] = Field(default_factory=list, description="Canonical settings to leave out (e.g. world_size when the card count legitimately differs).")


ConfigStatus = Literal["same", "different", "baseline_only", "target_only"]


class ConfigDiff(Model):
    """One hyper-parameter on both sides."""

    name: str = Field(description="Canonical name (lr, global_batch_size, tensor_parallel, precision, flash_attention...).")
    status: ConfigStatus
    baseline: object = None  # a setting's value as its source states it: number, text, yes/no or a list
    target: object = None
    baseline_key: str | None = Field(default=None, description="Key as the baseline source spells it.")
    target_key: str | None = None


class CompareRunConfigsOutput(ToolOutput):
    """Verdicts: ``consistent`` (every setting found on both sides agrees), ``mismatch`` (fails: a
    setting differs, so curve comparisons are not like for like), ``insufficient_data`` (N/A: no
    common setting could be read)."""

    failing_verdicts: ClassVar[frozenset[str]] = frozenset({"mismatch"})
    inconclusive_verdicts: ClassVar[frozenset[str]] = frozenset({"insufficient_data"})
    verdict: Literal["consistent", "mismatch", "insufficient_data"]
    baseline: str
    target: str
    baseline_source: str = ""
    target_source: str = ""
    diffs: list[ConfigDiff] = Field(default_factory=list)
