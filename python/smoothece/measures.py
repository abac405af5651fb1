"""Companion calibration measures, for comparing the SmoothECE with what users already report.

Everything here is plain numpy (``np.bincount``, ``np.cumsum``, sorting,
``np.searchsorted``): no Python loop runs over the rows. Every function takes
the same input as :func:`smoothece.smece` (``f`` in [0, 1], ``y`` in {0, 1},
optional non-negative ``weights``, the ``clip`` opt-in) and refuses bad input
with the same messages.

- :func:`binned_calibration` — per-bin data (edges, counts, weights, means)
  for custom plots; :func:`binned_ece` — the binned ECE in the L1, L2 or max
  norm, with equal-width or equal-mass bins; :func:`binned_ece_upper` —
  binned ECE plus the bin width (relplot's ``binnedECEw``).
- :func:`debiased_ece` — the debiased L2 binned estimator of Kumar, Liang &
  Ma (NeurIPS 2019).
- :func:`brier_decomposition` — the Brier score and its Murphy decomposition,
  binned or with the smoothed regression μ̂ of the SmoothECE diagram.
- :func:`laplace_kernel_ce` — the Laplace-kernel calibration error, computed
  exactly in O(n log n).
- :func:`interval_ce_random` — relplot's randomized interval calibration
  error ``intCE_rand``, seeded and vectorized over trials.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Optional, Tuple, Union

import numpy as np

from . import _validate
from ._summary import checked_rows
from ._typing import ArrayLike
from ._util import ToDict, append_doc, filled_curve
from ._util import frozen as _frozen


__all__ = [
    "BinnedCalibration",
    "BrierDecomposition",
    "binned_calibration",
    "binned_ece",
    "binned_ece_upper",
    "debiased_ece",
    "brier_decomposition",
    "laplace_kernel_ce",
    "interval_ce_random",
]

_STRATEGIES = ("uniform", "quantile")
_NORMS = ("l1", "l2", "max")

#: Smallest bandwidth :func:`laplace_kernel_ce` accepts (see its docstring).
LAPLACE_MIN_BANDWIDTH = 1e-6
# Exponent range of one block of the exact Laplace sum: e^600 ≈ 4e260 and
# e^-600 stay normal doubles with room for sums of up to 1e40 terms.
_LAPLACE_BLOCK = 600.0


_count = _validate.count
_MAX_BINS = _validate.MAX_BINS
#: Smallest eps of interval_ce_random: its finest width then has ~2^17 bins a trial.
_MIN_INTERVAL_EPS = 1e-5
# interval_ce_random's chunk: bin edges searched at once (trials × bins), ~0.1 s of work at 10^6 rows.
_INTERVAL_CHUNK = 1 << 19
_choice = _validate.choice
_positive = _validate.positive
#: Checked rows (f, y, weights or None, total weight), typed for the numpy code below.
_rows: Callable[..., Tuple[np.ndarray, np.ndarray, Optional[np.ndarray], float]] = checked_rows


def _seed_required(seed: Any) -> int:
    if isinstance(seed, (bool, np.bool_)) or not isinstance(seed, (int, np.integer)):
        raise TypeError(f"seed must be a non-negative int, got {seed!r}")
    if seed < 0:
        raise ValueError(f"seed must be a non-negative int, got {seed!r}")
    return int(seed)


# --------------------------------------------------------------------------
# Binning
# --------------------------------------------------------------------------

def _wsum(idx: np.ndarray, values: Optional[np.ndarray], w: Optional[np.ndarray], n_bins: int) -> np.ndarray:
    """Per-bin Σ w·values (values None: Σ w) in float64."""
    if values is None:
        weights = w
    elif w is None:
        weights = values
    else:
        weights = w * values
    return np.bincount(idx, weights=weights, minlength=n_bins).astype(np.float64, copy=False)


class _Binned:
    """Rows assigned to bins (in their original order) and the sums per bin."""

    def __init__(self, f, y, w, total, n_bins, strategy):
        self.n_bins, self.strategy, self.total = n_bins, strategy, total
        if strategy == "uniform":
            # min(floor(f·n_bins), n_bins − 1) in float64; f = 1.0 falls in the last bin.
            idx = np.multiply(f, n_bins).astype(np.intp)
            np.minimum(idx, n_bins - 1, out=idx)
            self.edges = np.linspace(0.0, 1.0, n_bins + 1)
        else:
            thresholds, self.edges = _quantile_thresholds(f, w, total, n_bins)
            # Row i is in bin #{k : t_k ≤ f_i}: t_k is the smallest prediction in bins ≥ k.
            idx = np.searchsorted(thresholds, f, side="right")
        self.f, self.y, self.w, self.idx = f, y, w, idx
        self.count = np.bincount(idx, minlength=n_bins)
        self.weight = self.count.astype(np.float64) if w is None else _wsum(idx, None, w, n_bins)
        self.sum_f = _wsum(idx, f, w, n_bins)
        self.sum_y = _wsum(idx, y, w, n_bins)

    def means(self):
        filled = self.weight > 0
        with np.errstate(invalid="ignore", divide="ignore"):
            mean_f = np.where(filled, self.sum_f / self.weight, np.nan)
            mean_y = np.where(filled, self.sum_y / self.weight, np.nan)
        return mean_f, mean_y

    def ece(self, norm: str) -> float:
        return _ece_from_sums(self.weight, self.sum_f, self.sum_y, self.total, norm)


def _ece_from_sums(weight, sum_f, sum_y, total, norm) -> float:
    filled = weight > 0
    gap = np.abs(sum_y[filled] - sum_f[filled])  # W_b · |ȳ_b − f̄_b|
    if norm == "l1":
        return float(gap.sum() / total)
    if norm == "l2":  # in shares of the total weight: squares of 1e300 weights overflowed, of 1e-300 underflowed
        share_gap = gap / total
        return float(np.sqrt(np.sum(share_gap * share_gap / (weight[filled] / total))))
    return float(np.max(gap / weight[filled]))


def _quantile_thresholds(f: np.ndarray, w: Optional[np.ndarray], total: float, n_bins: int):
    """Equal-mass bins: each group of equal predictions goes, whole, to bin ⌊n_bins·m/W⌋ where m
    is the midpoint of its interval of cumulative weight (groups in increasing order of f).

    Returns the thresholds t_k (k = 1..n_bins−1), the smallest prediction in bins ≥ k (+inf when
    those bins are empty), and the edges: 0, then midway between the largest prediction below
    t_k and t_k (0 when none is below, 1 when none is above), then 1. Empty bins have zero width.
    Without weights only the values are sorted (np.sort, much faster than argsort).
    """
    if w is None:
        fs = np.sort(f)
        cum = np.arange(1, fs.shape[0] + 1, dtype=np.float64)
    else:
        order = np.argsort(f)  # ties may come in any order: groups are taken whole
        fs = f[order]
        cum = np.cumsum(w[order])
    n = fs.shape[0]
    last = np.empty(n, dtype=bool)  # last row of each group of equal predictions
    last[-1] = True
    np.not_equal(fs[1:], fs[:-1], out=last[:-1])
    last_row = np.flatnonzero(last)
    ends = cum[last_row]
    if w is not None:
        ends[-1] = total  # the same total the bins are scaled by
    starts = np.concatenate(([0.0], ends[:-1]))
    group_bin = np.minimum(((starts + ends) * (0.5 * n_bins / total)).astype(np.intp), n_bins - 1)
    first_row = np.concatenate(([0], last_row[:-1] + 1))
    groups = group_bin.shape[0]
    first_group = np.searchsorted(group_bin, np.arange(1, n_bins), side="left")  # first group in bins ≥ k
    has_above = first_group < groups
    at = first_row[np.minimum(first_group, groups - 1)]
    above = fs[at]
    below = fs[np.where(has_above, at, n) - 1]
    has_below = np.where(has_above, at > 0, True)
    thresholds = np.where(has_above, above, np.inf)
    inner = np.where(~has_below, 0.0, np.where(~has_above, 1.0, 0.5 * (below + above)))
    return thresholds, np.concatenate(([0.0], inner, [1.0]))


@dataclass(frozen=True, repr=False)
class BinnedCalibration(ToDict):
    """Per-bin calibration data of one model (for custom reliability plots).

    Arrays have one entry per bin. Bins with zero total weight are *empty*:
    their means are NaN (draw no bar) and the ECE skips them.
    """

    strategy: str  #: "uniform" (equal width) or "quantile" (equal mass)
    n_bins: int
    edges: np.ndarray  #: bin boundaries, length n_bins + 1 (zero-width for empty quantile bins)
    count: np.ndarray  #: rows per bin (int)
    weight: np.ndarray  #: Σ w per bin (= count without weights)
    mean_f: np.ndarray  #: weighted mean prediction per bin (NaN when empty)
    mean_y: np.ndarray  #: weighted mean outcome per bin (NaN when empty)
    n: int
    total_weight: float
    _sum_f: Optional[np.ndarray] = field(repr=False, compare=False, default=None)
    _sum_y: Optional[np.ndarray] = field(repr=False, compare=False, default=None)

    @property
    def gap(self) -> np.ndarray:
        """mean_y − mean_f per bin (NaN when empty); positive = under-confident."""
        return self.mean_y - self.mean_f

    @property
    def filled(self) -> np.ndarray:
        """True for bins with positive weight."""
        return self.weight > 0

    def ece(self, norm: str = "l1") -> float:
        """The binned ECE of these bins in ``norm`` ("l1", "l2" or "max"); see :func:`binned_ece`."""
        return _ece_from_sums(self.weight, self._sum_f, self._sum_y, self.total_weight, _choice(norm, "norm", _NORMS))

    def __repr__(self) -> str:
        return (f"BinnedCalibration(strategy={self.strategy!r}, n_bins={self.n_bins}, "
                f"filled={int(np.count_nonzero(self.filled))}, n={self.n}, total_weight={self.total_weight:.6g}, "
                f"ece_l1={self.ece('l1'):.6g})")


_BINS_DOC = """
    Bins
    ----
    ``strategy="uniform"``: equal-width bins; row i goes to bin
    ``min(floor(f_i · n_bins), n_bins − 1)`` (computed in float64), so bin b
    holds b/n_bins ≤ f < (b+1)/n_bins and f = 1.0 goes to the last bin (as in
    netcal and torchmetrics' stated definition; torchmetrics 1.9 actually puts
    f = 1.0 in an extra bin, its issue #3510).

    ``strategy="quantile"``: equal-mass bins. Taking the distinct values of f
    in increasing order, the group of rows at each value goes, whole, to bin
    ``min(floor(n_bins · m / W), n_bins − 1)``, where m is the midpoint of the
    group's interval of cumulative weight and W the total weight. Without
    ties and weights, bin sizes differ by at most one row. Ties never split,
    so a group heavier than W/n_bins leaves neighbouring bins empty. The bins
    depend only on the values and weights, never on row order. Cost: one sort
    of f (an argsort with weights).
"""


def binned_calibration(
    f: ArrayLike,
    y: ArrayLike,
    *,
    n_bins: int = 15,
    strategy: str = "uniform",
    weights: Optional[ArrayLike] = None,
    clip: Union[bool, float] = False,
) -> BinnedCalibration:
    """Per-bin data of the binned reliability diagram: edges, counts, weights, mean f, mean y.

    Parameters
    ----------
    f, y, weights, clip
        As in :func:`smoothece.smece`.
    n_bins : int, default 15
        Number of bins (1 to 2^24).
    strategy : {"uniform", "quantile"}, default "uniform"
        Equal-width or equal-mass bins (see Bins below).

    Returns
    -------
    BinnedCalibration
        ``edges`` (n_bins + 1), and per bin ``count``, ``weight``, ``mean_f``,
        ``mean_y`` (NaN for empty bins); ``.ece(norm)`` gives the binned ECE.
    """
    n_bins = _count(n_bins, "n_bins", 1, _MAX_BINS)
    strategy = _choice(strategy, "strategy", _STRATEGIES)
    f, y, w, total = _rows(f, y, weights, clip)
    b = _Binned(f, y, w, total, n_bins, strategy)
    mean_f, mean_y = b.means()
    return BinnedCalibration(
        strategy=strategy, n_bins=n_bins, edges=_frozen(b.edges), count=_frozen(b.count), weight=_frozen(b.weight),
        mean_f=_frozen(mean_f), mean_y=_frozen(mean_y), n=int(f.shape[0]), total_weight=total,
        _sum_f=_frozen(b.sum_f), _sum_y=_frozen(b.sum_y),
    )


append_doc(binned_calibration, _BINS_DOC)


def binned_ece(
    f: ArrayLike,
    y: ArrayLike,
    *,
    n_bins: int = 15,
    strategy: str = "uniform",
    norm: str = "l1",
    weights: Optional[ArrayLike] = None,
    clip: Union[bool, float] = False,
) -> float:
    """The binned expected calibration error.

    With bin weights W_b = Σ_{i∈b} w_i, means f̄_b and ȳ_b and W = Σ W_b:

    - ``norm="l1"``: Σ_b (W_b/W) |ȳ_b − f̄_b| (the usual ECE of Guo et al. 2017);
    - ``norm="l2"``: sqrt(Σ_b (W_b/W) (ȳ_b − f̄_b)²) (the plug-in L2 error;
      :func:`debiased_ece` removes its upward bias);
    - ``norm="max"``: max over non-empty bins of |ȳ_b − f̄_b| (the MCE).

    Parameters
    ----------
    f, y, weights, clip
        As in :func:`smoothece.smece`.
    n_bins : int, default 15
    strategy : {"uniform", "quantile"}, default "uniform"
    norm : {"l1", "l2", "max"}, default "l1"

    Returns
    -------
    float
        Accumulated in float64 whatever the input dtype. Per-bin data:
        :func:`binned_calibration`.

    Raises
    ------
    TypeError, ValueError
        Bad ``f``/``y``/``weights`` as in :func:`smoothece.smece`; ``n_bins``
        not an int ≥ 1; ``strategy`` or ``norm`` not one of the names above.
    """
    n_bins = _count(n_bins, "n_bins", 1, _MAX_BINS)
    strategy = _choice(strategy, "strategy", _STRATEGIES)
    norm = _choice(norm, "norm", _NORMS)
    f, y, w, total = _rows(f, y, weights, clip)
    return _Binned(f, y, w, total, n_bins, strategy).ece(norm)


append_doc(binned_ece, _BINS_DOC)


def binned_ece_upper(
    f: ArrayLike,
    y: ArrayLike,
    n_bins: int = 15,
    *,
    weights: Optional[ArrayLike] = None,
    clip: Union[bool, float] = False,
) -> float:
    """Binned ECE (L1, equal-width bins) plus the bin width 1/n_bins: relplot's ``binnedECEw``.

    Adding the width turns the binned ECE into an upper bound (up to a
    constant) of the distance to calibration, which the binned ECE alone is
    not (Błasiok, Gopalan, Hu & Nakkiran 2023); minimising it over n_bins is
    one way to choose the bin count. Arguments as in :func:`binned_ece`.
    """
    n_bins = _count(n_bins, "n_bins", 1, _MAX_BINS)
    f, y, w, total = _rows(f, y, weights, clip)
    return _Binned(f, y, w, total, n_bins, "uniform").ece("l1") + 1.0 / n_bins


def debiased_ece(
    f: ArrayLike,
    y: ArrayLike,
    *,
    n_bins: int = 15,
    strategy: str = "uniform",
    weights: Optional[ArrayLike] = None,
    squared: bool = False,
    clip: Union[bool, float] = False,
) -> float:
    """The debiased L2 binned calibration error of Kumar, Liang & Ma (NeurIPS 2019).

    The plug-in L2 error sqrt(Σ_b (n_b/n)(ȳ_b − f̄_b)²) is biased upward:
    E[(ȳ_b − f̄_b)²] = (p_b − f̄_b)² + Var(ȳ_b). Their estimator
    (``unbiased_l2_ce`` in the ``uncertainty-calibration`` package,
    ``get_calibration_error(..., p=2, debias=True)``) subtracts an unbiased
    estimate of the variance in each bin:

        E² = Σ_b (n_b/n) [(ȳ_b − f̄_b)² − ȳ_b(1 − ȳ_b)/(n_b − 1)],

    where bins with fewer than 2 rows contribute 0 (both terms), and returns
    sqrt(max(E², 0)). E² is unbiased for the squared binned error when
    P(y = 1 | f) is constant within each bin.

    With weights, n_b/n becomes W_b/W, means are weighted, and n_b in the
    variance term is the bin's effective sample size
    n_eff = (Σ w)²/Σ w² (Kish), which is unbiased for Var(ȳ_b) under fixed
    weights and invariant to rescaling them. Unit weights give exactly the
    unweighted estimator; integer weights are *not* the same as repeated rows
    here (only the variance term differs). Bins with fewer than 2 rows of
    positive weight contribute 0.

    Parameters
    ----------
    f, y, weights, clip
        As in :func:`smoothece.smece`.
    n_bins, strategy
        As in :func:`binned_ece`. Kumar et al. use equal-mass bins
        (``strategy="quantile"``); their package splits ties and bin sizes
        slightly differently, so only equal-width bins reproduce it to rounding.
    squared : bool, default False
        Return E² itself, unclipped (it can be negative): the unbiased
        quantity to average over data sets before taking a root.

    Returns
    -------
    float
    """
    n_bins = _count(n_bins, "n_bins", 1, _MAX_BINS)
    strategy = _choice(strategy, "strategy", _STRATEGIES)
    _validate.flag(squared, "squared")
    f, y, w, total = _rows(f, y, weights, clip)
    b = _Binned(f, y, w, total, n_bins, strategy)
    if w is None:
        positive = b.count
        n_eff = b.count.astype(np.float64)
    else:
        positive = np.bincount(b.idx, weights=(b.w > 0).astype(np.float64), minlength=n_bins)
        share = b.w / total  # Kish's n_eff in shares of the total: (Σw)²/Σw² overflowed at 1e300, underflowed at 1e-300
        share_sq = _wsum(b.idx, share, share, n_bins)
        bin_share = b.weight / total
        with np.errstate(invalid="ignore", divide="ignore"):
            n_eff = bin_share * bin_share / share_sq
    use = positive >= 2
    wb, mf, my, ne = b.weight[use], b.sum_f[use] / b.weight[use], b.sum_y[use] / b.weight[use], n_eff[use]
    value = float(np.sum(wb / total * ((my - mf) ** 2 - my * (1.0 - my) / (ne - 1.0))))
    if squared:
        return value
    return float(np.sqrt(max(value, 0.0)))


append_doc(debiased_ece, _BINS_DOC)


# --------------------------------------------------------------------------
# Brier score
# --------------------------------------------------------------------------

@dataclass(frozen=True, repr=False)
class BrierDecomposition(ToDict):
    """The Brier score and its Murphy (1973) decomposition.

    ``brier = reliability − resolution + uncertainty + remainder``, exactly
    (to rounding), with each term computed from its own formula. Binned,
    ``remainder`` is the within-bin term (Stephenson, Coelho & Jolliffe 2008)
    Σ w (f − f̄_b)²/W − 2 Σ w (f − f̄_b)(y − ȳ_b)/W; the three-term identity
    holds only when predictions are constant within each bin. Smoothed,
    ``remainder`` is 2 Σ w (f − ȳ)(μ̂(f) − y)/W (see
    :func:`brier_decomposition`).
    """

    brier: float  #: Σ w (f − y)² / W
    reliability: float  #: calibration term (lower is better)
    resolution: float  #: how far the recalibrated forecasts spread from the base rate (higher is better)
    uncertainty: float  #: ȳ(1 − ȳ), the Brier score of always predicting the base rate
    remainder: float  #: brier − (reliability − resolution + uncertainty), by its own formula
    method: str  #: "binned" or "smooth"
    n_bins: Optional[int]  #: bins (binned only)
    strategy: Optional[str]  #: binning strategy (binned only)
    sigma: Optional[float]  #: bandwidth of μ̂ (smooth only)
    base_rate: float  #: weighted mean of y
    n: int
    total_weight: float

    def __repr__(self) -> str:
        how = (f"n_bins={self.n_bins}, strategy={self.strategy!r}" if self.method == "binned"
               else f"sigma={self.sigma:.4g}")
        return (f"BrierDecomposition(brier={self.brier:.6g}, reliability={self.reliability:.6g}, "
                f"resolution={self.resolution:.6g}, uncertainty={self.uncertainty:.6g}, "
                f"remainder={self.remainder:.3g}, method={self.method!r}, {how}, n={self.n})")


def _wmean(values: np.ndarray, w: Optional[np.ndarray], total: float) -> float:
    return float(np.sum(values) / total if w is None else np.dot(w / total, values))  # shares: no underflow at 1e-300


def brier_decomposition(
    f: ArrayLike,
    y: ArrayLike,
    *,
    weights: Optional[ArrayLike] = None,
    n_bins: int = 15,
    strategy: str = "uniform",
    smooth: bool = False,
    clip: Union[bool, float] = False,
) -> BrierDecomposition:
    """The Brier score and its decomposition reliability − resolution + uncertainty.

    With ȳ the weighted base rate and g(f) an estimate of E[y | f]:
    reliability = Σ w (f − g(f))²/W, resolution = Σ w (g(f) − ȳ)²/W,
    uncertainty = ȳ(1 − ȳ).

    - ``smooth=False``: binned (Murphy 1973). g is the bin's mean outcome and
      f is replaced by the bin's mean prediction in the reliability term:
      reliability = Σ_b (W_b/W)(f̄_b − ȳ_b)² (the squared plug-in L2 ECE),
      resolution = Σ_b (W_b/W)(ȳ_b − ȳ)². The identity
      brier = reliability − resolution + uncertainty holds exactly only with
      the within-bin term, reported as ``remainder``.
    - ``smooth=True``: g = μ̂, the Nadaraya–Watson regression of the SmoothECE
      diagram at σ* (:func:`smoothece.reliability_diagram`), interpolated
      linearly at each f from its mesh (65 to 513 points, finer for smaller
      σ; stretches where μ̂ is undefined, far from any data, take the
      nearest defined value). ``n_bins`` and ``strategy`` are ignored.

      With g = μ̂ the identity is exact with
      ``remainder`` = 2 Σ w (f − ȳ)(g(f) − y)/W: expand (f − y)² around
      g(f) and ȳ, and Σ w (y − ȳ)²/W = ȳ(1 − ȳ) since y is 0 or 1. It is
      2·Cov_w(f, g − y) + 2(f̄ − ȳ)(ḡ − ȳ): zero when the regression's
      residuals y − g(f) neither correlate with f nor average away from 0,
      as a bin's mean outcome does within a bin of equal predictions. μ̂ is a
      kernel regression at σ*, so it is biased by its smoothing: to leading
      order in σ*, for predictions whose density vanishes at 0 and 1, the
      remainder is about −2σ*²·E[m′(f)] (m = E[y | f]), while the reliability
      term is itself of order σ*². So the two are of one size: on the
      README's under-confident model (f ~ Beta(2, 2), 10^6 rows, σ* = 0.0377)
      reliability = 1.42e-3 and remainder = −2.49e-3 (the population's
      Σ (f − m(f))² is 1.76e-3; binned: 1.77e-3 and −4.6e-4). Read the
      smoothed reliability term as a smoothed squared calibration error,
      not as one term of Murphy's three; use ``smooth=False`` for those.

    Parameters
    ----------
    f, y, weights, clip
        As in :func:`smoothece.smece`.
    n_bins, strategy
        Binning of the binned decomposition, as in :func:`binned_ece`.
    smooth : bool, default False

    Returns
    -------
    BrierDecomposition
    """
    n_bins = _count(n_bins, "n_bins", 1, _MAX_BINS)
    strategy = _choice(strategy, "strategy", _STRATEGIES)
    _validate.flag(smooth, "smooth")
    f, y, w, total = _rows(f, y, weights, clip)
    yf = y.astype(np.float64, copy=False)
    resid = f - yf
    brier = _wmean(resid * resid, w, total)
    base = _wmean(yf, w, total)
    uncertainty = base * (1.0 - base)
    n = int(f.shape[0])
    if smooth:
        from .diagram import reliability_diagram

        diag = reliability_diagram(f, y, weights=w, n_boot=0, seed=0, sample_size=0)
        g = np.clip(np.interp(f, diag.mesh, filled_curve(diag.mesh, diag.mu)), 0.0, 1.0)
        reliability = _wmean((f - g) ** 2, w, total)
        resolution = _wmean((g - base) ** 2, w, total)
        remainder = 2.0 * _wmean((f - base) * (g - yf), w, total)  # the identity's own term (docstring)
        return BrierDecomposition(brier, reliability, resolution, uncertainty, remainder, "smooth", None, None,
                                  float(diag.sigma), base, n, total)
    b = _Binned(f, yf, w, total, n_bins, strategy)
    filled = b.weight > 0
    wb = b.weight[filled]
    mf, my = b.sum_f[filled] / wb, b.sum_y[filled] / wb
    reliability = float(np.sum(wb * (mf - my) ** 2) / total)
    resolution = float(np.sum(wb * (my - base) ** 2) / total)
    mean_f, mean_y = b.means()
    df = b.f - np.nan_to_num(mean_f)[b.idx]
    dy = b.y - np.nan_to_num(mean_y)[b.idx]
    remainder = _wmean(df * (df - 2.0 * dy), b.w, total)
    return BrierDecomposition(brier, reliability, resolution, uncertainty, remainder, "binned", n_bins, strategy,
                              None, base, n, total)


# --------------------------------------------------------------------------
# Laplace kernel
# --------------------------------------------------------------------------

def _laplace_quadratic_form(fs: np.ndarray, a: np.ndarray, h: float) -> float:
    """Σ_ij a_i a_j exp(−|f_i − f_j|/h) for sorted ``fs``, exactly, in O(n) after the sort.

    With S_k = Σ_{j≤k} a_j exp(−(f_k − f_j)/h), the sum is 2 Σ_k a_k S_k − Σ_k a_k².
    Rows are cut into blocks of predictions spanning less than 600·h; inside a
    block with lower end c, S_k = exp(−(f_k − c)/h) [C + cumsum a_j exp((f_j − c)/h)],
    whose exponentials stay within e^±600 (normal doubles, no overflow), and
    C = Σ_{earlier rows} a_j exp(−(c − f_j)/h) carries the earlier blocks
    (all exponents ≤ 0 there). One numpy pass per non-empty block.
    """
    span = min(_LAPLACE_BLOCK * h, 2.0)  # predictions span at most 1: one block (and no inf·0 for h near 1e308)
    block = np.floor((fs - fs[0]) / span).astype(np.int64)
    bounds = np.flatnonzero(np.diff(block)) + 1
    starts = np.concatenate(([0], bounds)).tolist()
    ends = np.concatenate((bounds, [fs.shape[0]])).tolist()
    total = 0.0
    carry = 0.0  # Σ over the rows of earlier blocks of a_j exp(−(c − f_j)/h), c = this block's anchor
    prev = None  # (anchor, predictions, coefficients) of the previous block
    for s, e in zip(starts, ends):  # one pass per non-empty block: ≤ 1/(600 h) + 1
        fb, ab = fs[s:e], a[s:e]
        c = fs[0] + block[s] * span
        if prev is not None:
            c0, f0, a0 = prev
            carry = carry * np.exp(-(c - c0) / h) + float(np.dot(a0, np.exp(-(c - f0) / h)))
        x = (fb - c) / h
        total += 2.0 * float(np.dot(ab, np.exp(-x) * (carry + np.cumsum(ab * np.exp(x)))))
        prev = (c, fb, ab)
    return total - float(np.dot(a, a))


def laplace_kernel_ce(
    f: ArrayLike,
    y: ArrayLike,
    *,
    weights: Optional[ArrayLike] = None,
    bandwidth: float = 1.0,
    clip: Union[bool, float] = False,
) -> float:
    """The Laplace-kernel calibration error, computed exactly in O(n log n).

    With residuals r_i = f_i − y_i and the Laplace kernel k(u, v) = exp(−|u − v|/h),

        LKCE = sqrt( (1/h) Σ_ij w_i w_j r_i r_j k(f_i, f_j) / W² ),

    the square root of the (biased, V-statistic) squared kernel calibration
    error, MMCE-style (Kumar, Sarawagi & Jain 2018). This is the quantity
    that relplot 1.0.3's ``metrics.laplace_calibration_approx(f, y, theta=h)``
    estimates by Monte Carlo: it averages r_i r_j k(f_i, f_j)/h over 10·n
    random pairs (i, j) (at least 5000, with replacement, i = j allowed,
    never the last row, unseeded) and takes sqrt(|·|). The Laplace kernel is
    positive definite, so the quadratic form is ≥ 0; rounding below zero is
    clipped to 0. Its bandwidth default, 1, is relplot's; the error is a
    consistent calibration measure (Błasiok, Gopalan, Hu & Nakkiran 2023).

    The double sum is evaluated exactly (to rounding; terms below e^−600
    relative are not dropped but underflow) by sorting the predictions and
    running the first-order recurrence S_k = a_k + exp(−(f_k − f_{k−1})/h) S_{k−1}
    as cumulative sums in blocks of predictions spanning 600·h, rescaled per
    block so no exponential overflows for any bandwidth.

    Parameters
    ----------
    f, y, weights, clip
        As in :func:`smoothece.smece`.
    bandwidth : float, default 1.0
        h ≥ 1e-6. The cost is one sort plus one numpy pass per non-empty block
        of predictions spanning 600·h, i.e. at most 1/(600·h) + 1 passes
        (one for h ≥ 1/600); below 1e-6 that loop would grow long, while the
        kernel only links predictions within ~1e-4 of each other.

    Returns
    -------
    float
    """
    h = _positive(bandwidth, "bandwidth", minimum=LAPLACE_MIN_BANDWIDTH)
    f, y, w, total = _rows(f, y, weights, clip)
    order = np.argsort(f)  # the order among equal predictions does not matter
    fs = f[order]
    a = fs - y[order]
    if w is not None:
        a *= w[order]
    a /= total
    q = _laplace_quadratic_form(fs, a, h)
    return float(np.sqrt(max(q, 0.0) / h))


# --------------------------------------------------------------------------
# Randomized interval calibration error
# --------------------------------------------------------------------------

def interval_ce_random(
    f: ArrayLike,
    y: ArrayLike,
    *,
    seed: int,
    weights: Optional[ArrayLike] = None,
    eps: float = 0.001,
    trials: int = 100,
    clip: Union[bool, float] = False,
) -> float:
    """Randomized interval calibration error: relplot 1.0.3's ``metrics.intCE_rand``, seeded.

    For bin widths s = 1, 1/2, 1/4, ... while s > ``eps``: shift the bins by
    u ~ Uniform(0, s), put row i in bin floor((f_i + u)/s), and average over
    ``trials`` shifts the binned residual Σ_bins |Σ_{i∈bin} w_i (f_i − y_i)| / W;
    the result is the minimum over widths of (average + s). This upper-bounds
    (up to constants) the distance to calibration (Błasiok, Gopalan, Hu &
    Nakkiran 2023), like :func:`binned_ece_upper` but with random shifts.

    Row i is in a bin ≥ k when f_i ≥ k·s − u (the same as relplot's
    ``int((f + u)/s) >= k`` but for rounding at the exact bin edges). The
    trials of a width are evaluated together, from prefix sums of the sorted
    residuals, in chunks of at most 2^19 bin edges (4 MB each), so the cost
    is one sort plus O(trials/eps · log n) in time and O(n) in memory, and
    Ctrl-C stops it between chunks.

    Parameters
    ----------
    f, y, weights, clip
        As in :func:`smoothece.smece`.
    seed : int
        Required. The shifts are ``s_ℓ · U[ℓ, t]`` with
        ``U = np.random.default_rng(seed).random((levels, trials))``, level ℓ
        having width s_ℓ = 2^−ℓ.
    eps : float, default 0.001
        Smallest bin width is the last 2^−ℓ > eps; 1e-5 ≤ eps < 1.
    trials : int, default 100
        Random shifts per width.

    Returns
    -------
    float
    """
    seed = _seed_required(seed)
    eps = _positive(eps, "eps", minimum=_MIN_INTERVAL_EPS, below=1.0)
    trials = _count(trials, "trials", 1)
    f, y, w, total = _rows(f, y, weights, clip)
    order = np.argsort(f)
    fs = f[order]
    a = fs - y[order]
    if w is not None:
        a *= w[order]
    prefix = np.concatenate(([0.0], np.cumsum(a)))
    n = fs.shape[0]
    widths = []
    s = 1.0
    while s > eps:
        widths.append(s)
        s /= 2.0
    rng = np.random.default_rng(seed)
    best = np.inf
    for width in widths:  # ≤ 17 widths; each vectorized over a chunk of trials and the bins
        k = np.arange(1, int(np.floor((1.0 + width) / width)) + 2)
        chunk = max(1, _INTERVAL_CHUNK // k.size)
        binned = 0.0
        for start in range(0, trials, chunk):
            # The shifts in the order of U's row: drawn a chunk at a time, the same numbers.
            shift = width * rng.random(min(chunk, trials - start))
            pos = np.searchsorted(fs, k[None, :] * width - shift[:, None], side="left")
            ends = np.zeros((shift.size, 1), np.intp), np.full((shift.size, 1), n, np.intp)
            cut = np.concatenate((ends[0], pos, ends[1]), axis=1)
            binned += float(np.abs(np.diff(prefix[cut], axis=1)).sum()) / total
        best = min(best, binned / trials + width)
    return best
