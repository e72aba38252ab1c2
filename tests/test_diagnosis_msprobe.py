"""Diagnosis on REAL msprobe dumps with one known injected fault each (tests/msprobe_cases/).

Each case is a golden run and a target run (and a bench run for some) dumped by msprobe itself on
the CPU, with a fault placed inside exactly one dumped call (or none, or everywhere) and the right
answer checked against the dumps when they are generated. Here ``acc-agent compare-dumps ... --json``
must name that call, its category, its pass, its rank and the argument the fault came through.
Cases are generated once and cached (``ACC_AGENT_CASE_CACHE``, default
``~/.cache/acc-agent/msprobe-cases``); a cold run takes minutes, a cached one seconds.
"""

from __future__ import annotations

import importlib.util
import json
import re
import sys
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("torch")
if importlib.util.find_spec("msprobe") is None:
    pytest.skip("mindstudio-probe (msprobe) is not installed", allow_module_level=True)

if str(Path(__file__).resolve().parent) not in sys.path:  # --import-mode=importlib does not add tests/
    sys.path.insert(0, str(Path(__file__).resolve().parent))

from msprobe_cases import CASE_NAMES, Case  # noqa: E402
from msprobe_cases.fixtures import msprobe_cases  # noqa: E402,F401 - the session fixture
from msprobe_cases.specs import SPECS  # noqa: E402

from acc_agent.cli import main  # noqa: E402
from acc_agent.render.tooltext import english_words, to_zh  # noqa: E402

pytestmark = pytest.mark.slow

#: (case, compare with its bench?): a case with a bench is compared both ways.
RUNS = [(name, True) for name in CASE_NAMES if "bench" in SPECS[name].sides] + [
    (name, False) for name in CASE_NAMES
]


def _run_id(run: tuple[str, bool]) -> str:
    name, with_bench = run
    if "bench" not in SPECS[name].sides:
        return name
    return f"{name}-bench" if with_bench else f"{name}-nobench"


def _case(cases: dict[str, Case | BaseException], name: str) -> Case:
    case = cases[name]
    if isinstance(case, BaseException):
        pytest.fail(f"generating case {name} failed (a generator bug, not a diagnosis one): "
                    f"{type(case).__name__}: {case}")
    return case


