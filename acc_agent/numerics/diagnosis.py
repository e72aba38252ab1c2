"""Find the layer at fault in a compared dump pair, and say why, telling rounding noise from bugs.

``compare_dumps`` calls :func:`diagnose` with its rows once the metrics are computed. Each row's
error is the relative L2 error ``EucDist / ||golden||`` (``||golden||`` from the golden dump's
``Norm`` statistic; the cosine angle when it is missing). A row is *beyond precision* when:

- with a bench run (baseline hardware at the target's precision): its error exceeds
  ``BENCH_RATIO`` times the bench row's error (floored at msprobe's ``min_err``) — the idea of
  msprobe's benchmark standard, applied layer by layer; rounding noise of a low-precision target is
  then what the bench shows, so pure FP16/BF16 targets raise nothing;
- without a bench: its error exceeds the dtype's budget (``budgets.budget``); weaker, since a fault
  smaller than the budget is missed, and the output says so.

Then the expert procedure of the seed documents, in order: the first compared tensor already
differs -> ``input_mismatch`` (preprocessing hypotheses tested on the data); no row beyond ->
``no_layer_fault``; otherwise the first divergence is the innermost, earliest module whose output
is beyond precision while all its inputs are within. If the network's final outputs are back within
precision, the bad middle rows are ``layer_mismatch`` (layout/pairing tested on the data) or, when
they stay inside the dtype budget, isolated noise (``no_layer_fault``). If the final error is beyond
precision, the growth after the first divergence decides: the error at least doubled again on the
way (``GROWTH_RATIO``), so many layers keep injecting error -> ``precision_accumulation``; otherwise
one localised jump explains it -> ``operator_fault``. Every threshold is a ratio or a format
property from ``budgets.py``; nothing is fitted to a model.

Cost: one pass over the rows plus loading the tensors of at most a handful of rows for the
transformation tests, so it stays small next to computing the metrics (bench/bench_diagnosis.py).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from typing import Any

from acc_agent.models.diagnosis import Diagnosis, FirstDivergence, InputTransform, LayerGrowth
from acc_agent.numerics import budgets

ROOT_MODULE_PATHS = frozenset({"root", ""})
_KEY_RE = re.compile(r"^(?P<key>.+?\.(?:forward|backward)(?:\.\d+)?)\.(?P<role>input|output|parameters_grad|parameters)"
                     r"(?:\.|$)")
_MAX_TRANSFORM_ROWS = 4
_PRECISION_NAMES = {"fp16": "float16", "bf16": "bfloat16", "fp32": "float32"}


# --------------------------------------------------------------------------- per-row judgement


@dataclass
class _Row:
    row: Any
    pos: int
    name: str
    key: str
    role: str
    dtype: str | None
    err: float | None  # relative L2 error target vs golden; None when not comparable
    bench_err: float | None
    excess: float  # > 1: beyond precision; inf: not comparable (shape, NaN); nan: not judged
    gross: bool  # beyond the dtype budget too (or not comparable)

    @property
    def judged(self) -> bool:
        return not math.isnan(self.excess)

    @property
    def beyond(self) -> bool:
        return self.judged and self.excess > 1.0


@dataclass
class _Node:
    key: str
    pos: int
    path: str | None
    inputs: list[_Row] = field(default_factory=list)
    outputs: list[_Row] = field(default_factory=list)
    parent: _Node | None = None
    children: int = 0

    def worst(self, rows: list[_Row]) -> _Row | None:
        judged = [r for r in rows if r.judged]
        return max(judged, key=lambda r: r.excess) if judged else None


def _split_name(name: str) -> tuple[str, str]:
    m = _KEY_RE.match(name)
    if m is None:
        return name, "tensor"
    return m.group("key"), m.group("role")


def _module_path(key: str) -> str | None:
    """``Module.encoder.layer.0.BertLayer.forward.0`` -> ``encoder.layer.0``; None for API calls."""
    if not key.startswith("Module."):
        return None
    parts = key[len("Module."):].split(".")
    # strip "{Class}.forward[.N]"
    for i in range(len(parts) - 1, 0, -1):
        if parts[i] in ("forward", "backward"):
            return ".".join(parts[: i - 1])
    return None


def _entry(dump: Any, name: str | None) -> Any:
    if dump is None or name is None:
        return None
    by_name = getattr(dump, "by_name", None)
    return by_name.get(name) if isinstance(by_name, dict) else None


def _rel_err(metrics: Any, golden_norm: float | None) -> float | None:
    """Relative L2 error from a metrics object: EucDist/||golden||, else the cosine angle."""
    if metrics is None:
        return None
    euc = getattr(metrics, "euc_dist", None)
    if euc is not None and golden_norm is not None and math.isfinite(golden_norm):
        if golden_norm > 0:
            return float(euc) / golden_norm
        return 0.0 if euc == 0 else math.inf
    cos = getattr(metrics, "cosine", None)
    if cos is None:
        return None
    return math.sqrt(max(0.0, 2.0 * (1.0 - float(cos))))


def _golden_norm(row: Any, golden: Any, name: str) -> float | None:
    """||golden||: from the row if the metrics carry it, else dump.json's Norm, else the tensor itself.

    Reading the tensor only happens for dumps without statistics (plain .npy folders, .npz); msprobe
    and ``acc_agent.capture`` dumps always carry Norm, so the diagnosis stays cheap on them.
    """
    value = getattr(row, "golden_norm", None)
    if value is not None:
        return float(value)
    golden_name = getattr(row, "golden_name", None) or name
    g_entry = _entry(golden, golden_name)
    if g_entry is not None:
        raw = (getattr(g_entry, "stats", None) or {}).get("Norm")
        if raw is not None:
            return float(raw)
    if golden is None or getattr(row, "status", "pass") in ("skipped", "unmatched"):
        return None
    try:
        import numpy as np

        arr = golden.load(golden_name)
        if arr.dtype.kind not in "fiub":
            return None
        return float(np.linalg.norm(np.nan_to_num(arr.astype(np.float64, copy=False), posinf=0.0, neginf=0.0)))
    except Exception:  # noqa: BLE001 - unreadable golden tensor: fall back to the cosine angle
        return None


def _row_dtype(row: Any, target: Any, precision: str | None) -> str | None:
    if precision:
        return _PRECISION_NAMES.get(precision, precision)
    declared = getattr(_entry(target, getattr(row, "name", None)), "dtype", None)
    stored = getattr(row, "target_dtype", None)
    if budgets.is_float(declared) or budgets.is_float(stored):
        return budgets.lowest_precision(declared, stored)
    return budgets.canonical_dtype(declared or stored)


def _judge_rows(rows: list[Any], golden: Any, target: Any, bench: Any, precision: str | None) -> list[_Row]:
    out: list[_Row] = []
    use_bench = bench is not None
    for pos, row in enumerate(rows):
        name = str(row.name)
        key, role = _split_name(name)
        norm = _golden_norm(row, golden, name)
        dtype = _row_dtype(row, target, precision)
        status = getattr(row, "status", "pass")
        err = _rel_err(row, norm)
        bench_err = _rel_err(getattr(row, "bench", None), norm) if use_bench else None
        budget = budgets.budget(dtype)
        if status in ("skipped", "unmatched"):
            excess, gross = math.nan, False
        elif err is None:
            # metrics not computable although both tensors exist: shape unmatched, NaN/Inf misplaced
            excess, gross = (math.inf, True) if status == "error" else (math.nan, False)
        else:
            if use_bench and bench_err is not None:
                excess = err / (budgets.BENCH_RATIO * max(bench_err, budgets.ratio_floor(dtype)))
            else:
                excess = err / budget if budget > 0 else (0.0 if err == 0 else math.inf)
            gross = err > budget
        out.append(_Row(row, pos, name, key, role, dtype, err, bench_err, excess, gross))
    return out


# --------------------------------------------------------------------------- call structure


def _build_nodes(judged: list[_Row]) -> list[_Node]:
    """Nodes (module/API calls) in dump order with their nesting, from msprobe's pre-order keys."""
    nodes: dict[str, _Node] = {}
    for r in judged:
        node = nodes.get(r.key)
        if node is None:
            node = nodes[r.key] = _Node(r.key, r.pos, _module_path(r.key))
        if r.role in ("input", "parameters"):
            node.inputs.append(r)
        elif r.role in ("output", "tensor"):
            node.outputs.append(r)
    ordered = sorted(nodes.values(), key=lambda n: n.pos)
    stack: list[_Node] = []
    for node in ordered:
        while stack and not _contains(stack[-1], node):
            stack.pop()
        if stack:
            node.parent = stack[-1]
            for anc in stack:
                anc.children += 1
        if node.path is not None:
            stack.append(node)
    return ordered


