"""Turn a workflow result into what the templates print: cells that carry their source or their gap.

Why here and not in the templates: every number must name its source and every missing one must
say why and how to fill it. Doing that once in Python keeps the four documents (and both
languages) quoting the very same cell, which is what the consistency check then verifies.
"""

from __future__ import annotations

import math
import shlex
from datetime import date
from pathlib import Path
from typing import Any

from markupsafe import Markup

from acc_agent.models.project import Project
from acc_agent.render.curve_cells import curve_cells
from acc_agent.render.env import code, fmt_num, md_escape
from acc_agent.render.i18n import translate
from acc_agent.workflow import SkillResult, WorkflowResult


class Ctx:
    """Cell builders bound to one language."""

    def __init__(self, lang: str) -> None:
        self.lang = lang

    def t(self, key: str) -> str:
        return translate(key, self.lang)

    def na(self, reason: str, command: str = "") -> Markup:
        text = f"N/A — {md_escape(reason)}"
        if command:
            text += f"; {md_escape(self.t('fill_with'))}: {code(command)}"
        return Markup(text)

    def gap(self, result: SkillResult) -> Markup:
        reason = result.reason or f"{result.tool}: {result.status}"
        if result.why_key:
            reason = self.t(result.why_key).format(**result.why_args)
        return self.na(reason, result.command)

    def val(self, text: Any, source: str = "") -> Markup:
        body = md_escape(fmt_num(text) if isinstance(text, float) else text)
        if source:
            body += f" ({md_escape(self.t('source'))}: {code(source)})"
        return Markup(body)

    def word(self, key: str) -> Markup:
        return Markup(md_escape(self.t(key)))


def dig(data: Any, *keys: str | int) -> Any:
    """Nested lookup that returns None instead of raising, for tool outputs still evolving."""
    cur = data
    for key in keys:
        if isinstance(cur, dict) and isinstance(key, str):
            cur = cur.get(key)
        elif isinstance(cur, list) and isinstance(key, int) and -len(cur) <= key < len(cur):
            cur = cur[key]
        else:
            return None
    return cur


