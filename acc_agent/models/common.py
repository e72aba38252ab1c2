"""Pieces every tool model shares: the output base, evidence, and CLI-friendly list types.

Every output carries ``verdict`` + ``summary`` + ``evidence`` so that nothing a report prints is
unsourced, and so front ends (CLI exit codes, MCP, reports) can treat all tools alike.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Annotated, ClassVar

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, field_validator


def _split_csv(value: object) -> object:
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


#: Longest path and file name the file systems acc-agent meets accept (Linux PATH_MAX, NAME_MAX).
PATH_MAX_BYTES = 4095
NAME_MAX_BYTES = 255


def check_path(value: Path) -> Path:
    """Refuse a path no file system can hold: a NUL byte, a name over 255 bytes, a path over 4 KiB.

    Why at validation: every ``exists()``/``open()`` of such a path raises ``ValueError`` (NUL) or
    ``OSError(ENAMETOOLONG)`` deep inside a tool; refused here, the error names the argument.
    """
    text = str(value)
    if "\x00" in text:
        raise ValueError("the path contains a NUL byte, which no file name can hold")
    raw = os.fsencode(text)
    if len(raw) > PATH_MAX_BYTES:
        raise ValueError(f"the path is {len(raw):,} bytes long; file systems accept at most {PATH_MAX_BYTES:,}")
    longest = max((len(os.fsencode(part)) for part in value.parts), default=0)
    if longest > NAME_MAX_BYTES:
        raise ValueError(f"one name in the path is {longest:,} bytes long; file systems accept at most {NAME_MAX_BYTES}")
    return value


class ToolInput(Model):
    """Base of every tool input: unknown fields are refused so that typos surface."""

    model_config = ConfigDict(extra="forbid", defer_build=True)

    @field_validator("*", mode="after")
    @classmethod
    def _paths_that_can_exist(cls, value: object) -> object:
        """Every ``Path`` argument is checked by :func:`check_path` (named in the error by pydantic)."""
        return check_path(value) if isinstance(value, Path) else value


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
