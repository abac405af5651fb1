"""The smoothed reliability diagram, bootstrap intervals and the consistency test.

All numerical work is one or two calls into the core: the diagram's curves
(one pass over the rows) and the replicates (one more pass to build the cell
histogram, then work independent of n on a thread pool).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional, Union

import numpy as np

from . import _core, _validate

#: Mesh of the returned curves: 2^9 intervals (fewer when σ is large).
MESH_INTERVALS = 512


def _seed(seed: Optional[int]) -> int:
    """An explicit seed, or fresh entropy that the result records."""
    if seed is None:
        return int(np.random.SeedSequence().entropy % (1 << 63))
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0:
        raise TypeError(f"seed must be a non-negative int or None, got {seed!r}")
    return int(seed) % (1 << 64)


def _level(level: float) -> float:
    value = _validate.real(level, "level", "a number in (0, 1)")
    if not 0.0 < value < 1.0:
        raise ValueError(f"level must be in (0, 1), got {level!r}")
    return value


_count = _validate.count


def _quantiles(values: np.ndarray, level: float):
    """Equal-tailed percentile interval over axis 0 (NaN-aware for curves)."""
    alpha = 1.0 - level
    if values.ndim == 1:
        return tuple(float(q) for q in np.quantile(values, [alpha / 2, 1 - alpha / 2]))
    with np.errstate(invalid="ignore"):
        lo, hi = np.nanquantile(values, [alpha / 2, 1 - alpha / 2], axis=0) if np.isnan(values).any() else np.quantile(
            values, [alpha / 2, 1 - alpha / 2], axis=0
        )
    return lo, hi


class _Rows:
    """Validated rows and the settings every core call repeats."""

    def __init__(self, f, y, weights, clip, threads):
        self.f, self.y, self.w = _validate.rows(f, y, weights)
        self.clip = clip
        self.lo, self.hi = _validate.clip_range(clip)
        self.threads = _validate.threads(threads)

    def curves(self, sigma: Optional[float]) -> dict:
        s = -1.0 if sigma is None else _validate.sigma(sigma)
        return _core.diagram(self.f, self.y, self.w, self.lo, self.hi, self.threads, s, MESH_INTERVALS)

    def replicates(self, kind: str, n: int, seed: int, band_sigma: float):
        return _core.resample(self.f, self.y, self.w, self.lo, self.hi, self.threads, kind, n, seed, band_sigma,
                              MESH_INTERVALS)

    def sample(self, size: int, seed: int):
        """A reproducible sample of (f, y) rows for tick marks (clamped like the scores)."""
        n = self.f.shape[0]
        idx = np.sort(np.random.default_rng(seed).integers(0, n, size=min(size, n)))
        return np.clip(self.f[idx].astype(np.float64), 0.0, 1.0), self.y[idx].astype(np.float64)


class _SketchSource:
    """The same operations as _Rows, answered from a sketch alone."""

    def __init__(self, core_sketch, threads):
        self.sketch = core_sketch
        self.threads = _validate.threads(threads)

    def curves(self, sigma: Optional[float]) -> dict:
        s = -1.0 if sigma is None else _validate.sigma(sigma)
        return self.sketch.diagram(s, MESH_INTERVALS)

    def replicates(self, kind: str, n: int, seed: int, band_sigma: float):
        return self.sketch.resample(kind, n, seed, band_sigma, MESH_INTERVALS, self.threads)

    def sample(self, size: int, seed: int):
        return self.sketch.sample(size, seed)


def _frozen(a: Optional[np.ndarray]) -> Optional[np.ndarray]:
    if a is not None:
        a = np.asarray(a)
        a.flags.writeable = False
    return a


@dataclass(frozen=True, repr=False)
class BootstrapResult:
    """The SmoothECE with a bootstrap percentile interval."""

    value: float  #: SmoothECE σ* (or smECEσ at a fixed ``sigma``)
    sigma: float  #: bandwidth: σ*, or the fixed σ
    low: float  #: lower end of the ``level`` interval
    high: float  #: upper end
    level: float
    n_boot: int
    seed: int  #: the seed used (pass it back to reproduce the numbers)
    replicates: np.ndarray = field(repr=False)  #: the replicate values

    def __repr__(self) -> str:
        return (f"BootstrapResult(value={self.value:.6g}, {self.level:.0%} interval=[{self.low:.6g}, {self.high:.6g}], "
                f"sigma={self.sigma:.6g}, n_boot={self.n_boot}, seed={self.seed})")


@dataclass(frozen=True, repr=False)
class CalibrationTest:
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


@dataclass(frozen=True, repr=False)
class ReliabilityDiagram:
    """The smoothed reliability diagram (Błasiok & Nakkiran 2024, Section 4) of one model.

    Curves live on ``mesh`` (t ∈ [0, 1]). ``mu`` is the Nadaraya–Watson
    estimate of E[y | f = t] at bandwidth ``sigma`` (NaN where there is no
    data within reach of the kernel); ``density`` is the smoothed density of
    the predictions; ``lower``/``upper`` the pointwise bootstrap band of
    ``mu`` (None when ``n_boot=0``); ``consistency_lower``/``upper`` where
    ``mu`` would lie if the model were calibrated (only with
    ``consistency=True``).
    """

    mesh: np.ndarray
    mu: np.ndarray
    density: np.ndarray
    density_positive: np.ndarray  #: density of f among rows with y = 1
    density_negative: np.ndarray  #: density of f among rows with y = 0
    lower: Optional[np.ndarray]
    upper: Optional[np.ndarray]
    smece: float  #: SmoothECE σ* (or smECEσ at a fixed ``sigma``)
    sigma: float  #: bandwidth of the curves
    smece_low: float  #: bootstrap interval of ``smece`` (NaN when n_boot = 0)
    smece_high: float
    smece_tilde: float  #: ∫ |μ̂(t) − t| δ̂(t) dt, the diagram's own integral (within 0.8σ of smece)
    level: float
    n_boot: int
    n: int
    total_weight: float
    sample_f: np.ndarray  #: a reproducible sample of predictions (for tick marks)
    sample_y: np.ndarray
    seed: int
    consistency_lower: Optional[np.ndarray] = None
    consistency_upper: Optional[np.ndarray] = None

    def __repr__(self) -> str:
        interval = "" if self.n_boot == 0 else f", {self.level:.0%} interval=[{self.smece_low:.4g}, {self.smece_high:.4g}]"
        return (f"ReliabilityDiagram(smece={self.smece:.6g}{interval}, sigma={self.sigma:.4g}, "
                f"smece_tilde={self.smece_tilde:.4g}, n={self.n}, total_weight={self.total_weight:.6g}, "
                f"mesh={self.mesh.size} points, n_boot={self.n_boot}, seed={self.seed})")

    def plot(self, ax=None, **style):
        """Draws the diagram on ``ax`` (a new figure if None) and returns ``ax``; see
        :func:`smoothece.plotting.plot_diagram` for the style options."""
        from .plotting import plot_diagram

        return plot_diagram(self, ax=ax, **style)


def reliability_diagram(
    f,
    y,
    *,
    weights=None,
    sigma: Optional[float] = None,
    n_boot: int = 1000,
    level: float = 0.95,
    seed: Optional[int] = None,
    consistency: bool = False,
    n_sim: int = 1000,
    sample_size: int = 1000,
    clip: Union[bool, float] = False,
    threads: Optional[int] = None,
) -> ReliabilityDiagram:
    """The smoothed reliability diagram at σ* with bootstrap uncertainty.

    Parameters
    ----------
    f, y, weights, clip, threads
        As in :func:`smoothece.smece`.
    sigma : float, optional
        Draw at this bandwidth instead of σ*; ``smece`` is then smECEσ.
    n_boot : int, default 1000
        Bootstrap replicates for the band and the interval (0 skips them).
        Replicates redraw the rows grouped by cell of a fine histogram (rows
        move by at most σ/32 within a cell), so their cost does not grow with n.
    level : float, default 0.95
        Coverage of the pointwise band and of the interval (percentile method).
    seed : int, optional
        Seed of all randomness; the same seed gives the same numbers on any
        thread count. None draws one, recorded in the result.
    consistency : bool, default False
        Also compute the consistency band (where μ̂ would lie under perfect
        calibration) from ``n_sim`` replicates with labels redrawn as
        y* ~ Bernoulli(f).
    sample_size : int, default 1000
        Rows kept (sampled reproducibly) for the tick marks of the plot.
    """
    return _make_diagram(_Rows(f, y, weights, clip, threads), sigma, n_boot, level, seed, consistency, n_sim,
                         sample_size)


def _make_diagram(rows, sigma, n_boot, level, seed, consistency, n_sim, sample_size) -> ReliabilityDiagram:
    n_boot = _count(n_boot, "n_boot", 0)
    level = _level(level)
    seed = _seed(seed)
    sample_size = _count(sample_size, "sample_size", 0)
    curves = rows.curves(sigma)
    fixed = sigma is not None
    sig = curves["sigma"]
    value = curves["smece_sigma"] if fixed else sig
    band_sigma = sig if sig > 0 else 1e-3
    lower = upper = None
    lo = hi = float("nan")
    if n_boot:
        star, at_sigma, mu = rows.replicates("bootstrap", n_boot, seed, band_sigma)
        lo, hi = _quantiles(at_sigma if fixed else star, level)
        lower, upper = _quantiles(mu, level)
    c_lower = c_upper = None
    if consistency:
        _, _, mu0 = rows.replicates("consistency", _count(n_sim, "n_sim", 1), seed ^ 0x5EED, band_sigma)
        c_lower, c_upper = _quantiles(mu0, level)
    sample_f, sample_y = rows.sample(sample_size, seed)
    return ReliabilityDiagram(
        mesh=_frozen(curves["mesh"]), mu=_frozen(curves["mu"]), density=_frozen(curves["density"]),
        density_positive=_frozen(curves["density_positive"]), density_negative=_frozen(curves["density_negative"]),
        lower=_frozen(lower), upper=_frozen(upper), smece=float(value), sigma=float(sig),
        smece_low=float(lo), smece_high=float(hi), smece_tilde=float(curves["smece_tilde"]), level=level,
        n_boot=n_boot, n=int(curves["count"]), total_weight=float(curves["total_weight"]),
        sample_f=_frozen(sample_f), sample_y=_frozen(sample_y), seed=seed,
        consistency_lower=_frozen(c_lower), consistency_upper=_frozen(c_upper),
    )


def bootstrap_smece(
    f,
    y,
    *,
    weights=None,
    n_boot: int = 1000,
    level: float = 0.95,
    seed: Optional[int] = None,
    sigma: Optional[float] = None,
    method: str = "cells",
    clip: Union[bool, float] = False,
    threads: Optional[int] = None,
) -> BootstrapResult:
    """The SmoothECE with a bootstrap percentile interval.

    ``method="cells"`` (default) redraws rows grouped by cell of a fine
    histogram, at a cost independent of n, on a thread pool. ``method="rows"``
    redraws the raw rows (O(n) per replicate); it exists to verify the cell
    method and is slow for large n. Other parameters as in
    :func:`reliability_diagram`.
    """
    return _make_bootstrap(_Rows(f, y, weights, clip, threads), n_boot, level, seed, sigma, method)


def _make_bootstrap(rows, n_boot, level, seed, sigma, method="cells") -> BootstrapResult:
    n_boot = _count(n_boot, "n_boot", 1)
    level = _level(level)
    seed = _seed(seed)
    curves_sigma = None if sigma is None else _validate.sigma(sigma)
    if method == "cells":
        curves = rows.curves(curves_sigma)
        value = curves["sigma"] if curves_sigma is None else curves["smece_sigma"]
        sig = curves["sigma"]
        star, at_sigma, _ = rows.replicates("bootstrap", n_boot, seed, sig if sig > 0 else 1e-3)
        reps = star if curves_sigma is None else at_sigma
    elif method == "rows" and isinstance(rows, _Rows):
        from ._api import smece, smece_sigma

        def score(idx):
            w = None if rows.w is None else rows.w[idx]
            kw = dict(weights=w, clip=rows.clip, threads=rows.threads or None)
            if curves_sigma is None:
                return smece(rows.f[idx], rows.y[idx], **kw)
            return smece_sigma(rows.f[idx], rows.y[idx], curves_sigma, **kw)

        n = rows.f.shape[0]
        value = score(slice(None))
        sig = value if curves_sigma is None else curves_sigma
        rng = np.random.default_rng(seed)
        reps = np.array([score(rng.integers(0, n, size=n)) for _ in range(n_boot)])
    else:
        raise ValueError(f"method must be 'cells' or 'rows' (rows needs the raw rows), got {method!r}")
    lo, hi = _quantiles(reps, level)
    return BootstrapResult(value=float(value), sigma=float(sig), low=lo, high=hi, level=level, n_boot=n_boot,
                           seed=seed, replicates=_frozen(reps))


def calibration_test(
    f,
    y,
    *,
    weights=None,
    n_sim: int = 1000,
    seed: Optional[int] = None,
    level: float = 0.95,
    clip: Union[bool, float] = False,
    threads: Optional[int] = None,
) -> CalibrationTest:
    """Tests the null hypothesis of perfect calibration, E[y | f] = f.

    The statistic is the SmoothECE σ*; its null distribution comes from
    ``n_sim`` consistency replicates, in which every label is redrawn as
    y* ~ Bernoulli(f) (Bröcker & Smith 2007; Dimitriadis, Gneiting & Jordan
    2021). Also returns the consistency band: pointwise ``level`` quantiles of
    μ̂ under the null at the observed σ*.
    """
    return _make_test(_Rows(f, y, weights, clip, threads), n_sim, seed, level)


def _make_test(rows, n_sim, seed, level) -> CalibrationTest:
    n_sim = _count(n_sim, "n_sim", 1)
    level = _level(level)
    seed = _seed(seed)
    curves = rows.curves(None)
    stat = curves["sigma"]
    null, _, mu0 = rows.replicates("consistency", n_sim, seed, stat if stat > 0 else 1e-3)
    lo, hi = _quantiles(mu0, level)
    qs = (0.5, 0.9, 0.95, 0.99)
    return CalibrationTest(
        statistic=float(stat), p_value=float((1 + np.count_nonzero(null >= stat)) / (1 + n_sim)),
        null_mean=float(null.mean()), null_quantiles={q: float(v) for q, v in zip(qs, np.quantile(null, qs))},
        n_sim=n_sim, seed=seed, sigma=float(stat), mesh=_frozen(curves["mesh"]), band_lower=_frozen(lo),
        band_upper=_frozen(hi), level=level, null=_frozen(null),
    )
