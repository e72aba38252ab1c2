"""Stdio MCP server exposing every registry tool (imported only by ``acc-agent mcp``).

Each tool is added to the SDK's ``MCPServer`` as a function with a flat signature generated from
its input model, so an agent passes ``{"golden": ..., "target": ...}`` rather than arguments
nested under one parameter. Calls go through the registry (the same validation and the same
structured errors as the CLI) and come back compact by default (see :mod:`acc_agent.compact`).

Why calls bypass the SDK's own argument validation: its failures arrive as plain text, while an
agent needs the structured ``{"error": {code, message, hint}}`` the other front ends give. The
published schemas are the input model's own, so what an agent reads is what gets validated.

The stdio transport owns stdout; everything here logs to stderr (the SDK also points fd 1 at
stderr while serving, so a stray ``print`` in a tool cannot corrupt the protocol).
"""

from __future__ import annotations

import inspect
import json
import logging
import sys
import typing
from typing import Annotated, Any

from mcp.server import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp_types import CallToolResult, TextContent, ToolAnnotations
from pydantic import Field

from acc_agent import __version__
from acc_agent.compact import compact_output_schema, compact_result
from acc_agent.errors import AccAgentError
from acc_agent.registry import ToolSpec, all_tools
from acc_agent.schemas import FULL_RESULT_ARG, FULL_RESULT_SCHEMA, input_schema, prepare_arguments

log = logging.getLogger("acc_agent.mcp")

INSTRUCTIONS = (
    "acc-agent checks a GPU→Ascend NPU migration: environment, baseline selection, training short run, "
    "performance and accuracy (tensor and dump comparison), and writes the migration reports. "
    "Every result has a verdict, a one-line summary and the evidence it used. Results are compact "
    "by default (long lists cut to the worst entries, the complete result in the JSON file named by "
    "compact.full_result); pass full_result=true to get everything inline. Bad input comes back as "
    'an error result {"error": {"code", "message", "hint"}}: follow the hint. '
    "The order of steps, stop rules and what each report needs are in the resource "
    "skill://ascend-migration-check/SKILL.md (one skill://<name>/SKILL.md per step)."
)


def _flat_function(spec: ToolSpec) -> Any:
    """A function whose signature is the input model's fields (plus ``full_result``), for the SDK."""
    params: list[inspect.Parameter] = []
    for fname, finfo in spec.input_model.model_fields.items():
        ann: Any = Annotated[finfo.annotation, Field(description=finfo.description)]
        default = (
            inspect.Parameter.empty if finfo.is_required() else finfo.get_default(call_default_factory=True)
        )
        params.append(
            inspect.Parameter(fname, inspect.Parameter.KEYWORD_ONLY, default=default, annotation=ann)
        )
    full_ann: Any = Annotated[bool, Field(description=FULL_RESULT_SCHEMA["description"])]
    params.append(
        inspect.Parameter(FULL_RESULT_ARG, inspect.Parameter.KEYWORD_ONLY, default=False, annotation=full_ann)
    )

    def call(**kwargs: Any) -> CallToolResult:
        return run_tool(spec, kwargs)

    call.__signature__ = inspect.Signature(params, return_annotation=CallToolResult)  # type: ignore[attr-defined]
    call.__annotations__ = {p.name: p.annotation for p in params} | {"return": CallToolResult}
    call.__name__ = spec.name
    call.__doc__ = spec.description
    return call


def _error_result(err: AccAgentError) -> CallToolResult:
    body = err.to_dict()
    text = f"{err.code}: {err.message}" + (f"\nhint: {err.hint}" if err.hint else "")
    return CallToolResult(
        content=[TextContent(type="text", text=text + "\n" + json.dumps(body, ensure_ascii=False))],
        structured_content=body,
        is_error=True,
    )


