"""Skill folders: valid under the Agent Skills spec, true to the registry, installable."""

from __future__ import annotations

import json
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
from skills_ref import validate

from acc_agent.registry import all_tools

SKILLS = Path(__file__).resolve().parents[1] / "skills"
SKILL_DIRS = sorted(p.parent for p in SKILLS.glob("*/SKILL.md"))
EXPECTED = {
    "ascend-migration-check",
    "ascend-env-check",
    "ascend-baseline-select",
    "ascend-short-run",
    "ascend-perf-measure",
    "ascend-accuracy-compare",
}
CJK = re.compile(r"[\u4e00-\u9fff]")


def _frontmatter(text: str) -> str:
    return text.split("---", 2)[1]


def _body(path: Path) -> str:
    return path.read_text(encoding="utf-8").split("---", 2)[2]


def test_the_six_skills_exist() -> None:
    assert {p.name for p in SKILL_DIRS} == EXPECTED


@pytest.mark.parametrize("skill", SKILL_DIRS, ids=lambda p: p.name)
def test_skill_passes_reference_validator(skill: Path) -> None:
    assert validate(skill) == []


@pytest.mark.parametrize("skill", SKILL_DIRS, ids=lambda p: p.name)
def test_description_says_when_and_carries_chinese_triggers(skill: Path) -> None:
    front = _frontmatter((skill / "SKILL.md").read_text(encoding="utf-8"))
    assert "Use " in front and "when" in front
    assert CJK.search(front), f"{skill.name}: no Chinese trigger words"
    assert len((skill / "SKILL.md").read_text(encoding="utf-8").splitlines()) < 500


@pytest.mark.parametrize("skill", SKILL_DIRS, ids=lambda p: p.name)
def test_relative_links_resolve(skill: Path) -> None:
    for target in re.findall(r"\]\(([^)#]+)\)", _body(skill / "SKILL.md")):
        if "://" not in target:
            assert (skill / target).is_file(), f"{skill.name}: broken link {target}"


def test_every_registered_tool_is_taught_by_a_skill() -> None:
    text = "\n".join((d / "SKILL.md").read_text(encoding="utf-8") for d in SKILL_DIRS)
    missing = [name for name in all_tools() if f"`{name}`" not in text]
    assert not missing, f"tools no skill mentions (add them to a SKILL.md): {missing}"


def _cli_examples() -> list[tuple[str, list[str]]]:
    """(skill, argv) for every `acc-agent ...` command quoted in a skill."""
    found = []
    for d in SKILL_DIRS:
        for span in re.findall(r"`(acc-agent [^`]+)`", (d / "SKILL.md").read_text(encoding="utf-8")):
            found.append((d.name, shlex.split(span)[1:]))
    return found


def test_cli_examples_use_real_commands_and_options() -> None:
    tools = {spec.cli_name: spec for spec in all_tools().values()}
    checked = 0
    for skill, argv in _cli_examples():
        spec = tools.get(argv[0])
        if spec is None:
            continue  # a command whose tool has not landed yet; checked once it registers
        options = {"--" + f.replace("_", "-") for f in spec.input_model.model_fields} | {"--json"}
        for word in argv[1:]:
            if word.startswith("--"):
                assert word in options, f"{skill}: `{argv[0]}` has no option {word}"
        checked += 1
    assert checked or not tools


def test_mcp_examples_use_real_argument_names() -> None:
    """`tool_name` `{"arg": ...}` pairs in the skills name real input fields with values of the right type."""
    tools = all_tools()
    for d in SKILL_DIRS:
        text = (d / "SKILL.md").read_text(encoding="utf-8")
        for name, args in re.findall(r"`([a-z_]+)`[^`\n]{0,12}`(\{[^`]*\})`", text):
            if name not in tools:
                continue
            example = json.loads(args)
            fields = set(tools[name].input_model.model_fields) | {"full_result"}
            assert set(example) <= fields, (
                f"{d.name}: {name} has no argument(s) {sorted(set(example) - fields)}"
            )
            example.pop("full_result", None)
            tools[name].input_model.model_validate(example)  # the values' types are right too


def test_skills_install_copies_into_agent_folders(tmp_path: Path) -> None:
    cmd = [sys.executable, "-m", "acc_agent", "skills", "install", "--target", str(tmp_path)]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    for layout in (".claude/skills", ".agents/skills"):
        for skill in SKILL_DIRS:
            copied = tmp_path / layout / skill.name
            assert (copied / "SKILL.md").read_bytes() == (skill / "SKILL.md").read_bytes()
            assert validate(copied) == []
    assert (tmp_path / ".claude/skills/ascend-migration-check/references/deliverables.md").is_file()
    # A second install replaces our folders and leaves the user's own skills alone.
    own = tmp_path / ".claude/skills/my-skill"
    own.mkdir()
    (own / "SKILL.md").write_text("mine")
    stale = tmp_path / ".claude/skills/ascend-env-check/old.txt"
    stale.write_text("stale")
    proc = subprocess.run(cmd + ["--agent", "claude"], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert (own / "SKILL.md").read_text() == "mine" and not stale.exists()


def test_skills_install_bad_layout_is_a_clear_error(tmp_path: Path) -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "acc_agent", "skills", "install", "--target", str(tmp_path), "--agent", "vim"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 2
    assert "vim" in proc.stderr and "claude" in proc.stderr
    assert not (tmp_path / ".claude").exists()
