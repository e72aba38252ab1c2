"""The recorded target environment, and apart from it what was probed on the machine running the
report (Compare §2.2, Mig_report §3, Summary).

A saved check_environment result (``artefacts.results.environment``, written with ``--snapshot-out``
on the target) is all recorded. A check run by the report itself reads the recorded files mig.yaml
names (``npu-smi info`` output) and, for everything else, the machine the report runs on: those rows
go to their own table, labelled, so a reviewer never reads the report machine's missing driver as
the target's.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from markupsafe import Markup

from acc_agent.models.environment import Check, CheckEnvironmentOutput
from acc_agent.models.project import Project
from acc_agent.models.workflow import WorkflowResult
from acc_agent.render.cells import Ctx, Row, strip_verdict, with_names
from acc_agent.render.env import code, md_escape
from acc_agent.render.i18n import word

#: Check sources that name this machine's state, not a file the project recorded.
_VERSION_SOURCES = {"torch": "src_packages", "torch_npu": "src_packages", "mindspore": "src_packages"}
_COMMAND_START = ("./", "pip ", "export ", "source ", "acc-agent ", "npu-smi ", "python", "bash ", "sudo ")


@dataclass(frozen=True)
class EnvironmentView:
    ok: bool
    gap: Markup
    recorded_summary: Markup
    live_verdict: Markup
    saved: bool = False
    recorded: list[Row] = field(default_factory=list)
    recorded_failing: list[str] = field(default_factory=list)  # recorded critical checks that fail
    live: list[Row] = field(default_factory=list)
    versions: list[Row] = field(default_factory=list)


def _recorded_files(p: Project) -> set[str]:
    """The project's recorded environment files, as absolute and as given (the tool quotes them absolute)."""
    out: set[str] = set()
    for rel in (p.artefacts.npu_smi, p.artefacts.nvidia_smi):
        if rel:
            out.add(rel)
            resolved = p.resolve(rel)
            if resolved is not None:
                out.add(str(resolved))
    return out


def _fix_cell(c: Ctx, fix: str | None) -> Markup | None:
    """A check's fix: a command is printed as code (run as it is), a sentence in the document's language."""
    if not fix:
        return None
    if fix.startswith(_COMMAND_START) and "`" not in fix and ", " not in fix:
        # a trailing "(after the driver)" is advice about the command, not part of what is run
        command, sep, note = fix.partition(" (")
        if sep and note.endswith(")") and "(" not in note:
            said = c.tt(f"({note}")
            return Markup(code(command) + ("" if said.startswith("（") else " ") + md_escape(said))
        return code(fix)
    return c.val(c.tt(fix))


def _check_row(c: Ctx, ch: Check, where: Markup) -> Row:
    fix = _fix_cell(c, ch.fix)
    value = c.val(c.tt(ch.value)) if ch.value not in (None, "") else c.na(c.t("na_not_found"))
    reason = Markup(c.val(c.tt(ch.reason or "") or "—") + (Markup(f" — {md_escape(c.t('fix'))}: ") + fix if fix else ""))
    return [code(ch.name), c.vw("check", ch.status), value, reason, where]


def environment_view(c: Ctx, wf: WorkflowResult) -> EnvironmentView:
    p = wf.project
    r = wf.get("environment")
    out = r.output_as(CheckEnvironmentOutput)
    if out is None:
        return EnvironmentView(ok=False, gap=c.gap(r), recorded_summary=c.gap(r), live_verdict=c.gap(r))
    saved = r.status == "saved"
    snapshot = r.source.replace("saved result ", "")
    files = _recorded_files(p)
    base = f"{p.base_dir}/"
    recorded: list[Row] = []
    live: list[Row] = []
    failing: list[str] = []
    for ch in out.checks:
        src = ch.source or ""
        is_recorded = saved or src in files
        if is_recorded:
            where = c.val(c.t("src_saved_snapshot").format(file=snapshot) if saved
                          else c.t("src_recorded").format(file=src.replace(base, "")))
        else:  # the live table's heading says where: the machine that ran the report
            where = code(c.tt(src)) if src else c.val("—")
        (recorded if is_recorded else live).append(_check_row(c, ch, where))
        if is_recorded and ch.status == "fail" and ch.critical:
            failing.append(ch.name)
    versions: list[Row] = []
    for group, values in (("versions", out.versions), ("system", out.system)):
        for key, value in sorted(values.items()):
            origin = (c.t("src_saved_snapshot").format(file=snapshot) if saved
                      else c.t(_VERSION_SOURCES.get(key, "src_live_system" if group == "system" else "src_live_files")))
            versions.append([code(key), c.val(value) if value not in (None, "") else c.na(c.t("na_not_found")),
                             c.val(origin)])
    if recorded:
        n_ok = sum(1 for ch in out.checks if ch.status == "ok" and (saved or (ch.source or "") in files))
        summary = c.t("env_recorded_summary").format(ok=n_ok, n=len(recorded))
        if failing:
            summary += "; " + c.t("env_recorded_failing").format(names=", ".join(failing))
        recorded_source = (", ".join(sorted({f.replace(base, "") for f in files if not f.startswith("/")}))
                           or r.source)
        recorded_summary = with_names(summary, failing, f" ({md_escape(c.t('source'))}: {code(recorded_source)})")
        if saved:
            recorded_summary = c.val(word("environment", out.verdict, c.lang) + " — " + c.tt(strip_verdict(out.summary)),
                                     snapshot)
    else:
        recorded_summary = c.na(c.t("na_no_recorded_env"))
    names = [ch.name for ch in out.checks if ch.name]
    live_verdict = with_names(f"{word('environment', out.verdict, c.lang)} — {c.tt(strip_verdict(out.summary))}", names,
                              f" ({md_escape(c.t('source'))}: {code(r.command)})")
    return EnvironmentView(ok=True, gap=Markup(""), recorded=recorded, recorded_summary=recorded_summary,
                           recorded_failing=failing, live=[] if saved else live, live_verdict=live_verdict,
                           versions=versions, saved=saved)
