"""SmoothECE of Spark DataFrames: one sketch per partition, merged exactly.

Every partition of the named columns is summarized where it lives by its own
:class:`CalibrationSketch` (in either metric) or, grouped by key columns, by
its own :class:`GroupedSketch`: ``df.select(...).mapInArrow(...)`` reads the
partition as Arrow batches (no Python loop over rows) and yields one row, the
sketch's bytes (at most about 40·resolution bytes, whatever the partition's
length). When there are more than ``split_every`` of them they are merged
``split_every`` at a time in a tree of shuffles of those small rows, and the
driver merges the last few. Merging is exact up to the rounding of the sums,
in a fixed order (by partition), so the result does not depend on the
partitioning beyond ~1e-15 and the same query gives the same numbers.

A bad value is reported as the library reports it, with where it is: the
column, the Spark partition and the row within it. Null values are counted
over the whole DataFrame (every partition counts its own) and refused with
that count and the first. Errors come back to the driver as data and are
raised there as :class:`smoothece.InputError`, never as a wall of executor
traceback.

Only DataFrame operations are used (no RDD API), which Spark Connect offers
too; it is tested with classic Spark in local mode. Requires ``pyspark``
(with ``pyarrow``) on the driver and the executors, and ``smoothece`` on the
executors; PySpark is imported when these functions are called, never by
``import smoothece``.
"""

from __future__ import annotations

import json
from functools import partial
from typing import Any, Iterator, Optional, Sequence, Union

import numpy as np

from ._errors import InputError
from .dask import _check_settings, _merge, _merge_groups, _placed, _split_every
from .groups import GroupedCalibration, GroupedSketch, _options
from .sketch import CalibrationSketch

__all__ = ["sketch_from_spark", "smece_spark", "smece_by_group_spark"]

#: Rows of a partition handed to one sketch update (Arrow batches are gathered up to this):
#: large enough that a sketch is updated a few times per partition, small enough to bound memory.
_CHUNK_ROWS = 1 << 20

#: What the per-partition and merge steps yield: one row per sketch (or per failed partition).
_SCHEMA = "part long, rows long, blob binary, error string"

#: The separator of the string key made of several ``by`` columns.
KEY_SEPARATOR = "|"


def _import_pyspark():
    try:
        import pyspark.sql  # noqa: F401
    except ImportError as err:  # pragma: no cover - depends on the environment
        raise ImportError("smoothece.spark needs PySpark (with pyarrow): pip install \"pyspark>=3.4\"") from err
    return pyspark.sql


# ----------------------------------------------------------------------------
# tasks (module level: they pickle by reference)
# ----------------------------------------------------------------------------
def _arrow_schema():
    import pyarrow as pa

    return pa.schema([("part", pa.int64()), ("rows", pa.int64()), ("blob", pa.binary()), ("error", pa.string())])


def _record(part: int, rows: int, blob: Optional[bytes], error: Optional[dict]):
    import pyarrow as pa

    return pa.RecordBatch.from_pylist([{"part": part, "rows": rows, "blob": blob,
                                        "error": None if error is None else json.dumps(error)}], schema=_arrow_schema())


def _keys(table, settings: dict) -> np.ndarray:
    """The chunk's group keys as numpy: strings through Arrow's dictionary (the few distinct ones
    become a numpy string array, the rows index it), other keys as they are."""
    import pyarrow as pa
    import pyarrow.compute as pc

    first = 3 if settings["weighted"] else 2
    if settings["keys"] > 1:  # several columns (cast to strings by Spark): one string key
        keys = pc.binary_join_element_wise(*table.columns[first:], KEY_SEPARATOR)
    else:
        keys = table.column(first)
    if not (pa.types.is_string(keys.type) or pa.types.is_large_string(keys.type)):
        return keys.to_numpy()
    encoded = pc.dictionary_encode(keys.combine_chunks() if isinstance(keys, pa.ChunkedArray) else keys)
    words = np.asarray(encoded.dictionary.to_pylist(), dtype=str)
    return words[encoded.indices.to_numpy()]


