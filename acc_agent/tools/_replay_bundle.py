"""The vendor reproduction of one call: tensors, arguments, metrics, a README and a standalone repro.py.

A vendor engineer reproduces a kernel bug from files, not from our tool: the bundle holds the call's
recorded inputs and outputs of both runs as ``.npy`` (bf16 stored as float32 with its dtype named),
its arguments as JSON, and a ``repro.py`` that needs only numpy and torch, re-runs the call and
prints how its result compares with both recorded outputs.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from acc_agent.atomic import atomic_write, atomic_write_text
from acc_agent.errors import AccAgentError
from acc_agent.io.dump_calls import DtypeRef, RecordedCall, TensorRef
from acc_agent.models.replay import ReplayOpOutput

if TYPE_CHECKING:
    from acc_agent.io.arrays import Array
    from acc_agent.io.dumps import Dump


def write_bundle(folder: Path, out: ReplayOpOutput, g_call: RecordedCall, t_call: RecordedCall, golden: Dump,
                 target: Dump, replayed: Sequence[Array], environment: str | None, lang: str) -> Path:
    try:
        folder.mkdir(parents=True, exist_ok=True)
        files: dict[str, str] = {}
        sides: dict[str, dict[str, object]] = {}
        spec = {"op": out.op, "sides": sides}
        for side, call, dump in (("golden", g_call, golden), ("target", t_call, target)):
            sides[side] = {
                "args": [_encode(a, f"inputs/{side}/input.{i}", dump, folder, files) for i, a in enumerate(call.args)],
                "kwargs": {k: _encode(v, f"inputs/{side}/input.{k}", dump, folder, files)
                           for k, v in call.kwargs.items()},
                "parameters": {k: _encode(v, f"inputs/{side}/parameters.{k}", dump, folder, files)
                               for k, v in call.parameters.items()},
                "output": _encode(call.output_refs()[0], f"outputs/{side}", dump, folder, files),
            }
        if replayed:
            _save(folder / "outputs/replay_from_target.npy", replayed[0])
        _atomic_text(folder / "call.json", json.dumps(spec, indent=1))
        _atomic_text(folder / "metrics.json", out.model_dump_json(indent=1, exclude={"bundle"}))
        if environment:
            _copy_environment(Path(environment), folder / "environment.json")
        _atomic_text(folder / "repro.py", REPRO)
        _atomic_text(folder / "README.md", _readme(out, lang, environment is not None))
    except OSError as exc:
        raise AccAgentError("cannot_write", f"cannot write the bundle into {folder}: {exc}",
                            hint="Choose a writable folder for bundle.", path=str(folder)) from None
    return folder


def _encode(value: object, label: str, dump: Dump, folder: Path, files: dict[str, str]) -> object:
    """Argument structure -> JSON, tensors saved as .npy files next to it (other values are kept as recorded)."""
    if isinstance(value, TensorRef):
        rel = f"{label}.npy"
        arr = np.asarray(dump.load(value.name))
        _save(folder / rel, arr)
        files[rel] = value.name
        return {"__tensor__": rel, "dtype": value.dtype or str(arr.dtype)}
    if isinstance(value, DtypeRef):
        return {"__dtype__": value.name}
    if isinstance(value, slice):
        return {"__slice__": [value.start, value.stop, value.step]}
    if value is Ellipsis:
        return {"__ellipsis__": True}
    if isinstance(value, tuple):
        return {"__tuple__": [_encode(v, f"{label}.{i}", dump, folder, files) for i, v in enumerate(value)]}
    if isinstance(value, list):
        return [_encode(v, f"{label}.{i}", dump, folder, files) for i, v in enumerate(value)]
    if isinstance(value, dict):
        return {k: _encode(v, f"{label}.{k}", dump, folder, files) for k, v in value.items()}
    return value


def _save(path: Path, arr: Array) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    if arr.dtype.name in ("bfloat16", "float8_e4m3fn", "float8_e5m2"):
        arr = arr.astype(np.float32)  # exact: every bf16/fp8 value is a float32; the dtype is in call.json
    with atomic_write(path, "wb") as fh:
        np.save(fh, np.ascontiguousarray(arr), allow_pickle=False)


def _atomic_text(path: Path, text: str) -> None:
    atomic_write_text(path, text)


def _copy_environment(src: Path, dst: Path) -> None:
    try:
        doc = json.loads(src.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise AccAgentError("invalid_environment", f"cannot read the environment snapshot {src}: {exc}",
                            hint="Pass the JSON written by check_environment (snapshot_out).", path=str(src)) from None
    _atomic_text(dst, json.dumps(doc, indent=1))


def _readme(out: ReplayOpOutput, lang: str, with_env: bool) -> str:
    m = out.replay_vs_golden, out.replay_vs_target, out.target_vs_golden

    def f(v: float | None) -> str:
        return "n/a" if v is None else f"{v:.3g}"

    if lang == "zh":
        return (f"# 单算子复现：{out.op}\n\n结论：{_ZH[out.verdict]}\n\n"
                f"- 用目标侧输入在 CPU 上重算，与标杆输出的相对 L2 误差：{f(m[0].rel_l2_err)}\n"
                f"- 同一重算与目标侧输出的相对 L2 误差：{f(m[1].rel_l2_err)}\n"
                f"- 目标侧与标杆侧记录输出的相对 L2 误差：{f(m[2].rel_l2_err)}\n"
                f"- 判定为相同结果的容差：{out.tolerance:.3g}\n\n"
                "## 文件\n\n- `inputs/golden/`、`inputs/target/`：两侧记录的输入（.npy；bf16 以 float32 保存，dtype 见 "
                "call.json）\n- `outputs/`：两侧记录的输出与 CPU 重算结果\n- `call.json`：参数与关键字参数\n"
                "- `metrics.json`：完整比对结果\n" + ("- `environment.json`：环境快照\n" if with_env else "") +
                "\n## 复现\n\n```\npip install numpy torch\npython repro.py\n```\n")
    return (f"# Single-operator reproduction: {out.op}\n\nFinding: {out.reason}.\n\n"
            f"- CPU re-run from the target's inputs vs the golden's output: relative L2 error {f(m[0].rel_l2_err)}\n"
            f"- the same re-run vs the target's output: {f(m[1].rel_l2_err)}\n"
            f"- the recorded outputs against each other: {f(m[2].rel_l2_err)}\n"
            f"- counted as the same result up to: {out.tolerance:.3g}\n\n"
            "## Files\n\n- `inputs/golden/`, `inputs/target/`: the recorded inputs of both runs (.npy; bf16 stored as "
            "float32, its dtype in call.json)\n- `outputs/`: both recorded outputs and the CPU re-run\n"
            "- `call.json`: the arguments and keyword arguments\n- `metrics.json`: the full comparison\n"
            + ("- `environment.json`: the environment snapshot\n" if with_env else "") +
            "\n## Reproduce\n\n```\npip install numpy torch\npython repro.py\n```\n")


_ZH = {"operator": "算子本身有误：相同输入下目标侧内核的输出与标杆不同。",
       "inputs": "算子计算正确：差异来自其输入或参数。",
       "not_reproducible": "无法判定（见 metrics.json 中的 reason）。"}

REPRO = '''"""Re-run one recorded torch call from the files beside this script; needs only numpy and torch.

