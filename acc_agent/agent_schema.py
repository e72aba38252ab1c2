"""What an agent reads about a tool: its argument schema and description, made lean.

Why apart from the per-API export (:mod:`acc_agent.schemas`): the MCP server publishes these same
texts, and the export asks that server for its list, so the shared part sits below both and
neither imports the other.
"""

from __future__ import annotations

import re

from acc_agent.json_types import JsonObject, JsonValue
from acc_agent.tools.spec import ToolSpec

#: Extra argument every agent-facing tool takes: the complete result instead of the compact one.
FULL_RESULT_ARG = "full_result"
FULL_RESULT_SCHEMA: JsonObject = {
    "type": "boolean",
    "default": False,
    "description": "Return the complete result inline. By default long lists are shortened to the worst "
    "entries and the complete result is written to a JSON file named in compact.full_result.",
}


def _drop_titles(node: JsonValue) -> JsonValue:
    """Titles repeat the property names; agents pay for every token."""
    if isinstance(node, dict):
        return _drop_object_titles(node)
    if isinstance(node, list):
        return [_drop_titles(v) for v in node]
    return node


def _drop_object_titles(node: JsonObject) -> JsonObject:
    return {k: _drop_titles(v) for k, v in node.items() if not (k == "title" and isinstance(v, str))}


def append_sentence(text: str, more: str) -> str:
    """``more`` after ``text`` as a new sentence (a full stop added where ``text`` has none)."""
    if not text:
        return more
    return text + (" " if text.rstrip()[-1:] in ".:;!?)" else ". ") + more


def input_schema(spec: ToolSpec, *, with_full_result: bool = True) -> JsonObject:
    """The flat argument schema of a tool: its input model's fields, plus ``full_result``.

    The model's docstring (written for maintainers) and the per-field titles are left out: the
    tool description and the field descriptions are what an agent needs.
    """
    schema = _drop_object_titles(spec.input_model.model_json_schema())
    schema.pop("description", None)
    if with_full_result:
        properties = schema.setdefault("properties", {})
        if isinstance(properties, dict) and FULL_RESULT_ARG not in properties:
            properties[FULL_RESULT_ARG] = dict(FULL_RESULT_SCHEMA)
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


def _lean_node(node: JsonValue, fields: set[str]) -> JsonValue:
    """:func:`_lean_object` of every object inside ``node``."""
    if isinstance(node, list):
        return [_lean_node(v, fields) for v in node]
    if isinstance(node, dict):
        return _lean_object(node, fields)
    return node


def _without_description(node: JsonValue) -> JsonValue:
    return {n: d for n, d in node.items() if n != "description"} if isinstance(node, dict) else node


def _lean_object(node: JsonObject, fields: set[str]) -> JsonObject:
    """One property schema without what costs tokens and tells an agent nothing.

    ``anyOf [X, null]`` with a null default becomes X (leaving an argument out is how an MCP
    caller says "not given"; a ``null`` sent anyway is still accepted), ``format: path`` and
    null defaults go, and descriptions name this tool's arguments instead of its CLI flags.
    """
    node = dict(node)
    options = node.get("anyOf")
    inner = next((o for o in options if o != {"type": "null"}), None) if isinstance(options, list) else None
    if (isinstance(options, list) and len(options) == 2 and {"type": "null"} in options and node.get("default") is None
            and isinstance(inner, dict)):
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
    description, properties, definitions = node.get("description"), node.get("properties"), node.get("$defs")
    if isinstance(description, str):
        node["description"] = _short(_mcp_words(description, fields))
    if isinstance(properties, dict):
        node["properties"] = {k: _lean_node(v, fields) for k, v in properties.items()}
    if isinstance(definitions, dict):
        # A definition is reached through a property that has its own description: say it once.
        node["$defs"] = {k: _without_description(_lean_node(v, fields)) for k, v in definitions.items()}
    for key in ("items", "anyOf", "additionalProperties"):
        sub = node.get(key)
        if isinstance(sub, (dict, list)):
            node[key] = _lean_node(sub, fields)
    return node


def _optional_description(prop: JsonObject) -> None:
    """An optional argument's description, shortened; dropped for a knob whose gloss would be cut.

    A setting with a default (``top: 12``, ``probe: auto|on|off``) is told by its name, default
    and range; a gloss cut mid-way adds little to that. Arguments without a default (optional
    input files, an overriding value) keep their gloss: the name alone does not say what to pass.
    """
    description = prop.get("description")
    if not isinstance(description, str):
        return
    short = _short(description, OPTIONAL_DESCRIPTION_MAX)
    if "default" in prop and short.endswith("…"):
        del prop["description"]
    else:
        prop["description"] = short


def lean_input_schema(spec: ToolSpec) -> JsonObject:
    """The argument schema MCP publishes: the input model's, made lean (see :func:`_lean_node`).

    Types, enums, ranges and required fields stay, so what an agent reads is what
    :meth:`ToolSpec.run` validates. Left out to fit a whole tool list in ~20 KB: the CLI's long
    texts (see :func:`_short`), ``additionalProperties: false`` (an unknown argument is still
    refused, with an error naming it and the accepted ones) and the ``full_result`` argument every
    tool takes (said once, in the server instructions).
    """
    schema = input_schema(spec, with_full_result=False)
    fields = set(spec.input_model.model_fields)
    lean = _lean_object(schema, fields)
    lean.pop("additionalProperties", None)
    listed = lean.get("required")
    required = {name for name in listed if isinstance(name, str)} if isinstance(listed, list) else set()
    for name, prop in _objects(lean.get("properties")).items():
        if name not in required:
            _optional_description(prop)
    for definition in _objects(lean.get("$defs")).values():
        for prop in _objects(definition.get("properties")).values():
            _optional_description(prop)
    return lean


def _objects(node: JsonValue) -> dict[str, JsonObject]:
    """The entries of a JSON object that are objects themselves (properties, definitions)."""
    return {k: v for k, v in node.items() if isinstance(v, dict)} if isinstance(node, dict) else {}


def lean_description(spec: ToolSpec) -> str:
    """The tool description MCP publishes: the registry's, naming arguments instead of CLI flags."""
    return _mcp_words(tool_description(spec), set(spec.input_model.model_fields))


def tool_description(spec: ToolSpec) -> str:
    """What every agent-facing form says a tool does: the registry's text, or its name in words."""
    return spec.description or spec.name.replace("_", " ")
