"""Small helpers shared by the public modules; imports nothing above it."""

from __future__ import annotations

import os
import sys
import warnings
from typing import Optional, overload

import numpy as np

from . import _core
from ._errors import ResolutionError, ResolutionWarning

#: Mesh of the returned curves: 2^9 intervals (fewer when σ is large).
MESH_INTERVALS = 512


@overload
def frozen(a: None) -> None: ...
@overload
def frozen(a: np.ndarray) -> np.ndarray: ...
def frozen(a: Optional[np.ndarray]) -> Optional[np.ndarray]:
    """A read-only view (results are immutable)."""
    if a is None:
        return None
    a = np.asarray(a)
    a.flags.writeable = False
    return a


def quantiles(values: np.ndarray, qs) -> np.ndarray:
    """Quantiles along axis 0 by linear interpolation (numpy's default method),
    NaN-aware: NaN entries are left out, and a column without values gives NaN.

    Written out with np.sort instead of np.quantile, whose hashing C++ code
    aborts a process whose daemon threads are inside it at interpreter exit."""
    values = np.asarray(values, dtype=np.float64)
    ordered = np.sort(values, axis=0)  # NaN sort last
    valid = np.sum(~np.isnan(values), axis=0)
    out = []
    for q in np.atleast_1d(qs):
        h = np.maximum(valid - 1, 0) * q
        lo = np.floor(h).astype(np.intp)
        hi = np.minimum(lo + 1, np.maximum(valid - 1, 0))
        low = np.take_along_axis(ordered, np.expand_dims(lo, 0), axis=0)[0]
        high = np.take_along_axis(ordered, np.expand_dims(hi, 0), axis=0)[0]
        out.append(np.where(valid > 0, low + (h - lo) * (high - low), np.nan))
    return np.array(out)


def bootstrap_interval(value: float, replicates: np.ndarray, level: float, *, nonnegative: bool = False) -> tuple:
    """The ``level`` bootstrap interval ``(low, high)`` of a statistic estimated as ``value``, from
    its 1-D bootstrap replicates (NaN ones left out): the smallest interval symmetric about
    ``value`` that holds the replicates' equal-tailed percentile interval [q₋, q₊],

        value ± d,  d = max(q₊ − value, value − q₋);

    with ``nonnegative`` (a quantity ≥ 0 that noise inflates, as a SmoothECE), symmetric on the
    squared scale and never below 0:

        √max(0, value² − d),  √(value² + d),  d = max(q₊² − value², value² − q₋²).

    Why: the percentile interval alone ignores bias. Noise adds to |r̂|, so a SmoothECE
    overestimates the population's, and its replicates overestimate it again: the
    percentile interval then sits above the population value (it can even lie wholly
    above ``value``). Reflecting q₊ about ``value`` (the basic interval's lower end) moves
    the lower end down by the bias; on the squared scale, because noise adds to the
    SmoothECE roughly in quadrature (value² ≈ population² + noise², replicate² ≈ value² +
    noise²), so that at the noise floor the lower end reaches 0 and the interval is an
    upper bound. Keeping q₊ as the upper end keeps the replicates' skew, which a
    reflection would turn the wrong way (heavy-tailed weights). The interval always
    holds ``value``. bench/coverage.py measures its coverage of the population SmoothECE
    (docs/statistics.md). The rule lives in the core (cpp/core/resampling/band.cpp,
    ``bootstrap_interval``), which every answer of the library uses.

    NaN ``value`` or no valid replicate gives (NaN, NaN)."""
    low, high = _core.bootstrap_interval(float(value), np.asarray(replicates, dtype=np.float64).ravel(), level,
                                         nonnegative)
    return float(low), float(high)


def sigma_star(analysis, threads: int, stacklevel: int = 3) -> float:
    """σ* of a core analysis; below a sketch's grid, its upper bound with a warning."""
    sigma, resolved, lower, upper = analysis.smece(threads)
    if not resolved:
        warnings.warn(
            f"this sketch's grid resolves only bandwidths from {analysis.min_sigma:.3g} on and the SmoothECE lies "
            f"below (between {lower:.3g} and {upper:.3g}); returning the upper bound {upper:.3g}. A sketch with a "
            f"finer resolution resolves it.", ResolutionWarning, stacklevel=stacklevel)
    return sigma


def refuse_bound(analysis, threads: int, asked: str) -> None:
    """:class:`ResolutionError` when the analysis knows σ* only as a bound (a
    sketch's grid does not resolve it): ``asked`` (a test, an interval, a
    diagram) would be computed from the bound, so it is not computed."""
    _, ok, lower, upper = analysis.smece(threads)  # solved once; the answers reuse it
    if not ok:
        raise ResolutionError(
            f"{asked} needs the SmoothECE itself, but this sketch's grid resolves only bandwidths from "
            f"{analysis.min_sigma:.3g} on and the SmoothECE lies below (between {lower:.3g} and {upper:.3g})",
            lower, upper)


