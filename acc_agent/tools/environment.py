"""The environment skill: can migration tests run on this machine directly?

``check_environment`` gathers facts (version files under ``--root``, ``npu-smi``/``nvidia-smi``
output, environment variables, package versions, a device probe in a child process) and turns
them into one row per check with a status, a reason and the fixing command. The verdict is
``manual_stop`` if any deciding check fails, ``unknown`` if one could not be established, else
``auto``. ``diff_environments`` compares two saved snapshots (baseline machine vs target machine).
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Literal

from acc_agent import frontend
from acc_agent.atomic import atomic_write_text
from acc_agent.errors import AccAgentError
from acc_agent.io.env import versions as V
from acc_agent.io.env.npu_smi import busy_reasons, device_memory, parse_npu_smi
from acc_agent.io.env.nvidia_smi import parse_nvidia_smi
from acc_agent.io.env.probe import run_probe
from acc_agent.io.env.system import parse_env_file, relevant_env, system_facts
from acc_agent.io.process import run_bounded
from acc_agent.models.common import Evidence
from acc_agent.models.environment import (
    Check,
    CheckEnvironmentInput,
    CheckEnvironmentOutput,
    CheckStatus,
    DiffEnvironmentsInput,
    DiffEnvironmentsOutput,
    EnvDifference,
    NpuSmiInfo,
    NvidiaSmiInfo,
)
from acc_agent.text_safety import terminal_lines
from acc_agent.tools.spec import tool

_SMI_TIMEOUT_S = 30.0
_MAX_TEXT = 4 * 1024 * 1024


def _read_text(path: Path, field: str) -> str:
    """A recorded command output named by the argument ``field`` (named in errors as the reader passes it)."""
    what = frontend.option(field)
    if not path.is_file():
        raise AccAgentError("file_not_found", f"{what} file {path} does not exist", hint=f"Pass an existing file to {what}.",
                            path=str(path), field=field)
    if path.stat().st_size > _MAX_TEXT:
        raise AccAgentError("file_too_large", f"{what} file {path} is over 4 MiB", hint="Pass the plain command output.",
                            path=str(path), field=field)
    return path.read_text(encoding="utf-8", errors="replace")


def _run_smi(argv: list[str]) -> tuple[str | None, str]:
    """Run a fixed smi command (never built from file contents); (stdout or None, what happened)."""
    exe = shutil.which(argv[0])
    if exe is None:
        return None, f"{argv[0]} not found on PATH"
    # The report is parsed from its start: its head is kept, up to the size a recorded file may have.
    proc = run_bounded([exe, *argv[1:]], timeout_s=_SMI_TIMEOUT_S, max_bytes=_MAX_TEXT, keep="head")
    if proc.timed_out:
        return None, f"`{' '.join(argv)}` did not answer within {_SMI_TIMEOUT_S:g} s (device or driver hung)"
    if proc.start_error is not None:
        return None, f"`{' '.join(argv)}` could not start: {proc.start_error}"
    if proc.returncode != 0:
        err = (proc.stderr or proc.stdout).strip().splitlines()
        return None, f"`{' '.join(argv)}` exited {proc.returncode}: {err[-1][:300] if err else 'no output'}"
    cut = f" (output cut at {_MAX_TEXT >> 20} MiB)" if proc.stdout_dropped else ""
    return proc.stdout, f"ran `{' '.join(argv)}`{cut}"


def _visible(env: dict[str, str], count: int) -> tuple[list[int], str | None]:
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


def _npu_checks(info: NpuSmiInfo | None, why_missing: str, live: bool, env: dict[str, str]) -> list[Check]:
    src = info.source if info else None
    if info is None:
        status: CheckStatus = "fail" if live and "not found" in why_missing else "unknown"
        fix = (
            "Install the Ascend driver (Ascend-hdk-<chip>-npu-driver_<version>_linux-<arch>.run --full "
            "--install-for-all), reboot, then run `npu-smi info`."
            if status == "fail"
            else "Record `npu-smi info > npu-smi.txt` on the target machine and pass "
            + frontend.option("npu_smi_output", "npu-smi.txt") + "."
        )
        return [Check(name="npu_smi", status=status, reason=why_missing, fix=fix, source=src)]
    if not info.chips:
        return [
            Check(
                name="npu_smi",
                status="unknown",
                reason="npu-smi output could not be read: " + "; ".join(info.problems[:3]),
                fix="Pass the unedited output of `npu-smi info` (the full table, not a screenshot transcription).",
                source=src,
            )
        ]
    names = sorted({c.name for c in info.chips})
    checks = [
        Check(
            name="npu_smi",
            status="ok" if not info.problems else "warn",
            value=f"{len(info.chips)} chip(s): {', '.join(names)}; npu-smi {info.tool_version}",
            reason="npu-smi lists the devices" + (" (some rows unreadable: " + "; ".join(info.problems[:2]) + ")" if info.problems else ""),
            source=src,
        )
    ]
    visible, visible_problem = _visible(env, len(info.chips))
    checks.append(
        Check(
            name="visible_devices",
            status="fail" if visible_problem else "ok",
            value=env.get("ASCEND_RT_VISIBLE_DEVICES", "(unset: all devices)"),
            reason=visible_problem or f"a run would see device(s) {visible}",
            fix=f"export ASCEND_RT_VISIBLE_DEVICES={','.join(str(i) for i in range(len(info.chips)))}" if visible_problem else None,
            source="ASCEND_RT_VISIBLE_DEVICES",
        )
    )
    unhealthy = [(i, c) for i, c in enumerate(info.chips) if i in visible and c.health.upper() != "OK"]
    checks.append(
        Check(
            name="npu_health",
            status="fail" if unhealthy else "ok",
            value=", ".join(f"device {i} (NPU {c.npu_id} chip {c.chip_id}): {c.health}" for i, c in unhealthy) or "all OK",
            reason="a visible device does not report Health OK" if unhealthy else "every visible device reports Health OK",
            fix=(f"Inspect with `npu-smi info -t health -i {unhealthy[0][1].npu_id}`; clear the alarm or pick healthy devices "
                 "with ASCEND_RT_VISIBLE_DEVICES") if unhealthy else None,
            source=src,
        )
    )
    busy = {i: r for i, r in busy_reasons(info).items() if i in visible}
    idle = [i for i in visible if i not in busy]
    busy_status: CheckStatus
    busy_fix: str | None
    if not busy:
        busy_status, reason, busy_fix = "ok", "no process or load on the visible devices", None
    elif idle:
        busy_status = "warn"
        reason = f"{len(busy)} of {len(visible)} visible devices are busy; timings on them would be disturbed"
        busy_fix = f"export ASCEND_RT_VISIBLE_DEVICES={','.join(str(i) for i in idle)}"
    else:
        busy_status = "fail"
        reason = "every visible device is busy; tests would compete for memory and compute"
        busy_fix = "Wait for the listed processes to finish (or stop them), or select idle devices with ASCEND_RT_VISIBLE_DEVICES"
    checks.append(
        Check(
            name="npu_busy",
            status=busy_status,
            value="; ".join(f"device {i}: {r}" for i, r in sorted(busy.items())) or "idle",
            reason=reason,
            fix=busy_fix,
            source=src,
        )
    )
    mem = [device_memory(c) for c in info.chips]
    if all(t for _, t in mem):
        checks.append(
            Check(
                name="npu_memory",
                status="ok",
                critical=False,
                value=", ".join(f"{u}/{t} MB" for u, t in mem[:4]) + (" ..." if len(mem) > 4 else ""),
                reason="device memory per chip (HBM where the chip has it)",
                source=src,
            )
        )
    return checks


def _package_checks(target: str, pkgs: dict[str, str | None], source: str) -> list[Check]:
    torch_v, npu_v = pkgs.get("torch"), pkgs.get("torch_npu")
    checks = [
        Check(
            name="torch",
            status="ok" if torch_v else "fail",
            value=torch_v,
            reason="torch is installed" if torch_v else "torch is not installed in this environment",
            fix=None if torch_v else "pip install torch==<the version your torch_npu release supports>",
            source=source,
        )
    ]
    if target == "npu":
        torch_release = ".".join(map(str, V.base_version(torch_v) or ())) if torch_v else ""
        install = f"pip install 'torch_npu=={torch_release}.*'" if torch_release else "pip install torch torch_npu"
        checks.append(
            Check(
                name="torch_npu",
                status="ok" if npu_v else "fail",
                value=npu_v,
                reason="torch_npu is installed" if npu_v else "torch_npu (the Ascend adapter for PyTorch) is not installed",
                fix=None if npu_v else install,
                source=source,
            )
        )
        if torch_v and npu_v:
            match = V.torch_npu_matches(torch_v, npu_v)
            tb = ".".join(map(str, V.base_version(torch_v) or ()))
            checks.append(
                Check(
                    name="torch_npu_matches_torch",
                    status="ok" if match else ("unknown" if match is None else "fail"),
                    value=f"torch {torch_v} / torch_npu {npu_v}",
                    reason=(
                        "torch_npu is built for this torch release"
                        if match
                        else "torch_npu X.Y.Z only works with torch X.Y.Z; these differ, so `import torch_npu` fails or misbehaves"
                        if match is False
                        else "a version string could not be read"
                    ),
                    fix=None if match else f"pip install 'torch_npu=={tb}.*'  (or install the torch release your torch_npu was built for)",
                    source=source,
                )
            )
    elif torch_v and "+cpu" in torch_v:
        checks.append(
            Check(
                name="torch_cuda_build",
                status="fail",
                value=torch_v,
                reason="this torch is a CPU-only build; it cannot use the GPU",
                fix="pip install torch --index-url https://download.pytorch.org/whl/<cuda tag matching the driver>",
                source=source,
            )
        )
    ms = pkgs.get("mindspore")
    checks.append(
        Check(
            name="mindspore",
            status="ok" if ms else "skipped",
            critical=False,
            value=ms,
            reason="MindSpore is installed" if ms else "MindSpore not installed (only needed for MindSpore projects)",
            source=source,
        )
    )
    return checks


def _stack_checks(root: Path, env: dict[str, str], npu: NpuSmiInfo | None) -> tuple[list[Check], dict[str, str | None], list[Evidence]]:
    evidence: list[Evidence] = []
    driver = V.read_version_file(root, V.DRIVER_FILE)
    firmware = V.read_version_file(root, V.FIRMWARE_FILE)
    toolkit = V.find_toolkit(root, env)
    for vf in (driver, firmware, toolkit):
        if vf.version:
            evidence.append(Evidence(kind="file", ref=str(root / vf.path.lstrip("/")), detail=f"version {vf.version}"))
    checks = []
    drv_ok = driver.version is not None
    smi_drv = npu.driver_version if npu else None
    mismatch = bool(drv_ok and smi_drv and driver.version and not _same_release(smi_drv, driver.version))
    checks.append(
        Check(
            name="driver",
            status="fail" if not drv_ok else ("warn" if mismatch else "ok"),
            value=driver.version,
            reason=(
                f"{driver.problem}: the NPU driver is not installed"
                if not drv_ok
                else f"driver {driver.version} but npu-smi reports {smi_drv}: a reboot may be pending after an upgrade"
                if mismatch
                else "Ascend driver installed"
            ),
            fix=None if drv_ok and not mismatch else "./Ascend-hdk-<chip>-npu-driver_<version>_linux-<arch>.run --full --install-for-all && reboot",
            source=driver.path,
        )
    )
    checks.append(
        Check(
            name="firmware",
            status="ok" if firmware.version else "warn",
            critical=False,
            value=firmware.version,
            reason="Ascend firmware installed" if firmware.version else (firmware.problem or "firmware version not found"),
            fix=None if firmware.version else "./Ascend-hdk-<chip>-npu-firmware_<version>.run --full (after the driver)",
            source=firmware.path,
        )
    )
    checks.append(
        Check(
            name="cann_toolkit",
            status="ok" if toolkit.version else "fail",
            value=toolkit.version,
            reason="CANN toolkit installed" if toolkit.version else (toolkit.problem or "CANN toolkit not found"),
            fix=None if toolkit.version else "./Ascend-cann-toolkit_<version>_linux-<arch>.run --install --install-for-all",
            source=toolkit.path,
        )
    )
    set_env = V.find_set_env(root) or "/usr/local/Ascend/ascend-toolkit/set_env.sh"
    home = env.get("ASCEND_TOOLKIT_HOME") or env.get("ASCEND_HOME_PATH")
    sourced = bool(home) and bool(env.get("ASCEND_OPP_PATH")) and "lib64" in env.get("LD_LIBRARY_PATH", "")
    if not toolkit.version:
        checks.append(Check(name="set_env_sourced", status="skipped", critical=False, reason="no CANN toolkit to source", source="environment"))
    else:
        missing = [k for k, ok in (("ASCEND_TOOLKIT_HOME/ASCEND_HOME_PATH", bool(home)), ("ASCEND_OPP_PATH", bool(env.get("ASCEND_OPP_PATH"))),
                                   ("LD_LIBRARY_PATH with the toolkit lib64", "lib64" in env.get("LD_LIBRARY_PATH", ""))) if not ok]
        checks.append(
            Check(
                name="set_env_sourced",
                status="ok" if sourced else "fail",
                value=home,
                reason="CANN environment is set in this shell" if sourced else "CANN set_env.sh was not sourced: missing " + ", ".join(missing),
                fix=None if sourced else f"source {set_env}",
                source="environment variables",
            )
        )
    hccl = {k: v for k, v in env.items() if k.startswith("HCCL_")}
    checks.append(
        Check(
            name="hccl_env",
            status="ok",
            critical=False,
            value=", ".join(f"{k}={v}" for k, v in hccl.items()) or "(none set)",
            reason="HCCL settings for multi-device runs (defaults apply when none are set)",
            source="environment variables",
        )
    )
    versions = {"driver": driver.version, "firmware": firmware.version, "cann": toolkit.version}
    return checks, versions, evidence


def _same_release(a: str, b: str) -> bool:
    """npu-smi prints build suffixes (24.1.rc1.b030) that version.info omits (24.1.rc1)."""
    a, b = a.lower(), b.lower()
    return a == b or a.startswith(b + ".") or b.startswith(a + ".")


def _gpu_checks(info: NvidiaSmiInfo | None, why_missing: str, live: bool) -> list[Check]:
    if info is None:
        status: CheckStatus = "fail" if live and "not found" in why_missing else "unknown"
        return [Check(name="nvidia_smi", status=status, reason=why_missing,
                      fix="Install the NVIDIA driver, or pass a recorded `nvidia-smi` output with "
                          + frontend.option("nvidia_smi_output"))]
    if not info.gpus:
        return [Check(name="nvidia_smi", status="unknown", reason="nvidia-smi output could not be read: " + "; ".join(info.problems[:3]),
                      fix="Pass the unedited output of `nvidia-smi`.", source=info.source)]
    busy = {p.gpu for p in info.processes if p.type in ("C", "C+G")}
    idle = [g.index for g in info.gpus if g.index not in busy]
    return [
        Check(name="nvidia_smi", status="ok", value=f"{len(info.gpus)} GPU(s): {', '.join(sorted({g.name for g in info.gpus}))}; "
              f"driver {info.driver_version}, CUDA {info.cuda_version}", reason="nvidia-smi lists the GPUs", source=info.source),
        Check(name="gpu_busy", status="ok" if not busy else ("warn" if idle else "fail"),
              value=", ".join(f"GPU {g}" for g in sorted(busy)) or "idle",
              reason="no compute process on the GPUs" if not busy else "compute processes are running on some GPUs",
              fix=None if not busy else (f"export CUDA_VISIBLE_DEVICES={','.join(map(str, idle))}" if idle else "Wait for the GPU processes to finish"),
              source=info.source),
    ]


@tool(
    description="Call first, before anything runs on a device: can tests run directly on this NPU (or GPU baseline) "
    "machine? Reads versions, npu-smi output, probes the device. Returns verdict auto | manual_stop | "
    "unknown.",
    title="Check the NPU environment",
    read_only=False,
    destructive=False,
    idempotent=True,
    text_renderer=lambda out: _render_check(out),
)
def check_environment(params: CheckEnvironmentInput) -> CheckEnvironmentOutput:
    root = params.root
    if not root.is_dir():
        raise AccAgentError("not_a_directory", f"{frontend.option('root', str(root))} is not a directory",
                            hint="Pass the directory that stands for '/'.", path=str(root), field="root")
    live = root.resolve() == Path("/").resolve()
    recorded = any(p is not None for p in (params.npu_smi_output, params.nvidia_smi_output, params.env_file, params.pip_list_output))
    evidence: list[Evidence] = []

    if params.env_file is not None:
        env = parse_env_file(_read_text(params.env_file, "env_file"))
        evidence.append(Evidence(kind="file", ref=str(params.env_file), detail="environment variables"))
    else:
        env = dict(os.environ)
        evidence.append(Evidence(kind="environment", ref="current process", detail="environment variables"))

    if params.pip_list_output is not None:
        listed = V.parse_pip_list(_read_text(params.pip_list_output, "pip_list_output"))
        pkgs: dict[str, str | None] = {n: listed.get(n) for n in V.FRAMEWORK_PACKAGES}
        pkg_source = str(params.pip_list_output)
    else:
        pkgs = V.installed_versions()
        pkg_source = "installed packages of this Python"
    evidence.append(Evidence(kind="file" if params.pip_list_output else "environment", ref=pkg_source, detail="package versions"))

    checks: list[Check] = []
    npu_info: NpuSmiInfo | None = None
    gpu_info: NvidiaSmiInfo | None = None
    versions: dict[str, str | None] = {}
    if params.target == "npu":
        why = ""
        if params.npu_smi_output is not None:
            npu_info = parse_npu_smi(_read_text(params.npu_smi_output, "npu_smi_output"), str(params.npu_smi_output))
            evidence.append(Evidence(kind="file", ref=str(params.npu_smi_output), detail="npu-smi info"))
        elif live:
            text, why = _run_smi(["npu-smi", "info"])
            if text is not None:
                npu_info = parse_npu_smi(text, "npu-smi info")
                evidence.append(Evidence(kind="command", ref="npu-smi info", detail=why))
        else:
            why = f"no npu-smi output for {frontend.option('root', str(root))}"
        checks += _npu_checks(npu_info, why, live, env)
        stack, versions, ev = _stack_checks(root, env, npu_info)
        checks += stack
        evidence += ev
    if params.nvidia_smi_output is not None or params.target == "gpu":
        why = ""
        if params.nvidia_smi_output is not None:
            gpu_info = parse_nvidia_smi(_read_text(params.nvidia_smi_output, "nvidia_smi_output"), str(params.nvidia_smi_output))
            evidence.append(Evidence(kind="file", ref=str(params.nvidia_smi_output), detail="nvidia-smi"))
        elif live:
            text, why = _run_smi(["nvidia-smi"])
            if text is not None:
                gpu_info = parse_nvidia_smi(text, "nvidia-smi")
                evidence.append(Evidence(kind="command", ref="nvidia-smi", detail=why))
        else:
            why = f"no nvidia-smi output for {frontend.option('root', str(root))}"
        gpu_checks = _gpu_checks(gpu_info, why, live)
        if params.target == "npu":  # informational on the NPU side
            gpu_checks = [c.model_copy(update={"critical": False}) for c in gpu_checks]
        checks += gpu_checks
        if gpu_info is not None:
            versions["nvidia_driver"], versions["cuda"] = gpu_info.driver_version, gpu_info.cuda_version
    checks += _package_checks(params.target, pkgs, pkg_source)
    versions.update({k: pkgs.get(k) for k in ("torch", "torch_npu", "mindspore")})

    probe_result = None
    run_it = params.probe == "on" or (params.probe == "auto" and live and not recorded)
    if run_it:
        probe_result = run_probe(params.target, params.probe_timeout_s)
        ok = probe_result.get("status") == "ok"
        checks.append(
            Check(
                name="device_probe",
                status="ok" if ok else "fail",
                value=f"{probe_result.get('device_count')} device(s), 64x64 matmul in {probe_result.get('matmul_s')} s" if ok else str(probe_result.get("stage")),
                reason="the device ran a matmul in a child process" if ok else f"device probe failed: {probe_result.get('error') or 'device not available'}",
                fix=None if ok else ("source the CANN set_env.sh, check `npu-smi info`, then `python -c \"import torch, torch_npu; print(torch.npu.is_available())\"`"
                                     if params.target == "npu" else "python -c \"import torch; print(torch.cuda.is_available())\""),
                source="subprocess probe",
            )
        )
        evidence.append(Evidence(kind="command", ref="device probe (python -c ...)", detail=str(probe_result.get("status"))))
    else:
        checks.append(
            Check(
                name="device_probe",
                status="skipped",
                critical=False,
                reason="not run: " + (f"disabled by {frontend.option('probe', 'off')}" if params.probe == "off"
                                      else f"recorded inputs or {frontend.option('root')} describe another machine"),
                source="subprocess probe",
            )
        )

    out = CheckEnvironmentOutput(
        verdict=_verdict(checks),
        summary="",
        target=params.target,
        checks=checks,
        system=system_facts(root),
        versions=versions,
        env_vars=relevant_env(env),
        npu_smi=npu_info,
        nvidia_smi=gpu_info,
        probe=probe_result,
        evidence=evidence,
    )
    out.summary = _summary(out)
    if params.snapshot_out is not None:
        out.snapshot_path = str(params.snapshot_out)
        try:
            params.snapshot_out.parent.mkdir(parents=True, exist_ok=True)
            atomic_write_text(params.snapshot_out, out.model_dump_json(indent=2))  # never a half snapshot
        except OSError as exc:
            raise AccAgentError("write_failed", f"cannot write snapshot {params.snapshot_out}: {exc.strerror}",
                                hint=f"Pick a writable {frontend.option('snapshot_out')} path.", path=str(params.snapshot_out),
                                field="snapshot_out") from None
    return out


def _verdict(checks: list[Check]) -> Literal["auto", "manual_stop", "unknown"]:
    deciding = [c for c in checks if c.critical]
    if any(c.status == "fail" for c in deciding):
        return "manual_stop"
    if any(c.status == "unknown" for c in deciding):
        return "unknown"
    return "auto"


def _summary(out: CheckEnvironmentOutput) -> str:
    if out.verdict == "auto":
        v = out.versions
        chips = out.npu_smi.chips if out.npu_smi else []
        what = f"{len(chips)} x {chips[0].name}, " if chips else ""
        return (f"auto: tests can run directly ({what}CANN {v.get('cann')}, driver {v.get('driver')}, "
                f"torch {v.get('torch')}, torch_npu {v.get('torch_npu')})" if out.target == "npu"
                else f"auto: tests can run directly (torch {v.get('torch')}, CUDA {v.get('cuda')})")
    bad = [c.name for c in out.checks if c.critical and c.status == ("fail" if out.verdict == "manual_stop" else "unknown")]
    if out.verdict == "manual_stop":
        return f"manual_stop: {len(bad)} blocking problem(s): {', '.join(bad)}; see each check's fix"
    return f"unknown: could not establish {', '.join(bad)}"


def _render_check(out: CheckEnvironmentOutput) -> str:
    lines = [f"[{out.verdict}] {out.summary}", ""]
    width = max((len(c.name) for c in out.checks), default=10)
    for c in out.checks:
        lines.append(f"  {c.status:<8} {c.name:<{width}}  {c.value or '-'}")
        if c.status in ("fail", "warn", "unknown"):
            lines.append(f"  {'':<8} {'':<{width}}  why: {c.reason}")
            if c.fix:
                lines.append(f"  {'':<8} {'':<{width}}  fix: {c.fix}")
    if out.snapshot_path:
        lines += ["", f"snapshot written to {out.snapshot_path}"]
    return terminal_lines(lines)


# --------------------------------------------------------------------------- diff_environments

# key -> impact when the two sides differ. GPU vs NPU naturally differs in the device stack;
# framework and OS differences can change numbers and must be reviewed.
_DIFF_KEYS: dict[str, Literal["expected", "review"]] = {
    "versions.torch": "review",
    "versions.torch_npu": "expected",
    "versions.mindspore": "review",
    "versions.cann": "expected",
    "versions.driver": "expected",
    "versions.firmware": "expected",
    "versions.cuda": "expected",
    "versions.nvidia_driver": "expected",
    "system.os": "review",
    "system.arch": "review",
    "system.python": "review",
    "system.cpu_model": "review",
    "system.cpu_count": "review",
    "system.memory_total_gib": "review",
    "devices": "expected",
}


def _load_snapshot(path: Path) -> dict[str, object]:
    text = _read_text(path, "snapshot")
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise AccAgentError("invalid_snapshot", f"{path} is not JSON ({exc.msg} at line {exc.lineno})",
                            hint=f"Pass a file written by {frontend.invoke('check_environment', snapshot_out='<FILE>')}.", path=str(path)) from None
    if not isinstance(data, dict) or "checks" not in data or "versions" not in data:
        raise AccAgentError("invalid_snapshot", f"{path} is not an environment snapshot (no 'checks'/'versions')",
                            hint=f"Pass a file written by {frontend.invoke('check_environment', snapshot_out='<FILE>')}.", path=str(path))
    return data


def _device_name(device: object) -> str | None:
    name = device.get("name") if isinstance(device, dict) else None
    return None if name is None else str(name)


def _flatten(snap: dict[str, object]) -> dict[str, str | None]:
    flat: dict[str, str | None] = {}
    for section in ("versions", "system"):
        values = snap.get(section) or {}
        if isinstance(values, dict):
            for k, v in values.items():
                flat[f"{section}.{k}"] = None if v is None else str(v)
    devices = None
    npu = snap.get("npu_smi")
    gpu = snap.get("nvidia_smi")
    # A snapshot is a file: its sections are checked, not asserted (a hand-edited one may hold anything).
    chips = npu.get("chips") if isinstance(npu, dict) else None
    gpus = gpu.get("gpus") if isinstance(gpu, dict) else None
    if isinstance(chips, list) and chips:
        devices = f"{len(chips)} x {_device_name(chips[0])} (NPU)"
    elif isinstance(gpus, list) and gpus:
        devices = f"{len(gpus)} x {_device_name(gpus[0])} (GPU)"
    flat["devices"] = devices
    return flat


@tool(
    description="Call with the baseline and target machines' snapshots (check_environment snapshot_out): lists each "
    "difference, expected or able to change numbers. Returns verdict same | differs, differences[].",
    title="Diff two environments",
    read_only=True,
    positional=("baseline", "target"),
)
def diff_environments(params: DiffEnvironmentsInput) -> DiffEnvironmentsOutput:
    base, targ = _flatten(_load_snapshot(params.baseline)), _flatten(_load_snapshot(params.target))
    diffs: list[EnvDifference] = []
    same: list[str] = []
    for key in sorted(set(base) | set(targ)):
        b, t = base.get(key), targ.get(key)
        if b == t:
            if b is not None:
                same.append(key)
            continue
        impact: Literal["expected", "review"] = _DIFF_KEYS.get(key, "review")
        note = ""
        if key == "versions.torch" and b and t:
            bb, tb = V.base_version(b), V.base_version(t)
            if bb and tb and bb[:2] != tb[:2]:
                note = "different torch minor releases: operator numerics and defaults may differ"
            else:
                note = "same torch release line; build tags differ (cpu/cuda vs npu adapter)"
                impact = "expected" if bb == tb else "review"
        if (b is None) != (t is None):
            note = note or ("missing on the baseline side" if b is None else "missing on the target side")
        diffs.append(EnvDifference(key=key, baseline=b, target=t, impact=impact, note=note))
    verdict: Literal["same", "differs"] = "same" if not diffs else "differs"
    review = [d.key for d in diffs if d.impact == "review"]
    summary = (
        "the two environments are the same on every recorded key"
        if not diffs
        else f"{len(diffs)} difference(s); to review before comparing numbers: {', '.join(review) or 'none'}"
    )
    return DiffEnvironmentsOutput(
        verdict=verdict,
        summary=summary,
        differences=diffs,
        same=same,
        evidence=[Evidence(kind="file", ref=str(params.baseline), detail="baseline snapshot"),
                  Evidence(kind="file", ref=str(params.target), detail="target snapshot")],
    )