def _finite(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    v = float(value)
    return v if math.isfinite(v) else None


def _last_point(series: Any) -> tuple[int, float] | None:
    if not isinstance(series, list) or not series:
        return None
    last = series[-1]
    step, value = dig(last, "step"), _finite(dig(last, "value"))
    if value is None or not isinstance(step, int):
        return None
    return step, value


def _metric_rows(output: dict[str, Any]) -> list[dict[str, Any]]:
    """The per-output rows of a compare_tensors result, whatever its list field is called."""
    for key in ("outputs", "rows", "results", "tensors"):
        rows = output.get(key)
        if isinstance(rows, list) and rows and isinstance(rows[0], dict):
            return rows
    return []


def _array_summary(path: Path, key: str) -> str | None:
    """shape/dtype/mean/max of one array of a golden file, read without unpickling."""
    import numpy as np

    try:
        with np.load(path, allow_pickle=False) as data:
            if key not in data.files:
                return None
            arr = data[key]
    except (OSError, ValueError):
        return None
    a64 = arr.astype(np.float64)
    bad = int((~np.isfinite(a64)).sum())
    finite = a64[np.isfinite(a64)]
    if finite.size == 0:
        return f"{list(arr.shape)} {arr.dtype}, all {bad} values NaN/Inf"
    text = f"{list(arr.shape)} {arr.dtype}, mean {fmt_num(float(finite.mean()))}, max {fmt_num(float(finite.max()))}"
    return text + (f", {bad} NaN/Inf" if bad else "")


def _npz_keys(path: Path | None) -> list[str]:
    import numpy as np

    if path is None or not path.is_file():
        return []
    try:
        with np.load(path, allow_pickle=False) as data:
            return sorted(data.files)
    except (OSError, ValueError):
        return []


def build_baseline(c: Ctx, wf: WorkflowResult) -> dict[str, Any]:
    """Baseline source per seed 002: select_baseline's answer, else the same rule applied to mig.yaml."""
    p = wf.project
    r = wf.get("baseline")
    a = p.artefacts
    if r.ok and r.output is not None:
        source = str(r.output.get("source") or "na")
        log = str(r.output.get("log_path") or "")
        base = f"{p.base_dir}/"
        if log.startswith(base):
            log = log[len(base):]
        reason = str(r.output.get("reason") or r.output.get("summary") or "")
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
        reason += " (" + c.t("b_not_run").format(why=r.reason) + ")"
        origin = "mig.yaml"
    if source not in ("project_log", "gpu_measured", "cpu_log", "na"):
        source = "na"
    rows26 = _interface_rows(c, p, r)
    return {
        "code": source,
        "label": Markup(f"{code(source)} {md_escape(c.t('src_' + source))}"),
        "log": code(log) if log else c.na(c.t("na_no_baseline_log") if source != "project_log" else "log path not given"),
        "reason": c.val(reason, origin if origin != "mig.yaml" else "mig.yaml"),
        "quoted": source in ("project_log", "cpu_log"),
        "rows26": rows26,
    }


def _interface_rows(c: Ctx, p: Project, r: SkillResult) -> list[list[Any]]:
    """Mig_Readme §2.6 rows: the commands in mig.yaml, else the ones select_baseline built, else a gap."""
    e = p.entry
    batch = str(p.model.batch_size) if p.model.batch_size else c.t("sc_as_target")
    weights = e.checkpoint or c.t("sc_as_target")
    if e.baseline_inference or e.baseline_train:
        na = c.na(c.t("na_no_baseline_entry"))
        return [
            [c.word("sc_gpu_infer"), "GPU", code(e.baseline_inference) if e.baseline_inference else na,
             f"CUDA_VISIBLE_DEVICES=0, --device cuda, batch {batch}, weights {weights}", c.word("p_inference_acceptance"),
             c.word("sc_note_infer")],
            [c.word("sc_gpu_train"), "GPU", code(e.baseline_train) if e.baseline_train else na,
             f"CUDA_VISIBLE_DEVICES=0, --device cuda, batch {batch}", c.word("p_short_run"), c.word("sc_note_train")],
            [c.word("sc_cpu"), "CPU", c.word("sc_cpu_entry"), "batch 1", c.word("p_smoke"), c.word("sc_note_cpu")],
        ]
    rows = []
    for row in (r.output or {}).get("commands") or [] if r.ok else []:
        if isinstance(row, dict):
            rows.append([c.val(str(row.get("scenario", ""))), c.val(str(row.get("device", ""))),
                         code(str(row.get("command", ""))), c.val(str(row.get("key_parameters", ""))),
                         c.val(str(row.get("aligns_with", ""))), c.val(str(row.get("notes", "")))])
    if rows:
        return rows
    why = c.na(c.t("na_no_baseline_cmd"),
               r.command if not r.ok else "acc-agent select-baseline . --entry <script>")
    return [[c.word("sc_gpu_infer"), "GPU", why, why, c.word("p_inference_acceptance"), c.word("sc_note_infer")]]


def build_datasets(c: Ctx, p: Project) -> list[list[Markup]]:
    rows = []
    for d in p.datasets:
        same = c.word("yes") if d.same_as_baseline else c.word("no") if d.same_as_baseline is False else c.na(c.t("na_not_stated"))
        rows.append([c.word("p_" + d.purpose), c.val(d.dataset), c.val(d.subset or "—"), same,
                     code(d.path) if d.path else c.na(c.t("na_no_local_path"))])
    return rows


def build_thresholds(c: Ctx, p: Project) -> dict[str, Markup]:
    t = p.thresholds
    rtol, atol, tol_src = p.tolerance()
    return {
        "band": c.val(f"{t.short_run_band[0] * 100:g} %–{t.short_run_band[1] * 100:g} %", "mig.yaml thresholds.short_run_band"),
        "window": c.val(t.short_run_window or "whole log", "mig.yaml thresholds.short_run_window"),
        "flat": c.val(str(t.flat_steps_limit), "mig.yaml thresholds.flat_steps_limit"),
        "metric": c.val(t.loss_metric, "mig.yaml thresholds.loss_metric"),
        "rtol": c.val(fmt_num(rtol), tol_src),
        "atol": c.val(fmt_num(atol), tol_src),
        "precision": c.val(p.model.target_precision, "mig.yaml model.target_precision"),
        "latency_kpi": c.val(f"{fmt_num(t.latency_p50_ms)} ms", "mig.yaml thresholds.latency_p50_ms")
        if t.latency_p50_ms is not None else c.na(c.t("na_no_latency_kpi")),
        "target_log": code(p.artefacts.target_log) if p.artefacts.target_log else c.na(c.t("na_no_target_log")),
    }


def build_training(c: Ctx, wf: WorkflowResult) -> dict[str, Any]:
    p = wf.project
    metric = p.thresholds.loss_metric
    out: dict[str, Any] = {}
    finals: dict[str, tuple[int, float] | None] = {}
    for side in ("baseline_log", "target_log"):
        r = wf.get(side)
        rel = getattr(p.artefacts, side)
        if not r.ok:
            out[side] = c.gap(r)
            finals[side] = None
            continue
        last = _last_point(dig(r.output, "series", metric))
        finals[side] = last
        out[side] = (c.val(last[1], f"{rel}, step {last[0]}") if last
                     else c.na(f"no '{metric}' series in {rel}", r.command))
    b, tg = finals["baseline_log"], finals["target_log"]
    if b and tg:
        diff = tg[1] - b[1]
        out["diff"] = c.val(f"{fmt_num(diff)} ({fmt_num(diff / b[1] * 100 if b[1] else float('nan'), 3)} %)")
    else:
        out["diff"] = c.na(c.t("na_both_logs"))
    first = _finite(dig(wf.get("target_log").output, "series", metric, 0, "value")) if wf.get("target_log").ok else None
    out["finite_first_loss"] = first
    sr = wf.get("short_run")
    if sr.ok and sr.output is not None:
        drop = _finite(sr.output.get("relative_drop"))
        ws, we = dig(sr.output, "window", "start_step"), dig(sr.output, "window", "end_step")
        src = f"{p.artefacts.target_log}, steps {ws}–{we}; {sr.command}"
        out["short_run"] = (c.val(f"{drop * 100:.1f} %", src) if drop is not None else c.na(c.t("na_drop"), sr.command))
        out["short_run_verdict"] = str(sr.output.get("verdict"))
        out["short_run_summary"] = c.val(str(sr.output.get("summary", "")))
    else:
        out["short_run"] = c.gap(sr)
        out["short_run_verdict"] = None
        out["short_run_summary"] = c.gap(sr)
    lc = wf.get("loss_curves")
    out["curves_verdict"] = str(lc.output.get("verdict")) if lc.ok and lc.output else None
    out["curves"] = c.gap(lc)
    out.update(curve_cells(c, lc.output if lc.ok else None, lc.command))
    return out


def build_golden(c: Ctx, wf: WorkflowResult) -> dict[str, Any]:
    p = wf.project
    r = wf.get("golden")
    gpath, tpath = p.resolve(p.artefacts.golden_outputs), p.resolve(p.artefacts.target_outputs)
    errs: dict[str, Any] = {}
    if r.ok and r.output is not None:
        for row in _metric_rows(r.output):
            name = str(row.get("name") or row.get("key") or row.get("output") or "")
            errs[name] = row
    rows = []
    keys = _npz_keys(gpath) or list(errs)
    for key in keys:
        gsum = _array_summary(gpath, key) if gpath else None
        tsum = _array_summary(tpath, key) if tpath and tpath.is_file() else None
        erow = errs.get(key)
        mae = _finite(dig(erow, "max_abs_err")) if erow else None
        missing = c.gap(r) if not r.ok else c.na(c.t("na_not_computed"))
        within = _finite(dig(erow, "within_tolerance_ratio")) if erow else None
        top1 = _finite(dig(erow, "top1_agreement")) if erow else None
        rows.append([
            code(key),
            c.val(gsum) if gsum else c.na(c.t("na_golden_unreadable")),
            c.val(tsum) if tsum else c.na(c.t("na_target_outputs"), ""),
            c.val(mae) if mae is not None else missing,
            c.val(f"{within * 100:.1f} %") if within is not None else missing,
            c.val(f"{top1 * 100:.0f} %") if top1 is not None else (
                c.na(str(dig(erow, "na_reasons", "top1_agreement") or c.t("na_not_computed"))) if erow else missing),
            c.val(str(erow.get("verdict") or erow.get("status") or "")) if erow else missing,
        ])
    verdict = str(r.output.get("verdict")) if r.ok and r.output else None
    nan_free = None
    if r.ok and r.output is not None:
        mrows = _metric_rows(r.output)
        if mrows:
            nan_free = all(int(m.get("target_nan") or 0) == 0 and int(m.get("target_inf") or 0) == 0 for m in mrows)
    sources = Markup(", ".join(
        f"{md_escape(c.t(label))} {code(src)}" for label, src in (("lbl_baseline", p.artefacts.golden_outputs),
                                                                 ("lbl_npu", p.artefacts.target_outputs),
                                                                 ("lbl_max_abs", r.command if r.ok else "")) if src))
    return {"rows": rows, "verdict": verdict, "nan_free": nan_free, "sources": sources,
            "summary": c.val(str(r.output.get("summary", "")), r.command) if r.ok and r.output else c.gap(r)}


def build_dumps(c: Ctx, wf: WorkflowResult, limit: int = 40) -> dict[str, Any]:
    r = wf.get("dumps")
    if not (r.ok and r.output is not None):
        return {"ok": False, "gap": c.gap(r), "rows": [], "verdict": None, "first": c.gap(r), "category": c.gap(r),
                "first_name": None, "first_reason": Markup(""), "explanation": Markup(""), "next_actions": [],
                "total": 0, "shown": 0, "summary": c.gap(r)}
    out = r.output
    all_rows = out.get("rows") or []
    fd = out.get("first_divergence")
    fd_name = fd.get("name") if isinstance(fd, dict) else None
    # one row per tensor (an input that is the previous call's output repeats it), a window around the
    # first divergence: what a reviewer checks is what agrees just before it and what follows
    unique = [x for x in all_rows if not x.get("same_as") or x.get("name") == fd_name]
    at = next((i for i, x in enumerate(unique) if x.get("name") == fd_name), 0)
    start = max(0, min(at - limit // 3, len(unique) - limit))
    picked = unique[start:start + limit]
    rows = []
    for row in picked:
        cells = [code(row.get("name", ""))]
        for key in ("cosine", "max_abs_err", "max_rel_err", "one_thousandth_ratio"):
            v = _finite(row.get(key))
            reason = dig(row, "na_reasons", key) or "not computable"
            shown = f"{v:.6f}" if key == "cosine" and v is not None else v
            cells.append(c.val(shown) if v is not None else c.na(str(reason)))
        cells.append(c.val(str(row.get("status", ""))))
        rows.append(cells)
    cat = dig(out, "diagnosis", "category")
    return {
        "ok": True, "rows": rows, "verdict": str(out.get("verdict")),
        "total": max(len(all_rows), int(out.get("rows_total") or 0)), "shown": len(rows),
        "unique": len(unique), "window": f"{start + 1}–{start + len(rows)}" if rows else "0",
        "csv_command": code(f"{r.command} --csv compare_dumps.csv"),
        "first": c.val(str(fd.get("name")), r.command) if isinstance(fd, dict) and fd.get("name")
        else c.val(c.t("v_none_found"), r.command),
        "first_name": fd.get("name") if isinstance(fd, dict) else None,
        "first_reason": c.val(str(fd.get("reason") or "")) if isinstance(fd, dict) else Markup(""),
        "category": code(str(cat)) if cat else c.na(c.t("na_no_diagnosis")),
        "explanation": c.val(str(dig(out, "diagnosis", "explanation") or "")),
        "next_actions": [c.val(str(a)) for a in (dig(out, "diagnosis", "next_actions") or [])],
        "summary": c.val(str(out.get("summary", "")), r.command),
    }


def build_found_problems(c: Ctx, wf: WorkflowResult) -> list[list[Markup]]:
    """Problem-log rows for what the tools found (failing verdicts), beside the ones logged by hand.

    A report whose comparison found an operator fault must not say "no problems": the fault, the
    command that found it, its cause and the first next action are the log entry, marked as found
    by the tool (what was tried stays for the engineer to fill in)."""
    from acc_agent.registry import get_tool

    rows: list[list[Markup]] = []
    day = wf.project.project.date or date.today().isoformat()
    for slot in ("environment", "golden", "dumps", "short_run", "loss_curves", "performance"):
        r = wf.results.get(slot)
        if r is None or not r.ok or r.output is None:
            continue
        try:
            failing = get_tool(r.tool).output_model.failing_verdicts
        except Exception:  # noqa: BLE001 - a tool missing here leaves its row out, not the report
            continue
        verdict = str(r.output.get("verdict"))
        if verdict not in failing:
            continue
        fd = r.output.get("first_divergence") if slot == "dumps" else None
        diag = r.output.get("diagnosis") if slot == "dumps" else None
        actions = (dig(r.output, "diagnosis", "next_actions") or r.output.get("next_actions") or [])
        error = str(fd.get("name")) if isinstance(fd, dict) and fd.get("name") else str(r.output.get("summary", ""))
        cause = (f"{dig(diag, 'category')}: {dig(diag, 'explanation')}" if isinstance(diag, dict)
                 else c.t("pf_see_section"))
        rows.append([c.val(day), c.val(c.t(f"pf_{slot}")), code(r.command), c.val(error),
                     c.val(c.t("pf_found_by_tool")), c.val(cause), c.val(str(actions[0]) if actions else "—")])
    return rows


def build_localisation(c: Ctx, wf: WorkflowResult) -> dict[str, Any]:
    """Replay (kernel or inputs?) and precision bisection, from their saved results when mig.yaml gives them."""
    rp, bs = wf.get("replay"), wf.get("bisect")
    out: dict[str, Any] = {"replay": None, "bisect": None, "replay_gap": c.gap(rp), "bisect_gap": c.gap(bs)}
    if rp.ok and rp.output is not None:
        o = rp.output
        enters = str(o.get("fault_enters") or "not_reproducible")
        diffs = [f"{d.get('argument')}: golden {d.get('golden')}, target {d.get('target')}"
                 for d in o.get("differing_inputs") or []]
        out["replay"] = {
            "op": code(str(o.get("op", ""))), "enters": c.val(c.t(f"enters_{enters}"), rp.source),
            "reason": c.val(str(o.get("reason", ""))), "diffs": [c.val(x) for x in diffs],
            "bundle": code(str(o["bundle"])) if o.get("bundle") else None,
        }
    if bs.ok and bs.output is not None:
        o = bs.output
        keep = o.get("keep_high_precision") or []
        out["bisect"] = {
            "keep": c.val(", ".join(str(k) for k in keep) if keep else "—", bs.source),
            "err_low": c.val(fmt_num(o.get("error_all_low"))),
            "err_keep": c.val(fmt_num(o.get("error_with_keep_set"))) if o.get("error_with_keep_set") is not None
            else c.na("not evaluated"),
            "summary": c.val(str(o.get("summary", ""))),
        }
    return out


def _perf_index(r: SkillResult) -> dict[int, dict[str, Any]]:
    if not (r.ok and r.output is not None):
        return {}
    idx = {}
    for row in r.output.get("results") or []:
        bs = row.get("batch_size")
        if isinstance(bs, int):
            idx[bs] = row
    return idx


def _ratio_rows(comp: SkillResult) -> dict[int, dict[str, Any]]:
    """compare_performance's per-batch ratios (with confidence intervals), by batch size."""
    if not (comp.ok and comp.output is not None):
        return {}
    return {row["batch_size"]: row for row in comp.output.get("rows") or []
            if isinstance(row, dict) and isinstance(row.get("batch_size"), int)}


def build_performance(c: Ctx, wf: WorkflowResult) -> dict[str, Any]:
    p = wf.project
    perf = p.performance
    gpu_r, npu_r, comp = wf.get("baseline_perf"), wf.get("target_perf"), wf.get("performance")
    gpu, npu, ratios = _perf_index(gpu_r), _perf_index(npu_r), _ratio_rows(comp)
    cpu_cell = c.na(c.t("na_no_cpu"))
    rows = []
    kpi = p.thresholds.latency_p50_ms
    met_flags: list[bool] = []
    batches = sorted(set(npu) | set(gpu)) or perf.batch_sizes
    for bs in batches:
        for metric, key, unit in (("p50", "p50_ms", "ms"), ("p95", "p95_ms", "ms"), ("throughput", "throughput", "samples/s")):
            gv, nv = _finite(dig(gpu.get(bs), key)), _finite(dig(npu.get(bs), key))
            not_measured = c.na(c.t("na_batch_not_measured").format(bs=bs))
            gcell = c.val(f"{fmt_num(gv)} {unit}") if gv is not None else (c.gap(gpu_r) if not gpu_r.ok else not_measured)
            ncell = c.val(f"{fmt_num(nv)} {unit}") if nv is not None else (c.gap(npu_r) if not npu_r.ok else not_measured)
            rr = ratios.get(bs)
            if metric == "p50" and rr and rr.get("statistic") == "p50" and _finite(rr.get("ratio")) is not None:
                ci = (f" [{fmt_num(rr['ci_low'], 3)}, {fmt_num(rr['ci_high'], 3)}]"
                      if _finite(rr.get("ci_low")) is not None and _finite(rr.get("ci_high")) is not None else "")
                ratio = c.val(f"{fmt_num(rr['ratio'], 3)}×{ci}")
            elif metric == "throughput" and rr and _finite(rr.get("throughput_ratio")) is not None:
                ratio = c.val(f"{fmt_num(rr['throughput_ratio'], 3)}×")
            else:
                ratio = c.val(f"{fmt_num(nv / gv, 3)}×") if gv and nv is not None else c.na(c.t("na_both_sides"))
            target = met = c.na(c.t("na_no_kpi"))
            if metric == "p50" and kpi is not None and bs == min(batches):
                target = c.val(f"≤ {fmt_num(kpi)} ms")
                if nv is not None:
                    met_flags.append(nv <= kpi)
                    met = c.word("yes") if nv <= kpi else c.word("no")
                else:
                    met = c.na(c.t("na_npu_not_measured"))
            rows.append([c.val(f"{metric} (batch {bs})"), cpu_cell, gcell, ncell, c.na(c.t("na_no_cpu")), ratio, target, met])
    if met_flags:
        verdict: str | None = "met" if all(met_flags) else "not_met"
    elif comp.ok and comp.output is not None and kpi is None:
        cv = comp.output.get("verdict")
        verdict = "met" if cv in ("met", "pass") else "not_met" if cv in ("not_met", "fail") else None
    else:
        verdict = None
    settings = npu_r.output["results"][0] if npu_r.ok and npu_r.output and npu_r.output.get("results") else {}
    ms = (npu_r.output or {}).get("settings") or {} if npu_r.ok else {}  # measure_performance's MeasurementSettings
    inference = p.entry.inference or "<inference command>"
    template = (f"acc-agent measure-performance --command {shlex.quote(inference)} "
                f"--batch-sizes {','.join(str(b) for b in perf.batch_sizes)} --warmup {perf.warmup} "
                f"--iterations {perf.iterations} --scope {perf.scope} --out perf/npu_target.json")
    missing = []
    not_exec = dig(npu_r.output, "not_executed") if npu_r.ok else None
    reason = c.val(perf.reason or "—", "mig.yaml performance.reason")
    if isinstance(not_exec, dict):  # measure_performance itself declined (seed 002 §7.0) and said why
        reason = c.val(str(not_exec.get("reason", "")), p.artefacts.target_perf)
        missing += [str(m) for m in not_exec.get("missing_conditions") or []]
        template = str(not_exec.get("command_template") or template)
    if not perf.triggered:
        missing.append(c.t("miss_not_triggered"))
    if not p.artefacts.target_perf:
        missing.append(c.t("miss_target_perf"))
    if not p.artefacts.baseline_perf:
        missing.append(c.t("miss_baseline_perf"))
    causes = [str(x) for x in (comp.output or {}).get("likely_causes") or []] if comp.ok else []
    if perf.bottleneck:
        bottleneck = c.val(perf.bottleneck, "mig.yaml performance.bottleneck")
    elif causes:
        bottleneck = c.val("; ".join(causes[:2]), comp.command)
    else:
        bottleneck = c.na(c.t("na_no_bottleneck"), comp.command if not comp.ok else "")
    tsrc = p.artefacts.target_perf if settings else ""
    return {
        "cpu_note": c.na(c.t("na_cpu_not_requested")),
        "executed": perf.triggered and bool(npu),
        "triggered": perf.triggered,
        "reason": reason,
        "missing": [c.val(m) for m in missing],
        "template": code(template),
        "rows": rows,
        "verdict": verdict,
        "scope": c.val(str(settings.get("scope") or perf.scope), tsrc or "mig.yaml performance.scope"),
        "warmup": c.val(str(settings.get("warmup", perf.warmup)), tsrc or "mig.yaml performance.warmup"),
        "iterations": c.val(str(settings.get("iterations", perf.iterations)), tsrc or "mig.yaml performance.iterations"),
        "batches": c.val(", ".join(str(b) for b in batches)),
        "concurrency": c.val(str(ms.get("concurrency") or perf.concurrency)),
        "scope_description": c.val(str(ms["scope_description"])) if ms.get("scope_description") else Markup(""),
        "warmup_reason": c.val(str(ms.get("warmup_reason") or c.t("warmup_reason"))),
        "iterations_reason": c.val(str(ms["iterations_reason"])) if ms.get("iterations_reason") else Markup(""),
        "sync": c.val(str(ms["synchronisation"])) if ms.get("synchronisation") else c.na(c.t("na_not_recorded")),
        "throughput_def": c.val(str(ms.get("throughput_definition") or settings.get("throughput_unit")
                                    or "samples/s = batch_size / mean latency")),
        "reproducibility": c.val(perf.reproducibility) if perf.reproducibility else c.na(c.t("na_no_repro")),
        "stages": [[c.val(s.get("stage", "")), c.val(s.get("time_ms", "")), c.val(s.get("source", ""))] for s in perf.stages],
        "bottleneck": bottleneck,
        "mismatches": [c.val(str(m)) for m in (comp.output or {}).get("mismatches") or []] if comp.ok else [],
        "compare": c.val(f"[{comp.output.get('verdict')}] {comp.output.get('summary', '')}", comp.command)
        if comp.ok and comp.output else c.gap(comp),
        "sources": [x for x in (p.artefacts.baseline_perf, p.artefacts.target_perf) if x],
        "table_sources": Markup(", ".join(f"{md_escape(c.t(label))} {code(src)}" for label, src in (
            ("lbl_gpu_baseline", p.artefacts.baseline_perf), ("lbl_npu", p.artefacts.target_perf),
            ("lbl_ratio", comp.command if comp.ok else ""),
            ("lbl_target", "mig.yaml thresholds.latency_p50_ms" if kpi is not None else "")) if src)),
    }


def build_environment(c: Ctx, wf: WorkflowResult) -> dict[str, Any]:
    r = wf.get("environment")
    if not (r.ok and r.output is not None):
        return {"verdict": c.gap(r), "checks": [], "versions": [], "code": None}
    checks = []
    base = f"{wf.project.base_dir}/"
    for ch in r.output.get("checks") or []:
        if isinstance(ch, dict):
            why = str(ch.get("reason") or ch.get("detail") or "")
            if ch.get("fix"):
                why += f" — fix: {ch['fix']}"
            checks.append([code(str(ch.get("name", ""))), c.val(str(ch.get("status", ""))),
                           c.val(str(ch["value"])) if ch.get("value") not in (None, "") else c.na(c.t("na_not_found")),
                           c.val(why or "—"), code(str(ch["source"]).replace(base, "")) if ch.get("source") else c.val("—")])
    versions = []
    for group in ("versions", "system"):
        for key, value in sorted((r.output.get(group) or {}).items()):
            versions.append([c.val(key), c.val(str(value)) if value not in (None, "") else c.na(c.t("na_not_found"))])
    return {"verdict": c.val(f"{r.output.get('verdict')} — {r.output.get('summary', '')}", r.command),
            "checks": checks, "versions": versions, "code": r.output.get("verdict")}


def _box(c: Ctx, key: str, ticked: bool, evidence: Markup) -> dict[str, Any]:
    return {"label": c.word("v_" + key), "key": key, "ticked": ticked, "evidence": evidence}


def build_verification(c: Ctx, wf: WorkflowResult, tr: dict[str, Any], golden: dict[str, Any],
                       dumps: dict[str, Any], perf: dict[str, Any]) -> list[dict[str, Any]]:
    """Mig_report §6: a box is ticked only when a named piece of evidence supports it."""
    p = wf.project
    att = p.attested
    boxes = []

    def attested(key: str) -> Markup | None:
        ev = att.get(key)  # type: ignore[call-overload]
        return c.val(c.t("v_attested"), f"mig.yaml attested.{key}: {ev.ref}") if ev is not None and ev.done else None

    ev = attested("code_migration")
    boxes.append(_box(c, "code_migration", ev is not None, ev or c.na(c.t("na_no_code_evidence"))))
    ev = attested("npu_load")
    if ev is None and dumps["ok"]:
        ev = c.val(c.t("v_target_dump"), p.artefacts.target_dump)
    boxes.append(_box(c, "npu_load", ev is not None, ev or c.na(c.t("na_no_target_dump"))))
    ev = attested("inference_smoke")
    if ev is None and golden["nan_free"] is True:
        ev = c.val(c.t("v_golden_nan_free"), wf.get("golden").command)
    boxes.append(_box(c, "inference_smoke", ev is not None, ev or c.na(c.t("na_needs_golden"), wf.get("golden").command)))
    g_ok = golden["verdict"] == "pass"
    boxes.append(_box(c, "golden", g_ok, c.val(f"compare_tensors verdict: {golden['verdict']}", wf.get("golden").command)
                      if golden["verdict"] else c.gap(wf.get("golden"))))
    ev = attested("training_smoke")
    if ev is None and tr.get("finite_first_loss") is not None:
        ev = c.val(c.t("v_first_loss"), f"{p.artefacts.target_log}, first step")
    boxes.append(_box(c, "training_smoke", ev is not None, ev or c.na(c.t("na_target_not_parsed"), wf.get("target_log").command)))
    srv = tr.get("short_run_verdict")
    boxes.append(_box(c, "short_run", srv == "pass", c.val(f"judge_short_run verdict: {srv}", wf.get("short_run").command)
                      if srv else c.gap(wf.get("short_run"))))
    cv = tr.get("curves_verdict")
    boxes.append(_box(c, "formal_training", cv in ("pass", "match", "identical"), c.val(f"compare_loss_curves: {tr.get('curves_verdict_words')}", wf.get("loss_curves").command)
                      if cv else c.gap(wf.get("loss_curves"))))
    ev = attested("full_accuracy")
    boxes.append(_box(c, "full_accuracy", ev is not None, ev or c.na(c.t("na_no_full_acc"))))
    pv = perf["verdict"]
    boxes.append(_box(c, "performance", pv == "met", c.val(f"performance: {pv}", ", ".join(perf["sources"]))
                      if pv else c.na(c.t("na_perf_no_result" if perf["triggered"] else "na_perf_not_triggered"))))
    return boxes


def overall(accuracy: str | None, performance: str | None) -> str:
    verdicts = [v for v in (accuracy, performance) if v is not None]
    if "not_met" in verdicts:
        return "fail"
    if len(verdicts) == 2:
        return "pass"
    return "pass_with_conditions" if verdicts else "na"


def build_context(wf: WorkflowResult, lang: str, plots: dict[str, str] | None = None) -> dict[str, Any]:
    c = Ctx(lang)
    p = wf.project
    tr = build_training(c, wf)
    golden = build_golden(c, wf)
    dumps = build_dumps(c, wf)
    perf = build_performance(c, wf)
    accuracy: str | None = None
    if golden["verdict"] == "pass" and dumps["verdict"] in (None, "pass"):
        accuracy = "met"
    elif golden["verdict"] == "fail" or dumps["verdict"] == "fail":
        accuracy = "not_met"
    ov = overall(accuracy, perf["verdict"])
    status = {"pass": "st_adapted", "fail": "st_failed", "pass_with_conditions": "st_conditional", "na": "st_in_progress"}[ov]
    gaps = [{"slot": r.slot, "tool": r.tool,
             "reason": c.val(c.t(r.why_key).format(**r.why_args) if r.why_key else r.reason), "command": code(r.command)}
            for r in wf.results.values() if not r.ok and r.status != "not_applicable"]
    return {
        "p": p,
        "today": p.project.date or date.today().isoformat(),
        "baseline": build_baseline(c, wf),
        "datasets": build_datasets(c, p),
        # Summary names the datasets from the same rows Compare §2.4 lists (a row without a name shows its path)
        "dataset_names": ", ".join(dict.fromkeys(d.dataset or d.path or d.purpose for d in p.datasets)),
        "th": build_thresholds(c, p),
        "training": tr,
        "golden": golden,
        "dumps": dumps,
        "loc": build_localisation(c, wf),
        "perf": perf,
        "env": build_environment(c, wf),
        "boxes": build_verification(c, wf, tr, golden, dumps, perf),
        "accuracy": accuracy,
        "performance": perf["verdict"],
        "overall": ov,
        "status": status,
        "gaps": gaps,
        "plots": plots or {},
        "io_rows": [[c.val(r.get("name", "")), c.val(r.get("shape", "")), c.val(r.get("dtype", ""))] for r in p.model.io_contract],
        "param_rows": [[code(r.get("parameter", "")), c.val(r.get("meaning", "")), c.val(r.get("default", ""))]
                       for r in p.entry.parameters],
        "changes": [[c.val(r.get("area", "")), c.val(r.get("change", ""))] for r in p.changes],
        "risks": [[c.val(r.get("risk", "")), c.val(r.get("level", "")), c.val(r.get("mitigation", ""))] for r in p.risks],
        "problems": [[c.val(r.get(k, "")) for k in ("date", "problem", "command", "error", "tried", "root_cause", "fix")]
                     for r in p.problems] + build_found_problems(c, wf),
        "cell": c,
        "vc": {
            "accuracy": c.word(accuracy) if accuracy else c.na(c.t("na_no_acc_verdict")),
            "performance": c.word(perf["verdict"]) if perf["verdict"] else c.na(c.t("na_no_perf_verdict")),
            "overall": c.word(ov) if ov != "na" else c.na(c.t("na_nothing")),
        },
    }
