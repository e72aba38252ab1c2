"""Run the configured skills on the configured artefacts and collect their results.

Why one place: the three deliverables quote the same results, so they must be computed once and
shared. Each skill is run by name (tools.spec.skill_tool), so a tool that fails on its input
becomes a *gap* — "N/A — <why>" plus the command that would fill it — instead of an
invented number. A saved JSON result (``artefacts.results.<slot>`` in mig.yaml) is accepted in
place of a run, after validation with the tool's own output model.
"""

from __future__ import annotations

import json
import shlex
from collections.abc import Callable
from pathlib import Path
from typing import Literal

from pydantic import ValidationError

from acc_agent.app.verdicts import decide
from acc_agent.errors import AccAgentError
from acc_agent.json_types import JsonValue
from acc_agent.models.compare import CompareTensorsOutput
from acc_agent.models.performance import MeasurePerformanceOutput
from acc_agent.models.project import Project
from acc_agent.models.workflow import GoldenArrays, OptionValue, SkillPlan, SkillResult, WorkflowResult
from acc_agent.tools.spec import ToolSpec, skill_tool

#: Slots that only make sense for one kind of project (mig.yaml model.mode).
TRAINING_SLOTS = frozenset({"baseline_log", "target_log", "short_run", "loss_curves"})
#: Localisation steps a project may add (saved results only): absent, they are not gaps.
OPTIONAL_SLOTS = frozenset({"replay", "bisect"})


def _rel(project: Project, value: str) -> str:
    path = project.resolve(value)
    return str(path) if path is not None else ""


def plans(project: Project, *, plots: bool = True) -> list[SkillPlan]:
    """The skill runs the deliverables need, in the order a migration engineer would run them."""
    a = project.artefacts
    t = project.thresholds
    rtol, atol, _ = project.tolerance()
    out: list[SkillPlan] = []
    env_opts: dict[str, OptionValue] = {}
    if a.npu_smi:
        env_opts["npu_smi_output"] = _rel(project, a.npu_smi)
    if a.nvidia_smi:
        env_opts["nvidia_smi_output"] = _rel(project, a.nvidia_smi)
    out.append(SkillPlan("environment", "check_environment", [], env_opts, {}))
    sb_opts: dict[str, OptionValue] = {"metric": t.loss_metric,
                               "gpu_available": {True: "yes", False: "no", None: "unknown"}[a.gpu_available]}
    if project.model.batch_size is not None:
        sb_opts["batch_size"] = project.model.batch_size
    out.append(SkillPlan("baseline", "select_baseline", [str(project.base_dir)], sb_opts, {}))
    out.append(SkillPlan("baseline_log", "parse_training_log", [_rel(project, a.baseline_log)], {},
                         {"baseline_log": a.baseline_log}))
    out.append(SkillPlan("target_log", "parse_training_log", [_rel(project, a.target_log)], {},
                         {"target_log": a.target_log}))
    # the do-not-repeat record lives beside mig.yaml, never beside the user's log
    sr_opts: dict[str, OptionValue] = {"band": list(t.short_run_band),
                               "record_file": str(project.base_dir / ".acc-agent" / "short_run_record.json")}
    if t.short_run_window:
        sr_opts["window"] = t.short_run_window
    out.append(SkillPlan("short_run", "judge_short_run", [_rel(project, a.target_log)], sr_opts,
                         {"target_log": a.target_log}))
    # the tool draws its plot while it compares, once; the reports copy it (LOSS_CURVES_PLOT)
    out.append(SkillPlan("loss_curves", "compare_loss_curves",
                         [_rel(project, a.baseline_log), _rel(project, a.target_log)],
                         {"plot": str(loss_curves_plot(project))} if plots else {},
                         {"baseline_log": a.baseline_log, "target_log": a.target_log}))
    out.append(SkillPlan("golden", "compare_tensors",
                         [_rel(project, a.golden_outputs), _rel(project, a.target_outputs)],
                         {"precision": project.model.target_precision, "rtol": rtol, "atol": atol},
                         {"golden_outputs": a.golden_outputs, "target_outputs": a.target_outputs}))
    # the per-layer plot needs every row in execution order; the project's precision sets the tolerances
    dump_opts: dict[str, OptionValue] = {"all_rows": True, "precision": project.model.target_precision}
    if a.bench_dump:
        dump_opts["bench"] = _rel(project, a.bench_dump)
    if a.dumps.mapping:
        dump_opts["mapping"] = _rel(project, a.dumps.mapping)
    out.append(SkillPlan("dumps", "compare_dumps", [_rel(project, a.golden_dump), _rel(project, a.target_dump)],
                         dump_opts, {"dumps.golden": a.dumps.golden, "dumps.target": a.dumps.target}))
    # the localisation's last steps read saved results only: replay_op needs the call compare_dumps names,
    # bisect_precision the user's model code
    out.append(SkillPlan("replay", "replay_op", [_rel(project, a.golden_dump), _rel(project, a.target_dump)],
                         {"op": "<first divergence call>"}, {"results.replay": a.results.get("replay", "")}))
    out.append(SkillPlan("bisect", "bisect_precision", ["<model.py:build>"],
                         {"low": "bf16" if project.model.target_precision == "bf16" else "fp16"},
                         {"results.bisect": a.results.get("bisect", "")}))
    out.append(SkillPlan("performance", "compare_performance",
                         [_rel(project, a.baseline_perf), _rel(project, a.target_perf)], {},
                         {"baseline_perf": a.baseline_perf, "target_perf": a.target_perf}))
    return out


