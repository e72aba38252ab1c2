"""Make untrusted strings safe for the three places acc-agent prints them: CSV, markdown, terminal.

Why one module: tensor names, model names, paths and notes come from other people's dumps,
logs and project files. A name such as ``=HYPERLINK("http://x","click")`` runs as a formula when
the CSV is opened in a spreadsheet; one holding ``|``, a backtick or ``<script>`` breaks a markdown
table or injects HTML; one holding ANSI escapes or a newline can repaint a terminal or forge an
output line ("[pass] ..."). Each writer calls the one function for its medium, so the rules live
in one place and are tested once.

All functions take and return ``str`` and never raise on any input.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

__all__ = ["markdown_cell", "spreadsheet_cell", "terminal_lines", "terminal_text"]

#: Characters that make a spreadsheet read a cell as a formula (OWASP "CSV Injection"), plus their
#: full-width forms, which some East-Asian spreadsheet locales also accept as a formula start.
_FORMULA_START = frozenset("=+-@\t\r＝＋－＠")

#: A plain number as Python/numpy print it (``-1.5e-3``, ``+2``, ``.5``, ``-inf``, ``nan``).
#: Such a cell cannot hold a formula, and prefixing it would turn a number column into text.
_NUMBER_RE = re.compile(
    r"[+-]?(?:(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?|inf(?:inity)?|nan)",
    re.IGNORECASE,
)

# ECMA-48 escape sequences: CSI (ESC [ ... final), OSC/DCS/SOS/PM/APC strings ended by BEL or
# ST (ESC \\), and the short two- or three-byte forms (ESC [intermediates] final).
_ANSI_RE = re.compile(
    r"\x1b\[[0-?]*[ -/]*[@-~]"
    r"|\x1b[\]PX^_][^\x07\x1b]*(?:\x07|\x1b\\)?"
    r"|\x1b[ -/]*[0-~]"
)

#: Line and paragraph breaks as ``str.splitlines`` knows them, and the tab: each becomes a space.
_BREAKS_RE = re.compile(r"\r\n|[\n\r\t\v\f\x1c\x1d\x1e\x85\u2028\u2029]")

#: C0 and C1 controls and DEL (what is left after breaks became spaces), plus the bidirectional
#: embedding/override/isolate marks that can make text display in another order than it reads
#: ("Trojan Source"). Other format characters (zero-width joiner in emoji, soft hyphen) are kept.
_CONTROL_RE = re.compile(r"[\x00-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")

#: Markdown punctuation that would start emphasis, a link or image, a heading, strike-through,
#: a code span or a new table cell; escaped with a backslash (CommonMark allows that for any
#: ASCII punctuation). ``<``, ``>`` and ``&`` become HTML entities instead (see markdown_cell).
_MD_PUNCT_RE = re.compile(r"([\\`*_\[\]#~|])")


def spreadsheet_cell(text: str) -> str:
    """A CSV cell that a spreadsheet shows as text instead of running it as a formula.

    OWASP's rule: a cell starting with ``=``, ``+``, ``-``, ``@``, tab or carriage return is
    prefixed with a single quote, which spreadsheets take as "this is text" and do not display.
    Numbers (``-1.5e-3``, ``-inf``) are left alone so numeric columns stay numeric, and so is a
    lone ``-`` (the usual N/A placeholder), which cannot hold a formula. Quoting of commas and
    double quotes is the csv writer's job and is not done here.
    """
    if not text or text[0] not in _FORMULA_START or text == "-" or _NUMBER_RE.fullmatch(text):
        return text
    return "'" + text


def terminal_text(text: str) -> str:
    """One line of plain text for a terminal: ANSI escapes and control characters removed.

    Why newlines become spaces: the text renderers print one item per line, so a name holding
    a newline could forge an extra line of output; escapes could recolour or rewrite the screen.
    """
    text = _ANSI_RE.sub("", text)
    text = _BREAKS_RE.sub(" ", text)
    return _CONTROL_RE.sub("", text)


def markdown_cell(text: str) -> str:
    """``text`` as literal content of a markdown paragraph or GFM table cell, on one line.

    Control characters and ANSI escapes are removed and line breaks become spaces (a table row
    must stay on one line); ``&``, ``<`` and ``>`` become ``&amp;``, ``&lt;`` and ``&gt;``, so no
    HTML tag or entity is ever formed; markdown punctuation (``|`` and backticks included) is
    backslash-escaped so the text cannot split a cell, open a code span, a link or emphasis.
    Not for use inside a code span, where neither entities nor escapes are decoded.
    """
    text = terminal_text(text)
    text = text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    return _MD_PUNCT_RE.sub(r"\\\1", text)


def terminal_lines(lines: Iterable[str]) -> str:
    """Join renderer lines for the terminal, each passed through :func:`terminal_text`.

    Why per line: a renderer builds one list item per output line, so any newline found inside an
    item came from a user string (a tensor name, a path) and must not start a forged line.
    """
    return "\n".join(terminal_text(line) for line in lines)
