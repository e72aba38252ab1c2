"""Statistics/md5 rows of ``compare_dumps``: msprobe's default dumps, compared like msprobe compares them.

msprobe's default ``task: statistics`` writes only Max/Min/Mean/Norm per tensor (``summary_mode:
md5`` adds a CRC32). There is no data to compute a cosine from, so a row carries the four
differences (target − golden) and relative differences, and its status follows msprobe's own
statistics Result rules (``msprobe/core/compare/indicator_analysis/algorithm.py``, 26.2), judged per
API call over all its inputs and outputs, non-tensor arguments included:

- error: the target's Max or Min is NaN/Inf while golden's are finite;
- error: an output's NormRelativeErr > 0.5 while every input's is < 0.1;
- error: requires_grad, dtype or shape differ; a scalar argument differs;
- warning: the first output's NormRelativeErr > 10x the largest input's (or > 0.1 when the inputs
  agree exactly).

The numbers follow msprobe's arithmetic and its CSV's spelling exactly (``stat_cells``), so a user
can check a row against the msprobe CSV they trust. Built for scale: a 100k-call dump is ~300k
rows, so rows are handled a chunk of whole API calls at a time, as columns: numpy computes the
differences and, per call, whether msprobe's rules could flag anything (most calls: no); only the
calls that could, or that carry scalar arguments or md5 digests, take the per-record path. Rows are
built without pydantic validation (every value comes from our own parser) and sparse (see
``DumpRow.__getattr__``): no processes, no file I/O per row, about 0.5 KB a row.
"""

from __future__ import annotations

import math
import operator
from collections import deque
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from itertools import chain, repeat
from typing import Generic, TypeVar

import numpy as np
import numpy.typing as npt

from acc_agent.io.dumps import Dump, DumpEntry, ScalarArg
from acc_agent.io.pairing import Pair
from acc_agent.models.compare import DumpRow

STAT_KEYS = ("Max", "Min", "Mean", "Norm")
DIFF_FIELDS = ("max_diff", "min_diff", "mean_diff", "norm_diff")
REL_FIELDS = ("max_rel_diff", "min_rel_diff", "mean_rel_diff", "norm_rel_diff")
_STAT_FIELDS = tuple(zip(STAT_KEYS, DIFF_FIELDS, REL_FIELDS, strict=True))
_INFINITY = math.inf
_FLOATS = frozenset({float})

# msprobe's messages, verbatim (its CSV's Err_message holds them as a JSON list).
MSG_INF_NAN = "error: There is nan/inf/-inf in the maximum or minimum value of NPU."
MSG_REL_ERR = "error: The NormRelativeErr of output is greater than 0.5."
MSG_REQ_GRAD = "error: The Required_Grad of NPU and Bench are inconsistent"
MSG_SCALAR = "error: The scalar parameters of NPU and Bench are inconsistent."
MSG_DTYPE = "error: The dtype of NPU and Bench are inconsistent."
MSG_SHAPE = "error: The shape of NPU and Bench are inconsistent."
MSG_REL_WARN = "warning: The norm relative error of output is 10 times that of input."
MSG_MD5 = "md5 differs"
REDUMP_HINT = ("Re-dump with msprobe task 'statistics' (its default: Max/Min/Mean/Norm per tensor) or 'tensor' "
               "(real data) on both runs, then run compare-dumps again.")

#: APIs msprobe leaves out of its rules entirely / judges on outputs only (indicator_analysis/calculator.py).
_ALL_IGNORE = frozenset({"empty", "empty_like", "numpy", "to", "__setitem__", "empty_with_format", "new_empty_strided",
                         "new_empty", "empty_strided"})
_INPUT_IGNORE = frozenset({"_reduce_scatter_base", "_all_gather_base", "all_to_all_single", "batch_isend_irecv"})
_LEVELS = ("pass", "warning", "error")
_STATE = {"input": 0, "parameters": 1, "output": 2}

# msprobe's value classes (stats_diff_calc.ValType) and its cell for two unequal values of each pair.
_NUM, _NAN, _INF, _NEG_INF, _DEVICE, _NA, _OTHER = range(7)


@dataclass(slots=True)
class ScalarRow:
    """A non-tensor argument compared like msprobe does (it is a row of its CSV and counts in its rules)."""

    target: ScalarArg
    golden: ScalarArg
    key: str
    golden_name: str
    rank: str | None
    first_index: int | None  # target index of the call's first tensor row; None: a call without one
    after_index: int  # ... its last tensor row (without one: the row it follows in the CSV; -1 before all)
    status: str = "pass"
    messages: list[str] = field(default_factory=list)
    md5_equal: bool | None = None

    @property
    def name(self) -> str:
        return self.target.name

    @property
    def message(self) -> str:
        return "; ".join(self.messages)


@dataclass
class StatRows:
    """Rows of one rank pair in target execution order, plus the scalar arguments compared with them."""

    rows: list[DumpRow] = field(default_factory=list)
    scalar_rows: list[ScalarRow] = field(default_factory=list)


# --------------------------------------------------------------------------- msprobe's cell arithmetic


def _classify(v: object) -> int:
    """msprobe's CalcStatsDiff.classify for one value as dump.json held it."""
    kind = type(v)
    if kind is float:
        if v != v:
            return _NAN
        if v == math.inf:
            return _INF
        return _NEG_INF if v == -math.inf else _NUM
    if kind is int:
        return _NUM
    if type(v) is not str:
        return _OTHER  # None ('None'), bool ('True'), lists
    low = v.strip().lower()
    if low == "nan":
        return _NAN
    if low == "inf":
        return _INF
    if low == "-inf":
        return _NEG_INF
    if low not in ("true", "false"):
        try:
            float(v)
            return _NUM
        except ValueError:
            pass
    if "npu" in low or "cpu" in low or "cuda" in low:
        return _DEVICE
    return _NA if v == "N/A" else _OTHER


