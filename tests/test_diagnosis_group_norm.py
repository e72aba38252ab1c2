"""Group norms in low-precision targets: a faulty call found in the forward pass, and a weight of ones not blamed.

The fixtures are real msprobe dumps of a small U-Net-like network with two ``nn.GroupNorm`` layers (see the folder's
README). Before these rules a bfloat16 tensor dump named the faulty group norm's backward (a group norm could not be
re-computed from its inputs, and its forward error stays under a per-tensor bfloat16 budget), and a float16
statistics dump said the fault entered through the group norm's weight, 32 ones whose recorded Norm float16 rounds.
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
