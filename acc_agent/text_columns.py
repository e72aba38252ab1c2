"""The one terminal renderer every tool's plain-text output goes through, driven by declared columns.

Why one renderer: every tool prints the same shape — a ``[verdict] summary`` headline, one line per
item of its result (an output, a rank, a batch size, a check) and labelled notes (``warning:``,
``note:``, ``problem:``). Writing that by hand in each tool gave eleven copies of the same loop,
each padding, indenting and escaping in its own way. A tool now declares *what* each line holds
(:class:`Column`: the cell, its width and alignment) and :func:`render` lays it out and makes every
line safe for a terminal (:func:`acc_agent.text_safety.terminal_lines`), so a change of layout or of
the escaping rule is one edit here.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Generic, Literal, Protocol, TypeVar

from acc_agent.text_safety import terminal_lines

__all__ = ["Column", "Headed", "Table", "headline", "labelled", "render"]

RowT = TypeVar("RowT")


class Headed(Protocol):
    """What a headline needs from a tool's result: every output model has these two fields."""

    @property
    def verdict(self) -> str: ...

    @property
    def summary(self) -> str: ...


@dataclass(frozen=True)
class Column(Generic[RowT]):
    """One column of a per-item line: how to get its text from the item, and how wide it is.

    ``width`` pads the text (``align`` ``"<"`` left, ``">"`` right); a text longer than the width is
    never cut, so a long name pushes the rest of its line along instead of being lost. A ``cell``
    returning ``None`` leaves the column out of that line (with its separator): optional parts of a
    line, such as a run's name, are columns like any other.
    """

    cell: Callable[[RowT], str | None]
    width: int = 0
    align: Literal["<", ">"] = "<"

    def text(self, row: RowT) -> str | None:
        value = self.cell(row)
        if value is None:
            return None
        return f"{value:{self.align}{self.width}}" if self.width else value


@dataclass(frozen=True)
class Table(Generic[RowT]):
    """Lines of the same declared columns, one per item, indented under the headline."""

    columns: Sequence[Column[RowT]]
    indent: str = "  "
    separator: str = " "

    def lines(self, rows: Iterable[RowT]) -> list[str]:
        out: list[str] = []
        for row in rows:
            cells = [text for text in (column.text(row) for column in self.columns) if text is not None]
            out.append(self.indent + self.separator.join(cells))
        return out


def headline(result: Headed) -> str:
    """``[verdict] summary``: the first line of every tool's text, the one a script greps for."""
    return f"[{result.verdict}] {result.summary}"


def labelled(label: str, items: Iterable[object], indent: str = "  ") -> list[str]:
    """``  label: item`` for each item (warnings, notes, problems): empty when there are none."""
    return [f"{indent}{label}: {item}" for item in items]


def render(result: Headed, *blocks: Iterable[str]) -> str:
    """The headline, then each block's lines in order, made safe for a terminal."""
    lines = [headline(result)]
    for block in blocks:
        lines.extend(block)
    return terminal_lines(lines)
