"""Sample arguments for every registered tool, built from small real inputs.

The MCP test calls each registered tool with these; a tool without a sample fails
:func:`test_every_registered_tool_has_sample_arguments`, so a new tool cannot slip through
the agent front ends untested.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from acc_agent.registry import all_tools, call_tool

sys.path.insert(0, str(Path(__file__).parent / "fixtures" / "agents"))
from make_dump import write_dump_pair  # noqa: E402

SHARED = Path(__file__).resolve().parents[2] / "shared"
LOGS = SHARED / "realdata" / "logs"
MEGATRON_NPU_LOG = LOGS / "ascend-MindSpeed-Core-MS__tests_st_net_test_ds3_pretrain__pta_det.txt"
HF_TRAINER_STATE = LOGS / "Tashu014-lora-imdb-distilbert__trainer_state.json"

Sample = Callable[[Path], dict[str, Any]]


def _check_environment(tmp: Path) -> dict[str, Any]:
    root = tmp / "empty_root"
    root.mkdir(exist_ok=True)
    return {"root": str(root), "probe": "off"}


def _diff_environments(tmp: Path) -> dict[str, Any]:
    """Two real snapshots written by check_environment (NPU side and GPU side of an empty root)."""
    root = tmp / "empty_root"
    root.mkdir(exist_ok=True)
    snaps = {}
    for side in ("npu", "gpu"):
        path = tmp / f"env_{side}.json"
        call_tool(
            "check_environment",
            {"root": str(root), "probe": "off", "target": side, "snapshot_out": str(path)},
        )
        snaps[side] = str(path)
    return {"baseline": snaps["gpu"], "target": snaps["npu"]}


def _compare_dumps(tmp: Path) -> dict[str, Any]:
    golden, target = write_dump_pair(tmp / "dumps", rows=6, fault_at=4)
    return {"golden": str(golden), "target": str(target), "workers": 1}


def _parse_training_log(tmp: Path) -> dict[str, Any]:
    return {"log": str(MEGATRON_NPU_LOG)}


SAMPLES: dict[str, Sample] = {
    "check_environment": _check_environment,
    "diff_environments": _diff_environments,
    "compare_dumps": _compare_dumps,
    "parse_training_log": _parse_training_log,
}

def test_every_registered_tool_has_sample_arguments() -> None:
    missing = sorted(set(all_tools()) - set(SAMPLES))
    assert not missing, f"add sample arguments for {missing} to tests/test_mcp_samples.py"


def test_samples_run_in_process(tmp_path: Path) -> None:
    for name, build in SAMPLES.items():
        if name in all_tools():
            result = call_tool(name, build(tmp_path))
            assert result.summary, name
