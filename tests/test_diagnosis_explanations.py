"""What the diagnosis says about faults whose numbers alone mislead, on real msprobe dumps.

- an Inf that a scalar argument puts there (``masked_fill(mask, -inf)`` for -10000) is that argument, not an
  overflow, and a final output back within precision is said to be so (``stats_mask_fill_inf``);
- a statistics dump counts no Inf elements: the overflow says which recorded statistics are Inf
  (``mix_fp16_weight_grad_inf``);
- a bool mask whose digest alone differs reads "md5 differs" (``md5_mask_off_by_one``);
- weights that first differ at a later step, after clean earlier steps, point at the optimizer
  (``stats_two_steps_adam_eps``);
- a call the target leaves out names the golden's call that made the input (tests/data/msprobe_missing_scale);
- a fused call that computes something else is paired with the run it replaces by place and named, with the
  constants of both sides (tests/data/msprobe_fused_attention_scale, msprobe_decomposed_layer_norm_eps);
- a module (L0) dump records a parameter gradient before its module's backward: the incoming gradient that
  already differs is named (tests/data/msprobe_l0_backward_custom);
- ranks that diverge at the same call each on their own are said to (tests/data/msprobe_reduce_op);
- a pipeline stage that only receives the difference (send/recv) is not the rank at fault
  (tests/data/msprobe_pipeline_send_recv);
- a weight whose md5 differs in the same dtype is where the fault enters, though its statistics agree within
  summation order (tests/data/msprobe_md5_weight_transposed);
- NaN from finite inputs is an invalid operation, not a range overflow (tests/data/msprobe_stats_gelu_nan);
- two kernels of one dtype that round a few elements otherwise leave another digest with equal statistics, which
  is not values moved unless a later call that mixes positions shows it (tests/data/msprobe_md5_bf16_kernel_rounding,
  msprobe_md5_bf16_kernel_rounding_gelu);
- one rank compared alone, whose difference enters through a collective, is told to compare every rank
  (``stats_two_ranks``, rank 0 only); a run without a process group (a lone ``proc<pid>`` folder) names no rank;
- a golden run that overflows where the target stays finite is named, not passed (msprobe_stats_gelu_nan with the
  sides swapped), and an infinite scalar the golden hands a call is that argument (``stats_mask_fill_inf`` swapped);
- a channels-last golden whose recorded pool gradient is a copy of its incoming gradient is not a mismatch
  (``stats_cnn_channels_last_clean`` swapped);
- a pass-through call the target adds before a fused call (an NPU's ``contiguous``) is not taken for the fused call
  (``md5_fused`` with a ``Tensor.contiguous`` inserted);
- one golden dump compared with a target dump of another step and rank says so, and rank dumps one side lacks are
  said not to be compared (tests/data/msprobe_md5_digest_race with the target's rank 0 left out);
- a pass that opens on a weight (``weight.t()`` for ``addmm``) still takes its data from the first tensor that needs
  no gradient, so the scaled weight is called a parameter (tests/data/msprobe_addmm_weight_scaled);
- a call the target adds just before the first call of the same API (its numbers shift by one) keeps the answer,
  whether it takes another signature (a scalar where the golden adds a tensor) or the same inputs.
"""

from __future__ import annotations

import copy
import importlib.util
import json
import shutil
import sys
from pathlib import Path

import pytest

pytest.importorskip("torch")
if importlib.util.find_spec("msprobe") is None:
    pytest.skip("mindstudio-probe (msprobe) is not installed", allow_module_level=True)

if str(Path(__file__).resolve().parent) not in sys.path:
    sys.path.insert(0, str(Path(__file__).resolve().parent))

from msprobe_cases import make_case  # noqa: E402

from acc_agent.models.compare import CompareDumpsOutput  # noqa: E402
from acc_agent.models.diagnosis import Diagnosis, FirstDivergence  # noqa: E402
from acc_agent.registry import call_tool  # noqa: E402
from acc_agent.render.tooltext import english_words, to_zh  # noqa: E402

pytestmark = pytest.mark.slow
DATA = Path(__file__).parent / "data"


def _compare(golden: Path, target: Path) -> CompareDumpsOutput:
    out = call_tool("compare_dumps", {"golden": str(golden), "target": str(target), "workers": 1})
    assert isinstance(out, CompareDumpsOutput) and out.diagnosis is not None and out.first_divergence is not None
    texts = [out.diagnosis.explanation, out.first_divergence.reason, *out.diagnosis.next_actions]
    assert not [english_words(to_zh(t)) for t in texts if english_words(to_zh(t))]
    return out


