"""The ``render_deliverables`` tool: mig.yaml in, Mig_Readme/Compare/Mig_report/Summary out.

Why a tool (and not only a CLI command): agents reach it through MCP and the schema export like
every other skill, and get back which files were written, what was backed up and which gaps
remain, so they can tell the engineer what to run next.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from acc_agent import frontend
from acc_agent.models.common import Evidence
from acc_agent.models.deliverables import Gap, RenderDeliverablesInput, RenderDeliverablesOutput, WrittenFile
from acc_agent.models.project import Project
from acc_agent.models.workflow import OptionValue
from acc_agent.text_columns import Column, Table, labelled, render
from acc_agent.tools.spec import skill_tool, tool

#: One line per document: written or unchanged, and where hand edits were backed up.
_FILE_LINES = Table[WrittenFile]([
    Column(lambda f: f"{'wrote' if f.written else 'unchanged'} {f.path}"),
    Column(lambda f: f"(hand edits backed up to {f.backup})" if f.backup else None),
])
_PLOT_LINES = Table[str]([Column(lambda path: f"plot {path}")])
#: One line per gap: the slot, why it is empty and the command that fills it.
_GAP_LINES = Table[Gap]([Column(lambda g: f"gap {g.slot}: {g.reason} -> {g.command}")])


def render_text(out: RenderDeliverablesOutput) -> str:
    return render(out, _FILE_LINES.lines(out.files), _PLOT_LINES.lines(out.plots), labelled("note", out.plot_notes),
                  _GAP_LINES.lines(out.gaps), labelled("problem", out.problems))


def _calls(project: Project) -> dict[str, str]:
    """For an MCP caller: the tool call that fills each slot (the documents keep the command line).

    Empty artefacts become placeholders naming the mig.yaml key to fill, as the command lines do.
    """
    from acc_agent.app.workflow import NOT_SHOWN, plans

    out: dict[str, str] = {}
    for plan in plans(project):
        spec = skill_tool(plan.tool)
        if spec is None:
            continue
        keys = list(plan.needs) or ["path"]
        args: dict[str, OptionValue] = {}
        for i, (name, value) in enumerate(zip(spec.positional, plan.positional, strict=False)):
            args[name] = value or f"<{keys[min(i, len(keys) - 1)]}>"
        args.update({k: v for k, v in plan.options.items() if k not in NOT_SHOWN and k in spec.input_model.model_fields})
        out[plan.slot] = frontend.invoke(plan.tool, frontend=None, **args)  # None: the caller's front end
    perf = project.performance
    for key in ("baseline_perf", "target_perf"):
        out[key] = frontend.invoke("measure_performance", command="<inference command>", batch_sizes=perf.batch_sizes,
                                   warmup=perf.warmup, iterations=perf.iterations, requested=True, out=f"<{key}.json>")
    return out


@tool(
    description="Call last: runs the tools on the artefacts mig.yaml names and writes Mig_Readme.md, Compare.md, "
                "Mig_report.md, Summary.md. Returns verdict complete | with_gaps | check_failed, files, gaps[].",
    title="Render the deliverables",
    read_only=False,
    destructive=False,
    idempotent=True,
    positional=("config",),
    text_renderer=render_text,
)
def render_deliverables(params: RenderDeliverablesInput) -> RenderDeliverablesOutput:
    from acc_agent.app.report import render_all
    from acc_agent.app.workflow import run_workflow
    from acc_agent.errors import AccAgentError
    from acc_agent.io.project_file import load_project
    from acc_agent.render.checks import check_folder, user_strings

    config = Path(params.config)
    config = config / "mig.yaml" if config.is_dir() else config
    project = load_project(config)
    out_dir = Path(params.out) if params.out else project.base_dir
    wf = run_workflow(project, plots=params.plots)
    try:
        res = render_all(wf, out_dir, params.lang, with_plots=params.plots, config_path=config)
    except OSError as exc:
        raise AccAgentError("cannot_write", f"cannot write the documents into {out_dir}: {exc.strerror or exc}",
                            hint=f"Pass a writable folder with {frontend.option('out')}.", path=str(out_dir),
                            field="out") from None
    problems, _matrix = check_folder(out_dir, user_strings(project.model_dump(mode="json")))
    calls = _calls(project) if frontend.current() == "mcp" else {}
    gaps = [Gap(slot=r.slot, tool=r.tool, reason=r.reason, command=calls.get(r.slot, r.command))
            for r in wf.results.values() if not r.ok and r.status != "not_applicable"]
    # a hand-written part still holding its placeholder is a gap too: the engineer writes it
    gaps += [Gap(slot=f"{doc}.md:{block}", tool="", reason=f"hand-written block {block} still holds its placeholder",
                 command=f"edit {out_dir / (doc + '.md')} at line {line}") for doc, line, block in res.placeholders]
    verdict: Literal["complete", "with_gaps", "check_failed"] = (
        "check_failed" if problems else "with_gaps" if gaps or res.status != "complete" else "complete")
    files = [WrittenFile(path=str(r.path), written=r.written, kept_blocks=r.kept_blocks,
                         backup=str(r.backup) if r.backup else None) for r in res.reports]
    evidence = [Evidence(kind="file", ref=str(project.base_dir / "mig.yaml"), detail="project file")]
    evidence += [Evidence(kind="command", ref=r.command, detail=f"{r.slot}: {r.status}")
                 for r in wf.results.values() if r.ok]
    skill_gaps = [g for g in gaps if g.tool]
    summary = (f"{len(files)} documents in {out_dir} ({params.lang}); {len(wf.results) - len(skill_gaps)} of "
               f"{len(wf.results)} skill results present, {len(skill_gaps)} gaps say N/A with the command that fills "
               f"them, {len(res.placeholders)} hand-written parts still to write; {len(problems)} check problems")
    return RenderDeliverablesOutput(verdict=verdict, summary=summary, evidence=evidence, out_dir=str(out_dir),
                                    lang=params.lang, files=files, plots=[str(out_dir / p) for p in res.plots.values()],
                                    plot_notes=res.plot_notes, gaps=gaps, problems=[str(p) for p in problems])
