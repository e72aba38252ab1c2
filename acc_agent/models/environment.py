"""Models of the environment skill: ``check_environment`` and ``diff_environments``.

The check answers one question for the rest of the pack — can migration tests run here directly?
— with ``verdict`` ``auto`` / ``manual_stop`` / ``unknown`` and one row per thing it looked at, each
with the value found, why it matters and the command that fixes it. Its JSON is also the
environment snapshot the reports quote (Mig_report §3, Compare §2.1/2.2).
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, ClassVar, Literal

from pydantic import BeforeValidator, Field

from acc_agent.models.common import Model, ToolInput, ToolOutput

CheckStatus = Literal["ok", "warn", "fail", "unknown", "skipped"]


class NpuChip(Model):
    """One chip row pair of ``npu-smi info``; None where the output has no value (``NA``, ``-``)."""

    npu_id: int
    chip_id: int
    phy_id: int | None = Field(default=None, description="Physical id (A3 'Chip Phy-ID' column).")
    device_id: int | None = Field(default=None, description="Logical device id (310P 'Chip Device' column).")
    name: str
    health: str
    bus_id: str | None = None
    power_w: float | None = None
    temp_c: float | None = None
    aicore_pct: float | None = None
    memory_used_mb: int | None = None
    memory_total_mb: int | None = None
    hbm_used_mb: int | None = None
    hbm_total_mb: int | None = None


class NpuProcess(Model):
    npu_id: int
    chip_id: int
    pid: int
    name: str = ""
    memory_mb: int | None = None


class NpuSmiInfo(Model):
    """Parsed ``npu-smi info``; ``problems`` lists what could not be read (never silently skipped)."""

    source: str = Field(description="File the output was read from, or the command that produced it.")
    tool_version: str | None = None
    driver_version: str | None = Field(default=None, description="The 'Version:' field of the banner.")
    chips: list[NpuChip] = Field(default_factory=list)
    processes: list[NpuProcess] = Field(default_factory=list)
    process_table_seen: bool = False
    problems: list[str] = Field(default_factory=list)


class GpuDevice(Model):
    index: int
    name: str
    bus_id: str | None = None
    memory_used_mib: int | None = None
    memory_total_mib: int | None = None
    utilization_pct: float | None = None
    power_w: float | None = None
    power_cap_w: float | None = None
    temp_c: float | None = None


class GpuProcess(Model):
    gpu: int
    pid: int
    type: str = ""
    name: str = ""
    memory_mib: int | None = None


class NvidiaSmiInfo(Model):
    source: str
    smi_version: str | None = None
    driver_version: str | None = None
    cuda_version: str | None = None
    gpus: list[GpuDevice] = Field(default_factory=list)
    processes: list[GpuProcess] = Field(default_factory=list)
    problems: list[str] = Field(default_factory=list)


class Check(Model):
    """One thing the environment check looked at."""

    name: str = Field(description="Stable identifier, e.g. 'torch_npu_matches_torch'.")
    status: CheckStatus
    value: str | None = Field(default=None, description="What was found (a version, a count), or None.")
    reason: str = Field(description="Why this status, in one sentence a migration engineer can act on.")
    fix: str | None = Field(default=None, description="Command or action that fixes the problem, when there is one.")
    critical: bool = Field(default=True, description="Whether this check decides if tests can run directly.")
    source: str | None = Field(default=None, description="File, command or variable the value came from.")


class CheckEnvironmentInput(ToolInput):
    root: Path = Field(
        default=Path("/"),
        description="Folder standing for '/' when reading version files. Use it to check a copied or recorded "
        "tree (e.g. ROOT/usr/local/Ascend/driver/version.info).",
    )
    target: Literal["npu", "gpu"] = Field(
        default="npu", description="This machine: the Ascend target or the GPU baseline."
    )
    npu_smi_output: Path | None = Field(
        default=None, description="Saved `npu-smi info` output. Parsed instead of running npu-smi."
    )
    nvidia_smi_output: Path | None = Field(
        default=None, description="Saved `nvidia-smi` output. Parsed instead of running nvidia-smi."
    )
    env_file: Path | None = Field(
        default=None,
        description="Saved `env` output (KEY=VALUE lines). Judged instead of this process's environment variables.",
    )
    pip_list_output: Path | None = Field(
        default=None,
        description="Saved `pip list` / `pip freeze` output. Read for the torch / torch_npu / MindSpore versions "
        "instead of this interpreter's packages.",
    )
    probe: Literal["auto", "on", "off"] = Field(
        default="auto",
        description="Tiny matmul on the device in a child process. It imports torch_npu (or uses CUDA); auto runs "
        "it only when checking this live machine without recorded inputs or --root.",
    )
    probe_timeout_s: float = Field(default=120.0, gt=0, description="Seconds before the device probe is killed.")
    snapshot_out: Path | None = Field(
        default=None, description="Write the environment snapshot JSON here. The reports and diff_environments read it."
    )


class CheckEnvironmentOutput(ToolOutput):
    """Verdict: ``auto`` (tests can run directly), ``manual_stop`` (a blocking problem, see the failing
    checks and their fixes) or ``unknown`` (a deciding fact could not be established)."""

    failing_verdicts: ClassVar[frozenset[str]] = frozenset({"manual_stop"})
    inconclusive_verdicts: ClassVar[frozenset[str]] = frozenset({"unknown"})

    verdict: Literal["auto", "manual_stop", "unknown"]
    target: Literal["npu", "gpu"]
    checks: list[Check] = Field(default_factory=list)
    system: dict[str, str | None] = Field(default_factory=dict, description="OS, kernel, Python, CPU, memory.")
    versions: dict[str, str | None] = Field(
        default_factory=dict, description="torch, torch_npu, mindspore, cann, driver, firmware, cuda (None = not found)."
    )
    env_vars: dict[str, str] = Field(default_factory=dict, description="ASCEND_*, HCCL_*, library paths, device lists.")
    npu_smi: NpuSmiInfo | None = None
    nvidia_smi: NvidiaSmiInfo | None = None
    probe: dict[str, str | float | bool | None] | None = Field(
        default=None, description="Result of the subprocess device probe, when it ran."
    )
    snapshot_path: str | None = None


class EnvDifference(Model):
    key: str
    baseline: str | None
    target: str | None
    impact: Literal["expected", "review"] = Field(
        description="expected (baseline GPU vs target NPU stacks naturally differ) or review (may change the numbers)"
    )
    note: str = ""


def _text(value: object) -> str | None:
    return None if value is None else str(value)


def _section(value: object) -> dict[str, str | None]:
    """A section as the diff compares it: each value as its text; anything but an object reads as empty."""
    if not isinstance(value, dict):
        return {}
    return {str(key): _text(item) for key, item in value.items()}


def _device_names(value: object) -> list[str | None]:
    """A device list as names: anything but a list reads as no devices, an entry without a name as None."""
    if not isinstance(value, list):
        return []
    return [_text(entry.get("name")) if isinstance(entry, dict) else None for entry in value]


def _object(value: object) -> dict[str, object]:
    """A section holding further sections: anything but an object reads as an empty one."""
    return {str(key): item for key, item in value.items()} if isinstance(value, dict) else {}


class SnapshotNpuSmi(Model):
    """The npu-smi section of a snapshot, as far as the diff reads it: the chips' names."""

    chips: Annotated[list[str | None], BeforeValidator(_device_names)] = Field(default_factory=list)