def _contains(outer: _Node, inner: _Node) -> bool:
    if outer.path is None:
        return False
    if outer.path in ROOT_MODULE_PATHS:
        return True
    return inner.path is None or inner.path.startswith(outer.path + ".")


def _ancestors(node: _Node) -> list[_Node]:
    out = []
    cur = node.parent
    while cur is not None:
        out.append(cur)
        cur = cur.parent
    return out


def _incoming(node: _Node, judged: list[_Row]) -> list[_Row]:
    """Rows carrying the error that reaches ``node``: its inputs, else the last earlier computed row."""
    rows = [r for r in node.inputs if r.judged]
    if rows:
        return rows
    skip = {id(r) for a in _ancestors(node) for r in a.outputs}
    first = min((r.pos for r in node.outputs), default=node.pos)
    for r in reversed(judged[:first]):
        if r.judged and id(r) not in skip and r.key != node.key:
            return [r]
    return []


# --------------------------------------------------------------------------- reports


def _metrics(r: _Row | None) -> dict[str, float | None]:
    if r is None:
        return {}
    row = r.row
    out: dict[str, float | None] = {
        "cosine": getattr(row, "cosine", None),
        "max_abs_err": getattr(row, "max_abs_err", None),
        "rel_l2_err": r.err,
        "excess": None if math.isinf(r.excess) or math.isnan(r.excess) else r.excess,
    }
    if r.bench_err is not None:
        out["bench_rel_l2_err"] = r.bench_err
    return out


