"""The ``render_deliverables`` tool: mig.yaml in, Mig_Readme/Compare/Mig_report/Summary out.

Why a tool (and not only a CLI command): agents reach it through MCP and the schema export like
every other skill, and get back which files were written, what was backed up and which gaps
remain, so they can tell the engineer what to run next.
"""

from __future__ import annotations

from pathlib import Path
from typing import ClassVar, Literal

from pydantic import Field

from acc_agent.models.common import Evidence, Model, ToolInput, ToolOutput
from acc_agent.registry import tool


class RenderDeliverablesInput(ToolInput):
    config: str = Field(description="Path to the project's mig.yaml (or its folder).")
    out: str = Field(default="", description="Folder for the documents; default: the folder of mig.yaml.")
    lang: Literal["en", "zh"] = Field(default="en", description="Language of the documents: en or zh.")
    plots: bool = Field(default=True, description="Also write PNG plots (loss curves, per-layer errors, latency).")


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
        description="complete: every skill result present; with_gaps: some sections say N/A with the command "
                    "that fills them; check_failed: the rendered markdown failed a check.")
    out_dir: str
    lang: str
    files: list[WrittenFile] = Field(default_factory=list)
    plots: list[str] = Field(default_factory=list)
    plot_notes: list[str] = Field(default_factory=list)
    gaps: list[Gap] = Field(default_factory=list)
    problems: list[str] = Field(default_factory=list, description="Markdown and consistency check failures.")


def _text(out: RenderDeliverablesOutput) -> str:
    lines = [f"[{out.verdict}] {out.summary}"]
    for f in out.files:
        extra = f" (hand edits backed up to {f.backup})" if f.backup else ""
        lines.append(f"  {'wrote' if f.written else 'unchanged'} {f.path}{extra}")
    for p in out.plots:
        lines.append(f"  plot {p}")
    lines += [f"  note: {n}" for n in out.plot_notes]
    for g in out.gaps:
        lines.append(f"  gap {g.slot}: {g.reason} -> {g.command}")
    lines += [f"  problem: {p}" for p in out.problems]
    return "\n".join(lines)


@tool(
    description="Render the migration deliverables (Mig_Readme.md, Compare.md, Mig_report.md, Summary.md and PNG "
                "plots) from mig.yaml: runs the configured skills on the configured artefacts (or reads their saved "
                "JSON results), writes every number with its source and every gap as N/A with the command that "
                "fills it, keeps human-edited blocks, and checks the markdown and the documents' consistency.",
    positional=("config",),
    text_renderer=_text,
)
def render_deliverables(params: RenderDeliverablesInput) -> RenderDeliverablesOutput:
    from acc_agent.errors import AccAgentError
    from acc_agent.models.project import load_project
    from acc_agent.render.checks import check_folder, user_strings
    from acc_agent.render.deliverables import render_all
    from acc_agent.workflow import run_workflow

    project = load_project(Path(params.config))
    out_dir = Path(params.out) if params.out else project.base_dir
    wf = run_workflow(project)
    try:
        res = render_all(wf, out_dir, params.lang, with_plots=params.plots)
    except OSError as exc:
        raise AccAgentError("cannot_write", f"cannot write the documents into {out_dir}: {exc.strerror or exc}",
                            hint="Pass a writable folder with --out.", path=str(out_dir)) from None
    problems, _matrix = check_folder(out_dir, user_strings(project.model_dump(mode="json")))
    gaps = [Gap(slot=r.slot, tool=r.tool, reason=r.reason, command=r.command) for r in wf.results.values()
            if not r.ok and r.status != "not_applicable"]
    verdict: Literal["complete", "with_gaps", "check_failed"] = (
        "check_failed" if problems else "with_gaps" if gaps else "complete")
    files = [WrittenFile(path=str(r.path), written=r.written, kept_blocks=r.kept_blocks,
                         backup=str(r.backup) if r.backup else None) for r in res.reports]
    evidence = [Evidence(kind="file", ref=str(project.base_dir / "mig.yaml"), detail="project file")]
    evidence += [Evidence(kind="command", ref=r.command, detail=f"{r.slot}: {r.status}")
                 for r in wf.results.values() if r.ok]
    summary = (f"{len(files)} documents in {out_dir} ({params.lang}); {len(wf.results) - len(gaps)} of "
               f"{len(wf.results)} skill results present, {len(gaps)} gaps say N/A with the command that fills them; "
               f"{len(problems)} check problems")
    return RenderDeliverablesOutput(verdict=verdict, summary=summary, evidence=evidence, out_dir=str(out_dir),
                                    lang=params.lang, files=files, plots=[str(out_dir / p) for p in res.plots.values()],
                                    plot_notes=res.plot_notes, gaps=gaps, problems=[str(p) for p in problems])
