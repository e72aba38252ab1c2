"""Localisation: replay (kernel or inputs?) and precision bisection, from their saved results when
mig.yaml gives them (Compare §3.3)."""

from __future__ import annotations

import shlex
from dataclasses import dataclass

from markupsafe import Markup

from acc_agent.models.compare import CompareDumpsOutput
from acc_agent.models.replay import BisectPrecisionOutput, ReplayOpOutput
from acc_agent.models.workflow import SkillResult, WorkflowResult
from acc_agent.render.cells import Ctx, finite, shown
from acc_agent.render.env import code, fmt_num


@dataclass(frozen=True)
class ReplayView:
    op: Markup
    enters: Markup
    reason: Markup
    diffs: list[Markup]
    bundle: Markup | None


@dataclass(frozen=True)
class BisectView:
    keep: Markup
    err_low: Markup
    err_keep: Markup
    summary: Markup


@dataclass(frozen=True)
class LocalisationView:
    replay: ReplayView | None
    bisect: BisectView | None
    replay_gap: Markup
    bisect_gap: Markup


def replay_command(dumps: SkillResult) -> str:
    """The replay-op line that fills the replay step: the two dumps compare_dumps read, and the call it
    found diverging (a placeholder only while there is none), so the reader can run it as printed."""
    try:
        words = shlex.split(dumps.command)
    except ValueError:
        words = []
    sides = ([w if w.startswith("<") else shlex.quote(w) for w in words[2:4]] if len(words) >= 4
             else ["<DUMPS.GOLDEN>", "<DUMPS.TARGET>"])  # placeholders stay as the other fill-in lines print them
    out = dumps.output_as(CompareDumpsOutput)
    fd = out.first_divergence if out is not None else None
    call = fd.module if fd is not None else None
    op = shlex.quote(call) if call else "'<first divergence call>'"
    line = f"acc-agent replay-op {sides[0]} {sides[1]} --op {op}"
    if out is not None and fd is not None and fd.rank_key and out.diagnosis is not None and len(out.diagnosis.ranks) > 1:
        line += f" --rank {shlex.quote(fd.rank_key)}"  # dump roots of several ranks: replay-op asks which
    return line


def _statistics_only(dumps: SkillResult) -> str | None:
    """The diverging call when the comparison had statistics only (msprobe's default dump), which no replay can
    re-run: it needs the call's tensors."""
    out = dumps.output_as(CompareDumpsOutput)
    if out is None or out.first_divergence is None or not out.rows:
        return None
    if any(r.compare_mode == "tensor" for r in out.rows):
        return None
    return out.first_divergence.module


def _replay(c: Ctx, r: SkillResult, o: ReplayOpOutput) -> ReplayView:
    diffs = [c.t("loc_diff").format(arg=d.argument, golden=shown(d.golden), target=shown(d.target))
             for d in o.differing_inputs]
    return ReplayView(op=code(o.op), enters=c.val(c.t(f"enters_{o.fault_enters or 'not_reproducible'}"), r.source),
                      reason=c.val(c.tt(o.reason)), diffs=[c.val(x) for x in diffs],
                      bundle=code(o.bundle) if o.bundle else None)


def _bisect(c: Ctx, r: SkillResult, o: BisectPrecisionOutput) -> BisectView:
    err_low, err_keep = finite(o.error_all_low), finite(o.error_with_keep_set)
    keep = o.keep_high_precision
    return BisectView(
        keep=c.val(", ".join(keep) if keep else "—", r.source),
        err_low=c.val(fmt_num(err_low)) if err_low is not None else c.na(c.t("na_not_evaluated")),
        err_keep=c.val(fmt_num(err_keep)) if err_keep is not None else c.na(c.t("na_not_evaluated")),
        summary=c.val(c.tt(o.summary)),
    )


def localisation_view(c: Ctx, wf: WorkflowResult) -> LocalisationView:
    rp, bs = wf.get("replay"), wf.get("bisect")
    replay, bisect = rp.output_as(ReplayOpOutput), bs.output_as(BisectPrecisionOutput)
    dumps = wf.get("dumps")
    command = replay_command(dumps)
    call = _statistics_only(dumps)
    replay_gap = c.na(c.t("na_replay_statistics").format(op=call), command) if call else c.gap(rp, command)
    return LocalisationView(replay=_replay(c, rp, replay) if replay is not None else None,
                            bisect=_bisect(c, bs, bisect) if bisect is not None else None,
                            replay_gap=replay_gap, bisect_gap=c.gap(bs))
