"""``select_baseline``: choose where the baseline comes from, by the migration rules for baselines.

Order of preference: a complete project training log that agrees with the acceptance criteria
(quoted, not rerun) → otherwise a GPU measurement the user runs from the Mig_Readme §2.6 commands
→ ``na`` when no GPU is available. A CPU log is used only when the project asks for CPU or the log
itself is a CPU run. An NPU log is the migrated side, never the baseline.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import TypedDict

from acc_agent import frontend
from acc_agent.errors import AccAgentError
from acc_agent.models.baseline import BaselineCandidate, CommandRow, SelectBaselineInput, SelectBaselineOutput
from acc_agent.models.common import Evidence
from acc_agent.text_columns import Column, Table, labelled, render
from acc_agent.tools.spec import tool

LOG_SUFFIXES = {".log", ".txt", ".json", ".jsonl", ".csv", ".md", ".out"}
SKIP_DIRS = {".git", "node_modules", "__pycache__", ".venv", "venv", "env", "site-packages", ".acc-agent", ".tox", ".mypy_cache", ".pytest_cache", "dist", "build"}
MAX_LOG_BYTES = 200 << 20
TRAIN_ENTRIES = ("train.py", "tools/train.py", "main.py", "pretrain_gpt.py", "run_train.py", "finetune.py", "src/train.py", "scripts/train.py")
INFER_ENTRIES = ("infer.py", "inference.py", "predict.py", "demo.py", "eval.py", "tools/test.py", "test.py", "evaluate.py", "src/infer.py")


def _walk(root: Path, max_files: int) -> list[Path]:
    """Candidate log files under ``root``; symlinks are not followed (nothing outside the project)."""
    out: list[Path] = []
    stack = [root]
    while stack and len(out) < max_files:
        current = stack.pop()
        try:
            entries = sorted(os.scandir(current), key=lambda e: e.name)
        except OSError:
            continue
        for e in entries:
            if e.is_symlink():
                continue
            if e.is_dir(follow_symlinks=False):
                if e.name not in SKIP_DIRS and not e.name.startswith("."):
                    stack.append(Path(e.path))
            elif e.is_file(follow_symlinks=False) and Path(e.name).suffix.lower() in LOG_SUFFIXES:
                out.append(Path(e.path))
                if len(out) >= max_files:
                    break
    return out


def _mentions(path: Path, needle: str, limit: int = 4 << 20) -> bool:
    with path.open("r", encoding="utf-8", errors="replace") as fh:
        return needle.lower() in fh.read(limit).lower()


def _quote(path: Path, first: int, last: int, keep: int = 5) -> list[str]:
    lines: list[str] = []
    with path.open("r", encoding="utf-8", errors="replace") as fh:
        for lineno, line in enumerate(fh, 1):
            if lineno > last:
                break
            if lineno >= first:
                lines.append(f"{lineno}: {line.rstrip()[:400]}")
    return lines if len(lines) <= 2 * keep else lines[:keep] + ["..."] + lines[-keep:]


def _assess(path: Path, params: SelectBaselineInput, root: Path) -> BaselineCandidate | str | None:
    from acc_agent.io.logs import parse_log

    if path.stat().st_size > MAX_LOG_BYTES:
        return f"{path.relative_to(root)}: larger than {MAX_LOG_BYTES >> 20} MiB, not scanned"
    try:
        parsed = parse_log(path)
    except AccAgentError as err:
        return f"{path.relative_to(root)}: {err.message}"
    if not parsed.has_metrics:
        return None
    metric = params.metric or "loss"
    # the run to judge: one that has the metric and is not the NPU side, if the file holds several
    usable = [r for r in parsed.runs if (metric in r.series or metric in r.scalars) and r.device != "NPU"]
    run = max(usable, key=lambda r: len(r.series.get(metric, ())) + len(r.series)) if usable else parsed.run(None)
    series = run.series.get(metric)
    has_metric = (series is not None and len(series) >= 2) or metric in run.scalars
    ref = run.series.get("loss") or next(iter(run.series.values()), None)
    cand = BaselineCandidate(
        path=str(path), format=parsed.format, run=run.index, device=run.device, device_evidence=run.device_evidence,
        line_range=[run.start_line, run.end_line] if run.start_line else None,
        first_step=ref.steps[0] if ref is not None and len(ref) else None, last_step=ref.steps[-1] if ref is not None and len(ref) else None,
        points=len(ref) if ref is not None else 0, metrics=sorted(set(run.series) | set(run.scalars)),
    )
    # completeness: the run reached its announced end, or it evaluated/summarised at the end
    if run.declared_total and cand.last_step is not None and cand.last_step >= run.declared_total:
        cand.complete, cand.completeness = True, f"reached the announced {run.declared_total} {run.step_unit}s"
    elif run.declared_total and cand.last_step is not None:
        cand.completeness = f"stopped at {cand.last_step} of the announced {run.declared_total} {run.step_unit}s"
    elif run.record_kinds.get("eval") or run.record_kinds.get("summary"):
        cand.complete, cand.completeness = True, "has evaluation/summary records"
    else:
        cand.completeness = "no announced end and no evaluation/summary record: completeness cannot be shown"
    cand.matches["metric"] = has_metric
    cand.matches["dataset"] = _mentions(path, params.dataset) if params.dataset else None
    if params.batch_size is not None:
        gbs = run.series.get("global_batch_size")
        from acc_agent.io.logs.config import canonical_config, raw_config_from_log

        stated = {v for k, (v, _) in canonical_config(raw_config_from_log(path)[0]).items() if k in ("global_batch_size", "micro_batch_size")}
        if gbs is not None and len(gbs):
            stated.add(int(gbs.values[0]))
        cand.matches["batch"] = (params.batch_size in stated) if stated else None
    else:
        cand.matches["batch"] = None
    cand.matches["hardware"] = None if run.device is None else run.device in ("GPU", "CPU")
    if not has_metric:
        cand.reasons.append(f"no '{metric}' values")
    if not cand.complete:
        cand.reasons.append(cand.completeness)
    if run.device == "NPU":
        cand.reasons.append("NPU run: that is the migrated side, not a baseline")
    if cand.matches["dataset"] is False:
        cand.reasons.append(f"never mentions dataset '{params.dataset}'")
    if cand.matches["batch"] is False:
        cand.reasons.append(f"batch size differs from {params.batch_size}")
    cand.qualifies = not cand.reasons
    cand.score = (2.0 * cand.complete + 2.0 * has_metric + (cand.matches["dataset"] is True) + (cand.matches["batch"] is True)
                  + (run.device == "GPU") + min(1.0, cand.points / 1000.0) - 5.0 * (run.device == "NPU"))
    return cand


def _flags(script: Path) -> str:
    try:
        return script.read_text(encoding="utf-8", errors="replace")[:200_000]
    except OSError:
        return ""


def _find_entry(root: Path, names: tuple[str, ...]) -> str | None:
    return next((n for n in names if (root / n).is_file()), None)


def _command(entry: str, root: Path, device: str, batch: int | None, log_name: str) -> tuple[str, str]:
    """A command line built from the flags the entry script itself declares (read, never run)."""
    text = _flags(root / entry)
    parts: list[str] = []
    params: list[str] = []
    env = "CUDA_VISIBLE_DEVICES=0" if device == "GPU" else "CUDA_VISIBLE_DEVICES=''"
    params.append(env)
    if re.search(r"""['"]--device['"]""", text):
        parts.append(f"--device {'cuda' if device == 'GPU' else 'cpu'}")
        params.append(f"--device {'cuda' if device == 'GPU' else 'cpu'}")
    else:
        params.append("device chosen by CUDA_VISIBLE_DEVICES (the script declares no --device flag)")
    flag = next((f for f in ("--batch-size", "--batch_size", "--bs", "--per_device_train_batch_size", "--micro-batch-size") if re.search(rf"""['"]{re.escape(f)}['"]""", text)), None)
    if flag:
        parts.append(f"{flag} {batch if batch is not None else '<batch>'}")
        params.append(f"{flag} {batch if batch is not None else '<batch: the acceptance batch>'}")
    weights = next((f for f in ("--weights", "--checkpoint", "--ckpt", "--resume", "--load", "--model_name_or_path") if re.search(rf"""['"]{re.escape(f)}['"]""", text)), None)
    if weights:
        parts.append(f"{weights} <weights>")
        params.append(f"{weights} <weights>")
    runner = "bash" if entry.endswith(".sh") else "python"
    cmd = f"{env} {runner} {entry} {' '.join(parts)}".replace("  ", " ").strip() + f" 2>&1 | tee logs/{log_name}"
    return cmd, "; ".join(params)


