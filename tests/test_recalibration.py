"""Recalibration with the smoothed calibration function (smoothece.recalibration)."""

import pickle

import numpy as np
import pytest

import smoothece
from smoothece._util import filled_curve as _filled_curve
from smoothece.recalibration import NotFittedError, SmoothCalibrator, isotonic_fit


def temperature_data(n, temperature, seed):
    """Logits z ~ N(0, 2²), true p = sigmoid(z), reported f = sigmoid(z / T)."""
    rng = np.random.default_rng(seed)
    z = rng.normal(0.0, 2.0, size=n)
    p = 1.0 / (1.0 + np.exp(-z))
    y = (rng.uniform(size=n) < p).astype(np.int8)
    return 1.0 / (1.0 + np.exp(-z / temperature)), y, p


@pytest.mark.parametrize("temperature", [2.0, 0.5])
@pytest.mark.parametrize("monotone", [False, True])
def test_recalibration_lowers_held_out_smece(temperature, monotone):
    f, y, p = temperature_data(20000, temperature, seed=1)
    fit, test = slice(0, 10000), slice(10000, None)
    cal = SmoothCalibrator(monotone=monotone).fit(f[fit], y[fit])
    g = cal.predict(f[test])
    before = smoothece.smece(f[test], y[test])
    after = smoothece.smece(g, y[test])
    assert before > 0.08  # T = 2 and T = 0.5 are far from calibrated
    assert after < 0.4 * before
    # Closer to the true probabilities, too.
    assert np.sqrt(np.mean((g - p[test]) ** 2)) < 0.5 * np.sqrt(np.mean((f[test] - p[test]) ** 2))
    # The plain diagram curve also helps, less (it is pulled toward the local mean prediction).
    g_diagram = SmoothCalibrator(method="diagram", monotone=monotone).fit(f[fit], y[fit]).predict(f[test])
    assert smoothece.smece(g_diagram, y[test]) < 0.5 * before


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_calibrated_data_is_not_made_worse_beyond_noise(seed):
    """On calibrated data the fitted map is the identity plus the fit half's sampling noise,
    whose size that half's own SmoothECE measures (for calibrated data the SmoothECE is pure
    noise). So the held-out SmoothECE after recalibration combines two independent noises of
    that size: it may grow from `before` toward hypot(before, fit noise) (up to √2 · before),
    and not beyond that by more than 2 bootstrap sd. (`after <= before + 2 sd` alone fails on
    ~1 in 5 seeds at this size, by exactly that fit noise.)"""
    f, y, _ = temperature_data(20000, 1.0, seed=100 + seed)
    fit, test = slice(0, 10000), slice(10000, None)
    g = SmoothCalibrator().fit(f[fit], y[fit]).predict(f[test])
    boot = smoothece.bootstrap_smece(f[test], y[test], n_boot=200, seed=seed)
    sd = float(np.std(boot.replicates, ddof=1))
    after = smoothece.smece(g, y[test])
    fit_noise = smoothece.smece(f[fit], y[fit])
    assert after <= np.hypot(boot.value, fit_noise) + 2 * sd
    assert after <= 1.5 * boot.value + 2 * sd


def test_predict_range_monotone_and_shapes():
    rng = np.random.default_rng(4)
    f = rng.uniform(size=3000)
    y = rng.uniform(size=f.size) < f  # calibrated: σ* is small and the fitted map wiggles
    free = SmoothCalibrator().fit(f, y)
    mono = SmoothCalibrator(monotone=True).fit(f, y)
    grid = np.linspace(0, 1, 1001)
    for cal in (free, mono):
        out = cal.predict(grid)
        assert out.shape == (1001,) and np.all((out >= 0) & (out <= 1))
    assert np.any(np.diff(free.predict(grid)) < -1e-3)  # the unconstrained map goes down somewhere
    assert np.all(np.diff(mono.predict(grid)) >= 0)
    assert np.all(np.diff(mono.curve_) >= 0)
    # Extreme miscalibration: the residual map would leave [0, 1]; the output is clipped.
    z = SmoothCalibrator().fit(np.zeros(10), np.r_[np.zeros(5), np.ones(5)])
    assert np.all((z.predict(grid) >= 0) & (z.predict(grid) <= 1))
    # 2-D (n, 1) input, float32, lists.
    np.testing.assert_array_equal(free.predict(grid[:, None]), free.predict(grid))
    assert free.transform(grid[:, None]).shape == (1001, 1) and free.transform(grid).shape == (1001,)
    np.testing.assert_allclose(free.predict(grid.astype(np.float32)),
                               free.predict(grid.astype(np.float32).astype(float)))
    assert free.predict([0.25]).shape == (1,)


