"""Every real log in tests/data/realdata/logs parses with the right format and exact values."""

from __future__ import annotations

from pathlib import Path

import pytest

from acc_agent.io.logs import ParsedLog, RunData, parse_log
from acc_agent.registry import call_tool

LOGS = Path(__file__).resolve().parent / "data" / "realdata" / "logs"


def _value(run: RunData, metric: str, step: int) -> float:
    s = run.series[metric]
    return s.values[list(s.steps).index(step)]


def _parse(name: str) -> ParsedLog:
    return parse_log(LOGS / name)


def test_every_real_log_parses_with_metrics() -> None:
    files = [p for p in sorted(LOGS.iterdir()) if p.name != "INDEX.md"]
    assert len(files) == 11
    for path in files:
        parsed = parse_log(path)
        assert parsed.has_metrics, path.name
        assert parsed.format != "unknown", path.name


def test_mindspeed_ds3_text_log() -> None:
    p = _parse("ascend-MindSpeed-Core-MS__tests_st_net_test_ds3_pretrain__pta_det.txt")
    assert p.format == "megatron" and len(p.runs) == 1
    r = p.runs[0]
    assert list(r.series["loss"].steps) == list(range(1, 11))
    assert _value(r, "loss", 1) == 13.4216022491455078
    assert _value(r, "loss", 10) == 13.1001281738281250
    assert _value(r, "grad_norm", 3) == 22.3440501799793338
    assert _value(r, "lr", 1) == 9.757730e-06
    assert _value(r, "step_time_ms", 2) == 3261.9
    assert r.declared_total == 10
    assert r.warmup_steps == [1]  # 15740.8 ms against a ~3250 ms steady state
    assert r.device == "NPU" and "AiCore" in r.device_evidence
    # memory: max over the two ranks that printed at step 1
    assert _value(r, "memory_max_allocated_mb", 1) == 41007.94775390625


def test_mindspeed_qwen_text_log_tflops_and_memory() -> None:
    r = _parse("ascend-MindSpeed-Core-MS__tests_st_net_test_qwen_sft__pta_det.txt").runs[0]
    assert _value(r, "loss", 9) == 9.3942499160766602
    assert _value(r, "tflops_per_device", 2) == 733.4
    assert _value(r, "memory_max_allocated_mb", 1) == 18692.78662109375
    assert r.device == "NPU" and "NPUCachingAllocator" in r.device_evidence


def test_mindspeed_llm_baseline_json() -> None:
    p = _parse("ascend-MindSpeed-LLM__tests_st_baseline_results__qwen3_8b_tp2_pp4_vpp2.json")
    assert p.format == "mindspeed_baseline_json"
    r = p.runs[0]
    assert len(r.series["loss"]) == 14
    assert _value(r, "loss", 1) == 12.01003 and _value(r, "loss", 14) == 10.1796
    assert _value(r, "grad_norm", 4) == 37.972
    assert _value(r, "step_time_ms", 1) == 22834.0 and r.warmup_steps == [1]
    assert r.scalars["memory_max_allocated_mb"] == 5557.2685546875


def test_megatron_golden_values_json() -> None:
    p = _parse("NVIDIA-Megatron-LM__gpt3_mcore_te_tp1_pp1_dist_optimizer_no_mmap_bin_files__golden_values_dev_dgx_a100.json")
    assert p.format == "megatron_golden_json"
    r = p.runs[0]
    assert list(r.series["loss"].steps) == [1, 5, 10, 15, 20, 25, 30, 35, 40, 45, 50]
    assert _value(r, "loss", 45) == 9.82336
    assert _value(r, "step_time_ms", 5) == pytest.approx(115.02)  # golden file stores seconds
    assert _value(r, "memory_max_allocated_mb", 5) == pytest.approx(4673069568.0 / 2**20)
    assert _value(r, "num_zeros", 50) == 2374.0
    assert r.device == "GPU"  # from "dgx_a100" in the file name


def test_hf_trainer_state() -> None:
    p = _parse("Tashu014-lora-imdb-distilbert__trainer_state.json")
    assert p.format == "hf_trainer_state"
    r = p.runs[0]
    assert len(r.series["loss"]) == 18
    assert _value(r, "loss", 20) == 0.6899
    assert _value(r, "grad_norm", 40) == 1.1420074701309204
    assert _value(r, "lr", 60) == 0.00016853333333333336
    assert _value(r, "eval_loss", 125) == 0.3951033353805542
    assert _value(r, "eval_loss", 375) == 0.3891691565513611
    assert r.record_kinds["eval"] == 3


