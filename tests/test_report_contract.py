"""Deliverables a reviewer can sign, and a CLI contract that holds.

Each point of the contract on the rendered demo (both languages) or on the CLI: one vocabulary, every
sentence sourced and verdicts in words, provenance of environment facts and dates, tamper evidence
(`report --check` names file and line), Chinese throughout, exit codes, where results go, and snapshots
of the demo documents so a wording change is a visible diff (``ACC_AGENT_UPDATE_SNAPSHOTS=1`` rewrites them).
"""

from __future__ import annotations

import difflib
import json
import os
import re
import shutil
import typing
from collections.abc import Iterator
from pathlib import Path

import pytest

from acc_agent.app.check import recompute
from acc_agent.app.report import render_all
from acc_agent.app.workflow import run_workflow
from acc_agent.io.project_file import load_project
from acc_agent.models.compare import CompareDumpsOutput
from acc_agent.models.environment import CheckEnvironmentOutput
from acc_agent.models.workflow import WorkflowResult
from acc_agent.render.checks import check_folder, check_integrity
from acc_agent.render.deliverables import DOCUMENTS, read_meta
from acc_agent.render.env import md_escape
from acc_agent.render.files import FOOTER_RE, LIVE_RE, with_footer
from acc_agent.render.i18n import WORDS
from acc_agent.render.tooltext import english_words, tool_text

REPO = Path(__file__).resolve().parents[1]
DEMO = REPO / "samples" / "demo_project"
SNAPSHOTS = Path(__file__).resolve().parent / "snapshots"
EPOCH = "1767225600"  # 2026-01-01: the generation date every snapshot carries


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, WorkflowResult]]:
    """The demo project rendered in both languages (no plots: the same documents, minus image links)."""
    old = os.environ.get("SOURCE_DATE_EPOCH")
    os.environ["SOURCE_DATE_EPOCH"] = EPOCH
    root = tmp_path_factory.mktemp("contract")
    shutil.copytree(DEMO, root / "demo_project")
    wf = run_workflow(load_project(root / "demo_project" / "mig.yaml"))
    for lang in ("en", "zh"):
        render_all(wf, root / lang, lang, with_plots=False)
    try:
        yield root, wf
    finally:
        if old is None:
            os.environ.pop("SOURCE_DATE_EPOCH", None)
        else:
            os.environ["SOURCE_DATE_EPOCH"] = old


def _docs(root: Path, lang: str) -> dict[str, str]:
    return {name: (root / lang / f"{name}.md").read_text(encoding="utf-8") for name in DOCUMENTS}


def _prose(text: str) -> str:
    """What a reader reads as prose: no code spans, fenced blocks, HTML comments or machine-probe block."""
    text = LIVE_RE.sub("", text)
    text = re.sub(r"```.*?```", "", text, flags=re.DOTALL)
    text = re.sub(r"<!--.*?-->", "", text, flags=re.DOTALL)
    return re.sub(r"`[^`]*`", "", text)


def _user_strings(wf: WorkflowResult) -> list[str]:
    """Strings the engineer wrote in mig.yaml (and the probed system facts): data, not report text."""
    found: list[str] = []

    def walk(x: object) -> None:
        if isinstance(x, str) and len(x.strip()) >= 4:
            found.extend([x, md_escape(x)])
        elif isinstance(x, dict):
            for v in x.values():
                walk(v)
        elif isinstance(x, list):
            for v in x:
                walk(v)

    walk(wf.project.model_dump(mode="json"))
    env = wf.get("environment").output_as(CheckEnvironmentOutput)
    walk(env.system if env is not None else {})
    walk(env.versions if env is not None else {})
    return sorted(set(found), key=len, reverse=True)


# ------------------------------------------------------------------ 1. one vocabulary


def test_vocabulary_is_defined_once_in_the_readme() -> None:
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    assert readme.count("## Vocabulary") == 1
    section = readme.split("## Vocabulary", 1)[1].split("\n## ", 1)[0]
    for word in ("**golden**", "**target**", "**bench**", "**NPU** means target", "**Bench** means golden"):
        assert word in section, word


