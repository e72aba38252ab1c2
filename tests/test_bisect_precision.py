"""bisect-precision on real torch models run on the CPU: the one layer that cannot run in bf16 is found.

The faulty layer's weights are 1000 + small values applied to a zero-mean input: in FP32 the large
part cancels and the small part carries the signal; cast to bf16 (spacing 4 at 1000) the small part
is gone. Every other layer is fine in bf16.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("torch")

from acc_agent.cli import main  # noqa: E402

MODEL = '''
import torch
from torch import nn


class Net(nn.Module):
    def __init__(self, bad: bool):
        super().__init__()
        g = torch.Generator().manual_seed(0)
        self.fc1 = nn.Linear(16, 64)
        self.norm = nn.LayerNorm(64, elementwise_affine=False)
        self.mid = nn.Linear(64, 64, bias=False)
        self.head = nn.Sequential(nn.ReLU(), nn.Linear(64, 32), nn.GELU(), nn.Linear(32, 8))
        with torch.no_grad():
            offset = 1000.0 if bad else 0.0
            self.mid.weight.copy_(offset + 0.1 * torch.randn(64, 64, generator=g))

    def forward(self, x):
        return self.head(self.mid(self.norm(self.fc1(x))))


def build_bad():
    torch.manual_seed(0)
    return Net(True), (torch.randn(8, 16, generator=torch.Generator().manual_seed(1)),)


def build_clean():
    torch.manual_seed(0)
    return Net(False), (torch.randn(8, 16, generator=torch.Generator().manual_seed(1)),)


def build_no_weights():
    return nn.Sequential(nn.ReLU(), nn.Tanh()), (torch.randn(4, 4),)
'''


def _run(tmp_path: Path, func: str, capsys: pytest.CaptureFixture[str], *extra: str) -> tuple[int, dict[str, Any]]:
    path = tmp_path / "model.py"
    path.write_text(MODEL)
    capsys.readouterr()
    code: Any = 0
    try:
        main(["bisect-precision", f"{path}:{func}", "--json", *extra])
    except SystemExit as exc:
        code = exc.code
    captured = capsys.readouterr()
    return int(code or 0), {"doc": json.loads(captured.out), "stderr": captured.err}


def test_the_one_layer_that_cannot_run_in_bf16(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, got = _run(tmp_path, "build_bad", capsys)
    doc = got["doc"]
    assert code == 0 and doc["verdict"] == "keep_set_found", doc["summary"]
    assert doc["keep_high_precision"] == ["mid"]
    assert doc["eligible"] == ["fc1", "mid", "head.1", "head.3"], "modules without weights are not cast"
    assert doc["error_all_low"] > 1.0 and doc["error_with_keep_set"] <= doc["tolerance"]
    assert max(doc["sensitivity"], key=doc["sensitivity"].get) == "mid"
    assert doc["steps"][0]["step"] == "all_low" and any(s["step"].startswith("drop:") for s in doc["steps"])
    assert "bisect-precision: all_low" in got["stderr"], "progress goes to stderr"


def test_clean_model_needs_nothing_in_fp32(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, got = _run(tmp_path, "build_clean", capsys)
    assert code == 0 and got["doc"]["verdict"] == "all_low_ok" and got["doc"]["keep_high_precision"] == []
    code, got = _run(tmp_path, "build_clean", capsys, "--low", "fp16", "--tolerance", "1e-9")
    assert got["doc"]["verdict"] == "keep_set_found" and got["doc"]["error_with_keep_set"] <= 1e-9


def test_no_eligible_layers_is_inconclusive(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, got = _run(tmp_path, "build_no_weights", capsys)
    assert code == 3 and got["doc"]["verdict"] == "no_eligible_layers"


def test_bad_model_spec_is_a_clear_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, got = _run(tmp_path, "missing_function", capsys)
    assert code == 2 and got["doc"]["error"]["code"] == "invalid_model_spec"
