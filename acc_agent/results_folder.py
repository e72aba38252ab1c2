"""Where acc-agent keeps the files it writes for itself: complete results and default CSVs.

Why one place: the compact answers an agent reads point at the complete result, and compare-dumps
writes its CSV beside it; both must agree on the folder, and a tool must be able to ask for it
without importing the agent front end.
"""

from __future__ import annotations

import os
from pathlib import Path

RESULTS_DIR_ENV = "ACC_AGENT_RESULTS_DIR"
RESULTS_DIR_NAME = "acc-agent-results"


def results_dir() -> Path:
    """Folder for full results; created on demand.

    ``ACC_AGENT_RESULTS_DIR`` when set; else ``acc-agent-results`` beside the project's mig.yaml (the
    current folder or the nearest parent holding one), else in the current folder. Never the system
    temp folder, where results of different projects pile up and are lost, and never beside the inputs.
    """
    root = os.environ.get(RESULTS_DIR_ENV)
    if root:
        path = Path(root)
    else:
        here = Path.cwd()
        project = next((d for d in (here, *here.parents) if (d / "mig.yaml").is_file()), here)
        path = project / RESULTS_DIR_NAME
    path.mkdir(parents=True, exist_ok=True)
    return path
