"""compare_dumps end to end through the CLI: bad input row by row, mapping, CSV, compact output, ranks."""

from __future__ import annotations

import csv
import json
import os
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch

from acc_agent.cli import main
from acc_agent.io.dumps import DumpSet, open_dump
from acc_agent.io.pairing import load_mapping, pair_entries


def write_dump(root: Path, tensors: dict[str, np.ndarray], data_names: dict[str, str] | None = None) -> Path:
    """An msprobe-layout dump (dump.json + dump_tensor_data/*.npy), one forward output per API."""
    data_dir = root / "dump_tensor_data"
    data_dir.mkdir(parents=True, exist_ok=True)
    data: dict[str, Any] = {}
    for name, arr in tensors.items():
        key = name.rsplit(".output.", 1)[0]
        data_name = (data_names or {}).get(name, name + ".npy")
        if not data_name.startswith(("/", "..")):
            np.save(data_dir / (name + ".npy"), arr)
        leaf = {"type": "numpy.ndarray", "dtype": str(arr.dtype), "shape": list(arr.shape), "data_name": data_name}
        data.setdefault(key, {"input_args": [], "input_kwargs": {}, "output": []})["output"].append(leaf)
    (root / "dump.json").write_text(json.dumps({"task": "tensor", "level": "L1", "framework": "mindspore",
                                                 "dump_data_dir": str(data_dir), "data": data}))
    return root


def run_cli(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, dict[str, Any]]:
    with pytest.raises(SystemExit) as exc:
        main(argv)
    out = capsys.readouterr().out
    return int(exc.value.code or 0), json.loads(out)


class _Payload:
    def __init__(self, marker: str) -> None:
        self.marker = marker

    def __reduce__(self) -> tuple[object, tuple[str]]:
        return (os.makedirs, (self.marker,))


@pytest.fixture()
def bad_pair(tmp_path: Path) -> tuple[Path, Path]:
    rng = np.random.default_rng(0)
    names = ["good_first", "truncated", "object", "pickle_pt", "dotdot", "absolute", "missing", "nan_moved",
             "nan_same", "shape", "empty", "scalar", "ints", "bools", "good_last"]
    golden: dict[str, np.ndarray] = {}
    for i, n in enumerate(names):
        golden[f"Functional.{n}.{i}.forward.output.0"] = rng.standard_normal((4, 8)).astype(np.float32)
    key = {n: f"Functional.{n}.{i}.forward.output.0" for i, n in enumerate(names)}
    golden[key["empty"]] = np.zeros((0, 8), np.float32)
    golden[key["scalar"]] = np.array(1.5, np.float32)
    golden[key["ints"]] = np.arange(32, dtype=np.int64).reshape(4, 8)
    golden[key["bools"]] = golden[key["good_first"]] > 0
    nan_g = golden[key["nan_same"]].copy()
    nan_g[0, 0] = np.nan
    golden[key["nan_same"]] = nan_g
    target = {k: (v.astype(np.float16) if v.dtype == np.float32 else v.copy()) for k, v in golden.items()}
    moved = target[key["nan_moved"]].copy()
    moved[1, 1] = np.nan
    target[key["nan_moved"]] = moved
    target[key["shape"]] = target[key["shape"]].reshape(8, 4)
    target[key["ints"]] = golden[key["ints"]] + 1
    target[key["bools"]] = ~golden[key["bools"]]
    g_root = write_dump(tmp_path / "golden", golden)
    t_root = write_dump(tmp_path / "target", target, {
        key["dotdot"]: "../../etc/x",
        key["absolute"]: "/etc/passwd",
        key["pickle_pt"]: key["pickle_pt"] + ".pt",
    })
    data = t_root / "dump_tensor_data"
    raw = (data / (key["truncated"] + ".npy")).read_bytes()
    (data / (key["truncated"] + ".npy")).write_bytes(raw[: len(raw) - 40])
    np.save(data / (key["object"] + ".npy"), np.array([None, {"x": 1}], dtype=object), allow_pickle=True)
    torch.save({"t": _Payload(str(tmp_path / "PWNED"))}, data / (key["pickle_pt"] + ".pt"))
    (data / (key["missing"] + ".npy")).unlink()
    return g_root, t_root


