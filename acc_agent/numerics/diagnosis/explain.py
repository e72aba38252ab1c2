"""Turn a finding into the category, the explanation and the next actions a migration engineer reads.

Only what was measured is said: an error figure with what it was judged against, the argument and
how it differs when that was tested on the data, the pass (forward/backward) and the rank.
"""

from __future__ import annotations

import math
import typing
from typing import TYPE_CHECKING, Literal, TypedDict, get_args

from acc_agent.frontend import option
from acc_agent.models.diagnosis import Diagnosis, FirstDivergence, InputTransform, LayerGrowth
from acc_agent.numerics import budgets
from acc_agent.numerics.diagnosis import advice
from acc_agent.numerics.diagnosis.defaults import default_of
from acc_agent.numerics.diagnosis.graph import Graph, Node, Tensor, api_name
from acc_agent.numerics.diagnosis.localise import Finding
from acc_agent.numerics.diagnosis.measure import nonfinite_elsewhere, shapes_differ
from acc_agent.numerics.diagnosis.probes import Probe
from acc_agent.numerics.diagnosis.shared_setting import layer_growth
from acc_agent.numerics.diagnosis.sums import zero_sum_gradient

JudgedAgainst = Literal["bench", "dtype_budget"]
PassWalked = Literal["forward", "backward"]
ComparedBy = Literal["tensor", "statistics", "md5", "mixed", "none"]

if TYPE_CHECKING:
    from acc_agent.io.dumps import Dump
    from acc_agent.numerics.diagnosis.conditioning import IllConditioned
    from acc_agent.numerics.diagnosis.gemm_precision import CoarseGemms
    from acc_agent.numerics.diagnosis.selection import ChoiceCheck, PrecisionSelection


def value_text(v: object) -> str:
    """A recorded argument value as a reader writes it: strings in quotes, an absent value as none, numbers plainly."""
    if v is None:
        return "none"
    if isinstance(v, str):
        return f"'{v}'"
    if isinstance(v, list | tuple):
        return "[" + ", ".join(value_text(x) for x in v) + "]"
    return str(v)


def argument_value(key: str, argument: str, v: object) -> str:
    """:func:`value_text` of a recorded argument; one the call did not pass reads as the API's default when known
    (``F.gelu(x)`` computes with ``approximate='none'``)."""
    if v is None:
        known, default = default_of(api_name(key), argument)
        if known:
            return f"the default {value_text(default)} (not passed)"
    return value_text(v)


def fmt(v: float | None, spec: str = ".3g") -> str:
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return "n/a"
    if math.isinf(v):
        return "not comparable"
    return format(v, spec)


def error_text(t: Tensor) -> str:
    """A tensor's error figure as the reasons say it: a relative error from data, a difference of statistics else."""
    return f"{'relative error' if t.m.measure == 'tensor' else 'statistics differ by'} {fmt(t.err)}"


def metrics(t: Tensor | None) -> dict[str, float | None]:
    if t is None:
        return {}
    row = t.row
    out: dict[str, float | None] = {
        "cosine": row.cosine,
        "max_abs_err": row.max_abs_err,
        "rel_l2_err" if t.m.measure == "tensor" else "stat_rel_err": t.err if t.err is None or math.isfinite(t.err)
        else None,
        "excess": t.excess if math.isfinite(t.excess) else None,
    }
    if t.m.bench_err is not None:
        out["bench_rel_l2_err" if t.m.measure == "tensor" else "bench_stat_rel_err"] = t.m.bench_err
    return out


def judgement_note(use_bench: bool, dtypes: set[str], compared_by: str) -> tuple[JudgedAgainst, str]:
    stats = "" if compared_by == "tensor" else (
        " Statistics-only rows are judged on Max/Min/Mean/Norm: a change that keeps them (a reordering) is "
        "only seen through md5, and small faults are seen less sharply than with tensor data.")
    if use_bench:
        return "bench", (f"Each row's error was judged against the bench run's error on the same row (beyond "
                         f"precision when more than {budgets.BENCH_RATIO:g}x the bench's, msprobe's benchmark "
                         "ratio). Faults smaller than the bench's rounding noise cannot be seen." + stats)
    names = ", ".join(f"{d} {budgets.unit_roundoff(d):.2g}" for d in sorted(dtypes) if budgets.is_float(d))
    return "dtype_budget", ("No bench run: each tensor was judged by where it sits in the dataflow (unit roundoff "
                            f"{names or 'n/a'}): a weight, mask or network input may differ by a cast's rounding "
                            "only; an operator may amplify its incoming error a few times and add one budget of "
                            "rounding — a larger jump is a fault. This is the weaker judgement: a fault smaller "
                            f"than that is missed. Pass {option('bench')} with the baseline hardware's run at the same "
                            "precision to see inside it." + stats)


def first_divergence(f: Finding, reason: str, direction: str) -> FirstDivergence:
    t, node = f.tensor, f.node
    ins = [x for x in node.inputs if x.judged]
    worst_in = max(ins, key=lambda x: x.err or 0.0, default=None)
    amp = None
    if worst_in is not None and worst_in.err and t.err is not None and math.isfinite(t.err) and not t.is_input:
        amp = t.err / worst_in.err if math.isfinite(worst_in.err) else None
    module = (f.container or node).key
    return FirstDivergence(
        name=t.name, index=int(t.row.index), module=module, input_metrics=metrics(worst_in),
        output_metrics=metrics(t if not t.is_input else node.worst_output()),
        input_names=[x.name for x in node.inputs], amplification=amp, reason=reason, direction=direction,  # type: ignore[arg-type]
        argument=f.argument, enters_through=f.enters,  # type: ignore[arg-type]
        enclosing_modules=[a.key for a in node.ancestors() if a.is_module][:6],
    )


