"""Golden samples: each output of the model, its summary on both sides and compare_tensors' errors
(Compare §3 and §3.1)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from markupsafe import Markup

from acc_agent.models.compare import CompareTensorsOutput, TensorCheck
from acc_agent.models.workflow import WorkflowResult
from acc_agent.render.cells import Ctx, Row, finite, sources
from acc_agent.render.env import code, fmt_num


@dataclass(frozen=True)
class GoldenView:
    rows: list[Row]
    verdict: str | None
    sources: Markup
    summary: Markup


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
    good = a64[np.isfinite(a64)]
    if good.size == 0:
        return c.t("arr_all_bad").format(shape=list(arr.shape), dtype=arr.dtype, bad=bad)
    text = c.t("arr_summary").format(shape=list(arr.shape), dtype=arr.dtype, mean=fmt_num(float(good.mean())),
                                     max=fmt_num(float(good.max())))
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
    gpath, tpath = p.resolve(p.artefacts.golden_outputs), p.resolve(p.artefacts.target_outputs)
    errs: dict[str, TensorCheck] = {row.name: row for row in out.outputs} if out is not None else {}
    rows: list[Row] = []
    missing = c.gap(r) if not r.ok else c.na(c.t("na_not_computed"))
    for key in _npz_keys(gpath) or list(errs):
        gsum = _array_summary(c, gpath, key) if gpath else None
        tsum = _array_summary(c, tpath, key) if tpath and tpath.is_file() else None
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
