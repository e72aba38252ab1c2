"""Performance: the latency table per batch size, the verdicts against the KPI and the baseline,
and the five parts a performance report states (Compare §1, §2.3, §4, §5; Summary)."""

from __future__ import annotations

import shlex
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal

from markupsafe import Markup

from acc_agent.models.performance import (
    BatchResult,
    ComparePerformanceOutput,
    MeasurePerformanceOutput,
    RatioRow,
)
from acc_agent.models.workflow import WorkflowResult
from acc_agent.render.cells import Ctx, Row, finite, shown, sources, strip_verdict
from acc_agent.render.env import code, fmt_num
from acc_agent.render.i18n import word

Statistic = Literal["p50", "p95", "throughput"]


@dataclass(frozen=True)
class PerformanceView:
    cpu_note: Markup
    executed: bool
    triggered: bool
    reason: Markup
    missing: list[Markup]
    template: Markup
    rows: list[Row]
    verdict: str | None
    kpi_cell: Markup
    baseline_cell: Markup
    sides: Markup
    settings_check: Markup
    scope: Markup
    warmup: Markup
    iterations: Markup
    batches: Markup
    concurrency: Markup
    scope_description: Markup
    warmup_reason: Markup
    iterations_reason: Markup
    sync: Markup
    throughput_def: Markup
    reproducibility: Markup
    stages: list[Row]
    bottleneck: Markup
    mismatches: list[Markup]
    table_sources: Markup


def _stat(row: BatchResult | None, metric: Statistic) -> float | None:
    if row is None:
        return None
    return finite(row.p50_ms if metric == "p50" else row.p95_ms if metric == "p95" else row.throughput)


def compare_sentence(c: Ctx, output: ComparePerformanceOutput) -> str:
    """compare_performance's verdict against the baseline in words, from its rows (worst ratio first)."""
    verdict = word("performance", output.verdict, c.lang)
    rows = [r for r in output.rows if finite(r.ratio) is not None]
    if not rows:
        return f"{verdict} — {c.tt(strip_verdict(output.summary))}"
    worst = max(rows, key=lambda r: r.ratio)
    ci = (f" [{fmt_num(worst.ci_low, 4)}, {fmt_num(worst.ci_high, 4)}]"
          if finite(worst.ci_low) is not None and finite(worst.ci_high) is not None else "")
    return verdict + " — " + c.t("perf_vs_baseline").format(
        statistic=output.statistic, ratio=fmt_num(worst.ratio, 4), ci=ci, bs=worst.batch_size,
        allowed=f"{float(output.target_ratio):g}")


def _env_pair(gpu: Mapping[str, str | None], npu: Mapping[str, str | None]) -> tuple[list[str], list[str]]:
    """Keys recorded with both timing results: the equal ones and the differing ones (key: baseline vs target)."""
    same, differ = [], []
    for key in sorted(set(gpu) & set(npu)):
        if gpu[key] in (None, "") and npu[key] in (None, ""):
            continue
        if gpu[key] == npu[key]:
            same.append(key)
        else:
            differ.append(f"{key}: {shown(gpu[key])} / {shown(npu[key])}")
    return same, differ


def _ratio_cell(c: Ctx, metric: Statistic, rr: RatioRow | None, gv: float | None, nv: float | None) -> Markup:
    if metric == "p50" and rr and rr.statistic == "p50" and finite(rr.ratio) is not None:
        ci = (f" [{fmt_num(rr.ci_low, 3)}, {fmt_num(rr.ci_high, 3)}]"
              if finite(rr.ci_low) is not None and finite(rr.ci_high) is not None else "")
        return c.val(f"{fmt_num(rr.ratio, 3)}×{ci}")
    if metric == "throughput" and rr and finite(rr.throughput_ratio) is not None:
        return c.val(f"{fmt_num(rr.throughput_ratio, 3)}×")
    return c.val(f"{fmt_num(nv / gv, 3)}×") if gv and nv is not None else c.na(c.t("na_both_sides"))


