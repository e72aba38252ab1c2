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


def _leaf(dtype: str, shape: list[int], stats: dict[str, object], **extra: object) -> dict[str, object]:
    return {"type": "torch.Tensor", "dtype": dtype, "shape": shape, **stats, "requires_grad": False, **extra}


@pytest.mark.parametrize("odd_name", [False, True])
def test_every_kind_of_statistic_comes_back_as_parsed(tmp_path: Path, forked_pids: list[int], odd_name: bool) -> None:
    """bool and int tensors' Max/Min (msprobe writes true / 3, not floats), an empty tensor's null statistics, a
    statistic left out, md5 digests, tensor files, NaN and Inf, a name with a NUL in it: what comes back from
    the child is exactly what the sequential parse reads."""
    import json

    floats = {"Max": 1.5, "Min": -2.0, "Mean": 0.25, "Norm": 3.0}
    data = {
        "Functional.embedding.0.forward": {
            "input_args": [_leaf("torch.int64", [2, 8], {"Max": 31, "Min": 0, "Mean": 12.5, "Norm": 80.0}),
                           _leaf("torch.float32", [32, 4], floats, md5="a1b2c3d4")],
            "input_kwargs": {"padding_idx": {"type": "int", "value": 0}},
            "output": [_leaf("torch.float32", [2, 8, 4], {"Max": float("inf"), "Min": float("nan"), "Mean": 0.0,
                                                        "Norm": 1.0}, data_name="Functional.embedding.0.forward.output.0.npy")],
        },
        "Tensor.masked_fill.0.forward": {
            "input_args": [_leaf("torch.bool", [2, 8], {"Max": True, "Min": False, "Mean": 0.5, "Norm": 4.0}),
                           _leaf("torch.float32", [0], {"Max": None, "Min": None, "Mean": None, "Norm": None})],
            "output": [_leaf("torch.float32", [2, 8], {"Max": 1.0, "Min": 0.0, "Mean": 0.5})],
        },
    }
    if odd_name:
        data["Functional.relu\u0000x.0.forward"] = {"input_args": [_leaf("torch.float32", [4], floats)],
                                                     "output": [_leaf("torch.float32", [4], floats)]}
    for side in ("golden", "target"):
        rank = tmp_path / side / "step0" / "rank0"
        rank.mkdir(parents=True)
        doc = {"task": "statistics", "level": "L1", "framework": "pytorch", "dump_data_dir": None, "data": data}
        (rank / "dump.json").write_text(json.dumps(doc), encoding="utf-8")  # NaN/Infinity as msprobe writes them
    g_pair, t_pair = parallel_open.open_pair(tmp_path / "golden", tmp_path / "target")
    assert forked_pids, "the target was not parsed in a child"
    g_seq = open_dump_set(tmp_path / "golden")
    t_seq = open_dump_set(tmp_path / "target", like=g_seq)
    got, want = t_pair.ranks["step0/rank0"].entries, t_seq.ranks["step0/rank0"].entries
    assert [repr(e) for e in got] == [repr(e) for e in want]  # repr: NaN equals NaN, and 31 is not 31.0
    assert [[type(v) for v in e.stats.values()] for e in got] == [[type(v) for v in e.stats.values()] for e in want]
    assert got[0].stats == {"Max": 31, "Min": 0, "Mean": 12.5, "Norm": 80.0} and got[1].md5 == "a1b2c3d4"
    assert got[3].stats["Max"] is True and got[4].stats == {"Max": None, "Min": None, "Mean": None, "Norm": None}
    assert got[5].stats == {"Max": 1.0, "Min": 0.0, "Mean": 0.5}
    assert t_pair.ranks["step0/rank0"].scalars == t_seq.ranks["step0/rank0"].scalars
    _no_child_left(forked_pids)
