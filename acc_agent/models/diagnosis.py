"""Models of the layer-level diagnosis: where a migrated run first goes wrong and why.

Owned by the diagnosis work (issue 3); ``compare_dumps`` embeds these in its output.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

DiagnosisCategory = Literal[
    "input_mismatch", "precision_accumulation", "layer_mismatch", "operator_fault", "no_layer_fault"
]


class FirstDivergence(BaseModel):
    """The first tensor/module whose error exceeds what precision explains while its inputs are clean."""

    name: str
    index: int
    module: str | None = None
    input_metrics: dict[str, float | None] = Field(default_factory=dict)
    output_metrics: dict[str, float | None] = Field(default_factory=dict)
    amplification: float | None = Field(default=None, description="Output error / incoming error.")
    reason: str = ""


class Diagnosis(BaseModel):
    category: DiagnosisCategory
    explanation: str = ""
    next_actions: list[str] = Field(default_factory=list)
    details: dict[str, object] = Field(default_factory=dict)
    judged_against: Literal["bench", "dtype_budget"] = "dtype_budget"
