"""Detect a log's format, stream its records into per-run series, and tell warm-up and device.

Series are stored as compact arrays (8 bytes a value) rather than objects, so a million-line log
stays small; the pydantic view is built only by the tool.
"""

from __future__ import annotations

import math
import statistics
from array import array
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from pathlib import Path

from acc_agent.errors import AccAgentError
from acc_agent.io.arrays import Int64Array
from acc_agent.io.logs.base import MAX_STEP, LogFormat, Record
from acc_agent.io.logs.device import Marker, device_for_range, from_filename, scan_line
from acc_agent.io.logs.formats import ALL_FORMATS, BY_NAME
from acc_agent.io.logs.formats.megatron_fast import Columns
from acc_agent.io.logs.formats.tensorboard_events import event_files
from acc_agent.io.logs.source import LogSource, Sample

DETECT_WINDOW_LINES = 2000
DETECT_MAX_LINES = 50_000
MARKER_HEAD_LINES = 5000
MARKER_RUN_MARGIN = 200
WARMUP_FACTOR = 2.0


@dataclass
class Series:
    """One metric of one run: parallel step/value arrays in file order, one value per step."""

    name: str
    kind: str
    steps: array[int] = field(default_factory=lambda: array("q"))
    values: array[float] = field(default_factory=lambda: array("d"))

    def __len__(self) -> int:
        return len(self.steps)


@dataclass
class RunData:
    """One training run found in the file (a step counter that restarts starts a new run)."""

    index: int
    step_unit: str
    series: dict[str, Series] = field(default_factory=dict)
    scalars: dict[str, float] = field(default_factory=dict)
    record_kinds: Counter[str] = field(default_factory=Counter)
    warmup_steps: list[int] = field(default_factory=list)
    start_line: int = 0
    end_line: int = 0
    declared_total: int | None = None
    max_epoch: float | None = None
    name: str | None = None
    device: str | None = None
    device_evidence: str = ""
    last_train_step: int | None = None
    ordinal: int = 0
    step_numbering: str = ""  # how the parser numbered the points, when the log prints no step

    @property
    def train_steps(self) -> list[int]:
        s = self.series.get("loss")
        return list(s.steps) if s is not None else []


@dataclass
class ParsedLog:
    path: Path
    format: str
    format_label: str
    detection: str
    runs: list[RunData]
    lines_read: int
    warnings: list[str]
    device: str | None = None
    device_evidence: str = ""

    def run(self, index: int | None) -> RunData:
        """The run a judge should use: ``index`` if given, else the one with the most loss points."""
        if not self.runs:
            raise AccAgentError("no_runs", f"{self.path} holds no run with metrics", path=str(self.path),
                                hint="Pass the log of a run that printed its loss (check the format with parse_training_log).")
        if index is None:
            return max(self.runs, key=lambda r: (len(r.series.get("loss", ())), sum(len(s) for s in r.series.values())))
        if not 0 <= index < len(self.runs):
            raise AccAgentError(
                "invalid_run", f"{self.path} has {len(self.runs)} run(s); run {index} does not exist",
                hint=f"Use a run index from 0 to {len(self.runs) - 1}.", path=str(self.path),
            )
        return self.runs[index]

    @property
    def has_metrics(self) -> bool:
        return any(r.series or r.scalars for r in self.runs)


def detect(source: LogSource) -> tuple[LogFormat | None, str]:
    """Best-scoring format over the head of the file, looking further down if the head is prose."""
    window: list[str] = []
    seen = 0
    first_char = ""
    for _, line in source.lines():
        if not first_char and line.strip():
            first_char = line.strip()[0]
        window.append(line)
        seen += 1
        if len(window) >= DETECT_WINDOW_LINES:
            fmt, why = _score(Sample(source.path, window, first_char), seen)
            if fmt is not None and not (fmt.name == "result_table" and seen < DETECT_MAX_LINES):
                return fmt, why
            if seen >= DETECT_MAX_LINES:
                return fmt, why
            window = window[-50:]
    if not window:
        return None, "no text lines"
    return _score(Sample(source.path, window, first_char), seen)


def _score(sample: Sample, seen: int) -> tuple[LogFormat | None, str]:
    scored = sorted(((f.sniff(sample), i, f) for i, f in enumerate(ALL_FORMATS)), key=lambda t: (-t[0], t[1]))
    best_score, _, best = scored[0]
    if best_score <= 0:
        return None, f"no known format matched in the first {seen} lines"
    runner = [f"{f.name}={s:.2f}" for s, _, f in scored[1:3] if s > 0]
    return best, f"{best.name} (confidence {best_score:.2f} on the first {seen} lines" + (f"; also {', '.join(runner)})" if runner else ")")


