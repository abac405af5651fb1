#!/usr/bin/env python
"""Population SmoothECE of a model by quadrature, independent of smoothece.

Model: f has density p on [0, 1], E[y | f = x] = μ(x). With g(x) = (μ(x) − x) p(x)
and the reflected Gaussian kernel K̃σ of the README,

    r(t)   = ∫₀¹ K̃σ(t, x) g(x) dx,        smECEσ = ∫₀¹ |r(t)| dt,

and the population SmoothECE is the fixpoint σ* = smECE_{σ*}.

Two independent evaluations of smECEσ:

* ``smece_sigma_quad``: scan r on a grid (spacing σ/20, every value by
  adaptive quadrature), refine every sign change with brentq, and on each
  sign-constant segment [a, b] integrate exactly in t: ∫_a^b r dt =
  ∫₀¹ g(x) Σ_k [Φ((b−c)/σ) − Φ((a−c)/σ)] dx over the image centres
  c = ±x + 2k, one adaptive quadrature in x per segment.
* ``smece_sigma_grid``: r on a uniform t grid from a Gauss–Legendre rule in x,
  |r| integrated by the trapezoid rule with the crossings located by linear
  interpolation (a plain discretisation; its error falls as the grid grows).

Usage: python bench/population.py   (prints both for the models of coverage.py and size.py)
"""

from __future__ import annotations

import math

import numpy as np
from scipy import integrate, optimize, special

SQRT2PI = math.sqrt(2.0 * math.pi)


def beta22(x):
    return 6.0 * x * (1.0 - x)


def power(a):
    """μ(x) = x^a."""
    return lambda x: np.power(x, a)


def logit_slope(c):
    """μ(x) = expit(c · logit x) = x^c / (x^c + (1 − x)^c)."""
    def mu(x):
        a, b = np.power(x, c), np.power(1.0 - x, c)
        return a / (a + b)
    return mu


def _images(sigma):
    k = int(math.ceil((12.0 * sigma + 1.0) / 2.0)) + 1
    return 2.0 * np.arange(-k, k + 1)


def kernel(t, x, sigma):
    """K̃σ(t, x) (broadcasting), images within 12σ+2 of [0, 1] kept (the rest is < 1e-31)."""
    t, x = np.asarray(t, float)[..., None], np.asarray(x, float)[..., None]
    k2 = _images(sigma)
    z1, z2 = (t - x - k2) / sigma, (t + x - k2) / sigma
    return (np.exp(-0.5 * z1 * z1) + np.exp(-0.5 * z2 * z2)).sum(-1) / (SQRT2PI * sigma)


def kernel_mass(a, b, x, sigma):
    """∫_a^b K̃σ(t, x) dt in closed form."""
    x = np.asarray(x, float)[..., None]
    k2 = _images(sigma)
    tot = 0.0
    for c in (x + k2, -x + k2):
        tot = tot + (special.ndtr((b - c) / sigma) - special.ndtr((a - c) / sigma))
    return tot.sum(-1)


def _quad(fun, points=None):
    val, _ = integrate.quad(fun, 0.0, 1.0, epsabs=1e-14, epsrel=1e-12, limit=500,
                            points=None if points is None else [p for p in points if 0.0 < p < 1.0])
    return val


def smece_sigma_quad(mu, p, sigma):
    g = lambda x: (mu(x) - x) * p(x)
    r = lambda t: _quad(lambda x: kernel(t, x, sigma) * g(x), points=[t])
    m = max(40, int(math.ceil(20.0 / sigma)))
    ts = np.linspace(0.0, 1.0, m + 1)
    rs = np.array([r(t) for t in ts])
    roots = [ts[i] for i in np.nonzero(rs == 0.0)[0]]
    roots += [optimize.brentq(r, ts[i], ts[i + 1], xtol=1e-15) for i in np.nonzero(rs[:-1] * rs[1:] < 0)[0]]
    br = np.unique(np.clip([0.0, 1.0, *roots], 0.0, 1.0))
    return sum(abs(_quad(lambda x: kernel_mass(a, b, x, sigma) * g(x), points=[a, b]))
               for a, b in zip(br[:-1], br[1:])), br[1:-1]


def smece_sigma_grid(mu, p, sigma, nt=20001, nx=4000):
    xs, wx = np.polynomial.legendre.leggauss(nx)
    xs, wx = 0.5 * (xs + 1.0), 0.5 * wx
    gw = (mu(xs) - xs) * p(xs) * wx
    ts = np.linspace(0.0, 1.0, nt)
    r = np.concatenate([kernel(ts[i:i + 500, None], xs[None, :], sigma) @ gw for i in range(0, nt, 500)])
    h = ts[1] - ts[0]
    a, b = r[:-1], r[1:]
    same = a * b >= 0
    # trapezoid on sign-constant intervals; where r crosses, two triangles split at the linear root
    cross = np.abs(np.where(same, 0.0, (a * a + b * b) / (np.abs(a) + np.abs(b) + 1e-300))) * h / 2
    return float(np.sum(np.where(same, np.abs(a + b) * h / 2, cross)))


def fixpoint(smece_sigma, lo=0.02, hi=1.0, xtol=1e-12):
    """σ* with smECEσ* = σ*, bracketed in [lo, hi]; 0 when smECEσ is 0 (a calibrated model)."""
    if smece_sigma(hi) - hi >= 0:
        return hi
    if smece_sigma(lo) - lo <= 0:
        raise ValueError(f"σ* below {lo}: lower the bracket")
    return optimize.brentq(lambda s: smece_sigma(s) - s, lo, hi, xtol=xtol)


MODELS = {
    "power1.5": ("f ~ Beta(2,2), E[y|f] = f^1.5 (over-confident, residual < 0 everywhere)", power(1.5)),
    "crossing": ("f ~ Beta(2,2), E[y|f] = expit(0.6·logit f) (over-confident, residual changes sign at 1/2)",
                 logit_slope(0.6)),
    "calibrated": ("f ~ Beta(2,2), E[y|f] = f", power(1.0)),
}


def population_smece(model):
    """Population SmoothECE of a model of MODELS by quadrature (the first method above)."""
    _, mu = MODELS[model]
    if model == "calibrated":
        return 0.0  # g ≡ 0: r ≡ 0 for every σ
    return fixpoint(lambda s: smece_sigma_quad(mu, beta22, s)[0])


def main():
    """Prints σ* by quadrature and checks it with the grid method: g(σ) = smECEσ − σ has slope ≤ −1
    (smECEσ is non-increasing), so any evaluation's fixpoint lies within |smECE_grid(σq) − σq| of σq."""
    print("power1.5 closed form (residual of one sign, σ* = |E[μ(f) − f]|): 1/2 − 6/(4.5·3.5) = "
          f"{0.5 - 6.0 / (4.5 * 3.5):.12f}")
    for name in ("power1.5", "crossing"):
        what, mu = MODELS[name]
        s_q = population_smece(name)
        s_at, roots = smece_sigma_quad(mu, beta22, s_q)
        print(f"{name}: {what}\n  quadrature: σ* = {s_q:.12f}; smECE at it − σ* = {s_at - s_q:.1e}; "
              f"sign changes of r at {np.round(roots, 12).tolist()}")
        for nt, nx in ((4001, 500), (16001, 2000)):
            d = smece_sigma_grid(mu, beta22, s_q, nt=nt, nx=nx) - s_q
            print(f"  grid ({nt} t × {nx} x Gauss–Legendre): smECE(σq) − σq = {d:.1e}, "
                  f"so its fixpoint is within {abs(d):.1e} of σq")


if __name__ == "__main__":
    main()