def _ratio(a: float | None, b: float | None) -> float | None:
    if a is None or b is None or not math.isfinite(a) or not math.isfinite(b) or b <= 0:
        return None
    return a / b


def _transforms(rows: list[_Row], golden: Any, target: Any, *, input_side: bool) -> list[InputTransform]:
    """Test the layout/preprocessing hypotheses on the real tensors of a few bad rows."""
    from acc_agent.numerics.transforms import explain_pair

    found: list[InputTransform] = []
    for r in rows[:_MAX_TRANSFORM_ROWS]:
        try:
            g = golden.load(getattr(r.row, "golden_name", None) or r.name)
            t = target.load(r.name)
        except Exception:  # noqa: BLE001 - an unreadable tensor is already the row's error
            continue
        tol = max(budgets.budget(r.dtype), 1e-6)
        for m in explain_pair(g, t, tol, input_side=input_side):
            if m.kind != "identity":
                found.append(InputTransform(row=r.name, kind=m.kind, description=m.description,
                                            residual=m.residual, params=m.params))
    return found


def _judgement_note(use_bench: bool, dtypes: set[str]) -> tuple[str, str]:
    if use_bench:
        return "bench", (f"Each row's relative error was judged against the bench run's error on the same row "
                         f"(beyond precision when more than {budgets.BENCH_RATIO:g}x the bench's, msprobe's "
                         "benchmark ratio). Faults smaller than the bench's rounding noise cannot be seen.")
    names = ", ".join(f"{d} {budgets.budget(d):.2e}" for d in sorted(dtypes) if budgets.is_float(d))
    return "dtype_budget", (f"No bench run: rows were judged against dtype error budgets "
                            f"({budgets.BUDGET_ROUNDINGS:g} unit roundoffs of relative L2 error: {names or 'n/a'}). "
                            "This is the weaker judgement: a real fault smaller than the budget is missed. Pass "
                            "--bench with the baseline hardware's run at the same precision to see inside it.")


