"""Several ranks in one table: only the rank named keeps the plain "first divergence" mark, its row is listed
whatever its size, and every listing says which rank a row comes from.

Each rank is diagnosed on its own and marks its own first divergence. Before this, a tensor-parallel pair whose
rank 1 loaded the wrong weight shard listed rank 0's all_reduce as "first divergence" (rank 0 only receives the
difference there), left rank 1's row, a weight 0.07 % off in norm, out of the inline rows, and showed two rows of
the same name with nothing to tell the ranks apart. The fixture is a real msprobe dump (see its README).
"""

from __future__ import annotations

import contextlib
import io
from pathlib import Path

import pytest
from recorded_dumps import compare_recorded

from acc_agent.cli import main
from acc_agent.models.compare import CompareDumpsOutput
from acc_agent.models.workflow import SkillResult
from acc_agent.numerics.diagnosis.ranks import RECEIVED_MARK
from acc_agent.render.context import Ctx
from acc_agent.render.tooltext import to_zh
from acc_agent.render.views.dumps import dumps_view

DATA = Path(__file__).parent / "data" / "msprobe_tp_shard_swapped"
NAMED = "Functional.linear.0.forward.input.1"
RECEIVED = "Distributed.all_reduce.0.forward.output.0"


def _marked(out: CompareDumpsOutput) -> dict[tuple[str, str | None], str]:
    return {(r.name, r.rank): r.message for r in out.rows if "first divergence" in r.message}


def test_the_rank_named_keeps_the_mark_and_its_row_is_listed() -> None:
    out = compare_recorded(DATA)
    fd, diagnosis = out.first_divergence, out.diagnosis
    assert fd is not None and diagnosis is not None
    assert (diagnosis.category, fd.module, fd.argument, fd.rank) == \
        ("operator_fault", "Functional.linear.0.forward", "input.1", "rank1"), diagnosis.explanation
    assert {f.rank: f.status for f in diagnosis.ranks} == {"rank0": "via_collective", "rank1": "diverges"}
    assert out.rows_truncated, "the weight row is small next to what follows it: only the rule below lists it"
    marked = _marked(out)
    assert marked[(NAMED, "step0/rank1")].startswith("first divergence")
    assert marked[(RECEIVED, "step0/rank0")].startswith(RECEIVED_MARK)
    plain = [k for k, m in marked.items() if m.startswith("first divergence")]
    assert plain == [(NAMED, "step0/rank1")], plain
    assert to_zh(marked[(RECEIVED, "step0/rank0")]).startswith("本 rank 的首个偏离点，经集合通信传入")


def test_all_rows_mark_one_first_divergence() -> None:
    out = compare_all_rows()
    plain = [(r.name, r.rank) for r in out.rows if r.message.startswith("first divergence")]
    assert plain == [(NAMED, "step0/rank1")]


def _cli(argv: list[str]) -> str:
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf), pytest.raises(SystemExit):
        main(argv)
    return buf.getvalue()


def test_the_text_table_has_a_rank_column_for_several_ranks(tmp_path: Path) -> None:
    text = _cli(["compare-dumps", str(DATA / "golden"), str(DATA / "target"), "--csv", str(tmp_path / "t.csv")])
    lines = text.splitlines()
    header = next(line for line in lines if line.startswith("status"))
    assert header.split()[:3] == ["status", "rank", "name"]
    named = [line for line in lines if NAMED in line and line.split()[0] in ("error", "warning", "pass")]
    assert len(named) == 1 and "step0/rank1" in named[0] and "first divergence" in named[0]
    # one rank: no rank column
    one = _cli(["compare-dumps", str(DATA / "golden" / "step0" / "rank1"), str(DATA / "target" / "step0" / "rank1"),
                "--csv", str(tmp_path / "one.csv")])
    assert next(line for line in one.splitlines() if line.startswith("status")).split()[:2] == ["status", "name"]


def test_the_report_window_is_the_named_ranks_and_says_the_rank() -> None:
    out = compare_all_rows()
    view = dumps_view(Ctx("en"), SkillResult("dumps", "compare_dumps", "ok", "acc-agent compare-dumps g t", out),
                      limit=8)
    cells = [str(r[0]) for r in view.rows]
    assert all("step0/rank" in c for c in cells), cells[:3]
    assert any(NAMED in c and "step0/rank1" in c for c in cells), cells


def compare_all_rows() -> CompareDumpsOutput:
    from acc_agent.registry import call_tool

    out = call_tool("compare_dumps", {"golden": str(DATA / "golden"), "target": str(DATA / "target"),
                                      "workers": 1, "all_rows": True})
    assert isinstance(out, CompareDumpsOutput)
    return out


