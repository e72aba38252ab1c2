"""Render the four documents (and their plots) for one language from one workflow result.

Why separate from the tool: the ``render_deliverables`` tool writes through it (app/report.py),
``report --check`` re-renders through it to prove a document still says what its inputs give, and
tests call it directly with a prepared workflow result.

Each document opens with a marker that records what it is and how it was made — document,
language, generation date, status (``complete`` only when no section says N/A and no hand-written
part still holds its placeholder) and the project file as seen from the documents' folder — so a
later check can find the inputs and re-compute the document.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from urllib.parse import quote, unquote

from markupsafe import Markup

from acc_agent.models.workflow import WorkflowResult
from acc_agent.render.files import Prepared, placeholders, prepare

DOCUMENTS = ("Mig_Readme", "Compare", "Mig_report", "Summary")

META_RE = re.compile(r"<!-- acc-agent doc=(?P<doc>\w+) lang=(?P<lang>\w+)(?P<attrs>(?: \w+=\S+)*) -->")
_ATTR_RE = re.compile(r" (\w+)=(\S+)")


def meta_line(doc: str, lang: str, generated: str, config: str, status: str = "pending") -> str:
    """The marker comment each document starts with (see the module docstring)."""
    return (f"<!-- acc-agent doc={doc} lang={lang} generated={generated} status={status} "
            f"config={quote(config, safe='/._-~')} -->")


def read_meta(text: str) -> dict[str, str]:
    """The marker's fields (``doc``, ``lang``, and ``generated``/``status``/``config`` when recorded)."""
    m = META_RE.search(text)
    if m is None:
        return {}
    out = {"doc": m.group("doc"), "lang": m.group("lang")}
    for key, value in _ATTR_RE.findall(m.group("attrs") or ""):
        out[key] = unquote(value) if key == "config" else value
    return out


def set_status(text: str, status: str) -> str:
    """``text`` with the marker's status replaced."""
    return META_RE.sub(lambda m: re.sub(r"(?<= )status=\S+", f"status={status}", m.group(0)), text, count=1)


def config_from(out_dir: Path, config_path: Path) -> str:
    """The project file as a path relative to the documents' folder (absolute when on another drive)."""
    try:
        return os.path.relpath(config_path.resolve(), out_dir.resolve())
    except ValueError:
        return str(config_path.resolve())


def render_text(wf: WorkflowResult, lang: str, plots: dict[str, str] | None = None, generated: str | None = None,
                config: str = "mig.yaml") -> dict[str, str]:
    """The markdown of each document, in memory (no files touched); the marker's status is ``pending``."""
    from acc_agent.render.cells import generation_date
    from acc_agent.render.context import build_context
    from acc_agent.render.env import make_env

    env = make_env(lang)
    generated = generated or generation_date()
    ctx = build_context(wf, lang, plots, generated=generated, config=config)
    ctx["meta"] = lambda doc: Markup(meta_line(doc, lang, generated, config))
    return {name: env.get_template(f"{name}.md.j2").render(**ctx) for name in DOCUMENTS}


def has_gaps(wf: WorkflowResult) -> bool:
    """Whether some skill result is missing (a section says N/A with the command that fills it)."""
    return any(not r.ok and r.status != "not_applicable" for r in wf.results.values())


def finish(wf: WorkflowResult, texts: dict[str, str], out_dir: Path) -> tuple[list[Prepared], str, list[tuple[str, int, str]]]:
    """Merge each document with the kept blocks of the file it replaces, and stamp the set's status.

    Returns the prepared documents, the status (``complete`` or ``with_gaps``) and every placeholder
    left as (document, line, block id).
    """
    prepared = [prepare(out_dir / f"{name}.md", text) for name, text in texts.items()]
    left = [(prep.path.stem, line, bid) for prep in prepared for line, bid in placeholders(prep.text)]
    status = "with_gaps" if has_gaps(wf) or left else "complete"
    for prep in prepared:
        prep.text = set_status(prep.text, status)
    return prepared, status, left
