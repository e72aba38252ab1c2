"""What the agent front end costs, as ratios against a reference run in the same invocation.

1. Per-call overhead of MCP over stdio vs calling the same tool in process (reference:
   ``registry.call_tool`` + ``compact_result`` on the same arguments).
2. Tokens an agent pays: the default (compact) JSON of a 2,000-tensor ``compare_dumps`` result
   (reference: every row inline, ``all_rows=true`` + ``full_result=true``).
3. Server memory: RSS after 100 and after 1,000 calls (reference: RSS after 100 calls).

Run: ``python bench/bench_mcp.py [--calls 1000]``.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import anyio
from mcp import ClientSession, StdioServerParameters, stdio_client

from acc_agent.compact import compact_result
from acc_agent.registry import all_tools

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "fixtures" / "agents"))
from make_dump import write_dump_pair  # noqa: E402

LOG = (
    ROOT.parent
    / "shared"
    / "realdata"
    / "logs"
    / "ascend-MindSpeed-Core-MS__tests_st_net_test_ds3_pretrain__pta_det.txt"
)


def _rss_kib(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return 0


def _server_pid() -> int:
    me = os.getpid()
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                ppid = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
                cmd = (entry / "cmdline").read_bytes()
            except OSError:
                continue
            if ppid == me and b"acc_agent" in cmd:
                return int(entry.name)
    raise SystemExit("server process not found")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=1000)
    opts = parser.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="bench_mcp_"))
    os.environ["ACC_AGENT_RESULTS_DIR"] = str(tmp / "results")
    args = {"log": str(LOG)}
    spec = all_tools()["parse_training_log"]

    # Reference 1: in-process calls.
    inproc = []
    for _ in range(50):
        t0 = time.perf_counter()
        compact_result(spec, spec.run(args))
        inproc.append(time.perf_counter() - t0)

    golden, target = write_dump_pair(tmp / "dumps", rows=2000, fault_at=1500)
    dump_args: dict[str, Any] = {"golden": str(golden), "target": str(target)}
    report: dict[str, Any] = {}

    async def scenario() -> None:
        params = StdioServerParameters(
            command=sys.executable, args=["-m", "acc_agent", "mcp"], env=dict(os.environ)
        )
        t_start = time.perf_counter()
        async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            await session.list_tools()
            report["startup_s"] = time.perf_counter() - t_start
            pid = _server_pid()
            times = []
            for i in range(1, opts.calls + 1):
                t0 = time.perf_counter()
                if i % 2:
                    await session.call_tool("parse_training_log", args)
                    times.append(time.perf_counter() - t0)
                else:
                    await session.call_tool("parse_training_log", {"log": 7})
                if i == 100:
                    report["rss_100_kib"] = _rss_kib(pid)
            report["rss_end_kib"] = _rss_kib(pid)
            report["mcp_call_s"] = statistics.median(times)
            compact = await session.call_tool("compare_dumps", dump_args)
            # Reference: everything inline, every row (the tool's all_rows and our full_result).
            full = await session.call_tool(
                "compare_dumps", dump_args | {"all_rows": True, "full_result": True}
            )
            # The generic compaction alone (the tool asked for every row, the front end shortens it).
            generic = await session.call_tool("compare_dumps", dump_args | {"all_rows": True})
            report["generic_bytes"] = len(json.dumps(generic.structured_content, separators=(",", ":")))
            content = compact.structured_content
            report["compact_bytes"] = len(json.dumps(content, separators=(",", ":")))
            report["full_bytes"] = len(json.dumps(full.structured_content, separators=(",", ":")))
            report["compact_rows"] = len(content["rows"])
            report["full_rows"] = len(full.structured_content["rows"])
            report["on_disk"] = content.get("csv_path") or content.get("compact", {}).get("full_result")

    anyio.run(scenario)
    ref = statistics.median(inproc)
    print(f"server start-up (spawn + initialize + list_tools): {report['startup_s']:.2f} s")
    print(
        f"parse_training_log per call: MCP stdio {report['mcp_call_s'] * 1e3:.1f} ms vs in-process reference "
        f"{ref * 1e3:.1f} ms -> ratio {report['mcp_call_s'] / ref:.2f}x"
    )
    print(
        f"compare_dumps 2,000 tensors: default (compact) {report['compact_bytes']} B, {report['compact_rows']} rows "
        f"vs all_rows+full_result reference {report['full_bytes']} B, {report['full_rows']} rows -> ratio "
        f"{report['compact_bytes'] / report['full_bytes']:.4f}; every row on disk at {report['on_disk']}"
    )
    print(
        f"generic compaction of the all_rows result: {report['generic_bytes']} B vs the same reference -> ratio "
        f"{report['generic_bytes'] / report['full_bytes']:.4f}"
    )
    print(
        f"server RSS after {opts.calls} calls {report['rss_end_kib'] / 1024:.1f} MiB vs reference after 100 calls "
        f"{report['rss_100_kib'] / 1024:.1f} MiB -> ratio {report['rss_end_kib'] / report['rss_100_kib']:.3f}"
    )


if __name__ == "__main__":
    main()