def parse_log(path: str | Path, fmt: str | None = None) -> ParsedLog:
    """Parse one log file; ``fmt`` forces a format by name instead of detecting it.

    TensorBoard event files (or a run directory holding them) are binary: they are recognised by
    name and read by their own reader before the text guards would refuse them.
    """
    if fmt and fmt not in BY_NAME:
        raise AccAgentError("unknown_format", f"no log format named {fmt!r}", hint="Known formats: " + ", ".join(BY_NAME))
    parser: LogFormat | None
    if (fmt and BY_NAME[fmt].binary) or (not fmt and event_files(Path(path))):
        source = LogSource.open_binary(path)
        parser = BY_NAME["tensorboard"]
        why = "tensorboard (forced)" if fmt else f"tensorboard (event file name: {len(event_files(source.path))} file(s))"
    else:
        source = LogSource.open(path)
        if fmt:
            parser, why = BY_NAME[fmt], f"{fmt} (forced)"
        else:
            parser, why = detect(source)
    warnings: list[str] = []
    if parser is None:
        _add_source_warnings(source, warnings)
        return ParsedLog(source.path, "unknown", "unrecognised", why, [], source.lines_read, warnings)
    runs = aggregate(parser.parse(source), parser.step_unit)
    _add_source_warnings(source, warnings)
    parsed = ParsedLog(source.path, parser.name, parser.label, why, runs, source.lines_read, warnings)
    if not parser.binary:
        _assign_devices(source, parsed)
    return parsed


def _add_source_warnings(source: LogSource, warnings: list[str]) -> None:
    if source.long_lines_skipped:
        warnings.append(f"{source.long_lines_skipped} line(s) longer than 1 MiB skipped (not log lines)")
    if source.invalid_utf8_lines:
        warnings.append(f"{source.invalid_utf8_lines} line(s) held invalid UTF-8 bytes (replaced)")
    warnings.extend(source.warnings)


class _Table:
    """Records that print the same fields: one step column plus one column per field.

    Appending a row costs one append per value, with no per-metric lookups; tables become
    per-metric :class:`Series` when the run ends.
    """

    __slots__ = ("appends", "cols", "has_loss", "names", "seq", "steps")

    def __init__(self, names: tuple[str, ...]) -> None:
        self.names = names
        self.steps: array[int] = array("q")
        self.seq: array[int] = array("q")
        self.cols: list[array[float]] = [array("d") for _ in names]
        self.appends = [c.append for c in self.cols]
        self.has_loss = "loss" in names


def _series_from_tables(tables: list[_Table]) -> dict[str, Series]:
    """Per-metric series in file order; a metric in several tables is merged by record order."""
    owners: dict[str, list[tuple[_Table, int]]] = {}
    for tab in tables:
        for i, name in enumerate(tab.names):
            owners.setdefault(name, []).append((tab, i))
    out: dict[str, Series] = {}
    for name, parts in owners.items():
        kind = "eval" if name.startswith("eval_") else "train"
        if len(parts) == 1:
            tab, i = parts[0]
            out[name] = Series(name, kind, tab.steps, tab.cols[i])  # steps shared by the table's metrics (read-only)
            continue
        import numpy as np  # only when a metric is spread over several layouts

        seq = np.concatenate([np.frombuffer(t.seq, dtype=np.int64) for t, _ in parts])
        steps = np.concatenate([np.frombuffer(t.steps, dtype=np.int64) for t, _ in parts])
        vals = np.concatenate([np.frombuffer(t.cols[i], dtype=np.float64) for t, i in parts])
        order = np.argsort(seq, kind="stable")
        steps, vals = steps[order], vals[order]
        merged = Series(name, kind)
        for st, v in zip(steps.tolist(), vals.tolist(), strict=True):
            if merged.steps and merged.steps[-1] == st:
                if not name.startswith("memory_") or v > merged.values[-1]:
                    merged.values[-1] = v
            else:
                merged.steps.append(st)
                merged.values.append(v)
        out[name] = merged
    return out


