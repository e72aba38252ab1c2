"""Rules a real CNN migration needs: several training steps, in-place digests, low-precision conv backwards,
conv re-computation, recorded-otherwise outputs, and a verdict that follows a clean diagnosis.

The end-to-end answers are checked on real msprobe dumps (``stats_two_steps_cnn_conv_scaled``,
``md5_bf16_cnn_clean``, ``stats_fp16_cnn_clean``, ``fp16_cnn_clean``, ``bf16_cnn_conv_sparse`` and
``stats_cnn_channels_last_clean`` in tests/msprobe_cases); these tests pin each rule on its own.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest

from acc_agent.io.dumps import ScalarArg
from acc_agent.models.compare import CompareDumpsOutput, DumpRow
from acc_agent.models.diagnosis import Diagnosis, FirstDivergence
from acc_agent.numerics import budgets
from acc_agent.numerics.diagnosis import measure, probes
from acc_agent.numerics.diagnosis.judge import ACCUMULATION_ROUNDINGS, accumulation_budget
from acc_agent.numerics.diagnosis.localise import differing_scalar
from acc_agent.numerics.diagnosis.ranks import RankResult, combine_ranks, step_of
from acc_agent.registry import call_tool
from acc_agent.tools.compare_dumps import _verdict

# ----------------------------------------------------------------------------------------- steps


def _result(key: str, module: str | None, position: int = 5) -> RankResult:
    if module is None:
        return RankResult(key, None, Diagnosis(category="no_layer_fault", explanation="clean.", rows_judged=10,
                                               pass_walked="forward"))
    fd = FirstDivergence(name=f"{module}.output.0", index=position, module=module)
    return RankResult(key, fd, Diagnosis(category="operator_fault", explanation="x.", rows_judged=10,
                                         pass_walked="forward"))


def test_step_of_reads_the_step_folder() -> None:
    assert step_of("step12/rank3") == 12
    assert step_of("step0") == 0
    assert step_of("rank1") is None
    assert step_of("") is None


def test_the_earliest_diverging_step_is_named_even_when_a_later_step_diverges_earlier_in_its_pass() -> None:
    # step 1 diverges at position 2 (its weights already differ), step 0 at position 58: step 0 is the fault
    fd, diag = combine_ranks([_result("step0/rank0", "Functional.conv2d.4.forward", 58),
                              _result("step1/rank0", "Functional.batch_norm.0.forward", 2),
                              _result("step10/rank0", "Functional.conv2d.0.forward", 1)])
    assert fd is not None and fd.module == "Functional.conv2d.4.forward"
    assert (fd.step, fd.rank, fd.rank_key) == (0, "rank0", "step0/rank0")
    assert [(f.step, f.rank) for f in diag.ranks] == [(0, "rank0"), (1, "rank0"), (10, "rank0")]
    assert "starts on step0/rank0" in diag.explanation and "step1/rank0, step10/rank0 diverge too" in diag.explanation
    assert "A later step starts from weights" in diag.explanation


def test_a_clean_first_step_gives_the_fault_to_the_next_step() -> None:
    fd, diag = combine_ranks([_result("step0/rank0", None), _result("step1/rank0", "Functional.relu.3.forward")])
    assert fd is not None and fd.step == 1 and fd.module == "Functional.relu.3.forward"
    assert "clean: step0/rank0" in diag.explanation
    assert "A later step" not in diag.explanation


def test_one_step_keeps_plain_rank_names() -> None:
    fd, diag = combine_ranks([_result("step0/rank0", None), _result("step0/rank1", "Functional.gelu.0.forward")])
    assert fd is not None and fd.rank == "rank1" and fd.step == 0
    assert "starts on rank1" in diag.explanation and "clean: rank0" in diag.explanation
    _, clean = combine_ranks([_result("step0/rank0", None), _result("step1/rank0", None)])
    assert "All 2 step and rank dumps are clean." in clean.explanation


# ----------------------------------------------------------------------------------------- md5 of in-place calls


def _leaf(dtype: str, shape: list[int], stats: tuple[float, float, float, float], md5: str) -> dict[str, Any]:
    mx, mn, mean, norm = stats
    return {"type": "torch.Tensor", "dtype": dtype, "shape": shape, "Max": mx, "Min": mn, "Mean": mean, "Norm": norm,
            "requires_grad": False, "md5": md5}


def _md5_dump(root: Path, counter_in_md5: str, counter_stats: tuple[float, float, float, float]) -> Path:
    """A linear, then BatchNorm's in-place step-counter increment (Tensor.add_), then a relu, md5 mode."""
    x = _leaf("torch.float32", [4, 8], (1.5, -1.25, 0.125, 4.0), "11111111")
    y = _leaf("torch.float32", [4, 8], (2.5, -2.0, 0.25, 6.0), "22222222")
    z = _leaf("torch.float32", [4, 8], (2.5, 0.0, 0.5, 5.0), "33333333")
    data = {
        "Functional.linear.0.forward": {"input_args": [x], "input_kwargs": {}, "output": [y]},
        "Tensor.add_.0.forward": {"input_args": [_leaf("torch.int64", [], counter_stats, counter_in_md5),
                                                 {"type": "int", "value": 1}],
                                  "input_kwargs": {}, "output": [_leaf("torch.int64", [], (1, 1, 1, 1), "a988dff7")]},
        "Functional.relu.0.forward": {"input_args": [y], "input_kwargs": {}, "output": [z]},
    }
    rank = root / "step0" / "rank0"
    rank.mkdir(parents=True)
    (rank / "dump.json").write_text(json.dumps({"task": "statistics", "level": "L1", "framework": "pytorch",
                                                "dump_data_dir": None, "data": data}), encoding="utf-8")
    return root


