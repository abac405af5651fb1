"""Argument normalisation for the public API, in one place.

Checks that need no look at the values (type, shape, length, the scalar
arguments) happen here; the value checks of the rows (range, NaN, labels,
weights) happen in the core's single pass. When the core refuses a value,
:func:`with_hint` adds what the values suggest (percentages, logits, swapped
arguments) to its error. This module imports nothing from the package but
its error and warning types and small helpers.
"""

from __future__ import annotations

import numbers
import secrets
import warnings
from typing import Any, Callable, Optional

import numpy as np

from ._errors import InputError, WeightKindWarning
from ._util import imported, outside_stacklevel

_RaggedWarning = getattr(getattr(np, "exceptions", np), "VisibleDeprecationWarning", UserWarning)

# dtypes the core reads in place; anything else numeric is converted once.
_PRED_DTYPES = (np.dtype(np.float32), np.dtype(np.float64))
_LABEL_DTYPES = tuple(np.dtype(t) for t in (np.bool_, np.int8, np.uint8, np.int32, np.int64, np.float32, np.float64))
_WEIGHT_DTYPES = _PRED_DTYPES

#: The tolerance of ``clip=True``: predictions within 0.01 of [0, 1] are
#: clamped (float round-off, forecasters that issue -0.01); anything further
#: out is refused, so that a unit mistake never becomes a number.
CLIP_TOLERANCE = 0.01

#: The largest seed (seeds are 64-bit).
MAX_SEED = (1 << 64) - 1


def _refuse_missing(x: Any, missing: np.ndarray, name: str, what: str, detail: str, fix: str) -> None:
    """InputError naming the first missing value of ``x`` (row and column for 2-D input,
    with the pandas index label when it differs from the row) and how many there are."""
    count = int(np.count_nonzero(missing))
    if not count:
        return
    at = np.unravel_index(int(np.argmax(missing)), missing.shape) if missing.ndim else (0,)
    row = int(at[0])
    place = f"{name}[{', '.join(str(int(i)) for i in at)}]"
    index = getattr(x, "index", None)  # a pandas index (pyarrow's .index is a method)
    if index is not None and not callable(index) and missing.ndim and len(index) == missing.shape[0] and \
            index[row] != row:
        label = index[row]
        place += f" (index label {(label.item() if isinstance(label, np.generic) else label)!r})"
    raise InputError(f"{place} is {what}{detail}: {count} of {missing.size} values in {name} are {what}; {fix}",
                     name, row, None, count, int(missing.size))


def _missing_values(x: Any, name: str) -> None:
    """Refuses masked elements, pandas missing values (NA in nullable columns) and
    pyarrow nulls (Array, ChunkedArray: numpy would read them as NaN or None)."""
    if isinstance(x, np.ma.MaskedArray):
        _refuse_missing(x, np.ma.getmaskarray(x), name, "masked", "", "fill them or drop those rows first")
        return
    if isinstance(getattr(x, "null_count", None), int) and callable(getattr(x, "is_null", None)):
        if x.null_count:
            _refuse_missing(x, np.asarray(x.is_null(), dtype=bool), name, "missing", " (null)",
                            "drop those rows (or fill them) first")
        return
    isna = getattr(x, "isna", None)
    if callable(isna) and hasattr(x, "to_numpy"):
        _refuse_missing(x, np.asarray(isna()), name, "missing", " (NA)", "drop those rows (or fill them) first")


def _missing_objects(arr: np.ndarray) -> np.ndarray:
    """Where an object array holds None, or any missing value pandas knows (NA, NaN,
    NaT: a nullable column's ``to_numpy()`` holds pd.NA); such values exist only once
    pandas is imported, whose ``isna`` tests them in one pass."""
    pandas = imported("pandas")
    if pandas is not None:
        return np.asarray(pandas.isna(arr), dtype=bool)
    return np.equal(arr, np.array(None))  # elementwise == None (numpy's stubs refuse a bare None)


