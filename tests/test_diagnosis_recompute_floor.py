"""A re-computation's allowance below float16's smallest normal number (real msprobe dumps, see
tests/data/msprobe_layer_norm_fp16_subnormal_gradient)."""

from __future__ import annotations

from pathlib import Path

from recorded_dumps import compare_recorded

DATA = Path(__file__).parent / "data" / "msprobe_layer_norm_fp16_subnormal_gradient"


def test_a_float16_gradient_in_the_subnormal_range_is_judged_by_the_subnormals_spacing() -> None:
    """A clean float16 layer norm backward whose input gradient is at most 3.1e-5: re-computed from the target's own
    tensors it is 2.2 unit roundoffs off, which float16's subnormal spacing explains. Before, an operator_fault."""
    out = compare_recorded(DATA)
    assert out.diagnosis is not None
    assert (out.verdict, out.diagnosis.category, out.first_divergence) == ("pass", "no_layer_fault", None), \
        out.diagnosis.explanation
