"""Metrics: msprobe's six with its exact edge cases, and the extras judged on known numerics."""

from __future__ import annotations

import importlib.util
import warnings
from typing import Any

import ml_dtypes
import numpy as np
import pytest

from acc_agent.numerics import metrics as metrics_mod
from acc_agent.numerics import tolerance as tol
from acc_agent.numerics.metrics import compute_metrics

SIX = metrics_mod.SIX
COLS = ["Cosine", "EucDist", "MaxAbsErr", "MaxRelativeErr", "One Thousandth Err Ratio", "Five Thousandths Err Ratio"]
HAVE_MSPROBE = importlib.util.find_spec("msprobe") is not None


def _msprobe(golden: np.ndarray, target: np.ndarray) -> list[Any]:
    """msprobe's own per-row path: squeeze (its readers), ValidateTensor, then its algorithms."""
    from msprobe.core.compare.npy_compare import CompareResult, ValidateTensor, compare_ops_apply

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        r = ValidateTensor().check_tensor(CompareResult(np.squeeze(target).copy(), np.squeeze(golden).copy()))
        res, _ = compare_ops_apply(r.n_value, r.b_value, r.error_flag, r.err_msg, column_names=COLS)
    return list(res)


def _cases() -> dict[str, tuple[np.ndarray, np.ndarray]]:
    rng = np.random.default_rng(7)
    g = rng.standard_normal((33, 17)).astype(np.float32)
    g_zero = g.copy()
    g_zero[::5, ::3] = 0.0
    same_nan = g.copy()
    same_nan[1, 1] = np.nan
    same_nan[2, 2] = np.inf
    t_same_nan = same_nan * np.float32(1.001)
    moved = g.copy()
    moved[4, 4] = np.nan
    return {
        "fp16_vs_fp32": (g, g.astype(np.float16)),
        "noise_fp32": (g, g + rng.standard_normal(g.shape).astype(np.float32) * 1e-3),
        "zeros_in_golden": (g_zero, g_zero.astype(np.float16)),
        "nan_inf_same_positions": (same_nan, t_same_nan),
        "nan_moved": (g, moved),
        "scalar_0d": (np.array(2.5, np.float32), np.array(2.4, np.float16)),
        "scalar_via_squeeze": (np.array([[3.0]], np.float32), np.array([3.25], np.float32)),
        "int64": (np.arange(12, dtype=np.int64), np.arange(12, dtype=np.int64) + (np.arange(12) % 3 == 0)),
        "bool": (np.array([True, False, True, False]), np.array([True, True, True, False])),
        "both_zero": (np.zeros(6, np.float32), np.zeros(6, np.float32)),
        "golden_zero": (np.zeros(6, np.float32), np.ones(6, np.float32)),
        "target_zero": (np.ones(6, np.float32), np.zeros(6, np.float32)),
        "empty": (np.zeros((0, 3), np.float32), np.zeros((0, 3), np.float32)),
        "shape_mismatch": (np.zeros((3, 4), np.float32), np.zeros((4, 3), np.float32)),
        "squeezable_shapes": (rng.standard_normal((1, 9, 1)), rng.standard_normal(9)),
        "opposite": (g, -g),
        "float64": (g.astype(np.float64), g.astype(np.float64) * (1 + 1e-7)),
    }


def _agree(theirs: Any, ours: float | None, reason: str | None) -> bool:
    if isinstance(theirs, str):
        return ours is None and reason is not None and reason.startswith(theirs)
    return ours is not None and f"{float(theirs):.12f}" == f"{ours:.12f}"


@pytest.mark.skipif(not HAVE_MSPROBE, reason="mindstudio-probe not installed (pip install '.[test]')")
@pytest.mark.parametrize("case", list(_cases()))
def test_six_metrics_equal_msprobe_engine(case: str) -> None:
    g, t = _cases()[case]
    theirs = _msprobe(g, t)
    m = compute_metrics(g, t)
    for name, value in zip(SIX, theirs, strict=True):
        assert _agree(value, getattr(m, name), m.na_reasons.get(name)), (case, name, value, getattr(m, name),
                                                                           m.na_reasons.get(name))


@pytest.mark.skipif(not HAVE_MSPROBE, reason="mindstudio-probe not installed (pip install '.[test]')")
def test_streaming_in_chunks_keeps_parity(monkeypatch: pytest.MonkeyPatch) -> None:
    """Many chunks (float64 partial sums) still print the same 12 decimals as msprobe's one-shot sums."""
    monkeypatch.setattr(metrics_mod, "CHUNK", 997)
    rng = np.random.default_rng(3)
    g = rng.standard_normal(20_011).astype(np.float32)
    t = (g + rng.standard_normal(g.shape).astype(np.float32) * 3e-3).astype(np.float16)
    t[::101] = 0
    theirs = _msprobe(g, t)
    m = compute_metrics(g, t)
    for name, value in zip(SIX, theirs, strict=True):
        assert _agree(value, getattr(m, name), m.na_reasons.get(name)), (name, value, getattr(m, name))


