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

import re
import warnings
from dataclasses import dataclass, field
from typing import Mapping, Optional, Sequence, Union

import numpy as np

from . import _bytes, _core, _validate
from ._errors import InputError, ResolutionWarning
from ._summary import counts_check, summarise
from ._typing import ArrayLike
from ._util import ToDict, bootstrap_interval, frozen, quantiles, sigma_star
from .sketch import CalibrationSketch, default_resolution

__all__ = ["Comparison", "ComparisonSketch", "ModelComparison", "compare", "compare_models"]


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
    low: np.ndarray  #: each model's interval (by bootstrap_smece's rule, from the paired replicates)
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
        return _position(self.names, model)

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


def _comparison(names, a: float, b: float, replicates: np.ndarray, level: float, seed: int) -> Comparison:
    diff = float(a - b)
    deltas = replicates[:, 0] - replicates[:, 1]
    # The percentile interval of the paired differences, widened to hold the
    # observed one if it lies outside. Each model's SmoothECE is biased
    # upward by noise, but a pair's replicates share their rows, so their
    # biases largely cancel in the difference: in bench/compare.py it covers
    # the population difference in 92.5-97% of data sets (n = 500 to 20000,
    # with and without weights), where the bias-corrected "basic" interval
    # covered 79-89% at n = 500.
    alpha = 1.0 - level
    q_lo, q_hi = (float(v) for v in quantiles(deltas, [alpha / 2, 1 - alpha / 2]))
    low, high = min(q_lo, diff), max(q_hi, diff)
    # The test this interval inverts: equal calibration is rejected at level
    # α when 0 lies outside the 1 − α interval, i.e. when fewer than α/2 of
    # the replicates fall on 0's side; +1 so p is never 0 from finite replicates.
    n = deltas.shape[0]
    p = min(1.0, 2.0 * (1 + min(np.count_nonzero(deltas <= 0.0), np.count_nonzero(deltas >= 0.0))) / (n + 1))
    return Comparison(names=tuple(names), smece_a=float(a), smece_b=float(b), difference=diff, low=low, high=high,
                      p_value=float(p), level=level, n_boot=int(n), seed=seed, replicates=frozen(replicates))


def _position(names: tuple, model) -> int:
    """A model's place among ``names``, by name or position."""
    if isinstance(model, (int, np.integer)) and not isinstance(model, bool):
        if not -len(names) <= model < len(names):
            raise InputError(f"model index {model} is out of range for {len(names)} models", "model")
        return int(model) % len(names)
    if model in names:
        return names.index(model)
    raise InputError(f"no model named {model!r}; the models are {list(names)}", "model")


def _for_model(name: str, check, *args, **kwargs):
    """check(*args) with an InputError naming the model whose rows it refused."""
    try:
        return check(*args, **kwargs)
    except InputError as err:
        raise InputError(f"model {name!r}: {err}", err.argument, err.index, err.value, err.count,
                         err.size) from None


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
    weight_kind: Optional[str] = None,
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
    if weight_kind is not None:
        _validate.weight_kind(weight_kind)  # a bad kind is refused before the passes over the rows
    metric = _validate.metric(metric)
    t = _validate.threads(threads)
    lo, hi = _validate.clip_range(clip)
    checked, values = [], []
    y_arr = w_arr = None
    for name, f in zip(names, arrays):
        f_arr, y_arr, w_arr = _for_model(name, _validate.rows, f, y, weights)
        analysis = _for_model(name, summarise, f_arr, y_arr, w_arr, clip=clip, metric=metric, threads=threads)
        checked.append(f_arr)
        values.append(sigma_star(analysis, t))
    kind = _validate.weight_kind(weight_kind, counts_check(w_arr))
    reps, unresolved, _, _ = _core.paired_bootstrap(checked, y_arr, w_arr, lo, hi, metric, values, n_boot, seed,
                                                    kind, t)
    return _model_comparison(names, values, reps, unresolved, level, seed, stacklevel=3)


