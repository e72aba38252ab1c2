"""Faults below a per-tensor budget, on real msprobe dumps: found by bounds that rounding cannot break.

A per-tensor budget (16 unit roundoffs: 6 % in BF16) hides a kernel wrong by a few percent on part of
its elements, and md5 digests that differ with equal statistics say "the same values moved", which no
error figure shows. Three judgements catch them without a bench run, each checked here on the dumps of
``tests/msprobe_cases`` (mindstudio-probe on the CPU):

- an elementwise activation's output error is at most its largest slope times its input's, plus one
  rounding (``bf16_gelu_sparse_3pct``: GELU 3 % too large on every 5th element), and a sum's at most its
  inputs' absolute errors added (``bf16_residual_add_sparse``: a residual add 4 % off on every 3rd);
- a BF16/FP16 call re-computed in float64 from the target's own inputs and arguments gives the target's
  output within its rounding, or the kernel is at fault (``bf16_layernorm_sparse``); on clean runs
  every re-computed call stays under one unit roundoff, a quarter of the allowance or less;
- bit-identical inputs and a different output digest with equal statistics is a fault, never precision
  accumulation (``md5_softmax_rolled``).

An fp16 weight-gradient overflow (``fp16_weight_grad_inf``) is named by the gradient that holds the Inf,
and later Inf/NaN are not said to come from it: the optimizer, not a later call, reads a weight gradient.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

pytest.importorskip("torch")
if importlib.util.find_spec("msprobe") is None:
    pytest.skip("mindstudio-probe (msprobe) is not installed", allow_module_level=True)

if str(Path(__file__).resolve().parent) not in sys.path:
    sys.path.insert(0, str(Path(__file__).resolve().parent))

from msprobe_cases import make_case  # noqa: E402

from acc_agent.io.dumps import Dump, open_dump_set  # noqa: E402
from acc_agent.models.compare import CompareDumpsOutput  # noqa: E402
from acc_agent.numerics import (
    budgets,  # noqa: E402
    diagnosis,  # noqa: E402
)
from acc_agent.numerics.diagnosis import probes  # noqa: E402
from acc_agent.numerics.diagnosis.graph import Graph  # noqa: E402
from acc_agent.registry import call_tool  # noqa: E402
from acc_agent.render.tooltext import english_words, to_zh  # noqa: E402

pytestmark = pytest.mark.slow


def _compare(name: str) -> CompareDumpsOutput:
    case = make_case(name)
    out = call_tool("compare_dumps", {"golden": str(case.golden), "target": str(case.target), "workers": 1})
    assert isinstance(out, CompareDumpsOutput) and out.diagnosis is not None
    return out


def _compare_keeping_graph(name: str, monkeypatch: pytest.MonkeyPatch) -> tuple[CompareDumpsOutput, Graph]:
    """:func:`_compare`, and the first rank's judged dataflow graph (to measure the margins the checks rest on)."""
    graphs: list[Graph] = []
    real_judge = diagnosis.judge

    def judge_and_keep(graph: Graph, use_bench: bool) -> None:
        real_judge(graph, use_bench)
        graphs.append(graph)

    monkeypatch.setattr(diagnosis, "judge", judge_and_keep)
    return _compare(name), graphs[0]


def _target_dump(name: str) -> Dump:
    target = open_dump_set(str(make_case(name).target))
    return target.ranks[next(iter(target.ranks))]


def _golden_dump(name: str) -> Dump:
    golden = open_dump_set(str(make_case(name).golden))
    return golden.ranks[next(iter(golden.ranks))]


def _assert_translated(text: str) -> None:
    assert english_words(to_zh(text)) == [], to_zh(text)


