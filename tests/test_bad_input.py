"""The input contract (README, Input contract): clear errors, nothing modified, no crash."""

import re

import numpy as np
import pytest

import smoothece
from smoothece import InputError

F = np.array([0.1, 0.5, 0.9, 0.3, 0.7])
Y = np.array([0, 1, 1, 0, 1], dtype=np.int8)


def call_all(f, y, **kw):
    """Every public scoring entry point, so each bad input is tried on each, on both metrics (the logit
    metric looks for few distinct predictions before its pass)."""
    return [
        lambda: smoothece.smece(f, y, **kw),
        lambda: smoothece.smece_sigma(f, y, 0.05, **kw),
        lambda: smoothece.smece(f, y, metric="logit", **kw),
        lambda: smoothece.smece_sigma(f, y, 0.05, metric="logit", **kw),
    ]


def check_refused(exc, pattern, f, y, **kw):
    """Each entry point raises `exc` matching `pattern` and leaves the arrays as they were."""
    before = [np.array(a, copy=True) for a in (f, y, kw.get("weights")) if isinstance(a, np.ndarray)]
    for call in call_all(f, y, **kw):
        with pytest.raises(exc, match=pattern):
            call()
    after = [a for a in (f, y, kw.get("weights")) if isinstance(a, np.ndarray)]
    for b, a in zip(before, after):
        np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize(
    "bad, value",
    [(-0.2, "-0.2"), (1.5, "1.5"), (np.nan, "nan"), (np.inf, "inf"), (-np.inf, "-inf"),
     (1.0000000000000002, "1.0000000000000002"), (50.0, "50"), (1.5e10, "15000000000"), (1e20, "1e+20")],
)
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_prediction_out_of_range(bad, value, dtype):
    if dtype == np.float32 and bad == 1.0000000000000002:
        bad, value = 1.0000001, "1.0000001"  # the next float32 above 1
    f = F.astype(dtype)
    f[2] = bad
    f[4] = bad
    value = re.escape(value)
    check_refused(ValueError, rf"^f\[2\] = {value}: .*\(2 of 5 values in f bad, first at index 2\)", f, Y)


@pytest.mark.parametrize("bad", [2, -1, 0.5, np.nan])
def test_labels_other_than_0_1(bad):
    y = Y.astype(np.float64)
    y[3] = bad
    check_refused(ValueError, r"^y\[3\] = .*labels must be 0 or 1 \(1 of 5 values in y bad, first at index 3\)", F, y)


def test_int_labels_out_of_range_and_bool_bytes():
    check_refused(ValueError, r"^y\[1\] = 2: labels must be 0 or 1", F, np.array([0, 2, 1, 0, 1], dtype=np.int64))
    check_refused(ValueError, r"^y\[0\] = 255: labels must be 0 or 1", F, np.array([255, 1, 1, 0, 1], dtype=np.uint8))
    # A bool array whose bytes are not 0/1 (made through a view) is refused too.
    raw = np.array([0, 1, 7, 0, 1], dtype=np.uint8)
    check_refused(ValueError, r"^y\[2\] = 7: labels must be 0 or 1", F, raw.view(bool))


@pytest.mark.parametrize("bad, text", [(-1.0, "-1"), (np.nan, "nan"), (np.inf, "inf")])
def test_bad_weights(bad, text):
    w = np.ones(5)
    w[1] = bad
    check_refused(
        ValueError,
        rf"^weights\[1\] = {text}: weights must be finite and non-negative \(1 of 5 values in weights bad",
        F, Y, weights=w,
    )


def test_all_zero_weights():
    check_refused(ValueError, r"weights.*sum to zero", F, Y, weights=np.zeros(5))


def test_first_bad_index_and_count_when_several_arguments_are_bad():
    f = F.copy()
    f[4] = 3.0
    y = Y.astype(np.int32)
    y[0] = 5
    # Predictions are checked first; then labels.
    check_refused(ValueError, r"^f\[4\] = 3: .*\(1 of 5", f, y)


@pytest.mark.parametrize(
    "f, name",
    [
        (np.array(["a", "b"]), "f"),
        (np.array([0.1 + 1j, 0.2]), "f"),
        ("0.1,0.2", "f"),
        (None, "f"),
    ],
)
def test_wrong_types(f, name):
    with pytest.raises(TypeError, match=rf"^{name} must be"):
        smoothece.smece(f, [0, 1])


