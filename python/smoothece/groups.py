"""Calibration by slice and over time: the SmoothECE of every group in one call.

:func:`smece_by_group` gathers the rows by group in one pass and answers every
group with exactly the code that answers an ungrouped call on its rows (so
each number equals ``smece(f[g], y[g], threads=1)`` bit for bit), with the
groups spread over the thread pool. :class:`GroupedSketch` does the same for
streams: one compact :class:`~smoothece.CalibrationSketch` per group, updated
from batches, mergeable across machines and serializable.
"""

from __future__ import annotations

import datetime
import struct
import threading
import warnings
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Dict, List, Optional, Tuple, Union

import numpy as np

from . import _bytes, _core, _validate
from ._bytes import key_kind as _key_kind
from ._errors import InputError, ResolutionWarning
from ._summary import counts_check
from ._typing import ArrayLike
from ._util import ToDict, format_p, frozen, imported, outside_stacklevel
from .sketch import CalibrationSketch, default_resolution

if TYPE_CHECKING:
    from matplotlib.axes import Axes

__all__ = ["GroupedCalibration", "GroupedSketch", "smece_by_group", "benjamini_hochberg", "format_keys"]


# --- Group keys --------------------------------------------------------------------------------
#
# One order everywhere: a result's groups are in key order, chronological for
# time keys (numpy dates, datetime objects, pandas periods), ascending numbers,
# lexicographic strings, a pandas categorical's category order, and for several
# key columns lexicographic by column (each column in its own order). Views
# sort only when asked (``sort_by=``); :func:`format_keys` is how keys read.

_TUPLE_SEPARATOR = " / "


def _pandas():
    """pandas if it is already imported (a caller's pandas objects imply it), else None: never imported here."""
    return imported("pandas")


def _categorical(x: Any):
    """The codes/categories holder of a pandas categorical (a Series' .cat, or the Categorical), else None."""
    if getattr(getattr(x, "dtype", None), "name", None) != "category":
        return None
    return x.cat if hasattr(x, "cat") else x


def _is_period_dtype(dtype: Any) -> bool:
    pd = _pandas()
    return pd is not None and isinstance(dtype, pd.PeriodDtype)


def _is_period(value: Any) -> bool:
    pd = _pandas()
    return pd is not None and isinstance(value, pd.Period)


def _where(name: str, column: Any) -> str:
    return name if column is None else f"{name} (key column {column!r})"


def _missing_key(name: str, index: int, count: int, size: int, what: str, column: Any = None) -> InputError:
    inside = "" if column is None else f" in key column {column!r}"
    return InputError(f"{name}[{index}] is missing ({what}){inside}: {count} of {size} group keys are missing; drop "
                      f"those rows or give them a key of their own first", name, index, None, count, size)


def _shape_error(name: str, shape, n: int) -> ValueError:
    hint = "; several key columns go as a tuple of 1-D arrays or a DataFrame" if len(shape) == 2 else ""
    return ValueError(f"{name} must be a 1-D array with one key per row: got shape {shape} for {n} rows{hint}")


def _is_column(x: Any) -> bool:
    """Whether an item of a tuple/list of groups is a key column (an array, Series, list) rather than one key."""
    if isinstance(x, (str, bytes, tuple)) or np.isscalar(x):
        return False
    if isinstance(x, list):
        return True
    ndim = getattr(x, "ndim", None)  # numpy, pandas; a polars Series has none (and is 1-D)
    return hasattr(x, "__len__") and (ndim == 1 if ndim is not None else hasattr(x, "__array__"))


def _key_columns(groups: Any) -> Optional[List[Tuple[Any, Any]]]:
    """[(label, column)] when ``groups`` is several key columns (a pandas or polars
    DataFrame, a tuple/list of 1-D arrays), else None (one key per row)."""
    pd = _pandas()
    if pd is not None and isinstance(groups, pd.DataFrame):
        return [(label, groups.iloc[:, j]) for j, label in enumerate(groups.columns)]
    pl = imported("polars")
    if pl is not None and isinstance(groups, pl.DataFrame):
        return [(s.name, s) for s in groups.get_columns()]
    if isinstance(groups, (tuple, list)) and groups and all(_is_column(c) for c in groups):
        return [(getattr(c, "name", None), c) for c in groups]
    return None


def _datetimes_of_objects(objects: np.ndarray, where: str) -> np.ndarray:
    """datetime.date / datetime.datetime (pandas Timestamp) objects as datetime64: days
    for plain dates, microseconds (what datetime holds; nanoseconds for Timestamps that
    have them) when any has a time of day. pandas converts them when it is imported
    (about 0.15 µs a row); numpy's conversion is ~25× slower, still one C loop."""
    tz_aware = TypeError(f"{where} holds time-zone-aware datetimes: make them naive first (in UTC or in local time, "
                         f"as the days should be counted), e.g. with .astimezone(tz).replace(tzinfo=None)")
    out = None
    pd = _pandas()
    if pd is not None:
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("error")
                index = pd.DatetimeIndex(objects)
        except Exception:  # numpy's conversion below says what is wrong
            index = None
        if index is not None:
            if index.tz is not None:
                raise tz_aware
            out = index.to_numpy()
            if np.datetime_data(out.dtype)[0] != "ns":
                out = out.astype("datetime64[us]")
    if out is None:
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # numpy warns, and drops the offset, for time-zone-aware datetimes
            try:
                out = objects.astype("datetime64[us]")
            except (UserWarning, DeprecationWarning):
                raise tz_aware from None
            except (TypeError, ValueError) as err:
                raise TypeError(f"{where} must hold keys of one kind (numbers, strings or dates): {err}") from None
    if type(objects[0]) is datetime.date and np.array_equal(out.astype("datetime64[D]").astype(out.dtype), out):
        return out.astype("datetime64[D]")
    return out


def _periods(groups: Any, where: str):
    """(int64 ordinals, dtype) of pandas periods (a Series, PeriodIndex, PeriodArray or an
    object array of Period objects of one frequency); the caller has refused missing ones."""
    pd = _pandas()
    if _is_period_dtype(getattr(groups, "dtype", None)):
        arr = getattr(groups, "array", groups)
    else:
        try:
            arr = pd.PeriodIndex(groups).array
        except (TypeError, ValueError) as err:  # IncompatibleFrequency is a TypeError; strings among them
            raise TypeError(f"{where} must hold periods of one frequency: {err}") from None
    return np.asarray(arr.asi8, dtype=np.int64), arr.dtype


