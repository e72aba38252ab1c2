"""Wrong answers once found by stress tests on real msprobe dumps, each pinned down here.

- a swapped activation (``F.relu`` where the golden calls ``F.gelu``): the two calls pair by position, the
  call numbers of the API after it shift back into line, and the fault is the swapped call itself, with
  no claim about keyword arguments that only one of two different APIs has;
- a fused golden op the target writes out (F.layer_norm, the tanh GELU): the decomposed target run pairs
  with the fused golden call as a region, so a clean run stays clean and a later fault is found;
- a wrapper module only the target has: it stays unmatched instead of shifting every pair after it.

The end-to-end answers (first divergence, category) are checked with every other case in
``test_diagnosis_msprobe.py``; this module checks how the rows were paired, which is what went wrong.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from acc_agent.io.dumps import Dump, DumpEntry, ScalarArg, open_dump
from acc_agent.io.pairing import Pairing, pair_entries
from acc_agent.numerics.diagnosis.localise import TensorValue, callee, differing_scalar

# --------------------------------------------------------------------------- arguments of different APIs


def _scalars(**by_key: list[tuple[str, object]]) -> Dump:
    """A dump holding only scalar arguments: ``key=[(argument, value), ...]``."""
    scalars = {key.replace("__", "."): [ScalarArg(f"{key.replace('__', '.')}.{arg}", value, type(value).__name__)
                                        for arg, value in args] for key, args in by_key.items()}
    return Dump(Path("dump.json"), "msprobe", [], None, None, scalars)


def _output_of(golden_key: str) -> Any:
    """The output row of a target call paired with ``golden_key``'s output (as the diagnosis sees it)."""
    return SimpleNamespace(row=SimpleNamespace(golden_name=f"{golden_key}.output.0"), arg="output.0")


GELU, RELU = "Functional.gelu.1.forward", "Functional.relu.0.forward"


def test_callee_is_the_api_or_the_module_class() -> None:
    assert callee("Functional.gelu.1.forward") == callee("Functional.gelu.0.backward") == "Functional.gelu"
    assert callee("Tensor.__add__.12.forward") == "Tensor.__add__"
    assert callee("Module.blocks.0.act.GELU.forward.0") == callee("Module.layers.3.act_fn.GELU.backward.1") == "GELU"


def test_one_sided_argument_of_a_different_api_is_not_a_difference() -> None:
    """gelu's ``approximate`` and relu's ``inplace`` exist on one side each because the APIs differ."""
    golden = _scalars(Functional__gelu__1__forward=[("input.approximate", "none")])
    target = _scalars(Functional__relu__0__forward=[("input.inplace", False)])
    assert differing_scalar(RELU, golden, target, _output_of(GELU)) is None


def test_one_sided_argument_of_the_same_api_is_still_a_difference() -> None:
    golden = _scalars(Functional__gelu__1__forward=[("input.approximate", "tanh")])
    target = _scalars(Functional__gelu__1__forward=[])
    assert differing_scalar(GELU, golden, target, _output_of(GELU)) == ("input.approximate", "tanh", None)
    target = _scalars(Functional__gelu__1__forward=[("input.approximate", "tanh"), ("input.extra", 1)])
    assert differing_scalar(GELU, _scalars(Functional__gelu__1__forward=[("input.approximate", "tanh")]),
                            target, _output_of(GELU)) == ("input.extra", None, 1)


def test_a_none_one_run_lists_and_the_other_leaves_out_is_no_argument() -> None:
    """A float32 group norm's backward lists the gradients of its saved mean and rstd as None inputs; a target kernel
    with one output lists none. Neither passed anything: no argument of the call differs. Nor does a forward call's
    ``bias=None`` against the bias left out; a bias tensor against a None does."""
    key = "Functional.group_norm.1.backward"
    golden = _scalars(Functional__group_norm__1__backward=[("input.1", None), ("input.2", None)])
    target = _scalars(Functional__group_norm__1__backward=[])
    assert differing_scalar(key, golden, target, _output_of(key)) is None
    assert differing_scalar(key, target, golden, _output_of(key)) is None
    forward = "Functional.linear.0.forward"
    golden = _scalars(Functional__linear__0__forward=[("input.2", None)])
    target = _scalars(Functional__linear__0__forward=[])
    assert differing_scalar(forward, golden, target, _output_of(forward)) is None
    with_bias = Dump(Path("dump.json"), "msprobe", [DumpEntry(f"{forward}.input.2", None, forward, "input", "float32",
                                                              [4])], None)
    assert differing_scalar(forward, golden, with_bias, _output_of(forward)) == ("input.2", None, TensorValue((4,)))


