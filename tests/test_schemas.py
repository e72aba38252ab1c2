"""Exported tool definitions satisfy each API's strict mode, for every registered tool."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from fixtures.agents.loader import load_fake_tool  # tests/ is on sys.path under pytest

from acc_agent.agent_arguments import prepare_arguments
from acc_agent.registry import ToolSpec, all_tools
from acc_agent.schemas import TOOL_NAME_RE, tool_definitions

fake = load_fake_tool()


@pytest.fixture()
def fake_spec() -> Iterator[ToolSpec]:
    with fake.registered() as spec:
        yield spec


def _objects(node: Any, where: str = "$") -> Iterator[tuple[str, dict[str, Any]]]:
    """Every schema node that describes an object, with its location."""
    if isinstance(node, dict):
        if (
            node.get("type") == "object"
            or "properties" in node
            or (isinstance(node.get("type"), list) and "object" in node["type"])
        ):
            yield where, node
        for key, value in node.items():
            if key in ("properties", "$defs"):
                for name, sub in value.items():
                    yield from _objects(sub, f"{where}.{key}.{name}")
            elif key in ("items", "additionalProperties"):
                yield from _objects(value, f"{where}.{key}")
            elif key == "anyOf":
                for i, sub in enumerate(value):
                    yield from _objects(sub, f"{where}.anyOf[{i}]")


def _all_nodes(node: Any) -> Iterator[Any]:
    yield node
    if isinstance(node, dict):
        for value in node.values():
            yield from _all_nodes(value)
    elif isinstance(node, list):
        for value in node:
            yield from _all_nodes(value)


def check_openai_strict(tool: dict[str, Any]) -> None:
    assert tool["type"] == "function" and tool["function"]["strict"] is True
    fn = tool["function"]
    assert TOOL_NAME_RE.match(fn["name"]), fn["name"]
    params = fn["parameters"]
    assert params["type"] == "object"
    for where, obj in _objects(params):
        assert obj.get("additionalProperties") is False, (
            f"{fn['name']} {where}: additionalProperties must be false"
        )
        assert sorted(obj.get("required", [])) == sorted(obj.get("properties", {})), (
            f"{fn['name']} {where}: all required"
        )
    for node in _all_nodes(params):
        if isinstance(node, dict):
            if any(k in node for k in ("type", "anyOf", "$ref", "enum")):
                assert "default" not in node, f"{fn['name']}: OpenAI strict mode takes no defaults"
            assert "prefixItems" not in node and "allOf" not in node
    _check_refs(params)


def check_anthropic_strict(tool: dict[str, Any]) -> None:
    assert TOOL_NAME_RE.match(tool["name"]), tool["name"]
    assert tool["description"]
    schema = tool["input_schema"]
    assert schema["type"] == "object"
    for where, obj in _objects(schema):
        assert obj.get("additionalProperties") is False, f"{tool['name']} {where}"
        assert set(obj.get("required", [])) <= set(obj.get("properties", {}))
    for node in _all_nodes(schema):
        if isinstance(node, dict):
            assert not ("default" in node and node["default"] is None), f"{tool['name']}: None default"
            for key in (
                "minimum",
                "maximum",
                "exclusiveMinimum",
                "exclusiveMaximum",
                "minLength",
                "maxLength",
            ):
                assert key not in node or not isinstance(node[key], (int, float)), f"{tool['name']}: {key}"
            assert node.get("minItems", 0) in (0, 1)
    _check_refs(schema)


def _check_refs(schema: dict[str, Any]) -> None:
    defs = schema.get("$defs", {})
    for node in _all_nodes(schema):
        if isinstance(node, dict) and "$ref" in node:
            assert node["$ref"].startswith("#/$defs/") and node["$ref"].split("/")[-1] in defs
    jsonschema.Draft202012Validator.check_schema(schema)


def test_every_registered_tool_is_strict_in_both_apis(fake_spec: ToolSpec) -> None:
    openai = tool_definitions("openai")
    anthropic = tool_definitions("anthropic")
    names = set(all_tools())
    assert {t["function"]["name"] for t in openai} == names
    assert {t["name"] for t in anthropic} == names
    for tool in openai:
        check_openai_strict(tool)
    for tool in anthropic:
        check_anthropic_strict(tool)
    responses = tool_definitions("openai-responses")
    for flat, nested in zip(responses, openai, strict=True):
        assert set(flat) == {"type", "name", "description", "parameters", "strict"}
        check_openai_strict(
            {"type": flat["type"], "function": {k: v for k, v in flat.items() if k != "type"}}
        )
        assert flat["parameters"] == nested["function"]["parameters"]


def _openai_args(tool: dict[str, Any], given: dict[str, Any]) -> dict[str, Any]:
    """What a strict OpenAI model sends: every property, null for the ones it leaves out."""
    props = tool["function"]["parameters"]["properties"]
    return {key: given.get(key) for key in props}


def test_strict_arguments_round_trip_into_the_input_model(fake_spec: ToolSpec) -> None:
    tool = next(t for t in tool_definitions("openai") if t["function"]["name"] == fake_spec.name)
    given = {
        "path": "x",
        "n": 3,
        "mapping": json.dumps({"a": "b"}),
        "window": [0, 5],
        "mode": "b",
        "thresholds": {"rtol": 0.01, "atol": 0.001},
    }
    args = _openai_args(tool, given)
    jsonschema.validate(args, tool["function"]["parameters"])
    model_args, full = prepare_arguments(fake_spec, args)
    assert full is False
    result = fake_spec.run(model_args)
    assert result.echo["mapping"] == {"a": "b"} and result.echo["window"] == [0, 5]
    assert result.echo["sizes"] == [1] and result.echo["thresholds"] == {"rtol": 0.01, "atol": 0.001}

    # Nested optional fields arrive as null too: they mean "use the default".
    args = _openai_args(tool, {"path": "x", "thresholds": {"rtol": None, "atol": 0.01}})
    jsonschema.validate(args, tool["function"]["parameters"])
    echo = fake_spec.run(prepare_arguments(fake_spec, args)[0]).echo
    assert echo["thresholds"] == {"rtol": 1e-3, "atol": 0.01} and echo["n"] == 10

    anth = next(t for t in tool_definitions("anthropic") if t["name"] == fake_spec.name)
    jsonschema.validate(given, anth["input_schema"])
    assert fake_spec.run(prepare_arguments(fake_spec, given)[0]).echo["mode"] == "b"


def test_strict_schema_still_refuses_unknown_fields(fake_spec: ToolSpec) -> None:
    tool = next(t for t in tool_definitions("openai") if t["function"]["name"] == fake_spec.name)
    args = _openai_args(tool, {"path": "x"}) | {"pathh": "typo"}
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(args, tool["function"]["parameters"])


def test_constraints_moved_into_descriptions_for_anthropic(fake_spec: ToolSpec) -> None:
    anth = next(t for t in tool_definitions("anthropic") if t["name"] == fake_spec.name)
    n = anth["input_schema"]["properties"]["n"]
    assert "≥ 1" in n["description"] and "≤ 100000" in n["description"]


def test_schema_command_prints_every_registered_tool() -> None:
    for fmt in ("openai", "anthropic", "mcp"):
        proc = subprocess.run(
            [sys.executable, "-m", "acc_agent", "schema", "--format", fmt],
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert proc.returncode == 0, proc.stderr
        defs = json.loads(proc.stdout)
        names = {d["function"]["name"] if fmt == "openai" else d["name"] for d in defs}
        assert names == set(all_tools())
        if fmt == "openai":
            for tool in defs:
                check_openai_strict(tool)
        elif fmt == "anthropic":
            for tool in defs:
                check_anthropic_strict(tool)
        else:
            for tool in defs:
                assert TOOL_NAME_RE.match(tool["name"]) and "inputSchema" in tool and "outputSchema" in tool
    bad = subprocess.run(
        [sys.executable, "-m", "acc_agent", "schema", "--format", "gemini"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert bad.returncode == 2 and "openai" in bad.stderr


def test_mcp_format_matches_the_server_listing(fake_spec: ToolSpec) -> None:
    defs = {d["name"]: d for d in tool_definitions("mcp")}
    assert fake_spec.name in defs
    tool = defs[fake_spec.name]
    assert tool["inputSchema"]["properties"]["n"]["maximum"] == 100_000
    # The MCP listing is lean: full_result is explained in the server instructions, and the output
    # schema names the verdicts and the summary (see tests/test_mcp_agent.py for the byte budget).
    assert "full_result" not in tool["inputSchema"]["properties"]
    assert tool["outputSchema"]["required"] == ["verdict", "summary"]


def _to_strict_value(value: Any, schema: dict[str, Any]) -> Any:
    """A sample value as a strict-mode model would send it: maps become JSON text."""
    options = schema.get("anyOf", [schema])

    def is_json_text(option: dict[str, Any]) -> bool:
        typ = option.get("type")
        return (
            typ == "string" or (isinstance(typ, list) and "string" in typ)
        ) and "JSON object" in option.get("description", "")

    return json.dumps(value) if isinstance(value, dict) and any(is_json_text(o) for o in options) else value


def test_every_registered_tool_takes_its_sample_through_both_strict_schemas(tmp_path: Path) -> None:
    """Real tools, real sample arguments: what a strict model sends is valid and reaches the input model intact."""
    from test_mcp_samples import SAMPLES

    openai = {t["function"]["name"]: t["function"]["parameters"] for t in tool_definitions("openai")}
    anthropic = {t["name"]: t["input_schema"] for t in tool_definitions("anthropic")}
    for name, spec in all_tools().items():
        (tmp_path / name).mkdir()
        sample = SAMPLES[name](tmp_path / name)
        expected = spec.input_model.model_validate(sample)
        for schema, fill_nulls in ((openai[name], True), (anthropic[name], False)):
            props = schema["properties"]
            sent = {k: _to_strict_value(v, props[k]) for k, v in sample.items()}
            if fill_nulls:
                sent = {k: sent.get(k) for k in props}
            jsonschema.validate(sent, schema)
            args, full = prepare_arguments(spec, sent)
            assert not full
            assert spec.input_model.model_validate(args) == expected, name
