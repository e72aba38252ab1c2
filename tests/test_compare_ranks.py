"""Many ranks: every way of running them (in this process, a local pool, split ranks, Dask) gives the
same rows, diagnosis and summary. (Speed-up is measured in bench/bench_ranks.py, not asserted.)"""

from __future__ import annotations

import contextlib
import io
import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from acc_agent.cli import main
from acc_agent.io.dumps import rank_sources
from acc_agent.tools import _rank_tasks
from acc_agent.tools._dump_rows import Job


def _write_rank(folder: Path, tensors: dict[str, np.ndarray]) -> None:
    data_dir = folder / "dump_tensor_data"
    data_dir.mkdir(parents=True, exist_ok=True)
    data: dict[str, Any] = {}
    for name, arr in tensors.items():
        key = name.rsplit(".output.", 1)[0]
        np.save(data_dir / f"{name}.npy", arr)
        data[key] = {"input_args": [], "input_kwargs": {}, "output": [{
            "type": "torch.Tensor", "dtype": f"torch.{arr.dtype}", "shape": list(arr.shape), "requires_grad": False,
            "data_name": f"{name}.npy"}]}
    (folder / "dump.json").write_text(json.dumps({"task": "tensor", "level": "L1", "framework": "pytorch",
                                                  "dump_data_dir": str(data_dir), "data": data}))


def _tree(root: Path, ranks: int = 5, broken: int = 3, extra_target_rank: bool = True) -> tuple[Path, Path, Path]:
    """golden/target/bench step0/rank* trees; in ``broken`` one linear's output is negated on the target."""
    for r in range(ranks):
        rng = np.random.default_rng(r)
        g: dict[str, np.ndarray] = {}
        t: dict[str, np.ndarray] = {}
        b: dict[str, np.ndarray] = {}
        for i in range(4):
            name = f"Functional.linear.{i}.forward.output.0"
            g[name] = rng.standard_normal((32, 64)).astype(np.float32)
            t[name] = -g[name].astype(np.float16) if (r == broken and i == 2) else g[name].astype(np.float16)
            b[name] = g[name].astype(np.float16)
        _write_rank(root / "golden" / "step0" / f"rank{r}", g)
        _write_rank(root / "target" / "step0" / f"rank{r}", t)
        _write_rank(root / "bench" / "step0" / f"rank{r}", b)
    if extra_target_rank:
        _write_rank(root / "target" / "step0" / f"rank{ranks}", {"Functional.linear.0.forward.output.0":
                                                                  np.ones((2, 2), np.float32)})
    return root / "golden", root / "target", root / "bench"


def _run(argv: list[str]) -> tuple[int, dict[str, Any]]:
    out = io.StringIO()
    with contextlib.redirect_stdout(out), pytest.raises(SystemExit) as exc:
        main(["compare-dumps", *argv, "--json", "--all-rows"])
    return int(exc.value.code or 0), json.loads(out.getvalue())


@pytest.fixture()
def tree(tmp_path: Path) -> tuple[Path, Path, Path]:
    return _tree(tmp_path)


def test_rank_sources_lists_ranks_without_parsing(tree: tuple[Path, Path, Path], tmp_path: Path) -> None:
    golden, target, _ = tree
    src = rank_sources(target)
    assert list(src) == [f"step0/rank{r}" for r in range(6)]
    assert all(p.name == "dump.json" and p.is_file() for p in src.values())
    (golden / "step0" / "rank0" / "dump.json").write_text("{ not json")  # parsed only by the rank's worker
    assert rank_sources(golden)["step0/rank0"].is_file()
    single = golden / "step0" / "rank1"
    assert rank_sources(single) == {"": single}


def test_split_and_interleave_are_inverse() -> None:
    jobs = [Job(f"g{i}", f"t{i}", "exact", i) for i in range(11)]
    for parts in (1, 2, 3, 11):
        batches = _rank_tasks.split_jobs(jobs, parts)
        assert len(batches) == parts and _rank_tasks.interleave(batches, parts) == jobs


def test_pool_gives_what_one_process_gives(tree: tuple[Path, Path, Path]) -> None:
    golden, target, bench = tree
    one = _run([str(golden), str(target), "--bench", str(bench), "--workers", "1"])
    many = _run([str(golden), str(target), "--bench", str(bench), "--workers", "3"])
    assert one == many
    code, out = one
    assert code == 1 and out["first_divergence"]["rank"] == "rank3"
    assert out["first_divergence"]["name"] == "Functional.linear.2.forward.output.0"
    assert out["unmatched_target"] == ["step0/rank5/*"]
    assert [r["rank"] for r in out["rows"]] == sorted(r["rank"] for r in out["rows"])  # ranks in key order
    assert all(r["bench"] is not None for r in out["rows"])
    sources = [e["ref"] for e in out["evidence"] if e["kind"] == "file" and "dump (" in e["detail"]]
    assert len(sources) == 5 + 6 + 5  # every dump of every side, the unmatched target rank too


