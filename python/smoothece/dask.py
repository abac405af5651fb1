"""SmoothECE of Dask arrays and dataframes: one sketch per chunk, merged in a tree.

Every chunk (or partition) is summarized by its own :class:`CalibrationSketch`
(in either metric) where it lives, or, grouped by a column, by its own
:class:`GroupedSketch`; the sketches (at most about 40·resolution bytes per
sketch, whatever the chunk size) are merged ``split_every`` at a time in a
tree of :func:`dask.delayed` tasks, and the merged sketch answers every
question the array functions answer. Merging is exact up to the rounding of
the sums, so the result equals the one-machine result on the same data to
~1e-15.

A bad value is reported as the library reports it, with where it is added:
the chunk and the row of the whole array, or the partition, the column and
the dataframe's index label (from the error's fields, never its message).

Requires the optional extra: ``pip install "smoothece[dask]"``. Dask is
imported when these functions are called, never by ``import smoothece``.
All functions here are importable module-level functions, so the tasks
pickle for the ``"processes"`` scheduler and ``dask.distributed``.
"""

from __future__ import annotations

from typing import Any, Optional, Union

import numpy as np

from . import _validate
from ._errors import InputError
from .groups import GroupedSketch
from .sketch import CalibrationSketch

__all__ = [
    "sketch_from_dask",
    "sketch_from_dask_dataframe",
    "smece_dask",
    "smece_dask_dataframe",
]

_DEFAULT_SPLIT_EVERY = 8


def _import_dask():
    try:
        import dask
        import dask.array
    except ImportError as err:  # pragma: no cover - depends on the environment
        raise ImportError(
            "smoothece.dask needs Dask: pip install \"smoothece[dask]\" "
            "(or \"dask[array,dataframe]>=2023.1\")"
        ) from err
    return dask


# ----------------------------------------------------------------------------
# tasks (module level: they pickle by reference for the processes scheduler)
# ----------------------------------------------------------------------------
def _placed(err: InputError, where: str, index: Optional[int], position: Optional[str],
            column: Optional[str] = None) -> InputError:
    """The library's error with where it happened added: the chunk or partition, and the
    bad row's place in the whole collection. ``index`` becomes the error's index."""
    prefix = "" if column is None else f"column {column!r}: "
    extra = "" if err.index is None else f"; index and counts are within it; {position}"
    return InputError(f"{prefix}{err} [in {where}{extra}]", err.argument, -1 if index is None else index,
                      err.value, err.count, err.size)


def _chunk_sketch(f, y, w, resolution: int, metric: str, clip, index: int, start: int) -> CalibrationSketch:
    sketch = CalibrationSketch(resolution, metric)
    if len(f):
        try:
            sketch.update(f, y, w, clip=clip, threads=1)
        except InputError as err:
            row = None if err.index is None else start + err.index
            raise _placed(err, f"Dask chunk {index} (rows {start} to {start + len(f) - 1})", row,
                          f"row {row} of the whole array") from None
    return sketch


def _column(part, name: str) -> np.ndarray:
    col = part[name]
    if isinstance(col.dtype, np.dtype):
        return col.to_numpy()
    # pandas extension dtypes (nullable Float64/Int64/boolean, Arrow): NA becomes NaN, refused by the core.
    return col.to_numpy(dtype=np.float64, na_value=np.nan)


def _label(v):
    return v.item() if isinstance(v, np.generic) else v


def _partition_sketch(part, pred: str, label: str, weight: Optional[str], by: Optional[str], resolution: int,
                      metric: str, clip, index: int):
    """The partition's CalibrationSketch, or its GroupedSketch when ``by`` names the key column."""
    sketch = CalibrationSketch(resolution, metric) if by is None else GroupedSketch(resolution, metric)
    if len(part):
        f = _column(part, pred)
        y = _column(part, label)
        w = None if weight is None else _column(part, weight)
        try:
            if by is None:
                sketch.update(f, y, w, clip=clip, threads=1)
            else:
                sketch.update(f, y, part[by], w, clip=clip, threads=1)
        except InputError as err:
            column = {"f": pred, "y": label, "weights": weight, "groups": by}.get(err.argument)
            where = None if err.index is None else f"index label {_label(part.index[err.index])!r} of the dataframe"
            raise _placed(err, f"Dask partition {index}", err.index, where, column) from None
    return sketch


