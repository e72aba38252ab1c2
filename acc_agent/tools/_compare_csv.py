"""CSV export of ``compare_dumps`` rows with msprobe's column names first.

Existing msprobe users have scripts that read ``compare_result_*.csv`` by column name (``NPU Name``,
``Cosine``, ``MaxAbsErr``, ...). Writing those columns, with msprobe's words for values it cannot
compute (``unsupported``, ``shape unmatched``, ``N/A``, ``Nan``), keeps those scripts working;
acc-agent's extra metrics follow in columns of their own.

Two layouts, like msprobe's: real-data rows get its tensor-compare columns; a statistics or md5
comparison (msprobe's default dumps) gets its statistics-compare columns (Max diff ... NormRelativeErr,
NPU/Bench max/min/mean/l2norm, Result, Err_message, NPU_Stack_Info), with the non-tensor
arguments as rows of their own, in msprobe's row order and number spelling.
"""

from __future__ import annotations

import csv
import functools
import json
import math
import operator
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from itertools import chain, compress, repeat
from pathlib import Path
from typing import IO, TYPE_CHECKING, BinaryIO, TextIO, cast

import numpy as np
import numpy.typing as npt

from acc_agent.atomic import atomic_write
from acc_agent.errors import AccAgentError
from acc_agent.frontend import option
from acc_agent.models.compare import DumpRow, TensorMetrics
from acc_agent.numerics.metrics import msprobe_round
from acc_agent.text_safety import spreadsheet_cell
from acc_agent.tools._stat_csv_columns import float_reprs as _float_reprs
from acc_agent.tools._stat_csv_columns import stat_blocks
from acc_agent.tools._stat_rows import RANK_ARGS, ScalarRow

if TYPE_CHECKING:
    from acc_agent.tools._rank_tasks import DumpInfo

#: Each rank key's (golden, target) dump headers: the dtype spelling, stack.json and data file names come from them.
DumpHeaders = Mapping[str, "tuple[DumpInfo, DumpInfo]"]

_FORMULA_START = frozenset("=+-@\t\r＝＋－＠")

SIX = [
    ("Cosine", "cosine"),
    ("EucDist", "euc_dist"),
    ("MaxAbsErr", "max_abs_err"),
    ("MaxRelativeErr", "max_rel_err"),
    ("One Thousandth Err Ratio", "one_thousandth_ratio"),
    ("Five Thousandths Err Ratio", "five_thousandths_ratio"),
]
EXTRA = [
    ("MeanAbsErr", "mean_abs_err"),
    ("MeanRelErr", "mean_rel_err"),
    ("RMSE", "rmse"),
    ("WithinToleranceRatio", "within_tolerance_ratio"),
    ("MaxULPErr", "max_ulp_err"),
    ("ULPGt1Ratio", "ulp_gt1_ratio"),
]
#: msprobe 26.2's real-data compare columns, in its order and with its meaning (NPU = target, Bench = golden).
MSPROBE_TENSOR_HEADER = (
    ["NPU Name", "Bench Name", "NPU Dtype", "Bench Dtype", "NPU Tensor Shape", "Bench Tensor Shape",
     "NPU Requires_grad", "Bench Requires_grad"]
    + [c for c, _ in SIX]
    + ["NPU max", "NPU min", "NPU mean", "NPU l2norm", "Bench max", "Bench min", "Bench mean", "Bench l2norm",
       "Requires_grad Consistent", "Result", "Err_message", "NPU_Stack_Info", "Data_name"]
)
#: acc-agent's columns after msprobe's, named as the JSON fields are: ``target``/``golden`` for the two sides, and
#: ``bench.*`` for the optional third run (the baseline hardware at the target's precision) against the golden —
#: never msprobe's "Bench", which means the golden in its own columns above.
EXTRA_TENSOR_HEADER = (
    ["rank", "index", "pair_method", "cosine_exact"]
    + [f for _, f in EXTRA]
    + ["target_nan", "target_inf", "golden_nan", "golden_inf"]
    + [f"bench.{f}" for _, f in SIX]
)
HEADER = MSPROBE_TENSOR_HEADER + EXTRA_TENSOR_HEADER

_TOKENS = ("unsupported", "shape unmatched", "N/A", "Nan")


def na_token(reason: str | None) -> str:
    """msprobe's word for a value it cannot compute, from our reason text."""
    if not reason:
        return "N/A"
    for token in _TOKENS:
        if reason.startswith(token):
            return token
    return "N/A"


def _cell(m: TensorMetrics, field: str, msprobe_format: bool) -> str:
    value = getattr(m, field)
    if value is None:
        return na_token(m.na_reasons.get(field))
    if msprobe_format and field != "euc_dist":
        return repr(msprobe_round(float(value)))
    return repr(float(value))


def write_csv(rows: list[DumpRow], path: str | Path, scalar_rows: Sequence[ScalarRow] | None = None,
              dumps: DumpHeaders | None = None) -> Path:
    """Write every row; returns the path written.

    ``dumps`` maps a rank key to its (golden, target) Dump: the statistics layout takes the
    framework (for msprobe's dtype spelling) and the target's stack.json from them."""
    if statistics_layout(rows, scalar_rows):
        return guarded_write(path, lambda fh: write_statistics_csv(fh, rows, scalar_rows or (), dumps or {}))
    return guarded_write(path, lambda fh: _write_tensor_rows(fh, rows, dumps or {}))


def statistics_layout(rows: Sequence[DumpRow], scalar_rows: Sequence[ScalarRow] | None) -> bool:
    """Whether the table takes msprobe's statistics layout: any statistics/md5 row or non-tensor argument."""
    return bool(scalar_rows) or any(r.compare_mode != "tensor" for r in rows)


def guarded_write(path: str | Path, write: Callable[[TextIO], object]) -> Path:
    """Write the CSV through ``write(fh)`` atomically: a kill mid-table leaves the previous CSV whole.

    Text mode (UTF-8, newlines as written). A failure is a ``cannot_write`` error."""
    out = Path(path)
    with _cannot_write(out):
        out.parent.mkdir(parents=True, exist_ok=True)
        with atomic_write(out, "w", newline="", encoding="utf-8") as fh:
            write(fh)
    return out


