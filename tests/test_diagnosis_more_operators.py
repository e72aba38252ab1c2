"""Group norms, instance norms, transposed convolutions, average pools, interpolations and products in low-precision
targets: a faulty call found in the forward pass, a weight of ones not blamed, an attention's scale set on one side
only shown by its own backward, and a patch embedding whose difference carries on called a fault.

The fixtures are real msprobe dumps (see each folder's README). Before these rules a bfloat16 tensor dump named the
faulty group norm's, instance norm's, transposed convolution's, average pool's or interpolation's backward, or nothing
at all (none could be re-computed from its inputs, and its forward error stays under a per-tensor bfloat16 budget),
and a faulty product's backward a ``layer_mismatch``; a float16 statistics dump said the fault entered through the
group norm's weight, 32 ones whose recorded Norm float16 rounds; an attention whose ``scale`` the target set (the
golden left it at its default) was a ``layer_mismatch`` at its backward; and so was a patch embedding with its kernel
transposed, because the loss agreed.
"""

from __future__ import annotations

import itertools
from pathlib import Path
from types import SimpleNamespace
from typing import TYPE_CHECKING, cast

import numpy as np
import pytest
from recorded_dumps import compare_recorded, untranslated

if TYPE_CHECKING:
    from acc_agent.numerics.diagnosis.probes import Args

DATA = Path(__file__).parent / "data" / "msprobe_group_norm"


@pytest.mark.parametrize("folder", ["fp16_stats_clean", "bf16_tensor_clean"])
def test_clean_group_norm_targets_pass(folder: str) -> None:
    out = compare_recorded(DATA / folder)
    assert out.diagnosis is not None
    assert (out.verdict, out.diagnosis.category, out.first_divergence) == ("pass", "no_layer_fault", None), \
        out.diagnosis.explanation


@pytest.mark.parametrize(("kernel", "stride", "padding", "output_padding", "groups", "dilation"), [
    (k, s, p, op, g, d) for k, s, p, op, g, d in itertools.product([1, 2, 3], [1, 2, 3], [0, 1], [0, 1], [1, 2], [1, 2])
    if op < max(s, d) and p <= d * (k - 1)])
def test_conv_transpose_recomputed_as_torch_computes_it(kernel: int, stride: int, padding: int, output_padding: int,
                                                       groups: int, dilation: int) -> None:
    torch = pytest.importorskip("torch")
    from acc_agent.numerics.diagnosis.probes import _recompute_conv_transpose

    rng = np.random.default_rng(3)
    x, w, b = rng.standard_normal((2, 4, 3, 4)), rng.standard_normal((4, 3, kernel, kernel)), rng.standard_normal(3 * groups)
    y = torch.nn.functional.conv_transpose2d(torch.tensor(x), torch.tensor(w), torch.tensor(b), stride, padding,
                                             output_padding, groups, dilation).numpy()
    tensors = {"0": x, "1": w, "2": b}
    scalars = {"3": stride, "4": padding, "5": output_padding, "6": groups, "7": dilation}
    args = SimpleNamespace(tensor=lambda *keys: next((tensors[k] for k in keys if k in tensors), None),
                           output=lambda: y, scalar=lambda *keys: next((scalars[k] for k in keys if k in scalars), None))
    got = _recompute_conv_transpose(cast("Args", args))
    assert got is not None
    assert float(np.max(np.abs(got[1] - y))) < 1e-10


@pytest.mark.parametrize(("folder", "call"), [
    ("msprobe_instance_norm_bf16", "Functional.instance_norm.0.forward"),
    ("msprobe_conv_transpose_bf16", "Functional.conv_transpose2d.0.forward"),
    ("msprobe_avg_pool_bf16", "Functional.avg_pool2d.0.forward"),
    ("msprobe_interpolate_bf16", "Functional.interpolate.0.forward"),
    ("msprobe_exp_bf16", "Torch.exp.0.forward")])
