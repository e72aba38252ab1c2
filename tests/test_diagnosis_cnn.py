"""Diagnosis on a small CNN built in torch: preprocessing mismatches, layout, and a model it was not tuned on.

The image is a deterministic synthetic RGB picture (gradients plus texture, values 0..255); golden
preprocessing is ImageNet mean/std in RGB order, NCHW. Each target changes one thing a migration
commonly gets wrong; the diagnosis must say ``input_mismatch`` and name the transformation,
measured on the data (fitted scale/offset for the normalisation cases).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from acc_agent.capture import capture_forward  # noqa: E402
from acc_agent.models.compare import CompareDumpsOutput  # noqa: E402
from acc_agent.registry import call_tool  # noqa: E402

MEAN = np.array([0.485, 0.456, 0.406])
STD = np.array([0.229, 0.224, 0.225])


def _image() -> np.ndarray:
    h = w = 32
    yy, xx = np.mgrid[0:h, 0:w]
    rng = np.random.default_rng(7)
    r = 255 * xx / (w - 1)
    g = 255 * yy / (h - 1)
    b = 127 + 100 * np.sin(xx / 3.0) * np.cos(yy / 5.0)
    img = np.stack([r, g, b], axis=-1) + rng.normal(0, 8, size=(h, w, 3))
    return np.clip(img, 0, 255).astype(np.float32)  # HWC, RGB


def _preprocess(img: np.ndarray, mean: np.ndarray = MEAN, std: np.ndarray = STD, bgr: bool = False) -> Any:
    x = img / 255.0
    if bgr:
        x = x[..., ::-1]
    x = (x - mean) / std
    return torch.from_numpy(np.ascontiguousarray(x.transpose(2, 0, 1)[None]).astype(np.float32))


class SmallCNN(torch.nn.Module):
    def __init__(self, depth: int = 6, channels_last_input: bool = False) -> None:
        super().__init__()
        self.channels_last_input = channels_last_input
        torch.manual_seed(0)
        self.stem = torch.nn.Conv2d(3, 16, 3, padding=1)
        self.blocks = torch.nn.ModuleList(
            torch.nn.Sequential(torch.nn.Conv2d(16, 16, 3, padding=1), torch.nn.BatchNorm2d(16), torch.nn.ReLU())
            for _ in range(depth)
        )
        self.pool = torch.nn.AdaptiveAvgPool2d(1)
        self.head = torch.nn.Linear(16, 10)
        for block in self.blocks:
            bn = block[1]
            bn.running_mean.normal_(0, 0.1)
            bn.running_var.uniform_(0.5, 1.5)

    def forward(self, x: Any) -> Any:
        if self.channels_last_input:  # a target fed NHWC that permutes inside
            x = x.permute(0, 3, 1, 2)
        x = self.stem(x)
        for block in self.blocks:
            x = x + block(x)
        return self.head(self.pool(x).flatten(1))


def _leaky_relu_in_block(model: torch.nn.Module, block: int) -> None:
    model.blocks[block][2].forward = lambda x: torch.nn.functional.leaky_relu(x, 0.2)  # type: ignore[index]


@pytest.fixture(scope="session")
def cnn_dumps(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("cnn")
    img = _image()
    model = SmallCNN().eval()
    golden_in = _preprocess(img)
    variants: dict[str, tuple[torch.nn.Module, Any]] = {
        "golden": (model, golden_in),
        "mean_std_half": (model, _preprocess(img, np.array([0.5] * 3), np.array([0.5] * 3))),
        "mean_std_scalar": (model, _preprocess(img, np.array([0.45] * 3), np.array([0.25] * 3))),
        "bgr": (model, _preprocess(img, bgr=True)),
        "bgr_same_stats": (model, _preprocess(img, np.array([0.5] * 3), np.array([0.25] * 3), bgr=True)),
        "nhwc": (SmallCNN(channels_last_input=True).eval(), golden_in.permute(0, 2, 3, 1).contiguous()),
        "other_sample": (model, _preprocess(np.ascontiguousarray(img[::-1]))),
    }
    builders: dict[str, tuple[Callable[[torch.nn.Module], None], Any, bool]] = {
        "leaky_relu_b3": (lambda m: _leaky_relu_in_block(m, 3), torch.float32, True),
        "bench_bf16": (lambda m: None, torch.bfloat16, True),
        "bf16_pure": (lambda m: None, torch.bfloat16, False),
        "bf16_leaky_relu_b1": (lambda m: _leaky_relu_in_block(m, 1), torch.bfloat16, False),
    }
    for name, (net, x) in variants.items():
        capture_forward(net, root / name, args=(x,), include_root=True)
    for name, (change, dtype, onednn) in builders.items():
        net = SmallCNN().eval().to(dtype)
        change(net)
        with torch.backends.mkldnn.flags(enabled=onednn):  # another conv back-end, as another device would
            capture_forward(net, root / name, args=(golden_in.to(dtype),), include_root=True)
    return root


def _compare(root: Path, target: str, bench: str | None = None) -> CompareDumpsOutput:
    args: dict[str, Any] = {"golden": str(root / "golden"), "target": str(root / target), "all_rows": True,
                            "workers": 1}
    if bench:
        args["bench"] = str(root / bench)
    out = call_tool("compare_dumps", args)
    assert isinstance(out, CompareDumpsOutput)
    return out


def test_per_channel_mean_std_mismatch_is_fitted(cnn_dumps: Path) -> None:
    out = _compare(cnn_dumps, "mean_std_half")
    assert out.diagnosis is not None and out.diagnosis.category == "input_mismatch"
    assert out.first_divergence is not None and out.first_divergence.name == "Module.root.SmallCNN.forward.0.input.0"
    t = out.diagnosis.transforms[0]
    assert t.kind == "channel_affine" and t.params["axis"] == 1
    # analytic map: t_c = (s_c / 0.5) g_c + (m_c - 0.5) / 0.5
    np.testing.assert_allclose(t.params["scale"], STD / 0.5, rtol=1e-4)
    np.testing.assert_allclose(t.params["offset"], (MEAN - 0.5) / 0.5, atol=1e-4)


def test_scalar_mean_std_mismatch_is_one_affine_map(cnn_dumps: Path) -> None:
    out = _compare(cnn_dumps, "mean_std_scalar")
    assert out.diagnosis is not None and out.diagnosis.category == "input_mismatch"
    kinds = [t.kind for t in out.diagnosis.transforms]
    assert "channel_affine" in kinds or "affine" in kinds
    t = out.diagnosis.transforms[0]
    np.testing.assert_allclose(t.params["scale"], STD / 0.25, rtol=1e-4)


def test_rgb_bgr_is_named(cnn_dumps: Path) -> None:
    out = _compare(cnn_dumps, "bgr")
    assert out.diagnosis is not None and out.diagnosis.category == "input_mismatch"
    assert out.diagnosis.transforms and out.diagnosis.transforms[0].kind.startswith("channel_reverse")
    assert "RGB/BGR" in out.diagnosis.explanation or "reversed" in out.diagnosis.explanation


def test_bgr_with_other_normalisation_is_named_with_its_fit(cnn_dumps: Path) -> None:
    out = _compare(cnn_dumps, "bgr_same_stats")
    assert out.diagnosis is not None and out.diagnosis.category == "input_mismatch"
    t = out.diagnosis.transforms[0]
    assert t.kind == "channel_reverse+channel_affine"
    np.testing.assert_allclose(t.params["scale"], STD[::-1] / 0.25, rtol=1e-4)


def test_nhwc_input_is_named(cnn_dumps: Path) -> None:
    out = _compare(cnn_dumps, "nhwc")
    assert out.diagnosis is not None and out.diagnosis.category == "input_mismatch"
    t = out.diagnosis.transforms[0]
    assert t.kind == "permute" and t.params["axes"] == [0, 2, 3, 1] and "NHWC" in t.description


def test_different_sample_is_input_mismatch_without_a_transform(cnn_dumps: Path) -> None:
    out = _compare(cnn_dumps, "other_sample")
    assert out.diagnosis is not None and out.diagnosis.category == "input_mismatch"
    assert out.diagnosis.transforms == []
    assert "different data" in out.diagnosis.explanation


def test_cnn_activation_fault_is_named(cnn_dumps: Path) -> None:
    out = _compare(cnn_dumps, "leaky_relu_b3")
    assert out.diagnosis is not None and out.diagnosis.category == "operator_fault", out.diagnosis
    assert out.first_divergence is not None
    assert out.first_divergence.module == "Module.blocks.3.2.ReLU.forward.0"


def test_cnn_bf16_pure_is_no_layer_fault_against_bench(cnn_dumps: Path) -> None:
    out = _compare(cnn_dumps, "bf16_pure", bench="bench_bf16")
    assert out.diagnosis is not None and out.diagnosis.category == "no_layer_fault", out.diagnosis
    assert out.first_divergence is None


def test_cnn_bf16_fault_is_named_against_bench(cnn_dumps: Path) -> None:
    out = _compare(cnn_dumps, "bf16_leaky_relu_b1", bench="bench_bf16")
    assert out.diagnosis is not None and out.diagnosis.category == "operator_fault", out.diagnosis
    assert out.first_divergence is not None
    assert out.first_divergence.module == "Module.blocks.1.2.ReLU.forward.0"


def test_first_layer_jump_says_it_could_be_precision(cnn_dumps: Path, tmp_path: Path) -> None:
    """Per-tensor int8 on every conv: the error jumps at the stem and then stays flat (measured: it does not
    grow), so the tool cannot tell a stem fault from global quantisation — and says so."""
    net = SmallCNN().eval()

    def hook(_m: Any, _i: Any, out: Any) -> Any:
        scale = out.abs().amax().clamp_min(1e-12) / 127
        return torch.round(out / scale).clamp(-127, 127) * scale

    for m in net.modules():
        if isinstance(m, torch.nn.Conv2d):
            m.register_forward_hook(hook)
    capture_forward(net, tmp_path / "int8", args=(_preprocess(_image()),), include_root=True)
    out = call_tool("compare_dumps", {"golden": str(cnn_dumps / "golden"), "target": str(tmp_path / "int8"),
                                      "all_rows": True, "workers": 1})
    assert isinstance(out, CompareDumpsOutput) and out.diagnosis is not None
    assert out.diagnosis.category == "operator_fault"
    assert out.first_divergence is not None and out.first_divergence.module == "Module.stem.Conv2d.forward.0"
    assert out.diagnosis.details["first_computing_layer"] is True
    assert "higher precision" in out.diagnosis.explanation
    # a fault deeper in the network is not flagged as ambiguous
    deeper = _compare(cnn_dumps, "leaky_relu_b3")
    assert deeper.diagnosis is not None and deeper.diagnosis.details["first_computing_layer"] is False