def aggregate(records: Iterable[Record], step_unit: str) -> list[RunData]:
    """Group records into runs and series; a train step that goes backwards starts a new run.

    This is the per-record hot loop of a million-line log, so run state lives in local variables
    and rows go into per-layout column tables (see :class:`_Table`).
    """
    runs: list[RunData] = []
    run: RunData | None = None
    tables: dict[tuple[str, ...], _Table] = {}
    last_train: int | None = None
    last_loss_step: int | None = None
    kinds: dict[str, int] = {}
    start_line = end_line = seqno = 0

    def close() -> None:
        if run is not None:
            run.last_train_step = last_train
            run.record_kinds.update(kinds)
            run.start_line, run.end_line = start_line, end_line
            run.series = _series_from_tables(list(tables.values()))

    source = iter(records)
    pending: list[Record] = []  # records split off a table, to handle before the next one (last first)
    while True:
        if pending:
            rec = pending.pop()
        else:
            nxt = next(source, None)
            if nxt is None:
                break
            rec = nxt
        if rec.columns is not None:
            cols = rec.columns
            names = cols.names
            has_loss = "loss" in names
            first = int(cols.steps[0])
            restart0 = run is None or (last_train is not None and (run.step_unit != step_unit or first < last_train or (
                first == last_train and last_loss_step == first and has_loss)))
            existing = None if restart0 else tables.get(names)
            cuts = _column_cuts(cols.steps, has_loss)
            between = cols.memory
            if between and (cuts is None or (existing is not None and existing.steps and existing.steps[-1] == first)
                            or not _memory_at_its_step(cols)):
                pending.extend(reversed(_split_at_memory(cols)))  # the stretches and records one by one
                continue
            if cuts is None or (existing is not None and existing.steps and existing.steps[-1] == first):
                rec = _columns_as_batch(cols)  # repeated steps to merge: the row-by-row rules below
            else:
                # Table of train rows (hot path of long Megatron logs): the same rules as the row-by-row
                # bulk path, applied per segment — a step that goes back, or a repeated step with a loss,
                # starts a new run; inside a segment steps only grow, so rows append column-wise.
                # Memory records between rows (at the step of the row before them) are added where they
                # stand, so sequence numbers and run boundaries are those of one record at a time.
                n = int(cols.steps.size)
                bounds = [0, *cuts, n]
                base = seqno + 1
                row_seq = None
                if between:
                    import numpy as np

                    at = np.array([p for p, _ in between], dtype=np.int64)
                    rows = np.arange(n, dtype=np.int64)
                    row_seq = rows + base + np.searchsorted(at, rows, side="right")
                ev = 0
                for a, b in zip(bounds, bounds[1:], strict=False):
                    if a > 0 or restart0:
                        close()
                        run = RunData(index=len(runs), step_unit=step_unit)
                        runs.append(run)
                        tables, last_train, last_loss_step, kinds, start_line, end_line = {}, None, None, {}, 0, 0
                    assert run is not None
                    tab = tables.get(names)
                    if tab is None:
                        tab = tables[names] = _Table(names)
                    seg = cols.steps[a:b]
                    if not start_line:
                        start_line = cols.line_of(a)
                    end_line = cols.line_of(b - 1)
                    if cols.total is not None:
                        run.declared_total = cols.total
                    kinds["train"] = kinds.get("train", 0) + (b - a)
                    last_train = int(seg[-1])
                    if has_loss:
                        last_loss_step = last_train
                    tab.steps.frombytes(seg.tobytes())
                    if row_seq is None:
                        tab.seq.extend(range(seqno + 1, seqno + 1 + b - a))
                        seqno += b - a
                    else:
                        tab.seq.frombytes(row_seq[a:b].tobytes())
                    for col, values in zip(tab.cols, cols.values, strict=True):
                        col.frombytes(values[a:b].tobytes())
                    while ev < len(between) and between[ev][0] <= b:  # memory after row p - 1, p in (a, b]
                        p, mem = between[ev]
                        mem_names = mem.names
                        mem_row = mem.row
                        assert mem_names is not None and mem_row is not None and mem.step is not None
                        kinds["train"] += mem.merged
                        if mem.line > end_line:
                            end_line = mem.line
                        mtab = tables.get(mem_names)
                        if mtab is None:
                            mtab = tables[mem_names] = _Table(mem_names)
                        if mtab.has_loss:
                            last_loss_step = mem.step
                        msteps = mtab.steps
                        if msteps and msteps[-1] == mem.step:
                            for col, key, value in zip(mtab.cols, mem_names, mem_row, strict=True):
                                if not key.startswith("memory_") or value > col[-1]:
                                    col[-1] = value
                        else:
                            msteps.append(mem.step)
                            mtab.seq.append(base + p + ev)
                            for append, value in zip(mtab.appends, mem_row, strict=True):
                                append(value)
                        ev += 1
                    restart0 = False
                if row_seq is not None:
                    seqno = base - 1 + n + len(between)
                continue
        bulk = rec.batch
        if bulk is not None and rec.names is not None:
            # Bulk train rows of one layout (hot path for long Megatron logs): the same rules as
            # below — a step that goes back, or a repeated step with a loss, starts a new run.
            names = rec.names
            tab = None
            count = 0
            for line, bstep, total, row in bulk:
                if run is None or (last_train is not None and (run.step_unit != step_unit or bstep < last_train
                                                               or (bstep == last_train and last_loss_step == bstep and "loss" in names))):
                    if count:
                        kinds["train"] = kinds.get("train", 0) + count
                        count = 0
                    close()
                    run = RunData(index=len(runs), step_unit=step_unit)
                    runs.append(run)
                    tables, last_train, last_loss_step, kinds, start_line, end_line = {}, None, None, {}, 0, 0
                    tab = None
                if tab is None:
                    tab = tables.get(names)
                    if tab is None:
                        tab = tables[names] = _Table(names)
                    appends, tsteps, tseq, has_loss = tab.appends, tab.steps, tab.seq, tab.has_loss
                if not start_line:
                    start_line = line
                end_line = line
                if total is not None:
                    run.declared_total = total
                count += 1
                last_train = bstep
                if has_loss:
                    last_loss_step = bstep
                seqno += 1
                if tsteps and tsteps[-1] == bstep:
                    for col, key, value in zip(tab.cols, names, row, strict=True):
                        if not key.startswith("memory_") or value > col[-1]:
                            col[-1] = value
                    continue
                tsteps.append(bstep)
                tseq.append(seqno)
                for append, value in zip(appends, row, strict=True):
                    append(value)
            if count:
                kinds["train"] = kinds.get("train", 0) + count
            continue
        step = rec.step
        kind = rec.kind
        unit = rec.unit or step_unit
        if step is None and rec.epoch is not None and kind != "summary":
            step = int(rec.epoch) if float(rec.epoch).is_integer() else None
            unit = "epoch"
        if step is not None and not -MAX_STEP <= step <= MAX_STEP:
            continue  # a damaged step (or epoch) number, past what the int64 step arrays hold: dropped
        restart = run is None or rec.new_run
        if not restart and kind == "train" and step is not None and last_train is not None:
            assert run is not None
            if unit != run.step_unit or step < last_train:
                restart = True  # counter went back, or epoch-level records then step-level ones
            elif step == last_train and "loss" in (rec.names or rec.values):
                restart = last_loss_step == step
        if restart:
            close()
            run = RunData(index=len(runs), step_unit=unit)
            runs.append(run)
            tables, last_train, last_loss_step, kinds, start_line, end_line = {}, None, None, {}, 0, 0
        assert run is not None
        line = rec.line
        if line:
            if not start_line:
                start_line = line
            if line > end_line:
                end_line = line
        if rec.extras:
            if rec.extras.get("name"):
                run.name = rec.extras["name"]
            if rec.extras.get("step_numbering"):
                run.step_numbering = rec.extras["step_numbering"]
        if rec.total_steps is not None:
            run.declared_total = rec.total_steps
        if rec.epoch is not None:
            run.max_epoch = rec.epoch if run.max_epoch is None else max(run.max_epoch, rec.epoch)
        kinds[kind] = kinds.get(kind, 0) + rec.merged
        if rec.names is not None:
            keys: tuple[str, ...] = rec.names
            values_in: Iterable[float] = rec.row or ()
        else:
            keys = tuple(rec.values)
            values_in = rec.values.values()
        if kind == "summary" or (step is None and kind == "eval"):
            run.scalars.update(rec.as_dict())
            continue
        if step is None:
            run.ordinal += 1
            step = run.ordinal
            run.step_unit = "record"
        elif kind == "train" and run.step_unit != unit:
            run.step_unit = unit
        if kind == "train":
            last_train = step
        if not keys:
            continue
        tab = tables.get(keys)
        if tab is None:
            tab = tables[keys] = _Table(keys)
        if tab.has_loss:
            last_loss_step = step
        tsteps = tab.steps
        seqno += 1
        if tsteps and tsteps[-1] == step:  # same fields again at the same step (one line per rank)
            for col, key, value in zip(tab.cols, keys, values_in, strict=True):
                if not key.startswith("memory_") or value > col[-1]:
                    col[-1] = value
            continue
        tsteps.append(step)
        tab.seq.append(seqno)
        for append, value in zip(tab.appends, values_in, strict=True):
            append(value)
    close()
    for r in runs:
        r.warmup_steps = warmup_steps(r)
        if r.warmup_steps:
            r.record_kinds["warmup"] = len(r.warmup_steps)
            r.record_kinds["train"] -= len(r.warmup_steps)
    return runs