def test_csv_starts_with_msprobes_columns_and_ours_follow_with_our_names(tmp_path: Path) -> None:
    import csv

    from acc_agent.registry import call_tool
    from acc_agent.tools._compare_csv import EXTRA_TENSOR_HEADER

    fixture = REPO / "tests" / "fixtures" / "msprobe" / "npy"
    out = tmp_path / "rows.csv"
    call_tool("compare_dumps", {"golden": str(fixture / "golden"), "target": str(fixture / "target"), "csv": str(out)})
    with (fixture / "msprobe_compare.csv").open(newline="", encoding="utf-8") as fh:
        theirs = next(csv.reader(fh))
    with out.open(newline="", encoding="utf-8") as fh:
        reader = csv.reader(fh)
        ours = next(reader)
        first = next(reader)
    assert ours[:len(theirs)] == theirs  # msprobe's names, in msprobe's order
    assert ours[len(theirs):] == EXTRA_TENSOR_HEADER
    assert not any(c.startswith(("NPU", "Bench")) for c in EXTRA_TENSOR_HEADER)  # msprobe's words stay in its columns
    row = dict(zip(ours, first, strict=True))
    assert row["Data_name"] == repr([f"{row['NPU Name']}.npy", f"{row['Bench Name']}.npy"])
    assert row["NPU max"] not in ("", "N/A") and row["Requires_grad Consistent"] in ("True", "False")
    assert json.loads(row["Err_message"]) is not None


# ------------------------------------------------------------------ 2. sourced sentences, verdict words


#: Python values printed as text: None/True/False, a dict or list repr, an Enum repr, a bracketed machine value.
_RAW = re.compile(r"\b(?:None|True|False)\b|'fp16'|\[(?:not_met|met|fail|pass)\]|=None|\{'\w+': |\['[^'\]]*'(?:, '[^'\]]*')*\]"
                  r"|<\w+\.\w+: '|\[\w+_\w+\]")
#: Internal references a reader cannot look up: seed documents, design notes, sub-sub-section numbers.
_INTERNAL = re.compile(r"(?i)\bseeds? ?(?:§|0\d\d\b)|seed document|design\.md|deliverables\.md|§\d+\.\d+\.\d+")


def _machine_identifiers() -> set[str]:
    """Every snake_case value a tool or model can hold (verdicts, categories, scopes, purposes…), every
    tool name and every output field name: none of them is a word a report may show outside code."""
    import enum
    import importlib
    import pkgutil

    import acc_agent.models as models
    from acc_agent.registry import all_tools

    found: set[str] = {value for kind in WORDS.values() for value in kind}

    def walk(annotation: object) -> None:
        if typing.get_origin(annotation) is typing.Literal:
            found.update(a for a in typing.get_args(annotation) if isinstance(a, str))
        elif isinstance(annotation, type) and issubclass(annotation, enum.Enum):
            found.update(m.value for m in annotation if isinstance(m.value, str))
        for arg in typing.get_args(annotation):
            walk(arg)

    from pydantic import BaseModel

    for info in pkgutil.iter_modules(models.__path__):
        module = importlib.import_module(f"acc_agent.models.{info.name}")
        for obj in vars(module).values():
            if isinstance(obj, type) and issubclass(obj, BaseModel):
                for finfo in obj.model_fields.values():
                    walk(finfo.annotation)
            else:
                walk(obj)
    for spec in all_tools().values():
        found.add(spec.name)
        found.update(spec.input_model.model_fields)
        found.update(spec.output_model.model_fields)
    return {v for v in found if "_" in v}