def array(x: Any, name: str) -> np.ndarray:
    """``x`` as a numpy array of numbers (any shape), without a copy where one is not needed.

    Masked arrays are read when nothing is masked; pandas columns (nullable
    ``boolean``/``Int64``/``Float64`` included) when no value is missing;
    object arrays of bools and numbers are converted. Masked or missing
    values raise :class:`InputError` naming the first and how many.
    """
    if type(x) is np.ndarray and x.dtype.kind in "biuf":  # the common case, first
        return x
    if x is None:
        raise TypeError(f"{name} must be an array of numbers, got None")
    if isinstance(x, (str, bytes)):
        raise TypeError(f"{name} must be an array of numbers, got {type(x).__name__}")
    _missing_values(x, name)
    if isinstance(x, np.ma.MaskedArray):
        x = x.data
    to_numpy = getattr(x, "to_numpy", None)
    if callable(to_numpy) and not isinstance(x, np.ndarray):
        try:  # pandas extension arrays (nullable Float64/Int64/boolean, Arrow): numbers, no NA left
            arr = np.asarray(to_numpy())
        except (TypeError, ValueError):
            arr = np.asarray(x)
    else:
        try:
            with warnings.catch_warnings():  # numpy < 1.24 warns about ragged lists, and makes objects of them
                warnings.simplefilter("error", _RaggedWarning)
                arr = np.asarray(x)
        except (ValueError, _RaggedWarning) as err:  # ragged nested lists
            raise InputError(f"{name} must be an array of numbers: {err}", name) from None
    if arr.dtype.kind == "O":
        # Python objects: bools and numbers are read as such; missing values are
        # named; anything else is a TypeError.
        _refuse_missing(x, _missing_objects(arr), name, "missing", " (None or NA)",
                        "drop those rows (or fill them) first")
        flat = arr.ravel()
        # astype(float64) would parse strings ("0.1") too: numpy's own reading
        # of the values says when to look for one (Decimal and Fraction read as numbers).
        try:
            read = np.asarray(flat.tolist()).dtype.kind
        except (TypeError, ValueError):
            read = "O"
        text = None if read in "biuf" else next((i for i, v in enumerate(flat) if isinstance(v, (str, bytes))), None)
        try:
            if text is not None:
                raise TypeError
            arr = arr.astype(np.float64)
        except (TypeError, ValueError):
            bad = text if text is not None else next(
                (i for i, v in enumerate(flat) if not isinstance(v, (numbers.Number, np.bool_, bool))), 0)
            raise TypeError(f"{name} must be an array of real numbers, got {type(flat[bad]).__name__} "
                            f"{flat[bad]!r} at index {bad}") from None
    return arr


def as_1d(x: Any, name: str, accepted: tuple) -> np.ndarray:
    """A 1-D array of real numbers, read in place when its dtype is one of `accepted`."""
    arr = array(x, name)
    if arr.dtype.kind not in "biuf":
        raise TypeError(f"{name} must be an array of real numbers, got dtype {arr.dtype}")
    if arr.ndim != 1:
        raise InputError(f"{name} must be 1-D, got shape {arr.shape}{_shape_hint(arr, name)}", name)
    if arr.dtype not in accepted:
        # Rare dtypes (float16, int16, uint32, ...): one exact conversion.
        wide, arr = arr, arr.astype(np.float64)
        if name == "y" and wide.dtype.kind == "f" and wide.dtype.itemsize > 8:
            _refuse_labels_rounded_to_0_1(wide, arr)
    return arr


def _shape_hint(arr: np.ndarray, name: str) -> str:
    """What a 2-D array passed for a 1-D argument suggests (computed on the error path only).

    One column: the same values as a 1-D array. Predictions ``f`` of two columns whose rows
    sum to 1 (scikit-learn's ``predict_proba`` of a binary classifier): the second column,
    the probability of ``classes_[1]``, the class that y = 1 stands for. Only then is
    ``[:, 1]`` named; other two-column predictions could be anything (two models, logits).
    More columns: the multiclass measures."""
    if arr.ndim != 2 or arr.shape[0] == 0:
        return ""
    n, k = arr.shape
    if k == 1:
        return f"; pass {name}[:, 0] (or {name}.ravel()), its one column as a 1-D array"
    if name != "f":
        return ""
    if k == 2:
        with np.errstate(invalid="ignore", over="ignore"):
            in_range = bool(np.all((arr >= 0) & (arr <= 1)))
            sums_to_1 = in_range and bool(np.all(np.abs(arr.sum(axis=1, dtype=np.float64) - 1.0) <= 2e-6))
        if sums_to_1:
            return ("; its 2 columns sum to 1 in every row, like predict_proba of a binary classifier: take "
                    "f[:, 1] (the positive class's probability; predict_proba's column of classes_[1])")
        return ("; its 2 columns do not sum to 1 in every row, so they are not one binary model's class "
                "probabilities: pass the 1-D array of predicted probabilities that y = 1")
    return (f"; for a {k}-class model's probabilities (one column per class) use "
            f"smoothece.top_label_smece(probs, labels) or smoothece.classwise_smece(probs, labels) with labels "
            f"the class indices (logits=... for logits)")


