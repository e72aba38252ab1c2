"""``replay_op``: is the first diverging call's kernel wrong, or did different inputs reach it?

Re-runs one recorded torch API call on the CPU from the target's recorded inputs (and, as a check,
from the golden's), compares with both recorded outputs and, with ``bundle``, writes what a vendor
bug report needs: the tensors, the arguments and a standalone ``repro.py``.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Literal

from acc_agent.errors import AccAgentError
from acc_agent.models.common import Evidence
from acc_agent.models.replay import ArgumentDiff, Closeness, ReplayOpInput, ReplayOpOutput
from acc_agent.text_columns import Column, Table, labelled, render
from acc_agent.tools.spec import tool

if TYPE_CHECKING:
    from acc_agent.io.dump_calls import RecordedCall
    from acc_agent.io.dumps import Dump, DumpSet
    from acc_agent.numerics.replay import Comparison


#: One line per comparison of the re-run: what is compared with what, and how close it is.
_CLOSENESS_LINES = Table[tuple[str, Closeness]]([
    Column(lambda lc: lc[0], width=45),
    Column(lambda lc: f"rel_l2 {_f(lc[1].rel_l2_err)}  cosine {_f(lc[1].cosine)}  max_abs {_f(lc[1].max_abs_err)}"),
])


def render_text(out: ReplayOpOutput) -> str:
    compared = [("replay from golden inputs vs golden output", out.replay_check),
                ("replay from target inputs vs target output", out.replay_vs_target),
                ("replay from target inputs vs golden output", out.replay_vs_golden),
                ("target output vs golden output", out.target_vs_golden)]
    return render(out, labelled("reason", [out.reason], indent=""), _CLOSENESS_LINES.lines(compared),
                  labelled("differs", [f"{d.argument} ({d.kind}): golden {d.golden}, target {d.target}"
                                       for d in out.differing_inputs]),
                  labelled("bundle", [out.bundle] if out.bundle else [], indent=""))


def _f(v: float | None) -> str:
    return "n/a" if v is None else f"{v:.3g}"


def _closeness(c: Comparison, tol: float) -> Closeness:
    return Closeness(rel_l2_err=c.rel_l2, cosine=c.cosine, max_abs_err=c.max_abs, within=c.within(tol))


@tool(
    description="Call after compare_dumps names the first diverging call: re-runs that torch API on the CPU from the "
    "target's inputs. Returns verdict operator (kernel at fault) | inputs | not_reproducible.",
    title="Replay one operator",
    read_only=False,
    destructive=False,
    idempotent=True,
    positional=("golden", "target"),
    text_renderer=render_text,
)
def replay_op(params: ReplayOpInput) -> ReplayOpOutput:
    from acc_agent.io.dump_calls import read_call
    from acc_agent.io.dumps import open_dump_set
    from acc_agent.numerics import replay
    from acc_agent.numerics.diagnosis.graph import split_name

    key = split_name(params.op)[0]
    replay.parse_key(key)
    golden = _rank(open_dump_set(params.golden), params.rank, params.golden)
    target = _rank(open_dump_set(params.target), params.rank, params.target)
    for side, dump in (("golden", golden), ("target", target)):
        if dump.kind != "msprobe":
            raise AccAgentError("needs_msprobe_dump", f"the {side} dump is a {dump.kind}, not an msprobe dump.json: "
                                "its calls' arguments are not recorded", path=str(dump.source),
                                hint="Replay needs msprobe dumps made with task 'tensor'.")
    fn = replay.resolve(key)
    g_call, t_call = read_call(golden.source, key), read_call(target.source, key)
    g_outs, t_outs = g_call.output_refs(), t_call.output_refs()
    if not t_outs or not g_outs:
        raise AccAgentError("cannot_replay", f"{key} records no tensor output to compare", path=str(target.source),
                            hint="Pick a call whose output is a tensor (a row of compare_dumps).")
    g_rec = golden.load(g_outs[0].name)
    t_rec = target.load(t_outs[0].name)
    from acc_agent.progress import report

    report(0, 2, f"re-running {key} from the golden's inputs")
    from_golden = replay.run(fn, g_call, golden)
    report(1, 2, f"re-running {key} from the target's inputs")
    from_target = replay.run(fn, t_call, target)
    report(2, 2, "comparing")
    if not from_golden or not from_target:
        raise AccAgentError("cannot_replay", f"re-running {key} gave no tensor output", path=str(target.source),
                            hint="Pick a call whose output is a tensor (a row of compare_dumps).")
    import numpy as np

    dtype = t_outs[0].dtype
    tol = replay.tolerance(dtype)
    g64, t64 = np.asarray(g_rec), np.asarray(t_rec)
    check = replay.compare(replay.to_numpy(from_golden[0]), g64)
    vs_target = replay.compare(replay.to_numpy(from_target[0]), t64)
    vs_golden = replay.compare(replay.to_numpy(from_target[0]), g64)
    recorded = replay.compare(t64, g64)
    diffs = _differing_inputs(g_call, t_call, golden, target, tol)
    verdict, reason = _decide(check, vs_target, vs_golden, recorded, tol, diffs, key)
    out = ReplayOpOutput(
        verdict=verdict, fault_enters=verdict, op=key, rank=params.rank, reason=reason, dtype=dtype, tolerance=tol,
        summary=f"{key}: " + {"operator": "the kernel is at fault (identical inputs, different output)",
                              "inputs": "the kernel computes what its inputs say: the difference came in through "
                                        "its inputs or arguments",
                              "not_reproducible": "not decided"}[verdict],
        replay_check=_closeness(check, tol), replay_vs_target=_closeness(vs_target, tol),
        replay_vs_golden=_closeness(vs_golden, tol), target_vs_golden=_closeness(recorded, tol),
        differing_inputs=diffs,
        evidence=[Evidence(kind="file", ref=str(golden.source), detail=f"golden call {key}"),
                  Evidence(kind="file", ref=str(target.source), detail=f"target call {key}"),
                  Evidence(kind="threshold", ref=f"relative L2 error <= {tol:.3g}",
                           detail=f"same result: one rounding budget of {dtype or 'the output dtype'} (CPU and NPU "
                                  "kernels round differently)")],
        next_actions=_actions(verdict, key, diffs),
    )
    if params.bundle:
        from acc_agent.tools._replay_bundle import write_bundle

        out.bundle = str(write_bundle(Path(params.bundle), out, g_call, t_call, golden, target,
                                      [replay.to_numpy(x) for x in from_target], params.environment, params.lang))
        out.evidence.append(Evidence(kind="file", ref=out.bundle, detail="vendor reproduction bundle"))
    return out


def _rank(ds: DumpSet, rank: str | None, path: str) -> Dump:
    if rank is not None:
        if rank not in ds.ranks:
            raise AccAgentError("unknown_rank", f"{path} has no rank {rank!r}",
                                hint=f"Ranks in this dump: {', '.join(k or '(single)' for k in ds.ranks)}.", path=path)
        return ds.ranks[rank]
    if len(ds.ranks) > 1:
        raise AccAgentError("ambiguous_rank", f"{path} holds {len(ds.ranks)} ranks", path=path,
                            hint=f"Pass rank (one of {', '.join(ds.ranks)}); compare_dumps names the rank at fault.")
    return next(iter(ds.ranks.values()))


def _differing_inputs(g_call: RecordedCall, t_call: RecordedCall, golden: Dump, target: Dump, tol: float
                      ) -> list[ArgumentDiff]:
    """The call's tensor inputs and scalar arguments whose recorded values differ between the runs."""
    import numpy as np

    from acc_agent.numerics import replay

    out: list[ArgumentDiff] = []
    g_tensors = dict(g_call.tensors())
    for label, t_ref in t_call.tensors():
        g_ref = g_tensors.get(label)
        if g_ref is None:
            out.append(ArgumentDiff(argument=label, kind="tensor", golden="absent", target=f"{t_ref.dtype} {t_ref.shape}"))
            continue
        try:
            c = replay.compare(np.asarray(target.load(t_ref.name)), np.asarray(golden.load(g_ref.name)))
        except AccAgentError:
            continue
        if not c.within(tol) or t_ref.shape != g_ref.shape:
            out.append(ArgumentDiff(argument=label, kind="tensor", golden=f"{g_ref.dtype} {list(g_ref.shape or ())}",
                                    target=f"{t_ref.dtype} {list(t_ref.shape or ())}", rel_l2_err=c.rel_l2))
    g_scalars, t_scalars = g_call.scalars(), t_call.scalars()
    for label in sorted(set(g_scalars) | set(t_scalars)):
        g, t = g_scalars.get(label, "absent"), t_scalars.get(label, "absent")
        if g != t and not (isinstance(g, float) and isinstance(t, float) and g != g and t != t):
            out.append(ArgumentDiff(argument=label, kind="scalar", golden=_show(g), target=_show(t)))
    return out


