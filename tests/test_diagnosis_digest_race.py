"""md5 digests msprobe takes after a later in-place write, or that differ by rounding alone: not a fault, and not
the rank that goes first; values moved that change a later result stay the fault.

Real dumps (tests/data/msprobe_md5_digest_race, see its README): on rank 0 the two runs recorded different
digests for a gelu output that an in-place all_reduce overwrites next, with every statistic equal and the
all_reduce's output bit-identical; rank 1's target holds fc2's weight x1.5.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from acc_agent.models.compare import CompareDumpsInput
from acc_agent.tools.compare_dumps import compare_dumps

DATA = Path(__file__).parent / "data" / "msprobe_md5_digest_race"
GELU = "Functional.gelu.0.forward"
ALL_REDUCE = "Distributed.all_reduce.0.forward"
GELU_OUT = f"{GELU}.output.0"


def _ranks(tmp_path: Path, ranks: tuple[int, ...]) -> tuple[Path, Path]:
    for side in ("golden", "target"):
        for r in ranks:
            shutil.copytree(DATA / side / "step0" / f"rank{r}", tmp_path / side / "step0" / f"rank{r}")
    return tmp_path / "golden", tmp_path / "target"


def test_the_fault_on_rank1_is_named_and_rank0_is_clean(tmp_path: Path) -> None:
    golden, target = _ranks(tmp_path, (0, 1))
    out = compare_dumps(CompareDumpsInput(golden=str(golden), target=str(target), workers=1))
    assert out.verdict == "fail" and out.diagnosis is not None and out.first_divergence is not None
    assert out.first_divergence.name == "Functional.linear.1.forward.input.1"
    assert out.first_divergence.argument == "input.1"
    assert out.diagnosis.category == "operator_fault"
    assert (out.first_divergence.rank, out.first_divergence.rank_key) == ("rank1", "step0/rank1")
    assert "clean: rank0" in out.diagnosis.explanation
    assert "it is the last compared call of the pass" in out.diagnosis.explanation  # linear.1 is the last call


def test_a_clean_rank_with_a_racing_digest_passes(tmp_path: Path) -> None:
    golden, target = _ranks(tmp_path, (0,))
    out = compare_dumps(CompareDumpsInput(golden=str(golden), target=str(target), workers=1))
    assert out.verdict == "pass" and out.diagnosis is not None
    assert out.diagnosis.category == "no_layer_fault" and out.first_divergence is None
    assert out.diagnosis.details["digests_after_a_later_write"] == [
        GELU_OUT, "Distributed.all_reduce.0.forward.input.0"]
    assert "background thread" in out.diagnosis.judgement_note


def _edited(tmp_path: Path, edits: dict[tuple[str, int], dict[str, object]]) -> tuple[Path, Path]:
    """Rank 0 of the pair with the target's outputs ``(call, index)`` changed as given."""
    golden, target = _ranks(tmp_path, (0,))
    path = target / "step0" / "rank0" / "dump.json"
    doc = json.loads(path.read_text(encoding="utf-8"))
    for (call, index), fields in edits.items():
        doc["data"][call]["output"][index].update(fields)
    path.write_text(json.dumps(doc), encoding="utf-8")
    return golden, target


def test_another_digest_that_changes_no_later_result_is_rounding(tmp_path: Path) -> None:
    """The all_reduce's output digest differs too, with equal statistics, and the linear after it returns the golden's
    bytes: a move of the gelu's values would have changed the sum over the ranks, so nothing moved."""
    golden, target = _edited(tmp_path, {("Distributed.all_reduce.0.forward", 0): {"md5": "0badf00d"}})
    out = compare_dumps(CompareDumpsInput(golden=str(golden), target=str(target), workers=1))
    assert out.verdict == "pass" and out.first_divergence is None and out.diagnosis is not None
    assert out.diagnosis.details["digests_differing_by_rounding"] == [GELU_OUT]
    assert "digests_after_a_later_write" not in out.diagnosis.details


