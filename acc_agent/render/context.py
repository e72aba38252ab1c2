"""Turn a workflow result into what the templates print: cells that carry their source or their gap.

Why here and not in the templates: every number must name its source and every missing one must
say why and how to fill it. Doing that once in Python keeps the four documents (and both
languages) quoting the very same cell, which is what the consistency check then verifies.

Three rules run through every builder below:

- a verdict or status is printed as a word of the document's language (:func:`i18n.word`), never
  as the tool's machine value;
- a tool's own sentence goes through :func:`tooltext.tool_text`, which prints it in the
  document's language with paths relative to the project folder;
- an environment fact says whether it was recorded (a file the project gives) or probed on the
  machine that ran the report, and the two are never put in one table.
"""

from __future__ import annotations

import math
import os
import re
import shlex
from datetime import date, datetime, timezone
from pathlib import Path
from typing import Any

from markupsafe import Markup

from acc_agent.app.workflow import SkillResult, WorkflowResult
from acc_agent.models.project import Project
from acc_agent.render.curve_cells import curve_cells
from acc_agent.render.env import code, fmt_num, md_escape
from acc_agent.render.i18n import translate, word
from acc_agent.render.tooltext import tool_text


def generation_date() -> str:
    """The date a report is generated: ``SOURCE_DATE_EPOCH`` when set (reproducible builds), else today (UTC).

    Why not mig.yaml's ``project.date``: that is the project's own date, and a report re-rendered a
    month later must not claim to be a month older than it is.
    """
    epoch = os.environ.get("SOURCE_DATE_EPOCH", "").strip()
    if epoch.isdigit():
        return datetime.fromtimestamp(int(epoch), tz=timezone.utc).date().isoformat()
    return date.today().isoformat()


class Ctx:
    """Cell builders bound to one language and one project folder."""

    def __init__(self, lang: str, base_dir: Path | None = None) -> None:
        self.lang = lang
        self.base = str(base_dir) if base_dir is not None else None

    def t(self, key: str) -> str:
        return translate(key, self.lang)

    def na(self, reason: str, command: str = "") -> Markup:
        text = f"N/A — {md_escape(reason)}"
        if command:
            text += f"; {md_escape(self.t('fill_with'))}: {code(command)}"
        return Markup(text)

    def gap(self, result: SkillResult, command: str | None = None) -> Markup:
        """N/A with the reason and the command that fills it (``command`` when the plan's own line
        still holds placeholders the report can already fill)."""
        reason = result.reason or f"{result.tool}: {result.status}"
        reason = self.t(result.why_key).format(**result.why_args) if result.why_key else self.tt(reason)
        return self.na(reason, result.command if command is None else command)

    def val(self, text: Any, source: str = "") -> Markup:
        body = md_escape(fmt_num(text) if isinstance(text, float) else text)
        if source:
            body += f" ({md_escape(self.t('source'))}: {code(source)})"
        return Markup(body)

    def word(self, key: str) -> Markup:
        return Markup(md_escape(self.t(key)))

    def vw(self, kind: str, value: Any) -> Markup:
        """A verdict or status word (see i18n.WORDS)."""
        return Markup(md_escape(word(kind, str(value), self.lang)))

    def tt(self, text: Any) -> str:
        """A tool's sentence in this document's language, paths relative to the project."""
        return tool_text(str(text), self.lang, self.base)

    def tool(self, text: Any, source: str = "") -> Markup:
        """A tool's sentence as a cell, with its source."""
        return self.val(self.tt(text), source)


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


