"""MindSpeed-LLM CI baseline JSON (``tests/st/baseline_results/*.json``).

``{"lm loss": [...], "grad norm": [...], "time info": [ms...], "memo info": [{rank, ...}]}``: lists
indexed from iteration 1. ``memo info`` has no step, so it becomes a summary record.
"""

from __future__ import annotations

from collections.abc import Iterator

from acc_agent.io.logs.base import LogFormat, Record, canonical_name
from acc_agent.io.logs.source import LogSource, Sample


class MindSpeedBaselineJson(LogFormat):
    name = "mindspeed_baseline_json"
    label = "MindSpeed-LLM CI baseline JSON"

    def sniff(self, sample: Sample) -> float:
        text = sample.text
        if sample.first_char == "{" and ('"lm loss"' in text or '"time info"' in text) and '"start_step"' not in text:
            return 0.9
        return 0.0

    def parse(self, source: LogSource) -> Iterator[Record]:
        doc = source.load_json()
        if not isinstance(doc, dict):
            return
        columns: dict[str, list[float]] = {}
        for raw, values in doc.items():
            if isinstance(values, list) and values and all(isinstance(v, (int, float)) for v in values):
                columns[canonical_name(raw)] = [float(v) for v in values]
        length = max((len(v) for v in columns.values()), default=0)
        for i in range(length):
            yield Record(line=0, step=i + 1, values={k: v[i] for k, v in columns.items() if i < len(v)})
        memo = doc.get("memo info")
        if isinstance(memo, list):
            peaks = [float(m["max allocated memory"]) for m in memo if isinstance(m, dict) and isinstance(m.get("max allocated memory"), (int, float))]
            allocated = [float(m["allocated memory"]) for m in memo if isinstance(m, dict) and isinstance(m.get("allocated memory"), (int, float))]
            summary: dict[str, float] = {}
            if peaks:
                summary["memory_max_allocated_mb"] = max(peaks)
            if allocated:
                summary["memory_allocated_mb"] = max(allocated)
            if summary:
                yield Record(line=0, values=summary, kind="summary", extras={"scope": f"max over {len(memo)} ranks"})