def divergence_at(t: Tensor, reason: str, argument: str | None = None, enters_through: str = "operator"
                  ) -> FirstDivergence:
    """The first divergence at the tensor ``t`` itself (its call, its pass, its own figures), for the answers that name
    a tensor rather than a call's jump between inputs and outputs."""
    return FirstDivergence(name=t.name, index=int(t.row.index), module=t.key, output_metrics=metrics(t), reason=reason,
                           direction=t.direction, argument=argument, enters_through=enters_through)  # type: ignore[arg-type]


def _ref(use_bench: bool) -> str:
    return f"{budgets.BENCH_RATIO:g}x the bench's error" if use_bench else "what its inputs' error and one rounding explain"


#: By pass: what a re-computed call is re-computed from, what of it is compared, and what is re-computed
#: (see ``recheck``).
RECOMPUTED_FROM = {"forward": ("inputs and arguments", "output", "call"),
                   "backward": ("forward inputs and incoming gradient", "input gradient", "gradient")}


def _nonfinite_values(t: Tensor, side: str) -> list[tuple[str, float]]:
    """One side's recorded statistics that are Inf/NaN, by name."""
    stats = t.row.__dict__.get(f"{side}_stats") or {}  # sparse statistics rows (DumpRow.__getattr__)
    return [(k, v) for k in ("Max", "Min", "Mean", "Norm") if isinstance(v := stats.get(k), float) and not math.isfinite(v)]


def _nonfinite_stats(t: Tensor, side: str = "target") -> str:
    """Which of one side's recorded statistics are Inf/NaN, e.g. "recorded Max Inf, Norm Inf"."""
    bad = [f"{k} {'NaN' if math.isnan(v) else ('Inf' if v > 0 else '-Inf')}" for k, v in _nonfinite_values(t, side)]
    return "recorded " + ", ".join(bad) if bad else "Inf/NaN in its recorded statistics"


def shared_nonfinite_input(node: Node) -> Tensor | None:
    """An input of ``node`` that holds Inf/NaN on both sides (an additive -inf mask): NaN made from it is no overflow."""
    return next((x for x in node.inputs if x.m.target_nonfinite and x.m.golden_nonfinite), None)


def nan_not_inf(t: Tensor) -> bool:
    """Whether the target's first non-finite output holds NaN and, as far as the dump shows, no Inf.

    NaN from finite inputs is an invalid operation (0/0, Inf - Inf, the root or log of a negative number), not a
    value past the dtype's range. msprobe's statistics of a tensor holding a NaN are all NaN (torch.max propagates
    it), so an Inf beside it cannot be ruled out there; counted tensors say it exactly."""
    counts = t.row.target_inf, t.row.target_nan
    if t.m.measure == "tensor" and counts != (None, None):
        return not counts[0] and bool(counts[1])
    bad = _nonfinite_values(t, "target")
    return bool(bad) and all(math.isnan(v) for _, v in bad)


#: A float dtype's largest finite value, as the overflow advice names it.
_RANGE = {"float16": "65504 for FP16", "bfloat16": "3.39e38 for BF16", "float32": "3.40e38 for FP32"}