def _array_summary(c: Ctx, path: Path, key: str) -> str | None:
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
        return c.t("arr_all_bad").format(shape=list(arr.shape), dtype=arr.dtype, bad=bad)
    text = c.t("arr_summary").format(shape=list(arr.shape), dtype=arr.dtype, mean=fmt_num(float(finite.mean())),
                                     max=fmt_num(float(finite.max())))
    return text + (c.t("arr_bad").format(bad=bad) if bad else "")


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
    """Where the baseline comes from: select_baseline's answer, else the same rule applied to mig.yaml.

    The rule: a complete project training log is quoted (no rerun); otherwise the user measures the
    GPU baseline with the Mig_Readme §2.6 commands; with no GPU either, there is no comparison (N/A
    with the reason) rather than a misleading one.
    """
    p = wf.project
    r = wf.get("baseline")
    a = p.artefacts
    if r.ok and r.output is not None:
        source = str(r.output.get("source") or "na")
        log = str(r.output.get("log_path") or "")
        base = f"{p.base_dir}/"
        if log.startswith(base):
            log = log[len(base):]
        reason = c.tt(r.output.get("reason") or r.output.get("summary") or "")
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
        why = c.t(r.why_key).format(**r.why_args) if r.why_key else c.tt(r.reason)
        reason += " (" + c.t("b_not_run").format(why=why) + ")"
        origin = "mig.yaml"
    if source not in ("project_log", "gpu_measured", "cpu_log", "na"):
        source = "na"
    rows26 = _interface_rows(c, p, r)
    return {
        "code": source,
        "label": c.vw("baseline", source),
        "log": code(log) if log else c.na(c.t("na_no_baseline_log") if source != "project_log" else c.t("na_log_path")),
        "reason": c.val(reason, origin),
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
             c.t("sc_params_infer").format(batch=batch, weights=weights), c.word("p_inference_acceptance"),
             c.word("sc_note_infer")],
            [c.word("sc_gpu_train"), "GPU", code(e.baseline_train) if e.baseline_train else na,
             c.t("sc_params_train").format(batch=batch), c.word("p_short_run"), c.word("sc_note_train")],
            [c.word("sc_cpu"), "CPU", c.word("sc_cpu_entry"), "batch 1", c.word("p_smoke"), c.word("sc_note_cpu")],
        ]
    rows = []
    for row in (r.output or {}).get("commands") or [] if r.ok else []:
        if isinstance(row, dict):
            rows.append([c.val(c.tt(row.get("scenario", ""))), c.val(str(row.get("device", ""))),
                         code(str(row.get("command", ""))), c.val(str(row.get("key_parameters", ""))),
                         c.val(c.tt(row.get("aligns_with", ""))), c.val(c.tt(row.get("notes", "")))])
    if rows:
        return rows
    why = c.na(c.t("na_no_baseline_cmd"),
               r.command if not r.ok else "acc-agent select-baseline . --entry <script>")
    return [[c.word("sc_gpu_infer"), "GPU", why, why, c.word("p_inference_acceptance"), c.word("sc_note_infer")]]


def build_datasets(c: Ctx, p: Project) -> list[list[Markup]]:
    rows = []
    for d in p.datasets:
        same = c.word("yes") if d.same_as_baseline else c.word("no") if d.same_as_baseline is False else c.na(c.t("na_not_stated"))
        rows.append([c.word("p_" + d.purpose), c.val(d.dataset) if d.dataset else c.na(c.t("na_no_dataset_name")),
                     c.val(d.subset or "—"), same,
                     code(d.path) if d.path else c.na(c.t("na_no_local_path"))])
    return rows


def build_thresholds(c: Ctx, p: Project) -> dict[str, Markup]:
    t = p.thresholds
    rtol, atol, tol_src = p.tolerance()
    tol_src = c.t("tol_reference").format(precision=p.model.target_precision.upper()) \
        if tol_src.startswith("reference for") else tol_src
    return {
        "band": c.val(f"{t.short_run_band[0] * 100:g} %–{t.short_run_band[1] * 100:g} %", "mig.yaml thresholds.short_run_band"),
        "window": c.val(t.short_run_window or c.t("whole_log"), "mig.yaml thresholds.short_run_window"),
        "flat": c.val(str(t.flat_steps_limit), "mig.yaml thresholds.flat_steps_limit"),
        "metric": c.val(t.loss_metric, "mig.yaml thresholds.loss_metric"),
        "rtol": c.val(fmt_num(rtol), tol_src),
        "atol": c.val(fmt_num(atol), tol_src),
        "tolerance": c.val(f"rtol {fmt_num(rtol)}, atol {fmt_num(atol)}", tol_src),
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
        out[side] = (c.val(last[1], c.t("src_step").format(log=rel, step=last[0])) if last
                     else c.na(c.t("na_no_series").format(metric=metric, log=rel), r.command))
    b, tg = finals["baseline_log"], finals["target_log"]
    if b and tg:
        diff = tg[1] - b[1]
        rel_pct = f" ({fmt_num(diff / b[1] * 100, 3)} %)" if b[1] else ""
        out["diff"] = c.val(f"{fmt_num(diff)}{rel_pct}", c.t("src_final_difference"))
    else:
        out["diff"] = c.na(c.t("na_both_logs"))
    first = _finite(dig(wf.get("target_log").output, "series", metric, 0, "value")) if wf.get("target_log").ok else None
    out["finite_first_loss"] = first
    sr = wf.get("short_run")
    if sr.ok and sr.output is not None:
        drop = _finite(sr.output.get("relative_drop"))
        ws, we = dig(sr.output, "window", "start_step"), dig(sr.output, "window", "end_step")
        src = c.t("src_steps").format(log=p.artefacts.target_log, a=ws, b=we, command=sr.command)
        out["short_run"] = (c.val(f"{drop * 100:.1f} %", src) if drop is not None else c.na(c.t("na_drop"), sr.command))
        out["short_run_verdict"] = str(sr.output.get("verdict"))
        # slightly above the band is allowed (with the actual percentage written down): a pass
        out["short_run_met"] = out["short_run_verdict"] in ("pass", "pass_above_band")
        out["short_run_word"] = c.vw("short_run", sr.output.get("verdict"))
    else:
        out["short_run"] = c.gap(sr)
        out["short_run_verdict"] = None
        out["short_run_met"] = False
        out["short_run_word"] = c.gap(sr)
    lc = wf.get("loss_curves")
    out["curves_verdict"] = str(lc.output.get("verdict")) if lc.ok and lc.output else None
    out["curves"] = c.gap(lc)
    out.update(curve_cells(c, lc.output if lc.ok else None, lc.command))
    return out


def _tensors_summary(c: Ctx, output: dict[str, Any]) -> str:
    """compare_tensors' result in one sentence, from its fields (the tool's summary is the English form)."""
    rows = _metric_rows(output)
    tol = output.get("tolerance") or {}
    n_pass = sum(1 for r in rows if r.get("verdict") == "pass")
    text = c.t("gt_summary").format(n=n_pass, total=len(rows), rtol=f"{tol.get('rtol', 0):g}",
                                    atol=f"{tol.get('atol', 0):g}", precision=str(tol.get("precision", "")).upper())
    bad = [r for r in rows if r.get("verdict") != "pass"]
    if bad:
        text += f"; {bad[0].get('name')}: {c.tt(bad[0].get('message', ''))}"
    return text


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
        gsum = _array_summary(c, gpath, key) if gpath else None
        tsum = _array_summary(c, tpath, key) if tpath and tpath.is_file() else None
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
                c.na(c.tt(dig(erow, "na_reasons", "top1_agreement") or c.t("na_not_computed"))) if erow else missing),
            c.vw("tensor", erow.get("verdict") or erow.get("status") or "") if erow else missing,
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
            "summary": c.val(_tensors_summary(c, r.output), r.command) if r.ok and r.output else c.gap(r)}


