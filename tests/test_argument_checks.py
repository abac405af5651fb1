"""Scalar arguments of the public functions: bounded, checked before any pass over the
rows, and refused with an InputError (or TypeError) that names the argument and its value."""

import re

import numpy as np
import pytest

import smoothece
from smoothece import InputError, _core

RNG = np.random.default_rng(8)
F = RNG.random(2000)
Y = RNG.random(F.size) < F
F_NAN = np.where(np.arange(F.size) == 7, np.nan, F)  # a bad row the pass would refuse


def test_tick_sample_is_at_most_the_rows():
    d = smoothece.reliability_diagram(F, Y, n_boot=0, seed=0, sample_size=10**6)
    assert d.sample_f.size == d.sample_y.size == F.size == d.n
    rows = set(zip(F.tolist(), Y.astype(float).tolist()))
    assert set(zip(d.sample_f.tolist(), d.sample_y.tolist())) <= rows  # drawn from the rows
    few = smoothece.reliability_diagram(F, Y, n_boot=0, seed=0, sample_size=10)
    assert few.sample_f.size == 10
    sketch = smoothece.CalibrationSketch().update(F[:50], Y[:50])
    assert sketch.reliability_diagram(n_boot=0, seed=0, sample_size=10**6).sample_f.size == 50
    assert smoothece.top_label_diagram(np.c_[1 - F, F], Y.astype(int), n_boot=0, seed=0,
                                       sample_size=10**6).sample_f.size == F.size


BAD_OPTIONS = [
    ("level", 1.5, InputError, "level must be in \\(0, 1\\), got 1.5"),
    ("level", 0, InputError, "level must be in \\(0, 1\\), got 0"),
    ("seed", -1, InputError, "seed must be in \\[0, 2\\*\\*64\\), got -1"),
    ("seed", 2**64, InputError, "seed must be in \\[0, 2\\*\\*64\\), got 18446744073709551616"),
    ("seed", 1.0, TypeError, "seed must be an int"),
    ("n_boot", -1, InputError, "n_boot must be >= [01], got -1"),
    ("n_boot", 2**40, InputError, "n_boot must be <= 2,147,483,647, got 1099511627776"),
    ("n_sim", 0, InputError, "n_sim must be >= 1, got 0"),
    ("sample_size", -5, InputError, "sample_size must be >= 0, got -5"),
    ("sample_size", 2**40, InputError, "sample_size must be <= 2,147,483,647, got 1099511627776"),
    ("weight_kind", "freq", InputError, "weight_kind must be 'importance' or 'frequency', got 'freq'"),
    ("threads", 0, InputError, "threads must be >= 1"),
]


def _calls(name, value, f):
    """The public functions that take the option, with it set (and consistency on for n_sim)."""
    extra = {"consistency": True} if name == "n_sim" else {}
    calls = {
        "reliability_diagram": lambda: smoothece.reliability_diagram(f, Y, **{name: value}, **extra),
        "top_label_diagram": lambda: smoothece.top_label_diagram(np.c_[1 - f, f], Y.astype(int),
                                                                 **{name: value}, **extra),
    }
    if name in ("level", "seed", "n_boot", "weight_kind", "threads"):
        calls["bootstrap_smece"] = lambda: smoothece.bootstrap_smece(f, Y, **{name: value})
    if name in ("level", "seed", "n_sim", "weight_kind", "threads"):
        calls["calibration_test"] = lambda: smoothece.calibration_test(f, Y, **{name: value})
    if name in ("level", "seed", "n_boot", "n_sim", "weight_kind"):
        test = {"test": True} if name == "n_sim" else {}
        calls["smece_by_group"] = lambda: smoothece.smece_by_group(f, Y, np.arange(f.size) % 3, **{name: value},
                                                                   **test)
    return calls


@pytest.mark.parametrize("name, value, exc, message", BAD_OPTIONS)
def test_bad_options_are_refused_before_the_rows_are_read(name, value, exc, message):
    # With a NaN row too: the option's error comes first, and no pass over the rows ran.
    for where, call in _calls(name, value, F_NAN).items():
        passes = _core.passes_over_rows()
        with pytest.raises(exc, match=message) as err:
            call()
        assert _core.passes_over_rows() == passes, where
        if exc is InputError:
            assert err.value.argument == name, where