def _ranked(keys: np.ndarray, threads: int):
    """(codes in key order, the distinct keys sorted, first row of each) from the core's factorize.
    ``first`` is None when the keys were their own codes (int64 0..K-1, each present)."""
    if keys.dtype.kind == "f" and keys.dtype.itemsize > 8:
        # long double: the core compares a key's bytes, and x86's 80-bit long double fills 16
        # with padding that holds anything; numpy compares values (sorting, O(n log n)).
        distinct, first, codes = np.unique(keys, return_index=True, return_inverse=True)
        return codes.reshape(-1).astype(np.int64), distinct, first.astype(np.int64)
    codes, first, count = _core.factorize(keys, threads)
    if codes is None:  # 8-byte integer keys 0..K-1, each present: their own codes, in key order
        # A copy: the grouping pass reads the codes twice with the GIL released, and another
        # thread may write to the caller's keys meanwhile (the pass checks the copy's range).
        codes = np.array(keys.view(np.int64))
        return codes, np.arange(count, dtype=np.int64).view(keys.dtype), None
    distinct = keys[first]
    order = np.argsort(distinct, kind="stable")
    if np.array_equal(order, np.arange(order.size)):  # already in key order (integer ids): no remapping pass
        return codes, distinct, first
    rank = np.empty_like(order)
    rank[order] = np.arange(order.size)
    return rank[codes], distinct[order], first[order]


def _has_nul(items: list) -> bool:
    """Whether any of the strings holds a NUL (False when they are not all strings: the
    keys' types are checked later). One C pass over their characters."""
    try:
        return "\0" in "".join(items)
    except TypeError:
        return False


def _ranked_with_lengths(keys: np.ndarray, lengths: np.ndarray, objects: np.ndarray, threads: int):
    """:func:`_ranked` of strings some of which end in NULs, which numpy's fixed-width
    strings drop ('a\\0' reads 'a'): keyed by (string, length), the distinct keys the
    caller's own strings (an object array) in Python's order."""
    text, _, _ = _ranked(keys, threads)
    combined = np.array(text, dtype=np.int64)
    combined *= int(lengths.max()) + 1
    combined += lengths
    codes, _, first = _ranked(combined, threads)
    if first is None:
        first = np.unique(codes, return_index=True)[1]
    distinct = objects[first]
    order = np.argsort(distinct, kind="stable")
    rank = np.empty_like(order)
    rank[order] = np.arange(order.size)
    return rank[codes], distinct[order], first[order]


def _factorize_column(groups: Any, n: int, name: str, threads: int, column: Any = None):
    """(codes, keys, ordered) of one key column: see :func:`factorize_keys`."""
    where = _where(name, column)
    if groups is None or isinstance(groups, (str, bytes)):
        raise TypeError(f"{where} must be a 1-D array of group keys, got {type(groups).__name__}")
    cat = _categorical(groups)
    if cat is not None:
        codes = np.asarray(cat.codes, dtype=np.int64)
        if codes.ndim != 1 or codes.shape[0] != n:
            raise ValueError(f"{where} must have one key per row: got shape {codes.shape} for {n} rows")
        missing = codes < 0
        if missing.any():
            raise _missing_key(name, int(np.argmax(missing)), int(missing.sum()), n, "NA", column)
        categories = np.asarray(cat.categories)
        used = np.bincount(codes, minlength=categories.size) > 0  # categories without rows are not groups
        remap = np.cumsum(used) - 1
        return remap[codes].astype(np.int64), categories[used], bool(getattr(cat, "ordered", False))
    dtype = getattr(groups, "dtype", None)
    if getattr(dtype, "tz", None) is not None:  # pandas datetime64[ns, tz]
        raise TypeError(f"{where} holds time-zone-aware dates ({dtype}): make them naive first, in UTC "
                        f"(.dt.tz_convert(None)) or in local time (.dt.tz_localize(None)), as the days should "
                        f"be counted")
    isna = getattr(groups, "isna", None)
    if callable(isna):
        na = np.asarray(isna())
        if na.ndim == 1 and na.any():
            raise _missing_key(name, int(np.argmax(na)), int(na.sum()), na.size, "NA", column)
    elif isinstance(getattr(groups, "null_count", None), int) and callable(getattr(groups, "is_null", None)):
        if groups.null_count:  # pyarrow nulls
            na = np.asarray(groups.is_null(), dtype=bool)
            raise _missing_key(name, int(np.argmax(na)), int(na.sum()), na.size, "null", column)
    if _is_period_dtype(dtype):
        return _period_keys(groups, n, name, threads, column)
    if callable(isna) or (hasattr(groups, "to_numpy") and not isinstance(groups, np.ndarray)):
        try:  # pandas (and polars) columns: numpy's view of them
            groups = groups.to_numpy()
        except (TypeError, ValueError):  # a pyarrow Array copies only when asked (strings, booleans)
            groups = np.asarray(groups)
    keys = np.asarray(groups)
    if isinstance(groups, list) and keys.dtype.kind == "U" and _has_nul(groups):
        keys = np.array(groups, dtype=object)  # numpy's strings would drop their trailing NULs
    if keys.ndim != 1 or keys.shape[0] != n:
        raise _shape_error(where, keys.shape, n)
    objects = None
    nul_lengths = None
    if keys.dtype.kind == "O":
        # Python objects: numpy infers one dtype for them; the distinct keys'
        # own types are checked below (a mix of numbers and strings is refused).
        missing = np.equal(keys, None)
        if missing.any():
            raise _missing_key(name, int(np.argmax(missing)), int(missing.sum()), n, "None", column)
        objects = keys
        if n and _is_period(objects[0]):
            return _period_keys(objects, n, name, threads, column, objects)
        if n and isinstance(objects[0], datetime.date):
            keys = _datetimes_of_objects(objects, where)
        else:
            items = keys.tolist()
            keys = np.asarray(items)
            if keys.dtype.kind == "U" and _has_nul(items):  # told apart by their lengths too, below
                nul_lengths = np.fromiter(map(len, items), dtype=np.int64, count=n)
        if keys.ndim != 1:
            raise TypeError(f"{where} must hold one key per row (numbers, strings or dates); several key columns "
                            f"go as a tuple of 1-D arrays or a DataFrame")
        if keys.dtype.kind == "O":
            raise TypeError(f"{where} must hold keys of one kind (numbers, strings or dates)")
    kind = keys.dtype.kind
    if kind == "f" and np.isnan(keys).any():
        nan = np.isnan(keys)
        raise _missing_key(name, int(np.argmax(nan)), int(nan.sum()), n, "NaN", column)
    if kind in "mM" and np.isnat(keys).any():
        nat = np.isnat(keys)
        raise _missing_key(name, int(np.argmax(nat)), int(nat.sum()), n, "NaT", column)
    if kind not in "biufMmUS":
        raise TypeError(f"{where} must hold numbers, strings, dates or booleans, got dtype {keys.dtype}")
    if nul_lengths is not None:
        codes, distinct, first = _ranked_with_lengths(keys, nul_lengths, objects, threads)
    else:
        codes, distinct, first = _ranked(keys, threads)
    if objects is not None:  # the distinct keys' own types, not numpy's inference from them
        if first is None:
            first = np.unique(codes, return_index=True)[1]
        types = {type(k) for k in objects[first]}
        if kind in "US":
            fits = types <= {str}
        elif kind == "M":
            fits = all(issubclass(t, (datetime.date, np.datetime64)) for t in types)
        else:
            fits = types <= {bool, int, float}
        if not fits:
            raise TypeError(f"{where} must hold keys of one kind (numbers, strings or dates), got a mix of "
                            f"{sorted(t.__name__ for t in types)}")
    return codes, distinct, kind in "biufMm"


