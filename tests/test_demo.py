"""The README's main job: `acc-agent demo --out DIR` on a fresh install, without torch."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]

# Runs the real CLI entry point in a child interpreter where `import torch` fails, as on a machine
# where only `pip install -e .` was done.
NO_TORCH = """
import sys, importlib.abc
class Block(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name == "torch" or name.startswith("torch."):
            raise ImportError("torch is blocked for this test")
        return None
sys.meta_path.insert(0, Block())
from acc_agent.cli import main
sys.argv = ["acc-agent"] + sys.argv[1:]
main()
"""


def _cli(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", NO_TORCH, *args], cwd=cwd, capture_output=True, text=True,
                          timeout=120)


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_demo_writes_checked_deliverables_without_torch(tmp_path: Path, lang: str) -> None:
    res = _cli("demo", "--out", "demo-out", "--lang", lang, cwd=tmp_path)
    assert res.returncode == 0, res.stdout + res.stderr
    out = tmp_path / "demo-out"
    for name in ("Mig_Readme.md", "Compare.md", "Mig_report.md", "Summary.md"):
        assert (out / name).is_file()
    assert "Deliverables written to" in res.stdout and str(out) in res.stdout
    for png in ("latency.png", "layers.png", "loss_curves.png"):
        assert (out / "plots" / png).stat().st_size > 1000, png
        assert f"(plots/{png})" in (out / "Compare.md").read_text(encoding="utf-8")
    check = _cli("report", "--check", "--out", "demo-out", cwd=tmp_path)
    assert check.returncode == 0, check.stdout
    assert "all checks passed" in check.stdout and "dataset_rows" in check.stdout
    assert not (REPO / "samples" / "demo_project" / "Compare.md").exists()  # ran on a copy


@pytest.fixture(scope="module")
def demo_en(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("demo")
    assert _cli("demo", "--out", "d", cwd=root).returncode == 0
    return root / "d"


def test_rerender_keeps_block_and_backs_up_outside_edit(tmp_path: Path, demo_en: Path) -> None:
    shutil.copytree(demo_en, tmp_path / "d")
    compare = tmp_path / "d" / "Compare.md"
    text = compare.read_text(encoding="utf-8")
    mine = "Reviewed by Li Wei — the GELU port is tracked in issue 42."
    text = text.replace("Reviewer notes.", mine).replace("## 5 Bottleneck", "## 5 Bottleneck (edited)")
    compare.write_text(text, encoding="utf-8")
    res = _cli("demo", "--out", "d", cwd=tmp_path)
    assert res.returncode == 0
    new = compare.read_text(encoding="utf-8")
    assert mine in new and "(edited)" not in new
    backups = list((tmp_path / "d").glob("Compare.md.*.bak"))
    assert len(backups) == 1 and "(edited)" in backups[0].read_text(encoding="utf-8")
    assert "hand edits backed up to" in res.stdout


def test_report_check_fails_on_inconsistent_documents(tmp_path: Path, demo_en: Path) -> None:
    shutil.copytree(demo_en, tmp_path / "d")
    readme = tmp_path / "d" / "Mig_Readme.md"
    readme.write_text(readme.read_text(encoding="utf-8").replace("| Short-run band | 30 %", "| Short-run band | 25 %"),
                      encoding="utf-8")
    res = _cli("report", "--check", "--out", "d", cwd=tmp_path)
    assert res.returncode == 1 and "short_run_band" in res.stdout and "NO" in res.stdout


def test_init_writes_a_valid_project_file(tmp_path: Path) -> None:
    assert _cli("init", str(tmp_path), cwd=tmp_path).returncode == 0
    from acc_agent.io.project_file import load_project

    assert load_project(tmp_path / "mig.yaml").model.target_precision == "fp16"
    again = _cli("init", str(tmp_path), cwd=tmp_path)
    assert again.returncode == 2 and "already exists" in again.stderr
    # the untouched starting file already renders complete documents whose gaps say what to run
    res = _cli("report", "mig.yaml", "--out", "docs", cwd=tmp_path)
    assert res.returncode == 0 and "[with_gaps]" in res.stdout and "0 check problems" in res.stdout
    assert _cli("report", "--check", "--out", "docs", cwd=tmp_path).returncode == 0


def test_report_bad_project_is_exit_2(tmp_path: Path) -> None:
    (tmp_path / "mig.yaml").write_text("project: {name: x}\nmodel: {name: m, mode: sideways}\n", encoding="utf-8")
    res = _cli("report", "mig.yaml", cwd=tmp_path)
    assert res.returncode == 2 and "line 2, field model.mode" in res.stderr