def test_residual_map_integrates_to_smece_sigma():
    """The density-weighted L1 distance of the (unclipped) residual map from the identity is smECEσ."""
    rng = np.random.default_rng(8)
    f = rng.beta(2, 2, size=5000)
    y = rng.uniform(size=f.size) < 0.1 + 0.8 * f
    cal = SmoothCalibrator().fit(f, y)
    d = cal.diagram_
    assert cal.sigma_ == pytest.approx(smoothece.smece(f, y)) and cal.smece_ == pytest.approx(cal.sigma_)
    gap = np.abs(cal.curve_ - d.mesh) * d.density
    assert np.all((cal.curve_ > 0) & (cal.curve_ < 1))  # no clipping on this data
    integral = np.sum((gap[1:] + gap[:-1]) / 2 * np.diff(d.mesh))
    assert integral == pytest.approx(smoothece.smece_sigma(f, y, cal.sigma_), rel=1e-4)


def test_diagram_method_is_the_diagram_curve(solar):
    d = solar["DAFFS"]
    cal = SmoothCalibrator(method="diagram").fit(d.f, d.y)
    diag = smoothece.reliability_diagram(d.f, d.y, n_boot=0, sigma=smoothece.smece(d.f, d.y))
    np.testing.assert_array_equal(cal.mesh_, diag.mesh)
    np.testing.assert_allclose(cal.curve_, np.clip(_filled_curve(diag.mesh, diag.mu), 0, 1), atol=1e-15)
    x = np.linspace(0, 1, 77)
    np.testing.assert_allclose(cal.predict(x), np.interp(x, diag.mesh, cal.curve_))


def test_nan_stretches_take_the_nearest_value():
    rng = np.random.default_rng(0)
    f = np.r_[rng.uniform(0.1, 0.2, 500), rng.uniform(0.8, 0.9, 500)]
    y = rng.uniform(size=f.size) < f
    cal = SmoothCalibrator(sigma=0.01).fit(f, y)
    assert np.isnan(cal.diagram_.mu).any() and not np.isnan(cal.curve_).any()
    mu = cal.diagram_.mu
    valid = np.flatnonzero(~np.isnan(mu))
    assert cal.predict([0.0])[0] == cal.curve_[valid[0]]
    assert cal.predict([1.0])[0] == cal.curve_[valid[-1]]


def test_isotonic_fit():
    np.testing.assert_allclose(isotonic_fit([1, 3, 2, 4], [1, 1, 1, 1]), [1, 2.5, 2.5, 4])
    np.testing.assert_allclose(isotonic_fit([3, 1], [1, 3]), [1.5, 1.5])
    np.testing.assert_allclose(isotonic_fit([5, 4, 3], [1, 1, 1]), [4, 4, 4])
    sklearn_isotonic = pytest.importorskip("sklearn.isotonic")
    rng = np.random.default_rng(1)
    v, w = rng.normal(size=300).cumsum() * 0.1 + rng.normal(size=300), rng.uniform(0.1, 2, size=300)
    ref = sklearn_isotonic.IsotonicRegression().fit(np.arange(300), v, sample_weight=w).predict(np.arange(300))
    np.testing.assert_allclose(isotonic_fit(v, w), ref, atol=1e-10)
    with pytest.raises(ValueError):
        isotonic_fit([1, 2], [1, 0])


