"""Input and output of ``render_deliverables``: which documents were written, and what is still missing."""

from __future__ import annotations

from typing import ClassVar, Literal

from pydantic import Field

from acc_agent.models.common import Model, ToolInput, ToolOutput


class RenderDeliverablesInput(ToolInput):
    config: str = Field(description="The project's mig.yaml, or its folder (init_project writes it).")
    out: str = Field(default="", description="Folder for the documents. Default: the folder of mig.yaml.")
    lang: Literal["en", "zh"] = Field(default="en", description="Language of the documents.")
    plots: bool = Field(default=True, description="Also write PNG plots. Loss curves, per-layer errors, latency.")


class WrittenFile(Model):
    path: str
    written: bool = Field(description="False when the file already had exactly this content.")
    kept_blocks: list[str] = Field(default_factory=list, description="Human-owned blocks carried over.")
    backup: str | None = Field(default=None, description="Backup of a file edited by hand outside kept blocks.")


class Gap(Model):
    slot: str
    tool: str
    reason: str
    command: str


class RenderDeliverablesOutput(ToolOutput):
    failing_verdicts: ClassVar[frozenset[str]] = frozenset({"check_failed"})

    verdict: Literal["complete", "with_gaps", "check_failed"] = Field(
        description="complete: every skill result present and every hand-written part written; with_gaps: some "
                    "sections say N/A with the command that fills them, or a hand-written part still holds its "
                    "placeholder; check_failed: the rendered markdown failed a check.")
    out_dir: str
    lang: str
    files: list[WrittenFile] = Field(default_factory=list)
    plots: list[str] = Field(default_factory=list)
    plot_notes: list[str] = Field(default_factory=list)
    gaps: list[Gap] = Field(default_factory=list)
    problems: list[str] = Field(default_factory=list, description="Markdown and consistency check failures.")
