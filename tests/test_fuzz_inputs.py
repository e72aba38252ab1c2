"""Property-based tests of every tool's input model, through the registry as every front end calls it.

Each tool starts from its working sample arguments (tests/test_mcp_samples.py); hypothesis then
replaces, removes or adds arguments with hostile values: wrong types, huge and negative numbers,
NaN/Inf, empty and very long strings, NUL bytes, paths that do not exist or point at devices,
directories, FIFOs or system files, and unknown argument names. The rule (see fuzzing.py): a
result or an AccAgentError whose hint says what to change — an unknown or wrong argument named.

Arguments that would run or import arbitrary code (a command, a callable, a model factory) only
take values from a fixed harmless list, and arguments that name a file to write only take paths
inside the test's folder (the tests may run as root: "/" must never be written).
"""

from __future__ import annotations

import math
import os
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from fuzzing import examples, outcome
from hypothesis import given
from hypothesis import strategies as st
from test_mcp_samples import SAMPLES

from acc_agent.errors import AccAgentError
from acc_agent.registry import all_tools

#: Arguments whose value is run or imported: only these values (harmless, or failing) are tried.
CODE_ARGS: dict[tuple[str, str], list[Any]] = {
    ("measure_performance", "command"): [f"{sys.executable} -c pass", "true", "/nonexistent/cmd --x", "", "'unclosed",
                                         f"{sys.executable} -c 'print(\"x\" * 10**6)'", 5, None],
    ("measure_performance", "callable"): ["numpy:ones", "math:sqrt", "no_colon", "nonexistent_module_xyz:f",
                                          "numpy:no_such_function", "numpy:pi", ":", "", None, 3],
    ("measure_performance", "setup"): ["numpy:ones", "nonexistent_module_xyz:f", "", None],
    ("bisect_precision", "model"): ["nonexistent.py:build", "no_colon", "numpy:ones", "numpy:pi", "", 5],
    ("check_environment", "probe"): ["off", "bogus", 5, None],
    # a scheduler address is dialled (a network connection, a local cluster of processes): not fuzzed here
    ("compare_dumps", "scheduler"): [None],
}
#: Numbers that bound how long a tool runs: hostile values, but none that asks for hours of work.
BOUNDED_ARGS: dict[tuple[str, str], list[Any]] = {
    ("measure_performance", "iterations"): [0, 1, 3, -1, "x", 1.5, None, 2**64],
    ("measure_performance", "warmup"): [0, 1, -1, "x", None, 2**64],
    ("measure_performance", "timeout_s"): [0.5, 2.0, 0, -1, math.nan, "x", None],
    ("measure_performance", "batch_sizes"): [[1], [1, 2], [], [-1], [0], ["x"], "1,2", [2**64], None],
    ("check_environment", "probe_timeout_s"): [1.0, 0, -1, math.nan, "x"],
    ("select_baseline", "max_files"): [1, 10, 0, -5, "x", 2**64, None],
}
#: Arguments naming a file or folder to write: only places inside the test's folder (cwd is it).
WRITE_ARGS = {"csv", "snapshot_out", "out", "plot", "record_file", "folder", "bundle"}


def _hostile_values(tmp: Path) -> list[Any]:
    return [
        None, True, False, 0, -1, 2**64, -(2**63), 1.5, math.nan, math.inf, -math.inf, "", " ", "x" * 100_000,
        "\x00", "a\x00b", "../../../../etc/passwd", "/nonexistent/dir/file", "/dev/zero", "/dev/null", "/", "~",
        "{}", "[]", "1:2", "-5:3", "nan", "<script>", "=cmd|'/c calc'!A0", [], [1, "a", None], {}, {"a": {"b": []}},
        {"start_step": 5, "end_step": 1}, {"low": 0.9, "high": 0.1}, {"golden": 5}, ["x"] * 1000,
        str(tmp / "garbage.bin"), str(tmp / "fifo"), str(tmp), str(tmp / "empty.txt"), str(tmp / "big.log"),
        str(tmp / "object.npy"), str(tmp / "link_loop"),
    ]