def guarded_write_bytes(path: str | Path, write: Callable[[BinaryIO], object]) -> Path:
    """:func:`guarded_write` for a table copied as bytes (the background writer's drafts and parts)."""
    out = Path(path)
    with _cannot_write(out):
        out.parent.mkdir(parents=True, exist_ok=True)
        with atomic_write(out, "wb") as fh:
            write(fh)
    return out


@contextmanager
def _cannot_write(out: Path) -> Iterator[None]:
    try:
        yield
    except (OSError, ValueError) as exc:  # ValueError: a NUL byte in the path
        raise AccAgentError("cannot_write", f"cannot write CSV {out}: {exc}",
                            hint=f"Choose a writable path for {option('csv')}.", path=str(out)) from None


class _DataNames:
    """msprobe's Data_name cell: the [target, golden] file names, as a Python list literal like msprobe prints.

    The merge step keeps only each dump's header (its dump.json path and kind), so the file of a row is
    found the way msprobe names it — ``dump_tensor_data/<row name>.<ext>`` — with the extension looked up
    once per dump on disk."""

    def __init__(self, dumps: DumpHeaders) -> None:
        self._dumps = dumps
        self._ext: dict[tuple[str, int], str | None] = {}

    def _folder(self, dump: DumpInfo) -> Path | None:
        source = Path(dump.source)
        if dump.kind == "msprobe":
            return source.parent / "dump_tensor_data"
        return source if source.is_dir() else None

    def _file(self, rank: str, side: int, name: str) -> str:
        pair = self._dumps.get(rank)
        folder = self._folder(pair[side]) if pair is not None else None
        if folder is None:
            return "N/A"
        key = (rank, side)
        if key not in self._ext:
            self._ext[key] = next((e for e in (".pt", ".npy") if (folder / f"{name}{e}").is_file()), None)
        ext = self._ext[key]
        return f"{name}{ext}" if ext else "N/A"

    def cell(self, r: DumpRow) -> str:
        rank = r.rank or ""
        return repr([self._file(rank, 1, r.name), self._file(rank, 0, r.golden_name or r.name)])


def _write_tensor_rows(fh: IO[str], rows: list[DumpRow], dumps: DumpHeaders) -> None:
    w = csv.writer(fh)
    w.writerow(HEADER)
    cell = spreadsheet_cell  # names, dtypes and messages come from the dumps: no cell may run as a formula
    prefixes = {rank: _dtype_prefix(pair) for rank, pair in dumps.items()}
    stacks = _Stacks(dumps)
    data_names = _DataNames(dumps)
    last_api: tuple[str, str] = ("", "")
    for r in rows:
        bench = r.bench
        rank = r.rank or ""
        t_pre, g_pre = prefixes.get(rank, ("", ""))
        ts, gs = r.target_stats or {}, r.golden_stats or {}
        if not _same_api(r.name, rank, last_api):
            last_api = (rank, _api_key(r.name))
            stack = stacks.cell(rank, last_api[1])
        else:
            stack = "N/A"  # msprobe prints an API's stack on its first row only
        w.writerow(
            [cell(r.name), cell(r.golden_name or r.name),
             cell(f"{t_pre}{r.target_dtype}" if r.target_dtype else "N/A"),
             cell(f"{g_pre}{r.golden_dtype}" if r.golden_dtype else "N/A"),
             str(r.target_shape) if r.target_shape is not None else "N/A",
             str(r.golden_shape) if r.golden_shape is not None else "N/A",
             _grad(r.target_requires_grad), _grad(r.golden_requires_grad)]
            + [_cell(r, f, True) for _, f in SIX]
            + [_plain(ts.get(k)) for k in _KEYS] + [_plain(gs.get(k)) for k in _KEYS]
            + [str(r.target_requires_grad == r.golden_requires_grad), r.status,
               cell(json.dumps(r.message.split("; ")) if r.message else "[]"), cell(stack), cell(data_names.cell(r))]
            + [cell(r.rank or ""), r.index, cell(r.pair_method or ""),
               "N/A" if r.cosine_exact is None else repr(r.cosine_exact)]
            + [_cell(r, f, False) for _, f in EXTRA]
            + [r.target_nan, r.target_inf, r.golden_nan, r.golden_inf]
            + ([_cell(bench, f, True) for _, f in SIX] if bench is not None else [""] * len(SIX))
        )


def _plain(v: object) -> str:
    """A Max/Min/Mean/Norm value as msprobe prints it in its real-data CSV (N/A when dump.json has none)."""
    if v is None:
        return "N/A"
    if isinstance(v, float):
        return repr(v)
    return str(v)


# --------------------------------------------------------------------------- statistics layout

#: msprobe 26.2's statistics-compare columns, in its order (NPU = target, Bench = golden).
STAT_HEADER = [
    "NPU Name", "Bench Name", "NPU Dtype", "Bench Dtype", "NPU Tensor Shape", "Bench Tensor Shape",
    "NPU Requires_grad", "Bench Requires_grad", "Max diff", "Min diff", "Mean diff", "L2norm diff",
    "MaxRelativeErr", "MinRelativeErr", "MeanRelativeErr", "NormRelativeErr", "NPU max", "NPU min", "NPU mean",
    "NPU l2norm", "Bench max", "Bench min", "Bench mean", "Bench l2norm", "Requires_grad Consistent", "Result",
    "Err_message", "NPU_Stack_Info",
]
#: acc-agent's columns after msprobe's (MD5 names as in msprobe's md5-compare CSV).
STAT_EXTRA = ["Compare Mode", "Rank", "Index", "Pair Method", "NPU MD5", "BENCH MD5", "MD5 Equal"]
_KEYS = ("Max", "Min", "Mean", "Norm")
_INF = math.inf


