"""The target dump parsed in a forked child while the golden is parsed here (large msprobe dumps).

Whatever path is taken, the result must equal the sequential ``open_dump_set`` (entries, scalar
arguments, header, shared name strings); a target the child cannot parse must give the very error
the sequential path gives; and no child may be left behind.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import numpy as np
import pytest

from acc_agent.errors import AccAgentError
from acc_agent.io import parallel_open
from acc_agent.io.dumps import DumpSet, open_dump_set

pytestmark = pytest.mark.skipif(not hasattr(os, "fork"), reason="the parallel open needs fork")

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench"))
import bench_statistics_compare as bench  # noqa: E402


@pytest.fixture(autouse=True)
def _always_fork(monkeypatch: pytest.MonkeyPatch) -> None:
    # small dumps, and a test process where an earlier test may have left a library's thread running
    # (Dask's offload thread), which makes the product refuse to fork: here the fork path is the subject
    monkeypatch.setattr(parallel_open, "MIN_BYTES", 0)
    monkeypatch.setattr(parallel_open, "can_fork", lambda: True)


def _same(a: DumpSet, b: DumpSet) -> None:
    assert a.root == b.root and list(a.ranks) == list(b.ranks)
    for k in a.ranks:
        x, y = a.ranks[k], b.ranks[k]
        assert (x.source, x.kind, x.data_dir, x.meta) == (y.source, y.kind, y.data_dir, y.meta)
        assert x.entries == y.entries and x.scalars == y.scalars and list(x.by_name) == list(y.by_name)


def _no_child_left(forked_pids: list[int]) -> None:
    """Every child the parallel open forked has been waited for (other tests' workers may still run)."""
    assert forked_pids, "no child was forked"
    for pid in forked_pids:
        with pytest.raises(ChildProcessError):
            os.waitpid(pid, os.WNOHANG)


@pytest.mark.parametrize("form", ["root", "rank_dir", "dump_json"])
def test_pair_equals_sequential_open(tmp_path: Path, form: str, forked_pids: list[int]) -> None:
    golden, target, _ = bench.generate(tmp_path, 600, 300, seed=11)
    paths = {"root": (golden.parents[1], target.parents[1]), "rank_dir": (golden, target),
             "dump_json": (golden / "dump.json", target / "dump.json")}[form]
    g_pair, t_pair = parallel_open.open_pair(*paths)
    assert forked_pids, "the target was not parsed in a child"
    g_seq = open_dump_set(paths[0])
    _same(g_pair, g_seq)
    _same(t_pair, open_dump_set(paths[1], like=g_seq))
    # equal names share the golden's string objects, as open_dump_set(..., like=) makes them
    g_by = next(iter(g_pair.ranks.values())).by_name
    assert all(g_by[e.name].name is e.name for e in next(iter(t_pair.ranks.values())).entries if e.name in g_by)
    _no_child_left(forked_pids)


def test_unreadable_target_gives_the_sequential_error(tmp_path: Path, forked_pids: list[int]) -> None:
    golden, target, _ = bench.generate(tmp_path, 200, 100, seed=2)
    text = (target / "dump.json").read_text(encoding="utf-8")
    (target / "dump.json").write_text(text[: len(text) // 2], encoding="utf-8")  # cut off mid-write
    with pytest.raises(AccAgentError) as seq:
        open_dump_set(target)
    with pytest.raises(AccAgentError) as par:
        parallel_open.open_pair(golden, target)
    assert (par.value.code, par.value.message) == (seq.value.code, seq.value.message) == (
        "invalid_dump_json", seq.value.message)
    _no_child_left(forked_pids)


def test_failing_golden_reaps_the_child(tmp_path: Path, forked_pids: list[int]) -> None:
    _, target, _ = bench.generate(tmp_path, 200, 100, seed=4)
    with pytest.raises(AccAgentError):
        parallel_open.open_pair(tmp_path / "missing", target)
    _no_child_left(forked_pids)


def test_tensor_folders_are_opened_here(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Not an msprobe dump.json: nothing to gain from a child, so none is started."""
    for side in ("g", "t"):
        (tmp_path / side).mkdir()
        np.save(tmp_path / side / "x.npy", np.arange(6, dtype=np.float32))

    def no_fork() -> int:
        raise AssertionError("forked for a tensor folder")

    monkeypatch.setattr(parallel_open.os, "fork", no_fork)
    g, t = parallel_open.open_pair(tmp_path / "g", tmp_path / "t")
    assert [e.name for e in t.ranks[""].entries] == ["x"] and g.ranks[""].kind == t.ranks[""].kind
