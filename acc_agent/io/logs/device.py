"""Which hardware a run was on, from what the log itself prints.

Only specific markers count (``torch_npu``, ``NPUCachingAllocator``, ``AiCore``, ``CUDA_VISIBLE_DEVICES``,
``NVIDIA``, ``GPU BENCHMARK``...): Megatron prints "throughput per GPU" on Ascend too, so a bare
"GPU" proves nothing. Markers inside a run's lines win; otherwise the nearest marker above it
(a README heading such as "Running on Ascend"). The answer always names the line it came from.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

_PATTERNS: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("NPU", re.compile(r"torch_npu|NPUCachingAllocator|AiC(?:ore|pu)\b|\bAscend|ASCEND_|\bnpu:\d|\bnpu id: ?\d|\bNPU\b|昇腾|device_target\W+Ascend")),
    ("GPU", re.compile(r"\bcuda:\d|\bUse GPU:? \d|set cuda device|CUDA available: True|CUDA_VISIBLE_DEVICES|NVIDIA|GeForce|Tesla|\b[AHV]100\b|\bRTX\b|GPU [Bb]enchmark|GPU BENCHMARK|[Oo]n GPU\b|竞品|device_target\W+GPU")),
    ("CPU", re.compile(r"device_target\W+CPU|[Oo]n CPU\b|--device[ =]cpu\b")),
)
_TOKENS = ("npu", "NPU", "Ascend", "ASCEND", "AiC", "昇腾", "cuda", "CUDA", "NVIDIA", "GeForce", "Tesla", "100", "RTX", "GPU", "竞品", "device_target", "CPU", "cpu")
_ANY_TOKEN = re.compile("|".join(map(re.escape, _TOKENS)))  # one C search a line for the filter
# Only hardware tokens count in a file name: a repository name such as "Ascend-ModelZoo" is not.
_FILENAME = (
    ("GPU", re.compile(r"(?<![a-z0-9])(?:dgx|a100|h100|h800|v100|gpu|cuda)(?![a-z])", re.I)),
    ("NPU", re.compile(r"(?<![a-z0-9])(?:npu|910b?\d?)(?![a-z0-9])", re.I)),
)


@dataclass(frozen=True)
class Marker:
    line: int
    device: str
    text: str


def scan_line(lineno: int, line: str) -> Marker | None:
    """The device marker on one line, if any (cheap substring filter before the regexes)."""
    if _ANY_TOKEN.search(line) is None:
        return None
    for device, rx in _PATTERNS:
        m = rx.search(line)
        if m is not None:
            return Marker(lineno, device, m.group(0))
    return None


def from_filename(path: Path) -> Marker | None:
    for device, rx in _FILENAME:
        m = rx.search(path.name)
        if m is not None:
            return Marker(0, device, f"file name contains '{m.group(0)}'")
    return None


def device_for_range(markers: list[Marker], start: int, end: int) -> tuple[str | None, str]:
    """Device of the lines ``start..end`` and the evidence; (None, reason) when unknown."""
    inside = [m for m in markers if start <= m.line <= end]
    if inside:
        counts: dict[str, int] = {}
        for m in inside:
            counts[m.device] = counts.get(m.device, 0) + 1
        best = max(counts.values())
        winners = [d for d, c in counts.items() if c == best]
        if len(winners) > 1:
            return None, "conflicting markers inside the run: " + ", ".join(f"line {m.line} '{m.text}'" for m in inside[:4])
        first = next(m for m in inside if m.device == winners[0])
        return winners[0], f"line {first.line}: '{first.text}'"
    before = [m for m in markers if 0 < m.line < start]
    if before:
        m = before[-1]
        return m.device, f"nearest marker above the run, line {m.line}: '{m.text}'"
    named = [m for m in markers if m.line == 0]
    if named:
        return named[0].device, named[0].text
    return None, "the log names no device (no torch_npu/CUDA/Ascend/NVIDIA marker)"
