"""Megatron-LM / MindSpeed text logs.

``[ts] iteration  N/  M | consumed samples: ... | lm loss: 1.3E+01 | loss scale: 1.0 | ...`` and the
``[Rank R] (after N iterations) memory (MB) | allocated: ... | max allocated: ...`` lines. The
fields are ``name: value`` pairs between pipes, so any field a newer version adds is kept under its
snake_case name instead of being lost.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from acc_agent.io.logs.base import LogFormat, Record, canonical_name
from acc_agent.io.logs.formats.megatron_fast import read_columns
from acc_agent.io.logs.source import LogSource, Sample

_ITER = re.compile(r"\biteration\s+(\d+)\s*/\s*(\d+)\s*\|")
_ITER_AT = re.compile(r"iteration\s+(\d+)\s*/\s*(\d+)\s*\|")
_MEM = re.compile(r"\(after (\d+) iterations\) memory \(MB\)")
_EVAL_NAMES = {"lm_loss_value": "eval_loss", "lm_loss_ppl": "eval_ppl", "loss": "eval_loss"}
_VALIDATION = re.compile(r"validation loss at (?:iteration (\d+)|the end of training)", re.I)


_NO_VALUES: dict[str, float] = {}
_LAYOUTS: dict[tuple[str, ...], tuple[bool, tuple[str, ...], list[int]]] = {}


def _fields(text: str) -> tuple[tuple[str, ...], list[float]]:
    """``name: value`` fields between pipes, as (canonical names, values).

    Megatron prints the same fields on every line, so the layout (which fields hold numbers and
    their canonical names) is worked out once and reused: per line only C-level string splits and
    float() remain, which keeps a million-line log within seconds.
    """
    parts = text.replace("|", ":").split(":")
    keys = tuple(parts[0::2])
    vals = parts[1::2]
    layout = _LAYOUTS.get(keys)
    if layout is None:
        layout = _LAYOUTS[keys] = _layout(keys, vals)
    dense, names, idx = layout
    try:
        if dense:
            return names, list(map(float, vals))
        return names, [float(vals[i]) for i in idx]
    except ValueError:  # same layout, but a field that was numeric is not numeric on this line
        kept: list[str] = []
        row: list[float] = []
        for i, name in zip(idx, names, strict=True):
            try:
                row.append(float(vals[i]))
            except ValueError:
                continue
            kept.append(name)
        return tuple(kept), row


_MEMORY_NAMES: dict[tuple[str, ...], tuple[str, ...]] = {}


def _memory_names(names: tuple[str, ...]) -> tuple[str, ...]:
    """``allocated`` -> ``memory_allocated_mb``, one shared tuple per layout (records compare it by identity)."""
    out = _MEMORY_NAMES.get(names)
    if out is None:
        out = _MEMORY_NAMES[names] = tuple(f"memory_{k}_mb" for k in names)
    return out


def _pairs(text: str) -> dict[str, float]:
    names, row = _fields(text)
    return dict(zip(names, row, strict=True))


def _layout(keys: tuple[str, ...], vals: list[str]) -> tuple[bool, tuple[str, ...], list[int]]:
    idx: list[int] = []
    names: list[str] = []
    for i, (key, raw) in enumerate(zip(keys, vals, strict=False)):
        try:
            float(raw)
        except ValueError:
            continue
        if key.strip():
            idx.append(i)
            names.append(canonical_name(key))
    dense = idx == list(range(len(vals)))
    return dense, tuple(names), idx


class MegatronText(LogFormat):
    name = "megatron"
    label = "Megatron-LM / MindSpeed text log"

    def sniff(self, sample: Sample) -> float:
        hits = sum(1 for line in sample.lines if "iteration" in line and _ITER.search(line))
        return 0.95 if hits else 0.0

    def parse(self, source: LogSource) -> Iterator[Record]:
        """Runs of iteration lines go out as tables (or per-layout bulk records); other lines singly."""
        state = _State()
        for start, block in source.chunks():
            run_from: int | None = None
            for i, line in enumerate(block):
                if "iteration " in line:  # memory lines say "iterations)", never "iteration "
                    if "validation loss" not in line:
                        if run_from is None:
                            run_from = i
                        continue
                elif "memory (MB)" not in line:
                    if run_from is not None:  # any other line ends a run of iteration lines
                        yield from state.iterations(block[run_from:i], start + run_from)
                        run_from = None
                    continue
                if run_from is not None:
                    yield from state.iterations(block[run_from:i], start + run_from)
                    run_from = None
                yield from state.other(start + i, line)
            if run_from is not None:
                yield from state.iterations(block[run_from:], start + run_from)
            yield from state.flush()


class _State:
    """What the reader carries from line to line: the last step and the bulk rows not yet sent."""

    def __init__(self) -> None:
        self.last_step: int | None = None
        self.batch: list[tuple[int, int, int | None, list[float]]] = []
        self.batch_names: tuple[str, ...] | None = None
        self.memory: Record | None = None  # the ranks' memory lines of one step, merged (max per field)

    def flush(self) -> Iterator[Record]:
        if self.batch:
            yield Record(self.batch[0][0], _NO_VALUES, names=self.batch_names, batch=self.batch)
            self.batch = []
        if self.memory is not None:
            yield self.memory
            self.memory = None

    def iterations(self, lines: list[str], first_line: int) -> Iterator[Record]:
        """Consecutive iteration lines: as one table when they share a layout, else line by line."""
        if self.memory is not None:  # memory lines come after their step: send them before later steps
            yield self.memory
            self.memory = None
        cols = read_columns(lines, first_line)
        if cols is not None:
            yield from self.flush()
            self.last_step = int(cols.steps[-1])
            yield Record(first_line, _NO_VALUES, columns=cols)
            return
        for lineno, line in enumerate(lines, first_line):
            pos = line.find("iteration ")
            m = _ITER_AT.match(line, pos) if pos >= 0 else None
            if m is None:
                continue
            step_text, total_text = m.groups()
            if len(step_text) > 18 or len(total_text) > 18:
                continue  # not a step a run can reach (int64 holds 18 digits): a damaged line
            self.last_step = step = int(step_text)
            names, row = _fields(line[m.end() :])
            if names is not self.batch_names and self.batch:
                yield from self.flush()
            self.batch_names = names
            self.batch.append((lineno, step, int(total_text), row))

    def other(self, lineno: int, line: str) -> Iterator[Record]:
        """A memory line or a validation line."""
        if "memory (MB)" in line:
            mm = _MEM.search(line)
            if mm is not None:
                names, row = _fields(line[line.find("|", mm.end()) + 1 :])
                step = int(mm.group(1))
                held = self.memory
                if held is not None and held.step == step and held.names is _memory_names(names):
                    merged = held.row
                    assert merged is not None
                    for i, value in enumerate(row):  # every rank prints one line: the peak is the run's
                        if value > merged[i]:
                            merged[i] = value
                    held.merged += 1
                    return
                yield from self.flush()
                self.memory = Record(line=lineno, values=_NO_VALUES, step=step, names=_memory_names(names), row=list(row))
            return
        vm = _VALIDATION.search(line)
        if vm is None:
            return
        pairs = _pairs(line[line.find("|", vm.end()) + 1 :])
        values = {}
        for key, value in pairs.items():
            name = _EVAL_NAMES.get(key, key)
            values[name if name.startswith("eval_") else "eval_" + name] = value
        eval_step = int(vm.group(1)) if vm.group(1) else self.last_step
        if values:
            yield from self.flush()
            yield Record(line=lineno, values=values, step=eval_step, kind="eval")
