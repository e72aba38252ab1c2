"""A fused attention against the run of calls written out for it, where only the backward shows the difference.

The target's scale 1/32 (for SDPA's 1/sqrt(32)) leaves near-uniform probabilities within precision, and the
gradients the run sends back to the key or value projection differ. The answer named that gradient as "a tensor no
dumped call produced" with nothing pointing at the run, whose constants hold the scale. Real msprobe fixtures (see
the folder's README).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from recorded_dumps import compare_recorded, untranslated

DATA = Path(__file__).parent / "data" / "msprobe_sdpa_written_out"


@pytest.mark.parametrize(("case", "projection"), [("bf16_stats_scale", "Functional.linear.2"),
                                                  ("fp16_stats_scale", "Functional.linear.3")])
def test_a_gradient_the_written_out_run_sends_back_points_at_the_run(case: str, projection: str) -> None:
    out = compare_recorded(DATA / case)
    fd, diagnosis = out.first_divergence, out.diagnosis
    assert fd is not None and diagnosis is not None
    assert (out.verdict, fd.module, fd.direction, fd.enters_through) == \
        ("fail", f"{projection}.backward", "backward", "argument"), diagnosis.explanation
    assert ("comes back from the backward of the target's written-out run Torch.einsum.0.forward .. "
            "Torch.bmm.0.forward (4 calls), which stands for the golden's fused "
            "Functional.scaled_dot_product_attention.0.forward") in diagnosis.explanation
    assert "0.03125 (Tensor.__mul__.0.forward input.1)" in diagnosis.explanation
    assert untranslated([fd.reason, diagnosis.explanation]) == []


def test_the_value_gradient_names_the_call_that_made_it() -> None:
    """msprobe records the run's bmm backward, which only the target makes: the value gradient is its output."""
    out = compare_recorded(DATA / "fp16_stats_scale")
    fd = out.first_divergence
    assert fd is not None
    assert "(on the target the output of Torch.bmm.0.backward, a call the golden does not make)" in fd.reason


def test_the_clean_written_out_run_passes() -> None:
    out = compare_recorded(DATA / "fp16_stats_clean")
    assert out.diagnosis is not None
    assert (out.verdict, out.diagnosis.category) == ("pass", "no_layer_fault"), out.diagnosis.explanation
