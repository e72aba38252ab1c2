"""Dump a torch ``nn.Module``'s module inputs and outputs in msprobe's layout, without msprobe.

The golden side of a migration often runs where msprobe is not installed (a CPU box, a plain GPU
image), yet the comparison needs both sides in one layout. This helper attaches forward hooks to
every (filtered) submodule and writes ``dump.json`` + ``dump_tensor_data/*.npy`` exactly as msprobe
names them (``Module.{path}.{Class}.forward.{call}`` keys, ``data_name`` per tensor), so
``compare_dumps`` reads both sides the same way.

torch is an optional extra: it is imported only when a capture starts. Tensors are stored as
``.npy`` (never pickled); bfloat16 is stored as float32 (msprobe itself reads bf16 as fp32) while
``dtype`` in ``dump.json`` keeps the original ``torch.bfloat16``.

Usage::

    from acc_agent.capture import DumpCapture
    with DumpCapture(model, "dumps/golden", include=["*encoder*"], max_bytes=512 << 20):
        model(**batch)
"""

from __future__ import annotations

import fnmatch
import json
import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, TypedDict

from acc_agent.atomic import atomic_write
from acc_agent.errors import AccAgentError

if TYPE_CHECKING:
    import torch
    from pydantic import JsonValue
    from torch.utils.hooks import RemovableHandle
    from typing_extensions import Unpack

    from acc_agent.numerics.arrays import Array

__all__ = ["CaptureOptions", "CaptureReport", "DumpCapture", "capture_forward"]

#: What dump.json records of one module call: the leaves' descriptions nested as the arguments were.
Record = dict[str, "JsonValue"]
#: torch's forward pre-hook (with kwargs) and forward hook (with kwargs): what they may return is ignored.
PreHook = Callable[["torch.nn.Module", tuple[object, ...], dict[str, object]], None]
PostHook = Callable[["torch.nn.Module", tuple[object, ...], dict[str, object], object], None]


@dataclass
class CaptureReport:
    """What a capture wrote: how many modules and tensors, and what the size cap left out."""

    dump_json: Path
    modules: int = 0
    tensors_saved: int = 0
    bytes_saved: int = 0
    tensors_over_cap: list[str] = field(default_factory=list)


def _safe_segment(text: str) -> str:
    """Module paths become file names; keep them free of separators so nothing leaves the dump dir."""
    return "".join(ch if (ch.isalnum() or ch in "._-") else "_" for ch in text) or "_"


