"""Columnar reading of a run of Megatron iteration lines that share one layout.

Why: a million-line log spends its time in per-line Python (split, tuple, float, append). The lines
of one run print the same fields in the same order, so a run of them is read as a table: the lines
are joined once and split on ``|`` and ``:`` in C, each column is checked to hold its one field name, the
numbers of a column are converted in one numpy call, and a column that repeats one value
(loss scale, skipped iterations, batch size) is converted once. Anything irregular — another field
set, a non-numeric value, a line that is not an iteration line — returns ``None`` and the caller
reads those lines one by one, so the fast path never changes what is parsed, only how fast.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from acc_agent.io.logs.base import canonical_name

MIN_ROWS = 8  # below this the per-line reader is as fast and simpler


@dataclass(frozen=True)
class Columns:
    """Iteration lines read as a table: step, declared total and one float64 array per field."""

    first_line: int
    last_line: int
    steps: Any  # numpy int64 array
    total: int | None
    names: tuple[str, ...]
    values: tuple[Any, ...]  # numpy float64 arrays, one per name, each as long as ``steps``


_LAYOUTS: dict[tuple[str, ...], tuple[str, ...] | None] = {}


def _names(tail: str) -> tuple[tuple[str, ...], tuple[str, ...] | None]:
    """(field keys, canonical names) of an iteration line's tail; names None if a value is not a number."""
    parts = tail.replace("|", ":").split(":")
    keys = tuple(parts[1:-1:2])
    if keys in _LAYOUTS:
        return keys, _LAYOUTS[keys]
    names: tuple[str, ...] | None = tuple(canonical_name(k) for k in keys)
    try:
        for raw in parts[2:-1:2]:
            float(raw)
    except ValueError:
        names = None
    if len(parts) != 2 * len(keys) + 2 or not all(k.strip() for k in keys):  # header, key/value pairs, ""
        names = None
    _LAYOUTS[keys] = names
    return keys, names


def _to_floats(numbers: list[str], np: Any) -> Any:
    """float64 array of printed numbers; a column that repeats values (learning rate, step time
    rounded to 0.1 ms) converts each distinct spelling once — parsing a float costs far more than
    looking one up."""
    distinct = set(numbers)
    if 2 * len(distinct) > len(numbers):
        return np.array(numbers, dtype=np.float64)  # float() of each, in C
    keys = list(distinct)
    table = dict(zip(keys, np.array(keys, dtype=np.float64).tolist(), strict=True))
    return np.array(list(map(table.__getitem__, numbers)), dtype=np.float64)


def read_columns(lines: list[str], first_line: int) -> Columns | None:
    """``lines`` (consecutive iteration lines, no other line between) as one table, or None.

    Each line from ``iteration`` on is ``iteration N/ M | key: value | ... |``; joined and split on
    ``|`` and ``:`` together, a table of k fields gives exactly 2k + 1 tokens a line: the header,
    then key and value alternately (the text after a line's last ``|`` joins the next header).
    Every key column must hold its one key on every line, else the lines are not one table.
    """
    import numpy as np

    n = len(lines)
    if n < MIN_ROWS:
        return None
    tails = [line[line.find("iteration ") :] for line in lines]
    keys, names = _names(tails[0])
    if names is None:
        return None
    stride = 2 * len(keys) + 1
    tokens = "\n".join(tails).replace("|", ":").split(":")
    if len(tokens) != n * stride + 1 or tokens[-1].strip():
        return None
    end = n * stride
    heads = " ".join(tokens[0:end:stride]).replace("/", " ").split()
    if len(heads) != 3 * n or heads[0::3].count("iteration") != n:
        return None
    try:
        steps = np.array(heads[1::3], dtype=np.int64)
        total = int(heads[-1])
        values = []
        for j, key in enumerate(keys):
            if tokens[1 + 2 * j : end : stride].count(key) != n:
                return None
            col = tokens[2 + 2 * j : end : stride]
            if col.count(col[0]) == n:  # one value all along (loss scale, skipped iterations...)
                values.append(np.full(n, float(col[0])))
            else:
                values.append(_to_floats(col, np))
    except (ValueError, OverflowError):  # OverflowError: a step past int64, for the per-line reader to drop
        return None
    return Columns(first_line, first_line + n - 1, steps, total, names, tuple(values))
