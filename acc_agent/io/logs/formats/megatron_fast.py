"""Columnar reading of a run of Megatron iteration lines that share one layout.

Why: a million-line log spends its time in per-line Python (split, tuple, float, append). The lines
of one run print the same fields in the same order, so a run of them is read as a table, a few
hundred lines at a time (their tokens stay in the CPU cache): the lines, from their first
"iteration " on, are joined once, encoded and split on ``|`` and ``:`` in C; the keys of all rows
are checked with one comparison; the headers (``iteration N/ M``) are read as one byte matrix when
printed in fixed columns, else as one JSON array; a column that repeats one value (loss scale,
skipped iterations, batch size) is converted once, and the other columns are read as JSON arrays
by orjson, which rounds like float() at a quarter of its cost. Anything irregular — another field
set, a non-numeric value, a header the per-line reader would not take — returns ``None`` and the
caller reads those lines one by one, so the fast path never changes what is parsed, only how fast.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from itertools import repeat
from operator import getitem, itemgetter
from typing import cast

import orjson

from acc_agent.io.arrays import FloatArray, Int64Array
from acc_agent.io.logs.base import Record, canonical_name

MIN_ROWS = 8  # below this the per-line reader is as fast and simpler
BLOCK_ROWS = 384  # rows split and converted together: their tokens stay in the CPU cache
_STEP_LIMIT = 10**18  # steps of 19 digits or more the per-line reader drops as damage
# The per-line reader's header, matched at a line's first "iteration " (megatron._ITER_AT).
_HEADER = re.compile(r"iteration\s+(\d+)\s*/\s*(\d+)\s*\|")


@dataclass(frozen=True)
class Columns:
    """Iteration lines read as a table: step, declared total and one float64 array per field."""

    first_line: int
    last_line: int
    steps: Int64Array
    total: int | None
    names: tuple[str, ...]
    values: tuple[FloatArray, ...]  # one per name, each as long as ``steps``
    uniform_total: bool = True  # every row declares the same total (else ``total`` is only the last row's)
    # Rows whose line numbers are not consecutive (other lines were read between them): the line
    # numbers, one per row; None when row i is line ``first_line + i``.
    lines: Int64Array | None = None
    # Records read between the rows, in file order, as (p, record): the record comes after row p - 1
    # and before row p (0 < p <= len(steps)). Only the ranks' merged memory lines travel this way.
    memory: tuple[tuple[int, Record], ...] = ()

    def line_of(self, row: int) -> int:
        return self.first_line + row if self.lines is None else int(self.lines[row])


@dataclass(frozen=True)
class _Layout:
    """The fields of an iteration line after its header's ``|``: ``key: value |`` k times, then ``rem``."""

    keys: tuple[str, ...]  # as printed, blanks included
    names: tuple[str, ...]  # canonical names
    row_keys: bytes  # the keys and remainder of a row that ends a line: "key:...:key:rem\n", UTF-8
    last_keys: bytes  # the keys of a block's last row: "key:...:key"

    def keys_of(self, n: int) -> bytes:
        """The key and remainder tokens of n rows joined with ":", the last row's remainder left out."""
        return (self.row_keys + b":") * (n - 1) + self.last_keys


# Keyed on the keys and the remainder: what the lines print, never which values they held.
_LAYOUTS: dict[tuple[tuple[str, ...], str], _Layout | None] = {}


def _layout(line: str) -> _Layout | None:
    """The field layout of an iteration line that could start a table, or None."""
    at = line.find("iteration ")
    m = _HEADER.match(line, at) if at >= 0 else None
    if m is None:
        return None
    parts = line[m.end() :].replace("|", ":").split(":")
    if len(parts) < 3 or not len(parts) & 1:  # key/value pairs, then what follows the last "|"
        return None
    try:
        for raw in parts[1:-1:2]:
            float(raw)
    except ValueError:
        return None
    keys = tuple(parts[0:-1:2])
    rem = parts[-1]
    cache_key = (keys, rem)
    if cache_key not in _LAYOUTS:
        layout = None
        if all(k.strip() for k in keys):  # a blank key is not a field for the per-line reader
            joined = ":".join(keys)
            try:
                layout = _Layout(keys, tuple(canonical_name(k) for k in keys), f"{joined}:{rem}\n".encode(), joined.encode())
            except UnicodeEncodeError:  # a lone surrogate
                layout = None
        _LAYOUTS[cache_key] = layout
    return _LAYOUTS[cache_key]


def column_floats(col: list[bytes]) -> FloatArray:
    """A column of printed numbers (UTF-8) as float64, or ValueError.

    A column that repeats one value all along (loss scale, skipped iterations, batch size) is
    converted once; any other goes through :func:`_to_floats`.
    """
    first = col[0]
    if col[-1] == first and col.count(first) == len(col):
        import numpy as np  # imported where used: a short log never pays for numpy

        return np.full(len(col), float(first))
    return _to_floats(col)


