"""``report --check``'s re-computation: run the workflow on the documents' inputs and compare.

Why in the application layer: re-computing means running every skill again on mig.yaml's
artefacts; the renderer only re-renders the result and compares it line by line
(render/checks.py), so the checks themselves stay pure.
"""

from __future__ import annotations

from pathlib import Path

from acc_agent.app.workflow import run_workflow
from acc_agent.io.project_file import load_project
from acc_agent.render.checks import Problem, differences_from, not_recomputable


def recompute(folder: Path, config: Path) -> list[Problem]:
    """Every line of the documents in ``folder`` that no longer follows from ``config`` and its artefacts."""
    refused = not_recomputable(folder)
    if refused is not None:
        return refused
    return differences_from(folder, run_workflow(load_project(config), plots=False))  # a check draws nothing
