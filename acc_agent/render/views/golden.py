"""Golden samples: each output of the model, its summary on both sides and compare_tensors' errors
(Compare §3 and §3.1)."""

from __future__ import annotations

from dataclasses import dataclass

from markupsafe import Markup

from acc_agent.models.compare import CompareTensorsOutput, TensorCheck
from acc_agent.models.workflow import ArrayFacts, WorkflowResult
from acc_agent.render.cells import Ctx, Row, finite, sources
from acc_agent.render.env import code, fmt_num


@dataclass(frozen=True)
class GoldenView:
    rows: list[Row]
    verdict: str | None
    sources: Markup
    summary: Markup


def _array_summary(c: Ctx, facts: ArrayFacts | None) -> str | None:
    """shape/dtype/mean/max of one output array, as the application layer read it."""
    if facts is None:
        return None
    if facts.finite_mean is None or facts.finite_max is None:
        return c.t("arr_all_bad").format(shape=facts.shape, dtype=facts.dtype, bad=facts.non_finite)
    text = c.t("arr_summary").format(shape=facts.shape, dtype=facts.dtype, mean=fmt_num(facts.finite_mean),
                                     max=fmt_num(facts.finite_max))
    return text + (c.t("arr_bad").format(bad=facts.non_finite) if facts.non_finite else "")


def tensors_summary(c: Ctx, output: CompareTensorsOutput) -> str:
    """compare_tensors' result in one sentence, from its fields (the tool's summary is the English form)."""
    rows = output.outputs
    tol = output.tolerance
    n_pass = sum(1 for r in rows if r.verdict == "pass")
    text = c.t("gt_summary").format(n=n_pass, total=len(rows), rtol=f"{tol.rtol:g}",
                                    atol=f"{tol.atol:g}", precision=tol.precision.upper())
    bad = [r for r in rows if r.verdict != "pass"]
    if bad:
        text += f"; {bad[0].name}: {c.tt(bad[0].message)}"
    return text


def golden_view(c: Ctx, wf: WorkflowResult) -> GoldenView:
    p = wf.project
    r = wf.get("golden")
    out = r.output_as(CompareTensorsOutput)
    arrays = wf.golden_arrays
    errs: dict[str, TensorCheck] = {row.name: row for row in out.outputs} if out is not None else {}
    rows: list[Row] = []
    missing = c.gap(r) if not r.ok else c.na(c.t("na_not_computed"))
    for key in arrays.keys:
        gsum = _array_summary(c, arrays.golden.get(key))
        tsum = _array_summary(c, arrays.target.get(key))
        erow = errs.get(key)
        if erow is None:
            rows.append([code(key), c.val(gsum) if gsum else c.na(c.t("na_golden_unreadable")),
                         c.val(tsum) if tsum else c.na(c.t("na_target_outputs"), ""),
                         missing, missing, missing, missing])
            continue
        mae, within, top1 = finite(erow.max_abs_err), finite(erow.within_tolerance_ratio), finite(erow.top1_agreement)
        rows.append([
            code(key),
            c.val(gsum) if gsum else c.na(c.t("na_golden_unreadable")),
            c.val(tsum) if tsum else c.na(c.t("na_target_outputs"), ""),
            c.val(mae) if mae is not None else missing,
            c.val(f"{within * 100:.1f} %") if within is not None else missing,
            c.val(f"{top1 * 100:.0f} %") if top1 is not None else
            c.na(c.tt(erow.na_reasons.get("top1_agreement") or c.t("na_not_computed"))),
            c.vw("tensor", erow.verdict or ""),
        ])
    return GoldenView(
        rows=rows,
        verdict=wf.verdicts.golden,
        sources=sources(c, (("lbl_baseline", p.artefacts.golden_outputs), ("lbl_npu", p.artefacts.target_outputs),
                            ("lbl_max_abs", r.command if r.ok else ""))),
        summary=c.val(tensors_summary(c, out), r.command) if out is not None else c.gap(r),
    )