def _refuse_labels_rounded_to_0_1(wide: np.ndarray, arr: np.ndarray) -> None:
    """A long double label that float64 rounds onto 0 or 1 (1 + 1e-19, 1e-4000) is not a 0/1 label.
    (Predictions are read as float64: a long double 1 + 1e-19 is the prediction 1.)"""
    moved = (arr != wide) & ((arr == 0) | (arr == 1))
    if moved.any():
        i, count = int(np.argmax(moved)), int(moved.sum())
        shown = np.format_float_scientific(wide[i], unique=True, trim="-")
        raise InputError(f"y[{i}] = {shown} ({wide.dtype}) rounds to {arr[i]:g} as float64: labels must be 0 or 1 "
                         f"({count} of {wide.shape[0]} values in y bad, first at index {i})", "y", i, float(arr[i]),
                         count, wide.shape[0])


def predictions(f: Any) -> np.ndarray:
    return as_1d(f, "f", _PRED_DTYPES)


def rows(f: Any, y: Any, weights: Any = None, allow_empty: bool = False) -> tuple:
    """Returns (f, y, weights) as 1-D arrays the core reads without copying."""
    f_arr = predictions(f)
    y_arr = as_1d(y, "y", _LABEL_DTYPES)
    w_arr = None if weights is None else as_1d(weights, "weights", _WEIGHT_DTYPES)
    if f_arr.shape[0] == 0 and not allow_empty:
        raise InputError("f is empty: at least one prediction is needed", "f", size=0)
    if y_arr.shape != f_arr.shape:
        raise InputError(f"f and y must have the same length, got f.shape={f_arr.shape} and y.shape={y_arr.shape}",
                         "y", size=y_arr.shape[0])
    if w_arr is not None and w_arr.shape != f_arr.shape:
        raise InputError(f"f and weights must have the same length, got f.shape={f_arr.shape} and "
                         f"weights.shape={w_arr.shape}", "weights", size=w_arr.shape[0])
    return f_arr, y_arr, w_arr


def clip_range(clip: Any) -> tuple:
    """The accepted prediction range for ``clip``.

    False: [0, 1] exactly. True: [-0.01, 1.01] (:data:`CLIP_TOLERANCE`),
    clamped into [0, 1]. A float ``tol >= 0``: [-tol, 1 + tol], clamped.
    Integers are refused as ambiguous (``clip=1`` reads as a tolerance of 1,
    a unit's width, not as True).
    """
    if clip is None or isinstance(clip, (bool, np.bool_)):
        tol = CLIP_TOLERANCE if clip else 0.0
        return -tol, 1.0 + tol
    if isinstance(clip, (numbers.Integral, np.integer)):
        raise TypeError(f"clip must be a bool or a float tolerance, got the integer {clip!r}: pass clip=True to "
                        f"clamp values within {CLIP_TOLERANCE} of [0, 1], or clip={float(clip)!r} for a tolerance "
                        f"of {float(clip)!r}")
    tol = real(clip, "clip", "a bool or a non-negative float tolerance")
    if not (tol >= 0.0 and np.isfinite(tol)):
        raise InputError(f"clip must be a bool or a non-negative finite number, got {clip!r}", "clip")
    return -tol, 1.0 + tol


def threads(n: Optional[int]) -> int:
    """0 means all CPUs this process may use; more than that are capped by the core."""
    if n is None:
        return 0
    if isinstance(n, (bool, np.bool_)) or not isinstance(n, (int, np.integer)):
        raise TypeError(f"threads must be an int or None, got {n!r}")
    if n < 1:
        raise InputError(f"threads must be >= 1 (or None for all CPUs), got {n}", "threads")
    return int(min(n, 1 << 30))


