"""Tool definitions for LLM function calling, derived from the registry's input models.

Each API has its own strict mode and each rejects a schema the others accept, so the one source
(the pydantic input model) is rewritten per API:

- OpenAI (``strict: true``; Chat Completions, or ``openai-responses`` for the Responses API's flat
  form): ``additionalProperties: false`` on every object, every property
  required (optional ones become nullable: the model sends ``null`` for "not given"), no
  ``default`` keyword, a small set of ``format`` values.
- Anthropic (``strict: true``): ``additionalProperties: false`` on every object, optional
  properties stay optional, numeric and length constraints are not supported (moved into the
  description so the model still reads them; the input model enforces them on receipt).
- MCP: what ``acc-agent mcp`` lists, taken from the server itself so the two never drift.

Free-form maps (``dict[str, X]``) cannot be written under ``additionalProperties: false``; they
travel as a JSON string and :func:`prepare_arguments` decodes them before validation.
"""

from __future__ import annotations

import copy
import json
import re
import types
import typing
from collections.abc import Mapping
from typing import Any, Literal

from pydantic import BaseModel

from acc_agent.errors import AccAgentError
from acc_agent.registry import ToolSpec, all_tools, get_tool

Format = Literal["openai", "openai-responses", "anthropic", "mcp"]
FORMATS: tuple[str, ...] = ("openai", "openai-responses", "anthropic", "mcp")
TOOL_NAME_RE = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")

#: Extra argument every agent-facing tool takes: the complete result instead of the compact one.
FULL_RESULT_ARG = "full_result"
FULL_RESULT_SCHEMA: dict[str, Any] = {
    "type": "boolean",
    "default": False,
    "description": "Return the complete result inline. By default long lists are shortened to the worst "
    "entries and the complete result is written to a JSON file named in compact.full_result.",
}

_OPENAI_FORMATS = {"date-time", "time", "date", "duration", "email", "hostname", "ipv4", "ipv6", "uuid"}
_ANTHROPIC_FORMATS = _OPENAI_FORMATS | {"uri"}
_OPENAI_KEYS = {
    "type", "properties", "required", "additionalProperties", "items", "enum", "const", "anyOf",
    "$ref", "$defs", "description", "pattern", "format", "minimum", "maximum", "exclusiveMinimum",
    "exclusiveMaximum", "multipleOf", "minItems", "maxItems",
}  # fmt: skip
_ANTHROPIC_KEYS = {
    "type", "properties", "required", "additionalProperties", "items", "enum", "const", "anyOf",
    "$ref", "$defs", "description", "format", "default", "minItems",
}  # fmt: skip
_CONSTRAINT_WORDS = {
    "minimum": "≥ {}", "maximum": "≤ {}", "exclusiveMinimum": "> {}", "exclusiveMaximum": "< {}",
    "multipleOf": "a multiple of {}", "minLength": "at least {} characters", "maxLength": "at most {} characters",
    "minItems": "at least {} items", "maxItems": "at most {} items", "pattern": "matching {}",
}  # fmt: skip
_JSON_STRING_NOTE = "Pass a JSON object encoded as a string."


def _drop_titles(node: Any) -> Any:
    """Titles repeat the property names; agents pay for every token."""
    if isinstance(node, dict):
        return {k: _drop_titles(v) for k, v in node.items() if not (k == "title" and isinstance(v, str))}
    if isinstance(node, list):
        return [_drop_titles(v) for v in node]
    return node


def _append(text: str, more: str) -> str:
    if not text:
        return more
    return text + (" " if text.rstrip()[-1:] in ".:;!?)" else ". ") + more


def input_schema(spec: ToolSpec, *, with_full_result: bool = True) -> dict[str, Any]:
    """The flat argument schema of a tool: its input model's fields, plus ``full_result``.

    The model's docstring (written for maintainers) and the per-field titles are left out: the
    tool description and the field descriptions are what an agent needs.
    """
    schema = _drop_titles(spec.input_model.model_json_schema())
    schema.pop("description", None)
    if with_full_result and FULL_RESULT_ARG not in schema.get("properties", {}):
        schema.setdefault("properties", {})[FULL_RESULT_ARG] = dict(FULL_RESULT_SCHEMA)
    schema["type"] = "object"
    schema["additionalProperties"] = False
    return schema


_FLAG_RE = re.compile(r"(?<![\w-])--(no-)?([a-z][a-z0-9-]*)")


_UPPER_RE = re.compile(r"\b[A-Z][A-Z_]+[A-Z]\b")


