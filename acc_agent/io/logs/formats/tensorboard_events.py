"""TensorBoard event files (``events.out.tfevents.*``), read with the ``tensorboard`` package.

Why the package and not a parser of our own: event files are TFRecord-framed protocol buffers with
CRCs, two generations of scalar encoding (``simple_value`` and tensor summaries) and plugin
metadata; TensorBoard's own ``EventFileLoader`` reads them all and migrates old encodings. It is an
optional dependency (``pip install 'acc-agent[tensorboard]'``), imported only when an event file is
actually read.

Tags become canonical names: ``train/loss``, ``Loss/train`` and ``loss`` are ``loss``;
``eval/loss``, ``val/loss``, ``Loss/val`` are ``eval_loss``; ``train/learning_rate`` is ``lr``.
Values logged at one step are one record; a directory holding several event files (a resumed run)
is read file by file in name order, which is time order.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, TypeAlias

from acc_agent.errors import AccAgentError
from acc_agent.io.arrays import Array
from acc_agent.io.logs.base import LogFormat, Record, canonical_name
from acc_agent.io.logs.source import LogSource, Sample

if TYPE_CHECKING:  # tensorboard is optional: imported for real only when an event file is read
    from tensorboard.backend.event_processing.event_file_loader import EventFileLoader
    from tensorboard.compat.proto.summary_pb2 import Summary
    from tensorboard.compat.proto.tensor_pb2 import TensorProto

#: ``tensor_util.make_ndarray``: a tensor summary's protocol buffer as a numpy array.
MakeNdarray: TypeAlias = "Callable[[TensorProto], Array]"

EVENT_MARK = ".tfevents."
_EVAL_PARTS = {"eval", "val", "valid", "validation", "test"}
_TRAIN_PARTS = {"train", "training"}


def is_event_file(path: Path) -> bool:
    return EVENT_MARK in path.name and path.is_file()


def event_files(path: Path) -> list[Path]:
    """The event files ``path`` stands for: itself, or those directly inside a run directory."""
    if path.is_file():
        return [path] if EVENT_MARK in path.name else []
    if path.is_dir():
        return sorted(p for p in path.iterdir() if p.is_file() and EVENT_MARK in p.name)
    return []


def tag_name(tag: str) -> str:
    """Canonical metric name of a TensorBoard tag (``train/loss`` -> ``loss``, ``Loss/val`` -> ``eval_loss``)."""
    parts = [p for p in tag.replace("\\", "/").split("/") if p]
    if not parts:
        return canonical_name(tag)
    lowered = [p.lower() for p in parts]
    is_eval = any(p in _EVAL_PARTS for p in lowered)
    kept = [p for p, low in zip(parts, lowered, strict=True) if low not in _EVAL_PARTS | _TRAIN_PARTS]
    base = canonical_name("_".join(kept) if kept else parts[-1])
    if is_eval and not base.startswith("eval_"):
        return "eval_" + base
    return base


def _loader() -> tuple[type[EventFileLoader], MakeNdarray]:
    try:
        from tensorboard.backend.event_processing.event_file_loader import EventFileLoader
        from tensorboard.util import tensor_util
    except ImportError:
        raise AccAgentError(
            "missing_dependency",
            "reading TensorBoard event files needs the 'tensorboard' package, which is not installed",
            hint="pip install 'acc-agent[tensorboard]' (or: pip install tensorboard), or export the scalars to CSV.",
        ) from None
    return EventFileLoader, tensor_util.make_ndarray


def _scalar(value: Summary.Value, make_ndarray: MakeNdarray) -> float | None:
    """The number a summary value holds, if it is a scalar (images, histograms, text are skipped)."""
    if value.HasField("tensor"):
        # Only a one-element tensor is a scalar. Checked on the shape first: make_ndarray fills the
        # claimed shape from a single float_val (np.repeat), so a 20-byte record claiming 10^9
        # elements would allocate 4 GB before it could be refused.
        dims = [int(d.size) for d in value.tensor.tensor_shape.dim]
        if any(d != 1 for d in dims):
            return None
        try:
            arr = make_ndarray(value.tensor)
        except (ValueError, TypeError):
            return None
        if arr.size != 1 or arr.dtype.kind not in "fiub":
            return None
        return float(arr.reshape(-1)[0])
    if value.WhichOneof("value") == "simple_value":
        return float(value.simple_value)
    return None


class TensorBoardEvents(LogFormat):
    name = "tensorboard"
    label = "TensorBoard event file (events.out.tfevents.*)"
    binary = True
    step_unit = "iteration"  # the global_step the writer was given; training scripts pass the iteration

    def sniff(self, sample: Sample) -> float:
        return 1.0 if EVENT_MARK in sample.path.name else 0.0

    def parse(self, source: LogSource) -> Iterator[Record]:
        loader_cls, make_ndarray = _loader()
        for path in event_files(source.path):
            yield from self._read(path, loader_cls, make_ndarray, source)

    def _read(self, path: Path, loader_cls: type[EventFileLoader], make_ndarray: MakeNdarray,
              source: LogSource) -> Iterator[Record]:
        step: int | None = None
        pending: dict[str, float] = {}
        evals: dict[str, float] = {}
        count = 0
        try:
            for event in loader_cls(str(path)).Load():
                if not event.HasField("summary"):
                    continue
                for value in event.summary.value:
                    number = _scalar(value, make_ndarray)
                    if number is None:
                        continue
                    name = tag_name(value.tag)
                    target = evals if name.startswith("eval_") else pending
                    if int(event.step) != step or name in target:
                        yield from _flush(step, pending, evals)
                        pending, evals = {}, {}
                        target = evals if name.startswith("eval_") else pending
                        step = int(event.step)
                    target[name] = number
                    count += 1
        except Exception as exc:  # a truncated or corrupt record: keep what was read, say so
            source.warnings.append(f"{path.name}: stopped reading after {count} value(s): {type(exc).__name__}: {exc}")
        yield from _flush(step, pending, evals)


def _flush(step: int | None, pending: dict[str, float], evals: dict[str, float]) -> Iterator[Record]:
    if step is None:
        return
    if pending:
        yield Record(line=0, values=pending, step=step)
    if evals:
        yield Record(line=0, values=evals, kind="eval", step=step)