def _case(name: str) -> CompareDumpsOutput:
    case = make_case(name)
    return _compare(case.golden, case.target)


def _data(name: str) -> tuple[FirstDivergence, Diagnosis]:
    """The first divergence and diagnosis of the dump pair kept in tests/data/<name> (its README says what it is)."""
    out = _compare(DATA / name / "golden", DATA / name / "target")
    assert out.first_divergence is not None and out.diagnosis is not None
    return out.first_divergence, out.diagnosis


def test_an_infinite_fill_argument_is_not_an_overflow() -> None:
    out = _case("stats_mask_fill_inf")
    fd, diag = out.first_divergence, out.diagnosis
    assert fd is not None and diag is not None
    assert (fd.module, fd.enters_through, fd.argument) == ("Tensor.masked_fill.0.forward", "argument", "input.2")
    assert "is -inf on the target but -10000.0 on the golden" in fd.reason
    assert "recorded Min -Inf" in fd.reason and "not comparable" not in fd.reason
    assert "is within precision again" in diag.explanation  # the softmax after it gives the same result


def test_a_statistics_overflow_names_the_statistics_that_are_inf() -> None:
    out = _case("mix_fp16_weight_grad_inf")
    fd = out.first_divergence
    assert fd is not None and fd.enters_through == "overflow"
    assert "recorded Max Inf" in fd.reason and "0 Inf, 0 NaN" not in fd.reason


def test_a_mask_whose_digest_alone_differs() -> None:
    out = _case("md5_mask_off_by_one")
    fd = out.first_divergence
    assert fd is not None and fd.argument == "input.1"
    assert "(md5 differs;" in fd.reason and "not comparable" not in fd.reason
    assert fd.difference is not None and "another md5 digest" in fd.difference


def test_weights_that_differ_only_after_a_clean_step_point_at_the_optimizer() -> None:
    out = _case("stats_two_steps_adam_eps")
    fd, diag = out.first_divergence, out.diagnosis
    assert fd is not None and diag is not None and fd.step == 1
    assert "The weights that enter step 1 differ while every earlier step agrees" in diag.explanation
    assert "Steps and ranks: the divergence starts on step1/rank0" in diag.explanation
    assert diag.next_actions[0].startswith("Compare the optimizer of the two runs")


def test_a_call_the_target_leaves_out_is_found_on_the_golden() -> None:
    fd, diag = _data("msprobe_missing_scale")
    assert (fd.module, fd.argument) == ("Functional.linear.0.forward", "input.0")
    # the target's Tensor.__mul__.0 is the golden's __mul__.1 (re-paired by place): the golden's __mul__.0 has no partner
    assert "on the golden the output of Tensor.__mul__.0.forward, a call the target does not make" in fd.reason
    assert diag.next_actions[0].startswith(
        "The golden computes input.0 of Functional.linear.0.forward with Tensor.__mul__.0.forward; the target does not "
        "make that call")
    assert "0.25x the golden's" in diag.next_actions[0]


def test_ranks_that_receive_the_fault_are_listed_together() -> None:
    out = _case("stats_three_ranks_all_gather")
    assert out.diagnosis is not None
    assert "rank0, rank1 only receive it through a collective (their own inputs agree)" in out.diagnosis.explanation


def test_a_fused_call_that_computes_something_else_is_paired_with_its_run_and_named() -> None:
    """A fused attention with the wrong scale takes the decomposed run's inputs but not its output: the run is still
    paired (its output by place) and the fused call is the fault, not the next linear's input."""
    fd, diag = _data("msprobe_fused_attention_scale")
    assert (fd.module, fd.enters_through) == ("Functional.scaled_dot_product_attention.0.forward", "operator")
    regions = diag.details["fused_regions"]
    assert isinstance(regions, list) and len(regions) == 1
    assert regions[0]["golden"] == ["Torch.matmul.0.forward", "Tensor.__truediv__.0.forward", "Torch.softmax.0.forward",
                                    "Torch.matmul.1.forward"]
    assert "the output differs and is placed by shape and execution order" in regions[0]["note"]
    assert "the target's fused call standing for the golden's 4 calls" in diag.explanation
    assert "2.8284271247461903 (Tensor.__truediv__.0.forward input.1)" in diag.explanation  # 1/sqrt(8), not 1/8
    assert "0.125 (Functional.scaled_dot_product_attention.0.forward input.scale)" in diag.explanation