def msprobe_text(v: object) -> str:
    """How msprobe's statistics CSV prints a Max/Min/Mean/Norm value."""
    if type(v) is float:
        if v != v:
            return "Nan"
        if v in (math.inf, -math.inf):
            return " inf" if v > 0 else " -inf"  # msprobe pads inf so that Excel does not read it as #NAME?
        return repr(v)
    if type(v) is str and v.strip().lower() == "nan":
        return "Nan"
    return str(v)


def _same(t: object, g: object) -> bool:
    """msprobe's is_same_value: the two values print alike (so NaN equals NaN, 0.0 differs from -0.0)."""
    if type(t) is float and type(g) is float:
        if t == g:
            return t != 0.0 or math.copysign(1.0, t) == math.copysign(1.0, g)
        return t != t and g != g
    return msprobe_text(t) == msprobe_text(g)


def _token(ct: int, cg: int) -> str:
    """msprobe's Diff/RelativeErr cell for two unequal values that are not both numbers."""
    if _NA in (ct, cg):
        return "N/A"
    if ct in (_DEVICE, _OTHER) or cg in (_DEVICE, _OTHER):
        return "N/A" if ct == cg == _DEVICE else "Diff"
    if _NAN in (ct, cg):
        return "Nan"
    if ct == _INF or cg == _NEG_INF:
        return "inf"
    return "-inf"


def _number(v: object) -> float:
    """A value :func:`_classify` calls a number (a float, an int or numeric text) as a float."""
    if isinstance(v, (float, int, str)):
        return float(v)
    raise TypeError(f"{v!r} is not a number")


def stat_cells(t: object, g: object) -> tuple[str, str]:
    """msprobe's ("X diff", "XRelativeErr") cells for target value ``t`` and golden value ``g``."""
    if _same(t, g):
        return "0", "0"
    ct, cg = _classify(t), _classify(g)
    if ct != _NUM or cg != _NUM:
        tok = _token(ct, cg)
        return tok, tok
    tf, gf = _number(t), _number(g)
    diff = tf - gf
    if gf == 0.0:
        return repr(diff), "inf"
    return repr(diff), repr(abs(diff / gf * 100)) + "%"


def _numbers(t: object, g: object) -> tuple[float | None, float | None, str | None]:
    """(diff, relative diff as a fraction, reason when either is None) for the model's fields.

    The fraction is msprobe's percentage / 100, computed as msprobe computes it, so that a rule
    judged on it agrees with msprobe's to the last bit."""
    if type(t) is float and type(g) is float and t - g == t - g and abs(g) != math.inf:  # finite floats
        diff = t - g
        if diff == 0.0 and _same(t, g):
            return 0.0, 0.0, None
        if g == 0.0:
            return diff, None, "inf: golden value is 0"
        return diff, abs(diff / g * 100) / 100, None
    if _same(t, g):
        return 0.0, 0.0, None
    ct, cg = _classify(t), _classify(g)
    if ct == _NUM and cg == _NUM:
        tf, gf = _number(t), _number(g)
        if gf == 0.0:
            return tf - gf, None, "inf: golden value is 0"
        return tf - gf, abs((tf - gf) / gf * 100) / 100, None
    tok = _token(ct, cg)
    why = {"Nan": "NaN on one side", "inf": "Inf on one side", "-inf": "-Inf on one side", "Diff": "not numbers",
           "N/A": "not comparable"}[tok]
    return None, None, f"{tok}: {why} (target {msprobe_text(t).strip()}, golden {msprobe_text(g).strip()})"


def _bad_max_min(stats: Mapping[str, object]) -> bool:
    """msprobe's is_inf_or_nan on Max or Min."""
    for k in ("Max", "Min"):
        v = stats.get(k)
        if type(v) is float and (v != v or v in (math.inf, -math.inf)):
            return True
        if type(v) is str and v.strip().lower() in ("inf", "-inf", "nan"):
            return True
    return False


# --------------------------------------------------------------------------- scalar arguments in msprobe's terms


_SPECIAL_SCALARS = ("torch.Size", "slice", "ellipsis", "torch.ProcessGroup")


#: Arguments naming ranks (P2P source/destination): msprobe prints their value as text and its type as given.
RANK_ARGS = frozenset({"src", "dst", "group_src", "group_dst"})


def scalar_dtype(s: ScalarArg) -> str:
    """The dtype msprobe's CSV shows for a non-tensor argument (``<class 'int'>``, ``slice``, ...; N/A for null)."""
    if s.type == "None" and s.value is None:
        return "N/A"
    if s.type in _SPECIAL_SCALARS or s.name.rsplit(".", 1)[-1] in RANK_ARGS:
        return s.type
    return str(type(s.value))


def scalar_shape(s: ScalarArg) -> str:
    if s.type == "None" and s.value is None:
        return "N/A"
    if s.type == "torch.Size":
        return str(s.value)
    if s.type == "slice":
        return f"({len(s.value)},)" if isinstance(s.value, list) else "()"
    return "[]"


def scalar_stat(s: ScalarArg) -> object:
    """The value msprobe puts in all four statistics columns of a non-tensor argument."""
    if s.type == "None" and s.value is None or s.type in ("torch.Size", "slice"):
        return None
    if s.type == "torch.ProcessGroup" or s.name.rsplit(".", 1)[-1] in RANK_ARGS:
        return str(s.value)
    return s.value


def scalar_md5(s: ScalarArg) -> str:
    """msprobe's CRC32 of a non-tensor argument (of its printed value)."""
    import zlib

    if s.type == "None" and s.value is None:
        return "N/A"  # a null argument has no digest in msprobe's table
    return f"{zlib.crc32(str(s.value).encode()):08x}"


