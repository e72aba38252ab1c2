"""The CLI contract of design.md, checked on a tool registered only for this test."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator

import pytest

from acc_agent import registry
from acc_agent.cli import main
from acc_agent.models.common import CsvInts, ToolInput, ToolOutput


class _EchoIn(ToolInput):
    path: str
    sizes: CsvInts = [1]
    fail: bool = False


class _EchoOut(ToolOutput):
    sizes: list[int]


def _echo(params: _EchoIn) -> _EchoOut:
    return _EchoOut(verdict="fail" if params.fail else "pass", summary=params.path, sizes=params.sizes)


@pytest.fixture()
def echo_tool() -> Iterator[None]:
    registry.tool(description="Echo for the contract test.", positional=("path",), name="contract_echo")(_echo)
    yield
    registry._REGISTRY.pop("contract_echo", None)


def _run(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    with pytest.raises(SystemExit) as exc:
        main(argv)
    return int(exc.value.code or 0), capsys.readouterr().out


def test_json_output_is_the_model(echo_tool: None, capsys: pytest.CaptureFixture[str]) -> None:
    code, out = _run(["contract-echo", "a.npy", "--sizes", "1,8", "--json"], capsys)
    assert code == 0
    assert json.loads(out) == {"verdict": "pass", "summary": "a.npy", "evidence": [], "sizes": [1, 8]}


def test_failure_verdict_exits_1(echo_tool: None, capsys: pytest.CaptureFixture[str]) -> None:
    code, _ = _run(["contract-echo", "a.npy", "--fail", "--json"], capsys)
    assert code == 1


def test_bad_input_exits_2_with_structured_error(echo_tool: None, capsys: pytest.CaptureFixture[str]) -> None:
    code, out = _run(["contract-echo", "a.npy", "--sizes", "x,y", "--json"], capsys)
    assert code == 2
    err = json.loads(out)["error"]
    assert err["code"] == "invalid_input" and "sizes" in err["message"] and err["hint"]


def test_usage_error_under_json_is_structured(echo_tool: None, capsys: pytest.CaptureFixture[str]) -> None:
    code, out = _run(["contract-echo", "--json"], capsys)
    assert code == 2
    assert json.loads(out)["error"]["code"] == "usage"


def test_help_runs_as_a_process() -> None:
    proc = subprocess.run([sys.executable, "-m", "acc_agent", "--help"], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0
    assert "acc-agent" in proc.stdout
