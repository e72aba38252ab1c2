"""What the dump does not show: a choice that rounding decides (top-k routing in a mixture of experts, argmax, a
threshold), whose indices msprobe's statistics record only by Max and Min, and outputs a dump of inputs only does not
record. Each is told from a faulty call, and a faulty call is still named.

The dumps are real msprobe dumps, float32 golden against a bf16 target with no fault unless the test says
otherwise: a small MoE layer whose router swaps one token's two best experts under bf16 rounding
(tests/data/msprobe_moe_router), greedy decoding (msprobe_greedy_decode), a gated MLP whose mask flips
at its threshold (msprobe_threshold_mask), a multinomial draw (msprobe_sampling) and an MLP dumped with
data_mode input (msprobe_inputs_only); each folder's README says how it was made.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from recorded_dumps import compare_recorded, untranslated

from acc_agent.models.compare import CompareDumpsOutput
from acc_agent.models.diagnosis import Diagnosis, FirstDivergence
from acc_agent.numerics.diagnosis.selection import ChoiceCheck, _axis, index_swaps, threshold_flips

DATA = Path(__file__).parent / "data"
MOE = DATA / "msprobe_moe_router"


def _run(folder: Path, target: str = "target") -> tuple[FirstDivergence, Diagnosis, CompareDumpsOutput]:
    """compare_dumps on ``folder/golden`` and ``folder/<target>``; every sentence must have its Chinese form."""
    out = compare_recorded(folder, target)
    assert out.diagnosis is not None and out.first_divergence is not None
    assert untranslated([out.diagnosis.explanation, out.first_divergence.reason, *out.diagnosis.next_actions]) == []
    return out.first_divergence, out.diagnosis, out


def test_a_swapped_choice_is_checked_against_the_inputs_difference_on_tensors() -> None:
    fd, diag, out = _run(MOE / "tensor")
    assert diag.category == "precision_accumulation"
    assert (fd.module, fd.name) == ("Torch.topk.0.forward", "Torch.topk.0.forward.output.1")
    d = diag.details
    assert (d["choices_differing"], d["choices"]) == (1, 64)
    gap, diff = d["largest_gap"], d["input_difference"]
    assert isinstance(gap, float) and isinstance(diff, float) and 0.0 < gap <= 2 * diff
    assert "at 1 of 64 positions (output.1)" in fd.reason and "rounding decides the choice" in fd.reason
    assert not any("tensor mode" in a for a in diag.next_actions)  # it was measured: no re-dump asked for
    assert any("float32" in a for a in diag.next_actions)
    assert out.verdict == "fail"  # the calls after it differ: that is reported, with its cause


def test_a_choice_rounding_does_not_explain_stays_a_fault_of_the_call() -> None:
    fd, diag, _ = _run(MOE / "tensor", "target_topk_wrong")
    assert (diag.category, fd.module) == ("operator_fault", "Torch.topk.0.forward")
    assert "selection_call" not in diag.details
    d = diag.details
    # two choices differ: one a near-tie that rounding swaps (as in the clean target), one the bug
    assert (d["choices_differing"], d["choices"], d["choices_unexplained"]) == (2, 64, 1)
    gap, diff = d["largest_gap"], d["input_difference"]
    assert isinstance(gap, float) and isinstance(diff, float) and gap > 2 * diff
    assert fd.reason.startswith("Torch.topk.0.forward chooses other elements than the golden's at 2 of 64 positions")
    assert fd.reason.endswith("rounding cannot swap them")
    assert diag.explanation.startswith("The call chose otherwise, not rounding: ")


def test_on_statistics_the_swap_shows_as_another_row_count_after_the_choice() -> None:
    fd, diag, _ = _run(MOE / "stats")
    assert (diag.category, fd.module, fd.enters_through) == ("precision_accumulation", "Torch.topk.0.forward",
                                                              "operator")
    assert diag.details["shows_at"] == "Functional.linear.3.forward.input.0"
    assert diag.details["row_counts"] == {"golden": 35, "target": 36}
    assert "holds 36 rows on the target and 35 on the golden" in fd.reason
    assert "only Max and Min of integer and bool tensors" in diag.explanation
    assert any("tensor mode" in a for a in diag.next_actions)


def test_in_a_training_step_the_rows_picked_are_not_taken_for_a_weight() -> None:
    # in a training forward a tensor no dumped call made needs a gradient, like a weight
    fd, diag, _ = _run(MOE / "stats_train")
    assert (diag.category, fd.module) == ("precision_accumulation", "Torch.topk.0.forward")
    assert diag.details["row_counts"] == {"golden": 35, "target": 36}
    assert not any("checkpoint" in a for a in diag.next_actions)


def test_rows_dropped_while_the_choice_has_exact_inputs_stay_a_fault_where_they_enter() -> None:
    fd, diag, _ = _run(MOE / "stats_token_dropped")
    assert (diag.category, fd.module, fd.enters_through, fd.argument) == (
        "operator_fault", "Functional.linear.2.forward", "argument", "input.0")
    assert "selection_call" not in diag.details
    assert "precision level" not in diag.explanation  # the router's inputs are exact: no hint of rounding


def test_at_level_l0_the_rows_picked_by_undumped_code_get_a_hint_not_a_verdict() -> None:
    # msprobe records modules only: the choice itself is in no dump, so the answer stays where the rows enter
    fd, diag, _ = _run(MOE / "stats_l0")
    assert (diag.category, fd.module, fd.argument) == ("operator_fault", "Module.experts.1.Linear.forward.0", "input.0")
    assert "the two sides recorded other shapes" in fd.reason
    assert "holds 36 rows on the target and 35 on the golden, and every tensor before it differs only at a " \
           "precision level" in diag.explanation
    assert diag.next_actions[0].startswith("Dump at level mix (or L1)")


def test_on_md5_the_differing_digest_of_the_choice_is_not_called_a_mismatch() -> None:
    fd, diag, _ = _run(MOE / "md5")
    assert (diag.category, fd.name) == ("precision_accumulation", "Torch.topk.0.forward.output.1")
    assert "md5 digests tell only that the choices differ" in diag.explanation


def test_the_choice_axis_is_read_from_the_shapes_or_the_dim_given() -> None:
    assert _axis((64, 3), (64, 1), None) == 1  # topk(k=1) over the last axis
    assert _axis((64, 3), (64,), None) == 1  # argmax(dim=-1) without keepdim
    assert _axis((4, 5, 6), (4, 2, 6), None) == 1
    assert _axis((4, 5, 6), (4, 5, 6), 1) == 1  # sort: every axis fits, the dim given decides
    assert _axis((4, 5, 6), (4, 5, 6), -1) == 2
    assert _axis((4, 5), (3, 5), 1) is None  # the dim given does not fit the shapes
    assert _axis((), (), None) is None


def test_a_mild_jump_fed_by_integers_a_choice_made_is_not_called_a_faulty_call() -> None:
    # greedy decoding in bf16: the argmax ids of step 1 feed step 2, and statistics show only their Max and Min
    fd, diag, _ = _run(DATA / "msprobe_greedy_decode")
    assert (diag.category, fd.module) == ("precision_accumulation", "Torch.argmax.0.forward")
    assert diag.details["selection_unseen_through"] == "Functional.embedding.1.forward.input.0"
    assert diag.details["shows_at"] == "Functional.gelu.1.forward.output.0"
    assert "need not be at fault" in diag.explanation and "only just" in fd.reason


def test_a_random_draw_is_not_taken_for_a_choice_rounding_decides() -> None:
    fd, diag, _ = _run(DATA / "msprobe_sampling")
    assert (diag.category, fd.module) == ("operator_fault", "Torch.multinomial.0.forward")
    assert "selection_call" not in diag.details
    assert any("a random operator is not a migration fault" in a for a in diag.next_actions)
    assert "(md5 differs; integer, bool and reordered tensors must match exactly)" in fd.reason


def test_a_mask_rounding_moves_across_its_threshold_is_checked_value_by_value() -> None:
    fd, diag, _ = _run(DATA / "msprobe_threshold_mask")
    assert (diag.category, fd.module) == ("precision_accumulation", "Tensor.__gt__.0.forward")
    assert (diag.details["choices_differing"], diag.details["choices"]) == (2, 2048)
    gap, moved = diag.details["largest_gap"], diag.details["input_difference"]
    assert isinstance(gap, float) and isinstance(moved, float) and 0.0 < gap <= moved
    assert "gives another mask than the golden's at 2 of 2048 positions" in fd.reason


def test_a_mask_flipped_far_from_its_threshold_stays_a_fault_of_the_comparison() -> None:
    fd, diag, _ = _run(DATA / "msprobe_threshold_mask", "target_wrong")
    assert (diag.category, fd.module) == ("operator_fault", "Tensor.__gt__.0.forward")
    assert "selection_call" not in diag.details
    unexplained = diag.details["choices_unexplained"]
    assert isinstance(unexplained, int) and unexplained >= 1 and "rounding cannot flip that comparison" in fd.reason


def test_the_checks_measure_swaps_and_flips_and_refuse_what_rounding_cannot_do() -> None:
    x = np.array([[1.0, 0.999, 0.2], [0.5, 0.1, 0.9]])
    moved = x + np.array([[-0.001, 0.001, 0.0], [0.0, 0.0, 0.0]])  # the runs differ by 1e-3 in row 0
    swapped = index_swaps(x, moved, np.array([[0], [2]]), np.array([[1], [2]]), -1)
    assert isinstance(swapped, ChoiceCheck) and (swapped.differing, swapped.total) == (1, 2)
    assert swapped.largest_gap == pytest.approx(0.001) and swapped.input_difference == pytest.approx(0.001)
    # row 1 swaps 0.9 for 0.5 while its inputs are identical: not rounding
    refused = index_swaps(x, moved, np.array([[0], [2]]), np.array([[0], [0]]), -1)
    assert isinstance(refused, ChoiceCheck) and refused.unexplained == 1 and refused.largest_gap == pytest.approx(0.4)
    assert index_swaps(x, moved, np.array([0, 2]), np.array([1, 2]), None) == swapped  # argmax without keepdim
    # what cannot be checked is left alone (True): indices out of range, float indices, shapes that do not fit
    assert index_swaps(x, moved, np.array([[5], [2]]), np.array([[1], [2]]), -1) is True
    assert index_swaps(x, moved, np.array([[0.0], [2.0]]), np.array([[1.0], [2.0]]), -1) is True
    assert index_swaps(x, moved[:1], np.array([[0], [2]]), np.array([[1], [2]]), -1) is True
    nan = x.copy()
    nan[0, 0] = np.nan  # nothing says rounding did it
    with_nan = index_swaps(x, nan, np.array([[0], [2]]), np.array([[1], [2]]), -1)
    assert isinstance(with_nan, ChoiceCheck) and with_nan.unexplained == 1  # nothing then says rounding did it

    h = np.array([0.2499, 0.3, 0.1])
    flipped = threshold_flips(h, h + 0.0002, 0.25, 0.25, h > 0.25, (h + 0.0002) > 0.25)
    assert isinstance(flipped, ChoiceCheck) and flipped.threshold and flipped.differing == 1
    not_rounding = threshold_flips(h, h, 0.25, 0.25, h > 0.25, np.array([True, True, False]))
    assert isinstance(not_rounding, ChoiceCheck) and not_rounding.unexplained == 1
    assert threshold_flips(h, h, 0.25, 0.25, h > 0.25, h > 0.25) is True  # nothing differs


def test_in_a_dump_of_inputs_only_the_call_before_the_first_differing_input_is_named() -> None:
    fd, diag, _ = _run(DATA / "msprobe_inputs_only")
    assert (diag.category, fd.module, fd.enters_through) == ("operator_fault", "Functional.gelu.1.forward", "operator")
    assert fd.name == "Functional.linear.2.forward.input.0"
    assert "this dump records inputs only (msprobe data_mode 'input')" in fd.reason
    assert diag.next_actions[0].startswith("Re-dump with msprobe data_mode 'all'")


def test_a_mild_first_divergence_in_the_backward_of_a_statistics_dump_says_what_statistics_hide() -> None:
    fd, diag, _ = _run(DATA / "msprobe_bf16_embedding_rows_swapped")
    assert fd.direction == "backward" and diag.explanation.startswith("The forward pass agrees; in the backward pass")
    assert "Statistics cannot show a forward difference that moves values to other places" in diag.explanation