def _column_cuts(steps: Int64Array, has_loss: bool) -> list[int] | None:
    """Rows where a table's step goes back (or repeats, with a loss): each starts a new run.

    None when a step repeats without a loss: those rows merge into the previous one, which the
    row-by-row rules do.
    """
    import numpy as np

    d = np.diff(steps)
    if not has_loss and bool((d == 0).any()):
        return None
    return [int(i) + 1 for i in np.nonzero((d < 0) | (d == 0))[0]]


def _columns_as_batch(cols: Columns) -> Record:
    rows = [list(r) for r in zip(*(v.tolist() for v in cols.values), strict=True)]
    numbers = range(cols.first_line, cols.first_line + len(rows)) if cols.lines is None else cols.lines.tolist()
    batch = [(line, int(st), cols.total, row) for line, st, row in zip(numbers, cols.steps.tolist(), rows, strict=True)]
    return Record(cols.first_line, {}, names=cols.names, batch=batch)


def _memory_at_its_step(cols: Columns) -> bool:
    """Whether each memory record in a table is at the step of the row before it, as Megatron prints them.

    Then it changes neither the run nor the last step, and the table's rows can go in column-wise.
    """
    return all(mem.step == cols.steps[p - 1] for p, mem in cols.memory)


def _split_at_memory(cols: Columns) -> list[Record]:
    """A table with memory records inside, as the records read one at a time would come: stretch, memory, stretch."""
    import numpy as np

    out: list[Record] = []
    lo = 0
    # a table only holds memory records once its rows' line numbers are written down
    numbers = cols.lines if cols.lines is not None else np.arange(
        cols.first_line, cols.first_line + cols.steps.size, dtype=np.int64)
    for p, mem in (*cols.memory, (int(cols.steps.size), None)):
        if p > lo:
            lines = numbers[lo:p]
            out.append(Record(int(lines[0]), {}, columns=replace(
                cols, first_line=int(lines[0]), last_line=int(lines[-1]), steps=cols.steps[lo:p],
                values=tuple(v[lo:p] for v in cols.values), lines=lines, memory=())))
            lo = p
        if mem is not None:
            out.append(mem)
    return out


