"""The statistics CSV written by a forked child while the diagnosis runs (large statistics ranks).

The child drafts the table from the rows as they are before the diagnosis and then replaces the
Result and Err_message cells the diagnosis changed. Whatever the path, the file must be byte for
byte the one written in a single process, the diagnosis's refinements included; a failure in the
child is the same structured error; and a comparison that fails before the CSV leaves no child.
"""

from __future__ import annotations

import csv
import json
import os
import sys
from pathlib import Path
from typing import Any

import pytest

from acc_agent.cli import main
from acc_agent.errors import AccAgentError
from acc_agent.tools import _background_csv
from acc_agent.tools.compare_dumps import CompareDumpsInput, compare_dumps

pytestmark = pytest.mark.skipif(not hasattr(os, "fork"), reason="the background writer needs fork")

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench"))
import bench_statistics_compare as bench  # noqa: E402


@pytest.fixture(scope="module")
def pair(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, str]:
    """A real-layout msprobe statistics pair of 8,000 calls (~24k rows, over the fork threshold)."""
    work = tmp_path_factory.mktemp("bg_pair")
    golden, target, injected = bench.generate(work, 8000, 4800, seed=3)
    return golden, target, injected


def _run(golden: Path, target: Path, out: Path, fork: bool, monkeypatch: pytest.MonkeyPatch) -> Any:
    monkeypatch.setattr(_background_csv, "can_fork", (lambda: True) if fork else (lambda: False))
    return compare_dumps(CompareDumpsInput(golden=str(golden), target=str(target), csv=str(out)))


