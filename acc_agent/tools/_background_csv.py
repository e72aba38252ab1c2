"""The statistics CSV of a large rank, written by forked children while this process diagnoses.

On msprobe's default dumps (~300k statistics rows) the CSV text and the diagnosis take about the
same time, and neither needs the other until the end: the diagnosis may change only two cells
per row (Result and Err_message, see ``status_cells``). So children make every line's text from
the rows as they are at the fork, each its share of the table (``statistics_chunks``' parts; one
child on a 2-core machine, up to ``MAX_PARTS`` where cores are free), into an unnamed draft file
as the lines are made; then they get the rows the diagnosis left not plainly passing and copy
their drafts with those cells replaced. One child writes the CSV itself; several write their
parts beside it, and this process joins them into the CSV. The children share the parent's pages
(fork), so nothing is copied over, and they leave with ``os._exit``: their millions of objects
are never freed one by one.

Used only where ``fork`` exists and this process runs no other thread (an MCP server answering
in threads must not fork: a lock held by another thread would stay held in the child), and only
for a CSV big enough to pay for the fork; everywhere else the CSV is written in this process.
"""

from __future__ import annotations

import contextlib
import json
import os
import pickle
import shutil
import tempfile
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TYPE_CHECKING, BinaryIO

import numpy as np
import numpy.typing as npt

from acc_agent.errors import AccAgentError
from acc_agent.fork_safety import can_fork

if TYPE_CHECKING:
    from collections.abc import Sequence

    from acc_agent.models.compare import DumpRow
    from acc_agent.tools._compare_csv import DumpHeaders, LineChunk
    from acc_agent.tools._stat_rows import ScalarRow

#: Fewer rows than this are written in this process: the fork and the wait cost more than they save.
MIN_ROWS = 20_000
#: At most this many drafting children: beyond it the diagnosis, not the CSV, is what the run waits for.
MAX_PARTS = 4

#: A row's Result and Err_message as the diagnosis leaves most rows: sent to the children are only the others.
_PLAIN = ("pass", "")


def marked_rows(rows: Sequence[DumpRow]) -> dict[int, tuple[str, str]]:
    """(status, message) of every row not plainly passing; the children know every other row passes."""
    out = {}
    for i, r in enumerate(rows):
        d = r.__dict__  # statistics rows are sparse (DumpRow.__getattr__): read with the defaults
        state = (d.get("status", "pass"), d.get("message", ""))
        if state != _PLAIN:
            out[i] = state
    return out


def default_parts() -> int:
    """One drafting child per core the diagnosis leaves free (at least one, at most MAX_PARTS)."""
    from acc_agent.tools._dump_rows import cores

    return min(MAX_PARTS, max(1, cores() - 1))


class _Child:
    """One drafting child: its process, its two pipe ends, its share of the rows."""

    def __init__(self, pid: int, to_child: int, from_child: int) -> None:
        self.pid = pid
        self.to_child = to_child
        self.from_child = from_child


class BackgroundCsv:
    """Forked children drafting the statistics CSV; :meth:`finish` hands them the diagnosis's statuses."""

    def __init__(self, children: list[_Child], path: Path, rows: list[DumpRow]) -> None:
        self._children = children
        self.path = path
        self._rows = rows
        self._open = True  # the pipes are ours to close and the children ours to wait for
        self._sent = False  # the statuses went down (and those pipe ends are closed)

    @classmethod
    def start(cls, rows: list[DumpRow], scalar_rows: Sequence[ScalarRow], dumps: DumpHeaders,
              path: Path, parts: int | None = None) -> BackgroundCsv | None:
        """Fork the drafting children, or None where forking is not safe or not worth it."""
        if len(rows) < MIN_ROWS or not can_fork():
            return None
        from acc_agent.tools._compare_csv import split_points

        ranges = split_points(rows, parts or default_parts())
        children: list[_Child] = []
        for k, part in enumerate(ranges):
            down_r, down_w = os.pipe()
            up_r, up_w = os.pipe()
            pid = os.fork()
            if pid == 0:  # a child: never returns
                for child in children:  # the earlier children's pipe ends are not this child's
                    os.close(child.to_child)
                    os.close(child.from_child)
                os.close(down_w)
                os.close(up_r)
                _child(rows, scalar_rows, dumps, path, part, k if len(ranges) > 1 else None, down_r, up_w)
            os.close(down_r)
            os.close(up_w)
            children.append(_Child(pid, down_w, up_r))
        return cls(children, path, rows)

    def send(self) -> None:
        """Hand the children the rows' statuses as the diagnosis left them, so that they finish the
        table while this process builds the rest of the result (once; :meth:`finish` does it if not done)."""
        if self._sent or not self._open:
            return
        blob = pickle.dumps(marked_rows(self._rows), protocol=pickle.HIGHEST_PROTOCOL)
        self._sent = True
        for child in self._children:
            try:
                with os.fdopen(child.to_child, "wb") as down:
                    down.write(blob)
            except BrokenPipeError:
                pass  # that child has stopped early: its report says why

    def finish(self) -> Path:
        """Send the rows' statuses (unless :meth:`send` did), wait for the table; an error is a child's, as
        if written here."""
        self.send()
        self._open = False
        reports = []
        for child in self._children:
            with os.fdopen(child.from_child, "rb") as up:
                report = up.read()
            _, status = os.waitpid(child.pid, 0)
            reports.append((report, status))
        part_files = [Path(r[3:].decode("utf-8")) for r, _ in reports if r.startswith(b"ok ")]
        try:
            for report, status in reports:
                if not report.startswith(b"ok") or os.waitstatus_to_exitcode(status) != 0:
                    raise _child_error(report, status, self.path)
            if len(self._children) > 1:
                from acc_agent.tools._compare_csv import guarded_write_bytes

                guarded_write_bytes(self.path, lambda out: _join(part_files, out))
        finally:
            for part in part_files:
                with contextlib.suppress(OSError):
                    part.unlink()
        return self.path

    def abandon(self) -> None:
        """Stop the children (the comparison failed before the CSV was due); the old CSV stays as it was."""
        if not self._open:
            return
        self._open = False
        for child in self._children:
            for fd in (child.from_child,) if self._sent else (child.to_child, child.from_child):
                with contextlib.suppress(OSError):
                    os.close(fd)
            with contextlib.suppress(OSError, ChildProcessError):
                os.kill(child.pid, 9)
                os.waitpid(child.pid, 0)