def reason(f: Finding, difference: str | None, use_bench: bool) -> str:
    t, node = f.tensor, f.node
    err = error_text(t)
    if t.m.measure == "md5" and t.err is not None and math.isinf(t.err):
        err = "md5 differs"  # integer or bool bytes, or values moved: no size to give
    elif t.m.measure != "tensor" and t.err is not None and math.isinf(t.err):
        err = (f"{_nonfinite_stats(t)} on the target" if t.m.target_nonfinite and not t.m.golden_nonfinite
               else "statistics not comparable")
    elif t.err is None and t.m.golden_nonfinite and not t.m.target_nonfinite:
        err = f"{_nonfinite_stats(t, 'golden')} on the golden"  # nothing to measure against: say what the golden holds
    shared = shared_nonfinite_input(node) if f.enters == "overflow" else None
    if shared is not None:
        what = ("a softmax over a slice that is -inf everywhere (every position masked) gives NaN: a mask that covers "
                "a whole row" if api_name(node.key) in ("softmax", "_softmax") else
                "an invalid operation on the infinite values both sides hold (inf - inf, 0 x inf)")
        return (f"{node.key} is the first call whose output holds NaN on the target where the golden's does not, "
                f"from inputs whose Inf/NaN the golden's hold too ({shared.name}: {_nonfinite_stats(shared)} on both "
                f"sides): {what}")
    if f.enters == "overflow":
        counts = t.row.target_inf, t.row.target_nan
        what = ("an invalid operation (NaN from finite values), not a value past the dtype's range"
                if nan_not_inf(t) else "an overflow")
        if t.m.measure != "tensor" or counts == (None, None):  # statistics show Inf/NaN but do not count them
            shown = _nonfinite_stats(t)
            return (f"{node.key} is the first call whose inputs are finite and whose output holds Inf/NaN on the "
                    f"target ({shown} where the golden's are finite): {what}")
        return (f"{node.key} is the first call whose inputs are finite and whose output holds Inf/NaN on the target "
                f"({counts[0] or 0} Inf, {counts[1] or 0} NaN where the golden has none): {what}")
    if f.enters == "data_input":
        return f"the network's input {t.name} already differs ({err}): the two runs were not fed the same data"
    if f.enters == "argument" and f.scalar is not None:
        arg, g_raw, t_raw = f.scalar
        g_val, t_val = argument_value(node.key, arg, g_raw), argument_value(node.key, arg, t_raw)
        if f.shows_at is not None:
            return (f"argument {arg} of {node.key} is {t_val} on the target but {g_val} on the "
                    f"golden; its output {t.name} keeps the golden's Max/Min/Mean/Norm (values moved to other places "
                    f"keep them), and {f.shows_at.name}, the first later output that mixes positions, differs "
                    f"({error_text(f.shows_at)})")
        stays = (f"its output {t.name} stays within precision ({fmt(t.excess, '.2g')}x the allowed error), as does "
                 "every tensor of the" if not t.is_input else
                 "the dump records none of its outputs (inputs only), and every tensor stays within precision in the")
        if f.hidden and f.backward_shows is not None:
            b = f.backward_shows
            return (f"argument {arg} of {node.key} is {t_val} on the target but {g_val} on the golden; {stays} forward "
                    f"pass, but the gradient its backward sends on ({b.name}) is {fmt(b.excess, '.2g')}x the allowed "
                    "error while the gradients it received agree: the two runs do not compute the same thing")
        if f.hidden:
            return (f"argument {arg} of {node.key} is {t_val} on the target but {g_val} on the golden; {stays} pass, so "
                    "the numbers here hide the change, but the two runs do not compute the same thing")
        return (f"argument {arg} of {node.key} is {t_val} on the target but {g_val} on the golden; its tensor "
                f"inputs agree and its output {t.name} differs ({err})")
    if f.integers_made_by_target:
        shows = f.shows_at or node.worst_output() or t
        return (f"{t.name} holds integers, of which msprobe records only Max and Min, and these agree; on the target it "
                f"is the output of {f.target_producer}, a call the golden does not make, and {shows.name} differs "
                f"({error_text(shows)}): the difference enters {node.key} through {t.arg}")
    if f.enters == "argument":
        what = {"parameter": "a parameter or buffer", "mask": "an index or mask tensor",
                "other": "a tensor no dumped call produced"}.get(t.leaf or "other", "an input")
        if f.target_producer is not None:
            what = f"on the target the output of {f.target_producer}, a call the golden does not make"
        if f.golden_producer is not None:
            what = (f"on the golden the output of {f.golden_producer}, a call the target does not make"
                    if f.golden_producer_unpaired else
                    f"on the golden the output of {f.golden_producer}; no call the target dumps before it produced it")
        if t.m.target_nonfinite and not t.m.golden_nonfinite:
            return (f"{t.name} ({what}) holds Inf/NaN on the target where the golden is finite, while every tensor "
                    f"before it is finite: the Inf/NaN enter {node.key} through {t.arg}"
                    + (" — an operation msprobe did not dump made them" if t.leaf == "other" else ""))
        if t.m.measure == "statistics" and not t.beyond:
            return (f"{t.name} ({what}) is the one input of {node.key} that is not exactly the golden's ({err}, within "
                    f"what another summation order explains) while the call's output differs: the difference enters "
                    f"{node.key} through {t.arg}" + (f" — {difference}" if difference else "")
                    + "; statistics of one weight taken on two devices can differ this way too, so check its layout "
                      "first")
        how = (f"{fmt(t.excess, '.3g')}x what a cast explains" if math.isfinite(t.excess)
               else "another md5 digest in the same dtype: a loaded tensor must match byte for byte"
               if t.m.other_bytes and not t.m.same_stats_other_bytes
               else "the two sides recorded other shapes" if shapes_differ(t.row)
               else "Inf/NaN at other positions" if nonfinite_elsewhere(t.row)
               else "integer, bool and reordered tensors must match exactly")
        return (f"{t.name} ({what}) already differs ({err}; {how}) while "
                f"every tensor before it agrees: the difference enters {node.key} through {t.arg}"
                + (f" — {difference}" if difference else ""))
    if f.enters == "between_operators":
        where = (f" inside {f.container.key}, between recorded modules (a functional call such as an activation "
                 "or scaling, an in-place change, or an operator the dump does not record)"
                 if f.container is not None else
                 " (a hook, an in-place change, or an operator msprobe did not dump)")
        if t.producer is None:
            return (f"{t.name} differs ({err}) while every recorded tensor before it agrees: it was computed"
                    + where)
        return (f"{t.name} differs ({err}) although it is the same data as {t.producer.name}, which agrees: it was "
                f"changed between the two calls" + where)
    if t.strict == "recomputed" and t.recomputed is not None:
        source, compared, _ = RECOMPUTED_FROM[t.direction]
        return (f"re-computed in float64 from the target's own recorded {source}, {node.key} gives an {compared} "
                f"{fmt(t.recomputed, '.3g')} (relative L2) away from the target's {t.name}; its own rounding explains "
                f"{fmt(t.recomputed / t.excess, '.2g')}")
    if t.strict == "mean_sum" and t.extreme is not None:
        _, recorded, expected = t.extreme
        return (f"the target's own statistics disagree: the output {t.name}'s Mean is not its inputs' Means combined the "
                f"same way ({fmt(recorded, '.6g')} recorded, {fmt(expected, '.6g')} expected), {fmt(t.excess, '.3g')}x "
                "what the rounding of the recorded Means and of the elements explains")
    if t.strict == "mean_zero" and t.extreme is not None:
        what = zero_sum_gradient(t.node.key if t.node is not None else t.key)
        return (f"the target's own statistics disagree: the output {t.name} is {what}, but its recorded Mean is "
                f"{fmt(t.extreme[1], '.6g')}, {fmt(t.excess, '.3g')}x what the rounding of its elements explains")
    if t.strict == "mean_one" and t.extreme is not None:
        _, recorded, expected = t.extreme
        return (f"the target's own statistics disagree: the output {t.name} holds probabilities that sum to one along "
                f"the softmax axis (Mean {fmt(expected, '.6g')} expected), but its recorded Mean is "
                f"{fmt(recorded, '.6g')}, {fmt(t.excess, '.3g')}x what the rounding of its elements explains")
    if t.strict == "extremes" and t.extreme is not None:
        which, recorded, expected = t.extreme
        what = "Min is below the function's minimum" if which == "lowest" else f"{which} is not the function of its input's"
        return (f"the target's own statistics disagree: the output {t.name}'s {what} ({fmt(recorded, '.5g')} recorded, "
                f"{fmt(expected, '.5g')} expected), {fmt(t.excess, '.3g')}x what rounding and another approximation of "
                "the function explain")
    if t.strict == "moved" and f.shows_at is not None:
        return (f"every input of {node.key} is bit-identical to the golden's (equal md5) while its output {t.name} has "
                "other bytes with the golden's Max and Min and a Mean/Norm within rounding: most likely the same values "
                f"in other places, summed in another order; {f.shows_at.name}, the first later output that mixes "
                f"positions, differs ({error_text(f.shows_at)})")
    if t.strict == "reordered":
        return (f"every input of {node.key} is bit-identical to the golden's (equal md5) while its output {t.name} holds, "
                "most likely, the same values in other places (md5 differs, Max/Min/Mean/Norm equal)")
    if t.err is not None and math.isinf(t.err) and not t.m.target_nonfinite:
        before = (f"every input of {node.key} is within precision" if node.inputs else
                  f"every output recorded before it is within precision; the dump holds none of the inputs of {node.key}")
        return f"its output {t.name} cannot be compared with the golden's ({incomparable_why(t)}) while {before}"
    if not node.inputs:
        ref = _ref(use_bench) if use_bench else "what the error recorded before it and one rounding explain"
        return (f"{err} = {fmt(t.excess)}x the allowed error ({ref}) while every output recorded before it is within "
                f"precision; the dump holds none of the inputs of {node.key}")
    return (f"{err} = {fmt(t.excess)}x the allowed error ({_ref(use_bench)}) while every input of {node.key} is "
            "within precision")


