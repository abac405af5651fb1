"""Comparing the calibration of models scored on the same rows.

"Is model B better calibrated than model A on these rows?" The difference
of their SmoothECEs, with an interval and a test, from a *paired* bootstrap:
every replicate reweights each row once and scores every model under that
one reweighting, so the interval reflects how the difference varies, not
the sum of two separate uncertainties (two :func:`bootstrap_smece` runs
resample each model on its own, which cannot see that the models share
their rows and labels).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Mapping, Optional, Sequence, Union

import numpy as np

from . import _core, _validate
from ._errors import InputError, ResolutionWarning
from ._summary import summarise
from ._typing import ArrayLike
from ._util import ToDict, frozen, quantiles, sigma_star

__all__ = ["Comparison", "ModelComparison", "compare", "compare_models"]


@dataclass(frozen=True, repr=False)
class Comparison(ToDict):
    """Two models' SmoothECE on the same rows and their difference, with a
    paired bootstrap interval and a test of equal calibration."""

    names: tuple  #: the two models' names (a, b)
    smece_a: float  #: SmoothECE of model a on the rows (exact)
    smece_b: float  #: SmoothECE of model b
    difference: float  #: smece_a − smece_b: positive when a is the worse calibrated
    low: float  #: lower end of the ``level`` interval of the difference
    high: float  #: upper end
    p_value: float  #: test of equal calibration (population SmoothECEs equal), two-sided
    level: float
    n_boot: int
    seed: int  #: the seed used (pass it back to reproduce the numbers)
    replicates: np.ndarray = field(repr=False)  #: n_boot × 2 paired replicate values (a, b)

    def __repr__(self) -> str:
        a, b = self.names
        return (f"Comparison(smece[{a}]={self.smece_a:.6g}, smece[{b}]={self.smece_b:.6g}, "
                f"difference={self.difference:.6g}, {self.level:.0%} interval=[{self.low:.6g}, {self.high:.6g}], "
                f"p_value={self.p_value:.4g}, n_boot={self.n_boot}, seed={self.seed})")


@dataclass(frozen=True, repr=False)
class ModelComparison(ToDict):
    """Several models' SmoothECE on the same rows, from one paired bootstrap:
    each model's interval, and :meth:`pair` for any two models' difference."""

    names: tuple  #: the models' names, in the order given
    smece: np.ndarray  #: each model's SmoothECE on the rows (exact)
    low: np.ndarray  #: each model's interval (the bootstrap interval of bootstrap_smece)
    high: np.ndarray
    level: float
    n_boot: int
    seed: int
    replicates: np.ndarray = field(repr=False)  #: n_boot × models paired replicate values

    def __repr__(self) -> str:
        body = ", ".join(f"{n}: {v:.6g} [{lo:.6g}, {hi:.6g}]"
                         for n, v, lo, hi in zip(self.names, self.smece, self.low, self.high))
        return f"ModelComparison({body}; {self.level:.0%} intervals, n_boot={self.n_boot}, seed={self.seed})"

    def _index(self, model) -> int:
        if isinstance(model, (int, np.integer)) and not isinstance(model, bool):
            if not -len(self.names) <= model < len(self.names):
                raise InputError(f"model index {model} is out of range for {len(self.names)} models", "model")
            return int(model) % len(self.names)
        if model in self.names:
            return self.names.index(model)
        raise InputError(f"no model named {model!r}; the models are {list(self.names)}", "model")

    def pair(self, a, b) -> Comparison:
        """The difference SmoothECE(a) − SmoothECE(b) (models by name or position)."""
        i, j = self._index(a), self._index(b)
        if i == j:
            raise InputError(f"compare a model with another one, not with itself ({self.names[i]!r})", "b")
        return _comparison((self.names[i], self.names[j]), self.smece[i], self.smece[j], self.replicates[:, [i, j]],
                           self.level, self.seed)

    def pairs(self) -> list:
        """Every pair of models (i < j, in the order given)."""
        k = len(self.names)
        return [self.pair(i, j) for i in range(k) for j in range(i + 1, k)]

    def table(self) -> list:
        """One row per model: name, SmoothECE and its interval."""
        return [{"model": n, "smece": float(v), "low": float(lo), "high": float(hi)}
                for n, v, lo, hi in zip(self.names, self.smece, self.low, self.high)]


def _basic_interval(value: float, replicates: np.ndarray, level: float) -> tuple:
    """The basic bootstrap interval [2v − q_hi, 2v − q_lo] (placeholder for the library's rule)."""
    alpha = 1.0 - level
    lo, hi = quantiles(replicates, [alpha / 2, 1 - alpha / 2])
    return float(2 * value - hi), float(2 * value - lo)


def _comparison(names, a: float, b: float, replicates: np.ndarray, level: float, seed: int) -> Comparison:
    diff = float(a - b)
    deltas = replicates[:, 0] - replicates[:, 1]
    low, high = _basic_interval(diff, deltas, level)
    # The test the interval inverts: under equal calibration the difference
    # varies about 0 as the replicates vary about the observed difference, so
    # it is rejected at level α exactly when 0 lies outside the 1 − α
    # interval; counts +1 so that p is never 0 from finitely many replicates.
    n = deltas.shape[0]
    above = 1 + np.count_nonzero(deltas >= 2 * diff)
    below = 1 + np.count_nonzero(deltas <= 2 * diff)
    p = min(1.0, 2.0 * min(above, below) / (n + 1))
    return Comparison(names=tuple(names), smece_a=float(a), smece_b=float(b), difference=diff, low=low, high=high,
                      p_value=float(p), level=level, n_boot=int(n), seed=seed, replicates=frozen(replicates))


def _named(predictions) -> tuple:
    """(names, arrays) of a mapping name → predictions or a sequence of them."""
    if isinstance(predictions, Mapping):
        names = tuple(str(k) for k in predictions.keys())
        arrays = list(predictions.values())
        if len(set(names)) != len(names):
            raise InputError(f"model names must differ as strings, got {list(predictions.keys())}", "predictions")
    elif isinstance(predictions, (str, bytes)) or not isinstance(predictions, Sequence):
        raise TypeError("predictions must be a mapping of model names to predictions, or a sequence of "
                        f"prediction arrays, got {type(predictions).__name__}")
    else:
        arrays = list(predictions)
        names = tuple(f"model {i}" for i in range(len(arrays)))
    if len(arrays) < 2:
        raise InputError(f"comparing needs at least two models, got {len(arrays)}", "predictions")
    return names, arrays


def compare_models(
    predictions: Union[Mapping[str, ArrayLike], Sequence[ArrayLike]],
    y: ArrayLike,
    *,
    weights: Optional[ArrayLike] = None,
    metric: str = "l1",
    n_boot: int = 1000,
    level: float = 0.95,
    seed: Optional[int] = None,
    weight_kind: str = "importance",
    clip: Union[bool, float] = False,
    threads: Optional[int] = None,
) -> ModelComparison:
    """Several models' SmoothECE on the same rows, from one paired bootstrap.

    Parameters
    ----------
    predictions : mapping of name to predictions, or a sequence of arrays
        Each model's predictions of the same rows (the same length as ``y``).
    y, weights, metric, clip, threads
        As in :func:`smoothece.smece`; the rows, labels and weights are shared.
    n_boot, level, seed, weight_kind
        As in :func:`smoothece.bootstrap_smece`.

    Every replicate gives each row one Exponential(1) multiplier (the
    Bayesian bootstrap, as :func:`bootstrap_smece`) and scores every model
    under it. Rows that share their label and, for every model, a cell a
    quarter of its σ* wide draw together; each replicate's masses are the
    rows' exact masses plus the drawn change, so only the change is placed
    at that resolution. Use :meth:`ModelComparison.pair` for a difference
    with its interval and test.
    """
    names, arrays = _named(predictions)
    n_boot = _validate.count(n_boot, "n_boot", 1)
    level = _validate.level(level)
    seed = _validate.seed(seed)
    kind = _validate.weight_kind(weight_kind)
    metric = _validate.metric(metric)
    t = _validate.threads(threads)
    lo, hi = _validate.clip_range(clip)
    checked, values = [], []
    y_arr = w_arr = None
    for name, f in zip(names, arrays):
        try:
            f_arr, y_arr, w_arr = _validate.rows(f, y, weights)
        except InputError as err:
            raise InputError(f"model {name!r}: {err}", err.argument, err.index, err.value, err.count,
                             err.size) from None
        try:
            analysis = summarise(f_arr, y_arr, w_arr, clip=clip, metric=metric, threads=threads)
        except InputError as err:
            raise InputError(f"model {name!r}: {err}", err.argument, err.index, err.value, err.count,
                             err.size) from None
        checked.append(f_arr)
        values.append(sigma_star(analysis, t))
    reps, unresolved = _core.paired_bootstrap(checked, y_arr, w_arr, lo, hi, metric, values, n_boot, seed, kind, t)
    if unresolved:
        import warnings

        warnings.warn(f"{unresolved} of {reps.size} replicate values lie below the finest grid the paired bootstrap "
                      "uses and are reported at its bound: the intervals are approximate", ResolutionWarning,
                      stacklevel=2)
    smece = np.array(values)
    alpha = 1.0 - level
    q_lo, q_hi = quantiles(reps, [alpha / 2, 1 - alpha / 2])
    low = np.maximum(0.0, 2 * smece - q_hi)
    high = np.maximum(2 * smece - q_lo, smece)
    low = np.minimum(low, smece)
    return ModelComparison(names=names, smece=frozen(smece), low=frozen(low), high=frozen(high), level=level,
                           n_boot=n_boot, seed=seed, replicates=frozen(reps))


def compare(
    f_a: ArrayLike,
    f_b: ArrayLike,
    y: ArrayLike,
    *,
    weights: Optional[ArrayLike] = None,
    names: Sequence[str] = ("a", "b"),
    metric: str = "l1",
    n_boot: int = 1000,
    level: float = 0.95,
    seed: Optional[int] = None,
    weight_kind: str = "importance",
    clip: Union[bool, float] = False,
    threads: Optional[int] = None,
) -> Comparison:
    """SmoothECE(a) − SmoothECE(b) on the same rows, with a paired bootstrap
    interval and a two-sided test of equal calibration.

    The difference is exact (both SmoothECEs are); its interval is the basic
    bootstrap interval of the paired replicates (the replicates' spread
    about the observed difference, reflected: it corrects the upward bias
    that noise gives each SmoothECE, which differs between models), and the
    p-value is that of the test this interval inverts: equal calibration is
    rejected at level 1 − ``level`` exactly when 0 lies outside the interval.
    Parameters as in :func:`compare_models`; ``names`` label the two models.
    """
    names = tuple(str(n) for n in names)
    if len(names) != 2 or names[0] == names[1]:
        raise InputError(f"names must be two different names, got {list(names)}", "names")
    result = compare_models({names[0]: f_a, names[1]: f_b}, y, weights=weights, metric=metric, n_boot=n_boot,
                            level=level, seed=seed, weight_kind=weight_kind, clip=clip, threads=threads)
    return result.pair(0, 1)
