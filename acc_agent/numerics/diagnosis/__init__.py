"""Find where a migrated run first goes wrong, and why, telling rounding noise from bugs.

``compare_dumps`` calls :func:`diagnose` once per rank with the compared rows and
:func:`combine_ranks` across ranks. The work is split by concern:

- ``measure``: one relative-error figure per row from tensor metrics, statistics or md5;
- ``graph``: the dataflow graph (which output each input is, leaves, module nesting);
- ``judge``: which tensors are beyond precision (against a bench, or against the dataflow);
- ``localise``: the earliest such tensor and how the difference enters there;
- ``leaves``: what differs about an argument (transposed, scaled, shifted mask...);
- ``explain``: categories, explanations and next actions;
- ``ranks``: which rank diverges first.

Procedure for one pass (forward first; backward when the forward agrees): the first divergence is
the earliest tensor beyond precision. The network's input → ``input_mismatch``. An output whose
difference does not reach the calls that take it, or that the final outputs no longer show, with a
gross error → ``layer_mismatch``. Otherwise, when the error still at least doubles (relative to
the first divergence) by the end → ``precision_accumulation``, else ``operator_fault`` (including a
difference that enters through a weight, mask, scalar argument or between two calls). Nothing
beyond precision → ``no_layer_fault``.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from acc_agent.frontend import option
from acc_agent.models.diagnosis import Diagnosis, FirstDivergence, InputTransform
from acc_agent.numerics import budgets
from acc_agent.numerics.diagnosis import explain, leaves, probes
from acc_agent.numerics.diagnosis.conditioning import flag_ill_conditioned, ill_conditioned
from acc_agent.numerics.diagnosis.digests import racing_digests, rounding_digests
from acc_agent.numerics.diagnosis.gemm_precision import coarse_gemms
from acc_agent.numerics.diagnosis.graph import (
    ROOT_MODULE_PATHS,
    Graph,
    Node,
    Tensor,
    api_name,
    build,
    is_integer,
    module_path,
    other_api_partner,
    split_name,
)
from acc_agent.numerics.diagnosis.inputs_only import producer_before
from acc_agent.numerics.diagnosis.judge import judge, other_apis_convention
from acc_agent.numerics.diagnosis.localise import (
    Finding,
    dead_end,
    final_tensor,
    find,
    first_golden_overflow,
    in_pass,
)
from acc_agent.numerics.diagnosis.measure import mixed_precision, numel, shapes_differ
from acc_agent.numerics.diagnosis.partial_dumps import (
    backward_starts_otherwise,
    before_the_dump,
    computed_before_the_dump,
    may_travel_unrecorded,
    say_what_was_not_recorded,
    say_which_pass_one_side_lacks,
)
from acc_agent.numerics.diagnosis.ranks import combine_ranks
from acc_agent.numerics.diagnosis.recheck import recheck, recheck_extremes
from acc_agent.numerics.diagnosis.selection import (
    MILD_EXCESS,
    choice_check,
    precision_selection,
    refuted,
    undumped_choice_hint,
)
from acc_agent.numerics.diagnosis.shared_setting import same_kind_growth, starts_in_float32_call
from acc_agent.numerics.diagnosis.sums import zero_sum_gradient
from acc_agent.numerics.diagnosis.unpaired import (
    forward_tail,
    recomputed_by_side,
    unpaired_before,
    unpaired_calls,
)

if TYPE_CHECKING:
    from acc_agent.io.dumps import Dump
    from acc_agent.models.compare import DumpRow

__all__ = ["ROOT_MODULE_PATHS", "combine_ranks", "diagnose", "module_path", "split_name"]

_MAX_TRANSFORM_ROWS = 4
#: Share of elements within tolerance for the final outputs to count as agreeing.
FINAL_WITHIN = 0.99


def diagnose(rows: list[DumpRow], golden: Dump | None, target: Dump | None, bench: Dump | None = None,
             precision: str | None = None) -> tuple[FirstDivergence | None, Diagnosis]:
    """First divergence and cause category of one rank's compared rows (rows may get new statuses)."""
    mixed = mixed_precision(golden, target, precision)
    graph = build(rows, golden, target, bench, precision, mixed)
    use_bench = bench is not None and any(t.m.bench_err is not None for t in graph.tensors)
    judge(graph, use_bench)
    raced = racing_digests(graph)
    rounded = rounding_digests(graph)
    compared_by = _compared_by(graph)
    forward, backward = in_pass(graph, "forward"), in_pass(graph, "backward")
    direction = "forward" if any(t.judged for t in forward) else "backward"
    # without a bench, low-precision calls are re-computed from the target's own tensors (see recheck); a
    # training step's 0-d loss has statistics only in a tensor dump, hence "mixed" too
    rechecking = not use_bench and compared_by in ("tensor", "mixed")
    if rechecking:
        recheck(in_pass(graph, direction), target, graph, golden)
    if not use_bench and compared_by in ("statistics", "md5", "mixed") and direction == "forward":
        recheck_extremes(forward, target)
        if backward and not any(t.beyond for t in forward):
            recheck_extremes(backward, target)
    flag_ill_conditioned(forward)
    incomparable = _incomparable_dead_ends(graph)
    fd, diag = _diagnose_pass(graph, direction, golden, target, use_bench, compared_by)
    if direction == "forward" and diag.category == "no_layer_fault" and rechecking and backward:
        recheck(backward, target, graph, golden)
    if direction == "forward" and diag.category == "no_layer_fault" and any(t.beyond for t in backward):
        fd, diag = _diagnose_pass(graph, "backward", golden, target, use_bench, compared_by)
        diag.explanation = "The forward pass agrees; in the backward pass: " + diag.explanation
        if compared_by == "statistics" and _mild(graph, fd) and not graph.forward_bit_identical:
            diag.explanation += (" Statistics cannot show a forward difference that moves values to other places (a "
                                 "swapped embedding row, a permuted weight): its Max, Min, Mean and Norm stay, and it "
                                 "shows first in the backward pass. A forward dump in md5 or tensor mode rules it out.")
            unseen = _integer_inputs_unseen(forward)
            if unseen is not None:
                diag.explanation += (f" Nor can they show integer inputs that changed (labels, indices, masks): of "
                                     f"{unseen.name} msprobe records only Max and Min, which agree.")
    elif direction == "forward" and backward:
        diag.details["backward_rows_not_walked"] = len(backward)
        judged_backward = sum(1 for t in backward if t.judged)
        if diag.category == "no_layer_fault" and judged_backward:
            diag.explanation += (f" The {judged_backward} compared tensors of the backward pass are within "
                                 "precision too.")
    say_what_was_not_recorded(graph, fd, diag)
    say_which_pass_one_side_lacks(graph, golden, target, diag)
    if mixed.loss_scale != 1.0:
        scale = mixed.loss_scale
        diag.details["loss_scale"] = scale
        diag.judgement_note += (f" The target's backward pass is scaled by {scale:g} (2^{round(math.log2(scale))}): "
                                "its first gradient is exactly that multiple of the golden's in all four statistics, "
                                "the loss scaling of mixed-precision training (torch.amp.GradScaler or a static loss "
                                "scale). Its backward tensors were divided by it before judging; if the target "
                                "uses no loss scaling, that factor is the difference itself.")
    if mixed.autocast is not None:
        low = mixed.autocast
        diag.details["autocast_precision"] = low
        diag.judgement_note += (f" The target mixes float32 with {low} tensors and the golden holds no {low} tensor "
                                f"(autocast): its float32 tensors carry the {low} calls' error, so they were judged at "
                                f"{low} precision too.")
    if rounded:
        diag.details["digests_differing_by_rounding"] = [t.name for t in rounded]
    if raced:
        # the verdict of a clean run leaves their rows to this judgement (see compare_dumps.verdict's not_judged)
        diag.details["digests_after_a_later_write"] = [t.name for t in raced]
        outputs = [t.name for t in raced if not t.is_input]
        diag.judgement_note += (f" {len(outputs)} output{'s' * (len(outputs) > 1)} ({outputs[0]}) "
                                f"{'have' if len(outputs) > 1 else 'has'} another md5 digest with every statistic equal, "
                                f"while the calls that read {'them' if len(outputs) > 1 else 'it'} return the golden's "
                                "exact bytes or a later tensor with other values carries the same digest: msprobe "
                                "digests a tensor on the CPU in a background thread, after a later in-place write (an "
                                "all_reduce, add_) may have landed, so such a digest differs from run to run. Not "
                                "judged.")
    for side, rerun in recomputed_by_side(graph, golden, target):
        if rerun:
            other = "golden" if side == "target" else "target"
            diag.details[f"{side}_recomputed_calls"] = rerun[:12]
            diag.judgement_note += (f" The {side} records {len(rerun)} forward call{'s' * (len(rerun) > 1)} during its "
                                    f"backward pass ({rerun[0]} .. {rerun[-1]}) that the {other} does not: activation "
                                    "checkpointing (recomputation) runs them again to rebuild what the backward needs. "
                                    "They have no partner and were not compared.")
    if incomparable:
        many = len(incomparable) > 1
        diag.details["other_shapes_not_judged"] = incomparable[:12]
        diag.judgement_note += (f" {len(incomparable)} output{'s' * many} recorded with other element counts on the "
                                f"two sides ({incomparable[0]}) {'were' if many else 'was'} not judged: the calls that "
                                f"take {'them' if many else 'it'} received the golden data, so msprobe recorded another "
                                "tensor there, not a wrong result.")
    methods: dict[str, int] = {}
    for row in rows:
        method = str(row.pair_method or "exact")
        methods[method] = methods.get(method, 0) + 1
    diag.details["pairing_methods"] = methods
    _consistency(graph, fd, diag)
    diag.details["dataflow_linked_by"] = graph.linked_by
    cancelled = [t.name for t in graph.tensors if t.cancelled and not t.beyond]
    if cancelled:
        # msprobe's NormRelativeErr rule flags them (a relative error of 1,000 on a gradient of 1e-8): the
        # verdict of a clean run follows this judgement for them (see compare_dumps.cancelled_gradient_only)
        diag.details["cancelled_gradients"] = cancelled
    _set_status(graph, use_bench, fd)
    return fd, diag