def test_weights_pickle_params_and_band():
    rng = np.random.default_rng(2)
    f = rng.uniform(size=2000)
    y = rng.uniform(size=f.size) < f**2
    reps = rng.integers(0, 3, size=f.size)
    x = np.linspace(0, 1, 101)
    a = SmoothCalibrator().fit(f, y, weights=reps.astype(float)).predict(x)
    b = SmoothCalibrator().fit(np.repeat(f, reps), np.repeat(y, reps)).predict(x)
    np.testing.assert_allclose(a, b, atol=1e-7)
    np.testing.assert_array_equal(SmoothCalibrator().fit(f, y, sample_weight=reps.astype(float)).predict(x), a)

    cal = SmoothCalibrator(monotone=True, n_boot=50, seed=3).fit(f, y)
    back = pickle.loads(pickle.dumps(cal))
    np.testing.assert_array_equal(back.predict(x), cal.predict(x))
    assert back.get_params() == cal.get_params()
    lo, hi = cal.predict_interval(x)
    assert np.all(lo <= hi) and np.mean((lo <= cal.predict(x)) & (cal.predict(x) <= hi)) > 0.9
    lo2, hi2 = SmoothCalibrator(monotone=True, n_boot=50, seed=3).fit(f, y).predict_interval(x)
    np.testing.assert_array_equal(lo, lo2)  # seeded

    params = SmoothCalibrator().get_params(deep=True)
    assert params == {"sigma": None, "monotone": False, "method": "residual", "n_boot": 0, "level": 0.95,
                      "seed": None, "clip": False}
    c = SmoothCalibrator()
    assert c.set_params(sigma=0.05, monotone=True) is c and c.sigma == 0.05 and c.monotone is True
    assert "sigma=0.05" in repr(c) and "monotone=True" in repr(c)
    assert c.fit(f, y) is c and c.sigma_ == 0.05
    with pytest.raises(ValueError, match=r"(?i)invalid parameter 'bandwidth' for (estimator )?SmoothCalibrator"):
        c.set_params(bandwidth=1)


def test_sklearn_pipeline():
    pipeline = pytest.importorskip("sklearn.pipeline")
    preprocessing = pytest.importorskip("sklearn.preprocessing")
    f, y, _ = temperature_data(4000, 2.0, seed=5)
    X = f[:, None]
    direct = SmoothCalibrator().fit(f, y)
    # X (n, 1) turned into f by a FunctionTransformer.
    pipe = pipeline.make_pipeline(preprocessing.FunctionTransformer(lambda X: X[:, 0]), SmoothCalibrator())
    np.testing.assert_allclose(pipe.fit(X, y).predict(X), direct.predict(f))
    # X (n, 1) directly, with weights routed to the step.
    pipe = pipeline.make_pipeline(SmoothCalibrator(monotone=True))
    w = np.ones(f.size)
    out = pipe.fit(X, y, smoothcalibrator__weights=w).predict(X)
    np.testing.assert_allclose(out, SmoothCalibrator(monotone=True).fit(f, y).predict(f))
    # As a transformer in the middle, fit_transform keeps X's shape.
    assert SmoothCalibrator().fit_transform(X, y).shape == (f.size, 1)
    pipe = pipeline.make_pipeline(SmoothCalibrator(), preprocessing.FunctionTransformer(lambda X: 2 * X))
    np.testing.assert_allclose(pipe.fit_transform(X, y)[:, 0], 2 * direct.predict(f))


