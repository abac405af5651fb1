"""Type aliases of the public signatures."""

from __future__ import annotations

from typing import Union

import numpy as np
import numpy.typing as npt

#: What the functions accept as rows: numpy arrays, pandas columns, lists.
ArrayLike = npt.ArrayLike
#: What they return as curves.
FloatArray = npt.NDArray[np.float64]

__all__ = ["ArrayLike", "FloatArray", "Union"]
