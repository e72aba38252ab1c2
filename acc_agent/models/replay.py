"""Models of the localisation's last steps: ``replay_op`` (kernel or inputs?) and ``bisect_precision``."""

from __future__ import annotations

from typing import ClassVar, Literal

from pydantic import Field

from acc_agent.models.common import Model, ToolInput, ToolOutput


class ReplayOpInput(ToolInput):
    golden: str = Field(description="Golden msprobe dump (tensor mode): dump.json, its rank folder or the dump root.")
    target: str = Field(description="Target msprobe dump (tensor mode), same forms as GOLDEN.")
    op: str = Field(description="The call to re-run, as compare_dumps names it (Functional.gelu.1.forward); a row "
                                "name (…forward.output.0) is accepted.")
    rank: str | None = Field(default=None, description="Rank folder key (step0/rank1) when the dumps hold several.")
    bundle: str | None = Field(default=None, description="Write the vendor reproduction (tensors, arguments, "
                                                         "metrics, README, repro.py) into this folder.")
    environment: str | None = Field(default=None, description="Environment snapshot JSON (check_environment) to "
                                                              "put into the bundle.")
    lang: Literal["en", "zh"] = Field(default="en", description="Language of the bundle's README.")


class Closeness(Model):
    """One output against another: relative L2 error, cosine and largest absolute difference (None: shapes differ)."""

    rel_l2_err: float | None = None
    cosine: float | None = None
    max_abs_err: float | None = None
    within: bool = Field(default=False, description="rel_l2_err within the replay tolerance.")


class ArgumentDiff(Model):
    """A recorded input or argument of the call that differs between the two runs."""

    argument: str = Field(description="input.0, input.weight, input.1.0 (nested list), ...")
    kind: Literal["tensor", "scalar"]
    golden: str = Field(description="The golden's value (scalars) or shape/dtype (tensors).")
    target: str
    rel_l2_err: float | None = Field(default=None, description="Tensors: the target's relative L2 error.")


class ReplayOpOutput(ToolOutput):
    """Whether the first diverging call's kernel or its inputs are at fault, from a CPU re-run."""

    failing_verdicts: ClassVar[frozenset[str]] = frozenset()
    inconclusive_verdicts: ClassVar[frozenset[str]] = frozenset({"not_reproducible"})

    verdict: Literal["operator", "inputs", "not_reproducible"]
    op: str
    rank: str | None = None
    fault_enters: Literal["operator", "inputs", "not_reproducible"] = Field(
        description="operator: the re-run from the target's inputs gives the golden's output and not the target's "
                    "(the kernel is at fault); inputs: it reproduces the target's output (the difference came in "
                    "through inputs or arguments, listed in differing_inputs); not_reproducible: neither (reason).")
    reason: str
    dtype: str | None = Field(default=None, description="Recorded dtype of the output compared.")
    tolerance: float = Field(description="Largest relative L2 error counted as the same result.")
    replay_check: Closeness = Field(description="Re-run from the GOLDEN's inputs vs the golden's output: shows the "
                                                "CPU replay is faithful.")
    replay_vs_target: Closeness = Field(description="Re-run from the target's inputs vs the target's output.")
    replay_vs_golden: Closeness = Field(description="Re-run from the target's inputs vs the golden's output.")
    target_vs_golden: Closeness = Field(description="The recorded outputs against each other.")
    differing_inputs: list[ArgumentDiff] = Field(default_factory=list)
    bundle: str | None = Field(default=None, description="Folder with the vendor reproduction (repro.py, tensors).")
    next_actions: list[str] = Field(default_factory=list)


class BisectPrecisionInput(ToolInput):
    model: str = Field(description="FILE.py:FUNC or package.module:FUNC; FUNC() returns (model, example_inputs) "
                                   "with example_inputs a tuple of positional arguments or a dict of keyword ones.")
    low: Literal["bf16", "fp16"] = Field(default="bf16", description="The low precision to run layers in.")
    tolerance: float | None = Field(default=None, gt=0, description="Largest relative L2 error of the model output "
                                                                     "accepted (default: 5 unit roundoffs of LOW: "
                                                                     "0.0195 for bf16, 0.00244 for fp16).")


class BisectStep(Model):
    """One evaluation of the search: which modules stayed in high precision and the output error."""

    step: str = Field(description="all_low | single:<module> | add:<module> | drop:<module>")
    keep_high_precision: list[str]
    output_rel_err: float


class BisectPrecisionOutput(ToolOutput):
    """A minimal set of modules to keep in FP32 so that a low-precision model stays within tolerance."""

    inconclusive_verdicts: ClassVar[frozenset[str]] = frozenset({"no_eligible_layers"})
    failing_verdicts: ClassVar[frozenset[str]] = frozenset({"not_reached"})

    verdict: Literal["all_low_ok", "keep_set_found", "not_reached", "no_eligible_layers"]
    low: Literal["bf16", "fp16"]
    tolerance: float = Field(description="Largest relative L2 error of the model output accepted.")
    eligible: list[str] = Field(default_factory=list, description="Modules that were cast (with weights: linear, "
                                                                  "conv, embedding, norms, attention).")
    keep_high_precision: list[str] = Field(default_factory=list)
    error_all_low: float = Field(description="Output relative L2 error with every eligible module low.")
    error_with_keep_set: float | None = Field(default=None, description="The same with keep_high_precision in FP32.")
    sensitivity: dict[str, float] = Field(default_factory=dict, description="Output error with only that module low.")
    steps: list[BisectStep] = Field(default_factory=list)