def _mild(graph: Graph, fd: FirstDivergence | None) -> bool:
    """Whether the first divergence is only a few times beyond what precision explains (see selection.MILD_EXCESS),
    by no bound rounding cannot break."""
    t = next((x for x in graph.tensors if fd is not None and x.name == fd.name), None)
    return t is not None and not t.strict and t.excess <= MILD_EXCESS


def _integer_inputs_unseen(forward: list[Tensor]) -> Tensor | None:
    """The first integer input of the forward pass that no dumped call produced, compared by statistics alone: msprobe
    records only Max and Min of an integer tensor, so labels or indices that changed inside that range look equal."""
    return next((t for t in forward if t.is_input and t.producer is None and t.m.measure == "statistics"
                 and t.m.err == 0.0 and is_integer(t)), None)


def _incomparable_dead_ends(graph: Graph) -> list[str]:
    """Outputs whose golden and target hold different element counts while every call taking them received the
    golden data: another tensor msprobe recorded (a channels-last average pool's input gradient is recorded with
    its incoming gradient's shape), not a result that went wrong. They are left unjudged; their names are returned.
    The same elements in another shape (a tensor stored transposed) stay a mismatch of what was compared, which
    ``layer_mismatch`` explains with the layout found."""
    left: list[str] = []
    for t in graph.tensors:
        if t.is_input or not t.beyond or t.m.err != math.inf or not shapes_differ(t.row) \
                or numel(t.row.golden_shape) == numel(t.row.target_shape):
            continue
        if dead_end(t, graph) is True or _records_an_input(t):
            t.excess = math.nan
            left.append(t.name)
    return left