def _mcp_words(text: str, fields: set[str]) -> str:
    """A description written for the CLI, naming this tool's arguments as an MCP caller passes them.

    ``--pair-by-order`` becomes ```pair_by_order```, ``--no-record`` ```record=false``` and a
    positional placeholder such as ``GOLDEN`` the argument ``golden``.
    """

    def swap(match: re.Match[str]) -> str:
        name = match.group(2).replace("-", "_")
        if name not in fields:
            return match.group(0)
        return f"`{name}=false`" if match.group(1) else f"`{name}`"

    def lower(match: re.Match[str]) -> str:
        word = match.group(0)
        return word.lower() if word.lower() in fields else word

    return _UPPER_RE.sub(lower, _FLAG_RE.sub(swap, text))


#: Longest description MCP publishes for a required argument / an optional one; the CLI's --help
#: keeps the whole text. An optional argument's name, type and default say most of what it is.
ARG_DESCRIPTION_MAX = 90
OPTIONAL_DESCRIPTION_MAX = 40


def _short(text: str, limit: int = ARG_DESCRIPTION_MAX) -> str:
    """The first sentence of a description, cut at a clause boundary to at most ``limit`` characters.

    An argument's name, type, default and enum already say most of what it is; its first
    sentence says the rest. Cuts never leave a parenthesis open.
    """
    text = " ".join(text.split())
    end = re.search(r"(?<!e\.g)(?<!i\.e)(?<!etc)\. (?=[A-Z`(])", text)
    if end is not None:
        text = text[: end.start() + 1]
    if len(text) <= limit:
        return text
    window = text[:limit]
    for mark in ("; ", ", ", " (", " - ", " — ", " "):
        at = window.rfind(mark)
        if at > limit // 3:
            window = window[:at]
            break
    while window.count("(") > window.count(")"):
        window = window[: window.rfind("(")].rstrip()
    return window.rstrip(" ,;:-—") + "…"


def _lean_node(node: Any, fields: set[str]) -> Any:
    """One property schema without what costs tokens and tells an agent nothing.

    ``anyOf [X, null]`` with a null default becomes X (leaving an argument out is how an MCP
    caller says "not given"; a ``null`` sent anyway is still accepted), ``format: path`` and
    null defaults go, and descriptions name this tool's arguments instead of its CLI flags.
    """
    if isinstance(node, list):
        return [_lean_node(v, fields) for v in node]
    if not isinstance(node, dict):
        return node
    node = dict(node)
    options = node.get("anyOf")
    if isinstance(options, list) and len(options) == 2 and {"type": "null"} in options and node.get("default") is None:
        inner = next(o for o in options if o != {"type": "null"})
        node.pop("anyOf")
        node.pop("default", None)
        node = {**inner, **node}
    if node.get("format") == "path":
        node.pop("format")
    default = node.get("default", 0)
    if default is None or (default is False and node.get("type") == "boolean") or (
        default == "" and node.get("type") == "string"
    ):
        node.pop("default")  # absent means null, a flag left out false, a text left out empty: saying so costs bytes
    if isinstance(node.get("description"), str):
        node["description"] = _short(_mcp_words(node["description"], fields))
    if isinstance(node.get("properties"), dict):
        node["properties"] = {k: _lean_node(v, fields) for k, v in node["properties"].items()}
    if isinstance(node.get("$defs"), dict):
        # A definition is reached through a property that has its own description: say it once.
        node["$defs"] = {k: {n: d for n, d in _lean_node(v, fields).items() if n != "description"}
                         for k, v in node["$defs"].items()}
    for key in ("items", "anyOf", "additionalProperties"):
        if isinstance(node.get(key), (dict, list)):
            node[key] = _lean_node(node[key], fields)
    return node


def _optional_description(prop: dict[str, Any]) -> None:
    """An optional argument's description, shortened; dropped for a knob whose gloss would be cut.

    A setting with a default (``top: 12``, ``probe: auto|on|off``) is told by its name, default
    and range; a gloss cut mid-way adds little to that. Arguments without a default (optional
    input files, an overriding value) keep their gloss: the name alone does not say what to pass.
    """
    short = _short(prop["description"], OPTIONAL_DESCRIPTION_MAX)
    if "default" in prop and short.endswith("…"):
        del prop["description"]
    else:
        prop["description"] = short


def lean_input_schema(spec: ToolSpec) -> dict[str, Any]:
    """The argument schema MCP publishes: the input model's, made lean (see :func:`_lean_node`).

    Types, enums, ranges and required fields stay, so what an agent reads is what
    :meth:`ToolSpec.run` validates. Left out to fit a whole tool list in ~20 KB: the CLI's long
    texts (see :func:`_short`), ``additionalProperties: false`` (an unknown argument is still
    refused, with an error naming it and the accepted ones) and the ``full_result`` argument every
    tool takes (said once, in the server instructions).
    """
    schema = input_schema(spec, with_full_result=False)
    fields = set(spec.input_model.model_fields)
    lean = _lean_node(schema, fields)
    lean.pop("additionalProperties", None)
    required = set(lean.get("required", []))
    for name, prop in lean.get("properties", {}).items():
        if isinstance(prop.get("description"), str) and name not in required:
            _optional_description(prop)
    for definition in lean.get("$defs", {}).values():
        for prop in definition.get("properties", {}).values():
            if isinstance(prop.get("description"), str):
                _optional_description(prop)
    return typing.cast(dict[str, Any], lean)