def _commands(root: Path, params: SelectBaselineInput) -> tuple[str | None, list[CommandRow]]:
    train = params.entry or _find_entry(root, TRAIN_ENTRIES)
    infer = _find_entry(root, INFER_ENTRIES) if params.entry is None else params.entry
    rows: list[CommandRow] = []
    if infer:
        cmd, keys = _command(infer, root, "GPU", params.batch_size, "baseline_gpu_infer.log")
        rows.append(CommandRow(scenario="GPU inference baseline (default)", device="GPU", entry=infer, key_parameters=keys, command=cmd,
                               aligns_with="Mig_Readme §3.1 golden samples / inference acceptance", notes="Same fixed inputs and preprocessing as the NPU run."))
    if train:
        cmd, keys = _command(train, root, "GPU", params.batch_size, "baseline_gpu_train.log")
        rows.append(CommandRow(scenario="GPU training baseline", device="GPU", entry=train, key_parameters=keys, command=cmd,
                               aligns_with="Mig_Readme §3.1 short run / training", notes="Same configuration as the NPU run (compare-run-configs checks it)."))
    entry = train or infer
    if entry:
        cmd, keys = _command(entry, root, "CPU", params.batch_size, "baseline_cpu.log")
        rows.append(CommandRow(scenario="CPU baseline (optional)", device="CPU", entry=entry, key_parameters=keys, command=cmd,
                               aligns_with="Mig_Readme §3.1 golden samples", notes="Only when the project asks for CPU; not the default baseline."))
    return entry, rows


