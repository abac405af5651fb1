"""The accuracy contract, checked against the exact direct-sum evaluator."""

import numpy as np
import pytest
from conftest import synthetic
from exact import exact_smece, exact_smece_sigma

import smoothece
from smoothece import _core

SIGMAS = [0.002, 0.01, 0.05, 0.2, 1.0]


def tolerance(sigma):
    return 1e-5 if sigma < 0.01 else 1e-6


SYNTHETIC = [
    ("uniform", 1500),
    ("near0", 1500),
    ("near1", 1500),
    ("point_masses", 400),
    ("all_ones", 300),
    ("all_zeros", 300),
]
TINY = [
    (np.array([0.3]), np.array([1.0])),
    (np.array([0.0, 1.0]), np.array([1.0, 0.0])),
    (np.array([0.2, 0.9, 0.5]), np.array([0.0, 1.0, 1.0])),
    (np.array([1.0]), np.array([1.0])),  # zero residual: smECE = 0, σ* = 0
]
SOLAR_COLUMNS = ["DAFFS", "ASSA", "NJIT", "NOAA", "CLIM120", "GDAFFS", "SIDC", "AMOS", "NICT"]


def data_sets(solar, resnet):
    out = [(f"{kind}", *synthetic(kind, n)) for kind, n in SYNTHETIC]
    out += [(f"tiny{len(f)}_{i}", f, y) for i, (f, y) in enumerate(TINY)]
    out += [(col, solar[col].f, solar[col].y) for col in SOLAR_COLUMNS]
    # The exact evaluator is O(n · grid): a 3000-row sample of ResNet-34.
    pick = np.random.default_rng(3).choice(resnet.f.size, 3000, replace=False)
    out.append(("resnet34_sample", resnet.f[pick], resnet.y[pick]))
    return out


@pytest.fixture(scope="module")
def all_sets(solar, resnet):
    return data_sets(solar, resnet)


def test_smece_sigma_matches_exact_integral(all_sets):
    worst = {}
    for name, f, y in all_sets:
        for sigma in SIGMAS:
            err = abs(smoothece.smece_sigma(f, y, sigma) - exact_smece_sigma(f, y, sigma))
            worst[(name, sigma)] = err
            assert err <= tolerance(sigma), f"{name}, sigma={sigma}: error {err:.3g}"
    print("max |smece_sigma - exact| =", max(worst.values()))


def test_smece_matches_exact_fixpoint(all_sets):
    for name, f, y in all_sets:
        ours, exact = smoothece.smece(f, y), exact_smece(f, y)
        assert abs(ours - exact) <= 1e-6, f"{name}: {ours} vs exact {exact}"


def test_hand_derived_single_row():
    # r(t) = 0.7·K̃σ(t, 0.3) and K̃σ integrates to 1 over [0, 1]: smECEσ = 0.7 for every σ.
    for sigma in SIGMAS:
        assert smoothece.smece_sigma([0.3], [1], sigma) == pytest.approx(0.7, abs=1e-12)
    assert smoothece.smece([0.3], [1]) == pytest.approx(0.7, abs=1e-9)


def test_zero_residual_is_zero():
    assert smoothece.smece([0.0, 1.0, 1.0], [0, 1, 1]) == 0.0
    assert smoothece.smece_sigma([0.0, 1.0], [0, 1], 0.1) == 0.0


def test_weighted_matches_exact(solar):
    d = solar["DAFFS"]
    w = np.random.default_rng(5).exponential(size=d.f.size)
    for sigma in (0.01, 0.1):
        assert abs(smoothece.smece_sigma(d.f, d.y, sigma, weights=w) - exact_smece_sigma(d.f, d.y, sigma, w)) <= 1e-6
    assert abs(smoothece.smece(d.f, d.y, weights=w) - exact_smece(d.f, d.y, w)) <= 1e-6


def test_small_sigma_below_default_grid():
    # σ* below the default grid's resolution triggers a second, finer pass.
    f, y = synthetic("calibrated", 800, seed=11)
    for sigma in (0.0008, 0.0005):
        assert abs(smoothece.smece_sigma(f, y, sigma) - exact_smece_sigma(f, y, sigma)) <= 1e-5


def test_second_look_at_few_distinct_predictions_is_exact():
    # Two point masses whose residual sums almost cancel: σ* lies far below any
    # grid, and equals the lone non-zero residual sum / W (a lone atom keeps
    # its mass under the reflected kernel, for every σ). Hand-derived.
    delta = 1e-3
    f = np.array([0.3, 0.3, 0.7, 0.7])
    y = np.array([1, 0, 1, 0])
    w = np.array([3.0, 7.0 + delta, 7.0, 3.0])
    expected = 0.3 * delta / w.sum()
    passes = _core.passes_over_rows()
    assert smoothece.smece(f, y, weights=w) == pytest.approx(expected, abs=1e-16)  # rounding of 2.1 − 2.1003
    assert _core.passes_over_rows() - passes == 2  # the pass, then one hashing pass for the atoms
    for sigma in (1e-3, 1e-6, 1e-9, 1e-12):
        assert smoothece.smece_sigma(f, y, sigma, weights=w) == pytest.approx(expected, abs=1e-16)


