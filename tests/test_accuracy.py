"""The accuracy contract, checked against the exact direct-sum evaluator and closed forms: point masses,
discrete forecasts, two atoms at tiny σ, predictions far below every grid."""

import math
from fractions import Fraction

import numpy as np
import pytest
from conftest import synthetic
from exact import exact_smece, exact_smece_sigma
from scipy.special import expit, logit, ndtr

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


# --- Point masses and discrete forecasts: σ* exact and at once ----------------------------------

def atoms_limit(f, y, w=None):
    """Σ over distinct predictions of |Σ w(y − f)| / W: smECEσ once σ is far below every gap."""
    w = np.ones_like(f) if w is None else np.asarray(w, dtype=float)
    values, inverse = np.unique(f, return_inverse=True)
    sums = np.bincount(inverse, weights=w * (y - f), minlength=values.size)
    return np.abs(sums).sum() / w.sum()


@pytest.mark.parametrize("n", [10, 1000, 100_000])
def test_base_rate_model(n):
    y = np.random.default_rng(n).random(n) < 0.3
    f = np.full(n, y.mean())
    passes = _core.passes_over_rows()
    value = smoothece.smece(f, y)
    # One distinct prediction keeps its residual's mass under the reflected kernel: smECEσ = |Σ(y − f)|/n
    # for every σ, σ* included; in exact arithmetic on the doubles given, |k − n·f|/n (rounding: ~1e-16).
    k = int(y.sum())
    exact = abs(Fraction(k) - n * Fraction(float(f[0]))) / n
    assert abs(value - float(exact)) <= 1e-15
    assert _core.passes_over_rows() - passes == 2  # the pass, then one look at the distinct predictions


@pytest.mark.parametrize("layout", ["sorted", "signed zeros"])
def test_blocks_of_one_prediction(layout):
    # σ* below every grid: answered from one look at the distinct predictions, which counts
    # a block (512 rows) of one prediction at once. Sorted: most blocks hold one prediction,
    # one holds both; signed zeros: the prediction 0 as +0 and -0 (equal values, different
    # bits), which goes row by row.
    rng = np.random.default_rng(5)
    n = 5000
    y = np.zeros(n, dtype=bool)
    if layout == "sorted":
        f = np.where(np.arange(n) < 2600, 0.25, 0.75)
        y[rng.choice(2600, 651, replace=False)] = True  # one more than 0.25·2600
        y[2600 + rng.choice(2400, 1800, replace=False)] = True  # exactly 0.75·2400
        expected = 1 / n
    else:
        f = np.where(rng.random(n) < 0.5, 0.0, -0.0)
        y[rng.choice(n, 3, replace=False)] = True
        expected = 3 / n
    passes = _core.passes_over_rows()
    value = smoothece.smece(f, y)
    assert _core.passes_over_rows() - passes == 2  # the pass, then the distinct predictions
    assert value == pytest.approx(expected, rel=1e-12)
    assert value == pytest.approx(atoms_limit(f, y), rel=1e-12)


@pytest.mark.parametrize("weighted", [False, True])
def test_discrete_forecasts_below_every_grid(weighted):
    # Eleven forecasts over 2^17 rows in random order, each with the nearest
    # whole number of positives to f·rows (weighted: one weight per forecast),
    # so that σ* (~1e-5) lies below every grid and is answered from the atoms
    # of one hashing pass, on one or two threads (each its share of the rows).
    rng = np.random.default_rng(8)
    n = 2**17
    atom = rng.integers(0, 11, n)
    f = atom / 10.0
    y = np.zeros(n, dtype=bool)
    for a in range(11):
        rows = np.flatnonzero(atom == a)
        y[rows[:int(np.floor(a / 10.0 * rows.size + 0.5))]] = True
    per_atom = rng.lognormal(size=11) if weighted else np.ones(11)
    w = per_atom[atom] if weighted else None
    # Σ over forecasts of |w·(positives − rows·f)| / Σ w, in exact arithmetic on the doubles given.
    counts = [(int(np.sum(atom == a)), int(np.sum(y[atom == a]))) for a in range(11)]
    residual = [Fraction(float(per_atom[a])) * abs(k - m * Fraction(a / 10.0)) for a, (m, k) in enumerate(counts)]
    expected = float(sum(residual) / sum(Fraction(float(per_atom[a])) * m for a, (m, _) in enumerate(counts)))
    assert expected < 1e-4
    for threads in (1, 2):
        passes = _core.passes_over_rows()
        assert smoothece.smece(f, y, weights=w, threads=threads) == pytest.approx(expected, rel=1e-9)
        assert _core.passes_over_rows() - passes == 2  # the pass, then the hashing pass


