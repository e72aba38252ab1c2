"""Sample arguments for every registered tool, built from small real inputs.

The MCP test calls each registered tool with these; a tool without a sample fails
:func:`test_every_registered_tool_has_sample_arguments`, so a new tool cannot slip through
the agent front ends untested.
"""

from __future__ import annotations

import shutil
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from acc_agent.registry import all_tools, call_tool

sys.path.insert(0, str(Path(__file__).parent / "fixtures" / "agents"))
from make_dump import write_call_dumps, write_dump_pair, write_repeat  # noqa: E402

LOGS = Path(__file__).resolve().parent / "data" / "realdata" / "logs"
MEGATRON_NPU_LOG = LOGS / "ascend-MindSpeed-Core-MS__tests_st_net_test_ds3_pretrain__pta_det.txt"
HF_TRAINER_STATE = LOGS / "Tashu014-lora-imdb-distilbert__trainer_state.json"
DEMO_PROJECT = Path(__file__).resolve().parents[1] / "samples" / "demo_project"

Sample = Callable[[Path], dict[str, Any]]


def _check_environment(tmp: Path) -> dict[str, Any]:
    root = tmp / "empty_root"
    root.mkdir(exist_ok=True)
    return {
        "root": str(root),
        "probe": "off",
        "npu_smi_output": str(DEMO_PROJECT / "env" / "npu-smi-info.txt"),
    }


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


def _replay_op(tmp: Path) -> dict[str, Any]:
    golden, target = write_call_dumps(tmp / "calls")
    return {"golden": str(golden), "target": str(target), "op": "Functional.relu.0.forward"}


def _bisect_precision(tmp: Path) -> dict[str, Any]:
    """A real two-layer torch model written beside the call."""
    tmp.mkdir(parents=True, exist_ok=True)
    (tmp / "tiny_model.py").write_text(
        "import torch\nfrom torch import nn\n\n\ndef build():\n    torch.manual_seed(0)\n"
        "    return nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 2)), (torch.randn(3, 4),)\n")
    return {"model": f"{tmp / 'tiny_model.py'}:build", "low": "bf16"}


def _init_project(tmp: Path) -> dict[str, Any]:
    """A new project file in a fresh folder, with the demo's dumps; force, because agents may call twice."""
    dumps = DEMO_PROJECT / "dumps"
    return {"folder": str(tmp / "new_project"), "force": True, "target_precision": "fp32",
            "dumps": {"golden": str(dumps / "golden/step0/rank0"), "target": str(dumps / "target/step0/rank0"),
                      "bench": str(dumps / "bench/step0/rank0")},
            "artefacts": {"target_log": str(DEMO_PROJECT / "logs/npu_fp16_train.log")}}


def _parse_training_log(tmp: Path) -> dict[str, Any]:
    return {"log": str(MEGATRON_NPU_LOG)}


def _judge_short_run(tmp: Path) -> dict[str, Any]:
    """A real Hugging Face run; the window is sent in its object form, as the schema publishes it."""
    return {
        "log": str(HF_TRAINER_STATE),
        "window": {"start_step": 0, "end_step": 100},
        "band": {"low": 0.3, "high": 0.5},
        "record": False,
    }


def _render_deliverables(tmp: Path) -> dict[str, Any]:
    """The bundled demo project (real numerics from samples/make_samples.py), copied so nothing is written in the repo."""
    project = tmp / "demo_project"
    if not project.exists():
        shutil.copytree(DEMO_PROJECT, project)
    return {"config": str(project / "mig.yaml"), "out": str(tmp / "deliverables"), "plots": False}


def _compare_loss_curves(tmp: Path) -> dict[str, Any]:
    """The demo project's FP32 baseline and emulated-FP16 target logs; tolerances as a JSON object (a map)."""
    logs = DEMO_PROJECT / "logs"
    return {
        "baseline_log": str(logs / "gpu_fp32_train.log"),
        "target_log": str(logs / "npu_fp16_train.log"),
        "tolerances": {"loss": 0.05},
    }


def _compare_tensors(tmp: Path) -> dict[str, Any]:
    """The demo's golden sample: FP32 baseline outputs vs the emulated-FP16 target outputs."""
    golden = DEMO_PROJECT / "golden"
    return {
        "golden": str(golden / "baseline_outputs.npz"),
        "target": str(golden / "npu_outputs.npz"),
        "precision": "fp16",
    }


def _measure_performance(tmp: Path) -> dict[str, Any]:
    """Times a real numpy call (numpy.ones(batch_size)); the user asked for it, so it is triggered."""
    return {
        "callable": "numpy:ones",
        "batch_sizes": [1, 8],
        "warmup": 2,
        "iterations": 20,
        "requested": True,
        "out": str(tmp / "perf_numpy.json"),
    }


def _compare_performance(tmp: Path) -> dict[str, Any]:
    """Two real measurements written by measure_performance (numpy.ones vs numpy.zeros)."""
    paths = {}
    for side, func in (("baseline", "numpy:ones"), ("target", "numpy:zeros")):
        path = tmp / f"perf_{side}.json"
        if not path.exists():
            args = _measure_performance(tmp) | {"callable": func, "out": str(path)}
            call_tool("measure_performance", args)
        paths[side] = str(path)
    return paths


def _compare_run_configs(tmp: Path) -> dict[str, Any]:
    """Two real MindSpeed runs whose argument dumps differ (global batch 8 vs 128)."""
    return {
        "baseline": str(MEGATRON_NPU_LOG),
        "target": str(LOGS / "ascend-MindSpeed-Core-MS__tests_st_net_test_qwen_sft__pta_det.txt"),
    }


def _select_baseline(tmp: Path) -> dict[str, Any]:
    """The demo project holds a complete FP32 training log: it should be quoted as the baseline."""
    _render_deliverables(tmp)  # copies the demo project into tmp
    return {
        "project_dir": str(tmp / "demo_project"),
        "metric": "loss",
        "batch_size": 64,
        "gpu_available": "no",
    }


def _detect_nondeterminism(tmp: Path) -> dict[str, Any]:
    """Two runs of the same dump; from tensor 3 on one element moved by one ULP."""
    run_a, _ = write_dump_pair(tmp / "repeat", rows=6)
    run_b = write_repeat(run_a, tmp / "repeat" / "run_b", differ_from=3)
    return {"run_a": str(run_a), "run_b": str(run_b)}


SAMPLES: dict[str, Sample] = {
    "detect_nondeterminism": _detect_nondeterminism,
    "select_baseline": _select_baseline,
    "compare_run_configs": _compare_run_configs,
    "compare_tensors": _compare_tensors,
    "measure_performance": _measure_performance,
    "compare_performance": _compare_performance,
    "compare_loss_curves": _compare_loss_curves,
    "judge_short_run": _judge_short_run,
    "render_deliverables": _render_deliverables,
    "check_environment": _check_environment,
    "diff_environments": _diff_environments,
    "compare_dumps": _compare_dumps,
    "parse_training_log": _parse_training_log,
    "replay_op": _replay_op,
    "bisect_precision": _bisect_precision,
    "init_project": _init_project,
}


def test_every_registered_tool_has_sample_arguments() -> None:
    missing = sorted(set(all_tools()) - set(SAMPLES))
    assert not missing, f"add sample arguments for {missing} to tests/test_mcp_samples.py"


def test_samples_run_in_process(tmp_path: Path) -> None:
    for name, build in SAMPLES.items():
        if name in all_tools():
            result = call_tool(name, build(tmp_path))
            assert result.summary, name