def test_wrong_label_and_weight_types():
    with pytest.raises(TypeError, match=r"^y must be"):
        smoothece.smece([0.1, 0.2], np.array(["0", "1"]))
    with pytest.raises(TypeError, match=r"^weights must be"):
        smoothece.smece([0.1, 0.2], [0, 1], weights=np.array([1 + 0j, 1]))


def test_strings_are_not_numbers_in_object_arrays():
    pd = pytest.importorskip("pandas")
    for f in (np.array(["0.1", "0.9"], dtype=object), pd.Series(["0.1", "0.9"]), np.array([0.1, "0.9"], dtype=object)):
        with pytest.raises(TypeError, match=r"^f must be an array of real numbers, got str '0\.\d' at index \d"):
            smoothece.smece(f, [0, 1])
    from fractions import Fraction  # numbers of any type are still read
    assert (smoothece.smece(np.array([Fraction(1, 10), 0.9], dtype=object), [0, 1])
            == smoothece.smece([0.1, 0.9], [0, 1]))


@pytest.mark.parametrize("kw, pattern", [
    ({"n_boot": 2**63}, r"^n_boot must be <= 2,147,483,647, got 9223372036854775808"),
    ({"n_boot": 10**12}, r"^n_boot must be <= 2,147,483,647"),
])
def test_counts_beyond_any_run_are_refused(kw, pattern):
    # (a bare pybind TypeError, or std::bad_alloc, before)
    with pytest.raises(ValueError, match=pattern):
        smoothece.bootstrap_smece(F, Y, **kw)
    with pytest.raises(ValueError, match=pattern.replace("n_boot", "n_sim")):
        smoothece.calibration_test(F, Y, n_sim=kw["n_boot"])


def test_hints_only_when_most_values_fit_the_cause():
    rng = np.random.default_rng(4)
    f = rng.uniform(0.02, 0.98, 1000)
    y = (rng.random(1000) < f).astype(int)
    with pytest.raises(InputError, match="look like percentages: divide them by 100"):
        smoothece.smece(100 * f, y)
    with pytest.raises(InputError, match="look like logits"):
        smoothece.smece(np.log(f / (1 - f)), y)
    # A few stray values in a column of probabilities: dividing by 100 or applying
    # expit would give a number, and a wrong one. No hint.
    strays = [{5: 7.0}, {5: -0.3, 9: 1.2}, {0: 1.2, 1: 1.3, 2: 55.0}]
    for bad in strays:
        g = f.copy()
        g[list(bad)] = list(bad.values())
        with pytest.raises(InputError) as err:
            smoothece.smece(g, y)
        assert "look like" not in str(err.value) and err.value.index == min(bad)
    with pytest.raises(InputError) as err:
        smoothece.smece(np.array([0.2, 1.2, 1.3]), [0, 1, 1])  # too little to tell
    assert "look like" not in str(err.value)


def test_long_double_labels_that_round_to_0_or_1_are_refused():
    eps = np.finfo(np.longdouble).eps
    if eps >= np.finfo(np.float64).eps:
        pytest.skip("long double is float64 on this platform")
    for bad in (np.longdouble(1) + eps, np.longdouble("1e-4000")):
        y = np.array([0, bad, 1], dtype=np.longdouble)
        shown = np.format_float_scientific(bad, unique=True, trim="-")
        if bad == 0:  # 1e-4000 underflows where long double has float64's range
            continue
        pattern = rf"^y\[1\] = {re.escape(shown)} \({np.dtype(np.longdouble).name}\) rounds to [01] as float64"
        with pytest.raises(InputError, match=pattern) as err:
            smoothece.smece([0.2, 0.5, 0.7], y)
        assert (err.value.index, err.value.count) == (1, 1)
    exact = np.array([0, 1, 1], dtype=np.longdouble)  # exact 0/1 long doubles are labels
    assert smoothece.smece([0.2, 0.5, 0.7], exact) == smoothece.smece([0.2, 0.5, 0.7], [0, 1, 1])


def test_ragged_lists_name_their_argument():
    with pytest.raises(InputError, match=r"^f must be an array of numbers: .*inhomogeneous") as err:
        smoothece.smece([[0.1, 0.2], [0.3]], [0, 1])
    assert err.value.argument == "f"