def test_a_constant_tensor_with_equal_statistics_is_equal_whatever_its_digest(tmp_path: Path) -> None:
    """msprobe digests an in-place call's input after the write on one side: 0 recorded, the digest of 1."""
    golden = _md5_dump(tmp_path / "g", "6522df69", (0, 0, 0, 0))
    target = _md5_dump(tmp_path / "t", "a988dff7", (0, 0, 0, 0))
    out = call_tool("compare_dumps", {"golden": str(golden), "target": str(target)})
    assert isinstance(out, CompareDumpsOutput)
    assert out.diagnosis.category == "no_layer_fault", out.diagnosis.explanation


def test_a_varying_integer_tensor_with_other_bytes_still_differs(tmp_path: Path) -> None:
    """Equal statistics but Max != Min: the values can sit in other places, so other bytes are a difference."""
    golden = _md5_dump(tmp_path / "g", "6522df69", (3, 0, 1.5, 4))
    target = _md5_dump(tmp_path / "t", "a988dff7", (3, 0, 1.5, 4))
    out = call_tool("compare_dumps", {"golden": str(golden), "target": str(target)})
    assert isinstance(out, CompareDumpsOutput)
    assert out.diagnosis.category != "no_layer_fault"
    assert out.first_divergence is not None and out.first_divergence.module == "Tensor.add_.0.forward"


# ----------------------------------------------------------------------------------------- conv backward rounding


def _backward_node(api: str, weight_shape: list[int] | None) -> Any:
    outputs = [SimpleNamespace(arg="output.0", row=SimpleNamespace(golden_shape=[8, 32, 8, 8], target_shape=None))]
    if weight_shape is not None:
        outputs.append(SimpleNamespace(arg="output.1", row=SimpleNamespace(golden_shape=weight_shape,
                                                                           target_shape=None)))
    return SimpleNamespace(key=f"Functional.{api}.6.backward", outputs=outputs)


def test_a_low_precision_conv_backward_may_round_its_sum_of_products() -> None:
    """K = out channels x kernel area products per input-gradient element, sqrt(K) roundoffs each."""
    u = budgets.unit_roundoff("float16")
    got = accumulation_budget(_backward_node("conv2d", [8, 16, 3, 3]), "float16")
    assert got == pytest.approx(ACCUMULATION_ROUNDINGS * u * math.sqrt(8 * 9))
    linear = accumulation_budget(_backward_node("linear", [64, 128]), "bfloat16")
    assert linear == pytest.approx(ACCUMULATION_ROUNDINGS * budgets.unit_roundoff("bfloat16") * 8.0)
    # float32 rounds per kernel already judged; a non-GEMM or an unknown K gets nothing
    assert accumulation_budget(_backward_node("conv2d", [32, 16, 3, 3]), "float32") == 0.0
    assert accumulation_budget(_backward_node("gelu", [32, 16]), "float16") == 0.0
    assert accumulation_budget(_backward_node("conv2d", None), "float16") == 0.0
    # never more than a reduction's allowance, however long the sum
    huge = accumulation_budget(_backward_node("linear", [1 << 20, 4]), "bfloat16")
    assert huge == pytest.approx(4.0 * budgets.budget("bfloat16"))


