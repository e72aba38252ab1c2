"""How a tool declares itself: :class:`ToolSpec` and the :func:`tool` decorator.

Why here, in the tools layer, and not in the registry: a tool module registers itself when it is
imported, and the tools sit below the application layer that the registry belongs to. Keeping the
declaration next to the tools lets them register without importing upwards; the registry (which
discovers the tool modules and serves every front end) reads :data:`REGISTERED`.
"""

from __future__ import annotations

import functools
import importlib
import pkgutil
import typing
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TypedDict, TypeVar

from pydantic import BaseModel, ValidationError

from acc_agent import frontend
from acc_agent.errors import from_validation_error
from acc_agent.json_types import JsonValue
from acc_agent.models.common import ToolOutput

InputT = TypeVar("InputT", bound=BaseModel)
OutputT = TypeVar("OutputT", bound=ToolOutput)
RenderedT = TypeVar("RenderedT", bound=ToolOutput)
CompactedT = TypeVar("CompactedT", bound=ToolOutput)
ArgT = TypeVar("ArgT")
ResultT = TypeVar("ResultT")


def _checked(fn: Callable[[ArgT], ResultT], accepts: type[ArgT]) -> Callable[[object], ResultT]:
    """``fn`` callable with any object, refusing one that is not an ``accepts``.

    Why: the registry holds tools of many input and output models side by side, so it can only say
    "some model" for each; this check is what makes that true at run time, with a clear error.
    """

    @functools.wraps(fn)
    def call(value: object) -> ResultT:
        if not isinstance(value, accepts):
            raise TypeError(f"{fn.__name__} takes a {accepts.__name__}, not a {type(value).__name__}")
        return fn(value)

    return call


class ToolHints(TypedDict, total=False):
    """MCP tool annotations, snake_case: the title, and the hints a tool declared."""

    title: str
    read_only_hint: bool
    destructive_hint: bool
    idempotent_hint: bool
    open_world_hint: bool


@dataclass(frozen=True)
class ToolSpec:
    """What a front end needs to expose one tool."""

    name: str
    #: The tool, taking an instance of ``input_model`` (:meth:`run` validates into it first); its
    #: parameter type is known only at run time, so a call with another model raises TypeError.
    func: Callable[[BaseModel], ToolOutput]
    input_model: type[BaseModel]
    output_model: type[ToolOutput]
    description: str
    positional: tuple[str, ...] = ()
    #: Take an instance of ``output_model`` (likewise checked when called).
    text_renderer: Callable[[ToolOutput], str] | None = None
    compact: Callable[[ToolOutput], Mapping[str, JsonValue]] | None = None
    #: The module that registers the tool (the CLI manifest imports only that one).
    module: str = ""
    cli_name: str = field(default="")
    title: str = ""
    read_only: bool | None = None
    destructive: bool | None = None
    idempotent: bool | None = None
    open_world: bool | None = None

    def annotations(self) -> ToolHints:
        """What the tool does to its surroundings, as MCP tool annotations (snake_case keys).

        Declared once here so every front end says the same thing; a hint the tool did not
        declare is left out (the client then assumes the cautious default). Destructive and
        idempotent mean something only for a tool that writes, so a read-only tool leaves them out.
        """
        out: ToolHints = {"title": self.title or self.name.replace("_", " ").capitalize()}
        if self.read_only is not None:
            out["read_only_hint"] = self.read_only
        if not self.read_only:
            if self.destructive is not None:
                out["destructive_hint"] = self.destructive
            if self.idempotent is not None:
                out["idempotent_hint"] = self.idempotent
        # A tool that declared what it touches and did not say it reaches outside the files and
        # machine it is pointed at works in a closed world (MCP's default assumes the opposite).
        if self.open_world is not None or self.read_only is not None:
            out["open_world_hint"] = bool(self.open_world)
        return out

    def run(self, arguments: Mapping[str, object] | BaseModel) -> ToolOutput:
        """Validate ``arguments`` and call the tool; bad input becomes :class:`AccAgentError`."""
        if isinstance(arguments, self.input_model):
            params = arguments
        else:
            try:
                params = self.input_model.model_validate(dict(arguments))
            except ValidationError as exc:
                raise from_validation_error(exc, self.name, self.input_model) from None
        return self.func(params)


