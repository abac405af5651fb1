"""Argument normalisation for the public API: one place, one pass of checks
that need no look at the values (type, shape, length). Value checks (range,
NaN, labels, weights) happen inside the core's single binning pass."""

from __future__ import annotations

import os
from typing import Any, Optional

import numpy as np

# dtypes the core reads in place; anything else numeric is converted once.
_PRED_DTYPES = (np.dtype(np.float32), np.dtype(np.float64))
_LABEL_DTYPES = tuple(np.dtype(t) for t in (np.bool_, np.int8, np.uint8, np.int32, np.int64, np.float32, np.float64))
_WEIGHT_DTYPES = _PRED_DTYPES


def _as_1d(x: Any, name: str, accepted: tuple) -> np.ndarray:
    if x is None:
        raise TypeError(f"{name} must be an array of numbers, got None")
    if isinstance(x, (str, bytes)):
        raise TypeError(f"{name} must be an array of numbers, got {type(x).__name__}")
    arr = np.asarray(x)
    kind = arr.dtype.kind
    if kind not in "biuf":
        raise TypeError(f"{name} must be an array of real numbers, got dtype {arr.dtype}")
    if arr.ndim != 1:
        raise ValueError(f"{name} must be 1-D, got shape {arr.shape}")
    if arr.dtype not in accepted:
        # Rare dtypes (float16, int16, uint32, ...): one exact conversion.
        arr = arr.astype(np.float64)
    return arr


def rows(f: Any, y: Any, weights: Any = None) -> tuple:
    """Returns (f, y, weights) as 1-D arrays the core reads without copying."""
    f_arr = _as_1d(f, "f", _PRED_DTYPES)
    y_arr = _as_1d(y, "y", _LABEL_DTYPES)
    w_arr = None if weights is None else _as_1d(weights, "weights", _WEIGHT_DTYPES)
    if f_arr.shape[0] == 0:
        raise ValueError("f is empty: at least one prediction is needed")
    if y_arr.shape != f_arr.shape:
        raise ValueError(f"f and y must have the same length, got f.shape={f_arr.shape} and y.shape={y_arr.shape}")
    if w_arr is not None and w_arr.shape != f_arr.shape:
        raise ValueError(
            f"f and weights must have the same length, got f.shape={f_arr.shape} and weights.shape={w_arr.shape}"
        )
    return f_arr, y_arr, w_arr


def checked_rows(f: Any, y: Any, weights: Any = None, clip: Any = False, n_threads: Optional[int] = None) -> tuple:
    """(f, y, weights, total_weight) after the core's value checks, for code that
    then works on the rows in numpy: the same errors and messages as the
    scoring functions, from one fast fused pass."""
    from . import _core

    f, y, w = rows(f, y, weights)
    lo, hi = clip_range(clip)
    total = _core.check_rows(f, y, w, lo, hi, threads(n_threads))
    return f, y, w, total


def checked_predictions(f: Any, clip: Any = False) -> np.ndarray:
    """Predictions alone after the core's value checks (labels: a zero-stride view of 0)."""
    from . import _core

    arr = _as_1d(f, "f", _PRED_DTYPES)
    if arr.shape[0] == 0:
        raise ValueError("f is empty: at least one prediction is needed")
    lo, hi = clip_range(clip)
    _core.check_rows(arr, np.broadcast_to(np.uint8(0), arr.shape), None, lo, hi, 0)
    return arr


def clip_range(clip: Any) -> tuple:
    """The accepted prediction range for the ``clip`` argument.

    False: [0, 1] exactly. True: any finite value, clamped into [0, 1].
    A number tol >= 0: values in [-tol, 1 + tol] are clamped, others refused.
    """
    if clip is False or clip is None:
        return 0.0, 1.0
    if clip is True:
        return -np.finfo(np.float64).max, np.finfo(np.float64).max
    try:
        tol = float(clip)
    except (TypeError, ValueError):
        raise TypeError(f"clip must be a bool or a non-negative number, got {clip!r}") from None
    if not (tol >= 0.0 and np.isfinite(tol)):
        raise ValueError(f"clip must be a bool or a non-negative finite number, got {clip!r}")
    return -tol, 1.0 + tol


def threads(n: Optional[int]) -> int:
    """0 means all cores for the core; validate what the caller passed."""
    if n is None:
        return 0
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)):
        raise TypeError(f"threads must be an int or None, got {n!r}")
    if n < 1:
        raise ValueError(f"threads must be >= 1 (or None for all {os.cpu_count()} cores), got {n}")
    return int(n)


def real(x: Any, name: str, what: str = "a number") -> float:
    """A real scalar as float; TypeError naming the argument for anything else
    (strings, bools and arrays included, although float() would take some)."""
    if isinstance(x, (str, bytes, bool, np.bool_)) or np.ndim(x) != 0:
        raise TypeError(f"{name} must be {what}, got {x!r}")
    try:
        return float(x)
    except (TypeError, ValueError):
        raise TypeError(f"{name} must be {what}, got {x!r}") from None


def count(n: Any, name: str, minimum: int) -> int:
    """An int ≥ minimum (bools refused)."""
    if isinstance(n, (bool, np.bool_)) or not isinstance(n, (int, np.integer)):
        raise TypeError(f"{name} must be an int, got {n!r}")
    if n < minimum:
        raise ValueError(f"{name} must be >= {minimum}, got {n}")
    return int(n)


def sigma(s: Any) -> float:
    value = real(s, "sigma")
    if not (value > 0.0 and np.isfinite(value)):
        raise ValueError(f"sigma must be a positive finite number, got {s!r}")
    return value


def metric(m: Any) -> str:
    if m not in ("l1", "logit"):
        raise ValueError(f"metric must be 'l1' or 'logit', got {m!r}")
    return m
