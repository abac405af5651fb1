"""The SmoothECE in scikit-learn's terms: ``(y_true, y_prob)`` metrics, a scorer, a Display and a calibrator.

- :func:`smece_error` — the SmoothECE of ``(y_true, y_prob)`` in scikit-learn's
  argument order, with ``sample_weight`` and ``pos_label``; ``y_prob`` may be
  the positive class's probabilities, ``predict_proba``'s (n, 2) matrix, or an
  (n, K) matrix (top-label or class-wise SmoothECE). Lower is better.
- :func:`make_smece_scorer` — a scorer for ``scoring=`` in ``cross_val_score``,
  ``GridSearchCV``, ... (negated, as scikit-learn's scorers of errors are);
  ``.set_score_request(sample_weight=True)`` routes weights to it.
- :func:`smooth_calibration_curve` — ``calibration_curve``'s ``(prob_true,
  prob_pred)`` from the smoothed diagram, weights included.
- :class:`SmoothReliabilityDisplay` — ``CalibrationDisplay``'s API
  (``from_estimator``, ``from_predictions``, ``plot``) drawing the smoothed
  reliability diagram with its bootstrap band.
- :class:`SmoothCalibratedClassifier` — ``CalibratedClassifierCV`` with
  :class:`smoothece.SmoothCalibrator` as the calibration map (one-vs-rest and
  renormalised for more than two classes).

Importing this module imports scikit-learn (``import smoothece`` does not);
matplotlib is imported only when something is drawn.
"""

from __future__ import annotations

import dataclasses
import re
import warnings
from contextlib import contextmanager
from inspect import signature
from typing import Any, Callable, Iterator, Optional, Tuple

import numpy as np

try:
    import sklearn
    from sklearn.base import BaseEstimator, ClassifierMixin, MetaEstimatorMixin, clone, is_classifier
    from sklearn.frozen import FrozenEstimator
    from sklearn.metrics import make_scorer
    from sklearn.model_selection import check_cv
    from sklearn.utils import _safe_indexing, get_tags, indexable
    from sklearn.utils.metadata_routing import MetadataRouter, MethodMapping, process_routing
    from sklearn.utils.multiclass import check_classification_targets
    from sklearn.utils.validation import _num_samples, check_is_fitted
except ImportError as _err:  # pragma: no cover - depends on the environment
    raise ImportError('smoothece.sklearn needs scikit-learn 1.6 or newer: pip install "smoothece[sklearn]"') from _err

from . import _validate
from . import multiclass as _multiclass
from ._api import smece
from ._errors import InputError
from ._typing import ArrayLike
from .diagram import ReliabilityDiagram, reliability_diagram
from .recalibration import SmoothCalibrator

__all__ = [
    "smece_error",
    "make_smece_scorer",
    "smooth_calibration_curve",
    "SmoothReliabilityDisplay",
    "SmoothCalibratedClassifier",
]

_MULTICLASS = ("top_label", "classwise")


# ----------------------------------------------------------------------------
# (y_true, y_prob) → the pairs smoothece scores
# ----------------------------------------------------------------------------
#: smoothece's argument names → this module's (scikit-learn's).
_RENAMED = {"f": "y_prob", "probs": "y_prob", "y": "y_true", "labels": "y_true", "weights": "sample_weight"}
_WORD = re.compile(r"\b(" + "|".join(_RENAMED) + r")\b")


@contextmanager
def _sklearn_names() -> Iterator[None]:
    """Re-raises smoothece's InputError with scikit-learn's argument names (y_prob, y_true, sample_weight)."""
    try:
        yield
    except InputError as err:
        message = str(err).replace("normalize the rows, raise atol, or pass logits= instead", "normalize the rows")
        message = _WORD.sub(lambda m: _RENAMED[m.group(1)], message)
        raise InputError(message, _RENAMED.get(err.argument, err.argument), err.index, err.value, err.count,
                         err.size) from None


def _show(v: Any) -> str:
    return repr(v.item() if isinstance(v, np.generic) else v)


