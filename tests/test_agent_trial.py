"""A scripted agent trial: the MCP client alone, following the skills' documented steps, gets it right.

Two msprobe-layout dump pairs are made here with numpy (an MLP, golden in FP32, target in FP16):

- kernel side: one GELU call on the target computes the sigmoid approximation, so its inputs agree
  and its output does not - the fault enters through the operator;
- weight side: the second Linear's weight reaches the target transposed (a checkpoint-conversion
  bug) - the fault enters through an argument no dumped call produced.

The "agent" reads the call it must make from the skill files (the first lines of each SKILL.md),
fills in its paths, reads the answer the way the skill says, then creates the project file and
renders the deliverables - all over MCP, never importing acc_agent or using a shell.
"""

from __future__ import annotations

import json
import math
import os
import re
import sys
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlparse

import anyio
import numpy as np
from mcp import ClientSession, StdioServerParameters, stdio_client

ROOT = Path(__file__).resolve().parents[1]
SKILLS = ROOT / "skills"
CALL = re.compile(r"`([a-z_]+)`\s*`(\{[^`]*\})`")
MAX_CALLS = 8


# --------------------------------------------------------------------------- the two dump pairs


def _write_dump(root: Path, calls: list[tuple[str, list[np.ndarray], list[np.ndarray]]]) -> Path:
    """msprobe layout: dump.json (calls in execution order) + dump_tensor_data/<call>.<input|output>.<i>.npy."""
    data_dir = root / "dump_tensor_data"
    data_dir.mkdir(parents=True)
    data: dict[str, Any] = {}
    for key, inputs, outputs in calls:
        entry: dict[str, Any] = {"input_args": [], "input_kwargs": {}, "output": []}
        for part, tensors in (("input", inputs), ("output", outputs)):
            for i, arr in enumerate(tensors):
                name = f"{key}.{part}.{i}.npy"
                np.save(data_dir / name, arr, allow_pickle=False)
                leaf = {"type": "torch.Tensor", "dtype": str(arr.dtype), "shape": list(arr.shape), "data_name": name}
                entry["input_args" if part == "input" else "output"].append(leaf)
        data[key] = entry
    (root / "dump.json").write_text(json.dumps({"task": "tensor", "level": "L1", "framework": "pytorch",
                                                "dump_data_dir": None, "data": data}), encoding="utf-8")
    return root


def _gelu(x: np.ndarray) -> np.ndarray:
    erf = np.vectorize(math.erf)
    return (0.5 * x * (1.0 + erf(x / math.sqrt(2.0)))).astype(x.dtype)


def _quick_gelu(x: np.ndarray) -> np.ndarray:
    return (x / (1.0 + np.exp(-1.702 * x))).astype(x.dtype)


def _mlp(x: np.ndarray, params: list[np.ndarray], gelu_1: Any = _gelu) -> list[tuple[str, list[np.ndarray], list[np.ndarray]]]:
    w0, b0, w1, b1, w2, b2 = params
    h = x @ w0.T + b0
    a = _gelu(h)
    o = a @ w1.T + b1
    a2 = gelu_1(o)
    y = a2 @ w2.T + b2
    return [("Functional.linear.0.forward", [x, w0, b0], [h]), ("Functional.gelu.0.forward", [h], [a]),
            ("Functional.linear.1.forward", [a, w1, b1], [o]), ("Functional.gelu.1.forward", [o], [a2]),
            ("Functional.linear.2.forward", [a2, w2, b2], [y])]


def make_pair(root: Path, fault: str) -> tuple[Path, Path]:
    """Golden in FP32; target in FP16 (real rounding noise everywhere) with one real fault."""
    rng = np.random.default_rng(1)
    x = rng.standard_normal((8, 32)).astype(np.float32)
    params = [(rng.standard_normal(s) / d).astype(np.float32)
              for s, d in (((32, 32), 5.6), (32, 10), ((32, 32), 5.6), (32, 10), ((16, 32), 5.6), (16, 10))]
    golden = _write_dump(root / "golden", _mlp(x, params))
    half = [p.astype(np.float16).astype(np.float32) for p in params]
    x16 = x.astype(np.float16).astype(np.float32)
    if fault == "weight":
        half[2] = np.ascontiguousarray(half[2].T)
        calls = _mlp(x16, half)
    else:
        calls = _mlp(x16, half, gelu_1=_quick_gelu)
    stored = [(k, [a.astype(np.float16) for a in ins], [a.astype(np.float16) for a in outs]) for k, ins, outs in calls]
    return golden, _write_dump(root / "target", stored)