def _period_keys(groups: Any, n: int, name: str, threads: int, column: Any, objects: Optional[np.ndarray] = None):
    """Periods: grouped by their ordinals (int64, one per period of the frequency), keys as Period objects.
    ``objects``: the Python objects they came from, whose distinct keys must all be Periods."""
    where = _where(name, column)
    pd = _pandas()
    ordinals, dtype = _periods(groups, where)
    if ordinals.shape != (n,):
        raise _shape_error(where, ordinals.shape, n)
    codes, distinct, first = _ranked(ordinals, threads)
    if objects is not None:  # pandas parses strings among Periods: the distinct keys' own types say
        if first is None:
            first = np.unique(codes, return_index=True)[1]
        types = {type(k) for k in objects[first]}
        if not all(issubclass(t, pd.Period) for t in types):
            raise TypeError(f"{where} must hold keys of one kind (numbers, strings or dates), got a mix of "
                            f"{sorted(t.__name__ for t in types)}")
    keys = np.asarray(pd.PeriodIndex.from_ordinals(distinct, freq=dtype.freq), dtype=object)
    return codes, keys, True


def _plain(key: Any) -> Any:
    """A key as a Python value where it has one (numpy numbers, strings); numpy dates and periods stay."""
    return key.item() if isinstance(key, np.generic) and not isinstance(key, np.datetime64) else key


def _object_array(items: list) -> np.ndarray:
    """A 1-D object array of the items (tuples stay elements, not rows)."""
    out = np.empty(len(items), dtype=object)
    for i, item in enumerate(items):
        out[i] = item
    return out


def _factorize(groups: Any, n: int, name: str = "groups", threads: int = 0):
    """(codes, keys, ordered, key_names): :func:`factorize_keys` and the names of several key columns."""
    columns = _key_columns(groups)
    if columns is None:
        return (*_factorize_column(groups, n, name, threads), None)
    if not columns:
        raise ValueError(f"{name} has no key columns: give at least one")
    if len(columns) == 1:
        return (*_factorize_column(columns[0][1], n, name, threads, columns[0][0]), None)
    parts = [_factorize_column(col, n, name, threads, label if label is not None else j)
             for j, (label, col) in enumerate(columns)]
    # One int64 code per combination: code = (c0·K1 + c1)·K2 + c2 ..., increasing in
    # (c0, c1, ...), so sorting the codes sorts the tuples lexicographically. When the
    # product of the K's would overflow, the codes so far are first ranked (K ≤ n).
    combined, size = np.array(parts[0][0], dtype=np.int64), len(parts[0][1])
    limit = 2 ** 62
    for codes, keys, _ in parts[1:]:
        k = max(len(keys), 1)
        if size * k >= limit:
            combined, distinct, _ = _ranked(combined, threads)
            combined, size = np.array(combined, dtype=np.int64), len(distinct)
        if size * k >= limit:  # pragma: no cover - needs more than 2^31 rows
            raise InputError(f"{name}: too many combinations of keys to number in 64 bits", name)
        combined *= k
        combined += codes
        size *= k
    codes, distinct, _ = _ranked(combined, threads)
    at = np.zeros(len(distinct), dtype=np.int64)
    at[codes] = np.arange(n, dtype=np.int64)  # a row of each group (any: its rows share the key tuple)
    values = [[_plain(k) for k in part_keys[part_codes[at]]] for part_codes, part_keys, _ in parts]
    keys = _object_array(list(zip(*values)))
    labels = [label for label, _ in columns]
    names = None if any(label is None for label in labels) else tuple(str(label) for label in labels)
    return codes, keys, False, names


def factorize_keys(groups: Any, n: int, name: str = "groups", threads: int = 0):
    """(codes, keys, ordered): int64 codes in [0, K) per row, the K distinct keys
    in the result's order, and whether the keys are ordered values (numbers,
    dates, periods: calibration over time) rather than categories.

    ``groups`` is one key per row (numbers, strings, booleans, numpy dates,
    ``datetime.date``/``datetime`` objects (as datetime64), pandas periods,
    a pandas categorical) or several key columns (a tuple or list of 1-D
    arrays, a pandas or polars DataFrame): one group per combination, keys as
    tuples.

    Order: pandas categoricals keep their categories' order; other keys are
    sorted (numbers ascending, strings lexicographically, dates and periods in
    time); tuples lexicographically by column, each column in its own order.
    Missing keys (None, NaN, NaT, pandas NA) are refused, naming the first."""
    codes, keys, ordered, _ = _factorize(groups, n, name, threads)
    return codes, keys, ordered


def _formatted_datetimes(values: np.ndarray) -> List[str]:
    """ISO 8601 at the precision the whole set needs: 2024-03-01 when every key is a whole
    day, then minutes (2024-03-01T05:30), seconds and fractions; months and years as 2024-03, 2024."""
    unit = np.datetime_data(values.dtype)[0]
    if unit in ("Y", "M", "W", "D", "generic"):
        return [str(s) for s in np.datetime_as_string(values)]
    for candidate in ("D", "m", "s", "ms", "us", "ns"):
        if np.array_equal(values.astype(f"datetime64[{candidate}]").astype(values.dtype), values):
            return [str(s) for s in np.datetime_as_string(values, unit=candidate)]
    return [str(s) for s in np.datetime_as_string(values)]


def _key_values(items: list) -> np.ndarray:
    """A list of scalar keys as an array (dates as datetime64), object where numpy finds no one type."""
    if items and isinstance(items[0], datetime.date) and not _is_period(items[0]):
        return _datetimes_of_objects(_object_array(items), "keys")
    try:
        arr = np.asarray(items)
    except (TypeError, ValueError):
        return _object_array(items)
    if arr.dtype.kind == "U" and _has_nul(items):  # numpy's strings would drop their trailing NULs
        return _object_array(items)
    return arr if arr.ndim == 1 else _object_array(items)