def test_is_a_scikit_learn_estimator():
    base = pytest.importorskip("sklearn.base")
    from sklearn.exceptions import NotFittedError as SklearnNotFitted
    from sklearn.utils.validation import check_is_fitted

    cal = SmoothCalibrator(sigma=0.1, monotone=True)
    assert isinstance(cal, base.BaseEstimator) and isinstance(cal, base.RegressorMixin)
    assert isinstance(cal, base.TransformerMixin)
    assert base.is_regressor(cal) and not base.is_classifier(cal)
    assert NotFittedError is SklearnNotFitted
    with pytest.raises(SklearnNotFitted, match="not fitted yet"):
        cal.predict([0.5])
    with pytest.raises(SklearnNotFitted):
        check_is_fitted(cal)
    clone = base.clone(cal)
    assert clone.get_params() == cal.get_params() and clone is not cal
    f, y, _ = temperature_data(3000, 2.0, seed=6)
    check_is_fitted(cal.fit(f, y))
    assert not hasattr(base.clone(cal), "curve_")  # a clone is unfitted
    assert repr(SmoothCalibrator(monotone=True)) == "SmoothCalibrator(monotone=True)"  # scikit-learn's repr
    np.testing.assert_allclose(cal.score(f[:, None], y), 1 - np.mean((y - cal.predict(f)) ** 2) / np.var(y))


#: Scorers that cross_val_score accepts for IsotonicRegression (a regressor of E[y | f]).
REGRESSION_SCORINGS = ["neg_mean_squared_error", "neg_mean_absolute_error", "r2", "neg_root_mean_squared_error",
                       "explained_variance", None]


def _probability_scorers_refuse_regressors() -> bool:
    """scikit-learn before 1.9 refuses a regressor's predict_proba in its probability scorers
    ("... should either be a classifier ..."); read from the installed version's own code."""
    try:
        import inspect

        from sklearn.utils import _response
    except ImportError:
        return False
    return "should either be a classifier" in inspect.getsource(_response)


#: Probability scorers need a scikit-learn that accepts a regressor's predict_proba.
NEEDS_PROBA_SCORERS = pytest.mark.skipif(_probability_scorers_refuse_regressors(),
                                         reason="this scikit-learn refuses a regressor's predict_proba in "
                                                "probability scorers (SmoothCalibratedClassifier is the classifier)")


@pytest.mark.parametrize("scoring", REGRESSION_SCORINGS + [pytest.param(s, marks=NEEDS_PROBA_SCORERS)
                                                           for s in ("neg_brier_score", "neg_log_loss")])
def test_cross_val_score(scoring):
    model_selection = pytest.importorskip("sklearn.model_selection")
    from sklearn.isotonic import IsotonicRegression

    f, y, _ = temperature_data(3000, 2.0, seed=7)
    X = f.reshape(-1, 1)
    ours = model_selection.cross_val_score(SmoothCalibrator(), X, y, scoring=scoring, cv=3, error_score="raise")
    assert ours.shape == (3,) and np.all(np.isfinite(ours))
    if scoring in REGRESSION_SCORINGS:  # the same scorings as IsotonicRegression, on the same scale
        iso = model_selection.cross_val_score(IsotonicRegression(out_of_bounds="clip"), X, y, scoring=scoring,
                                              cv=3, error_score="raise")
        np.testing.assert_allclose(ours, iso, rtol=0.1, atol=0.01)


@NEEDS_PROBA_SCORERS
def test_brier_score_is_the_mean_squared_error():
    # A regressor's predict_proba is unusual in scikit-learn (IsotonicRegression has none and
    # scores NaN under "neg_brier_score"); a calibrator's output is a probability, so we offer
    # the binary classifier layout and the probability scorers work.
    model_selection = pytest.importorskip("sklearn.model_selection")
    from sklearn.metrics import brier_score_loss, log_loss

    f, y, _ = temperature_data(3000, 0.5, seed=8)
    X = f.reshape(-1, 1)
    brier = model_selection.cross_val_score(SmoothCalibrator(), X, y, scoring="neg_brier_score", cv=3)
    mse = model_selection.cross_val_score(SmoothCalibrator(), X, y, scoring="neg_mean_squared_error", cv=3)
    np.testing.assert_allclose(brier, mse, rtol=1e-12)
    cal = SmoothCalibrator().fit(X, y)
    proba = cal.predict_proba(X)
    assert proba.shape == (f.size, 2)
    np.testing.assert_array_equal(proba[:, 1], cal.predict(X))
    np.testing.assert_allclose(proba.sum(axis=1), 1.0, rtol=0, atol=1e-15)
    assert brier_score_loss(y, proba[:, 1]) < brier_score_loss(y, f)  # recalibration helps
    assert log_loss(y, proba) < log_loss(y, f)


