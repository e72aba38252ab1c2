"""replay-op on REAL msprobe dumps: a wrong kernel is "operator", a changed argument or weight is "inputs".

The cases come from tests/msprobe_cases/ (mindstudio-probe dumping seeded torch models on the CPU):
tensor_l1_gelu's second gelu kernel is wrong with identical inputs; rope_base's Torch.pow gets another
scalar base from the config; weight_transposed's first linear gets a transposed weight. The bundle's
repro.py must run in a fresh interpreter with only numpy and torch.
"""

from __future__ import annotations

import contextlib
import importlib.util
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("torch")
if importlib.util.find_spec("msprobe") is None:
    pytest.skip("mindstudio-probe (msprobe) is not installed", allow_module_level=True)

if str(Path(__file__).resolve().parent) not in sys.path:
    sys.path.insert(0, str(Path(__file__).resolve().parent))

from msprobe_cases import Case  # noqa: E402
from msprobe_cases.fixtures import msprobe_cases  # noqa: E402,F401 - the session fixture

from acc_agent.cli import main  # noqa: E402

pytestmark = pytest.mark.slow


def _case(cases: dict[str, Case | BaseException], name: str) -> Case:
    case = cases[name]
    if isinstance(case, BaseException):
        pytest.fail(f"generating case {name} failed: {case}")
    return case


def _replay(case: Case, op: str, capsys: pytest.CaptureFixture[str], *extra: str) -> tuple[int, dict[str, Any]]:
    capsys.readouterr()
    code: Any = 0
    try:
        main(["replay-op", str(case.golden), str(case.target), "--op", op, "--json", *extra])
    except SystemExit as exc:
        code = exc.code
    return int(code or 0), json.loads(capsys.readouterr().out)