def _statistics_tree(root: Path, ranks: int = 3) -> tuple[Path, Path]:
    """msprobe's default dumps (statistics only) for every rank; rank 1's gelu output is 20 % off."""
    for side in ("golden", "target"):
        for r in range(ranks):
            data = {}
            for i, api in enumerate(("Functional.linear", "Functional.gelu", "Functional.linear")):
                x = {"type": "torch.Tensor", "dtype": "torch.float32", "shape": [4, 8], "Max": 1.0 + i,
                     "Min": -1.0, "Mean": 0.1 * i, "Norm": 5.0 + i, "requires_grad": False}
                y = dict(x, Max=2.0 + i, Norm=6.0 + i)
                if side == "target" and r == 1 and api == "Functional.gelu":
                    y = dict(y, Max=y["Max"] * 1.2, Norm=y["Norm"] * 1.2)
                data[f"{api}.{i}.forward"] = {"input_args": [x, {"type": "int", "value": i}],
                                              "input_kwargs": {}, "output": [y]}
            folder = root / side / "step0" / f"rank{r}"
            folder.mkdir(parents=True)
            (folder / "dump.json").write_text(json.dumps({"task": "statistics", "level": "L1",
                                                          "framework": "pytorch", "data": data}))
    return root / "golden", root / "target"


def test_statistics_ranks_through_the_pool(tmp_path: Path) -> None:
    golden, target = _statistics_tree(tmp_path)
    one = _run([str(golden), str(target), "--workers", "1", "--csv", str(tmp_path / "one.csv")])
    many = _run([str(golden), str(target), "--workers", "3", "--csv", str(tmp_path / "many.csv")])
    strip = [(c, {k: v for k, v in o.items() if k not in ("csv_path", "evidence")}) for c, o in (one, many)]
    assert strip[0] == strip[1]
    assert (tmp_path / "one.csv").read_bytes() == (tmp_path / "many.csv").read_bytes()
    assert one[1]["diagnosis"]["compared_by"] == "statistics" and one[1]["first_divergence"]["rank"] == "rank1"


def test_split_ranks_give_what_whole_ranks_give(tree: tuple[Path, Path, Path],
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    golden, target, _ = tree
    whole = _run([str(golden), str(target), "--workers", "1"])
    splits: list[int] = []
    real = _rank_tasks._submit_split

    def counting(backend: Any, task: Any, split: Any, *args: Any) -> None:
        splits.append(len(split.jobs))
        real(backend, task, split, *args)

    monkeypatch.setattr(_rank_tasks, "_submit_split", counting)
    monkeypatch.setattr(_rank_tasks, "PARALLEL_MIN_BYTES", 0)  # every rank is "big" with idle workers
    split = _run([str(golden), str(target), "--workers", "8"])
    assert splits and split == whole


@pytest.mark.parametrize("workers", ["1", "3"])
def test_a_broken_rank_is_its_structured_error(tree: tuple[Path, Path, Path], workers: str) -> None:
    """The worker's AccAgentError crosses the process boundary whole (code, message, hint, path)."""
    golden, target, _ = tree
    (target / "step0" / "rank2" / "dump.json").write_text("{ cut off")
    code, out = _run([str(golden), str(target), "--workers", workers])
    assert code == 2 and out["error"]["code"] == "invalid_dump_json"
    assert "rank2" in out["error"]["path"] and out["error"]["hint"]


def test_scheduler_without_dask_is_a_structured_error(tree: tuple[Path, Path, Path],
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    golden, target, _ = tree
    monkeypatch.setitem(sys.modules, "distributed", None)  # import distributed -> ImportError
    code, out = _run([str(golden), str(target), "--scheduler", "local"])
    assert code == 2 and out["error"]["code"] == "missing_dependency"
    assert "acc-agent[distributed]" in out["error"]["hint"]


# ------------------------------------------------------------------------------------------ Dask


@pytest.fixture(scope="module")
def dask_address() -> Iterator[str]:
    distributed = pytest.importorskip("distributed", reason="dask.distributed not installed (pip install '.[test]')")
    cluster = distributed.LocalCluster(n_workers=3, threads_per_worker=1, processes=True, dashboard_address=None)
    try:
        yield cluster.scheduler_address
    finally:
        cluster.close()


def test_dask_gives_what_the_local_path_gives(tree: tuple[Path, Path, Path], dask_address: str) -> None:
    golden, target, bench = tree
    local = _run([str(golden), str(target), "--bench", str(bench)])
    remote = _run([str(golden), str(target), "--bench", str(bench), "--scheduler", dask_address])
    assert remote == local
    assert remote[1]["diagnosis"]["category"] == local[1]["diagnosis"]["category"]
    assert remote[1]["first_divergence"]["rank"] == "rank3"


def test_dask_reports_a_broken_rank_like_the_local_path(tree: tuple[Path, Path, Path], dask_address: str) -> None:
    golden, target, _ = tree
    (target / "step0" / "rank2" / "dump.json").write_text("{ cut off")
    assert _run([str(golden), str(target), "--scheduler", dask_address]) == _run([str(golden), str(target)])


def test_dask_split_ranks_and_a_single_dump(tree: tuple[Path, Path, Path], dask_address: str,
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    golden, target, _ = tree
    local = _run([str(golden), str(target), "--workers", "1"])
    monkeypatch.setattr(_rank_tasks, "PARALLEL_MIN_BYTES", 0)
    monkeypatch.setattr(_rank_tasks, "HUGE_RANK_BYTES", 0)  # every rank in batches, rows from worker to worker
    assert _run([str(golden), str(target), "--scheduler", dask_address]) == local
    one_g, one_t = golden / "step0" / "rank3", target / "step0" / "rank3"
    assert _run([str(one_g), str(one_t), "--scheduler", dask_address]) == _run([str(one_g), str(one_t)])
