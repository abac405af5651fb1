"""Recalibration with the smoothed calibration function μ̂ of the SmoothECE diagram.

Błasiok & Nakkiran (ICLR 2024), Sections 4 and 5.4: the diagram's
Nadaraya–Watson regression μ̂σ*(t) ≈ E[y | f = t], at the SmoothECE's own
bandwidth σ*, is a recalibration map: replacing f by μ̂(f) removes the
miscalibration the diagram shows. :class:`SmoothCalibrator` fits it on one set
of predictions and outcomes and applies it to new predictions, optionally
forced to be non-decreasing (so it keeps the ranking of the predictions).

The class follows the conventions of scikit-learn's ``IsotonicRegression``,
the 1-D calibrator it resembles. When scikit-learn is installed it *is* a
scikit-learn estimator (``BaseEstimator`` with ``RegressorMixin`` and
``TransformerMixin``, as ``IsotonicRegression``): ``clone``, ``Pipeline``,
``cross_val_score`` and ``check_is_fitted`` work, and an unfitted one raises
scikit-learn's ``NotFittedError``. Without scikit-learn it keeps the same
methods (``get_params``/``set_params`` included) and raises its own
``NotFittedError``. Importing this module imports scikit-learn when present
(``import smoothece`` does not: ``smoothece.SmoothCalibrator`` is resolved on
first use).
"""

from __future__ import annotations

from typing import Any, List, Optional, Tuple, Union

import numpy as np

from . import _validate
from ._api import smece
from ._summary import checked_predictions
from ._summary import checked_rows as _rows
from ._typing import ArrayLike, FloatArray
from ._util import filled_curve as _filled_curve
from .diagram import reliability_diagram

_count, _level, _seed, _choice = _validate.count, _validate.level, _validate.seed, _validate.choice

__all__ = ["SmoothCalibrator", "NotFittedError", "isotonic_fit"]

_PARAMS = ("sigma", "monotone", "method", "n_boot", "level", "seed", "clip")


class _Estimator:
    """The parameter protocol of scikit-learn's ``BaseEstimator``, for installs without it."""

    def get_params(self, deep: bool = True) -> dict:
        """The constructor arguments, as a dict (``deep`` is accepted for scikit-learn and ignored)."""
        return {name: getattr(self, name) for name in _PARAMS}

    def set_params(self, **params: Any) -> Any:
        """Sets constructor arguments by name and returns self (the fit is not redone)."""
        for name, value in params.items():
            if name not in _PARAMS:
                raise ValueError(f"invalid parameter {name!r} for {type(self).__name__}; valid parameters: "
                                 f"{', '.join(_PARAMS)}")
            setattr(self, name, value)
        return self

    def __repr__(self) -> str:
        return f"{type(self).__name__}({', '.join(f'{k}={getattr(self, k)!r}' for k in _PARAMS)})"


try:
    from sklearn.base import BaseEstimator, RegressorMixin, TransformerMixin
    from sklearn.exceptions import NotFittedError

    # A regressor, as IsotonicRegression: it estimates E[y | f], a number in [0, 1], not a
    # class, so predict returns probabilities and the regression scorers apply
    # ("neg_mean_squared_error" is the Brier score for 0/1 outcomes; "r2" is the default);
    # a transformer too, so that it can sit inside a Pipeline. predict_proba adds the
    # probability scorers ("neg_brier_score", "neg_log_loss").
    _BASES: Tuple[type, ...] = (RegressorMixin, TransformerMixin, BaseEstimator)
except ImportError:

    class NotFittedError(ValueError, AttributeError):  # type: ignore[no-redef]
        """Raised by ``predict``/``transform`` before ``fit`` (a ValueError and an
        AttributeError, like scikit-learn's exception, which it is when installed)."""

    _BASES = (_Estimator,)