def test_wrong_kernel_is_the_operator(msprobe_cases: dict[str, Case | BaseException],  # noqa: F811
                                      capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    case = _case(msprobe_cases, "tensor_l1_gelu")
    code, doc = _replay(case, "Functional.gelu.1.forward", capsys, "--bundle", str(tmp_path / "bundle"))
    assert code == 0, doc
    assert doc["fault_enters"] == "operator", doc["reason"]
    assert doc["replay_check"]["within"] and doc["replay_vs_golden"]["within"]
    assert not doc["replay_vs_target"]["within"]
    assert doc["differing_inputs"] == [], "the inputs are identical"
    bundle = Path(doc["bundle"])
    for name in ("repro.py", "call.json", "metrics.json", "README.md", "inputs/target/input.0.npy",
                 "outputs/golden.npy", "outputs/target.npy"):
        assert (bundle / name).is_file(), name
    run = subprocess.run([sys.executable, str(bundle / "repro.py")], capture_output=True, text=True, timeout=120,
                         cwd=tmp_path)
    assert run.returncode == 0, run.stderr
    assert "from the target's inputs: rel L2 vs golden output 0" in run.stdout, run.stdout


def test_changed_scalar_argument_is_the_inputs(msprobe_cases: dict[str, Case | BaseException],  # noqa: F811
                                               capsys: pytest.CaptureFixture[str]) -> None:
    case = _case(msprobe_cases, "rope_base")
    code, doc = _replay(case, "Torch.pow.0.forward.output.0", capsys)
    assert code == 0 and doc["fault_enters"] == "inputs", doc
    assert doc["replay_vs_target"]["within"] and not doc["replay_vs_golden"]["within"]
    diffs = {d["argument"]: d for d in doc["differing_inputs"]}
    assert diffs["input.0"]["kind"] == "scalar"
    assert float(diffs["input.0"]["golden"]) == 10000.0 and float(diffs["input.0"]["target"]) == 1000000.0
    assert "input.1" not in diffs, "the tensor exponent is identical"


def test_transposed_weight_is_the_inputs(msprobe_cases: dict[str, Case | BaseException],  # noqa: F811
                                         capsys: pytest.CaptureFixture[str]) -> None:
    case = _case(msprobe_cases, "weight_transposed")
    code, doc = _replay(case, "Functional.linear.0.forward", capsys)
    assert doc["fault_enters"] == "inputs", doc["reason"]
    assert [d["argument"] for d in doc["differing_inputs"]] == ["input.1"]


def test_statistics_dump_needs_tensor_data(msprobe_cases: dict[str, Case | BaseException],  # noqa: F811
                                           capsys: pytest.CaptureFixture[str]) -> None:
    case = _case(msprobe_cases, "stats_l1_gelu")
    code, doc = _replay(case, "Functional.gelu.1.forward", capsys)
    assert code == 2
    assert doc["error"]["code"] == "needs_tensor_data" and "task 'tensor'" in doc["error"]["hint"]


def test_unknown_and_unreplayable_calls_are_clear_errors(msprobe_cases: dict[str, Case | BaseException],  # noqa: F811
                                                         capsys: pytest.CaptureFixture[str]) -> None:
    case = _case(msprobe_cases, "tensor_l1_gelu")
    code, doc = _replay(case, "Functional.gelu.9.forward", capsys)
    assert code == 2 and doc["error"]["code"] == "unknown_call" and "Functional.gelu.1.forward" in doc["error"]["hint"]
    code, doc = _replay(case, "Functional.gelu.1.backward", capsys)
    assert code == 2 and doc["error"]["code"] == "cannot_replay"
    with contextlib.suppress(SystemExit):
        main(["replay-op", str(case.golden), str(case.target), "--op", "nonsense", "--json"])
    assert json.loads(capsys.readouterr().out)["error"]["code"] == "invalid_call_key"


def test_module_calls_are_rebuilt_from_their_recorded_parameters(msprobe_cases: dict[str, Case | BaseException],  # noqa: F811
                                                                 capsys: pytest.CaptureFixture[str],
                                                                 tmp_path: Path) -> None:
    """Level mix records Module.* calls with their parameters: a Linear and a GELU are re-run from them."""
    case = _case(msprobe_cases, "mix_gelu")
    code, doc = _replay(case, "Module.blocks.1.act.GELU.forward.0", capsys)
    assert doc["fault_enters"] == "operator" and doc["replay_check"]["within"], doc["reason"]
    code, doc = _replay(case, "Module.blocks.1.fc.Linear.forward.0", capsys, "--bundle", str(tmp_path / "b"))
    assert code == 3 and doc["fault_enters"] == "not_reproducible", doc
    assert doc["replay_check"]["within"] and "agree" in doc["reason"], "nothing differs before the GELU"
    run = subprocess.run([sys.executable, str(tmp_path / "b" / "repro.py")], capture_output=True, text=True,
                         timeout=120, cwd=tmp_path)
    assert run.returncode == 0 and "rel L2 vs golden output 0" in run.stdout, run.stderr
    code, doc = _replay(case, "Module.blocks.1.Block.forward.0", capsys)
    assert code == 2 and doc["error"]["code"] == "cannot_replay" and "Linear" in doc["error"]["message"]


def test_the_diagnosis_advises_the_replay_that_decides(msprobe_cases: dict[str, Case | BaseException],  # noqa: F811
                                                       capsys: pytest.CaptureFixture[str]) -> None:
    """compare-dumps' next actions hold the replay-op command for the call at fault; run as written, it decides."""
    import re
    import shlex

    case = _case(msprobe_cases, "tensor_l1_gelu")
    capsys.readouterr()
    with contextlib.suppress(SystemExit):
        main(["compare-dumps", str(case.golden), str(case.target), "--json"])
    actions = json.loads(capsys.readouterr().out)["diagnosis"]["next_actions"]
    advised = [a for a in actions if "acc-agent replay-op " in a]
    assert advised, actions
    command = re.search(r"acc-agent (replay-op .+? --op \S+)", advised[0])
    assert command is not None, advised[0]
    capsys.readouterr()
    try:
        main([*shlex.split(command.group(1)), "--json"])
    except SystemExit as exc:
        assert exc.code in (0, None)
    assert json.loads(capsys.readouterr().out)["fault_enters"] == "operator"