def incomparable_why(t: Tensor) -> str:
    """What keeps a tensor from being compared: its shape or dtype as each side recorded it."""
    d = t.row.__dict__  # sparse statistics rows (DumpRow.__getattr__)
    g_shape, t_shape = d.get("golden_shape"), d.get("target_shape")
    g_dtype, t_dtype = d.get("golden_dtype"), d.get("target_dtype")
    parts = []
    if g_shape is not None and t_shape is not None and list(g_shape) != list(t_shape):
        parts.append(f"shape {list(t_shape)} on the target, {list(g_shape)} on the golden")
    if g_dtype and t_dtype and g_dtype != t_dtype:
        parts.append(f"dtype {t_dtype} on the target, {g_dtype} on the golden")
    if parts:
        return "; ".join(parts)
    dtype = budgets.canonical_dtype(g_dtype or t_dtype)
    exact = dtype is not None and not budgets.is_float(dtype)
    if t.m.measure == "md5":
        return "md5 differs; integer, bool and reordered tensors must match exactly" if exact else "md5 differs"
    if exact:
        return "integer, bool and reordered tensors must match exactly"
    return "no figure could be computed from what the two dumps recorded"


class JudgementFields(TypedDict):
    """The fields every diagnosis of one pass carries: what its rows were judged on, and how many."""

    judged_against: JudgedAgainst
    judgement_note: str
    rows_beyond_precision: int
    rows_judged: int
    pass_walked: PassWalked
    compared_by: ComparedBy


def base_fields(use_bench: bool, tensors: list[Tensor], direction: str, compared_by: str) -> JudgementFields:
    against, note = judgement_note(use_bench, {t.m.dtype for t in tensors if t.m.dtype}, compared_by)
    counted = [t for t in tensors if t.judged]
    if direction not in ("forward", "backward"):
        raise ValueError(f"unknown pass {direction!r}")
    return {"judged_against": against, "judgement_note": note,
            "rows_beyond_precision": sum(1 for t in counted if t.beyond), "rows_judged": len(counted),
            "pass_walked": "backward" if direction == "backward" else "forward",
            "compared_by": _compared_by(compared_by)}


def _compared_by(value: str) -> ComparedBy:
    for known in get_args(ComparedBy):
        if value == known:
            return typing.cast(ComparedBy, known)
    raise ValueError(f"unknown comparison basis {value!r}")


