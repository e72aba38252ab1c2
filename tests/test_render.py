"""Rendering: same data in both languages, hostile strings escaped, missing artefacts as sourced gaps."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

from acc_agent.app.report import render_all
from acc_agent.app.workflow import run_workflow
from acc_agent.io.project_file import load_project, parse_project
from acc_agent.models.compare import CompareDumpsOutput
from acc_agent.models.workflow import WorkflowResult
from acc_agent.render.checks import check_folder, check_markdown
from acc_agent.render.deliverables import render_text
from acc_agent.render.env import make_env

REPO = Path(__file__).resolve().parents[1]
DEMO = REPO / "samples" / "demo_project"


@pytest.fixture(scope="module")
def demo_wf(tmp_path_factory: pytest.TempPathFactory) -> WorkflowResult:
    """The workflow on a copy of the demo project: skills may write next to their inputs (short-run records)."""
    project = tmp_path_factory.mktemp("demo") / "demo_project"
    shutil.copytree(DEMO, project)
    return run_workflow(load_project(project / "mig.yaml"))


def _numbers(text: str) -> list[str]:
    return re.findall(r"\d+\.\d+(?:e[-+]\d+)?", text)


def test_en_and_zh_render_from_the_same_data(demo_wf: WorkflowResult) -> None:
    en, zh = render_text(demo_wf, "en"), render_text(demo_wf, "zh")
    for name in en:
        assert check_markdown(en[name], name) == [] and check_markdown(zh[name], name) == []
        # every number the English document prints, the Chinese one prints too (and vice versa)
        assert sorted(_numbers(en[name])) == sorted(_numbers(zh[name])), name
    assert "## 3 Accuracy" in en["Compare"] and "## 3 精度" in zh["Compare"]


def test_demo_fault_is_reported_with_its_source(demo_wf: WorkflowResult) -> None:
    compare = render_text(demo_wf, "en")["Compare"]
    dumps = demo_wf.get("dumps")
    assert dumps.ok, f"compare_dumps failed on the demo project: {dumps.reason}"  # a broken tool fails here
    out = dumps.output_as(CompareDumpsOutput)
    assert out is not None and out.first_divergence is not None
    assert out.first_divergence.name.startswith("Functional.gelu.1.forward")  # the quick_gelu fault planted by make_samples
    assert "First divergence: Functional.gelu.1.forward" in compare
    assert "acc-agent compare-dumps dumps/golden/step0/rank0 dumps/target/step0/rank0" in compare


def test_verification_boxes_follow_evidence(demo_wf: WorkflowResult) -> None:
    report = render_text(demo_wf, "en")["Mig_report"]
    assert "- [x] Code migration done — attested" in report  # attested in mig.yaml with a ref
    golden = demo_wf.get("golden")
    if golden.ok:
        assert golden.verdict == "fail"
        assert "- [ ] Golden consistency — golden check: fail" in report  # a verdict word, not the tool's value
    assert "- [ ] Full accuracy met — N/A" in report


HOSTILE = """\
project: {{name: "demo | <b>bold</b> `tick`", date: "2025-01-01"}}
model: {{name: "m|x", chip: "910B<script>"}}
datasets:
  - {{purpose: golden, dataset: "set|with|pipes", subset: "`a` <i>b</i>", path: "d|p/x.npz"}}
artefacts:
  baseline_log: {log}