_PACKAGE = os.path.dirname(os.path.abspath(__file__)) + os.sep


def outside_stacklevel() -> int:
    """The ``stacklevel`` that makes a warning raised by the caller of this
    function name the first line outside smoothece (the user's call), however
    deep inside the package it was raised (integrations, CLI and all)."""
    frame, level = sys._getframe(1), 1
    while frame is not None and os.path.abspath(frame.f_code.co_filename).startswith(_PACKAGE):
        frame, level = frame.f_back, level + 1
    return level


def append_doc(fn, text: str):
    """Appends a shared section to a docstring (docstrings are None under python -OO)."""
    if fn.__doc__ is not None:
        fn.__doc__ += text
    return fn


def filled_curve(mesh: np.ndarray, mu: np.ndarray) -> np.ndarray:
    """``mu`` with NaN stretches replaced by the nearest valid value on the mesh."""
    valid = np.flatnonzero(~np.isnan(mu))
    if valid.size == mu.size:
        return np.array(mu, dtype=np.float64)
    if valid.size == 0:  # pragma: no cover - the core always has data somewhere
        raise ValueError("the smoothed regression is undefined everywhere")
    pos = np.clip(np.searchsorted(valid, np.arange(mu.size)), 1, max(valid.size - 1, 1))
    left, right = valid[np.maximum(pos - 1, 0)], valid[np.minimum(pos, valid.size - 1)]
    nearest = np.where(np.abs(mesh[right] - mesh) < np.abs(mesh - mesh[left]), right, left)
    return np.asarray(mu, dtype=np.float64)[nearest]


def format_p(p: float, n_sim: float) -> str:
    """A simulated p-value as text: at its floor 1/(1 + n_sim) the test only says
    p is below that resolution, so it reads "p < 0.001" rather than "p = 0.000999"
    (the floor rounded up to one significant digit: 50 simulations give "p < 0.02")."""
    if not np.isfinite(p):
        return "p = n/a"
    floor = 1.0 / (1 + n_sim)
    if p > floor * (1 + 1e-9):
        return f"p = {p:.3g}"
    exponent = int(np.floor(np.log10(floor)))
    digit = int(np.ceil(floor / 10.0**exponent - 1e-9))
    if digit == 10:
        digit, exponent = 1, exponent + 1
    return f"p < {digit * 10.0**exponent:.{max(0, -exponent)}f}"


def format_paired_p(p: float, n_boot: int) -> str:
    """The p-value of :func:`smoothece.compare`'s test of equal calibration as text
    (:func:`format_p`): two-sided, with both counts + 1, its floor is 2/(n_boot + 1)."""
    return format_p(p, (n_boot - 1) / 2)


def jsonable(value):
    """``value`` as plain Python data that ``json.dumps`` writes without options:
    arrays become lists, numpy scalars Python numbers, NaN and ±inf None (JSON
    has no such numbers), dates ISO-8601 strings, dict keys strings."""
    import datetime

    if isinstance(value, dict):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [jsonable(v) for v in value]
    if isinstance(value, np.ndarray):
        if value.dtype.kind in "mM":
            return [jsonable(v) for v in value]
        return jsonable(value.tolist())
    if isinstance(value, np.datetime64):
        return None if np.isnat(value) else str(value)
    if isinstance(value, np.timedelta64):
        return None if np.isnat(value) else str(value)
    if isinstance(value, (datetime.date, datetime.datetime)):
        return value.isoformat()
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, float) and not np.isfinite(value):
        return None
    if isinstance(value, (bool, int, float, str)) or value is None:
        return value
    return str(value)


class ToDict:
    """``to_dict()`` for result dataclasses: every field, JSON-safe (see :func:`jsonable`)."""

    __slots__ = ()

    def to_dict(self) -> dict:
        """Every public field as plain Python data (lists, floats, ints, strings, None for NaN/inf):
        ``json.dumps(result.to_dict())`` works as it is."""
        import dataclasses

        return {f.name: jsonable(getattr(self, f.name)) for f in dataclasses.fields(self) if not f.name.startswith("_")}


def imported(name: str):
    """The module ``name`` if it is imported and done initializing, else None; never imports it.

    A caller's pandas or polars objects imply their module was imported. One still being
    imported by another thread (pyarrow imports pandas lazily, e.g. in the CLI's reader) is
    half-initialized and cannot have made them, so it counts as not imported."""
    import sys

    module = sys.modules.get(name)
    if module is None or getattr(getattr(module, "__spec__", None), "_initializing", False):
        return None
    return module