def test_bad_options_of_grouped_calls_come_before_the_keys_pass():
    keys = np.array(["a", None, "b"] * (F.size // 3) + ["a"] * (F.size % 3), dtype=object)  # a missing key
    with pytest.raises(InputError, match="level must be in") as err:
        smoothece.smece_by_group(F, Y, keys, level=2.0)
    assert err.value.argument == "level"


# --- the pure-numpy reference checks its input as smoothece.smece does -----------------------

F5 = np.array([0.1, 0.5, 0.9, 0.3, 0.7])
Y5 = np.array([0, 1, 1, 0, 1])


@pytest.mark.parametrize("f, y, weights", [
    (np.array([0.1, 2.0, 0.9, 0.3, 0.7]), Y5, None),        # outside [0, 1]
    (np.array([0.1, np.nan, 0.9, 0.3, 0.7]), Y5, None),     # NaN
    (F5 * 100, Y5, None),                                   # percentages (the hint too)
    (F5, np.array([0, 1, 2, 0, 1]), None),                  # a label that is not 0/1
    (np.array([]), np.array([]), None),                     # empty
    (F5, Y5[:3], None),                                     # lengths that differ
    (F5, Y5, np.zeros(5)),                                  # weights that sum to zero
    (F5, Y5, np.array([1.0, -1.0, 1.0, 1.0, 1.0])),         # a negative weight
    (np.c_[1 - F5, F5], Y5, None),                          # a predict_proba matrix
])
def test_reference_refuses_what_smece_refuses_with_the_same_error(f, y, weights):
    from smoothece import reference

    with pytest.raises(InputError) as want:
        smoothece.smece(f, y, weights=weights)
    for call in (lambda: reference.smece(f, y, weights=weights),
                 lambda: reference.smece_sigma(f, y, 0.1, weights=weights)):
        with pytest.raises(InputError) as got:
            call()
        assert (str(got.value), got.value.argument, got.value.index) == (str(want.value), want.value.argument,
                                                                          want.value.index)


def test_reference_refuses_bad_sigma_tol_and_grid():
    from smoothece import reference

    for sigma in (0, -0.1, np.nan, np.inf):
        with pytest.raises(InputError, match=f"sigma must be a positive finite number, got {sigma!r}"):
            reference.smece_sigma(F5, Y5, sigma)
    with pytest.raises(InputError, match="sigma=10000.0 with grid=1000: .* more than 2\\*\\*27") as err:
        reference.smece_sigma(F5, Y5, 1e4)  # the mirror extension grows with sigma
    assert err.value.argument == "sigma"
    with pytest.raises(InputError, match="grid must be >= 1, got 0"):
        reference.smece_sigma(F5, Y5, 0.1, grid=0)
    with pytest.raises(TypeError, match="grid must be an int"):
        reference.smece_sigma(F5, Y5, 0.1, grid=10.5)
    for tol in (0, 1e-300, 1.0, np.nan):
        with pytest.raises(InputError, match="tol must be a finite number >= 1e-12 and < 1") as err:
            reference.smece(F5, Y5, tol=tol)
        assert err.value.argument == "tol"
    # what it accepts it answers: the same rows as smece, within its discretization error
    assert reference.smece(F, Y) == pytest.approx(smoothece.smece(F, Y), abs=5e-6)


# --- sigma -------------------------------------------------------------------------------------

@pytest.mark.parametrize("metric", ["l1", "logit"])
@pytest.mark.parametrize("sigma, message", [
    (10**400, "sigma must be a number within the floats' range \\(±1.8e308\\), got "
              "10000000000000000000...00000000 \\(401 characters\\)"),
    (-(10**400), "sigma must be a number within the floats' range \\(±1.8e308\\), got "
                 "-1000000000000000000...00000000 \\(402 characters\\)"),
    (0.0, "sigma must be a positive finite number, got 0.0"),
    (-1e-3, "sigma must be a positive finite number, got -0.001"),
    (float("nan"), "sigma must be a positive finite number, got nan"),
    (float("inf"), "sigma must be a positive finite number, got inf"),
])
def test_sigma_outside_every_range_is_refused(metric, sigma, message):
    calls = [lambda: smoothece.smece_sigma(F, Y, sigma, metric=metric),
             lambda: smoothece.reliability_diagram(F, Y, sigma=sigma, metric=metric, n_boot=0),
             lambda: smoothece.bootstrap_smece(F, Y, sigma=sigma, metric=metric, n_boot=10),
             lambda: smoothece.CalibrationSketch(metric=metric).update(F, Y).smece_sigma(sigma)]
    for call in calls:
        with pytest.raises(InputError, match=message) as err:
            call()
        assert err.value.argument == "sigma"


@pytest.mark.parametrize("sigma", [1e308, 1.5e300, 5e-324, 1e-310, 9e-301])
def test_logit_sigma_outside_its_range_is_refused_naming_the_range(sigma):
    message = re.escape(f"sigma must be in [1e-300, 1e+300] (logit units) for metric='logit', got {sigma!r}")
    for call in (lambda: smoothece.smece_sigma(F, Y, sigma, metric="logit"),
                 lambda: smoothece.reliability_diagram(F, Y, sigma=sigma, metric="logit", n_boot=0),
                 lambda: smoothece.CalibrationSketch(metric="logit").update(F, Y).smece_sigma(sigma)):
        with pytest.raises(InputError, match=message) as err:
            call()
        assert err.value.argument == "sigma"


def test_sigma_at_the_ends_of_the_ranges_is_answered():
    # smECE_sigma is non-increasing in sigma; at the ends of the logit range (and anywhere for l1)
    # it sits at its limits: the sum over distinct predictions of |sum of residuals| / n as sigma
    # goes to 0 (every prediction here distinct), |mean residual| as sigma grows.
    tiny = np.abs(Y - F).mean()
    huge = abs((Y - F).mean())
    for metric, small, large in (("logit", 1e-300, 1e300), ("l1", 5e-324, 1e308)):
        assert smoothece.smece_sigma(F, Y, small, metric=metric) == pytest.approx(tiny, rel=1e-9)
        assert smoothece.smece_sigma(F, Y, large, metric=metric) == pytest.approx(huge, rel=1e-6)


# --- pyarrow columns ---------------------------------------------------------------------------

def _arrow_columns(pa, values, chunked):
    return pa.chunked_array([values[:2], values[2:]]) if chunked else pa.array(values)


@pytest.mark.parametrize("chunked", [False, True])
def test_pyarrow_columns_with_nulls_are_refused_naming_the_first(chunked):
    pa = pytest.importorskip("pyarrow")
    from decimal import Decimal

    f4, y4 = np.array([0.1, 0.5, 0.9, 0.3]), np.array([1, 0, 0, 1])
    labels = {"bool": [True, False, None, True], "decimal": [Decimal(1), Decimal(0), None, Decimal(1)],
              "int": [1, 0, None, 1], "float": [1.0, 0.0, None, 1.0]}
    for kind, values in labels.items():
        with pytest.raises(InputError, match="^y\\[2\\] is missing \\(null\\): 1 of 4 values in y are missing") as err:
            smoothece.smece(f4, _arrow_columns(pa, values, chunked))
        assert (err.value.argument, err.value.index, err.value.count) == ("y", 2, 1), kind
    predictions = [Decimal("0.1"), Decimal("0.5"), None, Decimal("0.3")]
    with pytest.raises(InputError, match="^f\\[2\\] is missing \\(null\\)"):
        smoothece.smece(_arrow_columns(pa, predictions, chunked), y4)
    with pytest.raises(InputError, match="^weights\\[2\\] is missing \\(null\\)"):
        smoothece.smece(f4, y4, weights=_arrow_columns(pa, [1.0, 2.0, None, 1.0], chunked))
    with pytest.raises(InputError, match="^groups\\[2\\] is missing \\(null\\)"):
        smoothece.smece_by_group(f4, y4, _arrow_columns(pa, ["a", "b", None, "a"], chunked))


@pytest.mark.parametrize("chunked", [False, True])
def test_pyarrow_columns_without_nulls_read_as_their_values(chunked):
    pa = pytest.importorskip("pyarrow")
    from decimal import Decimal

    f4, y4 = np.array([0.1, 0.5, 0.9, 0.3]), np.array([1, 0, 0, 1])
    want = smoothece.smece(f4, y4)
    assert smoothece.smece(f4, _arrow_columns(pa, [True, False, False, True], chunked)) == want
    assert smoothece.smece(f4, _arrow_columns(pa, [Decimal(1), Decimal(0), Decimal(0), Decimal(1)], chunked)) == want
    assert smoothece.smece(_arrow_columns(pa, [Decimal(str(v)) for v in f4], chunked), y4) == want
    keys = ["b", "a", "b", "a"]
    by_arrow = smoothece.smece_by_group(f4, y4, _arrow_columns(pa, keys, chunked))
    by_numpy = smoothece.smece_by_group(f4, y4, np.array(keys))
    assert list(by_arrow.keys) == ["a", "b"] and by_arrow.smece.tolist() == by_numpy.smece.tolist()
    flags = smoothece.smece_by_group(f4, y4, _arrow_columns(pa, [True, False, True, False], chunked))
    assert list(flags.keys) == [False, True]


# --- bool options take bools only -----------------------------------------------------------------

@pytest.mark.parametrize("bad", ["yes", "false", 1, 0, None, [True]])
def test_consistency_takes_only_a_bool(bad):
    sketch = smoothece.CalibrationSketch().update(F, Y)
    calls = [lambda: smoothece.reliability_diagram(F, Y, consistency=bad, n_boot=0),
             lambda: smoothece.top_label_diagram(np.c_[1 - F, F], Y.astype(int), consistency=bad, n_boot=0),
             lambda: sketch.reliability_diagram(consistency=bad, n_boot=0)]
    for call in calls:
        passes = _core.passes_over_rows()
        with pytest.raises(TypeError, match=f"^consistency must be a bool, got {re.escape(repr(bad))}$"):
            call()
        assert _core.passes_over_rows() == passes
    d = smoothece.reliability_diagram(F, Y, consistency=np.bool_(True), n_sim=20, n_boot=0, seed=0)
    assert d.consistency_lower is not None  # numpy's bools are bools


@pytest.mark.parametrize("option", ["band", "consistency", "ticks", "annotate", "density_panel", "show_diagonal"])
def test_plot_options_take_only_bools(option):
    pytest.importorskip("matplotlib")
    import matplotlib

    matplotlib.use("Agg")
    d = smoothece.reliability_diagram(F, Y, n_boot=20, seed=0)
    for bad in ("yes", 1, None):
        with pytest.raises(TypeError, match=f"^{option} must be a bool, got {re.escape(repr(bad))}$"):
            d.plot(**{option: bad})
    from smoothece.plotting import plot_binned_diagram

    with pytest.raises(TypeError, match="^show_counts must be a bool, got 'yes'$"):
        plot_binned_diagram(F, Y, show_counts="yes")


def test_integration_bool_options_take_only_bools():
    pytest.importorskip("matplotlib")
    import matplotlib

    matplotlib.use("Agg")
    sklearn = pytest.importorskip("smoothece.sklearn")
    with pytest.raises(TypeError, match="^show_diagonal must be a bool, got 'yes'$"):
        sklearn.SmoothReliabilityDisplay.from_predictions(Y.astype(int), F, ref_line="yes", n_boot=0)


def test_dask_compute_takes_only_a_bool():
    da = pytest.importorskip("dask.array")
    from smoothece.dask import sketch_from_dask

    with pytest.raises(TypeError, match="^compute must be a bool, got 'no'$"):
        sketch_from_dask(da.from_array(F, chunks=500), da.from_array(Y, chunks=500), compute="no")
