"""Exact evaluator of smECE_sigma and SmoothECE, for tests only.

Independent of the library code: it uses nothing from ``smoothece``.

Mathematics (README, "What the SmoothECE measures").  With a_i = w_i (y_i - f_i) / W,

    r(t) = sum_i a_i K(t, f_i),
    K(t, x) = sum_{k in Z} [phi(t - x - 2k) + phi(t + x - 2k)],

so r is a finite signed sum of Gaussians phi_sigma(t - c) centred at the
"image centres" c = +-x + 2k.  Every quantity below is computed in closed
form from those centres; the only approximations are

* root finding (brentq to ~1e-14; misplacing a root by d changes the integral
  by about |r'| d^2, i.e. nothing), and
* dropping centres farther than ``_CUTOFF * sigma`` (= 15 sigma) from [0, 1]
  or from the evaluation point: each dropped term is below
  exp(-112) / sigma, i.e. ~1e-47 in absolute value.

Method for smECE_sigma = int_0^1 |r(t)| dt:

1. scan r and r' on a grid of spacing sigma / 40 (r varies on the scale
   sigma, so it cannot oscillate between scan nodes);
2. bracket every sign change of r; where r keeps its sign across a scan
   interval but |r| has a local minimum inside (r' changes sign "towards
   zero"), locate the extremum with brentq on r' and, if r crosses zero
   there, bracket the two roots on either side.  This catches pairs of
   roots closer than the scan spacing; what could still be missed is a dip
   below zero of depth d so shallow that r' does not change sign at the
   scan nodes, whose area ~ d^{3/2} sigma^{3/2} is far below 1e-12;
3. refine every root with brentq on the exact r;
4. integrate r exactly on every sign-constant segment with the Gaussian
   antiderivative (scipy.special.ndtr) and sum the absolute values.

Identical predictions are merged first (their residuals add), which is exact
and makes data with repeated forecasts cheap.

Public functions: ``exact_residual``, ``exact_smece_sigma``, ``exact_smece``.
"""

from __future__ import annotations

import math

import numpy as np
from scipy.optimize import brentq
from scipy.special import ndtr

__all__ = ["exact_residual", "exact_smece_sigma", "exact_smece"]

# Centres farther than this many sigma from the point of interest are dropped
# (their terms are < exp(-112.5)/sigma, far below double-precision noise).
_CUTOFF = 15.0
# Scan spacing is sigma / _SCAN_PER_SIGMA.
_SCAN_PER_SIGMA = 40
# Element budget of one dense (t-chunk x centres) block: 512 kB, so that the
# block's temporaries stay in a core's cache.
_BLOCK = 1 << 16
_SQRT_2PI = math.sqrt(2.0 * math.pi)


def _group(f, y, weights):
    """Merge identical predictions: unique f values and their summed a_i."""
    f = np.asarray(f, dtype=np.float64).ravel()
    y = np.asarray(y, dtype=np.float64).ravel()
    w = (np.ones_like(f) if weights is None
         else np.asarray(weights, dtype=np.float64).ravel())
    if not (f.shape == y.shape == w.shape) or f.size == 0:
        raise ValueError("f, y, weights must be non-empty and of equal length")
    W = w.sum()
    if not W > 0:
        raise ValueError("total weight must be positive")
    u, inv = np.unique(f, return_inverse=True)
    a = np.bincount(inv, weights=w * (y - f), minlength=u.size) / W
    keep = a != 0.0                     # zero-residual groups contribute nothing
    return u[keep], a[keep]


