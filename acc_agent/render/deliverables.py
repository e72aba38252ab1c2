"""Render the four documents (and their plots) for one language from one workflow result.

Why separate from the tool: the CLI ``report``/``demo`` commands and the ``render_deliverables``
tool share it, and tests call it directly with a prepared workflow result.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from acc_agent.render.files import WriteReport, write_document
from acc_agent.workflow import WorkflowResult

DOCUMENTS = ("Mig_Readme", "Compare", "Mig_report", "Summary")


@dataclass
class RenderResult:
    out_dir: Path
    lang: str
    reports: list[WriteReport] = field(default_factory=list)
    plots: dict[str, str] = field(default_factory=dict)
    plot_notes: list[str] = field(default_factory=list)
    context: dict[str, Any] = field(default_factory=dict)


def render_text(wf: WorkflowResult, lang: str, plots: dict[str, str] | None = None) -> dict[str, str]:
    """The markdown of each document, in memory (no files touched)."""
    from acc_agent.render.context import build_context
    from acc_agent.render.env import make_env

    env = make_env(lang)
    ctx = build_context(wf, lang, plots)
    return {name: env.get_template(f"{name}.md.j2").render(**ctx) for name in DOCUMENTS}


def render_all(wf: WorkflowResult, out_dir: Path, lang: str, with_plots: bool = True) -> RenderResult:
    """Plots first (the documents link them), then the documents, each written safely."""
    result = RenderResult(out_dir, lang)
    out_dir.mkdir(parents=True, exist_ok=True)
    if with_plots:
        from acc_agent.render.plots import make_plots

        result.plots, result.plot_notes = make_plots(wf, out_dir)
    for name, text in render_text(wf, lang, result.plots).items():
        result.reports.append(write_document(out_dir / f"{name}.md", text))
    return result