def test_row_bootstrap_ignores_zero_weight_rows():
    # Zero-weight rows are not rows: a draw of them alone had no statistic (an InputError).
    w = np.array([1.0, 0.0, 2.0, 0.0, 0.5])
    kept = w > 0
    with_zeros = smoothece.bootstrap_smece(F, Y, weights=w, method="rows", n_boot=30, seed=4)
    without = smoothece.bootstrap_smece(F[kept], Y[kept], weights=w[kept], method="rows", n_boot=30, seed=4)
    np.testing.assert_array_equal(with_zeros.replicates, without.replicates)
    # one row: every replicate is its value, to rounding (the interval then is the value, to rounding)
    assert smoothece.bootstrap_smece(F, Y, weights=[1, 0, 0, 0, 0], method="rows", n_boot=20,
                                     seed=0).high == pytest.approx(0.1, abs=1e-15)
    with pytest.raises(ValueError, match="^weight_kind must be"):
        smoothece.bootstrap_smece(F, Y, weights=w, method="rows", weight_kind="bogus")
    with pytest.raises(ValueError, match="frequency weights need method='cells'"):
        smoothece.bootstrap_smece(F, Y, weights=w, method="rows", weight_kind="frequency")


def test_shapes():
    with pytest.raises(ValueError, match=r"f and y must have the same length, got f.shape=\(5,\) and y.shape=\(4,\)"):
        smoothece.smece(F, Y[:4])
    with pytest.raises(ValueError, match=r"f and weights must have the same length.*weights.shape=\(3,\)"):
        smoothece.smece(F, Y, weights=np.ones(3))
    with pytest.raises(ValueError, match=r"^f is empty"):
        smoothece.smece(np.array([]), np.array([]))
    with pytest.raises(InputError, match=r"^f must be 1-D, got shape \(5, 1\)") as err:
        smoothece.smece(F[:, None], Y)
    assert (err.value.argument, err.value.index) == ("f", None)
    with pytest.raises(InputError, match=r"^y must be 1-D, got shape \(\)"):
        smoothece.smece(F, 1)


@pytest.mark.parametrize("sigma", [0.0, -0.1, np.nan, np.inf])
def test_bad_sigma(sigma):
    with pytest.raises(ValueError, match=r"^sigma must be a positive finite number"):
        smoothece.smece_sigma(F, Y, sigma)
    with pytest.raises(TypeError, match=r"^sigma must be a number"):
        smoothece.smece_sigma(F, Y, "0.1")


def test_bad_threads_and_clip():
    with pytest.raises(ValueError, match=r"^threads must be >= 1"):
        smoothece.smece(F, Y, threads=0)
    with pytest.raises(TypeError, match=r"^threads must be an int"):
        smoothece.smece(F, Y, threads=1.5)
    with pytest.raises(ValueError, match=r"^clip must be"):
        smoothece.smece(F, Y, clip=-0.1)
    with pytest.raises(TypeError, match=r"^clip must be"):
        smoothece.smece(F, Y, clip="yes")


def test_real_mcstat_forecasts_refused_then_clipped(solar):
    d = solar["MCSTAT"]
    f = d.f.copy()
    bad = np.flatnonzero(f < 0)
    assert bad.size > 0
    check_refused(
        ValueError, rf"^f\[{bad[0]}\] = -0\.01: .*\({bad.size} of {f.size} values in f bad, first at index {bad[0]}\)"
                    rf"; pass clip=True to clamp values within 0\.01 of \[0, 1\]$",
        f, d.y,
    )
    clipped = np.clip(f, 0.0, 1.0)
    assert smoothece.smece(f, d.y, clip=True) == smoothece.smece(clipped, d.y)
    assert smoothece.smece(f, d.y, clip=0.01) == smoothece.smece(clipped, d.y)
    np.testing.assert_array_equal(f, d.f)  # clipping happens inside the core, not on the caller's array
    with pytest.raises(ValueError, match=r"in \[-0\.005, 1\.005\]"):
        smoothece.smece(f, d.y, clip=0.005)


def test_clip_still_refuses_nan():
    f = F.copy()
    f[0] = np.nan
    with pytest.raises(ValueError, match=r"^f\[0\] = nan"):
        smoothece.smece(f, Y, clip=True)