#: The quoted lines of the baseline log, verbatim (each already starts with its line number).
_QUOTE_LINES = Table[str]([Column(lambda line: line)])

#: One line per Mig_Readme §2.6 command the user is to run.
_COMMAND_LINES = Table[CommandRow]([
    Column(lambda row: f"Mig_Readme §2.6 {row.scenario}:"),
    Column(lambda row: row.command),
])

#: One line per log found: where, its format and device, its score, and why it does not qualify.
_CANDIDATE_LINES = Table[BaselineCandidate]([
    Column(lambda c: f"candidate {c.path}"),
    Column(lambda c: f"[{c.format}, {c.device or 'device?'}]"),
    Column(lambda c: f"score {c.score:.1f}"),
    Column(lambda c: "qualifies" if c.qualifies else "; ".join(c.reasons)),
])

#: Candidates listed on the terminal; the JSON result holds all of them.
_SHOWN_CANDIDATES = 8


def _render(out: SelectBaselineOutput) -> str:
    """The headline is ``[source] reason``: the tool sets ``verdict`` to the source and ``summary`` to the reason."""
    where = f" lines {out.line_range[0]}-{out.line_range[1]}" if out.line_range else " (whole file)"
    log = [f"{out.log_path}{where}"] if out.log_path else []
    return render(out, labelled("log", log), _QUOTE_LINES.lines(out.quote), _COMMAND_LINES.lines(out.commands),
                  _CANDIDATE_LINES.lines(out.candidates[:_SHOWN_CANDIDATES]))


class _Scan(TypedDict):
    """What every result reports of the scan, whichever source it settles on."""

    scanned_files: int
    skipped: list[str]
    candidates: list[BaselineCandidate]
    entry: str | None