def test_a_written_out_run_that_stands_for_a_fused_call_lists_both_sides_constants() -> None:
    """The golden's fused layer_norm (eps 1e-5) against the target's written-out one with eps 0.1: the run is paired
    by place, the call that closes it is named, and the constants of both sides are listed (the eps among them)."""
    fd, diag = _data("msprobe_decomposed_layer_norm_eps")
    assert fd.module == "Tensor.__add__.1.forward"
    assert "closes the target's written-out run Tensor.mean.0.forward .. Tensor.__add__.1.forward (10 calls)" \
        in diag.explanation
    assert "1e-05 (Functional.layer_norm.0.forward input.4)" in diag.explanation
    assert "0.1 (Tensor.__add__.0.forward input.1)" in diag.explanation
    assert diag.next_actions[0].startswith("Compare the constants of the fused call")


def test_a_module_dump_names_the_incoming_gradient_not_the_parameter_gradient_before_it() -> None:
    fd, diag = _data("msprobe_l0_backward_custom")
    assert (fd.module, fd.argument, fd.direction) == ("Module.fc2.Linear.backward.0", "input.0", "backward")
    assert diag.category == "operator_fault"


def test_a_pipeline_stage_that_only_receives_the_fault() -> None:
    fd, diag = _data("msprobe_pipeline_send_recv")
    assert (fd.module, fd.rank) == ("Functional.gelu.0.forward", "rank0")
    assert [(r.rank, r.status) for r in diag.ranks] == [("rank0", "diverges"), ("rank1", "via_collective")]


def test_ranks_that_diverge_at_the_same_call_are_said_to() -> None:
    """Every rank's all_reduce reduces with MAX where the golden sums: each rank diverges at that call itself."""
    fd, diag = _data("msprobe_reduce_op")
    assert (fd.module, fd.argument, fd.rank) == ("Distributed.all_reduce.0.forward", "input.op", "rank0")
    assert "rank1 diverges at the same call (Distributed.all_reduce.0.forward) on its own" in diag.explanation


def test_an_activation_module_in_a_bf16_module_dump() -> None:
    """At L0 a GELU is a module (``Module.blocks.1.act.GELU``), judged by the same activation rules as the API: a GELU
    4 % off on every 4th element of a bf16 run is found there, and the same run without the fault passes."""
    fd, diag = _data("msprobe_l0_bf16_gelu_4pct")
    assert (fd.module, diag.category) == ("Module.blocks.1.act.GELU.forward.0", "operator_fault")
    out = call_tool("compare_dumps", {"golden": str(DATA / "msprobe_l0_bf16_clean" / "golden"),
                                      "target": str(DATA / "msprobe_l0_bf16_clean" / "target"), "workers": 1})
    assert isinstance(out, CompareDumpsOutput) and out.verdict == "pass"
    assert out.diagnosis is not None and out.diagnosis.category == "no_layer_fault"


def test_a_weight_with_another_digest_is_where_the_fault_enters() -> None:
    """Statistics reduced on the device may differ by summation order for the same weight; its md5 may not."""
    fd, diag = _data("msprobe_md5_weight_transposed")
    assert (fd.module, fd.enters_through, fd.argument) == ("Functional.linear.0.forward", "argument", "input.1")
    assert "another md5 digest in the same dtype: a loaded tensor must match byte for byte" in fd.reason
    assert fd.difference is not None and "transposed or permuted" in fd.difference
    assert diag.category == "operator_fault"


def test_nan_from_finite_inputs_is_an_invalid_operation() -> None:
    fd, diag = _data("msprobe_stats_gelu_nan")
    assert (fd.module, fd.enters_through) == ("Functional.gelu.1.forward", "overflow")
    assert fd.reason.endswith("an invalid operation (NaN from finite values), not a value past the dtype's range")
    assert diag.explanation.startswith("Invalid operation: Functional.gelu.1.forward is the first call to produce NaN")
    assert diag.next_actions[0].startswith("Look inside Functional.gelu.1.forward for an operation that is invalid")
    assert "65504" not in " ".join(diag.next_actions)


def test_another_digest_from_rounding_alone_is_not_values_moved() -> None:
    pair = DATA / "msprobe_md5_bf16_kernel_rounding"
    out = call_tool("compare_dumps", {"golden": str(pair / "golden"), "target": str(pair / "target"), "workers": 1})
    assert isinstance(out, CompareDumpsOutput) and out.verdict == "pass" and out.diagnosis is not None
    assert out.diagnosis.category == "no_layer_fault"
    assert out.diagnosis.details["digests_differing_by_rounding"] == ["Functional.linear.1.forward.output.0"]