def _rel_l2(row: dict[str, Any]) -> float | None:
    """‖target − golden‖₂ / ‖golden‖₂ of a row: EucDist over the golden norm (both computed by compare_dumps)."""
    euc, norm = _finite(row.get("euc_dist")), _finite(row.get("golden_norm"))
    return euc / norm if euc is not None and norm else None


def build_dumps(c: Ctx, wf: WorkflowResult, limit: int = 40) -> dict[str, Any]:
    r = wf.get("dumps")
    if not (r.ok and r.output is not None):
        return {"ok": False, "gap": c.gap(r), "rows": [], "verdict": None, "first": c.gap(r), "category": c.gap(r),
                "category_code": None, "first_name": None, "first_reason": Markup(""), "explanation": Markup(""),
                "next_actions": [], "total": 0, "shown": 0, "summary": c.gap(r)}
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
        cells: list[Any] = [code(row.get("name", ""))]
        for key in ("cosine", "rel_l2", "max_abs_err", "max_rel_err", "one_thousandth_ratio"):
            v = _rel_l2(row) if key == "rel_l2" else _finite(row.get(key))
            reason = dig(row, "na_reasons", key) or c.t("na_not_computable")
            shown = f"{v:.6f}" if key == "cosine" and v is not None else v
            cells.append(c.val(shown) if v is not None else c.na(c.tt(reason)))
        cells.append(c.vw("row", row.get("status", "")))
        rows.append(cells)
    cat = dig(out, "diagnosis", "category")
    fd_l2 = _finite(dig(fd, "output_metrics", "rel_l2_err")) if isinstance(fd, dict) else None
    return {
        "ok": True, "rows": rows, "verdict": str(out.get("verdict")),
        "total": max(len(all_rows), int(out.get("rows_total") or 0)), "shown": len(rows),
        "unique": len(unique), "window": f"{start + 1}–{start + len(rows)}" if rows else "0",
        "csv_command": code(f"{r.command} --csv compare_dumps.csv"),
        "first": c.val(str(fd.get("name")), r.command) if isinstance(fd, dict) and fd.get("name")
        else c.val(c.t("v_none_found"), r.command),
        "first_l2": c.val(fd_l2) if fd_l2 is not None else None,
        "first_name": fd.get("name") if isinstance(fd, dict) else None,
        "first_reason": c.val(c.tt(fd.get("reason") or "")) if isinstance(fd, dict) else Markup(""),
        "category": c.vw("category", cat) if cat else c.na(c.t("na_no_diagnosis")),
        "category_code": str(cat) if cat else None,
        "explanation": c.val(c.tt(dig(out, "diagnosis", "explanation") or "")),
        "next_actions": [c.val(c.tt(a)) for a in (dig(out, "diagnosis", "next_actions") or [])],
        "summary": c.val(c.tt(out.get("summary", "")), r.command),
    }