class _Residual:
    """r(t) for fixed (grouped) data and sigma, as a sum over image centres."""

    def __init__(self, u, a, sigma):
        sigma = float(sigma)
        if not sigma > 0:
            raise ValueError("sigma must be positive")
        self.sigma = sigma
        self.L = _CUTOFF * sigma
        # Images x + 2k and -x + 2k for every k that can land within L of
        # [0, 1].  For x = 0 (or 1) the two families coincide, which correctly
        # doubles the mass: K(t, 0) = 2 sum_k phi(t - 2k).
        kmax = int(math.ceil((self.L + 1.0) / 2.0)) + 1
        k2 = 2.0 * np.arange(-kmax, kmax + 1)
        c = np.concatenate([(u[None, :] + k2[:, None]).ravel(),
                            (-u[None, :] + k2[:, None]).ravel()])
        coef = np.concatenate([np.tile(a, k2.size), np.tile(a, k2.size)])
        inside = (c >= -self.L) & (c <= 1.0 + self.L)
        order = np.argsort(c[inside], kind="stable")
        self.c = c[inside][order]
        self.coef = coef[inside][order]

    def _window(self, lo, hi):
        """Index range of the centres within L of the interval [lo, hi]."""
        return (int(np.searchsorted(self.c, lo - self.L, "left")),
                int(np.searchsorted(self.c, hi + self.L, "right")))

    # ---- point evaluations (used by brentq) -------------------------------
    def value(self, t):
        i, j = self._window(t, t)
        z = (t - self.c[i:j]) / self.sigma
        return float(np.dot(self.coef[i:j], np.exp(-0.5 * z * z))) / (
            _SQRT_2PI * self.sigma)

    def deriv(self, t):
        i, j = self._window(t, t)
        z = (t - self.c[i:j]) / self.sigma
        return -float(np.dot(self.coef[i:j], z * np.exp(-0.5 * z * z))) / (
            _SQRT_2PI * self.sigma * self.sigma)

    # ---- vectorised evaluation on a sorted array of t ----------------------
    def values(self, t, with_deriv=False):
        """r (and r') at a sorted array t, in chunks of bounded size."""
        t = np.asarray(t, dtype=np.float64)
        r = np.empty_like(t)
        dr = np.empty_like(t) if with_deriv else None
        n = t.size
        # Widest single-point window decides the chunk length; a chunk spans
        # at most L in t, so its union window is at most 1.5 times the
        # single-point one (a longer span would mostly add centres beyond L).
        lo = np.searchsorted(self.c, t - self.L, "left")
        hi = np.searchsorted(self.c, t + self.L, "right")
        width = max(1, int((hi - lo).max(initial=1)))
        chunk = max(1, _BLOCK // (2 * width))
        norm = 1.0 / (_SQRT_2PI * self.sigma)
        s = 0
        while s < n:
            e = max(s + 1, min(n, s + chunk, int(np.searchsorted(t, t[s] + self.L, "right"))))
            i, j = lo[s], hi[e - 1]     # t sorted -> union window of the chunk
            z = (t[s:e, None] - self.c[None, i:j]) / self.sigma
            g = np.exp(-0.5 * z * z)
            # numpy's own loop rather than BLAS, whose threads spin waiting
            # for a core when test processes share them (2.5x the CPU time)
            r[s:e] = np.einsum("ij,j->i", g, self.coef[i:j]) * norm
            if with_deriv:
                dr[s:e] = -np.einsum("ij,ij,j->i", g, z, self.coef[i:j]) * (norm / self.sigma)
            s = e
        return (r, dr) if with_deriv else r

    # ---- exact integral on a segment ---------------------------------------
    def integral(self, a, b):
        """int_a^b r(t) dt exactly: sum_c coef_c [Phi((b-c)/s) - Phi((a-c)/s)].

        Centres more than L below a contribute coef*(1 - 1) = 0 and centres
        more than L above b contribute 0 - 0, so only the window is summed.
        """
        i, j = self._window(a, b)
        c, coef, s = self.c[i:j], self.coef[i:j], self.sigma
        # Use the upper tail where (t - c) > 0 so the difference of two
        # numbers near 1 is formed from two accurate small numbers.
        up = c < 0.5 * (a + b)
        d = np.where(up, ndtr((c - a) / s) - ndtr((c - b) / s),
                     ndtr((b - c) / s) - ndtr((a - c) / s))
        return float(np.dot(coef, d))


def _solve(fun, a, b, xtol):
    """brentq on [a, b], tolerant of the scan and the scalar evaluation
    disagreeing about a sign when |fun| is at rounding level at an end:
    then that end already is the root to within rounding."""
    fa, fb = fun(a), fun(b)
    if fa == 0.0:
        return a
    if fb == 0.0:
        return b
    if np.sign(fa) == np.sign(fb):
        return a if abs(fa) < abs(fb) else b
    return brentq(fun, a, b, xtol=xtol, rtol=4 * np.finfo(float).eps)


def _roots(res, lo=0.0, hi=1.0):
    """All sign changes of r in [lo, hi], refined with brentq."""
    s = res.sigma
    m = max(2, int(math.ceil(_SCAN_PER_SIGMA * (hi - lo) / s)))
    t = np.linspace(lo, hi, m + 1)
    r, dr = res.values(t, with_deriv=True)
    sg = np.sign(r)
    roots = []
    # (a) plain sign changes between scan nodes (exact zeros at nodes are
    #     kept as breakpoints too; they need no refinement).
    roots.extend(t[sg == 0.0].tolist())
    for k in np.nonzero(sg[:-1] * sg[1:] < 0)[0]:
        roots.append(_solve(res.value, t[k], t[k + 1], 1e-14))
    # (b) same sign at both ends, but |r| has a local minimum inside: the
    #     extremum may dip through zero (a close pair of roots).
    dip = (sg[:-1] == sg[1:]) & (sg[:-1] != 0) & \
          (sg[:-1] * dr[:-1] < 0) & (sg[1:] * dr[1:] > 0)
    for k in np.nonzero(dip)[0]:
        a, b = t[k], t[k + 1]
        tm = _solve(res.deriv, a, b, 1e-15)
        rm = res.value(tm)
        if rm == 0.0:
            roots.append(tm)            # double root: breakpoint, no crossing
        elif np.sign(rm) != sg[k]:
            roots.append(_solve(res.value, a, tm, 1e-14))
            roots.append(_solve(res.value, tm, b, 1e-14))
    return np.unique(np.asarray(roots, dtype=np.float64))


def _lone_atoms(x, a, sigma):
    """int |r| over the span of clusters of one prediction each, all at once.

    Such a cluster's r = a_i K(t, x_i) has the sign of a_i, so its integral
    is |a_i| times that of K over the span: _Residual.integral's closed form
    over the same image centres and window, with no root to find."""
    L = _CUTOFF * sigma
    lo, hi = np.maximum(0.0, x - L), np.minimum(1.0, x + L)
    kmax = int(math.ceil((L + 1.0) / 2.0)) + 1
    mass = np.zeros_like(x)
    for k in range(-kmax, kmax + 1):
        for c in (x + 2.0 * k, -x + 2.0 * k):
            kept = (c >= -L) & (c <= 1.0 + L) & (c >= lo - L) & (c <= hi + L)
            up = c < 0.5 * (lo + hi)
            d = np.where(up, ndtr((c - lo) / sigma) - ndtr((c - hi) / sigma),
                         ndtr((hi - c) / sigma) - ndtr((lo - c) / sigma))
            mass += np.where(kept, d, 0.0)
    return float(np.dot(np.abs(a), mass))


def _smece_sigma_grouped(u, a, sigma):
    """Cluster by cluster: predictions more than 2*_CUTOFF*sigma apart do not
    interact (their terms are below exp(-112)/sigma where the others live), so
    each cluster's integral is taken over its own span plus _CUTOFF*sigma on
    either side (clipped to [0, 1]); for large sigma there is one cluster.
    Clusters of one prediction are integrated together (_lone_atoms)."""
    if u.size == 0:
        return 0.0
    gap = 2.0 * _CUTOFF * sigma
    cuts = np.flatnonzero(np.diff(u) > gap) + 1
    starts, ends = np.r_[0, cuts], np.r_[cuts, u.size]
    lone = ends - starts == 1
    total = _lone_atoms(u[starts[lone]], a[starts[lone]], sigma)
    for s, e in zip(starts[~lone], ends[~lone]):
        cu, ca = u[s:e], a[s:e]
        res = _Residual(cu, ca, sigma)
        lo, hi = max(0.0, cu[0] - _CUTOFF * sigma), min(1.0, cu[-1] + _CUTOFF * sigma)
        br = np.unique(np.clip(np.concatenate([[lo], _roots(res, lo, hi), [hi]]), lo, hi))
        total += float(sum(abs(res.integral(br[k], br[k + 1])) for k in range(br.size - 1)))
    return total


def exact_residual(t, f, y, sigma, weights=None):
    """The smoothed residual r_sigma(t) at points t in [0, 1] (any shape).

    Only image centres within 15 sigma of [0, 1] are kept, so t outside
    [0, 1] is not supported."""
    u, a = _group(f, y, weights)
    t = np.asarray(t, dtype=np.float64)
    if u.size == 0:
        return np.zeros_like(t)
    res = _Residual(u, a, sigma)
    flat = t.ravel()
    order = np.argsort(flat, kind="stable")
    out = np.empty_like(flat)
    out[order] = res.values(flat[order])
    return out.reshape(t.shape)


def exact_smece_sigma(f, y, sigma, weights=None):
    """smECE_sigma = int_0^1 |r_sigma(t)| dt, accurate to ~1e-12."""
    u, a = _group(f, y, weights)
    return _smece_sigma_grouped(u, a, sigma)


def exact_smece(f, y, weights=None):
    """SmoothECE: the fixpoint sigma* of smECE_sigma = sigma (xtol 1e-12)."""
    u, a = _group(f, y, weights)
    if u.size == 0:
        return 0.0                      # all residuals zero
    g = lambda s: _smece_sigma_grouped(u, a, s) - s
    # smECE_sigma <= sum|a| (triangle inequality, kernel mass 1), so
    # g(hi) <= 0 at hi = min(1, sum|a|); sum|a| <= 1 always.
    hi = min(1.0, float(np.abs(a).sum()))
    ghi = g(hi)
    if ghi >= 0.0:
        return hi
    # Walk down by halving until g > 0 (avoids evaluating at tiny sigma,
    # where the scan is expensive, unless the fixpoint really is tiny).
    lo = hi
    while True:
        lo *= 0.5
        if lo < 1e-6:
            lo = 1e-6
        glo = g(lo)
        if glo > 0.0:
            break
        if glo == 0.0:
            return lo
        if lo <= 1e-6:
            return 0.0                  # fixpoint below 1e-6: report 0
        hi = lo
    return float(brentq(g, lo, hi, xtol=1e-12, rtol=4 * np.finfo(float).eps))
