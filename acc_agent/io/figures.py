"""Writing a matplotlib figure the way every acc-agent file is written: whole or not at all.

Why here: the loss-curve plot of a tool and the per-layer plots of the deliverables both write
PNGs that a reader may open while a run is still going; a half-written image must never be seen.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from pathlib import Path
from typing import IO, Protocol


class Figure(Protocol):
    """What is needed of a matplotlib figure: it can save itself into an open binary file."""

    def savefig(self, fname: IO[bytes], *, dpi: int, format: str) -> None: ...


def save_figure(fig: Figure, path: Path, dpi: int = 110) -> None:
    """A figure written into a temp file beside ``path``, then renamed over it, so a reader (or an
    interrupted run) never meets half a PNG."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as fh:
            fig.savefig(fh, dpi=dpi, format=path.suffix.lstrip(".") or "png")
        mask = os.umask(0)
        os.umask(mask)
        os.chmod(tmp, 0o666 & ~mask)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
