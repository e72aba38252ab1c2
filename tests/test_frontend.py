"""Hints name what the reader can type: CLI flags at a shell, argument names and tool calls over MCP."""

from __future__ import annotations

from pathlib import Path

import pytest

from acc_agent import frontend
from acc_agent.errors import AccAgentError
from acc_agent.registry import call_tool


def test_default_is_the_command_line() -> None:
    assert frontend.current() == "cli"
    assert frontend.option("pair_by_order", True) == "--pair-by-order"
    assert frontend.option("mapping") == "--mapping"
    assert frontend.option("precision", "fp32") == "--precision fp32"
    assert frontend.option("record", False) == "--no-record"
    assert frontend.option("batch_sizes", [1, 8]) == "--batch-sizes 1,8"


def test_mcp_names_arguments_and_tool_calls() -> None:
    with frontend.use("mcp"):
        assert frontend.current() == "mcp"
        assert frontend.option("pair_by_order", True) == "`pair_by_order=true`"
        assert frontend.option("mapping") == "`mapping`"
        assert frontend.option("precision", "fp32") == '`precision="fp32"`'
        assert frontend.option("batch_sizes", [1, 8]) == "`batch_sizes=[1, 8]`"
        call = frontend.invoke("compare_tensors", golden="g.npy", target="t.npy", precision="fp32")
        assert call == 'compare_tensors(golden="g.npy", target="t.npy", precision="fp32")'
        assert frontend.argument("compare_dumps", "golden") == "`golden`"
        assert "tools/list" in frontend.tool_help("compare_dumps")
    assert frontend.current() == "cli"


def test_cli_invocation_puts_the_registry_positionals_first() -> None:
    line = frontend.invoke("compare_dumps", golden="a b", target="t", bench="<BENCH>", pair_by_order=True,
                           all_rows=False, workers=None)
    assert line == "acc-agent compare-dumps 'a b' t --bench <BENCH> --pair-by-order"
    assert frontend.argument("compare_dumps", "golden") == "GOLDEN"
    assert frontend.argument("compare_dumps", "top") == "--top"
    assert frontend.invoke("no_such_tool", x=1) == "acc-agent no-such-tool --x 1"


def test_validation_errors_name_the_field_and_the_fix_per_front_end(tmp_path: Path) -> None:
    with pytest.raises(AccAgentError) as cli:
        call_tool("compare_dumps", {"golden": "g", "bogus": 1})
    assert cli.value.field in ("target", "bogus")
    assert "Pass TARGET" in cli.value.hint and "Remove --bogus" in cli.value.hint
    with frontend.use("mcp"), pytest.raises(AccAgentError) as mcp:
        call_tool("compare_dumps", {"golden": "g", "target": "t", "top": "many"})
    err = mcp.value.to_dict()["error"]
    assert err["field"] == "top" and "Correct `top`" in err["hint"] and "--" not in err["hint"]


def test_tool_messages_follow_the_front_end(tmp_path: Path) -> None:
    """Messages built by the tools (errors, templates) switch wording; the numbers do not change."""
    args = {"callable": "numpy:ones", "requested": False, "batch_sizes": [8]}
    cli = call_tool("measure_performance", args)
    assert cli.not_executed is not None and cli.not_executed.command_template.startswith("acc-agent measure-performance")
    with frontend.use("mcp"):
        mcp = call_tool("measure_performance", args)
        assert mcp.not_executed is not None
        template = mcp.not_executed.command_template
        assert template.startswith('measure_performance(callable="numpy:ones"') and "--" not in template
        assert "requested=true" in template
        with pytest.raises(AccAgentError) as err:
            call_tool("measure_performance", {"callable": "no-colon"})
        assert "`callable`" in err.value.message and "--callable" not in err.value.message + err.value.hint