def _records_an_input(t: Tensor) -> bool:
    """Whether one side recorded, as this output, a copy of one of the call's inputs (the same shape and statistics):
    msprobe records a channels-last average pool's input gradient with its incoming gradient, and when that side is
    the golden no later call is linked to it to show that the calls after it received the right data."""
    node = t.node
    if node is None:
        return False
    d = t.row.__dict__  # sparse statistics rows (DumpRow.__getattr__)
    for side in ("golden", "target"):
        shape, stats = d.get(f"{side}_shape"), d.get(f"{side}_stats")
        if not stats:
            continue
        for x in node.inputs:
            xd = x.row.__dict__
            if xd.get(f"{side}_shape") == shape and xd.get(f"{side}_stats") == stats:
                return True
    return False


def _consistency(graph: Graph, fd: FirstDivergence | None, diag: Diagnosis) -> None:
    """Say how many earlier rows fail msprobe's bar and why they were discounted; note excluded mask fills."""
    filled = [t for t in graph.tensors if t.m.fill is not None]
    if filled:
        diag.details["mask_fills_excluded"] = [{"row": t.name, "fill": t.m.fill, "share": round(t.m.fill_share, 4)}
                                               for t in filled[:8]]
        diag.judgement_note += (f" {len(filled)} tensors hold a large constant fill (masked positions such as "
                                f"{filled[0].m.fill:g}) on both sides: those positions were left out of the error "
                                "used for judging, since they would pull the cosine to 1.")
    at = next((t for t in graph.tensors if fd is not None and t.name == fd.name), None)
    if at is None:
        return
    count, listed = explain.msprobe_bar_check(graph, at)
    diag.details["earlier_rows_failing_msprobe_bar"] = count
    if not count:
        return
    diag.details["discounted_rows"] = listed
    shown = "; ".join(f"{x['row']} ({x['why_discounted']})" for x in listed[:2])
    more = f"; and {count - 2} more" if count > 2 else ""
    note = (f" {count} earlier row{'s' if count > 1 else ''} of this pass fail{'' if count > 1 else 's'} msprobe's "
            f"bar (cosine < 0.99 or MaxAbsErr > 1e-3) and {'were' if count > 1 else 'was'} discounted: {shown}{more}.")
    if fd is not None:
        seen = f" ({count} of them fail msprobe's bar of cosine 0.99 / MaxAbsErr 1e-3; why each was discounted follows)"
        for claim in ("is within precision", "every tensor before it agrees", "every recorded tensor before it agrees"):
            fd.reason = fd.reason.replace(claim, claim + " within precision" * (not claim.endswith("precision")) + seen)
    diag.explanation += note


def _compared_by(graph: Graph) -> str:
    kinds = {t.m.measure for t in graph.tensors if t.err is not None}
    if not kinds:
        return "none"
    if len(kinds) == 1:
        return next(iter(kinds))
    return "mixed"


def _carried_on(t: Tensor, graph: Graph) -> bool:
    """Whether a later call of the pass received data about as far off as ``t``, beyond the dtype's budget: the
    difference went on into the network, whatever a final loss that averages it away says. With no dataflow link
    from ``t`` (a concatenation or a view msprobe does not record in between: a patch embedding flattened and joined
    to a class token), that is the evidence that ``t`` was computed otherwise, not compared with something else."""
    err = t.err
    if err is None or not math.isfinite(err):
        return False
    return any(x.is_input and x.gross and x.pos > t.pos and x.direction == t.direction and x.err is not None
               and x.err >= 0.5 * err and x.node is not t.node for x in graph.tensors)


def _final_agrees(final: Tensor | None) -> bool:
    if final is None or final.err is None:
        return False
    if final.m.target_nonfinite and not final.m.golden_nonfinite:
        return False
    within = final.row.within_tolerance_ratio
    if within is not None and within < FINAL_WITHIN:
        return False
    # agreeing is the output's own error, not its judgement: an output that only carries what came in (not
    # beyond) can still be far from the golden
    return final.err <= budgets.budget(final.m.dtype)