def test_a_fault_after_a_rounding_digest_is_named() -> None:
    fd, diag = _data("msprobe_md5_bf16_kernel_rounding_gelu")
    assert (fd.module, fd.enters_through, fd.direction) == ("Functional.gelu.1.forward", "operator", "forward")
    assert diag.category == "operator_fault"


def test_one_rank_that_receives_the_difference_through_a_collective_is_told_to_compare_every_rank() -> None:
    case = make_case("stats_two_ranks")
    out = _compare(case.golden / "step0" / "rank0", case.target / "step0" / "rank0")
    assert out.first_divergence is not None and out.diagnosis is not None
    assert out.first_divergence.module == "Distributed.all_reduce.0.forward" and out.first_divergence.rank is None
    assert "Only one rank was compared and Distributed.all_reduce.0.forward is a collective" in out.diagnosis.explanation
    assert out.diagnosis.next_actions[0].startswith("Compare every rank: pass the dump roots")


def test_a_run_without_a_process_group_names_no_rank(tmp_path: Path) -> None:
    """msprobe writes ``step0/proc<pid>`` without a process group: the pid differs between the runs and is no rank."""
    for side, pid in (("golden", 4242), ("target", 5151)):
        shutil.copytree(DATA / "msprobe_stats_gelu_nan" / side / "step0" / "rank0", tmp_path / side / "step0" / f"proc{pid}")
    out = _compare(tmp_path / "golden", tmp_path / "target")
    assert out.first_divergence is not None and out.first_divergence.module == "Functional.gelu.1.forward"
    assert out.first_divergence.rank is None and out.first_divergence.rank_key == "step0"


def test_a_golden_that_overflows_where_the_target_is_finite_is_not_a_pass() -> None:
    pair = DATA / "msprobe_stats_gelu_nan"
    out = _compare(pair / "target", pair / "golden")  # the NaN is on the golden side now
    assert out.verdict == "fail" and out.first_divergence is not None and out.diagnosis is not None
    assert out.first_divergence.module == "Functional.gelu.1.forward"
    assert out.first_divergence.reason.endswith("the golden run overflows here, not the target")
    assert out.diagnosis.explanation.startswith("Golden overflow: Functional.gelu.1.forward")
    assert out.diagnosis.next_actions[0].startswith("The baseline (golden) run overflows at Functional.gelu.1.forward")


def test_an_infinite_fill_on_the_golden_side_is_the_argument() -> None:
    case = make_case("stats_mask_fill_inf")
    out = _compare(case.target, case.golden)  # -inf is the golden's fill now
    fd = out.first_divergence
    assert fd is not None and (fd.module, fd.enters_through, fd.argument) == ("Tensor.masked_fill.0.forward",
                                                                              "argument", "input.2")
    assert "is -10000.0 on the target but -inf on the golden" in fd.reason
    assert "(recorded Min -Inf, Mean -Inf, Norm Inf on the golden)" in fd.reason


def test_a_golden_that_records_an_input_as_an_output_is_not_a_mismatch() -> None:
    case = make_case("stats_cnn_channels_last_clean")
    out = call_tool("compare_dumps", {"golden": str(case.target), "target": str(case.golden), "workers": 1})
    assert isinstance(out, CompareDumpsOutput) and out.verdict == "pass" and out.diagnosis is not None
    assert out.diagnosis.details["other_shapes_not_judged"] == ["Functional.adaptive_avg_pool2d.0.backward.output.0"]


def test_a_pass_through_call_before_a_fused_call_is_not_the_fused_call(tmp_path: Path) -> None:
    """The target's layer_norm stands for the golden's nine written-out calls; a ``contiguous`` the target adds before
    it returns its input and computes nothing, so it is not paired with them."""
    case = make_case("md5_fused")
    shutil.copytree(case.target, tmp_path / "target")
    path = tmp_path / "target" / "step0" / "rank0" / "dump.json"
    doc = json.loads(path.read_text(encoding="utf-8"))
    data: dict[str, object] = {}
    for key, call in doc["data"].items():
        data[key] = call
        if key == "Functional.linear.0.forward":
            leaf = call["output"][0]
            data["Tensor.contiguous.0.forward"] = {"input_args": [copy.deepcopy(leaf)], "input_kwargs": {},
                                                   "output": [copy.deepcopy(leaf)]}
    doc["data"] = data
    path.write_text(json.dumps(doc), encoding="utf-8")
    out = _compare(case.golden, tmp_path / "target")
    assert out.first_divergence is not None and out.first_divergence.module == "Functional.gelu.0.forward"
    assert out.diagnosis is not None and out.diagnosis.category == "operator_fault"
    notes = out.diagnosis.details["pairing_notes"]
    assert isinstance(notes, list) and notes[0].startswith("fused Functional.layer_norm.0.forward stands for 9 golden ops")


