"""Pure-numpy baseline: the paper's Algorithms 1 and 2, written literally.

This module is the plain reference implementation of SmoothECE (Błasiok &
Nakkiran, ICLR 2024, Section 3.5): the baseline that benchmarks compare the
C++ core against and that tests cross-check.  It is deliberately *not*
optimized -- every σ evaluation re-bins the data, wraps explicitly and runs a
zero-padded FFT convolution over the whole mirror-extended grid.  Its input is
checked as :func:`smoothece.smece` checks it, by the same code (the rows by the
core's checked pass, which does no arithmetic here; the same InputError
messages), so a bad row is refused rather than binned off the grid.

Algorithm 1, ``smece_sigma``:

1. Discretization: round every prediction to the nearest of the ``M + 1``
   grid nodes ``j/M`` and accumulate its weighted residual
   ``w_i (y_i - f_i) / W`` there (``np.bincount``).
2. Wrap: the reflected kernel on [0, 1] is the plain Gaussian applied to the
   even, 2-periodic extension of the data (masses at ``±x + 2k``).  The node
   array is mirror-extended by ``T = ceil(6σ) + 1`` unit-length copies on
   each side, alternating reversed / forward, without repeating the end
   nodes.  A mass sitting exactly on an end node (0 or 1) is its own mirror
   image, so it enters the extension with weight 2 -- this is what makes
   ``K(t, 0) = 2 Σ φ(t - 2k)``.
3. Convolve with the sampled Gaussian ``φσ(d/M)``, ``|d| ≤ T·M`` (tails
   beyond ``T ≥ 6σ + 1`` carry less than ``2·Φ(-6 - 1/σ) < 2e-9`` of the mass,
   and less than 3e-12 for σ ≤ 1), by ``np.fft.rfft``/``irfft`` with zero
   padding so that the FFT's circular wrap-around never reaches [0, 1].
4. Integrate ``|r|`` over the ``M + 1`` nodes in [0, 1] by the trapezoid rule.

Algorithm 2, ``smece``: bisection on ``g(σ) = smECE_σ - σ`` over [0, 1]
until the bracket is shorter than ``tol``; the midpoint is returned.

Discretization error.  Rounding moves each prediction by at most
``h/2 = 1/(2M)``; since ``∫ |∂_x K(t, x)| dt ≈ 2 φσ(0) = 0.8/σ``, the error of
``smECE_σ`` is first order, ``O(1/(M σ))``: at worst ``0.4/(Mσ) · Σ|w(y-f)|/W``.
For predictions spread over an interval the rounding shifts behave like
independent uniform noise, so the first-order term largely cancels and the
observed error is a random ``O(1/(Mσ))`` fluctuation far below the worst case
(it only matters where ``r`` changes sign: mass is conserved exactly, so
where ``r`` keeps one sign the result is exact to rounding).  The trapezoid
rule adds only ``O(1/(Mσ)^2)`` at the sign changes of ``r`` (``r`` is smooth
and even-periodic elsewhere, where the rule is spectrally accurate).  The
default grid ``M = max(1000, ceil(1000/σ))`` keeps ``Mσ ≥ 1000``; on
n = 2000 random predictions this gives errors of a few 1e-6 at most.  M is
capped at ``2**20`` (memory), so below σ ≈ 1e-3 the error grows like
``1/σ``.  Pass ``grid`` to choose M yourself.
"""

from __future__ import annotations

import math

import numpy as np

from . import _validate
from ._errors import InputError
from ._summary import checked_rows

__all__ = ["smece_sigma", "smece"]

_NODES_PER_SIGMA = 1000         # M >= 1000 / sigma
_MIN_NODES = 1000
_MAX_NODES = 2 ** 20
_MAX_EXTENDED_NODES = 2 ** 27   # ~1 GB of float64 for the extension, the kernel and their FFTs


def _default_grid(sigma):
    """Number of grid intervals M for a given σ (see module docstring)."""
    return int(min(_MAX_NODES, max(_MIN_NODES, math.ceil(_NODES_PER_SIGMA / sigma))))


def _inputs(f, y, weights):
    """The rows as float64 arrays, checked as smoothece.smece checks them (InputError, TypeError)."""
    f, y, w, _ = checked_rows(f, y, weights)
    y = np.asarray(y, dtype=np.float64)
    w = np.ones_like(f) if w is None else w
    return f, y, w


def _grid(grid):
    """M, grid intervals: an int in [1, 2**26] (a float64 array of (2T + 1)·M nodes is made of it)."""
    return None if grid is None else _validate.count(grid, "grid", 1, 2 ** 26)


