"""Mig_report §7.1 rows for what the tools found (failing verdicts), beside the ones logged by hand.

A report whose comparison found an operator fault must not say "no problems": the fault, the
command that found it, its cause and the first next action are the log entry, marked as found by
the tool (what was tried stays for the engineer to fill in). The environment counts only when the
recorded target environment fails, never the machine that happened to run the report.
"""

from __future__ import annotations

from acc_agent.models.compare import CompareDumpsOutput, CompareTensorsOutput
from acc_agent.models.performance import ComparePerformanceOutput
from acc_agent.models.workflow import SkillResult, WorkflowResult
from acc_agent.render.cells import Ctx, Row
from acc_agent.render.env import code
from acc_agent.render.i18n import word
from acc_agent.render.views.golden import tensors_summary
from acc_agent.render.views.performance import compare_sentence

#: Slots whose failing verdict is a problem-log entry, in the order the log lists them.
_SLOTS = ("golden", "dumps", "short_run", "loss_curves", "performance")


def _finding(c: Ctx, r: SkillResult) -> tuple[str, str, list[str]]:
    """What failed (the error column), its cause and the next actions, from the slot's own output."""
    dumps = r.output_as(CompareDumpsOutput)
    if dumps is not None:
        diag = dumps.diagnosis
        fd = dumps.first_divergence
        error = fd.name if fd is not None and fd.name else c.tt(dumps.summary)
        cause = (f"{word('category', diag.category, c.lang)}: {c.tt(diag.explanation)}" if diag is not None
                 else c.t("pf_see_section"))
        return error, cause, diag.next_actions if diag is not None else []
    golden = r.output_as(CompareTensorsOutput)
    if golden is not None:
        return tensors_summary(c, golden), c.t("pf_see_section"), []
    performance = r.output_as(ComparePerformanceOutput)
    if performance is not None:
        return compare_sentence(c, performance), c.t("pf_see_section"), []
    return c.tt(r.output.summary if r.output is not None else ""), c.t("pf_see_section"), []


def found_problem_rows(c: Ctx, wf: WorkflowResult, generated: str, recorded_failing: list[str]) -> list[Row]:
    rows: list[Row] = []
    env = wf.get("environment")
    if env.ok and recorded_failing:
        rows.append([c.val(generated), c.val(c.t("pf_environment")), code(env.command),
                     c.val(", ".join(recorded_failing)), c.val(c.t("pf_found_by_tool")),
                     c.val(c.t("pf_see_section")), c.val("—")])
    for slot in _SLOTS:
        r = wf.get(slot)
        if r.output is None or not r.ok or not r.output.is_failure():
            continue
        error, cause, actions = _finding(c, r)
        rows.append([c.val(generated), c.val(c.t(f"pf_{slot}")), code(r.command), c.val(error),
                     c.val(c.t("pf_found_by_tool")), c.val(cause), c.val(c.tt(actions[0]) if actions else "—")])
    return rows
