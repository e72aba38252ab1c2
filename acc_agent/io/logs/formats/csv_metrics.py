"""CSV metrics files: PyTorch Lightning ``CSVLogger`` ``metrics.csv``, timm ``summary.csv``, generic.

Lightning writes sparse rows (train rows, validation rows, a test row after training, all with
blank cells for the other columns); each row becomes the records its filled cells describe.
A row with only ``test_*`` cells is the final test result: a summary, not a point of the
validation curve.
"""

from __future__ import annotations

import csv
from collections.abc import Iterator

from acc_agent.io.logs.base import LogFormat, Record, canonical_name, step_number
from acc_agent.io.logs.formats.jsonl import STEP_KEYS, split_record
from acc_agent.io.logs.source import MAX_LINE_CHARS, LogSource, Sample

# LogSource already caps a line near 2 * MAX_LINE_CHARS, so csv's own 128 KiB field limit guards
# nothing here and only turns one long cell (a JSON note, a stack trace) into a traceback.
csv.field_size_limit(max(csv.field_size_limit(), 4 * MAX_LINE_CHARS))


def _header(sample: Sample) -> list[str]:
    for line in sample.lines:
        if line.strip():
            return [c.strip() for c in next(csv.reader([line]))]
    return []


def _numeric_rows(sample: Sample) -> int:
    count = 0
    for row in csv.reader(sample.lines[1:50]):
        cells = [c for c in row if c.strip()]
        if cells and all(_isnum(c) for c in cells):
            count += 1
    return count


def _isnum(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


class CsvMetrics(LogFormat):
    name = "csv"
    label = "CSV metrics file (e.g. timm summary.csv)"

    def sniff(self, sample: Sample) -> float:
        head = _header(sample)
        if len(head) < 2 or not any(h.lower() in STEP_KEYS + ("epoch",) for h in head):
            return 0.0
        return 0.8 if _numeric_rows(sample) >= 1 else 0.0

    def parse(self, source: LogSource) -> Iterator[Record]:
        header: list[str] | None = None
        for lineno, line in source.lines():
            if not line.strip():
                continue
            row = next(csv.reader([line]))
            if header is None:
                header = [c.strip() for c in row]
                continue
            cells = {k: v for k, v in zip(header, row, strict=False) if v.strip()}
            test_only = cells and all(k.lower().startswith("test_") or k.lower() in STEP_KEYS + ("epoch",) for k in cells)
            if test_only and any(k.lower().startswith("test_") for k in cells) and self.name == "lightning_csv":
                values = {"test_" + canonical_name(k[5:]): float(v) for k, v in cells.items() if k.lower().startswith("test_") and _isnum(v)}
                step = cells.get("step")
                yield Record(line=lineno, values=values, kind="summary", step=step_number(float(step)) if step and _isnum(step) else None)
                continue
            yield from split_record(dict(cells), lineno)


class LightningCsv(CsvMetrics):
    name = "lightning_csv"
    label = "PyTorch Lightning CSVLogger metrics.csv"

    def sniff(self, sample: Sample) -> float:
        head = [h.lower() for h in _header(sample)]
        if "step" in head and "epoch" in head and _numeric_rows(sample) >= 1:
            sparse = any(",," in line or line.endswith(",") for line in sample.lines[1:50])
            return 0.88 if sparse else 0.82
        return 0.0
