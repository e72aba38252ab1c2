"""Checks a reviewer would otherwise do by eye, run on the rendered markdown (markdown-it-py).

Why parse instead of grep: a table row with one cell too many (an unescaped pipe in a dataset
name) still *looks* fine in a diff but renders shifted; markdown-it gives the table's source lines
and the tokens that really render (raw HTML, stray backticks). The consistency matrix then reads
the facts from where each document states them and checks that all documents say the same.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING

from acc_agent.models.workflow import WorkflowResult
from acc_agent.render.i18n import translate

if TYPE_CHECKING:
    from markdown_it import MarkdownIt

META_RE = re.compile(r"<!-- acc-agent doc=(?P<doc>\w+) lang=(?P<lang>\w+)(?: \w+=\S+)* -->")  # as deliverables.META_RE
TEMPLATE_RE = re.compile(r"\{\{|\}\}|\{%|%\}|\{#|#\}")
# A Python/JS value printed where a number or text belongs: lowercase nan/inf anywhere as a word,
# or None/NaN/inf/null/undefined standing as a value (a whole cell, or right after ':' or '='). Prose such
# as "None of the rows", "no NaN/Inf" or msprobe's "nan/inf/-inf in the maximum" is not a leak.
LEAK_RE = re.compile(r"(?<![\w./-])-?(nan|inf)(?![\w/])"
                     r"|(?:[:=]\s*)(None|NaN|-?inf|null|undefined)(?=$|[\s,;)])")
LEAK_CELL_RE = re.compile(r"^\s*-?(None|nan|NaN|inf|Inf|null|undefined)\s*$")
CODE_SPAN_RE = re.compile(r"(`+)(?!`).*?(?<!`)\1(?!`)")
OUR_COMMENT_RE = re.compile(r"^\s*<!-- acc-agent[: ][^>]*-->\s*$")

REQUIRED_SECTIONS: dict[str, list[str]] = {
    "Mig_Readme": ["1", "2", "2.1", "2.2", "2.3", "2.4", "2.5", "2.6", "3", "3.1", "3.2", "4", "5", "5.3", "6", "7", "8"],
    "Compare": ["1", "2", "2.0", "2.1", "2.2", "2.3", "2.4", "3", "3.1", "4", "4.1", "5", "6", "7"],
    "Mig_report": ["1", "2", "2.1", "2.2", "3", "4", "5", "6", "7", "7.1", "8"],
    "Summary": [],
}

#: fact -> where each document states it: (document, section or None for anywhere, row label key[, column])
FACTS: dict[str, list[tuple[str, str | None, str] | tuple[str, str | None, str, int]]] = {
    "baseline_source": [("Mig_Readme", "2.6", "f_baseline_source"), ("Compare", "2.1", "f_baseline_source"),
                        ("Mig_report", "2", "f_baseline_source"), ("Summary", None, "f_baseline_source")],
    "baseline_log": [("Mig_Readme", "2.6", "f_baseline_log"), ("Compare", "2.1", "f_baseline_log")],
    "short_run_band": [("Mig_Readme", "5.3", "f_band"), ("Mig_report", "2", "f_band"), ("Compare", "3", "r_short_run", 4)],
    "short_run_result": [("Mig_Readme", "5.3", "f_short_run_result"), ("Compare", "3", "r_short_run", 2)],
    "target_precision": [("Compare", "2.2", "f_precision"), ("Compare", "3.1", "f_precision"), ("Mig_report", "1", "f_precision"),
                         ("Summary", None, "f_precision")],
    "short_run_window": [("Mig_Readme", "5.3", "f_window"), ("Mig_report", "2", "f_window")],
    "loss_metric": [("Mig_Readme", "5.3", "f_metric"), ("Mig_report", "2", "f_metric")],
    "rtol": [("Compare", "3.1", "f_rtol"), ("Mig_report", "2", "f_rtol")],
    "atol": [("Compare", "3.1", "f_atol"), ("Mig_report", "2", "f_atol")],
    "accuracy_verdict": [("Compare", "1", "f_accuracy"), ("Summary", None, "f_accuracy")],
    "performance_verdict": [("Compare", "1", "f_performance"), ("Summary", None, "f_performance")],
    "overall_verdict": [("Compare", "1", "f_overall"), ("Summary", None, "f_overall")],
    "performance_vs_kpi": [("Compare", "1", "f_perf_kpi"), ("Summary", None, "f_perf_kpi")],
    "performance_vs_baseline": [("Compare", "1", "f_perf_baseline"), ("Summary", None, "f_perf_baseline")],
    "recorded_environment": [("Compare", "2.2", "f_recorded_env"), ("Summary", None, "f_recorded_env")],
}
DATASET_TABLES = [("Mig_Readme", "3.1"), ("Compare", "2.4"), ("Mig_report", "2.1")]


@dataclass
class Problem:
    doc: str
    check: str
    message: str
    line: int | None = None

    def __str__(self) -> str:
        from acc_agent.render.deliverables import DOCUMENTS

        name = f"{self.doc}.md" if self.doc in DOCUMENTS else self.doc
        where = f":{self.line}" if self.line else ""
        return f"{name}{where} [{self.check}] {self.message}"


@dataclass
class Table:
    section: str | None
    header: list[str]
    rows: list[list[str]]
    line: int


@dataclass
class Parsed:
    doc: str
    lang: str
    sections: list[str] = field(default_factory=list)
    tables: list[Table] = field(default_factory=list)
    text: str = ""


def _md() -> MarkdownIt:
    from markdown_it import MarkdownIt

    return MarkdownIt("commonmark").enable("table")


def split_cells(line: str) -> list[str]:
    """Cells of one table source line, honouring ``\\|`` escapes the way GFM does."""
    s = line.strip()
    if s.startswith("|"):
        s = s[1:]
    if s.endswith("|") and not s.endswith("\\|"):
        s = s[:-1]
    cells, cur, i = [], "", 0
    while i < len(s):
        ch = s[i]
        if ch == "\\" and i + 1 < len(s):
            cur += s[i:i + 2]
            i += 2
            continue
        if ch == "|":
            cells.append(cur.strip())
            cur = ""
        else:
            cur += ch
        i += 1
    cells.append(cur.strip())
    return cells


def parse(text: str, name: str = "") -> Parsed:
    m = META_RE.search(text)
    doc, lang = (m.group("doc"), m.group("lang")) if m else (name or "unknown", "en")
    out = Parsed(doc, lang, text=text)
    tokens = _md().parse(text)
    lines = text.splitlines()
    section: str | None = None
    for i, tok in enumerate(tokens):
        if tok.type == "heading_open" and tok.tag in ("h2", "h3", "h4"):
            title = tokens[i + 1].content.strip()
            num = title.split(" ", 1)[0]
            if re.fullmatch(r"\d+(\.\d+)*", num):
                section = num
                out.sections.append(num)
        elif tok.type == "table_open" and tok.map:
            start, end = tok.map
            raw = [ln for ln in lines[start:end] if ln.strip()]
            if len(raw) < 2:
                continue
            header = split_cells(raw[0])
            rows = [split_cells(r) for r in raw[2:]]
            out.tables.append(Table(section, header, rows, start + 1))
    return out


def check_markdown(text: str, name: str = "") -> list[Problem]:
    """Table shapes, escaping (raw HTML, stray backticks), template/None/nan leaks, required sections."""
    p = parse(text, name)
    doc = p.doc
    problems: list[Problem] = []
    for tab in p.tables:
        for k, row in enumerate(tab.rows):
            for cell in row:
                if LEAK_CELL_RE.match(cell):
                    problems.append(Problem(doc, "value_leak", f"cell holds {cell.strip()!r} instead of a value or "
                                            "N/A with a reason", tab.line + 2 + k))
            if len(row) != len(tab.header):
                problems.append(Problem(doc, "table_cells", f"row has {len(row)} cells, header has {len(tab.header)} "
                                        "(an unescaped | in a value?)", tab.line + 2 + k))
    tokens = _md().parse(text)
    for tok in tokens:
        if tok.type == "html_block" and not all(OUR_COMMENT_RE.match(ln) for ln in tok.content.splitlines() if ln.strip()):
            problems.append(Problem(doc, "raw_html", f"raw HTML block: {tok.content.strip()[:60]!r}",
                                    tok.map[0] + 1 if tok.map else None))
        if tok.type in ("fence", "code_block"):
            continue
        line = tok.map[0] + 1 if tok.map else None
        for child in tok.children or []:
            if child.type == "html_inline" and not OUR_COMMENT_RE.match(child.content):
                problems.append(Problem(doc, "raw_html", f"raw HTML {child.content[:40]!r} (unescaped < or >?)", line))
            if child.type == "text":
                leak = LEAK_RE.search(child.content)
                if leak:
                    problems.append(Problem(doc, "value_leak", f"{(leak.group(1) or leak.group(2))!r} printed as a "
                                            f"value in {child.content[:60]!r}", line))
    in_fence = False
    for no, ln in enumerate(text.splitlines(), 1):
        if ln.lstrip().startswith("```"):
            in_fence = not in_fence
        if in_fence or ln.lstrip().startswith("```"):
            continue
        bare = CODE_SPAN_RE.sub("", ln.replace("\\\\", "").replace("\\`", ""))
        if "`" in bare:
            problems.append(Problem(doc, "stray_backtick", f"unmatched backtick (unescaped ` in a value?): {ln.strip()[:60]!r}", no))
        if TEMPLATE_RE.search(ln):
            problems.append(Problem(doc, "template_syntax", f"template syntax left in: {ln.strip()[:60]!r}", no))
    for sec in REQUIRED_SECTIONS.get(doc, []):
        if sec not in p.sections:
            problems.append(Problem(doc, "missing_section", f"required section §{sec} is missing"))
    if doc not in REQUIRED_SECTIONS:
        problems.append(Problem(doc, "unknown_document", "no `<!-- acc-agent doc=... lang=... -->` marker"))
    return problems


def check_integrity(text: str, name: str) -> list[Problem]:
    """Tamper evidence from the document alone: the footer's hashes, and placeholders in a complete document.

    The footer records the sha256 of what ``acc-agent report`` wrote outside the kept blocks, whole
    and per section; a number changed by hand shows as a section whose hash no longer matches, named
    by its heading's line. Text inside kept blocks is the engineer's and is not covered.
    """
    from acc_agent.render.deliverables import read_meta
    from acc_agent.render.files import edited_sections, placeholders

    problems: list[Problem] = []
    edited = edited_sections(text)
    if edited is None:
        problems.append(Problem(name, "no_footer", "no acc-agent footer (sha256 of the generated text): the document "
                                "was not written by acc-agent report, or its footer was removed; re-run acc-agent report",
                                len(text.splitlines()) or None))
    for line, heading in edited or []:
        where = f"section {heading.strip()!r}" if heading.strip() else "the text before the first section"
        problems.append(Problem(name, "hand_edited", f"{where} differs from what acc-agent report wrote (its sha256 "
                                "in the footer no longer matches): change the inputs and re-run acc-agent report, and "
                                "write by hand only inside the kept blocks", line))
    if read_meta(text).get("status") == "complete":
        for line, block in placeholders(text):
            problems.append(Problem(name, "placeholder", f"the document is marked complete but its hand-written block "
                                    f"{block!r} still holds the placeholder text", line))
    return problems


def _plot_links(folder: Path) -> dict[str, str]:
    """The plot links a re-rendering must print: the PNGs beside the documents."""
    return {png.stem: f"plots/{png.name}" for png in sorted((folder / "plots").glob("*.png"))}


def _documents(folder: Path) -> dict[str, str]:
    from acc_agent.render.deliverables import DOCUMENTS

    return {name: (folder / f"{name}.md").read_text(encoding="utf-8") for name in DOCUMENTS
            if (folder / f"{name}.md").is_file()}


def not_recomputable(folder: Path) -> list[Problem] | None:
    """Why the documents in ``folder`` cannot be re-computed (no problems when there are none), or None when they can.

    Re-computing needs the documents' own generation date and language, from their marker.
    """
    from acc_agent.render.deliverables import read_meta

    texts = _documents(folder)
    if not texts:
        return []
    first = read_meta(next(iter(texts.values())))
    if first.get("lang", "en") not in ("en", "zh") or not first.get("generated"):
        return [Problem(n, "not_recomputable", "the documents' marker has no generation date (written by an older "
                        "acc-agent); re-run acc-agent report once to make them re-computable") for n in texts]
    return None


def differences_from(folder: Path, wf: WorkflowResult) -> list[Problem]:
    """Re-render every document from ``wf`` (the workflow run on its inputs) and name each line that differs.

    The documents' own generation date, language and project-file path are used (from their
    marker), kept blocks and the machine-probe block are taken from the files, so what remains to
    differ is exactly generated text or numbers that no longer follow from mig.yaml and the
    artefacts — a hand edit, or inputs changed since the documents were written. Call it only
    when :func:`not_recomputable` returned None.
    """
    from acc_agent.render.deliverables import finish, read_meta, render_text
    from acc_agent.render.files import FOOTER_RE, LIVE_RE

    texts = _documents(folder)
    first = read_meta(next(iter(texts.values())))
    rendered = render_text(wf, first.get("lang", "en"), _plot_links(folder), generated=first.get("generated"),
                           config=first.get("config", "mig.yaml"))
    # finish() carries each file's kept blocks into the expected text (it reads the files, writes nothing)
    expected, _status, _left = finish(wf, {n: rendered[n] for n in texts}, folder)
    problems: list[Problem] = []
    for prep in expected:
        name = prep.path.stem
        actual = FOOTER_RE.sub("", texts[name])
        lives = {m.group("id"): m.group("body") for m in LIVE_RE.finditer(actual)}
        want = LIVE_RE.sub(partial(_with_body, lives), prep.text)
        problems += _line_diff(name, actual, want)
    return problems


def _with_body(bodies: dict[str, str], m: re.Match[str]) -> str:
    """A machine-probe block with the body the file holds (what that machine saw is not re-computed here)."""
    return m.group(1) + bodies.get(m.group("id"), m.group("body")) + m.group(4)


def _line_diff(name: str, actual: str, want: str, limit: int = 8) -> list[Problem]:
    """One problem per differing line of ``actual`` (its line number), at most ``limit``."""
    import difflib

    a, b = actual.rstrip("\n").splitlines(), want.rstrip("\n").splitlines()
    out: list[Problem] = []
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes():
        if tag == "equal":
            continue
        for k in range(max(i2 - i1, j2 - j1)):
            got = a[i1 + k] if i1 + k < i2 else "(nothing)"
            exp = b[j1 + k] if j1 + k < j2 else "(nothing)"
            got, exp = _around_difference(got, exp)
            out.append(Problem(name, "differs_from_inputs", f"the document says “{got}”, the inputs give “{exp}”",
                               min(i1 + k, len(a) - 1) + 1 if a else 1))
            if len(out) >= limit:
                return out
    return out


def _around_difference(got: str, exp: str, width: int = 90) -> tuple[str, str]:
    """Both lines cut to the stretch where they first differ, so a long table row shows its changed cell."""
    got, exp = got.strip(), exp.strip()
    k = next((i for i, (x, y) in enumerate(zip(got, exp, strict=False)) if x != y), min(len(got), len(exp)))
    start = max(0, k - 30)
    cut = lambda s: ("…" if start else "") + s[start:start + width] + ("…" if len(s) > start + width else "")  # noqa: E731
    return cut(got), cut(exp)


def user_strings(data: object) -> list[str]:
    """Every string in the project file that markdown would misread if printed raw (pipes, HTML, backticks)."""
    found: list[str] = []
    if isinstance(data, str):
        if any(ch in data for ch in "|<>`"):
            found.append(" ".join(data.splitlines()))
    elif isinstance(data, dict):
        for v in data.values():
            found += user_strings(v)
    elif isinstance(data, list | tuple):
        for v in data:
            found += user_strings(v)
    return found


def check_user_strings(text: str, name: str, strings: list[str]) -> list[Problem]:
    """A user string printed raw (outside a code span) means a template forgot to escape it."""
    problems: list[Problem] = []
    for no, ln in enumerate(text.splitlines(), 1):
        bare = CODE_SPAN_RE.sub("", ln)
        for s in strings:
            if s in bare:
                problems.append(Problem(name, "unescaped_user_string", f"{s[:40]!r} printed without escaping", no))
    return problems


def _fact(p: Parsed, section: str | None, label_key: str, col: int = 1) -> str | None:
    label = translate(label_key, p.lang)
    for tab in p.tables:
        if section is not None and tab.section != section:
            continue
        for row in tab.rows:
            if row and row[0] == label and len(row) > col:
                return row[col]
    return None


def _box_ticked(p: Parsed, key: str) -> bool | None:
    label = translate("v_" + key, p.lang)
    for ln in p.text.splitlines():
        m = re.match(r"- \[(?P<mark>[ xX])\] (?P<rest>.*)", ln)
        if m and m.group("rest").replace("\\", "").startswith(label):
            return m.group("mark") in "xX"
    return None


@dataclass
class MatrixRow:
    fact: str
    values: dict[str, str | None]
    agree: bool


def consistency(docs: dict[str, Parsed]) -> tuple[list[MatrixRow], list[Problem]]:
    """The document consistency matrix: each fact as every document states it, and whether they agree."""
    matrix: list[MatrixRow] = []
    problems: list[Problem] = []
    for fact, places in FACTS.items():
        values: dict[str, str | None] = {}
        for place in places:
            doc, section, key = place[0], place[1], place[2]
            col = place[3] if len(place) > 3 else 1
            if doc in docs:
                name = doc if doc not in values else f"{doc} §{section}"
                values[name] = _fact(docs[doc], section, key, col)
        present = {v for v in values.values()}
        agree = len(present) == 1 and None not in present
        matrix.append(MatrixRow(fact, values, agree))
        if not agree:
            shown = "; ".join(f"{d}: {v if v is not None else '(not found)'}" for d, v in values.items())
            problems.append(Problem("consistency", fact, f"documents disagree — {shown}"))
    ds: dict[str, str | None] = {}
    for doc, section in DATASET_TABLES:
        if doc in docs:
            tabs = [t for t in docs[doc].tables if t.section == section]
            ds[doc] = "\n".join(" | ".join(r) for r in tabs[0].rows) if tabs else None
    ds_agree = len(set(ds.values())) == 1 and None not in ds.values()
    matrix.append(MatrixRow("dataset_rows", {d: (f"{v.count(chr(10)) + 1} rows" if v else None) for d, v in ds.items()},
                            ds_agree))
    if not ds_agree:
        problems.append(Problem("consistency", "dataset_rows", "the §3.1 / §2.4 / §2.1 dataset tables differ: "
                                + ", ".join(f"{d} {'missing' if v is None else 'differs'}" for d, v in ds.items())))
    if "Compare" in docs and "Mig_report" in docs:
        c, r = docs["Compare"], docs["Mig_report"]
        perf = _fact(c, "1", "f_performance")
        ticked = _box_ticked(r, "performance")
        ok = ticked is not None and perf is not None and ticked == (perf == translate("met", c.lang))
        matrix.append(MatrixRow("performance_box", {"Compare": perf, "Mig_report": None if ticked is None else
                                                    ("[x]" if ticked else "[ ]")}, ok))
        if not ok:
            problems.append(Problem("consistency", "performance_box",
                                    f"Compare §1 says performance {perf!r} but Mig_report §6 box is "
                                    f"{'ticked' if ticked else 'not ticked' if ticked is not None else 'missing'}"))
        for box, row_key in (("golden", "r_golden"), ("short_run", "r_short_run")):
            met_cell = _fact(c, "3", row_key, 5)
            tick = _box_ticked(r, box)
            ok = tick is not None and met_cell is not None and tick == (met_cell == translate("yes", c.lang))
            matrix.append(MatrixRow(f"{box}_box", {"Compare": met_cell, "Mig_report": None if tick is None else
                                                   ("[x]" if tick else "[ ]")}, ok))
            if not ok:
                problems.append(Problem("consistency", f"{box}_box", f"Compare §3 says {met_cell!r} for {box} but the "
                                        f"Mig_report §6 box is {'ticked' if tick else 'not ticked' if tick is not None else 'missing'}"))
        acc = _fact(c, "1", "f_accuracy")
        golden = _box_ticked(r, "golden")
        ok = not (acc == translate("met", c.lang) and golden is not True)
        matrix.append(MatrixRow("accuracy_box", {"Compare": acc, "Mig_report": None if golden is None else
                                                 ("[x]" if golden else "[ ]")}, ok))
        if not ok:
            problems.append(Problem("consistency", "accuracy_box",
                                    "Compare §1 says accuracy met but the Mig_report §6 golden box is not ticked"))
    return matrix, problems


def check_folder(folder: Path, strings: list[str] | None = None) -> tuple[list[Problem], list[MatrixRow]]:
    """Every markdown check on each document in ``folder``, then the consistency matrix across them.

    ``strings`` are the user-supplied strings (from mig.yaml) that must appear escaped, if known.
    """
    from acc_agent.render.deliverables import DOCUMENTS

    problems: list[Problem] = []
    parsed: dict[str, Parsed] = {}
    for name in DOCUMENTS:
        path = folder / f"{name}.md"
        if not path.is_file():
            if name != "Summary":
                problems.append(Problem(name, "missing_document", f"{path} not found"))
            continue
        text = path.read_text(encoding="utf-8")
        problems += check_markdown(text, name)
        problems += check_integrity(text, name)
        if strings:
            problems += check_user_strings(text, name, strings)
        parsed[name] = parse(text, name)
    langs = {p.lang for p in parsed.values()}
    if len(langs) > 1:
        problems.append(Problem("consistency", "language", f"documents mix languages: {sorted(langs)}"))
    matrix, cons = consistency(parsed)
    return problems + cons, matrix
