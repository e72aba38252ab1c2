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
import json
import math
from collections.abc import Callable, Generator, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import IO, TYPE_CHECKING, BinaryIO, TextIO

import numpy as np
import numpy.typing as npt

from acc_agent.atomic import atomic_write
from acc_agent.errors import AccAgentError
from acc_agent.frontend import option
from acc_agent.models.compare import DumpRow, TensorMetrics
from acc_agent.numerics.metrics import msprobe_round
from acc_agent.text_safety import spreadsheet_cell
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
    Lines are formatted by hand and written in blocks (quoted like the csv module's QUOTE_MINIMAL):
    a default dump gives ~300k lines, and the csv module's per-cell work doubled the time."""
    out = _Lines(fh)
    for before, i, after in statistics_lines(rows, scalar_rows, dumps):
        out.line(before if i < 0 else before + status_cells(rows[i]) + after)
    out.flush()


def status_cells(row: DumpRow) -> str:
    """The Result and Err_message cells of a row (and the comma after them): the only cells the
    diagnosis may change after the rows are computed."""
    d = row.__dict__  # statistics rows are sparse (DumpRow.__getattr__): read with the defaults
    message = d.get("message")
    return f"{d.get('status', 'pass')},{_quoted(json.dumps(message.split('; '))) if message else '[]'},"


def statistics_lines(rows: list[DumpRow], scalar_rows: Iterable[ScalarRow], dumps: DumpHeaders,
                     part: tuple[int, int] | None = None) -> Iterator[tuple[str, int, str]]:
    """The statistics CSV's lines in order, as ``(before, row index, after)``.

    A row's line is ``before + status_cells(rows[i]) + after``; a line of no row (the header, a
    non-tensor argument) has index -1 and is all in ``before``. Keeping the Result cells apart lets
    the text be made while the diagnosis still decides those two cells (see _background_csv).
    ``part=(lo, hi)``: only the lines of the API calls whose first row index is in [lo, hi) (with the
    header and leading arguments in the part from 0); the parts of a partition, joined in order,
    are the whole table. Rows before ``lo`` are walked, not formatted: a row's stack cell depends
    on the row before it."""
    from acc_agent.tools._stat_rows import order_key

    lo, hi = part if part is not None else (0, len(rows))
    mixed = any(r.compare_mode == "tensor" for r in rows)
    if lo == 0:
        yield _cells_line(STAT_HEADER + STAT_EXTRA + ([c for c, _ in SIX] if mixed else [])), -1, ""
    groups, loose = _scalar_groups(scalar_rows)
    prefixes = {rank: _dtype_prefix(pair) for rank, pair in dumps.items()}
    stacks = _Stacks(dumps)
    lines = _RowLines(rows, prefixes, mixed)
    last_api: tuple[str, str] = ("", "")
    for (_, after), extra in loose.items():
        if after < 0:
            last_api = yield from _scalar_lines(extra, stacks, last_api, mixed, lo == 0)
    i, n = 0, len(rows)
    while i < n and i < hi:
        emit = i >= lo  # the call's lines belong to the part of its first row
        r = rows[i]
        rank = r.__dict__.get("rank") or ""  # statistics rows are sparse: no rank key for a single rank
        group = groups.get((rank, r.index))
        members: list[int | ScalarRow]
        if group is None:
            members = [i]
            i += 1
        else:
            key, last, srows = group
            j = i
            while j < n and (rows[j].__dict__.get("rank") or "") == rank and rows[j].index <= last:
                j += 1
            members = sorted([*range(i, j), *srows],
                             key=lambda x: order_key(rows[x].name if isinstance(x, int) else x.name, key))
            i = j
        for m in members:
            if isinstance(m, int):
                name = rows[m].__dict__["name"]
                if not _same_api(name, rank, last_api):
                    last_api = (rank, _api_key(name))
                    if not emit:
                        continue
                    stack = stacks.cell(rank, last_api[1])
                    stack = stack if stack == "N/A" else _quoted(stack)
                elif not emit:
                    continue
                else:
                    stack = "N/A"  # msprobe prints an API's stack on its first row only
                head, tail = lines.get(m)
                yield head, m, stack + tail
            else:
                last_api = yield from _scalar_lines([m], stacks, last_api, mixed, emit)
        tail_rows = loose.get((rank, rows[i - 1].index))
        if tail_rows:
            last_api = yield from _scalar_lines(tail_rows, stacks, last_api, mixed, emit)


def split_points(rows: list[DumpRow], parts: int) -> list[tuple[int, int]]:
    """``parts`` ranges of row indices of about equal size, for :func:`statistics_lines`'s ``part``."""
    n = len(rows)
    bounds = [n * k // parts for k in range(parts + 1)]
    return [(bounds[k], bounds[k + 1]) for k in range(parts) if bounds[k] < bounds[k + 1]] or [(0, n)]


def _cells_line(cells: Iterable[object]) -> str:
    """One CSV line of cells, quoted like csv.QUOTE_MINIMAL."""
    return ",".join(_quoted(c if type(c) is str else str(c)) for c in cells) + "\n"


class _Lines:
    """CSV lines collected and written in blocks; ``cells`` quotes like csv.QUOTE_MINIMAL."""

    def __init__(self, fh: IO[str]) -> None:
        self._fh = fh
        self._buf: list[str] = []

    def line(self, text: str) -> None:
        self._buf.append(text)
        if len(self._buf) >= 8192:
            self.flush()

    def flush(self) -> None:
        self._fh.write("".join(self._buf))
        self._buf.clear()


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


def _scalar_lines(srows: list[ScalarRow], stacks: _Stacks, last_api: tuple[str, str], mixed: bool, emit: bool = True
                  ) -> Generator[tuple[str, int, str], None, tuple[str, str]]:
    """The lines of non-tensor arguments (none unless ``emit``); returns the API call of the last one
    (for the next row's stack cell)."""
    for s in srows:
        api = (s.rank or "", s.key)
        if emit:
            stack = stacks.cell(api[0], s.key) if api != last_api else "N/A"
            yield _scalar_line(s, stack, mixed), -1, ""
        last_api = api
    return last_api


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

    def cell(self, rank: str, api: str) -> str:
        table = self._loaded.get(rank)
        if table is None:
            table = self._loaded[rank] = _read_stacks(self._paths.get(rank))
        return table.get(api, "N/A")


def _read_stacks(path: Path | None) -> dict[str, str]:
    if path is None or not path.is_file():
        return {}
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError):
        return {}  # a broken stack.json costs the stack column, not the comparison
    if not isinstance(doc, dict):
        return {}
    out: dict[str, str] = {}
    if isinstance(doc.get("0"), list):  # msprobe >= 8: {"0": [[api names], [stack lines]], ...}
        for item in doc.values():
            if isinstance(item, list) and len(item) == 2 and isinstance(item[0], list):
                for api in item[0]:
                    out[str(api)] = str(item[1])
        return out
    return {str(k): str(v) for k, v in doc.items()}


def _grad(v: object) -> str:
    return "N/A" if v is None else str(v)


_NEEDS_QUOTES = ',"\n\r'


def _quoted_all(texts: list[str]) -> list[str]:
    """``_quoted`` over many cells; when none needs quoting (the usual case) the list comes back as it is."""
    joined = "\x00".join(texts)
    if not any(c in joined for c in _NEEDS_QUOTES) and not any(t[:1] in _FORMULA_START for t in texts if t):
        return texts
    return [_quoted(t) for t in texts]


class _RowLines:
    """Statistics rows as CSV lines, made a chunk of rows at a time column by column.

    A default dump gives ~300k rows: a line per row built from ~15 dictionary reads and an
    f-string took most of the CSV's time. Here each column of a chunk is one comprehension,
    the cells many rows share (dtype, shape, rank) are made once, and the numbers come from
    ``numeric_blocks``. A line is returned as the text before its Result cell and after its
    NPU_Stack_Info cell: the diagnosis may still change the first, and the stack cell depends on the
    row before it (msprobe prints an API's stack on its first row only)."""

    CHUNK = 32768

    def __init__(self, rows: list[DumpRow], prefixes: Mapping[str, tuple[str, str]], mixed: bool) -> None:
        self._rows = rows
        self._prefixes = prefixes
        self._mixed = mixed
        self._chunks: dict[int, tuple[list[str], list[str]]] = {}
        self._heads: dict[tuple[object, ...], tuple[object, object, str]] = {}
        self._plain: dict[str | None, str] = {None: ""}

    def get(self, pos: int) -> tuple[str, str]:
        c = pos // self.CHUNK
        chunk = self._chunks.get(c)
        if chunk is None:
            for old in [k for k in self._chunks if k < c - 1]:  # rows are asked in (almost) row order
                del self._chunks[old]
            chunk = self._chunks[c] = self._make(c * self.CHUNK, min(len(self._rows), (c + 1) * self.CHUNK))
        k = pos - c * self.CHUNK
        return chunk[0][k], chunk[1][k]

    def _make(self, lo: int, hi: int) -> tuple[list[str], list[str]]:
        rows = self._rows[lo:hi]
        ds = [r.__dict__ for r in rows]  # statistics rows are sparse (DumpRow.__getattr__): read with defaults
        names = [d["name"] for d in ds]
        q_names = _quoted_all(names)
        golden = [d.get("golden_name") for d in ds]
        name_cells = [q + "," + (q if g == n or not g else _quoted(g))
                      for q, n, g in zip(q_names, names, golden, strict=True)]
        ranks = [d.get("rank") for d in ds]
        heads = [self._head(d, r) for d, r in zip(ds, ranks, strict=True)]
        blocks = numeric_blocks(rows)
        t_grad = [d.get("target_requires_grad") for d in ds]
        g_grad = [d.get("golden_requires_grad") for d in ds]
        before = [f"{nm},{hd},{bl},{tg == gg},"
                  for nm, hd, bl, tg, gg in zip(name_cells, heads, blocks, t_grad, g_grad, strict=True)]
        plain = self._cell
        modes = [d.get("compare_mode", "tensor") for d in ds]
        eq = [d.get("md5_equal") for d in ds]
        after = [f",{mo},{plain(rk)},{d['index']},{plain(d.get('pair_method'))},{d.get('target_md5') or ''},"
                 f"{d.get('golden_md5') or ''},{'' if e is None else e}"
                 for d, mo, rk, e in zip(ds, modes, ranks, eq, strict=True)]
        if self._mixed:
            blank = "," * len(SIX)
            after = [a + ("," + ",".join(_cell(r, f, True) for _, f in SIX) if mo == "tensor" else blank)
                     for a, r, mo in zip(after, rows, modes, strict=True)]
        return before, [a + "\n" for a in after]

    def _cell(self, text: str | None) -> str:
        hit = self._plain.get(text)
        if hit is None:
            hit = self._plain[text] = _quoted(text) if text else ""
        return hit

    def _head(self, d: Mapping[str, object], rank: str | None) -> str:
        """dtype, shape and requires_grad cells, which most rows share with many others."""
        tshape, gshape = d.get("target_shape"), d.get("golden_shape")
        key = (d.get("target_dtype"), d.get("golden_dtype"), id(tshape), id(gshape), d.get("target_requires_grad"),
               d.get("golden_requires_grad"), rank)
        hit = self._heads.get(key)
        if hit is None:
            t_pre, g_pre = self._prefixes.get(rank or "", ("", ""))
            text = (f"{_dtype_cell(t_pre, key[0])},{_dtype_cell(g_pre, key[1])},{_shape_cell(tshape)},"
                    f"{_shape_cell(gshape)},{_grad(key[4])},{_grad(key[5])}")
            hit = self._heads[key] = (tshape, gshape, text)  # the lists are kept: their ids stay theirs
        return hit[2]


def _dtype_cell(prefix: str, dtype: object) -> str:
    return _quoted(f"{prefix}{dtype}") if dtype is not None else "N/A"


def _shape_cell(shape: object) -> str:
    return "N/A" if shape is None else _quoted(str(shape))


def numeric_blocks(rows: Sequence[DumpRow]) -> list[str]:
    """Each row's 16 statistics cells joined (4 diffs, 4 relative errors, target and golden values).

    Printing floats is most of a 300k-row CSV's time: here each distinct value is printed once
    (a call's output is the next one's input; weights are equal on both sides), with repr run over
    whole lists, and only values that are not two finite floats (golden not 0) go one by one."""
    from acc_agent.tools._stat_rows import stat_arrays, stat_cells

    with_pos = [i for i, r in enumerate(rows) if r.__dict__.get("target_stats") is not None
                and r.__dict__.get("golden_stats") is not None]
    with_stats = [rows[i] for i in with_pos]
    ts_list = [r.__dict__["target_stats"] for r in with_stats]
    gs_list = [r.__dict__["golden_stats"] for r in with_stats]
    t_arr, g_arr, plain = stat_arrays(ts_list, gs_list)
    with np.errstate(all="ignore"):
        fine = np.isfinite(t_arr) & np.isfinite(g_arr) & plain[:, None]
        same = fine & (t_arr == g_arr) & ((t_arr != 0) | (np.signbit(t_arr) == np.signbit(g_arr)))
        fast = fine & (same | (g_arr != 0))
        diff = t_arr - g_arr
        pct = np.abs(diff / g_arr * 100)
    t_txt = np.full(t_arr.shape, "", dtype=object)
    g_txt = np.full(t_arr.shape, "", dtype=object)
    d_txt = np.full(t_arr.shape, "0", dtype=object)
    p_txt = np.full(t_arr.shape, "0", dtype=object)
    t_txt[fast] = _float_texts(t_arr[fast])
    g_txt[same] = t_txt[same]
    other = fast & ~same
    g_txt[other] = _float_texts(g_arr[other])
    d_txt[other] = _float_texts(diff[other])  # a call's output is the next call's input: same numbers
    p_txt[other] = _float_texts(pct[other], "%")
    for i, j in zip(*np.nonzero(~fast), strict=True):  # NaN/Inf, golden 0, ints, bools, None: msprobe's rules
        key = _KEYS[j]
        t, g = ts_list[i].get(key), gs_list[i].get(key)
        dcell, pcell = stat_cells(t, g)
        d_txt[i, j], p_txt[i, j], t_txt[i, j], g_txt[i, j] = _quoted(dcell), _quoted(pcell), _text(t), _text(g)
    cells = list(map(",".join, np.concatenate([d_txt, p_txt, t_txt, g_txt], axis=1).tolist()))
    if len(with_stats) == len(rows):
        return cells
    out = [_missing_block(r.__dict__.get("target_stats"), r.__dict__.get("golden_stats")) for r in rows]
    for k, i in enumerate(with_pos):
        out[i] = cells[k]
    return out


def _missing_block(ts: Mapping[str, object] | None, gs: Mapping[str, object] | None) -> str:
    """The 16 cells of a row without statistics on one side: no differences, the values there are."""
    return ",".join(["N/A"] * 8 + [_text(ts.get(k)) if ts else "N/A" for k in _KEYS]
                    + [_text(gs.get(k)) if gs else "N/A" for k in _KEYS])


def _float_texts(x: npt.NDArray[np.float64], suffix: str = "") -> list[str]:
    """repr of finite float64 values (+ ``suffix``), each distinct value printed once (0.0 and -0.0 apart)."""
    out = np.empty(x.shape, dtype=object)
    zero = x == 0
    nonzero = ~zero
    uniq, inverse = np.unique(x[nonzero], return_inverse=True)
    texts = float_reprs(uniq)
    if suffix:
        texts = [t + suffix for t in texts]
    out[nonzero] = np.array(texts, dtype=object)[inverse]
    out[zero & np.signbit(x)] = "-0.0" + suffix
    out[zero & ~np.signbit(x)] = "0.0" + suffix
    return out.tolist()


#: Where orjson prints a float exactly as Python's repr does: both give the shortest round-trip
#: digits, positional here; outside it they differ only in how the exponent is written.
_ORJSON_SAME = (1e-4, 1e16)


def float_reprs(x: npt.NDArray[np.float64]) -> list[str]:
    """``repr`` of each finite float64 value, about 4x faster through orjson's C formatter where installed.

    A 300k-row statistics CSV prints ~2M floats; repr one at a time was the largest part of its time.
    orjson writes the same shortest digits; only where its exponent notation differs from Python's
    (outside ``_ORJSON_SAME``) does repr print the value."""
    values = x.tolist()
    try:
        import orjson
    except ImportError:
        return list(map(repr, values))
    mag = np.abs(x)
    outside = np.flatnonzero((mag < _ORJSON_SAME[0]) | (mag >= _ORJSON_SAME[1]))
    if 2 * len(outside) > len(values):  # mostly tiny or huge values (relative errors): repr for all, in C
        return list(map(repr, values))
    texts = orjson.dumps(values).decode("ascii")[1:-1].split(",") if values else []
    if len(outside):
        fixed = np.array(texts, dtype=object)
        fixed[outside] = list(map(repr, x[outside].tolist()))  # both loops in C
        return fixed.tolist()
    return texts


def _scalar_line(s: ScalarRow, stack: str, mixed: bool) -> str:
    """A non-tensor argument's row, as msprobe prints it (its value in all four statistics columns)."""
    name = _quoted(s.name)
    golden_name = name if s.golden_name == s.name else _quoted(s.golden_name)
    key = _scalar_key(s, mixed)
    cells = _SCALAR_CELLS.get(key) if key is not None else None
    if cells is None:
        cells = _scalar_cells(s, mixed)
        if key is not None and len(_SCALAR_CELLS) < 65536:
            _SCALAR_CELLS[key] = cells
    return (f"{name},{golden_name},{cells[0]},{stack if stack == 'N/A' else _quoted(stack)},scalar,"
            f"{_quoted(s.rank or '')},,exact,{cells[1]}")


#: The cells of a scalar row that follow from its values alone, by value: a default dump repeats the
#: same few arguments (approximate="none", dim=-1, a 0.125 scale) in every layer.
_SCALAR_CELLS: dict[tuple[object, ...], tuple[str, str]] = {}
_PLAIN_SCALARS = frozenset({int, str, bool, type(None)})


def _scalar_key(s: ScalarRow, mixed: bool) -> tuple[object, ...] | None:
    """What a scalar row's value cells depend on, or None where the values are not plain enough to key on
    (lists, dicts, zeros whose sign the text shows, NaN which equals nothing)."""
    t, g = s.target, s.golden
    tv, gv = t.value, g.value
    for v in (tv, gv):
        kind = type(v)
        if kind not in _PLAIN_SCALARS and not (kind is float and v != 0.0 and v == v):
            return None
    return (t.type, type(tv), tv, g.type, type(gv), gv, t.name.rsplit(".", 1)[-1] in RANK_ARGS,
            g.name.rsplit(".", 1)[-1] in RANK_ARGS, s.status, tuple(s.messages), s.md5_equal, mixed)


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


def _text(v: object) -> str:
    """A statistics value as msprobe prints it, quoted for the CSV where needed."""
    if type(v) is float and -_INF < v < _INF:
        return repr(v)
    from acc_agent.tools._stat_rows import msprobe_text

    return _quoted(msprobe_text(v))