def _model_comparison(names, values, reps, unresolved: int, level: float, seed: int, stacklevel: int):
    """The result of paired replicates (of arrays or of a sketch)."""
    if unresolved:
        warnings.warn(f"{unresolved} of {reps.size} replicate values lie below the finest grid the paired bootstrap "
                      "uses and are reported at its bound: the intervals are approximate", ResolutionWarning,
                      stacklevel=stacklevel)
    smece = np.array(values, dtype=np.float64)
    # each model's interval: bootstrap_smece's rule, from its column of the paired replicates
    low, high = np.array([bootstrap_interval(v, reps[:, k], level, nonnegative=True)
                          for k, v in enumerate(smece)]).T
    return ModelComparison(names=tuple(names), smece=frozen(smece), low=frozen(low), high=frozen(high), level=level,
                           n_boot=int(reps.shape[0]), seed=seed, replicates=frozen(reps))


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
    weight_kind: Optional[str] = None,
    clip: Union[bool, float] = False,
    threads: Optional[int] = None,
) -> Comparison:
    """SmoothECE(a) − SmoothECE(b) on the same rows, with a paired bootstrap
    interval and a two-sided test of equal calibration.

    The difference is exact (both SmoothECEs are). Its interval is the
    percentile interval of the paired replicates' differences (widened to
    hold the difference itself, where it lies outside), and the p-value is
    that of the test it inverts: equal calibration is rejected at level
    1 − ``level`` when 0 lies outside the interval. Coverage of the
    population difference, and the test's size, from ``bench/compare.py``
    (200 data sets each): 92.5-97% and 4-7.5% for n from 500 to 20000,
    one-signed and crossing reliability curves, with and without weights.

    What it does not do: tell two *calibrated* models apart. Each SmoothECE
    then sits at its noise floor, which depends on how the predictions are
    spread (a model with ten distinct predictions has a lower floor than a
    continuous one), so at large n the difference of two calibrated models
    is "significant" (a continuous and a ten-value calibrated model at
    n = 20000: rejected in 85% of data sets). Ask
    :func:`calibration_test` of each model first; compare models that it
    finds miscalibrated.

    Parameters as in :func:`compare_models`; ``names`` label the two models.
    """
    names = tuple(str(n) for n in names)
    if len(names) != 2 or names[0] == names[1]:
        raise InputError(f"names must be two different names, got {list(names)}", "names")
    result = compare_models({names[0]: f_a, names[1]: f_b}, y, weights=weights, metric=metric, n_boot=n_boot,
                            level=level, seed=seed, weight_kind=weight_kind, clip=clip, threads=threads)
    return result.pair(0, 1)