def _label_array(y_true: Any) -> Tuple[np.ndarray, np.ndarray]:
    """``y_true`` as a 1-D array of class labels (numbers, bools, strings, objects) and its sorted classes."""
    if y_true is None or isinstance(y_true, (str, bytes)):
        raise TypeError(f"y_true must be an array of class labels, got {type(y_true).__name__}")
    _validate._missing_values(y_true, "y_true")  # masked elements, pandas NA: named with their row
    if isinstance(y_true, np.ma.MaskedArray):
        y_true = y_true.data
    arr = np.asarray(y_true)
    if arr.ndim != 1:
        hint = " (a column vector? pass y.ravel(); one-hot labels? pass y.argmax(axis=1))" if arr.ndim == 2 else ""
        raise InputError(f"y_true must be 1-D class labels, got shape {arr.shape}{hint}", "y_true")
    if arr.size == 0:
        raise InputError("y_true is empty: at least one row is needed", "y_true")
    if arr.dtype.kind == "c":
        raise TypeError(f"y_true must hold class labels, got complex dtype {arr.dtype}")
    if arr.dtype.kind == "O":
        _validate._refuse_missing(y_true, _validate._missing_objects(arr), "y_true", "missing", " (None or NA)",
                                  "drop those rows first")
    elif arr.dtype.kind == "f":
        _validate._refuse_missing(y_true, np.isnan(arr), "y_true", "missing", " (NaN)", "drop those rows first")
        bad = ~np.isfinite(arr)
        if bad.any():
            i = int(np.argmax(bad))
            raise InputError(f"y_true[{i}] = {_show(arr[i])}: class labels must be finite "
                             f"({int(bad.sum())} of {arr.size} values in y_true bad, first at index {i})",
                             "y_true", i, float(arr[i]), int(bad.sum()), arr.size)
    try:
        classes = np.unique(arr)
    except TypeError as err:
        raise TypeError(f"y_true mixes labels that cannot be compared with each other ({err})") from None
    return arr, classes


def _binary_pos_label(classes: np.ndarray, pos_label: Any) -> Any:
    """The positive class of a binary y_true, as ``sklearn.metrics.brier_score_loss`` infers it."""
    if pos_label is not None:
        if classes.size == 2 and not np.any(classes == pos_label):
            raise InputError(f"pos_label={pos_label!r} is not one of y_true's classes "
                             f"{{{', '.join(_show(c) for c in classes)}}}", "pos_label")
        return pos_label
    if classes.dtype.kind in "OUS":
        if classes.dtype.kind == "O" and all(isinstance(c, (int, np.integer, bool, np.bool_)) for c in classes):
            pass  # object arrays of integers: read as numbers below
        else:
            raise InputError(f"y_true takes values in {{{', '.join(_show(c) for c in classes)}}} and pos_label is "
                             "not given: pass pos_label= (the positive class), as scikit-learn asks", "pos_label")
    values = set(classes.tolist())
    if values <= {0, 1} or values <= {-1, 1}:
        return 1
    return classes[-1]  # other numbers: the greater label, as brier_score_loss does


def _matrix(y_prob: Any) -> Optional[np.ndarray]:
    """y_prob as a 2-D float array when it is one (read in place when float32/float64), else None."""
    if isinstance(y_prob, (str, bytes)) or y_prob is None:
        raise TypeError(f"y_prob must be an array of probabilities, got {type(y_prob).__name__}")
    if np.ndim(y_prob) != 2:
        return None
    with _sklearn_names():
        return _multiclass._matrix(y_prob, "probs") if np.shape(y_prob)[1] >= 2 else None


def _column(y_prob: Any) -> Any:
    """A one-column 2-D y_prob as its column; anything else as it is."""
    return np.asarray(y_prob)[:, 0] if np.ndim(y_prob) == 2 and np.shape(y_prob)[1] == 1 else y_prob


@dataclasses.dataclass(frozen=True)
class _Problem:
    """What (y_true, y_prob) ask: a binary pair (f, y), or an (n, K) matrix with class indices."""

    kind: str  #: "binary" or "multiclass"
    f: Any  #: binary: the positive class's probabilities (unchecked: smoothece checks them)
    y: Any  #: binary: y_true == pos_label (a bool array); None for multiclass
    probs: Any  #: multiclass: the (n, K) matrix; None for binary
    index: Any  #: multiclass: y_true as column indices; None for binary
    pos_label: Any
    classes: np.ndarray


