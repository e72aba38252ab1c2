"""mig.yaml validation: errors must name the YAML line and the field, never a traceback."""

from __future__ import annotations

from pathlib import Path

import pytest

from acc_agent.errors import AccAgentError
from acc_agent.io.project_file import load_project, parse_project

REPO = Path(__file__).resolve().parents[1]
DEMO = REPO / "samples" / "demo_project" / "mig.yaml"


def test_demo_project_loads_and_resolves_paths() -> None:
    p = load_project(DEMO)
    assert p.model.target_precision == "fp16"
    assert p.tolerance() == (1e-2, 1e-3, "reference for fp16")  # numerics/tolerance.py, as compare-tensors
    log = p.resolve(p.artefacts.baseline_log)
    assert log is not None and log.is_file()
    assert [d.purpose for d in p.datasets][:3] == ["short_run", "smoke", "golden"]


def test_error_names_line_and_field() -> None:
    text = "project:\n  name: x\nmodel:\n  name: m\n  target_precision: fp8\nthresholds:\n  short_run_band: [0.6, 0.5]\n"
    with pytest.raises(AccAgentError) as exc:
        parse_project(text, source="p/mig.yaml")
    msg = exc.value.message
    assert "line 5, field model.target_precision" in msg
    assert "line 7, field thresholds.short_run_band" in msg
    assert exc.value.code == "invalid_project" and exc.value.hint


def test_unknown_field_and_list_item_lines() -> None:
    text = ("project:\n  name: x\nmodel:\n  name: m\ndatasets:\n  - {purpose: short_run, dataset: a}\n"
            "  - {purpose: nonsense, dataset: b}\nartefacts:\n  baseline_logg: x.log\n")
    with pytest.raises(AccAgentError) as exc:
        parse_project(text)
    assert "line 7, field datasets.1.purpose" in exc.value.message
    assert "line 9, field artefacts.baseline_logg" in exc.value.message


def test_yaml_syntax_error_has_line() -> None:
    with pytest.raises(AccAgentError) as exc:
        parse_project("project:\n  name: [unclosed\nmodel: {}\n")
    assert "line" in exc.value.message and "not valid YAML" in exc.value.message


def test_attested_box_needs_evidence() -> None:
    text = "project: {name: x}\nmodel: {name: m}\nattested:\n  code_migration: {done: true}\n"
    with pytest.raises(AccAgentError) as exc:
        parse_project(text)
    assert "attested.code_migration" in exc.value.message and "line 4" in exc.value.message


def test_missing_file_is_structured(tmp_path: Path) -> None:
    with pytest.raises(AccAgentError) as exc:
        load_project(tmp_path)
    assert exc.value.code == "missing_project" and "acc-agent init" in exc.value.hint
