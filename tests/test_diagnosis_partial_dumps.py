"""Dumps that record part of a step, as users cut them down with msprobe's config: outputs only, the backward pass
only, a list of APIs, a scope of calls.

The answer names what such a dump shows and claims nothing it does not record: no "inputs that agree" of a call whose
inputs are not in the dump, no "network input" of an activation that calls before the recorded range computed, no
"not the same thing" of an output whose data went on through calls the dump leaves out. Real msprobe fixtures (see the
folder's README).
"""

from __future__ import annotations

from pathlib import Path

from recorded_dumps import compare_recorded, untranslated

DATA = Path(__file__).parent / "data" / "msprobe_partial_dumps"


def test_outputs_only_a_jump_is_named_without_claiming_its_inputs_agree() -> None:
    out = compare_recorded(DATA / "out_fp32_md5_softmax_sparse")
    fd, diagnosis = out.first_divergence, out.diagnosis
    assert fd is not None and diagnosis is not None
    assert (diagnosis.category, fd.name, fd.direction) == ("operator_fault", "Torch.softmax.0.forward.output.0",
                                                           "forward")
    assert "every input" not in fd.reason and "inputs that agree" not in diagnosis.explanation
    assert "the dump holds none of the inputs of Torch.softmax.0.forward" in fd.reason
    assert "every output recorded before it is within precision" in diagnosis.explanation
    assert "The dump records no inputs in the forward pass" in diagnosis.judgement_note
    assert untranslated([diagnosis.explanation, fd.reason]) == []


def test_outputs_only_a_mild_fault_the_loss_averages_away_is_not_a_comparison_mismatch() -> None:
    # bfloat16 statistics: the final loss agrees, and with no inputs recorded no call is seen to take the softmax's
    # output; that its data went nowhere cannot be concluded
    out = compare_recorded(DATA / "out_bf16_stats_softmax_sparse")
    fd, diagnosis = out.first_divergence, out.diagnosis
    assert fd is not None and diagnosis is not None
    assert (diagnosis.category, fd.name) == ("operator_fault", "Torch.softmax.0.forward.output.0"), \
        diagnosis.explanation
    assert "not the same thing" not in diagnosis.explanation


def test_backward_only_the_answer_says_a_backward_call_reads_its_unrecorded_forward() -> None:
    out = compare_recorded(DATA / "bwd_fp32_md5_softmax_sparse")
    fd, diagnosis = out.first_divergence, out.diagnosis
    assert fd is not None and diagnosis is not None
    assert (diagnosis.category, fd.module, fd.direction) == ("operator_fault", "Functional.log_softmax.0.backward",
                                                             "backward")
    assert ("The dump records no forward pass (msprobe's data_mode [\"backward\"]): a backward call also reads the "
            "tensors its forward call saved, so a difference in the forward pass at or before "
            "Functional.log_softmax.0.forward shows first here.") in diagnosis.explanation
    assert diagnosis.details["forward_recorded"] is False
    assert untranslated([diagnosis.explanation]) == []


def test_a_list_filtered_dump_names_the_faulty_call_whose_consumers_it_leaves_out() -> None:
    # the bmm that takes the softmax's output is not in the list; the linear after it receives data far off
    out = compare_recorded(DATA / "lsm_fp32_md5_softmax_sparse")
    fd, diagnosis = out.first_divergence, out.diagnosis
    assert fd is not None and diagnosis is not None
    assert (diagnosis.category, fd.name) == ("operator_fault", "Torch.softmax.0.forward.output.0"), \
        diagnosis.explanation
    assert "forward_recorded" not in diagnosis.details


def test_a_list_filtered_dump_names_where_the_difference_enters_the_recorded_calls() -> None:
    # the leaky ReLU is not in the list: the difference enters the next linear through its input
    out = compare_recorded(DATA / "lsm_fp32_md5_slope")
    fd, diagnosis = out.first_divergence, out.diagnosis
    assert fd is not None and diagnosis is not None
    assert (diagnosis.category, fd.module, fd.argument) == ("operator_fault", "Functional.linear.5.forward", "input.0")
    assert "a tensor no dumped call produced" in fd.reason


def test_a_scope_that_starts_mid_step_does_not_call_an_activation_the_network_input() -> None:
    # the layer norm before the scope uses the unbiased variance: the einsum's inputs (q, k) already differ
    out = compare_recorded(DATA / "scope_fp32_md5_var_unbiased")
    fd, diagnosis = out.first_divergence, out.diagnosis
    assert fd is not None and diagnosis is not None
    assert (diagnosis.category, fd.module) == ("input_mismatch", "Torch.einsum.0.forward")
    assert diagnosis.details["computed_before_the_dump"] is True
    assert "requires grad on both sides" in diagnosis.explanation and "not data fed in" in diagnosis.explanation
    assert "The network input already differs" not in diagnosis.explanation
    assert untranslated([diagnosis.explanation, fd.reason, *diagnosis.next_actions]) == []


