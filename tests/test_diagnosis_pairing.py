"""Pairing beyond exact names, on real captured dumps: wrappers, renamed classes, renamed layers."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

torch = pytest.importorskip("torch")

from acc_agent.capture import capture_forward  # noqa: E402
from acc_agent.io.dumps import Dump, open_dump  # noqa: E402
from acc_agent.io.pairing import normalise_name, pair_entries  # noqa: E402
from acc_agent.models.compare import CompareDumpsOutput  # noqa: E402
from acc_agent.registry import call_tool  # noqa: E402


class FastGelu(torch.nn.Module):
    """A target-side replacement class (as an NPU fused op would be), here with the tanh approximation."""

    def forward(self, x: Any) -> Any:
        return torch.nn.functional.gelu(x, approximate="tanh")


class Net(torch.nn.Module):
    def __init__(self, act: Any = None, head_name: str = "fc2") -> None:
        super().__init__()
        torch.manual_seed(0)
        self.fc1 = torch.nn.Linear(32, 64)
        self.act = act if act is not None else torch.nn.GELU()
        self.mid = torch.nn.Linear(64, 64)
        self.head_name = head_name
        setattr(self, head_name, torch.nn.Linear(64, 8))

    def forward(self, x: Any) -> Any:
        return getattr(self, self.head_name)(torch.relu(self.mid(self.act(self.fc1(x)))))


class Wrapper(torch.nn.Module):
    """DistributedDataParallel-style wrapper: every module path gains a ``module.`` prefix."""

    def __init__(self, inner: torch.nn.Module) -> None:
        super().__init__()
        self.module = inner

    def forward(self, x: Any) -> Any:
        return self.module(x)


def _x() -> Any:
    return torch.randn(16, 32, generator=torch.Generator().manual_seed(5))


def _dump(path: Path) -> Dump:
    d = open_dump(path)
    assert isinstance(d, Dump)
    return d


def test_normalised_names_drop_wrappers_classes_and_namespaces() -> None:
    assert normalise_name("Module.module.act.FastGelu.forward.0.output.0") == \
        normalise_name("Module.act.GELU.forward.0.output.0")
    assert normalise_name("NPU.npu_gelu.0.forward.input.0") == normalise_name("Functional.gelu.0.forward.input.0")
    assert normalise_name("Module.fc1.Linear.forward.0.output.0") != normalise_name("Module.fc1.Linear.forward.1.output.0")


def test_wrapped_and_renamed_target_pairs_and_fault_is_named(tmp_path: Path) -> None:
    capture_forward(Net(), tmp_path / "golden", args=(_x(),))
    capture_forward(Wrapper(Net(act=FastGelu())), tmp_path / "target", args=(_x(),))
    out = call_tool("compare_dumps", {"golden": str(tmp_path / "golden"), "target": str(tmp_path / "target"),
                                      "all_rows": True, "workers": 1})
    assert isinstance(out, CompareDumpsOutput)
    assert not out.unmatched_golden
    # only the wrapped model itself (the wrapper's child) has no golden counterpart: msprobe skips the root
    assert out.unmatched_target == ["Module.module.Net.forward.0.input.0", "Module.module.Net.forward.0.output.0"]
    methods = {r.pair_method for r in out.rows}  # type: ignore[attr-defined]
    assert methods == {"normalised"}
    assert out.diagnosis is not None and out.diagnosis.details["pairing_methods"] == {"normalised": len(out.rows)}
    assert out.diagnosis is not None and out.diagnosis.category == "operator_fault", out.diagnosis
    assert out.first_divergence is not None
    assert out.first_divergence.module == "Module.module.act.FastGelu.forward.0"


def test_renamed_layer_pairs_by_order_and_shape_only_when_asked(tmp_path: Path) -> None:
    capture_forward(Net(), tmp_path / "golden", args=(_x(),))
    capture_forward(Net(head_name="proj"), tmp_path / "target", args=(_x(),))
    g, t = _dump(tmp_path / "golden"), _dump(tmp_path / "target")
    plain = pair_entries(g, t)
    assert "Module.proj.Linear.forward.0.output.0" in plain.unmatched_target
    ordered = pair_entries(g, t, by_order=True)
    assert not ordered.unmatched_target and not ordered.unmatched_golden
    pair = next(p for p in ordered.pairs if p.target_name == "Module.proj.Linear.forward.0.output.0")
    assert pair.golden_name == "Module.fc2.Linear.forward.0.output.0" and pair.method == "order_shape"
    assert [p.target_name for p in ordered.pairs] == [e.name for e in t.entries], "target execution order"
    # a mapping still wins over every fallback (here a prefix rule for the renamed layer)
    forced = pair_entries(g, t, {"Module.proj.": "Module.fc2."}, by_order=True)
    assert {p.method for p in forced.pairs if p.target_name.startswith("Module.proj.")} == {"mapping"}


def test_compare_dumps_pairs_renamed_layer_by_order_from_the_cli(tmp_path: Path) -> None:
    import json
    import subprocess
    import sys

    capture_forward(Net(), tmp_path / "golden", args=(_x(),))
    capture_forward(Net(head_name="proj"), tmp_path / "target", args=(_x(),))
    base = [sys.executable, "-m", "acc_agent", "compare-dumps", str(tmp_path / "golden"), str(tmp_path / "target"),
            "--all-rows", "--json"]
    plain = json.loads(subprocess.run(base, capture_output=True, text=True, timeout=120).stdout)
    assert "Module.proj.Linear.forward.0.output.0" in plain["unmatched_target"]
    ordered = json.loads(subprocess.run(base + ["--pair-by-order"], capture_output=True, text=True, timeout=120).stdout)
    assert ordered["unmatched_target"] == [] and ordered["unmatched_golden"] == []
    row = next(r for r in ordered["rows"] if r["name"] == "Module.proj.Linear.forward.0.output.0")
    assert row["pair_method"] == "order_shape" and row["golden_name"] == "Module.fc2.Linear.forward.0.output.0"