def format_keys(keys: Any) -> List[str]:
    """The group keys as text, one string per key: how every view of a grouped
    result (its repr and :meth:`~GroupedCalibration.table`, the command line)
    shows them.

    Dates (numpy datetime64, ``datetime.date``/``datetime`` objects) read as
    ISO 8601 at the precision the whole set of keys needs: ``2024-03-01`` when
    every key is a whole day, else ``2024-03-01T05:30`` (then seconds and
    fractions as needed); datetime64 months and years as ``2024-03`` and
    ``2024``. pandas periods read as pandas prints them (``2024-03``,
    ``2024Q1``). Numbers and booleans read as Python prints them, strings as
    they are, bytes decoded as UTF-8. Tuples (several key columns) read as
    their columns' texts joined by ``" / "``.
    """
    items = keys if isinstance(keys, np.ndarray) and keys.dtype != object else list(keys)
    if len(items) == 0:
        return []
    if not isinstance(items, np.ndarray):
        if isinstance(items[0], tuple) and all(isinstance(k, tuple) and len(k) == len(items[0]) for k in items):
            columns = [format_keys(list(col)) for col in zip(*items)]
            return [_TUPLE_SEPARATOR.join(parts) for parts in zip(*columns)]
        if _is_period(items[0]):
            return [str(k) for k in items]
        items = _key_values(items)
    kind = items.dtype.kind
    if kind == "M":
        return _formatted_datetimes(items)
    if kind == "S":
        return [k.decode("utf-8", "backslashreplace") for k in items.tolist()]
    if kind in "biufU":
        return [str(k) for k in items.tolist()]
    if all(isinstance(k, str) for k in items):  # strings with NULs (kept as objects): the NULs shown
        return [k.replace("\0", "\\x00") for k in items]
    return [str(k) for k in items]  # timedeltas ("3 days"), anything else as str() has it


def _json_keys(keys: np.ndarray) -> list:
    """Keys as JSON values: numbers, booleans and strings as themselves, tuples as lists,
    dates, periods and anything else (inf too) as their :func:`format_keys` text."""
    items = list(keys)
    if not items:
        return []
    if isinstance(items[0], tuple):
        columns = [_json_keys(_object_array(list(col))) for col in zip(*items)]
        return [list(t) for t in zip(*columns)]
    arr = keys if isinstance(keys, np.ndarray) and keys.dtype != object else _key_values(items)
    if arr.dtype.kind == "f" and arr.dtype.itemsize > 8 and np.array_equal(arr.astype(np.float64), arr):
        arr = arr.astype(np.float64)  # long doubles that doubles hold (JSON's numbers); else their text
    if arr.dtype.kind in "biuU" or (arr.dtype.kind == "f" and arr.dtype.itemsize <= 8 and np.isfinite(arr).all()):
        return arr.tolist()
    if arr.dtype == object and all(isinstance(k, str) for k in items):  # strings with NULs: as they are
        return items
    return format_keys(arr)


# --- Results -----------------------------------------------------------------------------------

def benjamini_hochberg(p: ArrayLike) -> np.ndarray:
    """Benjamini–Hochberg adjusted p-values (NaN entries are left out of the family and stay NaN).

    q_(i) = min over j ≥ i of m·p_(j)/j, capped at 1, with p sorted ascending and
    m the number of non-NaN p-values: rejecting where q ≤ α controls the false
    discovery rate at α for independent (or positively dependent) tests."""
    p = np.asarray(p, dtype=np.float64)
    out = np.full(p.shape, np.nan)
    valid = np.flatnonzero(~np.isnan(p))
    m = valid.size
    if m == 0:
        return out
    order = valid[np.argsort(p[valid], kind="stable")]
    scaled = p[order] * m / np.arange(1, m + 1)
    out[order] = np.minimum(1.0, np.minimum.accumulate(scaled[::-1])[::-1])
    return out


_SORTABLE = {  # the columns a view can sort by, and their natural direction (descending: the largest first)
    "key": False, "smece": True, "low": True, "high": True, "n": True, "total_weight": True,
    "p_value": False, "p_adjusted": False,
}
_REPR_GROUPS = 20  # a repr lists up to this many groups (then the first 15, an ellipsis and the last 3)


def _groups(count: int) -> str:
    return f"{count} group" + ("" if count == 1 else "s")


def _missing_module(what: str, module: str) -> ImportError:
    return ImportError(f"{what} needs {module}, which is not installed: pip install {module}")