def _set_status(rows: list[_Row], use_bench: bool, fault_rows: list[_Row]) -> None:
    """Refine the metric-threshold statuses with the precision-aware judgement."""
    for r in rows:
        if not r.judged or r.row.status in ("skipped", "unmatched"):
            continue
        if use_bench and r.excess <= 1.0 and r.row.status == "warning":
            r.row.status = "pass"
            r.row.message = (f"within bench noise: error {r.err:.3g} vs bench {r.bench_err or 0:.3g}; "
                             + r.row.message).strip("; ")
        elif r.beyond and r.row.status == "pass" and (use_bench or r.gross):
            r.row.status = "warning"
            r.row.message = (f"beyond precision ({r.excess:.3g}x the allowed error); " + r.row.message).strip("; ")
    for r in fault_rows:
        r.row.status = "error"
        if "first divergence" not in r.row.message:
            r.row.message = ("first divergence; " + r.row.message).strip("; ")


# --------------------------------------------------------------------------- the diagnosis


def diagnose(rows: list[Any], golden: Any, target: Any, bench: Any = None,
             precision: str | None = None) -> tuple[FirstDivergence | None, Diagnosis]:
    """First divergence and cause category of one rank's compared rows (rows may get new statuses).

    The forward pass is walked first; backward rows (gradients run in reverse layer order) are walked
    on their own only when the forward pass shows no fault, so a forward fault is never blamed on
    the gradients it causes.
    """
    judged_all = _judge_rows(rows, golden, target, bench, precision)
    use_bench = bench is not None and any(r.bench_err is not None for r in judged_all)
    forward = [r for r in judged_all if ".backward" not in r.key]
    backward = [r for r in judged_all if ".backward" in r.key]
    methods: dict[str, int] = {}
    for row in rows:
        method = str(getattr(row, "pair_method", None) or "exact")
        methods[method] = methods.get(method, 0) + 1
    if not forward or not any(r.judged for r in forward):
        fd, diag = _diagnose_pass(backward, golden, target, use_bench, "backward")
    else:
        fd, diag = _diagnose_pass(forward, golden, target, use_bench, "forward")
        if diag.category == "no_layer_fault" and any(r.beyond for r in backward):
            fd, diag = _diagnose_pass(backward, golden, target, use_bench, "backward")
            diag.explanation = "The forward pass agrees; in the backward pass: " + diag.explanation
        elif backward:
            diag.details["backward_rows_not_walked"] = len(backward)
    diag.details["pairing_methods"] = methods  # how much of the judgement rests on inferred pairs
    return fd, diag