def build_found_problems(c: Ctx, wf: WorkflowResult, generated: str, env: dict[str, Any]) -> list[list[Markup]]:
    """Problem-log rows for what the tools found (failing verdicts), beside the ones logged by hand.

    A report whose comparison found an operator fault must not say "no problems": the fault, the
    command that found it, its cause and the first next action are the log entry, marked as found
    by the tool (what was tried stays for the engineer to fill in). The environment counts only when
    the recorded target environment fails, never the machine that happened to run the report.
    """
    from acc_agent.registry import get_tool

    rows: list[list[Markup]] = []
    for slot in ("environment", "golden", "dumps", "short_run", "loss_curves", "performance"):
        r = wf.results.get(slot)
        if r is None or not r.ok or r.output is None:
            continue
        if slot == "environment":
            if env.get("recorded_failing"):
                rows.append([c.val(generated), c.val(c.t("pf_environment")), code(r.command),
                             c.val(", ".join(env["recorded_failing"])), c.val(c.t("pf_found_by_tool")),
                             c.val(c.t("pf_see_section")), c.val("—")])
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
        if isinstance(fd, dict) and fd.get("name"):
            error = str(fd.get("name"))
        elif slot == "golden":
            error = _tensors_summary(c, r.output)
        elif slot == "performance":
            error = _perf_compare_sentence(c, r.output)
        else:
            error = c.tt(r.output.get("summary", ""))
        cause = (f"{word('category', str(dig(diag, 'category')), c.lang)}: {c.tt(dig(diag, 'explanation'))}"
                 if isinstance(diag, dict) else c.t("pf_see_section"))
        rows.append([c.val(generated), c.val(c.t(f"pf_{slot}")), code(r.command), c.val(error),
                     c.val(c.t("pf_found_by_tool")), c.val(cause), c.val(c.tt(actions[0]) if actions else "—")])
    return rows


def build_localisation(c: Ctx, wf: WorkflowResult) -> dict[str, Any]:
    """Replay (kernel or inputs?) and precision bisection, from their saved results when mig.yaml gives them."""
    rp, bs = wf.get("replay"), wf.get("bisect")
    out: dict[str, Any] = {"replay": None, "bisect": None, "replay_gap": c.gap(rp, _replay_command(wf)),
                           "bisect_gap": c.gap(bs)}
    if rp.ok and rp.output is not None:
        o = rp.output
        enters = str(o.get("fault_enters") or "not_reproducible")
        diffs = [c.t("loc_diff").format(arg=d.get("argument"), golden=_shown(d.get("golden")), target=_shown(d.get("target")))
                 for d in o.get("differing_inputs") or []]
        out["replay"] = {
            "op": code(str(o.get("op", ""))), "enters": c.val(c.t(f"enters_{enters}"), rp.source),
            "reason": c.val(c.tt(o.get("reason", ""))), "diffs": [c.val(x) for x in diffs],
            "bundle": code(str(o["bundle"])) if o.get("bundle") else None,
        }
    if bs.ok and bs.output is not None:
        o = bs.output
        keep = o.get("keep_high_precision") or []
        err_low = _finite(o.get("error_all_low"))
        err_keep = _finite(o.get("error_with_keep_set"))
        out["bisect"] = {
            "keep": c.val(", ".join(str(k) for k in keep) if keep else "—", bs.source),
            "err_low": c.val(fmt_num(err_low)) if err_low is not None else c.na(c.t("na_not_evaluated")),
            "err_keep": c.val(fmt_num(err_keep)) if err_keep is not None else c.na(c.t("na_not_evaluated")),
            "summary": c.val(c.tt(o.get("summary", ""))),
        }
    return out


def _replay_command(wf: WorkflowResult) -> str:
    """The replay-op line that fills the replay step: the two dumps compare_dumps read, and the call it
    found diverging (a placeholder only while there is none), so the reader can run it as printed."""
    dumps = wf.get("dumps")
    try:
        words = shlex.split(dumps.command)
    except ValueError:
        words = []
    sides = ([w if w.startswith("<") else shlex.quote(w) for w in words[2:4]] if len(words) >= 4
             else ["<DUMPS.GOLDEN>", "<DUMPS.TARGET>"])  # placeholders stay as the other fill-in lines print them
    fd = (dumps.output or {}).get("first_divergence") if dumps.ok else None
    call = fd.get("module") if isinstance(fd, dict) else None
    op = shlex.quote(str(call)) if call else "'<first divergence call>'"
    return f"acc-agent replay-op {sides[0]} {sides[1]} --op {op}"


def _shown(value: Any) -> str:
    """A recorded value as text: never a Python repr such as None."""
    if value is None:
        return "—"
    if isinstance(value, float):
        return fmt_num(value)
    return str(value)


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


def _perf_compare_sentence(c: Ctx, output: dict[str, Any]) -> str:
    """compare_performance's verdict against the baseline in words, from its rows (worst ratio first)."""
    verdict = word("performance", str(output.get("verdict")), c.lang)
    rows = [r for r in output.get("rows") or [] if isinstance(r, dict) and _finite(r.get("ratio")) is not None]
    if not rows:
        return f"{verdict} — {c.tt(_strip_verdict(str(output.get('summary', ''))))}"
    worst = max(rows, key=lambda r: float(r["ratio"]))
    ci = (f" [{fmt_num(worst['ci_low'], 4)}, {fmt_num(worst['ci_high'], 4)}]"
          if _finite(worst.get("ci_low")) is not None and _finite(worst.get("ci_high")) is not None else "")
    return verdict + " — " + c.t("perf_vs_baseline").format(
        statistic=output.get("statistic", "p50"), ratio=fmt_num(worst["ratio"], 4), ci=ci, bs=worst["batch_size"],
        allowed=f"{float(output.get('target_ratio', 1.0)):g}")