@pytest.mark.parametrize("f, y, expected", [
    (np.full(10, 1e-300), np.zeros(10), 1e-300),
    (np.full(10, 0.3), np.array([1, 1, 1] + [0] * 7), 0.0),
    (np.full(4, 0.3), np.array([1, 1, 0, 0]), 0.2),
    (np.r_[np.zeros(50), np.ones(50)], np.r_[np.zeros(50), np.ones(50)], 0.0),
])
def test_point_masses(f, y, expected):
    assert smoothece.smece(f, y) == pytest.approx(expected, abs=1e-15)


@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("below", [0.1, 1e-12])
def test_residual_of_one_sign_over_several_atoms(weighted, below):
    # Three predictions, each `below` its rows' rate, labels mixed: every
    # atom's residual is positive, so smECEσ = Σ w(y − f)/W at every σ (a
    # positive kernel keeps the sign) and σ* is that value: 0.1 on the grid,
    # ~1e-12 below every grid (answered from the atoms).
    rates = np.array([0.3, 0.6, 0.9])
    f = np.repeat(rates - below, 100)
    y = np.concatenate([np.arange(100) < k for k in (30, 60, 90)])
    w = np.repeat([1.0, 2.5, 0.75], 100) if weighted else np.ones(f.size)
    atoms = [sum(Fraction(float(wi)) * (int(yi) - Fraction(float(fi))) for fi, yi, wi in zip(f[s], y[s], w[s]))
             for s in (slice(0, 100), slice(100, 200), slice(200, 300))]
    assert all(a > 0 for a in atoms)
    expected = float(sum(atoms) / sum(Fraction(float(wi)) for wi in w))
    value = smoothece.smece(f, y, weights=w if weighted else None)
    assert value == pytest.approx(expected, abs=1e-15)


def test_real_data_with_base_rate_predictions(solar, resnet):
    for f, y in [(resnet.f, resnet.y), (solar["DAFFS"].f, solar["DAFFS"].y)]:
        base = np.full(f.size, np.mean(y))
        assert smoothece.smece(base, y) == pytest.approx(abs(np.sum(y - base)) / f.size, abs=1e-15)


def test_discrete_forecasts_calibrated():
    rng = np.random.default_rng(4)
    f = rng.integers(0, 11, 2000) / 10.0
    y = rng.random(f.size) < f
    assert abs(smoothece.smece(f, y) - exact_smece(f, y)) <= 1e-6
    f = rng.integers(0, 11, 400_000) / 10.0
    y = rng.random(f.size) < f
    # Eleven atoms 0.1 apart do not interact below σ ≈ 0.005: σ* is their limit when it lies there.
    limit = atoms_limit(f, y)
    assert limit < 0.005
    assert smoothece.smece(f, y) == pytest.approx(limit, abs=1e-12)


def test_piled_at_zero_and_one_against_exact():
    rng = np.random.default_rng(6)
    f = np.r_[np.zeros(600), np.ones(600), rng.beta(2, 2, 800)]
    y = rng.random(f.size) < f
    assert abs(smoothece.smece(f, y) - exact_smece(f, y)) <= 1e-6