def _diagnose_pass(judged: list[_Row], golden: Any, target: Any, use_bench: bool,
                   direction: str) -> tuple[FirstDivergence | None, Diagnosis]:
    """The procedure of the module docstring on one pass (forward or backward) of rows."""
    against, note = _judgement_note(use_bench, {r.dtype for r in judged if r.dtype})
    counted = [r for r in judged if r.judged]
    beyond = [r for r in counted if r.beyond]
    base = {"judged_against": against, "judgement_note": note, "rows_beyond_precision": len(beyond),
            "rows_judged": len(counted), "pass_walked": direction}
    if not counted:
        return None, Diagnosis(category="no_layer_fault", explanation="No row could be judged (no comparable "
                               "tensor pairs), so no layer can be blamed.",
                               next_actions=["Check that both dumps hold tensor data (task 'tensor') and that "
                                             "names pair (use --mapping)."], **base)  # type: ignore[arg-type]
    nodes = _build_nodes(judged)

    # 1. the first compared tensors: the inputs of the first call that has any
    first_inputs = next((n.inputs for n in nodes if any(r.judged for r in n.inputs)), [])
    bad_inputs = [r for r in first_inputs if r.beyond]
    if bad_inputs:
        return _input_mismatch(bad_inputs, first_inputs, judged, golden, target, use_bench, base)

    if not beyond:
        _set_status(judged, use_bench, [])
        worst = max(counted, key=lambda r: r.excess)
        return None, Diagnosis(
            category="no_layer_fault",
            explanation=(f"All {len(counted)} compared tensors are within what precision explains (largest: "
                         f"{worst.name} at {worst.excess:.2g}x the allowed error). The layers agree; a wrong "
                         "final result comes from after the dumped part of the network."),
            next_actions=[
                "Compare post-processing (decoding, argmax/top-k, thresholds, box drawing) between the two sides: "
                "run the golden side's post-processing on the target's final outputs.",
                "If the end metric still differs, check evaluation data and metric code are the same on both sides.",
            ],
            details={"worst_row": worst.name, "worst_excess": worst.excess}, **base)  # type: ignore[arg-type]

    # 2. candidate first divergences: output beyond precision while every incoming row is within
    candidates: list[tuple[_Node, _Row, list[_Row]]] = []
    for node in nodes:
        out = node.worst(node.outputs)
        if out is None or not out.beyond:
            continue
        incoming = _incoming(node, judged)
        if all(not r.beyond for r in incoming):
            candidates.append((node, out, incoming))
    containing = {id(a) for n, _, _ in candidates for a in _ancestors(n)}
    inner = [c for c in candidates if id(c[0]) not in containing]
    first = inner[0] if inner else None

    # 3. where does the run end up?
    top = [n for n in nodes if n.parent is None and n.worst(n.outputs) is not None]
    final_row = top[-1].worst(top[-1].outputs) if top else None
    final_beyond = final_row is not None and final_row.beyond

    if not final_beyond:
        gross = [r for r in beyond if r.gross]
        if gross:
            return _layer_mismatch(gross, first, final_row, judged, golden, target, use_bench, base)
        if use_bench and first is not None:
            # a fault inside the rounding noise: visible against the bench, too small to move the end result
            node, out, incoming = first
            in_row = max((r for r in incoming if r.judged), key=lambda r: r.excess, default=None)
            growth = _ratio(final_row.excess if final_row else None, out.excess)
            return _operator_fault(node, out, in_row, incoming, final_row, growth, judged, use_bench, base,
                                   inside=_inside(node, nodes))
        _set_status(judged, use_bench, [])
        return None, Diagnosis(
                category="no_layer_fault",
                explanation=(f"{len(beyond)} middle tensors exceed the judged precision slightly but stay inside the "
                             "dtype budget and the final outputs are back within precision: isolated rounding "
                             "excursions, not a fault."),
                next_actions=["Look at post-processing if the end result still differs.",
                              "Rerun with another input to confirm the excursions are noise: they should move."],
                details={"excursions": [r.name for r in beyond[:10]],
                         "final_row": final_row.name if final_row else None}, **base)  # type: ignore[arg-type]

    fresh_input = None
    if first is None:
        # no module turns clean inputs into a bad output: the earliest bad tensor is an input that no
        # dumped operator produced wrong (a parameter, a hook or in-place change between two operators)
        earliest = min(beyond, key=lambda r: r.pos)
        node = next(n for n in nodes if n.key == earliest.key)
        start = node.worst(node.outputs) or earliest
        fresh_input = earliest if earliest.role in ("input", "parameters") else None
        first = (node, start, _incoming(node, judged))
    node, out, incoming = first
    in_row = max((r for r in incoming if r.judged), key=lambda r: r.excess, default=None)
    growth = _ratio(final_row.excess if final_row else None, out.excess)
    if growth is not None and growth >= budgets.GROWTH_RATIO:
        return _accumulation(node, out, final_row, growth, nodes, judged, use_bench, base)
    return _operator_fault(node, out, in_row, incoming, final_row, growth, judged, use_bench, base,
                           fresh_input=fresh_input, inside=_inside(node, nodes))


