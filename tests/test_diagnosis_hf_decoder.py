"""A Hugging Face style decoder whose causal mask (a ``torch.finfo(dtype).min`` fill added to the scores) is built one
diagonal off on the bfloat16 target, in msprobe's default statistics dump: the mask's statistics cannot show it (its
Mean and Norm overflow on both sides). Real msprobe fixtures (see the folder's README).

Seed 0: the RMS norm's square after the attention was named as an operator fault, its output Norm 4.6 % off while its
input's Norm moved 0.3 %; but the input's largest elements moved 3.8 %, and the Norm of a square follows them. Seed 1:
the attention's ``p @ v`` is the first call beyond precision; the explanation now says that a mask fill before it cannot
be compared."""

from __future__ import annotations

from pathlib import Path

from recorded_dumps import compare_recorded, untranslated

DATA = Path(__file__).parent / "data" / "msprobe_hf_decoder"


def test_a_square_is_held_to_its_inputs_largest_elements_not_their_norm() -> None:
    out = compare_recorded(DATA / "bf16_stats_mask_off_s0", all_rows=True)
    fd, diagnosis = out.first_divergence, out.diagnosis
    assert diagnosis is not None
    assert fd is None or not fd.name.startswith("Tensor.pow."), diagnosis.explanation
    square = next(r for r in out.rows if r.name == "Tensor.pow.1.forward.output.0")
    assert square.norm_rel_diff is not None and square.norm_rel_diff > 0.04  # what was blamed: still there, explained


def test_a_mask_fill_before_the_first_difference_is_named_as_unseen() -> None:
    out = compare_recorded(DATA / "bf16_stats_mask_off_s1")
    fd, diagnosis = out.first_divergence, out.diagnosis
    assert fd is not None and diagnosis is not None and fd.direction == "forward"
    assert ("Before it, Functional.softmax.0.forward.input.0 holds a mask fill on both sides (Min -3.40282e+38 on the "
            "golden, -3.38953e+38 on the target), whose Mean and Norm cannot be compared") in diagnosis.explanation
    assert untranslated([diagnosis.explanation]) == []
