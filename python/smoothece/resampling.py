"""Uncertainty of the SmoothECE: bootstrap intervals and the test of perfect calibration.

Both come from replicates that the core draws from one summary of the rows
(the README's Architecture), on a thread pool, each from its own counter-based
random stream, so a seed gives the same numbers on every thread count and
platform.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional, Union

import numpy as np

from . import _core, _validate
from ._errors import InputError
from ._summary import counts_check, summarise
from ._typing import ArrayLike
from ._util import MESH_INTERVALS, ToDict, append_doc, bootstrap_interval, frozen, quantiles, refuse_bound

__all__ = ["BootstrapResult", "CalibrationTest", "bootstrap_smece", "calibration_test"]


@dataclass(frozen=True, repr=False)
class BootstrapResult(ToDict):
    """The SmoothECE with a bootstrap interval for the population value (see :func:`bootstrap_smece`)."""

    value: float  #: SmoothECE σ* (or smECEσ at a fixed ``sigma``)
    sigma: float  #: bandwidth: σ*, or the fixed σ
    low: float  #: lower end of the ``level`` interval (0 when the value is within the noise floor)
    high: float  #: upper end; ``low <= value <= high`` always
    level: float
    n_boot: int
    seed: int  #: the seed used (pass it back to reproduce the numbers)
    replicates: np.ndarray = field(repr=False)  #: the replicate values

    def __repr__(self) -> str:
        return (f"BootstrapResult(value={self.value:.6g}, {self.level:.0%} interval=[{self.low:.6g}, {self.high:.6g}], "
                f"sigma={self.sigma:.6g}, n_boot={self.n_boot}, seed={self.seed})")


@dataclass(frozen=True, repr=False)
class CalibrationTest(ToDict):
    """Test of perfect calibration by consistency resampling (labels redrawn as y* ~ Bernoulli(f))."""

    statistic: float  #: observed SmoothECE σ*
    p_value: float  #: (1 + #{null ≥ statistic}) / (1 + n_sim)
    null_mean: float
    null_quantiles: dict  #: quantiles 0.5, 0.9, 0.95, 0.99 of the null distribution
    n_sim: int
    seed: int
    sigma: float  #: bandwidth of the consistency band (the observed σ*)
    mesh: np.ndarray = field(repr=False)
    band_lower: np.ndarray = field(repr=False)  #: where μ̂ lies under calibration, pointwise
    band_upper: np.ndarray = field(repr=False)
    level: float = 0.95
    null: np.ndarray = field(repr=False, default=None)  #: the simulated null statistics

    def __repr__(self) -> str:
        q = ", ".join(f"{k}: {v:.4g}" for k, v in self.null_quantiles.items())
        return (f"CalibrationTest(statistic={self.statistic:.6g}, p_value={self.p_value:.4g}, "
                f"null quantiles {{{q}}}, n_sim={self.n_sim}, seed={self.seed})")


_WEIGHTS_DOC = """
    Weights in resampling
    ---------------------
    Replicates give every row an Exponential(1) multiplier (the Bayesian
    bootstrap of Rubin 1981, which has the mean and variance of redrawing
    rows with replacement). They are drawn per cell of a fine histogram of
    the predictions, not per row, so their cost grows with neither n nor
    1/σ*: a cell's n rows of equal weight get exactly a Gamma(n) total; with
    unequal weights, the Gamma with the cell's mean Σw and variance Σw²
    (rows move by less than half the smallest σ the grid resolves). Zero-
    weight rows carry nothing. ``weight_kind`` says what a weight means:

    - ``"importance"`` (default): a row is one sampled unit and its weight
      its influence (survey, inverse-propensity or importance weights); the
      spread of the weights counts, and the results are invariant to scaling
      all weights by any positive factor.
    - ``"frequency"``: a weight counts rows (weight 3 = three identical
      rows); a row of weight w resamples like w rows.

    Left out, ``weight_kind`` is ``"importance"``, with a
    :class:`~smoothece.WeightKindWarning` when the weights are whole numbers
    and some exceed 1: counts read as importance weights give a calibration
    test that almost never rejects and intervals too wide (on calibrated
    rows collapsed into counts: size 0.0% at the 5% level and intervals 2.2
    times as wide, against 2.7% and 1.0 as frequency weights;
    ``bench/weight_kind.py``). Passing either kind silences it; unit and
    {0, 1} weights mean the same under both.
