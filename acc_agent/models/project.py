"""The migration project file ``mig.yaml``: what the deliverables are rendered from.

Why a model: the reports must say where every number comes from, so the project file names the
artefacts (logs, dumps, golden outputs, timings) and the thresholds once, and every document reads
them from here. Validation errors name the YAML line and the field so an engineer can fix the
file without reading this code.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import ConfigDict, Field, field_validator, model_validator

from acc_agent.models.common import Model
from acc_agent.models.tolerance import TABLE  # the one reference table compare-tensors uses too

Precision = Literal["fp16", "bf16", "fp32"]
Purpose = Literal["short_run", "smoke", "golden", "full", "training", "inference_acceptance"]



class _Strict(Model):
    model_config = ConfigDict(extra="forbid")


class ProjectInfo(_Strict):
    name: str = Field(description="Project name as reviewers know it.")
    owner: str = Field(default="", description="Who owns the migration.")
    repository: str = Field(default=".", description="Repository path or URL of the migrated code.")
    branch: str = Field(default="", description="Branch or tag of the migrated code.")
    date: str = Field(default="", description="The project's own date (YYYY-MM-DD), shown labelled as such; "
                                          "reports carry the date they were generated.")


class ModelInfo(_Strict):
    name: str
    framework: Literal["pytorch", "mindspore"] = "pytorch"
    mode: Literal["train", "inference", "both"] = "both"
    chip: str = Field(default="", description="Ascend chip, e.g. 910B4.")
    target_precision: Precision = "fp16"
    baseline_hardware: str = Field(default="", description="Baseline side hardware, e.g. A100 or CPU.")
    baseline_framework: str = Field(default="", description="Baseline framework and version.")
    batch_size: int | None = Field(default=None, ge=1)
    io_contract: list[dict[str, str]] = Field(default_factory=list, description="Rows of name, shape, dtype.")


class Entry(_Strict):
    train: str = Field(default="", description="Training launch command on the NPU.")
    inference: str = Field(default="", description="Inference command on the NPU.")
    baseline_train: str = Field(default="", description="Training command on the baseline GPU (Mig_Readme §2.6).")
    baseline_inference: str = Field(default="", description="Inference command on the baseline GPU (Mig_Readme §2.6).")
    checkpoint: str = ""
    parameters: list[dict[str, str]] = Field(default_factory=list, description="Rows of parameter, meaning, default.")


class DatasetRow(_Strict):
    """One row of Mig_Readme §3.1 (dataset ↔ test purpose), repeated verbatim in Compare and Mig_report."""

    purpose: Purpose
    dataset: str
    subset: str = ""
    same_as_baseline: bool | None = None
    path: str = ""
    notes: str = ""


class Thresholds(_Strict):
    short_run_band: tuple[float, float] = (0.3, 0.5)
    short_run_window: str = Field(default="", description="START:END steps of the short-run window; empty = whole log.")
    flat_steps_limit: int = Field(default=500, ge=1, description="Beyond this many steps without improvement, suspect code/data.")
    loss_metric: str = "loss"
    rtol: float | None = Field(default=None, gt=0, description="Empty = the reference for the target precision.")
    atol: float | None = Field(default=None, gt=0)
    latency_p50_ms: float | None = Field(default=None, gt=0, description="Acceptance KPI; empty = no latency KPI.")
    throughput: float | None = Field(default=None, gt=0)
    accuracy_metric: str = ""
    accuracy_target: str = ""

    @field_validator("short_run_band")
    @classmethod
    def _band_order(cls, v: tuple[float, float]) -> tuple[float, float]:
        if not 0 < v[0] < v[1] < 1:
            raise ValueError("short_run_band must be two fractions 0 < low < high < 1, e.g. [0.3, 0.5]")
        return v

    @field_validator("short_run_window")
    @classmethod
    def _window(cls, v: str) -> str:
        if v:
            parts = v.split(":")
            if len(parts) != 2 or not all(p.strip().isdigit() for p in parts) or int(parts[0]) >= int(parts[1]):
                raise ValueError("short_run_window must be START:END with START < END, e.g. 1:100")
        return v


class Performance(_Strict):
    triggered: bool = Field(default=False, description="The user asked for performance work, or acceptance has a KPI.")
    reason: str = Field(default="", description="Why performance is (not) measured.")
    scope: Literal["end_to_end", "device_only", "segmented"] = "end_to_end"
    batch_sizes: list[int] = Field(default_factory=lambda: [1])
    concurrency: str = "sequential, one request at a time"
    warmup: int = Field(default=10, ge=0)
    iterations: int = Field(default=100, ge=1)
    reproducibility: str = Field(default="", description="Data split, preprocessing, seed, input layout, output check.")
    stages: list[dict[str, str]] = Field(default_factory=list, description="Compare.md §4.1 per-stage timing rows: stage, time_ms, source.")
    bottleneck: str = ""


class Dumps(_Strict):
    """The msprobe dumps compare_dumps compares, named as its arguments are (``golden``, ``target``, ``bench``)."""

    golden: str = Field(default="", description="Dump folder (contains dump.json) of the trusted run.")
    target: str = Field(default="", description="Dump folder of the NPU run.")
    bench: str = Field(default="", description="Optional: the baseline hardware at the target precision.")
    mapping: str = Field(default="", description="Optional: YAML file pairing renamed target tensors with golden "
                                                 "ones (target_name: golden_name), as compare_dumps takes it.")


#: Dump keys of earlier project files, still accepted: old key -> key under ``artefacts.dumps``.
LEGACY_DUMP_KEYS = {"golden_dump": "golden", "target_dump": "target", "bench_dump": "bench"}


class Artefacts(_Strict):
    """Where the inputs of each skill are; relative paths are relative to mig.yaml's folder.

    The dumps sit under ``dumps`` with the names compare_dumps takes, so a project file, a CLI
    line and an MCP call say ``golden`` / ``target`` / ``bench`` alike. Earlier files wrote
    ``golden_dump`` / ``target_dump`` / ``bench_dump`` at this level; those are still read.
    """

    baseline_log: str = ""
    target_log: str = ""
    baseline_log_is_cpu: bool = False
    dumps: Dumps = Field(default_factory=Dumps)
    golden_outputs: str = ""
    target_outputs: str = ""
    baseline_perf: str = ""
    target_perf: str = ""
    npu_smi: str = ""
    nvidia_smi: str = ""
    gpu_available: bool | None = Field(default=None, description="Whether the user can run the GPU baseline.")
    results: dict[str, str] = Field(default_factory=dict, description="Saved JSON results by tool name.")
    profiling: str = ""

    @model_validator(mode="before")
    @classmethod
    def _legacy_dump_keys(cls, data: object) -> object:
        """Move ``golden_dump``-style keys into ``dumps``; the same dump given both ways must agree."""
        if not isinstance(data, dict) or not any(k in data for k in LEGACY_DUMP_KEYS):
            return data
        fields: dict[object, object] = dict(data)
        given = fields.get("dumps")
        if given is not None and not isinstance(given, dict):
            return fields  # the model reports the type error on ``dumps`` itself
        dumps: dict[object, object] = dict(given) if isinstance(given, dict) else {}
        for old, new in LEGACY_DUMP_KEYS.items():
            if old not in fields:
                continue
            value = fields.pop(old)
            if dumps.get(new) not in (None, "", value) and value not in (None, ""):
                raise ValueError(f"{old} and dumps.{new} name different dumps; keep only dumps.{new}")
            if value not in (None, "") or new not in dumps:
                dumps[new] = value
        fields["dumps"] = dumps
        return fields

    # Read-only views under the earlier names, for readers written before ``dumps`` existed.
    @property
    def golden_dump(self) -> str:
        return self.dumps.golden

    @property
    def target_dump(self) -> str:
        return self.dumps.target

    @property
    def bench_dump(self) -> str:
        return self.dumps.bench


class Evidence(_Strict):
    """A human-attested fact for Mig_report §6 (e.g. code migration done): ticked only with a reference."""

    done: bool = False
    ref: str = Field(default="", description="Commit, log path or command proving it; required to tick.")

    @model_validator(mode="after")
    def _needs_ref(self) -> Evidence:
        if self.done and not self.ref.strip():
            raise ValueError("done: true needs a ref (commit, log or command) as evidence")
        return self


class Project(_Strict):
    project: ProjectInfo
    model: ModelInfo
    entry: Entry = Field(default_factory=Entry)
    datasets: list[DatasetRow] = Field(default_factory=list)
    thresholds: Thresholds = Field(default_factory=Thresholds)
    performance: Performance = Field(default_factory=Performance)
    artefacts: Artefacts = Field(default_factory=Artefacts)
    changes: list[dict[str, str]] = Field(default_factory=list, description="Mig_report.md §5 change list rows: area, change.")
    risks: list[dict[str, str]] = Field(default_factory=list, description="Rows of risk, level, mitigation.")
    problems: list[dict[str, str]] = Field(default_factory=list, description="Mig_report.md §7.1 problem log rows.")
    attested: dict[Literal["code_migration", "npu_load", "inference_smoke", "training_smoke", "full_accuracy"], Evidence] = Field(
        default_factory=dict)

    # Not part of the YAML: where it was loaded from, for resolving relative paths.
    base_dir: Path = Field(default=Path("."), exclude=True)

    def tolerance(self) -> tuple[float, float, str]:
        """rtol, atol and where they came from (the project file or the precision reference)."""
        ref_rtol, ref_atol, _ = TABLE[self.model.target_precision]
        rtol = self.thresholds.rtol if self.thresholds.rtol is not None else ref_rtol
        atol = self.thresholds.atol if self.thresholds.atol is not None else ref_atol
        given = self.thresholds.rtol is not None or self.thresholds.atol is not None
        src = "mig.yaml thresholds" if given else f"reference for {self.model.target_precision}"
        return rtol, atol, src

    def resolve(self, rel: str) -> Path | None:
        """The artefact path, or None when not configured."""
        if not rel:
            return None
        p = Path(rel).expanduser()
        return p if p.is_absolute() else (self.base_dir / p)