def operator_actions(node: Node, f: Finding, difference: str | None, probe: Probe | None = None,
                     golden: Dump | None = None, target: Dump | None = None, direction: str = "forward") -> list[str]:
    op = node.key
    if f.enters == "operator":
        return advice.actions(node, probe, golden, target, direction)
    if f.enters == "overflow":
        confirm = ("Run msprobe's overflow check (task overflow_check) on the target to confirm the first overflowing "
                   "call on every rank.")
        if nan_not_inf(f.tensor):
            return [f"Look inside {op} for an operation that is invalid on these inputs: 0/0, Inf - Inf, the square "
                    "root, log or fractional power of a negative number, a division by a zero norm or variance; "
                    "replay it on the dumped inputs against the golden's kernel and guard its input (a clamp or an "
                    "eps) where the golden's kernel does.", confirm]
        limit = _RANGE.get(f.tensor.m.dtype or "", "65504 for FP16")
        return [f"Find where values grow past the target dtype's range before {op}: compare the inputs' Max/Min with "
                f"the dtype's limit ({limit}); scale the loss/inputs, keep this operator in FP32, or enable "
                "the framework's overflow-safe variant.", confirm]
    if f.enters == "argument" and f.scalar is not None:
        return [f"Make argument {f.scalar[0]} of {op} the same as on the golden side "
                f"({argument_value(f.node.key, f.scalar[0], f.scalar[1])}): it is read "
                "from a config or default that differs between the two code bases.",
                "Check where the value comes from (model config, a default changed between library versions)."]
    if f.enters == "argument":
        kind = f.tensor.leaf
        if kind == "parameter":
            return [f"Compare the weights that feed {op} ({f.argument}) in the two checkpoints"
                    + (f": {difference}" if difference else "") + ". Fix the checkpoint conversion or loading "
                    "(transposed, scaled or re-laid-out weights), then compare again.",
                    "Check that both sides load the same checkpoint and that no weight is re-initialised or tied "
                    "differently on the target."]
        if kind == "mask":
            return [f"Compare how the mask/index tensor {f.argument} of {op} is built on the two sides"
                    + (f" ({difference})" if difference else "") + ": msprobe does not dump the APIs that build it "
                    "(triu/tril, arange, comparisons), so the difference first shows here.",
                    "Dump the code that builds it with msprobe's level mix or add it to the dump list."]
        if f.golden_producer is not None:
            where = ("the target does not make that call" if f.golden_producer_unpaired else
                     f"the target makes no such call before {op} (a call of that name comes later or not at all)")
            return [f"The golden computes {f.argument} of {op} with {f.golden_producer}; {where}: look for a call the "
                    "port left out or added there (a scaling, a normalisation, a residual or a cast)"
                    + (f"; {difference}" if difference else "") + ".",
                    "If the call is only named otherwise on the target, pair the two with a mapping file, then compare "
                    "again."]
        return [f"Find the code that produces {f.argument} of {op}: no dumped call produced it"
                + (f" ({difference})" if difference else "") + "; dump that code (msprobe list/level mix) to see "
                "which step differs."]
    if f.enters == "between_operators":
        return [f"Look at what happens to {f.tensor.name} between the call that produced it and {op}: a hook "
                "(register_hook, forward hooks), an in-place operation, a custom autograd Function or an operator "
                "msprobe does not dump (view/transpose/cat, custom kernels).",
                "Add that code to the dump (msprobe level mix, or a list of APIs) and compare again."]
    return advice.actions(node, probe, golden, target, direction)


def accumulation(start: Tensor, final: Tensor | None, growth: float, graph: Graph, direction: str,
                 base: JudgementFields) -> Diagnosis:
    layers = [LayerGrowth(module=node.key, name=o.name, input_error=i.err, output_error=o.err,
                          growth=o.err / i.err)
              for node, i, o in layer_growth(graph, direction, start.node.pos if start.node else 0)
              if o.err is not None and i.err]
    layers.sort(key=lambda x: -(x.growth or 0.0))
    top = layers[:5]
    names = ", ".join(f"{lg.module} ({fmt(lg.growth, '.2g')}x)" for lg in top[:3])
    return Diagnosis(
        category="precision_accumulation",
        explanation=(f"The error starts at {start.key} ({fmt(start.err)} relative) and keeps growing to "
                     f"{fmt(final.err if final else None)} at the end ({growth:.3g}x): many layers each add a "
                     f"little, no single operator is at fault. Fastest growth: {names or 'n/a'}."),
        next_actions=[
            f"Keep the layers where the error grows fastest in higher precision first ({names or 'see growth_layers'}) "
            f"and the first layer that loses precision ({start.key}); compare again and add more until the final "
            "error is within tolerance.",
            "If the target quantises or computes in lower precision than the golden (int8, FP16/BF16, HF32/TF32 "
            "matmuls), rerun that side once in higher precision: if all layers then agree, precision is the cause.",
        ],
        details={"starts_at": start.name, "final_row": final.name if final else None, "growth": growth},
        growth_layers=top, **base)


def repeated_by_kind(diag: Diagnosis, calls: list[Node]) -> None:
    """Say that the error grows fastest at later calls of the first divergence's kind (see ``shared_setting``)."""
    if not calls:
        return
    kind = api_name(calls[0].key)
    later = calls[1:]
    diag.explanation += (f" The error also grows fastest at later {kind} calls ({', '.join(n.key for n in later)}): "
                         f"a setting all {kind} calls share may differ (an eps, a momentum, an approximation or a "
                         "kernel), and this is its first call.")
    diag.next_actions.insert(0, f"Compare the settings of the {kind} layers on both sides (eps, momentum, affine, "
                                "approximation, the framework's defaults): one may differ for all of them.")
    diag.details["same_kind_calls"] = [n.key for n in calls]


def gemm_precision(start: Tensor, final: Tensor | None, gemms: CoarseGemms, base: JudgementFields) -> Diagnosis:
    """Every GEMM of the pass adds error of its own of about the same size: a reduced-precision matmul setting."""
    values = [r for _, r in gemms.residuals]
    if gemms.measured_by == "statistics":
        what = (f"Matrix multiplications add error of their own: {len(values)} of the pass's {gemms.checked} float32 "
                f"linear/matmul calls each give an output beyond what float32 rounding and their inputs' error explain, "
                f"the first of them not far from the others ({fmt(min(values))} to {fmt(max(values))}, median "
                f"{fmt(gemms.median)}; statistics differences), where one faulty call would be beyond once and the GEMMs after it would "
                f"only carry its error. The error starts at {start.key} and is {fmt(final.err if final else None)} at "
                "the end. No single operator is at fault: the GEMMs compute in a reduced precision, as TF32 (NVIDIA) "
                "and HF32 (Ascend) matmuls do; a tensor dump of a few GEMMs would confirm it by re-computation.")
    else:
        what = ""
    return Diagnosis(
        category="precision_accumulation",
        explanation=what or (f"Every matrix multiplication adds error of its own: re-computed in float64 from the target's own "
                     f"recorded inputs, each of the {len(values)} linear/matmul calls checked is off by {fmt(min(values))} "
                     f"to {fmt(max(values))} (relative L2, median {fmt(gemms.median)}), where a float32 GEMM is off by "
                     f"about 1e-7. The error starts at {start.key} ({fmt(start.err)} relative) and is "
                     f"{fmt(final.err if final else None)} at the end. No single operator is at fault: "
                     + (f"re-computed on operands rounded to a 10-bit mantissa, as TF32 (NVIDIA) and HF32 (Ascend) "
                        f"matmuls read them, {gemms.tf32_fits} of them match the target to {fmt(gemms.tf32_median)}, so "
                        "the target's GEMMs run in TF32/HF32." if gemms.tf32_fits and gemms.tf32_median is not None
                        else "the GEMMs compute in a reduced precision (TF32/HF32 matmuls, or operands cast to a lower "
                        "precision), which re-computing them on 10-bit-mantissa operands does not reproduce exactly.")),
        next_actions=[
            "Turn reduced-precision matmuls off on the target and compare again: on Ascend "
            "torch_npu.npu.matmul.allow_hf32 = False and torch_npu.npu.conv.allow_hf32 = False (convolutions use "
            "HF32 by default); on NVIDIA torch.backends.cuda.matmul.allow_tf32 = False and "
            "torch.backends.cudnn.allow_tf32 = False.",
            "If the golden run used TF32/HF32 on purpose, set the same on both sides, so that the comparison shows only "
            "real differences.",
        ],
        details={"starts_at": start.name, "final_row": final.name if final else None,
                 "gemm_residuals": [{"call": k, "residual": r} for k, r in gemms.residuals],
                 "gemm_error_measured_by": gemms.measured_by,
                 "gemm_residual_median": gemms.median, "tf32_reproduced": gemms.tf32_fits,
                 "tf32_residual_median": gemms.tf32_median},
        growth_layers=[], **base)