class SnapshotNvidiaSmi(Model):
    """The nvidia-smi section of a snapshot, as far as the diff reads it: the GPUs' names."""

    gpus: Annotated[list[str | None], BeforeValidator(_device_names)] = Field(default_factory=list)


class EnvironmentSnapshot(Model):
    """What ``diff_environments`` compares in a snapshot ``check_environment`` wrote.

    A snapshot is a file a user may have edited by hand or written with an older version, so its
    sections are read, never asserted: a section that is not an object reads as empty, a value as its
    text (a number, a list), and a device entry of any shape counts as a device, named when it has one.
    """

    versions: Annotated[dict[str, str | None], BeforeValidator(_section)] = Field(default_factory=dict)
    system: Annotated[dict[str, str | None], BeforeValidator(_section)] = Field(default_factory=dict)
    npu_smi: Annotated[SnapshotNpuSmi, BeforeValidator(_object)] = Field(default_factory=SnapshotNpuSmi)
    nvidia_smi: Annotated[SnapshotNvidiaSmi, BeforeValidator(_object)] = Field(default_factory=SnapshotNvidiaSmi)


class DiffEnvironmentsInput(ToolInput):
    baseline: Path = Field(description="Snapshot JSON of the baseline machine (check_environment snapshot_out).")
    target: Path = Field(description="Snapshot JSON of the target machine.")


class DiffEnvironmentsOutput(ToolOutput):
    """Verdict: ``same`` or ``differs``; each difference says whether it is expected or needs review."""

    failing_verdicts: ClassVar[frozenset[str]] = frozenset()

    verdict: Literal["same", "differs"]
    differences: list[EnvDifference] = Field(default_factory=list)
    same: list[str] = Field(default_factory=list, description="Keys whose values are equal on both sides.")