def real(x: Any, name: str, what: str = "a number") -> float:
    """A real scalar as float; TypeError naming the argument for anything else
    (strings, bools and arrays included, although float() would take some)."""
    if isinstance(x, (str, bytes, bool, np.bool_)) or np.ndim(x) != 0:
        raise TypeError(f"{name} must be {what}, got {x!r}")
    try:
        return float(x)
    except (TypeError, ValueError):
        raise TypeError(f"{name} must be {what}, got {x!r}") from None
    except OverflowError:  # an int (or Fraction) beyond any float, 10**400
        raise InputError(f"{name} must be {what} within the floats' range (±1.8e308), got {_short(x)}",
                         name) from None


def _short(x: Any) -> str:
    """repr(x), its middle cut out when long (a 400-digit int)."""
    text = repr(x)
    return text if len(text) <= 40 else f"{text[:20]}...{text[-8:]} ({len(text)} characters)"


#: Largest replicate count, bin count or the like: beyond it a call would only
#: end in an allocation failure (a result per replicate) or never end.
MAX_COUNT = 2**31 - 1
#: Most bins a binned measure takes: its per-bin arrays stay under ~1 GB.
MAX_BINS = 2**24


def count(n: Any, name: str, minimum: int, maximum: int = MAX_COUNT) -> int:
    """An int in [minimum, maximum] (bools refused)."""
    if isinstance(n, (bool, np.bool_)) or not isinstance(n, (int, np.integer)):
        raise TypeError(f"{name} must be an int, got {n!r}")
    if not minimum <= n <= maximum:
        bound = f">= {minimum}" if n < minimum else f"<= {maximum:,}"
        raise InputError(f"{name} must be {bound}, got {n}", name)
    return int(n)


#: The bandwidths metric="logit" takes (logit units): the grid's span and its
#: exact integrals divide and multiply σ by ~1e2, which must stay a normal float.
LOGIT_SIGMA_RANGE = (1e-300, 1e300)


def sigma(s: Any, metric: str = "l1") -> float:
    """A bandwidth σ: a positive finite number; for metric="logit" within
    :data:`LOGIT_SIGMA_RANGE`. InputError naming sigma and its value otherwise."""
    value = real(s, "sigma")
    if not (value > 0.0 and np.isfinite(value)):
        raise InputError(f"sigma must be a positive finite number, got {_short(s)}", "sigma")
    low, high = LOGIT_SIGMA_RANGE
    if metric == "logit" and not low <= value <= high:
        raise InputError(f"sigma must be in [{low:g}, {high:g}] (logit units) for metric='logit', got {value!r}",
                         "sigma")
    return value


def metric(m: Any) -> str:
    if m not in ("l1", "logit"):
        raise InputError(f"metric must be 'l1' or 'logit', got {m!r}", "metric")
    return m


#: What the warning about weights that look like counts says (WeightKindWarning).
COUNTS_WARNING = ("the weights are whole numbers, some above 1: if they count rows, pass weight_kind='frequency' "
                  "(read as importance weights, the default, counts give a calibration test that almost never "
                  "rejects and intervals too wide); if each row is one sampled unit, pass "
                  "weight_kind='importance' to silence this warning")


def weight_kind(kind: Any, counts: Optional[Callable[[], bool]] = None) -> str:
    """What a weight means to resampling. None (every public default) is
    "importance", with a :class:`WeightKindWarning` when ``counts()`` (asked
    only then) says the weights look like counts: whole numbers, some above 1
    (unit and {0, 1} weights mean the same under both kinds)."""
    if kind is None:
        if counts is not None and counts():
            warnings.warn(COUNTS_WARNING, WeightKindWarning, stacklevel=outside_stacklevel())
        return "importance"
    if kind not in ("importance", "frequency"):
        raise InputError(f"weight_kind must be 'importance' or 'frequency', got {kind!r}", "weight_kind")
    return kind


def level(value: Any) -> float:
    v = real(value, "level", "a number in (0, 1)")
    if not 0.0 < v < 1.0:
        raise InputError(f"level must be in (0, 1), got {value!r}", "level")
    return v


def seed(value: Any) -> int:
    """An explicit 64-bit seed, or fresh entropy (which the result records)."""
    if value is None:
        return secrets.randbits(64)
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)):
        raise TypeError(f"seed must be an int in [0, 2**64) or None, got {value!r}")
    if not 0 <= value <= MAX_SEED:
        raise InputError(f"seed must be in [0, 2**64), got {value}", "seed")
    return int(value)


