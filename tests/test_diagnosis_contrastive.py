"""A contrastive dual encoder: labels built otherwise on the target, and a pooling call swapped for another API.

Labels rolled by one (``(arange(n) + 1) % n``) keep the Max and Min msprobe records of an integer tensor, and they
are made by calls only the target makes. The float16 answer named the second loss (the first moves within float16
precision) and the bfloat16 one called it precision accumulation with no call at fault. A ``sum`` where the golden
calls ``mean`` was named with no word on the API. Real msprobe fixtures (see the folder's README).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from recorded_dumps import compare_recorded, untranslated

DATA = Path(__file__).parent / "data" / "msprobe_contrastive"


@pytest.mark.parametrize("case", ["fp16_stats_labels_rolled", "bf16_stats_labels_rolled"])
def test_integers_made_by_calls_only_the_target_makes_are_where_the_runs_part(case: str) -> None:
    out = compare_recorded(DATA / case)
    fd, diagnosis = out.first_divergence, out.diagnosis
    assert fd is not None and diagnosis is not None
    assert (out.verdict, diagnosis.category, fd.module, fd.direction, fd.enters_through, fd.argument) == \
        ("fail", "operator_fault", "Functional.cross_entropy.0.forward", "forward", "argument", "input.1"), \
        diagnosis.explanation
    assert fd.difference is not None and "made on the target by Tensor.__mod__.0.forward" in fd.difference
    assert "holds integers, of which msprobe records only Max and Min, and these agree" in fd.reason
    assert untranslated([fd.reason, diagnosis.explanation, fd.difference]) == []


def test_a_call_of_another_api_says_which() -> None:
    out = compare_recorded(DATA / "bf16_stats_sum_for_mean")
    fd = out.first_divergence
    assert fd is not None and out.diagnosis is not None
    assert (out.diagnosis.category, fd.module, fd.enters_through) == ("operator_fault", "Tensor.sum.0.forward",
                                                                    "operator")
    assert fd.difference == "the target calls sum where the golden calls mean (Tensor.mean.0.forward)"
    assert untranslated([fd.difference]) == []


def test_the_clean_run_passes() -> None:
    out = compare_recorded(DATA / "fp16_stats_clean")
    assert out.diagnosis is not None
    assert (out.verdict, out.diagnosis.category) == ("pass", "no_layer_fault"), out.diagnosis.explanation


def test_a_forward_pass_that_goes_on_on_one_side_is_said_to() -> None:
    """Every forward tensor both runs record agrees; the golden's loss has a second term the target leaves out, so
    the backward starts from another gradient. That was read as calls "before" the first backward tensor with advice
    about eval-mode fast paths; it is the end of one run's forward pass."""
    out = compare_recorded(DATA / "fp32_stats_one_sided_loss")
    fd, diagnosis = out.first_divergence, out.diagnosis
    assert fd is not None and diagnosis is not None
    assert (diagnosis.category, fd.name, fd.direction) == \
        ("layer_mismatch", "Functional.cross_entropy.0.backward.input.0", "backward"), diagnosis.explanation
    assert ("the golden's forward pass goes on after Functional.cross_entropy.0.forward, the last forward call both "
            "runs record, with 4 calls the target does not make (Tensor.t.1.forward .. Tensor.__truediv__.0.forward)"
            ) in fd.reason
    assert diagnosis.details["forward_ends_after"] == "Functional.cross_entropy.0.forward"
    assert untranslated([fd.reason, diagnosis.explanation, *diagnosis.next_actions]) == []
