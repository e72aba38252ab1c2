"""Stdio MCP server exposing every registry tool (imported only by ``acc-agent mcp``).

A thin layer over the registry, built on the SDK's public ``MCPServer`` API: ``list_tools`` and
``call_tool`` are overridden, so what is listed comes straight from the registry (lean argument
schemas, small output schemas, each tool's declared annotations) and every call goes through the
registry's own validation, with the structured ``{"error": {code, message, hint, field}}`` the
other front ends give (the SDK's own argument errors arrive as plain text an agent cannot act on).

Each answer is a digest (see :mod:`acc_agent.digest`): a short text and the same summary as
structured content, plus ``resource_link`` content pointing at the complete result (JSON) and at
the files the tool wrote (the full CSV table, plots, documents).

While a tool runs it reports progress when the client asked for it (a ``progressToken``), and a
cancelled request stops the tool at its next checkpoint (see :mod:`acc_agent.progress`). Tool
hints are phrased for MCP callers ("pass `mapping`", not "--mapping"; see :mod:`acc_agent.frontend`).

The stdio transport owns stdout; everything here logs to stderr (the SDK also points fd 1 at
stderr while serving, so a stray ``print`` in a tool cannot corrupt the protocol).
"""

from __future__ import annotations

import logging
import sys
import threading
import typing
from typing import TYPE_CHECKING

from mcp.server import MCPServer
from mcp.server.mcpserver import Context
from mcp.server.mcpserver.exceptions import ToolError
from mcp_types import CallToolResult, ContentBlock, ResourceLink, TextContent, ToolAnnotations
from mcp_types import Tool as MCPTool

from acc_agent import __version__, frontend, progress
from acc_agent.agent_arguments import prepare_arguments
from acc_agent.agent_schema import lean_description, lean_input_schema
from acc_agent.digest import answer, output_schema
from acc_agent.errors import AccAgentError
from acc_agent.registry import ToolSpec, all_tools

if TYPE_CHECKING:
    import anyio

log = logging.getLogger("acc_agent.mcp")

INSTRUCTIONS = (
    "acc-agent checks a GPU→Ascend NPU migration: environment, baseline, training short run, performance "
    "and accuracy (tensor and dump comparison), and writes the migration reports. Every answer starts with "
    "the verdict and a one-line summary, then where to look, the rows that matter and the next actions; "
    "the complete result is a JSON file (resource link). Every tool also takes full_result=true: the "
    "structured content is then the complete result. Bad input comes back as an error naming the "
    "argument and the fix. Start a project with init_project (writes mig.yaml). "
    "Steps, stop rules and what each report needs: resource skill://ascend-migration-check/SKILL.md."
)


def tool_entry(spec: ToolSpec) -> MCPTool:
    """One ``tools/list`` entry, entirely from the registry."""
    return MCPTool(
        name=spec.name,
        description=lean_description(spec),
        input_schema=lean_input_schema(spec),
        output_schema=output_schema(spec),
        annotations=ToolAnnotations(**spec.annotations()),
    )


def _error_result(err: AccAgentError) -> CallToolResult:
    body = err.to_dict()
    text = f"{err.code}: {err.message}" + (f"\nhint: {err.hint}" if err.hint else "")
    return CallToolResult(content=[TextContent(type="text", text=text)], structured_content=body, is_error=True)


def run_tool(spec: ToolSpec, arguments: typing.Mapping[str, object]) -> CallToolResult:
    """Validate, run and shape one call; never raises except :class:`progress.Cancelled`.

    Runs with MCP phrasing, so hints a tool builds name arguments and tool calls, not CLI flags.
    """
    with frontend.use("mcp"):
        try:
            args, full = prepare_arguments(spec, arguments)
            result = spec.run(args)
            reply = answer(spec, result, full=full)
        except progress.Cancelled:
            raise
        except AccAgentError as err:
            log.info("tool %s refused its input: %s", spec.name, err.code)
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
    content: list[ContentBlock] = [TextContent(type="text", text=reply.text)]
    for f in reply.files:
        try:
            size = f.path.stat().st_size
        except OSError:
            size = None
        content.append(
            ResourceLink(name=f.path.name, uri=f.uri, description=f.description, mime_type=f.mime_type, size=size)
        )
    return CallToolResult(content=content, structured_content=reply.structured, is_error=False)


