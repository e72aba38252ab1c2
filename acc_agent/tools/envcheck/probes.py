"""Facts about a machine, read from the machine itself or from files recorded on it.

Why apart from the checks: every fact has two sources (a live command or this process, a file a
user recorded elsewhere), each failing in its own way (not on PATH, hung, exited non-zero; missing,
over the size limit). The checks only need the fact, or why it is missing, and the evidence to
cite; here is where the sources are tried, in the order a user's arguments say.
"""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Generic, TypeVar

from acc_agent import frontend
from acc_agent.errors import AccAgentError
from acc_agent.io.env import versions as V
from acc_agent.io.env.npu_smi import parse_npu_smi
from acc_agent.io.env.nvidia_smi import parse_nvidia_smi
from acc_agent.io.env.system import parse_env_file
from acc_agent.io.process import run_bounded
from acc_agent.models.common import Evidence
from acc_agent.models.environment import NpuSmiInfo, NvidiaSmiInfo

#: Seconds an npu-smi / nvidia-smi run may take before the device or driver counts as hung.
SMI_TIMEOUT_S = 30.0
#: Largest recorded output read, and the head of a live command's output kept.
MAX_TEXT = 4 * 1024 * 1024

InfoT = TypeVar("InfoT", NpuSmiInfo, NvidiaSmiInfo)


def read_recorded_text(path: Path, field: str) -> str:
    """A recorded command output named by the argument ``field`` (named in errors as the reader passes it)."""
    what = frontend.option(field)
    if not path.is_file():
        raise AccAgentError("file_not_found", f"{what} file {path} does not exist", hint=f"Pass an existing file to {what}.",
                            path=str(path), field=field)
    if path.stat().st_size > MAX_TEXT:
        raise AccAgentError("file_too_large", f"{what} file {path} is over 4 MiB", hint="Pass the plain command output.",
                            path=str(path), field=field)
    return path.read_text(encoding="utf-8", errors="replace")


def run_smi(argv: list[str]) -> tuple[str | None, str]:
    """Run a fixed smi command (never built from file contents); (stdout or None, what happened)."""
    exe = shutil.which(argv[0])
    if exe is None:
        return None, f"{argv[0]} not found on PATH"
    # The report is parsed from its start: its head is kept, up to the size a recorded file may have.
    proc = run_bounded([exe, *argv[1:]], timeout_s=SMI_TIMEOUT_S, max_bytes=MAX_TEXT, keep="head")
    if proc.timed_out:
        return None, f"`{' '.join(argv)}` did not answer within {SMI_TIMEOUT_S:g} s (device or driver hung)"
    if proc.start_error is not None:
        return None, f"`{' '.join(argv)}` could not start: {proc.start_error}"
    if proc.returncode != 0:
        err = (proc.stderr or proc.stdout).strip().splitlines()
        return None, f"`{' '.join(argv)}` exited {proc.returncode}: {err[-1][:300] if err else 'no output'}"
    cut = f" (output cut at {MAX_TEXT >> 20} MiB)" if proc.stdout_dropped else ""
    return proc.stdout, f"ran `{' '.join(argv)}`{cut}"


def visible_devices(env: dict[str, str], count: int) -> tuple[list[int], str | None]:
    """Logical device indices a run would use, from ASCEND_RT_VISIBLE_DEVICES (all when unset)."""
    raw = env.get("ASCEND_RT_VISIBLE_DEVICES")
    if raw is None or raw.strip() == "":
        return list(range(count)), None
    ids: list[int] = []
    for part in raw.split(","):
        part = part.strip()
        if not part.isdigit():
            return [], f'ASCEND_RT_VISIBLE_DEVICES="{raw}" is not a comma-separated list of device ids'
        ids.append(int(part))
    bad = [i for i in ids if i >= count]
    if bad:
        return [i for i in ids if i < count], f"ASCEND_RT_VISIBLE_DEVICES lists {bad}, but only {count} devices exist"
    return ids, None


