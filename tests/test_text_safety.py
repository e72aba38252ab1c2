"""text_safety: CSV formula neutralising, markdown escaping, terminal cleaning, and their use in output."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from acc_agent.app.workflow import run_workflow
from acc_agent.cli import main
from acc_agent.io.project_file import load_project
from acc_agent.render.checks import CODE_SPAN_RE, check_markdown
from acc_agent.render.deliverables import render_text
from acc_agent.text_safety import markdown_cell, spreadsheet_cell, terminal_lines, terminal_text

#: A tensor name that tries every medium at once: a spreadsheet formula, a table-cell break, HTML,
#: a code span, an ANSI colour and screen clear, a forged output line and a bidi override (no
#: slash: it must stay a legal file name).
HOSTILE = "=HYPERLINK(\"evil.example\")|<img src=x onerror=alert(1)>`tick`\x1b[31m\x1b[2J\n[pass] ok\u202egnp"


@pytest.mark.parametrize("text", ["=1+1", "+SUM(A1)", "-2+3", "@cmd", "\tx", "\rx", "=HYPERLINK(\"http://x\")",
                                  "-cmd|' /C calc'!A0", "＝1+1"])
def test_formula_starts_are_neutralised(text: str) -> None:
    assert spreadsheet_cell(text) == "'" + text


@pytest.mark.parametrize("text", ["-1.5e-3", "+2", "-0", "-.5", "1e10", "-inf", "nan", "-", "", "abc",
                                  "Functional.add.0.forward.output.0", "a=b", "N/A"])
def test_numbers_and_plain_text_are_kept(text: str) -> None:
    assert spreadsheet_cell(text) == text


def test_terminal_text_strips_escapes_and_controls() -> None:
    assert terminal_text("a\x1b[31mred\x1b[0m b") == "ared b"
    assert terminal_text("t\x1b]0;title\x07x\x1b]8;;http://x\x1b\\y") == "txy"  # OSC: window title, hyperlink
    assert terminal_text("one\ntwo\r\nthree\rfour\tfive\u2028six") == "one two three four five six"
    assert terminal_text("nul\x00bel\x07del\x7fc1\x9b") == "nulbeldelc1"
    assert terminal_text("abc\u202edcba\u2066x\u2069") == "abcdcbax"
    assert terminal_text("中文 ✓ 👍🏽 e\u0301") == "中文 ✓ 👍🏽 e\u0301"  # ordinary text is untouched
    assert terminal_lines(["[fail] x", "  row " + HOSTILE]).count("\n") == 1


def test_markdown_cell_escapes_every_markdown_and_html_special() -> None:
    out = markdown_cell("a | b <script>alert(1)</script> & `c` [l](http://e) *e* _u_ # ~s~ \\ x\ny\x1b[1m")
    assert out == ("a \\| b &lt;script&gt;alert(1)&lt;/script&gt; &amp; \\`c\\` \\[l\\](http://e) \\*e\\* \\_u\\_ "
                   "\\# \\~s\\~ \\\\ x y")
    assert markdown_cell("&lt;b&gt;") == "&amp;lt;b&amp;gt;"  # an entity in the input stays literal text
    assert "\n" not in markdown_cell(HOSTILE) and "\x1b" not in markdown_cell(HOSTILE)


def _dump(root: Path, name: str, arr: np.ndarray) -> Path:
    data_dir = root / "dump_tensor_data"
    data_dir.mkdir(parents=True)
    np.save(data_dir / f"{name}.npy", arr)
    leaf = {"type": "torch.Tensor", "dtype": "torch.float32", "shape": list(arr.shape), "data_name": f"{name}.npy"}
    (root / "dump.json").write_text(json.dumps({"task": "tensor", "level": "L1", "framework": "pytorch",
                                                "data": {"Functional.x.0.forward": {"output": [leaf]}}}))
    return root


@pytest.fixture()
def hostile_pair(tmp_path: Path) -> tuple[Path, Path]:
    """Dumps whose one tensor carries the HOSTILE name (a legal file name on Linux)."""
    name = f"Functional.{HOSTILE}.0.forward.output.0"
    a = np.linspace(-1, 1, 32, dtype=np.float32).reshape(4, 8)
    b = a.copy()
    b[0, 0] = 5.0  # one diverging row, so the name shows up in every section that lists rows
    return _dump(tmp_path / "golden", name, a), _dump(tmp_path / "target", name, b)


def test_rendered_report_escapes_a_hostile_tensor_name(hostile_pair: tuple[Path, Path], tmp_path: Path) -> None:
    g, t = hostile_pair
    (tmp_path / "mig.yaml").write_text(
        "project: {name: \"x<b>|y\", date: \"2025-01-01\"}\nmodel: {name: m}\n"
        f"artefacts: {{golden_dump: {g}, target_dump: {t}, gpu_available: false}}\n", encoding="utf-8")
    wf = run_workflow(load_project(tmp_path / "mig.yaml"))
    assert wf.get("dumps").ok, wf.get("dumps").reason
    compare = render_text(wf, "en")["Compare"]
    assert "Functional.=HYPERLINK" in compare  # the row is there, in a code span
    assert check_markdown(compare, "Compare") == []  # no raw HTML, no broken table, no stray backtick
    assert "\x1b" not in compare and "\u202e" not in compare
    outside_code = [CODE_SPAN_RE.sub("", ln) for ln in compare.splitlines()]
    assert not any("<img" in ln for ln in outside_code)  # in a code span it is literal text; elsewhere escaped
    assert "&lt;img src=x onerror=alert(1)&gt;" in compare
    assert "x&lt;b&gt;\\|y" in compare  # the project name, escaped as a table cell


def test_terminal_output_carries_no_escape_or_forged_line(hostile_pair: tuple[Path, Path],
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    g, t = hostile_pair
    for argv in (["compare-tensors", str(g / "dump_tensor_data"), str(t / "dump_tensor_data")],
                 ["detect-nondeterminism", str(g), str(t)]):
        with pytest.raises(SystemExit):
            main(argv)
        out: Any = capsys.readouterr().out
        assert "HYPERLINK" in out, out
        assert "\x1b" not in out and "\u202e" not in out
        assert not any(line.startswith("[pass] ok") for line in out.splitlines())
