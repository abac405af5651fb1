"""The columns real tables hand over, in every entry point that takes rows: pandas NA (nullable
columns, Series with an index, object arrays of pd.NA or None) and masked arrays are refused naming
the argument, the row and the count; complete nullable, masked and object columns read as their numbers."""

import numpy as np
import pytest

import smoothece

N = 60
AT = 7  # the row with the missing value
_rng = np.random.default_rng(11)
F = _rng.uniform(0.05, 0.95, size=N)
Y = (_rng.uniform(size=N) < F).astype(np.int64)
W = _rng.uniform(0.5, 2.0, size=N)


def _binary(call):
    """An entry point that takes (f, y, weights) rows, with a comparable summary of its answer."""
    return dict(names=("f", "y", "weights"), matrix=False, call=call)


def _multiclass(call):
    """A multiclass entry point: f becomes the (n, 2) matrix [1 − f, f], y the class labels."""
    return dict(names=("probs", "labels", "weights"), matrix=True, call=call)


def _diagram(f, y, w):
    d = smoothece.reliability_diagram(f, y, weights=w, n_boot=10, seed=0)
    return (d.smece, d.smece_low, *d.mu[::64])


def _bootstrap(f, y, w):
    r = smoothece.bootstrap_smece(f, y, weights=w, n_boot=10, seed=0)
    return (r.value, r.low, r.high)


def _test(f, y, w):
    t = smoothece.calibration_test(f, y, weights=w, n_sim=10, seed=0)
    return (t.statistic, t.p_value)


ENTRY_POINTS = {
    "smece": _binary(lambda f, y, w: smoothece.smece(f, y, weights=w)),
    "smece_sigma": _binary(lambda f, y, w: smoothece.smece_sigma(f, y, 0.05, weights=w)),
    "reliability_diagram": _binary(_diagram),
    "bootstrap_smece": _binary(_bootstrap),
    "calibration_test": _binary(_test),
    "smece_by_group": _binary(lambda f, y, w: tuple(smoothece.smece_by_group(f, y, np.arange(N) % 2,
                                                                             weights=w).smece)),
    "binned_calibration": _binary(lambda f, y, w: smoothece.binned_calibration(f, y, weights=w).ece()),
    "binned_ece": _binary(lambda f, y, w: smoothece.binned_ece(f, y, weights=w)),
    "binned_ece_upper": _binary(lambda f, y, w: smoothece.binned_ece_upper(f, y, weights=w)),
    "debiased_ece": _binary(lambda f, y, w: smoothece.debiased_ece(f, y, weights=w)),
    "brier_decomposition": _binary(lambda f, y, w: smoothece.brier_decomposition(f, y, weights=w).brier),
    "laplace_kernel_ce": _binary(lambda f, y, w: smoothece.laplace_kernel_ce(f, y, weights=w)),
    "interval_ce_random": _binary(lambda f, y, w: smoothece.interval_ce_random(f, y, weights=w, seed=0, trials=5)),
    "SmoothCalibrator.fit": _binary(lambda f, y, w: tuple(
        smoothece.SmoothCalibrator().fit(f, y, weights=w).curve_[::64])),
    "SmoothCalibrator.predict": _binary(lambda f, y, w: tuple(
        smoothece.SmoothCalibrator().fit(F, Y, weights=w).predict(f))),
    "CalibrationSketch.update": _binary(lambda f, y, w: smoothece.CalibrationSketch().update(f, y, w).smece()),
    "top_label_smece": _multiclass(lambda p, lab, w: smoothece.top_label_smece(p, lab, weights=w)),
    "top_label_diagram": _multiclass(lambda p, lab, w: smoothece.top_label_diagram(p, lab, weights=w, n_boot=0,
                                                                                  seed=0).smece),
    "classwise_smece": _multiclass(lambda p, lab, w: smoothece.classwise_smece(p, lab, weights=w).mean),
    "confidence_pairs": _multiclass(lambda p, lab, w: tuple(np.concatenate(smoothece.confidence_pairs(p, lab)))),
}

#: Which arguments each entry point reads (predict reads f only; confidence_pairs has no weights).
READS = {"SmoothCalibrator.predict": (0,), "confidence_pairs": (0, 1)}


def _column(values, argument):
    """The numpy column of ``values`` as the entry point's argument ``argument`` (0, 1, 2) wants it."""
    return np.asarray(values, dtype=bool) if argument == 1 else np.asarray(values, dtype=np.float64)


def _matrix_of(f):
    return np.c_[1.0 - np.asarray(f, dtype=np.float64), f]


def _call(entry, argument, value):
    """Calls ``entry`` with ``value`` as its argument number ``argument`` and numpy arrays elsewhere."""
    spec = ENTRY_POINTS[entry]
    args = [F, Y, W]
    args[argument] = value
    if spec["matrix"] and argument != 0:
        args[0] = _matrix_of(F)
    return spec["call"](*args)