def test_sklearn_is_imported_by_recalibration_only():
    import subprocess
    import sys

    code = ("import sys, smoothece, smoothece.measures, smoothece.multiclass; print('sklearn' in sys.modules)\n"
            "import smoothece.recalibration; print('sklearn' in sys.modules)")
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    pytest.importorskip("sklearn")
    assert run.stdout.split() == ["False", "True"]


def test_works_without_sklearn():
    # A fresh interpreter in which scikit-learn cannot be imported.
    import subprocess
    import sys

    code = """
import sys
sys.modules["sklearn"] = None  # import sklearn now raises ImportError
import numpy as np
from smoothece import SmoothCalibrator
from smoothece.recalibration import NotFittedError
rng = np.random.default_rng(0)
f = rng.uniform(size=2000)
y = rng.uniform(size=f.size) < f**2
try:
    SmoothCalibrator().predict(f)
except NotFittedError as err:
    assert isinstance(err, ValueError) and isinstance(err, AttributeError)
    print(type(err).__module__, type(err).__name__)
cal = SmoothCalibrator(monotone=True).fit(f.reshape(-1, 1), y)
assert cal.transform(f.reshape(-1, 1)).shape == (2000, 1) and cal.predict_proba(f).shape == (2000, 2)
assert cal.get_params()["monotone"] is True and cal.set_params(sigma=0.1) is cal
print(repr(SmoothCalibrator(sigma=0.1)))
try:
    cal.set_params(bandwidth=1)
except ValueError as err:
    print(err)
"""
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    assert run.stdout.splitlines() == [
        "smoothece.recalibration NotFittedError",
        "SmoothCalibrator(sigma=0.1, monotone=False, method='residual', n_boot=0, level=0.95, seed=None, clip=False)",
        "invalid parameter 'bandwidth' for SmoothCalibrator; valid parameters: sigma, monotone, method, n_boot, "
        "level, seed, clip",
    ]


#: scikit-learn's common checks that a 1-D calibrator fails by its nature, and why. The checks
#: draw X with several real-valued columns (often negative, NaN or complex) and y continuous
#: or multiclass; SmoothCalibrator takes one column of probabilities in [0, 1] and 0/1 outcomes,
#: and refuses anything else (README, Input contract). What those checks test is tested above and below
#: on valid data (idempotent fit, pickling, order and subset invariance, weights, dtypes).
_NOT_A_1D_CALIBRATOR = "draws X with several columns or outside [0, 1], or y not 0/1"
SKLEARN_EXPECTED_FAILURES = {
    check: _NOT_A_1D_CALIBRATOR for check in [
        "check_all_zero_sample_weights_error", "check_dict_unchanged", "check_dont_overwrite_parameters",
        "check_dtype_object", "check_estimators_dtypes", "check_estimators_fit_returns_self",
        "check_estimators_nan_inf", "check_estimators_overwrite_params", "check_estimators_pickle",
        "check_f_contiguous_array_estimator", "check_fit2d_1feature", "check_fit2d_1sample",
        "check_fit2d_predict1d", "check_fit_check_is_fitted", "check_fit_idempotent", "check_fit_score_takes_y",
        "check_methods_sample_order_invariance", "check_methods_subset_invariance", "check_n_features_in",
        "check_n_features_in_after_fitting", "check_pipeline_consistency", "check_positive_only_tag_during_fit",
        "check_readonly_memmap_input", "check_regressor_data_not_an_array", "check_regressors_int",
        "check_regressors_train", "check_requires_y_none", "check_sample_weight_equivalence_on_dense_data",
        "check_sample_weights_list", "check_sample_weights_not_an_array", "check_sample_weights_not_overwritten",
        "check_sample_weights_pandas_series", "check_sample_weights_shape", "check_supervised_y_2d",
        "check_transformer_data_not_an_array", "check_transformer_general", "check_transformer_preserve_dtypes",
    ]
}
SKLEARN_EXPECTED_FAILURES.update({
    "check_complex_data": "complex input is a TypeError, not a ValueError (README, Input contract)",
    "check_estimators_empty_data_messages": "the message names f's shape in our words",
    "check_regressors_no_decision_function": "predict_proba on purpose (probability scorers); also draws 4 columns",
})

