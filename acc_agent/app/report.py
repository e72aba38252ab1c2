"""Write the four documents and their plots for one language from one workflow result.

Why in the application layer: the loss-curve plot is compare_loss_curves' own drawing, made while the
workflow ran it (into acc-agent's folder beside mig.yaml), and is copied here next to the documents;
the renderer draws the other plots from the results already computed. No tool runs again: the
documents, which link the plots, are written last, each safely.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from acc_agent.atomic import atomic_write
from acc_agent.models.training import CompareLossCurvesOutput
from acc_agent.models.workflow import WorkflowResult
from acc_agent.render.deliverables import config_from, finish, render_text
from acc_agent.render.files import WriteReport, commit


@dataclass
class RenderResult:
    out_dir: Path
    lang: str
    reports: list[WriteReport] = field(default_factory=list)
    plots: dict[str, str] = field(default_factory=dict)
    plot_notes: list[str] = field(default_factory=list)
    status: str = "with_gaps"
    placeholders: list[tuple[str, int, str]] = field(default_factory=list)


def copy_loss_curves(wf: WorkflowResult, path: Path) -> tuple[bool, str]:
    """The curves compare_loss_curves drew while the workflow ran, copied to ``path``; no tool runs here."""
    lc = wf.get("loss_curves")
    if not lc.ok:
        return False, f"loss-curve plot skipped: {lc.reason}"
    out = lc.output_as(CompareLossCurvesOutput)
    drawn = Path(out.plot_path) if out is not None and out.plot_path else None
    if drawn is None or not drawn.is_file():
        why = (out.plot_note if out is not None else None) or "compare_loss_curves drew no plot for this result"
        return False, f"loss-curve plot skipped: {why.removeprefix('plot not written: ')}"
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with atomic_write(path, "wb") as fh:
            fh.write(drawn.read_bytes())
    except OSError as exc:
        return False, f"loss-curve plot skipped: {exc}"
    return True, ""


def _plots(wf: WorkflowResult, out_dir: Path) -> tuple[dict[str, str], list[str]]:
    """Every plot, loss curves first: links relative to ``out_dir`` and the notes of those skipped."""
    from acc_agent.render.plots import make_plots

    (out_dir / "plots").mkdir(parents=True, exist_ok=True)
    links: dict[str, str] = {}
    notes: list[str] = []
    drawn, note = copy_loss_curves(wf, out_dir / "plots" / "loss_curves.png")
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
