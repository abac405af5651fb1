"""Calibration by slice and over time: the SmoothECE of every group in one call.

:func:`smece_by_group` gathers the rows by group in one pass and answers every
group with exactly the code that answers an ungrouped call on its rows (so
each number equals ``smece(f[g], y[g], threads=1)`` bit for bit), with the
groups spread over the thread pool. :class:`GroupedSketch` does the same for
streams: one compact :class:`~smoothece.CalibrationSketch` per group, updated
from batches, mergeable across machines and serializable.
"""

from __future__ import annotations

import struct
import zlib
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Dict, Optional, Union

import numpy as np

from . import _core, _validate
from ._errors import InputError
from ._typing import ArrayLike
from ._util import frozen
from .sketch import DEFAULT_RESOLUTION, CalibrationSketch

if TYPE_CHECKING:
    from matplotlib.axes import Axes

__all__ = ["GroupedCalibration", "GroupedSketch", "smece_by_group", "benjamini_hochberg"]


# --- Group keys --------------------------------------------------------------------------------

def _categorical(x: Any):
    """The codes/categories holder of a pandas categorical (a Series' .cat, or the Categorical), else None."""
    if getattr(getattr(x, "dtype", None), "name", None) != "category":
        return None
    return x.cat if hasattr(x, "cat") else x


def _missing_key(name: str, index: int, count: int, size: int, what: str) -> InputError:
    return InputError(f"{name}[{index}] is missing ({what}): {count} of {size} group keys are missing; drop those "
                      f"rows or give them a key of their own first", name, index, None, count, size)


def factorize_keys(groups: Any, n: int, name: str = "groups", threads: int = 0):
    """(codes, keys, ordered): int64 codes in [0, K) per row, the K distinct keys
    in the result's order, and whether the keys are ordered values (numbers,
    dates: calibration over time) rather than categories.

    Order: pandas categoricals keep their categories' order; other keys are
    sorted (numbers ascending, strings lexicographically, dates in time).
    Missing keys (None, NaN, NaT, pandas NA) are refused, naming the first."""
    if groups is None or isinstance(groups, (str, bytes)):
        raise TypeError(f"{name} must be a 1-D array of group keys, got {type(groups).__name__}")
    cat = _categorical(groups)
    if cat is not None:
        codes = np.asarray(cat.codes, dtype=np.int64)
        if codes.ndim != 1 or codes.shape[0] != n:
            raise ValueError(f"{name} must have one key per row: got shape {codes.shape} for {n} rows")
        missing = codes < 0
        if missing.any():
            raise _missing_key(name, int(np.argmax(missing)), int(missing.sum()), n, "NA")
        categories = np.asarray(cat.categories)
        used = np.bincount(codes, minlength=categories.size) > 0  # categories without rows are not groups
        remap = np.cumsum(used) - 1
        return remap[codes].astype(np.int64), categories[used], bool(getattr(cat, "ordered", False))
    isna = getattr(groups, "isna", None)
    if callable(isna):
        na = np.asarray(isna())
        if na.ndim == 1 and na.any():
            raise _missing_key(name, int(np.argmax(na)), int(na.sum()), na.size, "NA")
        groups = groups.to_numpy() if hasattr(groups, "to_numpy") else groups
    keys = np.asarray(groups)
    if keys.ndim != 1 or keys.shape[0] != n:
        raise ValueError(f"{name} must be a 1-D array with one key per row: got shape {keys.shape} for {n} rows")
    objects = None
    if keys.dtype.kind == "O":
        # Python objects: numpy infers one dtype for them; the distinct keys'
        # own types are checked below (a mix of numbers and strings is refused).
        missing = np.equal(keys, None)
        if missing.any():
            raise _missing_key(name, int(np.argmax(missing)), int(missing.sum()), n, "None")
        objects = keys
        keys = np.asarray(keys.tolist())
        if keys.dtype.kind == "O" or keys.ndim != 1:
            raise TypeError(f"{name} must hold keys of one kind (numbers, strings or dates)")
    kind = keys.dtype.kind
    if kind == "f" and np.isnan(keys).any():
        nan = np.isnan(keys)
        raise _missing_key(name, int(np.argmax(nan)), int(nan.sum()), n, "NaN")
    if kind in "mM" and np.isnat(keys).any():
        nat = np.isnat(keys)
        raise _missing_key(name, int(np.argmax(nat)), int(nat.sum()), n, "NaT")
    if kind not in "biufMmUS":
        raise TypeError(f"{name} must hold numbers, strings, dates or booleans, got dtype {keys.dtype}")
    codes, first, count = _core.factorize(keys, threads)
    if codes is None:  # 8-byte integer keys 0..K-1, each present: their own codes, in key order
        codes = keys.view(np.int64)
        codes.flags.writeable = False
        distinct = np.arange(count, dtype=np.int64).view(keys.dtype)
        if objects is not None:
            first = np.unique(codes, return_index=True)[1]
    else:
        distinct = keys[first]
    if objects is not None:  # the distinct keys' own types, not numpy's inference from them
        types = {type(k) for k in objects[first]}
        if not (types <= {str} if kind in "US" else types <= {bool, int, float}):
            raise TypeError(f"{name} must hold keys of one kind (numbers, strings or dates), got a mix of "
                            f"{sorted(t.__name__ for t in types)}")
    order = np.argsort(distinct, kind="stable")
    if np.array_equal(order, np.arange(order.size)):  # already in key order (integer ids): no remapping pass
        return codes, distinct, kind in "biufMm"
    rank = np.empty_like(order)
    rank[order] = np.arange(order.size)
    return rank[codes], distinct[order], kind in "biufMm"


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


