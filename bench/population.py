#!/usr/bin/env python
"""Population SmoothECE of a model by quadrature, independent of smoothece.

Model: f has density p on [0, 1] (Beta(2, 2), or uniform for `wiggle`), E[y | f = x] = μ(x). With g(x) = (μ(x) − x) p(x)
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

Usage: python bench/population.py [--quick] [--out DIR]   (both, for the models of coverage.py and size.py)

--quick replaces the quadrature by the grid evaluation on a coarse grid (501 t × 100 x; seconds, not
minutes): its values are good to ~1e-6, enough for a smoke run of coverage.py, not for quoting.
"""

from __future__ import annotations

import argparse
import math

import numpy as np

SQRT2PI = math.sqrt(2.0 * math.pi)


def beta22(x):
    return 6.0 * x * (1.0 - x)


def uniform(x):
    return np.ones_like(np.asarray(x, dtype=float))


def power(a):
    """μ(x) = x^a."""
    return lambda x: np.power(x, a)


def logit_slope(c):
    """μ(x) = expit(c · logit x) = x^c / (x^c + (1 − x)^c)."""
    def mu(x):
        a, b = np.power(x, c), np.power(1.0 - x, c)
        return a / (a + b)
    return mu


def wiggle(amplitude):
    """μ(x) = x + amplitude · sin(2πx): the reliability curve winds around the diagonal (crossing it at 1/2)."""
    return lambda x: x + amplitude * np.sin(2.0 * np.pi * x)


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
    from scipy.special import ndtr  # scipy only where the quadrature needs it: size.py and groups.py import MODELS

    x = np.asarray(x, float)[..., None]
    k2 = _images(sigma)
    tot = 0.0
    for c in (x + k2, -x + k2):
        tot = tot + (ndtr((b - c) / sigma) - ndtr((a - c) / sigma))
    return tot.sum(-1)


def _quad(fun, points=None):
    from scipy import integrate

    val, _ = integrate.quad(fun, 0.0, 1.0, epsabs=1e-14, epsrel=1e-12, limit=500,
                            points=None if points is None else [p for p in points if 0.0 < p < 1.0])
    return val


def smece_sigma_quad(mu, p, sigma):
    from scipy.optimize import brentq

    def g(x):
        return (mu(x) - x) * p(x)

    def r(t):
        return _quad(lambda x: kernel(t, x, sigma) * g(x), points=[t])

    m = max(40, int(math.ceil(20.0 / sigma)))
    ts = np.linspace(0.0, 1.0, m + 1)
    rs = np.array([r(t) for t in ts])
    roots = [ts[i] for i in np.nonzero(rs == 0.0)[0]]
    roots += [brentq(r, ts[i], ts[i + 1], xtol=1e-15) for i in np.nonzero(rs[:-1] * rs[1:] < 0)[0]]
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
    from scipy.optimize import brentq

    if smece_sigma(hi) - hi >= 0:
        return hi
    if smece_sigma(lo) - lo <= 0:
        raise ValueError(f"σ* below {lo}: lower the bracket")
    return brentq(lambda s: smece_sigma(s) - s, lo, hi, xtol=xtol)


MODELS = {
    "power1.5": ("f ~ Beta(2,2), E[y|f] = f^1.5 (over-confident, residual < 0 everywhere)", power(1.5)),
    "crossing": ("f ~ Beta(2,2), E[y|f] = expit(0.6·logit f) (over-confident, residual changes sign at 1/2)",
                 logit_slope(0.6)),
    "calibrated": ("f ~ Beta(2,2), E[y|f] = f", power(1.0)),
    "wiggle": ("f ~ U(0,1), E[y|f] = f + 0.05·sin(2πf) (the residual changes sign at 1/2)", wiggle(0.05)),
}

#: Models whose predictions are uniform on [0, 1]; the others' are Beta(2, 2).
UNIFORM = ("wiggle",)


def density(model):
    """The density of a model's predictions."""
    return uniform if model in UNIFORM else beta22


QUICK_GRID = {"nt": 501, "nx": 100}


