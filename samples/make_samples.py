"""Build the demo migration project in ``samples/demo_project`` from real numerics (numpy only).

Why a generator instead of hand-written files: every number in the demo deliverables must come
from a computation a reader can repeat. This script trains a small MLP classifier on a
synthetic, seeded dataset twice:

* the *GPU baseline*: FP32 end to end;
* the *NPU target*: mixed precision emulated with numpy float16 (activations and weights cast to
  FP16, matmuls accumulated in FP32 like tensor cores/Cube units, FP32 master weights), and with
  ONE genuine porting fault: its second activation is ``quick_gelu`` (x·sigmoid(1.702x)) instead
  of the tanh GELU the model was trained with — a real mix-up between the two GELU variants.

It then writes what a migration project holds: Megatron-style training logs (the exact line
shape of MindSpeed/Megatron ``iteration N/ M | ... | lm loss: ...``), a checkpoint, fixed golden
inputs and the outputs of both sides, layer dumps in msprobe's layout for golden (FP32),
bench (correct code at FP16) and target (faulty code at FP16), forward-latency measurements
timed on this machine's CPU, and ``mig.yaml``. Run: ``python3 samples/make_samples.py``.
"""

from __future__ import annotations

import json
import shutil
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
OUT = HERE / "demo_project"
SEED = 20261202
N_FEATURES, HIDDEN, N_CLASSES = 16, 64, 4
STEPS, BATCH = 300, 64
LN_EPS = 1e-5
F16 = np.float16


def make_dataset(rng: np.random.Generator, n: int) -> tuple[np.ndarray, np.ndarray]:
    """Four Gaussian clusters pushed through a fixed random non-linearity: learnable, not trivial."""
    labels = rng.integers(0, N_CLASSES, size=n)
    centres = rng.normal(0.0, 1.0, size=(N_CLASSES, N_FEATURES))
    x = centres[labels] + rng.normal(0.0, 1.1, size=(n, N_FEATURES))
    mix = rng.normal(0.0, 0.5, size=(N_FEATURES, N_FEATURES))
    x = np.tanh(x @ mix) + 0.3 * x
    return x.astype(np.float32), labels.astype(np.int64)


def gelu(x: np.ndarray) -> np.ndarray:
    return 0.5 * x * (1.0 + np.tanh(0.7978845608028654 * (x + 0.044715 * x**3)))


def gelu_grad(x: np.ndarray) -> np.ndarray:
    inner = 0.7978845608028654 * (x + 0.044715 * x**3)
    t = np.tanh(inner)
    return 0.5 * (1.0 + t) + 0.5 * x * (1.0 - t**2) * 0.7978845608028654 * (1.0 + 3 * 0.044715 * x**2)


def quick_gelu(x: np.ndarray) -> np.ndarray:
    return x / (1.0 + np.exp(-1.702 * x))


def quick_gelu_grad(x: np.ndarray) -> np.ndarray:
    s = 1.0 / (1.0 + np.exp(-1.702 * x))
    return s + 1.702 * x * s * (1.0 - s)


def init_params(rng: np.random.Generator) -> dict[str, np.ndarray]:
    def lin(i: int, o: int) -> np.ndarray:
        return (rng.normal(0.0, 1.0, size=(o, i)) / np.sqrt(i)).astype(np.float32)

    return {
        "fc0.weight": lin(N_FEATURES, HIDDEN), "fc0.bias": np.zeros(HIDDEN, np.float32),
        "ln0.weight": np.ones(HIDDEN, np.float32), "ln0.bias": np.zeros(HIDDEN, np.float32),
        "fc1.weight": lin(HIDDEN, HIDDEN), "fc1.bias": np.zeros(HIDDEN, np.float32),
        "fc2.weight": lin(HIDDEN, N_CLASSES), "fc2.bias": np.zeros(N_CLASSES, np.float32),
    }


