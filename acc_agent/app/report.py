"""Write the four documents and their plots for one language from one workflow result.

Why in the application layer: the loss-curve plot is compare_loss_curves' own drawing (io/curve_plot.py),
so making it means running that tool on the project's logs; the renderer only reads results already
computed. Here the tool draws its plot, the renderer draws the others from the results, and the
documents, which link the plots, are written last, each safely.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from acc_agent.errors import AccAgentError
from acc_agent.models.workflow import WorkflowResult
from acc_agent.render.deliverables import config_from, finish, render_text
from acc_agent.render.files import WriteReport, commit
from acc_agent.tools.spec import skill_tool


@dataclass
class RenderResult:
    out_dir: Path
    lang: str
    reports: list[WriteReport] = field(default_factory=list)
    plots: dict[str, str] = field(default_factory=dict)
    plot_notes: list[str] = field(default_factory=list)
    status: str = "with_gaps"
    placeholders: list[tuple[str, int, str]] = field(default_factory=list)


def draw_loss_curves(wf: WorkflowResult, path: Path) -> tuple[bool, str]:
    """Ask compare_loss_curves (which owns io/curve_plot.py) to draw the curves it compared."""
    lc = wf.get("loss_curves")
    if not lc.ok:
        return False, f"loss-curve plot skipped: {lc.reason}"
    p = wf.project
    try:
        spec = skill_tool("compare_loss_curves")
        if spec is None or "plot" not in spec.input_model.model_fields:
            return False, "loss-curve plot skipped: compare_loss_curves cannot draw plots in this installation"
        logs = (str(p.resolve(p.artefacts.baseline_log)), str(p.resolve(p.artefacts.target_log)))
        spec.run({**dict(zip(spec.positional, logs, strict=False)), "plot": str(path)})
    except AccAgentError as err:
        return False, f"loss-curve plot skipped: {err.message}"
    except Exception as exc:  # the documents must still be written
        return False, f"loss-curve plot skipped: {type(exc).__name__}: {exc}"
    return path.is_file(), "" if path.is_file() else "loss-curve plot skipped: no file written"


def _plots(wf: WorkflowResult, out_dir: Path) -> tuple[dict[str, str], list[str]]:
    """Every plot, loss curves first: links relative to ``out_dir`` and the notes of those skipped."""
    from acc_agent.render.plots import make_plots

    (out_dir / "plots").mkdir(parents=True, exist_ok=True)
    links: dict[str, str] = {}
    notes: list[str] = []
    drawn, note = draw_loss_curves(wf, out_dir / "plots" / "loss_curves.png")
    if drawn:
        links["loss_curves"] = "plots/loss_curves.png"
    elif note:
        notes.append(note)
    more_links, more_notes = make_plots(wf, out_dir)
    return links | more_links, notes + more_notes


def render_all(wf: WorkflowResult, out_dir: Path, lang: str, with_plots: bool = True,
               config_path: Path | None = None, generated: str | None = None) -> RenderResult:
    """Plots first (the documents link them), then the documents, each written safely."""
    result = RenderResult(out_dir, lang)
    out_dir.mkdir(parents=True, exist_ok=True)
    if with_plots:
        result.plots, result.plot_notes = _plots(wf, out_dir)
    config = config_from(out_dir, config_path or (wf.project.base_dir / "mig.yaml"))
    texts = render_text(wf, lang, result.plots, generated=generated, config=config)
    prepared, result.status, result.placeholders = finish(wf, texts, out_dir)
    result.reports = [commit(prep) for prep in prepared]
    return result