def layer_mismatch(t: Tensor, final: Tensor | None, transforms: list[InputTransform], consumers_agree: bool,
                   base: JudgementFields) -> tuple[FirstDivergence, Diagnosis]:
    why = ("the next calls that take this tensor received the golden data" if consumers_agree else
           "the network's final outputs agree")
    fd = divergence_at(t, f"a tensor is far beyond precision but {why}: a comparison/layout mismatch rather than a "
                          "computation that went wrong")
    if transforms:
        facts = "; ".join(f"{x.row}: {x.description} (residual {x.residual:.2g})" for x in transforms[:3])
        explanation = (f"{t.name} is far off while {why}, and the data says why: {facts}. The pair matches after "
                       "that transformation, so the layer is fine and only its layout/pairing differs.")
    else:
        explanation = (f"{t.name} is far off while {why}: the tensors compared are probably not the same thing "
                       "(renamed, fused, in-place or re-laid-out operators, or a dump written at another moment). "
                       "No transpose/reshape of the golden tensor explains it.")
    return fd, Diagnosis(
        category="layer_mismatch", explanation=explanation,
        next_actions=["Check the pairing of this row: a renamed or fused module on the target pairs different "
                      "tensors; fix it with a mapping (target_name: golden_name).",
                      "Compare layouts: the target may store the tensor transposed (NCHW/NHWC, [B,S,H] vs [S,B,H]) "
                      "or reshaped.",
                      "Check in-place operators and graph fusions on the target: dump the un-fused graph."],
        details={"bad_row": t.name, "final_row": final.name if final else None}, transforms=transforms, **base)


def ill_conditioned(t: Tensor, found: IllConditioned, base: JudgementFields) -> tuple[FirstDivergence, Diagnosis]:
    """A sin/cos/tan/exp whose argument's own rounding is a large error of the function's value."""
    assert t.node is not None  # ill_conditioned() looked at it
    dtype = found.dtype or "its dtype"
    moves = ("an angle error of about" if found.function in ("sin", "cos", "tan") else "a relative error of about")
    fd = FirstDivergence(name=t.name, index=int(t.row.index), module=t.key, output_metrics=metrics(t),
                         input_names=[x.name for x in t.node.inputs[:1]],
                         direction=t.direction,  # type: ignore[arg-type]
                         reason=(f"the input of {t.key} is within {dtype} rounding "
                                 f"({fmt(found.input_error, '.2g')} relative), but at arguments up to "
                                 f"{fmt(found.magnitude, '.4g')} that rounding is {moves} "
                                 f"{fmt(found.argument_error, '.2g')}, which {found.function} passes on in full"))
    fd.difference = (f"{found.function} of arguments up to {fmt(found.magnitude, '.4g')}: ill-conditioned in {dtype}")
    seen = (f"its output is {fmt(t.err, '.3g')} off" if t.m.measure == "tensor" else
            f"its recorded statistics differ by {fmt(t.err, '.3g')}: they show little of it, since the value's range "
            "does not move")
    explanation = (f"{t.key} computes {found.function} of arguments up to {fmt(found.magnitude, '.4g')}: its input is "
                   f"right to its own {dtype} rounding ({fmt(found.input_error, '.2g')} relative), which at that size "
                   f"is {moves} {fmt(found.argument_error, '.2g')}, and {found.function} passes it on in full ({seen}). "
                   f"The kernel is not at fault: the function is ill-conditioned at these arguments in {dtype}. "
                   "Compute it, and the product that feeds it, in float32 (a sinusoidal timestep or position embedding "
                   "in a low-precision model is the usual case).")
    return fd, Diagnosis(
        category="operator_fault", explanation=explanation,
        next_actions=[f"Compute {t.key} and the tensor it takes in float32 on the target (cast the timestep or "
                      "position tensor to float32 before the product, and the result back), as the golden does.",
                      "Check the other sin/cos/exp calls on large arguments the same way: each one needs float32."],
        details={"ill_conditioned": found.function, "argument_magnitude": found.magnitude,
                 "argument_error": found.argument_error}, **base)


#: msprobe's documented bar for a tensor row: cosine at least 0.99 and MaxAbsErr at most 1e-3.
MSPROBE_MIN_COSINE = 0.99
MSPROBE_MAX_ABS_ERR = 1e-3
_DISCOUNTED_LISTED = 5


