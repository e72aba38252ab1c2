"""OpenMMLab mmcv 1.x text logs (mmdet 2.x, mmseg 0.x, mmcls 0.x...).

``... - mmdet - INFO - Epoch [1][50/930]  lr: 1.978e-03, eta: 0:56:09, time: 0.303, data_time: 0.051,
memory: 3050, loss_rpn_cls: 0.0593, ..., loss: 1.1088``, ``Iter [50/90000] ...`` for iteration-based
runners, and ``Epoch(val) [1][764]  bbox_mAP: 0.0110, ...`` for evaluation. mmcv prints ``time`` in
seconds; it becomes ``step_time_ms``.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from acc_agent.io.logs.base import LogFormat, Record, canonical_name
from acc_agent.io.logs.source import LogSource, Sample

PAIR = re.compile(r"([A-Za-z_][\w/.@\-]*):\s*(-?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?|nan|inf|-inf)(?=,|\s+(?![\d.-])|\s*$)")
_TRAIN = re.compile(r"\b(?:Epoch \[(\d+)\]\[(\d+)/(\d+)\]|Iter \[(\d+)/(\d+)\])")
_VAL = re.compile(r"\b(?:Epoch\(val\) \[(\d+)\](?:\[\d+\])?|Iter\(val\) \[(\d+)\])")
_SECONDS = {"time": "step_time_ms", "data_time": "data_time_ms"}
_NON_METRIC = {"eta"}


def mm_pairs(text: str, eval_prefix: bool) -> dict[str, float]:
    """``key: value`` pairs of an OpenMMLab line, seconds converted to ms, eval keys prefixed."""
    out: dict[str, float] = {}
    for key, raw in PAIR.findall(text):
        if key in _NON_METRIC:
            continue
        value = float(raw)
        if key in _SECONDS:
            out[_SECONDS[key]] = value * 1000.0
            continue
        name = canonical_name(key)
        if eval_prefix and not name.startswith("eval_"):
            name = "eval_" + name
        out[name] = value
    return out


class MmcvText(LogFormat):
    name = "mmcv"
    label = "OpenMMLab mmcv 1.x text log"

    def sniff(self, sample: Sample) -> float:
        return 0.9 if any(_TRAIN.search(line) for line in sample.lines) else 0.0

    def parse(self, source: LogSource) -> Iterator[Record]:
        global_step = 0
        per_epoch = 0
        for lineno, line in source.lines():
            if "Epoch" not in line and "Iter" not in line:
                continue
            m = _TRAIN.search(line)
            if m is not None:
                if m.group(1) is not None:
                    epoch, i, n = int(m.group(1)), int(m.group(2)), int(m.group(3))
                    global_step = (epoch - 1) * n + i
                    per_epoch = n
                    yield Record(line=lineno, values=mm_pairs(line[m.end() :], False), step=global_step, epoch=float(epoch))
                else:
                    global_step = int(m.group(4))
                    yield Record(line=lineno, values=mm_pairs(line[m.end() :], False), step=global_step, total_steps=int(m.group(5)))
                continue
            v = _VAL.search(line)
            if v is not None:
                values = {k: x for k, x in mm_pairs(line[v.end() :], True).items() if not k.endswith("_ms") and k != "eval_memory_mb"}
                if values:
                    epoch_val = float(v.group(1)) if v.group(1) else None
                    # evaluation runs after the epoch: place it at the epoch's last iteration
                    step = int(epoch_val) * per_epoch if epoch_val and per_epoch else (int(v.group(2)) if v.group(2) else global_step)
                    yield Record(line=lineno, values=values, kind="eval", step=step or None, epoch=epoch_val)