def _to_floats(numbers: list[bytes]) -> FloatArray:
    """float64 array of printed numbers (UTF-8), each exactly as float() reads it, or ValueError.

    Why not float() of each: it costs about 250 ns a number on a busy machine, a third of the whole
    reading time. The column is read as one JSON array by orjson instead (about 70 ns a number),
    whose number parsing rounds correctly, like float(); integers come back as ints, and an int's
    float64 is the same as float() of its spelling. What JSON cannot read goes through float(),
    which reads bytes as it reads their ASCII text and refuses other bytes (the caller then reads
    the lines one by one, where float() gets the text).
    """
    parsed = _json_floats(b",".join(numbers), len(numbers))
    if parsed is not None:
        return parsed
    import numpy as np

    return np.array(list(map(float, numbers)), dtype=np.float64)


def _json_floats(inner: bytes, n: int) -> FloatArray | None:
    """``inner`` (n numbers between commas) read as a JSON array, or None where float() must decide."""
    # JSON's numbers are a subset of what float() reads; these characters would let JSON read
    # something float() refuses (strings, true/false/null, nested arrays and objects).
    if b'"' in inner or b"[" in inner or b"{" in inner or b"t" in inner or b"f" in inner or b"n" in inner:
        return None
    try:
        parsed = orjson.loads(b"[" + inner + b"]")
    except orjson.JSONDecodeError:
        return None  # nan, inf, 1E400, +1, 007, .5 ...: float() decides
    if len(parsed) != n:
        return None
    import numpy as np

    out = np.array(parsed, dtype=np.float64)
    if b"-" in inner and not out.all() and _MINUS_ZERO.search(inner):
        return None
    return out


_MINUS_ZERO = re.compile(rb"-0+(?![0-9.eE])")  # an integer -0: JSON reads 0, float() reads -0.0


def _numbers(words: list[str]) -> bool:
    """Step and total spellings the line-by-line reader takes: ASCII digits, at most 18 of them."""
    joined = "".join(words)
    return joined.isascii() and joined.isdecimal() and max(map(len, words)) <= 18


def read_columns(lines: list[str], first_line: int, ats: list[int] | None = None) -> Columns | None:
    """``lines`` (iteration lines, in file order) as one table, or None.

    Each line is ``... iteration N/ M | key: value | ... | key: value |``; every line must have the
    first line's keys, a number for every value, and a header the per-line reader takes. ``ats``:
    where each line's first "iteration " is, when the caller has looked already.
    """
    n = len(lines)
    if n < MIN_ROWS:
        return None
    layout = _layout(lines[0])
    if layout is None:
        return None
    import numpy as np

    if ats is None:
        ats = list(map(str.find, lines, repeat("iteration ")))
    parts: list[tuple[Int64Array, int, bool, list[FloatArray]]] = []
    for lo in range(0, n, BLOCK_ROWS):
        part = _read_block(lines[lo : lo + BLOCK_ROWS], ats[lo : lo + BLOCK_ROWS], layout)
        if part is None:
            return None
        parts.append(part)
    total = parts[-1][1]
    uniform = all(p[2] and p[1] == total for p in parts)
    if len(parts) == 1:
        steps, values = parts[0][0], parts[0][3]
    else:
        steps = np.concatenate([p[0] for p in parts])
        values = [np.concatenate([p[3][j] for p in parts]) for j in range(len(layout.keys))]
    return Columns(first_line, first_line + n - 1, steps, total, layout.names, tuple(values), uniform)


def _read_block(lines: list[str], ats: list[int], layout: _Layout) -> tuple[Int64Array, int, bool, list[FloatArray]] | None:
    """(steps, last total, whether every total is that one, value columns) of one block, or None.

    Each line is read from its first "iteration " (``ats``, where the per-line reader reads from);
    the pieces are joined with "\\n|" and split on ``|`` and ``:``. With k fields a row gives 2k + 2
    tokens: the header, key and value k times, and the remainder after the last ``|`` with the
    "\\n". The keys and remainders of all rows are compared at once, as one string (tokens hold
    no ":", so joining them with ":" is unambiguous); the "\\n" that ends every row's remainder puts
    each row on its own line. A header token ends at its line's first ``|`` or ``:``: it must be
    as long as the text up to a ``|``, which :func:`_read_header` checks.
    """
    n = len(lines)
    at = ats[0]
    if min(ats) < 0:
        return None
    tails = None
    if max(ats) == at and min(ats) == at:  # the headers in the same columns: one C-level slice a line
        bar = lines[0].find("|", at)
        try:
            if bar > 0 and "".join(map(itemgetter(bar), lines)) == "|" * n:
                tails, width = list(map(itemgetter(slice(at, None)), lines)), n * (bar - at)
        except IndexError:  # a shorter line
            pass
    if tails is None:
        bars = list(map(str.find, lines, repeat("|"), ats))
        if min(bars) < 0:
            return None
        tails, width = cast("list[str]", list(map(getitem, lines, map(slice, ats, repeat(None))))), sum(bars) - sum(ats)
    k = len(layout.keys)
    try:
        text = "\n|".join(tails).encode()  # bytes split, join and convert faster than str, to the same tokens
    except UnicodeEncodeError:
        return None
    tokens = text.replace(b"|", b":").split(b":")
    if len(tokens) != n * (2 * k + 2) or b":".join(tokens[1:-1:2]) != layout.keys_of(n):
        return None
    evens = tokens[0::2]  # per row: the header, then the k values
    header = _read_header(evens[0 :: k + 1], width)
    if header is None:
        return None
    steps, last, uniform = header
    try:
        values = [column_floats(evens[j :: k + 1]) for j in range(1, k + 1)]
    except ValueError:
        return None
    return steps, last, uniform, values