def run_tool(spec: ToolSpec, arguments: typing.Mapping[str, Any]) -> CallToolResult:
    """Validate, run and shape one call; never raises (an agent always gets a result back)."""
    try:
        args, full = prepare_arguments(spec, arguments)
        result = spec.run(args)
        payload = compact_result(spec, result, full=full)
    except AccAgentError as err:
        log.info("tool %s refused its input: %s", spec.name, err.code)
        if err.code == "invalid_input" and err.hint.startswith("See `acc-agent"):
            err.hint = f"Check the arguments against the inputSchema of {spec.name} (tools/list)."
        return _error_result(err)
    except Exception as exc:  # a tool bug must not take the server down
        log.exception("tool %s crashed", spec.name)
        return _error_result(
            AccAgentError(
                "internal_error",
                f"{spec.name} failed: {type(exc).__name__}: {exc}",
                hint="This is a bug in acc-agent, not in your input; the server log (stderr) has the traceback.",
            )
        )
    text = json.dumps(payload, ensure_ascii=False, separators=(",", ":"))
    return CallToolResult(
        content=[TextContent(type="text", text=text)], structured_content=payload, is_error=False
    )


class AccAgentMCPServer(MCPServer):
    """``MCPServer`` whose calls go through the registry so every failure is a structured error."""

    def __init__(self, specs: dict[str, ToolSpec]) -> None:
        super().__init__(name="acc-agent", version=__version__, instructions=INSTRUCTIONS)
        self._specs = specs
        self._call_lock: Any = None  # created inside the event loop on first use
        for spec in specs.values():
            self.add_tool(
                _flat_function(spec),
                name=spec.name,
                description=spec.description,
                annotations=ToolAnnotations(read_only_hint=False, open_world_hint=False),
            )
            registered = self._tool_manager.get_tool(spec.name)
            if registered is None:  # pragma: no cover - add_tool just stored it
                raise RuntimeError(f"tool {spec.name} was not registered")
            # Publish the input model's own schema (what run_tool validates against) and the
            # output schema of the compact form; fn_metadata fields are read live by the SDK.
            registered.parameters = input_schema(spec)
            registered.fn_metadata.output_schema = compact_output_schema(spec)

    async def call_tool(self, name: str, arguments: dict[str, Any], context: Any = None) -> Any:
        spec = self._specs.get(name)
        if spec is None:
            return _error_result(
                AccAgentError(
                    "unknown_tool", f"no tool named {name!r}", hint="Known tools: " + ", ".join(self._specs)
                )
            )
        if not isinstance(arguments, dict):
            raise ToolError("arguments must be an object")
        import anyio
        import anyio.to_thread

        # Tools are synchronous and may take seconds; a worker thread keeps the session answering
        # pings. One call at a time: tools share process-wide state (matplotlib, numpy error
        # settings, result files) and are CPU-bound, so parallel calls would gain nothing.
        if self._call_lock is None:
            self._call_lock = anyio.Lock()
        async with self._call_lock:
            return await anyio.to_thread.run_sync(run_tool, spec, arguments)


def _add_skill_resources(server: MCPServer) -> int:
    """Offer the skill files as resources, for agents that speak MCP but do not load skill folders.

    Absent skills (an install without the ``skills/`` folder) leave the tools working; nothing fails.
    """
    import yaml
    from mcp.server.mcpserver.resources import FileResource

    from acc_agent.commands.agents import skills_source

    try:
        root = skills_source()
    except AccAgentError as err:
        log.warning("no skill resources: %s", err.message)
        return 0
    count = 0
    for skill_md in sorted(root.glob("*/SKILL.md")):
        folder = skill_md.parent
        try:
            front = yaml.safe_load(skill_md.read_text(encoding="utf-8").split("---", 2)[1]) or {}
        except (yaml.YAMLError, IndexError):
            front = {}
        description = str(front.get("description", "")) or None
        for path in [skill_md, *sorted(folder.glob("references/*.md"))]:
            relative = path.relative_to(root).as_posix()
            server.add_resource(
                FileResource(
                    uri=f"skill://{relative}",
                    name=relative,
                    description=description if path == skill_md else f"Reference of the {folder.name} skill.",
                    mime_type="text/markdown",
                    path=path.resolve(),
                )
            )
            count += 1
    return count


def build_server() -> AccAgentMCPServer:
    server = AccAgentMCPServer(all_tools())
    _add_skill_resources(server)
    return server


def serve() -> None:
    """Run the stdio server until the client closes stdin."""
    logging.basicConfig(
        stream=sys.stderr, level=logging.WARNING, format="acc-agent mcp: %(levelname)s %(message)s"
    )
    server = build_server()
    log.info("serving %d tools over stdio", len(server._specs))
    server.run("stdio")
