"""Optimisation-step numbers for the Hugging Face Trainer's printed log dicts.

The dicts (``{'loss': 0.69, 'learning_rate': ..., 'epoch': 0.16}``) carry no step. Numbering them
1, 2, 3 in file order makes a log that logs every 20 steps look twenty times shorter than its
``trainer_state.json`` twin, and two runs with different ``logging_steps`` impossible to align. In
order of trust, the step of each dict comes from:

1. the tqdm bar printed just before it (``20/375 [``) — the Trainer's own counter;
2. a ``trainer_state.json`` beside the log whose ``log_history`` holds the same records;
3. ``logging_steps`` from the ``TrainingArguments(...)`` dump: the k-th train dict is step k × L;
4. the ``***** Running training *****`` header: steps per epoch × the dict's ``epoch``, with the
   logging interval fitted over all dicts (the printed epoch may be rounded to two decimals);
5. nothing: the dicts stay numbered by record, and the run says so (step unit ``record``).
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path

from acc_agent.io.logs.base import Record, step_number
from acc_agent.io.logs.hf_header import HfRunInfo

STATE_NAME = "trainer_state.json"
MAX_STATE_BYTES = 64 << 20


@dataclass
class Pending:
    """One parsed dict waiting for its step: the record and the bar position seen before it."""

    record: Record
    bar_step: int | None


def _state_history(log_path: Path) -> list[dict[str, object]] | None:
    state = log_path.with_name(STATE_NAME)
    if state == log_path or not state.is_file() or state.stat().st_size > MAX_STATE_BYTES:
        return None
    try:
        doc = json.loads(state.read_text(encoding="utf-8"))
    except (OSError, ValueError, RecursionError):  # a side file only: when unreadable, steps come from the log
        return None
    history = doc.get("log_history") if isinstance(doc, dict) else None
    return [e for e in history if isinstance(e, dict)] if isinstance(history, list) else None


def _from_state(train: list[Pending], evals: list[Pending], history: list[dict[str, object]]) -> bool:
    """Take steps from trainer_state.json when its train (and eval) entries are the same records."""
    s_train = [e for e in history if "loss" in e and "step" in e and not any(k.startswith("eval_") for k in e)]
    s_eval = [e for e in history if "step" in e and any(k.startswith("eval_") for k in e)]
    if len(s_train) != len(train) or not train:
        return False
    agree = 0
    for p, e in zip(train, s_train, strict=True):
        mine = p.record.values.get("loss")
        theirs = e.get("loss")
        if mine is None or not isinstance(theirs, (int, float)):
            continue
        if (math.isnan(mine) and math.isnan(float(theirs))) or math.isclose(mine, float(theirs), rel_tol=1e-3, abs_tol=1e-4):
            agree += 1
    if agree < 0.9 * len(train):
        return False
    train_steps = [_state_step(e) for e in s_train]
    eval_steps = [_state_step(e) for e in s_eval]
    if None in train_steps:
        return False  # a step the state file cannot mean (text, NaN, 1e400): keep the log's own steps
    for p, step in zip(train, train_steps, strict=True):
        p.record.step = step
    if len(s_eval) == len(evals) and None not in eval_steps:
        for p, step in zip(evals, eval_steps, strict=True):
            p.record.step = step
    return True


def _state_step(entry: dict[str, object]) -> int | None:
    """An entry's ``step`` as an int, or None when it is not a number a run can have."""
    value = entry.get("step")
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return step_number(value)


def _fit_interval(epochs: list[float], per_epoch: float) -> tuple[int, int] | None:
    """(interval L, offset) with step_k = offset + k × L matching epoch_k × per_epoch, if one does.

    ``offset`` is 1 when the first dict is ``logging_first_step`` (step 1) and the rest follow.
    The check allows the error of an epoch printed with two decimals.
    """
    est = [e * per_epoch for e in epochs]
    slack = 0.005 * per_epoch + 1.0
    for first_is_one in (False, True):
        tail = est[1:] if first_is_one else est
        if not tail or (first_is_one and abs(est[0] - 1.0) > slack):
            continue
        ks = range(1, len(tail) + 1)
        interval = round(sum(k * s for k, s in zip(ks, tail, strict=True)) / sum(k * k for k in ks))
        if interval >= 1 and all(abs(k * interval - s) <= slack for k, s in zip(ks, tail, strict=True)):
            return interval, int(first_is_one)
    return None


def number_records(pending: list[Pending], info: HfRunInfo, log_path: Path) -> tuple[str, list[str]]:
    """Set ``record.step`` on every pending dict; return (how they were numbered, warnings)."""
    train = [p for p in pending if p.record.kind == "train"]
    evals = [p for p in pending if p.record.kind == "eval"]
    if train and all(p.bar_step is not None for p in train):
        for p in pending:
            if p.record.step is None and p.bar_step is not None:
                p.record.step = p.bar_step
        return "progress-bar positions", []
    history = _state_history(log_path)
    if history is not None and _from_state(train, evals, history):
        return f"global steps of {STATE_NAME} beside the log", []
    per_epoch = info.steps_per_epoch()
    interval = info.logging_steps
    offset = 1 if info.arguments.get("logging_first_step") is True else 0
    how = f"logging_steps={interval} from the TrainingArguments dump (line {info.arguments_line})" if interval else ""
    warnings: list[str] = []
    epochs = [p.record.epoch for p in train]
    if not interval and per_epoch and train and all(e is not None for e in epochs):
        fitted = _fit_interval([float(e) for e in epochs if e is not None], per_epoch)
        if fitted is not None:
            interval, offset = fitted
            how = (f"logging interval {interval} fitted to the dicts' epochs × {per_epoch:g} steps per epoch "
                   f"(training header, line {info.header_line})")
    if interval:
        for k, p in enumerate(train):
            p.record.step = 1 if (offset and k == 0) else (k + 1 - offset) * interval
        for p in evals:
            p.record.step = _eval_step(p, per_epoch, train)
        return how, warnings
    if per_epoch and train and all(e is not None for e in epochs):
        for p in train + evals:
            if p.record.epoch is not None:
                p.record.step = max(1, round(p.record.epoch * per_epoch))
        warnings.append(f"steps estimated as epoch × {per_epoch:g} steps per epoch (training header, line {info.header_line}); "
                        "no consistent logging interval fits the printed epochs")
        return "epoch × steps per epoch from the training header", warnings
    ordinal = 0
    for p in pending:
        if p.record.kind == "train":
            ordinal += 1
        if p.record.kind != "summary":
            p.record.step, p.record.unit = max(ordinal, 1), "record"
    warnings.append("the printed log dicts carry no step and the log has no progress bars, trainer_state.json or "
                    "training header: points are numbered by record (1, 2, 3...), not by optimisation step")
    return "record order (no step information)", warnings


def _eval_step(p: Pending, per_epoch: float | None, train: list[Pending]) -> int | None:
    """An evaluation's step: its epoch × steps per epoch, else the train step logged just before it."""
    if p.record.epoch is not None and per_epoch:
        return max(1, round(p.record.epoch * per_epoch))
    before = [t.record.step for t in train if t.record.line <= p.record.line and t.record.step is not None]
    return before[-1] if before else None