def test_forked_csv_equals_single_process_csv(pair: tuple[Path, Path, str], tmp_path: Path,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    golden, target, injected = pair
    started: list[Any] = []
    real_start = _background_csv.BackgroundCsv.start.__func__  # type: ignore[attr-defined]

    def spy(cls: Any, *args: Any, **kwargs: Any) -> Any:
        writer = real_start(cls, *args, **kwargs)
        started.append(writer)
        return writer

    monkeypatch.setattr(_background_csv.BackgroundCsv, "start", classmethod(spy))
    forked = _run(golden, target, tmp_path / "forked.csv", True, monkeypatch)
    assert started and started[0] is not None, "the large statistics rank did not use the background writer"
    single = _run(golden, target, tmp_path / "single.csv", False, monkeypatch)
    assert (tmp_path / "forked.csv").read_bytes() == (tmp_path / "single.csv").read_bytes()
    assert forked.first_divergence is not None and forked.first_divergence.name == f"{injected}.output.0"
    assert forked.model_dump() == {**single.model_dump(), "csv_path": forked.csv_path,
                                   "evidence": forked.model_dump()["evidence"]}
    # the diagnosis's change reached the file: the first divergence is an error row there
    with (tmp_path / "forked.csv").open(newline="", encoding="utf-8") as fh:
        flagged = {r["NPU Name"]: r for r in csv.DictReader(fh) if r["Result"] != "pass"}
    assert flagged[f"{injected}.output.0"]["Result"] == "error"
    assert "first divergence" in flagged[f"{injected}.output.0"]["Err_message"]


@pytest.mark.parametrize("parts", [2, 3])
def test_csv_drafted_in_parts_equals_single_process_csv(pair: tuple[Path, Path, str], tmp_path: Path, parts: int,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    """Several children (where cores are free) each draft a share; joined, the table is the same file."""
    golden, target, injected = pair
    monkeypatch.setattr(_background_csv, "default_parts", lambda: parts)
    _run(golden, target, tmp_path / "parts.csv", True, monkeypatch)
    _run(golden, target, tmp_path / "single.csv", False, monkeypatch)
    assert (tmp_path / "parts.csv").read_bytes() == (tmp_path / "single.csv").read_bytes()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["parts.csv", "single.csv"]  # no part file left


def test_non_ascii_names_keep_their_cells(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Byte offsets, not character offsets, locate the cells to replace when names are not ASCII."""
    golden, target, injected = bench.generate(tmp_path / "pair", 7000, 6000, seed=5)
    for side in (golden, target):
        text = (side / "dump.json").read_text(encoding="utf-8").replace("Tensor.__mul__", "Tensor.乘")
        (side / "dump.json").write_text(text, encoding="utf-8")
    monkeypatch.setattr(_background_csv, "MIN_ROWS", 1)
    _run(golden, target, tmp_path / "forked.csv", True, monkeypatch)
    _run(golden, target, tmp_path / "single.csv", False, monkeypatch)
    assert "Tensor.乘" in (tmp_path / "forked.csv").read_text(encoding="utf-8")
    assert (tmp_path / "forked.csv").read_bytes() == (tmp_path / "single.csv").read_bytes()


def test_child_write_error_is_the_structured_error(pair: tuple[Path, Path, str], tmp_path: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    golden, target, _ = pair
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    with pytest.raises(AccAgentError) as exc:
        _run(golden, target, blocker / "out.csv", True, monkeypatch)
    assert exc.value.code == "cannot_write" and str(blocker / "out.csv") in exc.value.message


def test_failure_before_the_csv_stops_the_child(pair: tuple[Path, Path, str], tmp_path: Path,
                                                monkeypatch: pytest.MonkeyPatch, forked_pids: list[int]) -> None:
    golden, target, _ = pair
    from acc_agent.numerics import diagnosis

    def broken(*args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("diagnosis failed")

    monkeypatch.setattr(diagnosis, "diagnose", broken)
    previous = tmp_path / "out.csv"
    previous.write_text("previous table\n")
    with pytest.raises(RuntimeError):
        _run(golden, target, previous, True, monkeypatch)
    assert previous.read_text() == "previous table\n"  # the old CSV stays whole
    assert forked_pids, "no writer was started"
    for pid in forked_pids:  # no child left behind, not even a zombie (other tests' workers may still run)
        with pytest.raises(ChildProcessError):
            os.waitpid(pid, os.WNOHANG)


def test_cli_process_output_is_complete(pair: tuple[Path, Path, str], tmp_path: Path,
                                        capsys: pytest.CaptureFixture[str]) -> None:
    """In-process CLI calls (tests, embedding) return normally: only a real command process exits early."""
    golden, target, injected = pair
    with pytest.raises(SystemExit) as exc:
        main(["compare-dumps", str(golden), str(target), "--csv", str(tmp_path / "o.csv"), "--json"])
    assert exc.value.code == 1
    out = json.loads(capsys.readouterr().out)
    assert out["first_divergence"]["name"] == f"{injected}.output.0"


def test_command_process_ends_early_with_its_output_whole(pair: tuple[Path, Path, str], tmp_path: Path) -> None:
    """A real ``acc-agent`` process leaves its large data to the OS (os._exit) after flushing everything."""
    import subprocess

    golden, target, injected = pair
    out = tmp_path / "o.csv"
    proc = subprocess.run([sys.executable, "-m", "acc_agent", "compare-dumps", str(golden), str(target), "--csv",
                           str(out), "--json"], capture_output=True, text=True, timeout=300, check=False)
    assert proc.returncode == 1, proc.stderr
    result = json.loads(proc.stdout)
    assert result["first_divergence"]["name"] == f"{injected}.output.0" and result["csv_path"] == str(out)
    assert out.read_text(encoding="utf-8").count("\n") == result["rows_total"] + 1 + sum(
        1 for line in out.read_text(encoding="utf-8").splitlines() if ",scalar," in line)
    text = subprocess.run([sys.executable, "-m", "acc_agent", "compare-dumps", str(golden), str(target), "--csv",
                           str(out)], capture_output=True, text=True, timeout=300, check=False)
    assert text.returncode == 1 and text.stdout.startswith("[fail]") and text.stdout.endswith("\n")