def _strip_verdict(summary: str) -> str:
    """A tool summary without its leading ``verdict:`` word (the report prints the verdict as a word)."""
    head, sep, rest = summary.partition(": ")
    return rest if sep and head.replace("_", "").isalpha() and head == head.lower() and " " not in head else summary


def _env_pair(gpu: dict[str, Any], npu: dict[str, Any]) -> tuple[list[str], list[str]]:
    """Keys recorded with both timing results: the equal ones and the differing ones (key: baseline vs target)."""
    same, differ = [], []
    for key in sorted(set(gpu) & set(npu)):
        if gpu[key] in (None, "") and npu[key] in (None, ""):
            continue
        if gpu[key] == npu[key]:
            same.append(key)
        else:
            differ.append(f"{key}: {_shown(gpu[key])} / {_shown(npu[key])}")
    return same, differ


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
    kpi_batch = min(batches) if batches else None
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
            if metric == "p50" and kpi is not None and bs == kpi_batch:
                target = c.val(f"≤ {fmt_num(kpi)} ms")
                if nv is not None:
                    met_flags.append(nv <= kpi)
                    met = c.word("yes") if nv <= kpi else c.word("no")
                else:
                    met = c.na(c.t("na_npu_not_measured"))
            label = c.t("perf_row").format(metric=c.t("m_" + metric), bs=bs)
            rows.append([c.val(label), cpu_cell, gcell, ncell, c.na(c.t("na_no_cpu")), ratio, target, met])
    kpi_verdict: str | None = ("met" if all(met_flags) else "not_met") if met_flags else None
    base_verdict: str | None = None
    if comp.ok and comp.output is not None:
        base_verdict = str(comp.output.get("verdict"))
    # The acceptance verdict: the KPI when acceptance has one, else the comparison with the baseline.
    verdict = kpi_verdict if kpi is not None else base_verdict if base_verdict in ("met", "not_met") else None
    settings = npu_r.output["results"][0] if npu_r.ok and npu_r.output and npu_r.output.get("results") else {}
    ms = (npu_r.output or {}).get("settings") or {} if npu_r.ok else {}  # measure_performance's MeasurementSettings
    inference = p.entry.inference or "<inference command>"
    template = (f"acc-agent measure-performance --command {shlex.quote(inference)} "
                f"--batch-sizes {','.join(str(b) for b in perf.batch_sizes)} --warmup {perf.warmup} "
                f"--iterations {perf.iterations} --scope {perf.scope} --out perf/npu_target.json")
    missing: list[str] = []
    not_exec = dig(npu_r.output, "not_executed") if npu_r.ok else None
    reason = c.val(perf.reason or "—", "mig.yaml performance.reason")
    if isinstance(not_exec, dict):  # measure_performance itself declined (it was not triggered) and said why
        reason = c.val(c.tt(not_exec.get("reason", "")), p.artefacts.target_perf)
        missing += [c.tt(m) for m in not_exec.get("missing_conditions") or []]
        template = str(not_exec.get("command_template") or template)
    if not perf.triggered:
        missing.append(c.t("miss_not_triggered"))
    if not p.artefacts.target_perf:
        missing.append(c.t("miss_target_perf"))
    if not p.artefacts.baseline_perf:
        missing.append(c.t("miss_baseline_perf"))
    causes = [c.tt(x) for x in (comp.output or {}).get("likely_causes") or []] if comp.ok else []
    if perf.bottleneck:
        bottleneck = c.val(perf.bottleneck, "mig.yaml performance.bottleneck")
    elif causes:
        bottleneck = c.val("; ".join(causes[:2]), comp.command)
    else:
        bottleneck = c.na(c.t("na_no_bottleneck"), comp.command if not comp.ok else "")
    tsrc = p.artefacts.target_perf if settings else ""
    kpi_cell = (c.val(c.t("perf_vs_kpi").format(word=word("performance", kpi_verdict, c.lang),
                                                kpi=fmt_num(kpi), bs=kpi_batch), "mig.yaml thresholds.latency_p50_ms")
                if kpi_verdict is not None and kpi is not None
                else c.na(c.t("na_no_latency_kpi") if kpi is None else c.t("na_npu_not_measured")))
    base_cell = (c.val(_perf_compare_sentence(c, comp.output), comp.command) if comp.ok and comp.output
                 else c.gap(comp))
    # What the two timing results say about the machines they ran on: only what they recorded.
    g_env = (gpu_r.output or {}).get("environment") if gpu_r.ok else None
    n_env = (npu_r.output or {}).get("environment") if npu_r.ok else None
    if isinstance(g_env, dict) and isinstance(n_env, dict) and (g_env or n_env):
        same, differ = _env_pair(g_env, n_env)
        sides = c.val(c.t("perf_env_recorded").format(same=", ".join(same) or "—", differ="; ".join(differ) or "—"),
                      f"{p.artefacts.baseline_perf}, {p.artefacts.target_perf}")
    else:
        sides = c.na(c.t("na_perf_env"))
    mismatches = [c.tt(m) for m in (comp.output or {}).get("mismatches") or []] if comp.ok else []
    settings_check = (c.val(c.t("perf_settings_same") if not mismatches else c.t("perf_settings_differ")
                            .format(n=len(mismatches)), comp.command) if comp.ok else c.gap(comp))
    return {
        "cpu_note": c.na(c.t("na_cpu_not_requested")),
        "executed": perf.triggered and bool(npu),
        "triggered": perf.triggered,
        "reason": reason,
        "missing": [c.val(m) for m in missing],
        "template": code(template),
        "rows": rows,
        "verdict": verdict,
        "kpi_verdict": kpi_verdict,
        "baseline_verdict": base_verdict,
        "kpi_cell": kpi_cell,
        "baseline_cell": base_cell,
        "sides": sides,
        "settings_check": settings_check,
        "scope": c.val(word("scope", str(settings.get("scope") or perf.scope), c.lang), tsrc or "mig.yaml performance.scope"),
        "warmup": c.val(str(settings.get("warmup", perf.warmup)), tsrc or "mig.yaml performance.warmup"),
        "iterations": c.val(str(settings.get("iterations", perf.iterations)), tsrc or "mig.yaml performance.iterations"),
        "batches": c.val(", ".join(str(b) for b in batches)),
        "concurrency": c.val(c.tt(ms.get("concurrency") or perf.concurrency)),
        "scope_description": c.val(c.tt(ms["scope_description"])) if ms.get("scope_description") else Markup(""),
        "warmup_reason": c.val(c.tt(ms["warmup_reason"])) if ms.get("warmup_reason") else c.word("warmup_reason"),
        "iterations_reason": c.val(c.tt(ms["iterations_reason"])) if ms.get("iterations_reason") else Markup(""),
        "sync": c.val(c.tt(ms["synchronisation"])) if ms.get("synchronisation") else c.na(c.t("na_not_recorded")),
        "throughput_def": c.val(c.tt(ms.get("throughput_definition") or settings.get("throughput_unit"))
                                if ms.get("throughput_definition") or settings.get("throughput_unit")
                                else c.t("throughput_default")),
        "reproducibility": c.val(perf.reproducibility) if perf.reproducibility else c.na(c.t("na_no_repro")),
        "stages": [[c.val(s.get("stage", "")), c.val(s.get("time_ms", "")), c.val(s.get("source", ""))] for s in perf.stages],
        "bottleneck": bottleneck,
        "mismatches": [c.val(m) for m in mismatches],
        "sources": [x for x in (p.artefacts.baseline_perf, p.artefacts.target_perf) if x],
        "table_sources": Markup(", ".join(f"{md_escape(c.t(label))} {code(src)}" for label, src in (
            ("lbl_gpu_baseline", p.artefacts.baseline_perf), ("lbl_npu", p.artefacts.target_perf),
            ("lbl_ratio", comp.command if comp.ok else ""),
            ("lbl_target", "mig.yaml thresholds.latency_p50_ms" if kpi is not None else "")) if src)),
    }