def choice(value: Any, name: str, allowed: tuple) -> str:
    """One of `allowed` (strings), or a TypeError/ValueError naming them."""
    names = [repr(a) for a in allowed]
    options = names[0] if len(names) == 1 else ", ".join(names[:-1]) + " or " + names[-1]
    if not isinstance(value, str):
        raise TypeError(f"{name} must be a str ({options}), got {value!r}")
    if value not in allowed:
        raise InputError(f"{name} must be {options}, got {value!r}", name)
    return value


def positive(value: Any, name: str, minimum: float = 0.0, below: Optional[float] = None) -> float:
    """A finite number > minimum (≥ minimum when minimum > 0) and < ``below``."""
    x = real(value, name)
    ok = np.isfinite(x) and (x >= minimum if minimum > 0 else x > 0) and (below is None or x < below)
    if not ok:
        bounds = f">= {minimum:g}" if minimum > 0 else "> 0"
        if below is not None:
            bounds += f" and < {below:g}"
        raise InputError(f"{name} must be a finite number {bounds}, got {value!r}", name)
    return x


def flag(value: Any, name: str) -> bool:
    if not isinstance(value, (bool, np.bool_)):
        raise TypeError(f"{name} must be a bool, got {value!r}")
    return bool(value)


# --- Hints for refused values ---------------------------------------------------------------

def _finite_range(a: np.ndarray):
    finite = a[np.isfinite(a)] if a.dtype.kind == "f" else a
    if finite.size == 0:
        return None
    return float(finite.min()), float(finite.max())


def _is_binary(a: np.ndarray) -> bool:
    return a.dtype.kind == "b" or bool(np.all((a == 0) | (a == 1)))


def clippable(f: np.ndarray) -> bool:
    """Whether every prediction is finite and within :data:`CLIP_TOLERANCE` of [0, 1]
    (so that ``clip=True`` would accept them all)."""
    span = _finite_range(f)
    if span is None or (f.dtype.kind == "f" and not bool(np.all(np.isfinite(f)))):
        return False
    return span[0] >= -CLIP_TOLERANCE and span[1] <= 1.0 + CLIP_TOLERANCE


def value_hint(argument: str, f: np.ndarray, y: np.ndarray) -> Optional[str]:
    """What refused values suggest, other than clipping: percentages, logits,
    −1/+1 labels, or f and y swapped; None when nothing."""
    if argument == "f":
        span = _finite_range(f)
        if span is None or clippable(f):
            return None
        lo, hi = span
        # Only when most values fit the cause: a few stray values in a column
        # of probabilities must not be "divided by 100" or "expit"-ed.
        above, outside = float(np.mean(f > 1.0)), float(np.mean((f < 0.0) | (f > 1.0)))
        if lo >= 0.0 and 5.0 < hi <= 100.0 and above > 0.5:
            return f"values up to {hi:g} look like percentages: divide them by 100"
        if lo < 0.0 and hi > 1.0 and outside > 0.5:
            return ("values below 0 and above 1 look like logits (log-odds): apply the logistic function "
                    "(scipy.special.expit) first; metric='logit' still takes probabilities")
    elif argument == "y":
        span = _finite_range(y)
        if span is None:
            return None
        lo, hi = span
        if np.all((y == -1) | (y == 1)):
            return "labels -1/+1: pass y > 0 (or (y + 1) // 2) for 0/1 labels"
        if lo >= 0.0 and hi <= 1.0 and _is_binary(f):
            return ("y holds probabilities and f holds 0/1 values: the arguments look swapped; smoothece takes "
                    "(f, y) = (predictions, labels), unlike scikit-learn's (y_true, y_prob)")
    return None


def with_hint(err: InputError, f: np.ndarray, y: np.ndarray, clip: Any = False) -> InputError:
    """The core's error with what the values suggest added: clipping (when it
    would accept them all), percentages, logits, −1/+1 labels, or f and y
    swapped. Computed on the error path only."""
    if err.argument == "f" and clippable(f):
        hint = f"pass clip=True to clamp values within {CLIP_TOLERANCE} of [0, 1]" if clip_range(clip) == (0.0, 1.0) \
            else None
    else:
        hint = value_hint(err.argument, f, y)
    if hint is None:
        return err
    return InputError(f"{err}; {hint}", err.argument, -1 if err.index is None else err.index, err.value, err.count,
                      err.size)
