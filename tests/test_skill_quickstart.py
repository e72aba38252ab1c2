"""Each SKILL.md opens with when to use it (English and Chinese triggers), what to call, how to read it.

An agent often reads only the first lines of a skill before acting: they must be enough to make
the right call with the right arguments and to read the answer.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from acc_agent.registry import all_tools

SKILLS = sorted((Path(__file__).resolve().parents[1] / "skills").glob("*/SKILL.md"))
CJK = re.compile(r"[\u4e00-\u9fff]")
CALL = re.compile(r"`([a-z_]+)`\s*`(\{[^`]*\})`")


def _opening(path: Path, lines: int = 14) -> str:
    body = path.read_text(encoding="utf-8").split("---", 2)[2].strip().splitlines()
    assert body[0].startswith("# "), f"{path.parent.name}: the body starts with its title"
    return "\n".join(body[1:lines])


@pytest.mark.parametrize("skill", SKILLS, ids=lambda p: p.parent.name)
def test_first_lines_say_when_what_and_how_to_read(skill: Path) -> None:
    head = _opening(skill)
    when = head[head.index("**Use when**"): head.index("**Call**")]
    assert CJK.search(when) and re.search(r"[a-z]{4,}", when), f"{skill.parent.name}: triggers in both languages"
    call = head[head.index("**Call**"): head.index("**Read**")]
    examples = CALL.findall(call)
    assert examples, f"{skill.parent.name}: no `tool` `{{arguments}}` example in the first lines"
    tools = all_tools()
    for name, args in examples:
        assert name in tools, f"{skill.parent.name}: {name} is not a tool"
        tools[name].input_model.model_validate(json.loads(args))  # real argument names and types
    read = head[head.index("**Read**"):]
    assert "`verdict`" in read or "`source`" in read, f"{skill.parent.name}: say which field decides"