def test_shared_argument_of_different_apis_is_still_compared() -> None:
    """An argument both calls have (softmax and log_softmax's ``dim``) is compared even across APIs."""
    golden = _scalars(Functional__softmax__0__forward=[("input.dim", -1)])
    target = _scalars(Functional__log_softmax__0__forward=[("input.dim", 0)])
    got = differing_scalar("Functional.log_softmax.0.forward", golden, target,
                           _output_of("Functional.softmax.0.forward"))
    assert got == ("input.dim", -1, 0)


# --------------------------------------------------------------------------- real msprobe cases


def _cases_importable() -> bool:
    return importlib.util.find_spec("torch") is not None and importlib.util.find_spec("msprobe") is not None


def _pair(name: str, *, stats: bool = True) -> tuple[Pairing, Dump, Dump]:
    """Pair a generated case's rank0 dumps (generated once and cached, see tests/msprobe_cases)."""
    if not _cases_importable():
        pytest.skip("torch and mindstudio-probe (msprobe) are needed to make the dumps")
    here = str(Path(__file__).resolve().parent)
    if here not in sys.path:  # --import-mode=importlib does not add tests/
        sys.path.insert(0, here)
    from msprobe_cases import make_case

    case = make_case(name)
    dumps = []
    for root in (case.golden, case.target):
        d = open_dump(root / "step0" / "rank0")
        assert isinstance(d, Dump)
        if not stats:  # as a dump whose summary mode wrote no Max/Min/Mean/Norm
            for e in d.entries:
                e.stats = {}
        dumps.append(d)
    return pair_entries(dumps[0], dumps[1]), dumps[0], dumps[1]


def _partner(pairing: Pairing, target_name: str) -> tuple[str, str] | None:
    return next(((p.golden_name, p.method) for p in pairing.pairs if p.target_name == target_name), None)


@pytest.mark.slow
@pytest.mark.parametrize("stats", [True, False], ids=["statistics", "no-statistics"])
def test_swapped_activation_pairs_by_position_and_renumbers_the_rest(stats: bool) -> None:
    pairing, _, _ = _pair("act_swapped", stats=stats)
    for d in ("forward", "backward"):
        for row in ("input.0", "output.0"):
            assert _partner(pairing, f"Functional.relu.0.{d}.{row}") == (f"Functional.gelu.1.{d}.{row}",
                                                                         "different_api")
            # the target's third activation is its second gelu call: the golden's third, not its second
            assert _partner(pairing, f"Functional.gelu.1.{d}.{row}") == (f"Functional.gelu.2.{d}.{row}", "renumbered")
    assert not pairing.unmatched_target and not pairing.unmatched_golden and not pairing.regions
    assert any(n.startswith("Functional.relu.0.forward paired with the golden's Functional.gelu.1.forward by "
                            "position: a different API") for n in pairing.notes)


@pytest.mark.slow
def test_swapped_activation_is_the_fault_with_no_argument_claim() -> None:
    if not _cases_importable():
        pytest.skip("torch and mindstudio-probe (msprobe) are needed to make the dumps")
    from msprobe_cases import make_case

    from acc_agent.models.compare import CompareDumpsOutput
    from acc_agent.registry import call_tool

    case = make_case("act_swapped")
    out = call_tool("compare_dumps", {"golden": str(case.golden), "target": str(case.target), "workers": 1})
    assert isinstance(out, CompareDumpsOutput) and out.diagnosis is not None and out.first_divergence is not None
    assert out.diagnosis.category == "operator_fault"
    assert out.first_divergence.module == "Functional.relu.0.forward"
    assert out.first_divergence.argument is None  # not gelu's 'approximate', which relu has no use for
    assert "a different API" in out.diagnosis.judgement_note


