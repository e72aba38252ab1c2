"""The MCP server, for the commands that need it: the ``mcp`` SDK is an optional dependency.

Only ``acc-agent mcp`` and ``acc-agent schema --format mcp`` use the SDK, so a plain install (the
CLI, the reports, the Python API) does not pull it in; these two say how to add it instead of
failing with an ImportError.
"""

from __future__ import annotations

import importlib.util
from types import ModuleType

from acc_agent.errors import AccAgentError

MCP_EXTRA_HINT = "pip install 'acc-agent[mcp]' (or: pip install 'mcp>=2.3,<3'), then run the command again."


def mcp_server_module() -> ModuleType:
    """``acc_agent.mcp_server``, or a ``missing_dependency`` error naming the extra to install."""
    if importlib.util.find_spec("mcp") is None or importlib.util.find_spec("mcp_types") is None:
        raise AccAgentError("missing_dependency", "the MCP server needs the mcp package, which is not installed",
                            hint=MCP_EXTRA_HINT)
    from acc_agent import mcp_server

    return mcp_server
