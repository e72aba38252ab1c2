"""OpenMMLab mmengine text logs (mmdet 3.x, mmpretrain, mmseg 1.x...).

``... - mmengine - INFO - Epoch(train)  [1][  50/1221]  base_lr: 2.0e-04 lr: 2.0e-04  eta: 2:41:15
time: 0.6535  data_time: 0.0240  memory: 7894  grad_norm: 6.73  loss: 1.1283 ...``,
``Iter(train) [  50/90000] ...`` and ``Epoch(val) [1][5000/5000]  coco/bbox_mAP: 0.374 ...``.
Validation progress lines (only eta/time) carry no metric and are skipped. A line wrapped with a
trailing backslash is joined with its continuation first, so its last value is not lost.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from acc_agent.io.logs.base import LogFormat, Record
from acc_agent.io.logs.formats.mmcv import mm_pairs, mm_train_record
from acc_agent.io.logs.source import LogSource, Sample

_TRAIN = re.compile(r"\b(?:Epoch\(train\)\s*\[(\d+)\]\s*\[\s*(\d+)/(\d+)\]|Iter\(train\)\s*\[\s*(\d+)/(\d+)\])")
_VAL = re.compile(r"\b(?:Epoch|Iter)\((val|test)\)\s*(?:\[(\d+)\])?\s*\[\s*(\d+)/(\d+)\]")


class MmengineText(LogFormat):
    name = "mmengine"
    label = "OpenMMLab mmengine text log"

    def sniff(self, sample: Sample) -> float:
        text = sample.text
        if "(train)" not in text and "(val)" not in text and "(test)" not in text:
            return 0.0  # neither pattern can match: one search of the head instead of two regexes a line
        return 0.92 if any(_TRAIN.search(line) or _VAL.search(line) for line in sample.lines) else 0.0

    def parse(self, source: LogSource) -> Iterator[Record]:
        global_step = 0
        per_epoch = 0
        for lineno, line in source.logical_lines():  # wrapped lines joined
            if "(train)" in line:
                m = _TRAIN.search(line)
                if m is None:
                    continue
                global_step, per_epoch_seen, record = mm_train_record(m, lineno, line)
                per_epoch = per_epoch_seen or per_epoch
                yield record
            elif "(val)" in line or "(test)" in line:
                v = _VAL.search(line)
                if v is None:
                    continue
                values = {k: x for k, x in mm_pairs(line[v.end() :], True).items() if not k.endswith("_ms") and k != "eval_memory_mb"}
                if v.group(1) == "test":
                    values = {"eval_test_" + k[5:]: x for k, x in values.items()}
                if values:
                    val_epoch = float(v.group(2)) if v.group(2) else None
                    # evaluation runs after the epoch: place it at the epoch's last iteration
                    step = int(val_epoch) * per_epoch if val_epoch and per_epoch else global_step
                    yield Record(line=lineno, values=values, kind="eval", step=step or None, epoch=val_epoch)
