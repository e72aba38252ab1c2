"""compare-dumps on msprobe's DEFAULT dumps (task statistics, summary_mode statistics or md5).

The live tests make REAL msprobe dumps on the CPU (one fresh subprocess per dump: msprobe keeps
global state), run the REAL ``msprobe compare`` on them, and check our CSV against msprobe's cell by
cell, our row statuses against its Result/Err_message, and our md5 verdicts against its CRC32
columns. The unit tests pin the pieces without msprobe: the parser's md5 and scalar arguments,
msprobe's cell arithmetic, the verdicts (pass / fail / inconclusive, exit 3) and the sparse rows.
"""

from __future__ import annotations

import csv
import json
import math
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from acc_agent.cli import main
from acc_agent.io.dumps import ScalarArg, open_dump, open_dump_set
from acc_agent.io.pairing import pair_entries
from acc_agent.models.compare import DumpRow
from acc_agent.tools._compare_csv import STAT_HEADER
from acc_agent.tools._stat_rows import RowFactory, stat_cells, statistics_rows

ROOT = Path(__file__).resolve().parents[1]

# One training step of a tiny network, dumped by msprobe's PrecisionDebugger (level L1, forward and
# backward). "target" changes a scaling factor (a scalar argument: msprobe's scalar rule) and makes a
# NaN where golden has none; "target16" runs the same net in float16 (msprobe's dtype rule) with
# another GELU approximation (a string argument that differs).
NET = r'''
import json, sys
import torch
import torch.nn.functional as F
torch.manual_seed(0)
torch.use_deterministic_algorithms(True)
out_dir, role, mode = sys.argv[1], sys.argv[2], sys.argv[3]
fault = role != "golden"
dt = torch.float16 if role == "target16" else torch.float32
cfg = {"task": "statistics", "dump_path": out_dir, "rank": [], "step": [], "level": "L1", "async_dump": False,
       "statistics": {"scope": [], "list": [], "data_mode": ["all"], "summary_mode": mode}}
json.dump(cfg, open(out_dir + ".cfg.json", "w"))
from msprobe.pytorch import PrecisionDebugger
w1 = (torch.randn(16, 8) * 0.4).requires_grad_()
b1 = (torch.randn(16) * 0.1).requires_grad_()
w2 = (torch.randn(6, 16) * 0.4).requires_grad_()
x = torch.randn(4, 8)
dbg = PrecisionDebugger(config_path=out_dir + ".cfg.json")
dbg.start()
h = F.linear(x.to(dt), w1.to(dt), b1.to(dt))
g = F.gelu(h, approximate="tanh" if role == "target16" else "none")
g = g * (1.2 if fault and role != "target16" else 1.0)
y = F.linear(g, w2.to(dt))
r = torch.relu(y)
z = torch.clamp(y, min=0.0 if role == "golden" else -0.5)   # golden Min 0: msprobe's "inf" relative error
n = F.layer_norm(y, (6,))
s = torch.softmax(n.float(), dim=-1)
with torch.no_grad():
    lg = torch.log(n)                                   # NaN on both sides
    bad = torch.sqrt(n + (-9.0 if role == "target" else 9.0))   # NaN in the target only
    pos = torch.gt(n, 0.0)                              # bool
    am = torch.argmax(n, dim=-1)                        # int64
    e = torch.narrow(n, 1, 0, 0)                        # empty
loss = (s.pow(2).sum() + r.sum() + z.sum())
loss.backward()
dbg.stop()
dbg.step()
'''


def _msprobe_ok() -> bool:
    import importlib.util

    try:
        return shutil.which("msprobe") is not None and importlib.util.find_spec("msprobe.pytorch") is not None \
            and importlib.util.find_spec("torch") is not None
    except ModuleNotFoundError:
        return False


live = pytest.mark.skipif(not _msprobe_ok(), reason="needs mindstudio-probe and torch (pip install '.[test]')")


