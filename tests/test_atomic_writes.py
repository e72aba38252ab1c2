"""Result files (CSV, JSON) are written atomically: a writer killed mid-write leaves the old file whole, or none.

Each case runs a real writer in a child process — the tool itself where it writes the file
(compare-dumps --csv, check-environment snapshot_out, measure-performance --out, the complete
result of an agent answer, the short-run record) — whose file writes stop halfway through the
data and wait. The parent then kills the child with SIGKILL, the way an OOM killer or a CI
timeout does, and reads the target: it must hold exactly the old content (or not exist when there
was none). A control run with a plain ``open(path, "w")`` shows the same kill does leave a torn file.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pytest

from acc_agent.atomic import atomic_write, atomic_write_text

REPO = Path(__file__).resolve().parents[1]
OLD = '{"old": "complete file from an earlier run"}\n'

#: Runs in the child: every file opened through os.fdopen (atomic_write's temporary file) or, for
#: the control, builtins.open, writes half of its first write, flushes, says MID and waits.
_CHILD = r"""
import builtins, json, os, sys, time
case, target, extra = sys.argv[1], sys.argv[2], json.loads(sys.argv[3])

class Stall:
    def __init__(self, fh):
        self._fh = fh
    def write(self, data):
        half = data[: max(1, len(data) // 2)]
        self._fh.write(half)
        self._fh.flush()
        print("MID", flush=True)
        time.sleep(120)
    def __getattr__(self, name):
        return getattr(self._fh, name)
    def __enter__(self):
        return self
    def __exit__(self, *exc):
        return self._fh.__exit__(*exc)

def stalling(opener):
    def wrapped(*args, **kwargs):
        return Stall(opener(*args, **kwargs))
    return wrapped

if case == "control":
    builtins.open = stalling(builtins.open)
    with open(target, "w") as fh:
        fh.write(json.dumps({"new": "x" * 10000}))
    sys.exit(0)
os.fdopen = stalling(os.fdopen)
from acc_agent.registry import all_tools
tools = all_tools()
if case == "csv":
    tools["compare_dumps"].run({"golden": extra["golden"], "target": extra["target"], "csv": target, "workers": 1})
elif case == "snapshot":
    tools["check_environment"].run({"root": extra["root"], "probe": "off", "snapshot_out": target})
elif case == "perf":
    tools["measure_performance"].run({"callable": "numpy:ones", "batch_sizes": [1], "warmup": 1, "iterations": 3,
                                      "out": target})
elif case == "full_result":
    from acc_agent.compact import write_full_result
    from pathlib import Path
    write_full_result("tool", {"rows": list(range(5000))}, Path(target).parent)
elif case == "record":
    tools["judge_short_run"].run({"log": extra["log"], "config": extra["config"], "record_file": target})
print("DONE", flush=True)
"""


def _dump(root: Path) -> Path:
    data = root / "dump_tensor_data"
    data.mkdir(parents=True)
    for i in range(50):
        np.save(data / f"Functional.op.{i}.forward.output.0.npy", np.full(8, float(i), np.float32))
    leaves = {f"Functional.op.{i}.forward": {"output": [{"type": "torch.Tensor", "dtype": "torch.float32", "shape": [8],
                                                         "data_name": f"Functional.op.{i}.forward.output.0.npy"}]}
              for i in range(50)}
    (root / "dump.json").write_text(json.dumps({"task": "tensor", "level": "L1", "data": leaves}), encoding="utf-8")
    return root


def _log(path: Path) -> Path:
    path.write_text("\n".join(json.dumps({"step": i, "loss": 5 - 0.02 * i}) for i in range(100)) + "\n", encoding="utf-8")
    return path


def _kill_mid_write(case: str, target: Path, extra: dict[str, str]) -> str:
    """Start the writer, wait until it is halfway through a write, SIGKILL it; return what it printed."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")]))
    proc = subprocess.Popen([sys.executable, "-c", _CHILD, case, str(target), json.dumps(extra)], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=env)
    assert proc.stdout is not None
    seen = []
    timer = threading.Timer(120, proc.kill)  # a writer that never reaches MID must not hang the test
    timer.start()
    try:
        for line in proc.stdout:
            seen.append(line.strip())
            if line.strip() in ("MID", "DONE"):
                break
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
    finally:
        timer.cancel()
    assert "MID" in seen, f"the writer never wrote: {seen} {proc.stderr.read()[-2000:] if proc.stderr else ''}"
    return "\n".join(seen)


