"""check_environment verdict table over real recorded outputs and fake install roots, plus snapshot diff."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from acc_agent.cli import main
from acc_agent.errors import AccAgentError
from acc_agent.registry import call_tool

FIX = Path(__file__).resolve().parent / "fixtures" / "env"
OK_ROOT = FIX / "roots" / "ascend_ok"
NPU_910B = FIX / "npu_smi" / "910b3_ms_swift_docs.txt"
NPU_A3_BUSY = FIX / "npu_smi" / "a3_ascend910_busy_vllm_ascend_4266.txt"
PIP_OK = FIX / "pip" / "collect_env_vllm_ascend_3963.txt"
PIP_MISMATCH = FIX / "pip" / "pip_list_mindcluster_docs.txt"
ENV_SOURCED = FIX / "env" / "sourced_vllm_ascend_3963.env"
ENV_UNSOURCED = FIX / "env" / "unsourced_login_shell.env"


def _check(tmp_path: Path, **overrides: Any) -> Any:
    args: dict[str, Any] = {
        "root": str(OK_ROOT),
        "npu_smi_output": str(NPU_910B),
        "pip_list_output": str(PIP_OK),
        "env_file": str(ENV_SOURCED),
    }
    args.update(overrides)
    if "env_text" in args:
        env = tmp_path / "env.txt"
        env.write_text(args.pop("env_text"), encoding="utf-8")
        args["env_file"] = str(env)
    return call_tool("check_environment", args)


def _status(out: Any) -> dict[str, str]:
    return {c.name: c.status for c in out.checks}


CASES = [
    # name, overrides, verdict, {check: status}
    ("all good", {}, "auto", {"driver": "ok", "cann_toolkit": "ok", "torch_npu_matches_torch": "ok", "set_env_sourced": "ok"}),
    ("missing driver", {"root": str(FIX / "roots" / "no_driver")}, "manual_stop", {"driver": "fail", "firmware": "warn"}),
    ("mismatched torch_npu", {"pip_list_output": str(PIP_MISMATCH)}, "manual_stop", {"torch_npu_matches_torch": "fail", "mindspore": "ok"}),
    ("unsourced set_env.sh", {"env_file": str(ENV_UNSOURCED)}, "manual_stop", {"set_env_sourced": "fail"}),
    ("busy devices selected", {"npu_smi_output": str(NPU_A3_BUSY), "env_text": ENV_SOURCED.read_text() + "\nASCEND_RT_VISIBLE_DEVICES=0,1\n"},
     "manual_stop", {"npu_busy": "fail"}),
    ("some devices busy, idle ones left", {"npu_smi_output": str(NPU_A3_BUSY)}, "auto", {"npu_busy": "warn"}),
    ("visible id beyond devices", {"env_text": ENV_SOURCED.read_text() + "\nASCEND_RT_VISIBLE_DEVICES=9\n"}, "manual_stop", {"visible_devices": "fail"}),
    ("unreadable npu-smi", {"npu_smi_output": str(FIX / "SOURCES.md")}, "unknown", {"npu_smi": "unknown"}),
    ("no npu-smi for a recorded root", {"npu_smi_output": None}, "unknown", {"npu_smi": "unknown"}),
]


@pytest.mark.parametrize("name, overrides, verdict, statuses", CASES, ids=[c[0] for c in CASES])
def test_verdict_table(tmp_path: Path, name: str, overrides: dict[str, Any], verdict: str, statuses: dict[str, str]) -> None:
    overrides = {k: v for k, v in overrides.items()}
    if overrides.get("npu_smi_output", "x") is None:
        overrides.pop("npu_smi_output")
        out = call_tool(
            "check_environment",
            {"root": str(OK_ROOT), "pip_list_output": str(PIP_OK), "env_file": str(ENV_SOURCED)},
        )
    else:
        out = _check(tmp_path, **overrides)
    got = _status(out)
    assert out.verdict == verdict, (name, out.summary, got)
    for check, status in statuses.items():
        assert got[check] == status, (name, check, got)
    # Every failing check says why and how to fix it; the probe never runs on recorded inputs.
    for c in out.checks:
        if c.status == "fail":
            assert c.reason and c.fix, c
    assert got["device_probe"] == "skipped"


def test_values_come_from_the_files(tmp_path: Path) -> None:
    out = _check(tmp_path)
    assert out.versions["driver"] == "24.1.rc1"
    assert out.versions["firmware"] == "7.1.0.11.220"
    assert out.versions["cann"] == "8.1.RC1"
    assert (out.versions["torch"], out.versions["torch_npu"]) == ("2.7.1+cpu", "2.7.1.dev20250724")
    assert out.env_vars["ASCEND_OPP_PATH"] == "/usr/local/Ascend/ascend-toolkit/latest/opp"
    refs = {e.ref for e in out.evidence}
    assert str(NPU_910B) in refs and str(PIP_OK) in refs
    assert any(r.endswith("driver/version.info") for r in refs)
    assert "910B3" in out.summary and "8.1.RC1" in out.summary


def test_cann_from_version_cfg_layout(tmp_path: Path) -> None:
    out = _check(tmp_path, root=str(FIX / "roots" / "cfg_only"))
    cann = next(c for c in out.checks if c.name == "cann_toolkit")
    assert cann.status == "ok" and cann.value == "8.0.0" and cann.source and cann.source.endswith("version.cfg")
    assert out.verdict == "auto" and out.versions["cann"] == "8.0.0"


def test_mismatch_fix_names_the_matching_release(tmp_path: Path) -> None:
    out = _check(tmp_path, pip_list_output=str(PIP_MISMATCH))
    check = next(c for c in out.checks if c.name == "torch_npu_matches_torch")
    assert "1.11.0" in (check.fix or "") and "2.1.0.post8" in (check.value or "")


def test_unsourced_fix_is_the_set_env_command(tmp_path: Path) -> None:
    out = _check(tmp_path, env_file=str(ENV_UNSOURCED))
    check = next(c for c in out.checks if c.name == "set_env_sourced")
    assert check.fix == "source /usr/local/Ascend/ascend-toolkit/set_env.sh"


def test_symlink_out_of_root_is_not_followed(tmp_path: Path) -> None:
    root = tmp_path / "root"
    (root / "usr/local/Ascend").mkdir(parents=True)
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "version.info").write_text("Version=99.0\n")
    (root / "usr/local/Ascend/driver").symlink_to(outside, target_is_directory=True)
    out = _check(tmp_path, root=str(root))
    check = next(c for c in out.checks if c.name == "driver")
    assert check.status == "fail" and "outside" in check.reason and out.versions["driver"] is None


def test_missing_input_file_is_a_structured_error(tmp_path: Path) -> None:
    with pytest.raises(AccAgentError) as err:
        _check(tmp_path, npu_smi_output=str(tmp_path / "nope.txt"))
    assert err.value.code == "file_not_found" and "nope.txt" in err.value.message and err.value.hint


def test_live_machine_probe_runs_in_a_child_process() -> None:
    """On the live machine the probe runs by default; without torch_npu it must fail and say where."""
    import importlib.util

    out = call_tool("check_environment", {"probe_timeout_s": 120})
    probe = next(c for c in out.checks if c.name == "device_probe")
    assert out.probe is not None and out.probe["elapsed_s"] is not None
    if importlib.util.find_spec("torch_npu") is None:  # the CI machines: CPU torch only
        assert probe.status == "fail" and out.verdict == "manual_stop"
        assert out.probe["status"] == "error" and "torch_npu" in str(out.probe.get("error"))


def test_probe_timeout_is_reported() -> None:
    out = call_tool("check_environment", {"probe": "on", "probe_timeout_s": 0.01, "npu_smi_output": str(NPU_910B),
                                          "root": str(OK_ROOT), "pip_list_output": str(PIP_OK), "env_file": str(ENV_SOURCED)})
    probe = next(c for c in out.checks if c.name == "device_probe")
    assert probe.status == "fail" and "did not finish" in probe.reason
    assert out.verdict == "manual_stop"


def test_snapshot_and_diff(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    npu_snap = tmp_path / "npu.json"
    gpu_snap = tmp_path / "gpu.json"
    _check(tmp_path, snapshot_out=str(npu_snap))
    call_tool(
        "check_environment",
        {"target": "gpu", "root": str(tmp_path), "nvidia_smi_output": str(FIX / "nvidia_smi" / "rtx3090_550.txt"),
         "pip_list_output": str(PIP_MISMATCH), "env_file": str(ENV_UNSOURCED), "snapshot_out": str(gpu_snap)},
    )
    assert json.loads(npu_snap.read_text())["verdict"] == "auto"
    diff = call_tool("diff_environments", {"baseline": str(gpu_snap), "target": str(npu_snap)})
    by_key = {d.key: d for d in diff.differences}
    assert diff.verdict == "differs"
    assert by_key["versions.torch"].baseline == "1.11.0" and by_key["versions.torch"].target == "2.7.1+cpu"
    assert by_key["versions.torch"].impact == "review" and "minor" in by_key["versions.torch"].note
    assert by_key["devices"].baseline == "1 x NVIDIA GeForce RTX 3090 (GPU)"
    assert by_key["devices"].target == "8 x 910B3 (NPU)" and by_key["devices"].impact == "expected"
    same = call_tool("diff_environments", {"baseline": str(npu_snap), "target": str(npu_snap)})
    assert same.verdict == "same" and "versions.cann" in same.same

    with pytest.raises(SystemExit) as exc:
        main(["diff-environments", str(gpu_snap), str(NPU_910B), "--json"])
    assert exc.value.code == 2
    assert json.loads(capsys.readouterr().out)["error"]["code"] == "invalid_snapshot"


def test_cli_exit_codes(capsys: pytest.CaptureFixture[str]) -> None:
    base = ["check-environment", "--root", str(OK_ROOT), "--npu-smi-output", str(NPU_910B),
            "--pip-list-output", str(PIP_OK), "--json"]
    with pytest.raises(SystemExit) as exc:
        main([*base, "--env-file", str(ENV_SOURCED)])
    assert exc.value.code == 0 and json.loads(capsys.readouterr().out)["verdict"] == "auto"
    with pytest.raises(SystemExit) as exc:
        main([*base, "--env-file", str(ENV_UNSOURCED)])
    assert exc.value.code == 1 and json.loads(capsys.readouterr().out)["verdict"] == "manual_stop"
    with pytest.raises(SystemExit) as exc:
        main(["check-environment", "--root", str(NPU_910B), "--json"])
    assert exc.value.code == 2 and json.loads(capsys.readouterr().out)["error"]["code"] == "not_a_directory"


def test_gpu_baseline_side(tmp_path: Path) -> None:
    """The GPU machine of the baseline: nvidia-smi recorded, a CPU-only torch build blocks, a bad table is unknown."""
    smi = FIX / "nvidia_smi" / "tesla_k80_470.txt"
    args = {"target": "gpu", "root": str(tmp_path), "nvidia_smi_output": str(smi), "env_file": str(ENV_UNSOURCED)}
    ok = call_tool("check_environment", {**args, "pip_list_output": str(PIP_MISMATCH)})  # torch 1.11.0
    assert ok.verdict == "auto", ok.summary
    assert ok.versions["cuda"] == "11.4" and ok.versions["nvidia_driver"] == "470.57.02"
    assert "driver" not in _status(ok) and "torch_npu" not in _status(ok)  # no Ascend checks on the GPU side
    cpu_build = call_tool("check_environment", {**args, "pip_list_output": str(PIP_OK)})  # torch 2.7.1+cpu
    assert cpu_build.verdict == "manual_stop" and _status(cpu_build)["torch_cuda_build"] == "fail"
    garbled = tmp_path / "smi.txt"
    garbled.write_text("Failed to initialize NVML: Driver/library version mismatch\n")
    bad = call_tool("check_environment", {**args, "nvidia_smi_output": str(garbled), "pip_list_output": str(PIP_MISMATCH)})
    assert bad.verdict == "unknown" and _status(bad)["nvidia_smi"] == "unknown"
    assert "could not be read" in next(c.reason for c in bad.checks if c.name == "nvidia_smi")
