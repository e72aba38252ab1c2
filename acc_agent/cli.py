"""Typer front end: one command per registry tool, plus the workflow commands in ``commands/``.

Tool commands are generated from each tool's input model, so the CLI never drifts from the
registry. Contract (design.md): ``--json`` prints exactly the output model; exit 0 ok, 1 the
verdict is a failure, 2 bad input/usage with ``{"error": ...}`` on stdout under ``--json``, 3 the
verdict is inconclusive (nothing could be compared).
"""

from __future__ import annotations

import contextlib
import importlib
import inspect
import json
import pkgutil
import sys
import types
import typing
from enum import Enum
from pathlib import Path
from typing import Annotated, Any, Literal

import typer
from pydantic.fields import FieldInfo

from acc_agent.errors import AccAgentError
from acc_agent.registry import ToolSpec, all_tools
from acc_agent.text_safety import terminal_lines, terminal_text

_SCALARS = (bool, int, float, str)


def _unwrap_optional(annotation: Any) -> tuple[Any, bool]:
    origin = typing.get_origin(annotation)
    if origin in (typing.Union, types.UnionType):
        args = [a for a in typing.get_args(annotation) if a is not type(None)]
        if len(args) == 1:
            return args[0], True
    return annotation, False


def _cli_type(annotation: Any) -> tuple[Any, str]:
    """Map a model field type to what typer can parse; complex types travel as strings."""
    inner, _ = _unwrap_optional(annotation)
    if typing.get_origin(inner) is Annotated:
        inner = typing.get_args(inner)[0]
    if inner in _SCALARS:
        return inner, ""
    if inner is Path or (isinstance(inner, type) and issubclass(inner, Path)):
        return str, ""
    if typing.get_origin(inner) is Literal:
        choices = [str(c) for c in typing.get_args(inner)]
        return str, "one of: " + ", ".join(choices)
    if isinstance(inner, type) and issubclass(inner, Enum):
        return str, "one of: " + ", ".join(str(m.value) for m in inner)
    origin = typing.get_origin(inner)
    if origin in (list, tuple, set):
        return str, "comma-separated list"
    return str, "JSON or the documented short form"


def _field_help(finfo: FieldInfo, extra: str) -> str:
    text = finfo.description or ""
    if extra:
        text = f"{text} ({extra})" if text else extra
    return text


def _build_command(spec: ToolSpec) -> typing.Callable[..., None]:
    """Make a function whose signature typer turns into the tool's arguments and options."""
    params: list[inspect.Parameter] = []
    annotations: dict[str, Any] = {}
    fields = spec.input_model.model_fields
    ordered = [n for n in spec.positional if n in fields] + [n for n in fields if n not in spec.positional]
    for fname in ordered:
        finfo = fields[fname]
        cli_type, extra = _cli_type(finfo.annotation)
        required = finfo.is_required()
        help_text = _field_help(finfo, extra)
        opt_name = "--" + fname.replace("_", "-")
        if fname in spec.positional:
            marker: Any = typer.Argument(help=help_text, show_default=False)
            default: Any = inspect.Parameter.empty if required else None
            ann: Any = Annotated[cli_type if required else typing.Optional[cli_type], marker]  # noqa: UP045
        elif cli_type is bool:
            default_bool = False if required else bool(finfo.get_default(call_default_factory=True))
            flag = f"{opt_name}/--no-{fname.replace('_', '-')}"
            marker = typer.Option(flag, help=help_text)
            default = default_bool
            ann = Annotated[bool, marker]
        else:
            marker = typer.Option(opt_name, help=help_text, show_default=False)
            default = inspect.Parameter.empty if required else None
            ann = Annotated[cli_type if required else typing.Optional[cli_type], marker]  # noqa: UP045
        params.append(inspect.Parameter(fname, inspect.Parameter.POSITIONAL_OR_KEYWORD, default=default, annotation=ann))
        annotations[fname] = ann
    json_ann = Annotated[bool, typer.Option("--json", help="Print exactly the tool's output model as JSON on stdout.")]
    params.append(inspect.Parameter("as_json", inspect.Parameter.KEYWORD_ONLY, default=False, annotation=json_ann))
    annotations["as_json"] = json_ann

    def command(**kwargs: Any) -> None:
        as_json = bool(kwargs.pop("as_json", False))
        arguments: dict[str, Any] = {}
        for key, value in kwargs.items():
            if value is None:
                continue
            finfo = fields[key]
            if isinstance(value, bool) and value == finfo.get_default(call_default_factory=True):
                continue
            if isinstance(value, str) and value[:1] in "[{" and _cli_type(finfo.annotation)[1]:
                with contextlib.suppress(json.JSONDecodeError):
                    value = json.loads(value)
            arguments[key] = value
        raise typer.Exit(run_tool_command(spec, arguments, as_json))

    command.__signature__ = inspect.Signature(params)  # type: ignore[attr-defined]
    command.__annotations__ = annotations
    command.__name__ = spec.name
    command.__doc__ = spec.description
    return command