def test_a_dump_of_another_step_and_rank_is_said_to_be_one(tmp_path: Path) -> None:
    pair = DATA / "msprobe_stats_gelu_nan"
    shutil.copytree(pair / "golden" / "step0" / "rank0", tmp_path / "golden" / "step0" / "rank0")
    shutil.copytree(pair / "target" / "step0" / "rank0", tmp_path / "target" / "step2" / "rank1")
    out = _compare(tmp_path / "golden", tmp_path / "target")
    assert out.diagnosis is not None and out.diagnosis.details["compared_dumps"] == {"golden": "step0/rank0",
                                                                                     "target": "step2/rank1"}
    assert ("The golden dump is step0/rank0 and the target's is step2/rank1: another training step, which starts from "
            "weights that the steps between have updated and another rank") in out.diagnosis.explanation


def test_ranks_one_side_lacks_are_said_not_to_be_compared(tmp_path: Path) -> None:
    pair = DATA / "msprobe_md5_digest_race"
    for r in (0, 1):
        shutil.copytree(pair / "golden" / "step0" / f"rank{r}", tmp_path / "golden" / "step0" / f"rank{r}")
    shutil.copytree(pair / "target" / "step0" / "rank1", tmp_path / "target" / "step0" / "rank1")
    shutil.copytree(pair / "target" / "step0" / "rank1", tmp_path / "target" / "step0" / "rank2")
    out = _compare(tmp_path / "golden", tmp_path / "target")
    assert out.diagnosis is not None and out.diagnosis.details["ranks_not_compared"] == {
        "golden": ["step0/rank0"], "target": ["step0/rank2"]}
    assert out.diagnosis.explanation.endswith(
        "Not compared: the golden's step0/rank0 (1) has no target dump; the target's step0/rank2 (1) has no golden "
        "dump, so nothing here speaks for them.")


def test_a_pass_that_opens_on_a_weight_still_calls_a_weight_a_parameter() -> None:
    fd, diag = _data("msprobe_addmm_weight_scaled")
    assert (fd.module, fd.enters_through, fd.argument) == ("Tensor.t.1.forward", "argument", "input.0")
    assert "(a parameter or buffer) already differs" in fd.reason
    assert diag.category == "operator_fault"


def _with_an_extra_call(case_target: Path, out: Path, api: str, scalar: float) -> Path:
    """The target with one more call of ``api`` (``x <op> scalar``, which returns its input) just before its first one,
    the later calls of that API numbered one up, as msprobe numbers a call a port adds."""
    shutil.copytree(case_target, out)
    path = out / "step0" / "rank0" / "dump.json"
    doc = json.loads(path.read_text(encoding="utf-8"))
    data: dict[str, object] = {}
    inserted = False
    for key, call in doc["data"].items():
        stem, _, rest = key.rpartition(".")
        api_of, _, number = stem.rpartition(".")
        if api_of == api:
            if not inserted:
                leaf = call["input_args"][0]
                data[f"{api}.0.forward"] = {"input_args": [copy.deepcopy(leaf), {"type": "float", "value": scalar}],
                                            "input_kwargs": {}, "output": [copy.deepcopy(leaf)]}
                inserted = True
            key = f"{api}.{int(number) + 1}.{rest}"
        data[key] = call
    doc["data"] = data
    path.write_text(json.dumps(doc), encoding="utf-8")
    return out


@pytest.mark.parametrize(("name", "api", "scalar", "expected"), [
    ("stats_cnn_channels_last_clean", "Tensor.__add__", 0.0, None),  # a residual x + y after it: a tensor, not 0.0
    ("stats_mask_off_by_one", "Tensor.__truediv__", 1.0, "Tensor.masked_fill.0.forward"),  # the same inputs in
])
def test_a_call_the_target_adds_before_its_namesake_keeps_the_answer(name: str, api: str, scalar: float,
                                                                      expected: str | None, tmp_path: Path) -> None:
    case = make_case(name)
    out = call_tool("compare_dumps", {"golden": str(case.golden), "workers": 1,
                                      "target": str(_with_an_extra_call(case.target, tmp_path / "t", api, scalar))})
    assert isinstance(out, CompareDumpsOutput)
    assert (out.first_divergence.module if out.first_divergence else None) == expected
