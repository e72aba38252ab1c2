"""Models of ``select_baseline``, its input and output: where the accuracy/performance baseline comes from.

``source`` is the public contract: ``project_log`` (a complete project log, quoted with path and
line range), ``gpu_measured`` (the user runs the Mig_Readme §2.6 commands on a GPU), ``cpu_log``
(only when the project asks for CPU or the log itself is a CPU log) or ``na`` (no GPU available and
no usable log: the comparison is paused, with the reason).
"""

from __future__ import annotations

from pathlib import Path
from typing import ClassVar, Literal

from pydantic import Field

from acc_agent.models.common import Model, ToolInput, ToolOutput

BaselineSource = Literal["project_log", "gpu_measured", "cpu_log", "na"]


class SelectBaselineInput(ToolInput):
    project_dir: Path = Field(description="Root of the project to scan for training logs.")
    metric: str | None = Field(default=None, description="Acceptance metric, canonical name (default loss). E.g. loss, eval_loss, eval_acc1, throughput.")
    dataset: str | None = Field(default=None, description="Acceptance dataset name. A log that never mentions it does not qualify.")
    batch_size: int | None = Field(default=None, ge=1, description="Acceptance batch size. Global or per device, as the log prints it.")
    gpu_available: Literal["yes", "no", "unknown"] = Field(default="unknown", description="Can the user run a GPU baseline? Ask; 'no' gives na when no project log qualifies.")
    cpu_requested: bool = Field(default=False, description="The project asks for a CPU baseline.")
    entry: str | None = Field(default=None, description="Entry script for the GPU commands. Relative to project_dir; default: detected (train.py, main.py, infer.py...).")
    max_files: int = Field(default=2000, ge=1, description="Stop scanning after this many candidate files.")


class BaselineCandidate(Model):
    """One log found in the project and how it measures up as a baseline."""

    path: str
    format: str
    run: int | None = None
    device: str | None = None
    device_evidence: str = ""
    line_range: list[int] | None = None
    first_step: int | None = None
    last_step: int | None = None
    points: int = 0
    metrics: list[str] = Field(default_factory=list)
    complete: bool = False
    completeness: str = Field(default="", description="Why the run counts (or not) as complete.")
    matches: dict[str, bool | None] = Field(default_factory=dict, description="metric / dataset / batch / hardware agreement; null = not stated.")
    score: float = 0.0
    qualifies: bool = False
    reasons: list[str] = Field(default_factory=list, description="Why it does not qualify, if it does not.")


class CommandRow(Model):
    """One row of the Mig_Readme §2.6 baseline-side call-interface table."""

    scenario: str
    device: str
    entry: str
    key_parameters: str
    command: str
    aligns_with: str = Field(description="Which Mig_Readme §3.1 row this run aligns with.")
    notes: str = ""


class SelectBaselineOutput(ToolOutput):
    """``verdict`` equals ``source``; none of them is a failure (``na`` is an explained N/A)."""

    failing_verdicts: ClassVar[frozenset[str]] = frozenset()
    verdict: BaselineSource
    source: BaselineSource
    log_path: str | None = None
    reason: str
    line_range: list[int] | None = Field(default=None, description="[first, last] line of the quoted run; null for JSON logs (whole file).")
    quote: list[str] = Field(default_factory=list, description="First and last metric lines of the quoted range, verbatim.")
    device: str | None = None
    entry: str | None = Field(default=None, description="Project entry script the Mig_Readme §2.6 commands were built from.")
    commands: list[CommandRow] = Field(default_factory=list, description="Mig_Readme §2.6 rows (filled when no project log qualifies).")
    candidates: list[BaselineCandidate] = Field(default_factory=list)
    scanned_files: int = 0
    skipped: list[str] = Field(default_factory=list, description="Files that could not be read as logs, with the reason.")
