"""A port that writes a linear layer out as ``torch.addmm(b, x, w.t())`` against a golden ``F.linear(x, w, b)``.

The two calls are paired as a region (another API for the same computation). addmm takes the weight transposed, and
the middle layer's weight is square, so its transposed copy has the golden weight's shape and values: before, it read
as "the golden tensor transposed: a layout or checkpoint-conversion error" and a clean float32 or bfloat16 target was
an ``operator_fault`` at ``Torch.addmm.1.forward``. An argument of a region-paired call whose outputs agree with the
golden's is that API's convention; a weight that is really wrong still changes the output and is still named. The
fixtures are real msprobe dumps (see the folder's README).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from recorded_dumps import compare_recorded, untranslated

DATA = Path(__file__).parent / "data" / "msprobe_addmm_written_out"
CONVENTION = "another API's layout of the same argument"


@pytest.mark.parametrize("folder", ["fp32_tensor_clean", "bf16_tensor_clean"])
def test_the_transposed_operand_addmm_takes_is_no_fault(folder: str) -> None:
    out = compare_recorded(DATA / folder)
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
    assert not [r for r in out.rows if r.message.startswith(CONVENTION)]
