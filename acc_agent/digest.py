"""The answer an agent reads: a short summary first, the complete result in files it can open.

Why: an agent pays for every byte a tool returns, on every later turn. A dump comparison
returned whole is tens of kilobytes, most of it columns nobody reads; returned twice (as text and
as structured content) it is double that. So an agent front end answers with a *digest*:

- the verdict and the tool's one-line summary;
- the fields that say where to look (e.g. ``first_divergence`` and ``diagnosis``), long texts cut;
- the 5-10 table rows that matter: the row at the first divergence with its neighbours and
  inputs when the result names one, else the worst rows (one row per tensor: a tensor that is
  one call's output and the next call's input appears once);
- the next actions;
- the files holding everything else: the complete result as JSON (always written) and the
  files the tool wrote itself (the full CSV table, plots, documents).

The same digest is given as structured content (JSON) and as text (for clients that only read
text); nothing beyond the digest is repeated. :func:`output_schema` describes both the digest and
the complete result, so structured content validates either way.

It is generic over output models (field names and row statuses steer it), so a new tool gets a
sensible digest without code here.
"""

from __future__ import annotations

import json
import math
import mimetypes
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypeGuard

from acc_agent.compact import severity, write_full_result
from acc_agent.json_types import JsonObject, JsonValue
from acc_agent.models.common import ToolOutput
from acc_agent.tools.spec import ToolSpec

#: Most table rows in a digest.
ROWS_MAX = 8
#: Rows kept when the digest is over its budget.
ROWS_MIN = 5
#: Longest string kept whole in a digest (explanations, reasons).
STRING_MAX = 420
#: Most entries of a list of strings (next actions, notes).
LIST_MAX = 5
#: Byte budget of the digest as JSON; over it, rows and strings shrink.
DIGEST_BUDGET = 3_700
#: Byte budget of the text answer.
TEXT_BUDGET = 4_000
#: Key of the digest's note on what was cut and where the complete result is.
MORE_KEY = "more"

#: Columns a table row keeps, in this order, when it has them (the contract fields of the tools).
_ROW_KEYS = (
    "name", "output", "batch_size", "metric", "key", "check", "stage", "slot", "layer", "step", "status",
    "verdict", "outcome", "cosine", "max_abs_err", "max_rel_err", "within_tolerance_ratio",
    "one_thousandth_ratio", "five_thousandths_ratio", "ratio", "p50_ms", "p95_ms", "mean_ms", "throughput",
    "baseline", "target", "value", "message", "reason", "fix",
)  # fmt: skip
#: Row columns left out: duplicates of other columns, or bookkeeping an agent never reads.
_ROW_NOISE_SUFFIXES = ("_exact", "_norm", "_stats", "_md5", "_requires_grad", "_nan", "_inf", "_shape", "_dtype")
_MAX_ROW_COLUMNS = 10

#: Keys of result fields whose file an agent may want to open (besides the complete JSON).
_FILE_KEYS_SUFFIX = "_path"
_FILE_DESCRIPTIONS = {
    ".csv": "the full table",
    ".png": "plot",
    ".md": "document",
    ".json": "results file written by the tool",
}


@dataclass
class ResultFile:
    """A file an answer links to (MCP ``resource_link`` content)."""

    path: Path
    description: str

    @property
    def uri(self) -> str:
        return self.path.resolve().as_uri()

    @property
    def mime_type(self) -> str:
        guessed = mimetypes.guess_type(self.path.name)[0]
        if self.path.suffix == ".md":
            return "text/markdown"
        return guessed or "application/octet-stream"


@dataclass
class AgentAnswer:
    """What an agent front end sends back for one call."""

    text: str
    structured: JsonObject
    files: list[ResultFile] = field(default_factory=list)


# --------------------------------------------------------------------------- digest


def _empty(value: JsonValue) -> bool:
    return value is None or value == "" or value == [] or value == {}


def _round(value: JsonValue) -> JsonValue:
    """Numbers to 6 significant digits: the digits beyond say nothing and cost bytes."""
    if isinstance(value, float) and math.isfinite(value) and value != 0:
        return float(f"{value:.6g}")
    return value


