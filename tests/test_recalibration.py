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
    np.testing.assert_allclose(free.predict(grid.astype(np.float32)), free.predict(grid.astype(np.float32).astype(float)))
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
    assert repr(c).startswith("SmoothCalibrator(sigma=0.05, monotone=True, method='residual'")
    assert c.fit(f, y) is c and c.sigma_ == 0.05
    with pytest.raises(ValueError, match=r"invalid parameter 'bandwidth' for SmoothCalibrator"):
        c.set_params(bandwidth=1)


def test_sklearn_pipeline():
    pipeline = pytest.importorskip("sklearn.pipeline")
    preprocessing = pytest.importorskip("sklearn.preprocessing")
    base = pytest.importorskip("sklearn.base")
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
    clone = base.clone(SmoothCalibrator(sigma=0.1, monotone=True))
    assert clone.get_params()["sigma"] == 0.1 and not hasattr(clone, "curve_")
    from sklearn.utils.validation import check_is_fitted

    from sklearn.exceptions import NotFittedError as SklearnNotFitted

    check_is_fitted(direct)
    with pytest.raises(SklearnNotFitted):
        check_is_fitted(SmoothCalibrator())


def test_sklearn_is_not_imported():
    import subprocess
    import sys

    code = "import sys, smoothece.recalibration, smoothece.measures; print('sklearn' in sys.modules)"
    assert subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()[-1] == "False"


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