@dataclass(frozen=True, repr=False)
class GroupedCalibration(ToDict):
    """The SmoothECE of every group, in the order of ``keys``.

    ``keys`` are in one documented order, the same in every view: time keys
    (dates, periods) chronologically, numbers ascending, strings
    lexicographically, a pandas categorical in its categories' order, tuples
    (several key columns) lexicographically by column. Views sort only when
    asked: ``table(sort_by="smece")``, ``to_pandas(sort_by="smece")`` and
    ``to_polars(sort_by="smece")`` list the worst first; :meth:`order` gives
    the indices. Keys read as :func:`format_keys` writes them.

    Arrays have one entry per group; ``low``/``high`` are NaN without
    ``n_boot``, ``p_value``/``p_adjusted`` NaN without ``test``; a group whose
    weights sum to zero has NaN everywhere but ``n`` and ``total_weight`` (0).
    """

    keys: np.ndarray
    n: np.ndarray  #: rows per group
    total_weight: np.ndarray
    smece: np.ndarray  #: SmoothECE σ* per group
    low: np.ndarray  #: bootstrap interval (``level``) per group
    high: np.ndarray
    p_value: np.ndarray  #: calibration test per group
    p_adjusted: np.ndarray  #: Benjamini–Hochberg adjusted across groups
    ordered: bool  #: whether the keys are ordered values (numbers, dates, periods): drawn as a drift over them
    level: float
    n_boot: int
    n_sim: int
    seed: int  #: group i (in key order) drew its replicates with seed + i
    metric: str = "l1"
    key_names: Optional[Tuple[str, ...]] = None  #: the key columns' names (several named columns), else None

    def __len__(self) -> int:
        return int(self.keys.shape[0])

    def order(self, by: str = "key", descending: Optional[bool] = None) -> np.ndarray:
        """The indices of the groups sorted by a column: ``"key"`` (the
        result's own order), ``"smece"``, ``"low"``, ``"high"``, ``"n"``,
        ``"total_weight"``, ``"p_value"`` or ``"p_adjusted"``.

        ``descending`` None takes the column's natural direction, the most
        notable first: the largest SmoothECE, interval bound, count and weight,
        the smallest p-value; keys ascending. Ties keep key order and NaN comes
        last either way. ``result.order("smece")[0]`` is the worst group."""
        if by not in _SORTABLE:
            raise ValueError(f"by must be one of {sorted(_SORTABLE)}, got {by!r}")
        if descending is None:
            descending = _SORTABLE[by]
        elif not isinstance(descending, (bool, np.bool_)):
            raise TypeError(f"descending must be a bool or None, got {descending!r}")
        if by == "key":
            index = np.arange(len(self), dtype=np.intp)
            return index[::-1].copy() if descending else index
        values = np.asarray(getattr(self, by), dtype=np.float64)
        nan = np.isnan(values)
        return np.lexsort((np.where(nan, 0.0, -values if descending else values), nan)).astype(np.intp)

    def _rows(self, sort_by: Optional[str]) -> np.ndarray:
        return np.arange(len(self), dtype=np.intp) if sort_by is None else self.order(sort_by)

    def table(self, sort_by: Optional[str] = None, limit: Optional[int] = None) -> str:
        """The groups as text, one line each (key, σ*, interval, p-values, rows),
        in key order or sorted by a column (``sort_by`` as in :meth:`order`, in its
        natural direction: ``table(sort_by="smece")`` lists the worst first);
        ``limit`` lines at most."""
        if limit is not None and (isinstance(limit, bool) or not isinstance(limit, (int, np.integer)) or limit < 0):
            raise ValueError(f"limit must be a non-negative int or None, got {limit!r}")
        rows = self._rows(sort_by)
        shown = rows if limit is None else rows[:limit]
        where = "in key order" if sort_by is None else f"by {sort_by}" + (
            ", largest first" if _SORTABLE[sort_by] else ", smallest first")
        head = (f"GroupedCalibration({_groups(len(self))} {where}, metric={self.metric!r}, n_boot={self.n_boot}, "
                f"n_sim={self.n_sim}, seed={self.seed})")
        return "\n".join([head] + self._lines(shown, rows.size - shown.size))

    def _lines(self, rows: np.ndarray, hidden: int, tail: Optional[np.ndarray] = None) -> List[str]:
        labels = format_keys(self.keys)
        lines = []

        def line(i: int) -> str:
            extra = ""
            if self.n_boot:
                extra += f" [{self.low[i]:.4g}, {self.high[i]:.4g}]"
            if self.n_sim:
                extra += f" {format_p(self.p_value[i], self.n_sim)} (adjusted {self.p_adjusted[i]:.3g})"
            return f"  {labels[i]}: smece={self.smece[i]:.6g}{extra}, n={int(self.n[i])}"

        lines += [line(i) for i in rows]
        if hidden:
            lines.append(f"  ... {hidden} more group{'' if hidden == 1 else 's'}")
        if tail is not None:
            lines += [line(i) for i in tail]
        return lines

    def __repr__(self) -> str:
        head = (f"GroupedCalibration({_groups(len(self))} in key order, metric={self.metric!r}, n_boot={self.n_boot}, "
                f"n_sim={self.n_sim}, seed={self.seed})")
        rows = np.arange(len(self))
        if len(self) <= _REPR_GROUPS:
            return "\n".join([head] + self._lines(rows, 0))
        return "\n".join([head] + self._lines(rows[:15], len(self) - 18, rows[-3:]))

    def _key_table(self) -> Tuple[List[str], list]:
        """(names, columns): the keys as one column ("key"), or one per key column of tuple keys."""
        if len(self) and isinstance(self.keys[0], tuple):
            width = len(self.keys[0])
            names = list(self.key_names) if self.key_names else [f"key_{j}" for j in range(width)]
            return names, [_key_values([k[j] for k in self.keys]) if not _is_period(self.keys[0][j])
                           else _object_array([k[j] for k in self.keys]) for j in range(width)]
        return ["key"], [self.keys]

    def _numbers(self) -> Dict[str, np.ndarray]:
        return {"n": self.n, "total_weight": self.total_weight, "smece": self.smece, "low": self.low,
                "high": self.high, "p_value": self.p_value, "p_adjusted": self.p_adjusted}

    def to_pandas(self, sort_by: Optional[str] = None):
        """A pandas DataFrame indexed by the keys (a DatetimeIndex for dates, a
        PeriodIndex for periods, a MultiIndex named after the key columns for
        tuples) with the columns n, total_weight, smece, low, high, p_value,
        p_adjusted; in key order, or sorted by a column (``sort_by`` as in
        :meth:`table`). Needs pandas (``pip install pandas``)."""
        try:
            import pandas as pd
        except ImportError:
            raise _missing_module("GroupedCalibration.to_pandas()", "pandas") from None
        rows = self._rows(sort_by)
        names, columns = self._key_table()
        levels = [pd.PeriodIndex(col) if len(col) and _is_period(col[0]) else pd.Index(col) for col in columns]
        if len(levels) == 1:
            index = levels[0].rename(names[0])
        else:
            index = pd.MultiIndex.from_arrays(levels, names=names)
        frame = pd.DataFrame(self._numbers(), index=index)
        return frame if sort_by is None else frame.iloc[rows]

    def to_polars(self, sort_by: Optional[str] = None):
        """A polars DataFrame: the key column(s) (``key``, or one per key column
        of tuple keys), then n, total_weight, smece, low, high, p_value,
        p_adjusted; in key order or sorted (``sort_by`` as in :meth:`table`).
        Dates become polars Date/Datetime columns; periods and keys polars has
        no type for, their :func:`format_keys` text. Needs polars
        (``pip install polars``)."""
        try:
            import polars as pl
        except ImportError:
            raise _missing_module("GroupedCalibration.to_polars()", "polars") from None
        rows = self._rows(sort_by)
        names, columns = self._key_table()
        data = {}
        for name, col in zip(names, columns):
            col = np.asarray(col)
            unit = np.datetime_data(col.dtype)[0] if col.dtype.kind == "M" else None
            if unit in ("h", "m", "s"):  # polars' Datetime holds ms, us or ns: ms holds these exactly
                col, unit = col.astype("datetime64[ms]"), "ms"
            if col.dtype.kind in "biufU" or unit in ("D", "ms", "us", "ns"):
                data[name] = pl.Series(name, col[rows])
            else:
                data[name] = pl.Series(name, format_keys(col[rows]), dtype=pl.String)
        for name, values in self._numbers().items():
            data[name] = pl.Series(name, np.asarray(values)[rows])
        return pl.DataFrame(data)

    def to_dict(self) -> dict:
        """Every field as plain Python data, in key order: ``json.dumps(result.to_dict())``
        works as it is. NaN reads None; keys that JSON has a type for (numbers,
        booleans, strings) stay themselves, tuples become lists, dates and
        periods their :func:`format_keys` text (ISO 8601)."""
        out = super().to_dict()
        out["keys"] = _json_keys(self.keys)
        return out

    def plot(self, ax: Optional[Axes] = None, **style: Any) -> Axes:
        """A forest plot (categories) or a drift plot (ordered keys); see
        :func:`smoothece.plotting.plot_groups`. Returns the Axes."""
        from .plotting import plot_groups

        return plot_groups(self, ax=ax, **style)


