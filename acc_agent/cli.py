"""Typer front end: one command per registry tool, plus the workflow commands in ``commands/``.

Tool commands are generated from each tool's input model, so the CLI never drifts from the
registry. Contract (design.md): ``--json`` prints exactly the output model; exit 0 ok, 1 the
verdict is a failure, 2 bad input/usage with ``{"error": ...}`` on stdout under ``--json``, 3 the
verdict is inconclusive (nothing could be compared).

Start-up: a command's arguments come from :func:`tool_entry` — plain data computed from the
input model — and ``main`` reads those entries from a cached manifest (``cli_manifest``), so
``--help`` and argument errors import neither pydantic, numpy nor any tool module; the tool's
module and model are imported only when the command runs. Tools registered in this process
(tests, embedding scripts) are read from the live registry instead.
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
from collections.abc import Mapping
from enum import Enum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Literal

import typer

from acc_agent.cli_manifest import FieldEntry, ToolEntry
from acc_agent.errors import AccAgentError
from acc_agent.text_safety import terminal_lines, terminal_text

if TYPE_CHECKING:
    from pydantic.fields import FieldInfo
    from typer._click.core import Command
    from typer.core import TyperGroup

    from acc_agent.registry import ToolSpec

_SCALARS = (bool, int, float, str)
_SCALAR_BY_NAME: dict[str, type] = {t.__name__: t for t in _SCALARS}


class _Command(typing.Protocol):
    """A tool's command function: typer reads its signature, then calls it with the parsed values."""

    def __call__(self, **kwargs: object) -> None: ...


class _ArgumentLike(typing.Protocol):
    """What the usage line reads of typer's ``TyperArgument``."""

    required: bool
    display_name_raw: str
    nargs: int


class _Coercer(typing.Protocol):
    def coerce(self, value: object, *, param: object, ctx: object) -> object: ...


class _TypeDescriptor(typing.Protocol):
    annotation: object
    parameter_info: object


class _ParameterLike(typing.Protocol):
    """What :class:`_DeferredCoercion` reads of the click parameter being coerced."""

    multiple: bool
    nargs: int
    type_descriptor: _TypeDescriptor


OriginalT = typing.TypeVar("OriginalT")


def _unwrap_optional(annotation: object) -> tuple[object, bool]:
    origin = typing.get_origin(annotation)
    if origin in (typing.Union, types.UnionType):
        args = [a for a in typing.get_args(annotation) if a is not type(None)]
        if len(args) == 1:
            return args[0], True
    return annotation, False


def _cli_type(annotation: object) -> tuple[type, str]:
    """Map a model field type to what typer can parse; complex types travel as strings."""
    inner, _ = _unwrap_optional(annotation)
    if typing.get_origin(inner) is Annotated:
        inner = typing.get_args(inner)[0]
    for scalar in _SCALARS:
        if inner is scalar:
            return scalar, ""
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


def tool_entry(spec: ToolSpec) -> ToolEntry:
    """What the CLI needs of one tool, as plain JSON data (one entry of the cached manifest).

    Everything the command's signature is built from is here, computed from the input model, so a
    command built from a cached entry parses and helps exactly like one built from the model."""
    fields = spec.input_model.model_fields
    ordered = [n for n in spec.positional if n in fields] + [n for n in fields if n not in spec.positional]
    out: list[FieldEntry] = []
    for fname in ordered:
        finfo = fields[fname]
        cli_type, extra = _cli_type(finfo.annotation)
        required = finfo.is_required()
        item: FieldEntry = {"name": fname, "type": cli_type.__name__, "required": required,
                                "help": _field_help(finfo, extra), "positional": fname in spec.positional}
        if cli_type is bool and fname not in spec.positional:
            item["default"] = False if required else bool(finfo.get_default(call_default_factory=True))
        out.append(item)
    return {"name": spec.name, "cli_name": spec.cli_name, "module": spec.module,
            "description": spec.description, "fields": out}


def _load_spec(entry: ToolEntry) -> ToolSpec:
    """The registered tool behind a manifest entry: its module only, not every tool module."""
    from acc_agent import registry

    return registry.load_tool(entry["name"], entry["module"])