#: Check sources that name this machine's state, not a file the project recorded.
_VERSION_SOURCES = {"torch": "src_packages", "torch_npu": "src_packages", "mindspore": "src_packages"}


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


def build_environment(c: Ctx, wf: WorkflowResult) -> dict[str, Any]:
    """The recorded target environment, and apart from it what was probed on the machine running the report.

    A saved check_environment result (``artefacts.results.environment``, written with
    ``--snapshot-out`` on the target) is all recorded. A check run by the report itself reads the
    recorded files mig.yaml names (``npu-smi info`` output) and, for everything else, the machine the
    report runs on: those rows go to their own table, labelled, so a reviewer never reads the
    report machine's missing driver as the target's.
    """
    p = wf.project
    r = wf.get("environment")
    empty: dict[str, Any] = {"ok": False, "gap": c.gap(r), "recorded": [], "recorded_summary": c.gap(r),
                             "recorded_failing": [], "live": [], "live_verdict": c.gap(r), "versions": [], "saved": False}
    if not (r.ok and r.output is not None):
        return empty
    out = r.output
    saved = r.status == "saved"
    files = _recorded_files(p)
    base = f"{p.base_dir}/"
    recorded: list[list[Any]] = []
    live: list[list[Any]] = []
    failing: list[str] = []
    for ch in out.get("checks") or []:
        if not isinstance(ch, dict):
            continue
        src = str(ch.get("source") or "")
        why = c.tt(ch.get("reason") or ch.get("detail") or "")
        fix = _fix_cell(c, ch.get("fix"))
        value = c.val(c.tt(ch["value"])) if ch.get("value") not in (None, "") else c.na(c.t("na_not_found"))
        is_recorded = saved or src in files
        if is_recorded:
            where = c.val(c.t("src_saved_snapshot").format(file=r.source.replace("saved result ", "")) if saved
                          else c.t("src_recorded").format(file=src.replace(base, "")))
        else:  # the live table's heading says where: the machine that ran the report
            where = code(c.tt(src)) if src else c.val("—")
        reason = Markup(c.val(why or "—") + (Markup(f" — {md_escape(c.t('fix'))}: ") + fix if fix else ""))
        row = [code(str(ch.get("name", ""))), c.vw("check", ch.get("status", "")), value, reason, where]
        (recorded if is_recorded else live).append(row)
        if is_recorded and ch.get("status") == "fail" and ch.get("critical", True):
            failing.append(str(ch.get("name", "")))
    versions = []
    for group in ("versions", "system"):
        for key, value in sorted((out.get(group) or {}).items()):
            origin = (c.t("src_saved_snapshot").format(file=r.source.replace("saved result ", "")) if saved
                      else c.t(_VERSION_SOURCES.get(key, "src_live_system" if group == "system" else "src_live_files")))
            versions.append([code(key), c.val(str(value)) if value not in (None, "") else c.na(c.t("na_not_found")),
                             c.val(origin)])
    if recorded:
        n_ok = sum(1 for ch in out.get("checks") or [] if isinstance(ch, dict) and ch.get("status") == "ok"
                   and (saved or str(ch.get("source") or "") in files))
        summary = c.t("env_recorded_summary").format(ok=n_ok, n=len(recorded))
        if failing:
            summary += "; " + c.t("env_recorded_failing").format(names=", ".join(failing))
        recorded_source = (", ".join(sorted({f.replace(base, "") for f in files if not f.startswith("/")}))
                           or r.source)
        recorded_summary = _with_names(summary, failing, f" ({md_escape(c.t('source'))}: {code(recorded_source)})")
        if saved:
            recorded_summary = c.val(word("environment", str(out.get("verdict")), c.lang) + " — " + c.tt(_strip_verdict(
                str(out.get("summary", "")))), r.source.replace("saved result ", ""))
    else:
        recorded_summary = c.na(c.t("na_no_recorded_env"))
    names = [str(ch.get("name")) for ch in out.get("checks") or [] if isinstance(ch, dict) and ch.get("name")]
    live_verdict = _with_names(f"{word('environment', str(out.get('verdict')), c.lang)} — "
                               f"{c.tt(_strip_verdict(str(out.get('summary', ''))))}", names,
                               f" ({md_escape(c.t('source'))}: {code(r.command)})")
    return {"ok": True, "gap": Markup(""), "recorded": recorded, "recorded_summary": recorded_summary,
            "recorded_failing": failing, "live": [] if saved else live, "live_verdict": live_verdict,
            "versions": versions, "saved": saved}