def _problem(y_true: Any, y_prob: Any, pos_label: Any, labels: Any) -> _Problem:
    yt, found = _label_array(y_true)
    mat = _matrix(y_prob)
    if mat is None:  # 1-D: the positive class's probability
        f = _column(y_prob)
        if found.size > 2:
            hint = ""
            if yt.dtype.kind == "f" and np.all((yt >= 0) & (yt <= 1)):
                p = np.asarray(f)
                if p.size and np.isin(p, (0, 1)).all():
                    hint = ("; y_true holds probabilities and y_prob holds 0/1 values: the arguments look swapped "
                            "(scikit-learn's order is (y_true, y_prob))")
            raise InputError(f"y_true has {found.size} classes but y_prob is 1-D (the positive class's "
                             f"probability of a binary problem): pass predict_proba's (n, K) matrix for "
                             f"multiclass{hint}", "y_true", None, None, int(found.size), int(yt.size))
        pos = _binary_pos_label(found, pos_label)
        return _Problem("binary", f, np.asarray(yt == pos, dtype=bool), None, None, pos, found)
    n, k = mat.shape
    if n != yt.size:
        raise InputError(f"y_true has length {yt.size} but y_prob has {n} rows (shape {mat.shape})", "y_true")
    if labels is None:
        classes = found
        if classes.size != k:
            noun = "class" if classes.size == 1 else "classes"
            raise InputError(f"y_prob has {k} columns but y_true has {classes.size} {noun} "
                             f"{{{', '.join(_show(c) for c in classes[:10])}{', ...' if classes.size > 10 else ''}}}: "
                             "pass labels= (the estimator's classes_, in predict_proba's column order)", "y_true")
    else:
        if isinstance(labels, (str, bytes)):
            raise TypeError(f"labels must be a sequence of class labels, got {type(labels).__name__}")
        given = np.asarray(labels)
        classes = np.unique(given)
        if given.ndim != 1 or classes.size != given.size or classes.size != k:
            raise InputError(f"labels must be the {k} distinct classes of y_prob's columns, got {labels!r}",
                             "labels")
    index = np.searchsorted(classes, yt)
    known = index < k
    known[known] = classes[index[known]] == yt[known]
    if not known.all():
        i = int(np.argmin(known))
        count = int(np.count_nonzero(~known))
        raise InputError(f"y_true[{i}] = {_show(yt[i])} is not one of the classes "
                         f"{{{', '.join(_show(c) for c in classes)}}} ({count} of {yt.size} values in y_true bad, "
                         f"first at index {i})", "y_true", i, None, count, int(yt.size))
    if k == 2:  # predict_proba of a binary classifier: its column of the positive class
        matches = np.flatnonzero(classes == pos_label) if pos_label is not None else np.array([1])
        if matches.size == 0:
            raise InputError(f"pos_label={pos_label!r} is not one of the classes "
                             f"{{{', '.join(_show(c) for c in classes)}}}", "pos_label")
        with _sklearn_names():  # entries in [0, 1], rows summing to 1
            _multiclass._Scan("probs", mat, _multiclass._tolerance(None, k), None, want_lse=False)
        col = int(matches[0])
        return _Problem("binary", mat[:, col], index == col, None, None, classes[col], classes)
    if pos_label is not None:
        raise InputError(f"pos_label={pos_label!r} applies to binary problems; y_prob has {k} classes", "pos_label")
    return _Problem("multiclass", None, None, mat, index, None, classes)


# ----------------------------------------------------------------------------
# metric and scorer
# ----------------------------------------------------------------------------
def smece_error(
    y_true: ArrayLike,
    y_prob: ArrayLike,
    *,
    sample_weight: Optional[ArrayLike] = None,
    pos_label: Any = None,
    labels: Optional[ArrayLike] = None,
    multiclass: str = "top_label",
    metric: str = "l1",
) -> float:
    """The SmoothECE of predicted probabilities, in scikit-learn's argument order. Lower is better.

    :func:`smoothece.smece` with ``(y_true, y_prob)`` read as scikit-learn's
    metrics read them (``brier_score_loss``, ``log_loss``).

    Parameters
    ----------
    y_true : array_like, shape (n,)
        True class labels: numbers, bools or strings (pandas columns and
        categoricals too).
    y_prob : array_like, shape (n,), (n, 2) or (n, K)
        The positive class's probabilities; or ``predict_proba``'s matrix,
        columns in the sorted order of the classes (``labels``, else those of
        ``y_true``). With two columns the positive class's column is scored
        (column 1 unless ``pos_label`` says otherwise); with K > 2 see
        ``multiclass``.
    sample_weight : array_like, shape (n,), optional
        Non-negative row weights, as ``weights`` in :func:`smoothece.smece`.
    pos_label : label, optional
        The positive class of a binary problem. None infers it as
        ``brier_score_loss`` does: 1 when ``y_true`` is in {0, 1} or {-1, 1},
        the greater label for other numbers; string labels need it (for 1-D
        ``y_prob``).
    labels : array_like, optional
        The classes of ``y_prob``'s columns (the estimator's ``classes_``);
        needed when some class is missing from ``y_true`` (a small fold).
    multiclass : {"top_label", "classwise"}, default "top_label"
        For K > 2 columns: the SmoothECE of the confidences (max probability
        against whether the top class is right,
        :func:`smoothece.top_label_smece`), or the mean over classes of the
        one-vs-rest SmoothECE (:func:`smoothece.classwise_smece`, ``.mean``).
    metric : {"l1", "logit"}, default "l1"
        As in :func:`smoothece.smece` (not with ``multiclass="classwise"``).

    Returns
    -------
    float
        The SmoothECE σ*, in [0, 1]; 0 for perfectly calibrated predictions.

    Raises
    ------
    smoothece.InputError (a ValueError), TypeError
        Bad input, with scikit-learn's argument names (``y_prob[3] = 1.2: ...``).
    """
    choice = _validate.choice(multiclass, "multiclass", _MULTICLASS)
    metric = _validate.metric(metric)
    problem = _problem(y_true, y_prob, pos_label, labels)
    with _sklearn_names():
        if problem.kind == "binary":
            return smece(problem.f, problem.y, weights=sample_weight, metric=metric)
        if choice == "classwise":
            if metric != "l1":
                raise ValueError("multiclass='classwise' supports metric='l1' only")
            return float(_multiclass.classwise_smece(problem.probs, problem.index, weights=sample_weight).mean)
        f, y = _multiclass.confidence_pairs(problem.probs, problem.index)
        weights = _multiclass._weights(sample_weight, f.size, "probs")
        return smece(f, y, weights=weights, metric=metric)