try:
    from sklearn.utils.estimator_checks import parametrize_with_checks
except ImportError:  # without scikit-learn, test_works_without_sklearn covers the class
    pass
else:

    @parametrize_with_checks([SmoothCalibrator()], expected_failed_checks=lambda est: SKLEARN_EXPECTED_FAILURES)
    def test_sklearn_common_checks(estimator, check):
        check(estimator)


def test_estimator_properties_on_valid_data(tmp_path):
    # What the scikit-learn checks listed above test, on data a calibrator takes.
    pd = pytest.importorskip("pandas")
    f, y, _ = temperature_data(3000, 2.0, seed=9)
    X = f.reshape(-1, 1)
    w = np.random.default_rng(9).uniform(0.5, 2.0, size=f.size)
    x_new = np.linspace(0, 1, 101).reshape(-1, 1)
    cal = SmoothCalibrator(monotone=True)
    assert cal.fit(X, y) is cal  # fit returns self
    params, first = cal.get_params(), cal.predict(x_new)
    assert cal.n_features_in_ == 1
    np.testing.assert_array_equal(cal.fit(X, y).predict(x_new), first)  # idempotent
    assert cal.get_params() == params  # parameters untouched
    state = dict(vars(cal))
    cal.predict(x_new), cal.transform(x_new), cal.predict_proba(x_new)
    assert vars(cal).keys() == state.keys() and all(vars(cal)[k] is state[k] for k in state)  # dict unchanged
    np.testing.assert_array_equal(pickle.loads(pickle.dumps(cal)).predict(x_new), first)
    # Row order and subsets: predictions are per row.
    order = np.random.default_rng(1).permutation(x_new.shape[0])
    np.testing.assert_array_equal(cal.predict(x_new[order]), first[order])
    np.testing.assert_array_equal(cal.predict(x_new[::7]), first[::7])
    # Input types: float32, int labels, read-only memory maps, lists, pandas; weights of any kind.
    np.testing.assert_allclose(SmoothCalibrator().fit(X.astype(np.float32), y).predict(x_new),
                               SmoothCalibrator().fit(X.astype(np.float32).astype(np.float64), y).predict(x_new))
    memmap = np.lib.format.open_memmap(tmp_path / "X.npy", mode="w+", dtype=np.float64, shape=X.shape)
    memmap[:] = X
    memmap.flush()
    readonly = np.load(tmp_path / "X.npy", mmap_mode="r")
    reference = SmoothCalibrator().fit(X, y, sample_weight=w).predict(x_new)
    np.testing.assert_array_equal(SmoothCalibrator().fit(readonly, y, sample_weight=w).predict(readonly[:101]),
                                  SmoothCalibrator().fit(X, y, sample_weight=w).predict(X[:101]))
    for weights in (w.tolist(), pd.Series(w), w.astype(np.float32).astype(np.float64)):
        np.testing.assert_allclose(SmoothCalibrator().fit(X, y, sample_weight=weights).predict(x_new), reference,
                                   rtol=0, atol=1e-8)  # float32 weights round
    w_before = w.copy()
    SmoothCalibrator().fit(X, y, sample_weight=w)
    np.testing.assert_array_equal(w, w_before)  # sample weights not overwritten
    assert SmoothCalibrator().fit(X, y).transform(x_new).dtype == np.float64
    frame = pd.DataFrame({"confidence": f})
    np.testing.assert_array_equal(SmoothCalibrator().fit(frame, pd.Series(y)).predict(frame.iloc[:101]),
                                  SmoothCalibrator().fit(X, y).predict(X[:101]))
    with pytest.raises(ValueError, match=r"^f must be 1-D or of shape \(n, 1\), got shape \(3000, 2\)"):
        SmoothCalibrator().fit(np.c_[f, f], y)