# ----------------------------------------------------------------------------------------- conv re-computation


class _Args:
    def __init__(self, tensors: dict[str, np.ndarray], scalars: dict[str, object]) -> None:
        self._tensors, self.scalars = tensors, scalars

    def tensor(self, *keys: str) -> np.ndarray | None:
        return next((self._tensors[k] for k in keys if k in self._tensors), None)

    def output(self) -> np.ndarray | None:
        return self._tensors.get("out")

    def scalar(self, *keys: str) -> object:
        return next((self.scalars[k] for k in keys if k in self.scalars), None)


@pytest.mark.parametrize(("stride", "padding", "dilation", "groups", "bias"), [
    ((1, 1), (1, 1), (1, 1), 1, False),
    ((2, 1), (0, 2), (1, 2), 2, True),
    ((2, 2), (1, 1), (1, 1), 4, True),
])
def test_conv2d_is_recomputed_like_torch(stride: tuple[int, int], padding: tuple[int, int],
                                         dilation: tuple[int, int], groups: int, bias: bool) -> None:
    torch = pytest.importorskip("torch")
    gen = torch.Generator().manual_seed(0)
    x = torch.randn(3, 8, 11, 9, generator=gen, dtype=torch.float64)
    w = torch.randn(12, 8 // groups, 3, 3, generator=gen, dtype=torch.float64)
    b = torch.randn(12, generator=gen, dtype=torch.float64) if bias else None
    y = torch.nn.functional.conv2d(x, w, b, stride, padding, dilation, groups)
    tensors = {"0": x.numpy(), "1": w.numpy(), "out": y.numpy(), **({"2": b.numpy()} if b is not None else {})}
    # msprobe records nn.Conv2d's positional lists item by item: input.3.0, input.3.1, ...
    scalars: dict[str, object] = {"3.0": stride[0], "3.1": stride[1], "4.0": padding[0], "4.1": padding[1],
                                  "5.0": dilation[0], "5.1": dilation[1], "6": groups}
    pair = probes._recompute_conv(_Args(tensors, scalars), "functional.conv2d.0.forward")
    assert pair is not None
    got, ref = pair
    assert np.abs(got - ref).max() < 1e-12
    # a kernel 5 % off on every 5th element is far from its re-computation
    wrong = y.numpy().copy().ravel()
    wrong[::5] *= 1.05
    tensors["out"] = wrong.reshape(y.shape)
    got, ref = probes._recompute_conv(_Args(tensors, scalars), "functional.conv2d.0.forward")  # type: ignore[misc]
    assert probes.relative_residual(got, ref) > 1e-3


def test_a_conv_with_a_padding_string_is_not_recomputed() -> None:
    x, w = np.ones((1, 2, 5, 5)), np.ones((2, 2, 3, 3))
    args = _Args({"0": x, "1": w, "out": np.ones((1, 2, 5, 5))}, {"4": "same"})
    assert probes._recompute_conv(args, "functional.conv2d.0.forward") is None


# ----------------------------------------------------------------------------------------- arguments, verdict


def test_a_none_output_one_run_lists_is_no_differing_argument() -> None:
    key = "Functional.conv2d.4.backward"
    golden = SimpleNamespace(scalars={key: [ScalarArg(f"{key}.output.2", None, "None")]})
    target = SimpleNamespace(scalars={})
    t = SimpleNamespace(row=SimpleNamespace(golden_name=f"{key}.output.0"), arg="output.0")
    assert differing_scalar(key, golden, target, t) is None  # type: ignore[arg-type]
    fwd = "Functional.interpolate.0.forward"
    golden = SimpleNamespace(scalars={fwd: [ScalarArg(f"{fwd}.input.align_corners", False, "bool")]})
    target = SimpleNamespace(scalars={fwd: [ScalarArg(f"{fwd}.input.align_corners", True, "bool")]})
    t = SimpleNamespace(row=SimpleNamespace(golden_name=f"{fwd}.output.0"), arg="output.0")
    assert differing_scalar(fwd, golden, target, t) == ("input.align_corners", False, True)  # type: ignore[arg-type]


def test_a_clean_verdict_excuses_a_cast_up_copy_and_an_output_recorded_otherwise() -> None:
    logits = DumpRow(name="Functional.linear.0.forward.output.0", golden_dtype="float32", target_dtype="bfloat16")
    loss_in = DumpRow(name="Functional.cross_entropy.0.forward.input.0", golden_dtype="float32",
                      target_dtype="float32", status="warning", message="only 85.00% of elements within tolerance",
                      same_as="Functional.linear.0.forward.output.0")
    pool = DumpRow(name="Functional.adaptive_avg_pool2d.0.backward.output.0", golden_dtype="float32",
                   target_dtype="float32", golden_shape=[8, 32, 8, 8], target_shape=[8, 32, 1, 1], status="error",
                   message="shape unmatched")
    rows = [logits, loss_in, pool]
    not_judged = frozenset({pool.name})
    assert _verdict(rows, no_fault=True, not_judged=not_judged) == "pass"
    assert _verdict(rows, no_fault=False, not_judged=not_judged) == "fail"
    assert _verdict(rows, no_fault=True) == "fail", "an output the diagnosis did judge keeps msprobe's error"
    fp32_source = DumpRow(name="Functional.linear.0.forward.output.0", golden_dtype="float32", target_dtype="float32")
    assert _verdict([fp32_source, loss_in], no_fault=True) == "fail", "a float32 source excuses nothing"


# ----------------------------------------------------------------------------------------- mixed precision


def _entries(*specs: tuple[str, str, str, dict[str, float] | None]) -> Any:
    entries = [SimpleNamespace(name=n, role=r, dtype=d, stats=s or {}) for n, r, d, s in specs]
    return SimpleNamespace(entries=entries, by_name={e.name: e for e in entries})


def test_an_autocast_target_is_judged_at_its_low_precision() -> None:
    golden = _entries(("Functional.conv2d.0.forward.output.0", "output", "float32", None),
                      ("Functional.batch_norm.0.forward.output.0", "output", "float32", None))
    amp = _entries(*[(f"Functional.conv2d.{i}.forward.{arg}", arg.split(".")[0], "bfloat16", None)
                     for i in range(2) for arg in ("input.0", "input.1", "output.0")],
                   ("Functional.batch_norm.0.forward.output.0", "output", "float32", None),
                   ("Tensor.add_.0.forward.input.0", "input", "int64", None))
    assert measure.autocast_precision(golden, amp) == "bfloat16"
    # one odd float16 tensor in a float32 dump is no autocast
    odd = _entries(("Functional.linear.0.forward.output.0", "output", "float16", None),
                   ("Functional.gelu.0.forward.output.0", "output", "float32", None))
    assert measure.autocast_precision(golden, odd) is None
    # a model cast to bf16 throughout, or a golden that is low precision too: nothing to infer
    assert measure.autocast_precision(golden, _entries(("a.output.0", "output", "bfloat16", None))) is None
    assert measure.autocast_precision(amp, amp) is None
    row = DumpRow(name="Functional.batch_norm.0.forward.output.0", target_dtype="float32")
    assert measure.row_dtype(row, None, None, "bfloat16") == "bfloat16"
    counter = DumpRow(name="Tensor.add_.0.forward.input.0", target_dtype="int64")
    assert measure.row_dtype(counter, None, None, "bfloat16") == "int64", "integers stay exact"


def _grad_dumps(ratio: float) -> tuple[Any, Any]:
    g_stats = {"Max": 1.0, "Min": 1.0, "Mean": 1.0, "Norm": 1.0}
    grad = {"Max": 0.25, "Min": -0.5, "Mean": 0.01, "Norm": 2.0}
    golden = _entries(("Functional.cross_entropy.0.forward.output.0", "output", "float32", g_stats),
                      ("Functional.cross_entropy.0.backward.input.0", "input", "float32", g_stats),
                      ("Functional.linear.0.backward.input.0", "input", "float32", grad))
    target = _entries(("Functional.cross_entropy.0.forward.output.0", "output", "float32", g_stats),
                      ("Tensor.__mul__.0.backward.input.0", "input", "float32", g_stats),  # the scaler's multiply
                      ("Functional.cross_entropy.0.backward.input.0", "input", "float32",
                       {k: v * ratio for k, v in g_stats.items()}),
                      ("Functional.linear.0.backward.input.0", "input", "float32", {k: v * ratio for k, v in grad.items()}))
    return golden, target


def test_a_power_of_two_on_the_first_gradient_is_a_loss_scale() -> None:
    assert measure.loss_scale(*_grad_dumps(65536.0)) == 65536.0
    assert measure.loss_scale(*_grad_dumps(128.0 * (1 + 2.0**-9))) == 128.0, "within the fit: still the scale"
    assert measure.loss_scale(*_grad_dumps(2.0)) is None, "x2 is as likely a wrong backward"
    assert measure.loss_scale(*_grad_dumps(1000.0)) is None, "not a power of two"
    assert measure.loss_scale(*_grad_dumps(1.0)) is None
    golden, target = _grad_dumps(32.0)
    assert measure.loss_scale(golden, target) == 32.0
    # the loss itself 32x larger (summed where the golden averages over a batch of 32): a real difference
    target.by_name["Functional.cross_entropy.0.forward.output.0"].stats = {"Max": 32.0, "Min": 32.0, "Mean": 32.0,
                                                                        "Norm": 32.0}
    assert measure.loss_scale(golden, target) is None


def test_the_unscaled_error_follows_from_the_cosine_and_the_norms() -> None:
    rng = np.random.default_rng(0)
    g = rng.normal(size=1000)
    t = 65536.0 * (g + 1e-3 * rng.normal(size=1000))
    cos = float(g @ t / (np.linalg.norm(g) * np.linalg.norm(t)))
    row = DumpRow(name="Functional.linear.0.backward.output.0", cosine=round(cos, 6))
    row.__dict__["cosine_exact"] = cos
    got = measure.unscaled_error(row, 65536.0, float(np.linalg.norm(g)), float(np.linalg.norm(t)))
    want = float(np.linalg.norm(t / 65536.0 - g) / np.linalg.norm(g))
    assert got == pytest.approx(want, rel=1e-3)


def test_a_clean_verdict_excuses_msprobes_relative_warning_alone() -> None:
    from acc_agent.tools._stat_rows import MSG_MD5, MSG_REL_ERR, MSG_REL_WARN

    warned = DumpRow(name="Functional.batch_norm.6.backward.output.0", golden_dtype="float32", target_dtype="float32",
                     compare_mode="md5", status="warning", message=f"{MSG_REL_WARN}; {MSG_MD5}")
    assert _verdict([warned], no_fault=True) == "pass"
    assert _verdict([warned], no_fault=False) == "fail"
    erred = DumpRow(name="Functional.batch_norm.6.backward.output.0", golden_dtype="float32", target_dtype="float32",
                    compare_mode="statistics", status="error", message=f"{MSG_REL_ERR}; {MSG_REL_WARN}")
    assert _verdict([erred], no_fault=True) == "fail", "msprobe's error rule is not excused by this"


# ----------------------------------------------------------------------------------------- ill-conditioned functions


def _sin_call(arg_dtype: str, judged_at: str, magnitude: float, out_err: float) -> Any:
    """A sin call's output tensor (a stand-in with what ``conditioning`` reads): input stats, dtypes and errors."""
    x = SimpleNamespace(err=2.0**-9, beyond=False, m=SimpleNamespace(dtype=judged_at),
                        row=SimpleNamespace(target_dtype=arg_dtype,
                                            golden_stats={"Max": magnitude, "Min": 0.4, "Mean": 100.0, "Norm": 1000.0}))
    node = SimpleNamespace(key="Torch.sin.0.forward", direction="forward", inputs=[x])
    return SimpleNamespace(node=node, is_input=False, err=out_err, beyond=False, excess=0.5, strict=None,
                           row=SimpleNamespace(golden_stats={"Max": 1.0, "Min": -1.0, "Mean": 0.0, "Norm": 4.0}))


def test_sin_of_large_low_precision_arguments_is_flagged_whatever_its_statistics_show() -> None:
    from acc_agent.numerics.diagnosis.conditioning import flag_ill_conditioned

    bf16 = _sin_call("bfloat16", "bfloat16", 500.0, out_err=0.03)
    flag_ill_conditioned([bf16])
    assert bf16.strict == "ill_conditioned" and bf16.excess > 1.0
    # the same angles computed in float32 (a bf16 model's RoPE table, judged at bf16 under autocast): exact enough
    table = _sin_call("float32", "bfloat16", 500.0, out_err=0.0)
    flag_ill_conditioned([table])
    assert table.strict is None and table.excess == 0.5
    # bf16 angles of at most 12: an error of 0.05 radians at most, not flagged
    small = _sin_call("bfloat16", "bfloat16", 12.0, out_err=0.001)
    flag_ill_conditioned([small])
    assert small.strict is None
