"""timm ``train.py`` console output.

``Train: 3 [ 200/1251 ( 16%)]  Loss: 6.913 (6.91)  Time: 0.512s,  500.0/s  (0.530s, 483.1/s)  LR: 1.000e-04
Data: 0.012 (0.020)`` and ``Test: [  48/48]  Time: ... Loss:  0.7354 (0.8012)  Acc@1: 85.93 (80.1)``.
Train lines give the current value; Test lines give running averages, so the last Test line of an
evaluation (kept because later values at a step replace earlier ones) is the epoch's result.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from acc_agent.io.logs.base import LogFormat, Record
from acc_agent.io.logs.source import LogSource, Sample

_NUM = r"(-?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?|nan|inf)"
_TRAIN = re.compile(r"\bTrain: (\d+) \[\s*(\d+)/(\d+)")
_TEST = re.compile(r"\bTest(?: \(EMA\))?: \[\s*(\d+)/(\d+)\]")
_FIELDS = {
    "loss": re.compile(r"\bLoss:\s*" + _NUM),
    "lr": re.compile(r"\bLR:\s*" + _NUM),
    "step_time_s": re.compile(r"\bTime:\s*" + _NUM + r"s?,?"),
    "throughput": re.compile(r"\bTime:\s*[\d.]+s?,\s*" + _NUM + r"/s"),
    "data_time_s": re.compile(r"\bData:\s*" + _NUM),
}
_AVG = {
    "eval_loss": re.compile(r"\bLoss:\s*[\d.]+\s*\(\s*" + _NUM + r"\)"),
    "eval_acc1": re.compile(r"\bAcc@1:\s*[\d.]+\s*\(\s*" + _NUM + r"\)"),
    "eval_acc5": re.compile(r"\bAcc@5:\s*[\d.]+\s*\(\s*" + _NUM + r"\)"),
}


class TimmText(LogFormat):
    name = "timm_text"
    label = "timm train.py console log"

    def sniff(self, sample: Sample) -> float:
        text = sample.text
        if "Train: " not in text or "Loss:" not in text:
            return 0.0  # no line can hold both: one search of the head instead of a regex a line
        return 0.9 if any(_TRAIN.search(line) and "Loss:" in line for line in sample.lines) else 0.0

    def parse(self, source: LogSource) -> Iterator[Record]:
        step = 0
        epoch = 0
        for lineno, line in source.lines():
            m = _TRAIN.search(line)
            if m is not None:
                epoch, i, n = int(m.group(1)), int(m.group(2)), int(m.group(3))
                step = epoch * n + i
                values: dict[str, float] = {}
                for name, rx in _FIELDS.items():
                    f = rx.search(line)
                    if f:
                        if name.endswith("_s"):
                            values[name[:-2] + "_ms"] = float(f.group(1)) * 1000.0
                        else:
                            values[name] = float(f.group(1))
                yield Record(line=lineno, values=values, step=step, epoch=float(epoch))
                continue
            t = _TEST.search(line)
            if t is not None:
                evals = {name: float(f.group(1)) for name, rx in _AVG.items() if (f := rx.search(line))}
                if evals:
                    yield Record(line=lineno, values=evals, kind="eval", step=step, epoch=float(epoch))
