"""MindSpore callbacks: ``LossMonitor``, ``TimeMonitor`` and the model-zoo variants.

Seen in the wild: ``epoch: 1 step: 100, loss is 4.5141``;
``epoch: [1/90] loss: 1.082604, epoch time: 40.559 s, per step time: 207.995 ms``;
``epoch: [0/1] step: [20/5004], loss is 7.078993Epoch time: 3438.972 ms, fps: 1488 img/sec.`` (no
separator after the number); ``epoch time: 1234.5 ms, per step time: 12.3 ms`` on its own line; evaluation results printed as
``============== {'Accuracy': 0.9663} ==============`` or ``result:{'top_1_accuracy': 0.7622}``.
``LossMonitor`` prints the step inside the epoch, so the global step is rebuilt from the epoch
length (printed ``[i/N]``, else the largest step seen in the previous epoch).
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from acc_agent.io.logs.base import LogFormat, Record
from acc_agent.io.logs.source import LogSource, Sample

_NUM = r"(-?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?|nan|inf)"
_HEAD = re.compile(r"\bepoch:?\s*(?:\[(\d+)/(\d+)\]|(\d+))[,\s]*(?:step:?\s*(?:\[(\d+)/(\d+)\]|(\d+)))?", re.I)
_LOSS = re.compile(r"\bloss(?: is|:|=)\s*\(?\s*(?:Tensor\(shape=\[\], dtype=\w+, value=\s*)?" + _NUM)
_STEP_TIME = re.compile(r"per step time:?\s*" + _NUM + r"\s*(ms|s)\b", re.I)
_EPOCH_TIME = re.compile(r"epoch time:?\s*" + _NUM + r"\s*(ms|s)\b", re.I)
_RESULT = re.compile(r"\{'([A-Za-z_0-9]*(?:acc|Acc|loss|Loss|mAP|top)[A-Za-z_0-9]*)':\s*" + _NUM + r"[^}]*\}")
_FPS = re.compile(r"\bfps:?\s*" + _NUM, re.I)


RESULT_GAP_LINES = 50


def _ms(value: str, unit: str) -> float:
    return float(value) * (1000.0 if unit.lower() == "s" else 1.0)


class MindSporeText(LogFormat):
    name = "mindspore"
    label = "MindSpore LossMonitor / TimeMonitor log"

    def sniff(self, sample: Sample) -> float:
        hits = 0
        for line in sample.lines:
            if "poch" in line and _LOSS.search(line) and _HEAD.search(line):
                hits += 1
        return 0.9 if hits else 0.0

    def parse(self, source: LogSource) -> Iterator[Record]:
        epoch_len: int | None = None
        max_in_epoch: dict[int, int] = {}
        last_step: int | None = None
        zero_based = False
        last_line = 0
        for lineno, line in source.lines():
            if line.startswith(("```", "#")):
                last_line = -RESULT_GAP_LINES  # a markdown fence or heading ends the run's context
                continue
            if "{'" in line and ("result" in line.lower() or "====" in line or "ccuracy" in line):
                found = {"eval_" + k.lower(): float(v) for k, v in _RESULT.findall(line)}
                # only a result printed right after training belongs to that run (READMEs list unrelated results)
                if found and last_step is not None and lineno - last_line <= RESULT_GAP_LINES:
                    yield Record(line=lineno, values=found, kind="eval", step=last_step)
                continue
            if "poch" not in line and "step time" not in line:
                continue
            values: dict[str, float] = {}
            loss = _LOSS.search(line)
            head = _HEAD.search(line) if loss else None
            st = _STEP_TIME.search(line)
            if st:
                values["step_time_ms"] = _ms(st.group(1), st.group(2))
            et = _EPOCH_TIME.search(line)
            if et:
                values["epoch_time_ms"] = _ms(et.group(1), et.group(2))
            fps = _FPS.search(line)
            if fps:
                values["throughput"] = float(fps.group(1))
            if loss is None or head is None:
                if values and last_step is not None:
                    yield Record(line=lineno, values=values, step=last_step)
                continue
            values["loss"] = float(loss.group(1))
            epoch = int(head.group(1) or head.group(3))
            total_epochs = int(head.group(2)) if head.group(2) else None
            step_in_epoch = head.group(4) or head.group(6)
            if step_in_epoch is None:
                yield Record(line=lineno, values=values, epoch=float(epoch), total_steps=total_epochs)
                continue
            inner = int(step_in_epoch)
            if head.group(5):
                epoch_len = int(head.group(5))
            max_in_epoch[epoch] = max(max_in_epoch.get(epoch, 0), inner)
            length = epoch_len or max_in_epoch.get(epoch - 1) or 0
            zero_based = zero_based or epoch == 0
            base = epoch if zero_based else epoch - 1
            step = max(base, 0) * length + inner
            last_step = step
            last_line = lineno
            yield Record(line=lineno, values=values, step=step, epoch=float(epoch))
