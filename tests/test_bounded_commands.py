"""Commands acc-agent runs (measure-performance --command, npu-smi / nvidia-smi, the device probe):
deadlines that hold even when the command's own children keep its pipes open, output kept to a
bound whatever the command prints, no shell, and never a command taken from a file's contents.
"""

from __future__ import annotations

import ast
import os
import shutil
import sys
import time
from pathlib import Path

import pytest

from acc_agent.io.env import probe as probe_module
from acc_agent.io.process import PIPE_GRACE_S, run_bounded
from acc_agent.registry import all_tools
from acc_agent.tools.envcheck import probes

REPO = Path(__file__).resolve().parents[1]
PY = sys.executable


def _alive(pid: int) -> bool:
    """Whether ``pid`` still runs (a zombie waiting for its parent counts as gone)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def test_timeout_kills_the_whole_process_group(tmp_path: Path) -> None:
    """A shell whose background child holds the pipes: the call still returns at its deadline, both killed."""
    pids = tmp_path / "pids"
    start = time.monotonic()
    got = run_bounded(["sh", "-c", f"sleep 60 & echo $! > {pids}; echo $$ >> {pids}; wait"], timeout_s=1.0)
    elapsed = time.monotonic() - start
    assert got.timed_out and got.returncode is None
    assert elapsed < 1.0 + PIPE_GRACE_S + 2, f"{elapsed:.1f} s: the deadline did not hold"
    time.sleep(0.2)
    for pid in map(int, pids.read_text().split()):
        assert not _alive(pid), f"process {pid} of the timed-out command still runs"


def test_a_background_child_holding_the_pipe_does_not_block_a_finished_command() -> None:
    """subprocess.run would wait for the grandchild's end; here the pipe is abandoned after a short grace."""
    start = time.monotonic()
    got = run_bounded(["sh", "-c", "(sleep 30 &); echo done"], timeout_s=60)
    assert got.returncode == 0 and got.stdout == "done\n" and not got.timed_out
    assert time.monotonic() - start < PIPE_GRACE_S + 3


def test_output_is_bounded_and_the_child_is_never_blocked_on_a_full_pipe() -> None:
    """200 MB on stdout and stderr: the command runs to its end, and only the tail of each is kept."""
    code = "import sys\nfor _ in range(2000):\n    sys.stdout.write('o' * 100000); sys.stderr.write('e' * 100000)\nprint('LAST')"
    got = run_bounded([PY, "-c", code], timeout_s=120, max_bytes=4096)
    assert got.returncode == 0 and not got.timed_out
    assert len(got.stdout) <= 4096 and got.stdout.endswith("LAST\n")
    assert len(got.stderr) <= 4096 and got.stdout_dropped > 100_000_000 and got.truncated
    head = run_bounded([PY, "-c", "print('FIRST'); print('x' * 10**6)"], timeout_s=60, max_bytes=100, keep="head")
    assert head.stdout.startswith("FIRST") and len(head.stdout) == 100


def test_stdin_is_closed_and_start_failures_are_reported() -> None:
    assert run_bounded(["cat"], timeout_s=10).returncode == 0  # cat sees EOF at once instead of waiting
    missing = run_bounded(["/nonexistent/program"], timeout_s=5)
    assert missing.start_error and missing.returncode is None
    nul = run_bounded(["echo", "a\x00b"], timeout_s=5)
    assert nul.start_error and "null" in nul.start_error
    with pytest.raises(ValueError):
        run_bounded([], timeout_s=1)


def test_measure_performance_command_floods_and_hangs_are_bounded(tmp_path: Path) -> None:
    spec = all_tools()["measure_performance"]
    flood = f"{PY} -c \"import sys; sys.stdout.write('x' * 50_000_000); sys.stderr.write('boom' * 10); sys.exit(3)\""
    out = spec.run({"command": flood, "batch_sizes": [1], "warmup": 0, "iterations": 1, "timeout_s": 60})
    row = out.results[0]
    assert row.status == "error" and "exited with code 3" in (row.error or "") and len(row.error or "") < 1000
    start = time.monotonic()
    hang = "sh -c 'sleep 60 & sleep 60'"
    out = spec.run({"command": hang, "batch_sizes": [1], "warmup": 0, "iterations": 1, "timeout_s": 1})
    assert out.results[0].status == "error" and "did not finish within 1 s" in (out.results[0].error or "")
    assert time.monotonic() - start < 1 + PIPE_GRACE_S + 3


def _fake_tool(folder: Path, name: str, body: str) -> None:
    folder.mkdir(exist_ok=True)
    script = folder / name
    script.write_text(f"#!/bin/sh\n{body}\n", encoding="utf-8")
    script.chmod(0o755)


