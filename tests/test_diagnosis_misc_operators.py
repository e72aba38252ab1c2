"""Operators the suite had not met: a leaky ReLU, an einsum, a batched matmul, a variance, a distillation loss.

A clean float16 run of a small attention block with a leaky ReLU was an ``operator_fault`` in every dump mode: in
tensor dumps at the leaky ReLU's backward (rounding routes the gradient of inputs near zero at the other slope), in
statistics and md5 dumps at the attention's ``bmm`` backward, where the routed gradient's few wholly other elements
come out of a cancelling product with the Max 8 % off. An einsum given another equation was named at the softmax in
md5 dumps; and two arguments left at their default read "none on the target". Real msprobe fixtures (see the
folder's README).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from recorded_dumps import compare_recorded, untranslated

from acc_agent.numerics.diagnosis.defaults import default_of
from acc_agent.numerics.diagnosis.judge import FLIP_SHARE

DATA = Path(__file__).parent / "data" / "msprobe_misc_operators"


@pytest.mark.parametrize("case", ["fp16_tensor_clean", "fp16_stats_clean", "fp16_md5_clean", "relu_fp16_stats_clean"])
def test_a_gradient_routed_by_rounding_is_not_a_fault(case: str) -> None:
    out = compare_recorded(DATA / case)
    assert out.diagnosis is not None
    assert (out.verdict, out.diagnosis.category, out.first_divergence) == ("pass", "no_layer_fault", None), \
        out.diagnosis.explanation


@pytest.mark.parametrize(("case", "difference"), [
    ("fp16_tensor_slope", "0.2 on the golden, the default 0.01 (not passed) on the target"),
    ("fp32_stats_slope", "0.2 on the golden, the default 0.01 (not passed) on the target"),
])
def test_a_leaky_relu_slope_left_at_its_default_is_the_argument(case: str, difference: str) -> None:
    """The slope passed by position is ``input.1``; the target that leaves it out computes with 0.01. In the float16
    tensor dump the re-check re-computes the target's leaky ReLU from its own input and slope, which it reproduces:
    that must not clear a call whose setting differs from the golden's."""
    out = compare_recorded(DATA / case)
    fd, diagnosis = out.first_divergence, out.diagnosis
    assert fd is not None and diagnosis is not None
    assert (out.verdict, diagnosis.category, fd.module, fd.enters_through, fd.argument) == \
        ("fail", "operator_fault", "Functional.leaky_relu.0.forward", "argument", "input.1"), diagnosis.explanation
    assert fd.difference == difference
    assert untranslated([fd.reason, diagnosis.explanation]) == []


@pytest.mark.parametrize("case", ["fp32_md5_einsum_equation", "bf16_md5_einsum_equation"])
def test_an_einsum_equation_that_transposes_is_the_argument_in_md5_dumps(case: str) -> None:
    """The transposed scores keep every statistic; the float32 digest differs while the einsum's inputs are
    bit-identical (a call that moved values, told to by its equation), and a bfloat16 digest differs from a float32
    one whatever the values, so only the statistics compare it, as in a statistics dump."""
    out = compare_recorded(DATA / case)
    fd, diagnosis = out.first_divergence, out.diagnosis
    assert fd is not None and diagnosis is not None
    assert (diagnosis.category, fd.module, fd.enters_through, fd.argument) == \
        ("operator_fault", "Torch.einsum.0.forward", "argument", "input.0"), diagnosis.explanation
    assert fd.difference == "'bqd,bkd->bqk' on the golden, 'bqd,bkd->bkq' on the target"
    assert untranslated([fd.reason, diagnosis.explanation]) == []


def test_a_variance_left_unbiased_names_the_default() -> None:
    out = compare_recorded(DATA / "bf16_stats_var_unbiased")
    fd = out.first_divergence
    assert fd is not None
    assert (fd.module, fd.enters_through, fd.argument) == ("Tensor.var.0.forward", "argument", "input.unbiased")
    assert fd.difference == "False on the golden, the default True (not passed) on the target"


def test_positional_arguments_read_their_keyword_defaults() -> None:
    assert default_of("leaky_relu", "input.1") == (True, 0.01)
    assert default_of("dropout", "input.1") == (True, 0.5)
    assert default_of("leaky_relu", "input.0") == (False, None)  # the tensor itself
    assert default_of("leaky_relu", "input.7") == (False, None)
    assert default_of("var", "input.1") == (False, None)  # torch.var(x, False) may be the dim or unbiased


def test_the_share_of_inputs_an_error_moves_across_zero() -> None:
    """``FLIP_SHARE * e``: the share of Gaussian values whose sign an independent change of ``e`` times their spread
    flips, measured on torch numerics: a float16 GEMM's output, whose error comes from its inputs' rounding (the
    output's own rounding is relative to each element and flips none)."""
    torch = pytest.importorskip("torch")
    gen = torch.Generator().manual_seed(0)
    x = torch.randn(4096, 256, generator=gen)
    w = torch.randn(256, 256, generator=gen) / 16.0
    exact = x.double() @ w.double()
    carried = x.half().double() @ w.half().double()  # what the inputs' rounding moved, before the output's own
    e = float((carried - exact).norm() / exact.norm())
    flipped = float(((carried > 0) != (exact > 0)).double().mean())
    assert e > 0 and 0.8 * FLIP_SHARE * e <= flipped <= 1.25 * FLIP_SHARE * e