def test_a_fault_inside_the_scope_is_named_at_its_argument() -> None:
    out = compare_recorded(DATA / "scope_fp32_md5_einsum_eq")
    fd, diagnosis = out.first_divergence, out.diagnosis
    assert fd is not None and diagnosis is not None
    assert (diagnosis.category, fd.module, fd.argument) == ("operator_fault", "Torch.einsum.0.forward", "input.0")
    assert "computed_before_the_dump" not in diagnosis.details


def test_a_backward_that_starts_from_another_gradient_is_not_called_a_data_mismatch() -> None:
    # the block's last residual add is not in the list: every recorded forward tensor agrees, and the gradient the
    # backward pass starts from already differs
    out = compare_recorded(DATA / "lmm_fp32_md5_llama_residual_add")
    fd, diagnosis = out.first_divergence, out.diagnosis
    assert fd is not None and diagnosis is not None
    assert (diagnosis.category, fd.name, fd.direction, fd.enters_through) == (
        "operator_fault", "Functional.linear.6.backward.input.0", "backward", "between_operators")
    assert "The network input already differs" not in diagnosis.explanation
    assert ("the calls after the last recorded forward call (Functional.linear.6.forward) compute another result on "
            "the two sides") in diagnosis.explanation
    assert diagnosis.details["last_recorded_forward_call"] == "Functional.linear.6.forward"
    assert untranslated([diagnosis.explanation, fd.reason, *diagnosis.next_actions]) == []


def test_a_list_filtered_api_dump_does_not_call_a_fault_a_norm_layer_hides_a_mismatch() -> None:
    # float16: the batch norm after the conv (not in the list) takes most of the fault out, so the next conv's input
    # agrees; with the calls in between unrecorded, that is no evidence that the conv's output went nowhere
    out = compare_recorded(DATA / "lconv_fp16_stats_cnn_conv_sparse")
    fd, diagnosis = out.first_divergence, out.diagnosis
    assert fd is not None and diagnosis is not None
    assert (diagnosis.category, fd.name) == ("operator_fault", "Functional.conv2d.4.forward.output.0"), \
        diagnosis.explanation


def test_a_pass_one_side_does_not_record_is_said_to_be_uncompared() -> None:
    out = compare_recorded(DATA / "allfwd_fp32_stats_clean")
    diagnosis = out.diagnosis
    assert diagnosis is not None
    assert (out.verdict, diagnosis.category) == ("pass", "no_layer_fault")
    assert ("The golden records the backward pass (51 tensors) and the target does not (msprobe's data_mode leaves it "
            "out there): the backward pass was not compared.") in diagnosis.explanation
    assert diagnosis.details["backward_recorded_by"] == "golden"
    assert untranslated([diagnosis.explanation]) == []


def test_level_mix_listing_one_module_names_the_gradient_it_gets_back() -> None:
    # only the attention is recorded; the MLP's SiLU after it is off, so the attention's forward agrees and its backward
    # starts from another gradient
    out = compare_recorded(DATA / "mix_lattn_fp32_md5_silu")
    fd, diagnosis = out.first_divergence, out.diagnosis
    assert fd is not None and diagnosis is not None
    assert (diagnosis.category, fd.direction, fd.enters_through) == ("operator_fault", "backward", "between_operators")
    assert fd.module == "Functional.linear.3.backward"
    assert "the gradient the backward pass starts from" in diagnosis.explanation


def test_level_mix_listing_later_modules_says_the_difference_enters_before_them() -> None:
    out = compare_recorded(DATA / "mix_lmlp_fp32_md5_softmax")
    fd, diagnosis = out.first_divergence, out.diagnosis
    assert fd is not None and diagnosis is not None
    assert (diagnosis.category, fd.module) == ("input_mismatch", "Functional.linear.4.forward")
    assert diagnosis.details["computed_before_the_dump"] is True


def test_inputs_only_a_setting_the_numbers_hide_is_named_at_its_argument() -> None:
    # eps 1e-6 for 1e-5 moves nothing beyond float32 precision; the dump records no output of the add, but its scalar
    # argument, which differs, is recorded
    out = compare_recorded(DATA / "inp_fp32_md5_eps")
    fd, diagnosis = out.first_divergence, out.diagnosis
    assert fd is not None and diagnosis is not None
    assert (diagnosis.category, fd.module, fd.argument, fd.direction) == (
        "operator_fault", "Tensor.__add__.0.forward", "input.1", "forward")
    assert fd.difference == "1e-05 on the golden, 1e-06 on the target"
    assert "the dump records none of its outputs (inputs only)" in fd.reason
    assert untranslated([fd.reason, diagnosis.explanation]) == []