def _with_names(text: str, names: list[str], tail: str = "") -> Markup:
    """``text`` with the check names it lists (``driver, cann_toolkit``) set as code, as the check
    tables print them, so a reader meets no bare identifier in a sentence. Only names standing as
    items of a list (after ``:``/``,``, before ``,``/``;``/the end) are marked, not the same word in prose."""
    idents = sorted(set(names), key=len, reverse=True)
    if not idents:
        return Markup(md_escape(text) + tail)
    pattern = re.compile(r"(?:(?<=: )|(?<=, )|(?<=：))(" + "|".join(re.escape(n) for n in idents) + r")(?=, |;|；|$)")
    parts = pattern.split(text)
    body = "".join(code(part) if k % 2 else md_escape(part) for k, part in enumerate(parts))
    return Markup(body + tail)


_COMMAND_START = ("./", "pip ", "export ", "source ", "acc-agent ", "npu-smi ", "python", "bash ", "sudo ")


def _fix_cell(c: Ctx, fix: Any) -> Markup | None:
    """A check's fix: a command is printed as code (run as it is), a sentence in the document's language."""
    if not fix:
        return None
    text = str(fix)
    if text.startswith(_COMMAND_START) and "`" not in text and ", " not in text:
        # a trailing "(after the driver)" is advice about the command, not part of what is run
        command, sep, note = text.partition(" (")
        if sep and note.endswith(")") and "(" not in note:
            said = c.tt(f"({note}")
            return Markup(code(command) + ("" if said.startswith("（") else " ") + md_escape(said))
        return code(text)
    return c.val(c.tt(text))


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
    boxes.append(_box(c, "golden", g_ok, c.val(c.t("ev_golden").format(word=word("tensor", golden["verdict"], c.lang)),
                                               wf.get("golden").command)
                      if golden["verdict"] else c.gap(wf.get("golden"))))
    ev = attested("training_smoke")
    if ev is None and tr.get("finite_first_loss") is not None:
        ev = c.val(c.t("v_first_loss"), f"{p.artefacts.target_log}, {c.t('first_step')}")
    boxes.append(_box(c, "training_smoke", ev is not None, ev or c.na(c.t("na_target_not_parsed"), wf.get("target_log").command)))
    srv = tr.get("short_run_verdict")
    boxes.append(_box(c, "short_run", bool(tr.get("short_run_met")), c.val(c.t("ev_short_run").format(word=word("short_run", srv, c.lang)),
                                                           wf.get("short_run").command)
                      if srv else c.gap(wf.get("short_run"))))
    cv = tr.get("curves_verdict")
    boxes.append(_box(c, "formal_training", cv in ("pass", "match", "identical"),
                      c.val(c.t("ev_curves").format(word=word("curves", cv, c.lang)), wf.get("loss_curves").command)
                      if cv else c.gap(wf.get("loss_curves"))))
    ev = attested("full_accuracy")
    boxes.append(_box(c, "full_accuracy", ev is not None, ev or c.na(c.t("na_no_full_acc"))))
    pv = perf["verdict"]
    basis = "ev_perf_kpi" if p.thresholds.latency_p50_ms is not None else "ev_perf_baseline"
    # the KPI verdict comes from the NPU timing and the KPI, the baseline one from the comparison's command
    basis_source = (", ".join(x for x in (p.artefacts.target_perf, "mig.yaml thresholds.latency_p50_ms") if x)
                    if basis == "ev_perf_kpi" else wf.get("performance").command)
    boxes.append(_box(c, "performance", pv == "met", c.val(c.t(basis).format(word=word("performance", pv, c.lang)),
                                                           basis_source)
                      if pv else c.na(c.t("na_perf_no_result" if perf["triggered"] else "na_perf_not_triggered"))))
    return boxes


