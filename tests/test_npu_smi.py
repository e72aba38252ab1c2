"""npu-smi / nvidia-smi parsing on real recorded outputs of different chips (see fixtures SOURCES.md)."""

from __future__ import annotations

from pathlib import Path

import pytest

from acc_agent.io.env.npu_smi import busy_reasons, device_memory, parse_npu_smi
from acc_agent.io.env.nvidia_smi import parse_nvidia_smi

FIX = Path(__file__).resolve().parent / "fixtures" / "env"


def _npu(name: str):  # type: ignore[no-untyped-def]
    path = FIX / "npu_smi" / name
    return parse_npu_smi(path.read_text(encoding="utf-8"), str(path))


def test_910b3_eight_idle_chips_with_hbm() -> None:
    info = _npu("910b3_ms_swift_docs.txt")
    assert info.problems == []
    assert info.tool_version == "24.1.rc1.b030"
    assert [c.npu_id for c in info.chips] == list(range(8))
    first, last = info.chips[0], info.chips[7]
    assert (first.name, first.health, first.bus_id) == ("910B3", "OK", "0000:C1:00.0")
    assert (first.power_w, first.temp_c, first.aicore_pct) == (101.8, 43.0, 0.0)
    assert device_memory(first) == (3318, 65536)
    assert (last.bus_id, last.hbm_used_mb) == ("0000:42:00.0", 3315)
    assert busy_reasons(info) == {}


def test_910prob_process_table_without_processes() -> None:
    info = _npu("910prob_vllm_ascend_1047.txt")
    assert info.problems == [] and info.process_table_seen and info.processes == []
    assert {c.name for c in info.chips} == {"910ProB"} and len(info.chips) == 8
    c0 = info.chips[0]
    assert (c0.memory_used_mb, c0.memory_total_mb, c0.hbm_used_mb, c0.hbm_total_mb) == (2387, 13553, 18, 32768)
    assert device_memory(c0) == (18, 32768)


def test_a3_two_chips_per_npu_and_busy_processes() -> None:
    info = _npu("a3_ascend910_busy_vllm_ascend_4266.txt")
    assert info.problems == []
    assert len(info.chips) == 16
    assert [(c.npu_id, c.chip_id, c.phy_id) for c in info.chips[:3]] == [(0, 0, 0), (0, 1, 1), (1, 0, 2)]
    assert info.chips[1].power_w is None  # "-" on the second chip of an NPU
    assert [(p.npu_id, p.chip_id, p.pid, p.memory_mb) for p in info.processes] == [
        (0, 0, 2173027, 43266),
        (0, 1, 2173030, 43266),
        (1, 0, 2173031, 43266),
        (1, 1, 2173032, 43266),
    ]
    busy = busy_reasons(info)
    assert sorted(busy) == [0, 1, 2, 3]
    assert "2173027" in busy[0]


def test_310p3_device_column_no_hbm_power_na() -> None:
    info = _npu("310p3_patrolai_readme.txt")
    assert info.problems == []
    assert [(c.npu_id, c.chip_id, c.device_id, c.phy_id) for c in info.chips] == [(0, 0, 0, None), (64, 0, 1, None)]
    c0 = info.chips[0]
    assert (c0.name, c0.power_w, c0.temp_c, c0.bus_id) == ("310P3", None, 51.0, "0000:01:00.0")
    assert (c0.hbm_total_mb, device_memory(c0)) == (None, (3841, 21527))


def test_910a_old_layout_without_hugepages() -> None:
    info = _npu("910a_npu_smi_1.8.21_slurm_docs.txt")
    assert info.problems == []
    assert (info.tool_version, info.driver_version) == ("1.8.21", "20.2.2.spc001")
    assert len(info.chips) == 8 and {c.name for c in info.chips} == {"910A"}
    assert (info.chips[3].memory_used_mb, info.chips[3].memory_total_mb, info.chips[3].hbm_total_mb) == (3168, 15088, 32768)


@pytest.mark.parametrize(
    "text, fragment",
    [
        ("", "does not look like `npu-smi info`"),
        ("dcmi module initialize failed. ret is -8005\n", "does not look like"),
        ("| 0     910B3               | OK            | 101.8       43                0    / 0             |\n", "without its chip row"),
        (
            "| NPU     Chip              | Process id    | Process name             | Process memory(MB)      |\n"
            "| zero    x                 | abc           | python                   | 1                       |\n",
            "unreadable process row",
        ),
    ],
)
def test_malformed_npu_smi_is_reported_not_raised(text: str, fragment: str) -> None:
    info = parse_npu_smi(text, "inline")
    assert any(fragment in p for p in info.problems), info.problems


def test_truncated_real_output_keeps_complete_rows() -> None:
    lines = (FIX / "npu_smi" / "910b3_ms_swift_docs.txt").read_text(encoding="utf-8").splitlines()
    info = parse_npu_smi("\n".join(lines[:10]), "truncated")  # ends after NPU 1's first row
    assert [c.npu_id for c in info.chips] == [0]
    assert any("without its chip row" in p for p in info.problems)


def test_nvidia_smi_470_k80() -> None:
    path = FIX / "nvidia_smi" / "tesla_k80_470.txt"
    info = parse_nvidia_smi(path.read_text(encoding="utf-8"), str(path))
    assert (info.driver_version, info.cuda_version) == ("470.57.02", "11.4")
    assert info.problems == [] and info.processes == []
    g = info.gpus[0]
    assert (g.name, g.bus_id, g.memory_used_mib, g.memory_total_mib) == ("Tesla K80", "00000000:00:04.0", 0, 11441)
    assert (g.utilization_pct, g.power_w, g.power_cap_w, g.temp_c) == (100.0, 67.0, 149.0, 39.0)


def test_nvidia_smi_550_rtx3090() -> None:
    path = FIX / "nvidia_smi" / "rtx3090_550.txt"
    info = parse_nvidia_smi(path.read_text(encoding="utf-8"), str(path))
    assert (info.smi_version, info.driver_version, info.cuda_version) == ("550.144.03", "550.144.03", "12.4")
    g = info.gpus[0]
    assert (g.name, g.memory_total_mib, g.power_w, g.power_cap_w, g.utilization_pct) == (
        "NVIDIA GeForce RTX 3090",
        24576,
        107.0,
        350.0,
        0.0,
    )


def test_nvidia_smi_not_a_table() -> None:
    info = parse_nvidia_smi("NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver.", "x")
    assert info.gpus == [] and info.problems
