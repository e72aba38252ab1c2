"""An attention block with a causal -inf mask, in bfloat16 against float32, with the faults a port brings in: another
activation, a GELU approximation, a softmax kernel off on part of its elements. Real msprobe fixtures (see the
folder's README).

Before: the clean statistics pair failed at the mask (msprobe's dtype rule makes every row an error, and a row whose
golden holds -inf was then measured as not comparable); ``F.silu`` for ``F.gelu`` passed in a tensor dump (re-computing
the target's silu from its own inputs gives its output, which cleared it); ``approximate="tanh"`` passed (the golden
does not pass the argument, and the difference is below a bfloat16 rounding); the softmax fault was named in the
backward pass as a layout mismatch.
"""

from __future__ import annotations

from pathlib import Path

from recorded_dumps import compare_recorded, untranslated

DATA = Path(__file__).parent / "data" / "msprobe_attention_block"


def test_a_clean_block_whose_mask_holds_minus_infinity_passes() -> None:
    out = compare_recorded(DATA / "bf16_stats_clean")
    assert out.diagnosis is not None
    assert (out.verdict, out.diagnosis.category, out.first_divergence) == ("pass", "no_layer_fault", None), \
        out.diagnosis.explanation


def test_another_activation_is_named_though_its_own_kernel_is_right() -> None:
    out = compare_recorded(DATA / "bf16_tensor_silu_for_gelu")
    fd, diagnosis = out.first_divergence, out.diagnosis
    assert fd is not None and diagnosis is not None
    assert (out.verdict, diagnosis.category, fd.module, fd.enters_through) == \
        ("fail", "operator_fault", "Functional.silu.0.forward", "operator"), diagnosis.explanation
    assert fd.difference is not None
    assert fd.difference.startswith("the target calls silu where the golden calls gelu (Functional.gelu.0.forward); ")
    assert untranslated([fd.difference, diagnosis.explanation]) == []


def test_an_approximation_the_golden_does_not_ask_for_is_named() -> None:
    out = compare_recorded(DATA / "bf16_stats_gelu_tanh")
    fd, diagnosis = out.first_divergence, out.diagnosis
    assert fd is not None and diagnosis is not None
    assert (out.verdict, fd.module, fd.enters_through, fd.argument) == \
        ("fail", "Functional.gelu.0.forward", "argument", "input.approximate"), diagnosis.explanation
    assert fd.difference == "the default 'none' (not passed) on the golden, 'tanh' on the target"
    assert "so the numbers here hide the change" in fd.reason
    assert untranslated([fd.reason, diagnosis.explanation, *diagnosis.next_actions]) == []


def test_a_softmax_whose_probabilities_do_not_sum_to_one_is_named() -> None:
    out = compare_recorded(DATA / "bf16_stats_softmax_sparse")
    fd, diagnosis = out.first_divergence, out.diagnosis
    assert fd is not None and diagnosis is not None
    assert (out.verdict, diagnosis.category, fd.module, fd.direction) == \
        ("fail", "operator_fault", "Functional.softmax.0.forward", "forward"), diagnosis.explanation
    assert "holds probabilities that sum to one along the softmax axis (Mean 0.166667 expected)" in fd.reason
    # the scores hold the -inf fill, but no mask explains a softmax whose rows do not sum to one: no caveat about it
    assert "holds a mask fill" not in diagnosis.explanation
    assert untranslated([fd.reason, diagnosis.explanation]) == []


def test_the_softmax_fault_on_one_rank_is_named_there_without_a_mask_caveat() -> None:
    """Two ranks joined by an all_reduce, the softmax fault on rank 1 only. The softmax's scores hold the -inf fill,
    and a caveat that a mask built otherwise cannot be seen there was added; but no mask explains a softmax whose rows
    do not sum to one."""
    out = compare_recorded(DATA / "two_ranks_bf16_stats_softmax_sparse")
    fd, diagnosis = out.first_divergence, out.diagnosis
    assert fd is not None and diagnosis is not None
    assert (out.verdict, diagnosis.category, fd.module, fd.rank) == \
        ("fail", "operator_fault", "Functional.softmax.0.forward", "rank1"), diagnosis.explanation
    assert "holds probabilities that sum to one along the softmax axis" in fd.reason
    assert "holds a mask fill" not in diagnosis.explanation
