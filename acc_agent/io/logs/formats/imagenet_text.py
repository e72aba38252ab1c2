"""The PyTorch ImageNet example's ``ProgressMeter`` log, and torchvision's ``MetricLogger`` cousin.

``Epoch: [0][  0/625]\tTime  0.932 ( 0.932)\tData  0.148 ( 0.148)\tLoss 6.8126e-01 (6.8126e-01)\tAcc@1  50.00 ( 50.00)``
— the layout of ``pytorch/examples/imagenet/main.py`` that many Ascend ModelZoo models kept. Each
meter prints the value of this step first and the running average since the epoch began in
brackets: the first number is the point of the curve (``loss``), the bracketed one is kept apart
(``loss_avg``) because averaging hides exactly the step where two runs part. ``Test: [300/313]``
lines carry running averages, so the last one of an evaluation (later values at a step replace
earlier ones) is its result, as is the closing `` * Acc@1 76.1 Acc@5 92.9``; Ascend ModelZoo's
``[npu id: 0 ] * FPS@all 1234.5`` is the epoch's throughput. Time and Data are in
seconds and become ``step_time_ms``/``data_time_ms``. The global step is ``epoch × N + i`` with the
``[i/N]`` the line prints, so runs that log every 10 batches keep their real step numbers.

torchvision's references print ``Epoch: [0]  [ 10/5005]  eta: ...  lr: 0.1  loss: 7.05 (7.07)``;
there the first number is a short-window median rather than the single step, which is read the same
way (it is what the log offers).
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from acc_agent.io.logs.base import LogFormat, Record, canonical_name
from acc_agent.io.logs.source import LogSource, Sample

_NUM = r"[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?|nan|inf"
_TRAIN = re.compile(r"\bEpoch:\s*\[\s*(\d+)\s*\]\s*\[\s*(\d+)\s*/\s*(\d+)\s*\]")
_TEST = re.compile(r"\b(?:Test|Val|Validation|Eval)(?:\s*\(EMA\))?:\s*\[\s*(\d+)\s*/\s*(\d+)\s*\]")
# "Name value (average)" or "name: value (average)"; the bracketed average is optional (Lr, eta...)
_METER = re.compile(r"([A-Za-z][\w@/.\-]*)(?::\s*|\s+)(" + _NUM + r")(?![\d:.])(?:\s*\(\s*(" + _NUM + r")\s*\))?")
_FINAL = re.compile(r"(?:^\s*|\]\s*)\*\s+((?:[A-Za-z][\w@/.\-]*\s+(?:" + _NUM + r")\s*)+)$")
_FPS = re.compile(r"\*\s*FPS@all\s+(" + _NUM + r")")
_MAX_MEM = re.compile(r"\bmax mem:\s*(" + _NUM + r")")
_SECONDS = {"time": "step_time_ms", "data": "data_time_ms", "data_time": "data_time_ms", "batch_time": "step_time_ms"}
_RENAME = {"acc@1": "acc1", "acc@5": "acc5", "prec@1": "acc1", "prec@5": "acc5", "img/s": "throughput", "fps": "throughput"}
_NOT_METRICS = {"eta", "epoch", "test", "max"}


def _meters(text: str) -> tuple[dict[str, float], dict[str, float]]:
    """(point values, running averages) of one line's meters, in canonical names."""
    points: dict[str, float] = {}
    averages: dict[str, float] = {}
    for raw, value, avg in _METER.findall(text):
        key = raw.lower()
        if key in _NOT_METRICS or key == "mem":
            continue
        scale = 1.0
        if key in _SECONDS:
            name, scale = _SECONDS[key], 1000.0
        else:
            name = _RENAME.get(key) or canonical_name(raw)
        points[name] = float(value) * scale
        if avg:
            averages[name] = float(avg) * scale
    mem = _MAX_MEM.search(text)
    if mem is not None:
        points["memory_mb"] = float(mem.group(1))
    return points, averages


class ImagenetText(LogFormat):
    name = "pytorch_imagenet"
    label = "PyTorch ImageNet-example ProgressMeter log (Epoch: [e][i/N] ... Loss value (average))"

    def sniff(self, sample: Sample) -> float:
        hits = 0
        for line in sample.lines:
            if "poch:" in line and _TRAIN.search(line) and re.search(r"\b[Ll]oss:?\s+\S+\s*\(", line):
                hits += 1
        return 0.93 if hits else 0.0

    def parse(self, source: LogSource) -> Iterator[Record]:
        step: int | None = None
        epoch = per_epoch = 0
        for lineno, line in source.logical_lines():
            if "poch:" in line:
                m = _TRAIN.search(line)
                if m is not None:
                    epoch, i, per_epoch = int(m.group(1)), int(m.group(2)), int(m.group(3))
                    step = epoch * per_epoch + i
                    points, averages = _meters(line[m.end() :])
                    values = dict(points)
                    values.update({f"{k}_avg": v for k, v in averages.items() if k in ("loss", "acc1", "acc5")})
                    if values:
                        yield Record(line=lineno, values=values, step=step, epoch=float(epoch))
                    continue
            if step is None:
                continue
            # evaluation follows the epoch: its result belongs to the epoch's last batch
            eval_step = max(step, epoch * per_epoch + per_epoch - 1)
            t = _TEST.search(line)
            if t is not None:
                points, averages = _meters(line[t.end() :])
                evals = {"eval_" + k: v for k, v in (averages or points).items() if not k.endswith("_ms")}
                if evals:
                    yield Record(line=lineno, values=evals, kind="eval", step=eval_step, epoch=float(epoch))
                continue
            if "FPS@all" in line:  # Ascend ModelZoo: images per second over the whole epoch
                fps = _FPS.search(line)
                if fps is not None:
                    yield Record(line=lineno, values={"throughput": float(fps.group(1))}, step=eval_step, epoch=float(epoch))
                continue
            f = _FINAL.search(line)
            if f is not None:
                points, _ = _meters(f.group(1))
                evals = {"eval_" + k: v for k, v in points.items()}
                if evals:
                    yield Record(line=lineno, values=evals, kind="eval", step=eval_step, epoch=float(epoch))
