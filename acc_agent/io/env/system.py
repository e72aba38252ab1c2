"""Host facts (OS, kernel, Python, CPU, memory) and the environment variables that steer Ascend runs.

Only variables that matter to a migration are kept (``ASCEND_*``, ``HCCL_*``, device lists, library
paths): a snapshot must be shareable, so arbitrary variables (tokens, passwords) never enter it.
"""

from __future__ import annotations

import os
import platform
import sys
from pathlib import Path

from acc_agent.frontend import option
from acc_agent.io.env.versions import read_key_values, under_root

ENV_PREFIXES = ("ASCEND_", "HCCL_", "NPU_", "TORCH_NPU", "ATB_", "MS_", "CANN_")
ENV_NAMES = (
    "LD_LIBRARY_PATH",
    "PYTHONPATH",
    "PATH",
    "CUDA_VISIBLE_DEVICES",
    "TORCH_DEVICE_BACKEND_AUTOLOAD",
    "TOOLCHAIN_HOME",
    "ASCEND_RT_VISIBLE_DEVICES",
)
_SECRET_HINTS = ("TOKEN", "SECRET", "PASSWORD", "KEY", "CREDENTIAL")


def relevant_env(environ: dict[str, str]) -> dict[str, str]:
    """The migration-relevant subset of ``environ``, secrets never included."""
    out: dict[str, str] = {}
    for name in sorted(environ):
        if any(h in name.upper() for h in _SECRET_HINTS):
            continue
        if name in ENV_NAMES or name.startswith(ENV_PREFIXES):
            out[name] = environ[name]
    return out


def parse_env_file(text: str) -> dict[str, str]:
    """``KEY=VALUE`` lines (``env`` output, ``export KEY=VALUE`` lines, collect_env.py's ENV section)."""
    out: dict[str, str] = {}
    for line in text.splitlines():
        line = line.strip()
        if line.startswith("export "):
            line = line[len("export ") :].strip()
        if not line or line.startswith("#") or "=" not in line:
            continue
        key, _, value = line.partition("=")
        key = key.strip()
        if key.replace("_", "").isalnum() and not key[0].isdigit():
            out[key] = value.strip().strip('"').strip("'")
    return out


def system_facts(root: Path) -> dict[str, str | None]:
    """OS from ROOT/etc/os-release; kernel, Python, CPU and memory of this live machine (labelled)."""
    facts: dict[str, str | None] = {}
    os_release = under_root(root, "/etc/os-release")
    if os_release is not None and os_release.is_file():
        fields = read_key_values(os_release)
        facts["os"] = fields.get("PRETTY_NAME", "").strip('"') or None
    else:
        facts["os"] = None
    live = root.resolve() == Path("/").resolve()
    suffix = "" if live else f" (this machine, not {option('root')})"
    facts["kernel"] = platform.release() + suffix
    facts["arch"] = platform.machine() + suffix
    facts["python"] = sys.version.split()[0] + suffix
    facts["cpu_count"] = str(os.cpu_count()) + suffix
    facts["cpu_model"] = _cpu_model()
    facts["memory_total_gib"] = _mem_total_gib()
    return facts


def _cpu_model() -> str | None:
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as fh:
            for line in fh:
                if line.lower().startswith(("model name", "cpu model")):
                    return line.split(":", 1)[1].strip()
    except OSError:
        return None
    return platform.processor() or None


def _mem_total_gib() -> str | None:
    try:
        with open("/proc/meminfo", encoding="utf-8") as fh:
            for line in fh:
                if line.startswith("MemTotal:"):
                    return f"{int(line.split()[1]) / 1024 / 1024:.1f}"
    except (OSError, ValueError, IndexError):
        return None
    return None