def _dump(work: Path, role: str, mode: str) -> Path:
    script = work / "net.py"
    script.write_text(NET)
    out = work / f"{role}_{mode}"
    subprocess.run([sys.executable, str(script), str(out), role, mode], check=True, capture_output=True,
                   cwd=work, timeout=300)
    (rank_dir,) = [p for p in (out / "step0").iterdir() if p.is_dir()]
    return rank_dir


def _msprobe_csv(golden: Path, target: Path, out: Path) -> list[dict[str, str]]:
    out.mkdir()
    subprocess.run(["msprobe", "compare", "-tp", str(target / "dump.json"), "-gp", str(golden / "dump.json"),
                    "-o", str(out)], check=True, capture_output=True, timeout=300)
    (found,) = list(out.glob("compare_result_*.csv"))
    return _read(found)


def _read(path: Path) -> list[dict[str, str]]:
    with path.open(newline="", encoding="utf-8") as fh:
        return list(csv.DictReader(fh))


@pytest.fixture(scope="module")
def real(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    work = tmp_path_factory.mktemp("msprobe_statistics")
    dumps = {(role, mode): _dump(work, role, mode)
             for role, mode in [("golden", "statistics"), ("target", "statistics"), ("target16", "statistics"),
                                ("golden", "md5"), ("target", "md5")]}
    theirs = {
        "target": _msprobe_csv(dumps["golden", "statistics"], dumps["target", "statistics"], work / "ms_t"),
        "target16": _msprobe_csv(dumps["golden", "statistics"], dumps["target16", "statistics"], work / "ms_16"),
        "md5": _msprobe_csv(dumps["golden", "md5"], dumps["target", "md5"], work / "ms_md5"),
    }
    return {"work": work, "dumps": dumps, "msprobe": theirs}


def _cli(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, dict[str, Any]]:
    with pytest.raises(SystemExit) as exc:
        main(argv)
    return int(exc.value.code or 0), json.loads(capsys.readouterr().out)


def _ours_csv(golden: Path, target: Path, out: Path, capsys: pytest.CaptureFixture[str]
              ) -> tuple[int, dict[str, Any], dict[str, dict[str, str]]]:
    code, result = _cli(["compare-dumps", str(golden), str(target), "--csv", str(out), "--json"], capsys)
    return code, result, {r["NPU Name"]: r for r in _read(out)}


def _engine(golden: Path, target: Path) -> tuple[dict[str, DumpRow], dict[str, Any]]:
    """Our statuses before the diagnosis refines them (msprobe's rules alone)."""
    g, t = open_dump(golden), open_dump(target)
    assert not isinstance(g, type(None)) and not isinstance(t, type(None))
    result = statistics_rows(g, t, pair_entries(g, t).pairs)  # type: ignore[arg-type]
    return {r.name: r for r in result.rows}, {s.name: s for s in result.scalar_rows}


# Columns whose text must equal msprobe's exactly (Result/Err_message are checked on the engine's
# statuses: the diagnosis that runs after the rules may refine a row in the CSV).
_SAME_TEXT = [c for c in STAT_HEADER if c not in ("Result", "Err_message")]


@live
@pytest.mark.filterwarnings("ignore")
@pytest.mark.parametrize("target", ["target", "target16"])
def test_statistics_csv_equals_msprobe_cell_by_cell(real: dict[str, Any], target: str, tmp_path: Path,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    golden, tdir = real["dumps"]["golden", "statistics"], real["dumps"][target, "statistics"]
    code, result, ours = _ours_csv(golden, tdir, tmp_path / "ours.csv", capsys)
    assert code == 1 and result["verdict"] == "fail"
    compared = [m for m in real["msprobe"][target] if m["Bench Name"] != "N/A"]
    assert len(compared) >= 40
    for m in compared:
        row = ours.get(m["NPU Name"])
        assert row is not None, f"msprobe compared {m['NPU Name']}, our CSV has no such row"
        for col in _SAME_TEXT:
            assert row[col] == m[col], f"{m['NPU Name']} {col}: msprobe {m[col]!r}, ours {row[col]!r}"
    # the special cells really occur: NaN on one side, golden 0, equal values, strings that differ
    cells = {m[c] for m in compared for c in ("Max diff", "MaxRelativeErr", "MinRelativeErr", "NPU mean")}
    assert ({"Nan", "0", "inf"} if target == "target" else {"Diff", "0"}) <= cells
    assert {"<class 'float'>", "<class 'str'>", "<class 'int'>"} <= {m["NPU Dtype"] for m in compared}


@live
@pytest.mark.filterwarnings("ignore")
@pytest.mark.parametrize("target", ["target", "target16"])
def test_statuses_follow_msprobe_result_rules(real: dict[str, Any], target: str) -> None:
    rows, scalars = _engine(real["dumps"]["golden", "statistics"], real["dumps"][target, "statistics"])
    kinds = set()
    for m in real["msprobe"][target]:
        if m["Bench Name"] == "N/A":
            continue
        ours = rows.get(m["NPU Name"]) or scalars.get(m["NPU Name"])
        assert ours is not None, m["NPU Name"]
        msgs = json.loads(m["Err_message"])
        assert ours.status == m["Result"], f"{m['NPU Name']}: msprobe {m['Result']} {msgs}, ours {ours.status}"
        mine = ours.message.split("; ") if ours.message else []
        assert mine == msgs, m["NPU Name"]
        kinds.update(msg.split(":", 1)[1].strip()[:20] for msg in msgs)
    assert len(kinds) >= 2  # at least two different rules fired (scalar / NaN / dtype / 10x warning)


@live
@pytest.mark.filterwarnings("ignore")
def test_fault_is_found_and_named(real: dict[str, Any], capsys: pytest.CaptureFixture[str]) -> None:
    code, out = _cli(["compare-dumps", str(real["dumps"]["golden", "statistics"]),
                      str(real["dumps"]["target", "statistics"]), "--json"], capsys)
    assert code == 1 and out["verdict"] == "fail"
    assert "Tensor.__mul__.0.forward.input.1" in out["summary"]  # the scaling factor 1.2 vs 1.0
    assert {r["compare_mode"] for r in out["rows"]} == {"statistics"}
    sqrt = [r for r in out["rows"] if r["name"] == "Torch.sqrt.0.forward.output.0"]
    assert sqrt and sqrt[0]["status"] == "error" and sqrt[0]["max_diff"] is None
    assert sqrt[0]["na_reasons"]["max_diff"].startswith("Nan")


@live
@pytest.mark.filterwarnings("ignore")
def test_md5_equal_matches_msprobe_crc32(real: dict[str, Any], tmp_path: Path,
                                         capsys: pytest.CaptureFixture[str]) -> None:
    golden, target = real["dumps"]["golden", "md5"], real["dumps"]["target", "md5"]
    code, result, ours = _ours_csv(golden, target, tmp_path / "md5.csv", capsys)
    assert code == 1
    rows, scalars = _engine(golden, target)
    compared = [m for m in real["msprobe"]["md5"] if m["Bench Name"] != "N/A"]
    equal = differ = 0
    for m in compared:
        same = m["NPU MD5"] == m["BENCH MD5"]
        mine = rows.get(m["NPU Name"]) or scalars.get(m["NPU Name"])
        assert mine is not None and mine.md5_equal is same, m["NPU Name"]
        assert (ours[m["NPU Name"]]["NPU MD5"], ours[m["NPU Name"]]["BENCH MD5"]) == (m["NPU MD5"], m["BENCH MD5"])
        if isinstance(mine, DumpRow):
            assert mine.compare_mode == "md5"
            if same:
                assert mine.status == "pass"
            else:
                assert "md5 differs" in mine.message
        equal += same
        differ += not same
    assert equal >= 5 and differ >= 5


# --------------------------------------------------------------------------- without msprobe


def _leaf(mx: Any, mn: Any = -1.0, mean: Any = 0.1, norm: Any = 3.0, **extra: Any) -> dict[str, Any]:
    return {"type": "torch.Tensor", "dtype": "torch.float32", "shape": [2, 3], "Max": mx, "Min": mn, "Mean": mean,
            "Norm": norm, "requires_grad": False, **extra}


def _write(root: Path, data: dict[str, Any], task: str = "statistics") -> Path:
    root.mkdir(parents=True, exist_ok=True)
    (root / "dump.json").write_text(json.dumps({"task": task, "level": "L1", "framework": "pytorch", "data": data}))
    return root


def test_parser_records_md5_and_non_tensor_arguments(tmp_path: Path) -> None:
    data = {"Functional.gelu.0.forward": {
        "input_args": [_leaf(1.0, md5="0a1b2c3d"), {"type": "int", "value": -1}, None, [{"type": "float", "value": 0.5}]],
        "input_kwargs": {"approximate": {"type": "str", "value": "tanh"}, "dtype": {"type": "torch.dtype",
                                                                                    "value": "torch.float32"}},
        "output": [_leaf(2.0, md5="ffffffff"), None]}}
    dump = open_dump(_write(tmp_path / "d", data))
    assert not isinstance(dump, type(None))
    entries = {e.name: e for e in dump}  # type: ignore[union-attr]
    assert entries["Functional.gelu.0.forward.input.0"].md5 == "0a1b2c3d"
    assert entries["Functional.gelu.0.forward.output.0"].md5 == "ffffffff"
    scalars = dump.scalars["Functional.gelu.0.forward"]  # type: ignore[union-attr]
    assert scalars == [
        ScalarArg("Functional.gelu.0.forward.input.1", -1, "int"),
        ScalarArg("Functional.gelu.0.forward.input.2", None, "None"),
        ScalarArg("Functional.gelu.0.forward.input.3.0", 0.5, "float"),
        ScalarArg("Functional.gelu.0.forward.input.approximate", "tanh", "str"),
        ScalarArg("Functional.gelu.0.forward.input.dtype", "torch.float32", "torch.dtype"),
        ScalarArg("Functional.gelu.0.forward.output.1", None, "None"),
    ]


def test_parser_reads_nan_and_infinity_tokens(tmp_path: Path) -> None:
    root = tmp_path / "d"
    root.mkdir()
    (root / "dump.json").write_text('{"task": "statistics", "data": {"Torch.log.0.forward": {"input_args": '
                                    '[{"type": "float", "value": NaN}], "output": [{"type": "torch.Tensor", '
                                    '"dtype": "torch.float32", "shape": [3], "Max": Infinity, "Min": -Infinity, '
                                    '"Mean": NaN, "Norm": 2, "requires_grad": false}]}}}')
    dump = open_dump(root)
    (e,) = list(dump)  # type: ignore[call-overload]
    assert e.stats["Max"] == math.inf and e.stats["Min"] == -math.inf and math.isnan(e.stats["Mean"])
    assert e.stats["Norm"] == 2 and type(e.stats["Norm"]) is int  # kept as written: msprobe prints "2"
    (s,) = dump.scalars["Torch.log.0.forward"]  # type: ignore[union-attr]
    assert isinstance(s.value, float) and math.isnan(s.value)


@pytest.mark.parametrize(("t", "g", "cells"), [
    (1.0, 1.0, ("0", "0")),
    (float("nan"), float("nan"), ("0", "0")),
    (1.5, 1.0, ("0.5", "50.0%")),
    (0.5, 0.0, ("0.5", "inf")),
    (float("inf"), 1.0, ("inf", "inf")),
    (1.0, float("inf"), ("-inf", "-inf")),
    (float("nan"), 1.0, ("Nan", "Nan")),
    (None, 1.0, ("Diff", "Diff")),
    (True, False, ("Diff", "Diff")),
    (6, 6.0, ("0.0", "0.0%")),
    ("none", "tanh", ("Diff", "Diff")),
])
def test_cells_spelled_like_msprobe(t: Any, g: Any, cells: tuple[str, str]) -> None:
    assert stat_cells(t, g) == cells


def test_identical_statistics_dumps_pass(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data = {"Functional.relu.0.forward": {"input_args": [_leaf(1.0)], "input_kwargs": {}, "output": [_leaf(1.0, 0.0)]}}
    g, t = _write(tmp_path / "g", data), _write(tmp_path / "t", data)
    code, out = _cli(["compare-dumps", str(g), str(t), "--json"], capsys)
    assert code == 0 and out["verdict"] == "pass"
    assert all(r["status"] == "pass" and r["compare_mode"] == "statistics" and r["max_diff"] == 0.0
               for r in out["rows"])


def test_output_ten_times_the_input_error_is_a_warning(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    g = _write(tmp_path / "g", {"Functional.relu.0.forward": {"input_args": [_leaf(1.0)], "input_kwargs": {},
                                                               "output": [_leaf(1.0, norm=3.0)]}})
    t = _write(tmp_path / "t", {"Functional.relu.0.forward": {"input_args": [_leaf(1.0)], "input_kwargs": {},
                                                               "output": [_leaf(1.0, norm=3.6)]}})
    code, out = _cli(["compare-dumps", str(g), str(t), "--json", "--csv", str(tmp_path / "o.csv")], capsys)
    assert code == 1 and out["verdict"] == "fail"
    row = next(r for r in out["rows"] if r["name"].endswith("output.0"))
    assert abs(row["norm_rel_diff"] - 0.2) < 1e-12 and "10 times that of input" in row["message"]
    rows, _ = _engine(g, t)  # msprobe's rule says warning (the diagnosis may then call it the fault)
    assert rows["Functional.relu.0.forward.output.0"].status == "warning"
    (line,) = [r for r in _read(tmp_path / "o.csv") if r["NPU Name"].endswith("output.0")]
    assert line["NormRelativeErr"] == "20.000000000000004%" and line["L2norm diff"] == repr(3.6 - 3.0)


def test_nothing_comparable_is_inconclusive_exit_3(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bare = {"type": "torch.Tensor", "dtype": "torch.float32", "shape": [2]}
    data = {"Functional.relu.0.forward": {"input_args": [bare], "input_kwargs": {}, "output": [bare]}}
    g, t = _write(tmp_path / "g", data, "structure"), _write(tmp_path / "t", data, "structure")
    code, out = _cli(["compare-dumps", str(g), str(t), "--json"], capsys)
    assert code == 3 and out["verdict"] == "inconclusive"
    assert "task 'statistics'" in out["summary"] and "'structure'" in out["summary"]
    assert all(r["status"] == "skipped" for r in out["rows"])


def test_no_pair_at_all_is_inconclusive(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    g = _write(tmp_path / "g", {"Functional.relu.0.forward": {"input_args": [_leaf(1.0)], "output": []}})
    other = dict(_leaf(7.0, -3.0, 2.0, 40.0), shape=[9])  # nothing alike: no fallback pairs it either
    t = _write(tmp_path / "t", {"Functional.gelu.0.forward": {"input_args": [other], "output": []}})
    code, out = _cli(["compare-dumps", str(g), str(t), "--json"], capsys)
    assert code == 3 and out["verdict"] == "inconclusive" and "--mapping" in out["summary"]


def test_md5_only_rows(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    def md5_leaf(digest: str) -> dict[str, Any]:
        return {"type": "torch.Tensor", "dtype": "torch.float32", "shape": [2], "md5": digest}

    g = _write(tmp_path / "g", {"Torch.add.0.forward": {"input_args": [md5_leaf("aaaa0000")],
                                                         "output": [md5_leaf("bbbb0000")]}})
    t = _write(tmp_path / "t", {"Torch.add.0.forward": {"input_args": [md5_leaf("aaaa0000")],
                                                         "output": [md5_leaf("cccc0000")]}})
    code, out = _cli(["compare-dumps", str(g), str(t), "--json", "--all-rows"], capsys)
    rows = {r["name"].rsplit(".", 2)[-2]: r for r in out["rows"]}
    assert rows["input"]["md5_equal"] is True and rows["input"]["status"] == "pass"
    assert rows["output"]["md5_equal"] is False and rows["output"]["status"] == "warning"
    assert "md5 differs" in rows["output"]["message"] and code == 1


def test_tensor_rows_carry_the_dump_statistics(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    import numpy as np

    for side in ("g", "t"):
        d = tmp_path / side / "dump_tensor_data"
        d.mkdir(parents=True)
        np.save(d / "Functional.relu.0.forward.output.0.npy", np.ones((2, 3), np.float32))
        leaf = _leaf(1.0, 1.0, 1.0, 2.449, data_name="Functional.relu.0.forward.output.0.npy")
        _write(tmp_path / side, {"Functional.relu.0.forward": {"input_args": [], "output": [leaf]}}, "tensor")
    _, out = _cli(["compare-dumps", str(tmp_path / "g"), str(tmp_path / "t"), "--json"], capsys)
    (row,) = out["rows"]
    assert row["compare_mode"] == "tensor" and row["cosine"] == 1.0
    assert row["golden_stats"] == {"Max": 1.0, "Min": 1.0, "Mean": 1.0, "Norm": 2.449}


def test_sparse_rows_read_and_serialize_as_full_rows() -> None:
    sparse = RowFactory(["name"]).wrap({"name": "a.output.0", "compare_mode": "statistics", "max_diff": 0.5})
    full = DumpRow(name="a.output.0", compare_mode="statistics", max_diff=0.5)
    assert sparse.status == "pass" and sparse.message == "" and sparse.rank is None and sparse.cosine is None
    sparse.na_reasons["max_rel_diff"] = "inf: golden value is 0"  # a default container, changed, sticks
    full.na_reasons["max_rel_diff"] = "inf: golden value is 0"
    sparse.status = "error"
    full.status = "error"
    assert sparse.model_dump() == full.model_dump()
    assert json.loads(sparse.model_dump_json()) == json.loads(full.model_dump_json())
    assert "cosine" not in sparse.model_dump()  # statistics rows leave the tensor metrics out
    assert DumpRow.model_validate(sparse.model_dump()).model_dump() == full.model_dump()


def test_statistics_rows_at_scale_name_the_injected_call(tmp_path: Path) -> None:
    sys.path.insert(0, str(ROOT / "bench"))
    try:
        import bench_statistics_compare as bench
    finally:
        sys.path.pop(0)
    golden, target, injected = bench.generate(tmp_path, 700, 420, seed=1)
    g, t = open_dump_set(golden).ranks[""], open_dump_set(target).ranks[""]
    result = statistics_rows(g, t, pair_entries(g, t).pairs)
    flagged = [r for r in result.rows if r.status != "pass"]
    assert [r.name for r in flagged] == [f"{injected}.output.0"] and flagged[0].status == "warning"
    assert len(result.rows) == len(t.entries) and len(result.scalar_rows) == 300


def test_two_empty_dumps_say_why(capsys: pytest.CaptureFixture[str]) -> None:
    """Real msprobe L0 dumps of a model that calls torch.nn.functional itself: msprobe recorded nothing on either side.
    The answer says so and what to dump instead, not "no tensor matched by name; check the mapping file"."""
    data = Path(__file__).parent / "data" / "msprobe_l0_functional_model"
    code, out = _cli(["compare-dumps", str(data / "golden"), str(data / "target"), "--json"], capsys)
    assert code == 3 and out["verdict"] == "inconclusive"
    assert "neither dump records a tensor (msprobe wrote no call at level L0)" in out["summary"]
    assert "level L1" in out["summary"] and "--mapping" not in out["summary"]