def _cut(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    return text[: limit - 1].rstrip() + "…"


def _scalar(value: JsonValue) -> bool:
    return value is None or isinstance(value, (str, int, float, bool))


def _all_strings(values: list[JsonValue]) -> TypeGuard[list[str]]:
    return all(isinstance(v, str) for v in values)


def _all_objects(values: list[JsonValue]) -> TypeGuard[list[JsonObject]]:
    return all(isinstance(v, dict) for v in values)


def _as_json(mapping: Mapping[str, JsonValue]) -> JsonObject:
    return dict(mapping)


def _brief_dict(value: JsonObject, limit: int, depth: int = 1) -> JsonObject:
    """A nested object: its scalars, short lists of strings, and small nested objects."""
    out: JsonObject = {}
    for key, sub in value.items():
        if _empty(sub):
            continue
        if isinstance(sub, str):
            out[key] = _cut(sub, limit)
        elif _scalar(sub):
            out[key] = _round(sub)
        elif isinstance(sub, list) and _all_strings(sub):
            out[key] = [_cut(s, limit) for s in sub[:LIST_MAX]]
        elif isinstance(sub, list) and all(_scalar(s) for s in sub) and len(sub) <= 8:
            out[key] = [_round(s) for s in sub]
        elif isinstance(sub, dict) and depth > 0:
            small = _brief_dict(sub, limit // 2, depth - 1)
            if small and len(json.dumps(small, ensure_ascii=False)) <= 360:
                out[key] = small
    return out


def _row_columns(rows: list[JsonObject]) -> list[str]:
    """The columns a digest table keeps: the known contract columns first, then other scalars."""
    present: dict[str, None] = {}
    for row in rows:
        for key, value in row.items():
            if _scalar(value) and not _empty(value) and not key.endswith(_ROW_NOISE_SUFFIXES):
                present[key] = None
    known = [k for k in _ROW_KEYS if k in present]
    others = [k for k in present if k not in known and not k.startswith(("golden_", "target_", "bench_"))]
    return (known + others)[:_MAX_ROW_COLUMNS]


def _same_tensor(a: JsonObject, b: JsonObject) -> bool:
    """Two rows that are one tensor seen twice (one call's output, the next call's input)."""
    keys = ("cosine", "max_abs_err", "max_rel_err", "euc_dist")
    have = [k for k in keys if isinstance(a.get(k), (int, float)) and isinstance(b.get(k), (int, float))]
    return len(have) >= 3 and all(a[k] == b[k] for k in have) and a.get("numel") == b.get("numel")


def _anchor(full: JsonObject) -> tuple[str | None, list[str]]:
    """The row name a result points at (its first divergence), and that call's input rows."""
    for key in ("first_divergence", "first_nondeterministic"):
        point = full.get(key)
        name = point.get("name") if isinstance(point, dict) else None
        if isinstance(point, dict) and isinstance(name, str):
            inputs = point.get("input_names")
            return name, [n for n in inputs if isinstance(n, str)] if isinstance(inputs, list) else []
        if isinstance(point, str):
            return point, []
    return None, []


def _cell(value: JsonValue) -> JsonValue:
    return _cut(value, 200) if isinstance(value, str) else _round(value)


def _pick_rows(rows: list[JsonValue], full: JsonObject, keep: int) -> tuple[list[JsonValue], str]:
    """The rows that matter, and how they were chosen (said in the answer)."""
    dicts = [r for r in rows if isinstance(r, dict)]
    if not dicts:
        return [], ""
    order = list(range(len(dicts)))
    anchor, inputs = _anchor(full)
    names = [str(r.get("name", "")) for r in dicts]
    chosen: list[int] = []
    how = ""
    if anchor is not None and anchor in names:
        at = names.index(anchor)
        by_index = sorted(order, key=lambda i: (dicts[i].get("index", i) if isinstance(dicts[i].get("index"), int)
                                                else i, i))
        pos = by_index.index(at)
        chosen = [at] + [i for i, n in enumerate(names) if n in inputs]
        chosen += [by_index[p] for p in (pos - 1, pos + 1) if 0 <= p < len(by_index)]
        how = "the first divergence, its inputs and neighbours, then the worst"
    ranked = sorted(order, key=lambda i: (severity(dicts[i]), i))
    if how:  # around a named divergence, rows that pass say nothing more
        ranked = [i for i in ranked if severity(dicts[i]) < severity({"status": "pass"})]
    if not how:
        how = "worst first" if any(severity(d) < 5 for d in dicts) else "first entries"
        if how == "first entries" and len(dicts) > keep:
            ranked = order
    for i in ranked:
        if len(dict.fromkeys(chosen)) >= keep:
            break
        chosen.append(i)
    picked = list(dict.fromkeys(chosen))[:keep]
    if anchor is not None and anchor in names:
        picked.sort(key=lambda i: (dicts[i].get("index", i) if isinstance(dicts[i].get("index"), int) else i, i))
    # One row per tensor: fold a repeat of the previous row (same metrics) into an "also" note.
    kept: list[tuple[JsonObject, str | None]] = []  # a row, and the name of a repeat folded into it
    previous: JsonObject | None = None
    for i in picked:
        row = dicts[i]
        if previous is not None and _same_tensor(previous, row) and kept:
            if kept[-1][1] is None:
                kept[-1] = (kept[-1][0], str(row.get("name", "")))
            continue
        kept.append((row, None))
        previous = row
    columns = _row_columns([src for src, _ in kept])
    shaped: list[JsonValue] = []
    for src, also in kept:
        passing = str(src.get("status", src.get("verdict", ""))).lower() in ("pass", "ok", "same", "met")
        row_out: JsonObject = {k: _cell(src[k]) for k in columns
                               if k in src and not _empty(src[k]) and not (passing and k == "message")}
        if also is not None:
            row_out["also"] = also
        shaped.append(row_out)
    return shaped, how


def _digest(full: JsonObject, keep_rows: int, limit: int) -> tuple[JsonObject, dict[str, str]]:
    """The digest of a complete result, and what it shortened (field -> note)."""
    out: JsonObject = {"verdict": full.get("verdict"), "summary": _cut(str(full.get("summary", "")), 1200)}
    cut: dict[str, str] = {}
    for key, value in full.items():
        if key in ("verdict", "summary"):
            continue
        if key == "evidence":
            if isinstance(value, (list, dict, str)) and value:
                cut[key] = f"{len(value)} entries left out"
            continue
        if _empty(value):
            continue
        if isinstance(value, str):
            out[key] = _cut(value, limit)
        elif _scalar(value):
            out[key] = _round(value)
        elif isinstance(value, dict):
            small = _brief_dict(value, limit)
            if small:
                out[key] = small
            if len(json.dumps(small, ensure_ascii=False)) < len(json.dumps(value, ensure_ascii=False)) - 2:
                cut[key] = "shortened"
        elif isinstance(value, list) and _all_strings(value):
            out[key] = [_cut(v, limit) for v in value[:LIST_MAX]]
            if len(value) > LIST_MAX:
                cut[key] = f"{LIST_MAX} of {len(value)}"
        elif isinstance(value, list) and all(_scalar(v) for v in value):
            out[key] = [_round(v) for v in value[:10]]
            if len(value) > 10:
                cut[key] = f"10 of {len(value)}"
        elif isinstance(value, list):
            rows, how = _pick_rows(value, full, keep_rows)
            if rows:
                out[key] = rows
            total = full.get(f"{key}_total", len(value))
            cut[key] = f"{len(rows)} of {total}: {how}"
        else:  # pragma: no cover - JSON values are covered above
            continue
    return out, cut


def _size(obj: JsonValue) -> int:
    return len(json.dumps(obj, ensure_ascii=False, separators=(",", ":")).encode("utf-8"))


def digest(full: JsonObject, budget: int = DIGEST_BUDGET) -> tuple[JsonObject, dict[str, str]]:
    """The digest within ``budget`` bytes: fewer rows, then shorter texts, then fewer rows again."""
    keep, limit = ROWS_MAX, STRING_MAX
    out, cut = _digest(full, keep, limit)
    while _size(out) > budget and keep > 1:
        if keep > ROWS_MIN:
            keep -= 1
        elif limit > 120:
            limit = max(120, limit - 100)
        else:
            keep -= 1
        out, cut = _digest(full, keep, limit)
    return out, cut


# --------------------------------------------------------------------------- files


def _tool_files(full: JsonObject) -> list[ResultFile]:
    """Files the tool itself wrote and names in its result (tables, plots, documents, results JSON)."""
    found: dict[Path, str] = {}

    def add(value: JsonValue, description: str) -> None:
        if isinstance(value, str) and value:
            path = Path(value)
            if path.is_file() and path not in found:
                found[path] = description

    for key, value in full.items():
        if key.endswith(_FILE_KEYS_SUFFIX):
            add(value, _FILE_DESCRIPTIONS.get(Path(str(value)).suffix, key.replace("_", " ")))
    files, plots = full.get("files"), full.get("plots")
    for item in files if isinstance(files, list) else []:
        if isinstance(item, dict):
            add(item.get("path"), "document")
    for plot in plots if isinstance(plots, list) else []:
        add(plot, "plot")
    return [ResultFile(p, d) for p, d in found.items()]


# --------------------------------------------------------------------------- text


def _fmt(value: JsonValue) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return f"{value:.6g}"
    if isinstance(value, (list, tuple)):
        return ", ".join(_fmt(v) for v in value)
    if isinstance(value, dict):
        return "; ".join(f"{k}={_fmt(v)}" for k, v in value.items())
    return str(value)


def _table(rows: list[JsonObject]) -> list[str]:
    columns: list[str] = []
    for row in rows:
        columns += [k for k in row if k not in columns]
    lines = ["  | " + " | ".join(columns) + " |"]
    for row in rows:
        lines.append("  | " + " | ".join(_fmt(row.get(c, "")).replace("|", "/") for c in columns) + " |")
    return lines


def render_text(tool: str, answer: JsonObject, cut: dict[str, str], files: list[ResultFile],
                full_inline: bool = False) -> str:
    """The digest as text an agent reads top-down: verdict, where to look, rows, next steps, files."""
    lines = [f"{tool}: [{answer.get('verdict')}] {answer.get('summary', '')}"]
    scalars = {k: v for k, v in answer.items() if k not in ("verdict", "summary", MORE_KEY) and _scalar(v)}
    nested = {k: v for k, v in answer.items() if k not in ("verdict", "summary", MORE_KEY) and not _scalar(v)}
    for key, value in nested.items():
        if isinstance(value, dict):
            flat: JsonObject = {k: v for k, v in value.items() if not isinstance(v, (list, dict))}
            lines.append(f"{key}: {_fmt(flat)}")
            for sub, items in value.items():
                if isinstance(items, list) and items and all(isinstance(i, str) for i in items):
                    lines.append(f"{key}.{sub}:")
                    lines += [f"  {n}. {item}" for n, item in enumerate(items, 1)]
                elif isinstance(items, (list, dict)) and items:
                    lines.append(f"{key}.{sub}: {_fmt(items)}")
        elif isinstance(value, list) and value and _all_strings(value):
            lines.append(f"{key}:")
            lines += [f"  {n}. {item}" for n, item in enumerate(value, 1)]
        elif isinstance(value, list) and value and _all_objects(value):
            lines.append(f"{key} ({cut.get(key, str(len(value)))}):")
            lines += _table(value)
        elif value:
            lines.append(f"{key}: {_fmt(value)}")
    if scalars:
        lines.append(_fmt(scalars))
    if full_inline:
        lines.append("structuredContent holds the complete result.")
    lines += [f"{f.description}: {f.path}" for f in files]
    text = "\n".join(lines)
    if len(text.encode("utf-8")) > TEXT_BUDGET:
        keep = TEXT_BUDGET - 120
        text = text.encode("utf-8")[:keep].decode("utf-8", "ignore").rstrip() + "\n… (cut; the complete result is in the JSON file)"
        text += "\n" + "\n".join(f"{f.description}: {f.path}" for f in files[:2])
    return text


# --------------------------------------------------------------------------- answer and schema


def answer(spec: ToolSpec, result: ToolOutput, *, full: bool = False, directory: Path | None = None) -> AgentAnswer:
    """The answer for one call: the digest (text and structured), and links to the complete result.

    With ``full`` the structured content is the complete result; the text stays the digest, so
    the two still do not repeat each other beyond the summary.
    """
    complete: JsonObject = result.model_dump(mode="json")
    json_path = write_full_result(spec.name, complete, directory)
    files = [*_tool_files(complete), ResultFile(json_path, "complete result (JSON)")]
    short, cut = digest(complete)
    more: JsonObject = {"full_result": str(json_path), "cut": _as_json(cut)} if cut else {"full_result": str(json_path)}
    if _size(short) + _size(more) > DIGEST_BUDGET:  # the note counts too
        short, cut = digest(complete, DIGEST_BUDGET - _size(more))
        more = {"full_result": str(json_path), "cut": _as_json(cut)} if cut else {"full_result": str(json_path)}
    short[MORE_KEY] = more
    text = render_text(spec.name, short, cut, files, full_inline=full)
    return AgentAnswer(text=text, structured=complete if full else short, files=files)


def output_schema(spec: ToolSpec) -> JsonObject:
    """The output schema MCP publishes: the verdicts and the summary, valid for digest and complete result.

    An agent branches on the verdict (so its documented values are listed) and reads the rest
    from the answer itself, whose fields are named there; describing every nested field cost ~8 KB
    per tool list that no agent read. Any other field is allowed, so the complete result
    (``full_result=true``) validates too.
    """
    node = spec.output_model.model_json_schema(mode="serialization").get("properties", {}).get("verdict", {})
    verdict: JsonObject = {"enum": node["enum"]} if "enum" in node else {"type": "string"}
    return {
        "type": "object",
        "properties": {"verdict": verdict, "summary": {"type": "string"}},
        "required": ["verdict", "summary"],
    }
