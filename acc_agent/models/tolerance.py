"""The reference rtol/atol per precision: the one table the project file and compare-tensors share.

Why in the models layer: a project's tolerance (``Project.tolerance``) and the numerics that apply
it must read the same numbers, and the models sit below the numerics.
"""

from __future__ import annotations

#: precision -> (rtol, atol, the range the guide states)
TABLE: dict[str, tuple[float, float, str]] = {
    "fp16": (1e-2, 1e-3, "FP16: rtol 1e-3…1e-2, atol ≈1e-3"),
    "bf16": (1e-2, 1e-2, "BF16: rtol 1e-3…1e-2, atol ≈1e-2"),
    "fp32": (1e-4, 1e-5, "FP32: rtol 1e-5…1e-4, atol 1e-6…1e-5"),
}
