"""The statistics CSV of a large rank, written by a forked child while this process diagnoses.

On msprobe's default dumps (~300k statistics rows) the CSV text and the diagnosis take about the
same time, and neither needs the other until the end: the diagnosis may change only two cells
per row (Result and Err_message, see ``status_cells``). So the child makes every line's text from
the rows as they are at the fork, waits for the rows whose status or message the diagnosis then
changed, and writes the file (its draft, written as the lines are made, is copied with those
cells replaced). The child shares the parent's pages (fork), so nothing is copied
over, and it leaves with ``os._exit``: its millions of objects are never freed one by one.

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
import sys
import tempfile
from itertools import accumulate
from pathlib import Path
from typing import TYPE_CHECKING, Any, BinaryIO

from acc_agent.errors import AccAgentError
from acc_agent.fork_safety import can_fork

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

    from acc_agent.models.compare import DumpRow

#: Fewer rows than this are written in this process: the fork and the wait cost more than they save.
MIN_ROWS = 20_000

#: A row's Result and Err_message as the diagnosis leaves most rows: sent to the child are only the others.
_PLAIN = ("pass", "")


def marked_rows(rows: Sequence[DumpRow]) -> dict[int, tuple[str, str]]:
    """(status, message) of every row not plainly passing; the child knows every other row passes."""
    out = {}
    for i, r in enumerate(rows):
        d = r.__dict__  # statistics rows are sparse (DumpRow.__getattr__): read with the defaults
        state = (d.get("status", "pass"), d.get("message", ""))
        if state != _PLAIN:
            out[i] = state
    return out


class BackgroundCsv:
    """A forked child writing the statistics CSV; :meth:`finish` hands it the diagnosis's changes."""

    def __init__(self, pid: int, to_child: int, from_child: int, path: Path, rows: list[DumpRow]) -> None:
        self._pid = pid
        self._to_child = to_child
        self._from_child = from_child
        self.path = path
        self._rows = rows
        self._open = True  # the pipes are ours to close and the child ours to wait for

    @classmethod
    def start(cls, rows: list[DumpRow], scalar_rows: Sequence[Any], dumps: Mapping[str, tuple[Any, Any]],
              path: Path) -> BackgroundCsv | None:
        """Fork the writer, or None where forking is not safe or not worth it."""
        if len(rows) < MIN_ROWS or not can_fork():
            return None
        down_r, down_w = os.pipe()
        up_r, up_w = os.pipe()
        sys.stdout.flush()
        sys.stderr.flush()
        pid = os.fork()
        if pid == 0:  # the child: never returns
            os.close(down_w)
            os.close(up_r)
            _child(rows, scalar_rows, dumps, path, down_r, up_w)
        os.close(down_r)
        os.close(up_w)
        return cls(pid, down_w, up_r, path, rows)

    def finish(self) -> Path:
        """Send the rows' statuses after the diagnosis, wait for the file; an error is the child's, as if written here."""
        marked = marked_rows(self._rows)
        self._open = False
        try:
            with os.fdopen(self._to_child, "wb") as down:
                pickle.dump(marked, down, protocol=pickle.HIGHEST_PROTOCOL)
        except BrokenPipeError:
            pass  # the child has stopped early: its report says why
        with os.fdopen(self._from_child, "rb") as up:
            report = up.read()
        _, status = os.waitpid(self._pid, 0)
        if report == b"ok" and os.waitstatus_to_exitcode(status) == 0:
            return self.path
        try:
            err = json.loads(report.decode("utf-8"))
        except (UnicodeDecodeError, json.JSONDecodeError):
            err = {"code": "cannot_write", "message": f"the CSV writer stopped (exit status {status}) before "
                                                      f"writing {self.path}", "hint": "Run again; if it repeats, "
                                                      "report it with the dumps' sizes.", "path": str(self.path)}
        raise AccAgentError(err["code"], err["message"], hint=err.get("hint"), path=err.get("path"))

    def abandon(self) -> None:
        """Stop the child (the comparison failed before the CSV was due); the old CSV stays as it was."""
        if not self._open:
            return
        self._open = False
        for fd in (self._to_child, self._from_child):
            with contextlib.suppress(OSError):
                os.close(fd)
        try:
            os.kill(self._pid, 9)
            os.waitpid(self._pid, 0)
        except (OSError, ChildProcessError):
            pass


