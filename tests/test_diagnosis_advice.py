"""Next actions that fit the fault, on REAL msprobe dumps (tests/msprobe_cases/).

Each operator-fault case holds a different wrong kernel: a batch norm that normalises with batch
statistics in eval mode, a GELU that computes the tanh approximation, a layer norm with another
epsilon, a GELU wrong on part of its data. The diagnosis must say what the operator's own recorded
tensors show (re-computed under each hypothesis), advise the checks of that operator family, and
advise a vendor report only where the data points at the kernel with identical inputs.
"""

from __future__ import annotations

import contextlib
import importlib.util
import json
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

#: case -> (what the probe must find, words the first action must hold)
EXPECTED = {
    "bn_batch_stats": ("batch_statistics", ("batch's own mean and variance", "model.eval()")),
    "gelu_tanh": ("gelu_tanh", ("tanh-approximated", "approximate=")),
    "layernorm_eps": ("epsilon", ("eps=0.001", "eps=1e-05")),
    "tensor_l1_gelu": ("output_not_from_inputs", ("computes something else",)),
}


def _diagnose(case: Case, capsys: pytest.CaptureFixture[str]) -> dict[str, Any]:
    capsys.readouterr()
    with contextlib.suppress(SystemExit):
        main(["compare-dumps", str(case.golden), str(case.target), "--json"])
    return json.loads(capsys.readouterr().out)  # type: ignore[no-any-return]


def _case(cases: dict[str, Case | BaseException], name: str) -> Case:
    case = cases[name]
    if isinstance(case, BaseException):
        pytest.fail(f"generating case {name} failed: {case}")
    return case


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_advice_says_what_the_operator_computes(name: str, msprobe_cases: dict[str, Case | BaseException],  # noqa: F811
                                                capsys: pytest.CaptureFixture[str]) -> None:
    doc = _diagnose(_case(msprobe_cases, name), capsys)
    diag = doc["diagnosis"]
    shows, words = EXPECTED[name]
    assert diag["category"] == "operator_fault", diag["explanation"]
    assert diag["details"]["measured_behaviour"] == shows, diag["details"]
    first_action = diag["next_actions"][0]
    assert first_action.startswith("Measured: "), diag["next_actions"]
    for w in words:
        assert w in first_action, first_action
    assert doc["first_divergence"]["difference"], "the measured behaviour is the first divergence's difference"
    assert "Measured on its recorded tensors" in diag["explanation"]


def test_vendor_only_when_the_kernel_is_shown_at_fault(msprobe_cases: dict[str, Case | BaseException],  # noqa: F811
                                                       capsys: pytest.CaptureFixture[str]) -> None:
    """A setting the data explains (mode, variant, eps) is fixed by the user; only a kernel that does not
    compute what its identical inputs say goes to the vendor."""
    for name in ("bn_batch_stats", "gelu_tanh", "layernorm_eps"):
        actions = _diagnose(_case(msprobe_cases, name), capsys)["diagnosis"]["next_actions"]
        assert not any("vendor" in a for a in actions), (name, actions)
    actions = _diagnose(_case(msprobe_cases, "tensor_l1_gelu"), capsys)["diagnosis"]["next_actions"]
    assert any("report Functional.gelu.1.forward to the vendor" in a for a in actions), actions


def test_actions_differ_by_operator_family(msprobe_cases: dict[str, Case | BaseException],  # noqa: F811
                                           capsys: pytest.CaptureFixture[str]) -> None:
    bn = _diagnose(_case(msprobe_cases, "bn_batch_stats"), capsys)["diagnosis"]["next_actions"]
    ln = _diagnose(_case(msprobe_cases, "layernorm_eps"), capsys)["diagnosis"]["next_actions"]
    assert any("running mean/variance" in a for a in bn)
    assert not any("running mean/variance" in a for a in ln)
    assert any("fused vs decomposed" in a for a in ln)
    # the concrete check names the tool and the recorded files
    assert any("acc-agent compare-tensors " in a and "Functional.batch_norm.0.forward.input.0" in a for a in bn), bn


def test_statistics_dump_asks_for_tensor_data_before_the_vendor(msprobe_cases: dict[str, Case | BaseException],  # noqa: F811
                                                                capsys: pytest.CaptureFixture[str]) -> None:
    """Statistics cannot show inputs identical: the advice is to re-dump the operator with tensors."""
    diag = _diagnose(_case(msprobe_cases, "stats_l1_gelu"), capsys)["diagnosis"]
    assert diag["details"]["measured_behaviour"] is None
    assert not any("vendor" in a for a in diag["next_actions"]), diag["next_actions"]
    assert any("tensor mode" in a and "acc-agent compare-tensors" in a for a in diag["next_actions"]), diag["next_actions"]


def test_rows_failing_msprobes_bar_are_counted_and_explained(msprobe_cases: dict[str, Case | BaseException],  # noqa: F811
                                                             capsys: pytest.CaptureFixture[str]) -> None:
    """bf16 target: earlier rows fail msprobe's bar (MaxAbsErr > 1e-3 on bf16 rounding). The answer says how
    many (counted like msprobe's rule on the rows it returns) and why each was discounted."""
    case = _case(msprobe_cases, "bf16_weight_scale")
    capsys.readouterr()
    with contextlib.suppress(SystemExit):
        main(["compare-dumps", str(case.golden), str(case.target), "--json", "--all-rows"])
    doc = json.loads(capsys.readouterr().out)
    fd, diag = doc["first_divergence"], doc["diagnosis"]
    expected = sum(1 for r in doc["rows"] if r["index"] < fd["index"] and r.get("cosine") is not None
                   and (r["cosine"] < 0.99 or (r.get("max_abs_err") or 0.0) > 1e-3))
    assert expected > 0, "the case must hold rows failing msprobe's bar before the fault"
    assert diag["details"]["earlier_rows_failing_msprobe_bar"] == expected
    listed = diag["details"]["discounted_rows"]
    assert listed and all(x["why_discounted"] for x in listed)
    assert "fail msprobe's bar" in fd["reason"] and "fail msprobe's bar" in diag["explanation"]
    assert "discounted_rows" not in fd["reason"] + diag["explanation"], "no internal field names in the text"


def test_mask_fills_are_left_out_of_the_judged_error(msprobe_cases: dict[str, Case | BaseException],  # noqa: F811
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    """Attention scores filled with -10000 on both sides: the fill positions are excluded and the note says so."""
    diag = _diagnose(_case(msprobe_cases, "weight_transposed"), capsys)["diagnosis"]
    fills = diag["details"]["mask_fills_excluded"]
    assert any(f["fill"] == -10000.0 and 0.3 < f["share"] < 0.5 for f in fills), fills
    assert "left out of the error used for judging" in diag["judgement_note"]