def test_recomputed_calls_clean_and_faulty_in_bfloat16(folder: str, call: str) -> None:
    """An instance norm (each sample's channel normalised over its positions), a transposed convolution (each input
    element scattering its kernel-weighted copy), an average pool, a bilinear interpolation and an exp, re-computed in
    float64 from the target's own input and arguments: the clean ones pass, a sparse fault under the per-tensor bfloat16
    budget is named at its forward call, not at its backward."""
    clean = compare_recorded(Path(__file__).parent / "data" / folder / "clean")
    assert clean.diagnosis is not None
    assert (clean.verdict, clean.diagnosis.category) == ("pass", "no_layer_fault"), clean.diagnosis.explanation
    out = compare_recorded(Path(__file__).parent / "data" / folder / "sparse")
    diag, fd = out.diagnosis, out.first_divergence
    assert diag is not None and fd is not None
    assert (diag.category, fd.module, fd.direction) == ("operator_fault", call, "forward"), diag.explanation
    assert "re-computed in float64" in fd.reason


@pytest.mark.parametrize("api", ["exp", "exp2", "expm1", "log", "log2", "log10", "log1p", "sqrt", "rsqrt", "reciprocal",
                                 "square", "abs", "neg", "sin", "cos"])
def test_elementwise_functions_recomputed_as_torch_computes_them(api: str) -> None:
    torch = pytest.importorskip("torch")
    from acc_agent.numerics.diagnosis.probes import _recompute_elementwise

    x = np.random.default_rng(2).random((3, 5)) + 0.1  # positive: every function is defined
    y = getattr(torch, api)(torch.tensor(x)).numpy()
    fake = SimpleNamespace(tensor=lambda *keys: x if "0" in keys else None, output=lambda: y,
                           scalar=lambda *keys: None)
    got = _recompute_elementwise(cast("Args", fake), f"Torch.{api}.0.forward")
    assert got is not None
    assert float(np.max(np.abs(got[1] - y.ravel()))) < 1e-12


@pytest.mark.parametrize(("nd", "mode", "align", "size"), [
    (nd, mode, align, size)
    for nd, mode, align, size in itertools.product([1, 2, 3], ["nearest", "nearest-exact", "linear", "bilinear",
                                                               "trilinear"], [None, True, False], [2.0, 1.5, 0.5, 7])
    if {"linear": 1, "bilinear": 2, "trilinear": 3}.get(mode, nd) == nd and not (mode.startswith("nearest") and align is not None)])
def test_interpolate_recomputed_as_torch_computes_it(nd: int, mode: str, align: bool | None, size: float) -> None:
    """``size`` 7 is an output size; a float is a scale factor."""
    torch = pytest.importorskip("torch")
    from acc_agent.numerics.diagnosis.probes import _recompute_interpolate

    x = np.random.default_rng(9).standard_normal((2, 3) + (5,) * nd)
    scalars: dict[str, object] = {"mode": mode, "align_corners": align}
    if isinstance(size, float):
        scalars["scale_factor"] = size
        y = torch.nn.functional.interpolate(torch.tensor(x), scale_factor=size, mode=mode, align_corners=align).numpy()
    else:
        y = torch.nn.functional.interpolate(torch.tensor(x), size=(size,) * nd, mode=mode, align_corners=align).numpy()
    fake = SimpleNamespace(tensor=lambda *keys: x if "0" in keys else None, output=lambda: y,
                           scalar=lambda *keys: next((scalars[k] for k in keys if k in scalars), None))
    got = _recompute_interpolate(cast("Args", fake))
    assert got is not None
    assert float(np.max(np.abs(got[1] - y))) < 1e-10


@pytest.mark.parametrize(("nd", "kernel", "stride", "padding", "include_pad", "divisor"), [
    case for case in itertools.product([1, 2, 3], [1, 2, 3], [None, 1, 2], [0, 1], [True, False], [None, 3])
    if not (case[0] == 1 and case[5]) and 2 * case[3] <= case[1]])
def test_avg_pool_recomputed_as_torch_computes_it(nd: int, kernel: int, stride: int | None, padding: int,
                                                  include_pad: bool, divisor: int | None) -> None:
    torch = pytest.importorskip("torch")
    from acc_agent.numerics.diagnosis.probes import _recompute_avg_pool

    x = np.random.default_rng(5).standard_normal((2, 3) + (7,) * nd)
    pool = {1: torch.nn.functional.avg_pool1d, 2: torch.nn.functional.avg_pool2d, 3: torch.nn.functional.avg_pool3d}
    args: list[object] = [torch.tensor(x), kernel, stride, padding, False, include_pad] + ([divisor] if nd > 1 else [])
    y = pool[nd](*args).numpy()
    scalars = {"1": kernel, "2": stride, "3": padding, "4": False, "5": include_pad, "6": divisor}
    fake = SimpleNamespace(tensor=lambda *keys: x if "0" in keys else None, output=lambda: y,
                           scalar=lambda *keys: next((scalars[k] for k in keys if k in scalars), None))
    got = _recompute_avg_pool(cast("Args", fake), nd)
    assert got is not None
    assert float(np.max(np.abs(got[1] - y))) < 1e-10