def emit_error(err: AccAgentError, as_json: bool) -> int:
    if as_json:
        sys.stdout.write(json.dumps(err.to_dict(), ensure_ascii=False) + "\n")
    else:
        # Messages quote user paths and names: no escape sequence or newline of theirs reaches the tty.
        where = f" [{terminal_text(err.path)}]" if err.path else ""
        sys.stderr.write(f"error: {terminal_text(err.message)}{where}\n")
        if err.hint:
            sys.stderr.write(f"hint: {terminal_text(err.hint)}\n")
    return 2


def run_tool_command(spec: ToolSpec, arguments: dict[str, Any], as_json: bool) -> int:
    """Run one tool for the CLI and return the exit code of the public contract."""
    try:
        result = spec.run(arguments)
    except AccAgentError as err:
        return emit_error(err, as_json)
    if as_json:
        sys.stdout.write(result.model_dump_json(indent=2) + "\n")
    elif spec.text_renderer is not None:
        # Every renderer's lines are stripped of escapes/control characters here as a last guard;
        # renderers also clean each line themselves, so a newline inside a name cannot forge a line.
        text = spec.text_renderer(result).rstrip("\n")
        sys.stdout.write(terminal_lines(text.split("\n")) + "\n")
    else:
        sys.stdout.write(f"[{result.verdict}] {terminal_text(result.summary)}\n")
    if result.is_failure():
        return 1
    return 3 if result.is_inconclusive() else 0


def _first_sentence(text: str) -> str:
    """The command list shows one sentence per tool; the full description is in COMMAND --help."""
    first = text.strip().splitlines()[0] if text.strip() else ""
    cut = first.find(". ")
    return first[: cut + 1] if cut > 0 else first


def build_app() -> typer.Typer:
    app = typer.Typer(
        no_args_is_help=True,
        add_completion=False,
        rich_markup_mode=None,  # plain help: rich's formatter alone costs ~60 ms of start-up
        pretty_exceptions_enable=False,
        help="acc-agent: check a GPU→Ascend NPU migration (environment, baseline, short run, "
        "performance, accuracy) and write Mig_Readme.md, Compare.md and Mig_report.md.",
    )

    @app.callback()
    def root(
        version: Annotated[bool, typer.Option("--version", help="Print the version and exit.")] = False,
    ) -> None:
        """acc-agent: check a GPU→Ascend NPU migration and write its reports."""
        if version:
            from acc_agent import __version__

            typer.echo(__version__)
            raise typer.Exit(0)

    for spec in all_tools().values():
        app.command(name=spec.cli_name, help=spec.description, short_help=_first_sentence(spec.description))(
            _build_command(spec)
        )
    import acc_agent.commands as commands_pkg

    for info in sorted(pkgutil.iter_modules(commands_pkg.__path__), key=lambda i: i.name):
        if info.name.startswith("_"):
            continue
        module = importlib.import_module(f"acc_agent.commands.{info.name}")
        register = getattr(module, "register", None)
        if register is not None:
            register(app)
    return app


def main(argv: list[str] | None = None) -> None:
    """Entry point; usage errors under ``--json`` still print the structured error on stdout."""
    args = list(sys.argv[1:] if argv is None else argv)
    app = build_app()
    if "--json" not in args:
        app(args=args, prog_name="acc-agent")
        return
    from typer._click.exceptions import UsageError  # typer vendors click since 0.26

    command = typer.main.get_command(app)
    try:
        code = command.main(args=args, prog_name="acc-agent", standalone_mode=False)
    except UsageError as exc:
        err = AccAgentError("usage", exc.format_message(), hint="Run the command with --help.")
        raise SystemExit(emit_error(err, as_json=True)) from None
    raise SystemExit(code if isinstance(code, int) else 0)


if __name__ == "__main__":
    main()
