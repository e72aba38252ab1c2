"""Models of ``detect_nondeterminism``: two dumps of the same run compared bit for bit."""

from __future__ import annotations

from typing import ClassVar, Literal

from pydantic import Field

from acc_agent.models.common import Model, ToolInput, ToolOutput


class DetectNondeterminismInput(ToolInput):
    run_a: str = Field(description="First dump of the run: msprobe dump.json, its rank folder, or a folder of .npy "
                                   "files.")
    run_b: str = Field(description="Second dump of the same run, same platform and same input.")
    mapping: str | None = Field(default=None, description="YAML name mapping run_b -> run_a. As for compare_dumps, "
                                                          "when the two runs name tensors differently.")
    top: int = Field(default=50, ge=1, description="Entries listed inline, first ones first.")


class NondeterministicEntry(Model):
    name: str
    index: int = Field(description="Execution order in run_b.")
    module: str = Field(description="Module/API call (dump.json key) the tensor belongs to.")
    role: str
    differing_ratio: float | None = Field(default=None, description="Share of elements whose bits differ.")
    max_abs_err: float | None = None
    rel_l2_err: float | None = None
    origin: bool = Field(default=False, description="Inputs bit-identical, outputs not: the module that "
                                                    "introduces the randomness.")
    note: str = ""


class DetectNondeterminismOutput(ToolOutput):
    failing_verdicts: ClassVar[frozenset[str]] = frozenset({"nondeterministic", "error"})

    verdict: Literal["deterministic", "nondeterministic", "error"]
    run_a: str
    run_b: str
    compared: int = 0
    identical: int = 0
    first_nondeterministic: str | None = Field(default=None, description="Row name of the first tensor that differs.")
    origins: list[str] = Field(default_factory=list, description="Modules whose inputs match bit for bit but whose "
                                                                 "outputs do not, in execution order.")
    entries: list[NondeterministicEntry] = Field(default_factory=list)
    entries_total: int = 0
    unmatched_a: list[str] = Field(default_factory=list)
    unmatched_b: list[str] = Field(default_factory=list)
    next_actions: list[str] = Field(default_factory=list)
