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
        """Iteration lines go out in bulk records (one per layout run of a chunk); others singly."""
        last_step: int | None = None
        match_iter = _ITER_AT.match
        batch: list[tuple[int, int, int | None, list[float]]] = []
        batch_names: tuple[str, ...] | None = None
        for start, block in source.chunks():
            for lineno, line in enumerate(block, start):
                pos = line.find("iteration ")
                if pos >= 0:
                    m = match_iter(line, pos)
                    if m is not None:
                        step_text, total_text = m.groups()
                        last_step = step = int(step_text)
                        names, row = _fields(line[m.end() :])
                        if names is not batch_names and batch:
                            yield Record(batch[0][0], _NO_VALUES, names=batch_names, batch=batch)
                            batch = []
                        batch_names = names
                        batch.append((lineno, step, int(total_text), row))
                        continue
                if "memory (MB)" in line:
                    mm = _MEM.search(line)
                    if mm is not None:
                        if batch:
                            yield Record(batch[0][0], _NO_VALUES, names=batch_names, batch=batch)
                            batch = []
                        raw = _pairs(line[line.find("|", mm.end()) + 1 :])
                        mem = {f"memory_{k}_mb": v for k, v in raw.items()}
                        yield Record(line=lineno, values=mem, step=int(mm.group(1)))
                    continue
                if "validation loss" in line:
                    vm = _VALIDATION.search(line)
                    if vm is not None:
                        pairs = _pairs(line[line.find("|", vm.end()) + 1 :])
                        values = {}
                        for key, value in pairs.items():
                            name = _EVAL_NAMES.get(key, key)
                            values[name if name.startswith("eval_") else "eval_" + name] = value
                        eval_step = int(vm.group(1)) if vm.group(1) else last_step
                        if values:
                            if batch:
                                yield Record(batch[0][0], _NO_VALUES, names=batch_names, batch=batch)
                                batch = []
                            yield Record(line=lineno, values=values, step=eval_step, kind="eval")
            if batch:
                yield Record(batch[0][0], _NO_VALUES, names=batch_names, batch=batch)
                batch = []