@dataclass(slots=True)
class _Numbers:
    """What one chunk of rows needs from its statistics (see ``bulk_numbers``); ``k`` indexes the chunk's rows
    with statistics on both sides.

    Only what a row stores or the rules read is kept: a plain row (``k`` not in ``slow``) stores just
    its NormRelativeErr, DumpRow derives the other seven differences on access."""

    norm_rel: list[float | None]  # norm_rel_diff of every row
    rule_norm: npt.NDArray[np.float64]  # NormRelativeErr as the rules read it, NaN where they read None
    t_bad: npt.NDArray[np.bool_]  # msprobe's is_inf_or_nan on the target's Max or Min
    g_bad: npt.NDArray[np.bool_]
    #: rows that are not finite floats throughout (or golden 0 where they differ), worked out by
    #: ``_numbers`` value by value: their (diffs, rels), exact rule value and N/A reasons
    slow: dict[int, tuple[list[float | None], list[float | None]]] = field(default_factory=dict)
    slow_rule: dict[int, float | None] = field(default_factory=dict)
    reasons: dict[int, dict[str, str]] = field(default_factory=dict)

    def rule(self, k: int) -> float | None:
        """Row ``k``'s NormRelativeErr exactly as ``_norm_for_rules`` gives it (a plain row's is NaN only for None)."""
        if k in self.slow_rule:
            return self.slow_rule[k]
        v = float(self.rule_norm[k])
        return None if v != v else v


_GET4 = operator.itemgetter(*STAT_KEYS)


def stat_arrays(t_stats: Sequence[Mapping[str, object]], g_stats: Sequence[Mapping[str, object]]
                ) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.float64], npt.NDArray[np.bool_]]:
    """(target, golden) Max/Min/Mean/Norm as float64 arrays (n, 4), and which rows are all plain floats.

    Rows with anything else (an int, a bool, None, a missing key) are zeros in the arrays and
    False in the mask: the caller treats them value by value."""
    n = len(t_stats)
    try:  # the usual chunk: every value a float, so the whole chunk in C loops (flat: numpy reads it ~2x faster)
        t_flat = list(chain.from_iterable(map(_GET4, t_stats)))
        g_flat = list(chain.from_iterable(map(_GET4, g_stats)))
    except (KeyError, TypeError):
        pass
    else:
        if _FLOATS.issuperset(map(type, t_flat)) and _FLOATS.issuperset(map(type, g_flat)):
            return (np.fromiter(t_flat, dtype=np.float64, count=4 * n).reshape(n, 4),
                    np.fromiter(g_flat, dtype=np.float64, count=4 * n).reshape(n, 4), np.ones(n, dtype=bool))
    plain = [False] * n
    zero = (0.0, 0.0, 0.0, 0.0)
    t_rows: list[tuple[float, ...]] = [zero] * n
    g_rows: list[tuple[float, ...]] = [zero] * n
    for i in range(n):
        ts, gs = t_stats[i], g_stats[i]
        if ts is not None and gs is not None and len(ts) == 4 and len(gs) == 4:
            try:
                tv, gv = _GET4(ts), _GET4(gs)
            except KeyError:
                continue
            if _FLOATS.issuperset(map(type, tv)) and _FLOATS.issuperset(map(type, gv)):
                t_rows[i], g_rows[i], plain[i] = tv, gv, True
    return (np.array(t_rows, dtype=np.float64).reshape(n, 4), np.array(g_rows, dtype=np.float64).reshape(n, 4),
            np.array(plain, dtype=bool))


def bulk_numbers(t_stats: Sequence[Mapping[str, object]], g_stats: Sequence[Mapping[str, object]]) -> _Numbers:
    """NormRelativeErr and the rules' inputs of every row, in numpy where the values are plain floats.

    A default dump has ~1.2M statistics per side; per-value Python cost most of the row time.
    Rows with anything else (ints, bools, None for an empty tensor, NaN/Inf, a missing key, a golden
    0) go through ``_numbers`` one value at a time, which defines the semantics."""
    t_arr, g_arr, plain_arr = stat_arrays(t_stats, g_stats)
    with np.errstate(all="ignore"):
        fine = np.isfinite(t_arr) & np.isfinite(g_arr)
        same = (t_arr == g_arr) & ((t_arr != 0) | (np.signbit(t_arr) == np.signbit(g_arr)))
        fast = fine & (same | (g_arr != 0)) & plain_arr[:, None]
        t_norm, g_norm = t_arr[:, 3], g_arr[:, 3]
        rel = np.abs((t_norm - g_norm) / g_norm * 100) / 100
        same_norm = same[:, 3]
        t_bad = ~(np.isfinite(t_arr[:, 0]) & np.isfinite(t_arr[:, 1]))
        g_bad = ~(np.isfinite(g_arr[:, 0]) & np.isfinite(g_arr[:, 1]))
    norm_rel: list[float | None] = np.where(same_norm, 0.0, rel).tolist()
    out = _Numbers(norm_rel, np.where(same_norm, np.nan, rel), t_bad, g_bad)
    slow = np.flatnonzero(~fast.all(axis=1)).tolist()
    if slow:
        plain = plain_arr.tolist()
        for k in slow:
            _slow_row(out, k, t_stats[k], g_stats[k], plain[k])
    return out


def _slow_row(out: _Numbers, k: int, ts: Mapping[str, object], gs: Mapping[str, object], plain: bool) -> None:
    """One row value by value (the semantics ``bulk_numbers`` follows on its fast path)."""
    reasons: dict[str, str] = {}
    diffs: list[float | None] = [None] * 4
    rels: list[float | None] = [None] * 4
    for j, (key, f_diff, f_rel) in enumerate(_STAT_FIELDS):
        t, g = ts.get(key), gs.get(key)
        diff, rel, why = _numbers(t, g)
        diffs[j] = diff
        rels[j] = rel
        if why is not None:
            reasons[f_rel] = why
            if diff is None:
                reasons[f_diff] = why
        if key == "Norm":
            rule = _norm_for_rules(t, g)
            out.slow_rule[k] = rule
            out.rule_norm[k] = math.nan if rule is None else rule
    out.slow[k] = (diffs, rels)
    out.norm_rel[k] = rels[3]
    if reasons:
        out.reasons[k] = reasons
    if not plain:
        out.t_bad[k] = _bad_max_min(ts)
        out.g_bad[k] = _bad_max_min(gs)
    else:
        out.t_bad[k] = out.t_bad[k] and _bad_max_min(ts)
        out.g_bad[k] = out.g_bad[k] and _bad_max_min(gs)