def test_the_report_lists_a_statistics_dump_by_its_statistics(tmp_path: Path) -> None:
    """msprobe's default dump holds statistics only: Compare.md lists their differences (every one a number), not a
    tensor table whose every cell would be "N/A — not computable", and keeps to the named rank's rows."""
    import shutil

    from acc_agent.app.report import render_all
    from acc_agent.app.workflow import run_workflow
    from acc_agent.io.project_file import load_project
    from acc_agent.registry import call_tool

    project = tmp_path / "proj"
    shutil.copytree(DATA, project / "dumps")
    call_tool("init_project", {"folder": str(project), "target_precision": "fp16",
                               "dumps": {"golden": "dumps/golden", "target": "dumps/target"}})
    wf = run_workflow(load_project(project / "mig.yaml"))
    heads = {"en": "| Tensor | Max diff | Min diff | Mean diff | Norm diff | Norm rel. err | Status |",
             "zh": "| 张量 | 最大值差 | 最小值差 | 均值差 | 范数差 | 范数相对误差 | 状态 |"}
    for lang, head in heads.items():
        render_all(wf, tmp_path / lang, lang, with_plots=False)
        text = (tmp_path / lang / "Compare.md").read_text(encoding="utf-8")
        assert head in text and "| Cosine |" not in text and "| 余弦相似度 |" not in text
        table = text[text.index(head):].split("\n\n", 1)[0].splitlines()[2:]
        assert len(table) >= 10
        assert all("`step0/rank1`" in line for line in table), "the window keeps to the rank the answer names"
        assert any(NAMED in line for line in table)
        assert not [line for line in table if "N/A" in line], table
        # the replay step: a statistics dump cannot be replayed (re-dump the call as tensors), and the command names
        # the rank, which replay-op asks for on a root of several ranks
        assert "--op Functional.linear.0.forward --rank step0/rank1`" in text
        assert {"en": "the dumps hold statistics only", "zh": "该 dump 只含统计量"}[lang] in text
        where = {"en": f"`{NAMED}` on `rank1`", "zh": f"`{NAMED}`（位于 `rank1`）"}[lang]
        for doc in ("Mig_report.md", "Summary.md"):
            assert where in (tmp_path / lang / doc).read_text(encoding="utf-8"), doc


def test_a_clean_float16_statistics_dump_says_its_errors_are_msprobes_dtype_rule(tmp_path: Path) -> None:
    """msprobe's dtype rule makes every row of a float16 target an error; when every tensor is within the target's
    precision (verdict pass) the report's rows say that is all it is, in both languages."""
    import shutil

    from acc_agent.app.report import render_all
    from acc_agent.app.workflow import run_workflow
    from acc_agent.io.project_file import load_project
    from acc_agent.registry import call_tool

    project = tmp_path / "proj"
    shutil.copytree(Path(__file__).parent / "data" / "msprobe_group_norm" / "fp16_stats_clean", project / "dumps")
    call_tool("init_project", {"folder": str(project), "target_precision": "fp16",
                               "dumps": {"golden": "dumps/golden", "target": "dumps/target"}})
    wf = run_workflow(load_project(project / "mig.yaml"))
    words = {"en": ("| dtype only (msprobe: error) |", "| error |"), "zh": ("| 仅 dtype 不同（msprobe：错误） |", "| 错误 |")}
    for lang, (said, plain) in words.items():
        render_all(wf, tmp_path / lang, lang, with_plots=False)
        text = (tmp_path / lang / "Compare.md").read_text(encoding="utf-8")
        assert text.count(said) >= 10 and plain not in text


HASH_RACE = Path(__file__).parent / "data" / "msprobe_md5_hash_race"


def test_a_digest_alone_does_not_outrank_an_overflow_at_the_same_call() -> None:
    """Both ranks first diverge at the GELU: rank 1 writes Inf from finite inputs, rank 0 shows only an md5 that
    differs while every statistic agrees (a digest taken while an in-place all_reduce was writing, see the README).
    The rank named is the one whose values show it."""
    out = compare_recorded(HASH_RACE)
    fd, diagnosis = out.first_divergence, out.diagnosis
    assert fd is not None and diagnosis is not None
    assert (fd.module, fd.rank, fd.enters_through) == ("Functional.gelu.0.forward", "rank1", "overflow"), \
        diagnosis.explanation
    assert {f.rank: f.status for f in diagnosis.ranks} == {"rank0": "diverges", "rank1": "diverges"}
    assert "the divergence starts on rank1" in diagnosis.explanation