def write_statistics_csv(fh: IO[str], rows: list[DumpRow], scalar_rows: Iterable[ScalarRow],
                         dumps: DumpHeaders) -> None:
    """msprobe's statistics CSV: rows API by API in its order, non-tensor arguments included.

    Tensor-mode rows of a mixed comparison get msprobe's six real-data metrics in extra columns.
    Lines are formatted by hand, a chunk of lines at a time, and written a chunk at a time (quoted
    like the csv module's QUOTE_MINIMAL): a default dump gives ~300k lines, and the csv module's
    per-cell work doubled the time."""
    for chunk in statistics_chunks(rows, scalar_rows, dumps):
        fh.write(chunk.text())


def status_cells(row: DumpRow) -> str:
    """The Result and Err_message cells of a row (and the comma after them): the only cells the
    diagnosis may change after the rows are computed."""
    d = row.__dict__  # statistics rows are sparse (DumpRow.__getattr__): read with the defaults
    return _status_text(d.get("status", "pass"), d.get("message", ""))


@functools.lru_cache(maxsize=4096)
def _status_text(status: str, message: str) -> str:
    # a few messages repeat over hundreds of thousands of rows (msprobe's dtype error on every row of a bfloat16
    # target): each is encoded once
    return f"{status},{_quoted(json.dumps(message.split('; '))) if message else '[]'},"


#: A row's Result and Err_message as most rows have them, and their cells.
_PLAIN = ("pass", "")
_PLAIN_CELLS = _status_text(*_PLAIN)


def _follow(lines: list[str], after_row: list[tuple[int, str]]) -> list[str]:
    """``lines`` with each line of ``after_row`` (row's place, line) after the line of its row."""
    for k, text in after_row:
        lines[k] += text
    return lines


class _GradAndPlain(dict[object, str]):
    """The Requires_grad Consistent and status cells of a row that plainly passes, by the consistency."""

    def __missing__(self, same: object) -> str:
        return f"{same},{_PLAIN_CELLS}"


_SAME_PLAIN = _GradAndPlain({True: f"True,{_PLAIN_CELLS}", False: f"False,{_PLAIN_CELLS}"})


@dataclass(slots=True)
class LineChunk:
    """Consecutive lines of the statistics CSV, those of rows ``rows``: ``head`` (lines of no row, such
    as the header or a non-tensor argument, before the first row), then ``lines``.

    Where ``lead`` was asked for, ``lines[k]`` is the line of row ``rows[k]`` (with the lines of no
    row after it), which holds the row's Result and Err_message cells ``status[k]`` after its first
    ``lead[k]`` characters: the only cells the diagnosis may change after the rows are made, found
    again in the text made while it still decides them (see _background_csv). Otherwise ``lead`` is
    None and ``lines`` may be the whole chunk in one string. ``marked``: the rows of the chunk whose
    (status, message) is not a plain pass."""

    head: str
    lines: list[str]
    rows: list[int]
    status: list[str]
    lead: npt.NDArray[np.int64] | None
    marked: dict[int, tuple[str, str]]

    def text(self) -> str:
        return self.head + "".join(self.lines)


#: Lines per chunk: enough for numpy and orjson to pay off, few enough that a chunk's columns stay
#: in the CPU cache between the passes over them (4096 measured a few % faster than 8192 or 16384)
#: and its text (~2 MB) small next to the rows.
CHUNK = 4096
#: The fields of a statistics row that its ``__dict__`` usually holds (it is sparse: see DumpRow.__getattr__).
_USUAL_FIELDS = operator.itemgetter("name", "golden_name", "index", "target_dtype", "golden_dtype", "target_shape",
                                    "golden_shape", "target_requires_grad", "golden_requires_grad", "compare_mode",
                                    "pair_method", "target_stats", "golden_stats")


def statistics_chunks(rows: list[DumpRow], scalar_rows: Iterable[ScalarRow], dumps: DumpHeaders,
                      part: tuple[int, int] | None = None, leads: bool = False) -> Iterator[LineChunk]:
    """The statistics CSV's lines in order, a chunk at a time.

    ``part=(lo, hi)``: only the lines of the API calls whose first row index is in [lo, hi) (with the
    header and leading arguments in the part from 0); the parts of a partition, joined in order,
    are the whole table. Rows before ``lo`` are walked, not formatted: a row's stack cell depends
    on the row before it. ``leads``: the chunks say where their rows' status cells are.

    The walk (:class:`_Walk`) only orders the lines and picks each row's stack cell; the rows' text
    is made a chunk at a time by :class:`_RowText`."""
    lo, hi = part if part is not None else (0, len(rows))
    dicts: list[dict[str, object]] = list(map(_DICT, rows))  # sparse (DumpRow.__getattr__): read with defaults
    try:  # what the walk needs of every row, in one pass over the rows' dicts (C loops where all have them)
        walked = list(map(_WALKED, dicts))
    except KeyError:
        walked = [(d["name"], d.get("compare_mode", "tensor"), d.get("index", 0)) for d in dicts]
    mixed = "tensor" in map(_SECOND, walked)
    text = _RowText(rows, dicts, {rank: _dtype_prefix(pair) for rank, pair in dumps.items()}, mixed)
    text.leads = leads
    groups, loose = _scalar_groups(scalar_rows)
    walk = _Walk(list(map(_FIRST, walked)), _Stacks(dumps), mixed)
    if lo == 0:
        walk.line(_cells_line(STAT_HEADER + STAT_EXTRA + ([c for c, _ in SIX] if mixed else [])))
    for (_, after), extra in loose.items():
        if after < 0:
            walk.scalars(extra, lo == 0)
    ranks = _ranks(dicts)
    calls, tails = _call_starts(np.fromiter(map(_THIRD, walked), np.int64, len(walked)), ranks, groups, loose)
    for part_lines in walk.walk(lo, hi, ranks, calls, tails):
        yield text.chunk(*part_lines)


def _ranks(dicts: list[dict[str, object]]) -> list[str] | None:
    """Each row's rank key ("" for none), or None where no row has one (a single rank's rows)."""
    if not any(map(operator.contains, dicts, repeat("rank"))):
        return None
    return [d.get("rank") or "" for d in dicts]  # type: ignore[misc]


