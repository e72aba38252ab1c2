"""Try the device for real, in a child process with a timeout.

Version files can all look right while ``import torch_npu`` fails (missing ``set_env.sh``, driver
mismatch) or hangs (a wedged device). Running the probe in a subprocess keeps such a failure from
taking the checker down and lets the check report it with the child's own error text.
"""

from __future__ import annotations

import json
import sys
import time

from acc_agent.io.process import run_bounded

#: Output kept per stream of the probe (the tail: its JSON line is the last one printed).
_PROBE_OUTPUT_BYTES = 1 << 20

# The probe prints one JSON line; everything it runs is fixed here, nothing comes from files.
_PROBE = r"""
import json, time
out = {"stage": "import torch"}
try:
    import torch
    out["torch"] = torch.__version__
    if PLUGIN:
        out["stage"] = "import torch_npu"
        import torch_npu
        out["torch_npu"] = getattr(torch_npu, "__version__", None)
    dev = getattr(torch, BACKEND)
    out["stage"] = "torch." + BACKEND + ".is_available"
    out["available"] = bool(dev.is_available())
    if out["available"]:
        out["device_count"] = dev.device_count()
        out["stage"] = "matmul on " + BACKEND + ":0"
        t0 = time.perf_counter()
        a = torch.ones(64, 64, device=BACKEND + ":0")
        out["matmul_ok"] = (a @ a).sum().item() == 64.0 * 64 * 64
        out["matmul_s"] = time.perf_counter() - t0
    out["stage"] = "done"
except BaseException as exc:
    out["error"] = (type(exc).__name__ + ": " + str(exc))[:500]
print(json.dumps(out))
"""


def probe_code(target: str) -> str:
    """The probe program for ``target`` (npu | gpu): constants only, no outside text."""
    backend, plugin = ("npu", True) if target == "npu" else ("cuda", False)
    return f"BACKEND = {backend!r}\nPLUGIN = {plugin!r}\n" + _PROBE


def run_probe(target: str, timeout_s: float, python: str | None = None) -> dict[str, str | float | bool | None]:
    """Run the probe for ``target`` (npu | gpu); returns the child's JSON plus status/elapsed."""
    argv = [python or sys.executable, "-c", probe_code(target)]
    start = time.perf_counter()
    # Bounded: the probe prints one JSON line, but a failing import can print pages of warnings;
    # a timeout kills the probe's whole process group (a hung driver helper included).
    proc = run_bounded(argv, timeout_s=timeout_s, max_bytes=_PROBE_OUTPUT_BYTES)
    if proc.timed_out:
        return {"status": "timeout", "elapsed_s": round(time.perf_counter() - start, 3),
                "error": f"device probe did not finish within {timeout_s:g} s"}
    if proc.start_error is not None:
        return {"status": "error", "error": f"could not start {argv[0]}: {proc.start_error}"}
    elapsed = round(time.perf_counter() - start, 3)
    last = proc.stdout.strip().splitlines()[-1] if proc.stdout.strip() else ""
    try:
        data = json.loads(last)
    except (json.JSONDecodeError, RecursionError):
        data = None
    if not isinstance(data, dict):  # the probe's own line is missing: the child died before printing it
        return {"status": "error", "elapsed_s": elapsed,
                "returncode": float(proc.returncode) if proc.returncode is not None else None,
                "error": (proc.stderr.strip().splitlines() or ["no output"])[-1][:500]}
    result: dict[str, str | float | bool | None] = {
        k: v for k, v in data.items() if isinstance(v, (str, float, int, bool)) or v is None
    }
    ok = data.get("stage") == "done" and data.get("available") and data.get("matmul_ok")
    result["status"] = "ok" if ok else "error"
    result["elapsed_s"] = elapsed
    return result
