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
_MEM = re.compile(r"\(after (\d+) iterations\) memory \(MB\)")
_EVAL_NAMES = {"lm_loss_value": "eval_loss", "lm_loss_ppl": "eval_ppl", "loss": "eval_loss"}
_VALIDATION = re.compile(r"validation loss at (?:iteration (\d+)|the end of training)", re.I)


def _pairs(text: str) -> dict[str, float]:
    out: dict[str, float] = {}
    for part in text.split("|"):
        key, sep, raw = part.rpartition(":")
        if not sep:
            continue
        try:
            value = float(raw)
        except ValueError:
            continue
        out[canonical_name(key)] = value
    return out


class MegatronText(LogFormat):
    name = "megatron"
    label = "Megatron-LM / MindSpeed text log"

    def sniff(self, sample: Sample) -> float:
        hits = sum(1 for line in sample.lines if "iteration" in line and _ITER.search(line))
        return 0.95 if hits else 0.0

    def parse(self, source: LogSource) -> Iterator[Record]:
        last_step: int | None = None
        search_iter = _ITER.search
        for lineno, line in source.lines():
            if "iteration" in line:
                m = search_iter(line)
                if m is not None:
                    step = int(m.group(1))
                    values = _pairs(line[m.end() :])
                    last_step = step
                    yield Record(line=lineno, values=values, step=step, total_steps=int(m.group(2)))
                    continue
            if "memory (MB)" in line:
                mm = _MEM.search(line)
                if mm is not None:
                    raw = _pairs(line[mm.end() :])
                    mem = {f"memory_{k}_mb": v for k, v in raw.items()}
                    yield Record(line=lineno, values=mem, step=int(mm.group(1)))
                continue
            if "validation loss" in line:
                vm = _VALIDATION.search(line)
                if vm is not None:
                    pairs = _pairs(line[vm.end() :])
                    values = {}
                    for key, value in pairs.items():
                        name = _EVAL_NAMES.get(key, key)
                        values[name if name.startswith("eval_") else "eval_" + name] = value
                    eval_step = int(vm.group(1)) if vm.group(1) else last_step
                    if values:
                        yield Record(line=lineno, values=values, step=eval_step, kind="eval")