def _child(rows: list[DumpRow], scalar_rows: Sequence[Any], dumps: Mapping[str, tuple[Any, Any]], path: Path,
           down: int, up: int) -> None:
    """Draft the CSV, apply the diagnosis's changes to the copy, report ``ok`` or the error as JSON."""
    code = 1
    try:
        from acc_agent.tools._compare_csv import guarded_write, status_cells

        draft, starts, widths, drafted = _draft(rows, scalar_rows, dumps, path)
        with os.fdopen(down, "rb") as fh:
            marked: dict[int, tuple[str, str]] = pickle.load(fh)  # our own parent's statuses, our own pipe
        edits = []
        for i in sorted(drafted.keys() | marked.keys()):
            state = marked.get(i, _PLAIN)
            if state != drafted.get(i, _PLAIN):
                d = rows[i].__dict__
                d["status"], d["message"] = state
                edits.append((starts[i], widths[i], status_cells(rows[i]).encode("utf-8")))
        with draft:
            guarded_write(path, lambda out: _copy_edited(draft, out, sorted(edits)), binary=True)
        os.write(up, b"ok")
        code = 0
    except AccAgentError as exc:
        _report(up, {"code": exc.code, "message": exc.message, "hint": exc.hint, "path": exc.path})
    except BaseException as exc:  # noqa: BLE001 - whatever stops the child is reported to the parent
        _report(up, {"code": "cannot_write", "message": f"writing CSV {path} failed: {type(exc).__name__}: {exc}",
                     "hint": "Run again; if it repeats, report it with this message.", "path": str(path)})
    finally:
        os._exit(code)


#: Pieces of text joined and written at once while drafting.
_BLOCK = 24_576


def _draft(rows: list[DumpRow], scalar_rows: Sequence[Any], dumps: Mapping[str, tuple[Any, Any]], path: Path
           ) -> tuple[BinaryIO, list[int], list[int], dict[int, tuple[str, str]]]:
    """The CSV with the statuses as they are now, in an unnamed temporary file, where each row's
    Result and Err_message cells lie in it (byte offset and length), and the rows drafted with a
    status other than a plain pass. The text is written as it is made: the child never holds the
    whole table."""
    from acc_agent.tools._compare_csv import statistics_lines, status_cells

    try:
        draft = tempfile.TemporaryFile(dir=path.parent)  # noqa: SIM115 - beside the CSV: the disk it will fill
    except OSError:
        draft = tempfile.TemporaryFile()  # noqa: SIM115 - returned to the caller, who closes it
    starts = [0] * len(rows)
    widths = [0] * len(rows)
    pieces: list[str] = []
    cells_at: list[tuple[int, int]] = []  # (row index, position of its status piece in ``pieces``)
    written = 0
    for before, i, after in statistics_lines(rows, scalar_rows, dumps):
        if i < 0:
            pieces.append(before)
            continue
        cells_at.append((i, len(pieces) + 1))
        pieces += (before, status_cells(rows[i]), after)
        if len(pieces) >= _BLOCK:
            written += _write_block(draft, pieces, cells_at, written, starts, widths)
            pieces, cells_at = [], []
    written += _write_block(draft, pieces, cells_at, written, starts, widths)
    return draft, starts, widths, marked_rows(rows)


def _write_block(draft: BinaryIO, pieces: list[str], cells_at: list[tuple[int, int]], base: int,
                 starts: list[int], widths: list[int]) -> int:
    """Write ``pieces``, noting each status piece's byte offset and length; returns the bytes written."""
    text = "".join(pieces)
    data = text.encode("utf-8")
    ascii_only = len(data) == len(text)  # else offsets count the bytes of each piece
    sizes = [len(p) for p in pieces] if ascii_only else [len(p.encode("utf-8")) for p in pieces]
    ends = list(accumulate(sizes))
    for i, k in cells_at:
        starts[i] = base + ends[k] - sizes[k]
        widths[i] = sizes[k]
    draft.write(data)
    return len(data)


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


def _report(fd: int, err: dict[str, Any]) -> None:
    with contextlib.suppress(OSError):  # the parent is gone: nobody to tell
        os.write(fd, json.dumps(err).encode("utf-8"))