def _inside(node: _Node, nodes: list[_Node]) -> _Row | None:
    """For a container at fault: the first bad tensor among its children's rows.

    When no child module turns clean inputs into a bad output, that tensor is a child's *input*: the
    fault sits in an operation between two recorded modules (a functional activation, an in-place op).
    """
    if not node.children:
        return None
    rows = sorted((r for n in nodes if node in _ancestors(n) for r in n.inputs + n.outputs if r.judged),
                  key=lambda r: r.pos)
    return next((r for r in rows if r.beyond), None)


def _first_divergence(node: _Node, out: _Row, in_row: _Row | None, incoming: list[_Row], reason: str) -> FirstDivergence:
    amp = _ratio(out.err, in_row.err if in_row else None)
    return FirstDivergence(name=out.name, index=int(getattr(out.row, "index", out.pos)), module=node.key,
                           input_metrics=_metrics(in_row), output_metrics=_metrics(out),
                           input_names=[r.name for r in incoming], amplification=amp, reason=reason)


def _operator_fault(node: _Node, out: _Row, in_row: _Row | None, incoming: list[_Row], final_row: _Row | None,
                    growth: float | None, judged: list[_Row], use_bench: bool,
                    base: dict[str, Any], fresh_input: _Row | None = None,
                    inside: _Row | None = None) -> tuple[FirstDivergence, Diagnosis]:
    amp = _ratio(out.err, in_row.err if in_row else None)
    amp_text = (f"amplifying its incoming error {amp:.3g}x" if amp is not None
                else "from inputs that match the golden exactly")
    ref = f"{budgets.BENCH_RATIO:g}x the bench's error" if use_bench else "the dtype budget"
    if fresh_input is not None:
        amp_text = (f"its input {fresh_input.name} already differs (relative error {fresh_input.err or 0:.3g}) "
                    "although no earlier dumped tensor does: the difference enters between operators — a "
                    "parameter/weight, a hook, or an in-place change")
        reason = f"relative error {out.err:.3g} = {out.excess:.3g}x the allowed error ({ref}); {amp_text}"
    else:
        reason = (f"relative error {out.err:.3g} = {out.excess:.3g}x the allowed error ({ref}) while its inputs "
                  f"are within precision; {amp_text}")
    if inside is not None and inside.role in ("input", "parameters"):
        reason += (f"; inside it every recorded module before {inside.key} agrees and {inside.name} is the first "
                   "tensor beyond precision: the fault is in an operation between recorded modules (a functional "
                   "call such as an activation or scaling, or an in-place op)")
    fd = _first_divergence(node, out, in_row, incoming, reason)
    _set_status(judged, use_bench, [r for r in node.outputs if r.beyond])
    op = node.key
    anc = {a.key for a in _ancestors(node)}
    start = min((r.pos for r in node.outputs), default=node.pos)
    first_layer = not any(r.judged and r.role in ("output", "tensor") and r.pos < start and r.key not in anc
                          for r in judged)
    if final_row is not None and not final_row.beyond:
        tail = ("its effect on the final outputs stays within the bench's rounding noise, so only the layer-by-layer "
                "comparison against the bench shows it — a real fault hidden inside low-precision noise.")
    else:
        tail = (f"after it the error changes by {growth if growth is not None else float('nan'):.2g}x to the end "
                "instead of growing, so this operator explains the final difference.")
    return fd, Diagnosis(
        category="operator_fault",
        explanation=((f"One localised jump at {op}: {amp_text}; " if fresh_input is not None else
                      f"One localised jump: {op} turns clean inputs into an output {out.excess:.3g}x beyond "
                      f"precision ({amp_text}); ") + tail
                     + (" It is also the first layer that computes anything, so a precision setting applied to "
                        "every layer (quantisation, lower-precision kernels) would look the same here: re-run this "
                        "layer alone in higher precision to tell the two apart." if first_layer else "")),
        next_actions=[
            f"Reproduce {op} alone: feed it the golden inputs ({', '.join(fd.input_names[:3]) or 'see the dump'}) on "
            "both platforms and compare outputs with `acc-agent compare-tensors` — a difference there is the "
            "operator's, not the network's.",
            "Check how the operator is configured on the target: approximations (tanh vs erf GELU), epsilon of "
            "normalisations, attention mask handling, dtype casts, and whether it was fused or replaced.",
            "Check its weights/parameters are identical on both sides (a converted or corrupted checkpoint shows "
            "up as a fault here).",
            "If the operator is random or order-dependent (dropout, sampling, atomic reductions), first run "
            "`acc-agent detect-nondeterminism` on two target runs of the same input: a random operator is not a "
            "migration fault.",
            f"If the operator itself is wrong, send the vendor: the module/operator name ({op}), its golden and "
            "target input and output tensors (the .npy/.pt files of these rows), its arguments and dtypes, the "
            "framework, torch_npu and CANN versions, and the compare rows above.",
        ],
        details={"operator": op, "final_row": final_row.name if final_row else None,
                 "growth_after_divergence": growth, "first_computing_layer": first_layer,
                 "first_bad_tensor_inside": inside.name if inside is not None else None}, **base)


