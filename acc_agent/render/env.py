"""The Jinja2 environment of the deliverables: markdown-safe by default.

Why a custom ``finalize``: a template author will forget to escape some user string (a dataset
name with a pipe breaks a table, one with ``<`` injects HTML). Every ``{{ }}`` output is therefore
escaped for markdown unless it is already :class:`Markup` (made by the ``code``/``raw`` filters),
and ``None`` or a float NaN can never leak into a document: they raise instead. The escaping
rules themselves live in :mod:`acc_agent.text_safety`, shared with the CSV and terminal writers.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from typing import TYPE_CHECKING

from markupsafe import Markup

from acc_agent.errors import AccAgentError
from acc_agent.render.files import placeholder
from acc_agent.render.i18n import LANGS, translate
from acc_agent.resources import templates_dir
from acc_agent.text_safety import markdown_cell, terminal_text

if TYPE_CHECKING:
    import jinja2


def md_escape(value: object) -> str:
    """Escape a user string for a markdown paragraph or table cell (see text_safety.markdown_cell)."""
    return markdown_cell(str(value))


def code(value: object) -> Markup:
    """Inline code that survives tables: pipes escaped, backtick fence longer than any run inside.

    Control characters and ANSI escapes are dropped first (terminal_text): nothing inside a code
    span is decoded, so they would reach the reader's screen as they are.
    """
    text = terminal_text(str(value)).replace("|", "\\|")
    runs = [len(m) for m in re.findall(r"`+", text)]
    fence = "`" * (max(runs, default=0) + 1)
    pad = " " if text.startswith("`") or text.endswith("`") else ""
    return Markup(f"{fence}{pad}{text}{pad}{fence}")


def fmt_num(value: float | None, digits: int = 4) -> str:
    """Numbers as reviewers read them: 4 significant digits, scientific when tiny or huge."""
    if value is None:
        raise ValueError("fmt_num got None: the context must turn missing numbers into N/A with a reason")
    v = float(value)
    if math.isnan(v) or math.isinf(v):
        return "NaN" if math.isnan(v) else ("+Inf" if v > 0 else "-Inf")
    if v != 0 and (abs(v) < 1e-3 or abs(v) >= 1e6):
        return f"{v:.{digits - 1}e}"
    return f"{v:.{digits}g}"


def pct(value: float) -> str:
    return f"{float(value) * 100:.1f} %"


def _finalize(value: object) -> str:
    if value is None:
        raise ValueError("a template printed None: missing values must be rendered as N/A with a reason")
    if isinstance(value, Markup):
        return value
    if isinstance(value, float):
        return fmt_num(value)
    if isinstance(value, bool):
        return str(value).lower()
    return md_escape(value)


def cell(value: object) -> str:
    """One table cell or inline value, escaped exactly as a ``{{ }}`` expression would be."""
    return str(_finalize(value))


def table(headers: Sequence[object], rows: Sequence[Sequence[object]]) -> Markup:
    """A GFM table whose every row has the header's cell count (short rows are padded with a dash)."""
    n = len(headers)
    lines = ["| " + " | ".join(cell(h) for h in headers) + " |", "|" + " --- |" * n]
    for row in rows:
        cells = [cell(v) for v in row][:n] + ["—"] * max(0, n - len(row))
        lines.append("| " + " | ".join(cells) + " |")
    return Markup("\n".join(lines))


def keep(block_id: str, default: str) -> Markup:
    """A human-owned block: its body survives re-rendering byte for byte (render/files.py).

    Until someone writes it, the body is ``default`` after the placeholder marker: a document that
    still holds one is never reported complete, and ``report --check`` names it.
    """
    if not re.fullmatch(r"[A-Za-z0-9_.-]+", block_id):
        raise ValueError(f"bad keep-block id {block_id!r}")
    text = md_escape(default)
    return Markup(f"<!-- acc-agent:keep {block_id} -->\n{placeholder(text)}\n{text}\n"
                  f"<!-- acc-agent:end {block_id} -->")


def plot(path: str | None, alt: str) -> Markup:
    """An image link to a PNG next to the documents, or nothing when the plot could not be made."""
    if not path:
        return Markup("")
    return Markup(f"![{md_escape(alt)}]({path})")


def make_env(lang: str) -> jinja2.Environment:
    """A fresh environment for one language; ``t('key')`` translates via i18n."""
    import jinja2

    if lang not in LANGS:
        raise AccAgentError("invalid_language", f"unsupported language {lang!r}", hint="Use --lang en or --lang zh.")
    root = templates_dir()
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader([str(root / lang)]),
        undefined=jinja2.StrictUndefined,
        finalize=_finalize,
        keep_trailing_newline=True,
        trim_blocks=True,
        lstrip_blocks=True,
        autoescape=False,
    )
    env.filters["code"] = code
    env.filters["num"] = lambda v, d=4: Markup(md_escape(fmt_num(v, d)))
    env.filters["pct"] = lambda v: Markup(pct(v))
    env.filters["raw"] = Markup
    env.filters["md"] = lambda v: Markup(md_escape(v))
    env.globals["t"] = lambda key: Markup(md_escape(translate(key, lang)))
    env.globals["lang"] = lang
    env.globals["table"] = table
    env.globals["keep"] = keep
    env.globals["plot"] = plot
    env.globals["facts"] = lambda item, value, pairs: table(
        [item, value], [[Markup(md_escape(translate(k, lang))), v] for k, v in pairs])
    return env
