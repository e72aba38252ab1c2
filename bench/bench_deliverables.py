"""How much the deliverables layer costs on top of the skills it reports.

Reference (same invocation): ``run_workflow`` on the demo project — the skills themselves.
Measured: rendering the four documents in memory (en, zh), writing them with kept-block merge and
atomic replace, and the markdown + consistency checks. Printed as ratios to the reference, so
the numbers stay comparable across machines. Run: ``python3 bench/bench_deliverables.py``.
"""

from __future__ import annotations

import shutil
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from acc_agent.app.report import render_all
from acc_agent.app.workflow import run_workflow
from acc_agent.io.project_file import load_project
from acc_agent.render.checks import check_folder
from acc_agent.render.deliverables import render_text

REPO = Path(__file__).resolve().parents[1]


def best_of(fn: Callable[[], object], n: int = 5) -> float:
    times = []
    for _ in range(n):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        project_dir = Path(tmp) / "demo_project"
        shutil.copytree(REPO / "samples" / "demo_project", project_dir)
        project = load_project(project_dir / "mig.yaml")
        run_workflow(project)  # warm imports
        wf = run_workflow(project)
        ref = best_of(lambda: run_workflow(project), 3)
        out = Path(tmp) / "out"
        render_all(wf, out, "en", with_plots=False)
        rows = [
            ("render en (in memory)", best_of(lambda: render_text(wf, "en"))),
            ("render zh (in memory)", best_of(lambda: render_text(wf, "zh"))),
            ("render + write (unchanged files)", best_of(lambda: render_all(wf, out, "en", with_plots=False))),
            ("render + plots + write", best_of(lambda: render_all(wf, out, "en", with_plots=True), 3)),
            ("markdown + consistency checks", best_of(lambda: check_folder(out))),
        ]
    print(f"reference: run_workflow on samples/demo_project (all skills) = {ref * 1000:.1f} ms")
    for name, t in rows:
        print(f"{name:34s} {t * 1000:8.1f} ms   {t / ref:6.3f}x reference")


if __name__ == "__main__":
    main()
