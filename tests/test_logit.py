"""The logit metric: exact against a direct sum, monotone, and a fixpoint."""

import numpy as np
import pytest
from conftest import synthetic
from exact_logit import exact_smece_logit, exact_smece_sigma_logit

import smoothece


@pytest.fixture(scope="module")
def data_sets(solar, resnet):
    pick = np.random.default_rng(2).choice(resnet.f.size, 1500, replace=False)
    return [
        ("near1", *synthetic("near1", 1500, seed=3)),
        ("point_masses", *synthetic("point_masses", 400, seed=4)),
        ("DAFFS", solar["DAFFS"].f, solar["DAFFS"].y),
        ("ASSA", solar["ASSA"].f, solar["ASSA"].y),
        ("resnet34_sample", resnet.f[pick], resnet.y[pick]),
    ]


def test_logit_smece_sigma_matches_direct_sum(data_sets):
    for name, f, y in data_sets:
        for sigma in (0.05, 0.2, 1.0, 3.0):
            ours = smoothece.smece_sigma(f, y, sigma, metric="logit")
            exact = exact_smece_sigma_logit(f, y, sigma)
            assert abs(ours - exact) <= 1e-6, (name, sigma, ours, exact)


def test_logit_fixpoint_matches_direct_sum(data_sets):
    # g(σ) = exact smECEσ − σ is strictly decreasing, so a sign change of g
    # across [ours − 1e-6, ours + 1e-6] puts the exact fixpoint within 1e-6.
    for name, f, y in data_sets:
        ours = smoothece.smece(f, y, metric="logit")
        assert exact_smece_sigma_logit(f, y, ours - 1e-6) > ours - 1e-6, name
        assert exact_smece_sigma_logit(f, y, ours + 1e-6) < ours + 1e-6, name
        assert smoothece.smece_sigma(f, y, ours, metric="logit") == pytest.approx(ours, abs=1e-8)


def test_logit_non_increasing_in_sigma(solar):
    d = solar["NOAA"]
    values = [smoothece.smece_sigma(d.f, d.y, s, metric="logit") for s in np.geomspace(0.01, 5, 30)]
    assert np.all(np.diff(values) <= 1e-12)


def test_logit_weights_and_endpoints():
    # Rows at exactly 0 and 1 are allowed (clamped to logit ∓27.63).
    f = np.array([0.0, 1.0, 0.3, 0.8])
    y = np.array([1, 1, 0, 1])
    w = np.array([1.0, 2.0, 0.5, 1.0])
    assert abs(smoothece.smece_sigma(f, y, 0.3, weights=w, metric="logit")
               - exact_smece_sigma_logit(f, y, 0.3, w)) <= 1e-6
    assert smoothece.smece(f, y, weights=w, metric="logit") == pytest.approx(exact_smece_logit(f, y, w), abs=1e-6)


def test_predictions_clamped_together_are_one_position():
    # Distinct predictions below 1e-12 (and above 1 − 1e-12) share one logit position; rows are grouped by
    # prediction and then by position (one atom: ctest atoms_of_clamped_predictions_are_one_position), so
    # their residuals add there, each with its own f. Few distinct values: σ* comes from these atoms.
    f = np.repeat([0.0, 1e-15, 3e-13, 1e-12, 0.2, 0.7, 1 - 1e-13, 1.0], [40, 30, 20, 10, 200, 200, 30, 40])
    y = np.random.default_rng(8).random(f.size) < np.clip(f + 0.1, 0, 1)
    w = np.random.default_rng(9).lognormal(0, 1, f.size)
    for weights in (None, w):
        assert smoothece.smece(f, y, weights=weights, metric="logit") == pytest.approx(
            exact_smece_logit(f, y, weights), abs=1e-9)
        for sigma in (0.01, 0.3):
            assert abs(smoothece.smece_sigma(f, y, sigma, weights=weights, metric="logit")
                       - exact_smece_sigma_logit(f, y, sigma, weights)) <= 1e-9
        # The same rows with every clamped prediction moved to the clamp: the same positions, other residuals.
        g = np.clip(f, 1e-12, 1 - 1e-12)
        assert smoothece.smece(g, y, weights=weights, metric="logit") == pytest.approx(
            exact_smece_logit(g, y, weights), abs=1e-9)


def test_bad_metric():
    with pytest.raises(ValueError, match="metric must be 'l1' or 'logit'"):
        smoothece.smece([0.5], [1], metric="log")
