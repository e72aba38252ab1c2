"""The style bar of the developers' guide, enforced where CI can see it: ruff and mypy stay clean."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def test_ruff_is_clean() -> None:
    if shutil.which("ruff") is None:
        pytest.fail("ruff is a test dependency: pip install -e '.[test]'")
    proc = subprocess.run(["ruff", "check", "acc_agent", "tests", "bench", "samples"], cwd=ROOT,
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_mypy_is_clean() -> None:
    proc = subprocess.run([sys.executable, "-m", "mypy"], cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout + proc.stderr