def msprobe_bar_check(graph: Graph, at: Tensor) -> tuple[int, list[dict[str, str]]]:
    """Rows before ``at`` (same pass) that fail msprobe's bar, and why each was not taken as the divergence.

    A user checks the answer against msprobe's rule (the first row with cosine < 0.99 or MaxAbsErr >
    1e-3); when that rule points earlier, the diagnosis must say why those rows were discounted instead of
    claiming that everything before agrees."""
    failing: list[dict[str, str]] = []
    count = 0
    for t in graph.tensors:
        if t.pos >= at.pos or t.direction != at.direction or t.m.measure != "tensor":
            continue
        cos, mae = t.row.cosine, t.row.max_abs_err
        if not ((cos is not None and cos < MSPROBE_MIN_COSINE) or (mae is not None and mae > MSPROBE_MAX_ABS_ERR)):
            continue
        count += 1
        if len(failing) < _DISCOUNTED_LISTED:
            failing.append({"row": t.name, "cosine": fmt(cos, ".6f"), "max_abs_err": fmt(mae, ".3g"),
                            "why_discounted": _why_discounted(t)})
    return count, failing


def _why_discounted(t: Tensor) -> str:
    if t.m.fill is not None and not t.beyond:
        return (f"{t.m.fill_share:.0%} of it is the mask fill {t.m.fill:g} on both sides; without those positions "
                f"its relative error is {fmt(t.err)}, within what precision explains there")
    if not t.judged:
        return "not judged (no error figure)"
    if not t.beyond:
        low_cos = t.row.cosine is not None and t.row.cosine < MSPROBE_MIN_COSINE
        what = ("the cosine of a tensor this small or this close to zero moves with rounding" if low_cos else
                "MaxAbsErr above 1e-3 comes from the size of the values, not from a fault")
        return (f"relative error {fmt(t.err)} is within what precision explains at this point of the dataflow "
                f"({fmt(t.excess, '.2g')}x the allowed error): {what}")
    if t.node is not None and not t.node.computing and not t.is_input:
        return "an enclosing module's output: the calls recorded inside it are judged instead"
    return "beyond precision, but the difference does not reach the calls that take it"


def golden_overflow(f: Finding, base: JudgementFields) -> tuple[FirstDivergence, Diagnosis]:
    """The golden run overflows where the target stays finite: the baseline, not the port, is what to fix first."""
    t, node = f.tensor, f.node
    counts = t.row.golden_inf, t.row.golden_nan
    shown = (f"{counts[0] or 0} Inf, {counts[1] or 0} NaN" if t.m.measure == "tensor" and counts != (None, None)
             else _nonfinite_stats(t, "golden"))
    reason = (f"{node.key} is the first call whose inputs are finite and whose output holds Inf/NaN on the golden "
              f"({shown}) while the target's is finite: the golden run overflows here, not the target")
    fd = first_divergence(f, reason, t.direction)
    diag = Diagnosis(
        category="operator_fault",
        explanation=(f"Golden overflow: {node.key} turns finite inputs into Inf/NaN on the golden side while the target "
                     f"stays finite, in the {t.direction} pass; a tensor that carries the golden's Inf/NaN has nothing "
                     "to be judged against, so the comparison cannot vouch for anything from this call on."),
        next_actions=[f"The baseline (golden) run overflows at {node.key} while the target stays finite: rerun the "
                      "golden with the precision or overflow protection the target uses (FP32 for this call, a loss "
                      "scale) and compare again.",
                      "Run msprobe's overflow check (task overflow_check) on the golden run to confirm where it "
                      "overflows."],
        details={"golden_overflow": t.name}, **base)
    return fd, diag


def refuted_choice(fd: FirstDivergence, diag: Diagnosis, t: Tensor, check: ChoiceCheck) -> None:
    """A choice that differs where rounding cannot have decided it: the reason and the explanation say so, with the
    widest such position's figures, and ``details`` carries them."""
    op = t.node.key if t.node is not None else t.key
    gap, diff = check.largest_gap, check.input_difference
    if math.isnan(gap) or math.isnan(diff):
        where = "a NaN where the golden's values are compared"
    elif check.threshold:
        where = (f"the golden's value lies {fmt(gap)} from its threshold while the two runs' operands differ by "
                 f"{fmt(diff)} there: rounding cannot flip that comparison")
    else:
        where = (f"the golden's two candidates are {fmt(gap)} apart while the runs' inputs differ by at most "
                 f"{fmt(diff)} there: rounding cannot swap them")
    what = "gives another mask than the golden's" if check.threshold else "chooses other elements than the golden's"
    fd.reason = (f"{op} {what} at {check.differing} of {check.total} positions ({t.arg}) from inputs within "
                 f"precision, and at {check.unexplained} of them {where}")
    diag.explanation = f"The call chose otherwise, not rounding: {fd.reason}. " + diag.explanation
    diag.details.update({"choices_differing": check.differing, "choices": check.total,
                         "choices_unexplained": check.unexplained, "largest_gap": gap if math.isfinite(gap) else None,
                         "input_difference": diff if math.isfinite(diff) else None})


