"""Say an option or a call in the words of the front end that will read the message.

Why: the same tool runs behind the command line and behind the MCP server, and its hints
("pass --mapping", "run acc-agent compare-tensors ...") must name what the reader can actually
type. An engineer at a shell types flags; an agent over MCP passes arguments by name and calls
tools. Tools never import the MCP SDK, so the server marks the front end in a context variable
(:func:`use`) and the tools phrase their hints through :func:`option` and :func:`invoke`.

The default is the command line: scripts, tests and the reports (which humans read) keep the
CLI wording unless a front end says otherwise.
"""

from __future__ import annotations

import json
import shlex
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Literal

Frontend = Literal["cli", "mcp"]

_FRONTEND: ContextVar[Frontend] = ContextVar("acc_agent_frontend", default="cli")


def current() -> Frontend:
    """The front end whose reader gets the text being built."""
    return _FRONTEND.get()


@contextmanager
def use(frontend: Frontend) -> Iterator[None]:
    """Phrase every hint built inside the block for ``frontend`` (the MCP server sets ``"mcp"``)."""
    token = _FRONTEND.set(frontend)
    try:
        yield
    finally:
        _FRONTEND.reset(token)


def _is_placeholder(value: object) -> bool:
    return isinstance(value, str) and value.startswith("<") and value.endswith(">")


def _json_value(value: object) -> str:
    """An argument value as an MCP caller writes it (JSON), placeholders like ``<dump>`` left bare."""
    if _is_placeholder(value):
        return str(value)
    if hasattr(value, "__fspath__"):
        value = str(value)
    return json.dumps(value, ensure_ascii=False)


def _cli_value(value: object) -> str:
    """An option value as a shell user types it: lists comma-joined, maps as JSON, all quoted."""
    if _is_placeholder(value):
        return str(value)
    if isinstance(value, (list, tuple)):
        text = ",".join(str(v) for v in value)
    elif isinstance(value, dict):
        text = json.dumps(value, ensure_ascii=False)
    else:
        text = str(value)
    return shlex.quote(text)


def _flag(name: str) -> str:
    return "--" + name.replace("_", "-")


def option(name: str, value: object = None, *, frontend: Frontend | None = None) -> str:
    """One argument of a tool as the reader passes it.

    ``option("mapping")`` is ``--mapping`` on the CLI and ```mapping``` over MCP;
    ``option("pair_by_order", True)`` is ``--pair-by-order`` / ```pair_by_order=true```;
    ``option("precision", "fp32")`` is ``--precision fp32`` / ```precision="fp32"```.
    """
    where = frontend or current()
    if where == "mcp":
        return f"`{name}`" if value is None else f"`{name}={_json_value(value)}`"
    if value is None or value is True:
        return _flag(name)
    if value is False:
        return "--no-" + name.replace("_", "-")
    return f"{_flag(name)} {_cli_value(value)}"


#: How to find a tool's CLI command name and positional arguments; the registry installs its
#: catalogue here when it is imported (this module sits below it and must not import it).
_command_lookup: Callable[[str], tuple[str, tuple[str, ...]] | None] | None = None


def use_command_lookup(lookup: Callable[[str], tuple[str, tuple[str, ...]] | None]) -> None:
    """Phrase CLI calls with the command names and positional arguments ``lookup`` gives.

    Why a hook instead of an import: tools, numerics and io phrase their hints through this module,
    and the registry that knows the commands sits above all of them.
    """
    global _command_lookup
    _command_lookup = lookup


def _positional(tool: str) -> tuple[str, tuple[str, ...]]:
    """The CLI command name and positional arguments of a registered tool (plain kebab-case otherwise)."""
    found = None
    if _command_lookup is not None:
        try:
            found = _command_lookup(tool)
        except Exception:  # noqa: BLE001 - phrasing a hint must never fail the tool that builds it
            found = None
    return found if found is not None else (tool.replace("_", "-"), ())


def invoke(tool: str, /, *, frontend: Frontend | None = None, **arguments: object) -> str:
    """A call of ``tool`` with ``arguments`` as the reader makes it.

    CLI: ``acc-agent compare-tensors a.npy b.npy --precision fp32`` (the registry's positional
    arguments first); MCP: ``compare_tensors(golden="a.npy", target="b.npy", precision="fp32")``.
    ``None`` values are left out; values like ``<dump dir>`` are placeholders, printed bare.
    """
    where = frontend or current()
    given = {k: v for k, v in arguments.items() if v is not None}
    if where == "mcp":
        inner = ", ".join(f"{k}={_json_value(v)}" for k, v in given.items())
        return f"{tool}({inner})"
    command, positional = _positional(tool)
    parts = ["acc-agent", command]
    parts += [_cli_value(given.pop(name)) for name in positional if name in given]
    for key, value in given.items():
        if value is False:
            continue  # the CLI default of a flag; saying --no-x adds nothing
        parts.append(option(key, value, frontend="cli"))
    return " ".join(parts)


def argument(tool: str, name: str, *, frontend: Frontend | None = None) -> str:
    """How the reader names one argument of ``tool``: ```golden``` over MCP; ``GOLDEN`` or ``--top`` on the CLI."""
    where = frontend or current()
    if where == "mcp":
        return f"`{name}`"
    return name.upper() if name in _positional(tool)[1] else _flag(name)


def tool_help(tool: str, *, frontend: Frontend | None = None) -> str:
    """Where the reader finds a tool's accepted arguments."""
    where = frontend or current()
    if where == "mcp":
        return f"the inputSchema of {tool} in tools/list"
    return f"`acc-agent {_positional(tool)[0]} --help`"
