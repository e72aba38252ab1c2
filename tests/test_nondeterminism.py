"""Random-error detection on real runs: the same torch model and input dumped twice with acc_agent.capture."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

torch = pytest.importorskip("torch")

from acc_agent.capture import capture_forward  # noqa: E402
from acc_agent.cli import main  # noqa: E402
from acc_agent.registry import call_tool  # noqa: E402
from acc_agent.tools.detect_nondeterminism import DetectNondeterminismOutput  # noqa: E402


class Net(torch.nn.Module):
    def __init__(self, dropout_in_block: int | None) -> None:
        super().__init__()
        torch.manual_seed(0)
        self.blocks = torch.nn.ModuleList(
            torch.nn.Sequential(torch.nn.Linear(64, 64), torch.nn.GELU(),
                                torch.nn.Dropout(0.1) if i == dropout_in_block else torch.nn.Identity())
            for i in range(4)
        )
        self.head = torch.nn.Linear(64, 8)

    def forward(self, x: Any) -> Any:
        for block in self.blocks:
            x = x + block(x)
        return self.head(x)


def _two_runs(root: Path, name: str, dropout_in_block: int | None) -> tuple[Path, Path]:
    net = Net(dropout_in_block)
    net.train(dropout_in_block is not None)  # dropout left on: the classic random error
    x = torch.randn(4, 64, generator=torch.Generator().manual_seed(1))
    paths = []
    for seed in (11, 12):
        torch.manual_seed(seed)
        capture_forward(net, root / f"{name}_{seed}", args=(x,))
        paths.append(root / f"{name}_{seed}")
    return paths[0], paths[1]


def test_dropout_left_on_is_found_at_its_origin(tmp_path: Path) -> None:
    a, b = _two_runs(tmp_path, "dropout", dropout_in_block=2)
    out = call_tool("detect_nondeterminism", {"run_a": str(a), "run_b": str(b)})
    assert isinstance(out, DetectNondeterminismOutput)
    assert out.verdict == "nondeterministic" and out.is_failure()
    assert out.origins == ["Module.blocks.2.2.Dropout.forward.0"]
    first = out.entries[0]
    assert first.name == out.first_nondeterministic
    assert first.index == min(e.index for e in out.entries), "first one first"
    assert first.module in ("Module.blocks.2.2.Dropout.forward.0", "Module.root.Net.forward.0",
                            "Module.blocks.2.Sequential.forward.0")
    assert all(e.max_abs_err and e.max_abs_err > 0 for e in out.entries if e.role == "output")
    # blocks before the dropout are identical in both runs
    assert not any(e.module.startswith(("Module.blocks.0.", "Module.blocks.1.")) for e in out.entries)
    assert out.identical > 0 and out.compared == out.identical + out.entries_total


def test_deterministic_run_is_reported_identical(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    a, b = _two_runs(tmp_path, "eval", dropout_in_block=None)
    with pytest.raises(SystemExit) as exc:
        main(["detect-nondeterminism", str(a), str(b), "--json"])
    assert exc.value.code == 0
    body = json.loads(capsys.readouterr().out)
    assert body["verdict"] == "deterministic" and body["first_nondeterministic"] is None
    assert body["compared"] == body["identical"] > 10


def test_missing_dump_is_a_structured_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        main(["detect-nondeterminism", str(tmp_path / "nope"), str(tmp_path / "nope2"), "--json"])
    assert exc.value.code == 2
    body = json.loads(capsys.readouterr().out)
    assert body["error"]["code"] == "missing_file" and "nope" in body["error"]["message"]