def test_known_values() -> None:
    g = np.array([1.0, 0.0, 2.0, -1.0], np.float32)
    t = np.array([1.0, 0.5, 2.0, -1.5], np.float32)
    m = compute_metrics(g, t)
    assert m.max_abs_err == pytest.approx(0.5)
    assert m.euc_dist == pytest.approx(np.sqrt(0.5))
    assert m.rmse == pytest.approx(np.sqrt(0.5 / 4))
    assert m.mean_abs_err == pytest.approx(0.25)
    # golden 0 -> eps added to both sides (msprobe): (0.5+eps-eps)/eps is huge
    assert m.max_rel_err is not None and m.max_rel_err > 1e6
    assert m.one_thousandth_ratio == pytest.approx(0.5)
    g64, t64 = g.astype(np.float64), t.astype(np.float64)
    dot = float(g64 @ t64) / (np.linalg.norm(g64) * np.linalg.norm(t64))
    assert m.cosine_exact == pytest.approx(dot)
    assert m.cosine == round(float(f"{dot:.12f}"), 12)


def test_cosine_rounds_like_msprobe_above_threshold() -> None:
    rng = np.random.default_rng(0)
    g = rng.standard_normal(1000)
    m = compute_metrics(g, g + 1e-6)
    assert m.cosine == 1.0 and m.cosine_exact is not None and m.cosine_exact < 1.0


def test_nan_positions_and_counts() -> None:
    g = np.array([1.0, np.nan, 3.0, np.inf], np.float32)
    same = compute_metrics(g, g.copy())
    assert same.cosine == 1.0 and same.golden_nan == 1 and same.target_inf == 1
    t = np.array([np.nan, 2.0, 3.0, np.inf], np.float32)
    moved = compute_metrics(g, t)
    assert all(getattr(moved, k) is None for k in SIX)
    assert moved.na_reasons["cosine"].startswith("N/A") and "positions differ" in moved.na_reasons["cosine"]
    assert moved.target_nan == 1 and moved.golden_nan == 1


def test_tolerance_share_and_ulp_for_fp16() -> None:
    rng = np.random.default_rng(1)
    g = rng.standard_normal(4096).astype(np.float32)
    t16 = g.astype(np.float16)
    m = compute_metrics(g, t16, precision="fp16")
    assert m.within_tolerance_ratio == 1.0
    assert m.max_ulp_err is not None and m.max_ulp_err <= 0.5 + 1e-9  # correct rounding is within half an ULP
    assert m.ulp_gt1_ratio == 0.0
    # Move every value 3 fp16 ULPs away: the ULP metric sees it.
    bumped = np.nextafter(np.nextafter(np.nextafter(t16, np.float16(np.inf)), np.float16(np.inf)), np.float16(np.inf))
    m2 = compute_metrics(g, bumped, precision="fp16")
    assert m2.ulp_gt1_ratio is not None and m2.ulp_gt1_ratio > 0.99
    # fp32 tolerance on the same fp16 data fails most elements: never apply it to an fp16 run.
    m3 = compute_metrics(g, t16, precision="fp32")
    assert m3.within_tolerance_ratio is not None and m3.within_tolerance_ratio < 0.5
    assert m3.max_ulp_err == m.max_ulp_err  # the data is fp16, so its ULPs are still reported
    m4 = compute_metrics(g, g * np.float32(1 + 1e-6), precision="fp32")
    assert m4.max_ulp_err is None and "fp16/bf16" in m4.na_reasons["max_ulp_err"]


def test_bf16_is_read_as_fp32_and_gets_bf16_ulps() -> None:
    rng = np.random.default_rng(2)
    g = rng.standard_normal(1000).astype(np.float32)
    tb = g.astype(ml_dtypes.bfloat16)
    m = compute_metrics(g, tb)
    ref = compute_metrics(g, tb.astype(np.float32))
    for k in SIX:
        assert getattr(m, k) == getattr(ref, k)
    assert m.max_ulp_err is not None and m.max_ulp_err <= 0.5 + 1e-9


def test_top1_agreement_for_logits() -> None:
    g = np.array([[0.1, 0.9, 0.0], [0.5, 0.2, 0.3], [0.2, 0.2, 0.6], [0.7, 0.1, 0.2]], np.float32)
    t = g.copy()
    t[1] = [0.1, 0.8, 0.1]
    m = compute_metrics(g, t, top1=True)
    assert m.top1_agreement == pytest.approx(0.75)
    assert compute_metrics(g, t).top1_agreement is None


def test_no_tolerance_means_null_with_reason() -> None:
    m = compute_metrics(np.ones(4), np.ones(4))
    assert m.within_tolerance_ratio is None and "no precision" in m.na_reasons["within_tolerance_ratio"]


def test_tolerance_table() -> None:
    fp16 = tol.resolve("fp16")
    assert (fp16.rtol, fp16.atol) == (1e-2, 1e-3) and "reference tolerances by target precision" in fp16.source
    assert tol.resolve(None).precision == "fp16"  # FP16 is the default target
    assert tol.resolve("bf16").atol == 1e-2
    assert tol.resolve("float32").atol == 1e-5
    for p in ("fp16", "bf16", None):
        assert tol.resolve(p).atol > 1e-5  # FP32-level atol never chosen for a low-precision run
    override = tol.resolve("fp16", atol=1e-5)
    assert override.atol == 1e-5 and "user override" in override.source and "far below" in override.note


def test_streamed_and_in_memory_give_identical_metrics(tmp_path: Any) -> None:
    from acc_agent.io.tensors import NpyStream

    rng = np.random.default_rng(4)
    g = rng.standard_normal((300, 1, 700)).astype(np.float32)
    t = g.astype(np.float16)
    t[5, 0, 5] = 0
    np.save(tmp_path / "g.npy", g)
    np.save(tmp_path / "t.npy", t)
    streamed = compute_metrics(NpyStream(tmp_path / "g.npy"), NpyStream(tmp_path / "t.npy"), precision="fp16")
    assert streamed == compute_metrics(g, t, precision="fp16")