def test_control_plain_write_is_torn_by_a_kill(tmp_path: Path) -> None:
    """Without an atomic write the same kill leaves half a file: the checks below can fail."""
    target = tmp_path / "plain.json"
    target.write_text(OLD, encoding="utf-8")
    _kill_mid_write("control", target, {})
    text = target.read_text(encoding="utf-8")
    assert text != OLD and text.startswith('{"new"')
    with pytest.raises(json.JSONDecodeError):
        json.loads(text)


@pytest.mark.parametrize("case", ["csv", "snapshot", "perf", "full_result", "record"])
@pytest.mark.parametrize("existing", [True, False], ids=["old_file", "no_file"])
def test_killed_writer_leaves_old_file_or_none(case: str, existing: bool, tmp_path: Path) -> None:
    extra: dict[str, str] = {}
    target = tmp_path / "out" / {"csv": "rows.csv", "snapshot": "env.json", "perf": "perf.json",
                                 "full_result": "placeholder", "record": "records.json"}[case]
    target.parent.mkdir()
    if case == "csv":
        extra = {"golden": str(_dump(tmp_path / "g")), "target": str(_dump(tmp_path / "t"))}
    elif case == "snapshot":
        (tmp_path / "root").mkdir()
        extra = {"root": str(tmp_path / "root")}
    elif case == "record":
        (tmp_path / "train.yaml").write_text("learning_rate: 0.001\nglobal_batch_size: 32\nseed: 1234\n", encoding="utf-8")
        extra = {"log": str(_log(tmp_path / "train.jsonl")), "config": str(tmp_path / "train.yaml")}
    if existing and case != "full_result":
        target.write_text(OLD, encoding="utf-8")
    _kill_mid_write(case, target, extra)
    files = sorted(p.name for p in target.parent.iterdir())
    visible = [name for name in files if not name.startswith(".")]
    if case == "full_result":
        assert visible == [], f"a complete-result file appeared although its write was killed: {files}"
    elif existing:
        assert target.read_text(encoding="utf-8") == OLD, "the old file was damaged by a killed writer"
        assert visible == [target.name], files
    else:
        assert visible == [], f"a half-written {target.name} appeared: {files}"
    assert all(name.endswith(".tmp") for name in files if name.startswith(".")), files


def test_a_failing_write_removes_its_temporary_file_and_keeps_the_old(tmp_path: Path) -> None:
    target = tmp_path / "r.json"
    target.write_text(OLD, encoding="utf-8")
    with pytest.raises(RuntimeError), atomic_write(target) as fh:
        fh.write("partial")
        raise RuntimeError("the writer failed")
    assert target.read_text(encoding="utf-8") == OLD
    assert sorted(p.name for p in tmp_path.iterdir()) == ["r.json"]


def test_concurrent_writers_never_mix(tmp_path: Path) -> None:
    """Two writers of one file at once (two renders, two agents): a reader sees one whole version or the other."""
    target = tmp_path / "shared.json"
    versions = [json.dumps({"writer": w, "rows": [w] * 20000}) for w in (1, 2)]
    stop = threading.Event()
    seen: set[str] = set()

    def write(text: str) -> None:
        while not stop.is_set():
            atomic_write_text(target, text)

    threads = [threading.Thread(target=write, args=(v,)) for v in versions]
    for t in threads:
        t.start()
    try:
        # 300 reads, and at least until one write has finished (bounded): on a loaded machine the
        # reader can do its 300 reads before either writer has replaced the file once
        deadline = time.monotonic() + 20
        reads = 0
        while reads < 300 or (not seen and time.monotonic() < deadline):
            if target.exists():
                text = target.read_text(encoding="utf-8")
                assert text in versions, f"a torn or mixed file: {len(text)} chars"
                seen.add(text)
            reads += 1
    finally:
        stop.set()
        for t in threads:
            t.join()
    assert seen, "the writers never finished a file"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["shared.json"], "temporary files left behind"


def test_links_are_followed_and_devices_written_in_place(tmp_path: Path) -> None:
    """A link keeps pointing at the (replaced) file; /dev/null stays a device (a rename would replace it)."""
    real = tmp_path / "real.csv"
    real.write_text("old", encoding="utf-8")
    link = tmp_path / "link.csv"
    link.symlink_to(real.name)
    atomic_write_text(link, "new")
    assert link.is_symlink() and real.read_text(encoding="utf-8") == "new"
    atomic_write_text("/dev/null", "discarded")
    assert Path("/dev/null").is_char_device()


def test_new_files_get_the_usual_permissions(tmp_path: Path) -> None:
    """mkstemp makes 0600 files; results must be readable like any file the user writes (0666 less umask)."""
    umask = os.umask(0o022)
    os.umask(umask)
    path = atomic_write_text(tmp_path / "p.json", "{}")
    assert path.stat().st_mode & 0o777 == 0o666 & ~umask