def test_clip_numpy_true_is_true_and_int_is_refused():
    f = np.array([-0.005, 0.3, 0.6, 1.004, 0.9])
    y = np.array([0, 0, 1, 1, 1])
    assert smoothece.smece(f, y, clip=np.True_) == smoothece.smece(f, y, clip=True)
    assert smoothece.smece(f, y, clip=np.True_) == smoothece.smece(np.clip(f, 0, 1), y)
    with pytest.raises(smoothece.InputError, match=r"^f\[0\] = -0\.005"):
        smoothece.smece(f, y, clip=np.False_)
    for one in (1, np.int64(1)):
        with pytest.raises(TypeError, match=r"^clip must be a bool or a float tolerance, got the integer .*1.*: "
                                            r"pass clip=True .*or clip=1\.0 for a tolerance of 1\.0"):
            smoothece.smece(f, y, clip=one)
    assert smoothece.smece(f, y, clip=1.0) == smoothece.smece(f, y, clip=True)  # a float is a tolerance


def test_read_only_inputs_are_accepted():
    f, y = F.copy(), Y.copy()
    f.flags.writeable = False
    y.flags.writeable = False
    assert smoothece.smece(f, y) == smoothece.smece(F, Y)


# --- 2-D predictions: scikit-learn's predict_proba, one-column arrays, multiclass probabilities ---

def test_predict_proba_passed_whole_gets_the_column_hint():
    pytest.importorskip("sklearn")
    from scipy.special import expit
    from sklearn.linear_model import LogisticRegression

    rng = np.random.default_rng(0)
    X = rng.normal(size=(15_000, 3))
    y = (X[:, 0] + rng.normal(size=X.shape[0]) > 0).astype(np.int8)
    clf = LogisticRegression().fit(X, y)
    proba = clf.predict_proba(X)
    message = r"^f must be 1-D, got shape \(15000, 2\); .*take f\[:, 1\] \(the positive class's probability"
    for call in (lambda: smoothece.smece(proba, y), lambda: smoothece.smece_sigma(proba, y, 0.05),
                 lambda: smoothece.CalibrationSketch().update(proba, y)):
        with pytest.raises(InputError, match=message) as err:
            call()
        assert (err.value.argument, err.value.index) == ("f", None)
    # Following the hint scores the probability that y = 1: the logistic of the model's own score.
    assert list(clf.classes_) == [0, 1]
    np.testing.assert_allclose(proba[:, 1], expit(clf.decision_function(X)), rtol=1e-12)
    assert smoothece.smece(proba[:, 1], y) == pytest.approx(smoothece.smece(expit(clf.decision_function(X)), y),
                                                             rel=1e-9)


def test_two_columns_that_are_not_class_probabilities_get_no_column_hint():
    # Two models side by side, or two logits: [:, 1] could be the wrong number, so it is not suggested.
    rng = np.random.default_rng(1)
    two_models = rng.uniform(size=(50, 2))
    y = (rng.uniform(size=50) < 0.5).astype(np.int8)
    for f in (two_models, np.log(two_models)):
        with pytest.raises(InputError, match=r"^f must be 1-D, got shape \(50, 2\); its 2 columns do not sum to 1") \
                as err:
            smoothece.smece(f, y)
        assert "[:, 1]" not in str(err.value) and err.value.argument == "f"


def test_multiclass_probabilities_point_to_the_multiclass_measures():
    rng = np.random.default_rng(2)
    probs = rng.dirichlet(np.ones(4), size=200)
    labels = rng.integers(0, 4, size=200)
    with pytest.raises(InputError, match=r"^f must be 1-D, got shape \(200, 4\); for a 4-class model's "
                                         r"probabilities .*smoothece\.top_label_smece\(probs, labels\) or "
                                         r"smoothece\.classwise_smece\(probs, labels\)") as err:
        smoothece.smece(probs, labels)
    assert "[:, 1]" not in str(err.value)
    # The functions named take these arrays.
    assert np.isfinite(smoothece.top_label_smece(probs, labels))
    assert smoothece.classwise_smece(probs, labels).per_class.shape == (4,)


def test_one_column_gets_the_ravel_hint():
    with pytest.raises(InputError, match=r"^f must be 1-D, got shape \(5, 1\); pass f\[:, 0\] \(or f\.ravel\(\)\)"):
        smoothece.smece(F[:, None], Y)
    with pytest.raises(InputError, match=r"^y must be 1-D, got shape \(5, 1\); pass y\[:, 0\]"):
        smoothece.smece(F, Y[:, None])
    assert smoothece.smece(F[:, None][:, 0], Y) == smoothece.smece(F, Y)
    # One-hot labels get no column hint from smece (which column is y = 1 is not the array's to say).
    with pytest.raises(InputError, match=r"^y must be 1-D, got shape \(5, 2\)$"):
        smoothece.smece(F, np.column_stack([1 - Y, Y]))
