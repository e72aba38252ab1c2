"""`acc-agent mcp` driven by the MCP SDK's own stdio client, as a coding agent would drive it."""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path
from typing import Any

import anyio
import jsonschema
from mcp import ClientSession, StdioServerParameters, stdio_client
from test_mcp_samples import SAMPLES

from acc_agent.registry import all_tools


def _server_params(results: Path) -> StdioServerParameters:
    env = dict(os.environ) | {"ACC_AGENT_RESULTS_DIR": str(results), "PYTHONUNBUFFERED": "1"}
    return StdioServerParameters(command=sys.executable, args=["-m", "acc_agent", "mcp"], env=env)


def _server_pids() -> list[int]:
    """Our own child processes running the server (stdio_client does not expose the pid)."""
    me = os.getpid()
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            cmd = (entry / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        ppid = int(stat.rsplit(")", 1)[1].split()[1])
        if ppid == me and b"acc_agent" in cmd and b"mcp" in cmd:
            found.append(int(entry.name))
    return found


def _rss_kib(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise AssertionError("no VmRSS")


def _error(result: Any) -> dict[str, Any]:
    assert result.is_error, result
    body = result.structured_content
    assert body is not None and set(body) == {"error"}, body
    err = body["error"]
    assert err["code"] and err["message"] and err["hint"], err
    # The text block carries the same error for clients that ignore structured content.
    assert err["message"] in result.content[0].text
    return err


def _first_required(schema: dict[str, Any]) -> str | None:
    required = schema.get("required", [])
    return required[0] if required else None


def test_mcp_server_lists_calls_and_survives_1000_calls(tmp_path: Path) -> None:
    results = tmp_path / "results"
    specs = all_tools()
    samples = {name: build(tmp_path) for name, build in SAMPLES.items() if name in specs}
    rss: dict[int, int] = {}

    async def scenario() -> None:
        async with (
            stdio_client(_server_params(results)) as (read, write),
            ClientSession(read, write) as session,
        ):
            init = await session.initialize()
            assert init.server_info.name == "acc-agent"
            listed = {t.name: t for t in (await session.list_tools()).tools}
            assert set(listed) == set(specs), "the server must list exactly the registry's tools"
            for name, tool in listed.items():
                assert tool.output_schema is not None and tool.input_schema["type"] == "object"
                # Flat arguments: the input model's own fields, not one nested parameter (full_result,
                # which every tool takes, is said once in the instructions to keep the list small).
                assert set(tool.input_schema["properties"]) == set(specs[name].input_model.model_fields)
                assert tool.description

            # The skills are offered as resources too, for agents without skill-folder support.
            skills_root = Path(__file__).resolve().parents[1] / "skills"
            uris = {str(r.uri) for r in (await session.list_resources()).resources}
            assert {f"skill://{p.parent.name}/SKILL.md" for p in skills_root.glob("*/SKILL.md")} <= uris
            read = await session.read_resource("skill://ascend-migration-check/SKILL.md")
            workflow = skills_root / "ascend-migration-check" / "SKILL.md"
            assert read.contents[0].text == workflow.read_text(encoding="utf-8")
            assert "skill://ascend-migration-check/SKILL.md" in (init.instructions or "")

            # Every tool on its sample: a structured result valid under the declared output schema.
            seconds: dict[str, float] = {}
            for name, args in samples.items():
                started = time.perf_counter()
                result = await session.call_tool(name, args)
                seconds[name] = time.perf_counter() - started
                assert not result.is_error, (name, result.content)
                jsonschema.validate(result.structured_content, listed[name].output_schema)
                assert result.structured_content["verdict"] and result.structured_content["summary"]
                # The text is the same digest in words, not the JSON again; the complete result is linked.
                text = result.content[0].text
                assert result.structured_content["summary"] in text and not text.lstrip().startswith("{")
                assert any(c.type == "resource_link" for c in result.content)
                full = await session.call_tool(name, args | {"full_result": True})
                assert "more" not in full.structured_content
                jsonschema.validate(full.structured_content, listed[name].output_schema)

            # Bad calls: is_error with the structured error and a useful message.
            for name, tool in listed.items():
                err = _error(await session.call_tool(name, {"no_such_argument": 1}))
                assert err["code"] == "invalid_input" and "no_such_argument" in err["message"]
                req = _first_required(tool.input_schema)
                if req is not None:
                    err = _error(await session.call_tool(name, {}))
                    assert req in err["message"]
                    err = _error(await session.call_tool(name, {req: {"not": "a path"}}))
                    assert req in err["message"]
            err = _error(await session.call_tool("no_such_tool", {}))
            assert err["code"] == "unknown_tool" and "parse_training_log" in err["hint"]

            if "parse_training_log" in samples:
                err = _error(
                    await session.call_tool("parse_training_log", {"log": str(tmp_path / "missing.log")})
                )
                assert "missing.log" in err["message"] + err.get("path", "")

            # 1,000 calls, malformed ones among them; memory measured at call 100 and call 1000.
            (pid,) = _server_pids()
            # Valid calls in the loop use the quick tools (every tool already ran above).
            cycle = [(n, a) for n, a in samples.items() if seconds[n] < 0.1] or list(samples.items())[:1]
            for i in range(1, 1001):
                if i % 4 == 0 and cycle:
                    name, args = cycle[(i // 4) % len(cycle)]
                    result = await session.call_tool(name, args)
                    assert not result.is_error, (i, name)
                elif i % 4 == 1:
                    _error(await session.call_tool("no_such_tool", {"x": i}))
                elif i % 4 == 2:
                    name = list(listed)[i % len(listed)]
                    _error(await session.call_tool(name, {"bogus": [i]}))
                else:
                    name = list(listed)[i % len(listed)]
                    req = _first_required(listed[name].input_schema) or "no_such_argument"
                    _error(await session.call_tool(name, {req: 3.5}))
                if i in (100, 1000):
                    rss[i] = _rss_kib(pid)
            # Calls fired together (agents do this) all come back, each with its own answer.
            answers: dict[int, Any] = {}

            async def one(k: int) -> None:
                if k % 2 and cycle:
                    answers[k] = await session.call_tool(cycle[k % len(cycle)][0], cycle[k % len(cycle)][1])
                else:
                    answers[k] = await session.call_tool("no_such_tool", {"k": k})

            async with anyio.create_task_group() as group:
                for k in range(12):
                    group.start_soon(one, k)
            assert all(answers[k].is_error is not bool(k % 2 and cycle) for k in range(12))

            # Still answering after all that.
            await session.send_ping()
            assert {t.name for t in (await session.list_tools()).tools} == set(specs)

    anyio.run(scenario)
    growth_mib = (rss[1000] - rss[100]) / 1024
    print(f"server RSS at call 100: {rss[100] / 1024:.1f} MiB, at call 1000: {rss[1000] / 1024:.1f} MiB")
    assert growth_mib < 10, f"server memory grew {growth_mib:.1f} MiB between call 100 and call 1000"


def test_raw_protocol_garbage_is_survived_and_stdout_stays_pure(tmp_path: Path) -> None:
    """Below the SDK client: a line that is not JSON, bad params, an unknown method; stdout holds JSON-RPC only."""
    import queue
    import subprocess
    import threading

    lines = [
        {"jsonrpc": "2.0", "id": 1, "method": "initialize",
         "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}}},
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        "this is not json",
        {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "x", "arguments": "not an object"}},
        {"jsonrpc": "2.0", "id": 3, "method": "no/such/method"},
        {"jsonrpc": "2.0", "id": 4, "method": "tools/call", "params": {"name": "no_such_tool", "arguments": {}}},
        {"jsonrpc": "2.0", "id": 99, "method": "tools/list"},
    ]  # fmt: skip
    proc = subprocess.Popen(
        [sys.executable, "-m", "acc_agent", "mcp"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        env=dict(os.environ) | {"ACC_AGENT_RESULTS_DIR": str(tmp_path)},
    )
    assert proc.stdin is not None and proc.stdout is not None
    out: queue.Queue[str] = queue.Queue()
    stdout = proc.stdout
    threading.Thread(target=lambda: [out.put(line) for line in stdout], daemon=True).start()
    try:
        proc.stdin.write("\n".join(m if isinstance(m, str) else json.dumps(m) for m in lines) + "\n")
        proc.stdin.flush()
        answers: dict[int, dict[str, Any]] = {}
        deadline = time.monotonic() + 60
        while 99 not in answers and time.monotonic() < deadline:
            try:
                message = json.loads(out.get(timeout=1))  # anything but JSON-RPC on stdout fails here
            except queue.Empty:
                continue
            assert message["jsonrpc"] == "2.0"
            answers[message["id"]] = message
    finally:
        proc.stdin.close()
        proc.wait(timeout=30)
    assert answers[1]["result"]["serverInfo"]["name"] == "acc-agent"
    assert answers[2]["error"]["code"] == -32602
    assert answers[3]["error"]["code"] == -32601
    assert answers[4]["result"]["isError"] is True
    assert answers[4]["result"]["structuredContent"]["error"]["code"] == "unknown_tool"
    assert {t["name"] for t in answers[99]["result"]["tools"]} == set(all_tools())
    assert proc.returncode == 0


def test_normal_cli_path_does_not_import_the_mcp_sdk() -> None:
    """The SDK costs ≈0.7 s to import: only `acc-agent mcp` (and `schema --format mcp`) may load it."""
    import subprocess

    code = (
        "import sys\n"
        "from acc_agent.cli import build_app\n"
        "build_app()\n"
        "loaded = sorted(m for m in sys.modules if m == 'mcp' or m.startswith(('mcp.', 'acc_agent.mcp_server')))\n"
        "print(','.join(loaded))\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "", f"imported on the normal CLI path: {proc.stdout.strip()}"