def _build_command(entry: ToolEntry, spec: ToolSpec | None = None) -> _Command:
    """Make a function whose signature typer turns into the tool's arguments and options.

    ``spec``: the live tool when the entry was computed in this process; otherwise it is loaded
    (module import, pydantic) only when the command runs."""
    params: list[inspect.Parameter] = []
    annotations: dict[str, object] = {}
    for item in entry["fields"]:
        fname = item["name"]
        cli_type = _SCALAR_BY_NAME[item["type"]]
        required = bool(item["required"])
        help_text = item["help"]
        opt_name = "--" + fname.replace("_", "-")
        if item["positional"]:
            marker: object = typer.Argument(help=help_text, show_default=False, metavar=fname.upper())
            default: object = inspect.Parameter.empty if required else None
            ann: object = Annotated[cli_type if required else typing.Optional[cli_type], marker]  # noqa: UP045
        elif cli_type is bool:
            flag = f"{opt_name}/--no-{fname.replace('_', '-')}"
            marker = typer.Option(flag, help=help_text)
            default = bool(item["default"])
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

    def command(**kwargs: object) -> None:
        as_json = bool(kwargs.pop("as_json", False))
        tool = spec if spec is not None else _load_spec(entry)
        fields = tool.input_model.model_fields
        arguments: dict[str, object] = {}
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
        raise typer.Exit(run_tool_command(tool, arguments, as_json))

    command.__signature__ = inspect.Signature(params)  # type: ignore[attr-defined]
    command.__annotations__ = annotations
    command.__name__ = entry["name"]
    command.__doc__ = entry["description"]
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


def run_tool_command(spec: ToolSpec, arguments: Mapping[str, object], as_json: bool) -> int:
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


def _patch_typer(class_name: str, method: str, wrap: typing.Callable[[OriginalT], object]) -> None:
    """Replace ``typer.core.<class_name>.<method>`` by ``wrap(original)``, once; a no-op if typer's internals differ."""
    core = sys.modules.get("typer.core")
    cls = getattr(core, class_name, None)
    original = getattr(cls, method, None)
    marker = f"_acc_agent_patched_{method}"
    if cls is None or original is None or getattr(cls, marker, False):
        return
    setattr(cls, method, wrap(original))
    setattr(cls, marker, True)


def _plain_usage_names() -> None:
    """Usage lines print a required argument as ``GOLDEN``, as click and every man page do.

    Why: typer 0.29 wraps required arguments in braces (``{GOLDEN} {TARGET}``), which reads as a
    set or a template placeholder; the help's own Arguments section already marks them required.
    Optional arguments keep their ``[CONFIG]`` brackets."""

    def wrap(original: typing.Callable[[_ArgumentLike], object]) -> typing.Callable[[_ArgumentLike], str]:
        def _usage_display_name(self: _ArgumentLike) -> str:
            if not self.required:
                return str(original(self))
            return str(self.display_name_raw) + ("..." if self.nargs != 1 else "")

        return _usage_display_name

    _patch_typer("TyperArgument", "_usage_display_name", wrap)


def _new_app() -> typer.Typer:
    """The root group and its callback, without commands."""
    _plain_usage_names()
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

    return app


def _add_tool(app: typer.Typer, entry: ToolEntry, spec: ToolSpec | None) -> None:
    description = entry["description"]
    app.command(name=entry["cli_name"], help=description, short_help=_first_sentence(description))(
        _build_command(entry, spec)
    )


def _register_commands(app: typer.Typer) -> None:
    """The workflow and agent commands of ``acc_agent/commands/``, after the tools."""
    import acc_agent.commands as commands_pkg

    for info in sorted(pkgutil.iter_modules(commands_pkg.__path__), key=lambda i: i.name):
        if info.name.startswith("_"):
            continue
        module = importlib.import_module(f"acc_agent.commands.{info.name}")
        register = getattr(module, "register", None)
        if register is not None:
            register(app)


def _live_tools(entries: list[ToolEntry] | None) -> list[tuple[ToolEntry, ToolSpec | None]]:
    if entries is not None:
        return [(entry, None) for entry in entries]
    from acc_agent.registry import all_tools

    return [(tool_entry(spec), spec) for spec in all_tools().values()]


def build_app(entries: list[ToolEntry] | None = None) -> typer.Typer:
    """The typer app; ``entries`` (from :func:`tool_entries` or the cached manifest) default to the live registry."""
    app = _new_app()
    for entry, spec in _live_tools(entries):
        _add_tool(app, entry, spec)
    _register_commands(app)
    return app


def tool_entries() -> list[ToolEntry]:
    """Every registered tool's CLI entry (imports every tool module and pydantic)."""
    from acc_agent.registry import all_tools

    return [tool_entry(spec) for spec in all_tools().values()]


def _main_entries() -> list[ToolEntry] | None:
    """The cached manifest's entries; None (the live registry) when tools were registered in this
    process (their entries are the truth). A missing or stale manifest is rebuilt and written."""
    spec = sys.modules.get("acc_agent.tools.spec")
    if spec is not None and getattr(spec, "REGISTERED", None):
        return None
    from acc_agent import cli_manifest

    entries = cli_manifest.load()
    if entries is None:
        entries = tool_entries()
        cli_manifest.store(entries)
    return entries