def _add_chunk(sketch, batches: list, start: int, settings: dict) -> Optional[dict]:
    """Adds a chunk of a partition (Arrow batches) to its sketch; the library's error as a dict, else None."""
    import pyarrow as pa

    table = pa.Table.from_batches(batches)
    f = table.column(0).to_numpy()
    y = table.column(1).to_numpy()
    w = table.column(2).to_numpy() if settings["weighted"] else None
    try:
        if settings["keys"] == 0:
            sketch.update(f, y, w, clip=settings["clip"], threads=1)
        else:
            sketch.update(f, y, _keys(table, settings), w, clip=settings["clip"], threads=1)
    except InputError as err:
        return {"kind": "value", "message": str(err), "argument": err.argument, "index": err.index,
                "value": err.value, "count": err.count, "size": err.size, "start": start, "stop": start + len(f)}
    return None


def _partition_summary(settings: dict, batches: Iterator) -> Iterator:
    """One partition's sketch bytes as one row, or what was wrong with its rows."""
    from pyspark import TaskContext

    part = TaskContext.get().partitionId()
    keyed = settings["keys"] > 0
    sketch = (GroupedSketch if keyed else CalibrationSketch)(settings["resolution"], settings["metric"])
    columns = settings["columns"]
    nulls, first_null = [0] * columns, [-1] * columns
    rows = start = pending_rows = 0
    pending: list = []
    error = None
    for batch in batches:
        n = batch.num_rows
        if n == 0:
            continue
        for j in range(columns):  # null counts are kept by Arrow: no pass over the values unless there are some
            column = batch.column(j)
            if column.null_count:
                if not nulls[j]:
                    first_null[j] = rows + int(np.argmax(column.is_null().to_numpy(zero_copy_only=False)))
                nulls[j] += column.null_count
        if error is None and not any(nulls):
            if not pending:
                start = rows
            pending.append(batch)
            pending_rows += n
            if pending_rows >= _CHUNK_ROWS:
                error = _add_chunk(sketch, pending, start, settings)
                pending, pending_rows = [], 0
        rows += n
    if pending and error is None and not any(nulls):
        error = _add_chunk(sketch, pending, start, settings)
    if any(nulls):
        error = {"kind": "null", "nulls": nulls, "first": first_null}
    if error is not None:
        yield _record(part, rows, None, error)
    elif rows:
        yield _record(part, rows, sketch.to_bytes(), None)


def _decode(settings: dict, blobs: list) -> list:
    kind = GroupedSketch if settings["keys"] > 0 else CalibrationSketch
    return [kind.from_bytes(b) for b in blobs]


def _combine(settings: dict, sketches: list):
    """The merge of the sketches, in the order given (a fresh sketch; empty when there are none)."""
    if settings["keys"] > 0:
        return _merge_groups(settings["resolution"], settings["metric"], *sketches)
    return _merge(CalibrationSketch(settings["resolution"], settings["metric"]), *sketches)


def _merge_summaries(settings: dict, batches: Iterator) -> Iterator:
    """A step of the merge tree: the sketches this task received, merged in partition order, as one row;
    failed partitions' rows pass through unchanged."""
    import pyarrow as pa

    batches = list(batches)
    if not batches:
        return
    got = pa.Table.from_batches(batches).to_pydict()
    keep = [i for i, e in enumerate(got["error"]) if e is None]
    for i, e in enumerate(got["error"]):
        if e is not None:
            yield _record(got["part"][i], got["rows"][i], None, json.loads(e))
    if keep:
        keep.sort(key=lambda i: got["part"][i])
        merged = _combine(settings, _decode(settings, [got["blob"][i] for i in keep]))
        yield _record(got["part"][keep[0]], sum(got["rows"][i] for i in keep), merged.to_bytes(), None)