# --------------------------------------------------------------------------- rules, per API call


#: A tensor row's fields as the engine collects them: the sparse ``__dict__`` of its DumpRow (see RowFactory).
RowValues = dict[str, object]
#: What a record carries besides what the rules read: its row's values, or the scalar argument it is.
PayloadT = TypeVar("PayloadT", RowValues, ScalarRow)


class _Rec(Generic[PayloadT]):
    """One row of an API call as msprobe's rules see it (a tensor row or a scalar argument)."""

    __slots__ = ("name", "order", "is_out", "judged", "norm", "t_bad", "g_bad", "dtype_differs", "shape_differs",
                 "grad_differs", "scalar_differs", "level", "msgs", "payload")

    payload: PayloadT

    def __init__(self, name: str, order: int, norm: float | None, payload: PayloadT) -> None:
        self.name = name
        self.order = order
        self.is_out = ".output." in name
        self.judged = True
        self.norm = norm
        self.t_bad = self.g_bad = False
        self.dtype_differs = self.shape_differs = self.grad_differs = self.scalar_differs = False
        self.level = 0
        self.msgs: list[str] = []
        self.payload = payload

    def flag(self, level: int, msg: str) -> None:
        self.level = max(self.level, level)
        self.msgs.append(msg)


#: A record of either kind: the rules read only what both have.
_AnyRec = _Rec[RowValues] | _Rec[ScalarRow]


def _norm_for_rules(t: object, g: object) -> float | None:
    """NormRelativeErr as msprobe's rules read it: a fraction, or None where its cell is no percentage."""
    if type(t) is float and type(g) is float and t == t and g == g and g not in (0.0, math.inf, -math.inf) \
            and t not in (math.inf, -math.inf):
        return None if _same(t, g) else abs((t - g) / g * 100) / 100
    cell = stat_cells(t, g)[1]
    return float(cell[:-1]) / 100 if cell.endswith("%") else None


def judge_api(recs: Sequence[_AnyRec]) -> None:
    """msprobe's STATISTICS_CHECKERS on one API call's rows, in its order; sets each record's level and messages.

    A first pass decides whether any checker can fire (most calls: none), so that the usual
    passing call costs one loop."""
    in_max = out_max = 0.0
    flagged = False
    outputs: list[_AnyRec] = []
    for r in recs:
        norm = r.norm
        if r.is_out:
            outputs.append(r)
            if norm is not None and norm > out_max:
                out_max = norm
        elif norm is not None and norm > in_max:
            in_max = norm
        if r.t_bad or r.grad_differs or r.dtype_differs or r.shape_differs or r.scalar_differs:
            flagged = True
    warn = bool(outputs) and ((out_max > 0.1) if in_max == 0 else (out_max / in_max > 10))
    if not (flagged or warn or (in_max < 0.1 and out_max > 0.5)):
        return
    _judge_all(recs, [r for r in recs if not r.is_out], outputs, in_max, out_max)


def _judge_all(recs: Sequence[_AnyRec], inputs: list[_AnyRec], outputs: list[_AnyRec], in_max: float,
               out_max: float) -> None:
    api = inputs[0].name.split(".")[1] if inputs and "." in inputs[0].name else ""
    if api in _ALL_IGNORE:
        return
    with_inputs = api not in _INPUT_IGNORE
    judged = recs if with_inputs else outputs
    for r in judged:
        if r.t_bad and not r.g_bad:
            r.flag(2, MSG_INF_NAN)
    if with_inputs and in_max < 0.1:
        for r in outputs:
            if r.norm is not None and r.norm > 0.5:
                r.flag(2, MSG_REL_ERR)
    for r in judged:
        if r.grad_differs:
            r.flag(2, MSG_REQ_GRAD)
    if with_inputs:
        for r in inputs:
            if r.scalar_differs:
                r.flag(2, MSG_SCALAR)
    for r in judged:
        if r.dtype_differs:
            r.flag(2, MSG_DTYPE)
    for r in judged:
        if r.shape_differs:
            r.flag(2, MSG_SHAPE)
    if with_inputs and outputs and ((out_max > 0.1) if in_max == 0 else (out_max / in_max > 10)):
        outputs[0].flag(1, MSG_REL_WARN)


def order_key(name: str, key: str) -> tuple[int | tuple[int, int], ...]:
    """msprobe's row order inside one API call: inputs (positional, then keywords), parameters, outputs."""
    parts = name[len(key) + 1:].split(".")
    return (_STATE.get(parts[0], 3),) + tuple((0, int(p)) if p.isdigit() else (1, 0) for p in parts[1:])


# --------------------------------------------------------------------------- rows


def _slot_setter(cls: type, name: str) -> Callable[[object, object], None]:
    """The setter ``object.__setattr__(obj, name, value)`` ends in for ``cls`` (its MRO's data descriptor).

    Called directly (and mapped over a chunk's rows), it skips the generic attribute lookup, which was
    about half the cost of wrapping a row."""
    for klass in cls.__mro__:
        if name in vars(klass):
            setter: Callable[[object, object], None] = vars(klass)[name].__set__
            return setter
    raise AttributeError(name)


_new_row = DumpRow.__new__
_set_dict = _slot_setter(DumpRow, "__dict__")
_set_fields = _slot_setter(DumpRow, "__pydantic_fields_set__")
_set_extra = _slot_setter(DumpRow, "__pydantic_extra__")
_set_private = _slot_setter(DumpRow, "__pydantic_private__")


