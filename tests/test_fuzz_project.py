"""mig.yaml under hostile input: any YAML, alias bombs, python tags, deep nesting, wrong types —
and hostile user strings rendered through the real renderer.

Parsing must give a Project or an AccAgentError naming the file with a fix, in bounded time and
memory. Rendering a project whose names, paths and notes hold Jinja syntax, HTML, markdown table
syntax, line breaks and terminal escapes must show them as text: no template evaluation, no raw
HTML in the HTML the markdown turns into, no table row split or widened.
"""

from __future__ import annotations

import itertools
import re
import shutil
import time
from pathlib import Path
from typing import Any

import pytest
import yaml
from fuzzing import examples, outcome
from hypothesis import given
from hypothesis import strategies as st
from markdown_it import MarkdownIt

from acc_agent.errors import AccAgentError
from acc_agent.io.project_file import load_project, parse_project
from acc_agent.models.project import Project
from acc_agent.registry import all_tools

DEMO = Path(__file__).resolve().parents[1] / "samples" / "demo_project"

_SCALARS = st.one_of(st.none(), st.booleans(), st.integers(-(2**70), 2**70), st.floats(), st.text(max_size=10))
_YAML_VALUES = st.recursive(_SCALARS, lambda inner: st.one_of(st.lists(inner, max_size=3),
                                                              st.dictionaries(st.text(max_size=8), inner, max_size=3)),
                            max_leaves=15)
_KNOWN = {
    "project": st.one_of(st.fixed_dictionaries({"name": _SCALARS}, optional={"date": _SCALARS, "owner": _SCALARS}),
                         _YAML_VALUES),
    "model": st.one_of(st.fixed_dictionaries({"name": _SCALARS}, optional={
        "framework": st.sampled_from(["pytorch", "mindspore", "jax", 3]), "batch_size": _SCALARS,
        "target_precision": st.sampled_from(["fp16", "bf16", "fp8", None]), "io_contract": _YAML_VALUES}), _YAML_VALUES),
    "thresholds": st.fixed_dictionaries({}, optional={"short_run_band": _YAML_VALUES, "short_run_window": _SCALARS,
                                                      "rtol": _SCALARS, "flat_steps_limit": _SCALARS}),
    "datasets": st.lists(st.fixed_dictionaries({"purpose": st.sampled_from(["short_run", "smoke", "x", 1]),
                                                "dataset": _SCALARS}), max_size=2) | _YAML_VALUES,
    "artefacts": st.fixed_dictionaries({}, optional={"dumps": _YAML_VALUES, "golden_dump": _SCALARS,
                                                     "baseline_log": _SCALARS, "results": _YAML_VALUES}),
    "performance": st.fixed_dictionaries({}, optional={"batch_sizes": _YAML_VALUES, "warmup": _SCALARS}),
    "attested": st.dictionaries(st.sampled_from(["code_migration", "npu_load", "other"]),
                                st.fixed_dictionaries({"done": _SCALARS}, optional={"ref": _SCALARS}), max_size=2),
    "changes": _YAML_VALUES,
}


@st.composite
def project_texts(draw: st.DrawFn) -> str:
    """mig.yaml text: the known sections with wrong types here and there, unknown keys, or any YAML."""
    if draw(st.integers(0, 5)) == 0:
        return draw(st.text(max_size=200))
    doc = {k: draw(v) for k, v in _KNOWN.items() if draw(st.booleans())}
    if draw(st.booleans()):
        doc.update(draw(st.dictionaries(st.text(max_size=6), _YAML_VALUES, max_size=2)))
    return yaml.safe_dump(doc, allow_unicode=True)


@examples(60)
@given(text=project_texts())
def test_any_project_yaml(text: str) -> None:
    got = outcome("mig.yaml", lambda: parse_project(text, source="mig.yaml"), names=("mig.yaml",), peak_mib=64)
    assert isinstance(got, (Project, AccAgentError))


def _bomb(levels: int = 9, fan: int = 9, tail: str = "") -> str:
    """A "billion laughs": each anchor repeats the previous one ``fan`` times (fan**levels values)."""
    lines = ["a0: &a0 [" + ", ".join(["lol"] * fan) + "]"]
    lines += [f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * fan) + "]" for i in range(1, levels)]
    return "\n".join(lines) + "\n" + tail