@tool(
    description="Call before any accuracy or performance comparison: picks the baseline (a qualifying project log, else "
    "GPU commands for the user, else N/A). Returns source project_log | gpu_measured | cpu_log | na.",
    title="Select the baseline",
    read_only=True,
    positional=("project_dir",),
    text_renderer=_render,
)
def select_baseline(params: SelectBaselineInput) -> SelectBaselineOutput:
    root = params.project_dir
    if not root.is_dir():
        raise AccAgentError("not_a_directory", f"project directory {root} does not exist or is not a directory", hint="Pass the project root.", path=str(root))
    root = root.resolve()
    files = _walk(root, params.max_files)
    candidates: list[BaselineCandidate] = []
    skipped: list[str] = []
    for f in files:
        res = _assess(f, params, root)
        if isinstance(res, BaselineCandidate):
            candidates.append(res)
        elif isinstance(res, str):
            skipped.append(res)
    candidates.sort(key=lambda c: -c.score)
    entry, commands = _commands(root, params)
    evidence = [Evidence(kind="file", ref=str(root), detail=f"scanned {len(files)} file(s), {len(candidates)} with metrics")]
    base = _Scan(scanned_files=len(files), skipped=skipped, candidates=candidates, entry=entry)
    metric = params.metric or "loss"
    qualifying = [c for c in candidates if c.qualifies]
    gpu_like = [c for c in qualifying if c.device != "CPU"]
    cpu_logs = [c for c in qualifying if c.device == "CPU"]
    if gpu_like:
        best = gpu_like[0]
        quote = _quote(Path(best.path), best.line_range[0], best.line_range[1]) if best.line_range else []
        where = f"lines {best.line_range[0]}-{best.line_range[1]}" if best.line_range else "whole file"
        device_note = f" on {best.device}" if best.device else " (the log does not state its device)"
        reason = (f"complete project log{device_note} with '{metric}' ({best.points} points, steps {best.first_step}-{best.last_step}; "
                  f"{best.completeness}): quoted as the baseline, no rerun")
        evidence.append(Evidence(kind="file", ref=f"{best.path}:{where}", detail=f"format {best.format}; device {best.device_evidence}"))
        return SelectBaselineOutput(verdict="project_log", source="project_log", log_path=best.path, reason=reason, summary=reason, line_range=best.line_range,
                                    quote=quote, device=best.device, evidence=evidence, **base)
    if cpu_logs and (params.cpu_requested or params.gpu_available == "no"):
        best = cpu_logs[0]
        why = "the project asks for a CPU baseline" if params.cpu_requested else "no GPU is available and the project log itself is a CPU run"
        evidence.append(Evidence(kind="file", ref=best.path, detail=f"CPU log; {best.device_evidence}"))
        return SelectBaselineOutput(verdict="cpu_log", source="cpu_log", log_path=best.path, reason=f"CPU log used because {why}", summary=f"CPU log used because {why}",
                                    line_range=best.line_range, quote=_quote(Path(best.path), *best.line_range) if best.line_range else [],
                                    device="CPU", evidence=evidence, **base)
    why_not = "no training log found in the project" if not candidates else "no project log qualifies (" + "; ".join(
        f"{Path(c.path).name}: {', '.join(c.reasons)}" for c in candidates[:3]) + ")"
    if params.gpu_available == "no":
        reason = f"{why_not}, and no GPU is available: baseline N/A — the comparison is paused rather than made against a misleading reference"
        return SelectBaselineOutput(verdict="na", source="na", reason=reason, summary=reason, commands=commands, evidence=evidence, **base)
    if not commands:
        reason = f"{why_not}; default baseline is a GPU measurement, but no entry script was found to build the Mig_Readme §2.6 commands (pass {frontend.option('entry')})"
    else:
        reason = f"{why_not}: default baseline is a GPU measurement — the user runs the Mig_Readme §2.6 commands built from {entry}"
    if cpu_logs:
        reason += f"; a CPU log exists ({cpu_logs[0].path}) and can be added as the optional CPU comparison"
    for row in commands:
        evidence.append(Evidence(kind="command", ref=row.command, detail=row.scenario))
    return SelectBaselineOutput(verdict="gpu_measured", source="gpu_measured", reason=reason, summary=reason, commands=commands, evidence=evidence, **base)