# ----------------------------------------------------------------------------
# driver
# ----------------------------------------------------------------------------
_ROLES = ("pred", "label", "weight", "by")
_ARGUMENTS = {"pred": "f", "label": "y", "weight": "weights", "by": "groups"}


def _key_types(T) -> tuple:
    strings = tuple(getattr(T, name) for name in ("StringType", "CharType", "VarcharType") if hasattr(T, name))
    return strings + (T.BooleanType, T.ByteType, T.ShortType, T.IntegerType, T.LongType, T.FloatType, T.DoubleType,
                      T.DateType, T.TimestampType) + ((T.TimestampNTZType,) if hasattr(T, "TimestampNTZType") else ())


def _by_columns(by: Any) -> list:
    if by is None:
        return []
    if isinstance(by, str):
        return [by]
    if isinstance(by, (list, tuple)) and by and all(isinstance(b, str) for b in by):
        if len(set(by)) != len(by):
            raise InputError(f"by names a column twice: {list(by)}", "by")
        return list(by)
    raise TypeError(f"by must be a column name (str) or a non-empty list of them, got {by!r}")


def _selection(df: Any, pred: Any, label: Any, weight: Any, by: list):
    """``df`` reduced to the named columns, renamed f, y[, w][, g0, g1, ...] (with casts where needed),
    after checking names and types on the driver (no job runs). Returns it and the column names in order."""
    sql = _import_pyspark()
    from pyspark.sql import functions as F
    from pyspark.sql import types as T

    if not isinstance(df, sql.DataFrame):
        kind = f"{type(df).__module__}.{type(df).__name__}"
        hint = ""
        if kind.startswith("pandas.") or kind.startswith("polars."):
            hint = "; for an in-memory frame call smoothece.smece(df[pred], df[label]) directly"
        elif kind.startswith("dask."):
            hint = "; for a Dask dataframe use smoothece.dask.sketch_from_dask_dataframe"
        raise TypeError(f"df must be a pyspark.sql.DataFrame, got {kind}{hint}")
    fields: dict = {}
    for field in df.schema.fields:
        fields.setdefault(field.name, []).append(field)
    named = [("pred", pred), ("label", label)] + ([("weight", weight)] if weight is not None else [])
    named += [("by", b) for b in by]
    exprs, names = [], []
    for i, (role, name) in enumerate(named):
        if not isinstance(name, str):
            raise TypeError(f"{role} must be a column name (str), got {type(name).__name__} {name!r}")
        found = fields.get(name)
        if not found:
            near = [c for c in fields if c.lower() == name.lower()]
            hint = f"; did you mean {near[0]!r}?" if near else ""
            raise InputError(f"{role}={name!r} is not a column of df (columns: {list(fields)}){hint}", role)
        if len(found) > 1:
            raise InputError(f"{role}={name!r} is ambiguous: df has {len(found)} columns of that name (after a join?); "
                             f"rename or drop all but one first", role)
        dtype = found[0].dataType
        column = F.col("`" + name.replace("`", "``") + "`")
        alias = ("f", "y", "w")[i] if role != "by" else f"g{i - len(named) + len(by)}"
        if role != "by":
            if not isinstance(dtype, (T.NumericType, T.BooleanType)):
                raise TypeError(f"column {name!r} ({role}) must hold real numbers, got Spark type "
                                f"{dtype.simpleString()}")
            if isinstance(dtype, T.DecimalType):
                column = column.cast("double")
        else:
            if not isinstance(dtype, _key_types(T)):
                raise TypeError(f"column {name!r} (by) must hold group keys (strings, numbers, booleans, dates or "
                                f"timestamps), got Spark type {dtype.simpleString()}; cast it to a string first")
            if len(by) > 1:
                column = column.cast("string")
            elif isinstance(dtype, T.TimestampType):
                column = column.cast("timestamp_ntz")  # the session's wall-clock time, as Spark shows it
        exprs.append(column.alias(alias))
        names.append(name)
    return df.select(*exprs), names


