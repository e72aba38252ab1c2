"""``judge_short_run``: the short-run pass band (stop once passed) and the 500-step rule (no clear improvement).

The judgement is only as good as its window, so the output always names the window and the
robust endpoints it used, and says when the default 30–50 % band cannot fit the window (a
10-iteration run of a large model drops a few percent) and what window would.
"""

from __future__ import annotations

import hashlib
import json
import math
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, TypedDict

from acc_agent.atomic import atomic_write_text
from acc_agent.frontend import option
from acc_agent.models.common import Evidence
from acc_agent.models.training import (
    Band,
    Check,
    JudgeShortRunInput,
    JudgeShortRunOutput,
    RepeatRecord,
    ShortRunVerdict,
    Window,
)
from acc_agent.text_columns import Column, Table, labelled, render
from acc_agent.tools.spec import tool

if TYPE_CHECKING:
    from numpy.typing import ArrayLike

RECORD_NAME = ".acc-agent/short_run_record.json"
PASSED = ("pass", "pass_above_band")

CHECKLIST_8_2 = [
    "Labels and loss agree (label format, ignore index, loss reduction) with the baseline.",
    "Model head and frozen layers are as in the baseline (nothing accidentally frozen or re-initialised).",
    "NPU custom operators / replaced operator paths do not change gradients (compare a single step's gradients with msprobe).",
    "Learning-rate schedule (warm-up, decay, min lr) matches the baseline.",
    "Data augmentation, normalisation and the data pipeline version match the baseline.",
    "After fixing, re-validate from a small step count, then increase; record it in Mig_report.md §7.",
    "Write the thresholds actually used (metric, window, band, 500-step rule) in Mig_Readme.md §5.3.",
]


def _moved(pct: float) -> str:
    """How the metric moved, in words: a rising loss is never said to have "dropped -13.5%"."""
    return f"dropped {pct:.1f}%" if pct >= 0 else f"rose {-pct:.1f}% (no drop)"


def default_record_file() -> Path:
    """Where passed short runs are recorded when nobody says: beside the project's mig.yaml (the current
    folder or the nearest parent that has one), else in the current folder — never beside the user's log."""
    here = Path.cwd()
    for folder in (here, *here.parents):
        if (folder / "mig.yaml").is_file():
            return folder / RECORD_NAME
    return here / RECORD_NAME


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def fingerprint(params: JudgeShortRunInput, run: object, fmt: str) -> tuple[str | None, str]:
    """Identity of 'the same short run': configuration facts + metric + window + band."""
    from acc_agent.io.logs import RunData
    from acc_agent.io.logs.config import canonical_config, raw_config_from_file, raw_config_from_log

    assert isinstance(run, RunData)
    facts: dict[str, object] = {}
    if params.config is not None:
        flat, where = raw_config_from_file(params.config)
        facts = {k: v for k, (v, _) in canonical_config(flat).items()} or {"file": _sha256(params.config)}
        source = f"configuration file {params.config} ({where})"
    else:
        flat, where = raw_config_from_log(params.log)
        facts = {k: v for k, (v, _) in canonical_config(flat).items()}
        for name in ("global_batch_size", "lr"):
            s = run.series.get(name)
            if s is not None and len(s):
                facts.setdefault(f"first_{name}", s.values[0])
        if run.declared_total:
            facts.setdefault("declared_total_steps", run.declared_total)
        source = f"settings the log states ({where}; first lr / batch size)"
        if len(facts) < 2:
            return None, "the log states too little configuration to recognise a repeat (found: " + (", ".join(facts) or "nothing") + f"); pass {option('config')}"
    key = {"format": fmt, "facts": facts, "metric": params.metric, "window": params.window.model_dump(), "band": params.band.model_dump()}
    digest = hashlib.sha256(json.dumps(key, sort_keys=True, default=str).encode()).hexdigest()[:16]
    return digest, source