def _accumulation(node: _Node, out: _Row, final_row: _Row | None, growth: float, nodes: list[_Node],
                  judged: list[_Row], use_bench: bool, base: dict[str, Any]) -> tuple[None, Diagnosis]:
    layers: list[LayerGrowth] = []
    for n in nodes:
        if n.children or n.pos < node.pos:
            continue
        o = n.worst(n.outputs)
        inc = _incoming(n, judged)
        i = max((r for r in inc if r.judged and r.err is not None), key=lambda r: r.err or 0.0, default=None)
        if o is None or o.err is None or i is None:
            continue
        g = _ratio(o.err, i.err)
        if g is not None:
            layers.append(LayerGrowth(module=n.key, name=o.name, input_error=i.err, output_error=o.err, growth=g))
    layers.sort(key=lambda x: -(x.growth or 0.0))
    top = layers[:5]
    _set_status(judged, use_bench, [])
    names = ", ".join(f"{lg.module} ({lg.growth:.2g}x)" for lg in top[:3])
    return None, Diagnosis(
        category="precision_accumulation",
        explanation=(f"The error starts at {node.key} ({out.err:.3g} relative) and keeps growing through the network "
                     f"to {final_row.err if final_row and final_row.err is not None else float('nan'):.3g} at the end "
                     f"({growth:.3g}x more than at the start, relative to what precision explains): many layers each "
                     f"add a little, no single operator is at fault. Fastest growth: {names or 'n/a'}."),
        next_actions=[
            f"Keep the layers where the error grows fastest in higher precision first ({names or 'see growth_layers'}) "
            "and the first layer that loses precision (" + node.key + "); re-run the comparison and add more until "
            "the final error is within tolerance.",
            "If the target quantises or computes in lower precision than the golden (int8, FP16/BF16, HF32/TF32 "
            "matmuls), rerun that side once in higher precision: if all layers then agree, precision is the cause.",
            "If higher precision costs too much, try mixed precision only on the listed layers, or quantisation-aware "
            "fine-tuning.",
        ],
        details={"starts_at": out.name, "final_row": final_row.name if final_row else None, "growth": growth},
        growth_layers=top, **base)


