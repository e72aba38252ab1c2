"""Leave freeing a command's large intermediate data to the operating system.

A 300k-row statistics comparison builds millions of small objects (two parsed dump.json files,
the rows, the dataflow graph). Freed one by one when the tool returns, they cost more than a
second and a half of a 20-second run, and the command line process exits right after anyway.
So the CLI, and only the CLI's own process (never a server, a test or a library caller, which
live on), keeps them referenced and ends with ``os._exit`` once its output is flushed.
"""

from __future__ import annotations

import os
import sys
from typing import NoReturn

_kept: list[object] = []
_enabled = False


def enable() -> None:
    """Called by the CLI entry point of a real process: data handed to :func:`free_at_exit` is then kept."""
    global _enabled
    _enabled = True


def free_at_exit(*objects: object) -> None:
    """Keep ``objects`` until the process exits (where enabled); elsewhere does nothing."""
    if _enabled:
        _kept.extend(objects)


def exit_process(code: int | str | None) -> NoReturn:
    """End the process with ``code``: at once when large data is kept (after flushing output), else normally."""
    if not _kept:
        raise SystemExit(code)
    if isinstance(code, str):
        sys.stderr.write(code + "\n")
        code = 1
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            code = code or 1  # stdout closed early (e.g. piped into head): as Python itself would
    os._exit(code or 0)
