"""Turning an agent's function call into a tool call: argument clean-up, then the compact answer.

Why its own module: every agent front end (the MCP server, the exported OpenAI/Anthropic
function definitions through :func:`call_for_agent`) receives the same quirks — ``null`` for
"not given", maps sent as JSON strings, the ``full_result`` switch — and must undo them the same way.
"""

from __future__ import annotations

import json
import types
import typing
from collections.abc import Mapping
from dataclasses import dataclass

from pydantic import BaseModel

from acc_agent.agent_schema import FULL_RESULT_ARG
from acc_agent.errors import AccAgentError
from acc_agent.json_types import JsonObject
from acc_agent.registry import get_tool
from acc_agent.tools.spec import ToolSpec


@dataclass(frozen=True)
class ListOf:
    """A ``list[item]`` annotation: its items are walked with ``item``."""

    item: object


def _wants_object(annotation: object) -> bool:
    """Whether a field takes a mapping or a model (and so may arrive as a JSON string)."""
    origin = typing.get_origin(annotation)
    if origin is typing.Annotated:
        return _wants_object(typing.get_args(annotation)[0])
    if origin in (typing.Union, types.UnionType):
        return any(_wants_object(a) for a in typing.get_args(annotation) if a is not type(None))
    if origin in (dict, Mapping) or annotation is dict:
        return True
    return isinstance(annotation, type) and issubclass(annotation, BaseModel)


def _model_of(annotation: object) -> type[BaseModel] | ListOf | None:
    """The pydantic model or list-item type inside Optional/Annotated wrappers, else None."""
    origin = typing.get_origin(annotation)
    if origin is typing.Annotated:
        return _model_of(typing.get_args(annotation)[0])
    if origin in (typing.Union, types.UnionType):
        inner = [a for a in typing.get_args(annotation) if a is not type(None)]
        return _model_of(inner[0]) if len(inner) == 1 else None
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    if origin is list:
        args = typing.get_args(annotation)
        return ListOf(args[0]) if args else None
    return None


def _drop_nested_nulls(value: object, annotation: object) -> object:
    """In nested models, ``null`` for a field with a default means "not given" (OpenAI strict)."""
    target = _model_of(annotation)
    if isinstance(target, ListOf) and isinstance(value, list):
        return [_drop_nested_nulls(v, target.item) for v in value]
    if isinstance(target, type) and issubclass(target, BaseModel) and isinstance(value, dict):
        fields = target.model_fields
        return {
            k: _drop_nested_nulls(v, fields[k].annotation) if k in fields else v
            for k, v in value.items()
            if not (v is None and k in fields and not fields[k].is_required())
        }
    return value


def prepare_arguments(spec: ToolSpec, arguments: Mapping[str, object]) -> tuple[dict[str, object], bool]:
    """Turn function-call arguments into input-model arguments, and say whether the full result is wanted.

    Drops ``null`` for optional fields (OpenAI strict sends it for "not given"), decodes maps sent as
    JSON strings, and takes ``full_result`` out. Validation itself stays with the input model.
    """
    if not isinstance(arguments, Mapping):
        raise AccAgentError(
            "invalid_input",
            f"arguments of {spec.name} must be a JSON object, got {type(arguments).__name__}",
            hint="Send the arguments as an object of named fields.",
        )
    args = dict(arguments)
    full = args.pop(FULL_RESULT_ARG, False)
    if not isinstance(full, bool) and full is not None:
        raise AccAgentError(
            "invalid_input",
            f"{FULL_RESULT_ARG} must be true or false, got {json.dumps(full, default=str)}",
            hint="Omit it or send a boolean.",
            field=FULL_RESULT_ARG,
        )
    fields = spec.input_model.model_fields
    out: dict[str, object] = {}
    for key, value in args.items():
        finfo = fields.get(key)
        if finfo is not None and value is None and not finfo.is_required():
            continue
        if (
            finfo is not None
            and isinstance(value, str)
            and value.lstrip()[:1] == "{"
            and _wants_object(finfo.annotation)
        ):
            try:
                value = json.loads(value)
            except json.JSONDecodeError as exc:
                raise AccAgentError(
                    "invalid_input",
                    f"{key}: not valid JSON ({exc.msg})",
                    hint="Send the object as valid JSON text.",
                    field=key,
                ) from None
        out[key] = _drop_nested_nulls(value, finfo.annotation) if finfo is not None else value
    return out, bool(full)


def call_for_agent(name: str, arguments: Mapping[str, object]) -> JsonObject:
    """Run a tool from a function call and return what the agent should read (compact by default).

    Bad input raises :class:`AccAgentError`; callers turn it into the API's error result.
    """
    from acc_agent import frontend
    from acc_agent.compact import compact_result

    spec = get_tool(name)
    with frontend.use("mcp"):  # a function-calling agent passes arguments by name, as over MCP
        args, full = prepare_arguments(spec, arguments)
        return compact_result(spec, spec.run(args), full=full)