def test_bad_input():
    f = np.array([0.1, 0.5, 0.9, 0.3, 0.7])
    y = np.array([0, 1, 1, 0, 1])
    with pytest.raises(NotFittedError, match="not fitted yet"):
        SmoothCalibrator().predict(f)
    with pytest.raises(ValueError, match=r"^f\[2\] = 1\.5: predictions must be finite and in \[0, 1\]"):
        SmoothCalibrator().fit(np.array([0.1, 0.5, 1.5]), [0, 1, 1])
    with pytest.raises(ValueError, match=r"^y\[1\] = 2: labels must be 0 or 1"):
        SmoothCalibrator().fit(f, [0, 2, 1, 0, 1])
    with pytest.raises(ValueError, match=r"^weights\[0\] = -1: weights must be finite and non-negative"):
        SmoothCalibrator().fit(f, y, weights=[-1.0, 1, 1, 1, 1])
    with pytest.raises(ValueError, match=r"f and y must have the same length"):
        SmoothCalibrator().fit(f, y[:3])
    with pytest.raises(ValueError, match=r"^f must be 1-D or of shape \(n, 1\), got shape \(5, 2\)"):
        SmoothCalibrator().fit(np.c_[f, f], y)
    with pytest.raises(TypeError, match="give weights or sample_weight, not both"):
        SmoothCalibrator().fit(f, y, weights=np.ones(5), sample_weight=np.ones(5))
    cal = SmoothCalibrator().fit(f, y)
    with pytest.raises(ValueError, match=r"^f\[1\] = nan: predictions must be finite"):
        cal.predict([0.2, np.nan])
    with pytest.raises(ValueError, match=r"^f\[0\] = -0\.01: .* \(1 of 1 value in f bad"):
        cal.predict([-0.01])
    np.testing.assert_array_equal(SmoothCalibrator(clip=0.02).fit(f, y).predict([-0.01]), cal.predict([0.0]))
    with pytest.raises(TypeError, match=r"^f must be an array of real numbers"):
        cal.predict(np.array(["a"]))
    with pytest.raises(ValueError, match=r"^f is empty"):
        cal.predict([])
    with pytest.raises(ValueError, match=r"no bootstrap band"):
        cal.predict_interval([0.5])
    for params, exc, pattern in [
        (dict(sigma=-1.0), ValueError, r"^sigma must be a positive finite number"),
        (dict(sigma="auto"), TypeError, r"^sigma must be a number"),
        (dict(monotone="yes"), TypeError, r"^monotone must be a bool, got 'yes'"),
        (dict(method="isotonic"), ValueError, r"^method must be 'residual' or 'diagram', got 'isotonic'"),
        (dict(n_boot=-1), ValueError, r"^n_boot must be >= 0, got -1"),
        (dict(n_boot=1.5), TypeError, r"^n_boot must be an int"),
        (dict(level=1.5), ValueError, r"^level must be in \(0, 1\)"),
        (dict(seed=-2), ValueError, r"^seed must be in \[0, 2\*\*64\)"),
        (dict(clip="x"), TypeError, r"^clip must be a bool or a non-negative float tolerance"),
    ]:
        with pytest.raises(exc, match=pattern):
            SmoothCalibrator(**params).fit(f, y)
