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


def mm_train_record(m: re.Match[str], lineno: int, line: str) -> tuple[int, int | None, Record]:
    """A train line of either OpenMMLab generation: (global step, iterations per epoch or None, record).

    Both generations' train patterns share one group layout — epoch, iter, iters per epoch for
    epoch-based runs; iter, max iters for iteration-based ones — so one reader serves both.
    """
    values = mm_pairs(line[m.end() :], False)
    if m.group(1) is not None:
        epoch, i, n = int(m.group(1)), int(m.group(2)), int(m.group(3))
        step = (epoch - 1) * n + i
        return step, n, Record(line=lineno, values=values, step=step, epoch=float(epoch))
    step = int(m.group(4))
    return step, None, Record(line=lineno, values=values, step=step, total_steps=int(m.group(5)))


class MmcvText(LogFormat):
    name = "mmcv"
    label = "OpenMMLab mmcv 1.x text log"

    def sniff(self, sample: Sample) -> float:
        text = sample.text
        if "Epoch [" not in text and "Iter [" not in text:
            return 0.0  # the pattern cannot match: one search of the head instead of a regex a line
        return 0.9 if any(_TRAIN.search(line) for line in sample.lines) else 0.0

    def parse(self, source: LogSource) -> Iterator[Record]:
        global_step = 0
        per_epoch = 0
        for lineno, line in source.logical_lines():  # wrapped lines joined
            if "Epoch" not in line and "Iter" not in line:
                continue
            m = _TRAIN.search(line)
            if m is not None:
                global_step, per_epoch_seen, record = mm_train_record(m, lineno, line)
                per_epoch = per_epoch_seen or per_epoch
                yield record
                continue
            v = _VAL.search(line)
            if v is not None:
                values = {k: x for k, x in mm_pairs(line[v.end() :], True).items() if not k.endswith("_ms") and k != "eval_memory_mb"}
                if values:
                    epoch_val = float(v.group(1)) if v.group(1) else None
                    # evaluation runs after the epoch: place it at the epoch's last iteration
                    step = int(epoch_val) * per_epoch if epoch_val and per_epoch else (int(v.group(2)) if v.group(2) else global_step)
                    yield Record(line=lineno, values=values, kind="eval", step=step or None, epoch=epoch_val)