HOSTILE_YAML = {
    "alias_bomb": _bomb(),
    "alias_bomb_in_a_field": _bomb(tail="project: {name: x}\nmodel: {name: y}\nchanges: *a8\n"),
    "alias_bomb_in_a_list": _bomb(tail="project: {name: x}\nmodel: {name: y}\nrisks: [*a8, *a8]\n"),
    "alias_bomb_as_key_line": _bomb(8, 12, "project: {name: *a7}\nmodel: {name: y}\n"),
    "python_object": "!!python/object/apply:os.system ['touch PWNED']\n",
    "python_name": "project: !!python/name:os.system\nmodel: {name: y}\n",
    "python_module": "project: !!python/module:os\n",
    "deep_flow": "a: " + "[" * 20000 + "]" * 20000 + "\n",
    "deep_block": "".join("  " * i + f"k{i}:\n" for i in range(3000)),
    "wrong_types": "project: 5\nmodel: [1, 2]\ndatasets: {a: 1}\nthresholds: {short_run_band: [0.9, 0.1], rtol: -1}\n",
    "tabs": "project:\n\tname: x\n",
    "nul": "project: {name: x}\x00\n",
    "two_documents": "project: {name: x}\n---\nmodel: {name: y}\n",
    "huge_number": "project: {name: x}\nmodel: {name: y, batch_size: 1" + "0" * 5000 + "}\n",
    "merge_key": "b: &b {name: x}\nproject: {<<: *b}\nmodel: {<<: *b}\n",
    "undefined_alias": "project: *nope\n",
    "not_a_mapping": "- 1\n- 2\n",
}


@pytest.mark.parametrize("case", sorted(HOSTILE_YAML))
def test_hostile_project_yaml_is_a_structured_error(case: str, tmp_path: Path) -> None:
    path = tmp_path / "mig.yaml"
    path.write_text(HOSTILE_YAML[case], encoding="utf-8")
    start = time.monotonic()
    got = outcome("mig.yaml hostile", lambda: load_project(path), names=("mig.yaml",), peak_mib=64)
    assert time.monotonic() - start < 5, f"{case} took {time.monotonic() - start:.1f} s"
    assert isinstance(got, AccAgentError) or case == "merge_key", got
    assert not (tmp_path / "PWNED").exists() and not Path("PWNED").exists()


@pytest.mark.parametrize("case", ["alias_bomb", "deep_flow", "python_object"])
def test_hostile_yaml_in_the_other_yaml_readers(case: str, tmp_path: Path) -> None:
    """The mapping file of compare-dumps and a YAML run config go through the same bounded loader."""
    yml = tmp_path / "file.yaml"
    yml.write_text(HOSTILE_YAML[case], encoding="utf-8")
    tools = all_tools()
    dumps = tmp_path / "d"
    dumps.mkdir()
    import numpy as np

    np.save(dumps / "t.npy", np.ones(3, np.float32))
    args = {"golden": str(dumps), "target": str(dumps), "mapping": str(yml), "workers": 1}
    err = outcome("mapping yaml", lambda: tools["compare_dumps"].run(args), names=("file.yaml",), peak_mib=64)
    assert isinstance(err, AccAgentError), err
    got = outcome("config yaml", lambda: tools["compare_run_configs"].run({"baseline": str(yml), "target": str(yml)}),
                  names=("file.yaml",), peak_mib=64)
    assert isinstance(got, AccAgentError), got
    assert not (tmp_path / "PWNED").exists()


def test_a_legitimate_alias_still_works() -> None:
    text = "defaults: &d {dataset: d1, subset: s}\nproject: {name: x}\nmodel: {name: y}\n"
    text += "datasets:\n  - {<<: *d, purpose: smoke}\n  - {<<: *d, purpose: golden}\n"
    text = text.replace("defaults: &d", "x-defaults: &d")
    with pytest.raises(AccAgentError, match="x-defaults"):  # an unknown top-level key, not a refusal of the alias
        parse_project(text)
    project = parse_project(text.replace("x-defaults: &d {dataset: d1, subset: s}\n", "")
                            .replace("{<<: *d, ", "{dataset: d1, subset: s, "))
    assert [d.purpose for d in project.datasets] == ["smoke", "golden"]


# --------------------------------------------------------------------------- rendering hostile strings

#: Each payload is caught by a check below if the renderer lets it through.
PAYLOADS = [
    "{{ 'SSTI' ~ 'EVAL' }}",  # evaluated, it prints SSTIEVAL
    "{% if true %}IF{{ 'EVAL' }}{% endif %}",
    "{# comment #}",
    "<script>alert('xss')</script>",
    "<img src=x onerror=alert(1)>",
    "<b>bold</b> & &amp; &lt;",
    "[click](javascript:alert(1))",
    "![img](http://evil/x.png)",
    "| injected | cells | here |",
    "line one\n| forged | row |\n\n# Forged heading",
    "back`tick``s",
    "\\| escaped pipe",
    "**bold** _em_ ~~strike~~ #not-a-heading",
    "\x1b[31mred\x1b[0m\x07\u202eevil",
    "=HYPERLINK(\"http://evil\",\"x\")",
    "\r\n---\r\n",
    "<!-- open comment",
    "😀 中文 ünïcödé",
]
_HOSTILE_TEXT = st.one_of(st.sampled_from(PAYLOADS), st.lists(st.sampled_from(PAYLOADS), min_size=2, max_size=3).map(" ".join),
                          st.text(min_size=1, max_size=30).map(lambda t: t + " <i>x</i> | y"))