def make_smece_scorer(*, pos_label: Any = None, labels: Optional[ArrayLike] = None, multiclass: str = "top_label",
                      metric: str = "l1") -> Callable[..., float]:
    """A scorer of the SmoothECE for ``scoring=`` (``cross_val_score``, ``GridSearchCV``, ...).

    ``make_scorer(smece_error, greater_is_better=False,
    response_method="predict_proba", ...)``: it scores ``-smece_error`` of
    the estimator's ``predict_proba`` (larger is better, as scikit-learn's
    scorers are). A new scorer at each call, so that metadata requests set on
    one are not shared: with ``sklearn.config_context(enable_metadata_routing=True)``,
    ``make_smece_scorer().set_score_request(sample_weight=True)`` receives the
    ``sample_weight`` passed as ``params={"sample_weight": w}``.

    Parameters are those of :func:`smece_error`. Binary classifiers with string
    labels need ``pos_label``; multiclass ones whose test folds may miss a
    class need ``labels`` (the classes in ``predict_proba``'s order), as for
    scikit-learn's ``neg_log_loss``.
    """
    _validate.choice(multiclass, "multiclass", _MULTICLASS)
    _validate.metric(metric)
    options = {}  # only what differs from smece_error's defaults, so that the scorer's repr stays short
    if pos_label is not None:
        options["pos_label"] = pos_label
    if labels is not None:
        options["labels"] = labels
    if multiclass != "top_label":
        options["multiclass"] = multiclass
    if metric != "l1":
        options["metric"] = metric
    return make_scorer(smece_error, greater_is_better=False, response_method="predict_proba", **options)


def smooth_calibration_curve(y_true: ArrayLike, y_prob: ArrayLike, *, sample_weight: Optional[ArrayLike] = None,
                             pos_label: Any = None, metric: str = "l1") -> Tuple[np.ndarray, np.ndarray]:
    """``sklearn.calibration.calibration_curve``'s ``(prob_true, prob_pred)``, from the smoothed diagram.

    ``prob_true`` is the diagram's μ̂(t) ≈ P(y = pos_label | prediction = t) at
    the SmoothECE bandwidth σ*, and ``prob_pred`` the points t of its mesh in
    [0, 1] (points with no data within reach of the kernel are left out).
    Weights are taken (``sample_weight``), and there are no bins to choose.
    ``y_prob`` is 1-D or ``predict_proba``'s (n, 2) matrix; other arguments as
    in :func:`smece_error`.
    """
    problem = _problem(y_true, y_prob, pos_label, None)
    if problem.kind != "binary":
        raise InputError("smooth_calibration_curve is for binary problems; y_prob has "
                         f"{problem.probs.shape[1]} classes (see smoothece.top_label_diagram)", "y_prob")
    with _sklearn_names():
        d = reliability_diagram(problem.f, problem.y, weights=sample_weight, metric=metric, n_boot=0, seed=0,
                                sample_size=0)
    keep = np.isfinite(d.mu)
    return np.array(d.mu[keep]), np.array(d.mesh[keep])


# ----------------------------------------------------------------------------
# Display
# ----------------------------------------------------------------------------
#: Keyword arguments of from_* that go to :func:`smoothece.reliability_diagram`.
_DIAGRAM_KEYS = ("metric", "sigma", "n_boot", "level", "seed", "consistency", "n_sim", "sample_size", "clip")


