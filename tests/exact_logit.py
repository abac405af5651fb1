"""Exact evaluator of the logit-metric smECE (paper Section 5.3), for tests only.

r(t) = (1/W) Σ w_i (f_i − y_i) φσ(t − logit f_i) on ℝ: a finite sum of plain
Gaussians (no reflections), integrated exactly between its roots with the
Gaussian antiderivative, as in exact.py (whose root finder and segment
integral it reuses). Predictions are clamped to [1e-12, 1 − 1e-12] first,
the library's documented rule for predictions at exactly 0 or 1.
"""

import math

import numpy as np
from exact import _CUTOFF, _SCAN_PER_SIGMA, _Residual, _solve
from scipy.optimize import brentq

EPS = 1e-12


def _plain_residual(f, y, sigma, weights):
    f = np.asarray(f, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64)
    w = np.ones_like(f) if weights is None else np.asarray(weights, dtype=np.float64)
    p = np.clip(f, EPS, 1 - EPS)
    z = np.log(p) - np.log1p(-p)
    centres, inverse = np.unique(z, return_inverse=True)
    coef = np.bincount(inverse, weights=w * (y - f)) / w.sum()
    res = _Residual.__new__(_Residual)  # same evaluation code, our own centres
    res.sigma, res.L = float(sigma), _CUTOFF * float(sigma)
    res.c, res.coef = centres, coef
    return res


def exact_smece_sigma_logit(f, y, sigma, weights=None):
    res = _plain_residual(f, y, sigma, weights)
    if not np.any(res.coef):
        return 0.0
    lo, hi = res.c[0] - res.L, res.c[-1] + res.L
    m = max(2, int(math.ceil(_SCAN_PER_SIGMA * (hi - lo) / res.sigma)))
    t = np.linspace(lo, hi, m + 1)
    r = res.values(t)
    sg = np.sign(r)
    roots = [_solve(res.value, t[k], t[k + 1], 1e-13) for k in np.nonzero(sg[:-1] * sg[1:] < 0)[0]]
    # Between far-apart centres r underflows to exactly 0: the ends of each
    # run of zeros are breakpoints too (a sign change may hide inside the run).
    zero = sg == 0
    edges = t[zero & ~np.r_[False, zero[:-1]]], t[zero & ~np.r_[zero[1:], False]]
    br = np.unique(np.concatenate([[lo], roots, *edges, [hi]]))
    return float(sum(abs(res.integral(br[k], br[k + 1])) for k in range(br.size - 1)))


def exact_smece_logit(f, y, weights=None):
    g = lambda s: exact_smece_sigma_logit(f, y, s, weights) - s
    if g(1.0) >= 0:
        return 1.0
    lo = 1e-3
    while g(lo) < 0:
        lo /= 4
    return brentq(g, lo, 1.0, xtol=1e-12)
