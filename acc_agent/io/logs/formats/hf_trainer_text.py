"""Hugging Face Trainer console output: the printed log dicts, numbered by optimisation step.

``{'loss': 0.6899, 'grad_norm': 0.74, 'learning_rate': 0.00019, 'epoch': 0.16}`` and the newer
quoted-value style ``{'loss': '0.6899', ...}``. The dicts carry no step; :mod:`acc_agent.io.logs.hf_steps`
numbers them (tqdm bar, trainer_state.json beside the log, ``logging_steps``, the training header);
only the training bar counts — an evaluation bar (``32/32 [``) has another total.
The ``***** Running training *****`` header's batch sizes become a summary record, so the run's
global batch size is known to whoever reads its series (measure-performance --from-log).
The dicts are few (one per logging interval), so they are held until the end of the file, when
the header and every epoch value are known.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator

from acc_agent.io.logs.base import LogFormat, Record
from acc_agent.io.logs.formats.hf_trainer_state import hf_record
from acc_agent.io.logs.hf_header import HfRunInfo
from acc_agent.io.logs.hf_steps import Pending, number_records
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
        train_total: int | None = None
        info = HfRunInfo()
        pending: list[Pending] = []
        for lineno, line in source.lines():
            info.feed(lineno, line)
            if "/" in line:
                for bar in _BAR.finditer(line):
                    # the training bar counts optimisation steps; evaluation bars (other totals) do not
                    total = int(bar.group(2))
                    if train_total is None:
                        train_total = int(info.header.get("max_steps") or total)
                    if total == train_total:
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
                rec = hf_record(entry, lineno, None)
                if rec is not None:
                    pending.append(Pending(rec, bar_step))
        how, warnings = number_records(pending, info, source.path)
        source.warnings.extend(warnings)
        header = info.header
        batch = {k: float(header[v]) for k, v in (("global_batch_size", "total_train_batch_size"),
                                                  ("micro_batch_size", "per_device_train_batch_size")) if v in header}
        if batch or pending:
            declared = int(header["max_steps"]) if "max_steps" in header else None
            yield Record(line=info.header_line, values=batch, kind="summary", total_steps=declared,
                         extras={"step_numbering": how})
        for p in pending:
            yield p.record
