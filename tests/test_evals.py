"""evals/mcp_demo.yaml: every prompt's expected tool calls, made over MCP on the demo, answer as expected.

The whole set runs in one server session with the real MCP client, within the file's budget of
calls and bytes: the cost an agent pays to reach the same conclusions.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import sys
from pathlib import Path
from typing import Any

import anyio
import yaml
from mcp import ClientSession, StdioServerParameters, stdio_client

from acc_agent.registry import all_tools

ROOT = Path(__file__).resolve().parents[1]
EVALS = ROOT / "evals" / "mcp_demo.yaml"
CJK = re.compile(r"[\u4e00-\u9fff]")


def _load() -> dict[str, Any]:
    data = yaml.safe_load(EVALS.read_text(encoding="utf-8"))
    assert isinstance(data, dict) and data["cases"]
    return data


def _fill(value: Any, places: dict[str, str]) -> Any:
    if isinstance(value, str):
        for key, path in places.items():
            value = value.replace("{" + key + "}", path)
        return value
    if isinstance(value, dict):
        return {k: _fill(v, places) for k, v in value.items()}
    if isinstance(value, list):
        return [_fill(v, places) for v in value]
    return value


def _at(data: Any, dotted: str) -> Any:
    for part in dotted.split("."):
        assert isinstance(data, dict) and part in data, f"answer has no {dotted}"
        data = data[part]
    return data


def test_eval_cases_are_well_formed() -> None:
    data = _load()
    tools = all_tools()
    skills = {p.parent.name: p.read_text(encoding="utf-8") for p in (ROOT / "skills").glob("*/SKILL.md")}
    ids = [c["id"] for c in data["cases"]]
    assert len(ids) == len(set(ids))
    for case in data["cases"]:
        assert case["prompt"] and CJK.search(case["prompt_zh"]), case["id"]
        assert case["skill"] in skills and case["conclusion"], case["id"]
        for call in case["calls"]:
            assert call["tool"] in tools, call["tool"]
            # the skill the prompt triggers teaches the tool it needs
            assert f"`{call['tool']}`" in skills[case["skill"]], (case["id"], call["tool"])
            fields = set(tools[call["tool"]].input_model.model_fields)
            assert set(call["arguments"]) <= fields, (case["id"], set(call["arguments"]) - fields)
    assert sum(len(c["calls"]) for c in data["cases"]) <= data["budget"]["calls"]


def test_eval_calls_over_mcp_reach_the_expected_answers_within_budget(tmp_path: Path) -> None:
    data = _load()
    budget = data["budget"]
    demo = tmp_path / "demo"
    shutil.copytree(ROOT / "samples" / "demo_project", demo)
    (tmp_path / "empty_root").mkdir()
    places = {"demo": str(demo), "tmp": str(tmp_path)}
    env = dict(os.environ) | {"ACC_AGENT_RESULTS_DIR": str(tmp_path / "results")}
    params = StdioServerParameters(command=sys.executable, args=["-m", "acc_agent", "mcp"], env=env)
    spent = {"calls": 0, "bytes": 0}
    problems: list[str] = []

    async def scenario() -> None:
        async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            await session.list_tools()  # the client validates structured content against the listed schemas
            for case in data["cases"]:
                for call in case["calls"]:
                    result = await session.call_tool(call["tool"], _fill(call["arguments"], places))
                    spent["calls"] += 1
                    wire = result.model_dump(mode="json", by_alias=True, exclude_none=True)
                    spent["bytes"] += len(json.dumps(wire, ensure_ascii=False).encode("utf-8"))
                    text = "\n".join(c.text for c in result.content if c.type == "text")
                    where = f"{case['id']}/{call['tool']}"
                    if result.is_error:
                        problems.append(f"{where}: error {text}")
                        continue
                    if len(text.encode("utf-8")) > budget["answer_text"]:
                        problems.append(f"{where}: text of {len(text.encode())} bytes")
                    for path, want in (call.get("expect") or {}).items():
                        got = _at(result.structured_content, path)
                        ok = got in want if isinstance(want, list) else got == want
                        if not ok:
                            problems.append(f"{where}: {path} is {got!r}, expected {want!r}")

    anyio.run(scenario)
    print(f"evals: {spent['calls']} calls, {spent['bytes']} bytes of answers")
    assert not problems, "\n".join(problems)
    assert spent["calls"] <= budget["calls"] and spent["bytes"] <= budget["bytes"], spent