def _compare(case: Case, with_bench: bool, capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    args = ["compare-dumps", str(case.golden), str(case.target)]
    if with_bench:
        assert case.bench is not None
        args += ["--bench", str(case.bench)]
    args.append("--json")
    capsys.readouterr()
    code: Any = 0
    try:
        main(args)
    except SystemExit as exc:
        code = exc.code
    return int(code or 0), capsys.readouterr().out


def _parse(case: Case, code: int, out: str) -> dict[str, Any]:
    try:
        doc = json.loads(out)
    except json.JSONDecodeError as exc:
        pytest.fail(f"{case.name}: stdout is not JSON ({exc}); first 500 chars:\n{out[:500]}")
    assert isinstance(doc, dict), f"{case.name}: JSON is not an object"
    assert "error" not in doc, f"{case.name}: compare-dumps refused the dumps: {doc.get('error')}"
    assert code in (0, 1), f"{case.name}: exit code {code} (0 pass / 1 fail expected)"
    return doc


def _argument_matches(got: str | None, expected: str) -> bool:
    """``input.1`` matches ``input.1`` or ``Functional.linear.0.forward.input.1``, not ``input.10``/``input.1.0``."""
    if not got:
        return False
    return re.search(rf"(?:^|\.){re.escape(expected)}(?!\w)(?!\.\d)", got) is not None


def _rank_matches(got: str | None, expected: str) -> bool:
    """``rank1`` matches ``rank1`` and rank keys with a step (``step0/rank1``)."""
    return bool(got) and (got == expected or str(got).endswith("/" + expected))


def _report(case: Case, doc: dict[str, Any]) -> str:
    diag = doc.get("diagnosis") or {}
    first = doc.get("first_divergence")
    first_text = json.dumps({k: first.get(k) for k in ("module", "name", "rank", "argument", "reason")}
                            if first else None)
    return (f"\n  case: {case.description}\n  summary: {doc.get('summary')}\n"
            f"  diagnosis: {diag.get('category')} ({diag.get('pass_walked')}) — {diag.get('explanation')}\n"
            f"  first_divergence: {first_text}")


@pytest.mark.parametrize("run", RUNS, ids=_run_id)
def test_compare_dumps_gives_json(run: tuple[str, bool], msprobe_cases: dict[str, Case | BaseException],  # noqa: F811
                                  capsys: pytest.CaptureFixture[str]) -> None:
    """Every case: no crash, exit 0/1, valid JSON with rows and a diagnosis."""
    name, with_bench = run
    case = _case(msprobe_cases, name)
    doc = _parse(case, *_compare(case, with_bench, capsys))
    assert doc.get("rows"), f"{name}: no compared rows{_report(case, doc)}"
    assert doc.get("diagnosis") is not None, f"{name}: no diagnosis{_report(case, doc)}"
    # a Chinese report translates the diagnosis's sentences by pattern: every one of them must have its pattern
    diag, first = doc["diagnosis"], doc.get("first_divergence") or {}
    texts = [diag["explanation"], *diag["next_actions"], *([first["reason"]] if first.get("reason") else [])]
    untranslated = {t: english_words(to_zh(t)) for t in texts if english_words(to_zh(t))}
    assert not untranslated, f"{name}: English left in the Chinese report: {untranslated}"


@pytest.mark.parametrize("run", RUNS, ids=_run_id)
def test_diagnosis_finds_injected_fault(run: tuple[str, bool], msprobe_cases: dict[str, Case | BaseException],  # noqa: F811
                                       capsys: pytest.CaptureFixture[str]) -> None:
    """The diagnosis names the call at fault, its category, pass, rank and argument."""
    name, with_bench = run
    case = _case(msprobe_cases, name)
    code, out = _compare(case, with_bench, capsys)
    doc = _parse(case, code, out)
    diag = doc.get("diagnosis") or {}
    first = doc.get("first_divergence")
    problems: list[str] = []
    if diag.get("category") != case.category:
        problems.append(f"category {diag.get('category')!r}, expected {case.category!r}")
    if case.first_op is None and not case.also_accept:
        if first is not None:
            problems.append(f"first_divergence {first.get('module')!r}, expected none")
    else:
        got = first.get("module") if first else None
        if got not in case.accepted_first_ops:
            problems.append(f"first_divergence.module {got!r}, expected "
                            + " or ".join(repr(a) for a in case.accepted_first_ops))
    if case.rank and not _rank_matches((first or {}).get("rank"), case.rank):
        problems.append(f"first_divergence.rank {(first or {}).get('rank')!r}, expected {case.rank!r}")
    spec = SPECS[name]
    if case.rank and spec.world_size > 1:
        # every other rank is reported as the dumps show it: clean, or receiving the fault through a collective
        expected_other = "via_collective" if spec.other_rank_first_diff else "clean"
        for finding in diag.get("ranks") or []:
            if not _rank_matches(finding.get("rank"), case.rank) and finding.get("status") != expected_other:
                problems.append(f"diagnosis.ranks: {finding.get('rank')} is {finding.get('status')!r}, expected "
                                f"{expected_other!r}")
        if len(diag.get("ranks") or []) != spec.world_size:
            problems.append(f"diagnosis.ranks lists {len(diag.get('ranks') or [])} ranks, expected {spec.world_size}")
    if case.step is not None and (first or {}).get("step") != case.step:
        problems.append(f"first_divergence.step {(first or {}).get('step')!r}, expected {case.step!r}")
    if case.pass_ and diag.get("pass_walked") != case.pass_:
        problems.append(f"diagnosis.pass_walked {diag.get('pass_walked')!r}, expected {case.pass_!r}")
    if case.argument and not _argument_matches((first or {}).get("argument"), case.argument):
        problems.append(f"first_divergence.argument {(first or {}).get('argument')!r}, expected {case.argument!r}")
    if SPECS[name].clean and code != 0:
        problems.append(f"exit code {code} on a clean run: every difference is rounding, the verdict must pass")
    if with_bench and diag.get("judged_against") != "bench":
        problems.append(f"diagnosis.judged_against {diag.get('judged_against')!r} with --bench, expected 'bench'")
    assert not problems, f"{name}: " + "; ".join(problems) + _report(case, doc)