def isotonic_fit(values: ArrayLike, weights: ArrayLike) -> np.ndarray:
    """The non-decreasing sequence closest to ``values`` in weighted least squares (pool adjacent violators).

    Parameters
    ----------
    values : array_like, shape (m,)
    weights : array_like, shape (m,)
        Positive weights.

    Returns
    -------
    numpy.ndarray, shape (m,)
        argmin over non-decreasing g of Σ weights·(values − g)². A Python loop
        over the m points: meant for curves on a mesh (m ≈ 500), not for rows.
    """
    v = np.asarray(values, dtype=np.float64)
    w = np.asarray(weights, dtype=np.float64)
    if v.ndim != 1 or w.shape != v.shape:
        raise ValueError(f"values and weights must be 1-D of the same length, got {v.shape} and {w.shape}")
    if not np.all(w > 0) or not np.all(np.isfinite(w)) or not np.all(np.isfinite(v)):
        raise ValueError("isotonic_fit needs finite values and positive finite weights")
    means: List[float] = []
    mass: List[float] = []
    size: List[int] = []
    for value, weight in zip(v.tolist(), w.tolist()):
        m, s, k = value, weight, 1
        while means and means[-1] >= m:  # pool with the previous block while they violate the order
            pm, ps, pk = means.pop(), mass.pop(), size.pop()
            m = (pm * ps + m * s) / (ps + s)
            s, k = ps + s, pk + k
        means.append(m)
        mass.append(s)
        size.append(k)
    return np.repeat(np.array(means), size)


def _predictions(f: Any) -> np.ndarray:
    """Predictions as a 1-D array; a 2-D array with one column (scikit-learn's X) is accepted."""
    arr = _validate.array(f, "f")  # masked or missing (NA) values refused here, as everywhere
    if arr.ndim == 2:
        if arr.shape[1] != 1:
            raise ValueError(f"f must be 1-D or of shape (n, 1), got shape {arr.shape}")
        arr = arr[:, 0]
    return arr


_METHODS = ("residual", "diagram")
#: Bandwidth of the map when σ* = 0 (every residual y − f is zero: the map is the identity on the data).
_SIGMA_FLOOR = 1e-3