def _child_error(report: bytes, status: int, path: Path) -> AccAgentError:
    try:
        err = json.loads(report.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError):
        err = {"code": "cannot_write", "message": f"the CSV writer stopped (exit status {status}) before writing "
                                                  f"{path}", "hint": "Run again; if it repeats, report it with the "
                                                  "dumps' sizes.", "path": str(path)}
    return AccAgentError(err["code"], err["message"], hint=err.get("hint"), path=err.get("path"))


def _join(parts: list[Path], out: BinaryIO) -> None:
    for part in parts:
        with part.open("rb") as fh:
            shutil.copyfileobj(fh, out, 16 << 20)


def _child(rows: list[DumpRow], scalar_rows: Sequence[ScalarRow], dumps: DumpHeaders, path: Path,
           part: tuple[int, int], number: int | None, down: int, up: int) -> None:
    """Draft this child's share, apply the diagnosis's statuses to the copy, report ``ok`` (with the
    part's file when there are several children) or the error as JSON."""
    code = 1
    try:
        from acc_agent.tools._compare_csv import guarded_write_bytes, status_cells

        draft, spans, drafted = _draft(rows, scalar_rows, dumps, path, part)
        with os.fdopen(down, "rb") as fh:
            marked: dict[int, tuple[str, str]] = pickle.load(fh)  # our own parent's statuses, our own pipe
        edits = []
        for i, span in spans.find(drafted.keys() | marked.keys()).items():
            state = marked.get(i, _PLAIN)
            if state != drafted.get(i, _PLAIN):
                d = rows[i].__dict__
                d["status"], d["message"] = state
                edits.append((*span, status_cells(rows[i]).encode("utf-8")))
        edits.sort()
        with draft:
            if number is None:  # the only child: it writes the CSV itself
                guarded_write_bytes(path, lambda out: _copy_edited(draft, out, edits))
                os.write(up, b"ok")
            else:
                part_path = _part_file(path, number, lambda out: _copy_edited(draft, out, edits))
                os.write(up, b"ok " + str(part_path).encode("utf-8"))
        code = 0
    except AccAgentError as exc:
        _report(up, {"code": exc.code, "message": exc.message, "hint": exc.hint, "path": exc.path})
    except BaseException as exc:  # noqa: BLE001 - whatever stops the child is reported to the parent
        _report(up, {"code": "cannot_write", "message": f"writing CSV {path} failed: {type(exc).__name__}: {exc}",
                     "hint": "Run again; if it repeats, report it with this message.", "path": str(path)})
    finally:
        os._exit(code)


def _part_file(path: Path, number: int, write: Callable[[BinaryIO], object]) -> Path:
    """A named file for one part, beside the CSV where its folder is writable (the parent joins and deletes it)."""
    try:
        fd, name = tempfile.mkstemp(prefix=f".{path.name[:80]}.part{number}.", dir=path.parent)
    except OSError:
        fd, name = tempfile.mkstemp(prefix=f"acc-agent-csv.part{number}.")
    try:
        with os.fdopen(fd, "wb") as out:
            write(out)
    except OSError as exc:
        with contextlib.suppress(OSError):
            os.unlink(name)
        raise AccAgentError("cannot_write", f"cannot write CSV {path}: {exc}", hint="Choose a writable path for the "
                            "CSV, on a disk with room for twice its size.", path=str(path)) from None
    return Path(name)


