"""What an agent pays and gets over MCP, measured with the SDK's own stdio client.

- ``tools/list`` fits a 20 KB budget and every tool carries honest annotations and a title;
- a dump comparison answers with a short digest (text and structured content, each within 4 KB)
  plus ``resource_link`` content to the full CSV table and the complete JSON result;
- long tools report progress when the client sends a progressToken, and a cancelled call stops;
- bad input comes back as ``isError`` naming the argument and the fix, in MCP words.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import time
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlparse

import anyio
import jsonschema
from mcp import ClientSession, StdioServerParameters, stdio_client

from acc_agent.registry import all_tools

DEMO = Path(__file__).resolve().parents[1] / "samples" / "demo_project"
#: The whole tools/list answer an agent pays for before its first call.
TOOLS_LIST_BUDGET = 20_000
#: One answer's text, and its structured content.
ANSWER_TEXT_BUDGET = 4_096
ANSWER_STRUCTURED_BUDGET = 4_096
#: Tools that run code the user names (a command, a callable, a model builder).
RUNS_USER_CODE = {"measure_performance", "bisect_precision"}


def _size(obj: Any) -> int:
    return len(json.dumps(obj, ensure_ascii=False, separators=(",", ":")).encode("utf-8"))


def _params(results: Path) -> StdioServerParameters:
    env = dict(os.environ) | {"ACC_AGENT_RESULTS_DIR": str(results), "PYTHONUNBUFFERED": "1"}
    return StdioServerParameters(command=sys.executable, args=["-m", "acc_agent", "mcp"], env=env)


def _text(result: Any) -> str:
    return "\n".join(c.text for c in result.content if c.type == "text")


def _links(result: Any) -> dict[str, Path]:
    """Resource links of an answer, by file suffix."""
    out = {}
    for c in result.content:
        if c.type == "resource_link":
            uri = str(c.uri)
            assert uri.startswith("file://"), uri
            path = Path(unquote(urlparse(uri).path))
            out[path.suffix] = path
    return out


def test_tool_list_budget_annotations_and_a_lean_dump_answer(tmp_path: Path) -> None:
    demo = tmp_path / "demo"
    shutil.copytree(DEMO, demo)
    specs = all_tools()
    dumps = demo / "dumps"

    async def scenario() -> None:
        async with stdio_client(_params(tmp_path / "results")) as (read, write), ClientSession(read, write) as s:
            await s.initialize()
            listed = await s.list_tools()
            wire = listed.model_dump(mode="json", by_alias=True, exclude_none=True)
            size = _size(wire)
            print(f"tools/list: {size} bytes for {len(listed.tools)} tools")
            worst = sorted(((_size(t), t["name"]) for t in wire["tools"]), reverse=True)[:3]
            assert size <= TOOLS_LIST_BUDGET, f"tools/list is {size} bytes (largest: {worst})"

            for tool in listed.tools:
                spec = specs[tool.name]
                ann = tool.annotations
                assert ann is not None and ann.title, tool.name
                assert spec.read_only is not None, f"{tool.name} does not declare read_only in @tool(...)"
                assert ann.read_only_hint is spec.read_only, tool.name
                if not spec.read_only:
                    assert ann.destructive_hint is not None and ann.idempotent_hint is not None, tool.name
                assert ann.open_world_hint is (tool.name in RUNS_USER_CODE), tool.name
                assert tool.output_schema is not None and tool.output_schema["required"] == ["verdict", "summary"]
            read_only = {t.name for t in listed.tools if t.annotations and t.annotations.read_only_hint}
            assert {"compare_tensors", "select_baseline", "parse_training_log", "compare_performance",
                    "diff_environments"} <= read_only
            assert listed.tools[[t.name for t in listed.tools].index("init_project")].annotations.destructive_hint

            args = {"golden": str(dumps / "golden/step0/rank0"), "target": str(dumps / "target/step0/rank0"),
                    "bench": str(dumps / "bench/step0/rank0")}
            result = await s.call_tool("compare_dumps", args)
            assert not result.is_error, _text(result)
            text, structured = _text(result), result.structured_content
            print(f"compare_dumps on the demo: text {len(text.encode())} B, structured {_size(structured)} B, "
                  f"whole answer {_size(result.model_dump(mode='json', by_alias=True, exclude_none=True))} B")
            assert len(text.encode()) <= ANSWER_TEXT_BUDGET and _size(structured) <= ANSWER_STRUCTURED_BUDGET
            jsonschema.validate(structured, listed.tools[[t.name for t in listed.tools].index("compare_dumps")]
                                .output_schema)
            # Summary first: verdict and where it goes wrong, then the rows that matter and what to do.
            first = structured["first_divergence"]
            assert text.splitlines()[0].startswith(f"compare_dumps: [{structured['verdict']}]")
            assert first["name"] in text and first["enters_through"] in text
            assert "next_actions" in text and 0 < len(structured["rows"]) <= 10
            assert first["name"] in {r["name"] for r in structured["rows"]}
            # Text and structured content do not repeat each other beyond the digest: no JSON in the text.
            assert not text.lstrip().startswith("{") and json.dumps(structured)[:200] not in text
            # The full table and the complete result are files behind resource links.
            links = _links(result)
            assert set(links) >= {".csv", ".json"} and all(p.is_file() for p in links.values())
            complete = json.loads(links[".json"].read_text(encoding="utf-8"))
            assert complete["rows_total"] == structured["rows_total"] and "evidence" in complete
            assert len(links[".csv"].read_text(encoding="utf-8").splitlines()) == complete["rows_total"] + 1
            assert structured["more"]["full_result"] == str(links[".json"])

            full = await s.call_tool("compare_dumps", args | {"full_result": True})
            assert full.structured_content["rows"] == complete["rows"] and "more" not in full.structured_content
            assert len(_text(full).encode()) <= ANSWER_TEXT_BUDGET  # the text stays the digest

    anyio.run(scenario)


def test_progress_notifications_and_cancellation(tmp_path: Path) -> None:
    dumps = DEMO / "dumps"
    slow = f'{sys.executable} -c "import time; time.sleep(0.2)"'

    async def scenario() -> None:
        async with stdio_client(_params(tmp_path / "results")) as (read, write), ClientSession(read, write) as s:
            await s.initialize()
            seen: list[tuple[float, float | None, str | None]] = []

            async def on_progress(progress: float, total: float | None, message: str | None) -> None:
                seen.append((progress, total, message))

            args = {"golden": str(dumps / "golden/step0/rank0"), "target": str(dumps / "target/step0/rank0"),
                    "workers": 1}
            result = await s.call_tool("compare_dumps", args, progress_callback=on_progress)
            assert not result.is_error
            await anyio.sleep(0.2)  # notifications are delivered beside the response
            assert seen, "compare_dumps sent no progress notification for a progressToken"
            values = [p for p, _, _ in seen]
            assert values == sorted(values) and seen[-1][1] is not None and values[-1] == seen[-1][1]
            assert all(m and "tensor pairs" in m for _, _, m in seen)

            # Without a progress callback the client sends no token, and the server sends nothing.
            seen.clear()
            await s.call_tool("compare_dumps", args)
            await anyio.sleep(0.2)
            assert not seen

            # A long measurement: progress flows, and cancelling it stops the tool itself.
            measuring = anyio.Event()

            async def on_measure(progress: float, total: float | None, message: str | None) -> None:
                seen.append((progress, total, message))
                measuring.set()

            scope = anyio.CancelScope()
            long_args = {"command": slow, "batch_sizes": [1], "warmup": 0, "iterations": 150, "requested": True}

            async def measure() -> None:
                with scope:
                    await s.call_tool("measure_performance", long_args, progress_callback=on_measure)

            async with anyio.create_task_group() as group:
                group.start_soon(measure)
                with anyio.fail_after(60):
                    await measuring.wait()
                await anyio.sleep(0.6)
                scope.cancel()
            assert seen and all("batch size 1" in (m or "") for _, _, m in seen)
            # Calls run one at a time: this one waits until the cancelled measurement has really
            # stopped (150 runs of 0.2 s would take 30 s or more).
            started = time.monotonic()
            quick = await s.call_tool("compare_tensors", {"golden": str(DEMO / "golden/baseline_outputs.npz"),
                                                          "target": str(DEMO / "golden/npu_outputs.npz")})
            waited = time.monotonic() - started
            assert not quick.is_error and waited < 12, f"the cancelled measurement kept running ({waited:.1f} s)"

    anyio.run(scenario)


def test_errors_name_the_argument_and_the_fix_in_mcp_words(tmp_path: Path) -> None:
    async def scenario() -> None:
        async with stdio_client(_params(tmp_path / "results")) as (read, write), ClientSession(read, write) as s:
            await s.initialize()

            async def error(name: str, args: dict[str, Any]) -> dict[str, Any]:
                result = await s.call_tool(name, args)
                assert result.is_error, _text(result)
                body = result.structured_content["error"]
                assert body["message"] in _text(result) and body["hint"] in _text(result)
                assert "--" not in body["hint"], body  # no CLI flags for an MCP caller
                return dict(body)

            missing = await error("compare_dumps", {"golden": "g"})
            assert missing["field"] == "target" and "Pass `target`" in missing["hint"]
            extra = await error("compare_tensors", {"golden": "g", "target": "t", "tolerance": 1})
            assert extra["field"] == "tolerance" and "Remove `tolerance`" in extra["hint"] and "rtol, atol" in extra["hint"]
            wrong = await error("compare_dumps", {"golden": "g", "target": "t", "top": "many"})
            assert wrong["field"] == "top" and "Correct `top`" in wrong["hint"]
            bad = await error("measure_performance", {"callable": "no-colon", "requested": True})
            assert bad["field"] == "callable" and "`callable=" in bad["hint"]

            # The project file is made over MCP too, and a second call says which argument overwrites.
            folder = tmp_path / "proj"
            made = await s.call_tool("init_project", {"folder": str(folder)})
            assert not made.is_error and (folder / "mig.yaml").is_file()
            again = await error("init_project", {"folder": str(folder)})
            assert again["field"] == "force" and "`force=true`" in again["hint"]
            # An empty project renders; each gap names the tool call that fills it, not a command line.
            docs = await s.call_tool("render_deliverables", {"config": str(folder / "mig.yaml"), "plots": False})
            assert not docs.is_error and docs.structured_content["verdict"] == "with_gaps"
            full = json.loads(_links(docs)[".json"].read_text(encoding="utf-8"))
            commands = [g["command"] for g in full["gaps"]]
            assert commands and not any(c.startswith("acc-agent") for c in commands), commands
            assert any(c.startswith("compare_dumps(golden=") for c in commands)
            # A measurement that is not triggered hands back the call to make, not a shell line.
            ne = await s.call_tool("measure_performance", {"callable": "numpy:ones", "requested": False})
            template = ne.structured_content["not_executed"]["command_template"]
            assert template.startswith("measure_performance(") and "--" not in template

    anyio.run(scenario)
