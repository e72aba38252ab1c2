"""A fused call on one side, the calls it stands for written out on the other, with a fault before or after them.

A fault upstream changes what the fused call takes, so no written-out call takes the same values: the region is
found through the pairing instead (the call that takes the partner of what produced the fused call's input).
Before, the region stayed unpaired and a q projection 5 % off on a quarter of its elements read as a
``layer_mismatch`` ("the final outputs agree") at the right call. And the written-out run's last call is not held
to the bound of a sum: its other operand was made inside the run and has no partner, so a clean bfloat16 target
writing out layer norm was an ``operator_fault`` at its last add, and a GELU fault after it was named there too.
The fixtures are real msprobe dumps (see the folder's README).
"""

from __future__ import annotations

from pathlib import Path

from recorded_dumps import compare_recorded

DATA = Path(__file__).parent / "data" / "msprobe_regions_fault_upstream"


def test_a_fault_before_a_fused_attention_is_the_faulty_call() -> None:
    out = compare_recorded(DATA / "sdpa_stats_q_proj_sparse", all_rows=True)
    fd, diagnosis = out.first_divergence, out.diagnosis
    assert fd is not None and diagnosis is not None
    assert (out.verdict, diagnosis.category, fd.module, fd.direction) == \
        ("fail", "operator_fault", "Functional.linear.0.forward", "forward"), diagnosis.explanation
    fused_input = next(r for r in out.rows if r.name == "Functional.scaled_dot_product_attention.0.forward.input.0")
    assert fused_input.pair_method == "region" and fused_input.golden_name.startswith("Torch.matmul.0.forward.input")


def test_a_clean_written_out_layer_norm_in_bfloat16_passes() -> None:
    out = compare_recorded(DATA / "bf16_layer_norm_written_out_clean")
    assert out.diagnosis is not None
    assert (out.verdict, out.diagnosis.category, out.first_divergence) == ("pass", "no_layer_fault", None), \
        out.diagnosis.explanation


def test_a_fault_after_a_written_out_layer_norm_is_named_there() -> None:
    out = compare_recorded(DATA / "bf16_layer_norm_written_out_gelu_sparse")
    fd, diagnosis = out.first_divergence, out.diagnosis
    assert fd is not None and diagnosis is not None
    assert (out.verdict, diagnosis.category, fd.module) == ("fail", "operator_fault", "Functional.gelu.0.forward"), \
        diagnosis.explanation
