"""Pairing when names fail, on real msprobe dumps: renamed modules (L0, mix, backward) pair automatically by
execution order and shape, and a fused target API pairs with the run of decomposed golden APIs it replaces.

Every dump is made here, by ``tests/data/pairing/make_dump.py`` in a fresh process (msprobe keeps global
state), from tiny seeded nets whose golden and target compute the same numbers under different names, so
the true partner of every row is known by construction.
"""

from __future__ import annotations

import os
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest

pytest.importorskip("torch")
pytest.importorskip("msprobe")

from acc_agent.io.dumps import Dump, open_dump  # noqa: E402
from acc_agent.io.pairing import Pairing, Region, pair_entries  # noqa: E402

pytestmark = pytest.mark.slow  # eleven msprobe dumps, a few seconds each

MAKE_DUMP = Path(__file__).resolve().parent / "data" / "pairing" / "make_dump.py"
# dump name -> (variant, level, task)
DUMPS = {
    "net_L0": ("net", "L0", "tensor"),
    "renamed_L0": ("net_renamed", "L0", "tensor"),
    "renamed_tanh_L0": ("net_renamed_tanh", "L0", "tensor"),
    "renamed_wrapped_L0": ("net_renamed_wrapped", "L0", "tensor"),
    "net_mix": ("net", "mix", "tensor"),
    "net_mix_again": ("net", "mix", "tensor"),
    "renamed_fp16_mix": ("net_renamed_fp16", "mix", "tensor"),
    "attn_L1": ("attn", "L1", "statistics"),
    "attn_fused_L1": ("attn_fused", "L1", "statistics"),
    "norm_mix": ("norm", "mix", "tensor"),
    "norm_fused_mix": ("norm_fused", "mix", "tensor"),
}
# target path segment -> golden path segment (make_dump.Net's renames)
RENAMES = [("Module.stem.", "Module.embed."), ("Module.layers.", "Module.blocks."), (".ffn.", ".mlp."),
           (".FeedForward.", ".Mlp."), (".Layer.", ".Block."), ("Module.proj.", "Module.head."), (".inner.", ".")]
ATTN_RUN = ("Torch.matmul.0.forward", "Tensor.__truediv__.0.forward", "Torch.softmax.0.forward",
            "Torch.matmul.1.forward")
NORM_RUN = ("Tensor.mean.0.forward", "Tensor.__sub__.0.forward", "Tensor.__pow__.0.forward", "Tensor.mean.1.forward",
            "Tensor.__sub__.1.forward", "Tensor.__add__.0.forward", "Torch.sqrt.0.forward",
            "Tensor.__truediv__.0.forward", "Tensor.__mul__.0.forward", "Tensor.__add__.1.forward")