Runs the call from the target's and from the golden's recorded inputs on this machine and prints the
relative L2 error of each result against both recorded outputs. Exit code 0 when it ran.
"""

import json
import pathlib
import sys

import numpy as np
import torch

HERE = pathlib.Path(__file__).resolve().parent
SPEC = json.loads((HERE / "call.json").read_text(encoding="utf-8"))


def module_call(cls):
    """A module call from its recorded parameters (settings a dump does not record take torch's defaults)."""
    F = torch.nn.functional
    table = {
        "Linear": lambda x, p: F.linear(x, p["weight"], p.get("bias")),
        "NonDynamicallyQuantizableLinear": lambda x, p: F.linear(x, p["weight"], p.get("bias")),
        "Embedding": lambda x, p: F.embedding(x, p["weight"]),
        "LayerNorm": lambda x, p: F.layer_norm(x, tuple(p["weight"].shape) if "weight" in p else (x.shape[-1],),
                                               p.get("weight"), p.get("bias")),
        "Conv1d": lambda x, p: F.conv1d(x, p["weight"], p.get("bias")),
        "Conv2d": lambda x, p: F.conv2d(x, p["weight"], p.get("bias")),
        "Conv3d": lambda x, p: F.conv3d(x, p["weight"], p.get("bias")),
        "GELU": lambda x, p: F.gelu(x), "ReLU": lambda x, p: F.relu(x), "SiLU": lambda x, p: F.silu(x),
        "Tanh": lambda x, p: torch.tanh(x), "Sigmoid": lambda x, p: torch.sigmoid(x),
        "Identity": lambda x, p: x, "Dropout": lambda x, p: x,
    }
    return table[cls]


def resolve(key):
    if key.startswith("Module."):
        return None
    space, name = key.split(".")[0], ".".join(key.split(".")[1:-2])
    holder = {"Functional": torch.nn.functional, "Torch": torch, "Tensor": torch.Tensor,
              "Aten": torch.ops.aten}[space]
    for part in name.split("."):
        holder = getattr(holder, part)
    return holder


def value(v, device):
    if isinstance(v, list):
        return [value(x, device) for x in v]
    if isinstance(v, dict):
        if "__tensor__" in v:
            arr = np.load(HERE / v["__tensor__"], allow_pickle=False)
            dtype = getattr(torch, str(v["dtype"]).replace("torch.", ""), None)
            t = torch.from_numpy(np.ascontiguousarray(arr)).to(device)
            return t.to(dtype) if isinstance(dtype, torch.dtype) else t
        if "__dtype__" in v:
            return getattr(torch, v["__dtype__"].replace("torch.", ""))
        if "__slice__" in v:
            return slice(*v["__slice__"])
        if "__ellipsis__" in v:
            return Ellipsis
        if "__tuple__" in v:
            return tuple(value(x, device) for x in v["__tuple__"])
        return {k: value(x, device) for k, x in v.items()}
    return v


def rel_l2(a, ref):
    a = np.asarray(a, dtype=np.float64).reshape(-1)
    ref = np.asarray(ref, dtype=np.float64).reshape(-1)
    if a.size != ref.size:
        return float("nan")
    denom = np.linalg.norm(ref)
    return float(np.linalg.norm(a - ref) / denom) if denom > 0 else float(np.linalg.norm(a - ref))


def main():
    device = sys.argv[1] if len(sys.argv) > 1 else "cpu"
    fn = resolve(SPEC["op"])
    recorded = {side: np.load(HERE / SPEC["sides"][side]["output"]["__tensor__"], allow_pickle=False)
                for side in ("golden", "target")}
    print(f"{SPEC['op']} on {device} (torch {torch.__version__})")
    for side in ("target", "golden"):
        spec = SPEC["sides"][side]
        with torch.no_grad():
            if fn is None:  # a module call: its class is the key's part before "forward"
                cls = SPEC["op"].split(".")[-3]
                out = module_call(cls)(*value(spec["args"], device), value(spec["parameters"], device))
            else:
                out = fn(*value(spec["args"], device), **value(spec["kwargs"], device))
        if isinstance(out, (list, tuple)):
            out = out[0]
        result = out.detach().to("cpu").float().numpy()
        print(f"  from the {side}'s inputs: rel L2 vs golden output {rel_l2(result, recorded['golden']):.3g}, "
              f"vs target output {rel_l2(result, recorded['target']):.3g}")
    print(f"  recorded target vs golden: rel L2 {rel_l2(recorded['target'], recorded['golden']):.3g}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
'''