def test_every_bad_row_is_reported_and_the_rest_compared(bad_pair: tuple[Path, Path], tmp_path: Path,
                                                         capsys: pytest.CaptureFixture[str]) -> None:
    g, t = bad_pair
    code, out = run_cli(["compare-dumps", str(g), str(t), "--all-rows", "--json"], capsys)
    assert code == 1 and out["verdict"] == "fail"
    rows = {r["name"].split(".")[1]: r for r in out["rows"]}
    assert len(rows) == 15 and out["rows_total"] == 15

    def err(name: str, *words: str) -> None:
        r = rows[name]
        assert r["status"] == "error", (name, r["status"], r["message"])
        for w in words:
            assert w in r["message"], (name, w, r["message"])
        assert r["cosine"] is None and r["na_reasons"]["cosine"]

    err("truncated", "truncated.", "truncated")
    err("object", "object.", "unpickling")
    err("pickle_pt", "pickle_pt.", "unpickling")
    err("dotdot", "../../etc/x", "outside")
    err("absolute", "/etc/passwd", "outside")
    err("missing", "missing.", "does not exist")
    err("shape", "shape unmatched")
    err("nan_moved", "NaN/Inf positions differ")
    assert not (tmp_path / "PWNED").exists()
    assert rows["nan_moved"]["target_nan"] == 1
    # computed rows: first and last good, same-position NaN (zeroed like msprobe), int, bool, 0-d
    for name in ("good_first", "good_last", "nan_same", "ints", "bools"):
        assert rows[name]["cosine"] is not None and rows[name]["max_abs_err"] is not None, name
    assert rows["nan_same"]["golden_nan"] == 1 and rows["nan_same"]["target_nan"] == 1
    assert rows["ints"]["max_abs_err"] == 1.0
    assert rows["bools"]["max_abs_err"] == 1.0 and rows["bools"]["one_thousandth_ratio"] == 0.0
    assert rows["scalar"]["cosine"] is None and rows["scalar"]["na_reasons"]["cosine"].startswith("unsupported")
    assert rows["scalar"]["max_abs_err"] == 0.0
    assert rows["empty"]["status"] == "skipped" and rows["empty"]["na_reasons"]["cosine"].startswith("unsupported")
    assert rows["good_last"]["within_tolerance_ratio"] == 1.0


def test_dump_json_not_json_is_a_structured_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    good = write_dump(tmp_path / "g", {"Functional.a.0.forward.output.0": np.ones((2, 2), np.float32)})
    bad = tmp_path / "t"
    bad.mkdir()
    (bad / "dump.json").write_text('{"task": "tensor", "data": {"Functional.a.0')
    code, out = run_cli(["compare-dumps", str(good), str(bad), "--json"], capsys)
    assert code == 2
    e = out["error"]
    assert e["code"] == "invalid_dump_json" and "dump.json" in e["message"] and e["hint"]
    assert e["path"].endswith("dump.json")


