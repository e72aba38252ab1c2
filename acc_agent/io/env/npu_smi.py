"""Parser of the ``npu-smi info`` overview table, across chip families and driver versions.

Layouts seen in real recorded outputs (tests/fixtures/env/npu_smi, SOURCES.md):
- 910B/910ProB/910A: row 1 ``| NPU Name | Health | Power Temp Hugepages |``, row 2
  ``| Chip | Bus-Id | AICore Memory-Usage HBM-Usage |``;
- A3 (``Ascend910``, two chips per NPU): row 2 starts ``| Chip Phy-ID |``; the second chip's power is ``-``;
- 310P3: row 2 ``| Chip Device | Bus-Id | AICore Memory-Usage |`` (no HBM pair), power ``NA``;
- old npu-smi 1.8: no Hugepages column.
A process table may follow (``NPU Chip | Process id | Process name | Process memory(MB)``) with
``No running processes found in NPU n`` rows. Rows that cannot be read become ``problems``.
"""

from __future__ import annotations

import re

from acc_agent.models.environment import NpuChip, NpuProcess, NpuSmiInfo

_BANNER = re.compile(r"npu-smi\s+(\S+)\s+Version:\s*(\S+)")
_HEAD = re.compile(r"^(\d+)\s+(\S+)$")
_CHIP = re.compile(r"^(\d+)(?:\s+(\d+))?$")
_BUS = re.compile(r"^(?:[0-9A-Fa-f]{4}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.[0-7]|NA|-)$")
_PAIR = re.compile(r"(\d+)\s*/\s*(\d+)")
_NUM = re.compile(r"^-?\d+(?:\.\d+)?$")
_PROC_KEY = re.compile(r"^(\d+)\s+(\d+)$")


def _cells(line: str) -> list[str] | None:
    text = line.strip()
    if not (text.startswith("|") and text.endswith("|")):
        # The 310P3 sample ends its header with "Hugepages-Usage(page|" – still a table row.
        if text.startswith("|") and "|" in text[1:]:
            text = text + "|" if not text.endswith("|") else text
        else:
            return None
    return [c.strip() for c in text[1:-1].split("|")]


def _num(token: str) -> float | None:
    return float(token) if _NUM.match(token) else None


def parse_npu_smi(text: str, source: str) -> NpuSmiInfo:
    """Parse ``npu-smi info`` text; never raises on odd content, reports it in ``problems``."""
    info = NpuSmiInfo(source=source)
    m = _BANNER.search(text)
    if m:
        info.tool_version, info.driver_version = m.group(1), m.group(2)
    in_processes = False
    second_id = "phy_id"
    pending: tuple[int, str, str, list[str]] | None = None
    for lineno, line in enumerate(text.splitlines(), start=1):
        cells = _cells(line)
        if cells is None or all(not c or set(c) <= set("-=+") for c in cells):
            continue
        joined = " ".join(cells)
        if "Process id" in joined:
            in_processes = True
            info.process_table_seen = True
            continue
        if in_processes:
            if joined.startswith("No running processes"):
                continue
            if len(cells) >= 4 and _PROC_KEY.match(cells[0]) and cells[1].isdigit():
                key = _PROC_KEY.match(cells[0])
                assert key is not None
                info.processes.append(
                    NpuProcess(
                        npu_id=int(key.group(1)),
                        chip_id=int(key.group(2)),
                        pid=int(cells[1]),
                        name=cells[2],
                        memory_mb=int(cells[3]) if cells[3].isdigit() else None,
                    )
                )
            else:
                info.problems.append(f"line {lineno}: unreadable process row: {line.strip()[:80]}")
            continue
        if len(cells) < 3:
            continue
        head = _HEAD.match(cells[0])
        chip = _CHIP.match(cells[0])
        if head and not _BUS.match(cells[1]) and not head.group(2).isdigit():
            if pending is not None:
                info.problems.append(f"line {pending[0]}: NPU row without its chip row")
            pending = (lineno, head.group(1), head.group(2), [cells[1], cells[2]])
            continue
        if chip and _BUS.match(cells[1]) and pending is not None:
            _, npu_id, name, (health, first) = pending
            pending = None
            info.chips.append(_chip(int(npu_id), name, health, first, chip, cells[1], cells[2], second_id))
            continue
        if cells[0].startswith(("NPU", "Chip")):
            if cells[0].startswith("Chip") and "Device" in cells[0]:
                second_id = "device_id"  # 310P: "Chip Device" (logical id), not "Chip Phy-ID"
            continue  # column headers
        if chip or head:
            info.problems.append(f"line {lineno}: unreadable device row: {line.strip()[:80]}")
    if pending is not None:
        info.problems.append(f"line {pending[0]}: NPU row without its chip row")
    if not info.chips and not info.problems:
        info.problems.append("no NPU rows found: this does not look like `npu-smi info` output")
    return info


def _chip(
    npu_id: int, name: str, health: str, first: str, chip: re.Match[str], bus: str, second: str, second_id: str
) -> NpuChip:
    tokens = first.split()
    power = _num(tokens[0]) if tokens else None
    temp = _num(tokens[1]) if len(tokens) > 1 else None
    rest = second.split()
    aicore = _num(rest[0]) if rest else None
    pairs = [(int(a), int(b)) for a, b in _PAIR.findall(second)]
    mem = pairs[0] if pairs else (None, None)
    hbm = pairs[1] if len(pairs) > 1 else (None, None)
    extra_id = int(chip.group(2)) if chip.group(2) is not None else None
    return NpuChip(
        npu_id=npu_id,
        chip_id=int(chip.group(1)),
        phy_id=extra_id if second_id == "phy_id" else None,
        device_id=extra_id if second_id == "device_id" else None,
        name=name,
        health=health,
        bus_id=bus if bus not in ("NA", "-") else None,
        power_w=power,
        temp_c=temp,
        aicore_pct=aicore,
        memory_used_mb=mem[0],
        memory_total_mb=mem[1],
        hbm_used_mb=hbm[0],
        hbm_total_mb=hbm[1],
    )


def device_memory(chip: NpuChip) -> tuple[int | None, int | None]:
    """The memory the device computes from: HBM when the chip has it, else the single pair (310P)."""
    if chip.hbm_total_mb:
        return chip.hbm_used_mb, chip.hbm_total_mb
    return chip.memory_used_mb, chip.memory_total_mb


def busy_reasons(info: NpuSmiInfo, busy_memory_fraction: float = 0.5) -> dict[int, str]:
    """Logical device index (listing order) -> why the chip looks busy.

    Busy means: a process is listed on it, or AI Core use > 0 %, or more than
    ``busy_memory_fraction`` of its device memory is in use (an idle 910B holds ~3.3 GB of 64 GB).
    """
    procs = {(p.npu_id, p.chip_id): p for p in info.processes}
    out: dict[int, str] = {}
    for index, chip in enumerate(info.chips):
        proc = procs.get((chip.npu_id, chip.chip_id))
        used, total = device_memory(chip)
        if proc is not None:
            out[index] = f"process {proc.pid} {proc.name or ''} holds {proc.memory_mb} MB".replace("  ", " ")
        elif chip.aicore_pct is not None and chip.aicore_pct > 0:
            out[index] = f"AI Core {chip.aicore_pct:g} % busy"
        elif used is not None and total and used / total > busy_memory_fraction:
            out[index] = f"{used} / {total} MB device memory in use"
    return out
