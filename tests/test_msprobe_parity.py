"""Our compare-dumps agrees with msprobe's own CSV, at its 12-decimal printing, row by row.

The fixture (tests/fixtures/msprobe/, made by make_fixture.py) holds two real msprobe dumps of a
small network (golden fp32, target fp16 with faults) and the CSV msprobe produced from them, for
``.pt`` (msprobe's CLI) and ``.npy`` (msprobe's compare engine). When msprobe is installed, the
live tests rerun it on the committed dumps, so a new msprobe release that changes a number fails
here instead of silently diverging.
"""

from __future__ import annotations

import csv
import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import pytest

from acc_agent.cli import main

FIXTURE = Path(__file__).resolve().parent / "fixtures" / "msprobe"
COLUMNS = {
    "Cosine": "cosine",
    "EucDist": "euc_dist",
    "MaxAbsErr": "max_abs_err",
    "MaxRelativeErr": "max_rel_err",
    "One Thousandth Err Ratio": "one_thousandth_ratio",
    "Five Thousandths Err Ratio": "five_thousandths_ratio",
}
TOKENS = ("unsupported", "shape unmatched", "N/A", "Nan")


def _ours(kind: str, capsys: pytest.CaptureFixture[str]) -> dict[str, Any]:
    with pytest.raises(SystemExit):
        main(["compare-dumps", str(FIXTURE / kind / "golden"), str(FIXTURE / kind / "target"), "--all-rows", "--json"])
    return json.loads(capsys.readouterr().out)


def _msprobe_rows(csv_path: Path) -> list[dict[str, str]]:
    with csv_path.open(newline="", encoding="utf-8") as fh:
        return list(csv.DictReader(fh))


def _has_data_both_sides(row: dict[str, str]) -> bool:
    return row["Bench Name"] != "N/A" and "'-1'" not in row["Data_name"]


def _check(ours: dict[str, Any], msprobe_rows: list[dict[str, str]]) -> int:
    by_name = {r["name"]: r for r in ours["rows"]}
    checked = 0
    for mrow in msprobe_rows:
        name = mrow["NPU Name"]
        if not _has_data_both_sides(mrow):
            if mrow["Bench Name"] == "N/A" and "'-1'" not in mrow["Data_name"].split(",")[0]:
                assert name in ours["unmatched_target"], name
            continue
        assert name in by_name, f"msprobe compared {name}, we did not"
        row = by_name[name]
        for column, field in COLUMNS.items():
            theirs, mine = mrow[column], row[field]
            if theirs in TOKENS:
                assert mine is None, f"{name} {column}: msprobe {theirs}, ours {mine}"
                assert row["na_reasons"][field].startswith(theirs), (name, column, row["na_reasons"][field])
            else:
                assert mine is not None, f"{name} {column}: msprobe {theirs}, ours null ({row['na_reasons']})"
                assert f"{float(mine):.12f}" == f"{float(theirs):.12f}", f"{name} {column}: {theirs} vs {mine}"
            checked += 1
    return checked


@pytest.mark.parametrize("kind", ["pt", "npy"])
def test_every_metric_equals_msprobe_csv(kind: str, capsys: pytest.CaptureFixture[str]) -> None:
    ours = _ours(kind, capsys)
    mrows = _msprobe_rows(FIXTURE / kind / "msprobe_compare.csv")
    checked = _check(ours, mrows)
    computed = [r for r in mrows if _has_data_both_sides(r)]
    assert checked == 6 * len(computed) >= 6 * 30
    # The fixture really exercises msprobe's special cases, each mapped to null with its reason.
    values = {r[c] for r in computed for c in COLUMNS}
    assert {"unsupported", "shape unmatched", "N/A", "Nan"} <= values


def test_unmatched_rows_listed_on_both_sides(capsys: pytest.CaptureFixture[str]) -> None:
    ours = _ours("pt", capsys)
    assert any(n.startswith("Torch.where.0.forward") for n in ours["unmatched_target"])
    assert ours["rows_total"] == len(ours["rows"])


def _msprobe_installed() -> bool:
    return shutil.which("msprobe") is not None and _importable("msprobe.core.compare.acc_compare")


def _importable(mod: str) -> bool:
    import importlib.util

    try:
        return importlib.util.find_spec(mod) is not None
    except ModuleNotFoundError:
        return False


@pytest.mark.filterwarnings("ignore")  # msprobe itself emits pandas deprecation warnings
@pytest.mark.skipif(not _msprobe_installed(), reason="mindstudio-probe not installed (pip install '.[test]')")
@pytest.mark.parametrize("kind", ["pt", "npy"])
def test_live_msprobe_rerun_agrees(kind: str, capsys: pytest.CaptureFixture[str]) -> None:
    sys.path.insert(0, str(FIXTURE))
    try:
        import make_fixture
    finally:
        sys.path.pop(0)
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "live.csv"
        golden, target = FIXTURE / kind / "golden", FIXTURE / kind / "target"
        if kind == "pt":
            make_fixture.run_msprobe_pt(golden, target, out)
        else:
            make_fixture.run_msprobe_npy(golden, target, out)
        capsys.readouterr()
        assert _check(_ours(kind, capsys), _msprobe_rows(out)) >= 6 * 30


def test_fixture_script_is_committed() -> None:
    script = FIXTURE / "make_fixture.py"
    assert script.is_file()
    subprocess.run([sys.executable, "-m", "py_compile", str(script)], check=True)
