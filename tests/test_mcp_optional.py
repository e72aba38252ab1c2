"""``mcp`` is an optional dependency: without it the two commands that need it say how to add it.

Simulated by making the loader see no ``mcp`` package (the test environment has it installed).
"""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from typing import Any

import pytest

from acc_agent import mcp_loader
from acc_agent.cli import main


@pytest.fixture
def no_mcp(monkeypatch: pytest.MonkeyPatch) -> None:
    real = importlib.util.find_spec

    def find_spec(name: str, *args: Any, **kwargs: Any) -> Any:
        return None if name in ("mcp", "mcp_types") else real(name, *args, **kwargs)

    monkeypatch.setattr(mcp_loader.importlib.util, "find_spec", find_spec)


def _run(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    with pytest.raises(SystemExit) as exc:
        main(argv)
    out, err = capsys.readouterr()
    return int(exc.value.code or 0), out, err


@pytest.mark.usefixtures("no_mcp")
@pytest.mark.parametrize("argv", [["mcp"], ["schema", "--format", "mcp"]])
def test_commands_needing_mcp_name_the_extra(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = _run(argv, capsys)
    assert code == 2 and out == ""
    assert "the MCP server needs the mcp package" in err and "pip install 'acc-agent[mcp]'" in err
    assert "Traceback" not in err


@pytest.mark.usefixtures("no_mcp")
def test_other_schema_formats_need_no_mcp(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = _run(["schema", "--format", "anthropic"], capsys)
    assert code == 0 and any(t["name"] == "compare_dumps" for t in json.loads(out))


def test_plain_commands_never_import_the_sdk() -> None:
    """The CLI, a tool run and the non-MCP schemas load no part of the SDK (it is optional, and slow to import)."""
    code = ("import sys; from acc_agent.cli import main\n"
            "try:\n    main(['schema', '--format', 'openai'])\nexcept SystemExit:\n    pass\n"
            "print(sorted(m for m in sys.modules if m == 'mcp' or m.startswith(('mcp.', 'mcp_types'))))")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True)
    assert proc.stdout.strip().splitlines()[-1] == "[]"
