"""The generator's own checks: a case's dumps must show its fault exactly where its spec says.

These read dump.json (and the ``.pt`` files beside it) directly with torch, independently of
acc_agent, so a wrong expected answer is caught here and never blamed on the diagnosis. They also
measure the numbers quoted in each case's description (how far the faulty call is off, how quiet
everything before it is).
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from .specs import CaseSpec

#: Relative L2 error up to which a target tensor "agrees" with golden's, by the target's dtype when the
#: dtypes differ (rounding noise of that precision in these tiny models, with margin) and for the same
#: dtype (bit-identical in practice; the fused layer norm differs by ~1e-7).
AGREE_TOL = {"same": 1e-5, "float16": 2e-3, "bfloat16": 1e-2}
#: A tensor "differs" only when its error is this many times the agreement bound: no borderline case.
DIFFER_FACTOR = 2.0


class CaseError(AssertionError):
    """The generated dumps do not show the case's fault as its spec says (a generator bug)."""


@dataclass
class Side:
    """One rank's dump: its entries in execution order and the folder of its tensor files."""

    data: dict[str, dict[str, Any]]
    data_dir: Path
    task: str
    scale: float = 1.0  # divide this side's tensors by it before comparing (a loss-scaled backward pass)

    @classmethod
    def load(cls, rank_dir: Path) -> Side:
        doc = json.loads((rank_dir / "dump.json").read_text(encoding="utf-8"))
        return cls(doc["data"], rank_dir / "dump_tensor_data", doc.get("task", ""))


@dataclass
class Diff:
    """How one argument/output of a call compares between golden and target."""

    kind: str  # tensor | scalar | missing
    equal: bool  # bit-identical data, same md5, same statistics, or the same scalar value
    rel_l2: float | None = None  # ||t - g|| / ||g|| over finite elements (statistics: largest stat change)
    cosine: float | None = None
    golden_inf: int = 0
    target_inf: int = 0
    note: str = ""

    def agrees(self, tol: float) -> bool:
        if self.equal:
            return True
        if self.kind != "tensor" or self.rel_l2 is None or self.note == "md5":
            return False
        # a recorded statistic is one value rounded to the tensor's dtype (a Mean near zero moves by more than the
        # tensor's elements do): twice the bound
        bound = 2.0 * tol if self.note in ("statistics", "md5 differs") else tol
        return self.rel_l2 <= bound and (self.golden_inf > 0) == (self.target_inf > 0)

    def differs(self, tol: float) -> bool:
        if self.equal:
            return False
        if self.kind != "tensor" or self.note in ("md5", "md5 differs"):
            return True  # other bytes (with statistics that may still agree within rounding)
        if (self.golden_inf > 0) != (self.target_inf > 0):
            return True
        return self.rel_l2 is not None and self.rel_l2 > DIFFER_FACTOR * tol

    def text(self) -> str:
        if self.kind == "scalar" or self.note.startswith("value"):
            return self.note
        if self.note == "md5":
            return "md5 " + ("equal" if self.equal else "differs")
        if self.equal:
            return "bit-identical"
        parts = [f"rel L2 {self.rel_l2:.4g}" if self.rel_l2 is not None else "rel L2 n/a"]
        if self.cosine is not None:
            parts.append(f"cosine {self.cosine:.6f}")
        if self.golden_inf or self.target_inf:
            parts.append(f"Inf golden {self.golden_inf} / target {self.target_inf}")
        return ", ".join(parts)


