"""JSON lines: one metrics object per line (DeiT/timm ``log.txt``, custom loggers, W&B exports).

A line holding ``train_*`` and ``test_*``/``val_*`` keys (DeiT writes one per epoch) becomes a train
record and an eval record at the same step. Without a step key, the epoch is the step.
"""

from __future__ import annotations

import json
from collections.abc import Iterator

from acc_agent.io.logs.base import LogFormat, Record, canonical_name, numeric_fields, step_number
from acc_agent.io.logs.source import LogSource, Sample

STEP_KEYS = ("step", "global_step", "iteration", "iter", "it", "trainer/global_step")
_META = {"n_parameters", "num_parameters", "n_params", "timestamp", "time_stamp", "rank", "_step", "_runtime", "_timestamp"}
_EVAL_PREFIXES = ("eval_", "val_", "valid_", "validation_", "test_")


def split_record(obj: dict[str, object], line: int) -> Iterator[Record]:
    """Records from one flat metrics dict (shared by the CSV parsers)."""
    numbers = numeric_fields(obj, skip=_META)
    step_val = next((numbers.pop(k) for k in STEP_KEYS if k in numbers), None)
    for k in STEP_KEYS:
        numbers.pop(k, None)
    epoch = numbers.pop("epoch", None)
    step = step_number(step_val)
    train = {canonical_name(k): v for k, v in numbers.items() if not k.lower().startswith(_EVAL_PREFIXES)}
    evals = {canonical_name(k): v for k, v in numbers.items() if k.lower().startswith(_EVAL_PREFIXES)}
    if train:
        yield Record(line=line, values=train, step=step, epoch=epoch)
    if evals:
        yield Record(line=line, values=evals, kind="eval", step=step, epoch=epoch)


class JsonLines(LogFormat):
    name = "jsonl"
    label = "JSON lines metrics log (e.g. DeiT/timm log.txt)"

    def sniff(self, sample: Sample) -> float:
        good = bad = 0
        for line in sample.lines:
            text = line.strip()
            if not text:
                continue
            if text.startswith("{") and text.endswith("}"):
                try:
                    obj = json.loads(text)
                except (ValueError, RecursionError):  # RecursionError: a line nested too deeply
                    bad += 1
                    continue
                if isinstance(obj, dict) and any(isinstance(v, (int, float)) for v in obj.values()):
                    good += 1
            else:
                bad += 1
        if good >= 2 and good >= bad:
            return 0.85
        return 0.4 if good == 1 and bad == 0 else 0.0

    def parse(self, source: LogSource) -> Iterator[Record]:
        for lineno, line in source.lines():
            text = line.strip()
            if not text.startswith("{"):
                continue
            try:
                obj = json.loads(text)
            except (ValueError, RecursionError):  # RecursionError: a line nested too deeply
                continue
            if isinstance(obj, dict):
                yield from split_record(obj, lineno)