@dataclass(frozen=True, repr=False)
class GroupedCalibration:
    """The SmoothECE of every group, in the order of ``keys``.

    ``keys`` are in a stable order: a pandas categorical's categories, else
    sorted. Arrays have one entry per group; ``low``/``high`` are NaN without
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
    ordered: bool  #: whether the keys are ordered values (numbers, dates): drawn as a drift over them
    level: float
    n_boot: int
    n_sim: int
    seed: int  #: group i drew its replicates with seed + i
    metric: str = "l1"

    def __len__(self) -> int:
        return int(self.keys.shape[0])

    def __repr__(self) -> str:
        worst = np.argsort(-np.nan_to_num(self.smece, nan=-1.0))[:5]
        lines = [f"GroupedCalibration({len(self)} groups, metric={self.metric!r}, n_boot={self.n_boot}, "
                 f"n_sim={self.n_sim}, seed={self.seed}); worst:"]
        for i in worst:
            extra = ""
            if self.n_boot:
                extra += f" [{self.low[i]:.4g}, {self.high[i]:.4g}]"
            if self.n_sim:
                extra += f" p={self.p_value[i]:.3g} (adjusted {self.p_adjusted[i]:.3g})"
            lines.append(f"  {self.keys[i]}: smece={self.smece[i]:.6g}{extra}, n={int(self.n[i])}")
        return "\n".join(lines)

    def to_pandas(self):
        """A pandas DataFrame with one row per group (needs pandas)."""
        import pandas as pd

        return pd.DataFrame({"key": self.keys, "n": self.n, "total_weight": self.total_weight, "smece": self.smece,
                             "low": self.low, "high": self.high, "p_value": self.p_value,
                             "p_adjusted": self.p_adjusted})

    def plot(self, ax: Optional[Axes] = None, **style: Any) -> Axes:
        """A forest plot (categories) or a drift plot (ordered keys); see
        :func:`smoothece.plotting.plot_groups`. Returns the Axes."""
        from .plotting import plot_groups

        return plot_groups(self, ax=ax, **style)


def _result(keys, ordered, answers: Dict[str, np.ndarray], *, level, n_boot, n_sim, seed, metric) -> GroupedCalibration:
    p = answers["p_value"]
    return GroupedCalibration(
        keys=frozen(np.asarray(keys)), n=frozen(answers["rows"]), total_weight=frozen(answers["total_weight"]),
        smece=frozen(answers["sigma"]), low=frozen(answers["low"]), high=frozen(answers["high"]),
        p_value=frozen(p), p_adjusted=frozen(benjamini_hochberg(p)), ordered=ordered, level=level, n_boot=n_boot,
        n_sim=n_sim, seed=seed, metric=metric)


def _options(n_boot, test, n_sim, level, seed, weight_kind):
    n_boot = _validate.count(n_boot, "n_boot", 0)
    test = _validate.flag(test, "test")
    n_sim = _validate.count(n_sim, "n_sim", 1) if test else 0
    return n_boot, n_sim, _validate.level(level), _validate.seed(seed), _validate.weight_kind(weight_kind)


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
    weight_kind: str = "importance",
    clip: Union[bool, float] = False,
    threads: Optional[int] = None,
) -> GroupedCalibration:
    """The SmoothECE of every group of rows, with intervals and tests if asked.

    Parameters
    ----------
    f, y, weights, metric, clip, threads
        As in :func:`smoothece.smece`; the rows of all groups together.
    groups : array_like, shape (n,)
        The group of each row: integers, strings, booleans, dates, or a pandas
        categorical or Series; a group's rows need not be contiguous. Missing
        keys (None, NaN, NaT, NA) are refused, naming the first.
    n_boot : int, default 0
        Bootstrap replicates per group for its interval (0: none).
    test : bool, default False
        Also the calibration test per group (``n_sim`` consistency
        replicates), with Benjamini–Hochberg adjusted p-values across groups.
    seed : int, optional
        Group i (in the result's order) draws with ``seed + i``; None draws a
        seed, recorded in the result.
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
    Cost: one pass over the keys (integer keys 0..K-1 are their own codes;
    others get int64 codes), one pass gathers the rows by group (8 bytes a
    row: the clamped prediction with the label in its sign bit; 16 with
    weights), then each group costs what an ungrouped call on its rows costs.
    """
    f_arr, y_arr, w_arr = _validate.rows(f, y, weights)
    lo, hi = _validate.clip_range(clip)
    codes, keys, ordered = factorize_keys(groups, f_arr.shape[0], threads=_validate.threads(threads))
    n_boot, n_sim, level, seed, kind = _options(n_boot, test, n_sim, level, seed, weight_kind)
    try:
        answers = _core.smece_by_group([f_arr], [y_arr], None if w_arr is None else [w_arr], lo, hi, [codes], len(keys),
                                       _validate.metric(metric), n_boot, n_sim, level, seed, kind,
                                       _validate.threads(threads))
    except InputError as err:
        raise _validate.with_hint(err, f_arr, y_arr, clip) from None
    return _result(keys, ordered, answers, level=level, n_boot=n_boot, n_sim=n_sim, seed=seed, metric=metric)


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

    __slots__ = ("_metric", "_clip", "_keys", "_sorted", "_sorted_codes", "_parts", "_answered")

    def __init__(self, metric: str = "l1", clip: Union[bool, float] = False):
        self._metric = _validate.metric(metric)
        self._clip = _validate.clip_range(clip)
        self._keys: Optional[np.ndarray] = None  # the distinct keys, in order of first appearance
        self._sorted: Optional[np.ndarray] = None  # the same keys sorted, and their codes: batches look up there
        self._sorted_codes = np.empty(0, dtype=np.int64)
        self._parts: list = []
        self._answered = False

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
            raise InputError(f"weights: batch {len(self._parts)} {'has weights' if w_arr is not None else 'has none'}, but "
                             f"the earlier batches had {had}; give every batch weights (ones where a row has no "
                             f"weight of its own) or none", "weights")
        codes, keys, _ = factorize_keys(groups, f_arr.shape[0], threads=_validate.threads(threads))
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
                       level: float = 0.95, weight_kind: str = "importance",
                       threads: Optional[int] = None) -> GroupedCalibration:
        """As :func:`smece_by_group` on all the rows kept (groups sorted by key)."""
        n_boot, n_sim, level, seed, kind = _options(n_boot, test, n_sim, level, seed, weight_kind)
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
        return _result(keys[order], keys.dtype.kind in "biufMm", answers, level=level, n_boot=n_boot, n_sim=n_sim,
                       seed=seed, metric=self._metric)


# --- Streams -----------------------------------------------------------------------------------

_KEY_FORMAT = b"SMECEGK\0"
# 2: the set's resolution and metric in the header; 3: a CRC-32 of everything
# before it at the end (the keys have no checksum of their own). 1 and 2 are still read.
_KEY_VERSION = 3
_METRICS = ("l1", "logit")


def _key_kind(key: Any) -> str:
    """Numbers (booleans too: numpy pools True with 1), strings or dates: one kind per set of groups."""
    if isinstance(key, (bool, int, float, np.bool_, np.number)):
        return "number"
    if isinstance(key, (str, np.str_)):
        return "string"
    return "date" if isinstance(key, np.datetime64) else type(key).__name__


def _encode_key(key: Any) -> bytes:
    """A group key as bytes: a type tag and the value (no pickle: bytes from elsewhere are data, never code)."""
    if isinstance(key, (bool, np.bool_)):
        return b"b" + struct.pack("<?", bool(key))
    if isinstance(key, (int, np.integer)):
        return b"i" + struct.pack("<q", int(key))
    if isinstance(key, (float, np.floating)):
        return b"f" + struct.pack("<d", float(key))
    if isinstance(key, (str, np.str_)):
        raw = str(key).encode("utf-8")
        return b"s" + struct.pack("<I", len(raw)) + raw
    if isinstance(key, np.datetime64):
        unit = np.datetime_data(key.dtype)[0].encode("ascii")
        return b"M" + struct.pack("<B", len(unit)) + unit + struct.pack("<q", int(key.astype(np.int64)))
    raise TypeError(f"group keys of type {type(key).__name__} cannot be serialized (numbers, strings, booleans and "
                    f"numpy dates can)")


def _decode_key(data: bytes, pos: int):
    tag = data[pos:pos + 1]
    pos += 1
    if tag == b"b":
        return bool(data[pos]), pos + 1
    if tag == b"i":
        return struct.unpack_from("<q", data, pos)[0], pos + 8
    if tag == b"f":
        return struct.unpack_from("<d", data, pos)[0], pos + 8
    if tag == b"s":
        (size,) = struct.unpack_from("<I", data, pos)
        return data[pos + 4:pos + 4 + size].decode("utf-8"), pos + 4 + size
    if tag == b"M":
        size = data[pos]
        unit = data[pos + 1:pos + 1 + size].decode("ascii")
        (value,) = struct.unpack_from("<q", data, pos + 1 + size)
        return np.datetime64(value, unit), pos + 1 + size + 8
    raise ValueError(f"corrupt grouped sketch: unknown key tag {tag!r}")


class GroupedSketch:
    """One mergeable :class:`~smoothece.CalibrationSketch` per group, for streams.

    Each update gathers the batch's rows by group in one pass and adds each
    group's rows to its own sketch. While a group's predictions are few its
    sketch keeps them exactly: about 72 bytes a distinct prediction in memory
    (about 6 a row in :meth:`to_bytes` in the bench's groups); past
    resolution/2 distinct predictions it holds its grid instead, whatever its
    rows. Keys are of one kind (numbers, strings or dates). Parameters as in
    :class:`~smoothece.CalibrationSketch`.
    """

    __slots__ = ("_core", "_keys", "_codes", "_metric")

    def __init__(self, resolution: int = DEFAULT_RESOLUTION, metric: str = "l1"):
        if isinstance(resolution, bool) or not isinstance(resolution, int):
            raise TypeError(f"resolution must be an int (a power of two), got {resolution!r}")
        self._metric = _validate.metric(metric)
        self._core = _core.GroupedSketch(self._metric, resolution)
        self._keys: list = []
        self._codes: dict = {}

    def _code_of(self, key, one_kind: bool = True) -> int:
        code = self._codes.get(key)
        if code is None:
            if one_kind and self._keys and _key_kind(key) != _key_kind(self._keys[0]):  # 1 and "1": two groups
                raise TypeError(f"group keys must be of one kind (numbers, strings or dates): this sketch holds "
                                f"{_key_kind(self._keys[0])} keys, got {key!r}")
            code = self._codes[key] = len(self._keys)
            self._keys.append(key)
        return code

    def _add_keyed(self, keys, add) -> None:
        """Calls add(codes of `keys`), the keys new to this set numbered next; if
        anything fails, the new keys are forgotten again (the core added nothing)."""
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
        if f_arr.shape[0] == 0:
            return self
        codes, keys, _ = factorize_keys(groups, f_arr.shape[0], threads=_validate.threads(threads))
        plain = [k.item() if isinstance(k, np.generic) and not isinstance(k, np.datetime64) else k for k in keys]
        self._add_keyed(plain, lambda to_global: self._core.update(f_arr, y_arr, w_arr, lo, hi, to_global[codes],
                                                                   _validate.threads(threads)))
        return self

    def merge(self, other: "GroupedSketch") -> "GroupedSketch":
        """Adds another grouped sketch (same resolution and metric), group by group; returns self."""
        if not isinstance(other, GroupedSketch):
            raise TypeError(f"can only merge a GroupedSketch, got {type(other).__name__}")
        self._add_keyed(other._keys, lambda mapping: self._core.merge(other._core, mapping.tolist()))
        return self

    def __iadd__(self, other: "GroupedSketch") -> "GroupedSketch":
        return self.merge(other)

    def __len__(self) -> int:
        return len(self._keys)

    def keys(self) -> list:
        """The group keys, in order of first appearance."""
        return list(self._keys)

    def __getitem__(self, key) -> CalibrationSketch:
        """A copy of the sketch of one group."""
        code = self._codes[key]
        out = CalibrationSketch.__new__(CalibrationSketch)
        out._sketch = self._core.sketch(code)
        return out

    def total(self) -> CalibrationSketch:
        """All groups merged into one sketch (the overall calibration)."""
        out = CalibrationSketch.__new__(CalibrationSketch)
        out._sketch = self._core.total()
        return out

    @property
    def n(self) -> int:
        return sum(self._core.sketch(code).rows for code in range(len(self._keys)))

    def smece_by_group(self, *, n_boot: int = 0, test: bool = False, n_sim: int = 1000, seed: Optional[int] = None,
                       level: float = 0.95, weight_kind: str = "importance",
                       threads: Optional[int] = None) -> GroupedCalibration:
        """As :func:`smece_by_group`, from the sketches (groups sorted by key)."""
        n_boot, n_sim, level, seed, kind = _options(n_boot, test, n_sim, level, seed, weight_kind)
        keys = np.asarray(self._keys) if self._keys else np.empty(0)
        order = np.argsort(keys, kind="stable") if keys.size else np.empty(0, dtype=np.intp)
        answers = self._core.answer(order.tolist(), n_boot, n_sim, level, seed, kind, _validate.threads(threads))
        return _result(keys[order], keys.dtype.kind in "biufMm", answers, level=level, n_boot=n_boot, n_sim=n_sim,
                       seed=seed, metric=self._metric)

    # -- serialization --------------------------------------------------------
    def to_bytes(self) -> bytes:
        """Every group's key and sketch bytes, versioned."""
        parts = [_KEY_FORMAT, struct.pack("<II", _KEY_VERSION, len(self._keys)),
                 struct.pack("<IB", self._core.resolution, _METRICS.index(self._metric))]
        for code, key in enumerate(self._keys):
            raw = self._core.sketch(code).to_bytes()
            parts += [_encode_key(key), struct.pack("<Q", len(raw)), raw]
        body = b"".join(parts)
        return body + struct.pack("<I", zlib.crc32(body))

    @classmethod
    def from_bytes(cls, data: bytes) -> "GroupedSketch":
        """Reads :meth:`to_bytes` output; anything else raises ValueError."""
        data = bytes(data)
        if data[:8] != _KEY_FORMAT or len(data) < 16:
            raise ValueError("corrupt grouped sketch: not grouped-sketch bytes")
        version, count = struct.unpack_from("<II", data, 8)
        if version not in (1, 2, _KEY_VERSION):
            raise ValueError(f"corrupt grouped sketch: unknown format version {version}")
        if version >= 3:
            data, (crc,) = data[:-4], struct.unpack_from("<I", data, len(data) - 4)
            if zlib.crc32(data) != crc:
                raise ValueError("corrupt grouped sketch: checksum mismatch")
        out = None
        pos = 16
        try:
            if version >= 2:  # the set's own resolution and metric (version 1 took the first group's)
                resolution, metric = struct.unpack_from("<IB", data, pos)
                pos += 5
                if metric >= len(_METRICS):
                    raise ValueError(f"corrupt grouped sketch: unknown metric code {metric}")
                out = cls(resolution, _METRICS[metric])
            for _ in range(count):
                key, pos = _decode_key(data, pos)
                (size,) = struct.unpack_from("<Q", data, pos)
                sketch = _core.Sketch.from_bytes(data[pos + 8:pos + 8 + size])
                pos += 8 + size
                if out is None:
                    out = cls(sketch.resolution, sketch.metric)
                if (sketch.resolution, sketch.metric) != (out._core.resolution, out._metric):
                    raise ValueError("corrupt grouped sketch: a group's resolution or metric differs from the set's")
                if key in out._codes:
                    raise ValueError(f"corrupt grouped sketch: the key {key!r} appears twice")
                out._core.set(out._code_of(key, one_kind=version >= 3), sketch)  # older sets could mix kinds
        except (struct.error, IndexError, UnicodeDecodeError, TypeError):  # TypeError: a date unit, keys of two kinds
            raise ValueError("corrupt grouped sketch: truncated or malformed") from None
        if pos != len(data):
            raise ValueError("corrupt grouped sketch: trailing bytes")
        return out if out is not None else cls()

    def __reduce__(self):
        return (GroupedSketch.from_bytes, (self.to_bytes(),))

    def __repr__(self) -> str:
        return f"GroupedSketch({len(self)} groups, n={self.n}, metric={self._metric!r})"
