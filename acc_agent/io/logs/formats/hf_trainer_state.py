"""Hugging Face Trainer ``trainer_state.json``.

``log_history`` mixes train entries (``loss``, ``grad_norm``, ``learning_rate``), eval entries
(``eval_*``) and a final summary (``train_loss`` there is the mean over the run, not a step loss —
it must not land in the ``loss`` series).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping

from acc_agent.io.logs.base import LogFormat, Record, canonical_name, numeric_fields, step_number
from acc_agent.io.logs.source import LogSource, Sample

_SUMMARY_KEYS = {"train_runtime", "train_loss", "train_samples_per_second", "train_steps_per_second", "total_flos"}


def hf_record(entry: Mapping[str, object], line: int, fallback_step: int | None) -> Record | None:
    """One ``log_history``/printed dict as a record; shared with the printed-dict parser."""
    numbers = numeric_fields(entry)
    if not numbers:
        return None
    step_value = numbers.pop("step", None)
    step = step_number(step_value) if step_value is not None else fallback_step
    epoch = numbers.pop("epoch", None)
    if _SUMMARY_KEYS & numbers.keys():
        values = {("summary_" + k if k == "train_loss" else canonical_name(k)): v for k, v in numbers.items()}
        return Record(line=line, values=values, kind="summary", step=step, epoch=epoch)
    if any(k.startswith("eval_") for k in numbers):
        values = {canonical_name(k): v for k, v in numbers.items()}
        return Record(line=line, values=values, kind="eval", step=step, epoch=epoch)
    return Record(line=line, values={canonical_name(k): v for k, v in numbers.items()}, step=step, epoch=epoch)


class HfTrainerState(LogFormat):
    name = "hf_trainer_state"
    label = "Hugging Face Trainer trainer_state.json"

    def sniff(self, sample: Sample) -> float:
        return 0.97 if sample.first_char == "{" and '"log_history"' in sample.text else 0.0

    def parse(self, source: LogSource) -> Iterator[Record]:
        doc = source.load_json()
        history = doc.get("log_history") if isinstance(doc, dict) else None
        if not isinstance(history, list):
            return
        for index, entry in enumerate(history):
            if isinstance(entry, dict):
                rec = hf_record(entry, 0, index + 1)
                if rec is not None:
                    yield rec
