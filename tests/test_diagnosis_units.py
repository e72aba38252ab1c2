"""Diagnosis building blocks on real numerics: budgets, transformation tests, flat API-level dumps.

The flat dumps are a numpy MLP written as a folder of ``.npy`` files with msprobe's API-level names
(``Functional.linear.{i}.forward.input.0``): no module nesting and no ``Norm`` statistics, so the
diagnosis must fall back to the cosine angle and to execution order alone.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from acc_agent.models.compare import CompareDumpsOutput
from acc_agent.numerics import budgets
from acc_agent.numerics.transforms import explain_pair
from acc_agent.registry import call_tool


def test_budgets_follow_the_format() -> None:
    assert budgets.unit_roundoff("torch.bfloat16") == 2.0**-8
    assert budgets.unit_roundoff("float16") == 2.0**-11
    assert budgets.budget("int64") == 0.0, "integers must match exactly"
    assert budgets.budget("bf16") > budgets.budget("fp16") > budgets.budget("fp32") > 0
    assert budgets.budget("float32") == 2.0**-14  # msprobe's min_err floor
    assert budgets.lowest_precision("float32", "bfloat16", None) == "bfloat16"


def _img(seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).uniform(-2, 2, size=(2, 3, 8, 8))


def test_transform_tests_find_what_was_done() -> None:
    g = _img()
    tol = 1e-6
    assert explain_pair(g, g[:, ::-1], tol, input_side=True)[0].kind == "channel_reverse"
    perm = explain_pair(g, g.transpose(0, 2, 3, 1), tol, input_side=True)[0]
    assert perm.kind == "permute" and perm.params["axes"] == [0, 2, 3, 1]
    aff = explain_pair(g, 2.5 * g - 0.75, tol, input_side=True)[0]
    assert aff.kind == "affine"
    assert aff.params["scale"] == pytest.approx(2.5) and aff.params["offset"] == pytest.approx(-0.75)
    assert explain_pair(g, g.reshape(2, 3, 64), tol, input_side=False)[0].kind == "reshape"
    # a middle tensor is not tested for preprocessing maps
    assert explain_pair(g, 2.5 * g, tol, input_side=False) == []
    # unrelated data: nothing explains it
    assert explain_pair(g, _img(1), tol, input_side=True) == []


def _mlp_dump(root: Path, *, fp16: bool, fault_at: int | None = None, transpose_at: int | None = None,
              nan_at: int | None = None, layers: int = 8, scale_fault: bool = False) -> Path:
    """Residual numpy MLP; fp16 emulated by rounding every layer output; faults change one layer.

    The fault is a 5 % random weight perturbation, or a uniform 10 % weight scale (a magnitude error
    the cosine cannot see: the relative L2 error must catch it).
    """
    rng = np.random.default_rng(0)
    weights = [rng.normal(0, 1 / np.sqrt(64), size=(64, 64)) for _ in range(layers)]
    x = np.random.default_rng(1).normal(size=(16, 64))
    root.mkdir(parents=True)
    dtype = np.float16 if fp16 else np.float32
    h = x.astype(dtype)
    for i, w in enumerate(weights):
        np.save(root / f"Functional.linear.{i}.forward.input.0.npy", h)
        w_used = w
        if i == fault_at:
            w_used = w * 1.10 if scale_fault else w * (1 + 0.05 * rng.normal(size=w.shape))
        y = (h.astype(np.float64) + np.tanh(h.astype(np.float64) @ w_used)).astype(dtype)
        stored = y
        if i == transpose_at:
            stored = np.ascontiguousarray(y.T)
        if i == nan_at:
            stored = y.copy()
            stored[0, 0] = np.nan
        np.save(root / f"Functional.linear.{i}.forward.output.0.npy", stored)
        h = y
    return root


def _compare(golden: Path, target: Path) -> CompareDumpsOutput:
    out = call_tool("compare_dumps", {"golden": str(golden), "target": str(target), "all_rows": True,
                                      "workers": 1})
    assert isinstance(out, CompareDumpsOutput)
    return out


@pytest.mark.parametrize("scale_fault", [False, True], ids=["weight_noise", "weight_scale"])
def test_flat_fp16_dump_without_stats(tmp_path: Path, scale_fault: bool) -> None:
    golden = _mlp_dump(tmp_path / "g", fp16=False)
    pure = _compare(golden, _mlp_dump(tmp_path / "p", fp16=True))
    assert pure.diagnosis is not None and pure.diagnosis.category == "no_layer_fault", pure.diagnosis
    fault = _compare(golden, _mlp_dump(tmp_path / "f", fp16=True, fault_at=5, scale_fault=scale_fault))
    assert fault.diagnosis is not None and fault.diagnosis.category == "operator_fault", fault.diagnosis
    assert fault.first_divergence is not None
    assert fault.first_divergence.name == "Functional.linear.5.forward.output.0"
    assert fault.first_divergence.input_names == ["Functional.linear.5.forward.input.0"]
    amp = fault.first_divergence.amplification
    assert amp is not None and amp > 1


def test_flat_transposed_square_tensor_is_layer_mismatch(tmp_path: Path) -> None:
    golden = _mlp_dump(tmp_path / "g", fp16=False)
    out = _compare(golden, _mlp_dump(tmp_path / "t", fp16=False, transpose_at=3))
    assert out.diagnosis is not None and out.diagnosis.category == "layer_mismatch", out.diagnosis
    assert out.first_divergence is not None and out.first_divergence.name == "Functional.linear.3.forward.output.0"
    assert out.diagnosis.transforms[0].kind == "permute"


def test_nan_in_the_middle_is_reported_not_crashed(tmp_path: Path) -> None:
    golden = _mlp_dump(tmp_path / "g", fp16=False)
    out = _compare(golden, _mlp_dump(tmp_path / "n", fp16=False, nan_at=4))
    assert out.diagnosis is not None
    # the stored tensor has a NaN the next layer's input does not: a mismatch of what was compared
    assert out.diagnosis.category == "layer_mismatch"
    assert out.first_divergence is not None and out.first_divergence.name == "Functional.linear.4.forward.output.0"


FIXTURES = Path(__file__).resolve().parent / "fixtures" / "diagnosis"


def test_backward_fault_in_real_msprobe_dump() -> None:
    """Real msprobe L1 dumps: forward identical, a grad hook scales one gradient by 1.1 (see the script)."""
    pytest.importorskip("torch")  # the dumps are msprobe's .pt files
    root = FIXTURES / "msprobe_backward"
    out = _compare(root / "golden", root / "target")
    assert out.diagnosis is not None and out.diagnosis.category == "operator_fault", out.diagnosis
    assert out.diagnosis.pass_walked == "backward"
    assert out.first_divergence is not None and out.first_divergence.module == "Functional.linear.1.backward"
    fd = out.first_divergence
    assert fd.name == "Functional.linear.1.backward.input.0" and fd.enters_through == "between_operators"
    assert "changed between the two calls" in fd.reason and fd.direction == "backward"
    assert fd.difference is not None and "1.1x the golden" in fd.difference
    assert all(r.status == "pass" for r in out.rows if ".forward." in r.name)


def test_an_overflowed_fp16_norm_over_finite_data_is_no_overflow() -> None:
    """msprobe reduces Norm in the tensor's dtype: 2,048 fills of -10000 in fp16 give Norm = Infinity.

    The data is finite (Max and Min are), so the row is not an overflow, and its Norm is left out of
    the statistics error instead of making it infinite; an Inf Max still is an overflow."""
    from acc_agent.numerics.diagnosis.measure import _bulk_stat_error, stat_error, stats_nonfinite

    scores = np.full(4096, -10000.0, dtype=np.float32)
    scores[::2] = np.linspace(-3.0, 3.0, 2048, dtype=np.float32)
    golden = {"Max": 3.0, "Min": -10000.0, "Mean": float(scores.mean()), "Norm": float(np.linalg.norm(scores))}
    with np.errstate(over="ignore"):
        fp16_norm = float(np.linalg.norm(scores.astype(np.float16)))  # the reduction overflows in fp16
    assert fp16_norm == np.inf
    target = {**golden, "Mean": golden["Mean"] * (1 + 2e-4), "Norm": fp16_norm}
    assert not stats_nonfinite(target)
    assert stats_nonfinite({**target, "Max": np.inf})
    err = stat_error(golden, target, scores.size)
    assert err is not None and 0 < err < budgets.budget("float16")
    columns = np.array([[golden[k]] for k in ("Max", "Min", "Mean", "Norm")])
    target_columns = np.array([[target[k]] for k in ("Max", "Min", "Mean", "Norm")])
    assert _bulk_stat_error(columns, target_columns, np.array([float(scores.size)]))[0] == pytest.approx(err)
    target_columns[0, 0] = np.inf
    assert _bulk_stat_error(columns, target_columns, np.array([float(scores.size)]))[0] == np.inf


def _stats_leaf(golden: dict[str, float], target: dict[str, float], dtype: str) -> str | None:
    """What ``leaves`` says about an argument recorded only as statistics (golden fp32, target ``dtype``)."""
    from types import SimpleNamespace

    from acc_agent.numerics.diagnosis.leaves import _describe_stats

    name = "Functional.linear.17.forward.input.0"
    dump = {side: SimpleNamespace(by_name={name: SimpleNamespace(shape=[4, 17, 1536], stats=stats)})
            for side, stats in (("golden", golden), ("target", target))}
    measured = SimpleNamespace(same_stats_other_bytes=False, target_nonfinite=False, golden_nonfinite=False,
                               dtype=dtype)
    t = SimpleNamespace(name=name, row=SimpleNamespace(golden_name=None), m=measured)
    return _describe_stats(t, dump["golden"], dump["target"])  # type: ignore[arg-type]


def test_a_statistics_leaf_is_called_scaled_only_when_all_four_move_together() -> None:
    """Numbers from MiniLM statistics dumps (golden fp32, bf16 target): a weight 3 % too large moves Max, Min, Mean
    and Norm by the same factor; a GELU 5 % too large on every 5th element moves Max/Min 5 % and Mean/Norm 1 %,
    which is not a constant factor however loose a bf16 tolerance is."""
    golden = {"Max": 17.531787872314453, "Min": -0.16997122764587402, "Mean": -0.023517990484833717,
              "Norm": 82.71775817871094}
    sparse = {"Max": 18.375, "Min": -0.1787109375, "Mean": -0.0238037109375, "Norm": 83.5}
    said = _stats_leaf(golden, sparse, "bfloat16")
    assert said is not None and said.startswith("statistics differ:"), said
    scaled = {k: v * 1.03 for k, v in golden.items()}
    said = _stats_leaf(golden, scaled, "bfloat16")
    assert said is not None and "all 1.03x the golden's: most likely every element scaled" in said, said
    transposed = {**golden, "Mean": golden["Mean"] * (1 + 3e-7), "Norm": golden["Norm"] * (1 - 2e-7)}
    said = _stats_leaf(golden, transposed, "float32")
    assert said is not None and "another arrangement, e.g. transposed" in said, said