class SmoothReliabilityDisplay:
    """Smoothed reliability diagram visualization, with scikit-learn's Display API.

    The counterpart of ``sklearn.calibration.CalibrationDisplay``: create it
    with :meth:`from_estimator` or :meth:`from_predictions`; :meth:`plot`
    draws :class:`smoothece.ReliabilityDiagram` (the kernel-smoothed curve at
    the SmoothECE bandwidth, thick where predictions are dense, its bootstrap
    band, tick marks of the predictions and the SmoothECE with its interval),
    on the given Axes or a new figure, without changing global matplotlib
    state. A binary classifier's diagram is of the positive class; with more
    than two classes it is the top-label (confidence) diagram.

    Parameters
    ----------
    diagram : smoothece.ReliabilityDiagram
        What to draw.
    y_prob : ndarray, optional
        The probabilities scored (the positive class's, or the confidences).
    estimator_name : str, optional
        Name shown in the annotation and legend.
    pos_label : label, optional
        The positive class, shown in the axis labels.

    Attributes
    ----------
    line_ : matplotlib.collections.LineCollection
        The curve.
    band_ : matplotlib.collections.PolyCollection or None
        The bootstrap band (None when ``n_boot=0`` or ``band=False``).
    consistency_band_ : matplotlib.collections.PolyCollection or None
        The consistency band (with ``consistency=True``).
    ref_line_ : matplotlib.lines.Line2D or None
        The diagonal of perfect calibration (shared by the displays on one Axes).
    annotation_ : matplotlib.text.Text or None
        ``name: smECE = v ± w``.
    ax_ : matplotlib.axes.Axes
    figure_ : matplotlib.figure.Figure (or SubFigure)
    density_ax_ : matplotlib.axes.Axes or None
        The density panel (``density_panel=True``).
    """

    def __init__(self, diagram: ReliabilityDiagram, *, y_prob: Optional[np.ndarray] = None,
                 estimator_name: Optional[str] = None, pos_label: Any = None):
        if not isinstance(diagram, ReliabilityDiagram):
            raise TypeError(f"diagram must be a smoothece.ReliabilityDiagram, got {type(diagram).__name__}")
        self.diagram = diagram
        self.y_prob = y_prob
        self.estimator_name = estimator_name
        self.pos_label = pos_label

    @property
    def prob_true(self) -> np.ndarray:
        """μ̂ on the mesh (``CalibrationDisplay``'s name; NaN where there is no data)."""
        return self.diagram.mu

    @property
    def prob_pred(self) -> np.ndarray:
        """The mesh in [0, 1] (``CalibrationDisplay``'s name)."""
        return self.diagram.mesh

    @property
    def smece(self) -> float:
        """The SmoothECE of the diagram."""
        return self.diagram.smece

    def __repr__(self) -> str:
        name = "" if self.estimator_name is None else f"{self.estimator_name!r}, "
        return f"{type(self).__name__}({name}smece={self.diagram.smece:.4g}, n={self.diagram.n})"

    def plot(self, ax: Any = None, *, name: Optional[str] = None, ref_line: bool = True,
             **kwargs: Any) -> "SmoothReliabilityDisplay":
        """Draws the diagram on ``ax`` (a new 5 x 5 inch figure if None); returns self.

        Parameters
        ----------
        ax : matplotlib.axes.Axes, optional
        name : str, optional
            Names the curve (annotation and legend label); default ``estimator_name``.
        ref_line : bool, default True
            Draw the diagonal of perfect calibration (once per Axes).
        **kwargs
            Style options of :func:`smoothece.plotting.plot_diagram`: ``color``
            (default: the next of C0, C1, ... not yet used by a smoothed curve
            on ``ax``), ``band``, ``consistency``, ``ticks``, ``annotate``,
            ``density_panel``, ``width_scale``.
        """
        from .plotting import plot_diagram

        for key in ("label", "show_diagonal"):
            if key in kwargs:
                raise TypeError(f"plot() got {key}=; use {'name' if key == 'label' else 'ref_line'}= instead")
        name = self.estimator_name if name is None else name
        diagram = self.diagram
        if self.pos_label is not None:
            suffix = f" (Positive class: {self.pos_label})"
            diagram = dataclasses.replace(diagram, xlabel=diagram.xlabel + suffix, ylabel=diagram.ylabel + suffix)
        if ax is not None:
            drawn = sum(c.get_gid() == "smoothece-curve" for c in ax.collections)
            before = set(ax.get_children())
        else:
            drawn, before = 0, set()
        kwargs.setdefault("color", f"C{drawn % 10}")
        ax = plot_diagram(diagram, ax=ax, label=name, show_diagonal=ref_line, **kwargs)
        new = [a for a in ax.get_children() if a not in before]

        def find(gid: str, pool=new) -> Any:
            return next((a for a in pool if a.get_gid() == gid), None)

        self.line_ = find("smoothece-curve")
        self.band_ = find("smoothece-band")
        self.consistency_band_ = find("smoothece-consistency")
        self.annotation_ = find("smoothece-annotation")
        self.ref_line_ = find("smoothece-diagonal", ax.lines) if ref_line else None
        self.density_ax_ = find("smoothece-density-panel", ax.child_axes)
        self.ax_ = ax
        self.figure_ = ax.figure
        return self

    @classmethod
    def from_predictions(cls, y_true: ArrayLike, y_prob: ArrayLike, *, sample_weight: Optional[ArrayLike] = None,
                         pos_label: Any = None, labels: Optional[ArrayLike] = None, name: Optional[str] = None,
                         ax: Any = None, ref_line: bool = True, metric: str = "l1", sigma: Optional[float] = None,
                         n_boot: int = 1000, level: float = 0.95, seed: Optional[int] = None, consistency: bool = False,
                         n_sim: int = 1000, sample_size: int = 1000, clip: Any = False,
                         **kwargs: Any) -> "SmoothReliabilityDisplay":
        """Computes and draws the smoothed reliability diagram of ``(y_true, y_prob)``.

        Parameters
        ----------
        y_true, y_prob, sample_weight, pos_label, labels
            As in :func:`smece_error`: 1-D ``y_prob`` or ``predict_proba``'s
            (n, 2) matrix give the positive class's diagram, an (n, K > 2)
            matrix the top-label diagram.
        name, ax, ref_line, **kwargs
            As in :meth:`plot`.
        metric, sigma, n_boot, level, seed, consistency, n_sim, sample_size, clip
            As in :func:`smoothece.reliability_diagram` (``seed=None`` draws a
            seed, recorded in ``display.diagram.seed``).
        """
        problem = _problem(y_true, y_prob, pos_label, labels)
        options = dict(metric=metric, sigma=sigma, n_boot=n_boot, level=level, seed=seed, consistency=consistency,
                       n_sim=n_sim, sample_size=sample_size, clip=clip)
        with _sklearn_names():
            if problem.kind == "binary":
                diagram = reliability_diagram(problem.f, problem.y, weights=sample_weight, **options)
                scored = np.asarray(problem.f)
            else:
                f, y = _multiclass.confidence_pairs(problem.probs, problem.index)
                weights = _multiclass._weights(sample_weight, f.size, "probs")
                diagram = dataclasses.replace(reliability_diagram(f, y, weights=weights, **options),
                                              xlabel="Confidence", ylabel="Accuracy")
                scored = f
        display = cls(diagram, y_prob=scored, estimator_name=name,
                      pos_label=problem.pos_label if problem.kind == "binary" else None)
        return display.plot(ax=ax, ref_line=ref_line, **kwargs)

    @classmethod
    def from_estimator(cls, estimator: Any, X: Any, y: ArrayLike, *, sample_weight: Optional[ArrayLike] = None,
                       pos_label: Any = None, name: Optional[str] = None, ax: Any = None, ref_line: bool = True,
                       **kwargs: Any) -> "SmoothReliabilityDisplay":
        """Draws the smoothed reliability diagram of a fitted classifier's ``predict_proba(X)`` against ``y``.

        ``estimator`` is a fitted classifier (or a Pipeline ending in one) with
        ``predict_proba``; ``name`` defaults to its class name; ``pos_label``
        to ``estimator.classes_[1]``. Other arguments as in :meth:`from_predictions`.
        """
        if not is_classifier(estimator):
            raise TypeError(f"estimator must be a fitted classifier, got {type(estimator).__name__}")
        if not hasattr(estimator, "predict_proba"):
            raise TypeError(f"{type(estimator).__name__} has no predict_proba: the diagram needs probabilities "
                            "(wrap it in SmoothCalibratedClassifier or CalibratedClassifierCV)")
        check_is_fitted(estimator)
        proba = estimator.predict_proba(X)
        name = type(estimator).__name__ if name is None else name
        return cls.from_predictions(y, proba, sample_weight=sample_weight, pos_label=pos_label,
                                    labels=estimator.classes_, name=name, ax=ax, ref_line=ref_line, **kwargs)