def test_crossing_model_against_exact():
    rng = np.random.default_rng(7)
    f = rng.beta(2, 2, 3000)
    y = rng.random(f.size) < expit(0.6 * logit(f))  # under-confident: the curve crosses the diagonal
    ours = smoothece.smece(f, y)
    assert abs(ours - exact_smece(f, y)) <= 1e-6
    assert smoothece.smece_sigma(f, y, 0.01) > ours  # σ matters here


# --- Any σ > 0, down to 1e-12 ---------------------------------------------------------------------

def two_atoms(a, b, d, sigma):
    """∫ |a φσ(t) + b φσ(t − d)| dt over ℝ for a > 0 > b: the root t0 of a φ(t) = −b φ(t − d) splits it."""
    t0 = d / 2 + sigma**2 * math.log(-a / b) / d
    left = a * ndtr(t0 / sigma) + b * ndtr((t0 - d) / sigma)  # ∫_{−∞}^{t0}
    right = (a + b) - left
    return abs(left) + abs(right)


@pytest.mark.parametrize("sigma", [1e-4, 1e-6, 1e-9, 1e-12])
def test_tiny_sigma_exact_for_clusters(sigma):
    # (The cluster is binned on a local grid of 16 nodes per σ: exact to the contract, ~3e-8 for point masses.)
    # Pairs of predictions σ apart (interacting) and isolated ones, away from 0 and 1.
    f = np.array([0.2, 0.2 + sigma, 0.5, 0.7, 0.7 + 2 * sigma])
    y = np.array([1, 0, 1, 1, 0])
    r = y - f
    d1, d2 = f[1] - f[0], f[4] - f[3]  # the doubles' own distances (σ and 2σ up to the spacing of doubles)
    expected = (two_atoms(r[0], r[1], d1, sigma) + abs(r[2]) + two_atoms(r[3], r[4], d2, sigma)) / f.size
    assert smoothece.smece_sigma(f, y, sigma) == pytest.approx(expected, abs=1e-7)


@pytest.mark.parametrize("sigma", [1e-3, 2e-4])
def test_small_sigma_against_exact_evaluator(sigma):
    f, y = synthetic("uniform", 120, seed=3)
    assert abs(smoothece.smece_sigma(f, y, sigma) - exact_smece_sigma(f, y, sigma)) <= 1e-6


def test_monotone_in_sigma_down_to_1e_12_with_the_right_limit():
    f, y = synthetic("calibrated", 1000, seed=2)
    sigmas = np.geomspace(1e-12, 1.0, 49)
    values = [smoothece.smece_sigma(f, y, s) for s in sigmas]
    assert all(b <= a + 1e-12 for a, b in zip(values, values[1:]))
    assert values[0] == pytest.approx(atoms_limit(f, y), abs=1e-12)


@pytest.mark.parametrize("n, sigma", [(2000, 5e-6), (20_000, 5e-7)])
def test_dense_data_below_every_grid_against_exact(n, sigma):
    # Gaps of 100σ on average: most predictions isolated, many in clusters of a few (n = 20000: beyond the
    # atoms the hashing pass collects, so the rows are sorted); the exact evaluator works cluster by cluster.
    rng = np.random.default_rng(8)
    f = rng.uniform(size=n)
    y = rng.random(f.size) < f
    assert abs(smoothece.smece_sigma(f, y, sigma) - exact_smece_sigma(f, y, sigma)) <= 1e-6


def test_rare_positives_among_predictions_near_zero_against_exact():
    # σ* ≈ 5e-5 needs 2^19 intervals for 60,000 rows: the second look goes to the rows' atoms,
    # not to grids finer than one interval a row (1e6 such rows: 1.0 s before, 0.2 s now; the
    # exact evaluator checks the atoms' answer).
    rng = np.random.default_rng(9)
    f = rng.random(60_000) * 1e-9
    y = np.zeros(f.size, dtype=bool)
    y[rng.choice(f.size, 3, replace=False)] = True
    assert smoothece.smece(f, y) == pytest.approx(exact_smece(f, y), rel=1e-6)
