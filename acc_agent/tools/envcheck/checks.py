"""Check rows and the verdict: what each fact means for running migration tests here.

Why apart from the probes: a row is judged the same whether its fact came from this machine or from
a file recorded on another one, so the rows are built from facts alone (no file, no command here).
Each row says what was found, why it has its status, and the command that fixes it.
"""

from __future__ import annotations

from typing import Literal

from acc_agent import frontend
from acc_agent.io.env.npu_smi import busy_reasons, device_memory
from acc_agent.models.environment import Check, CheckEnvironmentOutput, CheckStatus, NpuSmiInfo, NvidiaSmiInfo
from acc_agent.tools.envcheck import rules
from acc_agent.tools.envcheck.probes import AscendStack, SmiReading, visible_devices

Verdict = Literal["auto", "manual_stop", "unknown"]
ProbeResult = dict[str, str | float | bool | None]


def npu_checks(reading: SmiReading[NpuSmiInfo], live: bool, env: dict[str, str]) -> list[Check]:
    """npu-smi itself, the visible device list, and the health, load and memory of the visible devices."""
    info = reading.info
    if info is None:
        status: CheckStatus = "fail" if live and "not found" in reading.why_missing else "unknown"
        fix = (
            rules.INSTALL_DRIVER_FOR_NPU_SMI
            if status == "fail"
            else "Record `npu-smi info > npu-smi.txt` on the target machine and pass "
            + frontend.option("npu_smi_output", "npu-smi.txt") + "."
        )
        return [Check(name="npu_smi", status=status, reason=reading.why_missing, fix=fix)]
    src = info.source
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
    visible, visible_problem = visible_devices(env, len(info.chips))
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
    checks.append(_busy_check(info, visible))
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


def _busy_check(info: NpuSmiInfo, visible: list[int]) -> Check:
    """Busy visible devices disturb timings (warn) while idle ones remain, and block when none is left."""
    busy = {i: r for i, r in busy_reasons(info).items() if i in visible}
    idle = [i for i in visible if i not in busy]
    status: CheckStatus
    fix: str | None
    if not busy:
        status, reason, fix = "ok", "no process or load on the visible devices", None
    elif idle:
        status = "warn"
        reason = f"{len(busy)} of {len(visible)} visible devices are busy; timings on them would be disturbed"
        fix = f"export ASCEND_RT_VISIBLE_DEVICES={','.join(str(i) for i in idle)}"
    else:
        status = "fail"
        reason = "every visible device is busy; tests would compete for memory and compute"
        fix = "Wait for the listed processes to finish (or stop them), or select idle devices with ASCEND_RT_VISIBLE_DEVICES"
    return Check(
        name="npu_busy",
        status=status,
        value="; ".join(f"device {i}: {r}" for i, r in sorted(busy.items())) or "idle",
        reason=reason,
        fix=fix,
        source=info.source,
    )


def package_checks(target: str, pkgs: dict[str, str | None], source: str) -> list[Check]:
    """torch everywhere; torch_npu and its match with torch on the NPU; a CUDA build of torch on the GPU."""
    torch_v, npu_v = pkgs.get("torch"), pkgs.get("torch_npu")
    checks = [
        Check(
            name="torch",
            status="ok" if torch_v else "fail",
            value=torch_v,
            reason="torch is installed" if torch_v else "torch is not installed in this environment",
            fix=None if torch_v else rules.INSTALL_TORCH,
            source=source,
        )
    ]
    if target == "npu":
        torch_release = rules.release_text(torch_v) if torch_v else ""
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
            checks.append(_torch_npu_match_check(torch_v, npu_v, source))
    elif torch_v and "+cpu" in torch_v:
        checks.append(
            Check(
                name="torch_cuda_build",
                status="fail",
                value=torch_v,
                reason="this torch is a CPU-only build; it cannot use the GPU",
                fix=rules.INSTALL_CUDA_TORCH,
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


def _torch_npu_match_check(torch_v: str, npu_v: str, source: str) -> Check:
    match = rules.torch_npu_matches(torch_v, npu_v)
    return Check(
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
        fix=None if match else f"pip install 'torch_npu=={rules.release_text(torch_v)}.*'  (or install the torch release your torch_npu was built for)",
        source=source,
    )


def stack_checks(stack: AscendStack, env: dict[str, str], npu: NpuSmiInfo | None) -> list[Check]:
    """Driver (and whether npu-smi runs the same one), firmware, CANN toolkit, set_env.sh sourced, HCCL settings."""
    driver, firmware, toolkit = stack.driver, stack.firmware, stack.toolkit
    checks = []
    drv_ok = driver.version is not None
    smi_drv = npu.driver_version if npu else None
    mismatch = bool(drv_ok and smi_drv and driver.version and not rules.same_release(smi_drv, driver.version))
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
            fix=None if drv_ok and not mismatch else rules.INSTALL_DRIVER,
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
            fix=None if firmware.version else rules.INSTALL_FIRMWARE,
            source=firmware.path,
        )
    )
    checks.append(
        Check(
            name="cann_toolkit",
            status="ok" if toolkit.version else "fail",
            value=toolkit.version,
            reason="CANN toolkit installed" if toolkit.version else (toolkit.problem or "CANN toolkit not found"),
            fix=None if toolkit.version else rules.INSTALL_TOOLKIT,
            source=toolkit.path,
        )
    )
    checks.append(_set_env_check(stack, env))
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
    return checks


