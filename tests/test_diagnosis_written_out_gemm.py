"""A port that writes a linear layer out as ``torch.addmm(b, x, w.t())`` against a golden ``F.linear(x, w, b)``.

The golden's one call stands for the target's two (``Tensor.t`` then ``Torch.addmm``): they are paired as a region,
``w.t()`` taken into it as the call that makes what addmm takes, so the golden weight pairs with the weight itself.
Before, a clean float32 or bfloat16 target was an ``operator_fault`` at ``Torch.addmm.1.forward`` ("the golden tensor
transposed": the square weight's transposed copy paired with the golden weight); a fault before the last GEMM left it
unpaired (no target call took the golden's values any more), so a sparse GELU fault read as a ``layer_mismatch``
and a 5 % weight in the last layer was blamed on the loss or passed. A target that keeps its weights stored
transposed records no ``Tensor.t``: its weight pairs with the golden's as another API's layout, which is no fault
while the call gives the golden's output and its values are the golden's. The fixtures are real msprobe dumps (see
the folder's README).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from recorded_dumps import compare_recorded, untranslated

DATA = Path(__file__).parent / "data" / "msprobe_addmm_written_out"
CONVENTION = "another API's layout of the same argument"


@pytest.mark.parametrize("folder", ["fp32_tensor_clean", "bf16_tensor_clean"])
def test_the_transposed_copy_addmm_takes_is_no_fault(folder: str) -> None:
    out = compare_recorded(DATA / folder, all_rows=True)
    assert out.diagnosis is not None
    assert (out.verdict, out.diagnosis.category, out.first_divergence) == ("pass", "no_layer_fault", None), \
        out.diagnosis.explanation
    weight = next(r for r in out.rows if r.golden_name == "Functional.linear.1.forward.input.1")
    assert (weight.name, weight.pair_method, weight.status) == ("Tensor.t.1.forward.input.0", "region", "pass")
    assert not [r for r in out.rows if r.name == "Torch.addmm.1.forward.input.2"]  # made inside the region


def test_a_weight_stored_transposed_is_another_apis_layout() -> None:
    out = compare_recorded(DATA / "fp32_tensor_pretransposed_clean", all_rows=True)
    assert out.diagnosis is not None
    assert (out.verdict, out.diagnosis.category, out.first_divergence) == ("pass", "no_layer_fault", None), \
        out.diagnosis.explanation
    weight = next(r for r in out.rows if r.name == "Torch.addmm.1.forward.input.2")
    assert weight.golden_name == "Functional.linear.1.forward.input.1" and weight.pair_method == "region"
    assert weight.status == "pass" and weight.message.startswith(CONVENTION)
    assert not untranslated([weight.message])


def test_a_weight_that_is_really_wrong_is_still_named() -> None:
    out = compare_recorded(DATA / "fp32_tensor_fc2_scaled")
    fd, diagnosis = out.first_divergence, out.diagnosis
    assert fd is not None and diagnosis is not None
    assert (out.verdict, diagnosis.category, fd.module, fd.argument, fd.enters_through) == \
        ("fail", "operator_fault", "Tensor.t.1.forward", "input.0", "argument"), diagnosis.explanation
    assert fd.difference is not None and "1.05x the golden's" in fd.difference
    assert "stands for the golden's Functional.linear.1.forward" in diagnosis.explanation
    assert not untranslated([diagnosis.explanation])
    assert not [r for r in out.rows if r.message.startswith(CONVENTION)]


def test_a_stored_transposed_weight_with_other_values_is_named() -> None:
    """bfloat16: the GEMM's output, 5 % weight and all, stays within the budget of its dtype, so the output alone
    would call the weight a layout; its Norm moved 5 %, which no layout does."""
    out = compare_recorded(DATA / "bf16_tensor_pretransposed_fc2_scaled")
    fd, diagnosis = out.first_divergence, out.diagnosis
    assert fd is not None and diagnosis is not None
    assert (out.verdict, diagnosis.category, fd.module, fd.argument) == \
        ("fail", "operator_fault", "Torch.addmm.1.forward", "input.2"), diagnosis.explanation
    assert fd.difference is not None and "transposed" in fd.difference and "1.05x" in fd.difference
    assert not [r for r in out.rows if r.message.startswith(CONVENTION)]


def test_a_fault_before_the_last_gemm_is_the_faulty_call() -> None:
    """The last addmm takes the faulty GELU's output: it pairs with the golden's linear through that GELU's pairing
    (dataflow, not values), so the difference is seen to go on into the network."""
    out = compare_recorded(DATA / "fp16_tensor_gelu_sparse", all_rows=True)
    fd, diagnosis = out.first_divergence, out.diagnosis
    assert fd is not None and diagnosis is not None
    assert (out.verdict, diagnosis.category, fd.module, fd.enters_through) == \
        ("fail", "operator_fault", "Functional.gelu.1.forward", "operator"), diagnosis.explanation
    last = next(r for r in out.rows if r.name == "Torch.addmm.2.forward.input.1")
    assert (last.golden_name, last.pair_method) == ("Functional.linear.2.forward.input.0", "region")


def test_a_wrong_last_weight_is_named_from_statistics() -> None:
    """bfloat16 statistics, the last weight (not square) 5 % too large: it was a pass (the last call unpaired)."""
    out = compare_recorded(DATA / "bf16_stats_fc3_scaled")
    fd, diagnosis = out.first_divergence, out.diagnosis
    assert fd is not None and diagnosis is not None
    assert (out.verdict, diagnosis.category, fd.module, fd.argument, fd.enters_through) == \
        ("fail", "operator_fault", "Tensor.t.2.forward", "input.0", "argument"), diagnosis.explanation
