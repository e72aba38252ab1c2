"""The statistics CSV's sixteen number cells, made for a whole chunk of rows at once.

A default msprobe dump gives ~300k statistics rows: ~5M number cells, where Python's ``repr`` one
float at a time (~0.7 µs) takes seconds. orjson prints the same shortest round-trip digits about
ten times faster, and it prints a whole (rows, 16) array in one call as ``[[a,b,...],...]``, which
is already each row's cells joined by commas. Only its spelling differs from repr's (``1e-6`` for
``1e-06``, ``1e16`` for ``1e+16``, ``0.00001`` for ``1e-05``): ``_as_repr`` respells the whole text
in a few numpy passes. Whether orjson still spells numbers this way is checked once per process on
probe values (``_orjson_ok``); where it does not, or where orjson is missing, every value outside
orjson's plain range is printed by repr.

Each distinct (target, golden) row is printed once (a call's output is the next call's input).
Rows with cells that are not two finite floats (NaN, Inf, ints, bools, None, a golden 0) follow
msprobe's rules value by value (the caller's ``slow``): they are rare.
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Mapping, Sequence
from functools import cache
from itertools import chain
from types import ModuleType

import numpy as np
import numpy.typing as npt

#: msprobe's statistics, in its column order.
KEYS = ("Max", "Min", "Mean", "Norm")
_GET4 = operator.itemgetter(*KEYS)
_FLOATS = frozenset({float})

#: Where orjson prints a float exactly as Python's repr does: both give the shortest round-trip
#: digits, positional here; outside it they differ only in how the exponent is written.
ORJSON_SAME = (1e-4, 1e16)
_ZEROS = "0,0,0,0"
#: The relative errors' columns among a row's sixteen statistics cells: they end in "%".
_PERCENT_COLUMNS = np.array([False] * 4 + [True] * 4 + [False] * 8)

Stats = Mapping[str, object] | None
Floats = npt.NDArray[np.float64]
Mask = npt.NDArray[np.bool_]


def _orjson() -> ModuleType | None:
    try:
        import orjson
    except ImportError:
        return None
    return orjson


def float_reprs(x: Floats) -> list[str]:
    """``repr`` of each finite float64 value, about 5x faster through orjson's C formatter where installed.

    orjson writes the same shortest digits; where it spells them otherwise (exponents, one decade)
    :func:`_as_repr` respells them in bulk. Without orjson, or with one whose spelling does not
    check out (``_orjson_ok``), repr prints every value outside orjson's plain range."""
    values = x.tolist()
    orjson = _orjson()
    if orjson is None or not values:
        return list(map(repr, values))
    if _orjson_ok():
        texts = _as_repr(orjson.dumps(values)[1:-1] + b",").decode("ascii").split(",")
        texts.pop()
        return texts
    mag = np.abs(x)
    outside = np.flatnonzero((mag < ORJSON_SAME[0]) | (mag >= ORJSON_SAME[1]))
    if 2 * len(outside) > len(values):  # mostly values repr must print: repr for all, in C
        return list(map(repr, values))
    texts = orjson.dumps(values).decode("ascii")[1:-1].split(",")
    if len(outside):
        fixed = np.array(texts, dtype=object)
        fixed[outside] = list(map(repr, x[outside].tolist()))  # both loops in C
        return list(fixed.tolist())
    return texts


_E, _MINUS, _PLUS, _ZERO, _NINE, _COMMA, _BRACKET, _DOT = b"e-+09,]."
_BAND_EXPONENT = np.frombuffer(b"e-05", dtype=np.uint8)