@dataclass(frozen=True)
class SmiReading(Generic[InfoT]):
    """An smi report, or why there is none (empty when none was wanted), and the evidence it came from."""

    info: InfoT | None
    why_missing: str = ""
    evidence: Evidence | None = None


@dataclass(frozen=True)
class Packages:
    """Framework package versions (None = not installed) and where they were read."""

    versions: dict[str, str | None]
    source: str
    evidence: Evidence


@dataclass(frozen=True)
class AscendStack:
    """The Ascend stack's version files under the root, and the set_env.sh found beside them."""

    driver: V.VersionFile
    firmware: V.VersionFile
    toolkit: V.VersionFile
    set_env: str | None
    evidence: list[Evidence] = field(default_factory=list)


def read_environment(env_file: Path | None) -> tuple[dict[str, str], Evidence]:
    """The variables judged: a recorded ``env`` dump when given, else this process's own."""
    if env_file is not None:
        env = parse_env_file(read_recorded_text(env_file, "env_file"))
        return env, Evidence(kind="file", ref=str(env_file), detail="environment variables")
    return dict(os.environ), Evidence(kind="environment", ref="current process", detail="environment variables")


def read_packages(pip_list_output: Path | None) -> Packages:
    """Framework versions from a recorded ``pip list`` when given, else from this interpreter."""
    if pip_list_output is not None:
        listed = V.parse_pip_list(read_recorded_text(pip_list_output, "pip_list_output"))
        versions: dict[str, str | None] = {n: listed.get(n) for n in V.FRAMEWORK_PACKAGES}
        source = str(pip_list_output)
        kind = "file"
    else:
        versions = V.installed_versions()
        source = "installed packages of this Python"
        kind = "environment"
    return Packages(versions, source, Evidence(kind=kind, ref=source, detail="package versions"))


def read_npu_smi(recorded: Path | None, live: bool, root: Path) -> SmiReading[NpuSmiInfo]:
    """``npu-smi info`` from the recorded file, else run on this live machine, else why neither."""
    if recorded is not None:
        info = parse_npu_smi(read_recorded_text(recorded, "npu_smi_output"), str(recorded))
        return SmiReading(info, evidence=Evidence(kind="file", ref=str(recorded), detail="npu-smi info"))
    if not live:
        return SmiReading(None, f"no npu-smi output for {frontend.option('root', str(root))}")
    text, why = run_smi(["npu-smi", "info"])
    if text is None:
        return SmiReading(None, why)
    return SmiReading(parse_npu_smi(text, "npu-smi info"), why, Evidence(kind="command", ref="npu-smi info", detail=why))


def read_nvidia_smi(recorded: Path | None, live: bool, root: Path) -> SmiReading[NvidiaSmiInfo]:
    """``nvidia-smi`` from the recorded file, else run on this live machine, else why neither."""
    if recorded is not None:
        info = parse_nvidia_smi(read_recorded_text(recorded, "nvidia_smi_output"), str(recorded))
        return SmiReading(info, evidence=Evidence(kind="file", ref=str(recorded), detail="nvidia-smi"))
    if not live:
        return SmiReading(None, f"no nvidia-smi output for {frontend.option('root', str(root))}")
    text, why = run_smi(["nvidia-smi"])
    if text is None:
        return SmiReading(None, why)
    return SmiReading(parse_nvidia_smi(text, "nvidia-smi"), why, Evidence(kind="command", ref="nvidia-smi", detail=why))


def read_ascend_stack(root: Path, env: dict[str, str]) -> AscendStack:
    """Driver, firmware and CANN toolkit versions under ``root``; the files that had one are evidence."""
    driver = V.read_version_file(root, V.DRIVER_FILE)
    firmware = V.read_version_file(root, V.FIRMWARE_FILE)
    toolkit = V.find_toolkit(root, env)
    evidence = [Evidence(kind="file", ref=str(root / vf.path.lstrip("/")), detail=f"version {vf.version}")
                for vf in (driver, firmware, toolkit) if vf.version]
    return AscendStack(driver, firmware, toolkit, V.find_set_env(root), evidence)
