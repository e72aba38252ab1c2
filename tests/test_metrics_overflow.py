"""Huge values (±1e308, float32's ±3e38): msprobe's numbers (Inf where its arithmetic overflows), no RuntimeWarning.

Run as the CI does or with ``-W error::RuntimeWarning``: the marker turns any numpy overflow,
invalid-value or division warning inside ``compute_metrics`` into a failure.
"""

from __future__ import annotations

import importlib.util
import math
import warnings
from typing import Any

import numpy as np
import pytest

from acc_agent.numerics import metrics as metrics_mod
from acc_agent.numerics.metrics import compute_metrics

COLS = ["Cosine", "EucDist", "MaxAbsErr", "MaxRelativeErr", "One Thousandth Err Ratio", "Five Thousandths Err Ratio"]
HAVE_MSPROBE = importlib.util.find_spec("msprobe") is not None

CASES: dict[str, tuple[np.ndarray, np.ndarray]] = {
    "opposite_1e308": (np.array([1e308, -1e308, 1.0, 2.0]), np.array([-1e308, 1e308, 1.0, 2.5])),
    "same_1e308": (np.array([1e308, 1e308, 1.0, 2.0]), np.array([1e308, 1e308, 1.0, 2.5])),
    "tiny_and_huge": (np.array([1e300, 1e-300, 1.0, 2.0]), np.array([1e300, 1e-300, 0.0, 2.5])),
    "f32_opposite_3e38": (np.array([3e38, -3e38, 1, 2], np.float32), np.array([-3e38, 3e38, 1, 2.5], np.float32)),
    "f16_target_vs_f32_3e38": (np.array([3e38, 1e-3, 0, 2], np.float32), np.array([65504, 1e-3, 0, 2.5], np.float16)),
}


def _msprobe(golden: np.ndarray, target: np.ndarray) -> list[Any]:
    from msprobe.core.compare.npy_compare import CompareResult, ValidateTensor, compare_ops_apply

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # msprobe's own arithmetic warns; ours must not
        r = ValidateTensor().check_tensor(CompareResult(np.squeeze(target).copy(), np.squeeze(golden).copy()))
        res, _ = compare_ops_apply(r.n_value, r.b_value, r.error_flag, r.err_msg, column_names=COLS)
    return list(res)


@pytest.mark.filterwarnings("error::RuntimeWarning")
@pytest.mark.parametrize("case", list(CASES))
@pytest.mark.parametrize("streamed", [False, True])
def test_huge_values_warn_nothing_and_match_msprobe(case: str, streamed: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    g, t = CASES[case]
    if streamed:  # several chunks: the overflow lands in a per-chunk sum
        monkeypatch.setattr(metrics_mod, "CHUNK", 3)
        g, t = np.tile(g, 5), np.tile(t, 5)
    m = compute_metrics(g, t, precision="fp16")
    assert m.max_abs_err is not None
    if not HAVE_MSPROBE:
        return
    theirs = _msprobe(g, t)
    for name, value in zip(metrics_mod.SIX, theirs, strict=True):
        ours = getattr(m, name)
        if isinstance(value, str):  # msprobe's "Nan": ours is a null with the reason
            assert ours is None and m.na_reasons.get(name), (case, name, ours)
        elif math.isinf(float(value)):
            assert ours == float(value), (case, name, value, ours)
        else:
            assert ours is not None and f"{float(value):.12f}" == f"{ours:.12f}", (case, name, value, ours)


@pytest.mark.filterwarnings("error::RuntimeWarning")
def test_inf_where_msprobe_has_inf() -> None:
    m = compute_metrics(*CASES["opposite_1e308"])
    assert m.max_abs_err == math.inf and m.max_rel_err == math.inf and m.euc_dist == math.inf
    assert m.cosine is None and m.na_reasons["cosine"].startswith("Nan")