def test_values_moved_that_change_a_later_result_stay_the_fault(tmp_path: Path) -> None:
    """The same digests, and the linear after the all_reduce returns other statistics: the move shows there, and
    the call that moved the values is named."""
    golden, target = _edited(tmp_path, {("Distributed.all_reduce.0.forward", 0): {"md5": "0badf00d"},
                                        ("Functional.linear.1.forward", 0): {"md5": "0ddba11", "Max": 1.65}})
    out = compare_dumps(CompareDumpsInput(golden=str(golden), target=str(target), workers=1))
    assert out.verdict == "fail" and out.first_divergence is not None and out.diagnosis is not None
    assert out.first_divergence.name == GELU_OUT and out.first_divergence.module == "Functional.gelu.0.forward"
    assert "Functional.linear.1.forward.output.0, the first later output that mixes positions, differs" in (
        out.first_divergence.reason)
    assert "digests_after_a_later_write" not in out.diagnosis.details


RACE_INF = Path(__file__).parent / "data" / "msprobe_md5_digest_race_inf"


def test_a_digest_recorded_again_on_a_later_tensor_with_other_values_was_taken_after_that_write() -> None:
    """Rank 0's gelu output carries the digest of the all_reduce that overwrote it with rank 1's Inf (the same digest
    on a later tensor with other statistics): its digest says nothing about the gelu, so rank 0 only receives the
    overflow through the collective and rank 1's gelu, which made the Inf from finite inputs, is named."""
    out = compare_dumps(CompareDumpsInput(golden=str(RACE_INF / "golden"), target=str(RACE_INF / "target"), workers=1))
    assert out.verdict == "fail" and out.diagnosis is not None and out.first_divergence is not None
    assert (out.first_divergence.module, out.first_divergence.rank) == ("Functional.gelu.0.forward", "rank1")
    assert out.diagnosis.category == "operator_fault"
    assert {f.rank: f.status for f in out.diagnosis.ranks} == {"rank0": "via_collective", "rank1": "diverges"}
    assert "rank0 only receives it through a collective" in out.diagnosis.explanation


def test_the_rank_that_only_receives_the_overflow_names_the_collective(tmp_path: Path) -> None:
    for side in ("golden", "target"):
        shutil.copytree(RACE_INF / side / "step0" / "rank0", tmp_path / side / "step0" / "rank0")
    out = compare_dumps(CompareDumpsInput(golden=str(tmp_path / "golden"), target=str(tmp_path / "target"), workers=1))
    assert out.diagnosis is not None and out.first_divergence is not None
    assert out.first_divergence.module == "Distributed.all_reduce.0.forward"
    assert out.diagnosis.details["digests_after_a_later_write"] == [GELU_OUT, "Distributed.all_reduce.0.forward.input.0"]
    assert "comes from another rank" in out.diagnosis.explanation


def test_a_late_digest_in_the_golden_run_is_told_the_same_way(tmp_path: Path) -> None:
    """The same two ranks with the race in the other run: the golden's gelu output (and the all_reduce input, the same
    tensor) carries the digest of the golden's all_reduce output, and the target's digests were taken in time."""
    shutil.copytree(RACE_INF, tmp_path, dirs_exist_ok=True)
    late = {("golden", GELU, "output"): "7adfa65a", ("golden", ALL_REDUCE, "input_args"): "7adfa65a",
            ("target", GELU, "output"): "ba16b09d", ("target", ALL_REDUCE, "input_args"): "ba16b09d"}
    for (side, call, part), digest in late.items():
        path = tmp_path / side / "step0" / "rank0" / "dump.json"
        doc = json.loads(path.read_text(encoding="utf-8"))
        doc["data"][call][part][0]["md5"] = digest
        path.write_text(json.dumps(doc), encoding="utf-8")
    out = compare_dumps(CompareDumpsInput(golden=str(tmp_path / "golden"), target=str(tmp_path / "target"), workers=1))
    assert out.diagnosis is not None and out.first_divergence is not None
    assert (out.first_divergence.module, out.first_divergence.rank) == ("Functional.gelu.0.forward", "rank1")
    assert {f.rank: f.status for f in out.diagnosis.ranks} == {"rank0": "via_collective", "rank1": "diverges"}