def _settings(names: list, weighted: bool, keys: int, resolution: int, metric: str, clip: Any) -> dict:
    return {"columns": len(names), "weighted": weighted, "keys": keys, "resolution": resolution, "metric": metric,
            "clip": clip}


def _roles(settings: dict) -> list:
    """The role of each selected column, in order."""
    return ["pred", "label"] + ["weight"] * settings["weighted"] + ["by"] * settings["keys"]


def _raise_errors(failed: list, total: int, names: list, settings: dict) -> None:
    """Raises the InputError of the partitions that failed (rows of (part, rows, error dict)), on the driver."""
    failed.sort(key=lambda r: r[0])
    with_nulls = [r for r in failed if r[2]["kind"] == "null"]
    if with_nulls:
        counts = np.sum([r[2]["nulls"] for r in with_nulls], axis=0)
        j = int(np.flatnonzero(counts)[0])
        part, _, first = next(r for r in with_nulls if r[2]["nulls"][j])
        role, name, row = _roles(settings)[j], names[j], first["first"][j]
        also = [f"{names[i]!r} ({int(counts[i]):,})" for i in range(len(names)) if i != j and counts[i]]
        raise InputError(
            f"column {name!r} ({role}) holds null values: {int(counts[j]):,} of {total:,} rows, the first at row {row} "
            f"of Spark partition {part}" + (f"; other columns with nulls: {', '.join(also)}" if also else "")
            + f"; drop those rows (df.dropna(subset=[{name!r}])) or fill them first",
            _ARGUMENTS[role], row, None, int(counts[j]), total)
    part, rows, e = failed[0]
    err = InputError(e["message"], e["argument"], e["index"], e["value"], e["count"], e["size"])
    role = next((r for r, a in _ARGUMENTS.items() if a == err.argument), None)
    if role == "by":
        column = names[-1] if settings["keys"] == 1 else KEY_SEPARATOR.join(names[len(names) - settings["keys"]:])
    else:
        column = None if role is None or (role == "weight" and not settings["weighted"]) else names[_ROLES.index(role)]
    where = f"Spark partition {part}"
    if (e["start"], e["stop"]) != (0, rows):
        where += f" (its rows {e['start']} to {e['stop'] - 1})"
    index = None if err.index is None else e["start"] + err.index
    others = [r[0] for r in failed[1:]]
    position = f"row {index} of the partition"
    if others:
        shown = ", ".join(str(p) for p in others[:5]) + (", ..." if len(others) > 5 else "")
        position += (f"; {len(others)} other partition{'s have' if len(others) > 1 else ' has'} bad rows too "
                     f"({shown})")
    raise _placed(err, where, index, position, column)


