"""``compare_tensors``: the golden check — fixed inputs, baseline outputs vs migrated outputs.

Migration guides ask for an element-wise rtol/atol check chosen by the *target*
precision, because an FP16 run differs from FP32 everywhere and an FP32-level ``atol=1e-5`` fails
it from rounding alone. This tool picks the tolerance from the documented table
(numerics/tolerance.py), lets the user override it, and says which one it used and why.
"""

from __future__ import annotations

from pathlib import Path

from acc_agent import frontend
from acc_agent.errors import AccAgentError
from acc_agent.models.common import Evidence
from acc_agent.models.compare import CompareTensorsInput, CompareTensorsOutput, TensorCheck, ToleranceUsed
from acc_agent.text_columns import Column, Table, labelled, render
from acc_agent.tools.spec import tool

_CONTAINERS = (".npz", ".safetensors")


def _split_key(spec: str) -> tuple[Path, str | None]:
    """``file.npz:key`` -> (file, key); a plain path -> (path, None).

    Existence goes through ``path_exists`` so an over-long name or a link loop is a named error,
    not an ``OSError`` traceback.
    """
    from acc_agent.io.tensors import path_exists

    path = Path(spec)
    if not path_exists(path) and ":" in spec:
        head, _, key = spec.rpartition(":")
        if Path(head).suffix.lower() in _CONTAINERS and path_exists(Path(head)):
            return Path(head), key
    return path, None


def _is_multi(path: Path, key: str | None) -> bool:
    if key is not None:
        return False
    if path.is_dir():
        return True
    if path.suffix.lower() in _CONTAINERS and path.is_file():
        from acc_agent.io.dumps import open_dump_set

        return len(open_dump_set(path).ranks[""].entries) > 1
    return False


def _pairs(params: CompareTensorsInput) -> list[tuple[str, tuple[Path, str | None], tuple[Path, str | None]]]:
    """(output name, golden (file, key), target (file, key)) for every output pair."""
    gp, gk = _split_key(params.golden)
    tp, tk = _split_key(params.target)
    from acc_agent.io.tensors import path_exists

    for p in (gp, tp):
        if not path_exists(p):
            raise AccAgentError("missing_file", f"{p} does not exist",
                                hint="Pass two tensor files, FILE.npz:KEY, or two .npz/.safetensors/folders.",
                                path=str(p))
    if _is_multi(gp, gk) or _is_multi(tp, tk):
        from acc_agent.io.dumps import open_dump_set
        from acc_agent.io.pairing import pair_entries

        g = open_dump_set(gp).ranks[""]
        t = open_dump_set(tp).ranks[""]
        pairing = pair_entries(g, t, None)
        if not pairing.pairs:
            raise AccAgentError("no_common_outputs", f"{gp.name} and {tp.name} share no output name",
                                hint=f"golden has {[e.name for e in g.entries][:10]}, target has "
                                     f"{[e.name for e in t.entries][:10]}.", path=str(tp))
        out = []
        for pair in pairing.pairs:
            ge, te = g.entry(pair.golden_name), t.entry(pair.target_name)
            out.append((pair.target_name, _where(g, ge.name, ge.container_key), _where(t, te.name, te.container_key)))
        return out
    return [(gk or tk or gp.stem, (gp, gk), (tp, tk))]


def _where(dump: object, name: str, key: str | None) -> tuple[Path, str | None]:
    from acc_agent.io.dumps import Dump

    assert isinstance(dump, Dump)
    if key is not None:
        return dump.source, key
    path = dump.path_of(name)
    assert path is not None
    return path, None


def _label(path: Path, key: str | None) -> str:
    return f"{path}:{key}" if key else str(path)


def _check_one(name: str, g: tuple[Path, str | None], t: tuple[Path, str | None], params: CompareTensorsInput,
               precision: str | None) -> tuple[TensorCheck, ToleranceUsed]:
    from acc_agent.io.tensors import read_tensor
    from acc_agent.numerics import tolerance as tol
    from acc_agent.numerics.metrics import compute_metrics

    g_arr = read_tensor(*g)
    t_arr = read_tensor(*t)
    t_dtype = str(t_arr.dtype.name)
    prec = precision or ("bf16" if t_dtype == "bfloat16" else tol.DEFAULT_PRECISION)
    used = tol.resolve(prec, params.rtol, params.atol)
    if precision is None and params.rtol is None and params.atol is None:
        why = (" (target dtype is bf16)" if prec == "bf16" else
               f" (default target precision FP16; the target data is {t_dtype}, which does not show the run's "
               f"precision: pass {frontend.option('precision', 'fp32')} for an FP32 run)" if t_dtype in ("float32", "float64")
               else " (default target precision FP16)")
        used = tol.Tolerance(used.rtol, used.atol, used.precision, used.source + why, used.note)
    m = compute_metrics(g_arr, t_arr, rtol=used.rtol, atol=used.atol, precision=prec, top1=True)
    verdict, message = "pass", ""
    if m.within_tolerance_ratio is None:
        verdict, message = "error", next(iter(m.na_reasons.values()), "not comparable")
    elif (m.target_nan or m.target_inf) and (m.target_nan, m.target_inf) != (m.golden_nan, m.golden_inf):
        verdict, message = "fail", f"target has {m.target_nan} NaN / {m.target_inf} Inf, golden " \
                                   f"{m.golden_nan} / {m.golden_inf}"
    elif "N/A" in m.na_reasons.get("cosine", ""):
        verdict, message = "fail", m.na_reasons["cosine"]
    elif m.within_tolerance_ratio < params.min_within:
        verdict = "fail"
        message = (f"{m.within_tolerance_ratio:.4%} of elements within rtol={used.rtol:g}, atol={used.atol:g} "
                   f"(needs {params.min_within:.2%}); max abs err {m.max_abs_err:.3g}")
    else:
        message = f"all checked: {m.within_tolerance_ratio:.4%} within rtol={used.rtol:g}, atol={used.atol:g}"
    if str(g_arr.dtype.name) != t_dtype:
        message += f"; dtype target {t_dtype} vs golden {g_arr.dtype.name}"
    check = TensorCheck(name=name, golden=_label(*g), target=_label(*t), golden_dtype=str(g_arr.dtype.name),
                        target_dtype=t_dtype, golden_shape=[int(s) for s in g_arr.shape],
                        target_shape=[int(s) for s in t_arr.shape], verdict=verdict,  # type: ignore[arg-type]
                        message=message, **m.model_dump())
    return check, ToleranceUsed(rtol=used.rtol, atol=used.atol, precision=used.precision, source=used.source,
                                note=used.note)


