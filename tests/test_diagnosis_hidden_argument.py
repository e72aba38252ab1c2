"""A scalar argument that differs as a setting is named even when every tensor stays within precision.

End to end on a real msprobe dump: ``stats_bf16_rms_norm_eps`` in tests/msprobe_cases (an RMSNorm eps of 1e-2
instead of 1e-6 under bf16). Here: which recorded differences count as another setting, and which are one value
computed in another precision.
"""

from __future__ import annotations

import pytest

from acc_agent.numerics.diagnosis.localise import _material


@pytest.mark.parametrize(("golden", "target"), [
    (1e-6, 1e-2),  # an eps read from another config
    (1e-5, 1e-6),
    (0.125, 0.25),  # an attention scale 1/sqrt(d) against 1/d
    (0, 1),  # a position offset
    (-1, -2),  # a softmax over another axis
    (True, False),  # dropout left in training mode
    ("none", "tanh"),  # another GELU approximation
    (1.0, -1.0),
    (0.0, 1e-3),
])
def test_settings_that_differ_count(golden: object, target: object) -> None:
    assert _material(golden, target)


@pytest.mark.parametrize(("golden", "target"), [
    (0.7231, 0.7246),  # a value read off a bf16 tensor (.item()): its rounding, not another setting
    (3.0, 3.05),
    (None, 1e-5),  # one run writes out the default, the other leaves it out
    ("none", None),
    (float("nan"), float("nan")),
    ((1, 2), (2, 1)),  # not a plain scalar: compared elsewhere
])
def test_rounding_and_absent_arguments_do_not(golden: object, target: object) -> None:
    assert not _material(golden, target)
