"""Compact results: small enough for an agent, nothing lost (the full result is on disk)."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from fixtures.agents.loader import load_fake_tool  # tests/ is on sys.path under pytest

from acc_agent.compact import DEFAULT_BUDGET_BYTES, compact_output_schema, compact_result

fake = load_fake_tool()


@pytest.fixture(autouse=True)
def _results_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("ACC_AGENT_RESULTS_DIR", str(tmp_path / "results"))
    return tmp_path / "results"


def _size(obj: Any) -> int:
    return len(json.dumps(obj, separators=(",", ":")).encode())


def test_large_result_fits_budget_keeps_worst_rows_and_writes_full(_results_dir: Path) -> None:
    with fake.registered() as spec:
        result = spec.run({"path": "dump", "n": 2000, "bad_every": 150})
        out = compact_result(spec, result)
        full_size = _size(result.model_dump(mode="json"))
        assert full_size > 200_000
        assert _size(out) <= DEFAULT_BUDGET_BYTES
        assert out["verdict"] == "fail" and out["summary"] == "dump: 2000 rows"
        bad = [r for r in result.rows if r.status == "error"]
        # All 13 error rows come first, in execution order; the rest of the kept rows are passes.
        kept = out["rows"]
        assert [r["name"] for r in kept[: len(bad)]] == [r.name for r in bad]
        assert all(r["status"] == "pass" for r in kept[len(bad) :])
        assert out["compact"]["truncated"]["rows"]["total"] == 2000
        # A series has no "worst": an even sample keeps its first and last points.
        loss = out["series"]["loss"]
        assert loss[0]["step"] == 0.0 and loss[-1]["step"] == 1999.0
        # Short value lists (shapes) are data and stay whole.
        assert all(r["shape"] == [2, 3, 4, 5] for r in kept)
        full_path = Path(out["compact"]["full_result"])
        assert full_path.parent == _results_dir
        assert json.loads(full_path.read_text()) == result.model_dump(mode="json")
        # The same result again reuses the file instead of writing a copy.
        assert compact_result(spec, result)["compact"]["full_result"] == str(full_path)
        assert len(list(_results_dir.iterdir())) == 1
        jsonschema.validate(out, compact_output_schema(spec))


def test_small_result_is_returned_whole_and_nothing_written(_results_dir: Path) -> None:
    with fake.registered() as spec:
        result = spec.run({"path": "p", "n": 5})
        out = compact_result(spec, result)
        assert out == result.model_dump(mode="json")
        assert "compact" not in out
        assert not _results_dir.exists() or not any(_results_dir.iterdir())


def test_full_on_request_is_complete() -> None:
    with fake.registered() as spec:
        result = spec.run({"path": "p", "n": 500})
        out = compact_result(spec, result, full=True)
        assert len(out["rows"]) == 500 and "compact" not in out


def test_long_text_is_cut_and_marked() -> None:
    with fake.registered() as spec:
        out = compact_result(spec, spec.run({"path": "p", "n": 1, "text_len": 50_000}))
        assert len(out["text"]) < 5_000 and out["text"].endswith("see compact.full_result]")
        assert out["compact"]["truncated"]["text"]["total"] == 50_000


def test_tool_supplied_compact_is_used_and_still_valid() -> None:
    def own(result: Any) -> dict[str, Any]:
        return {
            "verdict": result.verdict,
            "summary": result.summary,
            "rows": [r.model_dump() for r in result.rows[:2]],
        }

    with fake.registered(compact=own) as spec:
        result = spec.run({"path": "p", "n": 50})
        out = compact_result(spec, result)
        assert set(out) == {"verdict", "summary", "rows", "compact"}
        assert len(out["rows"]) == 2
        assert Path(out["compact"]["full_result"]).is_file()
        jsonschema.validate(out, compact_output_schema(spec))


def test_default_compare_dumps_result_for_2000_rows_is_under_20_kb(tmp_path: Path) -> None:
    """The acceptance bar: a 2,000-tensor dump comparison costs an agent < 20 KB of JSON."""
    from acc_agent.registry import all_tools

    specs = all_tools()
    if "compare_dumps" not in specs:
        pytest.fail("compare_dumps is not registered")
    sys.path.insert(0, str(Path(__file__).parent / "fixtures" / "agents"))
    from make_dump import write_dump_pair

    golden, target = write_dump_pair(tmp_path / "d", rows=2000, fault_at=1500, size=16)
    spec = specs["compare_dumps"]
    result = spec.run({"golden": str(golden), "target": str(target)})
    out = compact_result(spec, result)
    size = _size(out)
    assert size < 20_000, f"compact compare_dumps result is {size} bytes"
    # Still tells the agent where to look: the failing rows and where everything else is.
    assert out["verdict"] == "fail"
    assert out["rows"] and out["rows"][0]["status"] != "pass"
    assert all(int(r["name"].split(".")[2]) >= 1500 for r in out["rows"] if r["status"] != "pass")
    # The pointer to the fault survives compaction unchanged.
    assert out["first_divergence"] == result.model_dump(mode="json")["first_divergence"]
    # Nothing is lost: every row is on disk, in the tool's CSV and/or the compact full result.
    assert out["rows_total"] == 2000
    on_disk = [p for p in (out.get("csv_path"), out.get("compact", {}).get("full_result")) if p]
    assert on_disk and all(Path(p).is_file() for p in on_disk)
    csv_path = out.get("csv_path")
    if csv_path:
        assert len(Path(csv_path).read_text().splitlines()) == 2001  # header + every row


@pytest.mark.parametrize(
    ("status", "worse_than"),
    [("error", "fail"), ("fail", "warning"), ("not_met", "warn"), ("baseline_only", "warn"), ("warn", "na"),
     ("na", "pass"), ("skipped", "ok"), ("different", "same")],
)  # fmt: skip
def test_status_words_of_the_tools_rank_worst_first(status: str, worse_than: str) -> None:
    from acc_agent.compact import severity

    assert severity({"status": status}) < severity({"status": worse_than})
    assert severity({"status": "nan_check"}) == severity({"status": "pass"})  # "na" is a whole word only


def test_lists_are_not_cut_for_no_gain_when_the_bulk_is_elsewhere() -> None:
    with fake.registered() as spec:
        # 30 rows (small) next to a 4,000-character text: halving the rows again cannot reach the budget.
        result = spec.run({"path": "p", "n": 30, "text_len": 3_900})
        out = compact_result(spec, result, budget_bytes=2_000)
        assert len(out["rows"]) >= 5