#: Options the reports need (e.g. every dump row for the per-layer plot) but a person re-running the tool does not.
NOT_SHOWN = frozenset({"all_rows", "record_file", "plot"})


def loss_curves_plot(project: Project) -> Path:
    """Where compare_loss_curves draws the project's curves during the workflow (beside mig.yaml, in
    acc-agent's own folder, like the short-run record); the reports copy it next to the documents."""
    return project.base_dir / ".acc-agent" / "plots" / "loss_curves.png"


def command_line(plan: SkillPlan, base_dir: Path | None = None) -> str:
    """The CLI line that fills this slot, for the reports' N/A cells (paths relative to mig.yaml)."""
    prefix = f"{base_dir}/" if base_dir is not None else None
    placeholders = [f"<{k.upper()}>" for k in plan.needs] or ["<PATH>"]

    def show(value: str, idx: int) -> str:
        if not value:
            return placeholders[min(idx, len(placeholders) - 1)]
        if prefix and value.startswith(prefix):
            value = value[len(prefix):]
        if base_dir is not None and value == str(base_dir):
            value = "."
        return shlex.quote(value)

    parts = ["acc-agent", plan.tool.replace("_", "-")]
    parts += [show(p, i) for i, p in enumerate(plan.positional)]
    for key, value in plan.options.items():
        if key in NOT_SHOWN:
            continue
        if isinstance(value, bool):
            parts += ["--" + key.replace("_", "-")] if value else []
            continue
        text = ",".join(str(v) for v in value) if isinstance(value, list) else str(value)
        parts += ["--" + key.replace("_", "-"), show(text, 0)]
    return " ".join(parts)


def _json(value: OptionValue) -> JsonValue:
    if isinstance(value, list):
        items: list[JsonValue] = [*value]
        return items
    return value


def _skill(name: str) -> ToolSpec:
    """The slot's tool: every one ships with the package, so a failed lookup is a bug, not a report gap."""
    spec = skill_tool(name)
    if spec is None:
        raise LookupError(f"no skill tool named {name!r} in acc_agent.tools")
    return spec


def _saved(project: Project, plan: SkillPlan, cmd: str) -> SkillResult | None:
    """A saved JSON result for this slot, validated with the tool's output model."""
    rel = project.artefacts.results.get(plan.slot)
    if not rel:
        return None
    path = project.resolve(rel)
    assert path is not None
    spec = _skill(plan.tool)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        model = spec.output_model.model_validate(data)
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        return SkillResult(plan.slot, plan.tool, "error", cmd, reason=f"saved result {rel} unreadable: {exc}",
                           why_key="r_saved_unreadable", why_args={"file": rel, "message": str(exc)})
    except ValidationError as exc:
        first = exc.errors()[0]
        loc = ".".join(str(p) for p in first.get("loc", ()))
        return SkillResult(plan.slot, plan.tool, "error", cmd,
                           reason=f"saved result {rel} is not a {plan.tool} result ({loc}: {first.get('msg')})",
                           why_key="r_saved_invalid", why_args={"file": rel, "tool": plan.tool,
                                                                "message": f"{loc}: {first.get('msg')}"})
    return SkillResult(plan.slot, plan.tool, "saved", cmd, output=model, source=f"saved result {rel}")