def _read_header(heads: list[bytes], width: int) -> tuple[Int64Array, int, bool] | None:
    """(steps as int64, last total, whether all totals are that one) from a block's headers, or None.

    Each header runs from its line's first "iteration " to the next ``|`` or ``:``; ``width`` is
    their length summed up to a ``|`` of each line (none of them ends later), so that the equal
    length shows the ``|`` came first.
    Each must read as the per-line reader's ``iteration\\s+(\\d+)\\s*/\\s*(\\d+)\\s*`` does, N and M
    at most 18 digits. Headers printed in fixed columns are read as bytes (:func:`_fixed_header`);
    others as one JSON array, a -1 between two rows so that every row is seen to give exactly two;
    spellings JSON refuses (leading zeros, other blanks, other digits) are read word by word.
    """
    n = len(heads)
    joined = b"\n".join(heads)
    if len(joined) != width + n - 1 or not joined.isascii():  # a header that ended at a ":" (ASCII: a byte a character)
        return None
    # Lines hold no "\n": each header starts with "iteration " and holds no other "iteration".
    if not joined.startswith(b"iteration ") or joined.count(b"\niteration ") != n - 1 or joined.count(b"iteration") != n:
        return None
    fixed = _fixed_header(joined, n)
    if fixed is not None:
        return fixed
    import numpy as np

    if b"-" not in joined:
        try:  # int64 only when every number is an integer JSON reads as one (at most 19 digits)
            numbers = np.array(orjson.loads(b"[" + joined.replace(b"iteration ", b"").replace(b"/", b",").replace(b"\n", b",-1,") + b"]"))
        except (orjson.JSONDecodeError, ValueError, OverflowError):
            numbers = None
        if (numbers is not None and numbers.dtype == np.int64 and numbers.size == 3 * n - 1
                and bool((numbers[2::3] == -1).all()) and int(numbers.max()) < _STEP_LIMIT):
            totals = numbers[1::3]
            last = int(totals[-1])
            return numbers[0::3].copy(), last, bool((totals == last).all())
    words = joined.decode().replace("/", " / ").split()
    if len(words) != 4 * n or words[0::4].count("iteration") != n or words[2::4].count("/") != n:
        return None
    step_words, total_words = words[1::4], words[3::4]
    if not (_numbers(step_words) and _numbers(total_words)):
        return None
    steps = np.array(list(map(int, step_words)), dtype=np.int64)
    last_word = total_words[-1]
    return steps, int(last_word), total_words.count(last_word) == n


_POW10 = [10**i for i in range(18)]


def _fixed_header(joined: bytes, n: int) -> tuple[Int64Array, int, bool] | None:
    """Headers as Megatron prints them, ``iteration {:8d}/{:8d} ``, read as one byte matrix, or None.

    ``joined``: n ASCII headers joined with "\\n", each starting with "iteration " and holding no other.
    Applies when every header is as long as the first, has its "/" in the first one's column, the
    step right before it (blanks, then 1 to 18 ASCII digits) and the very same total field as the
    last one (blanks, 1 to 18 ASCII digits, blanks): that is what the per-line reader's pattern
    takes, and the step is then a dot product of its digits with powers of ten.
    """
    width = joined.find(b"\n") if n > 1 else len(joined)
    slash = joined.find(b"/", 0, width)
    if slash < 11:  # "iteration " and at least one digit
        return None
    raw = joined + b"\n"
    if len(raw) != n * (width + 1):
        return None
    import numpy as np

    rows = np.frombuffer(raw, dtype=np.uint8).reshape(n, width + 1)
    if not ((rows[:, width] == 10).all() and (rows[:, slash] == 47).all()):  # "\n" ends each row, "/" in one column
        return None
    field = rows[:, 10:slash]
    digit = (field >= 48) & (field <= 57)
    if not ((digit | (field == 32)).all() and digit[:, -1].all() and (digit[:, 1:] >= digit[:, :-1]).all()):
        return None  # not blanks then digits up to the "/"
    if field.shape[1] > 18:
        if digit[:, :-18].any():
            return None  # more than 18 digits: the per-line reader drops the line
        field, digit = field[:, -18:], digit[:, -18:]
    steps = np.where(digit, field - 48, 0).astype(np.int64) @ np.array(_POW10[field.shape[1] - 1 :: -1], dtype=np.int64)
    total_field = rows[:, slash + 1 : width]
    last = joined[len(joined) - width + slash + 1 :]
    digits = last.strip(b" ")
    if not (digits.isascii() and digits.isdigit() and len(digits) <= 18 and bool((total_field == total_field[-1]).all())):
        return None
    return steps, int(digits), True