def test_smi_commands_time_out_and_are_cut(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A hung npu-smi answers 'did not answer' at the deadline; a flooding one is cut at the text limit."""
    bin_dir = tmp_path / "bin"
    _fake_tool(bin_dir, "npu-smi", "sleep 60 & sleep 60")
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setattr(probes, "SMI_TIMEOUT_S", 1.0)
    start = time.monotonic()
    text, why = probes.run_smi(["npu-smi", "info"])
    assert text is None and "did not answer within 1 s" in why
    assert time.monotonic() - start < 1 + PIPE_GRACE_S + 3
    _fake_tool(bin_dir, "npu-smi", f"{PY} -c \"print('+' * 10_000_000)\"")
    monkeypatch.setattr(probes, "MAX_TEXT", 65536)
    text, why = probes.run_smi(["npu-smi", "info"])
    assert text is not None and len(text) == 65536 and "output cut" in why


def test_device_probe_times_out(tmp_path: Path) -> None:
    fake = tmp_path / "python"
    fake.write_text("#!/bin/sh\nsleep 60 & sleep 60\n", encoding="utf-8")
    fake.chmod(0o755)
    start = time.monotonic()
    got = probe_module.run_probe("npu", timeout_s=1.0, python=str(fake))
    assert got["status"] == "timeout" and time.monotonic() - start < 1 + PIPE_GRACE_S + 3
    got = probe_module.run_probe("npu", timeout_s=10.0, python="/nonexistent/python")
    assert got["status"] == "error" and "could not start" in str(got["error"])
    (tmp_path / "garbage").write_text("#!/bin/sh\necho 5\n", encoding="utf-8")
    (tmp_path / "garbage").chmod(0o755)
    got = probe_module.run_probe("npu", timeout_s=10.0, python=str(tmp_path / "garbage"))
    assert got["status"] == "error"  # JSON, but not the probe's object: an error, not a crash


def _calls(tree: ast.AST) -> list[str]:
    found = []
    for node in ast.walk(tree):
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            names = [a.name for a in node.names] + ([node.module] if isinstance(node, ast.ImportFrom) and node.module else [])
            found += [f"import {n}" for n in names if n.split(".")[0] in ("subprocess", "pty", "multiprocessing.popen_spawn_posix")]
        elif isinstance(node, ast.Call):
            func = ast.unparse(node.func)
            if func in ("os.system", "os.popen", "os.spawnl", "os.spawnv", "os.execv", "os.execvp", "os.posix_spawn",
                        "os.posix_spawnp") or func.startswith(("os.exec", "os.spawn")):
                found.append(func)
            if any(k.arg == "shell" for k in node.keywords):
                found.append(f"{func}(shell=...)")
    return found


def test_processes_are_started_in_one_place_only() -> None:
    """Every external command goes through acc_agent/io/process.py (deadline, bounded output, no shell)."""
    offenders = {}
    for path in sorted((REPO / "acc_agent").rglob("*.py")):
        rel = path.relative_to(REPO).as_posix()
        if rel == "acc_agent/io/process.py":
            continue
        calls = _calls(ast.parse(path.read_text(encoding="utf-8")))
        if calls:
            offenders[rel] = calls
    assert not offenders, f"processes started outside acc_agent/io/process.py: {offenders}"
    process_calls = _calls(ast.parse((REPO / "acc_agent/io/process.py").read_text(encoding="utf-8")))
    assert not [c for c in process_calls if "shell" in c], process_calls


def test_commands_written_in_project_files_and_logs_are_never_run(tmp_path: Path) -> None:
    """mig.yaml's entry commands and a log's command lines are shown in reports, never executed."""
    demo = REPO / "samples" / "demo_project"
    project = tmp_path / "p"
    shutil.copytree(demo, project)
    marker = tmp_path / "PWNED"
    text = (project / "mig.yaml").read_text(encoding="utf-8")
    for key in ("  train: ", "  inference: ", "  baseline_train: ", "  baseline_inference: "):
        start = text.index(key)
        end = text.index("\n", start)
        text = text[:start] + f"{key}touch {marker}; $(touch {marker}) `touch {marker}`" + text[end:]
    (project / "mig.yaml").write_text(text, encoding="utf-8")
    log = project / "logs" / "npu_fp16_train.log"
    log.write_text(log.read_text(encoding="utf-8") + f"\n$(touch {marker})\n`touch {marker}`\n", encoding="utf-8")
    tools = all_tools()
    tools["render_deliverables"].run({"config": str(project / "mig.yaml"), "out": str(tmp_path / "out"), "plots": False})
    tools["parse_training_log"].run({"log": str(log)})
    tools["measure_performance"].run({"from_log": str(log)})
    tools["select_baseline"].run({"project_dir": str(project)})
    assert not marker.exists(), "a command from a file was executed"