def _load_records(path: Path) -> tuple[list[RepeatRecord], str | None]:
    if not path.is_file():
        return [], None
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
        return [RepeatRecord.model_validate(r) for r in raw.get("records", [])], None
    except (ValueError, AttributeError, TypeError) as exc:
        return [], f"record file {path} is unreadable ({type(exc).__name__}); it was left untouched and no repeat check was possible"


#: One line per smoke / floating-point-exception check: its name, status and what it found.
_CHECK_LINES = Table[Check]([
    Column(lambda c: f"check {c.name}:"),
    Column(lambda c: c.status),
    Column(lambda c: f"— {c.detail}"),
])

#: The checklist of what to suspect when the loss stalls, as a bulleted list.
_CHECKLIST_LINES = Table[str]([Column(lambda item: "-"), Column(lambda item: item)])


def _render(out: JudgeShortRunOutput) -> str:
    return render(out, labelled("band", [out.band_fit] if out.band_fit else []), _CHECK_LINES.lines(out.checks),
                  _CHECKLIST_LINES.lines(out.checklist), labelled("repeat", [out.repeat_check] if out.repeat_check else []))


class _Judged(TypedDict):
    """What every result names, whatever the verdict: the log, the metric and the band."""

    log_path: str
    metric: str
    band: Band


class _InWindow(_Judged):
    """What every result of a run that has the metric adds: the run, the window used, its points."""

    run: int
    window: Window
    points: int


class _Numbers(TypedDict):
    """The drop and trend over the window, and the checks: what a judged (stalled or banded) result carries."""

    relative_drop: float
    relative_drop_pct: float
    start_value: float
    end_value: float
    endpoint_points: int
    trend_slope: float
    falling_fraction: float
    checks: list[Check]


