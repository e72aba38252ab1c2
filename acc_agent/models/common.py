"""Pieces every tool model shares: the output base, evidence, and CLI-friendly list types.

Every output carries ``verdict`` + ``summary`` + ``evidence`` so that nothing a report prints is
unsourced, and so front ends (CLI exit codes, MCP, reports) can treat all tools alike.
"""

from __future__ import annotations

import json
from typing import Annotated, Any, ClassVar

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field


def _split_csv(value: Any) -> Any:
    """Accept ``"1,8"`` or ``"[1, 8]"`` from a command line as well as a real list."""
    if isinstance(value, str):
        text = value.strip()
        if text.startswith("["):
            return json.loads(text)
        return [part.strip() for part in text.split(",") if part.strip()]
    return value


CsvInts = Annotated[list[int], BeforeValidator(_split_csv)]
CsvFloats = Annotated[list[float], BeforeValidator(_split_csv)]
CsvStrs = Annotated[list[str], BeforeValidator(_split_csv)]


class Model(BaseModel):
    """Base of acc-agent's models: schemas are built on first use, not at import.

    Deferring keeps ``acc-agent --help`` fast: the CLI only reads field declarations, and most
    invocations validate a handful of models out of the dozens the tools declare.
    """

    model_config = ConfigDict(defer_build=True)


class ToolInput(Model):
    """Base of every tool input: unknown fields are refused so that typos surface."""

    model_config = ConfigDict(extra="forbid", defer_build=True)


class Evidence(Model):
    """One input a result was computed from: a file, a step range, a threshold, a command."""

    kind: str = Field(description="file | steps | threshold | command | setting | environment")
    ref: str = Field(description="Path, step range, value or command line, as a reviewer would quote it.")
    detail: str = Field(default="", description="What was taken from it.")


class ToolOutput(Model):
    """Base of every tool output.

    ``failing_verdicts`` lists the verdicts that make the CLI exit with code 1;
    ``inconclusive_verdicts`` those that exit with code 3 (nothing could be judged, so neither "pass"
    nor "fail" would be honest, and a script must not read it as either). Subclasses narrow
    ``verdict`` to their documented set.
    """

    failing_verdicts: ClassVar[frozenset[str]] = frozenset({"fail"})
    inconclusive_verdicts: ClassVar[frozenset[str]] = frozenset()

    verdict: str = Field(description="Short machine-readable outcome from the tool's documented set.")
    summary: str = Field(description="One line a human can read.")
    evidence: list[Evidence] = Field(default_factory=list, description="Inputs the result was computed from.")

    def is_failure(self) -> bool:
        return self.verdict in self.failing_verdicts

    def is_inconclusive(self) -> bool:
        return self.verdict in self.inconclusive_verdicts
