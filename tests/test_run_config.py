"""compare_run_configs: argument dumps, mmcv Config dumps, YAML and python configs."""

from __future__ import annotations

from pathlib import Path

import pytest

from acc_agent.errors import AccAgentError
from acc_agent.models.training import CompareRunConfigsOutput
from acc_agent.registry import call_tool

LOGS = Path(__file__).resolve().parent / "data" / "realdata" / "logs"
FIX = Path(__file__).resolve().parent / "fixtures" / "logs"
GPU = FIX / "megatron_gpu_fp16.log"
NPU = FIX / "megatron_npu_overflow.log"


def diff(baseline: Path, target: Path, **kw: object) -> CompareRunConfigsOutput:
    out = call_tool("compare_run_configs", {"baseline": str(baseline), "target": str(target), **kw})
    assert isinstance(out, CompareRunConfigsOutput)
    return out


def test_megatron_argument_dumps_differ_in_lr() -> None:
    out = diff(GPU, NPU)
    assert out.verdict == "mismatch" and out.is_failure()
    by = {d.name: d for d in out.diffs}
    assert by["lr"].status == "different" and by["lr"].baseline == 0.00015 and by["lr"].target == 0.0003
    assert by["precision"].status == "same" and by["precision"].baseline == "fp16"
    assert by["flash_attention"].status == "same" and by["tensor_parallel"].status == "same"
    assert by["warmup"].baseline == 10 and by["num_layers"].status == "same"
    assert "argument dump from line 3" in out.baseline_source


def test_same_log_is_consistent_and_ignore_works() -> None:
    assert diff(GPU, GPU).verdict == "consistent"
    assert diff(GPU, NPU, ignore=["lr"]).verdict == "consistent"


def test_yaml_config_against_a_log(tmp_path: Path) -> None:
    cfg = tmp_path / "npu.yaml"
    cfg.write_text("model:\n  num_layers: 12\n  hidden_size: 768\ntraining:\n  lr: 1.5e-4\n  global_batch_size: 32\n  bf16: true\n", encoding="utf-8")
    out = diff(GPU, cfg)
    by = {d.name: d for d in out.diffs}
    assert by["num_layers"].status == "same" and by["lr"].status == "same"
    assert by["precision"].status == "different" and by["precision"].target == "bf16"
    assert out.verdict == "mismatch"


def test_mmdet_config_dump_against_a_python_config(tmp_path: Path) -> None:
    cfg = tmp_path / "mask_rcnn_npu.py"
    cfg.write_text("optimizer = dict(type='SGD', lr=0.01, momentum=0.9, weight_decay=0.0001)\n"
                   "data = dict(samples_per_gpu=2, workers_per_gpu=2)\nrunner = dict(type='EpochBasedRunner', max_epochs=12)\n"
                   "import os\nos.system('echo never executed')\n", encoding="utf-8")
    out = diff(LOGS / "yvr1037-fenghuo-project-of-mmdet__mm.md", cfg)
    by = {d.name: d for d in out.diffs}
    assert by["lr"].baseline == 0.02 and by["lr"].target == 0.01 and by["lr"].status == "different"
    assert by["micro_batch_size"].status == "same" and by["train_epochs"].status == "same"
    assert by["optimizer"].status == "same"


def test_real_mindspeed_runs_differ_in_batch() -> None:
    out = diff(LOGS / "ascend-MindSpeed-Core-MS__tests_st_net_test_ds3_pretrain__pta_det.txt",
               LOGS / "ascend-MindSpeed-Core-MS__tests_st_net_test_qwen_sft__pta_det.txt")
    by = {d.name: d for d in out.diffs}
    assert by["global_batch_size"].baseline == 8 and by["global_batch_size"].target == 128


def test_nothing_in_common_and_bad_yaml(tmp_path: Path) -> None:
    prose = tmp_path / "notes.txt"
    prose.write_text("no settings here\n", encoding="utf-8")
    out = diff(prose, GPU)
    assert out.verdict == "insufficient_data" and not out.is_failure()
    bad = tmp_path / "bad.yaml"
    bad.write_text("lr: [1, 2\n", encoding="utf-8")
    with pytest.raises(AccAgentError) as exc:
        diff(bad, GPU)
    assert exc.value.code == "invalid_yaml"
