"""Writing the deliverables without losing what the engineer wrote, and proving what we wrote.

Why: the documents are half generated, half human. Text inside ``<!-- acc-agent:keep ID -->`` …
``<!-- acc-agent:end ID -->`` belongs to the engineer and is carried over byte for byte. Anything
else is ours, and a footer records the hash of what we wrote — of the whole document and of each
section — so a hand edit outside the kept blocks is detected, named by its section and line, and
the old file is backed up before it is replaced. Files are replaced atomically (temp file + fsync
+ rename), so an interrupted write leaves the previous file intact.

Two more markers: a kept block whose body is still its default text after the
``<!-- acc-agent:placeholder sha=… -->`` line has not been written by anyone yet (a document with one
is never "complete"), and a
``<!-- acc-agent:live ID -->`` … ``<!-- acc-agent:end-live ID -->`` block holds facts probed on the
machine that ran the report, which a later re-computation on another machine may legitimately see
differently (its text is still covered by the footer hash).
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
LIVE_RE = re.compile(r"(<!-- acc-agent:live (?P<id>[A-Za-z0-9_.-]+) -->\r?\n)(?P<body>.*?)"
                     r"(\r?\n<!-- acc-agent:end-live (?P=id) -->)", re.DOTALL)
FOOTER_RE = re.compile(r"\n?<!-- acc-agent:generated sha256=(?P<sha>[0-9a-f]{64})(?: sections=(?P<sections>[0-9a-f,]*))? -->\n?\Z")
PLACEHOLDER_RE = re.compile(r"<!-- acc-agent:placeholder(?: sha=(?P<sha>[0-9a-f]{8}))? -->\r?\n?")
_SECTION_RE = re.compile(r"^#{1,6} ", re.MULTILINE)


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


def comparable(text: str) -> str:
    """The generated part a re-computation must reproduce: kept and live bodies blanked, footer removed."""
    return LIVE_RE.sub(lambda m: m.group(1) + m.group(4), _skeleton(text))


def digest(text: str) -> str:
    return hashlib.sha256(_skeleton(text).encode("utf-8")).hexdigest()


def _sections(skeleton: str) -> list[tuple[int, str]]:
    """(first line number, text) of each section of a skeleton: the lines before the first heading, then
    each heading with what follows it."""
    starts = [0] + [m.start() for m in _SECTION_RE.finditer(skeleton) if m.start() > 0]
    out = []
    for i, start in enumerate(starts):
        end = starts[i + 1] if i + 1 < len(starts) else len(skeleton)
        out.append((skeleton.count("\n", 0, start) + 1, skeleton[start:end]))
    return out


def section_digests(text: str) -> list[str]:
    """A short hash per section of the generated part, so a hand edit can be named by its section."""
    return [hashlib.sha256(body.encode("utf-8")).hexdigest()[:8] for _, body in _sections(_skeleton(text))]


def with_footer(text: str) -> str:
    body = FOOTER_RE.sub("", text).rstrip("\n") + "\n"
    return f"{body}\n<!-- acc-agent:generated sha256={digest(body)} sections={','.join(section_digests(body))} -->\n"


def hand_edited(text: str) -> bool:
    """True when the generated part differs from what the footer says we wrote (or no footer)."""
    m = FOOTER_RE.search(text)
    return m is None or m.group("sha") != digest(text)


def edited_sections(text: str) -> list[tuple[int, str]] | None:
    """Where a hand edit is: (line, heading) of each section whose hash differs from the footer's.

    None when the document has no footer at all; an empty list when nothing was edited. With an older
    footer that has no section hashes, the whole document is named (line 1).
    """
    m = FOOTER_RE.search(text)
    if m is None:
        return None
    if m.group("sha") == digest(text):
        return []
    stored = (m.group("sections") or "").split(",") if m.group("sections") else []
    now = _sections(_skeleton(text))
    current = section_digests(text)
    if len(stored) != len(current):
        differing = [i for i, h in enumerate(current) if i >= len(stored) or stored[i] != h] or [0]
    else:
        differing = [i for i, (a, b) in enumerate(zip(stored, current, strict=True)) if a != b]
    # blanked kept bodies shift the skeleton's line numbers: name each section by its heading's line
    # in the document itself
    out = []
    lines = text.splitlines()
    for i in differing:
        heading = now[i][1].splitlines()[0] if now[i][1] else ""
        line = next((n for n, ln in enumerate(lines, 1) if ln == heading), now[i][0]) if i else 1
        out.append((line, heading))
    return out


def _short_hash(text: str) -> str:
    return hashlib.sha256(text.strip().encode("utf-8")).hexdigest()[:8]


def placeholder(default: str) -> str:
    """The marker a kept block's default text starts with; it records the default's hash, so an edited
    block that still has the marker line is not taken for an unwritten one."""
    return f"<!-- acc-agent:placeholder sha={_short_hash(default)} -->"


def placeholders(text: str) -> list[tuple[int, str]]:
    """(line, block id) of every kept block still holding its placeholder: text nobody has written yet."""
    out = []
    for m in KEEP_RE.finditer(text):
        body = m.group("body")
        marker = PLACEHOLDER_RE.match(body)
        if marker is None:
            continue
        rest = body[marker.end():]
        if marker.group("sha") is None or marker.group("sha") == _short_hash(rest):
            out.append((text.count("\n", 0, m.start("body")) + 1, m.group("id")))
    return out


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


@dataclass
class Prepared:
    """A document merged with the kept blocks of the file it replaces, not yet written."""

    path: Path
    text: str
    old: str | None
    kept_blocks: list[str] = field(default_factory=list)


def prepare(path: Path, rendered: str) -> Prepared:
    """Read the current file (if any) and carry its kept blocks into ``rendered``."""
    if not path.exists():
        return Prepared(path, rendered, None)
    with open(path, encoding="utf-8", newline="") as fh:
        old = fh.read()
    text, kept = merge_kept(rendered, old)
    return Prepared(path, text, old, kept)


def commit(prep: Prepared) -> WriteReport:
    """Back up a hand-edited file, then write ``prep.text`` with its footer, atomically."""
    report = WriteReport(prep.path, kept_blocks=prep.kept_blocks)
    new_text = with_footer(prep.text)
    if prep.old is not None:
        if hand_edited(prep.old):
            stamp = datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%S%fZ")
            backup = prep.path.with_name(f"{prep.path.name}.{stamp}.bak")
            atomic_write(backup, prep.old)
            report.backup = backup
            report.reason = "edited by hand outside the kept blocks"
        if new_text == prep.old:
            report.written = False
            return report
    atomic_write(prep.path, new_text)
    return report


def write_document(path: Path, rendered: str) -> WriteReport:
    """Merge kept blocks, back up a hand-edited file, write atomically; say what happened."""
    return commit(prepare(path, rendered))
