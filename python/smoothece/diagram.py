"""The smoothed reliability diagram (Błasiok & Nakkiran 2024, Section 4).

One pass over the rows summarises them; the curves, the bootstrap band and
the consistency band are all answered from that summary by the core.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Optional, Union

import numpy as np

from . import _validate
from ._summary import counts_check, summarise
from ._typing import ArrayLike
from ._util import MESH_INTERVALS, ToDict, frozen, refuse_bound

if TYPE_CHECKING:
    from matplotlib.axes import Axes

__all__ = ["ReliabilityDiagram", "reliability_diagram"]


@dataclass(frozen=True, repr=False)
class ReliabilityDiagram(ToDict):
    """The smoothed reliability diagram of one model.

    Curves live on ``mesh`` (t ∈ [0, 1], the probability axis for either
    metric). ``mu`` is the Nadaraya–Watson estimate of E[y | f = t] at
    bandwidth ``sigma`` (NaN where there is no data within reach of the
    kernel); ``density`` is the smoothed density of the predictions;
    ``lower``/``upper`` the pointwise bootstrap band of ``mu`` (None when
    ``n_boot=0``); ``consistency_lower``/``upper`` where ``mu`` would lie if
    the model were calibrated (only with ``consistency=True``). ``xlabel`` and
    ``ylabel`` name the axes of its plot (``"Confidence"`` and ``"Accuracy"``
    for :func:`smoothece.top_label_diagram`).
    """

    mesh: np.ndarray
    mu: np.ndarray
    density: np.ndarray
    density_positive: np.ndarray  #: density of f among rows with y = 1
    density_negative: np.ndarray  #: density of f among rows with y = 0
    lower: Optional[np.ndarray]
    upper: Optional[np.ndarray]
    smece: float  #: SmoothECE σ* (or smECEσ at a fixed ``sigma``)
    sigma: float  #: bandwidth of the curves (in logit units for metric="logit")
    smece_low: float  #: bootstrap interval of ``smece``, as :func:`smoothece.bootstrap_smece`'s (NaN when n_boot = 0)
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
    metric: str = "l1"
    xlabel: str = "Predicted probability"
    ylabel: str = "Observed frequency"

    def __repr__(self) -> str:
        interval_text = ("" if self.n_boot == 0
                         else f", {self.level:.0%} interval=[{self.smece_low:.4g}, {self.smece_high:.4g}]")
        return (f"ReliabilityDiagram(smece={self.smece:.6g}{interval_text}, sigma={self.sigma:.4g}, "
                f"smece_tilde={self.smece_tilde:.4g}, n={self.n}, total_weight={self.total_weight:.6g}, "
                f"mesh={self.mesh.size} points, n_boot={self.n_boot}, seed={self.seed}, metric={self.metric!r})")

    def plot(self, ax: Optional[Axes] = None, **style: Any) -> Axes:
        """Draws the diagram on ``ax`` (a new figure if None) and returns ``ax``; see
        :func:`smoothece.plotting.plot_diagram` for the style options."""
        from .plotting import plot_diagram

        return plot_diagram(self, ax=ax, **style)


def reliability_diagram(
    f: ArrayLike,
    y: ArrayLike,
    *,
    weights: Optional[ArrayLike] = None,
    metric: str = "l1",
    sigma: Optional[float] = None,
    n_boot: int = 1000,
    level: float = 0.95,
    seed: Optional[int] = None,
    consistency: bool = False,
    n_sim: int = 1000,
    sample_size: int = 1000,
    weight_kind: Optional[str] = None,
    clip: Union[bool, float] = False,
    threads: Optional[int] = None,
) -> ReliabilityDiagram:
    """The smoothed reliability diagram at σ* with bootstrap uncertainty.

    Parameters
    ----------
    f, y, weights, metric, clip, threads
        As in :func:`smoothece.smece`. With ``metric="logit"`` the curves are
        smoothed in logit space and drawn on the probability axis.
    sigma : float, optional
        Draw at this bandwidth instead of σ*; ``smece`` is then smECEσ.
    n_boot : int, default 1000
        Bootstrap replicates for the band and the interval (0 skips them);
        see :func:`smoothece.bootstrap_smece` for how they are drawn. Their
        cost grows with neither n nor 1/σ*.
    level : float, default 0.95
        Coverage of the pointwise band (percentile) and of the interval of
        ``smece`` (the rule of :func:`smoothece.bootstrap_smece`).
    seed : int, optional
        Seed of all randomness (64 bits); the same seed gives the same numbers
        on any thread count and platform. None draws one, recorded in the result.
    consistency : bool, default False
        Also compute the consistency band (where μ̂ would lie under perfect
        calibration) from ``n_sim`` replicates with labels redrawn as
        y* ~ Bernoulli(f).
    sample_size : int, default 1000
        Rows kept (sampled reproducibly, with replacement) for the tick marks
        of the plot; at most the number of rows.
    weight_kind : {"importance", "frequency"}, optional
        How resampling reads the weights; see :func:`smoothece.bootstrap_smece`
        (left out: importance weights, with a warning when they look like
        counts and the diagram resamples).

    The rows are read once: the curves, σ* and both bands come from one
    summary of them.
    """
    fixed = None if sigma is None else _validate.sigma(sigma, metric)
    options = diagram_options(n_boot=n_boot, level=level, seed=seed, consistency=consistency, n_sim=n_sim,
                              sample_size=sample_size, weight_kind=weight_kind, threads=threads)  # before the pass
    if options["n_boot"]:
        from .resampling import finest_fixed_sigma

        finest_fixed_sigma(fixed, metric, "n_boot=0 draws the curves without the band at any sigma")
    analysis = summarise(f, y, weights, clip=clip, metric=metric, threads=threads, full=True, sigma=fixed or 0.0)
    return make_diagram(analysis, metric=metric, sigma=fixed, counts=counts_check(weights), **options)


def diagram_options(*, n_boot=1000, level=0.95, seed=None, consistency=False, n_sim=1000, sample_size=1000,
                    weight_kind=None, threads=None) -> dict:
    """The diagram's scalar options checked (InputError or TypeError naming the argument),
    seed drawn if None, threads as given: what :func:`make_diagram` takes besides the
    analysis, metric and sigma. A ``weight_kind`` left out stays None: whether the weights
    look like counts is asked later, when the diagram resamples."""
    consistency = _validate.flag(consistency, "consistency")
    _validate.threads(threads)
    return dict(n_boot=_validate.count(n_boot, "n_boot", 0), level=_validate.level(level), seed=_validate.seed(seed),
                consistency=consistency, n_sim=_validate.count(n_sim, "n_sim", 1) if consistency else 0,
                sample_size=_validate.count(sample_size, "sample_size", 0),
                weight_kind=None if weight_kind is None else _validate.weight_kind(weight_kind), threads=threads)


def make_diagram(analysis, *, metric, sigma, n_boot, level, seed, consistency, n_sim, sample_size, weight_kind,
                 threads, counts=None) -> ReliabilityDiagram:
    """The diagram of a core analysis (of arrays or of a sketch); ``counts`` as
    in :func:`_validate.weight_kind`, asked only when the diagram resamples."""
    options = diagram_options(n_boot=n_boot, level=level, seed=seed, consistency=consistency, n_sim=n_sim,
                              sample_size=sample_size, weight_kind=weight_kind, threads=threads)
    n_boot, level, seed, consistency, n_sim, sample_size, weight_kind, _ = options.values()
    kind = _validate.weight_kind(weight_kind, counts if n_boot or consistency else None)
    t = _validate.threads(threads)
    if sigma is None:  # curves, band and interval at σ* need its value, not a bound
        refuse_bound(analysis, t, "A reliability diagram at the SmoothECE (sigma=None)")
    curves = analysis.curves(-1.0 if sigma is None else sigma, MESH_INTERVALS, t)
    drawn_at = curves["sigma"]
    value = curves["sigma"] if sigma is None else curves["smece_sigma"]
    lower = upper = c_lower = c_upper = None
    lo = hi = float("nan")
    if n_boot:
        boot = analysis.bootstrap(0.0 if sigma is None else sigma, n_boot, seed, level, kind, t, MESH_INTERVALS)
        lower, upper, lo, hi = boot["band_lower"], boot["band_upper"], boot["low"], boot["high"]
    if consistency:
        null = analysis.test(n_sim, seed, level, kind, t, MESH_INTERVALS, drawn_at)
        c_lower, c_upper = null["band_lower"], null["band_upper"]
    # Ticks of at most the rows' number: more draws (with replacement) add nothing to the plot.
    sample_f, sample_y = analysis.sample(min(sample_size, int(curves["rows"])), seed)
    return ReliabilityDiagram(
        mesh=frozen(curves["mesh"]), mu=frozen(curves["mu"]), density=frozen(curves["density"]),
        density_positive=frozen(curves["density_positive"]), density_negative=frozen(curves["density_negative"]),
        lower=frozen(lower), upper=frozen(upper), smece=float(value), sigma=float(drawn_at),
        smece_low=float(lo), smece_high=float(hi), smece_tilde=float(curves["smece_tilde"]), level=level,
        n_boot=n_boot, n=int(curves["rows"]), total_weight=float(curves["total_weight"]),
        sample_f=frozen(sample_f), sample_y=frozen(sample_y), seed=seed,
        consistency_lower=frozen(c_lower), consistency_upper=frozen(c_upper), metric=metric,
    )
