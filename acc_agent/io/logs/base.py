"""The interface every log format implements, and the record it yields.

Parsers stream: they yield one :class:`Record` per metric line (or JSON entry) and never hold the
file, so memory stays flat however long the log is. Canonical metric names (``loss``,
``grad_norm``, ``lr``, ``loss_scale``, ``step_time_ms``, ``throughput``, ``eval_<name>``...) are
decided here once, so the judges downstream never see framework spellings.
"""

from __future__ import annotations

import functools
import re
from abc import ABC, abstractmethod
from collections.abc import Collection, Iterator, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar

from acc_agent.io.logs.source import LogSource, Sample

if TYPE_CHECKING:  # the table reader builds on this module
    from acc_agent.io.logs.formats.megatron_fast import Columns


@dataclass(slots=True)
class Record:
    """One logged point: the metrics printed together at one step."""

    line: int
    values: dict[str, float]
    kind: str = "train"  # train | eval | summary
    step: int | None = None
    epoch: float | None = None
    new_run: bool = False
    total_steps: int | None = None
    extras: dict[str, str] | None = None
    unit: str | None = None  # what ``step`` counts, when it is not the format's step unit (e.g. record)
    merged: int = 1  # log lines this record stands for (one memory line per rank, merged by the parser)
    # Hot-path form (optional): parallel field names and values instead of ``values``; the names
    # tuple is shared by every line of one layout, so the collector can key its tables on it.
    names: tuple[str, ...] | None = None
    row: list[float] | None = None
    # Bulk form: consecutive train lines of one layout as (line, step, total_steps, row) tuples.
    batch: list[tuple[int, int, int | None, list[float]]] | None = None
    # Table form: consecutive train lines of one layout as numpy columns.
    columns: Columns | None = None

    def as_dict(self) -> dict[str, float]:
        if self.names is not None and self.row is not None:
            return dict(zip(self.names, self.row, strict=True))
        return self.values


class LogFormat(ABC):
    """One log format: how to recognise it and how to read it."""

    name: ClassVar[str]
    label: ClassVar[str]
    step_unit: ClassVar[str] = "iteration"
    binary: ClassVar[bool] = False  # read from a binary file (TensorBoard), not through the text guards

    @abstractmethod
    def sniff(self, sample: Sample) -> float:
        """Confidence 0..1 that ``sample`` (the head of the file) is this format."""

    @abstractmethod
    def parse(self, source: LogSource) -> Iterator[Record]:
        """Yield records in file order."""


# Framework spellings -> canonical names. Keys are lower-case, spaces/dashes folded to "_".
CANONICAL: dict[str, str] = {
    "lm_loss": "loss",
    "loss": "loss",
    "train_loss": "loss",
    "total_loss": "loss",
    "grad_norm": "grad_norm",
    "gradient_norm": "grad_norm",
    "learning_rate": "lr",
    "lr": "lr",
    "train_lr": "lr",
    "loss_scale": "loss_scale",
    "elapsed_time_per_iteration_(ms)": "step_time_ms",
    "elapsed_time_per_iteration": "step_time_ms",
    "per_step_time": "step_time_ms",
    "time_info": "step_time_ms",
    "throughput_per_gpu_(tflop/s/gpu)": "tflops_per_device",
    "throughput": "throughput",
    "samples_per_second": "throughput",
    "train_samples_per_second": "throughput",
    "fps": "throughput",
    "number_of_skipped_iterations": "skipped_iterations",
    "number_of_nan_iterations": "nan_iterations",
    "num_zeros": "num_zeros",
    "global_batch_size": "global_batch_size",
    "consumed_samples": "consumed_samples",
    "memory": "memory_mb",
    "data_time": "data_time_ms",
    "epoch": "epoch",
}

_FOLD = re.compile(r"[\s\-]+")


@functools.lru_cache(maxsize=8192)
def canonical_name(raw: str) -> str:
    """Map a printed metric name to the canonical one; unknown names become snake_case."""
    key = _FOLD.sub("_", raw.strip().lower())
    if key in CANONICAL:
        return CANONICAL[key]
    for prefix in ("eval_", "val_", "valid_", "validation_", "test_"):
        if key.startswith(prefix):
            rest = key[len(prefix) :]
            return "eval_" + CANONICAL.get(rest, rest)
    return key


def numeric_fields(obj: Mapping[str, object], skip: Collection[str] = ()) -> dict[str, float]:
    """The numbers of one metrics dict, numeric strings included; bools and ``skip`` keys left out.

    JSON and CSV loggers write the same value as ``0.69``, ``"0.69"`` or ``true``: every
    dict-shaped format reads its fields through this one rule.
    """
    numbers: dict[str, float] = {}
    for key, value in obj.items():
        if isinstance(value, bool) or key in skip:
            continue
        if isinstance(value, str):
            try:
                value = float(value)
            except ValueError:
                continue
        if isinstance(value, (int, float)):
            numbers[key.strip()] = float(value)
    return numbers


#: Largest step number kept: steps are stored as int64, and no run logs 2^62 steps (a bigger one is damage).
MAX_STEP = 1 << 62


def step_number(value: float | int | None) -> int | None:
    """A logged step as an int, or None when it is not one a run can have (NaN, Inf, beyond int64).

    Why: JSON and CSV loggers can write ``1e400`` (read as Inf) or ``NaN`` in a step field, and
    ``int()`` of those raises; a step past int64 would overflow the step arrays later.
    """
    if value is None or value != value or value in (float("inf"), float("-inf")):
        return None
    step = int(value)
    return step if -MAX_STEP <= step <= MAX_STEP else None


def to_float(text: str) -> float | None:
    """Parse a printed number (``9.757730E-06``, ``'0.6899'``, ``nan``); None if it is not one."""
    text = text.strip().strip("'\"").rstrip(",;")
    try:
        return float(text)
    except ValueError:
        return None
