"""Hugging Face Trainer console output: the printed log dicts.

``{'loss': 0.6899, 'grad_norm': 0.74, 'learning_rate': 0.00019, 'epoch': 0.16}`` and the newer
quoted-value style ``{'loss': '0.6899', ...}``. The dicts carry no step; the tqdm bar printed just
before (``20/375 [``) does, so the latest bar position is used, else the record's ordinal.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator

from acc_agent.io.logs.base import LogFormat, Record
from acc_agent.io.logs.formats.hf_trainer_state import hf_record
from acc_agent.io.logs.source import LogSource, Sample

_DICT = re.compile(r"\{'(?:loss|eval_loss|train_runtime|grad_norm|learning_rate|eval_[a-z_]+)'\s*:[^{}]*\}")
_NONFINITE = re.compile(r"(?<![\w'])-?(?:nan|inf)(?![\w'])")
_BAR = re.compile(r"(\d+)/(\d+) \[")


class HfTrainerText(LogFormat):
    name = "hf_trainer_text"
    label = "Hugging Face Trainer printed log dicts"

    def sniff(self, sample: Sample) -> float:
        return 0.9 if any(_DICT.search(line) for line in sample.lines) else 0.0

    def parse(self, source: LogSource) -> Iterator[Record]:
        bar_step: int | None = None
        ordinal = 0
        for lineno, line in source.lines():
            for bar in _BAR.finditer(line):
                bar_step = int(bar.group(1))
            if "{'" not in line:
                continue
            for m in _DICT.finditer(line):
                text = _NONFINITE.sub(lambda t: repr(t.group(0)), m.group(0))
                try:
                    entry = ast.literal_eval(text)
                except (ValueError, SyntaxError):
                    continue
                if not isinstance(entry, dict):
                    continue
                ordinal += 1
                rec = hf_record(entry, lineno, bar_step if bar_step is not None else ordinal)
                if rec is not None:
                    yield rec