@tool(
    description="Call after a short NPU training run: is the relative loss drop over the window inside the band (default "
    "30-50 %)? Returns verdict (pass, below_band, unstable, ...), relative_drop. Once passed, stop.",
    title="Judge a training short run",
    read_only=False,
    destructive=False,
    idempotent=True,
    positional=("log",),
    text_renderer=_render,
)
def judge_short_run(params: JudgeShortRunInput) -> JudgeShortRunOutput:
    import numpy as np

    from acc_agent.io.logs import parse_log
    from acc_agent.numerics.curves import falling_fraction, relative_drop, smoke_checks, theil_sen_slope

    parsed = parse_log(params.log)
    path = str(parsed.path)
    base = _Judged(log_path=path, metric=params.metric, band=params.band)
    evidence = [Evidence(kind="file", ref=path, detail=f"format {parsed.format}"),
                Evidence(kind="threshold", ref=f"band {params.band.low:.0%}-{params.band.high:.0%}", detail="default 30-50 % cumulative drop over the window; the dataset notes (Mig_Readme §3.1) may narrow it")]
    if not parsed.has_metrics:
        reason = f"no recognisable metric in {path} ({parsed.detection})"
        return JudgeShortRunOutput(verdict="insufficient_data", summary=reason, evidence=evidence, window=params.window, reason=reason, **base)
    run = parsed.run(params.run)
    series = run.series.get(params.metric)
    if series is None or len(series) == 0:
        reason = f"run {run.index} of {path} has no '{params.metric}' series (has: {', '.join(sorted(run.series)) or 'none'})"
        return JudgeShortRunOutput(verdict="insufficient_data", summary=reason, evidence=evidence, run=run.index, window=params.window, reason=reason, **base)
    steps = np.asarray(series.steps, dtype=np.int64)
    values = np.asarray(series.values, dtype=np.float64)
    lo = params.window.start_step if params.window.start_step is not None else int(steps[0])
    hi = params.window.end_step if params.window.end_step is not None else int(steps[-1])
    sel = (steps >= lo) & (steps <= hi)
    w_steps, w_vals = steps[sel], values[sel]
    first, last = (int(w_steps[0]), int(w_steps[-1])) if w_steps.size else (lo, hi)
    # The window actually used. One point (or a start past the log's last step) has no span, which
    # Window refuses: the end is then left open (null), and the verdict says too few points.
    window = Window(start_step=first, end_step=last if last > first else None)
    evidence.append(Evidence(kind="steps", ref=f"{params.metric} steps {window.start_step}-{window.end_step} ({w_steps.size} points)",
                             detail=f"run {run.index}" + (f", lines {run.start_line}-{run.end_line}" if run.start_line else "")))
    common = _InWindow(log_path=path, metric=params.metric, band=params.band, run=run.index, window=window, points=int(w_steps.size))

    # smoke / FP-exception checks over the window
    in_window: dict[str, tuple[ArrayLike, ArrayLike]] = {}
    for name, s in run.series.items():
        st = np.asarray(s.steps, dtype=np.int64)
        m = (st >= lo) & (st <= hi)
        in_window[name] = (st[m], np.asarray(s.values, dtype=np.float64)[m])
    if params.metric != "loss" and params.metric in in_window:
        in_window["loss"] = in_window[params.metric]  # the smoke checks look at the judged metric
    checks = [Check(name=c.name, status=c.status, detail=c.detail, steps=list(c.steps)) for c in smoke_checks(in_window)]  # type: ignore[arg-type]
    failed = [c for c in checks if c.status == "fail"]

    if w_steps.size < 3:
        reason = f"only {w_steps.size} '{params.metric}' point(s) in window {lo}:{hi}; at least 3 are needed"
        return JudgeShortRunOutput(verdict="insufficient_data", summary=reason, evidence=evidence, checks=checks, reason=reason, **common)
    if failed:
        detail = "; ".join(f"{c.name}: {c.detail}" for c in failed)
        return JudgeShortRunOutput(verdict="unstable", summary=f"run is numerically unstable in steps {window.start_step}-{window.end_step}: {detail}",
                                   evidence=evidence, checks=checks, **common)

    drop = relative_drop(w_vals)
    slope = theil_sen_slope(w_steps, w_vals)
    falling = falling_fraction(w_vals)
    pct = drop.relative_drop * 100
    numbers = _Numbers(relative_drop=drop.relative_drop, relative_drop_pct=round(pct, 3), start_value=drop.start_value, end_value=drop.end_value,
                       endpoint_points=drop.k, trend_slope=slope, falling_fraction=falling, checks=checks)
    span = f"steps {window.start_step}-{window.end_step}"
    band_txt = f"{params.band.low:.0%}-{params.band.high:.0%}"
    last_step = int(w_steps[-1])

    # beyond the step threshold without clear improvement: more steps will not help
    if last_step > params.stall_steps and drop.relative_drop < params.improvement_threshold:
        return JudgeShortRunOutput(
            verdict="stalled",
            summary=f"{params.metric} {_moved(pct)} over {span} (beyond {params.stall_steps} cumulative steps without clear improvement): stop adding steps; suspect the model, code or data pipeline",
            evidence=evidence + [Evidence(kind="threshold", ref=f"{params.stall_steps} steps, improvement < {params.improvement_threshold:.0%}",
                                          detail="beyond this many steps without clear improvement, more steps will not help")],
            checklist=CHECKLIST_8_2, **numbers, **common,
        )

    band_fit = None
    suggested = None
    verdict: ShortRunVerdict
    if drop.relative_drop < params.band.low:
        verdict = "below_band"
        if math.isfinite(slope) and slope < 0 and drop.start_value > 0:
            needed = params.band.low * drop.start_value / -slope
            suggested = int(window.start_step + math.ceil(needed)) if window.start_step is not None else None
            band_fit = (f"the {band_txt} band does not fit a {last_step - (window.start_step or 0)}-step window: at the current trend "
                        f"({slope:.3g} per step) the loss reaches a {params.band.low:.0%} drop around step {suggested}. "
                        f"Either judge a window to ~step {suggested}, or write a band that fits this window in Mig_Readme §3.1 notes "
                        f"(large models drop a few percent in 10-15 iterations).")
        else:
            band_fit = "the loss is not falling over this window (trend >= 0): a longer window will not help — check code, data and learning rate first (see checklist)."
        summary = f"{params.metric} {_moved(pct)} over {span}, below the {band_txt} band"
    elif drop.relative_drop <= params.band.high:
        verdict = "pass"
        summary = f"{params.metric} dropped {pct:.1f}% over {span}, inside the {band_txt} band: short run passed — stop here, do not repeat it"
    else:
        verdict = "pass_above_band"
        summary = f"{params.metric} dropped {pct:.1f}% over {span}, above the {band_txt} band (allowed; write the actual {pct:.1f}% in Mig_report): short run passed — stop here"

    out = JudgeShortRunOutput(verdict=verdict, summary=summary, evidence=evidence, band_fit=band_fit, suggested_end_step=suggested, **numbers, **common)
    _repeat_rule(params, out, run, parsed.format)
    return out


