"""Suite-wide settings: results of tool calls that pick their own place go to a temporary folder.

Without a mig.yaml above the working directory, a truncated comparison writes its full CSV to
``acc-agent-results/`` there; run from the checkout, the suite would leave that folder behind.
"""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest


@pytest.fixture(autouse=True, scope="session")
def _results_outside_the_checkout(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    if "ACC_AGENT_RESULTS_DIR" in os.environ:
        yield
        return
    os.environ["ACC_AGENT_RESULTS_DIR"] = str(tmp_path_factory.mktemp("acc-agent-results"))
    try:
        yield
    finally:
        os.environ.pop("ACC_AGENT_RESULTS_DIR", None)


@pytest.fixture
def forked_pids(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The pids of the children the test's code forks (``os.fork`` wrapped), to check each was reaped."""
    pids: list[int] = []
    real_fork = os.fork

    def counting_fork() -> int:
        pid = real_fork()
        if pid:
            pids.append(pid)
        return pid

    monkeypatch.setattr(os, "fork", counting_fork)
    return pids
