"""Weights (README, Weights): answers are scale-free from subnormal to near-overflow weights, rows of
weight zero are not rows, frequency weights resample like repeated rows while importance weights do
not, and the weighted calibration test keeps its size."""

import numpy as np
import pytest
from conftest import synthetic

import smoothece


@pytest.mark.parametrize("factor", [1e-310, 1e-300, 2.0**-1000, 1e300])
def test_weights_scale_invariant_down_to_subnormal(factor):
    f, y = synthetic("uniform", 1000, seed=5)
    w = np.random.default_rng(5).lognormal(0, 1, f.size)
    base = smoothece.smece(f, y, weights=w)
    assert smoothece.smece(f, y, weights=w * factor) == pytest.approx(base, rel=1e-9)
    unit = smoothece.smece(f, y)
    assert smoothece.smece(f, y, weights=np.full(f.size, 5e-324)) == pytest.approx(unit, rel=1e-12)


def test_huge_weights_do_not_overflow():
    assert smoothece.smece([0.5, 0.5], [1, 0], weights=[1.5e308, 1.5e308]) == pytest.approx(0.0, abs=1e-15)
    assert smoothece.smece([0.25, 0.5], [1, 0], weights=[1.5e308, 1.5e308]) > 0


def test_resampling_replicates_invariant_to_scaling():
    f, y = synthetic("calibrated", 3000, seed=9)
    k = np.random.default_rng(9).integers(1, 9, f.size).astype(float)
    a = smoothece.bootstrap_smece(f, y, weights=k, n_boot=50, seed=3)
    b = smoothece.bootstrap_smece(f, y, weights=k * 2.0**-1070, n_boot=50, seed=3)  # exact subnormals
    np.testing.assert_array_equal(a.replicates, b.replicates)
    # rounded weights: equal to the replicates' precision
    c = smoothece.bootstrap_smece(f, y, weights=k * 0.37, n_boot=50, seed=3)
    np.testing.assert_allclose(a.replicates, c.replicates, rtol=1e-6)


def test_zero_weight_rows_are_not_rows():
    f, y = synthetic("calibrated", 2000, seed=10)
    w = np.random.default_rng(10).lognormal(0, 1, f.size)
    padded_f = np.r_[f, np.random.default_rng(1).uniform(size=5000)]
    padded_y = np.r_[y, np.ones(5000)]
    padded_w = np.r_[w, np.zeros(5000)]
    a = smoothece.calibration_test(f, y, weights=w, n_sim=100, seed=4)
    b = smoothece.calibration_test(padded_f, padded_y, weights=padded_w, n_sim=100, seed=4)
    assert a.statistic == pytest.approx(b.statistic, abs=1e-8)  # the first grid follows the row count
    assert abs(np.median(a.null) - np.median(b.null)) < 0.2 * np.median(a.null)


def test_frequency_weights_resample_like_repeated_rows():
    rng = np.random.default_rng(12)
    f = rng.beta(2, 2, 3000)
    y = rng.random(f.size) < f**1.3
    k = rng.integers(1, 4, f.size)
    freq = smoothece.bootstrap_smece(f, y, weights=k.astype(float), n_boot=400, seed=1, weight_kind="frequency")
    repeated = smoothece.bootstrap_smece(np.repeat(f, k), np.repeat(y, k), n_boot=400, seed=2)
    importance = smoothece.bootstrap_smece(f, y, weights=k.astype(float), n_boot=400, seed=3)
    assert freq.value == pytest.approx(repeated.value, abs=1e-12)
    sd_freq, sd_rep, sd_imp = (np.std(r.replicates) for r in (freq, repeated, importance))
    assert abs(sd_freq / sd_rep - 1) < 0.15  # a weight counts rows
    assert sd_imp > 1.2 * sd_rep  # a row is a unit: fewer units, more spread


def test_weighted_calibration_test_has_its_size():
    # A small version of bench/size.py: calibrated data, lognormal and 75%-zero weights.
    rng = np.random.default_rng(13)
    rejected = {"lognormal": 0, "zeros": 0}
    trials = 40
    for t in range(trials):
        f = rng.beta(2, 2, 1500)
        y = rng.random(f.size) < f
        w = rng.lognormal(0, 1, f.size)
        for kind in rejected:
            ww = w * (rng.random(f.size) >= 0.75) if kind == "zeros" else w
            rejected[kind] += smoothece.calibration_test(f, y, weights=ww, n_sim=100, seed=t).p_value <= 0.05
    for kind, count in rejected.items():
        assert count <= 6, (kind, count)  # 5% of 40 is 2; today's bug rejected 17 and 24
