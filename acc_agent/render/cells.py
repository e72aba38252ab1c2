"""Cells the templates print: each carries its source, or says N/A with why and how to fill it.

Why one place: every number must name its source and every missing one must say why and how to
fill it. Building cells once keeps the four documents (and both languages) quoting the very same
cell, which is what the consistency check then verifies. A verdict or status is printed as a word
of the document's language (:func:`i18n.word`), never as the tool's machine value, and a tool's own
sentence goes through :func:`tooltext.tool_text` (the document's language, paths relative to the
project folder).
"""

from __future__ import annotations

import math
import os
import re
from datetime import date, datetime, timezone
from pathlib import Path

from markupsafe import Markup

from acc_agent.models.workflow import SkillResult
from acc_agent.render.env import code, fmt_num, md_escape
from acc_agent.render.i18n import translate, word
from acc_agent.render.tooltext import tool_text

#: One table row: every cell is text, most of them Markup already escaped for markdown.
Row = list[str]


def generation_date() -> str:
    """The date a report is generated: ``SOURCE_DATE_EPOCH`` when set (reproducible builds), else today (UTC).

    Why not mig.yaml's ``project.date``: that is the project's own date, and a report re-rendered a
    month later must not claim to be a month older than it is.
    """
    epoch = os.environ.get("SOURCE_DATE_EPOCH", "").strip()
    if epoch.isdigit():
        return datetime.fromtimestamp(int(epoch), tz=timezone.utc).date().isoformat()
    return date.today().isoformat()


class Ctx:
    """Cell builders bound to one language and one project folder."""

    def __init__(self, lang: str, base_dir: Path | None = None) -> None:
        self.lang = lang
        self.base = str(base_dir) if base_dir is not None else None

    def t(self, key: str) -> str:
        return translate(key, self.lang)

    def na(self, reason: str, command: str = "") -> Markup:
        text = f"N/A — {md_escape(reason)}"
        if command:
            text += f"; {md_escape(self.t('fill_with'))}: {code(command)}"
        return Markup(text)

    def gap(self, result: SkillResult, command: str | None = None) -> Markup:
        """N/A with the reason and the command that fills it (``command`` when the plan's own line
        still holds placeholders the report can already fill)."""
        reason = result.reason or f"{result.tool}: {result.status}"
        reason = self.t(result.why_key).format(**result.why_args) if result.why_key else self.tt(reason)
        return self.na(reason, result.command if command is None else command)

    def why(self, result: SkillResult) -> str:
        """Why a slot has no result, in the document's language."""
        return self.t(result.why_key).format(**result.why_args) if result.why_key else self.tt(result.reason)

    def val(self, text: object, source: str = "") -> Markup:
        body = md_escape(fmt_num(text) if isinstance(text, float) else text)
        if source:
            body += f" ({md_escape(self.t('source'))}: {code(source)})"
        return Markup(body)

    def word(self, key: str) -> Markup:
        return Markup(md_escape(self.t(key)))

    def vw(self, kind: str, value: object) -> Markup:
        """A verdict or status word (see i18n.WORDS)."""
        return Markup(md_escape(word(kind, str(value), self.lang)))

    def tt(self, text: object) -> str:
        """A tool's sentence in this document's language, paths relative to the project."""
        return tool_text(str(text), self.lang, self.base)

    def tool(self, text: object, source: str = "") -> Markup:
        """A tool's sentence as a cell, with its source."""
        return self.val(self.tt(text), source)


def finite(value: float | None) -> float | None:
    """The value when it is a finite number; a missing, NaN or infinite one is no number to print."""
    return value if value is not None and math.isfinite(value) else None


def shown(value: object) -> str:
    """A recorded value as text: never a Python repr such as None."""
    if value is None:
        return "—"
    if isinstance(value, float):
        return fmt_num(value)
    return str(value)


def strip_verdict(summary: str) -> str:
    """A tool summary without its leading ``verdict:`` word (the report prints the verdict as a word)."""
    head, sep, rest = summary.partition(": ")
    return rest if sep and head.replace("_", "").isalpha() and head == head.lower() and " " not in head else summary


def with_names(text: str, names: list[str], tail: str = "") -> Markup:
    """``text`` with the check names it lists (``driver, cann_toolkit``) set as code, as the check
    tables print them, so a reader meets no bare identifier in a sentence. Only names standing as
    items of a list (after ``:``/``,``, before ``,``/``;``/the end) are marked, not the same word in prose."""
    idents = sorted(set(names), key=len, reverse=True)
    if not idents:
        return Markup(md_escape(text) + tail)
    pattern = re.compile(r"(?:(?<=: )|(?<=, )|(?<=：))(" + "|".join(re.escape(n) for n in idents) + r")(?=, |;|；|$)")
    parts = pattern.split(text)
    body = "".join(code(part) if k % 2 else md_escape(part) for k, part in enumerate(parts))
    return Markup(body + tail)


def sources(c: Ctx, labelled: tuple[tuple[str, str], ...]) -> Markup:
    """'label `file`, label `command`' for the sources a table was built from (empty ones left out)."""
    return Markup(", ".join(f"{md_escape(c.t(label))} {code(src)}" for label, src in labelled if src))