class Net:
    """fc0 → layer_norm → gelu → fc1 → act1 → fc2; ``half`` emulates FP16 compute."""

    def __init__(self, half: bool, act1: str = "gelu") -> None:
        self.half = half
        self.act1, self.act1_grad = (gelu, gelu_grad) if act1 == "gelu" else (quick_gelu, quick_gelu_grad)

    def q(self, a: np.ndarray) -> np.ndarray:
        """Round to the compute precision (FP16 storage) and back to FP32 for the next op."""
        return a.astype(F16).astype(np.float32) if self.half else a.astype(np.float32)

    def linear(self, x: np.ndarray, w: np.ndarray, b: np.ndarray) -> np.ndarray:
        return self.q(self.q(x) @ self.q(w).T + self.q(b))

    def forward(self, p: dict[str, np.ndarray], x: np.ndarray, record: Callable[..., None] | None = None
                ) -> tuple[np.ndarray, dict[str, np.ndarray]]:
        c: dict[str, np.ndarray] = {"x": self.q(x)}
        h0 = self.linear(x, p["fc0.weight"], p["fc0.bias"])
        mu = h0.mean(-1, keepdims=True)
        var = h0.var(-1, keepdims=True)
        xhat = (h0 - mu) / np.sqrt(var + LN_EPS)
        ln = self.q(xhat * self.q(p["ln0.weight"]) + self.q(p["ln0.bias"]))
        a0 = self.q(gelu(ln))
        h1 = self.linear(a0, p["fc1.weight"], p["fc1.bias"])
        a1 = self.q(self.act1(h1))
        logits = self.linear(a1, p["fc2.weight"], p["fc2.bias"])
        c.update(h0=h0, xhat=xhat, var=var, ln=ln, a0=a0, h1=h1, a1=a1, logits=logits)
        if record is not None:
            record("Functional.linear.0.forward", [c["x"], p["fc0.weight"], p["fc0.bias"]], h0)
            record("Functional.layer_norm.0.forward", [h0, p["ln0.weight"], p["ln0.bias"]], ln)
            record("Functional.gelu.0.forward", [ln], a0)
            record("Functional.linear.1.forward", [a0, p["fc1.weight"], p["fc1.bias"]], h1)
            record("Functional.gelu.1.forward", [h1], a1)
            record("Functional.linear.2.forward", [a1, p["fc2.weight"], p["fc2.bias"]], logits)
        return logits, c

    def backward(self, p: dict[str, np.ndarray], c: dict[str, np.ndarray], dlogits: np.ndarray
                 ) -> dict[str, np.ndarray]:
        g: dict[str, np.ndarray] = {}
        g["fc2.weight"] = dlogits.T @ c["a1"]
        g["fc2.bias"] = dlogits.sum(0)
        da1 = dlogits @ p["fc2.weight"]
        dh1 = da1 * self.act1_grad(c["h1"])
        g["fc1.weight"] = dh1.T @ c["a0"]
        g["fc1.bias"] = dh1.sum(0)
        da0 = dh1 @ p["fc1.weight"]
        dln = da0 * gelu_grad(c["ln"])
        g["ln0.weight"] = (dln * c["xhat"]).sum(0)
        g["ln0.bias"] = dln.sum(0)
        dxhat = dln * p["ln0.weight"]
        inv = 1.0 / np.sqrt(c["var"] + LN_EPS)
        dh0 = inv * (dxhat - dxhat.mean(-1, keepdims=True) - c["xhat"] * (dxhat * c["xhat"]).mean(-1, keepdims=True))
        g["fc0.weight"] = dh0.T @ c["x"]
        g["fc0.bias"] = dh0.sum(0)
        return g


def softmax_xent(logits: np.ndarray, y: np.ndarray) -> tuple[float, np.ndarray]:
    z = logits - logits.max(-1, keepdims=True)
    prob = np.exp(z) / np.exp(z).sum(-1, keepdims=True)
    loss = float(-np.log(prob[np.arange(len(y)), y] + 1e-12).mean())
    grad = prob.copy()
    grad[np.arange(len(y)), y] -= 1.0
    return loss, grad / len(y)