def _call_starts(index: npt.NDArray[np.int64], ranks: list[str] | None,
                 groups: Mapping[tuple[str, int], tuple[str, int, list[ScalarRow]]],
                 loose: Mapping[tuple[str, int], list[ScalarRow]]
                 ) -> tuple[dict[int, tuple[str, list[ScalarRow], int]], dict[int, list[ScalarRow]]]:
    """Where the calls with non-tensor arguments start ({row: (call key, arguments, row after the
    call)}), and which rows arguments of calls without a tensor row follow ({row: arguments}).

    The scalar rows name their call's rows by (rank, index). A single rank's rows in index order
    (the usual table) are found by binary search; any other table by a look-up per row. ``index``:
    each row's index."""
    n = len(index)
    if not n or not (groups or loose):
        return {}, {}
    if ranks is None and (n < 2 or bool((index[1:] > index[:-1]).all())):
        first, second, third = operator.itemgetter(0), operator.itemgetter(1), operator.itemgetter(2)

        def find(keys: list[tuple[str, int]]) -> tuple[npt.NDArray[np.intp], npt.NDArray[np.bool_]]:
            """The row of each (rank, index) key, and whether there is one."""
            wanted = np.fromiter(map(second, keys), np.int64, len(keys))
            at = np.minimum(np.searchsorted(index, wanted), n - 1)
            return at, (index[at] == wanted) & np.fromiter(map(operator.not_, map(first, keys)), bool, len(keys))

        found = [*groups.values()]
        at, ok = find([*groups])
        ends = np.maximum(np.searchsorted(index, np.fromiter(map(second, found), np.int64, len(found)), "right"), at + 1)
        found = list(compress(found, ok.tolist()))
        calls = dict(zip(at[ok].tolist(), zip(map(first, found), map(third, found), ends[ok].tolist(), strict=True),
                         strict=True))
        at, ok = find([*loose])
        return calls, dict(zip(at[ok].tolist(), compress(loose.values(), ok.tolist()), strict=True))
    rank_of = ranks or [""] * n
    keys = list(zip(rank_of, index.tolist(), strict=True))
    calls = {}
    for p in compress(range(n), map(groups.__contains__, keys)):
        key, last, srows = groups[keys[p]]
        end = p
        while end < n and rank_of[end] == rank_of[p] and keys[end][1] <= last:
            end += 1
        calls[p] = (key, srows, end)
    return calls, {p: loose[keys[p]] for p in compress(range(n), map(loose.__contains__, keys))}


_DICT = operator.attrgetter("__dict__")
_WALKED = operator.itemgetter("name", "compare_mode", "index")
_SECOND, _THIRD = operator.itemgetter(1), operator.itemgetter(2)
_TARGET_NAME = operator.attrgetter("target.name")


class _Walk:
    """The order of the statistics CSV's lines and each row's stack cell (msprobe prints an API's
    stack on its first row only, so the cell depends on the line before).

    The lines so far are ``rows`` (row indices, in order) with ``stacks`` (their stack cells), and
    ``extras``: the lines of no row, each with the number of ``rows`` before it."""

    def __init__(self, names: list[str], stacks: _Stacks, mixed: bool) -> None:
        self._names = names
        self._stacks = stacks
        self._mixed = mixed
        self.rows: list[int] = []
        self._row_stacks: list[str] = []
        self.extras: list[tuple[int, str]] = []
        self._last: tuple[str, str] = ("", "")  # the API call of the last line: (rank, key)
        self._same: tuple[str, ...] = ()  # its key + ".input." (".output.", ".parameters."): where its rows start
        self._orders: dict[tuple[str, ...], tuple[int, ...]] = {}  # a call's members' name endings -> their order

    def take(self) -> tuple[list[int], list[str], list[tuple[int, str]]]:
        """The lines so far (rows, their stack cells, extras), for a chunk; the walk goes on with none."""
        out = self.rows, self._row_stacks, self.extras
        self.rows, self._row_stacks, self.extras = [], [], []
        return out

    def line(self, text: str) -> None:
        """A line of no row."""
        self.extras.append((len(self.rows), text))

    def _new_call(self, rank: str, name: str) -> str:
        """Row ``name`` starts a call: it becomes the last one; its stack cell."""
        cut = max(name.rfind(".input."), name.rfind(".output."), name.rfind(".parameters."))  # _api_key
        key = name[:cut] if cut > 0 else name.rsplit(".", 1)[0]
        self._last = (rank, key)
        self._same = (key + ".input.", key + ".output.", key + ".parameters.") if key else ()  # _starts
        return self._stacks.quoted(rank, key)

    def walk(self, lo: int, hi: int, ranks: list[str] | None, calls: Mapping[int, tuple[str, list[ScalarRow], int]],
             tails: Mapping[int, list[ScalarRow]]) -> Iterator[tuple[list[int], list[str], list[tuple[int, str]]]]:
        """Walk the rows up to ``hi`` (``ranks`` None: all ""), the lines of those from ``lo`` on, a chunk
        of about CHUNK lines at a time (see :meth:`take`); ``calls``/``tails``: see _call_starts.

        One loop with everything in local names: it runs once per row of a ~300k-row table."""
        names, orders, mixed, new_call, scalar_stack = self._names, self._orders, self._mixed, self._new_call, \
            self._scalar_stack
        rows, row_stacks, extras = self.rows, self._row_stacks, self.extras
        last_row = min(hi, len(names))
        stops = sorted({lo, last_row, *calls, *(p + 1 for p in tails)})  # where a run of plain rows ends
        next_stop = 0
        i = 0
        while i < last_row:
            emit = i >= lo  # a call's lines belong to the part of its first row
            call = calls.get(i)
            if call is None:  # rows of calls without arguments, one call each, up to the next row that is not
                while stops[next_stop] <= i:
                    next_stop += 1
                end = min(stops[next_stop], i + CHUNK)
                if ranks is None:
                    same = self._same if not self._last[0] else ()
                    for name in names[i:end]:
                        if same and name.startswith(same):
                            stack = "N/A"  # a row of the call of the row before (_same_api)
                        else:
                            stack = new_call("", name)
                            same = self._same
                        if emit:
                            row_stacks.append(stack)
                else:
                    last_rank, same = self._last[0], self._same
                    for name, rank in zip(names[i:end], ranks[i:end], strict=True):
                        if rank == last_rank and same and name.startswith(same):
                            stack = "N/A"
                        else:
                            stack = new_call(rank, name)
                            last_rank, same = rank, self._same
                        if emit:
                            row_stacks.append(stack)
                if emit:
                    rows += range(i, end)
            else:  # an API call's rows and its non-tensor arguments, in msprobe's order
                key, srows, end = call
                rank, count = ranks[i] if ranks else "", end - i
                ending = operator.itemgetter(slice(len(key) + 1, None))  # a name after its call's key and "."
                endings = (*map(ending, names[i:end]), *map(ending, map(_TARGET_NAME, srows)))
                order = orders.get(endings)
                if order is None:  # order_key depends on the name after the key only: a few such lists repeat
                    order = orders[endings] = _call_order(endings)
                for k in order:
                    if k < count:  # a tensor row
                        name = names[i + k]
                        same = self._same
                        if rank == self._last[0] and same and name.startswith(same):
                            stack = "N/A"
                        else:
                            stack = new_call(rank, name)
                        if emit:
                            rows.append(i + k)
                            row_stacks.append(stack)
                    else:
                        s = srows[k - count]
                        stack = scalar_stack(s)
                        if emit:
                            extras.append((len(rows), _scalar_line(s, stack, mixed)))
            i = end
            tail_rows = tails.get(i - 1) if tails else None
            if tail_rows:
                self.scalars(tail_rows, emit)
            if len(rows) + len(extras) >= CHUNK:
                yield self.take()
                rows, row_stacks, extras = self.rows, self._row_stacks, self.extras
        if rows or extras:
            yield self.take()

    def scalars(self, srows: list[ScalarRow], emit: bool) -> None:
        """Lines of non-tensor arguments (none unless ``emit``)."""
        for s in srows:
            stack = self._scalar_stack(s)
            if emit:
                self.line(_scalar_line(s, stack, self._mixed))

    def _scalar_stack(self, s: ScalarRow) -> str:
        """A non-tensor argument's stack cell: its call's stack unless the line before is of it; its call
        becomes the last one."""
        api = (s.rank or "", s.key)
        if api == self._last:
            return "N/A"
        self._last, self._same = api, _starts(s.key)
        return self._stacks.quoted(*api)


