"""Multiclass calibration reduced to the binary SmoothECE (the README's "What the SmoothECE measures").

Two reductions of an (n, K) matrix of class probabilities (or logits) with
integer labels in [0, K):

- **Top-label (confidence) calibration**: ``f = max_c p_c`` and
  ``y = [argmax_c p_c == label]``; :func:`top_label_smece`,
  :func:`top_label_diagram`, :func:`confidence_pairs`.
- **Class-wise (one-vs-rest) calibration**: for each class c, ``f = p_c`` and
  ``y = [label == c]``; :func:`classwise_smece`.

Memory: the (n, K) matrix is never copied. Checks and the top-label pairs are
computed over blocks of rows (about 2**18 entries at a time); a probability
column ``probs[:, c]`` is handed to the core as a strided view and read in
place. From logits, the log-sum-exp of each row is computed once (n floats)
and each class column ``exp(z_c − lse)`` is formed in one reused buffer.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any, Optional

import numpy as np

from . import _validate
from ._api import smece as _smece
from ._errors import InputError
from ._typing import ArrayLike
from ._util import ToDict
from ._util import frozen as _frozen
from .diagram import ReliabilityDiagram, diagram_options
from .diagram import reliability_diagram as _reliability_diagram

#: Entries per block of rows in the passes over the (n, K) matrix.
_BLOCK_ENTRIES = 1 << 18
#: The diagram's scalar options, checked before the passes over the matrix.
_DIAGRAM_OPTIONS = ("n_boot", "level", "seed", "consistency", "n_sim", "sample_size", "weight_kind", "threads")

__all__ = [
    "ClasswiseResult",
    "classwise_smece",
    "confidence_pairs",
    "top_label_diagram",
    "top_label_smece",
]


# ----------------------------------------------------------------------------
# validation
# ----------------------------------------------------------------------------
def _show(v: Any) -> str:
    """A value for an error message: 1.5, nan, -inf, 3 (not np.float64(1.5))."""
    return repr(v.item() if isinstance(v, np.generic) else v)


def _show_sum(s: float) -> str:
    """A row sum to 15 digits (1.05, not 1.0499999999999998), in full where that would read as 1."""
    short = f"{s:.15g}"
    return short if float(short) != 1.0 else repr(s)


def _matrix(x: Any, name: str) -> np.ndarray:
    """A 2-D (n, K) numeric array, read in place when float32/float64."""
    if isinstance(x, (str, bytes)):
        raise TypeError(f"{name} must be a 2-D array of numbers, got {type(x).__name__}")
    arr = _validate.array(x, name)  # masked or missing (NA) entries refused, object arrays of numbers read
    if arr.dtype.kind not in "biuf":
        raise TypeError(f"{name} must be an array of real numbers, got dtype {arr.dtype}")
    if arr.ndim != 2:
        raise InputError(f"{name} must be 2-D with shape (n, K), got shape {arr.shape}", name)
    n, k = arr.shape
    if n == 0:
        raise InputError(f"{name} is empty (shape {arr.shape}): at least one row is needed", name)
    if k < 2:
        raise InputError(f"{name} must have K >= 2 classes (columns), got shape {arr.shape}", name)
    if arr.dtype not in (np.dtype(np.float32), np.dtype(np.float64)):
        arr = arr.astype(np.float64)  # bool, int, float16: one exact conversion
    return arr


def _source(probs: Any, logits: Any) -> tuple:
    """('probs' | 'logits', the 2-D array)."""
    if (probs is None) == (logits is None):
        got = "both" if probs is not None else "neither"
        raise TypeError(f"pass exactly one of probs or logits, got {got}")
    if probs is not None:
        return "probs", _matrix(probs, "probs")
    return "logits", _matrix(logits, "logits")


def _labels(labels: Any, n: int, k: int, name: str) -> np.ndarray:
    """Class indices as an intp array of length n; ValueError names the first bad one."""
    if labels is None:
        raise TypeError("labels must be an array of class indices, got None")
    if isinstance(labels, (str, bytes)):
        raise TypeError(f"labels must be an array of class indices, got {type(labels).__name__}")
    lab = _validate.array(labels, "labels")  # as for probs
    if lab.dtype.kind not in "biuf":
        raise TypeError(f"labels must be an array of integer class indices, got dtype {lab.dtype}")
    if lab.ndim != 1:
        hint = " (one-hot labels? pass labels.argmax(axis=1))" if lab.ndim == 2 else ""
        raise InputError(f"labels must be 1-D class indices, got shape {lab.shape}{hint}", "labels")
    if lab.shape[0] != n:
        raise InputError(f"labels has length {lab.shape[0]} but {name} has {n} rows (shape ({n}, {k}))", "labels")
    if lab.dtype.kind == "f":
        bad = ~((lab >= 0) & (lab < k) & (lab == np.floor(lab)))  # NaN compares False: bad
    elif lab.dtype.kind == "b":
        bad = None  # 0/1 are valid classes since K >= 2
    else:
        bad = (lab < 0) | (lab >= k)
    if bad is not None:
        count = int(np.count_nonzero(bad))
        if count:
            i = int(np.argmax(bad))
            raise InputError(
                f"labels[{i}] = {_show(lab[i])}: labels must be integer class indices in [0, {k}) "
                f"({count} of {n} values in labels bad, first at index {i})", "labels", i, float(lab[i]), count, n
            )
    return lab.astype(np.intp, copy=False)


def _weights(weights: Any, n: int, name: str) -> Optional[np.ndarray]:
    """Type and length only; the core checks the values (and names the index)."""
    if weights is None:
        return None
    w = _validate.as_1d(weights, "weights", (np.dtype(np.float32), np.dtype(np.float64)))
    if w.shape[0] != n:
        raise InputError(f"weights has length {w.shape[0]} but {name} has {n} rows", "weights")
    return w


def _tolerance(atol: Any, k: int) -> float:
    if atol is None:
        return 1e-6 * k
    value = _validate.real(atol, "atol", "a non-negative number or None")
    if not (value >= 0.0 and np.isfinite(value)):
        raise ValueError(f"atol must be a non-negative finite number, got {atol!r}")
    return value


def _blocks(n: int, k: int):
    step = max(1, _BLOCK_ENTRIES // k)
    for start in range(0, n, step):
        yield slice(start, min(n, start + step))


def _first_bad_entry(mat: np.ndarray, bad_rows: np.ndarray, sl: slice, is_bad) -> tuple:
    """(row, column, value) of the first bad entry among the first bad row of a block."""
    r = int(np.argmax(bad_rows))
    row = mat[sl.start + r]
    c = int(np.argmax(is_bad(row)))
    return sl.start + r, c, row[c]


def _bad_probability(v: np.ndarray) -> np.ndarray:
    return ~((v >= 0) & (v <= 1))  # NaN compares False: bad


def _bad_logit(v: np.ndarray) -> np.ndarray:
    return ~np.isfinite(v)


class _Scan:
    """One blockwise pass over the matrix: value checks, and optionally the top-label pairs.

    For probabilities: every entry finite and in [0, 1], every row summing to 1
    within ``tol``. For logits: every entry finite; also the row log-sum-exp.
    """

    def __init__(self, kind: str, mat: np.ndarray, tol: float, labels: Optional[np.ndarray], want_lse: bool):
        n, k = mat.shape
        # Empty unless asked for: the pairs with labels, the log-sum-exp with want_lse.
        self.f = np.empty(n if labels is not None else 0, dtype=np.float64)
        self.y = np.empty(n if labels is not None else 0, dtype=np.bool_)
        self.lse = np.empty(n if want_lse else 0, dtype=np.float64)
        first_entry = first_row = None
        bad_entries = bad_rows_total = 0
        is_bad = _bad_probability if kind == "probs" else _bad_logit
        for sl in _blocks(n, k):
            block = mat[sl]
            lo = block.min(axis=1)
            hi = block.max(axis=1)
            if kind == "probs":
                entry_bad = ~((lo >= 0) & (hi <= 1))
            else:
                entry_bad = ~(np.isfinite(lo) & np.isfinite(hi))
            if entry_bad.any():
                bad_entries += int(np.count_nonzero(is_bad(block[entry_bad])))
                if first_entry is None:
                    first_entry = _first_bad_entry(mat, entry_bad, sl, is_bad)
                continue
            if first_entry is not None:
                continue  # only counting bad entries from here on
            if kind == "probs":
                sums = block.sum(axis=1, dtype=np.float64)
                row_bad = np.abs(sums - 1.0) > tol
                if row_bad.any():
                    bad_rows_total += int(np.count_nonzero(row_bad))
                    if first_row is None:
                        r = int(np.argmax(row_bad))
                        first_row = (sl.start + r, float(sums[r]))
                    continue
                if first_row is not None or labels is None:
                    continue
                idx = block.argmax(axis=1)
                self.f[sl] = np.take_along_axis(block, idx[:, None], axis=1)[:, 0]
                np.equal(idx, labels[sl], out=self.y[sl])
            else:
                shifted = block.astype(np.float64, copy=True)
                with np.errstate(over="ignore", under="ignore"):  # z - max ≤ 0; huge gaps give -inf, exp → 0
                    shifted -= hi.astype(np.float64)[:, None]
                    np.exp(shifted, out=shifted)
                total = shifted.sum(axis=1)  # ≥ 1: the row's maximum contributes exp(0)
                if want_lse:
                    self.lse[sl] = hi + np.log(total)
                if labels is not None:
                    # softmax p = shifted / total; its maximum is 1 / total (at the row's max logit).
                    shifted /= total[:, None]
                    idx = shifted.argmax(axis=1)
                    self.f[sl] = np.take_along_axis(shifted, idx[:, None], axis=1)[:, 0]
                    np.equal(idx, labels[sl], out=self.y[sl])
        name = kind
        if first_entry is not None:
            r, c, v = first_entry
            what = "finite and in [0, 1]" if kind == "probs" else "finite"
            raise InputError(
                f"{name}[{r}, {c}] = {_show(v)}: {name} entries must be {what} "
                f"({bad_entries} of {mat.size} entries in {name} bad, first in row {r})",
                name, r, float(v), bad_entries, mat.size
            )
        if first_row is not None:
            r, s = first_row
            raise InputError(
                f"{name}[{r}] sums to {_show_sum(s)}: rows of probs must sum to 1 within atol={tol:.3g} "
                f"({bad_rows_total} of {n} rows in probs bad, first at row {r}); "
                f"normalize the rows, raise atol, or pass logits= instead", name, r, float(s), bad_rows_total, n
            )


def _prepare(probs, labels, logits, weights, atol) -> tuple:
    kind, mat = _source(probs, logits)
    n, k = mat.shape
    lab = _labels(labels, n, k, kind)
    w = _weights(weights, n, kind)
    tol = _tolerance(atol, k)
    return kind, mat, lab, w, tol


# ----------------------------------------------------------------------------
# top-label (confidence) calibration
# ----------------------------------------------------------------------------
def confidence_pairs(
    probs: Optional[ArrayLike] = None,
    labels: Optional[ArrayLike] = None,
    *,
    logits: Optional[ArrayLike] = None,
    atol: Optional[float] = None,
) -> tuple:
    """The (confidence, correctness) pairs of top-label calibration.

    ``f_i = max_c p_ic`` and ``y_i = [argmax_c p_ic == labels_i]``. Ties are
    broken as :func:`numpy.argmax` does: the first (lowest-index) maximum is
    the predicted class.

    Parameters
    ----------
    probs : array_like, shape (n, K), optional
        Class probabilities, K ≥ 2: entries finite and in [0, 1], each row
        summing to 1 within ``atol``. float32 and float64 are read in place.
    labels : array_like, shape (n,)
        True classes: integer-valued (any integer, bool or float dtype) in
        [0, K).
    logits : array_like, shape (n, K), optional
        Unnormalized log-probabilities (finite), instead of ``probs``. The
        softmax is computed stably per row (the row maximum is subtracted
        before exponentiating, i.e. log-sum-exp), so logits of any finite
        magnitude give finite probabilities; the predicted class is the
        argmax of the resulting probabilities.
    atol : float, optional
        Tolerance on |Σ_c p_ic − 1| for ``probs``; default ``1e-6 · K``.

    Returns
    -------
    f : numpy.ndarray of float64, shape (n,)
        Top-label confidences, in [1/K, 1].
    y : numpy.ndarray of bool, shape (n,)
        Whether the top-label prediction is correct.

    Raises
    ------
    TypeError
        Neither or both of ``probs`` and ``logits``; non-numeric input.
    ValueError
        Not 2-D, K < 2, empty, length mismatch with ``labels``; entries not
        finite or outside [0, 1]; rows not summing to 1; labels not integer
        or outside [0, K). The message names the argument, the first bad
        index, its value and how many are bad. Inputs are never modified.

    Examples
    --------
    >>> probs = [[0.7, 0.2, 0.1], [0.3, 0.3, 0.4]]
    >>> confidence_pairs(probs, [0, 0])
    (array([0.7, 0.4]), array([ True, False]))
    """
    kind, mat, lab, _, tol = _prepare(probs, labels, logits, None, atol)
    scan = _Scan(kind, mat, tol, lab, want_lse=False)
    return scan.f, scan.y


def top_label_smece(
    probs: Optional[ArrayLike] = None,
    labels: Optional[ArrayLike] = None,
    *,
    logits: Optional[ArrayLike] = None,
    weights: Optional[ArrayLike] = None,
    atol: Optional[float] = None,
    threads: Optional[int] = None,
) -> float:
    """The SmoothECE of top-label (confidence) calibration.

    :func:`smoothece.smece` of the pairs of :func:`confidence_pairs`:
    ``f = max_c p_c``, ``y = [argmax_c p_c == label]``.

    Parameters
    ----------
    probs, labels, logits, atol
        As in :func:`confidence_pairs`.
    weights : array_like, shape (n,), optional
        Non-negative finite row weights, as in :func:`smoothece.smece`.
    threads : int, optional
        As in :func:`smoothece.smece`.

    Returns
    -------
    float
        σ* of the confidence pairs.

    Raises
    ------
    TypeError, ValueError
        As in :func:`confidence_pairs`; bad weights as in :func:`smoothece.smece`.
    """
    kind, mat, lab, w, tol = _prepare(probs, labels, logits, weights, atol)
    scan = _Scan(kind, mat, tol, lab, want_lse=False)
    return _smece(scan.f, scan.y, weights=w, threads=threads)


def top_label_diagram(
    probs: Optional[ArrayLike] = None,
    labels: Optional[ArrayLike] = None,
    *,
    logits: Optional[ArrayLike] = None,
    weights: Optional[ArrayLike] = None,
    atol: Optional[float] = None,
    **kwargs: Any,
) -> ReliabilityDiagram:
    """The smoothed reliability diagram of top-label (confidence) calibration.

    :func:`smoothece.reliability_diagram` of the pairs of
    :func:`confidence_pairs` (x axis: confidence; y axis: accuracy).

    Parameters
    ----------
    probs, labels, logits, atol
        As in :func:`confidence_pairs`.
    weights : array_like, shape (n,), optional
        Non-negative finite row weights.
    **kwargs
        Passed to :func:`smoothece.reliability_diagram` (``sigma``,
        ``n_boot``, ``level``, ``seed``, ``consistency``, ``n_sim``,
        ``sample_size``, ``threads``).

    Returns
    -------
    ReliabilityDiagram
        Its plot labels the axes "Confidence" and "Accuracy".
    """
    options = {k: kwargs.pop(k) for k in _DIAGRAM_OPTIONS if k in kwargs}
    options = diagram_options(**options)  # checked before the pass over the matrix
    kind, mat, lab, w, tol = _prepare(probs, labels, logits, weights, atol)
    scan = _Scan(kind, mat, tol, lab, want_lse=False)
    diagram = _reliability_diagram(scan.f, scan.y, weights=w, **kwargs, **options)
    return dataclasses.replace(diagram, xlabel="Confidence", ylabel="Accuracy")


# ----------------------------------------------------------------------------
# class-wise (one-vs-rest) calibration
# ----------------------------------------------------------------------------
@dataclass(frozen=True, repr=False)
class ClasswiseResult(ToDict):
    """Class-wise (one-vs-rest) SmoothECE of a multiclass model.

    For each evaluated class c: σ* of the pairs ``f = p_c``, ``y = [label == c]``.
    """

    per_class: np.ndarray  #: SmoothECE of each class in ``classes``, in that order
    mean: float  #: unweighted average of ``per_class``
    weighted_mean: float  #: average of ``per_class`` weighted by ``frequency`` (NaN if they are all 0)
    classes: np.ndarray  #: the evaluated class indices
    frequency: np.ndarray  #: share of the total weight (or rows) with label == c

    def __repr__(self) -> str:
        k = self.classes.size
        if k:
            i = int(np.argmax(self.per_class))
            worst = f", worst=class {int(self.classes[i])}: {self.per_class[i]:.6g}"
        else:  # pragma: no cover - classes is never empty
            worst = ""
        return (f"ClasswiseResult(mean={self.mean:.6g}, weighted_mean={self.weighted_mean:.6g}, "
                f"{k} classes{worst})")


def _classes(classes: Any, k: int) -> np.ndarray:
    if classes is None:
        return np.arange(k, dtype=np.intp)
    if isinstance(classes, (str, bytes)):
        raise TypeError(f"classes must be a sequence of class indices, got {type(classes).__name__}")
    arr = np.asarray(classes)
    if arr.ndim == 0:
        arr = arr.reshape(1)
    if arr.dtype.kind not in "iu":
        raise TypeError(f"classes must be integer class indices, got dtype {arr.dtype}")
    if arr.ndim != 1 or arr.size == 0:
        raise ValueError(f"classes must be a non-empty 1-D sequence of class indices, got shape {arr.shape}")
    bad = (arr < 0) | (arr >= k)
    if bad.any():
        i = int(np.argmax(bad))
        raise ValueError(f"classes[{i}] = {_show(arr[i])}: classes must be in [0, {k}) "
                         f"({int(np.count_nonzero(bad))} of {arr.size} values in classes bad, first at index {i})")
    arr = arr.astype(np.intp)
    uniq, counts = np.unique(arr, return_counts=True)
    if uniq.size != arr.size:
        raise ValueError(f"classes must not repeat a class, got {int(uniq[np.argmax(counts > 1)])} "
                         f"{int(counts.max())} times")
    return arr


def classwise_smece(
    probs: Optional[ArrayLike] = None,
    labels: Optional[ArrayLike] = None,
    *,
    logits: Optional[ArrayLike] = None,
    weights: Optional[ArrayLike] = None,
    classes: Optional[ArrayLike] = None,
    atol: Optional[float] = None,
    threads: Optional[int] = None,
) -> ClasswiseResult:
    """Class-wise (one-vs-rest) SmoothECE.

    For each class c: :func:`smoothece.smece` of ``f = p_c`` (the column
    ``probs[:, c]``, read in place) and ``y = [labels == c]``.

    Parameters
    ----------
    probs, labels, logits, atol
        As in :func:`confidence_pairs`.
    weights : array_like, shape (n,), optional
        Non-negative finite row weights; they weight the rows inside every
        class's SmoothECE and the class frequencies of ``weighted_mean``.
    classes : array_like of int, optional
        Evaluate only these classes (distinct, in [0, K)), in this order.
        Default: all K classes.
    threads : int, optional
        As in :func:`smoothece.smece`.

    Returns
    -------
    ClasswiseResult
        ``per_class`` (one value per evaluated class), ``mean`` (their plain
        average), ``weighted_mean`` (weighted by each class's frequency
        among the labels, renormalized over the evaluated classes; NaN if
        none of them occurs), ``classes`` and ``frequency`` (each evaluated
        class's share of the rows, or of the total weight with ``weights``).

    Raises
    ------
    TypeError, ValueError
        As in :func:`confidence_pairs`; bad ``weights`` as in
        :func:`smoothece.smece`; ``classes`` out of range or repeated.

    Notes
    -----
    Cost: one pass over the matrix for the checks, then one O(n) pass of the
    core per class; memory O(n) besides the inputs. From logits each class
    column is ``exp(z_c − logsumexp(z))``, formed in one reused buffer.
    """
    kind, mat, lab, w, tol = _prepare(probs, labels, logits, weights, atol)
    k = mat.shape[1]
    cls = _classes(classes, k)
    scan = _Scan(kind, mat, tol, None, want_lse=(kind == "logits"))
    y = np.empty(lab.shape[0], dtype=np.bool_)
    col = np.empty(lab.shape[0] if kind == "logits" else 0, dtype=np.float64)  # a class's probabilities
    values = np.empty(cls.size, dtype=np.float64)
    for j, c in enumerate(cls):  # a loop over classes; the rows are the core's
        np.equal(lab, c, out=y)
        if kind == "probs":
            f = mat[:, c]  # strided view: the core reads it in place
        else:
            np.subtract(mat[:, c], scan.lse, out=col)
            with np.errstate(under="ignore"):
                np.exp(col, out=col)
            np.minimum(col, 1.0, out=col)  # exp(z_c − lse) ≤ 1 up to one rounding
            f = col
        values[j] = _smece(f, y, weights=w, threads=threads)
    counts = np.bincount(lab, weights=w, minlength=k).astype(np.float64)
    total = counts.sum()
    freq = counts[cls] / total if total > 0 else np.zeros(cls.size)
    fsum = freq.sum()
    weighted = float(np.dot(values, freq) / fsum) if fsum > 0 else float("nan")
    return ClasswiseResult(per_class=_frozen(values), mean=float(values.mean()), weighted_mean=weighted,
                           classes=_frozen(cls), frequency=_frozen(freq))