def _as_repr(body: bytes, suffix: bytes = b"", where: Mask | None = None) -> bytes:
    """orjson's numbers respelled as repr spells them, and ``suffix`` (one byte) after each, in one
    numpy pass over the bytes: ``e16`` -> ``e+16``, ``e-7`` -> ``e-07``, ``0.0000123`` -> ``1.23e-05``.

    Every number is followed by ``,`` or ``]`` (the caller leaves one after the last); every ``e`` of
    orjson's output is an exponent's. ``where``: which values (in order, ``null`` included) take the
    suffix, for the rows of a 2-d array (``a,b],[c,d]``); every number where None. Byte replacements would take a pass per exponent digit and
    cannot move the digits of ``[1e-5, 1e-4)``, the one decade orjson prints positionally."""
    has_e, has_band = b"e" in body, b"0.0000" in body
    if not (has_e or has_band or suffix):
        return body
    a = np.frombuffer(body, dtype=np.uint8)
    at: list[npt.NDArray[np.intp]] = []
    fill: list[npt.NDArray[np.uint8]] = []
    if has_e:
        e = np.flatnonzero(a == _E)
        negative = a[e + 1] == _MINUS
        neg = e[negative]
        after = a[neg + 3]  # after a one-digit exponent: its number's end
        at += [e[~negative] + 1, neg[(after < _ZERO) | (after > _NINE)] + 2]
        fill += [np.full(len(at[-2]), _PLUS, dtype=np.uint8), np.full(len(at[-1]), _ZERO, dtype=np.uint8)]
    band = _band_numbers(a, at, fill) if has_band else None
    if suffix:
        ends = np.flatnonzero((a == _COMMA) | (a == _BRACKET))
        if where is None:
            ends = ends[(ends > 0) & (a[ends - 1] >= _ZERO) & (a[ends - 1] <= _NINE)]
        else:  # each value's end ("],[" has one comma more)
            ends = ends[(ends == 0) | (a[ends - 1] != _BRACKET)][where]
        at.append(ends)
        fill.append(np.full(len(ends), suffix[0], dtype=np.uint8))
    return _edit(a, np.concatenate(at) if at else np.empty(0, dtype=np.intp),
                 np.concatenate(fill) if fill else np.empty(0, dtype=np.uint8), band)


def _band_numbers(a: npt.NDArray[np.uint8], at: list[npt.NDArray[np.intp]], fill: list[npt.NDArray[np.uint8]]
                  ) -> npt.NDArray[np.intp] | None:
    """The numbers of ``[1e-5, 1e-4)`` (orjson: ``0.0000D[DDD]``) as repr spells them (``D[.DDD]e-05``):
    adds the insertions to ``at``/``fill``; returns where those numbers start (their first six bytes
    are dropped), sorted."""
    dots = np.flatnonzero(a == _DOT)
    dots = dots[(dots > 0) & (dots + 5 < len(a))]
    for k in (-1, 1, 2, 3, 4):
        dots = dots[a[dots + k] == _ZERO]
    lead = dots[(a[dots + 5] > _ZERO) & (a[dots + 5] <= _NINE)] - 1
    lead = lead[(lead == 0) | (a[lead - 1] < _ZERO) | (a[lead - 1] > _NINE)]  # not inside 10.00001
    if not len(lead):
        return None
    window = a[np.minimum(lead[:, None] + np.arange(6, 25), len(a) - 1)]  # <= 17 digits, then the number's end
    digits = np.argmax((window < _ZERO) | (window > _NINE), axis=1)
    end = lead + 6 + digits
    at += [lead[digits > 1] + 7, np.repeat(end, 4)]
    fill += [np.full(len(at[-2]), _DOT, dtype=np.uint8), np.tile(_BAND_EXPONENT, len(lead))]
    return lead


def _edit(a: npt.NDArray[np.uint8], at: npt.NDArray[np.intp], fill: npt.NDArray[np.uint8],
          dropped: npt.NDArray[np.intp] | None) -> bytes:
    """``a`` with ``fill[i]`` inserted before byte ``at[i]`` (in order where several share a place) and
    the six bytes from each of the sorted ``dropped`` removed (nothing is inserted before those):
    one masked copy."""
    order = np.argsort(at, kind="stable")
    at, fill = at[order], fill[order]
    if dropped is not None:
        new_at = at - 6 * np.searchsorted(dropped, at) + np.arange(len(at))
        a = np.delete(a, (dropped[:, None] + np.arange(6)).ravel())
    else:
        new_at = at + np.arange(len(at))
    out = np.empty(len(a) + len(at), dtype=np.uint8)
    original = np.ones(len(out), dtype=bool)
    original[new_at] = False
    out[new_at] = fill
    out[original] = a
    return bytes(out.data)


