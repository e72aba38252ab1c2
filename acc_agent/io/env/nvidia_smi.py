"""Parser of the default ``nvidia-smi`` table (the 470-era 79-column and the 525+ 89-column layouts).

Each GPU is two data rows: ``| idx Name Persistence | Bus-Id Disp | ECC |`` then
``| Fan Temp Perf Pwr:Usage/Cap | Used / Total | Util Compute |``; a ``Processes:`` table follows.
"""

from __future__ import annotations

import re

from acc_agent.models.environment import GpuDevice, GpuProcess, NvidiaSmiInfo

_BANNER = re.compile(
    r"NVIDIA-SMI\s+(\S+)\s+Driver Version:\s*(\S+)(?:\s+CUDA Version:\s*(\S+))?"
)
_GPU_HEAD = re.compile(r"^(\d+)\s+(.+?)\s+(On|Off)$")
_BUS = re.compile(r"^([0-9A-Fa-f]{8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.\d)\s+(On|Off)$")
_MEM = re.compile(r"(\d+)MiB\s*/\s*(\d+)MiB")
_POWER = re.compile(r"(\d+(?:\.\d+)?)W\s*/\s*(\d+(?:\.\d+)?)W")
_TEMP = re.compile(r"(\d+)C\b")
_UTIL = re.compile(r"(\d+)%")
_PROC = re.compile(r"^(\d+)\s+(\S+)\s+(\S+)\s+(\d+)\s+(\S+)\s+(.*?)\s+(\d+|N/A)(?:MiB)?$")


def _cells(line: str) -> list[str] | None:
    text = line.strip()
    if not (text.startswith("|") and text.endswith("|")):
        return None
    return [c.strip() for c in text[1:-1].split("|")]


def parse_nvidia_smi(text: str, source: str) -> NvidiaSmiInfo:
    """Parse ``nvidia-smi`` text; unreadable rows are reported in ``problems``, never raised."""
    info = NvidiaSmiInfo(source=source)
    m = _BANNER.search(text)
    if m:
        info.smi_version, info.driver_version, info.cuda_version = m.group(1), m.group(2), m.group(3)
    in_proc = False
    pending: GpuDevice | None = None
    for lineno, line in enumerate(text.splitlines(), start=1):
        cells = _cells(line)
        if cells is None:
            continue
        if cells and cells[0].startswith("Processes:"):
            in_proc = True
            continue
        if in_proc:
            row = cells[0]
            if not row or row.startswith(("GPU", "ID", "No running")) or set(row) <= set("=-"):
                continue
            pm = _PROC.match(row)
            if pm:
                info.processes.append(
                    GpuProcess(
                        gpu=int(pm.group(1)),
                        pid=int(pm.group(4)),
                        type=pm.group(5),
                        name=pm.group(6),
                        memory_mib=int(pm.group(7)) if pm.group(7).isdigit() else None,
                    )
                )
            else:
                info.problems.append(f"line {lineno}: unreadable process row: {line.strip()[:80]}")
            continue
        if len(cells) != 3:
            continue
        head = _GPU_HEAD.match(cells[0])
        bus = _BUS.match(cells[1])
        if head and bus:
            pending = GpuDevice(index=int(head.group(1)), name=head.group(2), bus_id=bus.group(1))
            continue
        if pending is not None:
            mem = _MEM.search(cells[1])
            if mem is None:
                continue  # the third, MIG row
            pending.memory_used_mib, pending.memory_total_mib = int(mem.group(1)), int(mem.group(2))
            power = _POWER.search(cells[0])
            if power:
                pending.power_w, pending.power_cap_w = float(power.group(1)), float(power.group(2))
            temp = _TEMP.search(cells[0])
            pending.temp_c = float(temp.group(1)) if temp else None
            util = _UTIL.search(cells[2])
            pending.utilization_pct = float(util.group(1)) if util else None
            info.gpus.append(pending)
            pending = None
    if pending is not None:
        info.problems.append(f"GPU {pending.index}: row without its memory/utilisation row")
    if not info.gpus and not info.problems:
        info.problems.append("no GPU rows found: this does not look like `nvidia-smi` output")
    return info