class _LazyToolCommand:
    """A tool's entry in the root group, converted by typer (≈1 ms a command, 25 ms for all) only
    when it is used: ``--help`` of the root lists it from its name and short help alone.

    The real command is typer's own conversion of the same function in an app with the same
    settings; everything but the listing is that command (attribute access goes to it)."""

    def __init__(self, entry: ToolEntry, spec: ToolSpec | None) -> None:
        self.name = entry["cli_name"]
        self.help = entry["description"]
        self.short_help = _first_sentence(entry["description"])
        self.hidden = False
        self.deprecated = False
        self._entry, self._spec = entry, spec
        self._real: Command | None = None

    def real(self) -> Command:
        if self._real is None:
            app = _new_app()
            _add_tool(app, self._entry, self._spec)
            self._real = _group(app).commands[self.name]
        return self._real

    def get_short_help_str(self, limit: int = 45) -> str:
        from typer._click.core import Command

        return Command.get_short_help_str(self, limit)  # type: ignore[arg-type]  # click's own wording

    def __getattr__(self, name: str) -> object:
        return getattr(self.real(), name)


def _group(app: typer.Typer) -> TyperGroup:
    """The click group typer makes of an app (an app with a callback is always a group)."""
    from typer.core import TyperGroup  # loaded with typer.main already

    group = typer.main.get_command(app)
    if not isinstance(group, TyperGroup):
        raise TypeError(f"typer made a {type(group).__name__} of the root app, not a group")
    return group


def main_command() -> TyperGroup:
    """The root click group ``main`` runs: tools from the manifest, each converted when used."""
    app = _new_app()
    _register_commands(app)
    group = _group(app)
    lazy = {entry["cli_name"]: _LazyToolCommand(entry, spec) for entry, spec in _live_tools(_main_entries())}
    # Each proxy stands for its Command (every attribute but the listing is the real one's).
    proxies = typing.cast("dict[str, Command]", lazy)
    group.commands = {**proxies, **group.commands}  # tools first, as build_app registers them
    return group


class _DeferredCoercion:
    """typer's coercion of one parameter, built only for a value that needs it.

    Why: typer (0.29) coerces every parameter through a pydantic ``TypeAdapter`` and builds it even
    for a value that is absent, so an argument error or a command's ``--help`` imported pydantic
    (≈0.15 s). An absent value (``None``) comes back as typer's own ``coerce`` returns it, and a
    plain ``str`` parameter's string as its adapter returns it (``str(value)``); anything else goes
    to the adapter typer would have used."""

    def __init__(self, param: object, build: typing.Callable[[object], _Coercer]) -> None:
        self._param = param
        self._build = build

    def coerce(self, value: object, param: _ParameterLike, ctx: object) -> object:
        multi = param.multiple or param.nargs == -1
        if value is None:
            return () if multi else None
        desc = param.type_descriptor
        if (not multi and type(value) is str and desc.annotation is str
                and getattr(desc.parameter_info, "parser", None) is None):
            return value
        return self._build(self._param).coerce(value, param=param, ctx=ctx)


def _defer_typer_coercion() -> None:
    """Install :class:`_DeferredCoercion` in typer's parameters."""

    def wrap(original: typing.Callable[[object], _Coercer]) -> typing.Callable[[object], object]:
        def get_runtime_param(self: object) -> object:
            built = getattr(self, "_runtime_param", None)
            if built is not None:
                return built
            return _DeferredCoercion(self, original)

        return get_runtime_param

    _patch_typer("_TyperParameter", "get_runtime_param", wrap)


def main(argv: list[str] | None = None) -> None:
    """Entry point; usage errors under ``--json`` still print the structured error on stdout."""
    if argv is None:  # this process is the command: its large data may be left to the OS at exit
        from acc_agent import process_exit

        process_exit.enable()
        try:
            _main(sys.argv[1:])
        except SystemExit as exc:
            process_exit.exit_process(exc.code)
        return
    _main(list(argv))


def _main(args: list[str]) -> None:
    _defer_typer_coercion()
    command = main_command()
    if "--json" not in args:
        command.main(args=args, prog_name="acc-agent")  # what typer's app() does, pretty exceptions off
        return
    from typer._click.exceptions import UsageError  # typer vendors click since 0.26

    try:
        code = command.main(args=args, prog_name="acc-agent", standalone_mode=False)
    except UsageError as exc:
        err = AccAgentError("usage", exc.format_message(), hint="Run the command with --help.")
        raise SystemExit(emit_error(err, as_json=True)) from None
    raise SystemExit(code if isinstance(code, int) else 0)


if __name__ == "__main__":
    main()
