"""Models of the layer-level diagnosis: where a migrated run first goes wrong and why.

Owned by the diagnosis work (issue 3); ``compare_dumps`` embeds these in its output. Contract
fields: ``FirstDivergence.name`` and ``Diagnosis.category``.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from acc_agent.models.common import Model

DiagnosisCategory = Literal[
    "input_mismatch", "precision_accumulation", "layer_mismatch", "operator_fault", "no_layer_fault"
]


class FirstDivergence(Model):
    """The first tensor/module whose error exceeds what precision explains while its inputs are clean."""

    name: str = Field(description="Row name (msprobe data_name without extension) of the first tensor at fault.")
    index: int = Field(description="Position of that row in the compared rows.")
    module: str | None = Field(default=None, description="The module/API call that produced it (dump.json key).")
    input_metrics: dict[str, float | None] = Field(
        default_factory=dict, description="Metrics of the worst input of that module (incoming error)."
    )
    output_metrics: dict[str, float | None] = Field(default_factory=dict, description="Metrics of its worst output.")
    input_names: list[str] = Field(default_factory=list, description="Rows taken as the module's inputs.")
    amplification: float | None = Field(
        default=None, description="Output relative error / incoming relative error (null when the inputs are exact)."
    )
    reason: str = ""
    direction: Literal["forward", "backward"] = Field(
        default="forward", description="The pass the divergence is in: forward or backward.")
    argument: str | None = Field(
        default=None, description="Where the difference enters when it is not the operator's own computation: "
                                  "the argument of `module` (e.g. input.1, a kwarg, a scalar) that already differs.")
    enters_through: Literal["operator", "argument", "between_operators", "data_input", "overflow"] = Field(
        default="operator", description="operator: clean inputs, wrong output; argument: an input no dumped "
        "operator produced (weight, buffer, mask, scalar) differs; between_operators: an input differs from the "
        "dumped output it is (a hook, an in-place change or an undumped operator in between); data_input: the "
        "network's input; overflow: first operator with finite inputs and Inf/NaN outputs.")
    difference: str | None = Field(default=None, description="What differs about that argument, as measured "
                                                             "(transposed, a constant factor, another value...).")
    rank: str | None = Field(default=None, description="Rank folder (e.g. rank1) of a multi-rank dump where the "
                                                       "divergence starts.")
    rank_key: str | None = Field(default=None, description="Full rank key of that folder (e.g. step0/rank1).")
    step: int | None = Field(default=None, description="Training step (msprobe's step folder) where the divergence "
                                                       "starts, in a dump of several steps; the earliest diverging "
                                                       "step is named.")
    enclosing_modules: list[str] = Field(default_factory=list,
                                         description="Modules containing the operator, innermost first.")


class RankFinding(Model):
    """One rank's answer in a multi-rank comparison."""

    rank: str
    step: int | None = Field(default=None, description="msprobe step folder of this dump, when it has one.")
    status: Literal["clean", "diverges", "via_collective", "not_judged"]
    first_divergence: str | None = None
    module: str | None = None
    category: str | None = None
    position: int | None = Field(default=None, description="Execution position of the first divergence.")


class InputTransform(Model):
    """A transformation under which the target tensor equals the golden one (measured, not guessed)."""

    row: str
    kind: str = Field(description="identity | channel_reverse | permute | reshape | permute_reshape | affine | "
                                  "channel_affine | channel_reverse+affine | channel_reverse+channel_affine")
    description: str
    residual: float = Field(description="Relative L2 error left after the transformation.")
    params: dict[str, object] = Field(default_factory=dict)


class LayerGrowth(Model):
    """A module where the error grew: how much it multiplied its incoming error."""

    module: str
    name: str
    input_error: float | None
    output_error: float | None
    growth: float | None


class Diagnosis(Model):
    category: DiagnosisCategory
    explanation: str = ""
    next_actions: list[str] = Field(default_factory=list)
    details: dict[str, object] = Field(default_factory=dict)
    judged_against: Literal["bench", "dtype_budget"] = "dtype_budget"
    judgement_note: str = Field(default="", description="How rows were judged and how strong that judgement is.")
    transforms: list[InputTransform] = Field(
        default_factory=list, description="Transformations that explain a mismatching pair (input or middle tensor)."
    )
    growth_layers: list[LayerGrowth] = Field(
        default_factory=list, description="Modules where the error grew fastest (precision accumulation)."
    )
    rows_beyond_precision: int = 0
    rows_judged: int = 0
    pass_walked: Literal["forward", "backward"] = Field(
        default="forward", description="Which pass the first divergence was searched in (backward only when the "
                                       "forward pass agrees).")
    ranks: list[RankFinding] = Field(default_factory=list, description="Per-rank answers (multi-rank dumps).")
    compared_by: Literal["tensor", "statistics", "md5", "mixed", "none"] = Field(
        default="tensor", description="What the rows were judged on: tensor data, dump.json statistics "
                                      "(Max/Min/Mean/Norm), md5 digests, or a mix.")
