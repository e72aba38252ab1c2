"""Megatron-LM / MindSpeed text logs.

``[ts] iteration  N/  M | consumed samples: ... | lm loss: 1.3E+01 | loss scale: 1.0 | ...`` and the
``[Rank R] (after N iterations) memory (MB) | allocated: ... | max allocated: ...`` lines. The
fields are ``name: value`` pairs between pipes, so any field a newer version adds is kept under its
snake_case name instead of being lost.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import replace
from itertools import compress, repeat
from operator import add, getitem, lt
from typing import cast

from acc_agent.io.arrays import FloatArray
from acc_agent.io.logs.base import LogFormat, Record, canonical_name
from acc_agent.io.logs.formats.megatron_fast import MIN_ROWS, column_floats, read_columns
from acc_agent.io.logs.source import LogSource, Sample

_ITER = re.compile(r"\biteration\s+(\d+)\s*/\s*(\d+)\s*\|")
_ITER_AT = re.compile(r"iteration\s+(\d+)\s*/\s*(\d+)\s*\|")
_MEM = re.compile(r"\(after (\d+) iterations\) memory \(MB\)")
_EVAL_NAMES = {"lm_loss_value": "eval_loss", "lm_loss_ppl": "eval_ppl", "loss": "eval_loss"}
_VALIDATION = re.compile(r"validation loss at (?:iteration (\d+)|the end of training)", re.I)


_NO_VALUES: dict[str, float] = {}
# (numeric, canonical names, their value indexes, indexes of named fields that were not numbers) of a
# key layout, as the first line of that layout read; every later line checks it still holds.
_Layout = tuple[bool, tuple[str, ...], list[int], list[int]]
_LAYOUTS: dict[tuple[str, ...], _Layout] = {}
# Layouts of lines cut after a key (``| lm loss`` with no value): the same keys as a whole line, one
# value fewer, so they cannot share its layout (a line of either kind would get the other's names).
_CUT_LAYOUTS: dict[tuple[str, ...], _Layout] = {}


def _fields(text: str) -> tuple[tuple[str, ...], list[float]]:
    """``name: value`` fields between pipes with a number for a value, as (canonical names, values).

    Megatron prints the same fields on every line, so the layout (which fields hold numbers and
    their canonical names) is worked out once and reused: per line only C-level string splits and
    float() remain, which keeps a million-line log within seconds. A line whose numbers are not
    where its layout's first line had them is read on its own: what a line gives never depends on
    the lines read before it (in this file or an earlier one).
    """
    parts = text.replace("|", ":").split(":")
    keys = tuple(parts[0::2])
    vals = parts[1::2]
    layouts = _LAYOUTS if len(parts) & 1 else _CUT_LAYOUTS
    layout = layouts.get(keys)
    if layout is None:
        layout = layouts[keys] = _layout(keys, vals)
    dense, names, idx, skipped = layout
    try:
        if dense:
            return names, list(map(float, vals))
        row = [float(vals[i]) for i in idx]
    except ValueError:  # a field that was numeric is not numeric on this line
        row = None
    if row is None or (skipped and _any_number(vals, skipped)):
        _, names, idx, _ = _layout(keys, vals)
        row = [float(vals[i]) for i in idx]
    return names, row


def _any_number(vals: list[str], skipped: list[int]) -> bool:
    for i in skipped:
        try:
            float(vals[i])
        except ValueError:
            continue
        return True
    return False


_MEMORY_NAMES: dict[tuple[str, ...], tuple[str, ...]] = {}


def _memory_names(names: tuple[str, ...]) -> tuple[str, ...]:
    """``allocated`` -> ``memory_allocated_mb``, one shared tuple per layout (records compare it by identity)."""
    out = _MEMORY_NAMES.get(names)
    if out is None:
        out = _MEMORY_NAMES[names] = tuple(f"memory_{k}_mb" for k in names)
    return out


def _peaks(values: FloatArray, starts: list[int]) -> list[list[float]]:
    """Per group of rows (``starts``: where each begins), field by field the first value unless a
    later one is greater: what merging the ranks' lines one by one keeps.

    numpy's maximum is the same where no value is NaN or zero (max(NaN, x) and max(-0.0, 0.0)
    depend on the order there); those groups are merged in Python.
    """
    import numpy as np

    if values.all() and not np.isnan(values).any():
        return cast("list[list[float]]", np.maximum.reduceat(values, starts, axis=0).tolist())
    rows = values.tolist()
    out = []
    for a, b in zip(starts, [*starts[1:], len(rows)], strict=True):
        peak = rows[a]
        for row in rows[a + 1 : b]:
            peak = list(map(max, peak, row))  # max keeps its first argument unless the second is greater
        out.append(peak)
    return out


_MEMORY_MARK = "memory (MB)"


def _memory_table(lines: list[str]) -> tuple[tuple[str, ...], list[int], FloatArray] | None:
    """Memory lines of one layout read together: (memory names, steps, float64 rows), or None.

    Every line must hold one ``(after N iterations) memory (MB)`` and, after the first ``|`` that
    follows it (where the per-line reader starts), the first line's ``key: value | ... | key: value``
    with a number for every value; anything else is left to the line-by-line reader, so this only
    changes how fast the lines are read.
    """
    import numpy as np

    m = len(lines)
    text = "\n".join(lines)
    if text.count(_MEMORY_MARK) != m:  # each line holds one (each holds at least one)
        return None
    found = _MEM.findall(text)  # each match holds a line's one "memory (MB)": at most one a line
    if len(found) != m or max(map(len, found)) > 18:
        return None
    marks = map(add, map(str.find, lines, repeat(_MEMORY_MARK)), repeat(len(_MEMORY_MARK)))
    cuts = list(map(str.find, lines, repeat("|"), marks))  # where the per-line reader reads from
    if -1 in cuts:
        return None
    tails = cast("list[str]", list(map(getitem, lines, map(slice, map(add, cuts, repeat(1)), repeat(None)))))
    parts = tails[0].replace("|", ":").split(":")
    if len(parts) % 2:  # a trailing "|": the line-by-line reader's other layout
        return None
    keys = parts[0::2]
    k = len(keys)
    names, row = _fields(tails[0])
    if len(names) != k or len(row) != k:
        return None
    # "\n|" between lines: a line's last value ends its row. Tokens hold no ":", so keys joined with
    # ":" compare as one string; each line's "\n" in its last value puts each row on its own line.
    try:
        tokens = "\n|".join(tails).encode().replace(b"|", b":").split(b":")
        row_keys = ":".join(keys).encode()
    except UnicodeEncodeError:  # a lone surrogate
        return None
    stride = 2 * k
    if len(tokens) != m * stride or b":".join(tokens[0::2]) != b":".join([row_keys] * m):
        return None
    if b"".join(tokens[stride - 1 : -1 : stride]).count(b"\n") != m - 1:
        return None
    values = tokens[1::2]
    try:
        columns = [column_floats(values[c::k]) for c in range(k)]
    except ValueError:
        return None
    return _memory_names(names), list(map(int, found)), np.stack(columns, axis=1)


def _pairs(text: str) -> dict[str, float]:
    names, row = _fields(text)
    return dict(zip(names, row, strict=True))


def _layout(keys: tuple[str, ...], vals: list[str]) -> _Layout:
    """The layout of one line: the fields with a name and a number, and the named ones without."""
    idx: list[int] = []
    names: list[str] = []
    skipped: list[int] = []
    for i, (key, raw) in enumerate(zip(keys, vals, strict=False)):
        if not key.strip():
            continue
        try:
            float(raw)
        except ValueError:
            skipped.append(i)
            continue
        idx.append(i)
        names.append(canonical_name(key))
    dense = idx == list(range(len(vals)))
    return dense, tuple(names), idx, skipped


class MegatronText(LogFormat):
    name = "megatron"
    label = "Megatron-LM / MindSpeed text log"

    def sniff(self, sample: Sample) -> float:
        hits = sum(1 for line in sample.lines if "iteration" in line and _ITER.search(line))
        return 0.95 if hits else 0.0

    def parse(self, source: LogSource) -> Iterator[Record]:
        """Iteration lines go out as tables (or per-layout bulk records); other lines singly.

        A block's lines are sorted in one C-level pass (where each has its first "iteration "):
        lines that are not iteration lines are few, and validation lines (which carry their own
        record) cut the block into segments whose iteration rows are read as one table, the ranks'
        memory lines travelling inside it.
        """
        state = _State()
        for start, block, text in source.blocks():
            # Where each line's first "iteration " is (-1: none): the table reader cuts the lines there.
            ats = list(map(str.find, block, repeat("iteration ")))
            odd = list(compress(range(len(block)), map(lt, ats, repeat(0))))
            if "v" in text and "validation loss" in text:  # a "v" is rare in these logs and found at C speed
                odd = sorted({*odd, *(i for i, line in enumerate(block) if "validation loss" in line and ats[i] >= 0)})
            lo = 0
            between: list[int] = []  # memory and other lines of the current segment
            for i in odd:
                line = block[i]
                if ats[i] >= 0:  # a validation line: it ends the segment and is read alone
                    yield from state.segment(block, ats, start, lo, i, between)
                    yield from state.other(start + i, line)
                    lo, between = i + 1, []
                else:
                    between.append(i)
            yield from state.segment(block, ats, start, lo, len(block), between)
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

    def segment(self, block: list[str], ats: list[int], start: int, lo: int, hi: int, between: list[int]) -> Iterator[Record]:
        """``block[lo:hi]``: iteration lines with memory or other lines (``between``, block indices) among them.

        ``ats``: where each line of the block has its first "iteration " (-1: none).

        Why one table for the whole segment: the ranks print their memory lines every few steps,
        and a table per stretch between them costs a dozen numpy calls a stretch, more than the rows
        themselves. The memory lines merge as they would line by line and ride inside the table at
        their place; a held memory record is sent exactly where the line-by-line reader sends it.
        Whatever the table cannot hold (another layout, a damaged line) is read stretch by stretch.
        """
        if hi <= lo:
            return
        k = 0
        first = lo
        while k < len(between) and between[k] == first:  # lines before the first iteration line
            first += 1
            k += 1
        if first >= hi:
            for i in between:
                if "memory (MB)" in block[i]:
                    yield from self.other(start + i, block[i])
            return
        inner = between[k:]
        if hi - first - len(inner) < MIN_ROWS:
            yield from self.stretches(block, start, lo, hi)
            return
        if inner:
            rows: list[str] = []
            row_ats: list[int] = []
            prev = first
            for i in inner:
                rows += block[prev:i]
                row_ats += ats[prev:i]
                prev = i + 1
            rows += block[prev:hi]
            row_ats += ats[prev:hi]
        else:
            rows = block[first:hi]
            row_ats = ats[first:hi]
        cols = read_columns(rows, start + first, row_ats)
        if cols is None or not cols.uniform_total:
            yield from self.stretches(block, start, lo, hi)
            return
        for i in between[:k]:
            if "memory (MB)" in block[i]:
                yield from self.other(start + i, block[i])
        if self.memory is not None:  # memory lines come after their step: send them before later steps
            yield self.memory
            self.memory = None
        yield from self.flush()
        n = len(rows)
        events = self.memory_events(block, start, first, inner, n)
        if inner:
            import numpy as np

            numbers = np.arange(first, hi, dtype=np.int64)
            numbers = np.delete(numbers, np.array(inner, dtype=np.int64) - first) + start
            cols = replace(cols, last_line=int(numbers[-1]), lines=numbers, memory=tuple(events))
        self.last_step = int(cols.steps[-1])
        yield Record(start + first, _NO_VALUES, columns=cols)

    def memory_events(self, block: list[str], start: int, first: int, inner: list[int], n: int) -> list[tuple[int, Record]]:
        """The memory lines among a table's rows as (rows before it, merged record), in file order.

        The ranks' lines of one step merge into one record (the peak of each field), as the
        line-by-line reader merges them; a record after the last row stays held, as it does there.
        """
        mem = [(i, i - first - j) for j, i in enumerate(inner) if "memory (MB)" in block[i]]
        events: list[tuple[int, Record]] = []
        table = _memory_table([block[i] for i, _ in mem]) if len(mem) >= MIN_ROWS else None
        if table is not None:
            mem_names, steps, values = table
            rows_before = [at for _, at in mem]
            # the lines of one step with no row between them merge into one record, as line by line
            starts = [0, *(g for g in range(1, len(mem)) if rows_before[g] != rows_before[g - 1] or steps[g] != steps[g - 1])]
            for g, (a, b, peak) in enumerate(zip(starts, [*starts[1:], len(mem)], _peaks(values, starts), strict=True)):
                group = Record(line=start + mem[a][0], values=_NO_VALUES, step=steps[a], names=mem_names, row=peak, merged=b - a)
                if g < len(starts) - 1 or rows_before[a] < n:
                    events.append((rows_before[a], group))
                else:
                    self.memory = group  # after the last row: held, as the line-by-line reader holds it
            return events
        held_at = 0  # rows before the held memory record
        for i, at in mem:
            line = block[i]
            mm = _MEM.search(line)
            if mm is None:
                continue
            names, row = _fields(line[line.find("|", mm.end()) + 1 :])
            step = int(mm.group(1))
            mem_names = _memory_names(names)
            held = self.memory
            if held is not None:
                if held_at == at and held.step == step and held.names is mem_names:
                    _merge_peak(held, row)
                    continue
                events.append((held_at, held))
            self.memory = Record(line=start + i, values=_NO_VALUES, step=step, names=mem_names, row=list(row))
            held_at = at
        if self.memory is not None and held_at < n:
            events.append((held_at, self.memory))
            self.memory = None
        return events

    def stretches(self, block: list[str], start: int, lo: int, hi: int) -> Iterator[Record]:
        """``block[lo:hi]`` stretch by stretch: each run of iteration lines, then the line that ends it."""
        run_from: int | None = None
        for i in range(lo, hi):
            line = block[i]
            if "iteration " in line:
                if run_from is None:
                    run_from = i
                continue
            if run_from is not None:  # any other line ends a run of iteration lines
                yield from self.iterations(block[run_from:i], start + run_from)
                run_from = None
            if "memory (MB)" in line:
                yield from self.other(start + i, line)
        if run_from is not None:
            yield from self.iterations(block[run_from:hi], start + run_from)

    def iterations(self, lines: list[str], first_line: int) -> Iterator[Record]:
        """Consecutive iteration lines: as one table when they share a layout, else line by line."""
        if self.memory is not None:  # memory lines come after their step: send them before later steps
            yield self.memory
            self.memory = None
        cols = read_columns(lines, first_line)
        if cols is not None and cols.uniform_total:  # else a run cut inside it would get the last row's total
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
                    _merge_peak(held, row)
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


def _merge_peak(held: Record, row: list[float]) -> None:
    """Fold another rank's memory line for the same step into the held one: the peak is the run's."""
    merged = held.row
    assert merged is not None
    for i, value in enumerate(row):
        if value > merged[i]:
            merged[i] = value
    held.merged += 1