def _missing(kind, argument, matrix):
    """A column (or matrix) with one missing value at row AT, as pandas or numpy hand it over."""
    pd = pytest.importorskip("pandas")
    values = [F, Y, W][argument]
    if matrix:
        frame = pd.DataFrame({"p0": 1.0 - F, "p1": F}, dtype="Float64", index=np.arange(100, 100 + N))
        if kind == "masked":
            mask = np.zeros((N, 2), dtype=bool)
            mask[AT, 1] = True
            return np.ma.masked_array(_matrix_of(F), mask=mask)
        if kind == "object None":
            obj = _matrix_of(F).astype(object)
            obj[AT, 1] = None
            return obj
        frame.iloc[AT, 1] = pd.NA
        return frame if kind == "Series with index" else frame.reset_index(drop=True)
    if kind == "masked":
        return np.ma.masked_array(values, mask=np.arange(N) == AT)
    if kind == "object None":
        obj = _column(values, argument).astype(object)
        obj[AT] = None
        return obj
    dtype = {0: "Float64", 1: "boolean", 2: "Float64"}[argument]
    column = pd.array(_column(values, argument), dtype=dtype)
    column[AT] = pd.NA
    if kind == "object pd.NA":  # what a nullable boolean column's .to_numpy() gives
        return pd.Series(column).to_numpy(dtype=object)
    if kind == "Series with index":
        return pd.Series(column, index=np.arange(100, 100 + N))
    return column


CASES = [(entry, argument) for entry in ENTRY_POINTS for argument in READS.get(entry, (0, 1, 2))]
MISSING_KINDS = ["pandas NA", "Series with index", "object pd.NA", "object None", "masked"]


# A matrix argument has no .to_numpy() of one nullable column: no "object pd.NA" case there.
MISSING_CASES = [(entry, argument, kind) for entry, argument in CASES for kind in MISSING_KINDS
                 if not (ENTRY_POINTS[entry]["matrix"] and argument == 0 and kind == "object pd.NA")]


@pytest.mark.parametrize("entry, argument, kind", MISSING_CASES, ids=[f"{e}-{a}-{k}" for e, a, k in MISSING_CASES])
def test_missing_values_are_refused_naming_where(entry, argument, kind):
    spec = ENTRY_POINTS[entry]
    matrix = spec["matrix"] and argument == 0
    name = spec["names"][argument]
    with pytest.raises(smoothece.InputError) as info:
        _call(entry, argument, _missing(kind, argument, matrix))
    err = info.value
    assert (err.argument, err.index, err.count) == (name, AT, 1), str(err)
    place = f"{name}[{AT}, 1]" if matrix else f"{name}[{AT}]"
    what = "masked" if kind == "masked" else "missing"
    assert str(err).startswith(f"{place} ") and f" is {what}" in str(err), str(err)
    assert f"1 of {2 * N if matrix else N} values in {name} are {what}" in str(err)
    if kind == "Series with index":
        assert f"{place} (index label {100 + AT}) is missing (NA)" in str(err)


@pytest.mark.parametrize("kind", ["masked, nothing masked", "masked, nomask", "pandas nullable, no NA",
                                  "object bools and numbers"])
@pytest.mark.parametrize("entry, argument", CASES, ids=[f"{e}-{a}" for e, a in CASES])
def test_complete_columns_are_read_as_numbers(entry, argument, kind):
    pd = pytest.importorskip("pandas")
    spec = ENTRY_POINTS[entry]
    matrix = spec["matrix"] and argument == 0
    values = _matrix_of(F) if matrix else _column([F, Y, W][argument], argument)
    if kind == "masked, nothing masked":
        given = np.ma.masked_array(values, mask=np.zeros(values.shape, dtype=bool))
    elif kind == "masked, nomask":
        given = np.ma.masked_array(values)
    elif kind == "pandas nullable, no NA":
        given = (pd.DataFrame(values, dtype="Float64") if matrix
                 else pd.Series(values, dtype="boolean" if argument == 1 else "Float64"))
    else:  # True/False labels (or floats) in an object array, as from a mixed table
        given = values.astype(object)
    expected = _call(entry, argument, values)
    np.testing.assert_array_equal(_call(entry, argument, given), expected)


def test_object_labels_of_true_and_false():
    y = np.array([True, False, True, True, False], dtype=object)
    f = np.array([0.9, 0.2, 0.7, 0.6, 0.4])
    assert smoothece.smece(f, y) == smoothece.smece(f, y.astype(bool))
    with pytest.raises(TypeError, match=r"^y must be an array of real numbers, got str 'yes' at index 1"):
        smoothece.smece(f, np.array([True, "yes", False, True, False], dtype=object))
