"""When this process may fork a child to share work (a dump parsed, a CSV drafted beside it).

A forked child inherits the parent's memory for free, which is what makes it worth it for
millions of parsed objects; but a child of a multi-threaded process inherits locks other threads
may hold (an MCP server answers in threads), so forking is done only from a single thread.
"""

from __future__ import annotations

import os
import sys
import threading


def can_fork() -> bool:
    """The platform has fork and this process runs one thread."""
    return hasattr(os, "fork") and sys.platform != "win32" and threading.active_count() == 1
