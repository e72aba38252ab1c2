"""The environment skill: can migration tests run on this machine directly?

``check_environment`` gathers facts (version files under ``--root``, ``npu-smi``/``nvidia-smi``
output, environment variables, package versions, a device probe in a child process) and turns
them into one row per check with a status, a reason and the fixing command. The verdict is
``manual_stop`` if any deciding check fails, ``unknown`` if one could not be established, else
``auto``. ``diff_environments`` compares two saved snapshots (baseline machine vs target machine).

This module only registers the two tools and runs the steps in order; the steps live in
:mod:`acc_agent.tools.envcheck` (rules, probes, checks, diff, text).
"""

from __future__ import annotations

from pathlib import Path

from acc_agent import frontend
from acc_agent.atomic import atomic_write_text
from acc_agent.errors import AccAgentError
from acc_agent.io.env.probe import run_probe
from acc_agent.io.env.system import relevant_env, system_facts
from acc_agent.models.common import Evidence
from acc_agent.models.environment import (
    Check,
    CheckEnvironmentInput,
    CheckEnvironmentOutput,
    DiffEnvironmentsInput,
    DiffEnvironmentsOutput,
    NpuSmiInfo,
    NvidiaSmiInfo,
)
from acc_agent.tools.envcheck import checks as env_checks
from acc_agent.tools.envcheck import probes, rules
from acc_agent.tools.envcheck.diff import diff_snapshots, load_snapshot
from acc_agent.tools.envcheck.text import render_check
from acc_agent.tools.spec import tool


@tool(
    description="Call first, before anything runs on a device: can tests run directly on this NPU (or GPU baseline) "
    "machine? Reads versions, npu-smi output, probes the device. Returns verdict auto | manual_stop | "
    "unknown.",
    title="Check the NPU environment",
    read_only=False,
    destructive=False,
    idempotent=True,
    text_renderer=render_check,
)
def check_environment(params: CheckEnvironmentInput) -> CheckEnvironmentOutput:
    root = params.root
    if not root.is_dir():
        raise AccAgentError("not_a_directory", f"{frontend.option('root', str(root))} is not a directory",
                            hint="Pass the directory that stands for '/'.", path=str(root), field="root")
    live = root.resolve() == Path("/").resolve()
    recorded = any(p is not None for p in (params.npu_smi_output, params.nvidia_smi_output, params.env_file, params.pip_list_output))

    env, env_evidence = probes.read_environment(params.env_file)
    pkgs = probes.read_packages(params.pip_list_output)
    evidence: list[Evidence] = [env_evidence, pkgs.evidence]
    checks: list[Check] = []
    npu_info: NpuSmiInfo | None = None
    gpu_info: NvidiaSmiInfo | None = None
    versions: dict[str, str | None] = {}
    if params.target == "npu":
        npu = probes.read_npu_smi(params.npu_smi_output, live, root)
        npu_info = npu.info
        evidence += [npu.evidence] if npu.evidence else []
        checks += env_checks.npu_checks(npu, live, env)
        stack = probes.read_ascend_stack(root, env)
        checks += env_checks.stack_checks(stack, env, npu_info)
        versions = env_checks.stack_versions(stack)
        evidence += stack.evidence
    if params.nvidia_smi_output is not None or params.target == "gpu":
        gpu = probes.read_nvidia_smi(params.nvidia_smi_output, live, root)
        gpu_info = gpu.info
        evidence += [gpu.evidence] if gpu.evidence else []
        gpu_checks = env_checks.gpu_checks(gpu, live)
        if params.target == "npu":  # informational on the NPU side
            gpu_checks = [c.model_copy(update={"critical": False}) for c in gpu_checks]
        checks += gpu_checks
        if gpu_info is not None:
            versions["nvidia_driver"], versions["cuda"] = gpu_info.driver_version, gpu_info.cuda_version
    checks += env_checks.package_checks(params.target, pkgs.versions, pkgs.source)
    versions.update({k: pkgs.versions.get(k) for k in rules.FRAMEWORK_KEYS})

    probe_result = None
    if params.probe == "on" or (params.probe == "auto" and live and not recorded):
        probe_result = run_probe(params.target, params.probe_timeout_s)
        checks.append(env_checks.probe_check(params.target, probe_result))
        evidence.append(Evidence(kind="command", ref="device probe (python -c ...)", detail=str(probe_result.get("status"))))
    else:
        checks.append(env_checks.probe_skipped_check(params.probe == "off"))

    out = CheckEnvironmentOutput(
        verdict=env_checks.verdict(checks),
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
    out.summary = env_checks.summary(out)
    if params.snapshot_out is not None:
        _write_snapshot(out, params.snapshot_out)
    return out


def _write_snapshot(out: CheckEnvironmentOutput, path: Path) -> None:
    """Write the result as the snapshot the reports and diff_environments read; never half a file."""
    out.snapshot_path = str(path)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        atomic_write_text(path, out.model_dump_json(indent=2))
    except OSError as exc:
        raise AccAgentError("write_failed", f"cannot write snapshot {path}: {exc.strerror}",
                            hint=f"Pick a writable {frontend.option('snapshot_out')} path.", path=str(path),
                            field="snapshot_out") from None


@tool(
    description="Call with the baseline and target machines' snapshots (check_environment snapshot_out): lists each "
    "difference, expected or able to change numbers. Returns verdict same | differs, differences[].",
    title="Diff two environments",
    read_only=True,
    positional=("baseline", "target"),
)
def diff_environments(params: DiffEnvironmentsInput) -> DiffEnvironmentsOutput:
    baseline, target = load_snapshot(params.baseline), load_snapshot(params.target)
    evidence = [Evidence(kind="file", ref=str(params.baseline), detail="baseline snapshot"),
                Evidence(kind="file", ref=str(params.target), detail="target snapshot")]
    return diff_snapshots(baseline, target, evidence)