def population_smece(model, quick=False):
    """Population SmoothECE of a model of MODELS by quadrature (the first method above); with ``quick``, by the
    grid evaluation on a coarse grid (QUICK_GRID: seconds instead of minutes, good to ~1e-6)."""
    _, mu = MODELS[model]
    if model == "calibrated":
        return 0.0  # g ≡ 0: r ≡ 0 for every σ
    if quick:
        return fixpoint(lambda s: smece_sigma_grid(mu, density(model), s, **QUICK_GRID), xtol=1e-10)
    return fixpoint(lambda s: smece_sigma_quad(mu, density(model), s)[0])


def population_smece_sigma(model, sigma, quick=False):
    """Population smECEσ of a model of MODELS at a fixed σ, by quadrature (the grid evaluation with ``quick``)."""
    _, mu = MODELS[model]
    if model == "calibrated":
        return 0.0
    if quick:
        return smece_sigma_grid(mu, density(model), sigma, **QUICK_GRID)
    return smece_sigma_quad(mu, density(model), sigma)[0]


def main(argv=None):
    """σ* by quadrature, checked with the grid method: g(σ) = smECEσ − σ has slope ≤ −1 (smECEσ is
    non-increasing), so any evaluation's fixpoint lies within |smECE_grid(σq) − σq| of σq."""
    import _record

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    _record.add_options(parser, "smoke run: the coarse grid instead of the quadrature, no checks (seconds)")
    args = parser.parse_args(argv)
    rec = _record.Record(__file__, args, argv, packages=("numpy", "scipy"))
    closed = 0.5 - 6.0 / (4.5 * 3.5)
    lines = [__doc__.split("\n\nUsage")[0].split("\n\n", 1)[1], "",
             f"power1.5 in closed form (residual of one sign, σ* = |E[μ(f) − f]|): 1/2 − 6/(4.5·3.5) = {closed:.12f}.",
             "", "| model | what | σ* | method | smECE at σ* − σ* | sign changes of r |", "|---|---|---|---|---|---|"]
    checks, rows = [], []
    for name in ("power1.5", "crossing", "wiggle"):
        what, mu = MODELS[name]
        s_q = population_smece(name, quick=args.quick)
        if args.quick:
            method, resid, roots = "grid {nt} t × {nx} x (quick)".format(**QUICK_GRID), None, None
        else:
            s_at, roots = smece_sigma_quad(mu, density(name), s_q)
            method, resid, roots = "quadrature", s_at - s_q, np.round(roots, 12).tolist()
        rows.append({"model": name, "what": what, "sigma_star": s_q, "method": method,
                     "smece_at_minus_sigma": resid, "sign_changes": roots})
        lines.append(f"| {name} | {what.replace('|', chr(92) + '|')} | **{s_q:.12f}** | {method} | "
                     f"{'–' if resid is None else f'{resid:.1e}'} | {'–' if roots is None else roots} |")
        print(f"{name}: σ* = {s_q:.12f} ({method})", flush=True)
        for nt, nx in (() if args.quick else ((4001, 500), (16001, 2000))):
            d = smece_sigma_grid(mu, density(name), s_q, nt=nt, nx=nx) - s_q
            checks.append({"model": name, "nt": nt, "nx": nx, "grid_minus_sigma": d})
            print(f"  grid ({nt} t × {nx} x): smECE(σq) − σq = {d:.1e}", flush=True)
    if checks:
        lines += ["", "Check by the grid evaluation at the quadrature's σ*: its own fixpoint lies within "
                  "|smECE_grid(σ*) − σ*| of σ* (g(σ) = smECEσ − σ has slope ≤ −1).", "",
                  "| model | grid (t × x Gauss–Legendre) | smECE_grid(σ*) − σ* |", "|---|---|---|"]
        lines += [f"| {c['model']} | {c['nt']} × {c['nx']} | {c['grid_minus_sigma']:.1e} |" for c in checks]
    rec.write("Population SmoothECE of the study models", lines,
              {"closed_form_power1.5": closed, "models": rows, "grid_checks": checks,
               "quick_grid": QUICK_GRID if args.quick else None})


if __name__ == "__main__":
    main()