def _show(v: object) -> str:
    return "None" if v is None else str(v)


def _decide(check: Comparison, vs_target: Comparison, vs_golden: Comparison, recorded: Comparison, tol: float,
            diffs: list[ArgumentDiff],
            key: str) -> tuple[Literal["operator", "inputs", "not_reproducible"], str]:
    if not check.within(tol):
        return "not_reproducible", (
            f"the CPU re-run from the golden's own inputs does not give the golden's output (relative L2 error "
            f"{_f(check.rel_l2)} > {tol:.3g}): the replay is not faithful (a random operator, state the dump does not "
            "hold, or a CPU kernel that differs from the golden device's), so nothing is concluded")
    if recorded.within(tol):
        return "not_reproducible", (f"the recorded outputs of {key} agree (relative L2 error {_f(recorded.rel_l2)}): "
                                    "there is no difference at this call to localise")
    if vs_golden.within(tol) and not vs_target.within(tol):
        return "operator", (f"from the target's own inputs the CPU computes the golden's output (relative L2 error "
                            f"{_f(vs_golden.rel_l2)}) but not the target's ({_f(vs_target.rel_l2)}): the target's "
                            "kernel computes something else from the same inputs")
    if vs_target.within(tol):
        named = ", ".join(d.argument for d in diffs) or "none found among the recorded arguments"
        return "inputs", (f"from the target's own inputs the CPU reproduces the target's output (relative L2 error "
                          f"{_f(vs_target.rel_l2)}): the kernel is consistent, the difference came in through its "
                          f"inputs or arguments ({named})")
    return "not_reproducible", (f"the CPU re-run from the target's inputs matches neither recorded output (target "
                                f"{_f(vs_target.rel_l2)}, golden {_f(vs_golden.rel_l2)}): both the inputs and the "
                                "kernel may differ, or the call depends on state the dump does not hold")


def _actions(verdict: str, key: str, diffs: list[ArgumentDiff]) -> list[str]:
    if verdict == "operator":
        return [f"Report {key} to the vendor with the bundle (replay_op with bundle=<folder>): its repro.py runs "
                "the call from the recorded inputs with only numpy and torch.",
                "Until it is fixed, keep this operator on a reference implementation or in higher precision."]
    if verdict == "inputs":
        return [f"Fix what differs in {key}'s arguments ({', '.join(d.argument for d in diffs[:4])}): a config "
                "value, a default that changed between library versions, or a converted weight."
                if diffs else f"Look upstream of {key}: its inputs are where the runs part."]
    return ["Compare the call's inputs one by one with compare_tensors on the recorded files, and check whether "
            "the operator is random (detect_nondeterminism on two target runs)."]