def _discretize(f, y, w, M):
    """Algorithm 1, Discretization: weighted residual mass per node j/M."""
    j = np.rint(f * M).astype(np.intp)                  # nearest node
    return np.bincount(j, weights=w * (y - f), minlength=M + 1) / w.sum()


def _wrap(h, T):
    """Algorithm 1, Wrap: the even 2-periodic extension of the node masses
    over [-T, 1 + T], i.e. nodes m = -T·M ... (1+T)·M.

    One period (length 2M, nodes 0 .. 2M-1) is  h_0 .. h_M  followed by the
    reversed interior  h_{M-1} .. h_1 : the end nodes are not duplicated.
    Their masses are doubled instead, because the mirror image of a mass at 0
    (or 1) is that same point: K(t, 0) = 2 Σ_k φ(t - 2k).
    """
    M = h.size - 1
    period = np.concatenate([h, h[-2:0:-1]])
    period[0] *= 2.0
    period[M] *= 2.0
    m = np.arange(-T * M, (T + 1) * M + 1)
    return period[m % (2 * M)]


def smece_sigma(f, y, sigma, *, weights=None, grid=None):
    """smECE_σ by the paper's Algorithm 1 (discretize, wrap, convolve).

    ``grid`` is the number M of grid intervals (M + 1 nodes j/M); default
    ``max(1000, ceil(1000/σ))``, capped at 2**20. Input as
    :func:`smoothece.smece_sigma` takes it; the mirror-extended grid,
    about 24σ·M nodes, must stay within 2**27 (σ up to about 5,000 at the
    default grid).
    """
    sigma = _validate.sigma(sigma)
    grid = _grid(grid)
    f, y, w = _inputs(f, y, weights)
    return _algorithm_1(f, y, w, sigma, grid)


def _algorithm_1(f, y, w, sigma, grid):
    """smECE_σ of checked rows (float64 f, y, w)."""
    M = _default_grid(sigma) if grid is None else grid
    T = math.ceil(6.0 * sigma) + 1                    # reflections per side
    nodes = (4 * T + 1) * M + 1                       # the extension's and the kernel's
    if nodes > _MAX_EXTENDED_NODES:
        raise InputError(f"sigma={sigma!r} with grid={M}: the reference's mirror-extended grid would hold {nodes:.3g} "
                         f"nodes, more than 2**27; use a smaller sigma or grid, or smoothece.smece_sigma",
                         "sigma" if grid is None else "grid")

    h = _discretize(f, y, w, M)                       # M + 1 node masses
    ext = _wrap(h, T)                                 # nodes -T·M .. (1+T)·M
    d = np.arange(-T * M, T * M + 1) / M              # kernel offsets
    kern = np.exp(-0.5 * (d / sigma) ** 2) / math.sqrt(2.0 * math.pi * sigma ** 2)

    # Linear convolution by zero-padded real FFT (no circular wrap-around).
    n_full = ext.size + kern.size - 1
    n_fft = 1 << (n_full - 1).bit_length()
    full = np.fft.irfft(np.fft.rfft(ext, n_fft) * np.fft.rfft(kern, n_fft), n_fft)
    # full[i] = Σ_m ext[m] kern[i - m]; node l ∈ [0, M] sits at i = l + 2·T·M.
    r = full[2 * T * M: 2 * T * M + M + 1]

    a = np.abs(r)
    return float((a.sum() - 0.5 * (a[0] + a[-1])) / M)  # trapezoid rule on the M + 1 nodes


def smece(f, y, *, weights=None, tol=1e-7):
    """SmoothECE σ* by the paper's Algorithm 2: bisection on
    g(σ) = smECE_σ - σ over [0, 1] until the bracket is < tol (in
    [1e-12, 1): the bracket of floats near σ* cannot shrink below their
    spacing); returns the midpoint.  All-zero residuals give 0. Input and
    errors as :func:`smoothece.smece`."""
    tol = _validate.positive(tol, "tol", minimum=1e-12, below=1.0)
    f, y, w = _inputs(f, y, weights)
    if not np.any(w * (y - f)):
        return 0.0
    lo, hi = 0.0, 1.0
    while hi - lo >= tol:
        mid = 0.5 * (lo + hi)
        if _algorithm_1(f, y, w, mid, None) > mid:
            lo = mid                                  # g(mid) > 0: σ* above
        else:
            hi = mid
    return 0.5 * (lo + hi)
