"""Commands for coding agents: ``mcp`` (stdio server), ``schema`` (tool definitions), ``skills install``.

Heavy imports (the MCP SDK costs ≈0.7 s) stay inside the command functions so that every other
command starts fast.
"""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path
from typing import Annotated

import typer

from acc_agent.errors import AccAgentError

#: Where agents look for skills inside a project, by agent family.
SKILL_LAYOUTS: dict[str, str] = {"claude": ".claude/skills", "agents": ".agents/skills"}


def skills_source() -> Path:
    """The skill folders shipped inside the package (acc_agent.resources); the MCP server reads them too.

    Imported here, not at the top: this module is loaded by every CLI start.
    """
    from acc_agent.resources import skills_dir

    return skills_dir()


def install_skills(target: Path, layouts: list[str]) -> list[Path]:
    """Copy every skill folder into ``target/<layout>/``; replaces only acc-agent's own skill folders."""
    unknown = [name for name in layouts if name not in SKILL_LAYOUTS]
    if unknown or not layouts:
        raise AccAgentError(
            "invalid_input",
            f"unknown agent layout(s): {', '.join(unknown) or '(none given)'}",
            hint="Use --agent with one or more of: " + ", ".join(SKILL_LAYOUTS) + ".",
        )
    if target.exists() and not target.is_dir():
        raise AccAgentError(
            "invalid_input",
            f"target {target} is not a folder",
            hint="Pass the project's root folder.",
            path=str(target),
        )
    source = skills_source()
    written: list[Path] = []
    for layout in layouts:
        dest_root = target / SKILL_LAYOUTS[layout]
        dest_root.mkdir(parents=True, exist_ok=True)
        for skill in sorted(p.parent for p in source.glob("*/SKILL.md")):
            dest = dest_root / skill.name
            if dest.is_symlink() or dest.is_file():
                dest.unlink()
            elif dest.is_dir():
                shutil.rmtree(dest)
            shutil.copytree(skill, dest, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
            written.append(dest)
    return written


def register(app: typer.Typer) -> None:
    skills_app = typer.Typer(
        no_args_is_help=True, help="Agent skill folders (SKILL.md) shipped with acc-agent."
    )

    @app.command(
        "mcp",
        help="Serve every acc-agent tool to a coding agent over MCP (stdio). Register it with your agent, "
        "e.g. `claude mcp add acc-agent -- acc-agent mcp`, or in an mcp.json: "
        '{"command": "acc-agent", "args": ["mcp"]}. Only protocol messages go to stdout; logs go to stderr. '
        "Each answer is a short digest (verdict, where to look, the rows that matter, next actions) with "
        "resource links to the full table and the complete result (JSON); a call with full_result=true "
        "returns the complete result as structured content.",
        short_help="Serve every tool to a coding agent over MCP (stdio).",
    )
    def mcp_command() -> None:
        """Imports the MCP SDK only here: it costs ≈0.7 s that no other command should pay (and it is optional)."""
        from acc_agent.mcp_loader import mcp_server_module

        try:
            server = mcp_server_module()
        except AccAgentError as err:
            sys.stderr.write(f"error: {err.message}\nhint: {err.hint}\n")
            raise typer.Exit(2) from None
        server.serve()

    @app.command(
        "schema",
        help="Print every tool's definition for LLM function calling, in the API's strict form. "
        "openai: Chat Completions tools with strict=true (every property required, optional ones "
        "nullable - send null for 'not given'); openai-responses: the same, in the Responses API's flat "
        "form. anthropic: Messages API tools (input_schema, strict). "
        "mcp: exactly what `acc-agent mcp` lists. Maps travel as JSON strings in the strict forms; "
        "acc_agent.agent_arguments.call_for_agent(name, arguments) decodes them and runs the tool.",
        short_help="Print tool definitions for OpenAI, Anthropic or MCP.",
    )
    def schema_command(
        fmt: Annotated[
            str,
            typer.Option(
                "--format", help="Which API's tool definitions: openai, openai-responses, anthropic or mcp."
            ),
        ] = "openai",
        out: Annotated[
            Path | None, typer.Option("--out", help="Write the JSON here instead of stdout.")
        ] = None,
    ) -> None:
        from acc_agent.schemas import tool_definitions

        try:
            defs = tool_definitions(fmt)
        except AccAgentError as err:
            sys.stderr.write(f"error: {err.message}\nhint: {err.hint}\n")
            raise typer.Exit(2) from None
        text = json.dumps(defs, ensure_ascii=False, indent=2) + "\n"
        if out is None:
            sys.stdout.write(text)
        else:
            try:
                out.write_text(text, encoding="utf-8")
            except OSError as exc:
                sys.stderr.write(
                    f"error: cannot write {out}: {exc.strerror}\nhint: Pass a path in an existing, writable folder.\n"
                )
                raise typer.Exit(2) from None
            sys.stderr.write(f"wrote {len(defs)} tool definitions to {out}\n")

    @skills_app.command(
        "install",
        help="Copy acc-agent's skill folders (SKILL.md) into a project's .claude/skills and .agents/skills, "
        "where coding agents look for them. Replaces only acc-agent's own skill folders.",
    )
    def skills_install(
        target: Annotated[
            Path,
            typer.Option(
                "--target", help="Project root; skills go to its .claude/skills and .agents/skills."
            ),
        ] = Path("."),
        agent: Annotated[
            list[str] | None,
            typer.Option(
                "--agent", help="Only these layouts: claude (.claude/skills), agents (.agents/skills)."
            ),
        ] = None,
    ) -> None:
        try:
            written = install_skills(target, agent or list(SKILL_LAYOUTS))
        except AccAgentError as err:
            sys.stderr.write(f"error: {err.message}\nhint: {err.hint}\n")
            raise typer.Exit(2) from None
        for path in written:
            sys.stdout.write(f"{path}\n")

    app.add_typer(skills_app, name="skills", short_help="Install the agent skill folders (SKILL.md) into a project.")
