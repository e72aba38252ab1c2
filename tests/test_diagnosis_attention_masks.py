"""A mask filled with ``torch.finfo(dtype).min``: each run passes its own float type's minimum, which msprobe's scalar
rule flags (-3.40282e38 against -3.38953e38). Every tensor of the clean bfloat16 run is within its precision, so the
run passes and the summary says why, in English and Chinese; the CSV keeps msprobe's Result. Before, the verdict was
``fail`` beside a ``no_layer_fault`` diagnosis. Real msprobe fixtures (see the folder's README)."""

from __future__ import annotations

from pathlib import Path

import pytest
from recorded_dumps import compare_recorded, untranslated

DATA = Path(__file__).parent / "data" / "msprobe_attention_masks"


@pytest.mark.parametrize(("case", "fill"), [("bf16_stats_finfo_clean", "-3.38953e+38"),
                                            ("bf16_md5_finfo_clean", "-3.38953e+38"),
                                            ("fp16_stats_finfo_clean", "-65504"), ("fp16_tensor_finfo_clean", None)])
def test_each_float_types_own_minimum_as_a_mask_fill_passes(case: str, fill: str | None) -> None:
    """In float16 the fill (-65504) also moves every statistic of the filled scores: they measure the two types'
    limits, not the data, so no error is measured there; the softmax after it is compared as usual. A tensor dump
    compares no non-tensor argument (as msprobe), but the diagnosis reads them: the fill is the same setting there."""
    out = compare_recorded(DATA / case)
    assert out.diagnosis is not None
    assert (out.verdict, out.diagnosis.category, out.first_divergence) == ("pass", "no_layer_fault", None), \
        out.diagnosis.explanation
    if fill is None:
        return
    assert (f"1 non-tensor argument (e.g. Tensor.masked_fill.0.forward.input.2: target {fill}, golden "
            "-3.40282e+38) is each side's own float type's limit") in out.summary
    assert untranslated([out.summary]) == []


def test_an_additive_mask_one_diagonal_off_is_the_argument_at_fault() -> None:
    """An additive -inf mask built with ``triu(..., diagonal=0)`` instead of 1: its Min, Mean and Norm (-inf, -inf,
    inf) are the same on both sides, and the tensors hold Inf at other positions, which msprobe's metrics leave N/A.
    Before, the mask was not measured and the attention's output was named as the operator at fault."""
    out = compare_recorded(DATA / "fp16_tensor_sdpa_additive_mask_off")
    fd, diagnosis = out.first_divergence, out.diagnosis
    assert fd is not None and diagnosis is not None
    assert (out.verdict, fd.module, fd.enters_through, fd.argument) == \
        ("fail", "Functional.scaled_dot_product_attention.0.forward", "argument", "kwargs.attn_mask"), \
        diagnosis.explanation
    assert fd.difference == ("Inf/NaN at other positions (21 on the target, 15 on the golden): 6 of 36 elements differ "
                             "(16.7%); the mask equals the golden one shifted by -1 column(s): an off-by-one in how it "
                             "is built")
    assert untranslated([fd.difference, fd.reason, diagnosis.explanation]) == []


def test_nan_from_a_fully_masked_row_is_not_called_nan_from_finite_inputs() -> None:
    """The same mask one diagonal off, added before a softmax, in a statistics dump: the mask's statistics cannot show
    it, and the softmax is the first call with NaN. Its input holds -inf on both sides, so the NaN is not "from finite
    inputs" (as it read before): a softmax over a slice that is -inf everywhere."""
    out = compare_recorded(DATA / "bf16_stats_additive_mask_off")
    fd, diagnosis = out.first_divergence, out.diagnosis
    assert fd is not None and diagnosis is not None
    assert (out.verdict, fd.module, fd.enters_through) == ("fail", "Functional.softmax.0.forward", "overflow")
    assert "from finite" not in fd.reason + diagnosis.explanation
    assert ("from inputs whose Inf/NaN the golden's hold too (Functional.softmax.0.forward.input.0: recorded Min -Inf, "
            "Mean -Inf, Norm Inf on both sides): a softmax over a slice that is -inf everywhere") in fd.reason
    assert untranslated([fd.reason, diagnosis.explanation]) == []