class ComparisonSketch(_bytes.Pickled):
    """Several models' :class:`CalibrationSketch` of the same rows, with what
    their paired bootstrap needs: :meth:`compare` answers as
    :func:`compare_models` does, from batches, and sketches of parts of the
    rows merge.

    Parameters
    ----------
    models : int or sequence of str
        How many models, or their names (``"model 0"``, ... for an int).
    resolution, metric
        Of every model's sketch, as in :class:`CalibrationSketch`.
    unit_cells : int, default 512
        The paired bootstrap's resolution: rows that share their label and,
        for every model, one of ``unit_cells`` cells over the metric's grid
        draw together (a power of two, 16 to 65536). The replicates spread as
        :func:`compare_models`'s do while a cell is at most about half the
        models' σ* wide (512 cells: σ* ≳ 0.004 on the l1 grid; the logit
        grid spans about 75 logit units, so there 2048 or more). Memory: one
        entry of about 100 bytes per (cells, label) that the rows occupy, at
        most 2·unit_cells^models and in practice the cells the models' joint
        predictions fill (two related models on 1e5 rows: ~2,000), besides
        the models' sketches. The table is bounded: beyond 2^18 entries the
        cells halve (neighbouring units merge), to the coarsest level the
        rows need, which depends on the rows alone, not on batching or
        merge order (:attr:`unit_cells` says which).

    Rows are added with :meth:`update` (every model's predictions of the same
    rows); a batch with a bad value in any model adds nothing. A sketch
    travels as :meth:`to_bytes` (and pickles), read back by :meth:`from_bytes`.
    """

    __slots__ = ("_sketch", "_names")

    def __init__(self, models: Union[int, Sequence[str]] = 2, resolution: Optional[int] = None,
                 metric: str = "l1", unit_cells: int = 512):
        if isinstance(models, (int, np.integer)) and not isinstance(models, bool):
            names = tuple(f"model {i}" for i in range(int(models)))
        elif isinstance(models, (str, bytes)) or not isinstance(models, Sequence):
            raise TypeError(f"models must be a count or a sequence of names, got {type(models).__name__}")
        else:
            names = tuple(str(m) for m in models)
            if len(set(names)) != len(names):
                raise InputError(f"model names must differ, got {list(models)}", "models")
        metric = _validate.metric(metric)
        if resolution is None:
            resolution = default_resolution(metric)
        for name, value in (("resolution", resolution), ("unit_cells", unit_cells)):
            if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
                raise TypeError(f"{name} must be an int (a power of two), got {value!r}")
        self._names = names
        self._sketch = _core.PairedSketch(metric, int(resolution), len(names), int(unit_cells))

    @property
    def names(self) -> tuple:
        return self._names

    def update(self, predictions: Union[Mapping[str, ArrayLike], Sequence[ArrayLike]], y: ArrayLike,
               weights: Optional[ArrayLike] = None, *, clip: Union[bool, float] = False,
               threads: Optional[int] = None) -> "ComparisonSketch":
        """Adds a batch of rows: every model's predictions of them (a mapping by
        name, or a sequence in the sketch's order), their labels and weights."""
        if isinstance(predictions, Mapping):
            if set(map(str, predictions.keys())) != set(self._names):
                raise InputError(f"predictions must name the sketch's models {list(self._names)}, got "
                                 f"{list(predictions.keys())}", "predictions")
            by_name = {str(k): v for k, v in predictions.items()}
            arrays = [by_name[n] for n in self._names]
        else:
            _, arrays = _named(predictions)
            if len(arrays) != len(self._names):
                raise InputError(f"this sketch compares {len(self._names)} models, got {len(arrays)} prediction "
                                 "arrays", "predictions")
        checked = []
        y_arr = w_arr = None
        for name, f in zip(self._names, arrays):
            f_arr, y_arr, w_arr = _for_model(name, _validate.rows, f, y, weights)
            checked.append(f_arr)
        lo, hi = _validate.clip_range(clip)
        try:
            self._sketch.update(checked, y_arr, w_arr, lo, hi, _validate.threads(threads))
        except InputError as err:
            m = re.match(r"model (\d+): ", str(err))
            if not m:
                raise
            name = self._names[int(m.group(1))]
            raise InputError(f"model {name!r}: {str(err)[m.end():]}", err.argument, err.index, err.value, err.count,
                             err.size) from None
        return self

    def merge(self, other: "ComparisonSketch") -> "ComparisonSketch":
        """Adds another comparison sketch of the same models, metric and resolutions."""
        if not isinstance(other, ComparisonSketch):
            raise TypeError(f"can only merge another ComparisonSketch, got {type(other).__name__}")
        if other._names != self._names:
            raise InputError(f"cannot merge sketches of other models ({list(other._names)} into "
                             f"{list(self._names)})", "other")
        self._sketch.merge(other._sketch)
        return self

    def copy(self) -> "ComparisonSketch":
        out = ComparisonSketch.__new__(ComparisonSketch)
        out._names, out._sketch = self._names, self._sketch.copy()
        return out

    def model(self, name) -> CalibrationSketch:
        """A copy of one model's sketch (by name or position): every single-model answer."""
        i = _position(self._names, name)
        out = CalibrationSketch.__new__(CalibrationSketch)
        out._sketch = self._sketch.model(i)
        return out

    @property
    def n(self) -> int:
        return int(self._sketch.model(0).rows)

    @property
    def total_weight(self) -> float:
        return float(self._sketch.model(0).total_weight)

    @property
    def units(self) -> int:
        """Entries of the paired bootstrap's table (see ``unit_cells``)."""
        return int(self._sketch.units)

    @property
    def unit_cells(self) -> int:
        """Unit cells per model now (fewer than asked once the table held 2^18 units)."""
        return int(self._sketch.unit_cells)

    @property
    def memory_bytes(self) -> int:
        return int(self._sketch.memory_bytes)

    def compare(self, *, n_boot: int = 1000, level: float = 0.95, seed: Optional[int] = None,
                weight_kind: Optional[str] = None, threads: Optional[int] = None) -> ModelComparison:
        """The models' SmoothECE and paired replicates, as :func:`compare_models` gives for the rows added."""
        n_boot = _validate.count(n_boot, "n_boot", 1)
        level = _validate.level(level)
        seed = _validate.seed(seed)
        kind = _validate.weight_kind(weight_kind, lambda: bool(self._sketch.model(0).weights_look_like_counts))
        t = _validate.threads(threads)
        values = [sigma_star(self._sketch.model(i).analysis(), t) for i in range(len(self._names))]
        reps, unresolved, _, _ = self._sketch.replicates(values, n_boot, seed, kind, t)
        return _model_comparison(self._names, values, reps, unresolved, level, seed, stacklevel=3)

    # -- serialization --------------------------------------------------------
    def to_bytes(self) -> bytes:
        """The models' names and sketches and the paired bootstrap's units: bytes of
        format version 1 that :meth:`from_bytes` reads back, written and checksummed by
        the core as :meth:`CalibrationSketch.to_bytes` (docs/design.md, "Sketch bytes")."""
        return self._sketch.to_bytes(_bytes.encode_names(self._names))

    @classmethod
    def from_bytes(cls, data: bytes, *, max_memory: Optional[int] = None) -> "ComparisonSketch":
        """Reads :meth:`to_bytes` output, with the guarantees of
        :meth:`CalibrationSketch.from_bytes`: a sketch that some rows could have made
        (each model's sketch checked as there, every unit against its cells, label and
        the models' rows, names distinct and valid UTF-8) or a ``ValueError``
        ("corrupt comparison sketch: ..."). ``max_memory`` as there."""
        core, section = _core.PairedSketch.from_bytes(_bytes.as_bytes(data), _bytes.memory_limit(max_memory))
        out = cls.__new__(cls)
        out._names, out._sketch = _bytes.decode_names(section, core.models), core
        return out

    def __eq__(self, other) -> bool:
        return isinstance(other, ComparisonSketch) and self.to_bytes() == other.to_bytes()

    __hash__ = None

    def __repr__(self) -> str:
        return (f"ComparisonSketch(models={list(self._names)}, n={self.n}, units={self.units}, "
                f"unit_cells={self._sketch.unit_cells})")