def _layer_mismatch(gross: list[_Row], first: tuple[_Node, _Row, list[_Row]] | None, final_row: _Row | None,
                    judged: list[_Row], golden: Any, target: Any, use_bench: bool,
                    base: dict[str, Any]) -> tuple[FirstDivergence | None, Diagnosis]:
    transforms = _transforms(gross, golden, target, input_side=False)
    bad = gross[0]
    node_key = bad.key
    fd = FirstDivergence(name=bad.name, index=int(getattr(bad.row, "index", bad.pos)), module=node_key,
                         output_metrics=_metrics(bad),
                         reason="a middle tensor is far beyond precision but the network's final outputs agree: "
                                "a comparison/layout mismatch rather than a computation that went wrong")
    _set_status(judged, use_bench, [])
    if transforms:
        facts = "; ".join(f"{t.row}: {t.description} (residual {t.residual:.2g})" for t in transforms[:3])
        explanation = (f"{len(gross)} middle tensors are far off while the final outputs agree, and the data says why: "
                       f"{facts}. The pair matches after that transformation, so the layer is fine and only its "
                       "layout/pairing differs.")
    else:
        explanation = (f"{len(gross)} middle tensors are far off (first: {bad.name}) while the final outputs agree: "
                       "the tensors compared are probably not the same thing (renamed, fused, in-place or "
                       "re-laid-out operators). No transpose/reshape of the golden tensor explains them.")
    return fd, Diagnosis(
        category="layer_mismatch",
        explanation=explanation,
        next_actions=[
            "Check the pairing of these rows: a renamed or fused module on the target pairs different tensors; fix it "
            "with --mapping (target_name: golden_name).",
            "Compare layouts: the target may store the tensor transposed (NCHW/NHWC, [B,S,H] vs [S,B,H]) or reshaped; "
            "compare after the transformation reported here.",
            "Check in-place operators (e.g. ReLU/Add applied in place, concat+relu) and graph fusions on the target: "
            "dump the un-fused graph, or compare the next non-fused layer instead.",
        ],
        details={"bad_rows": [r.name for r in gross[:10]], "final_row": final_row.name if final_row else None},
        transforms=transforms, **base)


def _input_mismatch(bad: list[_Row], first_inputs: list[_Row], judged: list[_Row], golden: Any, target: Any,
                    use_bench: bool, base: dict[str, Any]) -> tuple[FirstDivergence, Diagnosis]:
    transforms = _transforms(bad, golden, target, input_side=True)
    r = bad[0]
    fd = FirstDivergence(name=r.name, index=int(getattr(r.row, "index", r.pos)), module=r.key,
                         output_metrics=_metrics(r),
                         reason="the first compared tensor already differs: the two runs were not fed the same data")
    _set_status(judged, use_bench, [r])
    if transforms:
        found = "; ".join(t.description for t in transforms[:2])
        explanation = f"The network input already differs ({r.name}); measured on the data: {found}."
    else:
        explanation = (f"The network input already differs ({r.name}, relative error {r.err if r.err is not None else float('nan'):.3g}) "
                       "and no channel reversal, axis permutation or affine (mean/std) map of the golden input "
                       "explains it: the inputs are different data (another sample, augmentation, tokenizer).")
    return fd, Diagnosis(
        category="input_mismatch",
        explanation=explanation,
        next_actions=[
            "Check preprocessing on both sides: normalisation mean/std and scale (data_scale), resize/crop, and "
            "the colour order (RGB vs BGR) of the image loader.",
            "Check the tensor layout fed to the model (NCHW vs NHWC) and the dtype cast of the input.",
            "Feed both runs the exact same saved input tensor (disable random augmentation and shuffling), then "
            "compare again.",
            "If the differing tensor is a weight or bias of the first operator (input.1/input.2 of an API-level "
            "dump), the checkpoint or its conversion differs, not the data: compare the state dicts.",
        ],
        details={"first_inputs": [x.name for x in first_inputs]}, transforms=transforms, **base)