#: Every tool registered so far in this process, by name (filled as tool modules are imported).
REGISTERED: dict[str, ToolSpec] = {}


def tool(
    *,
    description: str,
    positional: tuple[str, ...] = (),
    text_renderer: Callable[[RenderedT], str] | None = None,
    compact: Callable[[CompactedT], Mapping[str, JsonValue]] | None = None,
    name: str | None = None,
    title: str = "",
    read_only: bool | None = None,
    destructive: bool | None = None,
    idempotent: bool | None = None,
    open_world: bool | None = None,
) -> Callable[[Callable[[InputT], OutputT]], Callable[[InputT], OutputT]]:
    """Register ``fn`` as a tool; input and output models come from its type hints.

    ``description`` is what an agent reads to choose the tool: say when to call it and what it
    returns, in a few sentences (the argument descriptions carry the details). ``title`` and the
    hints say what the tool does to its surroundings: ``read_only`` (only reads files and the
    machine), else ``destructive`` (may overwrite or delete what was there) and ``idempotent``
    (the same call twice changes nothing more), and ``open_world`` (runs or reaches things
    outside the files it is given, e.g. a user's command). Writing into acc-agent's own results
    folder (complete results, a default CSV) does not count as writing; writing any path an
    argument names does, even when that argument is optional.
    """

    def decorate(fn: Callable[[InputT], OutputT]) -> Callable[[InputT], OutputT]:
        hints = typing.get_type_hints(fn)
        params = [h for k, h in hints.items() if k != "return"]
        if len(params) != 1 or "return" not in hints:
            raise TypeError(f"tool {fn.__name__} must take one pydantic model and return one")
        tool_name = name or fn.__name__
        spec = ToolSpec(
            name=tool_name,
            func=_checked(fn, params[0]),
            input_model=params[0],
            output_model=hints["return"],
            description=description.strip(),
            positional=positional,
            text_renderer=None if text_renderer is None else _checked(text_renderer, hints["return"]),
            compact=None if compact is None else _checked(compact, hints["return"]),
            module=fn.__module__,
            cli_name=tool_name.replace("_", "-"),
            title=title,
            read_only=read_only,
            destructive=destructive,
            idempotent=idempotent,
            open_world=open_world,
        )
        if tool_name in REGISTERED and getattr(REGISTERED[tool_name].func, "__wrapped__", None) is not fn:
            raise ValueError(f"tool {tool_name} registered twice")
        REGISTERED[tool_name] = spec
        return fn

    return decorate


def import_tool_modules(package_name: str) -> None:
    """Import every public module of ``package_name`` so that its tools register themselves."""
    package = importlib.import_module(package_name)
    for info in sorted(pkgutil.iter_modules(package.__path__), key=lambda i: i.name):
        if not info.name.startswith("_"):
            importlib.import_module(f"{package_name}.{info.name}")


def skill_tool(name: str) -> ToolSpec | None:
    """The skill tool ``name`` (a module of ``acc_agent.tools``), importing the skill modules if needed.

    Why here and not the registry: the application layer runs skills by name, and it sits below the
    registry (which also lists the application's own tools for the front ends).
    """
    if name not in REGISTERED:
        import_tool_modules("acc_agent.tools")
    return REGISTERED.get(name)


def command_of(name: str) -> tuple[str, tuple[str, ...]] | None:
    """A skill tool's CLI command and positional arguments, for the hints :mod:`acc_agent.frontend` phrases.

    A hint may name a tool whose module was not imported yet (a CLI run imports only its own),
    so the skill tools are all imported the first time an unknown name is asked for.
    """
    spec = skill_tool(name)
    return None if spec is None else (spec.cli_name, spec.positional)


frontend.use_command_lookup(command_of)