"""


def test_hostile_user_strings_are_escaped(tmp_path: Path) -> None:
    shutil.copy(DEMO / "logs" / "gpu_fp32_train.log", tmp_path / "base.log")
    (tmp_path / "mig.yaml").write_text(HOSTILE.format(log="base.log"), encoding="utf-8")
    wf = run_workflow(load_project(tmp_path / "mig.yaml"))
    out = tmp_path / "out"
    render_all(wf, out, "en", with_plots=False)
    from acc_agent.render.checks import user_strings

    strings = user_strings(wf.project.model_dump(mode="json"))
    assert "set|with|pipes" in strings and "`a` <i>b</i>" in strings
    problems, _ = check_folder(out, strings)
    assert problems == []
    readme = (out / "Mig_Readme.md").read_text(encoding="utf-8")
    assert "set\\|with\\|pipes" in readme and "&lt;i&gt;b&lt;/i&gt;" in readme and "`d\\|p/x.npz`" in readme
    assert "\\`a\\`" in readme  # user backticks are literal, not a code span
    assert "# Mig\\_Readme" not in readme and "demo \\| &lt;b&gt;bold&lt;/b&gt; \\`tick\\`" in readme


def test_missing_artefacts_render_complete_documents_with_gaps(tmp_path: Path) -> None:
    text = "project: {name: bare}\nmodel: {name: m}\nartefacts: {gpu_available: false}\n"
    (tmp_path / "mig.yaml").write_text(text, encoding="utf-8")
    wf = run_workflow(load_project(tmp_path / "mig.yaml"))
    out = tmp_path / "out"
    render_all(wf, out, "zh", with_plots=True)
    render_all(wf, tmp_path / "en", "en", with_plots=True)
    assert check_folder(out)[0] == [] and check_folder(tmp_path / "en")[0] == []
    compare = (tmp_path / "en" / "Compare.md").read_text(encoding="utf-8")
    readme = (tmp_path / "en" / "Mig_Readme.md").read_text(encoding="utf-8")
    report = (tmp_path / "en" / "Mig_report.md").read_text(encoding="utf-8")
    assert "| Baseline source | N/A |" in compare  # no log, no GPU: no misleading comparison
    assert "GPU" in compare.split("| Why this baseline |")[1].split("\n")[0]  # the reason names the missing GPU
    assert "N/A — not configured: artefacts.dumps.golden, artefacts.dumps.target in mig.yaml; fill with: " \
           "`acc-agent compare-dumps <DUMPS.GOLDEN> <DUMPS.TARGET> --precision fp16`" in compare  # mig.yaml's precision
    assert "Not executed. Reason:" in compare and "Command template: `acc-agent measure-performance" in compare
    assert "GPU inference baseline (default)" in readme  # §2.6 interface written for the user to run
    assert "- [x]" not in report  # nothing ticked without evidence


def test_none_can_never_be_printed() -> None:
    env = make_env("en")
    with pytest.raises(ValueError, match="None"):
        env.from_string("value: {{ x }}").render(x=None)
    assert env.from_string("{{ x }}").render(x=float("nan")) == "NaN"  # visible, and flagged by the checks
    assert any(p.check == "value_leak" for p in check_markdown(
        "# x\n<!-- acc-agent doc=Summary lang=en -->\nvalue nan\n"))


def test_invalid_project_never_tracebacks() -> None:
    with pytest.raises(Exception) as exc:
        parse_project("project: {name: x}\nmodel: {name: m, target_precision: int4}\n")
    assert "line 2, field model.target_precision" in str(exc.value)


def test_saved_results_are_validated_and_used(tmp_path: Path, demo_wf: WorkflowResult) -> None:
    import json

    dumps = demo_wf.get("dumps")
    assert dumps.ok, f"compare_dumps failed on the demo project: {dumps.reason}"  # a broken tool fails here
    assert dumps.output is not None
    (tmp_path / "good.json").write_text(dumps.output.model_dump_json(), encoding="utf-8")
    (tmp_path / "bad.json").write_text(json.dumps({"verdict": "pass", "summary": "x"}), encoding="utf-8")
    text = "project: {{name: saved}}\nmodel: {{name: m}}\nartefacts:\n  results: {{dumps: {f}}}\n"
    for name, status in (("good.json", "saved"), ("bad.json", "error")):
        (tmp_path / "mig.yaml").write_text(text.format(f=name), encoding="utf-8")
        wf = run_workflow(load_project(tmp_path / "mig.yaml"))
        assert wf.get("dumps").status == status
    assert "is not a compare_dumps result" in wf.get("dumps").reason
    compare = render_text(wf, "en")["Compare"]
    assert "N/A — saved result bad.json is not a compare\\_dumps result" in compare


def test_inference_only_project_marks_training_not_applicable(tmp_path: Path) -> None:
    text = "project: {name: infer}\nmodel: {name: m, mode: inference}\nartefacts: {gpu_available: true}\n"
    (tmp_path / "mig.yaml").write_text(text, encoding="utf-8")
    wf = run_workflow(load_project(tmp_path / "mig.yaml"))
    assert {s for s, r in wf.results.items() if r.status == "not_applicable"} == {
        "baseline_log", "target_log", "short_run", "loss_curves", "replay", "bisect"}  # + the optional steps
    docs = render_text(wf, "en")
    assert "not applicable: inference-only project" in docs["Compare"]
    assert "acc-agent judge-short-run" not in docs["Mig_Readme"]  # nothing to fill for a training run
    assert "acc-agent compare-tensors" in docs["Mig_Readme"]  # golden outputs still needed


def test_unwritable_out_is_a_structured_error(tmp_path: Path) -> None:
    from acc_agent.errors import AccAgentError
    from acc_agent.registry import call_tool

    (tmp_path / "mig.yaml").write_text("project: {name: x}\nmodel: {name: m}\n", encoding="utf-8")
    (tmp_path / "file").write_text("not a folder", encoding="utf-8")
    with pytest.raises(AccAgentError) as exc:
        call_tool("render_deliverables", {"config": str(tmp_path / "mig.yaml"), "out": str(tmp_path / "file" / "d"),
                                          "plots": False})
    assert exc.value.code == "cannot_write" and "--out" in exc.value.hint


def test_long_dump_tables_keep_the_first_divergence(demo_wf: WorkflowResult) -> None:
    import copy

    from acc_agent.render.context import Ctx
    from acc_agent.render.views.dumps import dumps_view

    dumps = demo_wf.get("dumps")
    assert dumps.ok, f"compare_dumps failed on the demo project: {dumps.reason}"  # a broken tool fails here
    wf = copy.deepcopy(demo_wf)
    out = wf.get("dumps").output_as(CompareDumpsOutput)
    assert out is not None and out.first_divergence is not None
    base = out.rows
    out.rows = [base[i % len(base)].model_copy(update={"name": f"Functional.op.{i}.forward.output.0", "same_as": None})
                for i in range(120)]
    out.rows[97] = out.rows[97].model_copy(update={"name": "Functional.bad.0.forward.output.0"})
    out.first_divergence = out.first_divergence.model_copy(update={"name": "Functional.bad.0.forward.output.0"})
    view = dumps_view(Ctx("en"), wf.get("dumps"), limit=40)
    assert view.shown == 40 and view.total == 120
    names = [str(r[0]) for r in view.rows]
    at = next(i for i, n in enumerate(names) if "Functional.bad.0.forward.output.0" in n)
    assert 10 <= at < 30, "a window around the first divergence: what agrees before it and what follows"
    assert "--csv compare_dumps.csv" in str(view.csv_command)
