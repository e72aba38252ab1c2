"""Where the baseline comes from (Mig_Readme §2.6, Compare §2.1, Mig_report §2, Summary).

The rule: a complete project training log is quoted (no rerun); otherwise the user measures the
GPU baseline with the Mig_Readme §2.6 commands; with no GPU either, there is no comparison (N/A
with the reason) rather than a misleading one.
"""

from __future__ import annotations

from dataclasses import dataclass

from markupsafe import Markup

from acc_agent.models.baseline import BaselineSource, SelectBaselineOutput
from acc_agent.models.project import Project
from acc_agent.models.workflow import SkillResult, WorkflowResult
from acc_agent.render.cells import Ctx, Row
from acc_agent.render.env import code


@dataclass(frozen=True)
class BaselineView:
    code: BaselineSource
    label: Markup
    log: Markup
    reason: Markup
    quoted: bool  # a recorded log is quoted: no baseline run needed
    rows26: list[Row]  # Mig_Readme §2.6: how the baseline side is run


def baseline_view(c: Ctx, wf: WorkflowResult) -> BaselineView:
    """select_baseline's answer, else the same rule applied to mig.yaml."""
    p = wf.project
    r = wf.get("baseline")
    a = p.artefacts
    out = r.output_as(SelectBaselineOutput)
    source: BaselineSource
    if out is not None:
        source = out.source
        log = out.log_path or ""
        base = f"{p.base_dir}/"
        if log.startswith(base):
            log = log[len(base):]
        reason = c.tt(out.reason or out.summary or "")
        origin = r.command
    else:
        log_path = p.resolve(a.baseline_log)
        if log_path is not None and log_path.is_file():
            source = "cpu_log" if a.baseline_log_is_cpu else "project_log"
            log = a.baseline_log
            reason = c.t("b_quoted")
        elif a.gpu_available:
            source, log = "gpu_measured", ""
            reason = c.t("b_gpu")
        else:
            source, log = "na", ""
            reason = c.t("b_na")
        reason += " (" + c.t("b_not_run").format(why=c.why(r)) + ")"
        origin = "mig.yaml"
    return BaselineView(
        code=source,
        label=c.vw("baseline", source),
        log=code(log) if log else c.na(c.t("na_no_baseline_log") if source != "project_log" else c.t("na_log_path")),
        reason=c.val(reason, origin),
        quoted=source in ("project_log", "cpu_log"),
        rows26=_interface_rows(c, p, r, out),
    )


def _interface_rows(c: Ctx, p: Project, r: SkillResult, out: SelectBaselineOutput | None) -> list[Row]:
    """Mig_Readme §2.6 rows: the commands in mig.yaml, else the ones select_baseline built, else a gap."""
    e = p.entry
    batch = str(p.model.batch_size) if p.model.batch_size else c.t("sc_as_target")
    weights = e.checkpoint or c.t("sc_as_target")
    if e.baseline_inference or e.baseline_train:
        na = c.na(c.t("na_no_baseline_entry"))
        return [
            [c.word("sc_gpu_infer"), "GPU", code(e.baseline_inference) if e.baseline_inference else na,
             c.t("sc_params_infer").format(batch=batch, weights=weights), c.word("p_inference_acceptance"),
             c.word("sc_note_infer")],
            [c.word("sc_gpu_train"), "GPU", code(e.baseline_train) if e.baseline_train else na,
             c.t("sc_params_train").format(batch=batch), c.word("p_short_run"), c.word("sc_note_train")],
            [c.word("sc_cpu"), "CPU", c.word("sc_cpu_entry"), "batch 1", c.word("p_smoke"), c.word("sc_note_cpu")],
        ]
    rows: list[Row] = [[c.val(c.tt(row.scenario)), c.val(row.device), code(row.command), c.val(row.key_parameters),
                        c.val(c.tt(row.aligns_with)), c.val(c.tt(row.notes))] for row in (out.commands if out else [])]
    if rows:
        return rows
    why = c.na(c.t("na_no_baseline_cmd"),
               r.command if not r.ok else "acc-agent select-baseline . --entry <script>")
    return [[c.word("sc_gpu_infer"), "GPU", why, why, c.word("p_inference_acceptance"), c.word("sc_note_infer")]]
