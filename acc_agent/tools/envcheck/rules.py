"""What the environment check holds a machine to: version compatibility, install commands, diff impacts.

Why a module of its own: these are facts about the Ascend and PyTorch releases (which torch a
torch_npu is built for, how a driver is installed, which difference between two machines can move
the numbers), and they change with those releases while the gathering of facts and the building of
check rows do not. A new release is then an edit here and nowhere else.
"""

from __future__ import annotations

import re
from typing import Literal

Impact = Literal["expected", "review"]

# --------------------------------------------------------------------------- version compatibility

_BASE = re.compile(r"^(\d+)\.(\d+)(?:\.(\d+))?")


def base_version(version: str) -> tuple[int, int, int] | None:
    """``2.1.0.post8.dev20241009`` -> (2, 1, 0); ``2.7.1+cpu`` -> (2, 7, 1)."""
    m = _BASE.match(version.strip())
    if not m:
        return None
    return int(m.group(1)), int(m.group(2)), int(m.group(3) or 0)


def release_text(version: str) -> str:
    """The ``X.Y.Z`` release a version string belongs to (empty when it has none), for pip specifiers."""
    return ".".join(map(str, base_version(version) or ()))


def torch_npu_matches(torch_version: str, torch_npu_version: str) -> bool | None:
    """torch_npu X.Y.Z.postN is built for torch X.Y.Z: the release numbers must be equal."""
    t, n = base_version(torch_version), base_version(torch_npu_version)
    if t is None or n is None:
        return None
    return t == n


def same_release(a: str, b: str) -> bool:
    """npu-smi prints build suffixes (24.1.rc1.b030) that version.info omits (24.1.rc1)."""
    a, b = a.lower(), b.lower()
    return a == b or a.startswith(b + ".") or b.startswith(a + ".")


# --------------------------------------------------------------------------- what fixes a missing piece

INSTALL_DRIVER = "./Ascend-hdk-<chip>-npu-driver_<version>_linux-<arch>.run --full --install-for-all && reboot"
INSTALL_DRIVER_FOR_NPU_SMI = ("Install the Ascend driver (Ascend-hdk-<chip>-npu-driver_<version>_linux-<arch>.run --full "
                              "--install-for-all), reboot, then run `npu-smi info`.")
INSTALL_FIRMWARE = "./Ascend-hdk-<chip>-npu-firmware_<version>.run --full (after the driver)"
INSTALL_TOOLKIT = "./Ascend-cann-toolkit_<version>_linux-<arch>.run --install --install-for-all"
DEFAULT_SET_ENV = "/usr/local/Ascend/ascend-toolkit/set_env.sh"
INSTALL_TORCH = "pip install torch==<the version your torch_npu release supports>"
INSTALL_CUDA_TORCH = "pip install torch --index-url https://download.pytorch.org/whl/<cuda tag matching the driver>"
NPU_PROBE_FIX = ("source the CANN set_env.sh, check `npu-smi info`, then "
                 "`python -c \"import torch, torch_npu; print(torch.npu.is_available())\"`")
GPU_PROBE_FIX = "python -c \"import torch; print(torch.cuda.is_available())\""

#: Framework packages whose versions every snapshot records, in the order it records them.
FRAMEWORK_KEYS = ("torch", "torch_npu", "mindspore")

# --------------------------------------------------------------------------- what a difference means

#: Snapshot key -> impact when the two sides differ. GPU vs NPU naturally differs in the device
#: stack; framework and OS differences can change numbers and must be reviewed. Keys not listed
#: are reviewed.
DIFF_IMPACT: dict[str, Impact] = {
    "versions.torch": "review",
    "versions.torch_npu": "expected",
    "versions.mindspore": "review",
    "versions.cann": "expected",
    "versions.driver": "expected",
    "versions.firmware": "expected",
    "versions.cuda": "expected",
    "versions.nvidia_driver": "expected",
    "system.os": "review",
    "system.arch": "review",
    "system.python": "review",
    "system.cpu_model": "review",
    "system.cpu_count": "review",
    "system.memory_total_gib": "review",
    "devices": "expected",
}
