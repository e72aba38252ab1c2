"""Which layers must stay in FP32 for a model to be accurate in BF16/FP16: a search on the CPU.

The migration's "_hp" step keeps layers in high precision one by one until the output is accurate.
Prefix/suffix bisection (Polygraphy's) assumes the culprits are contiguous; they rarely are (one
attention softmax, one norm with a tiny epsilon). So the search is error-ranked and greedy with
pruning: rank every eligible module by the output error it causes alone in low precision, keep the
worst in FP32 one at a time until the output is within tolerance, then drop any kept module whose
removal still meets it. Each evaluation is one forward pass; a model with N eligible modules costs
about 3N passes.

A module "in low precision" has its own parameters and floating buffers cast (restored bit-exact
afterwards from the saved FP32 tensors), its floating inputs cast on entry and its floating outputs
cast back to FP32 on exit, as an autocast-free mixed-precision run would.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from acc_agent.numerics.arrays import FloatArray

if TYPE_CHECKING:
    import torch
    from torch.utils.hooks import RemovableHandle

#: Module types cast as one unit (their children are not cast separately).
_UNIT_TYPES = ("Linear", "Conv1d", "Conv2d", "Conv3d", "ConvTranspose1d", "ConvTranspose2d", "ConvTranspose3d",
               "Embedding", "EmbeddingBag", "LayerNorm", "GroupNorm", "BatchNorm1d", "BatchNorm2d", "BatchNorm3d",
               "InstanceNorm1d", "InstanceNorm2d", "InstanceNorm3d", "RMSNorm", "MultiheadAttention", "Bilinear")


@dataclass
class Step:
    step: str
    keep: list[str]
    error: float


@dataclass
class BisectResult:
    eligible: list[str]
    error_all_low: float
    keep: list[str]
    error_keep: float | None
    sensitivity: dict[str, float]
    steps: list[Step] = field(default_factory=list)


def eligible_modules(model: torch.nn.Module) -> list[str]:
    """Names of the modules that hold weights, outermost unit first (children of a unit excluded)."""
    names: list[str] = []
    units: list[str] = []
    for name, module in model.named_modules():
        if not name or any(name.startswith(u + ".") for u in units):
            continue
        own = any(True for _ in module.parameters(recurse=False))
        weights = own or any(True for _ in module.parameters())
        if weights and (type(module).__name__ in _UNIT_TYPES or own):
            units.append(name)
            names.append(name)
    return names


class _LowPrecision:
    """Context manager: the named modules run in ``dtype``, everything restored on exit."""

    def __init__(self, model: torch.nn.Module, names: Iterable[str], dtype: torch.dtype) -> None:
        self._modules = dict(model.named_modules())
        self._names = list(names)
        self._dtype = dtype
        self._saved: list[tuple[torch.nn.Module, str, torch.Tensor]] = []
        self._hooks: list[RemovableHandle] = []

    def __enter__(self) -> _LowPrecision:
        import torch

        low = self._dtype

        def cast_in(_m: torch.nn.Module, args: tuple[object, ...],
                    kwargs: dict[str, object]) -> tuple[tuple[object, ...], dict[str, object]]:
            return tuple(_cast(a, low) for a in args), {k: _cast(v, low) for k, v in kwargs.items()}

        def cast_out(_m: torch.nn.Module, _args: tuple[object, ...], out: object) -> object:
            return _cast(out, torch.float32)

        for name in self._names:
            m = self._modules[name]
            for holder in m.modules():
                for pname, p in list(holder.named_parameters(recurse=False)):
                    if p.is_floating_point():
                        self._saved.append((holder, pname, p.data))
                        p.data = p.data.to(low)
                for bname, b in list(holder.named_buffers(recurse=False)):
                    if b is not None and b.is_floating_point():
                        self._saved.append((holder, bname, b))
                        setattr(holder, bname, b.to(low))
            self._hooks.append(m.register_forward_pre_hook(cast_in, with_kwargs=True))
            self._hooks.append(m.register_forward_hook(cast_out))
        return self

    def __exit__(self, *_exc: object) -> None:
        for h in self._hooks:
            h.remove()
        for holder, attr, original in reversed(self._saved):
            if attr in dict(holder.named_parameters(recurse=False)):
                getattr(holder, attr).data = original
            else:
                setattr(holder, attr, original)


def _cast(value: object, dtype: torch.dtype) -> object:
    import torch

    if isinstance(value, torch.Tensor):
        return value.to(dtype) if value.is_floating_point() else value
    if isinstance(value, tuple):
        return tuple(_cast(v, dtype) for v in value)
    if isinstance(value, list):
        return [_cast(v, dtype) for v in value]
    if isinstance(value, dict):
        return {k: _cast(v, dtype) for k, v in value.items()}
    return value


def _flat_output(out: object) -> FloatArray:
    import torch

    parts: list[FloatArray] = []

    def walk(v: object) -> None:
        if isinstance(v, torch.Tensor):
            if v.is_floating_point():
                parts.append(v.detach().to(torch.float64).reshape(-1).numpy())
        elif isinstance(v, list | tuple):
            for x in v:
                walk(x)
        elif isinstance(v, dict):
            for x in v.values():
                walk(x)
        elif hasattr(v, "to_tuple"):  # HF ModelOutput
            walk(v.to_tuple())

    walk(out)
    return np.concatenate(parts) if parts else np.zeros(0)


def rel_error(out: FloatArray, golden: FloatArray) -> float:
    if out.shape != golden.shape:
        return math.inf
    if not np.isfinite(out).all():
        return math.inf
    denom = float(np.linalg.norm(golden))
    num = float(np.linalg.norm(out - golden))
    return num / denom if denom > 0 else (0.0 if num == 0 else math.inf)


def bisect(model: torch.nn.Module, inputs: object, low: torch.dtype, tolerance: float,
           progress: Callable[[str], None] | None = None) -> BisectResult:
    """The search (see the module docstring) on ``model(*inputs)`` with ``low`` as the low precision.

    ``inputs`` is whatever the model takes: a tuple or list of positional inputs, a dict of keyword
    inputs, or a single input."""
    import torch

    say = progress or (lambda _m: None)
    model.eval()

    def forward() -> FloatArray:
        with torch.no_grad():
            if isinstance(inputs, dict):
                return _flat_output(model(**inputs))
            if isinstance(inputs, list | tuple):
                return _flat_output(model(*inputs))
            return _flat_output(model(inputs))

    golden = forward()
    eligible = eligible_modules(model)
    steps: list[Step] = []

    def error(low_set: Sequence[str], label: str, keep: list[str]) -> float:
        with _LowPrecision(model, low_set, low):
            e = rel_error(forward(), golden)
        steps.append(Step(label, list(keep), e))
        say(f"{label}: keep {len(keep)} in FP32 -> output error {e:.3g}")
        return e

    if not eligible:
        return BisectResult([], 0.0, [], None, {}, steps)
    all_low = error(eligible, "all_low", [])
    if all_low <= tolerance:
        return BisectResult(eligible, all_low, [], all_low, {}, steps)
    sensitivity = {name: error([name], f"single:{name}", [n for n in eligible if n != name]) for name in eligible}
    ranked = sorted(eligible, key=lambda n: (-_finite(sensitivity[n]), eligible.index(n)))
    keep: list[str] = []
    current = all_low
    for name in ranked:
        keep.append(name)
        current = error([n for n in eligible if n not in keep], f"add:{name}", keep)
        if current <= tolerance:
            break
    if current > tolerance:
        return BisectResult(eligible, all_low, keep, current, sensitivity, steps)
    for name in reversed(list(keep)):
        trial = [n for n in keep if n != name]
        e = error([n for n in eligible if n not in trial], f"drop:{name}", trial)
        if e <= tolerance:
            keep, current = trial, e
    return BisectResult(eligible, all_low, [n for n in eligible if n in keep], current, sensitivity, steps)


def _finite(v: float) -> float:
    return v if math.isfinite(v) else 1e300