def leaves(entry: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    """(argument name, leaf) of a dump.json entry, named as msprobe names its tensor files.

    Positional arguments are ``input.N`` (nested: ``input.N.M``), keyword arguments ``kwargs.NAME``,
    outputs ``output.N``; a backward entry has ``input`` (incoming gradients) and ``output``.
    """
    out: list[tuple[str, dict[str, Any]]] = []

    def walk(value: Any, prefix: str) -> None:
        if isinstance(value, dict) and "type" in value:
            out.append((prefix, value))
        elif isinstance(value, dict):
            for k, v in value.items():
                walk(v, f"{prefix}.{k}")
        elif isinstance(value, list | tuple):
            for i, v in enumerate(value):
                walk(v, f"{prefix}.{i}")

    for part, value in entry.items():
        if part in ("input_args", "input"):
            walk(value, "input")
        elif part == "input_kwargs":
            walk(value, "kwargs")
        elif part == "output":
            walk(value, "output")
        elif part == "parameters":
            walk(value, "parameters")
    return out


def _load_tensor(side: Side, leaf: dict[str, Any]) -> Any:
    import torch

    return torch.load(side.data_dir / leaf["data_name"], weights_only=True, map_location="cpu")


def _stat(leaf: dict[str, Any], key: str) -> float | None:
    v = leaf.get(key)
    return float(v) if isinstance(v, int | float) and not isinstance(v, bool) else None


def diff_leaf(g: Side, gl: dict[str, Any] | None, t: Side, tl: dict[str, Any] | None) -> Diff:
    """Compare one golden leaf with one target leaf (tensor data, md5, statistics or scalar value)."""
    if gl is None or tl is None:
        return Diff("missing", False, note="missing on one side")
    if t.scale != 1.0 and "value" not in tl:
        # a loss-scaled gradient: its statistics divided by the scale, its digest says nothing any more
        tl = {k: (v / t.scale if k in ("Max", "Min", "Mean", "Norm") and isinstance(v, int | float) else v)
              for k, v in tl.items() if k != "md5"}
        if "data_name" in gl and "data_name" in tl:
            return _diff_data(_load_tensor(g, gl), _load_tensor(t, tl) / t.scale)
    if "value" in gl or "value" in tl:
        gv, tv = gl.get("value"), tl.get("value")
        return Diff("scalar", gv == tv, note=f"value {gv!r}" if gv == tv else f"value {gv!r} -> {tv!r}")
    if "md5" in gl and "md5" in tl:
        if gl["md5"] == tl["md5"] or _stat(gl, "Max") is None or _stat(tl, "Max") is None:
            return Diff("tensor", gl["md5"] == tl["md5"], note="md5")
        # another digest: msprobe's md5 mode records the statistics too, which tell rounding from a real change
        d = _diff_stats(gl, tl)
        return Diff("tensor", False, rel_l2=d.rel_l2, golden_inf=d.golden_inf, target_inf=d.target_inf,
                    note="md5 differs")
    if "data_name" in gl and "data_name" in tl:
        return _diff_data(_load_tensor(g, gl), _load_tensor(t, tl))
    return _diff_stats(gl, tl)


def _diff_data(gt: Any, tt: Any) -> Diff:
    import torch

    if list(gt.shape) != list(tt.shape):
        return Diff("tensor", False, rel_l2=math.inf, note=f"shape {list(gt.shape)} vs {list(tt.shape)}")
    if gt.dtype in (torch.bool,) or not gt.is_floating_point():
        mismatch = int((gt.to(torch.int64) != tt.to(torch.int64)).sum())
        return Diff("tensor", mismatch == 0, rel_l2=0.0 if mismatch == 0 else math.inf,
                    note="" if mismatch == 0 else f"value {mismatch} of {gt.numel()} elements differ")
    g64, t64 = gt.to(torch.float64).flatten(), tt.to(torch.float64).flatten()
    g_inf, t_inf = int(torch.isinf(g64).sum()), int(torch.isinf(t64).sum())
    if gt.dtype == tt.dtype and torch.equal(gt, tt):
        return Diff("tensor", True, rel_l2=0.0, cosine=1.0, golden_inf=g_inf, target_inf=t_inf)
    finite = torch.isfinite(g64) & torch.isfinite(t64)
    gf, tf = g64[finite], t64[finite]
    norm = float(gf.norm())
    rel = float((tf - gf).norm()) / norm if norm > 0 else float((tf - gf).norm())
    denom = norm * float(tf.norm())
    cos = float(gf @ tf) / denom if denom > 0 else None
    return Diff("tensor", False, rel_l2=rel, cosine=cos, golden_inf=g_inf, target_inf=t_inf)


def _diff_stats(gl: dict[str, Any], tl: dict[str, Any]) -> Diff:
    keys = ("Max", "Min", "Mean", "Norm")
    gs, ts = [_stat(gl, k) for k in keys], [_stat(tl, k) for k in keys]
    if gs == ts:
        return Diff("tensor", True, rel_l2=0.0)
    g_inf = sum(1 for v in gs if v is not None and math.isinf(v))
    t_inf = sum(1 for v in ts if v is not None and math.isinf(v))
    norm = gs[3] or 0.0
    numel = max(1, math.prod(gl.get("shape") or [1]))
    # Max/Min/Mean against the tensor's magnitude (a Min of 1e-5 moved by a rounding is not a 20 % change)
    magnitude = max(abs(gs[0] or 0.0), abs(gs[1] or 0.0), abs(norm) / math.sqrt(numel))
    scale = [magnitude, magnitude, magnitude, abs(norm)]
    # msprobe sums an fp16 tensor's Norm in fp16: past 65,536 elements the running sum of squares stops resolving
    # its terms (the 11.7M-element fp16 word-embedding table of MiniLM is recorded 1.1 % off)
    fp16_sides = sum(1 for leaf in (gl, tl) if str(leaf.get("dtype", "")).endswith("float16")
                     and not str(leaf.get("dtype", "")).endswith("bfloat16"))
    slack = [0.0, 0.0, 0.0, fp16_sides * 2.0**-11 * numel / 65536 if numel > 65536 else 0.0]
    worst = 0.0
    for gv, tv, sc, sl in zip(gs, ts, scale, slack, strict=True):
        if gv is None or tv is None or math.isinf(gv) or math.isinf(tv):
            continue
        worst = max(worst, abs(tv - gv) / max(sc, 1e-30) - sl)
    return Diff("tensor", False, rel_l2=worst, golden_inf=g_inf, target_inf=t_inf, note="statistics")


def tolerance(gl: dict[str, Any] | None, tl: dict[str, Any] | None) -> float:
    """The agreement bound for a pair of leaves: by the target dtype when the two dtypes differ."""
    gd = (gl or {}).get("dtype")
    td = str((tl or {}).get("dtype", "")).replace("torch.", "")
    if gd == (tl or {}).get("dtype"):
        return AGREE_TOL["same"]
    return AGREE_TOL.get(td, AGREE_TOL["same"])


def _api(key: str) -> str:
    """What a key calls: an API without its call number (``Functional.gelu.1.forward`` -> ``Functional.gelu``),
    a module's class (``Module.blocks.0.act.GELU.forward.0`` -> ``GELU``)."""
    parts = key.split(".")
    return parts[-3] if parts[0] == "Module" else ".".join(parts[:-2])


def diff_entries(g: Side, gkey: str, t: Side, tkey: str) -> dict[str, tuple[Diff, float]]:
    """Every leaf of one call, golden against target: argument name -> (diff, its agreement bound).

    Two different APIs (relu in place of gelu) have different keyword arguments by nature: an argument
    only one of them has is left out."""
    gleaves = dict(leaves(g.data[gkey]))
    tleaves = dict(leaves(t.data[tkey]))
    out: dict[str, tuple[Diff, float]] = {}
    for name in list(dict.fromkeys([*tleaves, *gleaves])):
        gl, tl = gleaves.get(name), tleaves.get(name)
        if (gl is None or tl is None) and _api(gkey) != _api(tkey):
            continue
        if gl is not None and tl is not None and _is_bool(gl) != _is_bool(tl):
            continue  # an additive float mask on one side, a boolean one on the other: numbers that do not compare
        out[name] = (diff_leaf(g, gl, t, tl), tolerance(gl, tl))
    return out


def _is_bool(leaf: dict[str, Any]) -> bool:
    return str(leaf.get("dtype", "")).endswith("bool")


def _is_input(name: str) -> bool:
    return name.startswith(("input", "kwargs", "parameters"))


def pairs(spec: CaseSpec, g: Side, t: Side) -> list[tuple[str, str]]:
    """(golden key, target key) in target order: by name, or by position when nothing pairs by name."""
    if spec.pair_by_order:
        gkeys, tkeys = list(g.data), list(t.data)
        if len(gkeys) != len(tkeys):
            raise CaseError(f"{spec.name}: {len(gkeys)} golden keys vs {len(tkeys)} target keys")
        return list(zip(gkeys, tkeys, strict=True))
    if spec.pair_by_shape:
        return _pairs_by_shape(g, t)
    golden_of = dict(spec.key_map)
    return [(golden_of.get(k, k), k) for k in t.data if golden_of.get(k, k) in g.data]


def _shapes(entry: dict[str, Any]) -> list[tuple[str, tuple[int, ...]]]:
    return [(name, tuple(leaf.get("shape") or ())) for name, leaf in leaves(entry)]


def _pairs_by_shape(g: Side, t: Side) -> list[tuple[str, str]]:
    """Each target call with the next golden call of the same API (after the last one paired) whose arguments
    and outputs have the same names and shapes: the golden's extra calls (a written-out attention's mask add
    and probability dropout) are stepped over, whatever they do to the call numbers."""
    by_api: dict[str, list[str]] = {}
    for key in g.data:
        by_api.setdefault(_api(key) + key.rsplit(".", 1)[-1], []).append(key)
    start: dict[str, int] = {}
    out: list[tuple[str, str]] = []
    for key in t.data:
        api = _api(key) + key.rsplit(".", 1)[-1]
        candidates, shape = by_api.get(api, []), _shapes(t.data[key])
        for i in range(start.get(api, 0), len(candidates)):
            if _shapes(g.data[candidates[i]]) == shape:
                out.append((candidates[i], key))
                start[api] = i + 1
                break
    return out


def rank_dirs(dump_root: Path, step: int = 0) -> dict[str, Path]:
    return {p.name: p for p in sorted((dump_root / f"step{step}").iterdir()) if (p / "dump.json").is_file()}


def verify(spec: CaseSpec, case_dir: Path) -> dict[str, Any]:
    """Check a generated case; returns the measured facts (for its description). Raises CaseError."""
    step = spec.step or 0  # the step whose dumps hold the fault
    golden_ranks, target_ranks = (rank_dirs(case_dir / "golden" / "dump", step),
                                  rank_dirs(case_dir / "target" / "dump", step))
    if list(golden_ranks) != list(target_ranks) or len(golden_ranks) != spec.world_size:
        raise CaseError(f"{spec.name}: ranks golden {list(golden_ranks)} target {list(target_ranks)}")
    rank = spec.rank or "rank0"
    g, t = Side.load(golden_ranks[rank]), Side.load(target_ranks[rank])
    facts: dict[str, Any] = {"keys_golden": len(g.data), "keys_target": len(t.data), "task": t.task}
    _check_keys(spec, g, t)
    if not spec.same_keys:
        facts["golden_only"] = [k for k in g.data if k not in t.data]
        facts["target_only"] = [k for k in t.data if k not in g.data]
    if spec.first_op is not None:
        facts.update(_check_fault(spec, g, t))
    if spec.clean or spec.drift:
        facts.update(_check_everywhere(spec, g, t))
    for other in golden_ranks:
        if other != rank:
            g_other, t_other = Side.load(golden_ranks[other]), Side.load(target_ranks[other])
            if spec.other_rank_first_diff:
                facts[f"{other}_first_diff"] = _check_other_rank(spec, g_other, t_other, other)
            elif spec.rank is not None:  # a case that names one rank: the others never see the fault
                _check_rank_clean(spec, g_other, t_other, other)
    if spec.target_inf_at:
        _check_inf(spec, g, t)
    if "bench" in spec.sides:
        facts.update(_check_bench(spec, case_dir, g, t))
    return facts


def _check_keys(spec: CaseSpec, g: Side, t: Side) -> None:
    if spec.same_keys and list(g.data) != list(t.data):
        only_g = [k for k in g.data if k not in t.data][:5]
        only_t = [k for k in t.data if k not in g.data][:5]
        raise CaseError(f"{spec.name}: key lists differ (golden only {only_g}, target only {only_t}): the "
                        "fault added or removed dumped calls")
    for prefix in spec.absent_prefixes:
        for side_name, side in (("golden", g), ("target", t)):
            hits = [k for k in side.data if k.startswith(prefix)]
            if hits:
                raise CaseError(f"{spec.name}: msprobe dumped {hits[0]} on {side_name}; the case assumes it "
                                "does not")


def _describe(diffs: dict[str, tuple[Diff, float]], names: list[str]) -> str:
    return "; ".join(f"{n} {diffs[n][0].text()}" for n in names)


def _module_path(key: str) -> str | None:
    """``Module.encoder.layer.3.BertLayer.forward.0`` -> ``encoder.layer.3``; None for API calls."""
    parts = key.split(".")
    if parts[0] != "Module" or len(parts) < 4:
        return None
    return ".".join(parts[1:-3])


def _encloses(key: str, inner: str) -> bool:
    """Whether module call ``key`` is a module around module call ``inner`` (its path a prefix of inner's)."""
    outer, path = _module_path(key), _module_path(inner)
    return outer is not None and path is not None and outer != path and (outer == "" or path.startswith(outer + "."))


def _carried(spec: CaseSpec, tol: float) -> float:
    """The agreement bound of a tensor, widened to the low precision its float32 values were computed from, if any."""
    return max(tol, AGREE_TOL[spec.autocast]) if spec.autocast is not None else tol


def _check_fault(spec: CaseSpec, g: Side, t: Side) -> dict[str, Any]:
    first = spec.first_op
    assert first is not None
    gfirst = spec.golden_first_op or dict(spec.key_map).get(first, first)
    if first not in t.data:
        raise CaseError(f"{spec.name}: target dump has no key {first}")
    if gfirst not in g.data:
        raise CaseError(f"{spec.name}: golden dump has no key {gfirst}")
    paired = pairs(spec, g, t)
    before_noise = 0.0
    compared = 0
    for gkey, tkey in paired:
        if tkey == first:
            if gkey != gfirst:
                raise CaseError(f"{spec.name}: {first} pairs with golden {gkey}, expected {gfirst}")
            break
        if _encloses(tkey, first):
            continue  # a module around the faulty call is recorded where it starts, and its output holds the fault
        for name, (d, tol) in diff_entries(g, gkey, t, tkey).items():
            compared += 1
            if not d.agrees(_carried(spec, tol)):
                raise CaseError(f"{spec.name}: {tkey} {name} already differs before {first}: {d.text()}")
            if d.rel_l2 is not None:
                before_noise = max(before_noise, d.rel_l2)
    diffs = diff_entries(g, gfirst, t, first)
    expected_bad = set(spec.differing_inputs or ((spec.argument,) if spec.argument and not spec.argument_hidden
                                                 else ()))
    inputs = [n for n in diffs if _is_input(n)]
    outputs = [n for n in diffs if not _is_input(n)]
    for name in inputs:
        d, tol = diffs[name]
        tol = _carried(spec, tol)
        if name in expected_bad and not d.differs(tol):
            raise CaseError(f"{spec.name}: {first} {name} should differ but {d.text()}")
        if name not in expected_bad and not d.agrees(tol):
            raise CaseError(f"{spec.name}: {first} {name} should agree but {d.text()}")
    missing = expected_bad - set(inputs)
    if missing:
        raise CaseError(f"{spec.name}: {first} has no argument {sorted(missing)} (has {inputs})")
    if spec.jump_over_inputs is not None:
        # a fault under the precision's agreement bar: it must still show as a jump at the faulty call
        incoming = max((diffs[n][0].rel_l2 or 0.0 for n in inputs), default=0.0)
        if not any((diffs[n][0].rel_l2 or 0.0) >= spec.jump_over_inputs * incoming > 0 for n in outputs):
            raise CaseError(f"{spec.name}: no output of {first} jumps {spec.jump_over_inputs}x over its inputs' "
                            f"error {incoming:.3g}: {_describe(diffs, outputs)}")
    elif spec.shows_at is not None:
        if not all(diffs[n][0].agrees(diffs[n][1]) for n in outputs):
            raise CaseError(f"{spec.name}: {first}'s outputs should keep the golden's statistics: "
                            f"{_describe(diffs, outputs)}")
        later = diff_entries(g, spec.shows_at, t, spec.shows_at)
        if not any(d.differs(tol) for n, (d, tol) in later.items() if not _is_input(n)):
            raise CaseError(f"{spec.name}: no output of {spec.shows_at} differs: {later}")
    elif not any(diffs[n][0].differs(diffs[n][1]) for n in outputs):
        raise CaseError(f"{spec.name}: no output of {first} differs: {_describe(diffs, outputs)}")
    return {
        "first_op_inputs": _describe(diffs, inputs),
        "first_op_outputs": _describe(diffs, outputs),
        "keys_before": sum(1 for _, k in paired[: [k for _, k in paired].index(first)]),
        "leaves_before": compared,
        "noise_before": before_noise,
    }


def _check_everywhere(spec: CaseSpec, g: Side, t: Side) -> dict[str, Any]:
    """Clean cases: every paired tensor within the precision's noise. Drift: every linear a bit off."""
    worst = ("", 0.0)
    closest = 0.0
    linear_errors: list[tuple[str, float]] = []
    for gkey, tkey in pairs(spec, g, t):
        scaled = spec.loss_scale != 1.0 and (".backward" in tkey or "parameters_grad" in tkey)
        for name, (d, tol) in diff_entries(g, gkey, replace(t, scale=spec.loss_scale) if scaled else t, tkey).items():
            if (tkey, name) in spec.recorded_otherwise:
                continue
            tol = _carried(spec, tol)
            # a parameter's gradient sums every position's rounding, and a backward tensor carries the rounding of
            # the whole forward pass and of the backward so far (a 6-layer BERT's fp16 attention gradients move
            # 0.5 %): four times the bar (the diagnosis's allowance for reductions); a CNN's ReLU backward masks flip
            # where rounding moved the saved input across zero (``gradient_bar``)
            gradient = ".backward" in tkey
            bar = (spec.gradient_bar if gradient else spec.forward_bar) * tol
            if spec.clean and not d.agrees(bar):
                raise CaseError(f"{spec.name}: {tkey} {name} is beyond rounding noise: {d.text()}")
            if spec.clean and d.rel_l2 is not None and not d.equal:
                # how close this clean case comes to its bar (a CPU that rounds a little otherwise must not cross it)
                statistic = 2.0 if d.note in ("statistics", "md5 differs") else 1.0
                closest = max(closest, d.rel_l2 / (statistic * bar))
            if d.rel_l2 is not None and d.rel_l2 > worst[1]:
                worst = (f"{tkey} {name}", d.rel_l2)
            if spec.drift and tkey.startswith("Functional.linear.") and name == "output.0":
                linear_errors.append((tkey, d.rel_l2 or 0.0))
    facts: dict[str, Any] = {"worst_row": worst[0], "worst_rel_l2": worst[1]}
    if spec.clean:
        facts["share_of_noise_bar"] = round(closest, 3)
    if spec.drift:
        errs = [e for _, e in linear_errors]
        jumps = any(b > 2.0 * a for a, b in zip(errs, errs[1:], strict=False))
        if not errs or errs[0] <= 0 or max(errs) < 1.5 * errs[0] or max(errs) > 0.05 or jumps:
            raise CaseError(f"{spec.name}: linear output errors do not drift gradually: {linear_errors}")
        facts["linear_rel_l2"] = {k: round(e, 6) for k, e in linear_errors}
    return facts


def _check_rank_clean(spec: CaseSpec, g: Side, t: Side, rank: str) -> None:
    """A rank the fault never reaches: every tensor of every key agrees (a case that names one rank)."""
    for key in t.data:
        diffs = diff_entries(g, key, t, key)
        bad = [n for n, (d, tol) in diffs.items() if not d.agrees(tol)]
        if bad:
            raise CaseError(f"{spec.name}: {rank} differs at {key} ({bad}); the case says only {spec.rank} does")


def _check_other_rank(spec: CaseSpec, g: Side, t: Side, rank: str) -> str:
    for key in t.data:
        diffs = diff_entries(g, key, t, key)
        bad = [n for n, (d, tol) in diffs.items() if not d.agrees(tol)]
        if not bad:
            continue
        if key != spec.other_rank_first_diff:
            raise CaseError(f"{spec.name}: {rank} first differs at {key} ({bad}), expected "
                            f"{spec.other_rank_first_diff}")
        if any(_is_input(n) for n in bad):
            raise CaseError(f"{spec.name}: {rank} {key} has differing inputs {bad}")
        return f"{key}: {_describe(diffs, bad)}"
    raise CaseError(f"{spec.name}: {rank} never differs")


def _check_inf(spec: CaseSpec, g: Side, t: Side) -> None:
    def has_inf(side: Side, leaf: dict[str, Any]) -> bool:
        if "data_name" in leaf:
            import torch

            data = _load_tensor(side, leaf)
            return bool(data.is_floating_point() and torch.isinf(data).any())
        return any(isinstance(leaf.get(k), float) and math.isinf(leaf[k]) for k in ("Max", "Min"))

    for key, entry in g.data.items():
        if any(has_inf(g, leaf) for _, leaf in leaves(entry) if "dtype" in leaf):
            raise CaseError(f"{spec.name}: golden {key} holds Inf")
    for key, entry in t.data.items():
        outs = [leaf for n, leaf in leaves(entry) if not _is_input(n) and "dtype" in leaf]
        ins = [leaf for n, leaf in leaves(entry) if _is_input(n) and "dtype" in leaf]
        if any(has_inf(t, leaf) for leaf in outs):
            if key != spec.target_inf_at or any(has_inf(t, leaf) for leaf in ins):
                raise CaseError(f"{spec.name}: first Inf output at {key}, expected {spec.target_inf_at} with "
                                "finite inputs")
            return
    raise CaseError(f"{spec.name}: target never overflows")


def _check_bench(spec: CaseSpec, case_dir: Path, g: Side, t: Side) -> dict[str, Any]:
    b = Side.load(rank_dirs(case_dir / "bench" / "dump")["rank0"])
    if list(b.data) != list(t.data):
        raise CaseError(f"{spec.name}: bench and target key lists differ")
    worst = 0.0
    for key in b.data:
        for name, (d, tol) in diff_entries(g, key, b, key).items():
            if not d.agrees(tol):
                raise CaseError(f"{spec.name}: bench {key} {name} beyond rounding noise: {d.text()}")
            worst = max(worst, d.rel_l2 or 0.0)
    return {"bench_worst_rel_l2": worst}
