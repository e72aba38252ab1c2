"""acc_agent.capture writes msprobe's layout: checked against msprobe's own L0 dump of the same model."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from acc_agent.capture import DumpCapture, capture_forward  # noqa: E402
from acc_agent.errors import AccAgentError  # noqa: E402
from acc_agent.io.dumps import Dump, open_dump  # noqa: E402
from acc_agent.registry import call_tool  # noqa: E402


class Net(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        torch.manual_seed(0)
        self.fc1 = torch.nn.Linear(8, 16)
        self.act = torch.nn.GELU()
        self.fc2 = torch.nn.Linear(16, 4)

    def forward(self, x: Any) -> Any:
        return self.fc2(self.act(self.fc1(x)))


def _x() -> Any:
    return torch.randn(3, 8, generator=torch.Generator().manual_seed(3))


def _open(path: Path) -> Dump:
    d = open_dump(path)
    assert isinstance(d, Dump)
    return d


def test_layout_matches_msprobe_l0_dump(tmp_path: Path) -> None:
    pytest.importorskip("msprobe")
    from msprobe.pytorch import PrecisionDebugger

    net = Net().eval()
    cfg = tmp_path / "config.json"
    cfg.write_text(json.dumps({"task": "tensor", "dump_path": str(tmp_path / "msprobe"), "rank": [], "step": [],
                               "level": "L0", "tensor": {"scope": [], "list": [], "data_mode": ["all"]}}))
    debugger = PrecisionDebugger(config_path=str(cfg))
    with torch.no_grad():
        debugger.start(model=net)
        net(_x())
        debugger.stop()
        debugger.step()
    theirs_json = next((tmp_path / "msprobe").rglob("dump.json"))
    capture_forward(net, tmp_path / "ours", args=(_x(),))

    theirs = json.loads(theirs_json.read_text())["data"]
    ours = json.loads((tmp_path / "ours" / "dump.json").read_text())["data"]
    assert list(ours) == list(theirs)  # same keys, same order
    for key in theirs:
        for part in ("input_args", "output"):
            for a, b in zip(ours[key][part], theirs[key][part], strict=True):
                assert a["data_name"].rsplit(".", 1)[0] == b["data_name"].rsplit(".", 1)[0]
                assert a["dtype"] == b["dtype"] and a["shape"] == b["shape"]
                assert a["Norm"] == pytest.approx(b["Norm"], rel=1e-6)
    # and the tensors themselves: our .npy equals msprobe's .pt
    ours_dump = _open(tmp_path / "ours")
    data_dir = theirs_json.parent / "dump_tensor_data"
    for entry in ours_dump.entries:
        theirs_t = torch.load(data_dir / f"{entry.name}.pt", weights_only=True)
        np.testing.assert_array_equal(ours_dump.load(entry.name), theirs_t.numpy())


def test_bf16_is_stored_exactly_and_declared(tmp_path: Path) -> None:
    net = Net().eval().to(torch.bfloat16)
    out, report = capture_forward(net, tmp_path / "bf16", args=(_x().to(torch.bfloat16),))
    dump = _open(tmp_path / "bf16")
    entry = dump.entry("Module.fc2.Linear.forward.0.output.0")
    assert entry.dtype == "bfloat16"
    np.testing.assert_array_equal(dump.load(entry.name), out.float().numpy())
    assert report.tensors_saved == len(dump.entries) == 6


def test_filters_repeated_calls_and_root(tmp_path: Path) -> None:
    net = Net().eval()
    with torch.no_grad(), DumpCapture(net, tmp_path / "f", include=["fc*"], exclude=["fc2"]) as cap:
        net(_x())
        net(_x())
    keys = list(json.loads((tmp_path / "f" / "dump.json").read_text())["data"])
    assert keys == ["Module.fc1.Linear.forward.0", "Module.fc1.Linear.forward.1"]
    assert cap.report.modules == 2
    capture_forward(net, tmp_path / "r", args=(_x(),), include_root=True)
    keys = list(json.loads((tmp_path / "r" / "dump.json").read_text())["data"])
    assert keys[0] == "Module.root.Net.forward.0" and len(keys) == 4


def test_size_cap_keeps_statistics_and_compare_skips(tmp_path: Path) -> None:
    net = Net().eval()
    _, full = capture_forward(net, tmp_path / "full", args=(_x(),))
    _, capped = capture_forward(net, tmp_path / "capped", args=(_x(),), max_bytes=full.bytes_saved // 2)
    assert capped.tensors_over_cap and capped.bytes_saved <= full.bytes_saved // 2
    doc = json.loads((tmp_path / "capped" / "dump.json").read_text())["data"]
    leaf = doc["Module.fc2.Linear.forward.0"]["output"][0]
    assert "data_name" not in leaf and "Norm" in leaf, "over the cap: statistics only"
    out = call_tool("compare_dumps", {"golden": str(tmp_path / "full"), "target": str(tmp_path / "capped"),
                                      "all_rows": True, "workers": 1})
    statuses = {r.name: r.status for r in out.rows}  # type: ignore[attr-defined]
    assert statuses["Module.fc1.Linear.forward.0.input.0"] == "pass"
    assert out.diagnosis is not None and out.diagnosis.category == "no_layer_fault"  # type: ignore[attr-defined]


def test_not_a_module_is_a_structured_error(tmp_path: Path) -> None:
    with pytest.raises(AccAgentError) as exc, DumpCapture(object(), tmp_path / "x"):
        pass
    assert exc.value.code == "not_a_module" and "nn.Module" in exc.value.message