def _diagnose_pass(graph: Graph, direction: str, golden: Dump | None, target: Dump | None, use_bench: bool,
                   compared_by: str) -> tuple[FirstDivergence | None, Diagnosis]:
    tensors = in_pass(graph, direction)
    base = explain.base_fields(use_bench, tensors, direction, compared_by)
    counted = [t for t in tensors if t.judged]
    if not counted:
        return None, Diagnosis(
            category="no_layer_fault",
            explanation="No row could be judged (no tensor pair with data, statistics or md5 on both sides), so no "
                        "layer can be blamed.",
            next_actions=["Re-dump both runs with msprobe task 'statistics' (the default) or 'tensor', and check "
                          "that names pair (a mapping file pairs renamed layers)."], **base)
    finding = find(graph, direction, golden, target)
    final = final_tensor(graph, direction)
    if finding is None:
        finding = first_golden_overflow(graph, direction, golden, target)
        if finding is not None and finding.enters == "overflow":
            return explain.golden_overflow(finding, base)
    if finding is None:
        worst = max(counted, key=lambda t: t.excess)
        return None, Diagnosis(
            category="no_layer_fault",
            explanation=(f"All {len(counted)} compared tensors of the {direction} pass are within what precision "
                         f"explains (largest: {worst.name} at {explain.fmt(worst.excess, '.2g')}x the allowed error). "
                         "The layers agree; a wrong final result comes from after the dumped part of the network."),
            next_actions=["Compare post-processing (decoding, argmax/top-k, thresholds) between the two sides: run "
                          "the golden side's post-processing on the target's final outputs.",
                          "If the end metric still differs, check evaluation data and metric code are the same."],
            details={"worst_row": worst.name, "worst_excess": worst.excess if math.isfinite(worst.excess) else None},
            **base)
    if finding.enters == "data_input":
        target_calls, golden_calls = unpaired_before(finding.tensor, graph, golden, target)
        if target_calls or golden_calls:
            tail = forward_tail(graph, golden, target, target_calls, golden_calls)
            return unpaired_calls(finding.tensor, target_calls, golden_calls, base, tail)
        if finding.tensor.direction == "backward":
            return backward_starts_otherwise(finding, graph, base)
        if computed_before_the_dump(finding, golden, target):
            return before_the_dump(finding, base)
        return _input_mismatch(finding, golden, target, base)
    check = choice_check(finding, golden, target)
    chosen = precision_selection(finding, graph, direction, check)
    if chosen is not None:
        return explain.precision_selection(chosen, base)
    prev = producer_before(finding, graph, direction)
    if prev is not None:
        return explain.inputs_only(prev, finding, leaves.describe(finding.tensor, golden, target), golden, target,
                                   base)
    t = finding.tensor
    # a parameter's gradient goes to the optimizer, not to a later call: that nothing after it is wrong
    # says nothing about it, so it is never a "mismatch the network did not feel"
    gradient = id(t) in graph.parameter_gradients
    ends = dead_end(t, graph) if finding.enters in ("operator", "overflow") and not gradient else None
    if finding.enters == "overflow" and ends is True:
        return explain.layer_mismatch(t, final, [], True, base)
    # a choice the recorded tensors show precision does not explain is the call's, whatever follows it: the final
    # outputs may agree (one token of 256 routed elsewhere) or the error may grow after it, as a wrong choice's does
    wrong_choice = refuted(check)
    if finding.enters == "operator" and wrong_choice is None:
        sensitive = ill_conditioned(t)
        if sensitive is not None and t.strict in (None, "ill_conditioned"):
            return explain.ill_conditioned(t, sensitive, base)
        if t.gross and not gradient and (ends is True or (ends is None and _final_agrees(final) and final is not t
                                                          and not _carried_on(t, graph)
                                                          and not may_travel_unrecorded(t, graph))):
            transforms = _transforms([t], golden, target, input_side=False)
            return explain.layer_mismatch(t, final, transforms, ends is True, base)
        if not use_bench and not t.gross and not t.strict and _final_agrees(final) and final is not t \
                and compared_by == "tensor":
            return None, Diagnosis(
                category="no_layer_fault",
                explanation=(f"{t.name} exceeds the judged precision slightly ({explain.fmt(t.excess)}x) but stays "
                             "inside the dtype budget and the final outputs agree: an isolated rounding excursion, "
                             "not a fault."),
                next_actions=["Rerun with another input to confirm the excursion is noise: it should move.",
                              f"Pass a bench run ({option('bench')}) to judge each layer against the baseline "
                              "hardware."],
                details={"excursion": t.name, "final_row": final.name if final else None}, **base)
        growth = _growth(final, t)
        # beyond a bound rounding cannot break (strict) is a fault, however the error grows after it
        if growth is not None and growth >= budgets.GROWTH_RATIO and final is not None and not t.strict \
                and not _single_jump(t, graph):
            if not starts_in_float32_call(t):
                return None, explain.accumulation(t, final, growth, graph, direction, base)
            # float32 rounding does not start accumulation outside a matrix multiplication: the call is at fault
            fd, diag = _operator_fault(finding, final, graph, golden, target, use_bench, direction, base)
            explain.repeated_by_kind(diag, same_kind_growth(t, graph, direction))
            return fd, diag
        if not use_bench and not t.strict:
            gemms = coarse_gemms(graph, direction, t, target)
            if gemms is not None:  # every GEMM adds its own error: a precision setting, not this call
                return None, explain.gemm_precision(t, final, gemms, base)
    fd, diag = _operator_fault(finding, final, graph, golden, target, use_bench, direction, base)
    if wrong_choice is not None:
        explain.refuted_choice(fd, diag, t, wrong_choice)
    hint = undumped_choice_hint(finding, graph, direction)
    if hint is not None:
        diag.explanation += " " + hint
        diag.next_actions.insert(0, "Dump at level mix (or L1) so that the call choosing these rows is recorded, then "
                                    "compare again: a choice that rounding decides is then named and checked.")
    return fd, diag


def _last_output(graph: Graph, direction: str) -> Tensor | None:
    """The first output of the pass's last computing call, judged or not (an output after an overflow has no error
    figure, and is still where the pass ends)."""
    for n in reversed(graph.nodes):
        if n.computing and n.outputs and n.outputs[0].direction == direction and "parameters_grad" not in n.key:
            return n.outputs[0]
    return None