def _result(keys, ordered, answers: Dict[str, np.ndarray], *, level, n_boot, n_sim, seed, metric,
            key_names=None) -> GroupedCalibration:
    p = answers["p_value"]
    bound = answers["bound"]
    if bound.any():  # only a sketch's grid leaves σ* unresolved (arrays have their rows)
        named = ", ".join(repr(k) for k in np.asarray(keys, dtype=object)[bound][:3])
        named += ", ..." if bound.sum() > 3 else ""
        warnings.warn(f"{int(bound.sum())} of {bound.size} groups ({named}) have a SmoothECE below what the sketch's "
                      f"grid resolves: their smece is an upper bound, and their interval and p-value are not "
                      f"computed from it (NaN). A sketch with a finer resolution resolves them.", ResolutionWarning,
                      stacklevel=outside_stacklevel())
    return GroupedCalibration(
        keys=frozen(keys if isinstance(keys, np.ndarray) else np.asarray(keys)), n=frozen(answers["rows"]),
        total_weight=frozen(answers["total_weight"]), smece=frozen(answers["sigma"]), low=frozen(answers["low"]),
        high=frozen(answers["high"]), p_value=frozen(p), p_adjusted=frozen(benjamini_hochberg(p)), ordered=ordered,
        level=level, n_boot=n_boot, n_sim=n_sim, seed=seed, metric=metric, key_names=key_names)


def _options(n_boot, test, n_sim, level, seed, weight_kind, counts=None):
    n_boot = _validate.count(n_boot, "n_boot", 0)
    test = _validate.flag(test, "test")
    n_sim = _validate.count(n_sim, "n_sim", 1) if test else 0
    kind = _validate.weight_kind(weight_kind, counts if n_boot or test else None)  # counts: asked if it resamples
    return n_boot, n_sim, _validate.level(level), _validate.seed(seed), kind


def smece_by_group(
    f: ArrayLike,
    y: ArrayLike,
    groups: ArrayLike,
    *,
    weights: Optional[ArrayLike] = None,
    metric: str = "l1",
    n_boot: int = 0,
    test: bool = False,
    n_sim: int = 1000,
    seed: Optional[int] = None,
    level: float = 0.95,
    weight_kind: Optional[str] = None,
    clip: Union[bool, float] = False,
    threads: Optional[int] = None,
) -> GroupedCalibration:
    """The SmoothECE of every group of rows, with intervals and tests if asked.

    Parameters
    ----------
    f, y, weights, metric, clip, threads
        As in :func:`smoothece.smece`; the rows of all groups together.
    groups : array_like, shape (n,), or several such columns
        The group of each row: integers, strings, booleans, dates (numpy
        datetime64, ``datetime.date``/``datetime`` objects), pandas periods
        (``df.day.dt.to_period("M")``), a pandas categorical or Series; or
        several key columns (a tuple or list of 1-D arrays, a pandas or polars
        DataFrame): one group per combination that occurs, its key a tuple.
        A group's rows need not be contiguous. Missing keys (None, NaN, NaT,
        NA) are refused, naming the first. Groups come in key order: time
        keys chronologically, numbers ascending, strings lexicographically, a
        categorical in its categories' order, tuples lexicographically by
        column (see :class:`GroupedCalibration`).
    n_boot : int, default 0
        Bootstrap replicates per group for its interval (0: none).
    test : bool, default False
        Also the calibration test per group (``n_sim`` consistency
        replicates), with Benjamini–Hochberg adjusted p-values across groups.
    seed : int, optional
        Group i (in key order, the result's) draws with ``seed + i``; None
        draws a seed, recorded in the result.
    level, weight_kind
        As in :func:`smoothece.bootstrap_smece`.

    Returns
    -------
    GroupedCalibration
        Per group: key, rows, total weight, σ*, interval, p-value and its
        adjustment. Each group's σ* equals ``smece(f[g], y[g], threads=1)``,
        its interval ``bootstrap_smece(..., seed=seed + i)``'s and its p-value
        ``calibration_test(..., seed=seed + i)``'s, bit for bit: the same code
        answers them, one group per thread.

    Notes
    -----
    Cost: one pass over the keys (integer keys 0..K-1 are copied as their
    own codes; others get int64 codes), one pass gathers the rows by group (8 bytes a
    row: the clamped prediction with the label in its sign bit; 16 with
    weights), then each group costs what an ungrouped call on its rows costs.
    """
    n_boot, n_sim, level, seed, kind = _options(n_boot, test, n_sim, level, seed, weight_kind)  # before the passes
    f_arr, y_arr, w_arr = _validate.rows(f, y, weights)
    lo, hi = _validate.clip_range(clip)
    codes, keys, ordered, key_names = _factorize(groups, f_arr.shape[0], threads=_validate.threads(threads))
    if weight_kind is None:  # whether the weights look like counts, asked once they are checked
        kind = _validate.weight_kind(None, counts_check(w_arr) if n_boot or n_sim else None)
    try:
        answers = _core.smece_by_group([f_arr], [y_arr], None if w_arr is None else [w_arr], lo, hi, [codes], len(keys),
                                       _validate.metric(metric), n_boot, n_sim, level, seed, kind,
                                       _validate.threads(threads))
    except InputError as err:
        raise _validate.with_hint(err, f_arr, y_arr, clip) from None
    return _result(keys, ordered, answers, level=level, n_boot=n_boot, n_sim=n_sim, seed=seed, metric=metric,
                   key_names=key_names)


# --- Batches of rows (the command line's --by) -------------------------------------------------

