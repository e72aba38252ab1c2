"""The array types the numerics are annotated with: io's (the readers') plus the numerics' own.

Why not bare ``np.ndarray``: its shape and dtype default to ``Any``, which hides from the type
checker whether a buffer is the float64 accumulator or the raw fp16 chunk it was cast from. Why
strings for the any-dtype aliases: numpy's scalar types take a type argument only in the stubs
(``np.generic[object]`` raises at run time), and annotations here are never evaluated.
"""

from __future__ import annotations

from typing import TypeAlias

import numpy as np
import numpy.typing as npt

from acc_agent.io.arrays import Array, DType, FloatArray, Int64Array

__all__ = ["Array", "BoolArray", "DType", "Float32Array", "FloatArray", "Int32Array", "Int64Array"]

Float32Array: TypeAlias = npt.NDArray[np.float32]
BoolArray: TypeAlias = npt.NDArray[np.bool_]
Int32Array: TypeAlias = npt.NDArray[np.int32]
