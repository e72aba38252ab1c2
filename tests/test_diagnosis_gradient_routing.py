"""Gradients that float16 rounding routes elsewhere (max pool, ReLU) in clean CNN training, against real faults.

A max pool's backward sends each window's gradient to the element its forward chose, and a ReLU's passes it where its
input was positive: at a near-tie rounding decides, so a clean float16 run sends a few gradients elsewhere. The
fixtures are real msprobe dumps of small CNNs (see each folder's README); each clean one was an ``operator_fault``
before these rules.
"""

from __future__ import annotations

import itertools
from pathlib import Path
from typing import TYPE_CHECKING, cast

import numpy as np
import pytest
from recorded_dumps import compare_recorded

from acc_agent.numerics.arrays import FloatArray

if TYPE_CHECKING:
    from acc_agent.numerics.diagnosis.probes import Args

DATA = Path(__file__).parent / "data"


@pytest.mark.parametrize("level", ["clean", "l0_clean"])
def test_a_max_pool_backward_routed_by_a_float16_near_tie_is_rounding(level: str) -> None:
    """Tensor dump: the pooled gradient lands on another element of one window (golden 0 and a small positive value,
    float16 only zeros). Re-computed from the target's own forward input, the kernel's result is reproduced exactly;
    at level L0 the module records no kernel size, and the pooled size's own ratio reproduces it."""
    out = compare_recorded(DATA / "msprobe_maxpool_fp16_routing" / level)
    assert out.diagnosis is not None
    assert (out.verdict, out.diagnosis.category, out.first_divergence) == ("pass", "no_layer_fault", None), \
        out.diagnosis.explanation


@pytest.mark.parametrize(("level", "call"), [("backward_scaled", "Functional.max_pool2d.0.backward"),
                                             ("l0_backward_scaled", "Module.p.MaxPool2d.backward.0")])
def test_a_max_pool_backward_that_scales_its_gradient_is_still_the_fault(level: str, call: str) -> None:
    out = compare_recorded(DATA / "msprobe_maxpool_fp16_routing" / level)
    fd, diag = out.first_divergence, out.diagnosis
    assert fd is not None and diag is not None
    assert (diag.category, fd.module, fd.direction) == ("operator_fault", call, "backward")


@pytest.mark.parametrize("level", ["clean", "mix_clean", "l0_clean", "md5_clean"])
def test_a_bias_gradient_that_sums_a_routed_gradient_is_rounding_in_a_statistics_dump(level: str) -> None:
    """Statistics dump: a conv's bias gradient moves 9 % in one channel, while its Mean is the channel sum of the
    incoming gradient on both sides; the later norm backward carries the same routed difference. At levels mix and
    L0 msprobe records each parameter's gradient again (``parameters_grad``): that copy is not a call reading it. In an
    md5 dump a cancelled bias gradient's digest differs at another float type, as every tensor's does: no failure."""
    out = compare_recorded(DATA / "msprobe_cnn_fp16_routed_gradient" / level)
    assert out.diagnosis is not None
    assert (out.verdict, out.diagnosis.category, out.first_divergence) == ("pass", "no_layer_fault", None), \
        out.diagnosis.explanation


def test_a_bias_gradient_scaled_by_its_kernel_is_still_the_fault() -> None:
    out = compare_recorded(DATA / "msprobe_cnn_fp16_routed_gradient" / "bias_gradient_scaled")
    fd, diag = out.first_divergence, out.diagnosis
    assert fd is not None and diag is not None
    assert (diag.category, fd.name) == ("operator_fault", "Functional.conv2d.1.backward.output.2")


class _Recorded:
    """What ``probes.Args`` gives the re-computation: tensors by argument, scalars by name, the first output."""

    def __init__(self, tensors: dict[str, FloatArray], scalars: dict[str, object],
                 output: FloatArray | None = None) -> None:
        self._tensors, self.scalars, self._output = tensors, scalars, output

    def tensor(self, *keys: str) -> FloatArray | None:
        return next((self._tensors[k] for k in keys if k in self._tensors), None)

    def output(self) -> FloatArray | None:
        return self._output

    def scalar(self, *keys: str) -> object:
        return next((self.scalars[k] for k in keys if k in self.scalars), None)


@pytest.mark.parametrize(("nd", "kernel", "stride", "padding", "dilation"),
                         [(nd, k, s, p, d) for nd, k, s, p, d in itertools.product((1, 2, 3), (2, 3), (None, 1, 2),
                                                                                  (0, 1), (1, 2)) if p <= k // 2])
def test_max_pool_input_gradient_recomputed_as_torch_computes_it(nd: int, kernel: int, stride: int | None,
                                                                 padding: int, dilation: int) -> None:
    """Overlapping windows, padding, dilation, one to three axes, ties at zero after a ReLU: the first largest
    element of each window gets its gradient, as in PyTorch's kernels."""
    torch = pytest.importorskip("torch")
    from acc_agent.numerics.diagnosis.backward_recompute import _max_pool

    rng = np.random.default_rng(nd * 100 + kernel * 10 + padding)
    x = torch.relu(torch.tensor(rng.standard_normal((2, 3) + (9,) * nd), dtype=torch.float32)).requires_grad_(True)
    pool = {1: torch.nn.functional.max_pool1d, 2: torch.nn.functional.max_pool2d, 3: torch.nn.functional.max_pool3d}
    try:
        y = pool[nd](x, kernel, stride, padding, dilation)
    except RuntimeError:
        pytest.skip("torch refuses this geometry")
    g = torch.tensor(rng.standard_normal(tuple(y.shape)), dtype=torch.float32)
    y.backward(g)
    scalars: dict[str, object] = {"1": kernel, "3": padding, "dilation.0": dilation}
    scalars.update({f"dilation.{i}": dilation for i in range(nd)})
    if stride is not None:
        scalars["stride"] = stride
    forward = cast("Args", _Recorded({"0": x.detach().double().numpy()}, scalars))
    backward = cast("Args", _Recorded({"0": g.double().numpy()}, {}, x.grad.double().numpy()))
    pair = _max_pool(forward, backward, f"functional.max_pool{nd}d.0.backward")
    assert pair is not None
    recorded, recomputed = pair
    assert np.allclose(recorded, recomputed, rtol=0, atol=1e-5)
    assert np.count_nonzero(recomputed) == np.count_nonzero(recorded)