@pytest.fixture(scope="session")
def dumps(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """All dumps of this module, made once per session, a few processes at a time."""
    root = tmp_path_factory.mktemp("msprobe_pairing")
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONHASHSEED": "0"}
    pending = list(DUMPS.items())
    running: list[tuple[str, subprocess.Popen[str]]] = []
    while pending or running:
        while pending and len(running) < max(2, min(4, os.cpu_count() or 2)):
            name, (variant, level, task) = pending.pop(0)
            work = root / f"{name}.work"
            work.mkdir()
            cmd = [sys.executable, str(MAKE_DUMP), variant, level, str(root / name), task]
            running.append((name, subprocess.Popen(cmd, cwd=work, env=env, stdout=subprocess.PIPE,
                                                   stderr=subprocess.STDOUT, text=True)))
        name, proc = running.pop(0)
        out, _ = proc.communicate(timeout=300)
        assert proc.returncode == 0 and (root / name).is_dir(), f"{name}: msprobe dump failed\n{out[-3000:]}"
    return {name: root / name for name in DUMPS}


def _open(path: Path, *, stats: bool = True) -> Dump:
    d = open_dump(path)
    assert isinstance(d, Dump)
    if not stats:  # as a dump whose summary mode wrote no Max/Min/Mean/Norm
        for e in d.entries:
            e.stats = {}
    return d


def _true_golden(target_name: str) -> str:
    for new, old in RENAMES:
        target_name = target_name.replace(new, old)
    return target_name


def _wrong(pairing: Pairing) -> list[tuple[str, str]]:
    return [(p.target_name, p.golden_name) for p in pairing.pairs if p.golden_name != _true_golden(p.target_name)]


def _partner(pairing: Pairing, target_name: str) -> tuple[str, str] | None:
    return next(((p.golden_name, p.method) for p in pairing.pairs if p.target_name == target_name), None)


# --------------------------------------------------------------------------- renamed modules


def test_l0_renamed_modules_pair_by_order_automatically(dumps: dict[str, Path]) -> None:
    g, t = _open(dumps["net_L0"]), _open(dumps["renamed_L0"])
    pairing = pair_entries(g, t)
    n = len(t.entries)
    assert n == len(g.entries) and all(e.name.startswith("Module.") for e in t.entries)
    assert not pairing.unmatched_target and not pairing.unmatched_golden and not _wrong(pairing)
    assert {p.method for p in pairing.pairs} == {"order_shape"}
    assert [p.target_name for p in pairing.pairs] == [e.name for e in t.entries], "target execution order"
    assert pairing.auto_order_fallback and not pairing.regions
    assert pairing.notes == [f"most names did not pair ({n} of {n} target tensors): "
                             f"paired {n} by execution order and shape"]


def test_mix_renamed_modules_with_fp16_target_pair_modules_only(dumps: dict[str, Path]) -> None:
    g, t = _open(dumps["net_mix"]), _open(dumps["renamed_fp16_mix"])
    assert {e.dtype for e in t.entries} == {"float16"} and {e.dtype for e in g.entries} == {"float32"}
    pairing = pair_entries(g, t)
    assert not pairing.unmatched_target and not pairing.unmatched_golden and not _wrong(pairing)
    methods = {p.target_name: p.method for p in pairing.pairs}
    modules = [e.name for e in t.entries if e.name.startswith("Module.")]
    assert {methods[n] for n in modules} == {"order_shape"}
    assert {m for n, m in methods.items() if not n.startswith("Module.")} == {"exact"}
    assert pairing.auto_order_fallback and not pairing.regions
    k = len(modules)
    assert pairing.notes == [f"most Module names did not pair ({k} of {k} Module tensors): "
                             f"paired {k} by execution order and shape"]


@pytest.mark.parametrize("golden,target", [("net_L0", "renamed_L0"), ("net_mix", "renamed_fp16_mix")])
def test_renamed_backward_and_parameter_grad_rows_pair(dumps: dict[str, Path], golden: str, target: str) -> None:
    g, t = _open(dumps[golden]), _open(dumps[target])
    pairing = pair_entries(g, t)
    backward = [e.name for e in t.entries if e.name.startswith("Module.") and ".backward." in e.name]
    grads = [e.name for e in t.entries if ".parameters_grad." in e.name]
    assert len(backward) >= 20 and len(grads) == 16  # 8 Linear/LayerNorm modules, weight + bias each
    for name in backward + grads:
        assert _partner(pairing, name) == (_true_golden(name), "order_shape"), name


def test_diverging_renamed_target_keeps_its_partners(dumps: dict[str, Path]) -> None:
    """A target bug (tanh GELU) moves every statistic after it; order still decides, so no pair moves."""
    g, t = _open(dumps["net_L0"]), _open(dumps["renamed_tanh_L0"])
    gelu_out = "Module.layers.0.ffn.act.GELU.forward.0.output.0"
    assert t.entry(gelu_out).stats != g.entry(_true_golden(gelu_out)).stats
    pairing = pair_entries(g, t)
    assert not pairing.unmatched_target and not _wrong(pairing) and pairing.auto_order_fallback


def test_renamed_modules_pair_without_statistics(dumps: dict[str, Path]) -> None:
    pairing = pair_entries(_open(dumps["net_L0"], stats=False), _open(dumps["renamed_L0"], stats=False))
    assert not pairing.unmatched_target and not _wrong(pairing) and pairing.auto_order_fallback


def test_explicit_by_order_still_pairs_and_is_not_automatic(dumps: dict[str, Path]) -> None:
    g, t = _open(dumps["net_L0"]), _open(dumps["renamed_L0"])
    pairing = pair_entries(g, t, by_order=True)
    assert not pairing.unmatched_target and not _wrong(pairing)
    assert not pairing.auto_order_fallback
    assert pairing.notes == [f"asked to pair by order: paired {len(t.entries)} by execution order and shape"]


def test_target_only_wrapper_module_stays_unmatched(dumps: dict[str, Path]) -> None:
    """An extra pass-through module around layers.1 holds that layer's very tensors: it gets no partner and
    shifts no pair after it (paired by order, it took the next block's partner)."""
    g, t = _open(dumps["net_L0"]), _open(dumps["renamed_wrapped_L0"])
    pairing = pair_entries(g, t)
    wrapper = [e.name for e in t.entries if ".Wrapper." in e.name]
    assert {e.module_key for e in t.entries if ".Wrapper." in e.name} == {
        "Module.layers.1.Wrapper.forward.0", "Module.layers.1.Wrapper.backward.0"}
    assert sorted(pairing.unmatched_target) == sorted(wrapper) and not pairing.unmatched_golden
    assert not _wrong(pairing) and pairing.auto_order_fallback
    assert any("wrappers the golden does not have" in n and "Module.layers.1.Wrapper.forward.0" in n
               for n in pairing.notes)


def test_a_few_renamed_modules_pair_by_class_shapes_and_place(dumps: dict[str, Path]) -> None:
    """One renamed layer among many pairing names is not a renamed model: no order fallback. Its calls pair only
    with the golden module of the same class and shapes between the same paired neighbours, one for one, and a
    note says so; a renamed module with other shapes stays unmatched."""
    g = _open(dumps["net_mix"])
    t = _open(dumps["net_mix_again"])
    entries = [replace(e, name=e.name.replace("Module.head.", "Module.proj."),
                       module_key=e.module_key.replace("Module.head.", "Module.proj.")) for e in t.entries]
    renamed = Dump(t.source, t.kind, entries, t.data_dir, t.meta)
    pairing = pair_entries(g, renamed)
    moved = [e.name for e in entries if e.name.startswith("Module.proj.")]
    partner = {p.target_name: (p.golden_name, p.method) for p in pairing.pairs}
    assert moved and not pairing.unmatched_target
    assert all(partner[n] == (n.replace("Module.proj.", "Module.head."), "renamed") for n in moved)
    assert not pairing.auto_order_fallback and not pairing.regions
    assert len(pairing.notes) == 1 and "module calls the target names differently" in pairing.notes[0]
    reshaped = [replace(e, shape=[*e.shape, 1]) if e.name.startswith("Module.proj.") and e.shape else e
                for e in entries]
    pairing = pair_entries(g, Dump(t.source, t.kind, reshaped, t.data_dir, t.meta))
    assert sorted(pairing.unmatched_target) == sorted(moved) and not pairing.notes


# --------------------------------------------------------------------------- fused regions


def _one_region(pairing: Pairing) -> Region:
    assert len(pairing.regions) == 1, pairing.regions
    assert pairing.notes == [pairing.regions[0].note] and not pairing.auto_order_fallback
    return pairing.regions[0]


def test_scaled_dot_product_attention_pairs_with_decomposed_attention(dumps: dict[str, Path]) -> None:
    g, t = _open(dumps["attn_L1"]), _open(dumps["attn_fused_L1"])
    pairing = pair_entries(g, t)
    sdpa = "Functional.scaled_dot_product_attention.0"
    region = _one_region(pairing)
    assert region.target_key == f"{sdpa}.forward" and region.golden_keys == ATTN_RUN
    assert "statistics agree" in region.note
    assert _partner(pairing, f"{sdpa}.forward.output.0") == ("Torch.matmul.1.forward.output.0", "region")
    assert _partner(pairing, f"{sdpa}.forward.input.0") == ("Torch.matmul.0.forward.input.0", "region")  # q
    assert _partner(pairing, f"{sdpa}.forward.input.2") == ("Torch.matmul.1.forward.input.1", "region")  # v
    # k reaches the golden matmul transposed (another shape): no partner rather than a misleading one
    assert f"{sdpa}.forward.input.1" in pairing.unmatched_target
    assert _partner(pairing, f"{sdpa}.backward.input.0") == ("Torch.matmul.1.backward.input.0", "region")
    assert {p.method for p in pairing.pairs if not p.target_name.startswith(sdpa)} == {"exact"}


def test_layer_norm_pairs_with_manual_layer_norm(dumps: dict[str, Path]) -> None:
    g, t = _open(dumps["norm_mix"]), _open(dumps["norm_fused_mix"])
    pairing = pair_entries(g, t)
    ln = "Functional.layer_norm.0"
    region = _one_region(pairing)
    assert region.target_key == f"{ln}.forward" and region.golden_keys == NORM_RUN
    expected = {
        f"{ln}.forward.input.0": "Tensor.mean.0.forward.input.0",  # x, its first consumer
        f"{ln}.forward.input.2": "Tensor.__mul__.0.forward.input.1",  # weight
        f"{ln}.forward.input.3": "Tensor.__add__.1.forward.input.1",  # bias
        f"{ln}.forward.output.0": "Tensor.__add__.1.forward.output.0",
        f"{ln}.backward.input.0": "Tensor.__add__.1.backward.input.0",
        f"{ln}.backward.output.1": "Tensor.__mul__.0.backward.output.1",  # weight grad
        f"{ln}.backward.output.2": "Tensor.__add__.1.backward.output.1",  # bias grad
    }
    for target_name, golden_name in expected.items():
        assert _partner(pairing, target_name) == (golden_name, "region"), target_name
    # x is consumed twice inside the golden run, so no single golden row holds its gradient
    assert pairing.unmatched_target == [f"{ln}.backward.output.0"]
    assert not any(p.golden_name.startswith(NORM_RUN) and p.method != "region" for p in pairing.pairs)


def test_fused_golden_layer_norm_pairs_with_manual_target_layer_norm(dumps: dict[str, Path]) -> None:
    """The mirror: the golden calls F.layer_norm and the target writes it out (a port without the kernel)."""
    g, t = _open(dumps["norm_fused_mix"]), _open(dumps["norm_mix"])
    pairing = pair_entries(g, t)
    ln = "Functional.layer_norm.0"
    region = _one_region(pairing)
    assert region.fused_side == "golden" and region.golden_keys == (f"{ln}.forward",)
    assert region.target_keys == NORM_RUN and region.target_key == NORM_RUN[0]
    assert region.note.startswith(f"the golden's fused {ln}.forward stands for 10 target ops")
    expected = {
        "Tensor.mean.0.forward.input.0": f"{ln}.forward.input.0",
        "Tensor.__mul__.0.forward.input.1": f"{ln}.forward.input.2",
        "Tensor.__add__.1.forward.input.1": f"{ln}.forward.input.3",
        "Tensor.__add__.1.forward.output.0": f"{ln}.forward.output.0",
        "Tensor.__add__.1.backward.input.0": f"{ln}.backward.input.0",
        "Tensor.__mul__.0.backward.output.1": f"{ln}.backward.output.1",
        "Tensor.__add__.1.backward.output.1": f"{ln}.backward.output.2",
    }
    for target_name, golden_name in expected.items():
        assert _partner(pairing, target_name) == (golden_name, "region"), target_name
    assert pairing.unmatched_golden == [f"{ln}.backward.output.0"]  # x's gradient: no single target row
    assert not any(p.target_name.startswith(NORM_RUN) and p.method != "region" for p in pairing.pairs)


def test_fused_golden_attention_pairs_with_decomposed_target_attention(dumps: dict[str, Path]) -> None:
    g, t = _open(dumps["attn_fused_L1"]), _open(dumps["attn_L1"])
    pairing = pair_entries(g, t)
    sdpa = "Functional.scaled_dot_product_attention.0"
    region = _one_region(pairing)
    assert region.fused_side == "golden" and region.golden_keys == (f"{sdpa}.forward",)
    assert region.target_keys == ATTN_RUN
    assert _partner(pairing, "Torch.matmul.1.forward.output.0") == (f"{sdpa}.forward.output.0", "region")
    assert _partner(pairing, "Torch.matmul.0.forward.input.0") == (f"{sdpa}.forward.input.0", "region")


@pytest.mark.parametrize("golden,target,run,last", [
    ("attn_L1", "attn_fused_L1", ATTN_RUN, "Torch.matmul.1.forward.output.0"),
    ("norm_mix", "norm_fused_mix", NORM_RUN, "Tensor.__add__.1.forward.output.0"),
])
def test_regions_without_statistics_use_shapes_and_order(dumps: dict[str, Path], golden: str, target: str,
                                                         run: tuple[str, ...], last: str) -> None:
    pairing = pair_entries(_open(dumps[golden], stats=False), _open(dumps[target], stats=False))
    region = _one_region(pairing)
    assert region.golden_keys == run and "no statistics" in region.note
    assert _partner(pairing, f"{region.target_key}.output.0") == (last, "region")
    assert _partner(pairing, f"{region.target_key}.input.0") == (f"{run[0]}.input.0", "region")
    region_pairs = [p for p in pairing.pairs if p.method == "region"]
    assert len(region_pairs) == 3  # first input, output, incoming gradient: nothing guessed beyond that


# --------------------------------------------------------------------------- nothing to repair


@pytest.mark.parametrize("golden,target", [("net_mix", "net_mix_again"), ("attn_L1", "attn_L1"),
                                           ("norm_fused_mix", "norm_fused_mix"), ("net_L0", "net_L0")])
def test_identical_dumps_need_no_fallback_and_no_region(dumps: dict[str, Path], golden: str, target: str) -> None:
    g, t = _open(dumps[golden]), _open(dumps[target])
    pairing = pair_entries(g, t)
    assert {p.method for p in pairing.pairs} == {"exact"} and len(pairing.pairs) == len(t.entries)
    assert not pairing.unmatched_target and not pairing.unmatched_golden
    assert not pairing.auto_order_fallback and not pairing.notes and not pairing.regions
