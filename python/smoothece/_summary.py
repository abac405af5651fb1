"""Rows to a core analysis: the one path every array function takes
(validate, one checked pass into a summary, answer from it)."""

from __future__ import annotations

from typing import Any, Callable, Optional

import numpy as np

from . import _core, _validate
from ._errors import InputError


def summarise(f: Any, y: Any, weights: Any = None, *, clip: Any = False, metric: str = "l1",
              threads: Optional[int] = None, full: bool = False, sigma: float = 0.0):
    """A ``_core.Analysis`` of the rows: their summary (residual sums, or
    everything the diagram and resampling need when ``full``), with the rows
    behind it for a second look. ``sigma`` > 0 is a bandwidth the caller will
    ask about (the grid is chosen for it)."""
    f, y, w = _validate.rows(f, y, weights)
    lo, hi = _validate.clip_range(clip)
    try:
        return _core.summarise(f, y, w, lo, hi, _validate.metric(metric), full, _validate.threads(threads), sigma)
    except InputError as err:
        raise _validate.with_hint(err, f, y, clip) from None


def counts_check(*weights: Any) -> Optional[Callable[[], bool]]:
    """For :func:`_validate.weight_kind`: a question, asked only when the
    caller left ``weight_kind`` out, whether the weights (columns of one data
    set; None = unit) are whole numbers with some above 1. The core reads
    each column once, stopping at the first block with a fraction."""
    columns = [w for w in weights if w is not None]
    if not columns:
        return None

    def counts() -> bool:
        over = False
        for w in columns:
            whole, above = _core.weight_traits(_validate.as_1d(w, "weights", _validate._WEIGHT_DTYPES))
            if not whole:
                return False
            over = over or above
        return over

    return counts


def checked_rows(f: Any, y: Any, weights: Any = None, clip: Any = False):
    """Rows checked by the core (the errors of :func:`smoothece.smece`), for code
    that then works on them in numpy: float64 ``f`` (clamped into [0, 1] when
    ``clip`` allows values outside), ``y``, float64 ``w`` (None = unit) and
    the total weight."""
    f_arr, y_arr, w_arr = _validate.rows(f, y, weights)
    total = summarise(f_arr, y_arr, w_arr, clip=clip).total_weight
    lo, hi = _validate.clip_range(clip)
    f_arr = (np.clip(f_arr, 0.0, 1.0, dtype=np.float64) if (lo < 0.0 or hi > 1.0)
             else f_arr.astype(np.float64, copy=False))
    if w_arr is not None:
        w_arr = w_arr.astype(np.float64, copy=False)
    return f_arr, y_arr, w_arr, total


def checked_predictions(f: Any, clip: Any = False) -> np.ndarray:
    """Predictions alone after the core's checks, as float64 clamped into [0, 1]."""
    arr = _validate.predictions(f)
    if arr.shape[0] == 0:
        raise InputError("f is empty: at least one prediction is needed", "f", size=0)
    summarise(arr, np.broadcast_to(np.uint8(0), arr.shape), None, clip=clip)
    return np.clip(arr, 0.0, 1.0, dtype=np.float64)
