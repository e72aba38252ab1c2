"""init_project: the commented mig.yaml, filled from arguments, shared by `acc-agent init` and MCP."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from acc_agent import frontend
from acc_agent.errors import AccAgentError
from acc_agent.io.project_file import load_project, parse_project
from acc_agent.registry import call_tool

TEMPLATE = Path(__file__).resolve().parents[1] / "templates" / "mig.yaml"


def test_writes_the_commented_template_with_the_given_values(tmp_path: Path) -> None:
    out = call_tool("init_project", {
        "folder": str(tmp_path / "proj"), "target_precision": "fp32", "mode": "inference",
        "dumps": {"golden": "dumps/g", "target": "dumps/t"},
        "artefacts": {"target_log": "logs/npu.log", "golden_dump": "dumps/g"},  # an old key is understood too
    })
    path = Path(out.path)
    text = path.read_text(encoding="utf-8")
    # every comment of the template survives, so a person can finish the file
    comments = [line.split("#", 1)[1] for line in TEMPLATE.read_text(encoding="utf-8").splitlines() if "#" in line]
    assert all(c in text for c in comments)
    project = load_project(path)
    assert project.model.target_precision == "fp32" and project.model.mode == "inference"
    assert project.artefacts.dumps.golden == "dumps/g" and project.artefacts.dumps.target == "dumps/t"
    assert project.artefacts.target_log == "logs/npu.log" and project.project.name == "proj"
    assert "artefacts.dumps.golden" in out.filled and "baseline_log" in out.empty_artefacts
    assert "dumps.golden" not in out.empty_artefacts
    assert "acc-agent report " in out.next_step  # the one command that writes the documents


def test_refuses_to_overwrite_and_names_the_fix(tmp_path: Path) -> None:
    call_tool("init_project", {"folder": str(tmp_path)})
    with pytest.raises(AccAgentError) as cli:
        call_tool("init_project", {"folder": str(tmp_path)})
    assert cli.value.code == "exists" and "--force" in cli.value.hint
    with frontend.use("mcp"), pytest.raises(AccAgentError) as mcp:
        call_tool("init_project", {"folder": str(tmp_path)})
    assert "`force=true`" in mcp.value.hint and mcp.value.field == "force"
    again = call_tool("init_project", {"folder": str(tmp_path), "force": True, "name": "resnet50"})
    assert load_project(Path(again.path)).project.name == "resnet50"


def test_unknown_artefact_key_is_an_error_naming_the_known_ones(tmp_path: Path) -> None:
    with pytest.raises(AccAgentError) as err:
        call_tool("init_project", {"folder": str(tmp_path), "artefacts": {"golden": "x"}})
    assert err.value.field == "artefacts" and "target_log" in err.value.hint
    assert not (tmp_path / "mig.yaml").exists()


def test_old_and_new_dump_keys_agree_or_fail() -> None:
    base = "project: {name: p}\nmodel: {name: m}\nartefacts:\n"
    old = parse_project(base + "  golden_dump: g\n  target_dump: t\n  bench_dump: b\n")
    new = parse_project(base + "  dumps: {golden: g, target: t, bench: b}\n")
    assert old.artefacts.dumps == new.artefacts.dumps and old.artefacts.golden_dump == "g"
    with pytest.raises(AccAgentError) as err:
        parse_project(base + "  golden_dump: g\n  dumps: {golden: other}\n")
    assert "dumps.golden" in err.value.message


def test_cli_init_calls_the_same_tool(tmp_path: Path) -> None:
    proc = subprocess.run([sys.executable, "-m", "acc_agent", "init", str(tmp_path)], capture_output=True,
                          text=True, timeout=60)
    assert proc.returncode == 0 and "wrote" in proc.stdout
    assert (tmp_path / "mig.yaml").read_text(encoding="utf-8").splitlines()[0] == \
        TEMPLATE.read_text(encoding="utf-8").splitlines()[0]
    json_run = subprocess.run([sys.executable, "-m", "acc_agent", "init-project", str(tmp_path), "--force",
                               "--target-precision", "bf16", "--json"], capture_output=True, text=True, timeout=60)
    assert json_run.returncode == 0 and '"verdict": "written"' in json_run.stdout
    assert load_project(tmp_path / "mig.yaml").model.target_precision == "bf16"
