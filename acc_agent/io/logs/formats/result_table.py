"""Markdown result tables in model-zoo READMEs: ``| NAME | Acc@1 | FPS | Epochs | AMP_Type |``.

There are no steps here, only final figures per configuration row (``1p-NPU``, ``8p-竞品A``...). Each
row becomes its own run holding one summary record, so a baseline can be quoted from it with its
line number. ``-`` cells are missing values, not zeros.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from acc_agent.io.logs.base import LogFormat, Record, canonical_name, to_float
from acc_agent.io.logs.source import LogSource, Sample

_METRIC_HEAD = re.compile(r"acc|top-?1|top-?5|fps|throughput|loss|map|bleu|ppl|perplexity|latency", re.I)
_RENAME = {"acc@1": "eval_acc1", "acc@5": "eval_acc5", "top1": "eval_acc1", "top5": "eval_acc5", "fps": "throughput", "epochs": "epochs"}


def _cells(line: str) -> list[str]:
    return [c.strip() for c in line.strip().strip("|").split("|")]


class ResultTable(LogFormat):
    name = "result_table"
    label = "Markdown result table (model-zoo README)"
    step_unit = "none"

    def sniff(self, sample: Sample) -> float:
        for line in sample.lines:
            s = line.strip()
            if s.startswith("|") and s.count("|") >= 3 and _METRIC_HEAD.search(s):
                cells = _cells(s)
                if sum(1 for c in cells if _METRIC_HEAD.fullmatch(c.split("@")[0].split()[0] if c else "") or _METRIC_HEAD.search(c)) >= 1:
                    return 0.5
        return 0.0

    def parse(self, source: LogSource) -> Iterator[Record]:
        header: list[str] | None = None
        for lineno, line in source.lines():
            s = line.strip()
            if not s.startswith("|"):
                header = None
                continue
            cells = _cells(s)
            if header is None:
                if len(cells) >= 3 and any(_METRIC_HEAD.search(c) for c in cells[1:]):
                    header = cells
                continue
            if all(set(c) <= set(":- ") for c in cells):
                continue
            values: dict[str, float] = {}
            for name, cell in zip(header[1:], cells[1:], strict=False):
                number = to_float(cell)
                if number is None or not _METRIC_HEAD.search(name) and name.lower() != "epochs":
                    continue
                key = name.lower().replace(" ", "")
                values[_RENAME.get(key, canonical_name(name))] = number
            if values:
                yield Record(line=lineno, values=values, kind="summary", new_run=True, extras={"name": cells[0]})
