"""Writing the deliverables without losing what the engineer wrote.

Why: the documents are half generated, half human. Text inside ``<!-- acc-agent:keep ID -->`` …
``<!-- acc-agent:end ID -->`` belongs to the engineer and is carried over byte for byte. Anything
else is ours, and a footer records the hash of what we wrote, so a hand edit outside the kept
blocks is detected and the old file is backed up before it is replaced. Files are replaced
atomically (temp file + fsync + rename), so an interrupted write leaves the previous file intact.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
import tempfile
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path

KEEP_RE = re.compile(r"(<!-- acc-agent:keep (?P<id>[A-Za-z0-9_.-]+) -->\r?\n)(?P<body>.*?)(\r?\n<!-- acc-agent:end (?P=id) -->)",
                     re.DOTALL)
FOOTER_RE = re.compile(r"\n?<!-- acc-agent:generated sha256=(?P<sha>[0-9a-f]{64}) -->\n?\Z")


@dataclass
class WriteReport:
    path: Path
    written: bool = True
    kept_blocks: list[str] = field(default_factory=list)
    backup: Path | None = None
    reason: str = ""


def keep_blocks(text: str) -> dict[str, str]:
    return {m.group("id"): m.group("body") for m in KEEP_RE.finditer(text)}


def _skeleton(text: str) -> str:
    """The generated part only: kept bodies blanked, footer removed."""
    text = FOOTER_RE.sub("", text)
    return KEEP_RE.sub(lambda m: m.group(1) + m.group(4), text)


def digest(text: str) -> str:
    return hashlib.sha256(_skeleton(text).encode("utf-8")).hexdigest()


def with_footer(text: str) -> str:
    body = FOOTER_RE.sub("", text).rstrip("\n") + "\n"
    return f"{body}\n<!-- acc-agent:generated sha256={digest(body)} -->\n"


def hand_edited(text: str) -> bool:
    """True when the generated part differs from what the footer says we wrote (or no footer)."""
    m = FOOTER_RE.search(text)
    return m is None or m.group("sha") != digest(text)


def merge_kept(new: str, old: str) -> tuple[str, list[str]]:
    """Put the old kept bodies into the new text, byte for byte."""
    bodies = keep_blocks(old)
    kept: list[str] = []

    def repl(m: re.Match[str]) -> str:
        bid = m.group("id")
        if bid in bodies:
            kept.append(bid)
            return m.group(1) + bodies[bid] + m.group(4)
        return m.group(0)

    return KEEP_RE.sub(repl, new), kept


def atomic_write(path: Path, text: str) -> None:
    """Write to a temp file in the same folder, fsync, then rename over ``path``."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        # mkstemp creates 0600; a report is a normal file, so give it what open() would (umask applied).
        mask = os.umask(0)
        os.umask(mask)
        os.chmod(tmp, (path.stat().st_mode & 0o777) if path.exists() else 0o666 & ~mask)
        with os.fdopen(fd, "w", encoding="utf-8", newline="") as fh:
            fh.write(text)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def write_document(path: Path, rendered: str) -> WriteReport:
    """Merge kept blocks, back up a hand-edited file, write atomically; say what happened."""
    report = WriteReport(path)
    text = rendered
    if path.exists():
        with open(path, encoding="utf-8", newline="") as fh:
            old = fh.read()
        text, report.kept_blocks = merge_kept(rendered, old)
        if hand_edited(old):
            stamp = datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%S%fZ")
            backup = path.with_name(f"{path.name}.{stamp}.bak")
            atomic_write(backup, old)
            report.backup = backup
            report.reason = "edited by hand outside the kept blocks"
        new_text = with_footer(text)
        if new_text == old:
            report.written = False
            return report
        atomic_write(path, new_text)
        return report
    atomic_write(path, with_footer(text))
    return report
