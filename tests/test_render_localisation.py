"""Compare.md's localisation section shows replay-op and bisect-precision results given in mig.yaml.

Real runs: replay_op on the demo's own dumps (its planted gelu fault), bisect_precision on a small
torch model; their JSON results are saved and named in mig.yaml (artefacts.results.replay/bisect),
as an engineer would after running them. Without them the section says the steps are optional.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

pytest.importorskip("torch")

from acc_agent.app.workflow import run_workflow  # noqa: E402
from acc_agent.io.project_file import load_project  # noqa: E402
from acc_agent.models.compare import CompareDumpsOutput  # noqa: E402
from acc_agent.registry import call_tool  # noqa: E402
from acc_agent.render.deliverables import render_text  # noqa: E402
from acc_agent.render.env import fmt_num  # noqa: E402

DEMO = Path(__file__).resolve().parents[1] / "samples" / "demo_project"

MODEL = """import torch
from torch import nn


def build():
    torch.manual_seed(0)
    net = nn.Sequential(nn.Linear(16, 64), nn.LayerNorm(64, elementwise_affine=False), nn.Linear(64, 8, bias=False))
    with torch.no_grad():
        net[2].weight.add_(1000.0)
    return net, (torch.randn(4, 16),)
"""


def _with_results(project: Path, results: dict[str, str]) -> Path:
    text = (project / "mig.yaml").read_text(encoding="utf-8")
    lines = "".join(f"    {k}: {v}\n" for k, v in results.items())
    assert "\nartefacts:\n" in text
    text = text.replace("\nartefacts:\n", "\nartefacts:\n  results:\n" + lines, 1)
    (project / "mig.yaml").write_text(text, encoding="utf-8")
    return project / "mig.yaml"


def test_saved_replay_and_bisect_results_are_rendered(tmp_path: Path) -> None:
    project = tmp_path / "demo_project"
    shutil.copytree(DEMO, project)
    replay = call_tool("replay_op", {"golden": str(project / "dumps/golden/step0/rank0"),
                                     "target": str(project / "dumps/target/step0/rank0"),
                                     "op": "Functional.gelu.1.forward"})
    assert replay.fault_enters == "operator", replay.reason  # type: ignore[attr-defined]
    (project / "replay.json").write_text(replay.model_dump_json(), encoding="utf-8")
    (project / "tiny_model.py").write_text(MODEL, encoding="utf-8")
    bisect = call_tool("bisect_precision", {"model": f"{project / 'tiny_model.py'}:build"})
    assert bisect.keep_high_precision == ["2"], bisect.summary  # type: ignore[attr-defined]
    (project / "bisect.json").write_text(bisect.model_dump_json(), encoding="utf-8")

    wf = run_workflow(load_project(_with_results(project, {"replay": "replay.json", "bisect": "bisect.json"})))
    en, zh = render_text(wf, "en")["Compare"], render_text(wf, "zh")["Compare"]
    section = en.split("### 3.3", 1)[1].split("## 4", 1)[0]
    assert "`Functional.gelu.1.forward` — The difference enters through: the operator (kernel at fault" in section
    assert "Keep in FP32: 2" in section and "optional step not run" not in section
    zh_section = zh.split("### 3.3", 1)[1].split("## 4", 1)[0]
    assert "算子本身" in zh_section and "保持 FP32 的层：2" in zh_section
    saved = json.loads((project / "bisect.json").read_text(encoding="utf-8"))
    assert f"Output error with every eligible layer low: {fmt_num(saved['error_all_low'])}" in section


def test_without_results_the_steps_are_optional_not_gaps(tmp_path: Path) -> None:
    project = tmp_path / "demo_project"
    shutil.copytree(DEMO, project)
    wf = run_workflow(load_project(project / "mig.yaml"))
    assert wf.get("replay").status == "not_applicable" and wf.get("bisect").status == "not_applicable"
    compare = render_text(wf, "en")["Compare"]
    assert "optional step not run: give its saved JSON result as artefacts.results.replay" in compare
    summary = render_text(wf, "en")["Summary"]
    assert "replay_op" not in summary, "an optional step is not listed among the gaps"


def test_the_project_precision_reaches_the_dump_comparison(tmp_path: Path) -> None:
    """mig.yaml says fp32: the layer comparison is judged with FP32 tolerances, not the FP16 default."""
    project = tmp_path / "demo_project"
    shutil.copytree(DEMO, project)
    path = project / "mig.yaml"
    path.write_text(path.read_text(encoding="utf-8").replace("target_precision: fp16", "target_precision: fp32"),
                    encoding="utf-8")
    wf = run_workflow(load_project(path))
    dumps = wf.get("dumps")
    assert "--precision fp32" in dumps.command
    fp16 = call_tool("compare_dumps", {"golden": str(project / "dumps/golden/step0/rank0"),
                                       "target": str(project / "dumps/target/step0/rank0"), "all_rows": True,
                                       "precision": "fp16"})
    fp32 = dumps.output_as(CompareDumpsOutput)
    assert fp32 is not None
    within32 = {r.name: r.within_tolerance_ratio for r in fp32.rows}
    stricter = [r.name for r in fp16.rows if r.within_tolerance_ratio is not None  # type: ignore[attr-defined]
                and within32.get(r.name) is not None and within32[r.name] < r.within_tolerance_ratio]
    assert stricter, "FP32 tolerances must leave fewer elements within tolerance on some rows"


def test_demo_report_names_the_planted_variant_and_lists_each_tensor_once(tmp_path: Path) -> None:
    """The demo's planted fault is quick_gelu instead of the tanh GELU: the first next action says so, measured;
    the layer table shows each tensor once (a call's output is not repeated as the next call's input)."""
    project = tmp_path / "demo_project"
    shutil.copytree(DEMO, project)
    wf = run_workflow(load_project(project / "mig.yaml"))
    compare = render_text(wf, "en")["Compare"]
    section = compare.split("### 3.2", 1)[1].split("### 3.3", 1)[0]
    actions = [line for line in section.splitlines() if line.startswith("- ")]
    assert actions[0].startswith("- Measured: the target output of Functional.gelu.1.forward equals the "
                                 "sigmoid-approximated (quick"), actions[0]
    table = [line for line in section.splitlines() if line.startswith("| `")]
    names = [line.split("`")[1] for line in table]
    assert "Functional.gelu.1.forward.output.0" in names
    assert "Functional.linear.0.forward.output.0" in names
    assert "Functional.layer_norm.0.forward.input.0" not in names, "the same tensor as linear.0's output"
    assert len(names) == len(set(names))


def test_problem_log_and_summary_come_from_the_same_results(tmp_path: Path) -> None:
    """The diagnosis found an operator fault: the problem log says so (not "no problems"); a dataset row without
    a name still counts in the Summary, as Compare §2.4 lists it."""
    project = tmp_path / "demo_project"
    shutil.copytree(DEMO, project)
    path = project / "mig.yaml"
    text = path.read_text(encoding="utf-8").replace("dataset: synthetic-4-clusters (seed 20261202), ", "dataset: '', ")
    path.write_text(text, encoding="utf-8")
    wf = run_workflow(load_project(path))
    docs, zh = render_text(wf, "en"), render_text(wf, "zh")
    log = docs["Mig_report"].split("### 7.1 Problem log", 1)[1].split("\n## ", 1)[0]
    assert "no problems logged" not in log
    assert "| Layer comparison: a layer diverges beyond precision | `acc-agent compare-dumps" in log
    assert "Functional.gelu.1.forward.output.0" in log and "operator fault: " in log  # the category in words
    assert "逐层对比：存在超出精度的偏离层" in zh["Mig_report"] and "| 问题 |" in zh["Mig_report"]
    assert "| Datasets | data/train.npz, synthetic-4-clusters |" in docs["Summary"]


def test_the_project_mapping_reaches_the_dump_comparison(tmp_path: Path) -> None:
    """artefacts.dumps.mapping pairs renamed layers: the workflow passes it to compare_dumps."""
    project = tmp_path / "demo_project"
    shutil.copytree(DEMO, project)
    (project / "names.yaml").write_text("Functional.gelu.1.forward.output.0: Functional.gelu.1.forward.output.0\n",
                                        encoding="utf-8")
    path = project / "mig.yaml"
    text = path.read_text(encoding="utf-8")
    assert "  dumps:\n" in text
    path.write_text(text.replace("  dumps:\n", "  dumps:\n    mapping: names.yaml\n", 1), encoding="utf-8")
    wf = run_workflow(load_project(path))
    dumps = wf.get("dumps")
    assert "--mapping names.yaml" in dumps.command
    assert dumps.output is not None
    assert any(e.ref.endswith("names.yaml") for e in dumps.output.evidence)
