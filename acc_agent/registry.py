"""The one list of tools that every front end (CLI, MCP server, schema export, reports) reads.

A tool is a plain function ``fn(InputModel) -> OutputModel`` in a module under
``acc_agent/tools/`` (or ``acc_agent/app/`` for the application's own, such as
``render_deliverables``), registered with :func:`acc_agent.tools.spec.tool`. Adding a tool means
adding one module there:
discovery walks the package, so no front end needs editing. Tool modules must keep heavy imports
(torch, matplotlib, mcp) inside functions so that discovery stays fast.
"""

from __future__ import annotations

import contextlib
import importlib
from collections.abc import Mapping

from acc_agent.errors import AccAgentError
from acc_agent.models.common import ToolOutput
from acc_agent.tools.spec import REGISTERED, ToolSpec, import_tool_modules, tool

__all__ = ["ToolSpec", "all_tools", "call_tool", "get_tool", "load_tool", "tool"]

#: The packages whose public modules register tools: the skills, then the application's own.
TOOL_PACKAGES = ("acc_agent.tools", "acc_agent.app")
_DISCOVERED = False


def _discover() -> None:
    global _DISCOVERED
    if _DISCOVERED:
        return
    for package_name in TOOL_PACKAGES:
        import_tool_modules(package_name)
    _DISCOVERED = True


def all_tools() -> dict[str, ToolSpec]:
    """Every registered tool, by name, in a stable order."""
    _discover()
    return dict(sorted(REGISTERED.items()))


def load_tool(name: str, module: str) -> ToolSpec:
    """The tool ``name``, importing only ``module`` (where the CLI's manifest says it is registered).

    Why: running one command should not import all twenty tool modules (≈0.3 s); if the module
    no longer registers the tool, every module is discovered as before."""
    if name not in REGISTERED:
        with contextlib.suppress(ImportError):
            importlib.import_module(module)
    spec = REGISTERED.get(name)
    return spec if spec is not None else get_tool(name)


def get_tool(name: str) -> ToolSpec:
    tools = all_tools()
    key = name.replace("-", "_")
    if key not in tools:
        raise AccAgentError(
            "unknown_tool",
            f'no tool named "{name}"',
            hint="Known tools: " + ", ".join(tools),
        )
    return tools[key]


def call_tool(name: str, arguments: Mapping[str, object]) -> ToolOutput:
    """Validate and run one tool by name: the entry point for MCP and for scripts."""
    return get_tool(name).run(arguments)