def test_a_sparse_product_fault_in_bfloat16_is_found_by_the_product_bound() -> None:
    """A gate multiplied in with ``torch.mul``, 5 % too large on every 4th element: a product moves each element by at
    most each input's difference times the other's largest magnitude (the recorded Max/Min), plus one rounding. The
    clean product stays within that bound; the faulty one is named at its forward call, not its backward."""
    folder = Path(__file__).parent / "data" / "msprobe_mul_gate_bf16"
    clean = compare_recorded(folder / "clean")
    assert clean.diagnosis is not None
    assert (clean.verdict, clean.diagnosis.category) == ("pass", "no_layer_fault"), clean.diagnosis.explanation
    out = compare_recorded(folder / "sparse")
    diag, fd = out.diagnosis, out.first_divergence
    assert diag is not None and fd is not None
    assert (diag.category, fd.module, fd.direction) == ("operator_fault", "Torch.mul.0.forward", "forward"), \
        diag.explanation
    assert "a product moves each element by at most" in diag.explanation
    assert untranslated([diag.explanation, fd.reason, *diag.next_actions]) == []


def test_a_broadcast_operands_summed_gradient_in_float16_is_rounding() -> None:
    """A clean float16 product with a (4, 8, 1) operand broadcast over 8 columns: that operand's gradient sums the
    incoming gradient over them, and the terms cancel (0.5 % rel L2 from the golden, elements out of tolerance). It is
    a reduction, judged like a parameter gradient, not a faulty backward."""
    out = compare_recorded(Path(__file__).parent / "data" / "msprobe_broadcast_gate_fp16_clean")
    assert out.diagnosis is not None
    assert (out.verdict, out.diagnosis.category, out.first_divergence) == ("pass", "no_layer_fault", None), \
        out.diagnosis.explanation


def test_a_scale_set_on_one_side_is_named_where_its_backward_shows_it() -> None:
    """``scale=0.125`` against the default (None, one over sqrt(8)): the forward output stays within bfloat16 precision,
    the attention's own backward is far beyond it from agreeing incoming gradients. The difference enters the forward
    call through its argument; the explanation says the gradient shows it first."""
    out = compare_recorded(Path(__file__).parent / "data" / "msprobe_sdpa_scale_set_on_one_side")
    diag, fd = out.diagnosis, out.first_divergence
    assert diag is not None and fd is not None
    assert (diag.category, fd.module, fd.direction, fd.argument) == (
        "operator_fault", "Functional.scaled_dot_product_attention.1.forward", "forward", "input.scale"), \
        diag.explanation
    assert "the gradient its backward sends on (Functional.scaled_dot_product_attention.1.backward.output.0)" in fd.reason
    assert "the gradient shows the change first" in diag.explanation
    assert untranslated([diag.explanation, fd.reason, *diag.next_actions]) == []


def test_a_patch_embedding_whose_difference_carries_on_is_an_operator_fault() -> None:
    """The patch embedding's kernel stored with height and width swapped, bfloat16, statistics: no later call's input is
    linked to the embedding's output (the flatten and the class-token concatenation are not recorded), and the loss of
    near-uniform predictions stays within precision, but every later call receives data about as far off. The
    difference went on into the network: a fault at the embedding, not two tensors compared that are not the same."""
    out = compare_recorded(Path(__file__).parent / "data" / "msprobe_vit_patch_kernel_transposed")
    diag, fd = out.diagnosis, out.first_divergence
    assert diag is not None and fd is not None
    assert (diag.category, fd.module) == ("operator_fault", "Functional.conv2d.0.forward"), diag.explanation
    assert any("weight layout" in a for a in diag.next_actions)