def _call_order(endings: tuple[str, ...]) -> tuple[int, ...]:
    """The order of a call's members by the ends of their names (msprobe's order_key)."""
    from acc_agent.tools._stat_rows import order_key

    return tuple(sorted(range(len(endings)), key=lambda k: order_key("." + endings[k], "")))


def _starts(key: str) -> tuple[str, ...]:
    """How the names of a call's rows start (``_same_api``): none for an empty key."""
    return (key + ".input.", key + ".output.", key + ".parameters.") if key else ()


def split_points(rows: list[DumpRow], parts: int) -> list[tuple[int, int]]:
    """``parts`` ranges of row indices of about equal size, for :func:`statistics_chunks`'s ``part``."""
    n = len(rows)
    bounds = [n * k // parts for k in range(parts + 1)]
    return [(bounds[k], bounds[k + 1]) for k in range(parts) if bounds[k] < bounds[k + 1]] or [(0, n)]


def _cells_line(cells: Iterable[object]) -> str:
    """One CSV line of cells, quoted like csv.QUOTE_MINIMAL."""
    return ",".join(_quoted(c if type(c) is str else str(c)) for c in cells) + "\n"


def _quoted(text: str) -> str:
    if text and text[0] in _FORMULA_START:  # a cell a spreadsheet would run as a formula (names come from dumps)
        text = spreadsheet_cell(text)
    if "," in text or '"' in text or "\n" in text or "\r" in text:
        return '"' + text.replace('"', '""') + '"'
    return text


def _scalar_groups(scalar_rows: Iterable[ScalarRow]
                   ) -> tuple[dict[tuple[str, int], tuple[str, int, list[ScalarRow]]], dict[tuple[str, int], list[ScalarRow]]]:
    """Scalar rows by the (rank, first tensor index) of their API call; those of calls without a
    tensor row by the (rank, index) of the row they follow (index -1: before every row)."""
    groups: dict[tuple[str, int], tuple[str, int, list[ScalarRow]]] = {}
    loose: dict[tuple[str, int], list[ScalarRow]] = {}
    for s in scalar_rows:
        rank = s.rank or ""
        if s.first_index is None:
            loose.setdefault((rank, s.after_index), []).append(s)
        else:
            groups.setdefault((rank, s.first_index), (s.key, s.after_index, []))[2].append(s)
    return groups, loose


def _same_api(name: str, rank: str, last_api: tuple[str, str]) -> bool:
    """Whether row ``name`` belongs to the API call ``last_api`` (a cheap test for _api_key(name) == its key)."""
    key = last_api[1]
    return (rank == last_api[0] and bool(key) and name.startswith(key) and name[len(key):len(key) + 1] == "."
            and name[len(key) + 1:].startswith(("input.", "output.", "parameters.")))


def _api_key(name: str) -> str:
    """The API/module key of a row name (``Functional.linear.0.forward.input.0`` -> ``Functional.linear.0.forward``)."""
    cut = max(name.rfind(".input."), name.rfind(".output."), name.rfind(".parameters."))
    return name[:cut] if cut > 0 else name.rsplit(".", 1)[0]


def _dtype_prefix(pair: tuple[DumpInfo, DumpInfo]) -> tuple[str, str]:
    """(target, golden) dtype prefix: msprobe prints PyTorch dtypes as dump.json has them ("torch.float32")."""
    golden, target = pair
    return _framework_prefix(target), _framework_prefix(golden)


def _framework_prefix(dump: DumpInfo) -> str:
    return "torch." if (dump.meta or {}).get("framework") == "pytorch" else ""


class _Stacks:
    """The target's stack.json per rank, read on first use: msprobe prints an API's call stack on its first row."""

    def __init__(self, dumps: DumpHeaders) -> None:
        self._paths = {rank: Path(pair[1].source).parent / "stack.json" for rank, pair in dumps.items()}
        self._loaded: dict[str, dict[str, str]] = {}
        self._quoted: dict[str, dict[str, str]] = {}

    def cell(self, rank: str, api: str) -> str:
        table = self._loaded.get(rank)
        if table is None:
            table = self._loaded[rank] = _read_stacks(self._paths.get(rank))
        return table.get(api, "N/A")

    def quoted(self, rank: str, api: str) -> str:
        """:meth:`cell` as a statistics CSV cell ("N/A" unquoted)."""
        table = self._quoted.get(rank)
        if table is None:
            self.cell(rank, "")
            cells: dict[str, str] = {}  # a default dump's ~100k calls share a few hundred stacks: each quoted once
            table = self._quoted[rank] = {key: cells.get(text) or cells.setdefault(text, _quoted(text))
                                          for key, text in self._loaded[rank].items()}
        return table.get(api, "N/A")


def _read_stacks(path: Path | None) -> dict[str, str]:
    """API -> its stack as msprobe prints it (``str`` of what stack.json holds). Most calls share
    their stack with many others (each layer's calls come from the same lines): each distinct
    stack is printed once."""
    if path is None or not path.is_file():
        return {}
    try:
        doc = _load_json(path.read_bytes())
    except (OSError, UnicodeDecodeError, json.JSONDecodeError):
        return {}  # a broken stack.json costs the stack column, not the comparison
    if not isinstance(doc, dict):
        return {}
    out: dict[str, str] = {}
    if isinstance(doc.get("0"), list):  # msprobe >= 8: {"0": [[api names], [stack lines]], ...}
        texts: dict[tuple[str, ...], str] = {}
        get, strs = texts.get, _STRS
        for item in doc.values():
            if isinstance(item, list) and len(item) == 2 and isinstance(item[0], list):
                apis, stack = item
                if type(stack) is list and {*map(type, stack)} <= strs:  # the usual list of lines: by value
                    key = tuple(stack)
                    text = get(key) or texts.setdefault(key, str(stack))
                else:
                    text = str(stack)
                for api in apis:
                    out[api if type(api) is str else str(api)] = text
        return out
    return {str(k): str(v) for k, v in doc.items()}


_STRS = frozenset({str})
def _load_json(data: bytes) -> object:
    """``json.loads``, through orjson where installed: a default dump's stack.json is ~14 MB, which
    the json module takes a quarter of a second to read. Whatever orjson refuses (NaN literals, say)
    the json module reads as before."""
    try:
        import orjson
    except ImportError:
        return json.loads(data.decode("utf-8"))
    try:
        return orjson.loads(data)
    except orjson.JSONDecodeError:
        return json.loads(data.decode("utf-8"))


def _grad(v: object) -> str:
    return "N/A" if v is None else str(v)


_NEEDS_QUOTES = ',"\n\r'


def _quoted_all(texts: list[str]) -> list[str]:
    """``_quoted`` over many cells; when none needs quoting (the usual case) the list comes back as it is."""
    joined = "".join(texts)
    if not any(c in joined for c in _NEEDS_QUOTES):
        try:
            firsts = set(map(_FIRST, texts))
        except IndexError:  # an empty cell: nothing to quote there, but the set is not worth a second pass
            firsts = {t[:1] for t in texts}
        if firsts.isdisjoint(_FORMULA_START):
            return texts
    return [_quoted(t) for t in texts]


_FIRST = operator.itemgetter(0)


class _RowText:
    """Rows as the text of their lines, a chunk of rows at a time, column by column.

    A default dump gives ~300k rows: a line per row built from ~15 dictionary reads and its cells
    one by one took most of the CSV's time. Here a row's fields are read in one pass (one tuple per
    row, then columns), the cells many rows share (dtype, shape, rank, stack, the statistics of a
    tensor that is the next call's input) are made once, the numbers come from ``stat_blocks`` in
    bulk, and the usual table's chunk is one join of its cells: no line is made on its own."""

    def __init__(self, rows: list[DumpRow], dicts: list[dict[str, object]], prefixes: Mapping[str, tuple[str, str]],
                 mixed: bool) -> None:
        self._rows = rows
        self._dicts = dicts
        self._prefixes = prefixes
        self._mixed = mixed
        self.leads = False  # whether chunks say where their rows' status cells are (LineChunk.lead)
        self._heads: dict[tuple[object, ...], str] = {}
        self._alive: list[object] = []  # the shape lists whose ids key ``_heads``: their ids stay theirs
        self._plain: dict[object, str] = {None: ""}

    def chunk(self, rows: list[int], stacks: list[str], extras: list[tuple[int, str]]) -> LineChunk:
        """The lines of ``rows`` (whose stack cells are ``stacks``) with the lines of no row ``extras``
        ((number of rows before it, line)) among them: each goes after the line of the row before it."""
        head = "".join([text for at, text in extras if not at])
        lines, status, lead, marked = self._lines(rows, stacks, [(at - 1, text) for at, text in extras if at])
        return LineChunk(head, lines, rows, status, lead, marked)

    def _lines(self, rows: list[int], stacks: list[str], after_row: list[tuple[int, str]]
               ) -> tuple[list[str], list[str], npt.NDArray[np.int64] | None, dict[int, tuple[str, str]]]:
        """The rows' lines (each followed by the lines in ``after_row`` (row's place, line)), their
        status cells, where those are in them (``leads``) and the rows not plainly passing. Without
        ``leads`` the text of the table's usual rows comes as one string: the lines are never made."""
        if not rows:
            return [], [], np.zeros(0, dtype=np.int64) if self.leads else None, {}
        dicts = list(map(self._dicts.__getitem__, rows))
        try:  # one pass over the rows' dicts, in C where every row has the usual fields
            fields = list(map(_USUAL_FIELDS, dicts))
        except KeyError:
            fields = [(d["name"], d.get("golden_name"), d.get("index", 0), d.get("target_dtype"),
                       d.get("golden_dtype"), d.get("target_shape"), d.get("golden_shape"),
                       d.get("target_requires_grad"), d.get("golden_requires_grad"), d.get("compare_mode", "tensor"),
                       d.get("pair_method"), d.get("target_stats"), d.get("golden_stats")) for d in dicts]
        (names, golden, indices, t_dtypes, g_dtypes, t_shapes, g_shapes, t_grads, g_grads, modes, methods, t_stats,
         g_stats) = zip(*fields, strict=True)
        held = set().union(*dicts)  # the fields a statistics row seldom holds are read only where some row does
        n = len(rows)

        def column(key: str, default: object) -> list[object]:
            return list(map(dict.get, dicts, repeat(key), repeat(default))) if key in held else [default] * n

        ranks, t_md5s, g_md5s, md5_equal = (column(k, None) for k in ("rank", "target_md5", "golden_md5", "md5_equal"))
        states = cast("list[str]", column("status", "pass"))
        messages = cast("list[str]", column("message", ""))
        q_names = _quoted_all(list(names))
        g_names = q_names if golden == names else [q if g == n or not g else _quoted(g)
                                                    for q, n, g in zip(q_names, names, golden, strict=True)]
        heads = self._head_cells(t_dtypes, g_dtypes, t_shapes, g_shapes, t_grads, g_grads, ranks)
        blocks = stat_blocks(t_stats, g_stats, _slow_block)
        if states.count("pass") == messages.count("") == n:  # every row a plain pass (the usual draft)
            status, marked = [_PLAIN_CELLS] * n, {}
        else:
            status = [_PLAIN_CELLS if s == "pass" and not m else _status_text(s, m)
                      for s, m in zip(states, messages, strict=True)]
            marked = {i: (s, m) for i, s, m in zip(rows, states, messages, strict=True) if s != "pass" or m != ""}
        plain = self._cell
        # the Requires_grad Consistent cell with the status cells after it (mostly one of two texts)
        grad_status = [f"{same},{st}" for same, st in zip(map(operator.eq, t_grads, g_grads), status, strict=True)] \
            if marked else list(map(_SAME_PLAIN.__getitem__, map(operator.eq, t_grads, g_grads)))
        if not self._mixed and len(set(modes)) == len(set(ranks)) == len(set(methods)) == 1 \
                and t_md5s.count(None) == g_md5s.count(None) == md5_equal.count(None) == n:
            # statistics without MD5 (the usual table): after the status only the stack and index cells change
            mid, end = f",{modes[0]},{plain(ranks[0])},", f",{plain(methods[0])},,,\n"
            if not self.leads:  # the chunk's text in one join of its cells
                ends: Iterable[str] = repeat(end)
                if after_row:
                    ends = [end] * n
                    for k, text in after_row:
                        ends[k] += text
                comma = repeat(",")
                return ["".join(chain.from_iterable(zip(
                    q_names, comma, g_names, comma, heads, comma, blocks, comma, grad_status, stacks, repeat(mid),
                    map(str, indices), ends, strict=False)))], status, None, marked
            lines = [f"{q},{g},{h},{b},{gs}{stack}{mid}{ix}{end}" for q, g, h, b, gs, stack, ix
                     in zip(q_names, g_names, heads, blocks, grad_status, stacks, map(str, indices), strict=True)]
            tail = (np.fromiter(map(len, stacks), np.int64, n) + np.fromiter(map(len, map(str, indices)), np.int64, n)
                    + len(mid) + len(end))
        else:
            after = self._after(rows, stacks, modes, ranks, indices, methods, t_md5s, g_md5s, md5_equal)
            lines = [f"{q},{g},{h},{b},{gs}{a}"
                     for q, g, h, b, gs, a in zip(q_names, g_names, heads, blocks, grad_status, after, strict=True)]
            if not self.leads:
                return _follow(lines, after_row), status, None, marked
            tail = np.fromiter(map(len, after), np.int64, n)
        lead = np.fromiter(map(len, lines), np.int64, n) - np.fromiter(map(len, status), np.int64, n) - tail
        return _follow(lines, after_row), status, lead, marked

    def _after(self, rows: list[int], stacks: list[str], modes: Sequence[object], ranks: Sequence[object],
               indices: Sequence[object], methods: Sequence[object], t_md5s: Sequence[object],
               g_md5s: Sequence[object], md5_equal: Sequence[object]) -> list[str]:
        """Each row's text after its Err_message cell: stack, mode, rank, index, pair method, MD5 cells."""
        plain = self._cell
        if self._mixed:
            blank = "," * len(SIX)
            extra = [",".join(["", *(_cell(self._rows[i], f, True) for _, f in SIX)]) if mo == "tensor" else blank
                     for i, mo in zip(rows, modes, strict=True)]
        else:
            extra = [""] * len(rows)
        return [f"{s},{mo},{plain(rk)},{ix},{plain(pm)},{tm or ''},{gm or ''},{'' if e is None else e}{x}\n"
                for s, mo, rk, ix, pm, tm, gm, e, x in zip(stacks, modes, ranks, indices, methods, t_md5s, g_md5s,
                                                            md5_equal, extra, strict=True)]

    def _cell(self, text: object) -> str:
        hit = self._plain.get(text)
        if hit is None:
            hit = self._plain[text] = _quoted(text) if text else ""  # type: ignore[arg-type]
        return hit

    def _head_cells(self, t_dtypes: Sequence[object], g_dtypes: Sequence[object], t_shapes: Sequence[object],
                    g_shapes: Sequence[object], t_grads: Sequence[object], g_grads: Sequence[object],
                    ranks: Sequence[object]) -> list[str]:
        """dtype, shape and requires_grad cells, which most rows share with many others (the shapes,
        lists, by identity: a dump's parser keeps one list per distinct shape)."""
        keys = list(zip(t_dtypes, g_dtypes, map(id, t_shapes), map(id, g_shapes), t_grads, g_grads, ranks,
                        strict=True))
        heads = list(map(self._heads.get, keys))
        if None in heads:
            for k, (key, head) in enumerate(zip(keys, heads, strict=True)):
                if head is None:
                    heads[k] = self._head(key, t_shapes[k], g_shapes[k])
        return heads  # type: ignore[return-value]

    def _head(self, key: tuple[object, ...], t_shape: object, g_shape: object) -> str:
        hit = self._heads.get(key)
        if hit is None:
            t_pre, g_pre = self._prefixes.get(key[6] or "", ("", ""))  # type: ignore[call-overload]
            hit = self._heads[key] = (f"{_dtype_cell(t_pre, key[0])},{_dtype_cell(g_pre, key[1])},"
                                      f"{_shape_cell(t_shape)},{_shape_cell(g_shape)},{_grad(key[4])},{_grad(key[5])}")
            self._alive.append((t_shape, g_shape))
        return hit


def _dtype_cell(prefix: str, dtype: object) -> str:
    return _quoted(f"{prefix}{dtype}") if dtype is not None else "N/A"


def _shape_cell(shape: object) -> str:
    return "N/A" if shape is None else _quoted(str(shape))


def float_reprs(x: npt.NDArray[np.float64]) -> list[str]:
    """``repr`` of each finite float64 value, in bulk (see _stat_csv_columns)."""
    return _float_reprs(x)


def _scalar_line(s: ScalarRow, stack: str, mixed: bool) -> str:
    """A non-tensor argument's row, as msprobe prints it (its value in all four statistics columns);
    ``stack``: its stack cell, quoted."""
    t, g = s.target, s.golden
    t_name = t.name
    name = _quoted(t_name)
    golden_name = name if s.golden_name == t_name else _quoted(s.golden_name)
    tv, gv = t.value, g.value
    t_kind, g_kind = type(tv), type(gv)
    if (t_kind in _PLAIN_SCALARS or (t_kind is float and tv != 0.0 and tv == tv)) \
            and (g_kind in _PLAIN_SCALARS or (g_kind is float and gv != 0.0 and gv == gv)):
        g_name = g.name  # what the value cells depend on (a rank argument: its last part, rsplit(".", 1)[-1])
        value_key = (t.type, t_kind, tv, g.type, g_kind, gv, t_name[t_name.rfind(".") + 1:] in RANK_ARGS,
                     g_name[g_name.rfind(".") + 1:] in RANK_ARGS, s.status, tuple(s.messages), s.md5_equal, mixed)
        key: tuple[object, ...] | None = value_key
        cells = _SCALAR_CELLS.get(value_key)
    else:  # lists, dicts, zeros whose sign the text shows, NaN which equals nothing: not keyed on
        key = cells = None
    if cells is None:
        cells = _scalar_cells(s, mixed)
        if key is not None and len(_SCALAR_CELLS) < 65536:
            _SCALAR_CELLS[key] = cells
    return (f"{name},{golden_name},{cells[0]},{stack},scalar,"
            f"{_quoted(s.rank) if s.rank else ''},,exact,{cells[1]}")


#: The cells of a scalar row that follow from its values alone, by value: a default dump repeats the
#: same few arguments (approximate="none", dim=-1, a 0.125 scale) in every layer.
_SCALAR_CELLS: dict[tuple[object, ...], tuple[str, str]] = {}
_PLAIN_SCALARS = frozenset({int, str, bool, type(None)})


def _scalar_cells(s: ScalarRow, mixed: bool) -> tuple[str, str]:
    """(dtype .. Err_message cells, md5 cells and the rest) of a scalar row."""
    from acc_agent.tools._stat_rows import scalar_dtype, scalar_md5, scalar_shape, scalar_stat, stat_cells

    tv, gv = scalar_stat(s.target), scalar_stat(s.golden)
    diff, rel = stat_cells(tv, gv)
    diff, rel = _quoted(diff), _quoted(rel)
    t_text, g_text = _text(tv), _text(gv)
    head = (f"{_quoted(scalar_dtype(s.target))},{_quoted(scalar_dtype(s.golden))},{_quoted(scalar_shape(s.target))},"
            f"{_quoted(scalar_shape(s.golden))},N/A,N/A,{diff},{diff},{diff},{diff},{rel},{rel},{rel},{rel},"
            f"{t_text},{t_text},{t_text},{t_text},{g_text},{g_text},{g_text},{g_text},True,{s.status},"
            f"{_quoted(json.dumps(s.messages)) if s.messages else '[]'}")
    tail = (f"{scalar_md5(s.target)},{scalar_md5(s.golden)},{'' if s.md5_equal is None else s.md5_equal}"
            + ("," * len(SIX) if mixed else "") + "\n")
    return head, tail


def _slow_block(ts: Mapping[str, object] | None, gs: Mapping[str, object] | None) -> str:
    """A row's sixteen statistics cells by msprobe's rules value by value (``stat_blocks`` prints the
    usual rows in bulk); a row without statistics on a side gets no differences (N/A) and the values
    there are."""
    from acc_agent.tools._stat_rows import stat_cells

    if ts is None or gs is None:
        return ",".join(["N/A"] * 8 + [_text(ts.get(k)) if ts else "N/A" for k in _KEYS]
                        + [_text(gs.get(k)) if gs else "N/A" for k in _KEYS])
    cells = [(*stat_cells(ts.get(k), gs.get(k)), ts.get(k), gs.get(k)) for k in _KEYS]
    return ",".join([_quoted(c[0]) for c in cells] + [_quoted(c[1]) for c in cells] + [_text(c[2]) for c in cells]
                    + [_text(c[3]) for c in cells])


def _text(v: object) -> str:
    """A statistics value as msprobe prints it, quoted for the CSV where needed."""
    if type(v) is float and -_INF < v < _INF:
        return repr(v)
    from acc_agent.tools._stat_rows import msprobe_text

    return _quoted(msprobe_text(v))