# ----------------------------------------------------------------------------
# CalibratedClassifierCV with SmoothCalibrator
# ----------------------------------------------------------------------------
class _CalibratedClassifier:
    """One fitted classifier with one calibrator per calibrated class (one for a binary problem)."""

    def __init__(self, estimator: Any, calibrators: list, columns: np.ndarray, n_classes: int):
        self.estimator = estimator
        self.calibrators = calibrators
        self.columns = columns  #: for each of estimator's classes, its index in the wrapper's classes_
        self.n_classes = n_classes

    def predict_proba(self, X: Any) -> np.ndarray:
        raw = self.estimator.predict_proba(X)
        if self.n_classes == 2:
            p = _positive(raw, self.columns)
            q = self.calibrators[0].predict(p)
            return np.column_stack([1.0 - q, q])
        out = np.zeros((raw.shape[0], self.n_classes))
        for j, c in enumerate(self.columns):  # a loop over classes
            out[:, c] = self.calibrators[j].predict(_clipped(raw[:, j]))
        total = out.sum(axis=1, keepdims=True)
        zero = total[:, 0] == 0.0
        out[zero] = 1.0 / self.n_classes  # every class calibrated to 0: uniform, as CalibratedClassifierCV does
        total[zero] = 1.0
        return out / total


def _clipped(p: np.ndarray) -> np.ndarray:
    """A probability column; a rounding of 1 ulp past [0, 1] (softmax sums) is clamped, anything else is left
    for the calibrator to refuse."""
    return np.clip(p, 0.0, 1.0) if np.all((p > -1e-12) & (p < 1.0 + 1e-12)) else p


def _positive(raw: np.ndarray, columns: np.ndarray) -> np.ndarray:
    """The positive class's column of a binary model's predict_proba (zeros if the model never saw it)."""
    where = np.flatnonzero(columns == 1)
    return _clipped(raw[:, where[0]]) if where.size else np.zeros(raw.shape[0])


def _subset(params: dict, rows: np.ndarray, n: int) -> dict:
    """The rows ``rows`` of every per-sample parameter (length n); others as they are."""
    out = {}
    for key, value in params.items():
        per_sample = value is not None and not np.isscalar(value) and hasattr(value, "__len__") and \
            _num_samples(value) == n
        out[key] = _safe_indexing(value, rows) if per_sample else value
    return out


