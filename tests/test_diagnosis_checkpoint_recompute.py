"""Activation checkpointing on the target only: its backward pass runs a block's forward calls again.

msprobe records the re-run calls inside the backward pass under new call numbers; they have no partner in the golden.
The comparison must pair the rest as before, and say what the unmatched calls are instead of leaving 27 unmatched
rows unexplained. Real msprobe fixtures (see the folder's README).
"""

from __future__ import annotations

from pathlib import Path

from recorded_dumps import compare_recorded, untranslated

DATA = Path(__file__).parent / "data" / "msprobe_checkpoint_recompute"


def test_calls_recomputed_in_the_backward_pass_are_named_and_the_run_passes() -> None:
    out = compare_recorded(DATA / "fp16_stats_clean")
    diagnosis = out.diagnosis
    assert diagnosis is not None
    assert (out.verdict, diagnosis.category) == ("pass", "no_layer_fault"), diagnosis.explanation
    assert diagnosis.details["target_recomputed_calls"][0] == "Functional.linear.6.forward"
    assert len(diagnosis.details["target_recomputed_calls"]) == 9
    assert ("The target records 9 forward calls during its backward pass (Functional.linear.6.forward .. "
            "Functional.leaky_relu.1.forward) that the golden does not: activation checkpointing") in \
        diagnosis.judgement_note
    sentence = diagnosis.judgement_note[diagnosis.judgement_note.index("The target records 9"):]
    assert untranslated([sentence]) == []


def test_a_fault_in_the_checkpointed_block_is_found_at_its_first_run() -> None:
    out = compare_recorded(DATA / "bf16_md5_softmax_sparse")
    fd, diagnosis = out.first_divergence, out.diagnosis
    assert fd is not None and diagnosis is not None
    assert (diagnosis.category, fd.module, fd.direction) == ("operator_fault", "Torch.softmax.0.forward", "forward")
    assert "target_recomputed_calls" in diagnosis.details
