"""Whether two logs' step numbers mean the same thing, said before their curves are compared.

Curves are aligned by the step numbers the logs print (or that the parser recovered), so a log
numbered by record, or one counting samples where the other counts optimisation steps, puts the
wrong points side by side without any error. These checks turn that into a warning in plain
words; they never change the alignment. Pure numpy, no I/O.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike

from acc_agent.numerics.arrays import FloatArray

UNIT_WORDS = {
    "iteration": "optimisation step",
    "epoch": "epoch",
    "record": "record (numbered in file order, not by step)",
    "sample": "sample",
    "none": "nothing (final figures only)",
}
SCALE_FACTOR = 4.0


def logging_interval(steps: ArrayLike) -> int | None:
    """The usual gap between logged steps (median), or None with fewer than two points."""
    s = np.asarray(steps, dtype=np.float64)
    if s.size < 2:
        return None
    gap = float(np.median(np.diff(s)))
    return int(round(gap)) if gap > 0 else None


def _span(steps: FloatArray) -> str:
    return f"{int(steps[0])}-{int(steps[-1])}" if steps.size else "none"


def step_warnings(b_unit: str, t_unit: str, b_steps: ArrayLike, t_steps: ArrayLike) -> list[str]:
    """Plain-language warnings about units, intervals and ranges of the two step axes."""
    b, t = np.asarray(b_steps, dtype=np.float64), np.asarray(t_steps, dtype=np.float64)
    out: list[str] = []
    if b_unit != t_unit:
        out.append(f"the logs count steps in different units: the baseline by {UNIT_WORDS.get(b_unit, b_unit)}, "
                   f"the target by {UNIT_WORDS.get(t_unit, t_unit)}; points with the same number may not be the same "
                   "point of training")
    else:
        for side, unit in (("baseline", b_unit), ("target", t_unit)):
            if unit == "record":
                out.append(f"the {side} log numbers its points by record (1, 2, 3 in file order), not by optimisation "
                           "step; the curves line up only if both logged at the same interval")
    bi, ti = logging_interval(b), logging_interval(t)
    if bi and ti and bi != ti:
        sparse, dense = ("baseline", "target") if bi > ti else ("target", "baseline")
        dense_steps = t if dense == "target" else b
        sparse_steps = b if sparse == "baseline" else t
        exact = bool(np.isin(sparse_steps[(sparse_steps >= dense_steps.min()) & (sparse_steps <= dense_steps.max())],
                             dense_steps).all())
        how = "values at those steps" if exact else "values interpolated between its points"
        out.append(f"the logs use different intervals: the baseline every {bi}, the target every {ti} step(s); compared on "
                   f"the {sparse}'s steps, the {dense}'s {how}")
    if b.size >= 2 and t.size >= 2 and b_unit == t_unit and b[-1] > 0 and t[-1] > 0:
        ratio = float(t[-1] / b[-1])
        if ratio >= SCALE_FACTOR or ratio <= 1.0 / SCALE_FACTOR:
            big = "target" if ratio > 1 else "baseline"
            factor = ratio if ratio > 1 else 1.0 / ratio
            out.append(f"the step ranges differ by a factor of about {factor:.0f} (baseline {_span(b)}, target {_span(t)}): "
                       f"the {big} log may count samples or records rather than optimisation steps, or the runs have "
                       "different lengths")
    return out