class GroupedRows:
    """Batches of rows with their group keys, kept as arrays and answered once
    at the end by the grouped core call: for a file read in chunks, what
    :func:`smece_by_group` gives on all its rows, bit for bit.

    The command line's ``--by`` uses it rather than a :class:`GroupedSketch`:
    about 17 bytes a row (a sketch in its exact form keeps ~72 bytes a row in
    memory, and rebuilds every touched group's atoms at each batch), and one
    gathering pass instead of thousands of sketch updates per batch
    (``bench/cli_bench.py``). The rows must have been checked (the command's
    overall sketch checks every batch first); keys as in :func:`smece_by_group`,
    groups in sorted key order as :meth:`GroupedSketch.smece_by_group` has them.
    It answers once: the batches are handed to the core as they are, their
    codes renumbered in place into the groups' order.
    """

    __slots__ = ("_metric", "_clip", "_keys", "_sorted", "_sorted_codes", "_parts", "_answered", "_ordered",
                 "_key_names")

    def __init__(self, metric: str = "l1", clip: Union[bool, float] = False):
        self._metric = _validate.metric(metric)
        self._clip = _validate.clip_range(clip)
        self._keys: Optional[np.ndarray] = None  # the distinct keys, in order of first appearance
        self._sorted: Optional[np.ndarray] = None  # the same keys sorted, and their codes: batches look up there
        self._sorted_codes = np.empty(0, dtype=np.int64)
        self._parts: list = []
        self._answered = False
        self._ordered = False  # whether the keys are ordered values (numbers, dates, periods), from the first batch
        self._key_names: Optional[Tuple[str, ...]] = None

    def update(self, f: ArrayLike, y: ArrayLike, groups: ArrayLike, weights: Optional[ArrayLike] = None, *,
               threads: Optional[int] = None) -> "GroupedRows":
        """Keeps a batch of rows with their group keys."""
        if self._answered:
            raise RuntimeError("GroupedRows answers once; it takes no rows after that")
        f_arr, y_arr, w_arr = _validate.rows(f, y, weights, allow_empty=True)
        if f_arr.shape[0] == 0:
            return self
        if self._parts and (w_arr is None) != (self._parts[0][2] is None):
            had = "no weights" if self._parts[0][2] is None else "weights"
            has = "has weights" if w_arr is not None else "has none"
            raise InputError(f"weights: batch {len(self._parts)} {has}, but "
                             f"the earlier batches had {had}; give every batch weights (ones where a row has no "
                             f"weight of its own) or none", "weights")
        codes, keys, ordered, names = _factorize(groups, f_arr.shape[0], threads=_validate.threads(threads))
        if self._keys is None:
            self._ordered, self._key_names = ordered, names
        self._parts.append((f_arr, y_arr, w_arr, self._global_codes(keys)[codes]))
        return self

    def _global_codes(self, keys: np.ndarray) -> np.ndarray:
        """The codes of a batch's distinct keys, new keys numbered on (a search in the sorted keys, no loop)."""
        if self._keys is None:
            self._keys, order = keys, np.argsort(keys, kind="stable")
            self._sorted, self._sorted_codes = keys[order], order.astype(np.int64)
            return np.arange(keys.size, dtype=np.int64)
        at = np.minimum(np.searchsorted(self._sorted, keys), self._sorted.size - 1)
        known = self._sorted[at] == keys
        out = np.empty(keys.size, dtype=np.int64)
        out[known] = self._sorted_codes[at[known]]
        new = keys[~known]
        if new.size:
            out[~known] = self._keys.size + np.arange(new.size)
            self._keys = np.concatenate([self._keys, new])
            merged = np.concatenate([self._sorted, new])
            order = np.argsort(merged, kind="stable")
            self._sorted = merged[order]
            self._sorted_codes = np.concatenate([self._sorted_codes, out[~known]])[order]
        return out

    def __len__(self) -> int:
        return 0 if self._keys is None else int(self._keys.size)

    def smece_by_group(self, *, n_boot: int = 0, test: bool = False, n_sim: int = 1000, seed: Optional[int] = None,
                       level: float = 0.95, weight_kind: Optional[str] = None,
                       threads: Optional[int] = None) -> GroupedCalibration:
        """As :func:`smece_by_group` on all the rows kept (groups sorted by key)."""
        n_boot, n_sim, level, seed, kind = _options(n_boot, test, n_sim, level, seed, weight_kind,
                                                    counts_check(*(part[2] for part in self._parts)))
        if not self._parts:  # no rows: no groups
            return GroupedSketch(metric=self._metric).smece_by_group(n_boot=n_boot, test=test, n_sim=n_sim, seed=seed,
                                                                     level=level, weight_kind=kind)
        if self._answered:
            raise RuntimeError("GroupedRows answers once (its batches' codes became the groups' order)")
        self._answered = True
        keys, order = self._keys, self._sorted_codes  # the codes of the keys in sorted order
        rank = np.empty(order.size, dtype=np.int64)
        rank[order] = np.arange(order.size)
        f, y, w, codes = (list(c) for c in zip(*self._parts))
        for c in codes:  # each batch's codes become group numbers in key order, in place (no new memory)
            np.take(rank, c, out=c)
        lo, hi = self._clip
        answers = _core.smece_by_group(f, y, None if w[0] is None else w, lo, hi, codes, len(keys), self._metric,
                                       n_boot, n_sim, level, seed, kind, _validate.threads(threads))
        return _result(keys[order], self._ordered, answers, level=level, n_boot=n_boot, n_sim=n_sim, seed=seed,
                       metric=self._metric, key_names=self._key_names)


# --- Streams -----------------------------------------------------------------------------------

_KEY_FORMAT = b"SMECEGK\0"


def _keys_in_order(keys: list):
    """(keys as an array, the order that sorts them, ordered): numbers ascending, strings
    lexicographically, dates and periods in time, tuples lexicographically by column."""
    if not keys:
        return np.empty(0), np.empty(0, dtype=np.intp), False
    first = keys[0]
    if isinstance(first, tuple):
        columns = [_keys_in_order([k[j] for k in keys])[0] for j in range(len(first))]
        sortable = [np.asarray([k.ordinal for k in col]) if _is_period(first[j]) else col
                    for j, col in enumerate(columns)]
        return _object_array(keys), np.lexsort(sortable[::-1]), False
    if _is_period(first):
        return _object_array(keys), np.argsort(np.asarray([k.ordinal for k in keys]), kind="stable"), True
    arr = np.asarray(keys)
    if arr.dtype.kind == "U" and _has_nul(keys):  # numpy's strings would drop their trailing NULs
        arr = _object_array(keys)
    return arr, np.argsort(arr, kind="stable"), arr.dtype.kind in "biufMm"