class RowFactory:
    """Builds DumpRow objects without pydantic's per-field work (``model_construct`` costs ~50x more).

    Every value comes from our own parser and arithmetic, so there is nothing to validate. The
    instance is laid out as ``model_construct`` lays it out (``__dict__``, ``__pydantic_fields_set__``,
    no extras, no private attributes) except that ``__dict__`` holds only the fields that differ
    from their defaults (see DumpRow.__getattr__). The fields-set object is shared by the rows of
    one factory: it only feeds ``exclude_unset``, and sharing saves ~700 bytes a row.
    """

    def __init__(self, fields_set: Iterable[str]) -> None:
        self._fields_set = set(fields_set)

    def wrap(self, data: RowValues) -> DumpRow:
        """The row whose ``__dict__`` is ``data`` (kept, not copied)."""
        row = _new_row(DumpRow)
        _set_dict(row, data)
        _set_fields(row, self._fields_set)
        _set_extra(row, None)
        _set_private(row, None)
        return row

    def wrap_all(self, values: list[RowValues]) -> list[DumpRow]:
        """``[self.wrap(v) for v in values]`` with the loops in C (map over the slot setters): ~2x faster."""
        n = len(values)
        rows = list(map(_new_row, repeat(DumpRow, n)))
        _drain(map(_set_dict, rows, values))
        _drain(map(_set_fields, rows, repeat(self._fields_set, n)))
        _drain(map(_set_extra, rows, repeat(None, n)))
        _drain(map(_set_private, rows, repeat(None, n)))
        return rows

    def make(self, values: RowValues) -> DumpRow:
        return self.wrap(dict(values))


#: Runs an iterator for its side effects, in C.
_drain: Callable[[Iterable[object]], None] = deque[object](maxlen=0).extend

_ROW_FIELDS = ("name", "golden_name", "index", "golden_dtype", "target_dtype", "golden_shape", "target_shape",
               "status", "message", "pair_method", "rank", "compare_mode", "golden_stats", "target_stats",
               *DIFF_FIELDS, *REL_FIELDS, "golden_md5", "target_md5", "md5_equal", "golden_requires_grad",
               "target_requires_grad", "na_reasons")

_TARGET_NAME = operator.attrgetter("target_name")
_GOLDEN_NAME = operator.attrgetter("golden_name")
_MODULE_KEY = operator.attrgetter("module_key")
_STATS = operator.attrgetter("stats")
_MD5 = operator.attrgetter("md5")


def statistics_rows(golden: Dump, target: Dump, pairs: Sequence[Pair], rank: str | None = None,
                    scalars: bool = True) -> StatRows:
    """Rows for pairs without tensor data on both sides, judged by msprobe's statistics rules.

    ``pairs`` must be in target execution order (as ``pair_entries`` gives them). With ``scalars``
    the non-tensor arguments of the same API calls are compared too (they feed the rules and the CSV).
    """
    return _Engine(golden, target, rank).run(pairs, scalars)  # callers pause the GC (see compare_dumps)


@dataclass(slots=True)
class _Chunk:
    """Consecutive API calls (runs of pairs with one target ``module_key``) whose rows are built together.

    Positions ``i`` are relative to the chunk; ``k`` indexes the rows with statistics on both sides
    (``nums``), ``None`` where ``kmap`` leaves a position out."""

    tes: list[DumpEntry]
    ges: list[DumpEntry]
    pairs: Sequence[Pair]
    nums: _Numbers
    kmap: dict[int, int] | None  # position -> k; None: every row has statistics (k == i)
    both_md5: list[bool] | None  # None: no row has md5 on both sides
    values: list[RowValues | None]  # None: a skipped row (no statistics or md5)

    def k(self, i: int) -> int | None:
        return i if self.kmap is None else self.kmap.get(i)


