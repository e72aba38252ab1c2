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
from collections.abc import Mapping
from typing import Literal

from acc_agent.agent_schema import append_sentence, input_schema, tool_description
from acc_agent.errors import AccAgentError
from acc_agent.json_types import JsonObject, JsonValue
from acc_agent.registry import all_tools
from acc_agent.tools.spec import ToolSpec

Format = Literal["openai", "openai-responses", "anthropic", "mcp"]
FORMATS: tuple[str, ...] = ("openai", "openai-responses", "anthropic", "mcp")
TOOL_NAME_RE = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")

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


def _text(node: JsonObject, key: str) -> str:
    """A string keyword of a schema (a description), empty when absent."""
    value = node.get(key, "")
    return value if isinstance(value, str) else str(value)


def _is_map(node: Mapping[str, JsonValue]) -> bool:
    """An object schema whose keys are free (``dict[str, X]``): strict modes cannot express it."""
    if node.get("type") != "object" or "properties" in node:
        return False
    extra = node.get("additionalProperties", True)
    return extra is not False


def _describe_constraints(node: JsonObject, keys: set[str]) -> None:
    """Move keywords an API refuses into the description so the model still reads them."""
    words = [_CONSTRAINT_WORDS[k].format(node[k]) for k in _CONSTRAINT_WORDS if k in node and k not in keys]
    if words:
        node["description"] = append_sentence(_text(node, "description"), "Constraints: " + ", ".join(words) + ".")


class _Strictifier:
    """Rewrites one JSON schema for one API's strict mode."""

    def __init__(self, api: Literal["openai", "anthropic"]) -> None:
        self.api = api
        self.keys = _OPENAI_KEYS if api == "openai" else _ANTHROPIC_KEYS
        self.formats = _OPENAI_FORMATS if api == "openai" else _ANTHROPIC_FORMATS

    def node(self, node: JsonValue) -> JsonValue:
        return self.object(node) if isinstance(node, dict) else node

    def object(self, node: JsonObject) -> JsonObject:
        node = dict(node)
        all_of = node.get("allOf")
        if isinstance(all_of, list) and len(all_of) == 1 and isinstance(all_of[0], dict):
            # pydantic's old "$ref + description" form
            node.pop("allOf")
            node = {**all_of[0], **node}
        if _is_map(node):
            return {"type": "string", "description": append_sentence(_text(node, "description"), _JSON_STRING_NOTE)}
        prefix_items = node.pop("prefixItems", None)
        if isinstance(prefix_items, list):  # tuples: strict modes have no positional items
            elems = [self.node(e) for e in prefix_items]
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
                    node["description"] = append_sentence(
                        _text(node, "description"), f"Default: {json.dumps(default)}."
                    )
        keys = self.keys
        min_items = node.get("minItems", 0)
        if self.api == "anthropic" and isinstance(min_items, int) and min_items > 1:  # Anthropic takes only 0 or 1
            keys = keys - {"minItems"}
        _describe_constraints(node, keys)
        if node.get("type") == "object" or "properties" in node:
            node["type"] = "object"
            given = node.get("properties", {})
            props = {k: self.node(v) for k, v in given.items()} if isinstance(given, dict) else {}
            listed = node.get("required", [])
            required: list[JsonValue] = list(listed) if isinstance(listed, list) else []
            if self.api == "openai":
                for key, sub in props.items():
                    if key not in required and isinstance(sub, dict):
                        props[key] = _nullable(sub)
                required = list(props)
            node["properties"] = props
            node["required"] = required
            node["additionalProperties"] = False
        if "items" in node:
            node["items"] = self.node(node["items"])
        any_of, definitions = node.get("anyOf"), node.get("$defs")
        if isinstance(any_of, list):
            node["anyOf"] = [self.node(n) for n in any_of]
        if isinstance(definitions, dict):
            node["$defs"] = {k: self.node(v) for k, v in definitions.items()}
        return {k: v for k, v in node.items() if k in keys}


def _nullable(node: JsonObject) -> JsonObject:
    """Allow ``null`` in a schema (OpenAI's spelling of "optional")."""
    any_of = node.get("anyOf")
    if isinstance(any_of, list):
        if not any(isinstance(n, dict) and n.get("type") == "null" for n in any_of):
            node = {**node, "anyOf": [*any_of, {"type": "null"}]}
        return node
    if "$ref" in node:
        desc = node.get("description")
        out: JsonObject = {"anyOf": [{"$ref": node["$ref"]}, {"type": "null"}]}
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
    enum = node.get("enum")
    if isinstance(enum, list) and None not in enum:
        node["enum"] = [*enum, None]
    return node


def strict_schema(schema: JsonObject, api: Literal["openai", "anthropic"]) -> JsonObject:
    """``schema`` rewritten for ``api``'s strict mode (the input is not modified)."""
    return _Strictifier(api).object(copy.deepcopy(schema))


def _check_name(name: str) -> str:
    if not TOOL_NAME_RE.match(name):
        raise AccAgentError(
            "bad_tool_name",
            f'tool name "{name}" does not match {TOOL_NAME_RE.pattern}',
            hint="Rename the tool in its @tool(name=...) registration.",
        )
    return name


def openai_tool(spec: ToolSpec) -> JsonObject:
    """Chat Completions form; the Responses API takes the inner ``function`` keys flat."""
    return {
        "type": "function",
        "function": {
            "name": _check_name(spec.name),
            "description": tool_description(spec),
            "parameters": strict_schema(input_schema(spec), "openai"),
            "strict": True,
        },
    }


def openai_responses_tool(spec: ToolSpec) -> JsonObject:
    """Responses API form: the Chat Completions function keys, flat."""
    function = openai_tool(spec)["function"]
    assert isinstance(function, dict)  # built just above by openai_tool
    return {"type": "function", **function}


def anthropic_tool(spec: ToolSpec) -> JsonObject:
    """Messages API form."""
    return {
        "name": _check_name(spec.name),
        "description": tool_description(spec),
        "input_schema": strict_schema(input_schema(spec), "anthropic"),
        "strict": True,
    }


def mcp_tools() -> list[JsonObject]:
    """What ``acc-agent mcp`` answers to ``tools/list``, in wire form (camelCase keys)."""
    from acc_agent.mcp_loader import mcp_server_module

    server = mcp_server_module().build_server()  # first: a missing mcp (and so anyio) is a clear error

    import anyio

    async def listed() -> list[JsonObject]:
        return [
            t.model_dump(mode="json", by_alias=True, exclude_none=True) for t in await server.list_tools()
        ]

    return anyio.run(listed)


def tool_definitions(fmt: str) -> list[JsonObject]:
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
