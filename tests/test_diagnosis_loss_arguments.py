"""A loss called with another argument on the target, whose forward output stays within bfloat16 rounding.

``F.cross_entropy(..., label_smoothing=0.1)`` on the target moves the bfloat16 loss by about one rounding, so the
forward pass agrees, while the gradient of the logits is 0.9x the golden's. msprobe records the cross-entropy's
backward output as another tensor on each side (the golden's inner log-softmax gradient, two 0-d tensors on the
target), so the call's own backward output is not judged and the change first shows where the last linear's backward
receives the gradient. That was named as the root ("the difference enters Functional.linear.2.backward through
input.0"); the dataflow says the gradient comes from the loss, whose argument differs. Real msprobe fixtures (see
the folder's README).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from recorded_dumps import compare_recorded, untranslated

DATA = Path(__file__).parent / "data" / "msprobe_loss_arguments"


@pytest.mark.parametrize("case", ["bf16_stats_label_smoothing", "bf16_md5_label_smoothing"])
def test_a_loss_argument_set_on_the_target_only_is_the_root(case: str) -> None:
    out = compare_recorded(DATA / case)
    fd, diagnosis = out.first_divergence, out.diagnosis
    assert fd is not None and diagnosis is not None
    assert (out.verdict, diagnosis.category, fd.module, fd.direction, fd.enters_through, fd.argument) == \
        ("fail", "operator_fault", "Functional.cross_entropy.0.forward", "forward", "argument",
         "input.label_smoothing"), diagnosis.explanation
    assert fd.difference == "the default 0.0 (not passed) on the golden, 0.1 on the target"
    # the gradient the loss sends on is named as where it shows, and the sentence says so in Chinese too
    assert "the gradient its backward sends on (Functional.linear.2.backward.input.0)" in fd.reason
    assert untranslated([fd.reason, diagnosis.explanation]) == []


def test_labels_statistics_cannot_show_are_named_as_unseen() -> None:
    """One label changed inside the labels' range: msprobe's statistics of the int64 labels (Max and Min only) agree,
    and the bfloat16 loss moves by one rounding, so the first thing beyond precision is in the backward pass. The
    explanation says which integer input the statistics cannot vouch for."""
    out = compare_recorded(DATA / "bf16_stats_label_changed")
    fd, diagnosis = out.first_divergence, out.diagnosis
    assert fd is not None and diagnosis is not None and fd.direction == "backward"
    assert ("Nor can they show integer inputs that changed (labels, indices, masks): of "
            "Functional.cross_entropy.0.forward.input.1 msprobe records only Max and Min, which agree.") \
        in diagnosis.explanation
    assert untranslated([diagnosis.explanation]) == []