def _single_jump(t: Tensor, graph: Graph) -> bool:
    """Whether the first divergence is one large step (a fault) rather than error that layers keep adding.

    Precision accumulation is error added at many layers: each later layer is beyond precision
    given its own inputs (an int8 model quantises every linear). A call whose output is already a
    percent or more off, after which no layer adds error of its own, did the damage alone, however
    much the layers after it amplify it (a causal mask built one diagonal off moves the masked
    scores 18 % at once, and the attention after it doubles that)."""
    if t.err is None or not math.isfinite(t.err) or t.err < budgets.SINGLE_JUMP_ERR:
        return False
    return not any(x.beyond and not x.is_input and x.pos > t.pos and x.direction == t.direction
                   and x.node is not None and x.node.computing for x in graph.tensors)


def _where_it_shows(f: Finding) -> Tensor:
    """The tensor whose error the rest of the pass is measured against: the call's output for a difference that
    enters through an argument (a transposed weight's statistics barely move; the output it gives is what
    travels on), the first divergence itself otherwise."""
    if f.enters in ("argument", "between_operators"):
        outputs = [x for x in f.node.outputs if x.err is not None and math.isfinite(x.err) and x.err > 0]
        if outputs:
            return max(outputs, key=lambda x: x.err or 0.0)
    return f.tensor


def _growth(final: Tensor | None, t: Tensor) -> float | None:
    if final is None or final is t or final.err is None or t.err is None:
        return None
    if not math.isfinite(final.err) or not math.isfinite(t.err) or t.err <= 0:
        return None
    return final.err / t.err