@pytest.mark.parametrize(("name", "module", "says", "reason_says"), [
    ("bf16_gelu_sparse_3pct", "Functional.gelu.1.forward", "largest slope times the input's difference, plus one "
     "rounding", ""),
    ("bf16_residual_add_sparse", "Tensor.__add__.3.forward", "its inputs' differences added, plus one rounding", ""),
    ("bf16_layernorm_sparse", "Functional.layer_norm.0.forward", "does not compute what its inputs say",
     "re-computed in float64 from the target's own recorded inputs"),
], ids=["activation-slope", "sum", "re-computed"])
def test_sparse_low_precision_fault_breaks_a_bound_rounding_cannot(name: str, module: str, says: str,
                                                                   reason_says: str) -> None:
    out = _compare(name)
    assert out.diagnosis is not None and out.first_divergence is not None
    assert out.diagnosis.category == "operator_fault"
    assert out.first_divergence.module == module
    assert says in out.diagnosis.explanation
    assert reason_says in (out.first_divergence.reason or "")
    assert out.verdict == "fail"
    _assert_translated(out.diagnosis.explanation)
    _assert_translated(out.first_divergence.reason or "")


@pytest.mark.parametrize("name", ["bf16_block_clean", "bf16_clean", "fp16_clean"])
def test_clean_low_precision_calls_re_compute_within_one_roundoff(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """The margin the re-computation check rests on: rounding alone stays far under its allowance."""
    out, graph = _compare_keeping_graph(name, monkeypatch)
    assert out.verdict == "pass" and out.diagnosis is not None and out.diagnosis.category == "no_layer_fault"
    t = _target_dump(name)
    residuals = {}
    for node in graph.nodes:
        if node.direction == "forward" and node.computing and node.outputs:
            r = probes.kernel_residual(node, t)
            if r is not None:
                residuals[node.key] = r / budgets.unit_roundoff(node.outputs[0].m.dtype)
    assert len(residuals) >= 5, residuals  # linears, activations (and norms, softmax in the block) re-computed
    assert max(residuals.values()) < 1.0, residuals


def test_values_moved_behind_equal_md5_inputs_are_a_fault_not_accumulation() -> None:
    out = _compare("md5_softmax_rolled")
    assert out.diagnosis is not None and out.first_divergence is not None
    assert out.diagnosis.category == "operator_fault"
    assert out.first_divergence.module == "Functional.softmax.0.forward"
    assert "bit-identical inputs (equal md5)" in out.diagnosis.explanation
    assert "grows only" not in out.diagnosis.explanation  # the digest's placeholder error is no growth base
    _assert_translated(out.diagnosis.explanation)
    _assert_translated(out.first_divergence.reason or "")


def test_weight_gradient_overflow_names_the_gradient_and_claims_no_spread() -> None:
    """fp16 weight gradients overflow in two linears: the first is named, the second is not blamed on it."""
    out = _compare("fp16_weight_grad_inf")
    assert out.diagnosis is not None and out.first_divergence is not None
    assert out.diagnosis.category == "operator_fault" and out.diagnosis.pass_walked == "backward"
    inf_rows = [r.name for r in out.rows if r.name.startswith("Functional.linear.1.backward.output")
                and (r.target_inf or 0) > 0]
    assert out.first_divergence.name in inf_rows  # the output that holds the Inf, not output.0
    assert "reach the end of the pass" not in out.diagnosis.explanation
    assert "goes to the optimizer" in out.diagnosis.explanation
    _assert_translated(out.diagnosis.explanation)


def test_reordering_argument_upstream_of_the_first_statistics_difference_is_named() -> None:
    """A permute with two axes swapped keeps Max/Min/Mean/Norm: the q.k matmul after it is the first output
    whose statistics differ, and the error grows 7x to the end. The permute's differing argument is where the
    difference enters; neither the matmul nor precision accumulation."""
    out = _compare("stats_permute_axes")
    assert out.diagnosis is not None and out.first_divergence is not None
    assert out.diagnosis.category == "operator_fault"
    assert out.first_divergence.module == "Tensor.permute.0.forward"
    assert out.first_divergence.enters_through == "argument" and out.first_divergence.argument == "input.3"
    reason = out.first_divergence.reason or ""
    assert "keeps the golden's Max/Min/Mean/Norm" in reason and "Torch.matmul.0.forward.output.0" in reason
    assert "cannot be measured" not in out.diagnosis.explanation
    _assert_translated(out.diagnosis.explanation)
    _assert_translated(reason)


def test_wrong_backward_kernel_under_a_right_forward_is_found_by_re_computing_its_gradient() -> None:
    """bf16 layer_norm whose backward gives an input gradient 5 % too large on a third of its elements: every
    forward tensor agrees and the gradient's error (3 %) sits inside one bf16 operator's budget, but re-computed
    in float64 from the forward call's recorded input and the incoming gradient it is 7 roundoffs off."""
    out = _compare("bf16_layernorm_bwd_sparse")
    assert out.diagnosis is not None and out.first_divergence is not None
    assert out.diagnosis.category == "operator_fault" and out.diagnosis.pass_walked == "backward"
    assert out.first_divergence.module == "Functional.layer_norm.0.backward"
    assert out.first_divergence.name == "Functional.layer_norm.0.backward.output.0"
    assert "its input gradient is" in out.diagnosis.explanation
    assert "forward inputs and incoming gradient" in (out.first_divergence.reason or "")
    _assert_translated(out.diagnosis.explanation)
    _assert_translated(out.first_divergence.reason or "")


@pytest.mark.parametrize("name", ["bf16_block_clean", "bf16_clean"])
def test_clean_low_precision_backward_calls_re_compute_within_one_roundoff(name: str,
                                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    """The margin of the backward re-computation: clean bf16 input gradients stay under one roundoff."""
    from acc_agent.numerics.diagnosis.backward_recompute import backward_residual, forward_of

    out, graph = _compare_keeping_graph(name, monkeypatch)
    assert out.verdict == "pass" and out.diagnosis is not None and out.diagnosis.category == "no_layer_fault"
    t = _target_dump(name)
    residuals = {}
    for node in graph.nodes:
        if node.direction == "backward" and node.computing and node.outputs:
            r = backward_residual(node, forward_of(node, graph.by_key), t)
            if r is not None:
                residuals[node.key] = r / budgets.unit_roundoff(node.outputs[0].m.dtype)
    assert len(residuals) >= (3 if name == "bf16_block_clean" else 2), residuals  # norms, softmax, gelu
    assert max(residuals.values()) < 1.0, residuals


def test_every_gemm_in_tf32_is_a_precision_setting_not_the_first_linear() -> None:
    """fp32 transformer block whose target runs every linear and matmul on 10-bit-mantissa operands (TF32/HF32):
    each GEMM adds ~3e-4 of its own and the error does not grow, so call by call the first linear looks at fault.
    Re-computed in float64, every GEMM is off alike; re-computed on rounded operands, each matches."""
    out = _compare("tf32_block")
    assert out.diagnosis is not None
    assert out.diagnosis.category == "precision_accumulation" and out.first_divergence is None
    details = out.diagnosis.details
    residuals = [g["residual"] for g in details["gemm_residuals"]]
    assert len(residuals) >= 6 and min(residuals) > 1e-4
    assert details["tf32_reproduced"] == len(residuals) and details["tf32_residual_median"] < 1e-6
    assert "TF32/HF32" in out.diagnosis.explanation
    assert any("allow_hf32 = False" in a for a in out.diagnosis.next_actions)
    _assert_translated(out.diagnosis.explanation)
    for action in out.diagnosis.next_actions:
        _assert_translated(action)


def test_tf32_gemms_in_a_statistics_dump_are_told_by_several_gemms_beyond_on_their_own() -> None:
    """The same TF32 block in msprobe's default statistics dump: nothing can be re-computed, but several GEMMs are
    each beyond precision given their own inputs, the first not far from the others; one faulty GEMM is beyond once."""
    out = _compare("stats_tf32_block")
    assert out.diagnosis is not None
    assert out.diagnosis.category == "precision_accumulation" and out.first_divergence is None
    details = out.diagnosis.details
    assert details["gemm_error_measured_by"] == "statistics" and len(details["gemm_residuals"]) >= 3
    assert "TF32" in out.diagnosis.explanation and "re-computation" in out.diagnosis.explanation
    _assert_translated(out.diagnosis.explanation)


def test_activation_extremes_are_checked_on_the_targets_own_statistics() -> None:
    """bf16 gelu 5 % too large on every 5th element in a statistics dump: the output's error stays inside a bf16
    operator's budget, but its recorded Min is below GELU's global minimum, which no rounding gives."""
    out = _compare("stats_bf16_gelu_sparse")
    assert out.diagnosis is not None and out.first_divergence is not None
    assert out.diagnosis.category == "operator_fault"
    assert out.first_divergence.module == "Functional.gelu.1.forward"
    assert "below the function's minimum" in out.diagnosis.explanation
    assert "target's own statistics disagree" in (out.first_divergence.reason or "")
    _assert_translated(out.diagnosis.explanation)
    _assert_translated(out.first_divergence.reason or "")


@pytest.mark.parametrize("name", ["bf16_gelu_bias_stats", "stats_l1_gelu"])
def test_clean_activations_keep_their_extremes_within_rounding(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """The margin of the extremes check: every activation before the fault keeps Max/Min within rounding."""
    from acc_agent.numerics.diagnosis.extremes import extremes_excess

    out, graph = _compare_keeping_graph(name, monkeypatch)
    assert out.first_divergence is not None
    checked = {t.node.key: r[0] for t in graph.tensors if t.node is not None
               and t.node.pos < graph.by_key[out.first_divergence.module].pos and (r := extremes_excess(t)) is not None}
    assert checked and max(checked.values()) < 0.5, checked


def test_overflow_on_one_rank_is_received_by_the_other() -> None:
    """Rank 1's gelu overflows (md5 dump): rank 1 is named, rank 0 only receives the Inf through the all_reduce,
    and the explanation follows the Inf to the end of the pass instead of calling the gelu the last call."""
    out = _compare("md5_two_ranks_inf")
    fd, diag = out.first_divergence, out.diagnosis
    assert diag is not None and fd is not None
    assert (fd.module, fd.rank, fd.enters_through) == ("Functional.gelu.0.forward", "rank1", "overflow")
    statuses = {r.rank: r.status for r in diag.ranks or []}
    assert statuses == {"rank0": "via_collective", "rank1": "diverges"}, statuses
    assert "rank0 only receives it through a collective" in diag.explanation
    assert "the Inf/NaN reach the end of the pass (Functional.linear.1.forward.output.0)" in diag.explanation
    assert "last compared call" not in diag.explanation
    assert not english_words(to_zh(diag.explanation)), to_zh(diag.explanation)


def test_statistics_overflow_follows_the_nan_to_the_end() -> None:
    """msprobe records the Max/Min of tensors holding NaN as NaN: they are measured as non-finite (not as missing
    statistics), so the explanation follows the Inf/NaN to the pass's last output instead of an earlier finite one."""
    out = _compare("stats_fp16_inf")
    fd, diag = out.first_divergence, out.diagnosis
    assert diag is not None and fd is not None
    assert (fd.module, fd.enters_through) == ("Torch.exp.0.forward", "overflow")
    assert "the Inf/NaN reach the end of the pass (Functional.linear.1.forward.output.0)" in diag.explanation
    assert "do not reach" not in diag.explanation
    assert not english_words(to_zh(diag.explanation)), to_zh(diag.explanation)


def test_a_transposed_weight_in_a_statistics_dump_is_named_by_its_arrangement() -> None:
    """A real BERT (MiniLM) whose layer-2 query weight is stored transposed: the weight's Max/Min are equal and its
    Mean/Norm move by summation order only; the argument is named, and the difference is said to be an arrangement,
    not a list of statistics that print the same."""
    out = _compare("stats_minilm_query_transposed")
    fd, diag = out.first_divergence, out.diagnosis
    assert diag is not None and fd is not None
    assert (fd.module, fd.argument, fd.enters_through) == ("Functional.linear.12.forward", "input.1", "argument")
    assert fd.difference is not None and "another arrangement, e.g. transposed" in fd.difference
    assert "statistics differ" not in diag.explanation
    # the rest of the pass is measured against the projection's output, not the weight's rounding-level figure
    assert "shrinks" in diag.explanation or "stays about the same" in diag.explanation, diag.explanation
    assert not english_words(to_zh(diag.explanation)), to_zh(diag.explanation)


def test_a_clean_fp16_bert_statistics_dump_has_no_fault(monkeypatch: pytest.MonkeyPatch) -> None:
    """fp16 MiniLM, forward and backward, statistics: the 11.7M-element embedding table's Norm, summed in fp16 by
    msprobe, is 1.1 % off with nothing wrong, and the attention backward moves its gradient's norm by about five
    roundoffs; neither is a fault."""
    out, graph = _compare_keeping_graph("stats_fp16_minilm_clean", monkeypatch)
    assert out.diagnosis is not None and out.diagnosis.category == "no_layer_fault", out.diagnosis
    table = next(t for t in graph.tensors if t.name == "Functional.embedding.0.forward.input.1")
    assert table.m.norm_err is not None and table.excess < 1.0
    assert any(t.direction == "backward" and t.judged for t in graph.tensors)


def test_a_fused_attention_against_a_written_out_one_is_paired_and_clean() -> None:
    """MiniLM, fp32 both sides: the golden writes attention out, the target calls the fused kernel. Each fused call
    stands for the six golden calls it replaces, and their FP32 summation-order differences are no fault."""
    out = _compare("stats_minilm_fused_attention_clean")
    diag = out.diagnosis
    assert diag is not None and diag.category == "no_layer_fault", diag.explanation
    regions = diag.details.get("fused_regions") or []
    fused = {r["target"]: r["golden"] for r in regions}
    assert len(fused) == 6, regions
    assert fused["Functional.scaled_dot_product_attention.0.forward"] == [
        "Torch.matmul.0.forward", "Tensor.__mul__.0.forward", "Tensor.__add__.4.forward", "Functional.softmax.0.forward",
        "Functional.dropout.1.forward", "Torch.matmul.1.forward"]


def test_a_boolean_mask_against_an_additive_float_mask_is_not_a_difference(monkeypatch: pytest.MonkeyPatch) -> None:
    """Level mix, written-out attention on the golden (additive float mask), fused kernel on the target (boolean
    mask): the module's mask argument holds the same information in another form, so it is not measured, and the
    clean run is no fault (it was named the argument where the difference enters)."""
    out, graph = _compare_keeping_graph("stats_mix_bf16_minilm_fused_attention_clean", monkeypatch)
    assert out.diagnosis is not None and out.diagnosis.category == "no_layer_fault", out.diagnosis.explanation
    masks = [t for t in graph.tensors if t.name.endswith(".input.attention_mask")]
    assert masks and all(t.m.measure == "none" and not t.judged for t in masks)


def test_a_backward_call_follows_its_forward_calls_renumbered_partner() -> None:
    """The golden's written-out attention makes extra dropout calls, so dropout call numbers shift; an eval-mode
    dropout has no backward, so both runs make as many dropout backward calls and their names pair one-to-one,
    wrongly. Each backward call must pair with the backward twin of its forward call's golden partner."""
    from acc_agent.io.pairing import pair_entries

    case = make_case("md5_fp16_minilm_fused_attention_clean")
    golden, target = _golden_dump("md5_fp16_minilm_fused_attention_clean"), _target_dump(
        "md5_fp16_minilm_fused_attention_clean")
    assert case.category == "no_layer_fault"
    partner = {p.target_name: p.golden_name for p in pair_entries(golden, target).pairs}
    forwards = {t: g for t, g in partner.items() if ".dropout." in t and ".forward.input.0" in t and t != g}
    assert forwards, "the dropout numbers do not shift in this case"
    for t_name, g_name in forwards.items():
        t_back = t_name.replace(".forward.input.0", ".backward.output.0")
        if t_back in partner:
            assert partner[t_back] == g_name.replace(".forward.input.0", ".backward.output.0"), (t_back, partner[t_back])
    out = _compare("md5_fp16_minilm_fused_attention_clean")
    assert out.diagnosis is not None and out.diagnosis.category == "no_layer_fault", out.diagnosis.explanation


def test_renamed_modules_pair_by_class_shapes_and_place() -> None:
    """L0 MiniLM whose port renames each layer's FFN modules (a third of the module keys): names pair the rest, so
    no order fallback starts; the renamed calls pair with the golden module of the same class and shapes between
    the same paired neighbours, and the scaled weight inside one of them is found (it was the enclosing layer)."""
    out = _compare("stats_l0_minilm_renamed_fc2_scaled")
    fd, diag = out.first_divergence, out.diagnosis
    assert diag is not None and fd is not None
    assert (fd.module, fd.argument) == ("Module.encoder.layer.3.ffn_out.dense.Linear.forward.0", "parameters.weight")
    assert (diag.details.get("pairing_methods") or {}).get("renamed", 0) > 0
    notes = " ".join(diag.details.get("pairing_notes") or [])
    assert "module calls the target names differently" in notes, notes


def test_an_activation_no_dumped_call_produced_is_not_called_a_weight() -> None:
    """An LSTM msprobe's L1 does not record: its output reaches the tanh as an input with no producer. It requires
    grad like a weight (a training forward), but carries the batch axis: not a checkpoint to compare."""
    out = _compare("stats_lstm_weight_scaled")
    assert out.first_divergence is not None and out.first_divergence.argument == "input.0"
    assert "a tensor no dumped call produced" in (out.first_divergence.reason or "")
    assert "parameter or buffer" not in (out.first_divergence.reason or "")
    assert out.diagnosis.next_actions[0].startswith("Find the code that produces input.0 of Torch.tanh.0.forward")
    _assert_translated(out.first_divergence.reason or "")


def test_mixed_precision_training_is_recognised_and_said() -> None:
    """fp16 autocast with GradScaler: the backward pass is 2^16 times the golden's, the float32 tensors carry fp16
    error. Both are divided out or allowed, and the judgement note says so (in both languages)."""
    out = _compare("fp16_autocast_grad_scaler_cnn_clean")
    assert out.diagnosis.category == "no_layer_fault" and out.verdict == "pass"
    assert out.diagnosis.details["loss_scale"] == 65536.0
    assert out.diagnosis.details["autocast_precision"] == "float16"
    note = out.diagnosis.judgement_note
    scaled = note[note.index(" The target's backward pass is scaled by 65536 (2^16)"):note.index(" The target mixes")]
    mixed = note[note.index(" The target mixes float32 with float16 tensors"):]
    mixed = mixed[:mixed.index("precision too.") + len("precision too.")]
    _assert_translated(scaled)
    _assert_translated(mixed)


def test_the_earliest_of_several_training_steps_is_named() -> None:
    out = _compare("stats_two_steps_cnn_conv_scaled")
    assert out.first_divergence is not None and out.first_divergence.step == 0
    assert out.first_divergence.rank_key == "step0/rank0"
    assert [(r.step, r.status) for r in out.diagnosis.ranks] == [(0, "diverges"), (1, "diverges")]
    assert "A later step starts from weights" in out.diagnosis.explanation
    _assert_translated(out.diagnosis.explanation[out.diagnosis.explanation.index(" Steps and ranks:"):])


def test_an_output_msprobe_records_with_other_shapes_is_left_unjudged() -> None:
    out = _compare("stats_cnn_channels_last_clean")
    assert out.diagnosis.category == "no_layer_fault" and out.verdict == "pass"
    assert out.diagnosis.details["other_shapes_not_judged"] == ["Functional.adaptive_avg_pool2d.0.backward.output.0"]
    note = out.diagnosis.judgement_note
    _assert_translated(note[note.index(" 1 output recorded with other element counts"):])


def test_sin_of_large_low_precision_arguments_is_an_ill_conditioned_call_not_a_mismatch() -> None:
    """bf16 timesteps up to 500: an angle error of 2 radians from rounding alone. Statistics keep sin's range, so
    the flag comes from the argument's size and dtype; the advice is float32 for that call."""
    out = _compare("stats_bf16_unet_timestep_embedding")
    assert out.first_divergence is not None and out.first_divergence.module == "Torch.sin.0.forward"
    assert out.diagnosis.category == "operator_fault"
    assert out.diagnosis.details["ill_conditioned"] == "sin"
    assert "ill-conditioned at these arguments in bfloat16" in out.diagnosis.explanation
    assert "float32" in out.diagnosis.next_actions[0]
    for text in (out.diagnosis.explanation, out.first_divergence.reason or "", out.first_divergence.difference or "",
                 *out.diagnosis.next_actions[:2]):
        _assert_translated(text)