@pytest.mark.slow
@pytest.mark.parametrize("stats", [True, False], ids=["statistics", "no-statistics"])
def test_fused_golden_gelu_pairs_with_the_written_out_target_gelu(stats: bool) -> None:
    pairing, _, _ = _pair("tanh_gelu_clean", stats=stats)
    assert len(pairing.regions) == 1
    region = pairing.regions[0]
    assert region.fused_side == "golden" and region.golden_keys == ("Functional.gelu.0.forward",)
    assert region.target_keys[0] == "Torch.pow.0.forward" and region.target_keys[-1] == "Tensor.__mul__.0.forward"
    assert len(region.target_keys) == 8
    assert _partner(pairing, "Tensor.__mul__.0.forward.output.0") == ("Functional.gelu.0.forward.output.0", "region")
    assert _partner(pairing, "Torch.pow.0.forward.input.0") == ("Functional.gelu.0.forward.input.0", "region")
    # the target's only F.gelu call is the golden's second one
    assert _partner(pairing, "Functional.gelu.0.forward.output.0") == ("Functional.gelu.1.forward.output.0",
                                                                       "renumbered")
    assert not pairing.auto_order_fallback


@pytest.mark.slow
def test_fused_golden_layer_norm_region_leaves_nothing_to_guess() -> None:
    pairing, _, target = _pair("fused_golden")
    assert [(r.fused_side, r.golden_keys) for r in pairing.regions] == [("golden", ("Functional.layer_norm.0.forward",))]
    region = pairing.regions[0]
    assert region.target_keys[0] == "Tensor.mean.0.forward" and len(region.target_keys) == 9
    assert _partner(pairing, f"{region.target_keys[-1]}.output.0") == ("Functional.layer_norm.0.forward.output.0",
                                                                        "region")
    assert not pairing.unmatched_golden and not pairing.auto_order_fallback
    assert {p.method for p in pairing.pairs} == {"exact", "region"}
    assert all(target.entry(n).module_key in region.target_keys for n in pairing.unmatched_target)


_TARGET_TO_GOLDEN = [("Module.layers.1.inner.", "Module.layers.1."), ("Module.layers.", "Module.blocks."),
                     (".ffn.", ".mlp."), (".proj.", ".fc."), (".act_fn.", ".act."), (".FeedForward.", ".Mlp."),
                     (".TargetLayer.", ".GoldenLayer."), ("Module.out_proj.", "Module.head.")]


def _golden_module_name(target_name: str) -> str:
    for new, old in _TARGET_TO_GOLDEN:
        target_name = target_name.replace(new, old)
    return target_name


@pytest.mark.slow
def test_target_only_wrapper_stays_unmatched_and_shifts_nothing() -> None:
    pairing, _, target = _pair("wrapped_mix")
    wrapper = [e.name for e in target.entries if e.module_key.startswith("Module.layers.1.Wrapper.")]
    assert len(wrapper) == 4  # forward and backward, input and output
    assert [n for n in pairing.unmatched_target if n.startswith("Module.")] == wrapper
    modules = [p for p in pairing.pairs if p.target_name.startswith("Module.")]
    assert modules and all(p.golden_name == _golden_module_name(p.target_name) for p in modules)
    assert not [n for n in pairing.unmatched_golden if n.startswith("Module.")]
    assert any("wrappers the golden does not have" in n for n in pairing.notes)


@pytest.mark.slow
def test_golden_fused_region_lists_the_written_out_target_run() -> None:
    """The diagnosis's details name both sides of a region: the fused call and the whole run it replaces."""
    if not _cases_importable():
        pytest.skip("torch and mindstudio-probe (msprobe) are needed to make the dumps")
    from msprobe_cases import make_case

    from acc_agent.models.compare import CompareDumpsOutput
    from acc_agent.registry import call_tool

    case = make_case("fused_golden")
    out = call_tool("compare_dumps", {"golden": str(case.golden), "target": str(case.target), "workers": 1})
    assert isinstance(out, CompareDumpsOutput) and out.diagnosis is not None
    regions = out.diagnosis.details.get("fused_regions") or []
    golden_fused = [r for r in regions if r["fused_side"] == "golden"]
    assert golden_fused, regions
    region = golden_fused[0]
    assert region["golden"] == ["Functional.layer_norm.0.forward"]
    assert len(region["target_run"]) >= 5 and region["target_run"][0] == region["target"]
    assert any(k.startswith("Torch.rsqrt.") for k in region["target_run"]), region