def warmup_steps(run: RunData) -> list[int]:
    """Leading steps whose step time is over twice the steady median (compilation, cache warm-up)."""
    st = run.series.get("step_time_ms")
    if st is None or len(st) < 3:
        return []
    # the steady state right after start-up is the reference (first 1000 steps: cheap on huge logs)
    steady = [v for v in st.values[1:1001] if math.isfinite(v)]
    if not steady:
        return []
    median = statistics.median(steady)
    out: list[int] = []
    for step, value in zip(st.steps, st.values, strict=False):
        if median > 0 and value > WARMUP_FACTOR * median and len(out) < 3:
            out.append(step)
        else:
            break
    return out


def _assign_devices(source: LogSource, parsed: ParsedLog) -> None:
    windows = [(1, MARKER_HEAD_LINES)] + [(max(1, r.start_line - MARKER_RUN_MARGIN), r.start_line + MARKER_RUN_MARGIN) for r in parsed.runs if r.start_line]
    last_needed = max(end for _, end in windows)
    markers: list[Marker] = []
    for lineno, line in source.lines():
        if lineno > last_needed:
            break
        if any(a <= lineno <= b for a, b in windows) or (lineno > MARKER_HEAD_LINES and len(windows) < 50 and False):
            m = scan_line(lineno, line)
            if m is not None:
                markers.append(m)
    named = from_filename(source.path)
    if named is not None:
        markers.append(named)
    for r in parsed.runs:
        end = r.end_line or r.start_line
        if r.start_line == 0:  # JSON formats: no line numbers, the whole file is the run
            r.device, r.device_evidence = device_for_range(markers, 1, 1 << 40)
        else:
            r.device, r.device_evidence = device_for_range(markers, r.start_line, end)
    if parsed.runs:
        main = parsed.run(None)
        parsed.device, parsed.device_evidence = main.device, main.device_evidence
        devices = {r.device for r in parsed.runs if r.device}
        if len(devices) > 1:
            parsed.device_evidence += f" (runs in this file differ: {', '.join(sorted(devices))})"
