"""The first paired tensor differs after calls only one run recorded: the runs executed different code, which says
nothing about the data they were fed (real msprobe dumps, see tests/data/msprobe_train_vs_eval_fast_path)."""

from __future__ import annotations

from pathlib import Path

from recorded_dumps import compare_recorded, untranslated

DATA = Path(__file__).parent / "data"


def test_a_golden_in_eval_mode_against_a_target_in_train_mode_is_not_an_input_mismatch() -> None:
    """The golden's transformer layers ran on a fast path msprobe does not record; the target's 22 calls before the
    head pair with nothing. Before this rule the answer was input_mismatch: "the two runs were not fed the same data"."""
    out = compare_recorded(DATA / "msprobe_train_vs_eval_fast_path")
    fd, diag = out.first_divergence, out.diagnosis
    assert fd is not None and diag is not None
    assert diag.category == "layer_mismatch", diag.explanation
    assert fd.name == "Functional.linear.4.forward.input.0"
    assert fd.enters_through != "data_input"
    before = diag.details["unpaired_target_calls_before"]
    assert isinstance(before, list) and before[0] == "Functional.multi_head_attention_forward.0.forward"
    assert len(before) == 12 and diag.details["unpaired_golden_calls_before"] == []
    assert "the target records 22 calls before it that the golden does not" in diag.explanation
    assert any("model.eval()" in a for a in diag.next_actions)
    assert untranslated([diag.explanation, fd.reason, *diag.next_actions]) == []