def _operator_fault(f: Finding, final: Tensor | None, graph: Graph, golden: Dump | None, target: Dump | None,
                    use_bench: bool, direction: str, base: explain.JudgementFields) -> tuple[FirstDivergence, Diagnosis]:
    t, node = f.tensor, f.node
    difference = None
    measured = probes.probe(node, golden, target, t.m.dtype) if f.enters == "operator" else None
    if measured is not None:
        difference = measured.statement
    golden_call = other_api_partner(t) if f.enters == "operator" else None
    if golden_call is not None:
        # however right the target's kernel computes its own API, the difference is the choice of API
        swap = f"the target calls {api_name(node.key)} where the golden calls {api_name(golden_call)} ({golden_call})"
        difference = f"{swap}; {difference}" if difference else swap
    if f.integers_made_by_target:
        difference = (f"made on the target by {f.target_producer}, a call the golden does not make; its Max and Min "
                      "agree, all msprobe records of an integer tensor")
    elif f.enters in ("argument", "between_operators") and f.scalar is None:
        difference = leaves.describe(t, golden, target)
    elif f.scalar is not None:
        arg, g_val, t_val = f.scalar
        difference = (f"{explain.argument_value(node.key, arg, g_val)} on the golden, "
                      f"{explain.argument_value(node.key, arg, t_val)} on the target")
    reason = explain.reason(f, difference, use_bench)
    fd = explain.first_divergence(f, reason, direction)
    fd.difference = difference
    start = min((x.pos for x in node.outputs), default=node.pos)
    first_layer = f.enters == "operator" and not any(
        x.judged and not x.is_input and x.pos < start and x.node is not None and x.node.computing
        for x in graph.tensors if x.direction == direction)
    shows = _where_it_shows(f)
    growth = None if t.strict in ("reordered", "moved") else _growth(final, shows)
    where = (f.container or node).key
    if f.hidden and f.backward_shows is not None:
        tail = (f"every tensor of the forward pass stays within precision; the gradient shows the change first "
                f"({f.backward_shows.name}), which larger inputs or longer training carry into the forward results.")
    elif f.hidden:
        tail = ("every tensor of the pass stays within precision, so the numbers do not show its effect here; the "
                "argument alone says the two runs compute different things, which larger inputs, longer training "
                "or another precision can expose.")
    elif final is not None and not final.beyond and use_bench:
        tail = ("its effect on the final outputs stays within the bench's rounding noise, so only the layer-by-layer "
                "comparison against the bench shows it — a real fault hidden inside low-precision noise.")
    elif final is not None and final is not t and final.m.target_nonfinite and not final.m.golden_nonfinite:
        if id(t) in graph.parameter_gradients:  # read by the optimizer only: later Inf/NaN do not come from it
            tail = (f"this gradient goes to the optimizer, not to a later call, so the Inf/NaN at the end of the pass "
                    f"({final.name}) overflowed elsewhere.")
        else:
            tail = f"the Inf/NaN reach the end of the pass ({final.name})."
    elif final is not None and final not in (t, shows) and _final_agrees(final):
        # the final output's own error is within its precision (not only within what its inputs carried in)
        tail = (f"the end of the pass ({final.name}) is within precision again: on these inputs its effect on the "
                "result stays inside rounding, but the call computes something else, which other inputs or longer "
                "training can expose.")
    elif growth is not None and 0.9 <= growth <= 1.1:
        tail = (f"after it the error stays about the same to the end (final/here {growth:.2g}), so it explains the "
                "final difference.")
    elif growth is not None and growth < 1:
        tail = f"after it the error shrinks to {growth:.2g}x by the end instead of growing, so it explains the final difference."
    elif growth is not None and growth >= budgets.GROWTH_RATIO:
        # an argument's difference that barely shows in the call's own output (values moved to other places keep
        # its statistics) grows as later calls mix it in: nothing says "only" of that
        tail = f"after it the error grows {growth:.2g}x to the end of the pass ({final.name if final else 'n/a'})."
    elif growth is not None:
        tail = f"after it the error grows only {growth:.2g}x more to the end, so it explains the final difference."
    elif (t.strict == "reordered" or f.shows_at is not None) and final is not None and final is not t \
            and final.err is not None:
        tail = f"the difference reaches {explain.fmt(final.err, '.3g')} relative error at the end of the pass ({final.name})."
    elif (final is None or final in (t, shows)) and (last := _last_output(graph, direction)) is not None \
            and last.node is not node:
        tail = (f"the Inf/NaN reach the end of the pass ({last.name})." if last.m.target_nonfinite
                and not last.m.golden_nonfinite else
                f"no later output has an error figure, so how its error reaches the end of the pass ({last.name}) "
                "cannot be measured.")
    elif final is None or final in (t, shows):
        tail = "it is the last compared call of the pass."
    elif t.m.target_nonfinite:
        tail = f"the Inf/NaN do not reach the end of the pass ({final.name} is finite)."
    else:
        tail = f"how its error travels on to the end of the pass cannot be measured ({final.name} has no error figure)."
    beyond = (f"{explain.fmt(t.excess, '.3g')}x beyond precision" if math.isfinite(t.excess) or t.m.target_nonfinite
              else f"that cannot be compared with the golden's ({explain.incomparable_why(t)})")
    jump = ((f"One localised jump: {node.key} turns inputs that agree into an output {beyond}" if node.inputs else
             f"One localised jump: {node.key} returns an output {beyond} while every output recorded before it is "
             "within precision (the dump holds none of its inputs)")
            + {"slope": " (an elementwise activation moves each element by at most its largest slope times the "
                        "input's difference, plus one rounding)",
               "sum": " (a sum or difference moves each element by at most its inputs' differences added, plus one "
                      "rounding)",
               "product": " (a product moves each element by at most each input's difference times the other input's "
                          "largest magnitude, plus one rounding)"}.get(t.strict or "", "") + "; ")
    if t.strict == "recomputed" and t.recomputed is not None:
        source, compared, recomputed = explain.RECOMPUTED_FROM[t.direction]
        jump = (f"One localised jump: {node.key} does not compute what its inputs say: its {compared} is "
                f"{explain.fmt(t.recomputed, '.3g')} (relative L2) away from the {recomputed} re-computed in float64 from "
                f"the target's own recorded {source}, {explain.fmt(t.excess, '.3g')}x what the output's own "
                f"{budgets.canonical_dtype(t.m.dtype)} rounding explains; ")
    if t.strict == "reordered":
        jump = (f"One localised jump: {node.key} gets bit-identical inputs (equal md5) and returns, most likely, the same values in "
                "other places (its output's md5 differs while Max/Min/Mean/Norm are equal); ")
    if t.strict == "mean_sum" and t.extreme is not None:
        _, recorded, expected = t.extreme
        jump = (f"One localised jump: {node.key} adds or subtracts its inputs, so its output's Mean is their Means combined the same way "
                f"({explain.fmt(expected, '.6g')}) up to a rounding, but the target recorded {explain.fmt(recorded, '.6g')}, "
                f"{explain.fmt(t.excess, '.3g')}x what the rounding of the recorded Means and of the elements explains; ")
    elif t.strict == "mean_zero" and t.extreme is not None:
        _, recorded, _ = t.extreme
        jump = (f"One localised jump: {node.key} returns {zero_sum_gradient(node.key)}, so its Mean is zero up to a "
                f"rounding, but the target recorded {explain.fmt(recorded, '.6g')}, "
                f"{explain.fmt(t.excess, '.3g')}x what the rounding of its elements explains; ")
    elif t.strict == "mean_one" and t.extreme is not None:
        _, recorded, expected = t.extreme
        jump = (f"One localised jump: {node.key} returns probabilities that sum to one along its axis, so its Mean is "
                f"one over the axis's length ({explain.fmt(expected, '.6g')}) up to a rounding, but the target recorded "
                f"{explain.fmt(recorded, '.6g')}, {explain.fmt(t.excess, '.3g')}x what the rounding of its elements "
                "explains; ")
    elif t.strict == "extremes" and t.extreme is not None:
        which, recorded, expected = t.extreme
        jump = (f"One localised jump: {node.key} applies its function element by element, so its output's "
                + ("Min cannot go below the function's minimum " if which == "lowest" else f"{which} is the function "
                   f"of its input's {which} ")
                + f"({explain.fmt(expected, '.5g')}) up to a rounding, but the target recorded "
                  f"{explain.fmt(recorded, '.5g')}, {explain.fmt(t.excess, '.3g')}x what rounding and another "
                  "approximation of the function explain; ")
    if t.strict == "moved":
        jump = (f"One localised jump: {node.key} gets bit-identical inputs (equal md5) and returns, most likely, the same values in "
                "other places (its output's md5 differs, Max/Min are equal and Mean/Norm move by rounding only); ")
    lead = {
        "operator": jump,
        "overflow": (f"Invalid operation: {node.key} is the first call to produce NaN where the golden does not, from "
                     "the Inf/NaN both sides' inputs hold; " if explain.shared_nonfinite_input(node) is not None else
                     f"Invalid operation: {node.key} is the first call to produce NaN from finite inputs; "
                     if explain.nan_not_inf(t) else
                     f"Overflow: {node.key} is the first call to produce Inf/NaN from finite inputs; "),
        "argument": f"The difference enters {node.key} through its argument {f.argument}"
                    + (f" ({difference})" if difference else "") + "; ",
        "between_operators": (f"The difference enters between calls, at {where} ({f.argument} of {node.key} "
                              "differs from the output it is); ") if t.producer is not None else
                             (f"The difference enters between calls, at {where} ({f.argument} of {node.key} differs "
                              "and no recorded call produced it); "),
    }.get(f.enters, "")
    explanation = lead + f"in the {direction} pass; " + tail
    if measured is not None:
        explanation += f" Measured on its recorded tensors: {measured.statement}."
    unseen = _unseen_inputs(node) if f.enters == "operator" else []
    if unseen:
        explanation += (f" Its input{'s' if len(unseen) > 1 else ''} {', '.join(unseen)} {'have' if len(unseen) > 1 else 'has'} "
                        "no Mean/Norm in this statistics dump (msprobe writes only Max/Min for integer and bool "
                        "tensors), so a difference there cannot be seen: it may be where the fault enters (e.g. a mask "
                        "built one position off, token ids from another tokenizer) rather than the operator itself.")
    # not after a bound that holds whatever the inputs hold (a softmax's output Mean is one over its axis however the
    # scores were masked)
    filled = _fill_upstream(node) if f.enters == "operator" and t.m.measure in ("statistics", "md5") and not unseen \
        and not t.strict else None
    if filled is not None:
        explanation += (f" Before it, {filled.name} holds a mask fill on both sides (Min {_stat(filled, 'golden')} on "
                        f"the golden, {_stat(filled, 'target')} on the target), whose Mean and Norm cannot be compared: a "
                        "mask built otherwise there (one position off) cannot be seen in this dump and would first show "
                        "here. A tensor dump of that call tells it apart.")
    if f.enters == "operator" and t.m.measure == "statistics" and api_name(node.key) in PER_CHANNEL:
        explanation += (" Its per-channel parameters meet its input's channels here: statistics cannot tell a fault in "
                        "this call from channels permuted before it (a weight with two output channels swapped keeps "
                        "every statistic of the tensors before it), which an md5 or tensor dump tells apart.")
    same_weights = _weights_with_golden_statistics(node) if f.enters == "operator" and t.m.measure == "statistics" \
        and probes.family(node.key) in ("linear", "conv") else []
    if same_weights:
        many = len(same_weights) > 1
        explanation += (f" Its weight{'s' if many else ''} {', '.join(same_weights)} {'have' if many else 'has'} the "
                        "golden's exact statistics, which a weight stored transposed or permuted (a checkpoint "
                        "conversion) keeps too: statistics cannot tell such a weight from a fault in this call, which an "
                        "md5 or tensor dump of the weight tells apart.")
    if f.after_mild is not None and f.after_mild.node is not None:
        explanation += (f" Before it, outputs differ only at a precision level (the first: {f.after_mild.node.key}, "
                        f"{explain.fmt(f.after_mild.excess, '.3g')}x the allowed error), as GEMMs in a reduced precision "
                        "(TF32, HF32) make them; this jump is far beyond that.")
    if first_layer:
        explanation += (" It is also the first layer that computes anything, so a precision setting applied to every "
                        "layer (quantisation, lower-precision kernels) would look the same here: re-run this layer "
                        "alone in higher precision to tell the two apart.")
    return fd, Diagnosis(
        category="operator_fault", explanation=explanation,
        next_actions=explain.operator_actions(node, f, difference, measured, golden, target, direction),
        details={"operator": node.key, "final_row": final.name if final else None,
                 "growth_after_divergence": growth, "first_computing_layer": first_layer,
                 "enters_through": f.enters, "argument": f.argument, "difference": difference,
                 "argument_kind": t.leaf if f.enters == "argument" and f.scalar is None else None,
                 "inputs_statistics_cannot_show": unseen,
                 "weights_with_golden_statistics": same_weights,
                 "first_bad_tensor_inside": t.name if f.container is not None else None,
                 "operator_family": probes.family(node.key),
                 "measured_behaviour": measured.shows if measured is not None else None}, **base)