class _Engine:
    """One rank pair's statistics rows: records grouped by API call, judged, then built as rows.

    Pairs are handled a chunk of whole API calls at a time, as columns: numpy gives each call's
    inputs to msprobe's rules (largest input/output NormRelativeErr, any Inf/NaN, dtype, shape or
    requires_grad mismatch), and only the calls that could be flagged, carry scalar arguments or
    md5 digests go through the per-record path (``_Rec``, ``judge_api``); the rest are built as
    rows in bulk."""

    def __init__(self, golden: Dump, target: Dump, rank: str | None) -> None:
        self.golden = golden
        self.target = target
        self.rank = rank or None
        self.factory = RowFactory(_ROW_FIELDS)
        self.task = (golden.meta.get("task"), target.meta.get("task"))
        self._last_index: dict[str, int] = {}  # API key with scalars -> target index of its last row (CSV placement)

    #: Pairs handled together (plus the end of a call cut off by the previous chunk): big enough for
    #: numpy to pay, small enough that the chunk's entries, statistics and new rows stay in the CPU
    #: cache across the passes over them (~15% faster on 300k rows than chunks of 32768).
    CHUNK = 2048

    def run(self, pairs: Sequence[Pair], with_scalars: bool) -> StatRows:
        out = StatRows()
        n = len(pairs)
        t_get, g_get = self.target.by_name.__getitem__, self.golden.by_name.__getitem__
        seen_keys: set[str] = set()
        # a chunk is CHUNK pairs plus the unfinished call the previous one left over: whole calls only
        tes: list[DumpEntry] = []
        ges: list[DumpEntry] = []
        chunk: list[Pair] = []
        keys: list[str] = []
        for start in range(0, n, self.CHUNK):
            more = pairs[start:start + self.CHUNK]
            more_tes = list(map(t_get, map(_TARGET_NAME, more)))
            tes += more_tes
            ges += map(g_get, map(_GOLDEN_NAME, more))
            chunk += more
            lo = max(len(keys) - 1, 0)  # the carried-over pairs are one call: compare from its last one on
            keys += map(_MODULE_KEY, more_tes)
            key_arr = np.array(keys[lo:], dtype=object)
            bounds = [0, *(np.flatnonzero(key_arr[1:] != key_arr[:-1]) + lo + 1).tolist(), len(keys)]
            if start + self.CHUNK < n:  # the last call may go on in the next pairs
                bounds.pop()
                if len(bounds) == 1:
                    continue
            b = bounds[-1]
            seen_keys.update(keys[:b])
            self._chunk(tes[:b], ges[:b], chunk[:b], keys[:b], bounds, out, with_scalars)
            tes, ges, chunk, keys = tes[b:], ges[b:], chunk[b:], keys[b:]
        if with_scalars:
            after = -1
            for key in self.target.scalars:
                if key in self._last_index:
                    after = self._last_index[key]
                elif key not in seen_keys:  # a call with no tensor at all (or none paired)
                    self._scalars_only(key, after, out)
        return out

    # -- one chunk of API calls ---------------------------------------------------------------
    def _chunk(self, tes: list[DumpEntry], ges: list[DumpEntry], pairs: Sequence[Pair], keys: list[str],
               bounds: list[int], out: StatRows, with_scalars: bool) -> None:
        """Rows of the calls ``bounds`` delimits (positions in the chunk), appended to ``out`` in msprobe's order."""
        m = len(tes)
        t_stats = list(map(_STATS, tes))
        g_stats = list(map(_STATS, ges))
        kmap: dict[int, int] | None = None
        if not (all(t_stats) and all(g_stats)):
            pos = [i for i in range(m) if t_stats[i] and g_stats[i]]
            kmap = dict(zip(pos, range(len(pos)), strict=True))
            t_stats = [t_stats[i] for i in pos]
            g_stats = [g_stats[i] for i in pos]
        nums = bulk_numbers(t_stats, g_stats)
        t_md5 = list(map(_MD5, tes))
        both_md5: list[bool] | None = None
        if t_md5.count(None) != m:
            both_md5 = [t is not None and g is not None for t, g in zip(t_md5, map(_MD5, ges), strict=True)]
            if not any(both_md5):
                both_md5 = None
        per_row = _per_record(m, kmap, both_md5)
        ch = _Chunk(tes, ges, pairs, nums, kmap, both_md5, self._values(tes, ges, pairs, nums, kmap, both_md5, per_row))

        # msprobe's rules, per call in numpy: which calls could be flagged at all
        starts = np.array(bounds[:-1], dtype=np.intp)
        is_out = np.array([".output." in te.name for te in tes], dtype=bool)
        # 1: the dtype differs, 2: the shape or requires_grad does (msprobe's row rules besides the numbers)
        differs = np.array([(te.dtype != ge.dtype) | ((te.shape != ge.shape or te.requires_grad != ge.requires_grad)
                                                      << 1) for te, ge in zip(tes, ges, strict=True)], dtype=np.int8)
        dtype_only = differs == 1
        other = differs > 1
        if kmap is None:
            other |= nums.t_bad
            rule = nums.rule_norm
        else:
            pos_arr = np.fromiter(kmap, dtype=np.intp, count=len(kmap))
            other[pos_arr] |= nums.t_bad
            rule = np.full(m, np.nan)
            rule[pos_arr] = nums.rule_norm
        flag = dtype_only | other
        with np.errstate(all="ignore"):  # judge_api's early exit, call by call (a NaN rule value reads as None)
            positive = rule > 0
            out_max = np.maximum.reduceat(np.where(positive & is_out, rule, 0.0), starts)
            in_max = np.maximum.reduceat(np.where(positive & ~is_out, rule, 0.0), starts)
            warn = np.logical_or.reduceat(is_out, starts) & np.where(in_max == 0, out_max > 0.1, out_max / in_max > 10)
            by_rule = warn | ((in_max < 0.1) & (out_max > 0.5))
            judge = np.logical_or.reduceat(flag, starts) | by_rule
        if per_row:
            judge[np.searchsorted(starts, np.array(per_row, dtype=np.intp), side="right") - 1] = True
        # between two float types every call is flagged for its dtype alone: its rows are judged here, not record by
        # record (4 s of a bfloat16 target's 300k rows); a call with a scalar argument that differs or is an output
        # is judged again below with it, which can only add to what is found here
        dtype_calls = judge & ~np.logical_or.reduceat(other, starts) & ~by_rule
        if per_row:
            dtype_calls[np.searchsorted(starts, np.array(per_row, dtype=np.intp), side="right") - 1] = False
        if dtype_calls.any():
            _flag_dtypes(ch, [(bounds[r], bounds[r + 1]) for r in np.flatnonzero(dtype_calls).tolist()],
                         dtype_only.tolist(), is_out.tolist())
            judge &= ~dtype_calls
        visit = judge
        scalars = self.target.scalars
        if scalars:
            visit = judge | np.array([keys[s] in scalars for s in bounds[:-1]], dtype=bool)

        rows = self.factory.wrap_all([v if v is not None else self._skipped(tes[i], ges[i], pairs[i].method)
                                      for i, v in enumerate(ch.values)])
        judge_list = judge.tolist()
        for r in np.flatnonzero(visit).tolist():
            skipped = self._call(ch, keys[bounds[r]], bounds[r], bounds[r + 1], out, with_scalars, judge_list[r])
            if skipped:  # msprobe's order: a call's rows without anything to compare before the others
                s, e = bounds[r], bounds[r + 1]
                rows[s:e] = [rows[i] for i in range(s, e) if i in skipped] + \
                    [rows[i] for i in range(s, e) if i not in skipped]
        out.rows.extend(rows)

    def _values(self, tes: list[DumpEntry], ges: list[DumpEntry], pairs: Sequence[Pair], nums: _Numbers,
                kmap: dict[int, int] | None, both_md5: list[bool] | None, per_row: list[int]
                ) -> list[RowValues | None]:
        """Each row's sparse ``__dict__`` (None: skipped): the usual row in one comprehension, the rest by ``_record``.

        Sparse (see DumpRow.__getattr__): defaults (status "pass", no message, no rank) are left out,
        and so are the seven differences a plain row's statistics give on access; what is left fits a
        small dict (~0.5 KB a row instead of 1.6 KB, on ~300k rows). The key order is ``_record``'s."""
        norm_rel: Iterable[float | None] = nums.norm_rel
        if kmap is not None:
            full: list[float | None] = [None] * len(tes)
            for i, k in kmap.items():
                full[i] = nums.norm_rel[k]
            norm_rel = full
        values: list[RowValues | None] = [
            {"name": te.name, "golden_name": ge.name, "index": te.index, "golden_dtype": ge.dtype,
             "target_dtype": te.dtype, "golden_shape": ge.shape, "target_shape": te.shape, "pair_method": p.method,
             "compare_mode": "statistics", "golden_stats": ge.stats, "target_stats": te.stats,
             "golden_requires_grad": ge.requires_grad, "target_requires_grad": te.requires_grad,
             "norm_rel_diff": nr}
            for te, ge, p, nr in zip(tes, ges, pairs, norm_rel, strict=True)]
        if self.rank is not None:
            for v in values:
                v["rank"] = self.rank  # type: ignore[index]
        # the others: differences stored (not plain floats), md5, no statistics on one side
        special = set(nums.slow) if kmap is None else {i for i, k in kmap.items() if k in nums.slow}
        special.update(per_row)
        for i in special:
            values[i] = self._record(tes[i], ges[i], pairs[i].method, nums, i if kmap is None else kmap.get(i),
                                     both_md5 is not None and both_md5[i])
        return values

    def _record(self, te: DumpEntry, ge: DumpEntry, method: str, nums: _Numbers, k: int | None, both_md5: bool
                ) -> RowValues | None:
        """One row's ``__dict__`` in the general case; None where there is nothing to compare (a skipped row)."""
        if k is None and not both_md5:
            return None
        v: RowValues = {
            "name": te.name, "golden_name": ge.name, "index": te.index, "golden_dtype": ge.dtype,
            "target_dtype": te.dtype, "golden_shape": ge.shape, "target_shape": te.shape, "pair_method": method,
            "compare_mode": "md5" if both_md5 else "statistics", "golden_stats": ge.stats or None,
            "target_stats": te.stats or None, "golden_requires_grad": ge.requires_grad,
            "target_requires_grad": te.requires_grad,
        }
        if k is not None:
            v["norm_rel_diff"] = nums.norm_rel[k]  # stored: sorting and summaries read it on every row
            slow = nums.slow.get(k)
            if slow is not None:
                diffs, rels = slow
                v["max_diff"], v["min_diff"], v["mean_diff"], v["norm_diff"] = diffs
                v["max_rel_diff"], v["min_rel_diff"], v["mean_rel_diff"] = rels[:3]
        if self.rank is not None:
            v["rank"] = self.rank
        if both_md5:
            v["golden_md5"] = ge.md5
            v["target_md5"] = te.md5
            v["md5_equal"] = te.md5 == ge.md5
        if k is not None:
            reasons = nums.reasons.get(k)
            if reasons:
                v["na_reasons"] = reasons
        return v

    def _skipped(self, te: DumpEntry, ge: DumpEntry, method: str) -> RowValues:
        sides = [side for side, e in (("golden", ge), ("target", te)) if not e.stats and not e.has_data]
        tasks = ", ".join(f"{s} task {t!r}" for s, t in zip(("golden", "target"), self.task, strict=True))
        where = " and ".join(sides) + (" dumps" if len(sides) > 1 else " dump") if sides else "dumps"
        msg = f"no tensor data, statistics or md5 in the {where} ({tasks}). " + REDUMP_HINT
        return {
            "name": te.name, "golden_name": ge.name, "index": te.index, "golden_dtype": ge.dtype,
            "target_dtype": te.dtype, "golden_shape": ge.shape, "target_shape": te.shape, "pair_method": method,
            "rank": self.rank, "compare_mode": "statistics", "status": "skipped", "message": msg,
            "golden_stats": ge.stats or None, "target_stats": te.stats or None,
            "golden_requires_grad": ge.requires_grad, "target_requires_grad": te.requires_grad,
        }

    # -- one API call -------------------------------------------------------------------------
    def _call(self, ch: _Chunk, key: str, s: int, e: int, out: StatRows, with_scalars: bool, judge: bool
              ) -> set[int]:
        """The per-record path for the call at positions [s, e): its scalar arguments, msprobe's rules,
        statuses written into its rows' values. ``judge``: whether its rows alone could be flagged (else
        only a differing or output scalar argument makes the rules run). Returns its skipped rows' positions."""
        skipped: set[int] = set()  # not judged: every row has statistics (see _per_record)
        group: Sequence[int] = range(s, e)
        if judge:
            skipped = {i for i in range(s, e) if ch.values[i] is None}
            if skipped:
                group = [i for i in group if i not in skipped]
        srows: list[ScalarRow] = []
        srecs: list[_Rec[ScalarRow]] = []
        if key in self.target.scalars:
            first, after = (ch.tes[group[0]].index, ch.tes[group[-1]].index) if group else (None, -1)
            if group:
                self._last_index[key] = after
            if with_scalars:
                md5_mode = ch.both_md5 is not None and any(ch.both_md5[i] for i in group)
                srecs = self._scalar_records(key, ch.ges[s].module_key, md5_mode, first, after, srows)
        if judge or srecs:
            recs = [self._rec(ch, i) for i in group]
            self._judge(key, recs, srecs)
            for r in recs:
                _finish(r)
        out.scalar_rows.extend(srows)
        return skipped

    def _scalars_only(self, key: str, after: int, out: StatRows) -> None:
        """A call with scalar arguments but no tensor row: its arguments, judged among themselves."""
        srows: list[ScalarRow] = []
        self._judge(key, [], self._scalar_records(key, key, False, None, after, srows))
        out.scalar_rows.extend(srows)

    @staticmethod
    def _rec(ch: _Chunk, i: int) -> _Rec[RowValues]:
        """Row ``i`` as msprobe's rules see it."""
        te, ge, v = ch.tes[i], ch.ges[i], ch.values[i]
        assert v is not None
        k = ch.k(i)
        if k is None:  # md5 only: no statistics to judge
            rec = _Rec(te.name, te.index, None, v)
            rec.judged = False
            return rec
        nums = ch.nums
        rec = _Rec(te.name, te.index, nums.rule(k), v)
        rec.t_bad = bool(nums.t_bad[k])
        rec.g_bad = bool(nums.g_bad[k])
        if te.dtype != ge.dtype:
            rec.dtype_differs = "qkv" not in ge.name and "gate_up" not in ge.name
        if te.shape != ge.shape:
            rec.shape_differs = True
        if te.requires_grad != ge.requires_grad:
            rec.grad_differs = True
        return rec

    @staticmethod
    def _judge(key: str, group: list[_Rec[RowValues]], srecs: list[_Rec[ScalarRow]]) -> None:
        """msprobe's rules on one call's records (tensor rows and scalar arguments); writes the scalars' results."""
        recs: Sequence[_AnyRec] = [*group, *srecs] if srecs else group
        # msprobe's row order matters to its rules only for "the first output"
        if any(r.is_out for r in srecs) or any(".parameters." in r.name for r in group):
            recs = sorted(recs, key=lambda r: order_key(r.name, key))
        judge_api([r for r in recs if r.judged])  # md5-only rows have nothing to judge
        for rec in srecs:
            srow = rec.payload
            srow.status, srow.messages = _LEVELS[rec.level], rec.msgs
            if srow.md5_equal is True:
                srow.status, srow.messages = "pass", []
            elif srow.md5_equal is False:
                srow.messages = rec.msgs + [MSG_MD5]

    def _scalar_records(self, key: str, golden_key: str, md5_mode: bool, first: int | None, after: int,
                        srows: list[ScalarRow]) -> list[_Rec[ScalarRow]]:
        """Records for the call's non-tensor arguments (those with a golden counterpart); every
        compared one is appended to ``srows``. An argument equal on both sides can flag nothing, so
        it gets a record only where it is an output (msprobe's warning lands on the first output)."""
        t_list = self.target.scalars.get(key) or []
        g_list = self.golden.scalars.get(golden_key, [])
        same_names = golden_key == key and len(t_list) == len(g_list)
        g_by: dict[str, ScalarArg] | None = None
        recs: list[_Rec[ScalarRow]] = []
        rank = self.rank
        for i, ts in enumerate(t_list):
            gs = g_list[i] if same_names else None
            if gs is None or gs.name != ts.name:
                if g_by is None:
                    g_by = {s.name: s for s in g_list}
                gs = g_by.get(golden_key + ts.name[len(key):])
                if gs is None:
                    continue
            srow = ScalarRow(ts, gs, key, gs.name, rank, first, after)
            srows.append(srow)
            tv, gv = ts.value, gs.value
            if tv == gv and type(tv) is type(gv) and ts.type == gs.type:
                if md5_mode:
                    srow.md5_equal = True
                if ".output." in ts.name:
                    recs.append(_Rec(ts.name, after, None, srow))
                continue
            if md5_mode:
                srow.md5_equal = str(tv) == str(gv)
            recs.append(self._scalar_record(ts, gs, after, srow))
        return recs

    @staticmethod
    def _scalar_record(ts: ScalarArg, gs: ScalarArg, after: int, srow: ScalarRow) -> _Rec[ScalarRow]:
        tv, gv = scalar_stat(ts), scalar_stat(gs)
        rec = _Rec(ts.name, after, _norm_for_rules(tv, gv), srow)
        rec.t_bad = _bad_max_min({"Max": tv})
        rec.g_bad = _bad_max_min({"Max": gv})
        t_dtype, g_dtype = scalar_dtype(ts), scalar_dtype(gs)
        rec.dtype_differs = t_dtype != g_dtype
        rec.shape_differs = scalar_shape(ts) != scalar_shape(gs)
        rec.scalar_differs = "class" in t_dtype and "class" in g_dtype and scalar_shape(ts) == "[]" and tv != gv
        return rec


