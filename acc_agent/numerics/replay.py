"""Re-run one recorded torch API call on the CPU and say whether the kernel or its inputs are at fault.

The first diverging call has two possible stories: the target's kernel computed something else from
the same inputs (a vendor bug, with a reproduction to send), or different inputs or arguments
reached it (a migration bug upstream). Re-running the call from the target's own recorded inputs,
in their recorded dtypes, tells them apart: the re-run reproduces the golden's output -> the kernel;
it reproduces the target's output -> the inputs. The same re-run from the golden's inputs must give
the golden's output first, or the replay itself is not faithful and nothing is concluded.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

import numpy as np

from acc_agent.errors import AccAgentError
from acc_agent.io.dump_calls import DtypeRef, RecordedCall, TensorRef
from acc_agent.numerics import budgets
from acc_agent.numerics.arrays import Array

if TYPE_CHECKING:
    import torch

    from acc_agent.io.dumps import Dump

#: API prefixes that can run on the CPU, and where their function lives.
_NAMESPACES = ("Functional", "Torch", "Tensor", "Aten")


@dataclass
class Comparison:
    """How far one output is from another: relative L2 error, cosine, largest absolute difference."""

    rel_l2: float | None
    cosine: float | None
    max_abs: float | None

    def within(self, tol: float) -> bool:
        return self.rel_l2 is not None and self.rel_l2 <= tol


def parse_key(key: str) -> tuple[str, str, str]:
    """``Functional.gelu.1.forward`` -> (``Functional``, ``gelu``, ``forward``);
    ``Module.blocks.0.fc.Linear.forward.0`` -> (``Module``, ``Linear``, ``forward``)."""
    parts = key.split(".")
    if parts[0] == "Module" and len(parts) >= 4 and parts[-2] in ("forward", "backward") and parts[-1].isdigit():
        return "Module", parts[-3], parts[-2]
    if len(parts) < 4 or parts[-1] not in ("forward", "backward") or not parts[-2].isdigit():
        raise AccAgentError("invalid_call_key", f"{key!r} is not a call key like Functional.gelu.1.forward",
                            hint="Pass the call as compare-dumps names it: API type, API name, call number, "
                                 "forward (e.g. Functional.gelu.1.forward or Torch.pow.0.forward).")
    return parts[0], ".".join(parts[1:-2]), parts[-1]


def resolve(key: str) -> Callable[..., object]:
    """The CPU function of a recorded API call (Functional.*, Torch.*, Tensor.*, Aten.*)."""
    import torch

    space, name, direction = parse_key(key)
    if direction != "forward":
        raise AccAgentError("cannot_replay", f"{key} is a backward call: its inputs are gradients the autograd "
                                             "graph produced, which a single call cannot re-create",
                            hint="Replay the forward call of the same API (the .forward key with the same number).")
    if space == "Module":
        builder = MODULES.get(name)
        if builder is None:
            raise AccAgentError("cannot_replay", f"{key}: a {name} module cannot be rebuilt from a dump (only "
                                                 f"{', '.join(sorted(MODULES))} can, from their recorded parameters)",
                                hint="Replay the API calls inside it (dump at level mix to record them).")
        return builder
    if space not in _NAMESPACES:
        why = {"Distributed": "a collective needs the other ranks", "NPU": "an NPU-only API has no CPU kernel",
               "Jit": "a scripted graph is not recorded as code"}.get(space, f"{space}.* calls are not replayable")
        raise AccAgentError("cannot_replay", f"{key}: {why}",
                            hint="Replay the API calls inside it (dump at level L1 or mix to record them).")
    holder: object = {"Functional": torch.nn.functional, "Torch": torch, "Tensor": torch.Tensor,
                      "Aten": torch.ops.aten}[space]
    fn: object = holder
    for part in name.split("."):
        fn = getattr(fn, part, None)
        if fn is None:
            raise AccAgentError("cannot_replay", f"{key}: torch {torch.__version__} has no {space}.{name}",
                                hint="Replay with the torch version the dump was made with.")
    if not callable(fn):  # msprobe records calls only: a dump naming anything else was edited by hand
        raise AccAgentError("cannot_replay", f"{key}: torch {torch.__version__} {space}.{name} is not a function",
                            hint="Pass the call as compare-dumps names it (a row of compare_dumps).")
    return fn


class ModuleCall(Protocol):
    """A module's forward re-created as a function of its input and its recorded parameters."""

    def __call__(self, x: torch.Tensor, /, *, params: Mapping[str, torch.Tensor]) -> torch.Tensor: ...


def _linear(x: torch.Tensor, *, params: Mapping[str, torch.Tensor]) -> torch.Tensor:
    import torch.nn.functional as F

    return F.linear(x, params["weight"], params.get("bias"))


def _embedding(ids: torch.Tensor, *, params: Mapping[str, torch.Tensor]) -> torch.Tensor:
    import torch.nn.functional as F

    return F.embedding(ids, params["weight"])


def _layer_norm(x: torch.Tensor, *, params: Mapping[str, torch.Tensor]) -> torch.Tensor:
    import torch.nn.functional as F

    w = params.get("weight")
    shape = tuple(w.shape) if w is not None else (x.shape[-1],)
    return F.layer_norm(x, shape, w, params.get("bias"))  # eps is not recorded: the default, checked by replay_check


def _conv(dim: int) -> ModuleCall:
    def run(x: torch.Tensor, *, params: Mapping[str, torch.Tensor]) -> torch.Tensor:
        import torch.nn.functional as F

        conv = {1: F.conv1d, 2: F.conv2d, 3: F.conv3d}[dim]
        return conv(x, params["weight"], params.get("bias"))  # default stride/padding, checked by replay_check

    return run