def _merge(*sketches: CalibrationSketch) -> CalibrationSketch:
    """A new sketch: the sum of the given ones (the inputs are left unchanged)."""
    out = sketches[0].copy()
    for s in sketches[1:]:
        out.merge(s)
    return out


def _merge_groups(resolution: int, metric: str, *sketches: GroupedSketch) -> GroupedSketch:
    """A new grouped sketch: the sum of the given ones, group by group (the inputs are left unchanged)."""
    out = GroupedSketch(resolution, metric)
    for s in sketches:
        out.merge(s)
    return out


# ----------------------------------------------------------------------------
# helpers
# ----------------------------------------------------------------------------
def _split_every(split_every: Any) -> int:
    if split_every is None:
        return _DEFAULT_SPLIT_EVERY
    if isinstance(split_every, bool) or not isinstance(split_every, (int, np.integer)):
        raise TypeError(f"split_every must be an int >= 2 or None, got {split_every!r}")
    if split_every < 2:
        raise ValueError(f"split_every must be >= 2, got {split_every}")
    return int(split_every)


def _check_settings(resolution: Any, metric: Any, clip: Any) -> int:
    """The resolution (None: the metric's default), after checking the settings here rather than in a task."""
    _validate.clip_range(clip)
    return CalibrationSketch(resolution, metric).resolution


def _tree(dask, leaves: list, split_every: int, merge=_merge, *settings):
    """A tree of delayed merges, ``split_every`` sketches per task (``merge(*settings, *sketches)``);
    returns the root."""
    task = dask.delayed(merge, pure=True)
    level = list(leaves)
    while len(level) > 1:
        level = [task(*settings, *level[i:i + split_every]) if len(level[i:i + split_every]) > 1 else level[i]
                 for i in range(0, len(level), split_every)]
    return level[0]


def _finish(dask, root, compute: bool, scheduler: Any):
    if not compute:  # a bool (checked before the graph is built)
        return root
    (sketch,) = dask.compute(root, scheduler=scheduler)
    return sketch


def _dask_1d(x: Any, name: str, da, like=None):
    """A 1-D Dask array of real numbers with known chunk sizes (rechunked like ``like``)."""
    if x is None:
        raise TypeError(f"{name} must be a 1-D Dask array of numbers, got None")
    given = type(x).__name__
    if _is_dask_collection(x) and not isinstance(x, da.Array):
        raise TypeError(f"{name} must be a 1-D Dask array, got {type(x).__module__}.{given}"
                        + ("; for a Dask dataframe use sketch_from_dask_dataframe(df, pred, label, weight), "
                           "or pass column.to_dask_array(lengths=True)"
                           if hasattr(x, "columns") or hasattr(x, "to_frame") else ""))
    if isinstance(x, (str, bytes)):
        raise TypeError(f"{name} must be a 1-D Dask array of numbers, got {given}")
    if not isinstance(x, da.Array):
        if like is None:
            raise TypeError(f"{name} must be a Dask array, got {given}; wrap it with "
                            f"dask.array.from_array({name}, chunks=...) or call smoothece.smece directly")
        x = np.asarray(x)  # a numpy array (or sequence) is accepted for y and weights, chunked like f
    if x.dtype.kind not in "biuf":
        raise TypeError(f"{name} must be an array of real numbers, got dtype {x.dtype}")
    if x.ndim != 1:
        raise ValueError(f"{name} must be 1-D, got shape {x.shape}")
    if isinstance(x, da.Array) and np.isnan(x.shape[0]):
        raise ValueError(f"{name} has unknown chunk sizes (shape {x.shape}); call {name}.compute_chunk_sizes() "
                         f"first, or use sketch_from_dask_dataframe for dataframe columns")
    if like is not None:
        if x.shape != like.shape:
            raise ValueError(f"f and {name} must have the same length, got f.shape={like.shape} "
                             f"and {name}.shape={x.shape}")
        if not isinstance(x, da.Array):
            x = da.from_array(x, chunks=like.chunks)
        elif x.chunks != like.chunks:
            x = x.rechunk(like.chunks)
    return x


def _is_dask_collection(x: Any) -> bool:
    try:
        from dask.base import is_dask_collection
    except ImportError:  # pragma: no cover
        return False
    return is_dask_collection(x)


