"""The CLI contract of design.md, checked on a tool registered only for this test."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

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
    registry.REGISTERED.pop("contract_echo", None)


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


# ------------------------------------------------------------------ usage lines and exit codes on real commands


def _cli(argv: list[str], cwd: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "acc_agent", *argv], capture_output=True, text=True, timeout=300,
                          cwd=cwd)


def test_usage_names_required_arguments_plainly(capsys: pytest.CaptureFixture[str]) -> None:
    """`GOLDEN TARGET`, not typer 0.29's `{GOLDEN} {TARGET}`; optional arguments keep their brackets."""
    code, out = _run(["compare-dumps", "--help"], capsys)
    assert code == 0 and out.splitlines()[0] == "Usage: acc-agent compare-dumps [OPTIONS] GOLDEN TARGET"
    with pytest.raises(SystemExit) as exc:
        main(["compare-dumps", "only-one"])
    err = capsys.readouterr().err
    assert exc.value.code == 2 and "Usage: acc-agent compare-dumps [OPTIONS] GOLDEN TARGET" in err
    assert "Missing argument 'TARGET'" in err and "{" not in err
    _, out = _run(["report", "--help"], capsys)
    assert out.splitlines()[0] == "Usage: acc-agent report [OPTIONS] [CONFIG]"


def test_each_exit_code_on_the_real_tools(tmp_path: Path) -> None:
    """0 pass, 1 fail, 2 bad input (structured under --json), 3 inconclusive: as the README's table says."""
    import numpy as np

    np.save(tmp_path / "g.npy", np.linspace(-1, 1, 64, dtype=np.float32))
    np.save(tmp_path / "far.npy", np.linspace(-1, 1, 64, dtype=np.float32) + 1)
    g, far = str(tmp_path / "g.npy"), str(tmp_path / "far.npy")
    assert _cli(["compare-tensors", g, g, "--json"]).returncode == 0
    fail = _cli(["compare-tensors", g, far, "--json"])
    assert fail.returncode == 1 and json.loads(fail.stdout)["verdict"] == "fail"
    missing = _cli(["compare-tensors", g, str(tmp_path / "nope.npy"), "--json"])
    assert missing.returncode == 2 and json.loads(missing.stdout)["error"]["code"] == "missing_file"
    usage = _cli(["compare-tensors", g, "--json"])
    assert usage.returncode == 2 and json.loads(usage.stdout)["error"]["code"] == "usage"
    not_run = _cli(["measure-performance", "--callable", "numpy:ones", "--no-requested", "--json"])
    assert not_run.returncode == 3 and json.loads(not_run.stdout)["verdict"] == "not_executed"


def test_workflow_commands_refuse_bad_input_with_exit_2(tmp_path: Path) -> None:
    """A bad --lang is refused before the demo copies anything; checking a folder without documents is a
    wrong --out (exit 2), not documents that failed their checks (exit 1)."""
    bad = _cli(["demo", "--out", "d", "--lang", "fr"], cwd=str(tmp_path))
    assert bad.returncode == 2 and "--lang 'fr'" in bad.stderr and not (tmp_path / "d").exists()
    assert "render-deliverables" not in bad.stderr  # the message speaks of the command that was typed
    empty = _cli(["report", "--check", "--out", str(tmp_path)], cwd=str(tmp_path))
    assert empty.returncode == 2 and "no acc-agent documents in" in empty.stderr


def test_exit_codes_in_the_readme_match_the_contract() -> None:
    readme = (Path(__file__).resolve().parents[1] / "README.md").read_text(encoding="utf-8")
    table = readme.split("Exit codes, the same for every command:", 1)[1].split("\n\n", 2)[1]
    rows = {line.split("|")[1].strip(): line.split("|")[2] for line in table.splitlines()[2:]}
    assert set(rows) == {"0", "1", "2", "3"}
    assert "pass" in rows["0"] and "failure" in rows["1"] and "report --check" in rows["1"]
    assert "bad input" in rows["2"] and '{"error"' in rows["2"] and "inconclusive" in rows["3"]
    assert "not_executed" in rows["3"] and "insufficient_data" in rows["3"]
