"""A model the diagnosis was not developed on: torch's own TransformerEncoder (random init, CPU).

Includes a fault in a functional call that no module hook sees (the activation of one layer swapped
from ReLU to GELU): the tool must name the innermost recorded module and say where inside it the
first bad tensor appears.
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest

torch = pytest.importorskip("torch")

from acc_agent.capture import capture_forward  # noqa: E402
from acc_agent.models.compare import CompareDumpsOutput  # noqa: E402
from acc_agent.registry import call_tool  # noqa: E402


def _encoder() -> Any:
    torch.manual_seed(0)
    layer = torch.nn.TransformerEncoderLayer(d_model=64, nhead=4, dim_feedforward=128, batch_first=True,
                                             dropout=0.0)
    return torch.nn.TransformerEncoder(layer, num_layers=4, enable_nested_tensor=False).eval()


def _eps(m: Any) -> None:
    m.layers[2].norm1.eps = 1e-2


def _weight(m: Any) -> None:
    w = m.layers[1].linear2.weight
    with torch.no_grad():
        w.mul_(1 + 0.01 * torch.randn(w.shape, generator=torch.Generator().manual_seed(4)))


def _functional_activation(m: Any) -> None:
    m.layers[3].activation = torch.nn.functional.gelu


CASES = {
    "eps": (_eps, "Module.layers.2.norm1.LayerNorm.forward.0", None),
    "weight": (_weight, "Module.layers.1.linear2.Linear.forward.0", None),
    "functional": (_functional_activation, "Module.layers.3.TransformerEncoderLayer.forward.0",
                   "Module.layers.3.dropout.Dropout.forward.0.input.0"),
}


@pytest.fixture(scope="module")
def encoder_dumps(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("encoder")
    x = torch.randn(3, 20, 64, generator=torch.Generator().manual_seed(2))
    base = _encoder()
    capture_forward(base, root / "golden", args=(x,))
    for name, (fault, _, _) in CASES.items():
        model = copy.deepcopy(base)
        fault(model)
        capture_forward(model, root / name, args=(x,))
    with torch.backends.mkldnn.flags(enabled=False):
        capture_forward(copy.deepcopy(base), root / "other_gemm", args=(x,))
        capture_forward(copy.deepcopy(base).to(torch.bfloat16), root / "bf16", args=(x.to(torch.bfloat16),))
    return root


def _compare(root: Path, target: str) -> CompareDumpsOutput:
    out = call_tool("compare_dumps", {"golden": str(root / "golden"), "target": str(root / target),
                                      "all_rows": True, "workers": 1})
    assert isinstance(out, CompareDumpsOutput) and out.diagnosis is not None
    return out


@pytest.mark.parametrize("case", sorted(CASES))
def test_unseen_model_faults_are_named(encoder_dumps: Path, case: str) -> None:
    out = _compare(encoder_dumps, case)
    _, module, inside = CASES[case]
    assert out.diagnosis is not None and out.diagnosis.category == "operator_fault", out.diagnosis
    assert out.first_divergence is not None and out.first_divergence.module == module
    assert out.diagnosis.details["first_bad_tensor_inside"] == inside
    if inside:
        assert "between recorded modules" in out.first_divergence.reason


@pytest.mark.parametrize("target", ["other_gemm", "bf16"])
def test_unseen_model_rounding_only_is_not_a_fault(encoder_dumps: Path, target: str) -> None:
    out = _compare(encoder_dumps, target)
    assert out.diagnosis is not None and out.diagnosis.category == "no_layer_fault", out.diagnosis
    assert out.first_divergence is None