class DumpCapture:
    """Context manager that records module inputs/outputs of ``model`` while it is active.

    ``include``/``exclude`` are fnmatch patterns matched against the module path (``encoder.layer.0``)
    and against the full msprobe key (``Module.encoder.layer.0.BertLayer.forward.0``); with
    ``include`` empty every module is kept. ``max_bytes`` caps the tensor data written: from the first tensor that
    does not fit on, tensors keep their statistics in ``dump.json`` but get no ``data_name`` (and are listed in
    the report), so a large model can be captured selectively instead of filling the disk.
    Like msprobe's L0 dump, the top-level module itself is not recorded unless ``include_root``; turn it on
    to record the model's own inputs (what preprocessing produced) and final outputs, named
    ``Module.{root_name}.{Class}.forward.0`` (the diagnosis treats that path as containing every module).
    """

    def __init__(
        self,
        model: torch.nn.Module,
        out_dir: str | Path,
        *,
        include: Sequence[str] = (),
        exclude: Sequence[str] = (),
        max_bytes: int | None = None,
        root_name: str = "root",
        include_root: bool = False,
    ) -> None:
        self.model = model
        self.out_dir = Path(out_dir)
        self.include = list(include)
        self.exclude = list(exclude)
        self.max_bytes = max_bytes
        self.root_name = root_name
        self.include_root = include_root
        self._data: dict[str, Record] = {}
        self._calls: dict[str, int] = {}
        self._pending: dict[int, list[str]] = {}
        self._handles: list[RemovableHandle] = []
        self.report = CaptureReport(dump_json=self.out_dir / "dump.json")

    # -- filtering -------------------------------------------------------------------------------
    def _wanted(self, path: str, key_prefix: str) -> bool:
        names = (path, key_prefix)
        if self.include and not any(fnmatch.fnmatchcase(n, p) for p in self.include for n in names):
            return False
        return not any(fnmatch.fnmatchcase(n, p) for p in self.exclude for n in names)

    # -- tensor writing --------------------------------------------------------------------------
    def _leaf(self, value: object, data_name: str) -> Record:
        import torch

        if not isinstance(value, torch.Tensor):
            if isinstance(value, (bool, int, float, str)) or value is None:
                return {"type": type(value).__name__, "value": value}
            return {"type": type(value).__name__}
        tensor = value.detach()
        leaf: Record = {
            "type": "torch.Tensor",
            "dtype": str(tensor.dtype),
            "shape": list(tensor.shape),
            "requires_grad": bool(value.requires_grad),
        }
        if tensor.numel() > 0 and not tensor.is_complex():
            stats = tensor.double()
            leaf.update(
                Max=float(stats.max()),
                Min=float(stats.min()),
                Mean=float(stats.mean()),
                Norm=float(stats.norm()),
            )
        array = self._to_numpy(tensor)
        size = int(array.nbytes)
        if self.report.tensors_over_cap or (
            self.max_bytes is not None and self.report.bytes_saved + size > self.max_bytes
        ):
            # once full, stay full: the saved part is a complete prefix of the execution, which is
            # what a first-divergence walk needs
            self.report.tensors_over_cap.append(data_name)
            return leaf
        file_name = data_name + ".npy"
        import numpy as np

        np.save(self.out_dir / "dump_tensor_data" / file_name, array, allow_pickle=False)
        leaf["data_name"] = file_name
        self.report.tensors_saved += 1
        self.report.bytes_saved += size
        return leaf

    @staticmethod
    def _to_numpy(tensor: torch.Tensor) -> Array:
        import torch

        cpu = tensor.cpu()
        if cpu.dtype in (torch.bfloat16,) or (cpu.is_floating_point() and cpu.dtype.itemsize < 2):
            cpu = cpu.float()  # numpy has no bf16/fp8: store exactly representable fp32, as msprobe reads them
        return cpu.contiguous().numpy()

    def _record(self, value: object, prefix: str) -> JsonValue:
        """Msprobe keeps structure: lists stay lists; each leaf carries its own data_name."""
        if isinstance(value, Mapping):
            return {str(k): self._record(v, f"{prefix}.{_safe_segment(str(k))}") for k, v in value.items()}
        if isinstance(value, (list, tuple)):
            return [self._record(v, f"{prefix}.{i}") for i, v in enumerate(value)]
        return self._leaf(value, prefix)

    # -- hooks -----------------------------------------------------------------------------------
    def _pre_hook(self, path: str, cls: str) -> PreHook:
        def hook(module: torch.nn.Module, args: tuple[object, ...], kwargs: dict[str, object]) -> None:
            base = f"Module.{_safe_segment(path)}.{_safe_segment(cls)}.forward"
            call = self._calls.get(base, 0)
            self._calls[base] = call + 1
            key = f"{base}.{call}"
            self._pending.setdefault(id(module), []).append(key)
            self._data[key] = {
                "input_args": [self._record(a, f"{key}.input.{i}") for i, a in enumerate(args)],
                "input_kwargs": {
                    str(k): self._record(v, f"{key}.input.{_safe_segment(str(k))}") for k, v in kwargs.items()
                },
                "output": [],
            }
            self.report.modules += 1

        return hook

    def _post_hook(self) -> PostHook:
        def hook(module: torch.nn.Module, args: tuple[object, ...], kwargs: dict[str, object], output: object) -> None:
            stack = self._pending.get(id(module))
            if not stack:
                return
            key = stack.pop()
            outputs = output if isinstance(output, (list, tuple)) else [output]
            if isinstance(output, Mapping):
                outputs = list(output.values())
            self._data[key]["output"] = [self._record(o, f"{key}.output.{i}") for i, o in enumerate(outputs)]

        return hook

    def __enter__(self) -> DumpCapture:
        try:
            import torch  # noqa: F401
        except ImportError as exc:  # pragma: no cover - depends on the environment
            raise AccAgentError(
                "torch_missing",
                "acc_agent.capture needs torch to hook a model",
                hint="pip install 'acc-agent[torch]'",
            ) from exc
        if not hasattr(self.model, "named_modules"):
            raise AccAgentError(
                "not_a_module", f"cannot capture {type(self.model).__name__}: it is not a torch nn.Module",
                hint="Pass the nn.Module itself (for sentence-transformers, the SentenceTransformer object).",
            )
        (self.out_dir / "dump_tensor_data").mkdir(parents=True, exist_ok=True)
        for path, module in self.model.named_modules():
            name = path or self.root_name
            if not path and not self.include_root:
                continue
            cls = type(module).__name__
            if not self._wanted(name, f"Module.{name}.{cls}.forward"):
                continue
            self._handles.append(module.register_forward_pre_hook(self._pre_hook(name, cls), with_kwargs=True))
            self._handles.append(module.register_forward_hook(self._post_hook(), with_kwargs=True))
        return self

    def __exit__(self, *exc: object) -> None:
        for handle in self._handles:
            handle.remove()
        self._handles.clear()
        self.write()

    def write(self) -> Path:
        """Write ``dump.json``; called on exit, callable again after more forward passes."""
        body = {
            "task": "tensor",
            "level": "L0",
            "framework": "pytorch",
            "dump_data_dir": str((self.out_dir / "dump_tensor_data").resolve()),
            "data": self._data,
        }
        self.out_dir.mkdir(parents=True, exist_ok=True)
        # atomic: write() runs again after more passes, and a kill mid-rewrite must not lose the index
        with atomic_write(self.report.dump_json, "w", encoding="utf-8") as fh:
            json.dump(body, fh, indent=1, default=_json_default)
        return self.report.dump_json


def _json_default(value: object) -> str:
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    return str(value)


class CaptureOptions(TypedDict, total=False):
    """:class:`DumpCapture`'s keyword options, passed through by :func:`capture_forward`."""

    include: Sequence[str]
    exclude: Sequence[str]
    max_bytes: int | None
    root_name: str
    include_root: bool


def capture_forward(
    model: torch.nn.Module,
    out_dir: str | Path,
    args: Iterable[object] = (),
    kwargs: Mapping[str, object] | None = None,
    **options: Unpack[CaptureOptions],
) -> tuple[object, CaptureReport]:
    """Run ``model(*args, **kwargs)`` once under :class:`DumpCapture` (no grad) and return its output."""
    import torch

    with torch.no_grad(), DumpCapture(model, out_dir, **options) as cap:
        result = model(*tuple(args), **dict(kwargs or {}))
    return result, cap.report