def test_missing_dump_path(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out = run_cli(["compare-dumps", str(tmp_path / "nope"), str(tmp_path / "nope2"), "--json"], capsys)
    assert code == 2 and out["error"]["code"] == "missing_file"


def test_mapping_pairs_renamed_entries(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    a = np.linspace(-1, 1, 16, dtype=np.float32).reshape(4, 4)
    g = write_dump(tmp_path / "g", {"Module.layers.0.Linear.forward.0.output.0": a,
                                    "Functional.add.0.forward.output.0": a * 2,
                                    "Functional.only_golden.0.forward.output.0": a})
    t = write_dump(tmp_path / "t", {"Module.layer1.Linear.forward.0.output.0": a.astype(np.float16),
                                    "Functional.plus.0.forward.output.0": (a * 2).astype(np.float16),
                                    "Functional.only_target.0.forward.output.0": a})
    mapping = tmp_path / "map.yaml"
    mapping.write_text("Module.layer1.: Module.layers.0.\n"
                       "Functional.plus.0.forward.output.0: Functional.add.0.forward.output.0\n")
    code, out = run_cli(["compare-dumps", str(g), str(t), "--mapping", str(mapping), "--json"], capsys)
    methods = {r["name"]: (r["golden_name"], r["pair_method"]) for r in out["rows"]}
    assert methods["Module.layer1.Linear.forward.0.output.0"] == ("Module.layers.0.Linear.forward.0.output.0",
                                                                  "mapping")
    assert methods["Functional.plus.0.forward.output.0"][1] == "mapping"
    assert out["unmatched_golden"] == ["Functional.only_golden.0.forward.output.0"]
    assert out["unmatched_target"] == ["Functional.only_target.0.forward.output.0"]
    assert any(e["ref"] == str(mapping) for e in out["evidence"])


def test_bad_mapping_file(tmp_path: Path) -> None:
    from acc_agent.errors import AccAgentError

    (tmp_path / "m.yaml").write_text("- just\n- a list\n")
    with pytest.raises(AccAgentError) as exc:
        load_mapping(tmp_path / "m.yaml")
    assert exc.value.code == "invalid_mapping" and "m.yaml" in exc.value.message


def test_csv_uses_msprobe_columns(bad_pair: tuple[Path, Path], tmp_path: Path,
                                  capsys: pytest.CaptureFixture[str]) -> None:
    g, t = bad_pair
    out_csv = tmp_path / "out" / "cmp.csv"
    _, out = run_cli(["compare-dumps", str(g), str(t), "--csv", str(out_csv), "--json"], capsys)
    assert out["csv_path"] == str(out_csv)
    with out_csv.open(newline="") as fh:
        rows = list(csv.DictReader(fh))
    assert len(rows) == 15
    for col in ("NPU Name", "Bench Name", "Cosine", "EucDist", "MaxAbsErr", "MaxRelativeErr",
                "One Thousandth Err Ratio", "Five Thousandths Err Ratio", "Result", "Err_message"):
        assert col in rows[0]
    by = {r["NPU Name"].split(".")[1]: r for r in rows}
    assert by["shape"]["Cosine"] == "shape unmatched"
    assert by["nan_moved"]["MaxAbsErr"] == "N/A"
    assert by["empty"]["Cosine"] == "unsupported"
    assert float(by["good_first"]["Cosine"]) > 0.99


def test_large_result_is_compact_by_default(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rng = np.random.default_rng(5)
    g_dir, t_dir = tmp_path / "g", tmp_path / "t"
    g_dir.mkdir()
    t_dir.mkdir()
    for i in range(2000):
        a = rng.standard_normal(16).astype(np.float32)
        b = a.astype(np.float16) if i % 97 else -a  # a few broken tensors
        np.save(g_dir / f"Functional.op_{i}.0.forward.output.0.npy", a)
        np.save(t_dir / f"Functional.op_{i}.0.forward.output.0.npy", b)
    before = os.environ.get("ACC_AGENT_RESULTS_DIR")
    os.environ["ACC_AGENT_RESULTS_DIR"] = str(tmp_path / "results")
    try:
        with pytest.raises(SystemExit):
            main(["compare-dumps", str(g_dir), str(t_dir), "--json"])
        text = capsys.readouterr().out
    finally:
        if before is None:
            os.environ.pop("ACC_AGENT_RESULTS_DIR")
        else:
            os.environ["ACC_AGENT_RESULTS_DIR"] = before
    assert len(text.encode()) < 20_000
    out = json.loads(text)
    assert out["rows_total"] == 2000 and out["rows_truncated"] is True
    assert all(r["status"] != "pass" for r in out["rows"][:5])  # the kept rows are the worst
    assert out["csv_path"] and Path(out["csv_path"]).is_file()
    with Path(out["csv_path"]).open() as fh:
        assert sum(1 for _ in fh) == 2001
    code, full = run_cli(["compare-dumps", str(g_dir), str(t_dir), "--all-rows", "--json"], capsys)
    assert len(full["rows"]) == 2000 and full["rows_truncated"] is False


def test_multi_rank_tree_paired_rank_by_rank_in_processes(tmp_path: Path,
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    rng = np.random.default_rng(9)
    for rank in (0, 1):
        a = rng.standard_normal((8, 8)).astype(np.float32)
        write_dump(tmp_path / "g" / "step0" / f"rank{rank}", {"Functional.mm.0.forward.output.0": a})
        b = a.astype(np.float16) if rank == 0 else np.flip(a, 0).copy()
        write_dump(tmp_path / "t" / "step0" / f"rank{rank}", {"Functional.mm.0.forward.output.0": b})
    write_dump(tmp_path / "t" / "step0" / "rank2", {"Functional.mm.0.forward.output.0": np.ones(2, np.float32)})
    assert isinstance(open_dump(tmp_path / "g"), DumpSet)
    code, out = run_cli(["compare-dumps", str(tmp_path / "g"), str(tmp_path / "t"), "--workers", "2", "--json"],
                        capsys)
    by_rank = {r["rank"]: r for r in out["rows"]}
    assert set(by_rank) == {"step0/rank0", "step0/rank1"}
    assert by_rank["step0/rank0"]["cosine"] > 0.999
    assert by_rank["step0/rank1"]["cosine"] < 0.99
    assert out["unmatched_target"] == ["step0/rank2/*"]


def test_bench_metrics_per_row(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    a = np.random.default_rng(1).standard_normal((16, 16)).astype(np.float32)
    name = "Functional.matmul.0.forward.output.0"
    g = write_dump(tmp_path / "g", {name: a})
    t = write_dump(tmp_path / "t", {name: (a * 1.01).astype(np.float16)})
    b = write_dump(tmp_path / "b", {name: a.astype(np.float16)})
    _, out = run_cli(["compare-dumps", str(g), str(t), "--bench", str(b), "--json"], capsys)
    row = out["rows"][0]
    assert row["bench"] is not None and row["bench"]["max_abs_err"] < row["max_abs_err"]
    assert out["bench"] == str(b)


def test_diagnosis_receives_rows_and_dumps(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                           capsys: pytest.CaptureFixture[str]) -> None:
    import acc_agent.numerics.diagnosis as diagnosis
    from acc_agent.models.diagnosis import Diagnosis, FirstDivergence

    seen: dict[str, Any] = {}

    def diagnose(rows: list[Any], golden: Any, target: Any, bench: Any, precision: Any) -> Any:
        seen.update(rows=len(rows), golden=golden, bench=bench, precision=precision)
        rows[0].status = "error"
        return FirstDivergence(name=rows[0].name, index=0, reason="test"), Diagnosis(category="operator_fault")

    monkeypatch.setattr(diagnosis, "diagnose", diagnose)
    a = np.ones((2, 3), np.float32)
    g = write_dump(tmp_path / "g", {"Functional.x.0.forward.output.0": a})
    t = write_dump(tmp_path / "t", {"Functional.x.0.forward.output.0": a})
    code, out = run_cli(["compare-dumps", str(g), str(t), "--precision", "bf16", "--json"], capsys)
    assert seen["rows"] == 1 and seen["bench"] is None and seen["precision"] == "bf16"
    assert out["first_divergence"]["name"] == "Functional.x.0.forward.output.0"
    assert out["diagnosis"]["category"] == "operator_fault"
    assert out["rows"][0]["status"] == "error" and out["verdict"] == "fail" and code == 1


def test_crashing_diagnosis_is_not_hidden(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import acc_agent.numerics.diagnosis as diagnosis

    def diagnose(*_: Any, **__: Any) -> Any:
        raise RuntimeError("diagnosis bug")

    monkeypatch.setattr(diagnosis, "diagnose", diagnose)
    a = np.ones((2, 3), np.float32)
    g = write_dump(tmp_path / "g", {"Functional.x.0.forward.output.0": a})
    t = write_dump(tmp_path / "t", {"Functional.x.0.forward.output.0": a})
    from acc_agent.registry import call_tool

    with pytest.raises(RuntimeError, match="diagnosis bug"):
        call_tool("compare_dumps", {"golden": str(g), "target": str(t)})


def test_text_table_lists_worst_first(bad_pair: tuple[Path, Path], capsys: pytest.CaptureFixture[str]) -> None:
    g, t = bad_pair
    with pytest.raises(SystemExit):
        main(["compare-dumps", str(g), str(t)])
    lines = capsys.readouterr().out.splitlines()
    header = next(i for i, line in enumerate(lines) if line.startswith("status"))
    statuses = [line.split()[0] for line in lines[header + 1:] if line.split() and line.split()[0] in
                ("error", "warning", "pass", "skipped")]
    order = {"error": 0, "warning": 1, "skipped": 3, "pass": 4}
    assert statuses == sorted(statuses, key=order.__getitem__) and statuses[0] == "error"


def test_npz_and_tensor_dir_containers(tmp_path: Path) -> None:
    np.savez(tmp_path / "g.npz", a=np.ones(3), b=np.zeros(2))
    d = open_dump(tmp_path / "g.npz")
    assert [e.name for e in d.entries] == ["a", "b"]  # type: ignore[union-attr]
    assert np.array_equal(d.load("a"), np.ones(3))  # type: ignore[union-attr]
    other = tmp_path / "t"
    other.mkdir()
    np.save(other / "a.npy", np.ones(3))
    pairing = pair_entries(d, open_dump(other), None)  # type: ignore[arg-type]
    assert [(p.golden_name, p.method) for p in pairing.pairs] == [("a", "exact")]
    assert pairing.unmatched_golden == ["b"]


def test_proc_folders_of_several_steps_pair_by_step(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    a = np.arange(8, dtype=np.float32)
    for step in (0, 1):
        write_dump(tmp_path / "g" / f"step{step}" / "proc111", {"Functional.x.0.forward.output.0": a + step})
        write_dump(tmp_path / "t" / f"step{step}" / "proc222", {"Functional.x.0.forward.output.0": a + step})
    _, out = run_cli(["compare-dumps", str(tmp_path / "g"), str(tmp_path / "t"), "--json"], capsys)
    assert sorted(r["rank"] for r in out["rows"]) == ["step0", "step1"]
    assert not out["unmatched_golden"] and not out["unmatched_target"]


def test_statistics_only_dump_rows_are_compared_on_statistics(tmp_path: Path,
                                                               capsys: pytest.CaptureFixture[str]) -> None:
    leaf = {"type": "torch.Tensor", "dtype": "torch.float32", "shape": [2], "Max": 1.0, "Min": 0.0, "Mean": 0.5,
            "Norm": 1.0}
    for side in ("g", "t"):
        (tmp_path / side).mkdir()
        (tmp_path / side / "dump.json").write_text(json.dumps({"task": "statistics", "level": "L1", "data": {
            "Functional.relu.0.forward": {"input_args": [leaf], "input_kwargs": {}, "output": [leaf]}}}))
    _, out = run_cli(["compare-dumps", str(tmp_path / "g"), str(tmp_path / "t"), "--json"], capsys)
    names = sorted(r["name"] for r in out["rows"])
    assert names == ["Functional.relu.0.forward.input.0", "Functional.relu.0.forward.output.0"]
    assert all(r["compare_mode"] == "statistics" and r["status"] == "pass" for r in out["rows"]), out["rows"]
    assert out["verdict"] == "pass" and out["diagnosis"]["compared_by"] == "statistics"