def _selection_reason(sel: PrecisionSelection) -> str:
    op, choice, err, check, counts = sel.node.key, sel.choice, fmt(sel.inputs_error), sel.check, sel.counts
    if sel.unseen is not None:
        return (f"{sel.shows_at.key} is {fmt(sel.shows_at.excess)}x beyond precision, only just, and its data comes "
                f"through {sel.unseen.name}: integers recorded with the same Max and Min as {op} {choice.arg}, a choice "
                f"made from inputs within precision ({err} relative); msprobe's statistics hold only Max and Min of "
                "integer tensors, so whether the two runs chose the same cannot be seen")
    if check is not None and check.threshold:
        return (f"{op} gives another mask than the golden's at {check.differing} of {check.total} positions "
                f"({choice.arg}) from inputs within precision ({err} relative): at every one of them the golden's value "
                f"lies {fmt(check.largest_gap)} at most from its threshold, closer than the two runs' operands differ "
                f"there (up to {fmt(check.input_difference)}), so rounding decides the comparison")
    if check is not None:
        return (f"{op} chooses other elements than the golden's at {check.differing} of {check.total} positions "
                f"({choice.arg}) from inputs within precision ({err} relative): at every one of them the golden's "
                f"two candidates lie {fmt(check.largest_gap)} apart at most, while the runs' inputs differ by up to "
                f"{fmt(check.input_difference)} there, enough to swap values up to {fmt(2 * check.input_difference)} "
                "apart, so rounding decides the choice")
    if counts is not None:
        return (f"{sel.shows_at.name} holds {counts[1]} rows on the target and {counts[0]} on the golden: a "
                f"selection no dumped call made picks other elements, and the choice behind it ({op}, "
                f"{choice.arg}) is made from inputs within precision ({err} relative)")
    return (f"{op} returns another {choice.arg} from inputs within precision ({err} relative): a choice between "
            "nearly equal values, which rounding can decide the other way")


def _selection_explanation(sel: PrecisionSelection, reason: str) -> str:
    near_ties = ("Near-ties that the target's rounding decides the other way (top-k routing in a mixture of experts, "
                 "argmax, a threshold)")
    if sel.unseen is not None:
        return (f"The runs may part ways at a choice rather than at a faulty call: {reason}. {near_ties} move the "
                f"tensors after it by about this much, so {sel.shows_at.key} need not be at fault.")
    text = (f"The runs part ways at a choice, not at a faulty call: {reason}. {near_ties} explain "
            + ("it, and every call after it works on other elements, so their differences follow from this choice."
               if sel.followed else "it."))
    if sel.check is not None:
        return text
    if sel.choice.m.measure == "md5":
        return text + (" Their md5 digests tell only that the choices differ: whether rounding explains each one was "
                       "not measured (no tensor data).")
    if sel.choice.m.measure != "tensor":
        return text + (" msprobe's statistics hold only Max and Min of integer and bool tensors, so the choices "
                       "themselves cannot be compared here.")
    return text + (f" Whether rounding explains each differing choice was not measured ({sel.node.key} is not a "
                   "top-k, sort or argmax whose choices can be checked against its inputs).")


def precision_selection(sel: PrecisionSelection, base: JudgementFields) -> tuple[FirstDivergence, Diagnosis]:
    """A choice (top-k, argmax, a threshold) that rounding decides: the runs part ways there, no call is at fault."""
    op, choice, check, counts = sel.node.key, sel.choice, sel.check, sel.counts
    reason = _selection_reason(sel)
    explanation = _selection_explanation(sel, reason)
    actions = [] if check is not None else [
        f"Dump {op} in tensor mode on both runs (msprobe task 'tensor' with this API in its 'list') and compare "
        "again: each differing choice is then checked against its inputs' difference."]
    actions.append(f"Compute the inputs of {op} in float32 on the target (a mixture-of-experts router in float32 is "
                   "common practice), so that rounding no longer decides near-ties, then compare again.")
    if sel.followed:
        actions.append("Judge the calls after this choice by end metrics (loss, accuracy) rather than call by call: "
                       "another choice at a near-tie is an error of neither run.")
    fd = FirstDivergence(name=choice.name, index=int(choice.row.index), module=op, output_metrics=metrics(choice),
                         input_names=[x.name for x in sel.node.inputs], direction="forward", reason=reason,
                         enters_through="operator")
    details: dict[str, object] = {"selection_call": op, "selection_output": choice.name,
                                  "selection_inputs_error": sel.inputs_error, "shows_at": sel.shows_at.name}
    if sel.unseen is not None:
        details["selection_unseen_through"] = sel.unseen.name
    if counts is not None:
        details["row_counts"] = {"golden": counts[0], "target": counts[1]}
    if check is not None:
        details.update(choices_differing=check.differing, choices=check.total, largest_gap=check.largest_gap,
                       input_difference=check.input_difference)
    return fd, Diagnosis(category="precision_accumulation", explanation=explanation, next_actions=actions,
                         details=details, **base)


def inputs_only(prev: Node, f: Finding, difference: str | None, golden: Dump | None, target: Dump | None,
                base: JudgementFields) -> tuple[FirstDivergence, Diagnosis]:
    """A dump of inputs only: the call before the first differing input, whose own inputs agree."""
    t, node = f.tensor, f.node
    err = error_text(t) if t.err is not None and math.isfinite(t.err) else "not comparable"
    reason = (f"{prev.key} takes inputs that agree with the golden's, and the next call, {node.key}, receives {t.name}, "
              f"which already differs ({difference or err}): this dump records "
              f"inputs only (msprobe data_mode 'input'), so the output of {prev.key} is seen only as that input")
    fd = FirstDivergence(name=t.name, index=int(t.row.index), module=prev.key, output_metrics=metrics(t),
                         input_names=[x.name for x in prev.inputs], direction=t.direction,  # type: ignore[arg-type]
                         reason=reason, enters_through="operator")
    fd.difference = difference
    explanation = (f"One localised jump, most likely at {prev.key}: {reason}. The difference enters at {prev.key} or "
                   "in code msprobe does not dump between the two calls.")
    actions = [f"Re-dump with msprobe data_mode 'all' (its default), or input and output, so that the output of "
               f"{prev.key} is recorded, then compare again: the call is then judged on its own output."]
    actions += advice.actions(prev, None, golden, target, t.direction)
    return fd, Diagnosis(category="operator_fault", explanation=explanation, next_actions=actions,
                         details={"inputs_only": True, "seen_as": t.name}, **base)