def _repeat_rule(params: JudgeShortRunInput, out: JudgeShortRunOutput, run: object, fmt: str) -> None:
    """Stop once passed: flag a different log of the same short run after a pass."""
    if not params.record:
        out.repeat_check = f"not checked ({option('record', False)})"
        return
    digest, source = fingerprint(params, run, fmt)
    if digest is None:
        out.repeat_check = "not possible: " + source
        return
    record_path = params.record_file or default_record_file()
    out.record_file = str(record_path)
    records, problem = _load_records(record_path)
    if problem:
        out.repeat_check = problem
        return
    sha = _sha256(params.log)
    here = str(params.log.resolve())
    earlier = [r for r in records if r.fingerprint == digest and r.verdict in PASSED]
    same_log = [r for r in earlier if r.log_sha256 == sha or r.log_path == here]
    if same_log:
        # re-judging the same log file (even rewritten in place) is not a second short run
        out.repeat_check = f"this log file was already judged {same_log[0].verdict} on {same_log[0].judged_at}; nothing new recorded"
        return
    if earlier:
        prev = earlier[0]
        out.repeat = prev
        out.repeat_check = f"same configuration ({source}) already passed with {prev.log_path} on {prev.judged_at}"
        out.verdict = "repeat_of_passed"
        out.summary = (f"this short run repeats one that already passed ({prev.log_path}, drop {prev.relative_drop:.1%}): "
                       "stop — do not rerun a passed short run; go on to formal training (Mig_Readme §5.3)") if prev.relative_drop is not None else out.summary
        out.evidence.append(Evidence(kind="file", ref=str(record_path), detail=f"passed record {prev.fingerprint}"))
        return
    if out.verdict in PASSED:
        rec = RepeatRecord(
            fingerprint=digest, fingerprint_source=source, log_path=here, log_sha256=sha, metric=params.metric,
            window=out.window, band=params.band, verdict=out.verdict, relative_drop=out.relative_drop,
            judged_at=datetime.now(timezone.utc).isoformat(timespec="seconds"),
        )
        payload = {"records": [r.model_dump(mode="json") for r in records] + [rec.model_dump(mode="json")]}
        try:
            record_path.parent.mkdir(parents=True, exist_ok=True)
            # a unique temporary file: two judges recording at once must not share one ".tmp"
            atomic_write_text(record_path, json.dumps(payload, indent=2, ensure_ascii=False))
        except OSError as exc:
            out.repeat_check = f"pass NOT recorded: cannot write {record_path} ({exc.strerror or exc}); pass {option('record_file')} to a writable place"
            return
        out.repeat_check = f"pass recorded in {record_path} (configuration from {source})"
    else:
        out.repeat_check = f"no earlier pass of this configuration in {record_path}"