def _reduce(df: Any, pred: Any, label: Any, weight: Any, by: Any, resolution: Any, metric: Any, clip: Any,
            split_every: Any) -> Union[CalibrationSketch, GroupedSketch]:
    keys = _by_columns(by)
    selected, names = _selection(df, pred, label, weight, keys)
    resolution = _check_settings(resolution, metric, clip)
    fan_in = _split_every(split_every)
    settings = _settings(names, weight is not None, len(keys), resolution, metric, clip)

    leaf = selected.mapInArrow(partial(_partition_summary, settings), _SCHEMA).cache()
    try:
        count = leaf.count()  # the one pass over the data; its small rows stay cached for what follows
        level = leaf
        while count > fan_in:  # a tree of merges on the executors, fan_in sketches per task
            count = -(-count // fan_in)
            level = level.repartition(count, "part").mapInArrow(partial(_merge_summaries, settings), _SCHEMA)
        got = level.collect()
    finally:
        leaf.unpersist()
    failed = [(r.part, r.rows, json.loads(r.error)) for r in got if r.error is not None]
    if failed:
        _raise_errors(failed, sum(r.rows for r in got), names, settings)
    done = sorted((r for r in got), key=lambda r: r.part)
    return _combine(settings, _decode(settings, [bytes(r.blob) for r in done]))


# ----------------------------------------------------------------------------
# public API
# ----------------------------------------------------------------------------
def sketch_from_spark(
    df: Any,
    pred: str,
    label: str,
    weight: Optional[str] = None,
    *,
    by: Union[str, Sequence[str], None] = None,
    metric: str = "l1",
    resolution: Optional[int] = None,
    clip: Union[bool, float] = False,
    split_every: Optional[int] = None,
) -> Union[CalibrationSketch, GroupedSketch]:
    """A sketch of columns of a Spark DataFrame, one per partition, merged exactly.

    Parameters
    ----------
    df : pyspark.sql.DataFrame
        The data; partitions may have any lengths, empty ones cost nothing.
    pred : str
        Column of predicted probabilities in [0, 1] (float or double; other
        numeric types are read as numbers, decimals as double).
    label : str
        Column of outcomes, 0 or 1 (boolean, integer or floating).
    weight : str, optional
        Column of non-negative finite row weights.
    by : str or list of str, optional
        Column of group keys (strings, integers, floats, booleans, dates,
        timestamps — taken as the session's wall-clock time, as Spark shows
        them): then each partition builds a :class:`GroupedSketch` and the
        result is their merge, whose ``.smece_by_group()`` answers per group
        (as :func:`smoothece.smece_by_group` on the collected rows, to
        ~1e-9: sketches keep predictions to 2^-40). Several columns make one
        string key per row, their values as Spark casts them to strings
        joined by ``"|"`` (``"north|2"``).
    metric : {"l1", "logit"}, default "l1"
        As in :func:`smoothece.smece`: every partition's sketch is of this metric.
    resolution : int, optional
        Grid intervals of every sketch (see :class:`CalibrationSketch`; by
        default 2**15 for l1, 2**20 for logit: either resolves σ* of
        calibrated predictions up to about 1e8 rows). With the
        default, ``.smece()`` equals ``smoothece.smece`` on the collected rows
        to ~1e-11 (both within the accuracy contract; the sketch keeps
        predictions to 2^-40 and bins them on its own grid).
    clip : bool or float, default False
        As in :func:`smoothece.smece`.
    split_every : int, default 8
        Fan-in of the merge tree (sketches merged per task). With at most
        this many non-empty partitions the driver merges them directly;
        otherwise the sketches are merged ``split_every`` at a time on the
        executors, level by level, until that many are left.

    Returns
    -------
    CalibrationSketch or GroupedSketch
        The sketch of all rows, grouped when ``by`` is given; empty when
        ``df`` has no rows.

    Raises
    ------
    TypeError
        ``df`` not a Spark DataFrame; a column name not a string; a value
        column not numeric or boolean; a key column of another type (maps,
        arrays, binary, decimals).
    smoothece.InputError
        A named column missing (or ambiguous); bad values as in
        :func:`smoothece.smece`, naming the column, the Spark partition and
        the row within it (its ``index``, ``count`` and ``size`` are within
        the partition) and how many other partitions have bad rows; null
        values, with their count over the whole DataFrame and the first
        (``count`` and ``size`` over the DataFrame, ``index`` within the
        partition). The ``argument`` is ``"f"``, ``"y"``, ``"weights"`` or
        ``"groups"`` as for the array functions (or the name of the argument
        for a bad column name).
    ValueError
        A bad metric, resolution, clip or split_every.

    Notes
    -----
    One pass over the data: each partition's sketch is built with one thread
    (Spark supplies the parallelism across partitions) from its Arrow
    batches, gathered up to 2^20 rows per update. The sketches' rows (a
    partition's sketch, or its error) are cached while the merge tree reads
    them, and released at the end. Data never leaves its executor: only
    sketches travel. The merge order is fixed (by partition index), so a
    query gives the same bytes every time it runs on the same partitioning.
    """
    return _reduce(df, pred, label, weight, by, resolution, metric, clip, split_every)


def smece_spark(
    df: Any,
    pred: str,
    label: str,
    weight: Optional[str] = None,
    *,
    metric: str = "l1",
    resolution: Optional[int] = None,
    clip: Union[bool, float] = False,
    split_every: Optional[int] = None,
) -> float:
    """The SmoothECE σ* of DataFrame columns: ``sketch_from_spark(df, pred, label, weight, ...).smece()``.

    Parameters
    ----------
    df, pred, label, weight, metric, resolution, clip, split_every
        As in :func:`sketch_from_spark`.

    Returns
    -------
    float
        σ*, equal to ``smoothece.smece`` on the collected rows to ~1e-11 (see
        ``resolution``).

    Raises
    ------
    TypeError, ValueError, smoothece.InputError
        As in :func:`sketch_from_spark`; also :class:`smoothece.InputError`
        when ``df`` has no rows (as :func:`smoothece.smece` refuses empty
        input) or its weights sum to zero.
    """
    sketch = sketch_from_spark(df, pred, label, weight, metric=metric, resolution=resolution, clip=clip,
                               split_every=split_every)
    if sketch.n == 0:
        raise InputError("df has no rows: at least one prediction is needed", "f", size=0)
    return sketch.smece()


def smece_by_group_spark(
    df: Any,
    pred: str,
    label: str,
    weight: Optional[str] = None,
    *,
    by: Union[str, Sequence[str]],
    metric: str = "l1",
    n_boot: int = 0,
    test: bool = False,
    n_sim: int = 1000,
    seed: Optional[int] = None,
    level: float = 0.95,
    weight_kind: Optional[str] = None,
    resolution: Optional[int] = None,
    clip: Union[bool, float] = False,
    split_every: Optional[int] = None,
    threads: Optional[int] = None,
) -> GroupedCalibration:
    """The SmoothECE of every group of a DataFrame:
    ``sketch_from_spark(df, ..., by=by).smece_by_group(n_boot=..., test=..., ...)``.

    Parameters
    ----------
    df, pred, label, weight, by, metric, resolution, clip, split_every
        As in :func:`sketch_from_spark`; ``by`` is required.
    n_boot, test, n_sim, seed, level, weight_kind
        As in :func:`smoothece.smece_by_group` (checked before any Spark job
        runs); the intervals and tests are drawn from each group's sketch on
        the driver, group i with ``seed + i`` (the warning about weights that
        look like counts comes from the sketches, which keep what their
        partitions' weights were).
    threads : int, optional
        Threads of the driver for answering the groups (default: all).

    Returns
    -------
    GroupedCalibration
        Per group (sorted by key): rows, total weight, σ*, interval, p-value
        and its Benjamini–Hochberg adjustment. σ* equals
        :func:`smoothece.smece_by_group`'s on the collected rows to ~1e-9.

    Raises
    ------
    TypeError, ValueError, smoothece.InputError
        As in :func:`sketch_from_spark`; also :class:`smoothece.InputError`
        when ``df`` has no rows (as :func:`smoothece.smece_by_group`).
    """
    if by is None:
        raise TypeError("smece_by_group_spark needs by=: the column(s) of group keys")
    _options(n_boot, test, n_sim, level, seed, weight_kind)
    sketch = sketch_from_spark(df, pred, label, weight, by=by, metric=metric, resolution=resolution, clip=clip,
                               split_every=split_every)
    if len(sketch) == 0:
        raise InputError("df has no rows: at least one prediction is needed", "f", size=0)
    return sketch.smece_by_group(n_boot=n_boot, test=test, n_sim=n_sim, seed=seed, level=level,
                                 weight_kind=weight_kind, threads=threads)