def _per_record(m: int, kmap: dict[int, int] | None, both_md5: list[bool] | None) -> list[int]:
    """Positions (of ``m``) whose call takes the per-record path whatever its numbers: no statistics
    on one side (md5 only, or skipped), md5 on both sides (statuses follow the digests)."""
    found: set[int] = set()
    if kmap is not None:
        found.update(set(range(m)) - kmap.keys())
    if both_md5 is not None:
        found.update(i for i, both in enumerate(both_md5) if both)
    return sorted(found)


def _flag_dtypes(ch: _Chunk, calls: list[tuple[int, int]], dtype_only: list[bool], is_out: list[bool]) -> None:
    """msprobe's rules on calls whose only finding is a dtype that differs (see :func:`judge_api`): such a row is an
    error with msprobe's dtype message, except a fused ``qkv``/``gate_up`` weight's, and nothing at all in the calls
    msprobe ignores (their inputs only, in the few that it judges by their outputs)."""
    values, ges, tes = ch.values, ch.ges, ch.tes
    for s, e in calls:
        first_input = next((i for i in range(s, e) if not is_out[i]), None)
        api = tes[first_input].name.split(".")[1] if first_input is not None and "." in tes[first_input].name else ""
        if api in _ALL_IGNORE:
            continue
        with_inputs = api not in _INPUT_IGNORE
        for i in range(s, e):
            if dtype_only[i] and (with_inputs or is_out[i]) and "qkv" not in ges[i].name \
                    and "gate_up" not in ges[i].name:
                v = values[i]
                assert v is not None  # calls with a skipped row take the per-record path (_per_record)
                v["status"] = "error"
                v["message"] = MSG_DTYPE


def _finish(r: _Rec[RowValues]) -> None:
    """Writes a judged record's status and message into its row's values (the row already wraps them)."""
    v = r.payload
    status = _LEVELS[r.level]
    msgs = r.msgs
    if v["compare_mode"] == "md5":
        if v["md5_equal"]:
            status, msgs = "pass", []
        elif not r.judged:
            status, msgs = "warning", [MSG_MD5 + " (no statistics on both sides to tell by how much)"]
        else:
            msgs = msgs + [MSG_MD5]
    if status != "pass":
        v["status"] = status
    if msgs:
        v["message"] = "; ".join(msgs)
