"""Cross-checks with the pure-numpy reference (Algorithms 1–2) and with relplot 1.0.3."""

import warnings

import numpy as np
import pytest
from conftest import synthetic
from exact import exact_smece

import smoothece
from smoothece import reference

# relplot is in the test extras so that this runs in CI; it is not exact (see below).
relplot = pytest.importorskip("relplot")


@pytest.mark.parametrize("kind", ["uniform", "near0", "calibrated", "point_masses"])
def test_reference_agrees_within_its_discretization_error(kind):
    # The reference rounds to the nearest of M + 1 = 1000/σ nodes: first-order
    # error, measured ≤ 3e-6 on such data against the exact evaluator.
    f, y = synthetic(kind, 2000, seed=21)
    for sigma in (0.005, 0.02, 0.1, 0.5):
        assert abs(smoothece.smece_sigma(f, y, sigma) - reference.smece_sigma(f, y, sigma)) <= 1e-5
    assert abs(smoothece.smece(f, y) - reference.smece(f, y)) <= 5e-6


def test_reference_on_real_columns(solar):
    for col in ("DAFFS", "ASSA", "NJIT"):
        d = solar[col]
        assert abs(smoothece.smece(d.f, d.y) - reference.smece(d.f, d.y)) <= 5e-6


def _relplot_smece(f, y):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # relplot's own deprecation warnings
        return float(relplot.smECE(np.asarray(f, dtype=float), np.asarray(y, dtype=float)))


@pytest.mark.parametrize("col", ["DAFFS", "NOAA", "CLIM120", "GDAFFS", "SIDC"])
def test_relplot_agrees_where_it_is_accurate(solar, col):
    d = solar[col]
    assert abs(smoothece.smece(d.f, d.y) - _relplot_smece(d.f, d.y)) <= 3e-3


def test_relplot_agrees_on_resnet34(resnet):
    assert abs(smoothece.smece(resnet.f, resnet.y) - _relplot_smece(resnet.f, resnet.y)) <= 3e-3


@pytest.mark.parametrize("col, relplot_error", [("ASSA", 4e-3), ("NJIT", 2.8e-2)])
def test_where_relplot_is_off_the_exact_value_decides(solar, col, relplot_error):
    # relplot differs here for reasons of its own (README, "Comparison with relplot"):
    # ASSA has 178 forecasts at exactly 0, whose mirror image relplot's wrap
    # does not add (half their mass is lost); NJIT's σ* ≈ 0.42 and relplot
    # cuts its kernel at ±0.5 without renormalising.
    d = solar[col]
    ours, exact, theirs = smoothece.smece(d.f, d.y), exact_smece(d.f, d.y), _relplot_smece(d.f, d.y)
    assert abs(ours - exact) <= 1e-6
    assert abs(theirs - exact) >= relplot_error  # the documented discrepancy is real


def test_a_mass_at_an_endpoint_is_its_own_mirror_image():
    # One forecast of 0 that came true: the exact smECEσ is 1 for every σ
    # (K̃σ(t, 0) = 2 Σ φσ(t − 2k) integrates to 1 over [0, 1]).
    for sigma in (0.05, 0.2):
        assert smoothece.smece_sigma([0.0], [1], sigma) == pytest.approx(1.0, abs=1e-12)
        assert smoothece.smece_sigma([1.0], [0], sigma) == pytest.approx(1.0, abs=1e-12)


def test_relplot_logit_bandwidth_is_four_of_ours():
    # relplot's logit kernel (config.use_logit_scaling) maps logits onto [0, 1] by their range R and
    # smooths there with σ·4/R: a Gaussian of 4σ logit units, where ours has σ. Its smECEσ is ours at
    # 4σ (up to its 200-point mesh, on predictions inside its [0.001, 0.999] clip), and its SmoothECE is
    # ours at 4w, w its bisection's fixpoint of s ↦ smECE_4s: not our σ* (the fixpoint of σ ↦ smECEσ).
    rng = np.random.default_rng(5)
    z = rng.normal(0.0, 1.0, 5000)
    f = 1.0 / (1.0 + np.exp(-z))
    y = (rng.random(z.size) < 1.0 / (1.0 + np.exp(-3.0 * z))).astype(float)  # over-confident: crossing residual
    config = relplot.config
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        config.use_logit_scaling = True
        try:
            at = {s: float(relplot.smECE_sigma(f, y, s)) for s in (0.01, 0.03, 0.1)}
            theirs, width = relplot.smECE(f, y, return_width=True)
        finally:
            config.use_logit_scaling = False
    for s, value in at.items():
        assert abs(value - smoothece.smece_sigma(f, y, 4 * s, metric="logit")) <= 3e-5
    assert abs(at[0.1] - smoothece.smece_sigma(f, y, 0.1, metric="logit")) > 0.02  # σ itself: far off
    assert abs(theirs - smoothece.smece_sigma(f, y, 4 * width, metric="logit")) <= 3e-5
    ours = smoothece.smece(f, y, metric="logit")
    assert ours - theirs > 0.02  # 0.1503 against relplot's 0.1235: different definitions of σ*