class _Spans:
    """Where each drafted row's Result and Err_message cells lie in the draft (byte offset, length).

    Kept as arrays, a chunk of lines at a time: a dictionary of ~300k tuples cost ~50 MB and a
    tenth of a second, and only the few rows the diagnosis marks are ever looked up."""

    def __init__(self) -> None:
        self._rows: list[npt.NDArray[np.int64]] = []
        self._offsets: list[npt.NDArray[np.int64]] = []
        self._widths: list[npt.NDArray[np.int64]] = []

    def add(self, chunk: LineChunk, base: int, ascii_only: bool) -> None:
        """Note the status cells of a chunk of lines written from byte ``base`` on; ``ascii_only``: every
        character is one byte."""
        n = len(chunk.rows)
        lead = chunk.lead if chunk.lead is not None else np.zeros(n, dtype=np.int64)
        size: Callable[[str], int] = len if ascii_only else _utf8_len
        line = np.fromiter(map(size, chunk.lines), np.int64, n)
        width = np.fromiter(map(size, chunk.status), np.int64, n)
        if not ascii_only:  # characters to bytes: the text before the status cells
            lead = np.fromiter(map(_utf8_len, map(str.__getitem__, chunk.lines, map(slice, lead.tolist()))),
                               np.int64, n)
        self._rows.append(np.array(chunk.rows, dtype=np.int64))
        self._offsets.append(base + size(chunk.head) + np.cumsum(line) - line + lead)
        self._widths.append(width)

    def find(self, rows: Iterable[int]) -> dict[int, tuple[int, int]]:
        """(offset, length) of each of ``rows`` drafted here."""
        wanted = np.fromiter(rows, np.int64)
        if not self._rows or not len(wanted):
            return {}
        ids = np.concatenate(self._rows)
        order = np.argsort(ids, kind="stable")
        ids = ids[order]
        at = np.minimum(np.searchsorted(ids, wanted), len(ids) - 1)
        hit = ids[at] == wanted
        offsets, widths = np.concatenate(self._offsets)[order][at[hit]], np.concatenate(self._widths)[order][at[hit]]
        return {int(i): (int(o), int(w)) for i, o, w in zip(wanted[hit], offsets, widths, strict=True)}


def _utf8_len(text: str) -> int:
    return len(text.encode("utf-8"))


def _draft(rows: list[DumpRow], scalar_rows: Sequence[ScalarRow], dumps: DumpHeaders, path: Path,
           part: tuple[int, int]) -> tuple[BinaryIO, _Spans, dict[int, tuple[str, str]]]:
    """This share of the CSV with the statuses as they are now, in an unnamed temporary file; where
    each of its rows' Result and Err_message cells lie in it; and those rows drafted with a status
    other than a plain pass. The text is written a chunk of lines at a time as it is made: a child
    never holds its whole share."""
    from acc_agent.tools._compare_csv import statistics_chunks

    try:
        draft = tempfile.TemporaryFile(dir=path.parent)  # noqa: SIM115 - beside the CSV: the disk it will fill
    except OSError:
        draft = tempfile.TemporaryFile()  # noqa: SIM115 - returned to the caller, who closes it
    spans = _Spans()
    drafted: dict[int, tuple[str, str]] = {}
    written = 0
    for chunk in statistics_chunks(rows, scalar_rows, dumps, part, leads=True):
        text = chunk.text()
        data = text.encode("utf-8")
        spans.add(chunk, written, len(data) == len(text))
        drafted.update(chunk.marked)
        draft.write(data)
        written += len(data)
    return draft, spans, drafted


def _copy_edited(draft: BinaryIO, out: BinaryIO, edits: list[tuple[int, int, bytes]]) -> None:
    """Copy the draft to ``out`` with each (offset, length) span replaced by the new bytes."""
    draft.seek(0)
    pos = 0
    for start, width, cells in edits:
        _copy(draft, out, start - pos)
        out.write(cells)
        draft.seek(width, os.SEEK_CUR)
        pos = start + width
    shutil.copyfileobj(draft, out, 16 << 20)


def _copy(src: BinaryIO, dst: BinaryIO, n: int) -> None:
    while n > 0:
        chunk = src.read(min(n, 16 << 20))
        if not chunk:
            return
        dst.write(chunk)
        n -= len(chunk)


def _report(fd: int, err: dict[str, str | None]) -> None:
    with contextlib.suppress(OSError):  # the parent is gone: nobody to tell
        os.write(fd, json.dumps(err).encode("utf-8"))
