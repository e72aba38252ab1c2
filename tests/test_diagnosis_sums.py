"""The sum's Mean identity (diagnosis/sums.py) on statistics computed the way msprobe records them.

A bf16 residual add is computed with torch on the CPU, its statistics taken as msprobe takes them
(``tensor.mean()`` / ``tensor.norm()`` in the tensor's own dtype); the identity must hold within the
allowance for the clean add over many random draws, and break for an add that is off by a factor
(a whole-tensor scaling, or 10 % on every 3rd element). The end-to-end cases
(``stats_bf16_residual_add_sparse``, ``stats_bf16_block_clean``) run on real msprobe dumps in
test_diagnosis_msprobe.py.

The softmax and layer-norm backwards' zero-sum identity is checked the same way: torch's own bf16/fp16
backwards (masked positions included) keeps its input gradient's recorded Mean within half the allowance, and a
backward 5 % off on every 3rd element breaks it on about half the draws (``s_``/``stats`` dumps of
``bf16_softmax_bwd_sparse`` end to end).
"""

from __future__ import annotations

import math

import pytest

from acc_agent.numerics.diagnosis.sums import _check, _mean_off

torch = pytest.importorskip("torch")


def _stats(x: torch.Tensor) -> dict[str, float | None]:
    return {"Max": float(x.max()), "Min": float(x.min()), "Mean": float(x.mean()), "Norm": float(x.norm())}


def _excess(seed: int, faulty: bool, offset: float, factor: float = 1.04, every: int = 1) -> float:
    gen = torch.Generator().manual_seed(seed)
    a = (torch.randn(2, 16, 64, generator=gen) + offset).to(torch.bfloat16)  # a residual stream and its mean
    b = (0.3 * torch.randn(2, 16, 64, generator=gen)).to(torch.bfloat16)
    out = a + b
    if faulty:
        out = out.clone()
        flat = out.view(-1)
        flat[::every] = (flat[::every].float() * factor).to(torch.bfloat16)
    found = _check([_stats(a), _stats(b)], [], _stats(out), 1.0, out.numel(), "bfloat16")
    assert found is not None
    return found[0]


@pytest.mark.parametrize("offset", [0.0, 0.05, 0.3, 2.0])
def test_clean_bf16_add_keeps_the_mean_identity(offset: float) -> None:
    worst = max(_excess(seed, faulty=False, offset=offset) for seed in range(40))
    assert worst < 0.5, f"a clean bf16 add reaches {worst:.2f} of the allowance"


@pytest.mark.parametrize(("factor", "every"), [(1.04, 1), (1.10, 3)])
def test_scaled_add_breaks_it(factor: float, every: int) -> None:
    """Seen where the stream's mean is a sizeable part of its spread: the Means cannot say what a scaling of
    zero-mean values does, and each recorded Mean carries its own bf16 rounding (a 4 % change on a third of the
    elements is at the edge: 1.33x on the Llama case, under 1x on most random draws)."""
    assert min(_excess(seed, faulty=True, offset=0.3, factor=factor, every=every) for seed in range(10)) > 1.0


def test_difference_and_scalar_operand() -> None:
    x = torch.linspace(-1.0, 3.0, 4096, dtype=torch.float32)
    found = _check([_stats(x)], [0.5], _stats(x - 0.5), -1.0, x.numel(), "float32")
    assert found is not None and found[0] < 1.0 and found[3] == pytest.approx(float(x.mean()) - 0.5)
    wrong = _check([_stats(x)], [0.5], _stats(x + 0.5), -1.0, x.numel(), "float32")
    assert wrong is not None and wrong[0] > 1.0


def _softmax_input_gradient(seed: int, dtype: torch.dtype, masked: bool, op: str = "softmax") -> torch.Tensor:
    gen = torch.Generator().manual_seed(seed)
    shape = [(4, 32), (2, 4, 17, 17), (8, 128), (1, 12, 64, 64)][seed % 4]
    x = (torch.randn(shape, generator=gen) * (0.5 + seed % 5) + 0.1 * (seed % 3)).to(dtype).requires_grad_()
    if op == "layer_norm":
        weight = (1.0 + 0.5 * torch.randn(shape[-1], generator=gen)).to(dtype)
        out = torch.nn.functional.layer_norm(x, shape[-1:], weight, torch.zeros(shape[-1], dtype=dtype))
    else:
        out = torch.softmax(x.masked_fill(torch.rand(shape, generator=gen) < 0.3, float("-inf")) if masked else x, -1)
    (grad,) = torch.autograd.grad(out, x, torch.randn(shape, generator=gen).to(dtype))
    return grad


def _zero_sum_excess(grad: torch.Tensor) -> float:
    found = _mean_off({"Mean": float(grad.mean()), "Norm": float(grad.norm())}, 0.0, grad.numel(),
                      str(grad.dtype).removeprefix("torch."))
    assert found is not None and found[3] == 0.0
    return found[0]


@pytest.mark.parametrize("op", ["softmax", "layer_norm"])
@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
def test_clean_softmax_and_layer_norm_backward_sum_to_zero(dtype: str, op: str) -> None:
    worst = max(_zero_sum_excess(_softmax_input_gradient(seed, getattr(torch, dtype), seed % 3 == 0, op))
                for seed in range(40))
    assert worst < 0.6, f"a clean {dtype} {op} backward reaches {worst:.2f} of the allowance"


@pytest.mark.parametrize("op", ["softmax", "layer_norm"])
def test_a_backward_off_on_part_of_its_elements_breaks_it(op: str) -> None:
    """5 % too large on every 3rd element: the gradient no longer sums to zero. What the change adds to the sum is
    itself a sum of gradient elements of both signs, about 1.9 allowances in size: about half the draws are seen
    (never a clean one, above), so a statistics dump finds such a kernel on some inputs, and a tensor dump on all."""
    seen = 0
    for seed in range(40):
        grad = _softmax_input_gradient(seed, torch.bfloat16, False, op)
        flat = grad.clone().view(-1)
        flat[::3] = (flat[::3].float() * 1.05).to(torch.bfloat16)
        seen += _zero_sum_excess(flat.view(grad.shape)) > 1.0
    assert seen >= 16, f"only {seen} of 40 draws seen"


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
def test_a_softmax_outputs_mean_is_one_over_its_axis_within_rounding(dtype: torch.dtype) -> None:
    """A softmax's recorded Mean (msprobe takes it in the tensor's dtype) stays within the rounding allowance of
    1 / the axis's length on clean outputs; a kernel 10 % too large on every 4th element leaves it."""
    functional = pytest.importorskip("torch.nn.functional")
    worst_clean, best_faulty = 0.0, math.inf
    for seed in range(40):
        x = torch.randn(2, 4, 6, 6, generator=torch.Generator().manual_seed(seed)) * 3
        y = functional.softmax(x.to(dtype), dim=-1)
        wrong = torch.where(torch.arange(y.numel()).reshape(y.shape) % 4 == 1, y * 1.1, y)
        for out, faulty in ((y, False), (wrong, True)):
            stats = {"Mean": float(out.mean()), "Norm": float(out.float().norm().to(dtype))}
            found = _mean_off(stats, 1 / 6, out.numel(), str(dtype).removeprefix("torch."))
            assert found is not None
            if faulty:
                best_faulty = min(best_faulty, found[0])
            else:
                worst_clean = max(worst_clean, found[0])
    assert worst_clean <= 1.0 < best_faulty, (worst_clean, best_faulty)