def _elementwise(name: str) -> ModuleCall:
    def run(x: torch.Tensor, *, params: Mapping[str, torch.Tensor]) -> torch.Tensor:
        import torch
        import torch.nn.functional as F

        table: dict[str, Callable[[torch.Tensor], torch.Tensor]] = {
            "GELU": F.gelu, "ReLU": F.relu, "SiLU": F.silu, "Tanh": torch.tanh, "Sigmoid": torch.sigmoid,
            "Identity": lambda v: v, "Dropout": lambda v: v}
        return table[name](x)

    return run


#: Modules a dump holds enough of to re-run: the class name -> the call from its input and parameters.
#: Settings a dump does not record (eps, stride, GELU approximation) take torch's defaults; a module
#: built otherwise fails the replay check (its golden re-run differs from the golden's output).
MODULES: dict[str, ModuleCall] = {
    "Linear": _linear, "NonDynamicallyQuantizableLinear": _linear, "Embedding": _embedding,
    "LayerNorm": _layer_norm, "Conv1d": _conv(1), "Conv2d": _conv(2), "Conv3d": _conv(3),
    **{n: _elementwise(n) for n in ("GELU", "ReLU", "SiLU", "Tanh", "Sigmoid", "Identity", "Dropout")},
}


def torch_dtype(name: str | None) -> torch.dtype | None:
    import torch

    if not name:
        return None
    dt = getattr(torch, name.removeprefix("torch."), None)
    return dt if isinstance(dt, torch.dtype) else None


def to_torch(arr: Array, dtype_name: str | None) -> torch.Tensor:
    """numpy (bf16/fp8 via ml-dtypes) -> torch tensor in the recorded dtype."""
    import torch

    want = torch_dtype(dtype_name)
    if arr.dtype.name in ("bfloat16", "float8_e4m3fn", "float8_e5m2"):
        t = torch.from_numpy(np.ascontiguousarray(arr.astype(np.float32)))
    else:
        t = torch.from_numpy(np.ascontiguousarray(arr))
    return t.to(want) if want is not None and t.dtype != want else t


def to_numpy(t: torch.Tensor) -> Array:
    return np.asarray(t.detach().to("cpu").float().numpy() if t.is_floating_point() else t.detach().numpy())


def materialise(value: object, dump: Dump) -> object:
    """Recorded argument structure -> torch values (tensors loaded from the dump)."""

    if isinstance(value, TensorRef):
        return to_torch(np.asarray(dump.load(value.name)), value.dtype)
    if isinstance(value, DtypeRef):
        return torch_dtype(value.name)
    if isinstance(value, list):
        return [materialise(v, dump) for v in value]
    if isinstance(value, tuple):
        return tuple(materialise(v, dump) for v in value)
    if isinstance(value, dict):
        return {k: materialise(v, dump) for k, v in value.items()}
    return value


def run(fn: Callable[..., object], call: RecordedCall, dump: Dump) -> list[torch.Tensor]:
    """Run the call from ``dump``'s recorded inputs; the outputs as a flat list of tensors."""
    import torch

    args = [materialise(a, dump) for a in call.args]
    kwargs = {k: materialise(v, dump) for k, v in call.kwargs.items()}
    if call.key.startswith("Module."):
        kwargs = {"params": {k: materialise(v, dump) for k, v in call.parameters.items()}, **kwargs}
    try:
        with torch.no_grad():
            out = fn(*args, **kwargs)
    except Exception as exc:  # noqa: BLE001 - any torch error: the call cannot be re-created on the CPU
        raise AccAgentError("cannot_replay", f"re-running {call.key} on the CPU failed: "
                                             f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}",
                            hint="The call may need an NPU-only dtype or argument; compare its inputs instead "
                                 "(compare_tensors on the recorded input files).") from None
    return [t for t in _flatten(out) if isinstance(t, torch.Tensor)]


def _flatten(value: object) -> list[object]:
    if isinstance(value, list | tuple):
        return [x for v in value for x in _flatten(v)]
    return [value]


def compare(a: Array, ref: Array) -> Comparison:
    """``a`` against ``ref`` in float64, NaN/Inf positions that agree left out."""
    if a.shape != ref.shape:
        if a.size != ref.size:
            return Comparison(None, None, None)
        a = a.reshape(ref.shape)
    x, r = a.astype(np.float64).ravel(), ref.astype(np.float64).ravel()
    same_bad = (~np.isfinite(x)) & (~np.isfinite(r)) & ((x == r) | (np.isnan(x) & np.isnan(r)))
    keep = ~same_bad
    if (~np.isfinite(x[keep])).any() or (~np.isfinite(r[keep])).any():
        return Comparison(math.inf, None, math.inf)
    x, r = x[keep], r[keep]
    if x.size == 0:
        return Comparison(0.0, 1.0, 0.0)
    diff = x - r
    nr, nx = float(np.linalg.norm(r)), float(np.linalg.norm(x))
    nd = float(np.linalg.norm(diff))
    rel = nd / nr if nr > 0 else (0.0 if nd == 0 else math.inf)
    cos = float(np.dot(x, r) / (nx * nr)) if nx > 0 and nr > 0 else (1.0 if nx == nr else 0.0)
    return Comparison(rel, cos, float(np.max(np.abs(diff))))


def tolerance(dtype_name: str | None) -> float:
    """How close a CPU re-run must come to count as the same result: one dtype budget of rounding
    (CPU and NPU kernels round differently), never below 1e-6."""
    d = (dtype_name or "").removeprefix("torch.")
    return max(budgets.budget(d or None), 1e-6)