# --------------------------------------------------------------------------- the skills' steps


def documented_call(skill: str, tool: str) -> dict[str, Any]:
    """The first documented MCP call of ``tool`` in the opening lines of a skill."""
    text = (SKILLS / skill / "SKILL.md").read_text(encoding="utf-8").split("---", 2)[2]
    opening = "\n".join(text.strip().splitlines()[:14])
    for name, args in CALL.findall(opening):
        if name == tool:
            return dict(json.loads(args))
    raise AssertionError(f"{skill} does not show how to call {tool} in its first lines")


def _fill(value: Any, places: dict[str, str]) -> Any:
    if isinstance(value, str):
        return places.get(value, value)
    if isinstance(value, dict):
        return {k: _fill(v, places) for k, v in value.items()}
    return value


def _links(result: Any) -> dict[str, Path]:
    return {Path(unquote(urlparse(str(c.uri)).path)).name: Path(unquote(urlparse(str(c.uri)).path))
            for c in result.content if c.type == "resource_link"}


def test_agent_following_the_skills_finds_both_faults_and_renders_the_deliverables(tmp_path: Path) -> None:
    pairs = {fault: make_pair(tmp_path / fault, fault) for fault in ("kernel", "weight")}
    env = dict(os.environ) | {"ACC_AGENT_RESULTS_DIR": str(tmp_path / "results")}
    params = StdioServerParameters(command=sys.executable, args=["-m", "acc_agent", "mcp"], env=env, cwd=str(tmp_path))
    calls = 0

    async def scenario() -> None:
        nonlocal calls
        async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            await session.list_tools()
            answers: dict[str, Any] = {}
            step = documented_call("ascend-accuracy-compare", "compare_dumps")
            for fault, (golden, target) in pairs.items():
                args = _fill(step, {"<golden dump dir>": str(golden), "<npu dump dir>": str(target)})
                result = await session.call_tool("compare_dumps", args)
                calls += 1
                assert not result.is_error, result.content[0].text
                answers[fault] = result

            # Read as the skill says: verdict, then first_divergence.enters_through.
            kernel = answers["kernel"].structured_content
            assert kernel["verdict"] == "fail"
            assert kernel["first_divergence"]["module"] == "Functional.gelu.1.forward"
            assert kernel["first_divergence"]["enters_through"] == "operator"
            assert kernel["diagnosis"]["category"] == "operator_fault"
            weight = answers["weight"].structured_content
            assert weight["verdict"] == "fail"
            first = weight["first_divergence"]
            assert first["enters_through"] == "argument", first
            assert first["module"] == "Functional.linear.1.forward" and first["argument"] == "input.1", first
            assert "transposed" in first["difference"]
            # A client that shows only the text reaches the same conclusion.
            text = answers["weight"].content[0].text
            assert "enters_through=argument" in text and "transposed" in text
            assert "enters_through=operator" in answers["kernel"].content[0].text

            # The deliverables, without leaving MCP: the project file first, then the documents.
            golden, target = pairs["weight"]
            init = _fill(documented_call("ascend-migration-check", "init_project"),
                         {".": str(tmp_path / "project"), "<golden dump dir>": str(golden),
                          "<npu dump dir>": str(target)})
            made = await session.call_tool("init_project", init)
            calls += 1
            assert not made.is_error, made.content[0].text
            config = made.structured_content["path"]
            render = _fill(documented_call("ascend-migration-check", "render_deliverables"), {"mig.yaml": config})
            docs = await session.call_tool("render_deliverables", render)
            calls += 1
            assert not docs.is_error, docs.content[0].text
            assert docs.structured_content["verdict"] in ("complete", "with_gaps")
            links = _links(docs)
            assert {"Mig_Readme.md", "Compare.md", "Mig_report.md"} <= set(links)
            compare = links["Compare.md"].read_text(encoding="utf-8")
            assert "Functional.linear.1.forward" in compare  # the documents carry the fault the agent found

    anyio.run(scenario)
    assert calls <= MAX_CALLS