# ----------------------------------------------------------------------------
# public API
# ----------------------------------------------------------------------------
def sketch_from_dask(
    f: Any,
    y: Any,
    weights: Any = None,
    *,
    metric: str = "l1",
    resolution: Optional[int] = None,
    clip: Union[bool, float] = False,
    split_every: Optional[int] = None,
    scheduler: Any = None,
    compute: bool = True,
) -> CalibrationSketch:
    """A :class:`CalibrationSketch` of Dask arrays, built chunk by chunk and merged in a tree.

    Parameters
    ----------
    f : dask.array.Array, shape (n,)
        Predicted probabilities in [0, 1], with known chunk sizes.
    y : dask.array.Array or array_like, shape (n,)
        Outcomes, 0 or 1. Rechunked to ``f``'s chunks if they differ (a numpy
        array is chunked like ``f``).
    weights : dask.array.Array or array_like, shape (n,), optional
        Non-negative finite weights, rechunked like ``y``.
    metric : {"l1", "logit"}, default "l1"
        As in :func:`smoothece.smece`: every chunk's sketch is of this metric.
    resolution : int, optional
        Grid intervals of every sketch (see :class:`CalibrationSketch`; by
        default 2**15 for l1, 2**20 for logit). With the
        default, ``.smece()`` equals ``smoothece.smece(f, y)`` on the same
        data up to rounding (~1e-15).
    clip : bool or float, default False
        As in :func:`smoothece.smece`.
    split_every : int, default 8
        Fan-in of the merge tree (sketches merged per task).
    scheduler : str or object, optional
        Passed to :func:`dask.compute` (``"threads"``, ``"processes"``,
        ``"synchronous"``, a ``distributed.Client``...). Default: the current
        Dask scheduler.
    compute : bool, default True
        False returns the :class:`dask.delayed.Delayed` that computes the
        sketch, to be computed together with other work.

    Returns
    -------
    CalibrationSketch
        The sketch of all rows (or a Delayed of it when ``compute=False``).

    Raises
    ------
    TypeError
        ``f`` not a Dask array (a Dask dataframe: use
        :func:`sketch_from_dask_dataframe`); non-numeric dtypes.
    ValueError
        Not 1-D, length mismatch, unknown chunk sizes, empty input, a bad
        metric or resolution.
    smoothece.InputError
        At compute time, bad values as in :func:`smoothece.smece`, with the
        chunk, its rows and the bad row's position in the whole array added
        to the message; its ``index`` is that position (its ``count`` and
        ``size`` are those of the chunk that failed first).

    Notes
    -----
    Each chunk's sketch is built with one thread (Dask supplies the
    parallelism across chunks). Data never leaves its worker: only sketches
    travel, and they pickle as their checksummed bytes.
    """
    _validate.flag(compute, "compute")
    dask = _import_dask()
    da = dask.array
    f = _dask_1d(f, "f", da)
    y = _dask_1d(y, "y", da, like=f)
    w = None if weights is None else _dask_1d(weights, "weights", da, like=f)
    if f.shape[0] == 0:
        raise ValueError("f is empty: at least one prediction is needed")
    resolution = _check_settings(resolution, metric, clip)
    fan_in = _split_every(split_every)

    fd = f.to_delayed().ravel()
    yd = y.to_delayed().ravel()
    wd = [None] * len(fd) if w is None else w.to_delayed().ravel()
    starts = np.concatenate([[0], np.cumsum(f.chunks[0])[:-1]]).astype(np.int64)
    task = dask.delayed(_chunk_sketch, pure=True)
    leaves = [task(fd[i], yd[i], wd[i], resolution, metric, clip, i, int(starts[i])) for i in range(len(fd))]
    return _finish(dask, _tree(dask, leaves, fan_in), compute, scheduler)


