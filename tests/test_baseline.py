"""select_baseline on project folders built from real logs: project_log, gpu_measured, cpu_log, na."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from acc_agent.errors import AccAgentError
from acc_agent.models.baseline import SelectBaselineOutput
from acc_agent.registry import call_tool

LOGS = Path(__file__).resolve().parent / "data" / "realdata" / "logs"
FIX = Path(__file__).resolve().parent / "fixtures" / "logs"
MMDET = LOGS / "yvr1037-fenghuo-project-of-mmdet__mm.md"
DS3 = LOGS / "ascend-MindSpeed-Core-MS__tests_st_net_test_ds3_pretrain__pta_det.txt"

TRAIN_PY = '''import argparse
p = argparse.ArgumentParser()
p.add_argument("--device", default="cuda")
p.add_argument("--batch-size", type=int, default=32)
p.add_argument("--weights", default="")
'''


def select(root: Path, **kw: object) -> SelectBaselineOutput:
    out = call_tool("select_baseline", {"project_dir": str(root), **kw})
    assert isinstance(out, SelectBaselineOutput)
    return out


def _project(tmp_path: Path, *logs: Path) -> Path:
    root = tmp_path / "proj"
    (root / "logs").mkdir(parents=True)
    (root / "train.py").write_text(TRAIN_PY, encoding="utf-8")
    (root / "infer.py").write_text('import argparse\nargparse.ArgumentParser().add_argument("--device")\n', encoding="utf-8")
    for log in logs:
        shutil.copy(log, root / "logs" / log.name)
    return root


def test_complete_gpu_project_log_is_quoted(tmp_path: Path) -> None:
    root = _project(tmp_path, MMDET, DS3)
    out = select(root, dataset="coco")
    assert out.source == "project_log" and out.verdict == "project_log"
    assert out.log_path and out.log_path.endswith(MMDET.name)
    assert out.line_range == [466, 1419] and out.device == "GPU"
    assert out.quote[0].startswith("466: ") and "Epoch [1][50/930]" in out.quote[0]
    npu = next(c for c in out.candidates if c.path.endswith(DS3.name))
    assert not npu.qualifies and any("NPU run" in r for r in npu.reasons)
    assert out.commands == []


def test_no_qualifying_log_gives_gpu_commands_from_the_entry(tmp_path: Path) -> None:
    root = _project(tmp_path, DS3)
    out = select(root, batch_size=8)
    assert out.source == "gpu_measured" and out.entry == "train.py"
    train = next(r for r in out.commands if r.scenario == "GPU training baseline")
    assert train.command == "CUDA_VISIBLE_DEVICES=0 python train.py --device cuda --batch-size 8 --weights <weights> 2>&1 | tee logs/baseline_gpu_train.log"
    infer = next(r for r in out.commands if r.scenario.startswith("GPU inference"))
    assert infer.command.startswith("CUDA_VISIBLE_DEVICES=0 python infer.py --device cuda")
    assert any(r.device == "CPU" for r in out.commands)


def test_no_gpu_and_no_log_is_na_with_reason(tmp_path: Path) -> None:
    root = _project(tmp_path)
    out = select(root, gpu_available="no")
    assert out.source == "na" and not out.is_failure()
    assert "no training log found" in out.reason and "paused" in out.reason


def test_cpu_log_only_when_asked_or_no_gpu(tmp_path: Path) -> None:
    root = _project(tmp_path, FIX / "mindspore_cpu.log")
    assert select(root).source == "gpu_measured"
    assert "CPU log exists" in select(root).reason
    asked = select(root, cpu_requested=True)
    assert asked.source == "cpu_log" and asked.device == "CPU" and asked.line_range == [3, 15]
    assert select(root, gpu_available="no").source == "cpu_log"


def test_acceptance_criteria_disqualify(tmp_path: Path) -> None:
    root = _project(tmp_path, MMDET)
    out = select(root, dataset="ImageNet")
    assert out.source == "gpu_measured"
    cand = out.candidates[0]
    assert cand.matches["dataset"] is False and any("ImageNet" in r for r in cand.reasons)
    assert select(root, metric="eval_acc1").source == "gpu_measured"


def test_incomplete_log_does_not_qualify(tmp_path: Path) -> None:
    root = _project(tmp_path)
    lines = (FIX / "megatron_gpu_fp16.log").read_text(encoding="utf-8").splitlines()
    end = next(i for i, line in enumerate(lines) if "iteration       21/" in line)
    (root / "logs" / "partial.log").write_text("\n".join(lines[:end]) + "\n", encoding="utf-8")
    out = select(root)
    assert out.source == "gpu_measured"
    assert "stopped at 20 of the announced 40" in out.candidates[0].completeness


def test_symlinks_are_not_followed_and_bad_dir_is_an_error(tmp_path: Path) -> None:
    root = _project(tmp_path)
    (root / "outside").symlink_to(MMDET.parent)
    assert select(root).scanned_files == 0
    with pytest.raises(AccAgentError) as exc:
        select(tmp_path / "missing")
    assert exc.value.code == "not_a_directory"
