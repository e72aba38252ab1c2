"""What a Hugging Face Trainer log states about its run: the ``***** Running training *****`` header
and the ``TrainingArguments(...)`` dump.

Why one module for both readers: the printed log dicts carry no step, so the parser needs the
header (examples, epochs, batch sizes, total optimisation steps) and ``logging_steps`` to number
them; compare-run-configs needs the same values as hyper-parameters. Keys come out in the
``TrainingArguments`` spelling (``per_device_train_batch_size``, ``num_train_epochs``, ``max_steps``...)
so both sides of a comparison read alike whatever printed them.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from typing import TypeAlias

HEADER_MARK = "***** Running training *****"
_HEADER = re.compile(
    r"(Num examples|Num Epochs|Instantaneous batch size per device|Total train batch size[^=]*|"
    r"Gradient Accumulation steps|Total optimization steps|Number of trainable parameters|"
    r"Training with DataParallel so batch size has been adjusted to)\s*[=:]\s*([\d,]+(?:\.\d+)?)",
    re.I,
)
_HEADER_KEYS = {
    "num examples": "num_examples",
    "num epochs": "num_train_epochs",
    "instantaneous batch size per device": "per_device_train_batch_size",
    "total train batch size": "total_train_batch_size",
    "gradient accumulation steps": "gradient_accumulation_steps",
    "total optimization steps": "max_steps",
    "number of trainable parameters": "trainable_parameters",
    "training with dataparallel so batch size has been adjusted to": "train_batch_size",
}
_ARGS_START = re.compile(r"\bTrainingArguments\($")
_ARG = re.compile(r"^\s*([a-z_][a-z0-9_]*)=(.*?),?\s*$")
MAX_ARG_LINES = 400
#: A TrainingArguments value as printed: a flag, None, a number, or anything else kept as its text.
ArgValue: TypeAlias = str | int | float | bool | None


def _number(text: str) -> float | int:
    value = float(text.replace(",", ""))
    return int(value) if value.is_integer() else value


def _arg_value(text: str) -> ArgValue:
    t = text.strip()
    if t in ("True", "False"):
        return t == "True"
    if t == "None":
        return None
    try:
        return _number(t) if t and t[0] in "-0123456789." else t
    except ValueError:
        return t


@dataclass
class HfRunInfo:
    """Header values and TrainingArguments of one HF run, with the lines they were read from."""

    header: dict[str, float | int] = field(default_factory=dict)
    arguments: dict[str, ArgValue] = field(default_factory=dict)
    header_line: int = 0
    arguments_line: int = 0
    _in_args: int = 0

    def feed(self, lineno: int, line: str) -> None:
        """Take what one log line states; cheap for the lines that state nothing."""
        if self._in_args:
            stripped = line.strip()
            if stripped.startswith(")") or self._in_args > MAX_ARG_LINES:
                self._in_args = 0
                return
            m = _ARG.match(line)
            if m is not None:
                self.arguments[m.group(1)] = _arg_value(m.group(2))
            self._in_args += 1
            return
        if "TrainingArguments(" in line and _ARGS_START.search(line.rstrip()):
            self._in_args, self.arguments_line = 1, lineno
            return
        if "=" not in line and ":" not in line:
            return
        m = _HEADER.search(line)
        if m is not None:
            key = _HEADER_KEYS.get(re.sub(r"\s*\(.*", "", m.group(1)).strip().lower())
            if key is not None:
                self.header.setdefault(key, _number(m.group(2)))
                self.header_line = self.header_line or lineno

    def steps_per_epoch(self) -> float | None:
        """Optimisation steps in one epoch, from the examples and batch sizes (else total / epochs).

        Examples ÷ (per-device batch × devices), rounded up, ÷ accumulation: how the Trainer sizes an
        epoch. ``max_steps ÷ epochs`` is only a fallback — with ``max_steps`` set, the last epoch is partial.
        """
        h = self.header
        examples, total_bs = h.get("num_examples"), h.get("total_train_batch_size")
        accum = h.get("gradient_accumulation_steps") or 1
        if examples and total_bs:
            per_pass = total_bs / accum
            return float(math.ceil(examples / per_pass) // accum) or None
        steps, epochs = h.get("max_steps"), h.get("num_train_epochs")
        if steps and epochs:
            return steps / epochs
        return None

    @property
    def logging_steps(self) -> int | None:
        value = self.arguments.get("logging_steps")
        if isinstance(value, (int, float)) and value >= 1 and float(value).is_integer():
            return int(value)
        return None

    def as_config(self) -> dict[str, ArgValue]:
        """Everything stated, TrainingArguments first, header values where the dump is silent."""
        out: dict[str, ArgValue] = dict(self.arguments)
        for key, value in self.header.items():
            out.setdefault(key, value)
        return out