def overall(accuracy: str | None, performance: str | None) -> str:
    verdicts = [v for v in (accuracy, performance) if v is not None]
    if "not_met" in verdicts:
        return "fail"
    if len(verdicts) == 2:
        return "pass"
    return "pass_with_conditions" if verdicts else "na"


def build_context(wf: WorkflowResult, lang: str, plots: dict[str, str] | None = None,
                  generated: str | None = None, config: str = "mig.yaml") -> dict[str, Any]:
    """Everything the templates print. ``generated`` is the report's date (default: :func:`generation_date`),
    ``config`` the project file as seen from the documents' folder (recorded so ``report --check`` finds it)."""
    p = wf.project
    c = Ctx(lang, p.base_dir.resolve() if p.base_dir else None)
    generated = generated or generation_date()
    tr = build_training(c, wf)
    golden = build_golden(c, wf)
    dumps = build_dumps(c, wf)
    perf = build_performance(c, wf)
    env = build_environment(c, wf)
    accuracy: str | None = None
    if golden["verdict"] == "pass" and dumps["verdict"] in (None, "pass"):
        accuracy = "met"
    elif golden["verdict"] == "fail" or dumps["verdict"] == "fail":
        accuracy = "not_met"
    ov = overall(accuracy, perf["verdict"])
    status = {"pass": "st_adapted", "fail": "st_failed", "pass_with_conditions": "st_conditional", "na": "st_in_progress"}[ov]
    gaps = [{"slot": r.slot, "tool": r.tool,
             "reason": c.val(c.t(r.why_key).format(**r.why_args) if r.why_key else c.tt(r.reason)), "command": code(r.command)}
            for r in wf.results.values() if not r.ok and r.status != "not_applicable"]
    project_date = (c.val(p.project.date, "mig.yaml project.date") if p.project.date
                    else c.na(c.t("na_no_project_date")))
    return {
        "p": p,
        "generated": generated,
        "config": config,
        "project_date": project_date,
        "baseline": build_baseline(c, wf),
        "datasets": build_datasets(c, p),
        # Summary names the datasets from the same rows Compare §2.4 lists (a row without a name shows its path)
        "dataset_names": ", ".join(dict.fromkeys(d.dataset or d.path or c.t("p_" + d.purpose) for d in p.datasets)),
        "th": build_thresholds(c, p),
        "training": tr,
        "golden": golden,
        "dumps": dumps,
        "loc": build_localisation(c, wf),
        "perf": perf,
        "env": env,
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
                     for r in p.problems] + build_found_problems(c, wf, generated, env),
        "cell": c,
        "vc": {
            "accuracy": c.vw("accuracy", accuracy) if accuracy else c.na(c.t("na_no_acc_verdict")),
            "performance": c.vw("performance", perf["verdict"]) if perf["verdict"] else c.na(c.t("na_no_perf_verdict")),
            "overall": c.vw("overall", ov) if ov != "na" else c.na(c.t("na_nothing")),
        },
    }