#: Normalisations that scale and shift each channel by its own parameters (API names and module classes).
PER_CHANNEL = frozenset({"batch_norm", "group_norm", "instance_norm", "layer_norm", "rms_norm", "BatchNorm1d",
                         "BatchNorm2d", "BatchNorm3d", "SyncBatchNorm", "GroupNorm", "InstanceNorm1d", "InstanceNorm2d",
                         "InstanceNorm3d", "LayerNorm", "RMSNorm"})


def _weights_with_golden_statistics(node: Node) -> list[str]:
    """The call's loaded (parameter) inputs whose recorded statistics equal the golden's exactly: a transposed or
    permuted weight keeps its Max and Min, and its Mean and Norm when the two sums happen to round alike (a 16x16
    projection does, at some seeds), so such a weight looks like the golden's in a statistics dump."""
    return [x.arg for x in node.inputs if x.leaf == "parameter" and x.err == 0.0 and x.m.measure == "statistics"
            and len(x.row.golden_shape or ()) >= 2]  # a weight matrix or kernel: a bias has no layout to get wrong


#: Calls walked back through the dataflow from a statistics fault, looking for a mask fill statistics cannot compare.
_FILL_LOOKBACK = 4


def _fill_upstream(node: Node) -> Tensor | None:
    """A tensor up to ``_FILL_LOOKBACK`` calls before ``node`` in the dataflow whose Min is -inf or a float type's
    minimum on both sides (an additive attention mask, or scores with it added): its Mean and Norm overflow, so a mask
    one position off leaves its statistics as they were."""
    seen: set[int] = set()
    frontier = [node]
    for _ in range(_FILL_LOOKBACK):
        nxt: list[Node] = []
        for n in frontier:
            for x in n.inputs:
                if _mask_fill(x):
                    return x
                made = x.producer
                if made is not None and made.node is not None and id(made.node) not in seen:
                    seen.add(id(made.node))
                    nxt.append(made.node)
        frontier = nxt
    return None


def _mask_fill(t: Tensor) -> bool:
    d = t.row.__dict__  # statistics rows are sparse (DumpRow.__getattr__)
    lows = [(d.get(f"{side}_stats") or {}).get("Min") for side in ("golden", "target")]
    return all(isinstance(v, float) and (v == -math.inf or -v in budgets.FLOAT_TYPE_LIMITS) for v in lows)


