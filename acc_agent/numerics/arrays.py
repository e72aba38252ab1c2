"""The array types the numerics are annotated with, named once.

Why not bare ``np.ndarray``: its shape and dtype default to ``Any``, which hides from the type
checker whether a buffer is the float64 accumulator or the raw fp16 chunk it was cast from. Why
strings for the any-dtype aliases: numpy's scalar types take a type argument only in the stubs
(``np.generic[object]`` raises at run time), and annotations here are never evaluated.
"""

from __future__ import annotations

from typing import TypeAlias

import numpy as np
import numpy.typing as npt

FloatArray: TypeAlias = npt.NDArray[np.float64]
Float32Array: TypeAlias = npt.NDArray[np.float32]
BoolArray: TypeAlias = npt.NDArray[np.bool_]
Int32Array: TypeAlias = npt.NDArray[np.int32]
Int64Array: TypeAlias = npt.NDArray[np.int64]
#: An array of any dtype (ints, bools, bf16 read through ml-dtypes): ``generic[object]`` is every numpy scalar.
Array: TypeAlias = "npt.NDArray[np.generic[object]]"
#: A dtype of any kind, including ml-dtypes' opaque bf16/fp8 ("V" kind).
DType: TypeAlias = "np.dtype[np.generic[object]]"