def _set_env_check(stack: AscendStack, env: dict[str, str]) -> Check:
    """CANN's set_env.sh leaves three traces in a shell: the toolkit home, the OPP path, its lib64 on LD_LIBRARY_PATH."""
    if not stack.toolkit.version:
        return Check(name="set_env_sourced", status="skipped", critical=False, reason="no CANN toolkit to source", source="environment")
    home = env.get("ASCEND_TOOLKIT_HOME") or env.get("ASCEND_HOME_PATH")
    traces = (("ASCEND_TOOLKIT_HOME/ASCEND_HOME_PATH", bool(home)), ("ASCEND_OPP_PATH", bool(env.get("ASCEND_OPP_PATH"))),
              ("LD_LIBRARY_PATH with the toolkit lib64", "lib64" in env.get("LD_LIBRARY_PATH", "")))
    missing = [name for name, present in traces if not present]
    return Check(
        name="set_env_sourced",
        status="fail" if missing else "ok",
        value=home,
        reason="CANN environment is set in this shell" if not missing else "CANN set_env.sh was not sourced: missing " + ", ".join(missing),
        fix=f"source {stack.set_env or rules.DEFAULT_SET_ENV}" if missing else None,
        source="environment variables",
    )


def stack_versions(stack: AscendStack) -> dict[str, str | None]:
    """The stack's versions under the keys a snapshot records them (None = not found)."""
    return {"driver": stack.driver.version, "firmware": stack.firmware.version, "cann": stack.toolkit.version}


def gpu_checks(reading: SmiReading[NvidiaSmiInfo], live: bool) -> list[Check]:
    """nvidia-smi itself and whether compute processes already hold GPUs."""
    info = reading.info
    if info is None:
        status: CheckStatus = "fail" if live and "not found" in reading.why_missing else "unknown"
        return [Check(name="nvidia_smi", status=status, reason=reading.why_missing,
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


def probe_check(target: str, result: ProbeResult) -> Check:
    """The device probe's outcome: it ran a matmul, or the stage where it failed and why."""
    ok = result.get("status") == "ok"
    return Check(
        name="device_probe",
        status="ok" if ok else "fail",
        value=f"{result.get('device_count')} device(s), 64x64 matmul in {result.get('matmul_s')} s" if ok else str(result.get("stage")),
        reason="the device ran a matmul in a child process" if ok else f"device probe failed: {result.get('error') or 'device not available'}",
        fix=None if ok else (rules.NPU_PROBE_FIX if target == "npu" else rules.GPU_PROBE_FIX),
        source="subprocess probe",
    )


def probe_skipped_check(probe_off: bool) -> Check:
    """Why the probe did not run: switched off, or the facts describe another machine than this one."""
    return Check(
        name="device_probe",
        status="skipped",
        critical=False,
        reason="not run: " + (f"disabled by {frontend.option('probe', 'off')}" if probe_off
                              else f"recorded inputs or {frontend.option('root')} describe another machine"),
        source="subprocess probe",
    )


def verdict(checks: list[Check]) -> Verdict:
    """manual_stop if a deciding check fails, unknown if one could not be established, else auto."""
    deciding = [c for c in checks if c.critical]
    if any(c.status == "fail" for c in deciding):
        return "manual_stop"
    if any(c.status == "unknown" for c in deciding):
        return "unknown"
    return "auto"


def summary(out: CheckEnvironmentOutput) -> str:
    """The one line a user reads first: what runs here, or which checks block or could not be decided."""
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