def sketch_from_dask_dataframe(
    df: Any,
    pred: str,
    label: str,
    weight: Optional[str] = None,
    *,
    by: Optional[str] = None,
    metric: str = "l1",
    resolution: Optional[int] = None,
    clip: Union[bool, float] = False,
    split_every: Optional[int] = None,
    scheduler: Any = None,
    compute: bool = True,
) -> Union[CalibrationSketch, GroupedSketch]:
    """A sketch of columns of a Dask dataframe, one per partition, merged in a tree.

    Parameters
    ----------
    df : dask.dataframe.DataFrame
        The data; partitions may have any (also unknown) lengths.
    pred : str
        Column of predicted probabilities in [0, 1].
    label : str
        Column of outcomes, 0 or 1 (bool, int or float).
    weight : str, optional
        Column of non-negative finite row weights.
    by : str, optional
        Column of group keys (numbers, strings, dates, booleans, a pandas
        categorical): then each partition builds a :class:`GroupedSketch`
        and the result is their merge, whose ``.smece_by_group()`` answers
        per group (as :func:`smoothece.smece_by_group` on the computed
        dataframe, to ~1e-9: sketches keep predictions to 2^-40).
    metric, resolution, clip, split_every, scheduler, compute
        As in :func:`sketch_from_dask`.

    Returns
    -------
    CalibrationSketch or GroupedSketch
        The sketch of all rows, grouped when ``by`` is given (or a Delayed of
        it when ``compute=False``).

    Raises
    ------
    TypeError
        ``df`` not a Dask dataframe; a named column not numeric or bool.
    ValueError
        A named column missing.
    smoothece.InputError
        At compute time, bad values (or missing group keys) as in
        :func:`smoothece.smece`, naming the column, the partition and the
        bad row's index label; its ``index``, ``count`` and ``size`` are
        within the partition. Pandas nullable columns: missing values (NA)
        are refused like NaN.
    """
    _validate.flag(compute, "compute")
    dask = _import_dask()
    import dask.dataframe as dd

    if not isinstance(df, dd.DataFrame):
        raise TypeError(f"df must be a dask.dataframe.DataFrame, got {type(df).__module__}.{type(df).__name__}")
    for arg, col in (("pred", pred), ("label", label), ("weight", weight), ("by", by)):
        if col is None and arg in ("weight", "by"):
            continue
        if col not in df.columns:
            raise ValueError(f"{arg}={col!r} is not a column of df (columns: {list(df.columns)})")
        if arg == "by":
            continue  # keys of any kind; the sketch refuses what it cannot group by
        dtype = df[col].dtype
        kind = getattr(dtype, "kind", "O")
        if kind not in "biuf":
            raise TypeError(f"column {col!r} ({arg}) must hold real numbers, got dtype {dtype}")
    resolution = _check_settings(resolution, metric, clip)
    fan_in = _split_every(split_every)

    parts = df[[c for c in dict.fromkeys((pred, label, weight, by)) if c is not None]].to_delayed()
    task = dask.delayed(_partition_sketch, pure=True)
    leaves = [task(p, pred, label, weight, by, resolution, metric, clip, i) for i, p in enumerate(parts)]
    root = _tree(dask, leaves, fan_in) if by is None else _tree(dask, leaves, fan_in, _merge_groups, resolution, metric)
    return _finish(dask, root, compute, scheduler)


def smece_dask(
    f: Any,
    y: Any,
    weights: Any = None,
    *,
    metric: str = "l1",
    resolution: Optional[int] = None,
    clip: Union[bool, float] = False,
    split_every: Optional[int] = None,
    scheduler: Any = None,
) -> float:
    """The SmoothECE σ* of Dask arrays: ``sketch_from_dask(f, y, weights, ...).smece()``.

    Parameters
    ----------
    f, y, weights, metric, resolution, clip, split_every, scheduler
        As in :func:`sketch_from_dask`.

    Returns
    -------
    float
        σ*; with the default resolution equal to ``smoothece.smece(f, y)`` on
        the same data up to rounding (~1e-15).

    Raises
    ------
    TypeError, ValueError, smoothece.InputError
        As in :func:`sketch_from_dask`.
    """
    return sketch_from_dask(f, y, weights, metric=metric, resolution=resolution, clip=clip, split_every=split_every,
                            scheduler=scheduler).smece()


def smece_dask_dataframe(
    df: Any,
    pred: str,
    label: str,
    weight: Optional[str] = None,
    *,
    metric: str = "l1",
    resolution: Optional[int] = None,
    clip: Union[bool, float] = False,
    split_every: Optional[int] = None,
    scheduler: Any = None,
) -> float:
    """The SmoothECE σ* of dataframe columns: ``sketch_from_dask_dataframe(df, pred, label, weight, ...).smece()``.

    Parameters
    ----------
    df, pred, label, weight, metric, resolution, clip, split_every, scheduler
        As in :func:`sketch_from_dask_dataframe`.

    Returns
    -------
    float
        σ*.

    Raises
    ------
    TypeError, ValueError, smoothece.InputError
        As in :func:`sketch_from_dask_dataframe`; also ValueError when the
        dataframe has no rows.
    """
    sketch = sketch_from_dask_dataframe(df, pred, label, weight, metric=metric, resolution=resolution, clip=clip,
                                        split_every=split_every, scheduler=scheduler)
    if sketch.n == 0:
        raise ValueError("df has no rows: at least one prediction is needed")
    return sketch.smece()
