"""Safe, streaming access to a log file.

Why a class of its own: every parser needs the same guards — refuse binary files and empty
files with a clear error, survive invalid UTF-8, never build one giant string from a file with
no newline (a 100 MB single line is read in bounded pieces and skipped), and cap JSON size.
"""

from __future__ import annotations

import codecs
import json
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from acc_agent.errors import AccAgentError

MAX_LINE_CHARS = 1 << 20
CHUNK_BYTES = 1 << 20  # a longer "line" is not a log line: skipped, counted, reported
MAX_JSON_BYTES = 256 << 20
SAMPLE_LINES = 400
SAMPLE_BYTES = 256 << 10
MAX_JOINED_LINES = 64
# a line that begins a new log record: a date or time stamp, or an epoch/iteration header
_NEW_RECORD = re.compile(r"\s*(?:\[?\d{2,4}[-/]\d\d[-/]\d\d|\[?\d\d/\d\d \d\d:|\d\d:\d\d:\d\d|Epoch|Iter|Train|Test|\{|```|#)")


@dataclass
class Sample:
    """The head of a file, for format detection."""

    path: Path
    lines: list[str]
    first_char: str

    @property
    def text(self) -> str:
        return "\n".join(self.lines)


@dataclass
class LogSource:
    """A validated log file that parsers read line by line (or as one JSON document)."""

    path: Path
    size: int
    long_lines_skipped: int = 0
    invalid_utf8_lines: int = 0
    lines_read: int = 0
    warnings: list[str] = field(default_factory=list)

    @classmethod
    def open(cls, path: str | Path) -> LogSource:
        p = Path(path)
        if not p.exists():
            raise AccAgentError("file_not_found", f"log file {p} does not exist", hint="Check the path.", path=str(p))
        if p.is_dir():
            raise AccAgentError(
                "not_a_file", f"{p} is a directory, not a log file", hint="Pass one log file; use select-baseline to scan a directory.", path=str(p)
            )
        size = p.stat().st_size
        if size == 0:
            raise AccAgentError("empty_log", f"log file {p} is empty", hint="Point at the log the training run wrote (is the run still starting?).", path=str(p))
        with p.open("rb") as fh:
            head = fh.read(8192)
        if head[:2] == b"\x1f\x8b":
            raise AccAgentError("compressed_log", f"{p} is gzip-compressed", hint="Decompress it first (gunzip).", path=str(p))
        if b"\x00" in head:
            raise AccAgentError(
                "binary_file",
                f"{p} is a binary file, not a text or JSON training log",
                hint="Pass the text log (stdout of the training run), a JSON/CSV metrics file or trainer_state.json.",
                path=str(p),
            )
        return cls(path=p, size=size)

    @classmethod
    def open_binary(cls, path: str | Path) -> LogSource:
        """A binary log (a TensorBoard event file, or a run directory holding them): existence only.

        The text guards of :meth:`open` would refuse it; its own reader frames and checks records.
        """
        p = Path(path)
        if not p.exists():
            raise AccAgentError("file_not_found", f"log file {p} does not exist", hint="Check the path.", path=str(p))
        size = sum(f.stat().st_size for f in p.iterdir() if f.is_file()) if p.is_dir() else p.stat().st_size
        if size == 0:
            raise AccAgentError("empty_log", f"log file {p} is empty", hint="Point at the event file the run wrote (is it still starting?).", path=str(p))
        return cls(path=p, size=size)

    def chunks(self) -> Iterator[tuple[int, list[str]]]:
        """Yield ``(first_line_number, lines)`` blocks with bounded memory; see :meth:`blocks`."""
        for start, lines, _ in self.blocks():
            yield start, lines

    def blocks(self) -> Iterator[tuple[int, list[str], str]]:
        """Yield ``(first_line_number, lines, text)`` blocks with bounded memory; \r also ends a line.

        ``text`` is the decoded text the lines were split from (it may hold the start of the next
        block's first line too): a parser can ask it once whether a marker occurs anywhere in the
        block instead of asking every line.

        The file is decoded in 1 MiB chunks (an incremental decoder keeps characters split across
        chunks intact) and split in C. A "line" that grows past 1 MiB without a newline is dropped
        and counted instead of being assembled, so memory stays under about two chunks. Hot
        parsers loop over these blocks directly; others use :meth:`lines`.
        """
        self.lines_read = 0
        self.long_lines_skipped = 0
        self.invalid_utf8_lines = 0
        decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        carry = ""
        held_cr = ""
        skipping = False
        lineno = 0
        with self.path.open("rb") as fh:
            while True:
                raw = fh.read(CHUNK_BYTES)
                final = not raw
                text = held_cr + decoder.decode(raw, final=final)
                held_cr = ""
                if not final and text.endswith("\r"):
                    text, held_cr = text[:-1], "\r"  # may be the first half of \r\n
                if "\r" in text:
                    text = text.replace("\r\n", "\n").replace("\r", "\n")
                if skipping:
                    cut = text.find("\n")
                    if cut < 0:
                        if final:
                            lineno += 1
                            break
                        continue  # still inside the oversized line
                    text = text[cut + 1 :]
                    skipping = False
                    lineno += 1
                whole = carry + text
                pieces = whole.split("\n")
                carry = pieces.pop()
                if final and carry:
                    pieces.append(carry)
                    carry = ""
                if pieces:
                    if "\ufffd" in text:
                        self.invalid_utf8_lines += sum(1 for p in pieces if "\ufffd" in p)
                    yield lineno + 1, pieces, whole
                    lineno += len(pieces)
                if final:
                    break
                if len(carry) >= MAX_LINE_CHARS:
                    carry = ""
                    skipping = True
                    self.long_lines_skipped += 1
        self.lines_read = lineno

    def lines(self) -> Iterator[tuple[int, str]]:
        """Yield ``(line_number, text)``; see :meth:`chunks` for the memory guarantees."""
        for start, block in self.chunks():
            yield from enumerate(block, start)

    def logical_lines(self) -> Iterator[tuple[int, str]]:
        """Like :meth:`lines`, with trailing-backslash continuations joined into one line.

        Log lines wrapped for display end in ``\\`` and go on below; read one physical line at a
        time, the value before the backslash (``loss: 1.1283\\``) fails to parse and the fields on
        the next line are orphaned. The joined line keeps the first line's number. A following line
        that starts a new record (a timestamp, an ``Epoch``/``Iter`` header) is not swallowed: the
        backslash is only dropped.
        """
        held: tuple[int, str] | None = None
        joined = 0
        for lineno, line in self.lines():
            if held is not None:
                start, text = held
                if _NEW_RECORD.match(line) is None and joined < MAX_JOINED_LINES:
                    text = text + " " + line.strip()
                    joined += 1
                else:
                    yield start, text
                    start, text, joined = lineno, line, 0
            else:
                start, text, joined = lineno, line, 0
            stripped = text.rstrip()
            if stripped.endswith("\\") and len(stripped) < MAX_LINE_CHARS:
                held = (start, stripped[:-1].rstrip())
                continue
            held = None
            yield start, text
        if held is not None:
            yield held

    def sample(self) -> Sample:
        lines: list[str] = []
        total = 0
        for _, line in self.lines():
            lines.append(line)
            total += len(line)
            if len(lines) >= SAMPLE_LINES or total >= SAMPLE_BYTES:
                break
        first = ""
        for line in lines:
            stripped = line.strip()
            if stripped:
                first = stripped[0]
                break
        return Sample(path=self.path, lines=lines, first_char=first)

    def load_json(self) -> object:
        """The whole file as JSON; a truncated or invalid document is a structured error."""
        if self.size > MAX_JSON_BYTES:
            raise AccAgentError(
                "log_too_large", f"{self.path} is {self.size >> 20} MiB, above the {MAX_JSON_BYTES >> 20} MiB limit for a JSON log",
                hint="Split it or convert it to JSON lines.", path=str(self.path),
            )
        try:
            with self.path.open("r", encoding="utf-8") as fh:
                return json.load(fh)
        except RecursionError:  # json recurses per nesting level; no training log nests a thousand deep
            raise AccAgentError("invalid_json", f"{self.path} nests lists/objects too deeply to be a training log",
                                hint="Pass the log the run wrote (trainer_state.json, JSON lines, text); this file is damaged or not a log.",
                                path=str(self.path)) from None
        except UnicodeDecodeError as exc:
            raise AccAgentError("invalid_utf8", f"{self.path} is not valid UTF-8 at byte {exc.start}", hint="Re-save the file as UTF-8.", path=str(self.path)) from None
        except json.JSONDecodeError as exc:
            raise AccAgentError(
                "invalid_json",
                f"{self.path} is not valid JSON: {exc.msg} at line {exc.lineno}, column {exc.colno}"
                + (" (the file looks truncated)" if exc.pos >= self.size - 2 else ""),
                hint="The file may be truncated (run still writing, copy cut short); take a complete copy.",
                path=str(self.path),
            ) from None
