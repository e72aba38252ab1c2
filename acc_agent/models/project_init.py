"""Models of ``init_project``: what may be known when a migration project starts, and the file written.

Why apart from :mod:`acc_agent.models.project`: that module is the project file itself; these are
the arguments that fill its template, named as the other tools name them (``dumps`` as
compare_dumps takes them), so an agent can hand over what it already knows.
"""

from __future__ import annotations

from typing import ClassVar, Literal

from pydantic import Field

from acc_agent.models.common import Model, ToolInput, ToolOutput


class DumpPaths(Model):
    """The three dumps, named as compare_dumps takes them."""

    golden: str = Field(default="", description="Dump folder of the trusted (GPU/CPU) run.")
    target: str = Field(default="", description="Dump folder of the NPU run.")
    bench: str = Field(default="", description="Baseline hardware at the target precision.")


class InitProjectInput(ToolInput):
    folder: str = Field(default=".", description="Project folder; mig.yaml is written there.")
    force: bool = Field(default=False, description="Overwrite an existing mig.yaml.")
    name: str = Field(default="", description="Project and model name. Default: the folder's name.")
    mode: Literal["train", "inference", "both"] | None = Field(default=None, description="What the project runs.")
    target_precision: Literal["fp16", "bf16", "fp32"] | None = Field(
        default=None, description="NPU precision; sets the reference rtol/atol (template default fp16).")
    dumps: DumpPaths | None = Field(default=None, description="msprobe dumps: golden, target, bench.")
    artefacts: dict[str, str] = Field(
        default_factory=dict,
        description="Other artefact paths by mig.yaml key. E.g. target_log, baseline_log, golden_outputs, "
        "target_outputs, baseline_perf, target_perf, npu_smi; relative to the folder.",
    )


class InitProjectOutput(ToolOutput):
    """Verdict ``written``: the project file exists now (refusals are errors, not verdicts)."""

    failing_verdicts: ClassVar[frozenset[str]] = frozenset()

    verdict: Literal["written"] = "written"
    path: str = Field(description="The mig.yaml written.")
    filled: list[str] = Field(default_factory=list, description="Keys set from the arguments.")
    empty_artefacts: list[str] = Field(default_factory=list, description="Artefact keys still empty.")
    next_step: str = Field(default="", description="What to do next.")
