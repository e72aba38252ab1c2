"""One recorded API call of an msprobe dump, with its arguments in their original structure.

Re-running a call needs more than the flat rows compare uses: positional order, keyword names,
nested lists (``normalized_shape``), scalars of every type msprobe records (int, float, bool, str,
slice, torch.dtype, None) and which argument is which tensor file. So the call's entry is read
again from dump.json and rebuilt as plain Python values with :class:`TensorRef` placeholders for
tensors; nothing in the file is ever executed or unpickled.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

from acc_agent.errors import AccAgentError

_TENSOR_TYPES = frozenset({"torch.Tensor", "mindspore.Tensor", "numpy.ndarray", "torch.nn.parameter.Parameter"})


@dataclass(frozen=True)
class TensorRef:
    """A tensor argument or output: the row name it is loaded by, and its recorded dtype and shape."""

    name: str
    dtype: str | None
    shape: tuple[int, ...] | None


@dataclass(frozen=True)
class DtypeRef:
    """A ``torch.dtype`` argument (``dtype=torch.float16``), by name."""

    name: str


@dataclass
class RecordedCall:
    """A call's key, its arguments as recorded (tensors as TensorRef) and its outputs."""

    key: str
    args: list[object] = field(default_factory=list)
    kwargs: dict[str, object] = field(default_factory=dict)
    outputs: list[object] = field(default_factory=list)
    #: A module call's recorded parameters (msprobe level mix/L0 writes them), by name.
    parameters: dict[str, object] = field(default_factory=dict)

    def tensors(self) -> list[tuple[str, TensorRef]]:
        """(argument label, ref) of every tensor argument: ``input.0``, ``input.weight``, ``input.1.0``."""
        found: list[tuple[str, TensorRef]] = []
        for i, a in enumerate(self.args):
            _walk(a, f"input.{i}", found)
        for k, v in self.kwargs.items():
            _walk(v, f"input.{k}", found)
        for k, v in self.parameters.items():
            _walk(v, f"parameters.{k}", found)
        return found

    def scalars(self) -> dict[str, object]:
        """Non-tensor arguments by label (as :meth:`tensors` labels them)."""
        out: dict[str, object] = {}
        for i, a in enumerate(self.args):
            _scalars(a, f"input.{i}", out)
        for k, v in self.kwargs.items():
            _scalars(v, f"input.{k}", out)
        return out

    def output_refs(self) -> list[TensorRef]:
        found: list[tuple[str, TensorRef]] = []
        for i, o in enumerate(self.outputs):
            _walk(o, f"output.{i}", found)
        return [r for _, r in found]


def _walk(value: object, label: str, found: list[tuple[str, TensorRef]]) -> None:
    if isinstance(value, TensorRef):
        found.append((label, value))
    elif isinstance(value, list | tuple):
        for i, v in enumerate(value):
            _walk(v, f"{label}.{i}", found)
    elif isinstance(value, dict):
        for k, v in value.items():
            _walk(v, f"{label}.{k}", found)


def _scalars(value: object, label: str, out: dict[str, object]) -> None:
    if isinstance(value, TensorRef):
        return
    if isinstance(value, list | tuple) and any(isinstance(v, TensorRef | list | tuple | dict) for v in value):
        for i, v in enumerate(value):
            _scalars(v, f"{label}.{i}", out)
    elif isinstance(value, dict):
        for k, v in value.items():
            _scalars(v, f"{label}.{k}", out)
    else:
        out[label] = value


def read_call(dump_json: Path, key: str) -> RecordedCall:
    """The call ``key`` of an msprobe dump.json; raises AccAgentError when it is absent or has no tensor data."""
    try:
        doc = json.loads(dump_json.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise AccAgentError("missing_file", f"{dump_json} does not exist", path=str(dump_json),
                            hint="Pass the dump folder (with dump.json) of an msprobe task 'tensor' run.") from None
    except (OSError, UnicodeDecodeError, ValueError, RecursionError) as exc:  # RecursionError: nested too deeply
        raise AccAgentError("invalid_dump_json", f"cannot read {dump_json.name}: {exc}".splitlines()[0],
                            hint="Re-copy the dump; dump.json must be UTF-8 JSON.", path=str(dump_json)) from None
    data = doc.get("data") if isinstance(doc, dict) else None
    if not isinstance(data, dict):
        raise AccAgentError("invalid_dump_json", f"{dump_json.name} has no 'data' object: not an msprobe dump.json",
                            hint="Point at the dump.json written by msprobe's PrecisionDebugger.", path=str(dump_json))
    body = data.get(key)
    if not isinstance(body, dict):
        near = [k for k in data if k.split(".")[:2] == key.split(".")[:2]][:5]
        raise AccAgentError("unknown_call", f"{dump_json} records no call {key!r}",
                            hint=("Calls of the same API in this dump: " + ", ".join(near)) if near else
                            "Pass the call key as compare-dumps names it (e.g. Functional.gelu.1.forward).",
                            path=str(dump_json))
    task = doc.get("task")
    call = RecordedCall(key)
    args = body.get("input_args", body.get("input", []))
    call.args = [_value(a, task, dump_json) for a in (args if isinstance(args, list) else [args])]
    kwargs = body.get("input_kwargs", {})
    call.kwargs = {str(k): _value(v, task, dump_json) for k, v in (kwargs.items() if isinstance(kwargs, dict) else ())}
    params = body.get("parameters", {})
    call.parameters = {str(k): _value(v, task, dump_json) for k, v in (params.items() if isinstance(params, dict)
                                                                       else ())}
    outputs = body.get("output", [])
    call.outputs = [_value(o, task, dump_json) for o in (outputs if isinstance(outputs, list) else [outputs])]
    return call


def _value(v: object, task: object, source: Path) -> object:
    if isinstance(v, list):
        return [_value(x, task, source) for x in v]
    if not isinstance(v, dict):
        return v
    kind = v.get("type")
    if kind in _TENSOR_TYPES or "data_name" in v:
        data_name = v.get("data_name")
        if not isinstance(data_name, str) or data_name in ("", "-1"):
            raise AccAgentError(
                "needs_tensor_data",
                f"{source} holds statistics only (task {task!r}): a call cannot be re-run without its tensors",
                hint="Re-dump this API with msprobe task 'tensor' (add it to the config's 'list' to keep the dump "
                     "small), then replay it.", path=str(source))
        if "/" in data_name or "\\" in data_name or data_name.startswith(".."):
            raise AccAgentError("invalid_dump_json", f"{source}: data_name {data_name!r} is a path, not a file name",
                                hint="Re-dump; msprobe writes plain file names.", path=str(source))
        shape = v.get("shape")
        return TensorRef(data_name.rsplit(".", 1)[0] if "." in data_name else data_name,
                         str(v["dtype"]) if v.get("dtype") is not None else None,
                         tuple(int(s) for s in shape) if isinstance(shape, list) else None)
    if isinstance(kind, str):
        value = v.get("value")
        if kind == "slice" and isinstance(value, list) and len(value) == 3:
            return slice(*value)
        if kind == "torch.dtype" and isinstance(value, str):
            return DtypeRef(value)
        if kind == "torch.Size" and isinstance(value, list):
            return tuple(value)
        if kind == "ellipsis":
            return Ellipsis
        if kind == "None":
            return None
        return value
    return {str(k): _value(x, task, source) for k, x in v.items()}