def _write_values(tmp: Path) -> list[Any]:
    return [str(tmp / "out" / "file.x"), str(tmp / "new" / "sub" / "out.json"), str(tmp), str(tmp / "garbage.bin" / "x"),
            "relative/out.x", "", None, 5, "\x00", "/dev/null", {}, []]


#: (folder of odd files, sample arguments per tool), set once per module by the ``world`` fixture.
#: A global, not a test argument: hypothesis would print the whole of it with every failing example.
WORLD: list[tuple[Path, dict[str, dict[str, Any]]]] = []


@pytest.fixture(scope="module", autouse=True)
def world(tmp_path_factory: pytest.TempPathFactory) -> None:
    """The sample arguments of every tool, and a folder of odd files the hostile values point at."""
    tmp = tmp_path_factory.mktemp("inputs")
    samples = {name: build(tmp / "samples") for name, build in SAMPLES.items()}
    (tmp / "garbage.bin").write_bytes(bytes(range(256)) * 8)
    (tmp / "empty.txt").write_bytes(b"")
    (tmp / "big.log").write_bytes(b"x" * (3 << 20))
    np.save(tmp / "object.npy", np.array([None, {}], dtype=object), allow_pickle=True)
    os.mkfifo(tmp / "fifo")
    os.symlink("link_loop", tmp / "link_loop")
    WORLD[:] = [(tmp, samples)]


def _arguments(draw: st.DrawFn, tool: str, base: dict[str, Any], tmp: Path) -> dict[str, Any]:
    fields = list(all_tools()[tool].input_model.model_fields)
    args = dict(base)
    for field in draw(st.lists(st.sampled_from(fields), max_size=4, unique=True)):
        key = (tool, field)
        if key in CODE_ARGS:
            args[field] = draw(st.sampled_from(CODE_ARGS[key]))
        elif key in BOUNDED_ARGS:
            args[field] = draw(st.sampled_from(BOUNDED_ARGS[key]))
        elif field in WRITE_ARGS:
            args[field] = draw(st.sampled_from(_write_values(tmp)))
        elif draw(st.integers(0, 4)) == 0:
            args.pop(field, None)
        else:
            args[field] = draw(st.sampled_from(_hostile_values(tmp)))
    if draw(st.integers(0, 5)) == 0:
        args[draw(st.sampled_from(["no_such_argument", "", "x" * 300, "--json"]))] = draw(st.sampled_from([1, None, "v"]))
    for key, pool in {**CODE_ARGS, **BOUNDED_ARGS}.items():  # the sample itself may hold a value outside the pools
        if key[0] == tool and key[1] in args and args[key[1]] not in pool:
            args[key[1]] = pool[0]
    if tool == "check_environment":
        args.setdefault("probe", "off")
    if tool == "measure_performance" and "timeout_s" not in args:
        args["timeout_s"] = 2.0
    return args


@pytest.mark.filterwarnings("ignore")
@pytest.mark.parametrize("tool", sorted(SAMPLES))
@examples(8)
@given(data=st.data())
def test_tool_inputs(tool: str, data: st.DataObject, monkeypatch: pytest.MonkeyPatch) -> None:
    tmp, samples = WORLD[0]
    work = tmp / "cwd"
    work.mkdir(exist_ok=True)
    monkeypatch.chdir(work)  # relative output paths land here
    args = data.draw(st.composite(lambda draw: _arguments(draw, tool, samples[tool], tmp))(), label="arguments")
    spec = all_tools()[tool]
    with np.errstate(all="ignore"):
        got = outcome(f"input {tool}", lambda: spec.run(args))
    if isinstance(got, AccAgentError) and got.code == "invalid_input":
        assert got.field is None or got.field in args or got.field in spec.input_model.model_fields, got.to_dict()
    elif not isinstance(got, AccAgentError):
        assert got.verdict and got.summary
        got.model_dump_json()
    assert not (Path("/etc/passwd.csv").exists() or Path("/Mig_Readme.md").exists())