def test_mmdet_log_in_markdown() -> None:
    p = _parse("yvr1037-fenghuo-project-of-mmdet__mm.md")
    assert p.format == "mmcv"
    r = p.runs[0]
    assert _value(r, "loss", 50) == 1.1088 and _value(r, "loss", 100) == 0.5434
    assert _value(r, "step_time_ms", 50) == pytest.approx(303.0)
    assert _value(r, "memory_mb", 50) == 3050.0
    assert _value(r, "eval_bbox_map", 930) == 0.011  # Epoch(val) [1] after 930 iterations
    assert len(r.series["eval_bbox_map"]) == 12 and r.max_epoch == 12
    assert "eval_bbox_map_copypaste" not in r.series  # "0.011 0.017 ..." is not one number
    assert r.device == "GPU" and "GeForce" in r.device_evidence


def test_mindspore_lossmonitor_in_markdown() -> None:
    p = _parse("mindspore-ai-docs__tutorials_source_en_parallel_multiple_copy.md")
    assert p.format == "mindspore"
    r = p.runs[0]
    assert list(r.series["loss"].steps) == [100, 200, 300, 400, 500, 600, 700]
    assert _value(r, "loss", 100) == 4.514171123504639 and _value(r, "loss", 700) == 0.8292769193649292


def test_mindspore_resnet_readme_several_runs_and_glued_numbers() -> None:
    p = _parse("mindspore-ai-models__official_cv_ResNet_README.md")
    assert p.format == "mindspore" and len(p.runs) == 9
    first = p.runs[0]
    assert first.step_unit == "epoch" and _value(first, "loss", 1) == 1.082604 and _value(first, "step_time_ms", 1) == 207.995
    bench = p.runs[8]
    assert _value(bench, "loss", 40) == 7.078993  # "loss is 7.078993Epoch time"
    assert _value(bench, "throughput", 40) == 1488.0
    assert bench.device == "GPU" and all(r.device == "NPU" for r in p.runs[:8])


def test_modelzoo_result_table() -> None:
    p = _parse("Ascend-ModelZoo-PyTorch__PyTorch_built-in_cv_classification_ResNet50_for_PyTorch_README.md")
    assert p.format == "result_table"
    rows = {r.name: r for r in p.runs}
    assert rows["8p-NPU"].scalars == {"eval_acc1": 76.702, "throughput": 11898.83, "epochs": 90.0}
    assert rows["8p-NPU"].device == "NPU" and rows["1p-竞品A"].device == "GPU"
    assert "eval_acc1" not in rows["1p-竞品A"].scalars  # "-" is missing, not zero


def test_deit_json_lines() -> None:
    p = _parse("Ascend-ModelZoo-PyTorch__PyTorch_dev_cv_image_classification_DeiT_ID1558_for_PyTorch_adaptive_deit3_log.txt")
    assert p.format == "jsonl"
    r = p.runs[0]
    assert r.step_unit == "epoch" and len(r.series["loss"]) == 300
    assert _value(r, "loss", 0) == 6.819861943963811
    assert _value(r, "eval_acc1", 299) == 62.96800177246094
    assert r.device is None  # the log does not say; the repository name is not evidence


def test_lightning_csv_sparse_rows() -> None:
    p = _parse("HCDescamps-cv-image-classification__lightning_logs_version_0_metrics.csv")
    assert p.format == "lightning_csv"
    r = p.runs[0]
    assert _value(r, "loss", 49) == 0.634955883026123
    assert _value(r, "eval_loss", 8594) == 0.03915119916200638
    assert _value(r, "eval_accuracy", 8595) == 0.996399998664856
    assert r.scalars["test_loss"] == 0.0322248712182045  # the stray row after training


def test_tool_output_contract_fields() -> None:
    out = call_tool("parse_training_log", {"log": str(LOGS / "ascend-MindSpeed-Core-MS__tests_st_net_test_ds3_pretrain__pta_det.txt")})
    data = out.model_dump()
    assert data["format"] == "megatron" and data["device"] == "NPU"
    assert data["series"]["loss"][0] == {"step": 1, "value": 13.4216022491455078}
    assert data["record_kinds"] == {"train": 11, "warmup": 1}
    assert any(e["kind"] == "steps" and ":11-22" in e["ref"] for e in data["evidence"])
