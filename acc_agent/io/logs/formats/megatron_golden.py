"""Megatron-LM functional-test golden values (``golden_values_*.json``).

``{"lm loss": {"start_step", "end_step", "step_interval", "values": {"1": ...}}, "iteration-time": ...}``.
Iteration time is in seconds there; it is converted to ``step_time_ms`` so it compares with text logs.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TypeGuard

from acc_agent.io.logs.base import LogFormat, Record, canonical_name
from acc_agent.io.logs.source import LogSource, Sample

_SCALE = {
    "iteration_time": ("step_time_ms", 1000.0),
    "mem_allocated_bytes": ("memory_allocated_mb", 1.0 / (1 << 20)),
    "mem_max_allocated_bytes": ("memory_max_allocated_mb", 1.0 / (1 << 20)),
}


def _is_golden(doc: object) -> TypeGuard[dict[str, object]]:
    return isinstance(doc, dict) and any(
        isinstance(v, dict) and isinstance(v.get("values"), dict) and "start_step" in v for v in doc.values()
    )


class MegatronGolden(LogFormat):
    name = "megatron_golden_json"
    label = "Megatron-LM golden values JSON"

    def sniff(self, sample: Sample) -> float:
        text = sample.text
        if sample.first_char == "{" and '"values"' in text and '"start_step"' in text:
            return 0.97
        return 0.0

    def parse(self, source: LogSource) -> Iterator[Record]:
        doc = source.load_json()
        if not _is_golden(doc):
            return
        by_step: dict[int, dict[str, float]] = {}
        for raw_name, block in doc.items():
            if not isinstance(block, dict) or not isinstance(block.get("values"), dict):
                continue
            key = canonical_name(raw_name)
            name, scale = _SCALE.get(key, (key, 1.0))
            for step_text, value in block["values"].items():
                try:
                    step = int(step_text)
                    number = float(value)
                except (TypeError, ValueError):
                    continue
                by_step.setdefault(step, {})[name] = number * scale
        for step in sorted(by_step):
            yield Record(line=0, values=by_step[step], step=step)
