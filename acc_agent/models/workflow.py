"""What one run of the configured skills produced: each slot's typed tool output, or why it has none.

Why a model of its own: the application layer fills it and the renderer reads it, so both agree
on one typed shape. A slot holds the tool's own output model (``CompareTensorsOutput``...), never
a dict, so a renamed field breaks the type check instead of printing N/A in a report.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal, TypeVar

from acc_agent.models.common import ToolOutput
from acc_agent.models.project import Project

Status = Literal["ok", "saved", "missing_input", "error", "not_applicable"]
#: What a plan passes a tool: a path or word, a number, a switch, or a list of numbers (a band).
OptionValue = str | int | float | bool | list[float]
#: The verdicts accuracy and performance reach, and the one the migration as a whole gets.
Acceptance = Literal["met", "not_met"]
Overall = Literal["pass", "fail", "pass_with_conditions", "na"]
#: Mig_report §6 boxes, in the order the report lists them.
BoxKey = Literal["code_migration", "npu_load", "inference_smoke", "golden", "training_smoke", "short_run",
                 "formal_training", "full_accuracy", "performance"]
#: What ticks (or would tick) a box: a reference in mig.yaml ``attested``, a tool's result, or nothing yet.
BoxBasis = Literal["attested", "tool", "none"]

OutputT = TypeVar("OutputT", bound=ToolOutput)


@dataclass
class SkillResult:
    """What one skill produced for the reports, or why it could not."""

    slot: str
    tool: str
    status: Status
    command: str
    output: ToolOutput | None = None
    reason: str = ""
    source: str = ""
    why_key: str = ""  # i18n key of ``reason`` so reports can say it in the document's language
    why_args: dict[str, str] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return self.status in ("ok", "saved") and self.output is not None

    @property
    def verdict(self) -> str | None:
        return self.output.verdict if self.ok and self.output is not None else None

    def output_as(self, kind: type[OutputT]) -> OutputT | None:
        """The output when the slot produced one of ``kind`` (the tool the slot runs), else None."""
        out = self.output
        return out if self.ok and isinstance(out, kind) else None

    def na(self) -> str:
        """'N/A — why (run: command)' for a gap."""
        return f"{self.reason} — run `{self.command}`" if self.command else self.reason


@dataclass
class SkillPlan:
    """How to run one slot: the tool, its arguments, and which artefacts it needs."""

    slot: str
    tool: str
    positional: list[str]
    options: dict[str, OptionValue]
    needs: dict[str, str]  # artefacts field -> configured value (empty = not configured)


@dataclass(frozen=True)
class Box:
    """One Mig_report §6 box: ticked only when ``basis`` names evidence that supports it."""

    key: BoxKey
    ticked: bool
    basis: BoxBasis
    attested_ref: str = ""  # mig.yaml attested.<key>.ref when basis is "attested"


@dataclass(frozen=True)
class Verdicts:
    """The acceptance decisions the reports state, taken once from the results (see app/verdicts.py)."""

    golden: str | None  # compare_tensors' verdict, None when it did not run
    golden_nan_free: bool | None  # no NaN/Inf in any target output; None when nothing was compared
    dumps: str | None  # compare_dumps' verdict, None when it did not run
    short_run: str | None
    short_run_met: bool
    curves: str | None
    first_loss_finite: bool  # the target log's first loss value is a finite number
    kpi_batch: int | None  # the batch size the latency KPI is judged at
    kpi: Acceptance | None  # the NPU p50 against mig.yaml's latency KPI
    baseline_performance: str | None  # compare_performance's verdict
    accuracy: Acceptance | None
    performance: Acceptance | None
    overall: Overall
    boxes: tuple[Box, ...]


@dataclass(frozen=True)
class ArrayFacts:
    """One saved output array as the golden table describes it."""

    shape: list[int]
    dtype: str
    non_finite: int  # NaN and Inf elements
    finite_mean: float | None  # None when no element is finite
    finite_max: float | None


@dataclass(frozen=True)
class GoldenArrays:
    """The arrays of the golden check's two output files, read by the application layer.

    ``keys``: the golden file's array names (sorted), or the compared outputs' names when that file
    cannot be listed; ``golden``/``target``: the facts of each array that could be read.
    """

    keys: list[str] = field(default_factory=list)
    golden: dict[str, ArrayFacts] = field(default_factory=dict)
    target: dict[str, ArrayFacts] = field(default_factory=dict)


@dataclass
class WorkflowResult:
    project: Project
    results: dict[str, SkillResult]
    verdicts: Verdicts  # decided once every slot has its result
    golden_arrays: GoldenArrays = field(default_factory=GoldenArrays)

    def get(self, slot: str) -> SkillResult:
        return self.results[slot]