def lean_description(spec: ToolSpec) -> str:
    """The tool description MCP publishes: the registry's, naming arguments instead of CLI flags."""
    return _mcp_words(_description(spec), set(spec.input_model.model_fields))


def _is_map(node: Mapping[str, Any]) -> bool:
    """An object schema whose keys are free (``dict[str, X]``): strict modes cannot express it."""
    if node.get("type") != "object" or "properties" in node:
        return False
    extra = node.get("additionalProperties", True)
    return extra is not False


def _describe_constraints(node: dict[str, Any], keys: set[str]) -> None:
    """Move keywords an API refuses into the description so the model still reads them."""
    words = [_CONSTRAINT_WORDS[k].format(node[k]) for k in _CONSTRAINT_WORDS if k in node and k not in keys]
    if words:
        node["description"] = _append(node.get("description", ""), "Constraints: " + ", ".join(words) + ".")


class _Strictifier:
    """Rewrites one JSON schema for one API's strict mode."""

    def __init__(self, api: Literal["openai", "anthropic"]) -> None:
        self.api = api
        self.keys = _OPENAI_KEYS if api == "openai" else _ANTHROPIC_KEYS
        self.formats = _OPENAI_FORMATS if api == "openai" else _ANTHROPIC_FORMATS

    def node(self, node: Any) -> Any:
        if not isinstance(node, dict):
            return node
        node = dict(node)
        if "allOf" in node and len(node["allOf"]) == 1:  # pydantic's old "$ref + description" form
            inner = node.pop("allOf")[0]
            node = {**inner, **node}
        if _is_map(node):
            return {"type": "string", "description": _append(node.get("description", ""), _JSON_STRING_NOTE)}
        if "prefixItems" in node:  # tuples: strict modes have no positional items
            elems = [self.node(e) for e in node.pop("prefixItems")]
            node["items"] = (
                elems[0] if len({json.dumps(e, sort_keys=True) for e in elems}) == 1 else {"anyOf": elems}
            )
            node.setdefault("minItems", len(elems))
            node.setdefault("maxItems", len(elems))
        if node.get("format") not in self.formats:
            node.pop("format", None)
        if "default" in node:
            default = node.pop("default")
            if default is not None:
                if self.api == "anthropic":
                    node["default"] = default
                else:
                    node["description"] = _append(
                        node.get("description", ""), f"Default: {json.dumps(default)}."
                    )
        keys = self.keys
        if self.api == "anthropic" and node.get("minItems", 0) > 1:  # Anthropic takes only 0 or 1
            keys = keys - {"minItems"}
        _describe_constraints(node, keys)
        if node.get("type") == "object" or "properties" in node:
            node["type"] = "object"
            props = {k: self.node(v) for k, v in node.get("properties", {}).items()}
            required = list(node.get("required", []))
            if self.api == "openai":
                for key, sub in props.items():
                    if key not in required:
                        props[key] = _nullable(sub)
                required = list(props)
            node["properties"] = props
            node["required"] = required
            node["additionalProperties"] = False
        if "items" in node:
            node["items"] = self.node(node["items"])
        if "anyOf" in node:
            node["anyOf"] = [self.node(n) for n in node["anyOf"]]
        if "$defs" in node:
            node["$defs"] = {k: self.node(v) for k, v in node["$defs"].items()}
        return {k: v for k, v in node.items() if k in keys}


def _nullable(node: dict[str, Any]) -> dict[str, Any]:
    """Allow ``null`` in a schema (OpenAI's spelling of "optional")."""
    if "anyOf" in node:
        if not any(n.get("type") == "null" for n in node["anyOf"]):
            node = {**node, "anyOf": [*node["anyOf"], {"type": "null"}]}
        return node
    if "$ref" in node:
        desc = node.get("description")
        out: dict[str, Any] = {"anyOf": [{"$ref": node["$ref"]}, {"type": "null"}]}
        if desc:
            out["description"] = desc
        return out
    typ = node.get("type")
    if isinstance(typ, str):
        node = {**node, "type": [typ, "null"]}
    elif isinstance(typ, list) and "null" not in typ:
        node = {**node, "type": [*typ, "null"]}
    elif typ is None:
        return {"anyOf": [node, {"type": "null"}]}
    if "enum" in node and None not in node["enum"]:
        node["enum"] = [*node["enum"], None]
    return node


