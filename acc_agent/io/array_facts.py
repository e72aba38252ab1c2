"""What a report says of one saved output array (shape, dtype, mean and max of its finite values).

Why in io, read by the application layer: the golden check's table lists every output of the
model on both sides, and reading the ``.npz`` files is input handling; the renderer only formats
the facts it is given, so rendering a report never opens a tensor file.
"""

from __future__ import annotations

from pathlib import Path

from acc_agent.models.workflow import ArrayFacts


def npz_keys(path: Path | None) -> list[str]:
    """The array names of an ``.npz`` file, sorted; none when it is absent or unreadable."""
    import numpy as np

    if path is None or not path.is_file():
        return []
    try:
        with np.load(path, allow_pickle=False) as data:
            return sorted(data.files)
    except (OSError, ValueError):
        return []


def array_facts(path: Path, key: str) -> ArrayFacts | None:
    """The facts of array ``key`` of ``path``, read without unpickling; None when it cannot be read."""
    import numpy as np

    try:
        with np.load(path, allow_pickle=False) as data:
            if key not in data.files:
                return None
            arr = data[key]
    except (OSError, ValueError):
        return None
    a64 = arr.astype(np.float64)
    finite = np.isfinite(a64)
    good = a64[finite]
    return ArrayFacts(
        shape=[int(n) for n in arr.shape],
        dtype=str(arr.dtype),
        non_finite=int((~finite).sum()),
        finite_mean=float(good.mean()) if good.size else None,
        finite_max=float(good.max()) if good.size else None,
    )