class GroupedSketch(_bytes.Pickled):
    """One mergeable :class:`~smoothece.CalibrationSketch` per group, for streams.

    Each update gathers the batch's rows by group in one pass and adds each
    group's rows to its own sketch. While a group's predictions are few its
    sketch keeps them exactly: about 72 bytes a distinct prediction in memory
    (about 6 a row in :meth:`to_bytes` in the bench's groups); past
    resolution/2 distinct predictions it holds its grid instead, whatever its
    rows. Keys as in :func:`smece_by_group` (several key columns give tuple
    keys), of one kind per set: numbers, strings, dates, pandas periods of one
    frequency, or tuples of those (the same kinds column by column). Every
    kind goes through :meth:`to_bytes` (reading period keys back needs
    pandas). :meth:`smece_by_group` answers in key order (sorted by value:
    a categorical's categories are not kept across batches). Parameters as in
    :class:`~smoothece.CalibrationSketch`.

    Thread safety as a :class:`~smoothece.CalibrationSketch`'s: a lock guards
    the set (its keys and its sketches), so calls from several threads never
    corrupt it and each sees the set between whole updates; updates from
    several threads serialize on it (the keys' pass and the rows' checks run
    outside). For parallel ingestion give each thread its own set and
    ``merge`` them.
    """

    __slots__ = ("_core", "_keys", "_codes", "_metric", "_lock")

    def __init__(self, resolution: Optional[int] = None, metric: str = "l1"):
        self._metric = _validate.metric(metric)
        if resolution is None:
            resolution = default_resolution(self._metric)
        if isinstance(resolution, bool) or not isinstance(resolution, int):
            raise TypeError(f"resolution must be an int (a power of two), got {resolution!r}")
        self._core = _core.GroupedSketch(self._metric, resolution)
        self._keys: list = []
        self._codes: dict = {}
        # Held from numbering a batch's new keys to the core's update (which
        # forgets them again if it fails), and while anything reads the keys
        # with the core: the key table and the core's groups stay one state.
        self._lock = threading.Lock()

    def _code_of(self, key, one_kind: bool = True) -> int:
        code = self._codes.get(key)
        if code is None:
            if one_kind and self._keys and _key_kind(key) != _key_kind(self._keys[0]):  # 1 and "1": two groups
                raise TypeError(f"group keys must be of one kind (numbers, strings, dates, periods of one frequency, "
                                f"or tuples of them column by column): this sketch holds "
                                f"{_key_kind(self._keys[0])} keys, got {key!r}")
            code = self._codes[key] = len(self._keys)
            self._keys.append(key)
        return code

    def _add_keyed(self, keys, add) -> None:
        """Calls add(codes of `keys`), the keys new to this set numbered next; if
        anything fails, the new keys are forgotten again (the core added nothing).
        Takes the set's lock."""
        with self._lock:
            known = len(self._keys)
            try:
                add(np.array([self._code_of(k) for k in keys], dtype=np.int64))
            except BaseException:
                for k in self._keys[known:]:
                    del self._codes[k]
                del self._keys[known:]
                raise

    def update(self, f: ArrayLike, y: ArrayLike, groups: ArrayLike, weights: Optional[ArrayLike] = None, *,
               clip: Union[bool, float] = False, threads: Optional[int] = None) -> "GroupedSketch":
        """Adds a batch of rows with their group keys; a bad row (or key) adds nothing."""
        f_arr, y_arr, w_arr = _validate.rows(f, y, weights, allow_empty=True)
        lo, hi = _validate.clip_range(clip)
        threads = _validate.threads(threads)
        if f_arr.shape[0] == 0:
            return self
        codes, keys, _ = factorize_keys(groups, f_arr.shape[0], threads=threads)
        plain = [_plain(k) for k in keys]
        self._add_keyed(plain, lambda to_global: self._core.update(f_arr, y_arr, w_arr, lo, hi, to_global[codes],
                                                                   threads))
        return self

    def merge(self, other: "GroupedSketch") -> "GroupedSketch":
        """Adds another grouped sketch (same resolution and metric), group by group; returns self."""
        if not isinstance(other, GroupedSketch):
            raise TypeError(f"can only merge a GroupedSketch, got {type(other).__name__}")
        with other._lock:  # its keys as they are now: the core merges those groups (it may hold more by then)
            keys = list(other._keys)
        self._add_keyed(keys, lambda mapping: self._core.merge(other._core, mapping.tolist()))
        return self

    def __iadd__(self, other: "GroupedSketch") -> "GroupedSketch":
        return self.merge(other)

    def __len__(self) -> int:
        with self._lock:
            return len(self._keys)

    def keys(self) -> list:
        """The group keys, in order of first appearance."""
        with self._lock:
            return list(self._keys)

    def __getitem__(self, key) -> CalibrationSketch:
        """A copy of the sketch of one group."""
        out = CalibrationSketch.__new__(CalibrationSketch)
        with self._lock:
            out._sketch = self._core.sketch(self._codes[key])
        return out

    def total(self) -> CalibrationSketch:
        """All groups merged into one sketch (the overall calibration)."""
        out = CalibrationSketch.__new__(CalibrationSketch)
        out._sketch = self._core.total()
        return out

    @property
    def n(self) -> int:
        return self._core.rows

    def smece_by_group(self, *, n_boot: int = 0, test: bool = False, n_sim: int = 1000, seed: Optional[int] = None,
                       level: float = 0.95, weight_kind: Optional[str] = None,
                       threads: Optional[int] = None) -> GroupedCalibration:
        """As :func:`smece_by_group`, from the sketches (groups sorted by key)."""
        n_boot, n_sim, level, seed, kind = _options(n_boot, test, n_sim, level, seed, weight_kind,
                                                    lambda: self._core.weights_look_like_counts)
        threads = _validate.threads(threads)
        with self._lock:
            keys, order, ordered = _keys_in_order(self._keys)
            answers = self._core.answer(order.tolist(), n_boot, n_sim, level, seed, kind, threads)
        return _result(keys[order], ordered, answers, level=level, n_boot=n_boot, n_sim=n_sim, seed=seed,
                       metric=self._metric)

    # -- serialization --------------------------------------------------------
    def to_bytes(self) -> bytes:
        """Every group's key and sketch: bytes of format version 5, which the core
        writes and checksums (the layout: docs/design.md, "Sketch bytes")."""
        with self._lock:  # one state of the set, between updates
            return self._core.to_bytes(_bytes.encode_keys(self._keys), len(self._keys))

    @classmethod
    def from_bytes(cls, data: bytes, *, max_memory: Optional[int] = None) -> "GroupedSketch":
        """Reads :meth:`to_bytes` output (format versions 1 to 5).

        Bytes may come from anywhere: what is read back is a set that
        :meth:`update` and :meth:`merge` could have made, or a ``ValueError``
        ("corrupt grouped sketch: ...", or one naming an unknown format
        version). Every group's sketch is checked as
        :meth:`CalibrationSketch.from_bytes` checks it and every key as
        :meth:`update` checks keys (no NaN or NaT, valid UTF-8, periods pandas
        can make, one kind per set, no key twice). Versions 1 and 2 had no
        checksum over their keys: each group's sketch bytes carry their own,
        but a key changed in transit reads as another key.

        ``max_memory``: bytes that all the groups together may allocate (a
        ``ValueError`` before allocating more); by default 128 MiB or 64 times
        ``len(data)``, whichever is more.
        """
        data = _bytes.as_bytes(data)
        limit = _bytes.memory_limit(max_memory)
        version = struct.unpack_from("<I", data, 8)[0] if len(data) >= 16 and data[:8] == _KEY_FORMAT else 0
        if 1 <= version <= 4:
            metric, resolution, keys, sketches = _bytes.read_legacy_grouped(data, version, limit)
            out = cls(resolution, metric or "l1")
            for code, sketch in enumerate(sketches):
                out._core.set(code, sketch)
        else:
            core, section = _core.GroupedSketch.from_bytes(data, limit)
            keys = _bytes.decode_keys(section, core.groups)
            out = cls(core.resolution, core.metric)
            out._core = core
        for key in keys:
            out._codes[key] = len(out._keys)
            out._keys.append(key)
        return out

    def __repr__(self) -> str:
        return f"GroupedSketch({len(self)} groups, n={self.n}, metric={self._metric!r})"
