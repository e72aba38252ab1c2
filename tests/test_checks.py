"""Each markdown check and each consistency fact, shown failing on a broken input."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from acc_agent.app.report import render_all
from acc_agent.app.workflow import run_workflow
from acc_agent.io.project_file import load_project
from acc_agent.render.checks import check_folder, check_markdown

REPO = Path(__file__).resolve().parents[1]
HEAD = "# Compare — x\n\n<!-- acc-agent doc=Summary lang=en -->\n\n"


@pytest.fixture(scope="module")
def rendered(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("docs")
    project = tmp_path_factory.mktemp("demo") / "demo_project"
    shutil.copytree(REPO / "samples" / "demo_project", project)  # skills may write records next to their inputs
    wf = run_workflow(load_project(project / "mig.yaml"))
    render_all(wf, out, "en", with_plots=False)
    return out


def _checks(text: str) -> set[str]:
    return {p.check for p in check_markdown(HEAD + text)}


def test_clean_table_passes() -> None:
    assert _checks("| a | b |\n| --- | --- |\n| 1 | `x \\| y` |\n| esc \\| aped | 2 |\n") == set()


@pytest.mark.parametrize(("broken", "check"), [
    ("| a | b |\n| --- | --- |\n| dataset a|b | 2 |\n", "table_cells"),
    ("| a | b |\n| --- | --- |\n| only one |\n", "table_cells"),
    ("Dataset <script>alert(1)</script> here\n", "raw_html"),
    ("<div>block</div>\n", "raw_html"),
    ("Name with a stray ` backtick\n", "stray_backtick"),
    ("Value: {{ golden.max_abs_err }}\n", "template_syntax"),
    ("{% if x %}left over{% endif %}\n", "template_syntax"),
    ("| metric | value |\n| --- | --- |\n| rtol | None |\n", "value_leak"),
    ("max abs error nan on sample 3\n", "value_leak"),
    ("| metric | value |\n| --- | --- |\n| cosine | NaN |\n", "value_leak"),
    ("threshold: None, source: mig.yaml\n", "value_leak"),
    ("ratio = inf at batch 1\n", "value_leak"),
])
def test_each_check_fails_on_broken_input(broken: str, check: str) -> None:
    assert check in _checks(broken)


def test_prose_mentions_are_not_leaks() -> None:
    assert _checks("Inference smoke (no NaN/Inf), `None` in code is fine, and Nonetheless works.\n") == set()
    assert _checks("None of the 8 outputs has NaN values; golden has 2 NaN at the same positions.\n") == set()
    # msprobe's own Result message, quoted in a compare summary, and a statistic spelled as msprobe spells it
    assert _checks("worst: X.0.forward.output.0 (error: There is nan/inf/-inf in the maximum or minimum value of "
                   "NPU.)\n") == set()
    assert _checks("Inf/NaN on the target where the golden is finite (Max Inf vs 13.68, Mean -Inf vs 0.1)\n") == set()
    assert _checks("statistics differ: Max inf vs 13.68\n") == {"value_leak"}


def test_missing_required_section() -> None:
    text = "# Compare\n\n<!-- acc-agent doc=Compare lang=en -->\n\n## 1 Summary\n\n## 2 Env\n"
    missing = {p.message for p in check_markdown(text) if p.check == "missing_section"}
    assert "required section §2.1 is missing" in missing and "required section §3.1 is missing" in missing


def test_rendered_demo_passes_every_check(rendered: Path) -> None:
    problems, matrix = check_folder(rendered)
    assert problems == []
    assert {r.fact for r in matrix} >= {"baseline_source", "dataset_rows", "rtol", "short_run_band", "overall_verdict"}
    assert all(r.agree for r in matrix)


def _copy(rendered: Path, tmp_path: Path) -> Path:
    out = tmp_path / "docs"
    shutil.copytree(rendered, out)
    return out


def _edit(path: Path, old: str, new: str) -> None:
    text = path.read_text(encoding="utf-8")
    assert old in text, old
    path.write_text(text.replace(old, new, 1), encoding="utf-8")


@pytest.mark.parametrize(("doc", "old", "new", "fact"), [
    ("Mig_Readme.md", "| Short-run band | 30 %–50 %", "| Short-run band | 20 %–50 %", "short_run_band"),
    ("Compare.md", "| Baseline source | project training log", "| Baseline source | GPU measured", "baseline_source"),
    ("Mig_report.md", "| rtol | 0.01", "| rtol | 1.000e-05", "rtol"),
    ("Summary.md", "| Overall | fail |", "| Overall | pass |", "overall_verdict"),
    ("Compare.md", "| smoke | synthetic-4-clusters | first 8 rows |", "| smoke | synthetic-4-clusters | first 16 rows |",
     "dataset_rows"),
    ("Mig_report.md", "- [x] Performance met", "- [ ] Performance met", "performance_box"),
    ("Mig_report.md", "- [x] Training short run", "- [ ] Training short run", "short_run_box"),
    ("Mig_report.md", "- [ ] Golden consistency", "- [x] Golden consistency", "golden_box"),
    ("Mig_report.md", "| Target precision | fp16", "| Target precision | bf16", "target_precision"),
    ("Mig_Readme.md", "| Short-run result | 41.7 %", "| Short-run result | 38.0 %", "short_run_result"),
])
def test_consistency_matrix_catches_disagreement(rendered: Path, tmp_path: Path, doc: str, old: str, new: str,
                                                 fact: str) -> None:
    out = _copy(rendered, tmp_path)
    _edit(out / doc, old, new)
    problems, matrix = check_folder(out)
    assert fact in {p.check for p in problems if p.doc == "consistency"}
    assert not next(r for r in matrix if r.fact == fact).agree


def test_missing_document_is_reported(rendered: Path, tmp_path: Path) -> None:
    out = _copy(rendered, tmp_path)
    (out / "Compare.md").unlink()
    problems, _ = check_folder(out)
    assert "missing_document" in {p.check for p in problems}


def test_raw_user_string_is_caught() -> None:
    from acc_agent.render.checks import check_user_strings, user_strings

    strings = user_strings({"datasets": [{"dataset": "set|with|pipes"}], "model": {"name": "a <b>"}, "n": 3})
    assert strings == ["set|with|pipes", "a <b>"]
    assert check_user_strings("| x | set\\|with\\|pipes | a \\<b\\> |\n", "Compare", strings) == []
    assert check_user_strings("path `set|with|pipes` in code is fine\n", "Compare", strings) == []
    bad = check_user_strings("dataset set|with|pipes raw\n", "Compare", strings)
    assert [p.check for p in bad] == ["unescaped_user_string"] and bad[0].line == 1
