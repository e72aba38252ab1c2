"""Plots and the template location: real PNGs from real rows, clean skips, clear errors."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from acc_agent.errors import AccAgentError
from acc_agent.models.compare import DumpRow, TensorMetrics
from acc_agent.render.env import templates_dir
from acc_agent.render.i18n import STRINGS
from acc_agent.render.plots import plot_latency, plot_layers


def _png(path: Path) -> bool:
    return path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_layer_plot_marks_first_divergence(tmp_path: Path) -> None:
    rng = np.random.default_rng(0)
    golden = rng.normal(size=(6, 64))
    noise = 1e-3 * rng.normal(size=golden.shape)
    noise[3:] *= 40  # the error jumps at layer 3 and stays
    rows = []
    for i, (g, n) in enumerate(zip(golden, noise, strict=True)):
        t = g + n
        rows.append(DumpRow(name=f"Functional.layer.{i}.forward.output.0",
                            cosine=float(g @ t / np.linalg.norm(g) / np.linalg.norm(t)),
                            max_abs_err=float(np.abs(n).max()),
                            bench=TensorMetrics(max_abs_err=float(np.abs(noise[0]).max()))))
    out = tmp_path / "layers.png"
    assert plot_layers(rows, "Functional.layer.3.forward.output.0", out)
    assert _png(out) and out.stat().st_size > 5000


def test_plots_skip_without_data(tmp_path: Path) -> None:
    assert plot_layers([DumpRow(name="x", cosine=None, max_abs_err=None)], None, tmp_path / "a.png") is False
    assert plot_latency({"baseline": {}, "target": {}}, tmp_path / "b.png") is False
    assert list(tmp_path.iterdir()) == []


def test_latency_plot_from_real_timings(tmp_path: Path) -> None:
    import time

    lat = []
    for _ in range(50):
        t0 = time.perf_counter()
        np.linalg.svd(np.ones((32, 32)))
        lat.append((time.perf_counter() - t0) * 1000)
    assert plot_latency({"baseline": {1: lat}, "target": {1: [v * 1.2 for v in lat]}}, tmp_path / "lat.png")
    assert _png(tmp_path / "lat.png")


def test_missing_templates_is_a_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    """An install whose data package is missing (a broken or partial install) says so and how to fix it."""
    import acc_agent.resources as resources

    monkeypatch.setattr(resources, "_package_root", lambda package: None)
    resources._locate.cache_clear()
    try:
        with pytest.raises(AccAgentError) as exc:
            templates_dir()
    finally:
        resources._locate.cache_clear()
    assert exc.value.code == "missing_templates" and "pip install -e ." in exc.value.hint
    assert "templates folder not found" in exc.value.message


def test_every_string_has_both_languages() -> None:
    for key, value in STRINGS.items():
        assert set(value) == {"en", "zh"} and all(value.values()), key
        assert value["en"].count("{") == value["zh"].count("{"), key  # same placeholders


def test_writing_the_reports_runs_no_tool(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every plot and cell comes from the workflow's results: once they exist, no tool runs again."""
    import shutil

    from acc_agent.app.report import render_all
    from acc_agent.app.workflow import run_workflow
    from acc_agent.io.project_file import load_project
    from acc_agent.resources import demo_project_dir
    from acc_agent.tools.spec import ToolSpec

    project_dir = tmp_path / "demo"
    shutil.copytree(demo_project_dir(), project_dir)
    wf = run_workflow(load_project(project_dir / "mig.yaml"))

    def refuse(self: ToolSpec, arguments: object) -> None:
        raise AssertionError(f"{self.name} ran while the reports were written")

    monkeypatch.setattr(ToolSpec, "run", refuse)
    result = render_all(wf, tmp_path / "out", "en", with_plots=True)
    assert result.plots.get("loss_curves") == "plots/loss_curves.png" and not result.plot_notes
    assert _png(tmp_path / "out" / "plots" / "loss_curves.png")