def performance_view(c: Ctx, wf: WorkflowResult) -> PerformanceView:
    p = wf.project
    perf = p.performance
    gpu_r, npu_r, comp = wf.get("baseline_perf"), wf.get("target_perf"), wf.get("performance")
    gpu_out, npu_out = gpu_r.output_as(MeasurePerformanceOutput), npu_r.output_as(MeasurePerformanceOutput)
    comp_out = comp.output_as(ComparePerformanceOutput)
    gpu = {row.batch_size: row for row in gpu_out.results} if gpu_out is not None else {}
    npu = {row.batch_size: row for row in npu_out.results} if npu_out is not None else {}
    ratios = {row.batch_size: row for row in comp_out.rows} if comp_out is not None else {}
    cpu_cell = c.na(c.t("na_no_cpu"))
    rows: list[Row] = []
    kpi = p.thresholds.latency_p50_ms
    kpi_batch = wf.verdicts.kpi_batch
    batches = sorted(set(npu) | set(gpu)) or perf.batch_sizes
    metrics: tuple[tuple[Statistic, str], ...] = (("p50", "ms"), ("p95", "ms"), ("throughput", "samples/s"))
    for bs in batches:
        for metric, unit in metrics:
            gv, nv = _stat(gpu.get(bs), metric), _stat(npu.get(bs), metric)
            not_measured = c.na(c.t("na_batch_not_measured").format(bs=bs))
            gcell = c.val(f"{fmt_num(gv)} {unit}") if gv is not None else (c.gap(gpu_r) if not gpu_r.ok else not_measured)
            ncell = c.val(f"{fmt_num(nv)} {unit}") if nv is not None else (c.gap(npu_r) if not npu_r.ok else not_measured)
            ratio = _ratio_cell(c, metric, ratios.get(bs), gv, nv)
            target = met = c.na(c.t("na_no_kpi"))
            if metric == "p50" and kpi is not None and bs == kpi_batch:
                target = c.val(f"≤ {fmt_num(kpi)} ms")
                met = (c.word("yes") if nv <= kpi else c.word("no")) if nv is not None else c.na(c.t("na_npu_not_measured"))
            label = c.t("perf_row").format(metric=c.t("m_" + metric), bs=bs)
            rows.append([c.val(label), cpu_cell, gcell, ncell, c.na(c.t("na_no_cpu")), ratio, target, met])
    settings = npu_out.results[0] if npu_out is not None and npu_out.results else None
    ms = npu_out.settings if npu_out is not None else None  # how the NPU timing was taken
    inference = p.entry.inference or "<inference command>"
    template = (f"acc-agent measure-performance --command {shlex.quote(inference)} "
                f"--batch-sizes {','.join(str(b) for b in perf.batch_sizes)} --warmup {perf.warmup} "
                f"--iterations {perf.iterations} --scope {perf.scope} --out perf/npu_target.json")
    missing: list[str] = []
    not_exec = npu_out.not_executed if npu_out is not None else None
    reason = c.val(perf.reason or "—", "mig.yaml performance.reason")
    if not_exec is not None:  # measure_performance itself declined (it was not triggered) and said why
        reason = c.val(c.tt(not_exec.reason), p.artefacts.target_perf)
        missing += [c.tt(m) for m in not_exec.missing_conditions]
        template = not_exec.command_template or template
    if not perf.triggered:
        missing.append(c.t("miss_not_triggered"))
    if not p.artefacts.target_perf:
        missing.append(c.t("miss_target_perf"))
    if not p.artefacts.baseline_perf:
        missing.append(c.t("miss_baseline_perf"))
    causes = [c.tt(x) for x in comp_out.likely_causes] if comp_out is not None else []
    if perf.bottleneck:
        bottleneck = c.val(perf.bottleneck, "mig.yaml performance.bottleneck")
    elif causes:
        bottleneck = c.val("; ".join(causes[:2]), comp.command)
    else:
        bottleneck = c.na(c.t("na_no_bottleneck"), comp.command if not comp.ok else "")
    tsrc = p.artefacts.target_perf if settings is not None else ""
    kpi_verdict = wf.verdicts.kpi
    kpi_cell = (c.val(c.t("perf_vs_kpi").format(word=word("performance", kpi_verdict, c.lang),
                                                kpi=fmt_num(kpi), bs=kpi_batch), "mig.yaml thresholds.latency_p50_ms")
                if kpi_verdict is not None and kpi is not None
                else c.na(c.t("na_no_latency_kpi") if kpi is None else c.t("na_npu_not_measured")))
    base_cell = c.val(compare_sentence(c, comp_out), comp.command) if comp_out is not None else c.gap(comp)
    # What the two timing results say about the machines they ran on: only what they recorded.
    if gpu_out is not None and npu_out is not None and (gpu_out.environment or npu_out.environment):
        same, differ = _env_pair(gpu_out.environment, npu_out.environment)
        sides = c.val(c.t("perf_env_recorded").format(same=", ".join(same) or "—", differ="; ".join(differ) or "—"),
                      f"{p.artefacts.baseline_perf}, {p.artefacts.target_perf}")
    else:
        sides = c.na(c.t("na_perf_env"))
    mismatches = [c.tt(m) for m in comp_out.mismatches] if comp_out is not None else []
    settings_check = (c.val(c.t("perf_settings_same") if not mismatches else c.t("perf_settings_differ")
                            .format(n=len(mismatches)), comp.command) if comp.ok else c.gap(comp))
    throughput = (ms.throughput_definition if ms is not None else "") or (settings.throughput_unit if settings else "")
    return PerformanceView(
        cpu_note=c.na(c.t("na_cpu_not_requested")),
        executed=perf.triggered and bool(npu),
        triggered=perf.triggered,
        reason=reason,
        missing=[c.val(m) for m in missing],
        template=code(template),
        rows=rows,
        verdict=wf.verdicts.performance,
        kpi_cell=kpi_cell,
        baseline_cell=base_cell,
        sides=sides,
        settings_check=settings_check,
        scope=c.val(word("scope", (settings.scope if settings else "") or perf.scope, c.lang),
                    tsrc or "mig.yaml performance.scope"),
        warmup=c.val(str(settings.warmup if settings else perf.warmup), tsrc or "mig.yaml performance.warmup"),
        iterations=c.val(str(settings.iterations if settings else perf.iterations), tsrc or "mig.yaml performance.iterations"),
        batches=c.val(", ".join(str(b) for b in batches)),
        concurrency=c.val(c.tt((ms.concurrency if ms else "") or perf.concurrency)),
        scope_description=c.val(c.tt(ms.scope_description)) if ms and ms.scope_description else Markup(""),
        warmup_reason=c.val(c.tt(ms.warmup_reason)) if ms and ms.warmup_reason else c.word("warmup_reason"),
        iterations_reason=c.val(c.tt(ms.iterations_reason)) if ms and ms.iterations_reason else Markup(""),
        sync=c.val(c.tt(ms.synchronisation)) if ms and ms.synchronisation else c.na(c.t("na_not_recorded")),
        throughput_def=c.val(c.tt(throughput) if throughput else c.t("throughput_default")),
        reproducibility=c.val(perf.reproducibility) if perf.reproducibility else c.na(c.t("na_no_repro")),
        stages=[[c.val(s.get("stage", "")), c.val(s.get("time_ms", "")), c.val(s.get("source", ""))] for s in perf.stages],
        bottleneck=bottleneck,
        mismatches=[c.val(m) for m in mismatches],
        table_sources=sources(c, (("lbl_gpu_baseline", p.artefacts.baseline_perf), ("lbl_npu", p.artefacts.target_perf),
                                  ("lbl_ratio", comp.command if comp.ok else ""),
                                  ("lbl_target", "mig.yaml thresholds.latency_p50_ms" if kpi is not None else ""))),
    )
