"""Open a golden and a target dump at the same time: the target is parsed in a forked child.

A default (statistics) msprobe dump.json of a real step is ~90 MB per side and takes seconds to
parse, one side after the other, while the machine's other cores wait. Here a child parses the
target while this process parses the golden, and sends the entries back as plain columns
(names, shapes, statistics dicts: what pickle moves in C), not as objects; this process then
builds the entries again, sharing the golden's strings as ``open_dump_set(..., like=)`` does.
The result is the same DumpSet the sequential path gives; any failure in the child (a bad file
included) falls back to parsing here, so errors read exactly as before.
"""

from __future__ import annotations

import contextlib
import os
import pickle
import signal
from itertools import starmap
from operator import attrgetter
from pathlib import Path
from typing import TypeAlias

from acc_agent.fork_safety import can_fork

try:
    import fcntl
except ImportError:  # not on Windows, where there is no fork either
    fcntl = None  # type: ignore[assignment]
from acc_agent.io.dumps import Dump, DumpEntry, DumpSet, ScalarArg, open_dump_set, rank_sources

#: Below this much dump.json the fork and the transfer cost more than the parse they overlap.
MIN_BYTES = 16 << 20

_FIELDS = ("name", "data_name", "module_key", "role", "dtype", "shape", "stats", "requires_grad", "index",
           "container_key", "md5")
_ROW = attrgetter(*_FIELDS)
#: One DumpEntry as its fields in ``_FIELDS`` order (what ``DumpEntry(*row)`` takes back).
_Row: TypeAlias = tuple[str, str | None, str, str, str | None, list[int] | None, dict[str, float | None], bool | None,
                        int, str | None, str | None]
#: One rank as plain columns: source, kind, rows, data folder, dump.json header, (name, value, type) of its
#: scalar arguments by call.
_Columns: TypeAlias = tuple[str, str, list[_Row], str | None, dict[str, object],
                            dict[str, list[tuple[str, object, str]]]]
#: The dump root and its ranks' columns by rank key.
_Payload: TypeAlias = tuple[str, dict[str, _Columns]]


def open_pair(golden: str | Path, target: str | Path) -> tuple[DumpSet, DumpSet]:
    """(golden, target) as ``open_dump_set(golden)`` and ``open_dump_set(target, like=golden)`` give them."""
    if not _worth_a_child(target):
        golden_set = open_dump_set(golden)
        return golden_set, open_dump_set(target, like=golden_set)
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: never returns
        os.close(read_end)
        _child(target, write_end)
    os.close(write_end)
    try:
        golden_set = open_dump_set(golden)
    except BaseException:
        _stop(pid, read_end)  # the comparison is over: the target's parse is not waited for
        raise
    payload = _reap(pid, read_end)
    if payload is not None:
        return golden_set, _rebuild(payload, golden_set)
    return golden_set, open_dump_set(target, like=golden_set)


def _worth_a_child(target: str | Path) -> bool:
    """Only msprobe dump.json files big enough to pay for it, and only where forking is safe."""
    if not can_fork():
        return False
    try:
        sources = rank_sources(target)
        files = [p if p.is_file() else p / "dump.json" for p in sources.values()]
        return all(f.suffix.lower() == ".json" and f.is_file() for f in files) \
            and sum(f.stat().st_size for f in files) >= MIN_BYTES
    except Exception:  # noqa: BLE001 - any doubt: the sequential path decides and reports
        return False


def _child(target: str | Path, out: int) -> None:
    """Parse the target and write its columns to ``out``; on any failure write nothing (the parent parses)."""
    code = 1
    try:
        dump_set = open_dump_set(target)
        if all(d.kind == "msprobe" for d in dump_set.ranks.values()):
            _widen(out)
            with os.fdopen(out, "wb", buffering=1 << 20) as fh:  # the parent unpickles as this is written
                pickle.dump((str(dump_set.root), {k: _columns(d) for k, d in dump_set.ranks.items()}), fh,
                            protocol=pickle.HIGHEST_PROTOCOL)
            code = 0
    except BaseException:  # noqa: BLE001, S110 - the parent parses the target itself and reports what it finds
        pass
    finally:
        os._exit(code)


def _columns(d: Dump) -> _Columns:
    scalars = {k: [(s.name, s.value, s.type) for s in v] for k, v in d.scalars.items()}
    return (str(d.source), d.kind, list(map(_ROW, d.entries)), str(d.data_dir) if d.data_dir is not None else None,
            d.meta, scalars)


def _reap(pid: int, read_end: int) -> _Payload | None:
    """The child's columns, or None when it failed; the child is waited for either way."""
    payload: _Payload | None = None
    with os.fdopen(read_end, "rb", buffering=1 << 20) as fh:
        try:
            payload = pickle.load(fh)  # our own child's columns, through our own pipe
        except (EOFError, pickle.UnpicklingError, ValueError):
            payload = None  # the child stopped early: it wrote nothing, or not all
    _, status = os.waitpid(pid, 0)
    return payload if os.waitstatus_to_exitcode(status) == 0 else None


def _stop(pid: int, read_end: int) -> None:
    """End the child at once and wait for it (no zombie is left)."""
    with contextlib.suppress(OSError):
        os.close(read_end)
    with contextlib.suppress(OSError, ChildProcessError):
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)


def _widen(fd: int) -> None:
    """A 1 MB pipe buffer where Linux allows it: fewer switches between writer and reader."""
    setpipe = getattr(fcntl, "F_SETPIPE_SZ", None) if fcntl is not None else None
    if setpipe is not None:
        with contextlib.suppress(OSError):
            fcntl.fcntl(fd, setpipe, 1 << 20)


def _rebuild(payload: _Payload, like: DumpSet) -> DumpSet:
    root, ranks = payload
    return DumpSet(Path(root), {k: _dump(cols, _like(like, k)) for k, cols in ranks.items()})


def _like(like: DumpSet, key: str) -> Dump | None:
    """The golden rank whose strings a target rank shares (as open_dump_set's ``like`` picks it)."""
    if key in like.ranks:
        return like.ranks[key]
    return next(iter(like.ranks.values())) if len(like.ranks) == 1 else None


def _dump(cols: _Columns, twin_dump: Dump | None) -> Dump:
    source, kind, rows, data_dir, meta, scalars = cols
    entries = list(starmap(DumpEntry, rows))
    if twin_dump is not None:
        twins = twin_dump.by_name
        for e in entries:
            twin = twins.get(e.name)
            if twin is not None:
                e.name = twin.name  # one string for both runs' rows (memory only)
                if twin.module_key == e.module_key:
                    e.module_key = twin.module_key
    return Dump(Path(source), kind, entries, Path(data_dir) if data_dir is not None else None, meta,
                {k: [ScalarArg(*s) for s in v] for k, v in scalars.items()})