@pytest.fixture(scope="module")
def started(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A project just begun (``acc-agent init``'s file, nothing measured): every gap path of the templates."""
    from acc_agent.registry import call_tool

    root = tmp_path_factory.mktemp("started")
    call_tool("init_project", {"folder": str(root / "proj")})
    wf = run_workflow(load_project(root / "proj" / "mig.yaml"))
    for lang in ("en", "zh"):
        render_all(wf, root / lang, lang, with_plots=False)
    return root


@pytest.mark.parametrize("which", ["demo", "started"])
def test_no_raw_enum_values_python_reprs_or_internal_references(which: str, request: pytest.FixtureRequest) -> None:
    """What a reader reads (code spans, commands and the machine-probe block aside) holds no Python value,
    no machine identifier and no reference to a document the reader does not have, in either language."""
    root = request.getfixturevalue("demo")[0] if which == "demo" else request.getfixturevalue("started")
    identifiers = _machine_identifiers()
    assert {"operator_fault", "device_only", "short_run", "compare_performance", "fault_enters", "batch_size"} <= identifiers
    found = []
    for lang in ("en", "zh"):
        for name, text in _docs(root, lang).items():
            prose = _prose(text).replace("\\_", "_")
            found += [(lang, name, m.group(0)) for m in _RAW.finditer(prose)]
            found += [(lang, name, m.group(0)) for m in _INTERNAL.finditer(text)]
            found += [(lang, name, v) for v in sorted(identifiers)
                      if re.search(rf"(?<![\w.\\/<-]){re.escape(v)}(?![\w/])", prose)]
    assert not found, found


def test_every_number_in_a_fact_table_names_its_source(demo: tuple[Path, WorkflowResult]) -> None:
    """An Item/Value row that states a number says where it comes from (a file, a command, a mig.yaml key),
    or is N/A with the reason; what the engineer wrote in mig.yaml is quoted as written."""
    from acc_agent.render.checks import parse

    root, wf = demo
    written = [s.replace("\\", "") for s in _user_strings(wf)]
    exempt = {"Statistics", "统计量", "Report generated", "报告生成日期"}  # a definition; the generation date itself
    unsourced = []
    for lang in ("en", "zh"):
        for name, text in _docs(root, lang).items():
            for table in parse(text, name).tables:
                if table.header[:1] not in (["Item"], ["项目"]):
                    continue
                for row in table.rows:
                    label, value = row[0], row[1]
                    bare = re.sub(r"`[^`]*`", "", value).replace("\\", "")
                    if label in exempt or not re.search(r"\d", bare) or value.startswith("N/A"):
                        continue
                    if "(source: " in value or "(来源: " in value or any(s in bare for s in written):
                        continue
                    unsourced.append((lang, name, table.section, label, value[:80]))
    assert not unsourced, unsourced


def test_every_documented_verdict_has_a_word_in_both_languages() -> None:
    from acc_agent.models.baseline import BaselineSource
    from acc_agent.models.compare import CompareDumpsOutput, CompareTensorsOutput, RowStatus
    from acc_agent.models.diagnosis import DiagnosisCategory
    from acc_agent.models.environment import CheckEnvironmentOutput, CheckStatus
    from acc_agent.models.performance import ComparePerformanceOutput
    from acc_agent.models.training import CompareLossCurvesOutput, ShortRunVerdict

    def values(annotation: typing.Any) -> set[str]:
        return set(typing.get_args(annotation))

    expected = {
        "tensor": values(CompareTensorsOutput.model_fields["verdict"].annotation)
        | values(CompareDumpsOutput.model_fields["verdict"].annotation),
        "row": values(RowStatus), "check": values(CheckStatus), "category": values(DiagnosisCategory),
        "environment": values(CheckEnvironmentOutput.model_fields["verdict"].annotation),
        "performance": values(ComparePerformanceOutput.model_fields["verdict"].annotation),
        "short_run": values(ShortRunVerdict), "baseline": values(BaselineSource),
        "curves": values(CompareLossCurvesOutput.model_fields["verdict"].annotation),
    }
    for kind, verdicts in expected.items():
        assert verdicts <= set(WORDS[kind]), (kind, verdicts - set(WORDS[kind]))
        for v in verdicts:
            assert WORDS[kind][v]["en"] and WORDS[kind][v]["zh"]
            assert "_" not in v or v not in WORDS[kind][v]["en"], (kind, v)  # a word, not the machine value


def test_both_performance_verdicts_are_named(demo: tuple[Path, WorkflowResult]) -> None:
    root, _ = demo
    compare = _docs(root, "en")["Compare"]
    summary = compare.split("## 1 Summary", 1)[1].split("\n## ", 1)[0]
    assert "| Performance against the KPI | met: NPU p50 against the KPI p50 ≤ 5 ms at batch 1" in summary
    assert "| Performance against the baseline | not met — p50 latency ratio target/baseline up to 1.467" in summary
    five = compare.split("Five required parts:", 1)[1]
    assert "against the KPI met" in five and "against the baseline not met" in five
    zh = _docs(root, "zh")["Compare"]
    assert "| 性能对照 KPI | 达标" in zh and "| 性能对照基线 | 未达标" in zh


def test_claims_come_with_their_evidence(demo: tuple[Path, WorkflowResult]) -> None:
    """No "same machine, driver, CANN and code" without evidence; no AICPU claim on a CPU run."""
    root, _ = demo
    compare = _docs(root, "en")["Compare"]
    assert "same machine, driver, CANN and code per side" not in compare
    assert ("Machine, driver, CANN and code: N/A — the timing results record no machine, driver, CANN or code "
            "version") in compare
    assert "AICPU" not in compare
    assert "error changes by 1x" not in compare and "dropped -" not in compare
    # the one error figure the first divergence names is in the table, with its kind
    assert "Rel. L2 err" in compare and "relative L2 error 0.00864" in compare


_DOC_REF = re.compile(r"(?i)\bseeds? ?(?:§|0\d\d\b)|seed document|deliverables\.md|Compare §3\.1 table")
_BARE_SECTION = re.compile(r"(?<!Mig_Readme )(?<!Mig_Readme\.md )(?<!Compare )(?<!Compare\.md )(?<!Mig_report )"
                           r"(?<!Mig_report\.md )(?<!, )(?<!and )(?<!/)§\d")


def _user_facing_texts() -> list[tuple[str, str]]:
    """Every text a user or an agent reads from the tools: descriptions, schemas, CLI help, report strings."""
    from acc_agent.registry import all_tools
    from acc_agent.render.i18n import STRINGS

    out: list[tuple[str, str]] = []
    for spec in all_tools().values():
        out.append((f"{spec.name} description", spec.description))
        for side, model in (("input", spec.input_model), ("output", spec.output_model)):
            out.append((f"{spec.name} {side} schema", json.dumps(model.model_json_schema(), ensure_ascii=False)))
    for key, forms in STRINGS.items():
        out += [(f"i18n {key}", forms["en"]), (f"i18n {key} zh", forms["zh"])]
    for module in sorted((REPO / "acc_agent" / "commands").glob("*.py")):  # the workflow commands' help
        out.append((str(module.relative_to(REPO)), module.read_text(encoding="utf-8")))
    for tpl in sorted((REPO / "templates").rglob("*")):
        if tpl.is_file():
            out.append((str(tpl.relative_to(REPO)), tpl.read_text(encoding="utf-8")))
    return out


def test_no_internal_document_references_in_user_facing_text() -> None:
    found = [(where, m.group(0)) for where, text in _user_facing_texts() for m in [_DOC_REF.search(text)] if m]
    assert not found, found
    # a section number always says which document it is in (the templates speak of their own sections)
    bare = [(where, text[max(0, m.start() - 40):m.end() + 20]) for where, text in _user_facing_texts()
            if "schema" in where or "description" in where for m in [_BARE_SECTION.search(text)] if m]
    assert not bare, bare


def test_help_says_where_the_default_precision_comes_from() -> None:
    from acc_agent.registry import get_tool

    dumps = get_tool("compare_dumps").input_model.model_fields["precision"].description or ""
    assert "recorded dtype" in dumps and "default FP16" not in dumps
    tensors = get_tool("compare_tensors").input_model.model_fields["precision"].description or ""
    assert "bf16" in tensors and "fp16" in tensors


# ------------------------------------------------------------------ 3. provenance


def test_recorded_environment_and_report_machine_are_apart(demo: tuple[Path, WorkflowResult]) -> None:
    root, wf = demo
    report = _docs(root, "en")["Mig_report"]
    section = report.split("## 3 Environment snapshot", 1)[1].split("\n## 4", 1)[0]
    recorded, machine = section.split("### 3.1 Machine that ran acc-agent report", 1)
    rows = [ln for ln in recorded.splitlines() if ln.startswith("| `")]
    assert rows and all(ln.rstrip(" |").endswith("recorded: env/npu-smi-info.txt") for ln in rows)
    assert LIVE_RE.search(machine) and "describes the target only if the report ran on the target" in machine
    env = wf.get("environment").output_as(CheckEnvironmentOutput)
    torch_version = env.versions.get("torch") if env is not None else None
    for name, text in _docs(root, "en").items():
        outside = LIVE_RE.sub("", text)
        assert "installed packages of this Python" not in outside, name
        if torch_version:
            assert torch_version not in outside, name
    assert "| Recorded target environment | 4 of 4 recorded checks ok (source: `env/npu-smi-info.txt`) |" in \
        _docs(root, "en")["Compare"]


def test_generation_date_and_project_date_are_labelled(demo: tuple[Path, WorkflowResult]) -> None:
    root, _ = demo
    docs = _docs(root, "en")
    for name, text in docs.items():
        assert read_meta(text)["generated"] == "2026-01-01", name
        assert "Generated by `acc-agent report` on 2026-01-01" in text, name
    assert "| Report generated | 2026-01-01 |" in docs["Mig_report"]
    assert "| Project date (mig.yaml) | 2025-12-02 (source: `mig.yaml project.date`) |" in docs["Mig_report"]
    assert "on 2025-12-02" not in docs["Compare"]


# ------------------------------------------------------------------ 4. tamper evidence


def _copy(root: Path, tmp_path: Path) -> Path:
    shutil.copytree(root, tmp_path / "c", ignore=shutil.ignore_patterns("zh"))
    return tmp_path / "c"


def test_a_hand_changed_number_fails_the_check_naming_file_and_line(demo: tuple[Path, WorkflowResult],
                                                                    tmp_path: Path) -> None:
    work = _copy(demo[0], tmp_path)
    path = work / "en" / "Compare.md"
    lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
    at = next(i for i, ln in enumerate(lines) if ln.startswith("| `sample_2` |"))
    lines[at] = lines[at].replace("0.004881", "0.000488")
    path.write_text("".join(lines), encoding="utf-8")
    problems, _ = check_folder(work / "en")
    edited = [p for p in problems if p.check == "hand_edited"]
    assert edited and edited[0].doc == "Compare" and str(edited[0]).startswith("Compare.md:")
    assert "3.1 Golden samples" in edited[0].message
    # with the inputs, the check names the very line and both values
    again = [p for p in recompute(work / "en", work / "demo_project" / "mig.yaml") if p.check == "differs_from_inputs"]
    assert [p.line for p in again] == [at + 1] and "0.000488" in again[0].message and "0.004881" in again[0].message
    # a forged footer hides the edit from the hash, not from the re-computation
    path.write_text(with_footer(FOOTER_RE.sub("", path.read_text(encoding="utf-8"))), encoding="utf-8")
    assert not check_integrity(path.read_text(encoding="utf-8"), "Compare")
    assert [p.line for p in recompute(work / "en", work / "demo_project" / "mig.yaml")] == [at + 1]


@pytest.mark.parametrize(("lang", "doc", "before", "after"), [
    ("en", "Mig_Readme", "| Flat-loss step limit | 500 ", "| Flat-loss step limit | 600 "),
    ("en", "Compare", "| 0.001356 | 2.147 |", "| 0.001356 | 2.417 |"),
    ("en", "Mig_report", "| Latency KPI (p50) | 5 ms ", "| Latency KPI (p50) | 4 ms "),
    ("zh", "Mig_report", "| 时延 KPI (p50) | 5 ms ", "| 时延 KPI (p50) | 50 ms "),
])
def test_a_hand_changed_number_in_any_document_is_found(demo: tuple[Path, WorkflowResult], tmp_path: Path,
                                                        lang: str, doc: str, before: str, after: str) -> None:
    """Each of the three deliverables, either language: the footer check names the edited section's line,
    the re-computation the very line with both values; the untouched documents beside it pass."""
    shutil.copytree(demo[0], tmp_path / "c")
    folder = tmp_path / "c" / lang
    assert not check_folder(folder)[0] and not recompute(folder, tmp_path / "c" / "demo_project" / "mig.yaml")
    path = folder / f"{doc}.md"
    lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
    at = next(i for i, ln in enumerate(lines) if before in ln)
    lines[at] = lines[at].replace(before, after)
    path.write_text("".join(lines), encoding="utf-8")
    problems, _ = check_folder(folder)
    assert [(p.doc, p.check) for p in problems] == [(doc, "hand_edited")], problems
    heading = problems[0].line
    assert heading is not None and heading <= at + 1 and lines[heading - 1].startswith("#")
    again = recompute(folder, tmp_path / "c" / "demo_project" / "mig.yaml")
    assert [(p.doc, p.check, p.line) for p in again] == [(doc, "differs_from_inputs", at + 1)], again
    assert after.strip(" |") in again[0].message and before.strip(" |") in again[0].message
    assert str(again[0]).startswith(f"{doc}.md:{at + 1} ")


def test_report_check_cli_fails_on_an_edit_and_passes_on_hand_written_blocks(demo: tuple[Path, WorkflowResult],
                                                                             tmp_path: Path,
                                                                             capsys: pytest.CaptureFixture[str]) -> None:
    from acc_agent.cli import main

    work = _copy(demo[0], tmp_path)
    compare = work / "en" / "Compare.md"
    text = compare.read_text(encoding="utf-8")
    mine = "Reviewed by Li Wei: the GELU port is tracked in issue 42."
    text = re.sub(r"(<!-- acc-agent:keep compare-notes -->\n)(.*?)(\n<!-- acc-agent:end compare-notes -->)",
                  lambda m: m.group(1) + mine + m.group(3), text, flags=re.DOTALL)
    compare.write_text(text, encoding="utf-8")
    with pytest.raises(SystemExit) as ok:
        main(["report", "--check", "--out", str(work / "en")])
    out = capsys.readouterr().out
    assert ok.value.code == 0, out
    assert "Re-computed from" in out and "all checks passed" in out
    compare.write_text(text.replace("| Overall | fail |", "| Overall | pass |"), encoding="utf-8")
    with pytest.raises(SystemExit) as bad:
        main(["report", "--check", "--out", str(work / "en")])
    out = capsys.readouterr().out
    assert bad.value.code == 1
    assert re.search(r"problem: Compare\.md:\d+ \[hand_edited\]", out)
    assert re.search(r"problem: Compare\.md:\d+ \[differs_from_inputs\] the document says “\| Overall \| pass", out)
    # hand-written text survives re-rendering
    render_all(demo[1], work / "en", "en", with_plots=False)
    assert mine in compare.read_text(encoding="utf-8")


def test_a_complete_document_may_not_hold_placeholders(demo: tuple[Path, WorkflowResult], tmp_path: Path) -> None:
    work = _copy(demo[0], tmp_path)
    path = work / "en" / "Summary.md"
    text = path.read_text(encoding="utf-8")
    assert read_meta(text)["status"] == "with_gaps"  # the demo's hand-written parts are still to write
    forged = with_footer(FOOTER_RE.sub("", text.replace("status=with_gaps", "status=complete")))
    path.write_text(forged, encoding="utf-8")
    problems = check_integrity(forged, "Summary")
    assert [p.check for p in problems] == ["placeholder"] and "summary-timeline" in problems[0].message
    assert problems[0].line == forged.splitlines().index("<!-- acc-agent:keep summary-timeline -->") + 2


def test_writing_every_hand_written_part_makes_the_set_complete(demo: tuple[Path, WorkflowResult],
                                                               tmp_path: Path) -> None:
    """The demo has every skill result; once the engineer writes each kept block, the documents are complete."""
    work = _copy(demo[0], tmp_path)
    for name in DOCUMENTS:
        path = work / "en" / f"{name}.md"
        text = re.sub(r"(<!-- acc-agent:keep ([\w.-]+) -->\n)(.*?)(\n<!-- acc-agent:end \2 -->)",
                      lambda m: m.group(1) + f"Written by the engineer ({m.group(2)})." + m.group(4),
                      path.read_text(encoding="utf-8"), flags=re.DOTALL)
        path.write_text(text, encoding="utf-8")
    result = render_all(demo[1], work / "en", "en", with_plots=False)
    assert result.status == "complete" and not result.placeholders
    for name in DOCUMENTS:
        text = (work / "en" / f"{name}.md").read_text(encoding="utf-8")
        assert read_meta(text)["status"] == "complete" and not check_integrity(text, name)


# ------------------------------------------------------------------ 5. Chinese throughout


def test_chinese_demo_has_no_english_sentences(demo: tuple[Path, WorkflowResult]) -> None:
    root, wf = demo
    strings = _user_strings(wf)
    left: list[str] = []
    for name, text in _docs(root, "zh").items():
        bare = re.sub(r"```.*?```", "", text, flags=re.DOTALL)
        for line in bare.splitlines():
            if line.startswith("<!--"):
                continue
            for s in strings:
                line = line.replace(s, " ")
            words = english_words(line)
            if words:
                left.append(f"{name}: {words[:8]} in {line[:160]}")
    assert not left, "\n".join(left)


def test_chinese_demo_keeps_every_fact_of_the_english_one(demo: tuple[Path, WorkflowResult]) -> None:
    """A translation drops nothing and leaves no English in the sources: "and 6 more" has its Chinese
    form, and a source names its step as 第 N 步 (inside the code span, where the word test cannot look)."""
    root, _ = demo
    en, zh = _docs(root, "en"), _docs(root, "zh")
    for name in DOCUMENTS:
        more = re.findall(r"; and (\d+) more\.", en[name])
        assert re.findall(r"；另有 (\d+) 行", zh[name]) == more, name
        assert not re.search(r"(?<!--)\bsteps? \d", LIVE_RE.sub("", zh[name])), name  # --steps 300 is a command
    assert "logs/npu_fp16_train.log，第 1–100 步" in zh["Compare"]


def test_static_advice_tables_have_chinese_forms() -> None:
    from acc_agent.numerics.diagnosis.advice import FAMILY_CHECKS

    for family, checks in FAMILY_CHECKS.items():
        for sentence in checks:
            assert not english_words(tool_text(sentence, "zh")), (family, sentence)


@pytest.mark.parametrize("fixture", ["diagnosis/msprobe_backward", "msprobe/npy"])
def test_diagnosis_of_the_fixture_dumps_reads_chinese(fixture: str) -> None:
    from acc_agent.registry import call_tool

    base = REPO / "tests" / "fixtures" / fixture
    out = call_tool("compare_dumps", {"golden": str(base / "golden"), "target": str(base / "target")})
    data = out.model_dump(mode="json")
    texts = [data["summary"], (data.get("first_divergence") or {}).get("reason", ""),
             (data.get("diagnosis") or {}).get("explanation", "")]
    texts += list((data.get("diagnosis") or {}).get("next_actions") or []) + [r["message"] for r in data["rows"]]
    for text in texts:
        zh = tool_text(text, "zh", str(REPO))
        assert not english_words(zh), (text, zh)


def test_english_tool_output_is_unchanged_by_the_translation(demo: tuple[Path, WorkflowResult]) -> None:
    _, wf = demo
    dumps = wf.get("dumps").output_as(CompareDumpsOutput)
    explanation = dumps.diagnosis.explanation if dumps is not None and dumps.diagnosis is not None else ""
    assert explanation.startswith("One localised jump:")  # the tool's contract: English in the JSON


# ------------------------------------------------------------------ 6. exit codes


def test_exit_codes_are_documented_in_the_readme() -> None:
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    for code in ("| 0 |", "| 1 |", "| 2 |", "| 3 |"):
        assert code in readme
    assert '{"error": {"code": ..., "message": ..., "hint": ...}}' in readme


def test_inconclusive_exits_3_and_bad_input_names_the_real_problem(tmp_path: Path,
                                                                   capsys: pytest.CaptureFixture[str]) -> None:
    import numpy as np

    from acc_agent.cli import main

    log = tmp_path / "short.log"
    log.write_text("step 1 loss 2.0\n", encoding="utf-8")
    with pytest.raises(SystemExit) as exc:
        main(["judge-short-run", str(log), "--no-record", "--json"])
    out = json.loads(capsys.readouterr().out)
    assert (exc.value.code, out["verdict"]) == (3, "insufficient_data")
    np.save(tmp_path / "g.npy", np.ones(4, dtype=np.float32))
    (tmp_path / "t.npy").write_text("hello world\n", encoding="utf-8")
    with pytest.raises(SystemExit) as exc:
        main(["compare-tensors", str(tmp_path / "g.npy"), str(tmp_path / "t.npy"), "--json"])
    err = json.loads(capsys.readouterr().out)["error"]
    assert exc.value.code == 2 and set(err) >= {"code", "message", "hint"}
    assert err["message"].startswith("not a .npy file: t.npy starts with 'hello")


def test_a_callable_without_an_argument_is_bad_input(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    from acc_agent.cli import main

    (tmp_path / "zeroarg_mod.py").write_text("def run():\n    return 1\n", encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    with pytest.raises(SystemExit) as exc:
        main(["measure-performance", "--callable", "zeroarg_mod:run", "--warmup", "0", "--iterations", "1", "--json"])
    err = json.loads(capsys.readouterr().out)["error"]
    assert exc.value.code == 2 and err["code"] == "invalid_callable" and "takes no argument" in err["message"]


# ------------------------------------------------------------------ 7. where results go


def test_results_go_beside_mig_yaml_never_to_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from acc_agent.results_folder import results_dir
    from acc_agent.tools.short_run import default_record_file

    project = tmp_path / "proj"
    (project / "logs").mkdir(parents=True)
    (project / "mig.yaml").write_text("project: {name: p}\nmodel: {name: m}\n", encoding="utf-8")
    monkeypatch.delenv("ACC_AGENT_RESULTS_DIR", raising=False)
    monkeypatch.chdir(project / "logs")
    assert results_dir() == project / "acc-agent-results"
    assert default_record_file() == project / ".acc-agent" / "short_run_record.json"
    wf_plans = {p.slot: p for p in __import__("acc_agent.app.workflow", fromlist=["plans"]).plans(load_project(project))}
    assert wf_plans["short_run"].options["record_file"] == str(project / ".acc-agent" / "short_run_record.json")


def test_demo_keeps_its_project_beside_the_documents(tmp_path: Path) -> None:
    """`demo --out D` writes into D only (the project copy included), so `report --check --out D` can re-compute."""
    import subprocess
    import sys

    env = dict(os.environ, SOURCE_DATE_EPOCH=EPOCH)
    res = subprocess.run([sys.executable, "-m", "acc_agent", "demo", "--out", "d"], cwd=tmp_path, env=env,
                         capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stdout + res.stderr
    assert (tmp_path / "d" / "demo_project" / "mig.yaml").is_file()
    assert read_meta((tmp_path / "d" / "Compare.md").read_text(encoding="utf-8"))["config"] == "demo_project/mig.yaml"
    assert "/tmp/" not in (tmp_path / "d" / "Summary.md").read_text(encoding="utf-8").replace(str(tmp_path), "")


def test_plots_are_written_atomically(tmp_path: Path) -> None:
    """A PNG beside the documents is renamed into place like them: no temp file left, nothing half written."""
    pytest.importorskip("matplotlib")
    from acc_agent.io.figures import save_figure
    from acc_agent.render.plots import _pyplot

    plt = _pyplot()
    fig, ax = plt.subplots()
    ax.plot([0, 1], [1, 0])
    save_figure(fig, tmp_path / "plots" / "x.png")
    plt.close(fig)
    assert [p.name for p in (tmp_path / "plots").iterdir()] == ["x.png"]
    assert (tmp_path / "plots" / "x.png").read_bytes().startswith(b"\x89PNG")


# ------------------------------------------------------------------ 8. snapshots


def _stable(text: str) -> str:
    """A document with what legitimately varies between machines blanked: the machine-probe block, the footer."""
    text = LIVE_RE.sub(lambda m: m.group(1) + "(probed on the machine that ran the report)" + m.group(4), text)
    return FOOTER_RE.sub("\n<!-- acc-agent:generated (footer) -->\n", text)


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_demo_documents_match_their_snapshots(demo: tuple[Path, WorkflowResult], lang: str) -> None:
    root, _ = demo
    update = os.environ.get("ACC_AGENT_UPDATE_SNAPSHOTS") == "1"
    diffs = []
    for name, text in _docs(root, lang).items():
        got = _stable(text)
        snap = SNAPSHOTS / lang / f"{name}.md"
        if update:
            snap.parent.mkdir(parents=True, exist_ok=True)
            snap.write_text(got, encoding="utf-8")
            continue
        want = snap.read_text(encoding="utf-8") if snap.is_file() else ""
        if got != want:
            diffs.append("".join(difflib.unified_diff(want.splitlines(True), got.splitlines(True),
                                                      f"snapshots/{lang}/{name}.md", f"rendered {name}.md")))
    assert not diffs, ("the rendered demo differs from its snapshot (rerun with ACC_AGENT_UPDATE_SNAPSHOTS=1 if the "
                       "change is intended):\n" + "\n".join(diffs)[:6000])
