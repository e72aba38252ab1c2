"""Parameter gradients in a real msprobe dump: rounding in them is not a fault, a wrong one is not a "mismatch".

A weight or bias gradient is a sum over every sample and position whose terms cancel, and only the
optimizer reads it. So (1) in a clean bf16 run its statistics move more than one operator's budget
(about 7 % for a BatchNorm weight gradient) and must not be blamed, and (2) when a gradient kernel
really is wrong, "the network's final outputs agree" says nothing about it: the answer names the
backward call as an operator fault. Case (2) is ``weight_grad_half`` in tests/msprobe_cases (run by
test_diagnosis_msprobe.py); case (1) is dumped here, since the generator's clean-case check wants
tensor data and this one is msprobe's default statistics dump.
"""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("torch")
pytest.importorskip("msprobe")

from msprobe_cases import _run_side  # noqa: E402

from acc_agent.models.compare import CompareDumpsOutput  # noqa: E402
from acc_agent.registry import call_tool  # noqa: E402


@pytest.fixture(scope="module")
def resnet_bf16_clean(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("resnet_bf16_clean")
    for side in ("golden", "target"):
        _run_side("bf16_resnet_clean_stats", side, root / side, world_size=1)
    return root


def test_clean_bf16_backward_statistics_is_no_fault(resnet_bf16_clean: Path) -> None:
    out = call_tool("compare_dumps", {"golden": str(resnet_bf16_clean / "golden" / "dump"),
                                      "target": str(resnet_bf16_clean / "target" / "dump"),
                                      "csv": str(resnet_bf16_clean / "rows.csv"), "all_rows": True})
    assert isinstance(out, CompareDumpsOutput)
    assert out.diagnosis is not None and out.diagnosis.compared_by == "statistics"
    assert out.diagnosis.category == "no_layer_fault", (out.first_divergence, out.diagnosis.explanation)
    assert out.first_divergence is None
    # the case exercises what it is about: backward rows were judged, BatchNorm weight gradients among them
    assert out.diagnosis.rows_judged > 0
    assert any(".backward.output.1" in r.name and "batch_norm" in r.name for r in out.rows)
    # msprobe's rules call every row an error because the float type differs (float32 golden, bfloat16
    # target); the CSV keeps that Result, the verdict follows the precision-aware judgement
    dtype_errors = [r for r in out.rows if r.status == "error"]
    assert dtype_errors and all("dtype of NPU and Bench are inconsistent" in r.message for r in dtype_errors)
    assert out.verdict == "pass", out.summary
    assert "only because the float type differs" in out.summary
    csv_text = (resnet_bf16_clean / "rows.csv").read_text(encoding="utf-8")
    assert csv_text.count("The dtype of NPU and Bench are inconsistent") >= len(dtype_errors)


def test_a_gradient_that_cancels_to_zero_is_rounding_noise_not_a_fault() -> None:
    """A conv bias before a train-mode BatchNorm: its gradient is zero in theory (1e-8 golden, 1e-5 fp16).

    A relative error of 1,244 there is rounding of a sum that cancels; the real dumps of a clean fp16
    CNN (tests/data/msprobe_bncnn_fp16_stats) must not be blamed on that conv's backward."""
    from acc_agent.models.compare import CompareDumpsOutput
    from acc_agent.registry import call_tool

    root = Path(__file__).resolve().parent / "data" / "msprobe_bncnn_fp16_stats"
    out = call_tool("compare_dumps", {"golden": str(root / "golden"), "target": str(root / "target"), "workers": 1})
    assert isinstance(out, CompareDumpsOutput) and out.diagnosis is not None
    assert out.diagnosis.category == "no_layer_fault", out.diagnosis.explanation
    assert out.first_divergence is None
    # msprobe's own rule (NormRelativeErr > 0.5) still flags the row itself, as msprobe's CSV does
    assert all(r.status == "error" for r in out.rows if r.name == "Functional.conv2d.1.backward.output.2")
    assert "target None vs golden None" not in out.summary
    # ... but the verdict follows the judgement: both conv bias gradients cancel to rounding level, and the
    # rest of the backward pass is not judged against their relative error of 1,000
    assert set(out.diagnosis.details["cancelled_gradients"]) == {"Functional.conv2d.0.backward.output.2",
                                                                 "Functional.conv2d.1.backward.output.2"}
    assert out.verdict == "pass", out.summary
    assert "2 parameter gradients" in out.summary and "cancel to rounding level" in out.summary