"""


def bootstrap_smece(
    f: ArrayLike,
    y: ArrayLike,
    *,
    weights: Optional[ArrayLike] = None,
    metric: str = "l1",
    n_boot: int = 1000,
    level: float = 0.95,
    seed: Optional[int] = None,
    sigma: Optional[float] = None,
    method: str = "cells",
    weight_kind: Optional[str] = None,
    clip: Union[bool, float] = False,
    threads: Optional[int] = None,
) -> BootstrapResult:
    """The SmoothECE with a bootstrap interval for the population SmoothECE.

    ``value`` is the SmoothECE of the rows (:func:`smoothece.smece`'s, to
    rounding). The interval comes from ``n_boot`` replicates of it: the
    smallest interval symmetric about ``value`` on the squared scale that
    holds the replicates' equal-tailed ``level`` percentile interval
    [q₋, q₊], which is usually [√max(0, 2·value² − q₊²), q₊]. It always
    holds ``value``. Noise adds to the SmoothECE, so the estimate is biased
    upward and its replicates are biased upward again: the percentile
    interval alone sits above the population SmoothECE (even wholly above
    ``value``) where the population value is small next to the noise or the
    sample is small. Reflecting q₊ about ``value`` on the squared scale
    (noise adds roughly in quadrature) removes that bias. bench/coverage.py
    measures the 95% interval covering the population SmoothECE in 96–100%
    of data sets of n ≥ 500 rows on reliability curves of one sign,
    crossing the diagonal and winding around it, with and without
    lognormal weights (docs/statistics.md). Far above the noise floor the
    interval is about the percentile one; near it, wider and conservative.
    Every interval of a SmoothECE in the library (diagrams, sketches,
    groups, fixed ``sigma``) follows this rule.

    For a calibrated model the population SmoothECE is 0 and the estimate
    sits at its noise floor: ``low`` is then 0 (in 88–99% of the calibrated
    data sets of bench/coverage.py), and the interval reads as an upper
    bound on the miscalibration. Whether the model is calibrated is
    the question of :func:`calibration_test`, not of this interval.

    Parameters
    ----------
    f, y, weights, metric, clip, threads
        As in :func:`smoothece.smece`.
    n_boot : int, default 1000
        Replicates.
    level : float, default 0.95
        Nominal coverage of the interval (its percentiles are the
        replicates' (1 − level)/2 and (1 + level)/2 quantiles).
    seed : int, optional
        Seed (64 bits); None draws one, recorded in the result.
    sigma : float, optional
        Bootstrap smECEσ at this fixed bandwidth instead of σ*.
    method : {"cells", "rows"}, default "cells"
        "cells": the replicates described below, from one summary of the
        rows, on a thread pool. "rows": redraws the raw rows with replacement
        and recomputes from scratch (O(n) per replicate, a Python loop over
        replicates); it exists to verify the cell method.
    weight_kind : {"importance", "frequency"}, optional
        What the weights mean to resampling (below); left out, importance
        weights, with a warning when they look like counts.
    """
    # The scalar arguments first: a bad one is refused before the pass over the rows.
    n_boot = _validate.count(n_boot, "n_boot", 1)
    fixed = None if sigma is None else _validate.sigma(sigma, metric)
    level, seed = _validate.level(level), _validate.seed(seed)
    weight_kind = None if weight_kind is None else _validate.weight_kind(weight_kind)  # None: asked later
    _validate.threads(threads)
    if method == "rows":
        _validate.rows(f, y, weights)  # bad rows before what they would mean
        if _validate.weight_kind(weight_kind, counts_check(weights)) == "frequency" and weights is not None:
            raise InputError("method='rows' redraws rows with their weights (importance weights); frequency weights "
                             "need method='cells'", "method")
        return _bootstrap_rows(f, y, weights, metric, n_boot, level, seed, fixed, clip, threads)
    if method != "cells":
        raise InputError(f"method must be 'cells' or 'rows', got {method!r}", "method")
    finest_fixed_sigma(fixed, metric, "method='rows' resamples the rows themselves at any sigma")
    analysis = summarise(f, y, weights, clip=clip, metric=metric, threads=threads, full=True, sigma=fixed or 0.0)
    return make_bootstrap(analysis, n_boot=n_boot, level=level, seed=seed, sigma=fixed, weight_kind=weight_kind,
                          threads=threads, counts=counts_check(weights))


def finest_fixed_sigma(sigma: Optional[float], metric: str, remedy: str) -> None:
    """InputError before the pass when the replicates of arrays at a fixed ``sigma`` would
    not resolve it: below this limit the core answers σ from the rows' atoms, which
    resampling does not draw from (a replicate there would be read at a coarser σ)."""
    if sigma is not None and sigma < _core.finest_fixed_sigma(metric):
        raise InputError(f"sigma={sigma:.3g} lies below {_core.finest_fixed_sigma(metric):.3g}, the smallest "
                         f"bandwidth whose bootstrap replicates are resolved; {remedy}", "sigma")


append_doc(bootstrap_smece, _WEIGHTS_DOC)


def make_bootstrap(analysis, *, n_boot, level, seed, sigma, weight_kind, threads, counts=None) -> BootstrapResult:
    """The bootstrap of a core analysis (of arrays or of a sketch); ``counts``
    as in :func:`_validate.weight_kind`. The core computes the answer
    (answers/uncertainty.hpp); a σ* known only as a bound raises ResolutionError."""
    n_boot = _validate.count(n_boot, "n_boot", 1)
    level = _validate.level(level)
    seed = _validate.seed(seed)
    kind = _validate.weight_kind(weight_kind, counts)
    t = _validate.threads(threads)
    if sigma is None:
        refuse_bound(analysis, t, "A bootstrap interval")
    answer = analysis.bootstrap(0.0 if sigma is None else sigma, n_boot, seed, level, kind, t, 0)
    return BootstrapResult(value=float(answer["value"]), sigma=float(answer["sigma"]), low=float(answer["low"]),
                           high=float(answer["high"]), level=level, n_boot=n_boot, seed=seed,
                           replicates=frozen(answer["replicates"]))


def _bootstrap_rows(f, y, weights, metric, n_boot, level, seed, sigma, clip, threads) -> BootstrapResult:
    """The classical bootstrap on raw rows: each replicate a fresh pass."""
    from ._api import smece, smece_sigma

    f, y, w = _validate.rows(f, y, weights)
    kw = dict(metric=metric, clip=clip, threads=threads)

    def score(idx):
        ww = None if w is None else w[idx]
        if sigma is None:
            return smece(f[idx], y[idx], weights=ww, **kw)
        return smece_sigma(f[idx], y[idx], sigma, weights=ww, **kw)

    value = score(slice(None))
    # Zero-weight rows are not rows: draws come from the others (a draw of
    # zero-weight rows alone had no statistic, and failed).
    rows = np.arange(f.shape[0]) if w is None else np.flatnonzero(w > 0)
    rng = np.random.default_rng(seed)
    reps = np.array([score(rows[rng.integers(0, rows.size, size=rows.size)]) for _ in range(n_boot)])
    lo, hi = bootstrap_interval(value, reps, level, nonnegative=True)
    return BootstrapResult(value=float(value), sigma=float(value if sigma is None else sigma), low=lo, high=hi,
                           level=level, n_boot=n_boot, seed=seed, replicates=frozen(reps))


def calibration_test(
    f: ArrayLike,
    y: ArrayLike,
    *,
    weights: Optional[ArrayLike] = None,
    metric: str = "l1",
    n_sim: int = 1000,
    seed: Optional[int] = None,
    level: float = 0.95,
    weight_kind: Optional[str] = None,
    clip: Union[bool, float] = False,
    threads: Optional[int] = None,
) -> CalibrationTest:
    """Tests the null hypothesis of perfect calibration, E[y | f] = f.

    The statistic is the SmoothECE σ*; its null distribution comes from
    ``n_sim`` consistency replicates, in which every label is redrawn as
    y* ~ Bernoulli(f) (Bröcker & Smith 2007; Dimitriadis, Gneiting & Jordan
    2021). Also returns the consistency band: pointwise ``level`` quantiles of
    μ̂ under the null at the observed σ*.

    Replicates redraw a cell's labels at once: its count of positives is
    Binomial(rows, f̄) when its weights are equal (frequency weights count
    rows), else its positive weight is the scaled Beta with the mean f̄Σw and
    variance f̄(1 − f̄)Σw² of Σ wᵢ·Bernoulli(f̄) (importance weights). Other
    parameters as in :func:`bootstrap_smece`.
    """
    # The scalar arguments first: a bad one is refused before the pass over the rows.
    n_sim, seed, level = _validate.count(n_sim, "n_sim", 1), _validate.seed(seed), _validate.level(level)
    weight_kind = None if weight_kind is None else _validate.weight_kind(weight_kind)  # None: asked later
    _validate.threads(threads)
    analysis = summarise(f, y, weights, clip=clip, metric=metric, threads=threads, full=True)
    return make_test(analysis, n_sim=n_sim, seed=seed, level=level, weight_kind=weight_kind, threads=threads,
                     counts=counts_check(weights))


def make_test(analysis, *, n_sim, seed, level, weight_kind, threads, counts=None) -> CalibrationTest:
    """The calibration test of a core analysis (of arrays or of a sketch); ``counts``
    as in :func:`_validate.weight_kind`. The core computes the answer
    (answers/uncertainty.hpp); a σ* known only as a bound raises ResolutionError."""
    n_sim = _validate.count(n_sim, "n_sim", 1)
    level = _validate.level(level)
    seed = _validate.seed(seed)
    kind = _validate.weight_kind(weight_kind, counts)
    t = _validate.threads(threads)
    refuse_bound(analysis, t, "A calibration test")
    answer = analysis.test(n_sim, seed, level, kind, t, MESH_INTERVALS, 0.0)
    stat, null = answer["statistic"], answer["null"]
    band = answer["band_lower"]
    # The band's mesh: the points t_k = k/m at which the diagram's curves at
    # the statistic are read (m = MESH_INTERVALS, fewer for l1 where a coarse
    # grid resolves σ*), k/m correctly rounded as the core divides. Known from
    # the band's size, without drawing the curves (on the logit grid, as long
    # as the rest of the test).
    mesh = np.arange(band.size) / (band.size - 1) if band is not None and band.size > 1 else \
        analysis.curves(-1.0, MESH_INTERVALS, t)["mesh"]
    qs = (0.5, 0.9, 0.95, 0.99)
    return CalibrationTest(
        statistic=float(stat), p_value=float(answer["p_value"]),
        null_mean=float(null.mean()), null_quantiles={q: float(v) for q, v in zip(qs, quantiles(null, qs))},
        n_sim=n_sim, seed=seed, sigma=float(stat), mesh=frozen(mesh), band_lower=frozen(answer["band_lower"]),
        band_upper=frozen(answer["band_upper"]), level=level, null=frozen(null),
    )
