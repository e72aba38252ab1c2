"""Token budget for agent front ends: a tool result shrunk to what an agent needs to decide.

An agent pays for every token a tool returns, and a 2,000-row dump comparison dumped whole costs
hundreds of kilobytes. The compact form keeps the same shape as the tool's output model (so it
still validates against the published output schema) but shortens long lists to their worst
entries, cuts very long strings, and writes the complete result to a JSON file whose path it
returns, so nothing is lost: the agent reads the file, or asks again with ``full_result=true``.

It is generic over output models: a tool that knows better supplies its own ``compact=`` callable
in the registry and that is used instead of the generic shrinking (the result file and the
``compact`` note are still added).
"""

from __future__ import annotations

import hashlib
import json
import math
import re
from pathlib import Path

from acc_agent.atomic import atomic_write_text
from acc_agent.json_types import JsonObject, JsonValue
from acc_agent.models.common import ToolOutput
from acc_agent.results_folder import results_dir
from acc_agent.tools.spec import ToolSpec

#: Byte budget of a compact result as JSON; lists shrink until the result fits.
DEFAULT_BUDGET_BYTES = 16_000
#: Most list entries kept per list before the budget forces fewer.
DEFAULT_MAX_ITEMS = 20
#: Longest string kept whole.
MAX_STRING_CHARS = 4_000
#: Where full results go: this variable's folder; by default ``acc-agent-results`` beside the project's mig.yaml.

# Words that mark an entry as bad, most severe group first. Entries are ranked by the first group
# found in a status-like field, so "worst rows" works for any tool that labels its rows.
_SEVERITY = (
    ("error", "crash", "fault"),
    ("fail", "failed", "not_met", "diverged", "mismatch"),
    ("different", "differs", "unmatched", "missing", "only", "stalled", "unstable", "below"),
    ("warning", "warn", "review"),
    ("unknown", "skipped", "skip", "na"),
)
_STATUS_KEYS = ("status", "verdict", "result", "state", "level")


def severity(item: JsonValue) -> int:
    """Rank of an entry: 0 is worst; entries without a status word rank after every bad one."""
    if not isinstance(item, dict):
        return len(_SEVERITY)
    for key in _STATUS_KEYS:
        value = item.get(key)
        if isinstance(value, str):
            low = value.lower()
            tokens = set(re.split(r"[^a-z]+", low))
            for rank, words in enumerate(_SEVERITY):
                # Whole tokens for short words ("na" must not match "nan"), substrings for long ones.
                if any(w in tokens or (len(w) > 4 and w in low) for w in words):
                    return rank
    return len(_SEVERITY)


def _has_status(items: list[JsonValue]) -> bool:
    return any(isinstance(i, dict) and any(isinstance(i.get(k), str) for k in _STATUS_KEYS) for i in items)


def _shrink_list(items: list[JsonValue], keep: int) -> tuple[list[JsonValue], str]:
    """Keep ``keep`` entries: the worst first when entries carry a status, else an even sample.

    An even sample (first and last included) keeps the shape of a series such as a loss curve,
    where "worst" has no meaning.
    """
    if _has_status(items):
        order = sorted(range(len(items)), key=lambda i: (severity(items[i]), i))
        chosen = sorted(order[:keep], key=lambda i: (severity(items[i]), i))
        return [items[i] for i in chosen], "worst first (by status), then in original order"
    if keep <= 1:
        return items[:keep], "first entry"
    step = (len(items) - 1) / (keep - 1)
    picked = sorted({round(k * step) for k in range(keep)})
    return [items[i] for i in picked], "evenly spaced sample, first and last included"


def _shrink(value: JsonValue, path: str, keep: int, notes: JsonObject) -> JsonValue:
    """Walk a JSON value, shortening long lists and strings; record what was cut under ``path``."""
    if isinstance(value, dict):
        return {k: _shrink(v, f"{path}.{k}" if path else str(k), keep, notes) for k, v in value.items()}
    if isinstance(value, list):
        # Short lists of plain values (shapes, batch sizes) are data, not tables: never cut them.
        tabular = any(isinstance(v, (dict, list)) for v in value)
        if len(value) > keep and (tabular or len(value) > DEFAULT_MAX_ITEMS):
            kept, how = _shrink_list(value, keep)
            notes[path] = {"kept": len(kept), "total": len(value), "how": how}
            value = kept
        return [_shrink(v, f"{path}[]", keep, notes) for v in value]
    if isinstance(value, str) and len(value) > MAX_STRING_CHARS:
        notes[path] = {"kept": MAX_STRING_CHARS, "total": len(value), "how": "string cut"}
        return value[:MAX_STRING_CHARS] + " … [cut; see compact.full_result]"
    return value