class SmoothCalibrator(*_BASES):  # type: ignore[misc]
    """Recalibrates predictions with the smoothed calibration function of the SmoothECE at σ*.

    ``fit(f, y)`` estimates E[y | f = t] by kernel smoothing with the reflected
    Gaussian kernel K̃σ at the SmoothECE bandwidth σ* of the fitting data (or
    a fixed ``sigma``), on the diagram's mesh of 65 to 513 points in [0, 1]
    (finer for smaller σ; Błasiok & Nakkiran 2024, Sections 4 and 5.4). ``predict(f)`` interpolates
    linearly on that mesh, so the map is continuous and its values lie in
    [0, 1]. Stretches of the mesh with no data within reach of the kernel
    (where μ̂ is undefined) take the nearest defined value.

    Two estimates of E[y | f = t] are offered (``method``):

    - ``"residual"`` (default): t + r̂σ(t)/δ̂σ(t), with the smoothed residual
      r̂σ(t) = Σ w K̃σ(t, f)(y − f)/W whose integral ∫|r̂σ| *is* smECEσ, and the
      smoothed density δ̂σ. Equivalently t + μ̂σ(t) − f̄σ(t), where μ̂σ is the
      diagram's Nadaraya–Watson curve and f̄σ(t) = Σ w K̃σ(t, f) f / Σ w K̃σ(t, f)
      the smoothed mean prediction. It corrects exactly the miscalibration
      that smECEσ measures: the density-weighted L1 distance of the map from
      the identity is smECEσ. It is unbiased for calibrated data, where μ̂σ
      alone is pulled toward the local mean prediction (notably near 0 and 1
      and where the density of f changes fast); on temperature-scaled logits
      it leaves about half the held-out error of ``"diagram"``. Costs a second
      pass over the rows.
    - ``"diagram"``: μ̂σ itself, the curve :func:`smoothece.reliability_diagram` draws.

    With scikit-learn installed it is one of its regressors and transformers,
    as ``IsotonicRegression`` is: ``X`` of shape (n, 1) is taken wherever ``f``
    is, ``sample_weight`` is a name of ``weights``, and ``cross_val_score``
    works with the regression scorings (``"neg_mean_squared_error"``, the
    Brier score for 0/1 outcomes, ``"r2"``, ...) and, through
    :meth:`predict_proba`, with ``"neg_brier_score"`` and ``"neg_log_loss"``.

    Parameters
    ----------
    sigma : float, optional
        Bandwidth of μ̂; None (default) uses σ* of the fitting data.
    monotone : bool, default False
        Make the map non-decreasing by weighted isotonic regression (pool
        adjacent violators) of μ̂ on the mesh, weighted by the smoothed density
        of the predictions there; the recalibrated predictions then keep the
        order of the original ones (ties may be created, never reversed).
    method : {"residual", "diagram"}, default "residual"
        The estimate of E[y | f] (above).
    n_boot : int, default 0
        Bootstrap replicates for a pointwise band of the map
        (:meth:`predict_interval`); 0 skips them. It is the diagram's band of
        μ̂σ, moved by the same t − f̄σ(t) as the map for ``"residual"`` (the
        resampling variability of f̄σ itself, small next to that of the
        labels, is left out), and not made monotone.
    level : float, default 0.95
        Coverage of that band.
    seed : int, optional
        Seed of the bootstrap (only used when n_boot > 0).
    clip : bool or float, default False
        As in :func:`smoothece.smece`, for both ``fit`` and ``predict``.

    Attributes
    ----------
    mesh_ : numpy.ndarray
        Points t in [0, 1] of the fitted map.
    curve_ : numpy.ndarray
        The map at ``mesh_`` (after filling and, if ``monotone``, isotonic fitting).
    sigma_ : float
        Bandwidth used: ``sigma``, or σ* of the fitting data (1e-3 when σ* = 0).
    smece_ : float
        SmoothECE of the fitting data: σ*, or smECEσ at a fixed ``sigma``.
    diagram_ : ReliabilityDiagram
        The fitted diagram (μ̂ before filling, density, ...).
    lower_, upper_ : numpy.ndarray or None
        Pointwise bootstrap band of the map on ``mesh_`` (None unless n_boot > 0).
    n_features_in_ : int
        1 (scikit-learn's convention).

    Examples
    --------
    >>> cal = SmoothCalibrator().fit(f_calib, y_calib)        # doctest: +SKIP
    >>> f_new = cal.predict(f_test)                            # doctest: +SKIP
    >>> smoothece.smece(f_new, y_test) < smoothece.smece(f_test, y_test)  # doctest: +SKIP
    """

    def __init__(
        self,
        sigma: Optional[float] = None,
        monotone: bool = False,
        method: str = "residual",
        n_boot: int = 0,
        level: float = 0.95,
        seed: Optional[int] = None,
        clip: Union[bool, float] = False,
    ):
        # scikit-learn convention: store the arguments untouched, check them in fit.
        self.sigma = sigma
        self.monotone = monotone
        self.method = method
        self.n_boot = n_boot
        self.level = level
        self.seed = seed
        self.clip = clip

    # -- scikit-learn protocol ----------------------------------------------------------
    # The mixins' tags stand (X 2-D, y required, float64 preserved). Not one_d_array,
    # although f may be 1-D: scikit-learn's checks read that tag as "only 1-D X" and
    # then fail inside themselves (IsotonicRegression also sets two_d_array=False,
    # which skips every check).

    def __sklearn_is_fitted__(self) -> bool:
        return hasattr(self, "curve_")

    # -- fitting and applying -----------------------------------------------------------

    def _checked_params(self):
        sigma = None if self.sigma is None else _validate.sigma(self.sigma)
        if not isinstance(self.monotone, (bool, np.bool_)):
            raise TypeError(f"monotone must be a bool, got {self.monotone!r}")
        method = _choice(self.method, "method", _METHODS)
        n_boot = _count(self.n_boot, "n_boot", 0)
        level = _level(self.level)
        seed = _seed(self.seed)
        _validate.clip_range(self.clip)
        return sigma, bool(self.monotone), method, n_boot, level, seed

    def fit(self, f: ArrayLike, y: ArrayLike, weights: Optional[ArrayLike] = None,
            sample_weight: Optional[ArrayLike] = None) -> "SmoothCalibrator":
        """Fits the recalibration map on predictions ``f`` and outcomes ``y``; returns self.

        Parameters
        ----------
        f : array_like, shape (n,) or (n, 1)
            Predictions in [0, 1] (a one-column 2-D array, as scikit-learn passes X, is accepted).
        y : array_like, shape (n,)
            Outcomes, 0 or 1.
        weights : array_like, shape (n,), optional
            Non-negative weights, as in :func:`smoothece.smece`.
        sample_weight : array_like, optional
            scikit-learn's name for ``weights``; give at most one of them.

        Raises
        ------
        TypeError, ValueError
            Bad input, as in :func:`smoothece.smece`; bad constructor arguments.
        """
        if sample_weight is not None:
            if weights is not None:
                raise TypeError("give weights or sample_weight, not both")
            weights = sample_weight
        sigma, monotone, method, n_boot, level, seed = self._checked_params()
        star: Optional[float] = None
        f, y, w, total = _rows(_predictions(f), y, weights, self.clip)  # clamped float64 f when clip allows
        if sigma is None:
            # σ* first, then every curve at that fixed σ, so that both passes smooth with the same kernel.
            star = smece(f, y, weights=w)
            sigma = star if star > 0.0 else _SIGMA_FLOOR
        diag = reliability_diagram(f, y, weights=w, sigma=sigma, n_boot=n_boot, level=level, seed=seed,
                                   sample_size=0)
        mesh = np.array(diag.mesh, dtype=np.float64)
        mu = np.array(diag.mu, dtype=np.float64)
        valid = ~np.isnan(mu)
        shift = np.zeros_like(mesh)  # what turns the diagram's μ̂ into the map
        if method == "residual":
            shift[valid] = mesh[valid] - self._smoothed_predictions(f, y, w, total, diag)[valid]
            mu = mu + shift
        if monotone:
            density = np.asarray(diag.density, dtype=np.float64)[valid]
            mu[valid] = isotonic_fit(mu[valid], np.maximum(density, np.finfo(np.float64).tiny))
        curve = np.clip(_filled_curve(mesh, mu), 0.0, 1.0)
        mesh.flags.writeable = False
        curve.flags.writeable = False
        self.mesh_ = mesh
        self.curve_ = curve
        self.sigma_ = float(diag.sigma)
        self.smece_ = float(diag.smece if star is None else star)  # σ*, or smECEσ at a fixed sigma
        self.diagram_ = diag
        band = [None if b is None else np.clip(_filled_curve(mesh, b + shift), 0.0, 1.0)
                for b in (diag.lower, diag.upper)]
        self.lower_, self.upper_ = band
        self.n_features_in_ = 1
        return self

    @staticmethod
    def _smoothed_predictions(f, y, w, total, diag) -> np.ndarray:
        """f̄σ(t) = Σ w K̃σ(t, f) f / Σ w K̃σ(t, f) on the diagram's mesh, from the density of a second
        diagram at the same σ with weights w·f (one more pass over the rows)."""
        wf = f if w is None else w * f
        mass = float(wf.sum())
        if not mass > 0.0:  # every prediction is 0
            return np.zeros(diag.mesh.shape)
        other = reliability_diagram(f, y, weights=wf, sigma=diag.sigma, n_boot=0, seed=0, sample_size=0)
        if other.mesh.shape != diag.mesh.shape:  # pragma: no cover - the mesh depends on σ only
            raise RuntimeError("smoothed predictions came back on a different mesh")
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.asarray(other.density) * mass / (np.asarray(diag.density) * total)

    def _inputs(self, f: ArrayLike) -> np.ndarray:
        if not self.__sklearn_is_fitted__():
            raise NotFittedError("this SmoothCalibrator is not fitted yet: call fit(f, y) first")
        return checked_predictions(_predictions(f), self.clip)

    def predict(self, f: ArrayLike) -> np.ndarray:
        """Recalibrated probabilities μ̂(f), in [0, 1], shape (n,).

        ``f`` may be 1-D or a one-column 2-D array; its values are checked like
        :func:`smoothece.smece`'s (``clip`` as given to the constructor).
        """
        return np.interp(self._inputs(f), self.mesh_, self.curve_)

    def transform(self, f: ArrayLike) -> np.ndarray:
        """Like :meth:`predict`, but keeps the input's shape ((n,) or (n, 1)), for pipelines."""
        out = self.predict(f)
        return out[:, None] if np.ndim(f) == 2 else out

    def fit_transform(self, f: ArrayLike, y: ArrayLike, weights: Optional[ArrayLike] = None,
                      sample_weight: Optional[ArrayLike] = None) -> np.ndarray:
        """``fit(f, y, ...)`` then ``transform(f)``."""
        return self.fit(f, y, weights=weights, sample_weight=sample_weight).transform(f)

    def predict_proba(self, f: ArrayLike) -> FloatArray:
        """Probabilities of the two outcomes, shape (n, 2): columns 1 − μ̂(f) and μ̂(f).

        The layout of scikit-learn's binary classifiers, so that probability
        scorers apply: ``cross_val_score(..., scoring="neg_brier_score")`` equals
        ``scoring="neg_mean_squared_error"``, and ``"neg_log_loss"`` is the
        log loss of the recalibrated predictions.
        """
        p = self.predict(f)
        return np.column_stack([1.0 - p, p])

    def predict_interval(self, f: ArrayLike) -> Tuple[FloatArray, FloatArray]:
        """Pointwise bootstrap band (lower, upper) of the map at ``f`` (needs n_boot > 0 at fit)."""
        x = self._inputs(f)
        lower, upper = self.lower_, self.upper_
        if lower is None or upper is None:
            raise ValueError("no bootstrap band: fit with n_boot > 0 to use predict_interval")
        return np.interp(x, self.mesh_, lower), np.interp(x, self.mesh_, upper)