def test_a_sparse_group_norm_fault_in_bfloat16_is_found_in_the_forward_pass() -> None:
    """2.5 % (relative L2) off, under bfloat16's per-tensor budget: the float64 re-computation from the target's own
    input, weight, bias, group count and eps shows the call does not compute what its arguments say."""
    out = compare_recorded(DATA / "bf16_tensor_sparse")
    diag, fd = out.diagnosis, out.first_divergence
    assert diag is not None and fd is not None
    assert (diag.category, fd.module, fd.direction, fd.argument) == (
        "operator_fault", "Functional.group_norm.1.forward", "forward", None), diag.explanation
    assert "re-computed in float64" in fd.reason
    assert untranslated([diag.explanation, *diag.next_actions]) == []


def test_a_weight_of_ones_whose_norm_float16_rounds_is_not_where_the_fault_enters() -> None:
    """The weight's Max, Min and Mean are the golden's; its Norm is float16's rounding of sqrt(32). A tensor holding
    one value cannot have been transposed or permuted: the fault is the call's own."""
    out = compare_recorded(DATA / "fp16_stats_sparse")
    diag, fd = out.diagnosis, out.first_divergence
    assert diag is not None and fd is not None
    assert (diag.category, fd.module, fd.argument) == ("operator_fault", "Functional.group_norm.1.forward", None), \
        diag.explanation
    for text in (diag.explanation, fd.reason, *diag.next_actions):
        assert "transposed" not in text and "another arrangement" not in text, text


@pytest.mark.parametrize(("shape", "groups", "affine"), [
    *itertools.product([(2, 6, 5), (3, 8, 4, 4), (1, 4, 2, 3, 3)], [1, 2], [True, False]),
    ((2, 8, 3, 3), 8, True), ((2, 8, 3, 3), 4, True)])
def test_group_norm_recomputed_as_torch_computes_it(shape: tuple[int, ...], groups: int, affine: bool) -> None:
    torch = pytest.importorskip("torch")
    from acc_agent.numerics.diagnosis.probes import _recompute_group_norm

    rng = np.random.default_rng(7)
    x = rng.standard_normal(shape) * 3.0 + 1.0
    c = shape[1]
    w = rng.standard_normal(c) if affine else None
    b = rng.standard_normal(c) if affine else None
    eps = 1e-5
    y = torch.nn.functional.group_norm(torch.tensor(x), groups, None if w is None else torch.tensor(w),
                                       None if b is None else torch.tensor(b), eps).numpy()
    tensors = {"0": x, "weight": w, "bias": b}
    args = SimpleNamespace(tensor=lambda *keys: next((tensors[k] for k in keys if tensors.get(k) is not None), None),
                           output=lambda: y, scalar=lambda *keys: {"num_groups": groups, "eps": eps}.get(keys[0]))
    got = _recompute_group_norm(cast("Args", args))
    assert got is not None
    target, ref = got
    assert np.array_equal(target, y)
    assert float(np.max(np.abs(ref - y))) < 1e-12


@pytest.mark.parametrize(("shape", "affine", "input_stats"), itertools.product(
    [(2, 3, 7), (3, 4, 5, 5), (1, 2, 3, 4, 2)], [True, False], [True, False]))
def test_instance_norm_recomputed_as_torch_computes_it(shape: tuple[int, ...], affine: bool, input_stats: bool) -> None:
    torch = pytest.importorskip("torch")
    from acc_agent.numerics.diagnosis.probes import _recompute_instance_norm

    rng = np.random.default_rng(11)
    x = rng.standard_normal(shape) * 2.0 - 0.5
    c = shape[1]
    w, b = (rng.standard_normal(c), rng.standard_normal(c)) if affine else (None, None)
    mean, var = rng.standard_normal(c), rng.random(c) + 0.5
    eps = 1e-5

    def tt(a: np.ndarray | None) -> object:
        return None if a is None else torch.tensor(a)

    y = torch.nn.functional.instance_norm(torch.tensor(x), tt(mean), tt(var), tt(w), tt(b), input_stats, 0.1,
                                          eps).numpy()
    tensors = {"0": x, "weight": w, "bias": b, "running_mean": mean, "running_var": var}
    scalars = {"use_input_stats": input_stats, "eps": eps}
    args = SimpleNamespace(tensor=lambda *keys: next((tensors[k] for k in keys if tensors.get(k) is not None), None),
                           output=lambda: y, scalar=lambda *keys: scalars.get(keys[0]))
    got = _recompute_instance_norm(cast("Args", args))
    assert got is not None
    assert float(np.max(np.abs(got[1] - y))) < 1e-12