def _hostile_project(folder: Path, strings: list[str]) -> Path:
    """The demo project, its user-written strings (names, notes, paths, rows) replaced by hostile ones."""
    if folder.exists():
        shutil.rmtree(folder)
    shutil.copytree(DEMO, folder)
    doc: dict[str, Any] = yaml.safe_load((folder / "mig.yaml").read_text(encoding="utf-8"))
    pick = itertools.cycle(strings)
    doc["project"].update(name=next(pick), owner=next(pick), branch=next(pick), repository=next(pick))
    doc["model"].update(name=next(pick), chip=next(pick), baseline_hardware=next(pick), baseline_framework=next(pick))
    doc["model"]["io_contract"] = [{"name": next(pick), "shape": next(pick), "dtype": next(pick)}]
    doc["entry"].update(train=next(pick), inference=next(pick))
    doc["entry"]["parameters"] = [{"parameter": next(pick), "meaning": next(pick), "default": next(pick)}]
    for row in doc["datasets"]:
        row.update(dataset=next(pick), subset=next(pick), notes=next(pick))
    doc["performance"].update(reason=next(pick), reproducibility=next(pick))
    doc["changes"] = [{"area": next(pick), "change": next(pick)} for _ in range(2)]
    doc["risks"] = [{"risk": next(pick), "level": next(pick), "mitigation": next(pick)}]
    doc["problems"] = [{"problem": next(pick), "cause": next(pick), "fix": next(pick)}]
    doc["attested"]["code_migration"]["ref"] = next(pick)
    doc["artefacts"]["nvidia_smi"] = "env/" + next(pick).replace("\x00", "") + ".txt"  # a hostile, missing path
    (folder / "mig.yaml").write_text(yaml.safe_dump(doc, allow_unicode=True), encoding="utf-8")
    return folder / "mig.yaml"


_PIPE = re.compile(r"(?<!\\)\|")


def _check_document(name: str, text: str) -> None:
    """The checks every rendered document must pass, whatever the strings held."""
    assert "SSTIEVAL" not in text and "IFEVAL" not in text, f"{name}: user text was evaluated as a template"
    assert "\x1b" not in text and "\u202e" not in text and "\x07" not in text, f"{name}: control characters kept"
    html = MarkdownIt("commonmark", {"html": True}).enable("table").render(text)
    for tag in ("<script", "<img src=x", "<b>bold", "<i>x", "<!-- open"):
        assert tag not in html, f"{name}: raw HTML {tag!r} reaches the HTML output"
    # markdown-it refuses javascript: links itself; a viewer may not, so links are looked for with
    # that check off: no link or image a user string wrote may come out (code spans are text).
    permissive = MarkdownIt("commonmark", {"html": True}).enable("table")
    permissive.validateLink = lambda url: True
    for block in permissive.parse(text):
        for tok in block.children or ():
            target = str(tok.attrGet("href") or tok.attrGet("src") or "")
            assert not (tok.type in ("link_open", "image") and ("javascript:" in target or "evil" in target)), (
                f"{name}: a user string formed a link or image: {target}")
    assert "<h1>Forged heading" not in html, f"{name}: a line break in a user string started a heading"
    lines = text.split("\n")
    i = 0
    while i < len(lines):
        if not lines[i].startswith("|"):
            i += 1
            continue
        block = []
        while i < len(lines) and lines[i].startswith("|"):
            block.append(lines[i])
            i += 1
        assert len(block) >= 2 and re.fullmatch(r"\|(\s*:?-+:?\s*\|)+", block[1].strip()), (
            f"{name}: a table without its header line (a row was split off): {block[:2]}")
        width = len(_PIPE.findall(block[0]))
        for row in block[2:]:
            assert len(_PIPE.findall(row)) == width, f"{name}: table row has another cell count:\n{block[0]}\n{row}"


def _render(config: Path, out: Path, lang: str) -> dict[str, str]:
    spec = all_tools()["render_deliverables"]
    result = outcome("render", lambda: spec.run({"config": str(config), "out": str(out), "lang": lang, "plots": False}))
    assert not isinstance(result, AccAgentError), result
    docs = {p.name: p.read_text(encoding="utf-8") for p in sorted(out.glob("*.md"))}
    assert docs, "nothing rendered"
    return docs


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_every_payload_in_every_field_is_rendered_as_text(tmp_path: Path, lang: str) -> None:
    config = _hostile_project(tmp_path / "p", PAYLOADS)
    docs = _render(config, tmp_path / "out", lang)
    for name, text in docs.items():
        _check_document(name, text)
    shown = "\n".join(docs.values())
    for word in ("SSTI", "alert", "injected", "Forged heading", "HYPERLINK", "中文"):
        assert word in shown, f"{word!r}: the hostile strings were not rendered at all, so nothing was checked"


@examples(3)
@given(strings=st.lists(_HOSTILE_TEXT, min_size=1, max_size=6), lang=st.sampled_from(["en", "zh"]))
def test_hostile_strings_rendered(tmp_path: Path, strings: list[str], lang: str) -> None:
    config = _hostile_project(tmp_path / "p", strings)
    for name, text in _render(config, tmp_path / "out", lang).items():
        _check_document(name, text)