def train(net: Net, params: dict[str, np.ndarray], x: np.ndarray, y: np.ndarray, log_path: Path,
          device: str, lr: float = 2e-4) -> dict[str, np.ndarray]:
    """Adam on FP32 master weights; writes one Megatron-format line per iteration with real timings."""
    p = {k: v.copy() for k, v in params.items()}
    m = {k: np.zeros_like(v) for k, v in p.items()}
    v2 = {k: np.zeros_like(v) for k, v in p.items()}
    rng = np.random.default_rng(SEED + 1)  # same batch order on both sides
    clock = 1764662400.0  # 2025-12-02 08:00:00 UTC; advanced by the measured step times
    lines = [f"training on {device}: MLP {N_FEATURES}-{HIDDEN}-{HIDDEN}-{N_CLASSES}, "
             f"{'fp16 mixed precision (emulated)' if net.half else 'fp32'}, global batch {BATCH}"]
    for it in range(1, STEPS + 1):
        idx = rng.integers(0, len(x), size=BATCH)
        t0 = time.perf_counter()
        logits, cache = net.forward(p, x[idx])
        loss, dlogits = softmax_xent(logits, y[idx])
        grads = net.backward(p, cache, dlogits)
        gnorm = float(np.sqrt(sum(float((gv.astype(np.float64) ** 2).sum()) for gv in grads.values())))
        for k in p:
            m[k] = 0.9 * m[k] + 0.1 * grads[k]
            v2[k] = 0.999 * v2[k] + 0.001 * grads[k] ** 2
            mh, vh = m[k] / (1 - 0.9**it), v2[k] / (1 - 0.999**it)
            p[k] = (p[k] - lr * mh / (np.sqrt(vh) + 1e-8)).astype(np.float32)
        ms = (time.perf_counter() - t0) * 1000.0
        clock += ms / 1000.0
        stamp = time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(clock))
        lines.append(
            f"[{stamp}] iteration {it:8d}/{STEPS:8d} | consumed samples: {it * BATCH:12d} | "
            f"elapsed time per iteration (ms): {ms:.1f} | learning rate: {lr:E} | global batch size: {BATCH:5d} | "
            f"lm loss: {loss:.16f} | loss scale: {1024.0 if net.half else 1.0} | grad norm: {gnorm:.16f} | "
            f"number of skipped iterations:   0 | number of nan iterations:   0 |"
        )
    log_path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return p


def write_dump(root: Path, net: Net, params: dict[str, np.ndarray], x: np.ndarray) -> None:
    """msprobe L1 layout: step0/rank0/dump.json + dump_tensor_data/<data_name>.npy, one row per tensor."""
    rank = root / "step0" / "rank0"
    data_dir = rank / "dump_tensor_data"
    data_dir.mkdir(parents=True)
    dtype = "torch.float16" if net.half else "torch.float32"
    entries: dict[str, dict[str, object]] = {}

    def leaf(arr: np.ndarray, data_name: str) -> dict[str, object]:
        stored = arr.astype(F16) if net.half else arr.astype(np.float32)
        np.save(data_dir / data_name, stored, allow_pickle=False)
        a64 = stored.astype(np.float64)
        return {"type": "torch.Tensor", "dtype": dtype, "shape": list(stored.shape),
                "Max": float(a64.max()), "Min": float(a64.min()), "Mean": float(a64.mean()),
                "Norm": float(np.linalg.norm(a64)), "requires_grad": False, "data_name": data_name}

    def record(key: str, inputs: list[np.ndarray], output: np.ndarray) -> None:
        entries[key] = {
            "input_args": [leaf(net.q(a), f"{key}.input.{i}.npy") for i, a in enumerate(inputs)],
            "input_kwargs": {},
            "output": [leaf(output, f"{key}.output.0.npy")],
        }

    net.forward(params, x, record)
    dump = {"task": "tensor", "level": "L1", "framework": "pytorch", "dump_data_dir": str(data_dir.relative_to(root)),
            "data": entries}
    (rank / "dump.json").write_text(json.dumps(dump, indent=1), encoding="utf-8")
    (rank / "stack.json").write_text("{}\n", encoding="utf-8")
    (rank / "construct.json").write_text("{}\n", encoding="utf-8")


def time_forward(net: Net, params: dict[str, np.ndarray], x: np.ndarray, batch_sizes: list[int],
                 warmup: int, iterations: int, label: str) -> dict[str, object]:
    """Real wall-clock forward latencies on this CPU, in the shape of ``measure_performance``'s output."""
    results = []
    for bs in batch_sizes:
        xb = np.resize(x, (bs, N_FEATURES)).astype(np.float32)
        for _ in range(warmup):
            net.forward(params, xb)
        lat = []
        for _ in range(iterations):
            t0 = time.perf_counter()
            net.forward(params, xb)
            lat.append((time.perf_counter() - t0) * 1000.0)
        arr = np.asarray(lat)
        results.append({
            "batch_size": bs, "p50_ms": float(np.percentile(arr, 50)), "p95_ms": float(np.percentile(arr, 95)),
            "mean_ms": float(arr.mean()), "throughput": float(bs * 1000.0 / arr.mean()),
            "throughput_unit": "samples/s (per batch: batch_size / mean latency)",
            "warmup": warmup, "iterations": iterations, "scope": "device_only", "status": "ok",
            "min_ms": float(arr.min()), "max_ms": float(arr.max()), "std_ms": float(arr.std()),
            "samples_ms": [round(v, 6) for v in lat],
        })
    return {
        "verdict": "measured",
        "summary": f"{label}: forward latency of the demo MLP, timed with time.perf_counter on the CPU of the machine "
                   f"that ran samples/make_samples.py (emulated device, not real GPU/NPU hardware)",
        "evidence": [{"kind": "command", "ref": "python3 samples/make_samples.py", "detail": "time_forward()"}],
        "results": results,
        "settings": {
            "source": "callable", "target": f"samples/make_samples.py:Net.forward ({label})", "scope": "device_only",
            "scope_description": "device-only: the model's forward pass only, no pre/post-processing",
            "batch_sizes": batch_sizes, "concurrency": "sequential, single request at a time",
            "warmup": warmup, "warmup_reason": "first calls pay for allocation and cache warm-up",
            "iterations": iterations, "iterations_reason": "100 samples give stable p50/p95",
            "throughput_definition": "samples/s = batch_size / mean latency",
            "synchronisation": "none (numpy on CPU is synchronous)",
        },
    }