@cache
def _orjson_ok() -> bool:
    """Whether orjson's numbers, respelled by :func:`_as_repr`, are exactly repr's across the float64
    range (from lists and numpy arrays alike, with the ``%`` suffix and ``0`` cells): checked once,
    so that another orjson version that spells numbers otherwise costs speed, never a wrong cell."""
    orjson = _orjson()
    if orjson is None:
        return False
    rng = np.random.default_rng(12345)
    probes = np.concatenate([
        rng.standard_normal(1200) * 10.0 ** rng.uniform(-320, 308, 1200),
        rng.standard_normal(400) * 10.0 ** rng.uniform(-7, 0, 400),
        rng.standard_normal(400).astype(np.float32).astype(np.float64) * 1e-5,
        np.array([1e16, 9.999999999999998e15, 1e17, 1.5e17, 1e22, 1e100, 1.7976931348623157e308, 1e-4,
                  9.999999999999999e-5, 1.0000000000000001e-5, 1e-5, 9.999999999999999e-6, 1.5e-6, 1e-7, 1e-10,
                  1e-100, 2.2250738585072014e-308, 5e-324, 0.1, 1.0, 10.00001, 100.0, 65504.0, 1e15, 0.0]),
    ])
    probes = probes[np.isfinite(probes)]
    probes = np.concatenate([probes, -probes])
    probes = probes[: len(probes) // 4 * 4]
    want = [repr(v) for v in probes.tolist()]
    zero = np.zeros(probes.shape, dtype=bool)
    zero[::7] = True
    want_pct = ["0" if z else w + "%" for w, z in zip(want, zero.tolist(), strict=True)]
    try:
        flat = _as_repr(orjson.dumps(probes.tolist())[1:-1] + b",").decode("ascii").split(",")[:-1]
        rows = _orjson_rows(orjson, probes.reshape(-1, 4), None, "")
        pct = _orjson_rows(orjson, probes.reshape(-1, 4), zero.reshape(-1, 4), "%")
    except (TypeError, ValueError, IndexError, UnicodeDecodeError):
        return False
    return flat == want and rows == _by(want, 4) and pct == _by(want_pct, 4)


def _by(cells: list[str], k: int) -> list[str]:
    """``cells`` joined by commas k at a time."""
    return list(map(",".join, zip(*[iter(cells)] * k, strict=True)))


def _orjson_rows(orjson: ModuleType, x: Floats, zero: Mask | None, suffix: str, columns: Mask | None = None
                 ) -> list[str]:
    """Each row of ``x`` (m, k) as its cells joined by commas, through one orjson call.

    Cells in ``zero`` print as ``0`` (msprobe's word for two equal values); the others get ``suffix``
    (one character) in ``columns`` (all where None)."""
    if zero is not None and zero.any():
        x = x.copy()
        x[zero] = np.nan  # orjson's "null" (which takes no suffix): "0" below
    else:
        zero = None
    where = None
    if suffix and columns is not None:
        where = np.broadcast_to(columns, x.shape) if zero is None else columns & ~zero
        where = where.ravel()
    text = orjson.dumps(np.ascontiguousarray(x), option=orjson.OPT_SERIALIZE_NUMPY)
    body = _as_repr(text[2:-1], suffix.encode("ascii"), where)  # a,b,c,d],[e,f,g,h]
    if zero is not None:
        body = body.replace(b"null", b"0")
    rows = body.decode("ascii").split("],[")
    rows[-1] = rows[-1][:-1]
    return rows


def row_texts(x: Floats, zero: Mask | None = None, suffix: str = "", columns: Mask | None = None) -> list[str]:
    """Each row of the finite values ``x`` (m, k) as its cells joined by commas, as repr prints them
    (``zero`` cells as ``0``, the others in ``columns`` (all where None) followed by ``suffix``)."""
    if not len(x):
        return []
    orjson = _orjson()
    if orjson is None or not _orjson_ok():
        return _flat_rows(x, zero, suffix, columns)
    return _orjson_rows(orjson, x, zero, suffix, columns)


def _flat_rows(x: Floats, zero: Mask | None, suffix: str, columns: Mask | None) -> list[str]:
    """:func:`row_texts` a value at a time (``float_reprs``), for the rows orjson's text cannot give."""
    flat = float_reprs(x.ravel())
    if suffix:
        marked = np.ones(x.shape, dtype=bool) if columns is None else np.broadcast_to(columns, x.shape)
        for k in np.flatnonzero(marked.ravel()).tolist():
            flat[k] += suffix
    if zero is not None:
        for k in np.flatnonzero(zero.ravel()).tolist():
            flat[k] = "0"
    return _by(flat, x.shape[1])


def stat_arrays(t_stats: Sequence[Stats], g_stats: Sequence[Stats]) -> tuple[Floats, Floats, Mask]:
    """(target, golden) Max/Min/Mean/Norm as float64 arrays (n, 4), and which rows hold eight floats.

    Other rows (an int, a bool, None, a missing key or side) are zeros in the arrays and False in
    the mask: the caller prints them value by value."""
    n = len(t_stats)
    try:  # the usual chunk: every value a float, so the whole chunk in C loops
        flat = list(chain.from_iterable(map(_GET4, chain(t_stats, g_stats))))  # type: ignore[arg-type]
    except (KeyError, TypeError):  # a missing key or side: value by value below
        pass
    else:
        if {*map(type, flat)} <= _FLOATS:
            both = np.array(flat, dtype=np.float64).reshape(2, n, 4)
            return both[0], both[1], np.ones(n, dtype=bool)
    plain = np.zeros(n, dtype=bool)
    zero = (0.0, 0.0, 0.0, 0.0)
    t_rows: list[tuple[float, ...]] = [zero] * n
    g_rows: list[tuple[float, ...]] = [zero] * n
    for i, (ts, gs) in enumerate(zip(t_stats, g_stats, strict=True)):
        if ts is None or gs is None:
            continue
        try:
            tv, gv = _GET4(ts), _GET4(gs)
        except KeyError:
            continue
        if {*map(type, tv)} <= _FLOATS and {*map(type, gv)} <= _FLOATS:
            t_rows[i], g_rows[i], plain[i] = tv, gv, True
    return np.array(t_rows, dtype=np.float64), np.array(g_rows, dtype=np.float64), plain


def stat_blocks(t_stats: Sequence[Stats], g_stats: Sequence[Stats], slow: Callable[[Stats, Stats], str]
                ) -> list[str]:
    """Each row's sixteen statistics cells, joined by commas: the (diff, relative error, target,
    golden) of Max, Min, Mean and Norm.

    Rows of eight finite floats (golden not 0 where the two differ, and the difference and relative
    error finite: 1e308 - -1e308 is not) are printed in bulk, each
    distinct (target, golden) pair once (a call's output is the next call's input: a third of a
    default dump's rows repeat an earlier one): the target's values; where all four agree, the
    golden's are the same text and the differences ``0``; else the golden's, the differences and
    the relative errors (``%``). Every other row goes through msprobe's rules value by value:
    ``slow(target stats, golden stats)``."""
    n = len(t_stats)
    t_arr, g_arr, plain = stat_arrays(t_stats, g_stats)
    with np.errstate(all="ignore"):
        fine = np.isfinite(t_arr) & np.isfinite(g_arr) & plain[:, None]
        same = fine & (t_arr == g_arr) & ((t_arr != 0) | (np.signbit(t_arr) == np.signbit(g_arr)))
        diff = t_arr - g_arr
        rel = np.abs(diff / g_arr * 100)  # msprobe's arithmetic, to the last bit
        # two finite values, golden not 0 unless they agree, and a difference that does not overflow
        fast = np.flatnonzero((fine & (same | ((g_arr != 0) & np.isfinite(diff) & np.isfinite(rel)))).all(axis=1))
    first, which = _distinct_rows(np.concatenate([t_arr[fast], g_arr[fast]], axis=1))
    rows = fast[first]
    differs = ~same[rows].all(axis=1)
    sub = rows[differs]
    same_sub = same[sub]
    # the rows that differ, all sixteen cells at once: (diff, relative error %, target, golden)
    values = np.zeros((len(sub), 4), dtype=bool)
    unequal = iter(row_texts(np.concatenate([diff[sub], rel[sub], t_arr[sub], g_arr[sub]], axis=1),
                             np.concatenate([same_sub, same_sub, values, values], axis=1), "%", _PERCENT_COLUMNS))
    equal = (f"{_ZEROS},{_ZEROS},{t},{t}" for t in row_texts(t_arr[rows[~differs]]))  # golden's text is target's
    blocks = [next(unequal) if differ else next(equal) for differ in differs.tolist()]
    if len(fast) == n:
        return [*map(blocks.__getitem__, which.tolist())]
    out = [""] * n
    for k, j in zip(fast.tolist(), which.tolist(), strict=True):
        out[k] = blocks[j]
    for k in np.setdiff1d(np.arange(n), fast, assume_unique=True).tolist():
        out[k] = slow(t_stats[k], g_stats[k])
    return out


def _distinct_rows(x: Floats) -> tuple[npt.NDArray[np.intp], npt.NDArray[np.intp]]:
    """(the first row of each distinct row of ``x``, in order; for each row, which of those it is).

    Rows are compared bit for bit (0.0 and -0.0 apart), through a dictionary of their bytes:
    sorting the rows would cost more than it saves."""
    if not len(x):
        return np.empty(0, dtype=np.intp), np.empty(0, dtype=np.intp)
    keys = np.ascontiguousarray(x).view(np.dtype((np.void, x.shape[1] * x.itemsize))).ravel().tolist()
    seen: dict[object, int] = {}
    firsts = np.fromiter(map(seen.setdefault, keys, range(len(keys))), np.intp, len(keys))
    first = np.flatnonzero(firsts == np.arange(len(keys)))
    number = np.empty(len(keys), dtype=np.intp)
    number[first] = np.arange(len(first))
    return first, number[firsts]