class AccAgentMCPServer(MCPServer[object]):
    """``MCPServer`` listing and calling the registry's tools through its public overridable methods."""

    def __init__(self, specs: dict[str, ToolSpec]) -> None:
        super().__init__(name="acc-agent", version=__version__, instructions=INSTRUCTIONS)
        self._specs = specs
        self._listed = [tool_entry(spec) for spec in specs.values()]
        self._call_lock: anyio.Lock | None = None  # created inside the event loop on first use

    @property
    def specs(self) -> dict[str, ToolSpec]:
        return self._specs

    async def list_tools(self) -> list[MCPTool]:
        return list(self._listed)

    async def call_tool(self, name: str, arguments: dict[str, object],
                        context: Context[object, object] | None = None) -> CallToolResult:
        spec = self._specs.get(name)
        if spec is None:
            return _error_result(
                AccAgentError(
                    "unknown_tool", f'no tool named "{name}"', hint="Known tools: " + ", ".join(self._specs)
                )
            )
        if not isinstance(arguments, dict):
            raise ToolError("arguments must be an object")
        import anyio

        # One call at a time: tools share process-wide state (matplotlib, numpy error settings,
        # result files) and are CPU-bound, so parallel calls would gain nothing.
        if self._call_lock is None:
            self._call_lock = anyio.Lock()
        async with self._call_lock:
            return await _run_in_thread(spec, arguments, context)


async def _run_in_thread(spec: ToolSpec, arguments: dict[str, object],
                         context: Context[object, object] | None) -> CallToolResult:
    """Run a synchronous tool in a worker thread, relaying its progress and honouring cancellation.

    The worker thread keeps the session answering pings while a tool computes. Progress goes to
    the client through the request's context (a no-op when the client sent no progressToken).
    When the request is cancelled, the flag the tool polls is set and this waits, shielded, until
    the tool has stopped, so the next call never overlaps a dying one.
    """
    import anyio
    import anyio.from_thread
    import anyio.to_thread

    stop = threading.Event()
    requested = getattr(getattr(context, "request_context", None), "cancel_requested", None) if context else None

    def cancelled() -> bool:
        return stop.is_set() or bool(requested is not None and requested.is_set())

    def send(done: float, total: float | None, message: str | None) -> None:
        if context is not None:
            anyio.from_thread.run(context.report_progress, done, total, message)

    def work() -> CallToolResult:
        with progress.reporting(progress.Reporter(send, cancelled)):
            try:
                return run_tool(spec, arguments)
            except progress.Cancelled:
                log.info("tool %s cancelled by the client", spec.name)
                return _error_result(AccAgentError("cancelled", f"{spec.name} was cancelled", hint="Call it again."))

    box: dict[str, CallToolResult] = {}
    finished = anyio.Event()

    async def runner() -> None:
        try:
            box["result"] = await anyio.to_thread.run_sync(work)
        finally:
            finished.set()

    async with anyio.create_task_group() as group:
        group.start_soon(runner)
        try:
            await finished.wait()
        except anyio.get_cancelled_exc_class():
            stop.set()
            raise
    return box["result"]


def _add_skill_resources(server: MCPServer[object]) -> int:
    """Offer the skill files as resources, for agents that speak MCP but do not load skill folders.

    Absent skills (an install without the ``skills/`` folder) leave the tools working; nothing fails.
    """
    import yaml
    from mcp.server.mcpserver.resources import FileResource

    from acc_agent.resources import skills_dir

    try:
        root = skills_dir()
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
    log.info("serving %d tools over stdio", len(server.specs))
    server.run("stdio")