NPU_SMI = """\
+------------------------------------------------------------------------------------------------+
| npu-smi 25.5.2                   Version: 25.5.2                                               |
+---------------------------+---------------+----------------------------------------------------+
| NPU   Name                | Health        | Power(W)    Temp(C)           Hugepages-Usage(page)|
| Chip                      | Bus-Id        | AICore(%)   Memory-Usage(MB)  HBM-Usage(MB)        |
+===========================+===============+====================================================+
| 5     910B4               | OK            | 89.9        39                0    / 0             |
| 0                         | 0000:41:00.0  | 0           0    / 0          2922 / 32768         |
+===========================+===============+====================================================+
+---------------------------+---------------+----------------------------------------------------+
| NPU     Chip              | Process id    | Process name             | Process memory(MB)      |
+===========================+===============+====================================================+
| No running processes found in NPU 5                                                            |
+===========================+===============+====================================================+
"""


def main() -> None:
    if OUT.exists():
        shutil.rmtree(OUT)
    for sub in ("logs", "checkpoint", "golden", "dumps", "perf", "env", "data"):
        (OUT / sub).mkdir(parents=True)
    rng = np.random.default_rng(SEED)
    x_train, y_train = make_dataset(rng, 2048)
    np.savez(OUT / "data" / "train.npz", x=x_train, y=y_train)
    x_gold = x_train[:8].copy()
    np.savez(OUT / "golden" / "inputs.npz", **{f"sample_{i}": x_gold[i:i + 1] for i in range(len(x_gold))})

    init = init_params(rng)
    gpu = Net(half=False)
    bench = Net(half=True)
    npu = Net(half=True, act1="quick_gelu")  # the porting fault
    trained = train(gpu, init, x_train, y_train, OUT / "logs" / "gpu_fp32_train.log", "GPU (fp32 baseline)")
    train(npu, init, x_train, y_train, OUT / "logs" / "npu_fp16_train.log", "Ascend NPU (emulated fp16)")
    np.savez(OUT / "checkpoint" / "model.npz", **trained)

    # Golden outputs: the same checkpoint and fixed inputs through both sides.
    for name, net in (("baseline_outputs", gpu), ("npu_outputs", npu)):
        outs = {f"sample_{i}": net.forward(trained, x_gold[i:i + 1])[0].astype(F16 if net.half else np.float32)
                for i in range(len(x_gold))}
        np.savez(OUT / "golden" / f"{name}.npz", **outs)

    for name, net in (("golden", gpu), ("bench", bench), ("target", npu)):
        write_dump(OUT / "dumps" / name, net, trained, x_gold)

    perf_gpu = time_forward(gpu, trained, x_train, [1, 64], 10, 100, "GPU baseline (fp32)")
    perf_npu = time_forward(npu, trained, x_train, [1, 64], 10, 100, "NPU target (fp16 emulated)")
    (OUT / "perf" / "gpu_baseline.json").write_text(json.dumps(perf_gpu, indent=1), encoding="utf-8")
    (OUT / "perf" / "npu_target.json").write_text(json.dumps(perf_npu, indent=1), encoding="utf-8")
    (OUT / "env" / "npu-smi-info.txt").write_text(NPU_SMI, encoding="utf-8")
    shutil.copyfile(HERE / "mig.demo.yaml", OUT / "mig.yaml")
    print(f"demo project written to {OUT}")


if __name__ == "__main__":
    main()