def _cosine(check: TensorCheck) -> str:
    return "-" if check.cosine is None else f"{check.cosine:.6f}"


def _max_abs(check: TensorCheck) -> str:
    return "-" if check.max_abs_err is None else f"{check.max_abs_err:.3e}"


#: One line per compared output: its verdict, then name, cosine, max abs error and message.
_OUTPUT_LINES = Table[TensorCheck]([
    Column(lambda o: o.verdict, width=5),
    Column(lambda o: f"{o.name}: cosine {_cosine(o)}, max abs err {_max_abs(o)}, {o.message}"),
])


def render_text(out: CompareTensorsOutput) -> str:
    t = out.tolerance
    lowest = "not computed" if out.lowest_within_ratio is None else f"{out.lowest_within_ratio:.2%}"
    lines = [f"tolerance: rtol={t.rtol:g} atol={t.atol:g} ({t.precision}) — {t.source}",
             f"pass needs at least {out.min_within_ratio:.2%} of each output's elements within tolerance; "
             f"lowest measured: {lowest}"]
    lines += labelled("note", [t.note] if t.note else [], indent="")
    return render(out, lines, _OUTPUT_LINES.lines(out.outputs))


@tool(
    description="Call for the golden check (same fixed inputs through baseline and NPU, outputs saved): compares outputs "
    "under the target precision's rtol/atol. Returns verdict pass | fail | error, outputs[].",
    title="Compare output tensors",
    read_only=True,
    positional=("golden", "target"),
    text_renderer=render_text,
)
def compare_tensors(params: CompareTensorsInput) -> CompareTensorsOutput:
    from acc_agent.numerics import tolerance as tol

    precision = tol.normalize_precision(params.precision) if params.precision else None
    checks: list[TensorCheck] = []
    used: ToleranceUsed | None = None
    evidence: list[Evidence] = []
    pairs = _pairs(params)
    for name, g, t in pairs:
        try:
            check, tol_used = _check_one(name, g, t, params, precision)
        except AccAgentError as err:
            if len(pairs) == 1:
                raise  # one file that cannot be read is bad input (exit 2), not a comparison that failed
            check = TensorCheck(name=name, golden=_label(*g), target=_label(*t), verdict="error",
                                message=f"{err.message}. {err.hint}".strip())
            checks.append(check)
            continue
        used = used or tol_used
        checks.append(check)
        evidence.append(Evidence(kind="file", ref=check.golden, detail=f"golden {name}"))
        evidence.append(Evidence(kind="file", ref=check.target, detail=f"target {name}"))
    if used is None:
        t0 = tol.resolve(precision, params.rtol, params.atol)
        used = ToleranceUsed(rtol=t0.rtol, atol=t0.atol, precision=t0.precision, source=t0.source, note=t0.note)
    evidence.append(Evidence(kind="threshold", ref=f"rtol={used.rtol:g}, atol={used.atol:g}", detail=used.source))
    verdicts = [c.verdict for c in checks]
    verdict = "error" if "error" in verdicts else ("fail" if "fail" in verdicts else "pass")
    n_pass = verdicts.count("pass")
    summary = (f"{n_pass}/{len(checks)} outputs within rtol={used.rtol:g}, atol={used.atol:g} "
               f"({used.precision.upper()} tolerances)")
    if verdicts.count("error"):
        summary += f"; {verdicts.count('error')} not comparable"
    bad = [c for c in checks if c.verdict != "pass"]
    if bad:
        summary += f"; {bad[0].name}: {bad[0].message}"
    measured = [c.within_tolerance_ratio for c in checks if c.within_tolerance_ratio is not None]
    return CompareTensorsOutput(verdict=verdict, summary=summary, evidence=evidence,  # type: ignore[arg-type]
                                tolerance=used, min_within_ratio=params.min_within,
                                lowest_within_ratio=min(measured) if measured else None, outputs=checks)