class SmoothCalibratedClassifier(ClassifierMixin, MetaEstimatorMixin, BaseEstimator):
    """``CalibratedClassifierCV`` with the SmoothECE's recalibration map.

    Fits ``estimator`` and a :class:`smoothece.SmoothCalibrator` (or a clone of
    ``calibrator``) on its ``predict_proba`` out of sample, as scikit-learn's
    ``CalibratedClassifierCV`` does with ``method="isotonic"``: with
    ``ensemble=True``, for each cross-validation split a clone of the
    estimator is fitted on the training part and calibrated on the held-out
    part, and ``predict_proba`` averages the calibrated pairs; with
    ``ensemble=False`` the calibrator is fitted on ``cross_val_predict``'s
    out-of-fold probabilities and the estimator on all the data. An already
    fitted classifier is calibrated by wrapping it in
    ``sklearn.frozen.FrozenEstimator``: all the data passed to ``fit`` then
    calibrate it (keep it apart from the data it was trained on).

    Binary problems calibrate the positive class's probability p and return
    (1 − μ̂(p), μ̂(p)). With K > 2 classes each class's probability is
    calibrated one-vs-rest and the rows are renormalised to sum to 1 (uniform
    where every calibrated probability is 0), as ``CalibratedClassifierCV``
    does.

    Parameters
    ----------
    estimator : classifier
        A classifier with ``predict_proba`` (or a Pipeline ending in one).
    calibrator : regressor, optional
        The 1-D calibration map, cloned for each class and split:
        ``fit(p, y, sample_weight=)``, ``predict(p)``. Default
        ``SmoothCalibrator()``; e.g. ``SmoothCalibrator(monotone=True)`` keeps
        the order of the predictions.
    cv : int, cross-validation generator or iterable, optional
        As in ``CalibratedClassifierCV`` (None: 5-fold, stratified for classifiers).
    ensemble : bool or "auto", default "auto"
        As in ``CalibratedClassifierCV``: "auto" is False for a
        ``FrozenEstimator``, else True.

    Attributes
    ----------
    classes_ : ndarray
    calibrated_classifiers_ : list
        The fitted pairs: each has ``estimator`` and ``calibrators`` (one per
        calibrated class).
    n_features_in_, feature_names_in_
        From the (first) fitted estimator, when it has them.
    """

    def __init__(self, estimator: Any = None, *, calibrator: Any = None, cv: Any = None, ensemble: Any = "auto"):
        self.estimator = estimator
        self.calibrator = calibrator
        self.cv = cv
        self.ensemble = ensemble

    # -- helpers ----------------------------------------------------------------------

    def _checked_estimator(self) -> Any:
        if self.estimator is None:
            raise TypeError("SmoothCalibratedClassifier needs an estimator: a classifier with predict_proba")
        if not hasattr(self.estimator, "predict_proba"):
            raise TypeError(f"estimator {type(self.estimator).__name__} has no predict_proba; "
                            "SmoothCalibratedClassifier recalibrates probabilities")
        return self.estimator

    def _new_calibrator(self) -> Any:
        return SmoothCalibrator() if self.calibrator is None else clone(self.calibrator)

    def _calibrate(self, estimator: Any, proba: np.ndarray, y_index: np.ndarray, sample_weight: Any,
                   columns: np.ndarray) -> _CalibratedClassifier:
        """Calibrators fitted on ``proba`` (columns: the estimator's classes, mapped by ``columns``)."""
        n_classes = self.classes_.size
        calibrators = []
        with _sklearn_names():
            if n_classes == 2:
                calibrators.append(self._new_calibrator().fit(_positive(proba, columns), y_index == 1,
                                                              sample_weight=sample_weight))
            else:
                for j, c in enumerate(columns):  # one-vs-rest, a loop over classes
                    calibrators.append(self._new_calibrator().fit(_clipped(proba[:, j]), y_index == c,
                                                                  sample_weight=sample_weight))
        return _CalibratedClassifier(estimator, calibrators, columns, n_classes)

    def _columns(self, estimator: Any) -> np.ndarray:
        """Where each of the fitted estimator's classes sits in ``classes_``."""
        cols = np.searchsorted(self.classes_, estimator.classes_)
        if np.any(cols >= self.classes_.size) or np.any(self.classes_[np.minimum(cols, self.classes_.size - 1)]
                                                        != estimator.classes_):
            raise ValueError(f"the estimator's classes_ {estimator.classes_!r} are not among y's classes "
                             f"{self.classes_!r}")
        return cols

    # -- scikit-learn protocol ----------------------------------------------------------

    def fit(self, X: Any, y: ArrayLike, sample_weight: Optional[ArrayLike] = None,
            **fit_params: Any) -> "SmoothCalibratedClassifier":
        """Fits the estimator(s) and their calibrators; returns self.

        ``sample_weight`` weights the calibration, and the estimator's fit when
        it takes ``sample_weight`` (with metadata routing enabled, when the
        estimator requests it); ``fit_params`` go to the estimator's fit.
        """
        check_classification_targets(y)
        X, y = indexable(X, y)
        estimator = self._checked_estimator()
        if self.cv == "prefit":
            raise ValueError("cv='prefit' is gone from scikit-learn: wrap the fitted classifier in "
                             "sklearn.frozen.FrozenEstimator instead")
        if self.ensemble not in ("auto", True, False):
            raise ValueError(f"ensemble must be 'auto', True or False, got {self.ensemble!r}")
        ensemble = not isinstance(estimator, FrozenEstimator) if self.ensemble == "auto" else bool(self.ensemble)
        labels = np.asarray(y)
        self.classes_, y_index = np.unique(labels, return_inverse=True)
        if self.classes_.size < 2:
            raise ValueError(f"y has {self.classes_.size} class: calibration needs at least 2")
        n = _num_samples(X)
        if sample_weight is not None:
            sample_weight = np.asarray(sample_weight)
            if sample_weight.shape != (n,):
                raise InputError(f"sample_weight must have shape ({n},), got {sample_weight.shape}",
                                 "sample_weight")

        if sklearn.get_config().get("enable_metadata_routing", False):
            routed = process_routing(self, "fit", sample_weight=sample_weight, **fit_params)
            estimator_params, split_params = dict(routed.estimator.fit), dict(routed.splitter.split)
        else:
            estimator_params, split_params = dict(fit_params), {}
            if sample_weight is not None and not isinstance(estimator, FrozenEstimator):  # a frozen one fits nothing
                if "sample_weight" in signature(estimator.fit).parameters:
                    estimator_params["sample_weight"] = sample_weight
                else:
                    warnings.warn(f"{type(estimator).__name__}.fit does not take sample_weight: the weights are "
                                  "used for the calibration only", UserWarning, stacklevel=2)

        pairs = []
        if isinstance(estimator, FrozenEstimator) and not ensemble:
            # Nothing to fit: its predictions on every row are out of sample already.
            fitted = estimator
            pairs.append(self._calibrate(fitted, fitted.predict_proba(X), y_index, sample_weight,
                                         self._columns(fitted)))
        else:
            cv = check_cv(self.cv, labels, classifier=True)
            splits = list(cv.split(X, labels, **split_params))
            if ensemble:
                for train, test in splits:
                    model = clone(estimator).fit(_safe_indexing(X, train), labels[train],
                                                 **_subset(estimator_params, train, n))
                    w = None if sample_weight is None else sample_weight[test]
                    pairs.append(self._calibrate(model, model.predict_proba(_safe_indexing(X, test)),
                                                 y_index[test], w, self._columns(model)))
            else:
                proba = np.zeros((n, self.classes_.size))
                for train, test in splits:  # cross_val_predict, with the classes of every fold aligned
                    model = clone(estimator).fit(_safe_indexing(X, train), labels[train],
                                                 **_subset(estimator_params, train, n))
                    proba[np.ix_(test, self._columns(model))] = model.predict_proba(_safe_indexing(X, test))
                model = clone(estimator).fit(X, labels, **estimator_params)
                pairs.append(self._calibrate(model, proba[:, self._columns(model)], y_index, sample_weight,
                                             self._columns(model)))
        self.calibrated_classifiers_ = pairs
        first = pairs[0].estimator
        if hasattr(first, "n_features_in_"):
            self.n_features_in_ = first.n_features_in_
        if hasattr(first, "feature_names_in_"):
            self.feature_names_in_ = first.feature_names_in_
        return self

    def predict_proba(self, X: Any) -> np.ndarray:
        """Calibrated class probabilities, shape (n, n_classes): the mean over the calibrated pairs."""
        check_is_fitted(self)
        total = self.calibrated_classifiers_[0].predict_proba(X)
        for pair in self.calibrated_classifiers_[1:]:
            total = total + pair.predict_proba(X)
        return total / len(self.calibrated_classifiers_)

    def predict(self, X: Any) -> np.ndarray:
        """The class of highest calibrated probability."""
        return self.classes_[np.argmax(self.predict_proba(X), axis=1)]

    def get_metadata_routing(self) -> MetadataRouter:
        """Metadata routing: ``sample_weight`` is consumed here (calibration) and routed to the estimator's
        fit (when it requests it) and to the splitter."""
        return (MetadataRouter(owner=self)
                .add_self_request(self)
                .add(estimator=self._checked_estimator(), method_mapping=MethodMapping().add(caller="fit",
                                                                                              callee="fit"))
                .add(splitter=self.cv,
                     method_mapping=MethodMapping().add(caller="fit", callee="split")))

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        if self.estimator is not None:
            tags.input_tags.sparse = get_tags(self.estimator).input_tags.sparse
        return tags