def _shrink_object(value: JsonObject, keep: int, notes: JsonObject) -> JsonObject:
    """:func:`_shrink` of a whole result (an object at the top)."""
    return {k: _shrink(v, str(k), keep, notes) for k, v in value.items()}


def _size(obj: JsonValue) -> int:
    return len(json.dumps(obj, ensure_ascii=False, separators=(",", ":")).encode("utf-8"))


def write_full_result(tool_name: str, full: JsonObject, directory: Path | None = None) -> Path:
    """Write the complete result where an agent can read it later.

    The name is the content's hash, so an agent repeating a call does not fill the disk with copies;
    the write goes through a temporary file so a reader never sees half a result.
    """
    text = json.dumps(full, ensure_ascii=False, indent=1)
    digest = hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]
    folder = directory if directory is not None else results_dir()
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{tool_name}-{digest}.json"
    if not path.is_file():
        # a unique temporary name (not one per process): two threads or calls writing the same
        # result at once must not write into one temporary file
        atomic_write_text(path, text)
    return path


def compact_result(
    spec: ToolSpec,
    result: ToolOutput,
    *,
    full: bool = False,
    budget_bytes: int = DEFAULT_BUDGET_BYTES,
    max_items: int = DEFAULT_MAX_ITEMS,
    directory: Path | None = None,
) -> JsonObject:
    """The result as an agent should see it: compact by default, complete when ``full``.

    The compact form has the output model's fields (shorter lists) plus a ``compact`` object
    naming what was cut and the file holding the complete result. Nothing is written when
    nothing had to be cut.
    """
    complete: JsonObject = result.model_dump(mode="json")
    if full:
        return complete
    notes: JsonObject = {}
    if spec.compact is not None:
        shrunk = dict(spec.compact(result))
        shrunk.setdefault("verdict", complete.get("verdict"))
        shrunk.setdefault("summary", complete.get("summary"))
        notes["(tool)"] = {"how": f"{spec.name}'s own compact form"}
        # The tool's own form may still carry long lists: bound it like any other result.
        keep = max_items
        candidate = _shrink_object(shrunk, keep, notes)
    else:
        keep = max_items
        candidate = _shrink_object(complete, keep, notes)
        size = _size(candidate)
        while size > budget_bytes and keep > 1:
            # Halve the lists until the result fits; stop when halving no longer helps (the bulk
            # is elsewhere), so lists are not cut to nothing for no gain.
            smaller_notes: JsonObject = {}
            smaller = _shrink_object(complete, max(1, math.floor(keep / 2)), smaller_notes)
            smaller_size = _size(smaller)
            if smaller_size > 0.9 * size:
                break
            keep, candidate, notes, size = max(1, math.floor(keep / 2)), smaller, smaller_notes, smaller_size
    if not notes:
        return complete
    path = write_full_result(spec.name, complete, directory)
    candidate["compact"] = {
        "full_result": str(path),
        "truncated": notes,
        "note": "Lists were shortened to fit an agent's context. The complete result is in "
        "full_result; call again with full_result=true to receive it inline.",
    }
    return candidate


COMPACT_SCHEMA: JsonObject = {
    "type": "object",
    "description": "Present only when the result was shortened: what was cut and where the complete result is.",
    "properties": {
        "full_result": {"type": "string", "description": "Path of a JSON file holding the complete result."},
        "truncated": {
            "type": "object",
            "description": "For each shortened field (dotted path): entries kept, total, and how they were chosen.",
        },
        "note": {"type": "string"},
    },
    "required": ["full_result", "truncated"],
}


def compact_output_schema(spec: ToolSpec) -> JsonObject:
    """The output schema an agent front end publishes: the model's, able to carry a compact result.

    Only ``verdict`` and ``summary`` stay required (a tool's own compact form may omit the rest)
    and a ``compact`` property describes the truncation note.
    """
    schema = spec.output_model.model_json_schema(mode="serialization")
    props = dict(schema.get("properties", {}))
    props["compact"] = COMPACT_SCHEMA
    schema["properties"] = props
    schema["required"] = [r for r in schema.get("required", []) if r in ("verdict", "summary")]
    return schema