def run_plan(project: Project, plan: SkillPlan) -> SkillResult:
    """Run one slot's tool; every failure becomes a gap with its reason."""
    cmd = command_line(plan, project.base_dir)
    if project.model.mode == "inference" and plan.slot in TRAINING_SLOTS:
        return SkillResult(plan.slot, plan.tool, "not_applicable", "",
                           reason="not applicable: inference-only project (mig.yaml model.mode: inference)",
                           why_key="r_inference_only")
    saved = _saved(project, plan, cmd)
    if saved is not None:
        return saved
    if plan.slot in OPTIONAL_SLOTS:
        return SkillResult(plan.slot, plan.tool, "not_applicable", cmd,
                           reason=f"optional step not run: give its saved result as artefacts.results.{plan.slot}",
                           why_key="r_optional_step", why_args={"slot": plan.slot})
    missing = [k for k, v in plan.needs.items() if not v]
    if missing:
        fields_ = "artefacts." + ", artefacts.".join(missing)
        return SkillResult(plan.slot, plan.tool, "missing_input", cmd, reason=f"not configured: {fields_} in mig.yaml",
                           why_key="r_not_configured", why_args={"fields": fields_})
    for key, value in plan.needs.items():
        path = project.resolve(value)
        if path is not None and not path.exists():
            return SkillResult(plan.slot, plan.tool, "missing_input", cmd,
                               reason=f"artefacts.{key} points to {value}, which does not exist",
                               why_key="r_path_missing", why_args={"key": key, "value": value})
    spec = _skill(plan.tool)
    fields = spec.input_model.model_fields
    args: dict[str, JsonValue] = dict(zip(spec.positional, plan.positional, strict=False))
    args.update({key: _json(option) for key, option in plan.options.items() if key in fields})
    try:
        out = spec.run(args)
    except AccAgentError as err:
        return SkillResult(plan.slot, plan.tool, "error", cmd, reason=f"{plan.tool} refused its input: {err.message}",
                           why_key="r_tool_refused", why_args={"tool": plan.tool, "message": err.message})
    except Exception as exc:  # a tool bug must not cost the engineer the other documents
        return SkillResult(plan.slot, plan.tool, "error", cmd,
                           reason=f"{plan.tool} failed: {type(exc).__name__}: {exc}",
                           why_key="r_tool_failed", why_args={"tool": plan.tool, "message": f"{type(exc).__name__}: {exc}"})
    return SkillResult(plan.slot, plan.tool, "ok", cmd, output=out, source=f"`{cmd}`")


def read_perf_file(project: Project, key: Literal["baseline_perf", "target_perf"]) -> SkillResult:
    """A measure_performance result saved as JSON (the timing files the project keeps)."""
    rel = project.artefacts.baseline_perf if key == "baseline_perf" else project.artefacts.target_perf
    cmd = "acc-agent measure-performance --command '<inference command>' --batch-sizes " + ",".join(
        str(b) for b in project.performance.batch_sizes) + f" --warmup {project.performance.warmup}" \
        f" --iterations {project.performance.iterations} --json > <{key}.json>"
    if not rel:
        return SkillResult(key, "measure_performance", "missing_input", cmd,
                           reason=f"not configured: artefacts.{key} in mig.yaml",
                           why_key="r_not_configured", why_args={"fields": f"artefacts.{key}"})
    path = project.resolve(rel)
    assert path is not None
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        return SkillResult(key, "measure_performance", "missing_input", cmd, reason=f"{rel} unreadable: {exc}",
                           why_key="r_file_unreadable", why_args={"file": rel, "message": str(exc)})
    try:
        model = MeasurePerformanceOutput.model_validate(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        return SkillResult(key, "measure_performance", "error", cmd,
                           reason=f"{rel} is not a measure_performance result ({first.get('msg')})",
                           why_key="r_saved_invalid", why_args={"file": rel, "tool": "measure_performance",
                                                                "message": str(first.get("msg"))})
    return SkillResult(key, "measure_performance", "saved", cmd, output=model, source=rel)


def run_workflow(project: Project, progress: Callable[[str], None] | None = None, *,
                 plots: bool = True) -> WorkflowResult:
    """Every slot, run or explained; never raises for a missing or failing skill.

    ``plots``: compare_loss_curves also draws its plot (which the reports then copy); a run whose
    documents carry no plots, or a check, leaves it out."""
    results: dict[str, SkillResult] = {}
    for plan in plans(project, plots=plots):
        if progress is not None:
            progress(f"{plan.slot}: {plan.tool}")
        results[plan.slot] = run_plan(project, plan)
    for side in ("baseline_perf", "target_perf"):
        results[side] = read_perf_file(project, side)
    return WorkflowResult(project, results, decide(project, results), golden_arrays(project, results["golden"]))


def golden_arrays(project: Project, golden: SkillResult) -> GoldenArrays:
    """The facts of every output array the golden table lists, read here so rendering opens no file.

    The arrays are the golden file's; when it cannot be listed, the outputs compare_tensors compared.
    """
    from acc_agent.io.array_facts import array_facts, npz_keys

    gpath = project.resolve(project.artefacts.golden_outputs)
    tpath = project.resolve(project.artefacts.target_outputs)
    compared = golden.output_as(CompareTensorsOutput)
    keys = npz_keys(gpath) or (list(dict.fromkeys(row.name for row in compared.outputs)) if compared is not None else [])
    facts = GoldenArrays(keys=keys)
    for key in keys:
        if gpath is not None and (g := array_facts(gpath, key)) is not None:
            facts.golden[key] = g
        if tpath is not None and tpath.is_file() and (t := array_facts(tpath, key)) is not None:
            facts.target[key] = t
    return facts


def load_and_run(config: Path) -> WorkflowResult:
    from acc_agent.io.project_file import load_project

    return run_workflow(load_project(config))
