"""The array types the readers are annotated with, named once for io and what builds on it.

Why not bare ``np.ndarray``: its shape and dtype default to ``Any``, so a reader that hands back
an int64 step column and one that hands back an fp16 tensor would look the same to the type
checker. Why strings, with numpy imported for the checker only: numpy's scalar types take a type
argument only in the stubs (``np.generic[object]`` raises at run time), and the log readers import
these names while keeping numpy unloaded until a table is read. Why here and not in numerics:
numerics builds on io, so io cannot borrow from it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, TypeAlias

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

FloatArray: TypeAlias = "npt.NDArray[np.float64]"
Int64Array: TypeAlias = "npt.NDArray[np.int64]"
#: A tensor as read from a dump, of any dtype (ints, bools, bf16/fp8 through ml-dtypes).
Array: TypeAlias = "npt.NDArray[np.generic[object]]"
#: A dtype of any kind, including ml-dtypes' opaque bf16/fp8 ("V" kind).
DType: TypeAlias = "np.dtype[np.generic[object]]"