def strict_schema(schema: dict[str, Any], api: Literal["openai", "anthropic"]) -> dict[str, Any]:
    """``schema`` rewritten for ``api``'s strict mode (the input is not modified)."""
    out = _Strictifier(api).node(copy.deepcopy(schema))
    if not isinstance(out, dict):  # pragma: no cover - input schemas are objects
        raise TypeError("tool schema must be an object")
    return out


def _check_name(name: str) -> str:
    if not TOOL_NAME_RE.match(name):
        raise AccAgentError(
            "bad_tool_name",
            f'tool name "{name}" does not match {TOOL_NAME_RE.pattern}',
            hint="Rename the tool in its @tool(name=...) registration.",
        )
    return name


def _description(spec: ToolSpec) -> str:
    return spec.description or spec.name.replace("_", " ")


def openai_tool(spec: ToolSpec) -> dict[str, Any]:
    """Chat Completions form; the Responses API takes the inner ``function`` keys flat."""
    return {
        "type": "function",
        "function": {
            "name": _check_name(spec.name),
            "description": _description(spec),
            "parameters": strict_schema(input_schema(spec), "openai"),
            "strict": True,
        },
    }


def openai_responses_tool(spec: ToolSpec) -> dict[str, Any]:
    """Responses API form: the Chat Completions function keys, flat."""
    return {"type": "function", **openai_tool(spec)["function"]}


def anthropic_tool(spec: ToolSpec) -> dict[str, Any]:
    """Messages API form."""
    return {
        "name": _check_name(spec.name),
        "description": _description(spec),
        "input_schema": strict_schema(input_schema(spec), "anthropic"),
        "strict": True,
    }


def mcp_tools() -> list[dict[str, Any]]:
    """What ``acc-agent mcp`` answers to ``tools/list``, in wire form (camelCase keys)."""
    from acc_agent.mcp_loader import mcp_server_module

    server = mcp_server_module().build_server()  # first: a missing mcp (and so anyio) is a clear error

    import anyio

    async def listed() -> list[dict[str, Any]]:
        return [
            t.model_dump(mode="json", by_alias=True, exclude_none=True) for t in await server.list_tools()
        ]

    return anyio.run(listed)


def tool_definitions(fmt: str) -> list[dict[str, Any]]:
    """Every registered tool in the requested API's form."""
    if fmt == "openai":
        return [openai_tool(s) for s in all_tools().values()]
    if fmt == "openai-responses":
        return [openai_responses_tool(s) for s in all_tools().values()]
    if fmt == "anthropic":
        return [anthropic_tool(s) for s in all_tools().values()]
    if fmt == "mcp":
        return mcp_tools()
    raise AccAgentError(
        "bad_format", f'unknown schema format "{fmt}"', hint="Use one of: " + ", ".join(FORMATS) + "."
    )


def _wants_object(annotation: Any) -> bool:
    """Whether a field takes a mapping or a model (and so may arrive as a JSON string)."""
    origin = typing.get_origin(annotation)
    if origin is typing.Annotated:
        return _wants_object(typing.get_args(annotation)[0])
    if origin in (typing.Union, types.UnionType):
        return any(_wants_object(a) for a in typing.get_args(annotation) if a is not type(None))
    if origin in (dict, Mapping) or annotation is dict:
        return True
    return isinstance(annotation, type) and issubclass(annotation, BaseModel)


def _model_of(annotation: Any) -> Any:
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
        return ("list", args[0]) if args else None
    return None


def _drop_nested_nulls(value: Any, annotation: Any) -> Any:
    """In nested models, ``null`` for a field with a default means "not given" (OpenAI strict)."""
    target = _model_of(annotation)
    if isinstance(target, tuple) and isinstance(value, list):
        return [_drop_nested_nulls(v, target[1]) for v in value]
    if isinstance(target, type) and issubclass(target, BaseModel) and isinstance(value, dict):
        fields = target.model_fields
        return {
            k: _drop_nested_nulls(v, fields[k].annotation) if k in fields else v
            for k, v in value.items()
            if not (v is None and k in fields and not fields[k].is_required())
        }
    return value


def prepare_arguments(spec: ToolSpec, arguments: Mapping[str, Any]) -> tuple[dict[str, Any], bool]:
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
    out: dict[str, Any] = {}
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


def call_for_agent(name: str, arguments: Mapping[str, Any]) -> dict[str, Any]:
    """Run a tool from a function call and return what the agent should read (compact by default).

    Bad input raises :class:`AccAgentError`; callers turn it into the API's error result.
    """
    from acc_agent import frontend
    from acc_agent.compact import compact_result

    spec = get_tool(name)
    with frontend.use("mcp"):  # a function-calling agent passes arguments by name, as over MCP
        args, full = prepare_arguments(spec, arguments)
        return compact_result(spec, spec.run(args), full=full)
