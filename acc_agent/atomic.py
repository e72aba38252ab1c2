"""Atomic file writes: a reader (or the next run) sees the old file or the new one, never half of one.

Why: results are written where agents and scripts read them back (the CSV next to a dump
comparison, ``--out`` of measure-performance, an environment snapshot, the complete result of an
MCP answer). A process killed mid-write (Ctrl-C, an OOM kill, a CI timeout) with a plain
``open(path, "w")`` leaves a truncated file that parses as a shorter table or as invalid JSON.
Writing to a temporary file in the same folder and ``os.replace``-ing it over the target makes the
switch one rename, which POSIX and Windows both perform atomically within one file system; the
temporary file is removed when the write fails, and a kill leaves only a hidden ``.NAME.*.tmp``.
"""

from __future__ import annotations

import contextlib
import functools
import os
import tempfile
from collections.abc import Iterator
from contextlib import AbstractContextManager
from pathlib import Path
from typing import BinaryIO, Literal, TextIO, overload

__all__ = ["atomic_write", "atomic_write_text"]


@overload
def atomic_write(path: str | Path, mode: Literal["w"] = "w", *, encoding: str | None = "utf-8",
                 newline: str | None = None, durable: bool = False) -> AbstractContextManager[TextIO]: ...


@overload
def atomic_write(path: str | Path, mode: Literal["wb"], *, encoding: str | None = "utf-8",
                 newline: str | None = None, durable: bool = False) -> AbstractContextManager[BinaryIO]: ...


def atomic_write(path: str | Path, mode: str = "w", *, encoding: str | None = "utf-8",
                 newline: str | None = None, durable: bool = False) -> AbstractContextManager[TextIO | BinaryIO]:
    """Open a temporary file next to ``path`` for writing; on success it replaces ``path`` at once.

    ``mode`` is ``"w"`` (text, with ``encoding``/``newline``) or ``"wb"``. When the block raises,
    the temporary file is deleted and ``path`` is left as it was. A symbolic link is followed (the
    file it names is replaced); a path that is not a regular file (``/dev/stdout``, a FIFO) is
    written in place, since there is no file to swap. ``durable`` also flushes the
    data to disk before the rename (worth it for files kept for long, not for per-call results).
    The new file gets the permissions a plain ``open`` would give (mkstemp's are owner-only).
    """
    return _atomic_write(path, mode, encoding=encoding, newline=newline, durable=durable)


@contextlib.contextmanager
def _atomic_write(path: str | Path, mode: str, *, encoding: str | None, newline: str | None,
                  durable: bool) -> Iterator[TextIO | BinaryIO]:
    if mode not in ("w", "wb"):
        raise ValueError(f"atomic_write mode must be 'w' or 'wb', not {mode!r}")
    target = Path(os.path.realpath(path))  # through links: the file they point at is replaced, the link kept
    try:
        special = target.exists() and not target.is_file()
    except OSError:
        special = False
    if special:
        # /dev/stdout, a FIFO, a device: a stream, not a file that can be half-written. Renaming a
        # temporary file over it would replace the device node itself, so it is written in place.
        stream: TextIO | BinaryIO = open(target, "wb") if mode == "wb" else open(target, "w", encoding=encoding, newline=newline)  # noqa: SIM115
        with stream:
            yield stream
        return
    fd, tmp_name = tempfile.mkstemp(prefix=f".{target.name[:100]}.", suffix=".tmp", dir=target.parent)
    tmp = Path(tmp_name)
    try:
        fh: TextIO | BinaryIO = os.fdopen(fd, "wb") if mode == "wb" else os.fdopen(fd, "w", encoding=encoding, newline=newline)
        with fh:
            yield fh
            fh.flush()
            if durable:
                os.fsync(fh.fileno())
        _match_umask(tmp)
        os.replace(tmp, target)
    except BaseException:
        with contextlib.suppress(OSError):
            tmp.unlink()
        raise


def atomic_write_text(path: str | Path, text: str, *, encoding: str = "utf-8", newline: str | None = None) -> Path:
    """Write ``text`` to ``path`` atomically (see :func:`atomic_write`); returns the path."""
    with atomic_write(path, "w", encoding=encoding, newline=newline) as fh:
        fh.write(text)
    return Path(path)


def _match_umask(path: Path) -> None:
    """Give ``path`` the mode ``open()`` would have (0o666 less the umask), not mkstemp's 0o600."""
    if os.name != "posix":
        return
    with contextlib.suppress(OSError):
        os.chmod(path, 0o666 & ~_umask())


@functools.lru_cache(maxsize=1)
def _umask() -> int:
    """The process umask, read once.

    Why not ``os.umask`` each time: reading it means setting it, and for that instant another
    thread creating a file would get the wrong permissions; Linux shows it in /proc instead.
    """
    with contextlib.suppress(OSError, ValueError):
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("Umask:"):
                return int(line.split()[1], 8)
    mask = os.umask(0o022)
    os.umask(mask)
    return mask