def test_second_pass_on_a_finer_grid_when_fixpoint_is_below_the_first():
    # Many distinct predictions with a small residual mass next to a heavy
    # zero-residual row: σ* lies below the first grid (sized to n), so the rows
    # are binned again on the grid that σ* needs. Checked against the exact
    # evaluator; the weight of the zero-residual row scales the residuals.
    rng = np.random.default_rng(11)
    n = 20_000
    f = np.r_[rng.uniform(size=n), 0.0]
    y = np.r_[rng.uniform(size=n) < f[:n], False]
    w = np.r_[np.ones(n), 2e6]
    passes = _core.passes_over_rows()
    ours = smoothece.smece(f, y, weights=w)
    assert _core.passes_over_rows() - passes >= 3  # first grid, the hash gives up, a finer grid
    assert ours < 16 / 16384  # below what the first grid resolves
    assert abs(ours - exact_smece(f, y, w)) <= 1e-6




def test_large_residual_pass_on_the_coarser_first_grid():
    # From 5e6 rows a residual summary resolves 0.8 of calibrated data's
    # noise floor (2^14 intervals at 7e6 rows, where the diagram's full
    # summary keeps 2^15): calibrated data still needs one pass, and σ* agrees
    # with the one read off the finer grid far inside the accuracy contract.
    rng = np.random.default_rng(5)
    n = 7_000_000
    f = rng.beta(2, 2, n)
    y = rng.random(n) < f
    passes = _core.passes_over_rows()
    ours = smoothece.smece(f, y)
    assert _core.passes_over_rows() - passes == 1
    assert 16 / 2**14 < ours < 0.3 * n ** (-1 / 3) * 1.3  # resolved by the first grid, at the noise floor
    finer = smoothece.reliability_diagram(f, y, n_boot=0).smece  # a full summary: 2^15 intervals
    assert abs(ours - finer) <= 1e-8


# Where r̂σ grazes zero, it can dip to the other side between two read-off
# nodes (8 per σ): a dip of depth 7e-4 and width 0.012 here, found by a review
# (the pieces alone counted it with its sign: 1.3e-5 off, above the contract).
DIP_F = np.array([0.25] * 3 + [0.0] * 3 + [0.5] * 3)
DIP_Y = np.array([0, 0, 0, 1, 1, 1, 1, 0, 1])


@pytest.mark.parametrize("sigma", [0.1426, 0.1427, 0.14274])
def test_a_dip_between_read_nodes_counts(sigma):
    exact = exact_smece_sigma(DIP_F, DIP_Y, sigma)
    assert exact > abs(np.mean(DIP_Y - DIP_F)) + 1e-6  # the dip is there: |r| gains over |Σ r|
    assert smoothece.smece_sigma(DIP_F, DIP_Y, sigma) == pytest.approx(exact, abs=1e-7)
    sketch = smoothece.CalibrationSketch().update(DIP_F, DIP_Y)
    assert sketch.smece_sigma(sigma) == pytest.approx(exact, abs=1e-7)
    # on the grid (distinct predictions beyond the exact path's few atoms), same
    spread = np.r_[DIP_F, np.linspace(0.6, 1.0, 20000)]
    padded_w = np.r_[np.ones(DIP_F.size), np.zeros(20000)]
    assert smoothece.smece_sigma(spread, np.r_[DIP_Y, np.zeros(20000)], sigma, weights=padded_w) == pytest.approx(
        exact, abs=1e-7)


def test_the_fixpoint_near_a_dip():
    f = np.r_[[0.25325] * 3, [0.0] * 3, [0.5] * 3, [0.0] * 10]
    y = np.r_[0, 0, 0, 1, 1, 1, 1, 0, 1, [0] * 10]
    assert smoothece.smece(f, y) == pytest.approx(exact_smece(f, y), abs=1e-7)


@pytest.mark.parametrize("sigma", [0.3, 0.45, 0.5, 0.52, 2.0])
def test_large_sigma_on_two_rows(sigma):
    # 16 read-off intervals at σ = 0.5 put the root 1.3e-6 off; now at least 64
    f, y = np.array([0.1, 1.0]), np.array([1, 0])
    assert smoothece.smece_sigma(f, y, sigma) == pytest.approx(exact_smece_sigma(f, y, sigma), abs=1e-7)