def _stat(t: Tensor, side: str) -> str:
    v = (t.row.__dict__.get(f"{side}_stats") or {}).get("Min")
    return "-inf" if v == -math.inf else f"{v:.6g}"


def _unseen_inputs(node: Node) -> list[str]:
    """The call's statistics-compared inputs whose statistics could not show a difference.

    msprobe's statistics dump gives integer and bool tensors only Max/Min (Mean and Norm are null), so a
    mask built one diagonal off, or token ids shifted by one, look identical on both sides; without an md5
    nothing says they agree."""
    out: list[str] = []
    for x in node.inputs:
        d = x.row.__dict__  # statistics rows are sparse (DumpRow.__getattr__)
        if d.get("compare_mode", "tensor") == "tensor" or d.get("md5_equal") is not None:
            continue
        stats = d.get("golden_stats") or {}
        if stats and (stats.get("Mean") is None or stats.get("Norm") is None):
            out.append(x.arg)
    return out


def _transforms(rows: list[Tensor], golden: Dump | None, target: Dump | None, *,
                input_side: bool) -> list[InputTransform]:
    """Test layout/preprocessing hypotheses on the real tensors (never on integer data)."""
    from acc_agent.numerics.transforms import explain_pair

    found: list[InputTransform] = []
    if golden is None or target is None:
        return found
    for t in rows[:_MAX_TRANSFORM_ROWS]:
        if t.m.measure != "tensor":
            continue
        try:
            g = golden.load(t.row.golden_name or t.name)
            x = target.load(t.name)
        except Exception:  # noqa: BLE001 - an unreadable tensor is already the row's error
            continue
        if g.dtype.kind not in "fc" or x.dtype.kind not in "fc":
            continue  # token ids, masks: a fitted scale or channel swap would claim what was not measured
        tol = max(budgets.budget(t.m.dtype), 1e-6)
        for m in explain_pair(g, x, tol, input_side=input_side):
            if m.kind != "identity":
                found.append(InputTransform(row=t.name, kind=m.kind, description=m.description,
                                            residual=m.residual, params=m.params))
    return found


def _input_mismatch(f: Finding, golden: Dump | None, target: Dump | None,
                    base: explain.JudgementFields) -> tuple[FirstDivergence, Diagnosis]:
    t = f.tensor
    transforms = _transforms([t], golden, target, input_side=True)
    fd = explain.divergence_at(t, "the first compared tensor already differs: the two runs were not fed the same data",
                               argument=t.arg, enters_through="data_input")
    if transforms:
        explanation = (f"The network input already differs ({t.name}); measured on the data: "
                       + "; ".join(x.description for x in transforms[:2]) + ".")
    else:
        integer = t.row.golden_dtype is not None and not budgets.is_float(t.row.golden_dtype)
        fd.difference = leaves.describe(t, golden, target) if integer else None
        explanation = (f"The network input already differs ({t.name}, {explain.error_text(t)})"
                       + (f": {fd.difference}" if fd.difference else "")
                       + (": the inputs are different data (other token ids: another sample or tokenizer)." if integer
                          else " and no channel reversal, axis permutation or affine (mean/std) map of the golden input "
                          "explains it: the inputs are different data (another sample, augmentation, tokenizer)."))
    return fd, Diagnosis(
        category="input_mismatch", explanation=explanation,
        next_actions=[
            "Check preprocessing on both sides: normalisation mean/std and scale, resize/crop, and the colour order "
            "(RGB vs BGR) of the image loader; for text, the tokenizer and its vocabulary.",
            "Check the tensor layout fed to the model (NCHW vs NHWC) and the dtype cast of the input.",
            "Feed both runs the exact same saved input tensor (disable random augmentation and shuffling), then "
            "compare again.",
        ],
        details={"first_input": t.name}, transforms=transforms, **base)


def _set_status(graph: Graph, use_bench: bool, fd: FirstDivergence | None) -> None:
    """Refine the metric-threshold statuses with the precision-aware judgement; mark repeated tensors."""
    isnan = math.isnan
    for t in graph.tensors:
        row = t.row
        d = row.__dict__  # statistics rows are sparse (DumpRow.__getattr__): read with the defaults
        producer = t.producer
        if producer is not None and t.link == "data" and t.is_input and t.m.err == producer.m.err:
            d["same_as"] = producer.name  # the same data on both sides: a listing shows it once (a plain
            # str field: written past pydantic's __setattr__, which costs 0.3 s on 200k linked inputs)
        excess = t.excess
        if isnan(excess):  # not judged
            if t.is_input and d.get("status", "pass") in ("warning", "error") and other_apis_convention(t):
                row.status = "pass"
                row.message = ("another API's layout of the same argument: its call gives the golden's output; "
                               + row.message).strip("; ")
            continue
        status = d.get("status", "pass")
        if status == "skipped" or status == "unmatched":
            continue
        beyond = excess > 1.0
        if use_bench and not beyond and status == "warning":
            row.status = "pass"
            row.message = (f"within bench noise: error {explain.fmt(t.err)} vs bench {explain.fmt(t.m.bench_err)}; "
                           + row.message).strip("; ")
        elif beyond and (use_bench or t.gross) and status == "pass":
            row.status = "warning"
            row.message = (f"beyond precision ({explain.fmt(t.excess)}x the allowed error); " + row.message).strip("; ")
    if fd is not None:
        for t in graph.tensors:
            if t.name == fd.name:
                t.row.status = "error"
                if "first divergence" not in t.row.message:
                    t.row.message = ("first divergence; " + t.row.message).strip("; ")
                break
