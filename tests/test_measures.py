"""Companion measures (smoothece.measures): hand computations, independent numpy
computations on the shared data, the debiased estimator's unbiasedness, the exact
Laplace-kernel error against a direct double sum, relplot's randomized interval
error, and the input contract."""

import re

import numpy as np
import pytest

from smoothece import measures as M

NORMS = ("l1", "l2", "max")
STRATEGIES = ("uniform", "quantile")


# ----------------------------------------------------------------------------------
# Independent references written for the tests (loops over bins, np.digitize, np.unique)
# ----------------------------------------------------------------------------------

def ref_bins(f, w, n_bins, strategy):
    if strategy == "uniform":
        # floor(f·n) for f·n in [0, n), and f = 1 in the last bin.
        return np.digitize(f * n_bins, np.arange(1, n_bins))
    values, inverse = np.unique(f, return_inverse=True)
    group_weight = np.bincount(inverse, weights=w)
    mid = np.cumsum(group_weight) - group_weight / 2
    group_bin = np.minimum((n_bins * mid / group_weight.sum()).astype(int), n_bins - 1)
    return group_bin[inverse]


def ref_binned(f, y, w, n_bins, strategy):
    """(weight, mean f, mean y) of each non-empty bin, one Python iteration per bin."""
    w = np.ones_like(f) if w is None else w
    b = ref_bins(f, w, n_bins, strategy)
    out = []
    for k in range(n_bins):
        m = b == k
        if w[m].sum() > 0:
            out.append((w[m].sum(), np.average(f[m], weights=w[m]), np.average(y[m], weights=w[m])))
    return np.array(out), w.sum()


def ref_ece(f, y, w, n_bins, strategy, norm):
    bins, total = ref_binned(f, y, w, n_bins, strategy)
    wb, mf, my = bins.T
    if norm == "l1":
        return np.sum(wb * np.abs(my - mf)) / total
    if norm == "l2":
        return np.sqrt(np.sum(wb * (my - mf) ** 2) / total)
    return np.max(np.abs(my - mf))


def ref_debiased_squared(f, y, w, n_bins, strategy):
    w = np.ones_like(f) if w is None else w
    b = ref_bins(f, w, n_bins, strategy)
    total = 0.0
    for k in range(n_bins):
        m = (b == k) & (w > 0)
        if m.sum() < 2:
            continue
        wk = w[m]
        mf, my = np.average(f[m], weights=wk), np.average(y[m], weights=wk)
        n_eff = wk.sum() ** 2 / np.sum(wk**2)
        total += wk.sum() * ((my - mf) ** 2 - my * (1 - my) / (n_eff - 1))
    return total / w.sum()


def direct_laplace(f, y, w, h):
    """sqrt((1/h) Σ_ij a_i a_j exp(−|f_i − f_j|/h)), a = w (f − y)/W, by the O(n²) double sum."""
    w = np.ones_like(f) if w is None else w
    a = w * (f - y) / w.sum()
    k = np.exp(-np.abs(f[:, None] - f[None, :]) / h)
    return np.sqrt(max(a @ k @ a, 0.0) / h), np.abs(a) @ k @ np.abs(a) / h


@pytest.fixture(scope="module")
def shared(solar, resnet):
    rng = np.random.default_rng(7)
    daffs = solar["DAFFS"]
    return {
        "DAFFS": (daffs.f, daffs.y.astype(np.float64), rng.exponential(size=daffs.f.size)),
        "resnet": (resnet.f, resnet.y.astype(np.float64), rng.exponential(size=resnet.f.size)),
    }


# ----------------------------------------------------------------------------------
# Binned ECE
# ----------------------------------------------------------------------------------

def test_binned_ece_by_hand():
    # n_bins = 10: 0.05 → bin 0, 0.15 → 1, 0.25 → 2, 0.95 and 1.0 → 9 (1.0 goes to the last bin).
    f = np.array([0.05, 0.15, 0.25, 0.95, 1.0])
    y = np.array([0, 0, 1, 1, 0])
    # bin 9: mean f = 0.975, mean y = 0.5, gap 0.475 on 2 rows.
    assert M.binned_ece(f, y, n_bins=10) == pytest.approx((0.05 + 0.15 + 0.75 + 2 * 0.475) / 5, abs=1e-15)
    l2 = np.sqrt((0.05**2 + 0.15**2 + 0.75**2 + 2 * 0.475**2) / 5)
    assert M.binned_ece(f, y, n_bins=10, norm="l2") == pytest.approx(l2, abs=1e-15)
    assert M.binned_ece(f, y, n_bins=10, norm="max") == pytest.approx(0.75, abs=1e-15)
    # With f = 1.0 in an extra bin of its own (torchmetrics 1.9) the L1 value would be
    # (0.05 + 0.15 + 0.75 + 0.05 + 1.0)/5 = 0.4, not 0.38.
    # Weights 1,1,1,1,3: bin 9 has weight 4, mean f (0.95 + 3)/4 = 0.9875, mean y 1/4.
    w = np.array([1.0, 1, 1, 1, 3])
    assert M.binned_ece(f, y, n_bins=10, weights=w) == pytest.approx((0.05 + 0.15 + 0.75 + 4 * 0.7375) / 7, abs=1e-15)
    # One bin: |mean y − mean f|.
    assert M.binned_ece(f, y, n_bins=1) == pytest.approx(abs(0.4 - 2.4 / 5), abs=1e-15)


def test_quantile_bins_by_hand():
    # Four rows, two equal-mass bins: {0.1, 0.2} and {0.3, 0.4}.
    f = np.array([0.4, 0.1, 0.3, 0.2])
    y = np.array([1, 0, 1, 1])
    b = M.binned_calibration(f, y, n_bins=2, strategy="quantile")
    np.testing.assert_array_equal(b.count, [2, 2])
    np.testing.assert_allclose(b.mean_f, [0.15, 0.35])
    np.testing.assert_allclose(b.mean_y, [0.5, 1.0])
    np.testing.assert_allclose(b.edges, [0.0, 0.25, 1.0])
    assert M.binned_ece(f, y, n_bins=2, strategy="quantile") == pytest.approx((2 * 0.35 + 2 * 0.65) / 4)
    # Ties never split: three rows at 0.2 (cumulative weight [0, 3], midpoint 1.5) and one at 0.9
    # (midpoint 3.5). With 4 bins they land in bins floor(4·1.5/4) = 1 and floor(4·3.5/4) = 3.
    f = np.array([0.2, 0.9, 0.2, 0.2])
    y = np.array([0, 1, 1, 0])
    b = M.binned_calibration(f, y, n_bins=4, strategy="quantile")
    np.testing.assert_array_equal(b.count, [0, 3, 0, 1])
    np.testing.assert_allclose(b.edges, [0.0, 0.0, 0.55, 0.55, 1.0])
    assert np.isnan(b.mean_f[0]) and np.isnan(b.mean_y[2])
    np.testing.assert_allclose(b.gap[[1, 3]], [1 / 3 - 0.2, 0.1])
    assert b.ece("l1") == pytest.approx((3 * abs(1 / 3 - 0.2) + 0.1) / 4)
    assert b.ece("max") == pytest.approx(abs(1 / 3 - 0.2))
    # Row order never matters.
    perm = np.array([3, 1, 0, 2])
    assert M.binned_ece(f[perm], y[perm], n_bins=4, strategy="quantile") == b.ece()


@pytest.mark.parametrize("data", ["DAFFS", "resnet"])
@pytest.mark.parametrize("strategy", STRATEGIES)
@pytest.mark.parametrize("weighted", [False, True])
def test_binned_ece_matches_independent_computation(shared, data, strategy, weighted):
    f, y, w = shared[data]
    w = w if weighted else None
    for norm in NORMS:
        for n_bins in (1, 10, 15, 37):
            got = M.binned_ece(f, y, n_bins=n_bins, strategy=strategy, norm=norm, weights=w)
            assert got == pytest.approx(ref_ece(f, y, w, n_bins, strategy, norm), abs=1e-9), (norm, n_bins)
    b = M.binned_calibration(f, y, n_bins=15, strategy=strategy, weights=w)
    bins, total = ref_binned(f, y, w, 15, strategy)
    filled = b.weight > 0
    np.testing.assert_allclose(b.weight[filled], bins[:, 0], rtol=1e-12)
    np.testing.assert_allclose(b.mean_f[filled], bins[:, 1], atol=1e-12)
    np.testing.assert_allclose(b.mean_y[filled], bins[:, 2], atol=1e-12)
    assert b.count.sum() == f.size and b.total_weight == pytest.approx(total)
    # Each bin's predictions lie within its edges.
    idx = ref_bins(f, np.ones_like(f) if w is None else w, 15, strategy)
    assert np.all(f >= b.edges[idx] - 1e-12) and np.all(f <= b.edges[idx + 1] + 1e-12)


def test_binned_calibration_result():
    f = np.array([0.05, 0.15, 0.25, 0.95, 1.0])
    b = M.binned_calibration(f, [0, 0, 1, 1, 0], n_bins=10)
    np.testing.assert_allclose(b.edges, np.linspace(0, 1, 11))
    np.testing.assert_array_equal(b.count, [1, 1, 1, 0, 0, 0, 0, 0, 0, 2])
    assert np.isnan(b.mean_f[3]) and b.weight[3] == 0 and not b.filled[3]
    assert b.ece("l2") == M.binned_ece(f, [0, 0, 1, 1, 0], n_bins=10, norm="l2")
    assert re.fullmatch(r"BinnedCalibration\(strategy='uniform', n_bins=10, filled=4, n=5, total_weight=5, "
                        r"ece_l1=0\.38\)", repr(b))
    with pytest.raises(Exception):
        b.n_bins = 3  # frozen
    with pytest.raises(ValueError):
        b.count[0] = 7  # read-only arrays


def test_integer_weights_equal_repeated_rows_and_dtypes(shared):
    f, y, _ = shared["DAFFS"]
    reps = np.random.default_rng(1).integers(0, 4, size=f.size)
    for strategy in STRATEGIES:
        a = M.binned_ece(f, y, strategy=strategy, weights=reps.astype(float))
        b = M.binned_ece(np.repeat(f, reps), np.repeat(y, reps), strategy=strategy)
        assert a == pytest.approx(b, abs=1e-14)
    # float32 predictions and bool/int8 labels give the result of their float64 values.
    f32 = f.astype(np.float32)
    assert M.binned_ece(f32, y.astype(bool)) == M.binned_ece(f32.astype(np.float64), y)
    assert M.binned_ece(f, y.astype(np.int8), norm="l2") == M.binned_ece(f, y, norm="l2")


def test_clip_opt_in(solar):
    d = solar["MCEVOL"]  # issues -0.01
    with pytest.raises(ValueError, match=r"^f\[\d+\] = -0\.01: predictions must be finite and in \[0, 1\]"):
        M.binned_ece(d.f, d.y)
    clamped = np.clip(d.f, 0, 1)
    assert M.binned_ece(d.f, d.y, clip=0.02) == M.binned_ece(clamped, d.y)
    assert M.laplace_kernel_ce(d.f, d.y, clip=True) == M.laplace_kernel_ce(clamped, d.y)
    with pytest.raises(ValueError, match=r"in \[-0\.001, 1\.001\] \(the clip tolerance\)"):
        M.debiased_ece(d.f, d.y, clip=0.001)


def test_binned_ece_upper_is_relplots_binnedECEw(shared):
    metrics = pytest.importorskip("relplot.metrics")
    for data in ("DAFFS", "resnet"):
        f, y, _ = shared[data]
        for n_bins in (5, 10, 20):
            assert M.binned_ece_upper(f, y, n_bins) == pytest.approx(metrics.binnedECEw(f, y, n_bins), abs=1e-12)
            assert (M.binned_ece_upper(f, y, n_bins=n_bins)
                    == pytest.approx(M.binned_ece(f, y, n_bins=n_bins) + 1 / n_bins))


# ----------------------------------------------------------------------------------
# Debiased L2 estimator
# ----------------------------------------------------------------------------------

@pytest.mark.parametrize("strategy", STRATEGIES)
def test_debiased_matches_formula(shared, strategy):
    for data in ("DAFFS", "resnet"):
        f, y, w = shared[data]
        for weights in (None, w):
            sq = ref_debiased_squared(f, y, weights, 15, strategy)
            assert (M.debiased_ece(f, y, strategy=strategy, weights=weights, squared=True)
                    == pytest.approx(sq, abs=1e-12))
            assert (M.debiased_ece(f, y, strategy=strategy, weights=weights)
                    == pytest.approx(np.sqrt(max(sq, 0)), abs=1e-12))
    # Unit weights are the unweighted estimator; a bin with one row contributes nothing.
    f, y, _ = shared["DAFFS"]
    assert M.debiased_ece(f, y, weights=np.full(f.size, 2.5)) == pytest.approx(M.debiased_ece(f, y), abs=1e-15)
    assert M.debiased_ece([0.1, 0.5, 0.55], [1, 0, 1], n_bins=2, squared=True) == pytest.approx(
        2 / 3 * ((0.5 - 0.525) ** 2 - 0.25 / 1))


def test_debiased_matches_uncertainty_calibration(shared):
    utils = pytest.importorskip("calibration.utils")  # Kumar et al.'s package (pip install uncertainty-calibration)
    f, y, _ = shared["resnet"]
    f, y = f[:5000], y[:5000].astype(int)
    assert not np.isin(f * 15, np.arange(16)).any()  # their bins are right-closed; ours left-closed
    binned = utils.bin(list(zip(f, y)), utils.get_equal_prob_bins(f, 15))
    assert M.debiased_ece(f, y) == pytest.approx(utils.unbiased_l2_ce(binned), abs=1e-12)
    assert M.binned_ece(f, y, norm="l2") == pytest.approx(utils.plugin_ce(binned, power=2), abs=1e-12)


def test_debiased_is_unbiased_where_the_truth_is_known():
    """f on the 15 bin centres, P(y = 1 | f) = f + δ: the true binned L2 error is δ exactly.

    Over 400 simulated data sets of 1500 rows the debiased squared estimate averages to δ²
    within Monte Carlo error; the plug-in squared L2 error is biased upward by about
    Σ_b p_b(1 − p_b)/n (here ~ 1.1e-3, as large as δ² itself)."""
    n_bins, n, sims, delta = 15, 1500, 400, 0.03
    rng = np.random.default_rng(2024)
    centres = (np.arange(n_bins) + 0.5) / n_bins
    f = centres[rng.integers(0, n_bins, size=(sims, n))]
    y = (rng.uniform(size=(sims, n)) < f + delta).astype(np.int8)
    debiased = np.array([M.debiased_ece(f[s], y[s], squared=True) for s in range(sims)])
    plugin = np.array([M.binned_ece(f[s], y[s], norm="l2") ** 2 for s in range(sims)])
    se = debiased.std(ddof=1) / np.sqrt(sims)
    assert abs(debiased.mean() - delta**2) < 3 * se
    expected_bias = np.mean((centres + delta) * (1 - centres - delta)) * n_bins / n
    assert plugin.mean() - delta**2 == pytest.approx(expected_bias, rel=0.15)
    assert plugin.mean() - delta**2 > 10 * se
    # On the root scale sqrt(max(E², 0)) is no longer unbiased (Jensen, and the clip at 0), but it
    # stays far closer to δ than the plug-in error does.
    roots = np.array([M.debiased_ece(f[s], y[s]) for s in range(sims)])
    plugin_roots = np.sqrt(plugin)
    assert plugin_roots.mean() > 1.4 * delta
    assert abs(roots.mean() - delta) < 0.4 * abs(plugin_roots.mean() - delta)


# ----------------------------------------------------------------------------------
# Brier score
# ----------------------------------------------------------------------------------

@pytest.mark.parametrize("strategy", STRATEGIES)
def test_brier_binned_identity(shared, strategy):
    for data in ("DAFFS", "resnet"):
        f, y, w = shared[data]
        for weights in (None, w):
            d = M.brier_decomposition(f, y, weights=weights, strategy=strategy)
            ww = np.ones_like(f) if weights is None else weights
            assert d.brier == pytest.approx(np.average((f - y) ** 2, weights=ww), abs=1e-14)
            base = np.average(y, weights=ww)
            assert d.base_rate == pytest.approx(base) and d.uncertainty == pytest.approx(base * (1 - base))
            assert d.reliability == pytest.approx(
                M.binned_ece(f, y, strategy=strategy, weights=weights, norm="l2") ** 2)
            bins, total = ref_binned(f, y, weights, 15, strategy)
            assert d.resolution == pytest.approx(np.sum(bins[:, 0] * (bins[:, 2] - base) ** 2) / total, abs=1e-13)
            # Exact with the within-bin term; not without it.
            assert d.brier == pytest.approx(d.reliability - d.resolution + d.uncertainty + d.remainder, abs=1e-13)
            assert abs(d.remainder) > 1e-6


def test_brier_by_hand():
    # Two bins of two rows (n_bins = 2): {0.1 → 0, 0.3 → 1} and {0.6 → 1, 0.8 → 1}.
    d = M.brier_decomposition([0.1, 0.3, 0.6, 0.8], [0, 1, 1, 1], n_bins=2)
    assert d.brier == pytest.approx((0.01 + 0.49 + 0.16 + 0.04) / 4)
    assert d.reliability == pytest.approx(((0.2 - 0.5) ** 2 + (0.7 - 1.0) ** 2) / 2)
    assert d.resolution == pytest.approx(((0.5 - 0.75) ** 2 + (1 - 0.75) ** 2) / 2)
    assert d.uncertainty == pytest.approx(0.75 * 0.25)
    # within-bin: mean (f − f̄)² − 2 mean (f − f̄)(y − ȳ) = 0.01 − 2·(−0.1·−0.5 + 0.1·0.5)/4
    assert d.remainder == pytest.approx(0.01 - 2 * 0.1 / 4)
    assert d.method == "binned" and d.n_bins == 2 and d.sigma is None
    assert repr(d).startswith("BrierDecomposition(brier=0.175, reliability=0.09, resolution=0.0625")


def test_brier_smooth(shared):
    import smoothece

    f, y, w = shared["DAFFS"]
    for weights in (None, w):
        d = M.brier_decomposition(f, y, weights=weights, smooth=True)
        diag = smoothece.reliability_diagram(f, y, weights=weights, n_boot=0)
        assert not np.isnan(diag.mu).any()
        g = np.interp(f, diag.mesh, diag.mu)
        ww = np.ones_like(f) if weights is None else weights
        base = np.average(y, weights=ww)
        assert d.reliability == pytest.approx(np.average((f - g) ** 2, weights=ww), abs=1e-14)
        assert d.resolution == pytest.approx(np.average((g - base) ** 2, weights=ww), abs=1e-14)
        assert d.sigma == pytest.approx(diag.sigma) and d.method == "smooth" and d.n_bins is None
        assert d.brier == pytest.approx(np.average((f - y) ** 2, weights=ww), abs=1e-14)
        assert d.remainder == pytest.approx(2 * np.average((f - base) * (g - y), weights=ww), abs=1e-14)
        assert d.brier == pytest.approx(d.reliability - d.resolution + d.uncertainty + d.remainder, abs=1e-14)
    # One prediction for every row: μ̂ is the base rate everywhere and the remainder vanishes.
    y1 = np.r_[np.ones(30), np.zeros(70)]
    one = M.brier_decomposition(np.full(100, 0.4), y1, smooth=True)
    assert one.remainder == pytest.approx(0.0, abs=1e-15)
    assert (one.brier, one.reliability, one.resolution) == pytest.approx((0.4**2 * 0.7 + 0.6**2 * 0.3, 0.01, 0.0))
    # Calibrated data: small smoothed reliability term.
    rng = np.random.default_rng(3)
    f = rng.uniform(size=20000)
    y = rng.uniform(size=f.size) < f
    assert M.brier_decomposition(f, y, smooth=True).reliability < 2e-4


# ----------------------------------------------------------------------------------
# Laplace kernel
# ----------------------------------------------------------------------------------

@pytest.mark.parametrize("h", [2.0, 1.0, 0.1, 0.01, 1e-3, 1e-4, 1e-5])
def test_laplace_exact_equals_double_sum(h):
    rng = np.random.default_rng(11)
    n = 2000
    f = rng.beta(0.5, 0.7, size=n)
    f[:50] = 0.0
    f[50:100] = 1.0
    f[100:300] = np.round(f[100:300], 2)  # ties
    y = (rng.uniform(size=n) < f**1.3).astype(np.float64)
    w = rng.exponential(size=n)
    for weights in (None, w):
        direct, scale = direct_laplace(f, y, weights, h)
        got = M.laplace_kernel_ce(f, y, weights=weights, bandwidth=h)
        # Relative to the value, and to the sum of |terms| (rounding of the double sum itself).
        assert abs(got**2 - direct**2) <= 1e-10 * direct**2 + 1e-13 * scale, (h, weights is None)
        assert got == pytest.approx(direct, rel=1e-10)


def test_laplace_properties():
    # Calibrated point masses: y − f sums to zero at each value, so the error is 0.
    f = np.array([0.5, 0.5, 0.25, 0.25, 0.25, 0.25])
    y = np.array([0, 1, 0, 1, 0, 0])
    assert M.laplace_kernel_ce(f, y) == pytest.approx(0.0, abs=1e-8)
    # One row: sqrt(r²/h)
    assert M.laplace_kernel_ce([0.3], [1], bandwidth=0.5) == pytest.approx(np.sqrt(0.49 / 0.5))
    # Order of the rows does not matter; huge bandwidths do not overflow.
    rng = np.random.default_rng(0)
    f = rng.uniform(size=500)
    y = rng.uniform(size=500) < f
    perm = rng.permutation(500)
    assert M.laplace_kernel_ce(f, y, bandwidth=0.05) == pytest.approx(
        M.laplace_kernel_ce(f[perm], y[perm], bandwidth=0.05), rel=1e-12)
    assert np.isfinite(M.laplace_kernel_ce(f, y, bandwidth=1e6))
    assert np.isfinite(M.laplace_kernel_ce(f, y, bandwidth=M.LAPLACE_MIN_BANDWIDTH))


def test_laplace_agrees_with_relplot_in_expectation():
    """relplot's ``laplace_calibration_approx`` is a Monte Carlo average over 10·n random pairs
    (unseeded, through the global numpy RNG): its square is unbiased for our exact value's square
    (up to its never drawing the last row). Averaged over 40 calls they agree within Monte Carlo error."""
    metrics = pytest.importorskip("relplot.metrics")
    rng = np.random.default_rng(5)
    n = 2000
    f = rng.uniform(size=n)
    y = (rng.uniform(size=n) < f**1.5).astype(np.float64)
    exact = M.laplace_kernel_ce(f, y)
    state = np.random.get_state()
    try:
        np.random.seed(123)
        draws = np.array([metrics.laplace_calibration_approx(f, y) for _ in range(40)]) ** 2
    finally:
        np.random.set_state(state)
    se = draws.std(ddof=1) / np.sqrt(draws.size)
    assert abs(draws.mean() - exact**2) < 4 * se
    assert se < 0.05 * exact**2  # the comparison has teeth


# ----------------------------------------------------------------------------------
# Randomized interval calibration error
# ----------------------------------------------------------------------------------

def test_interval_ce_reproduces_relplots_loop_with_our_shifts(shared):
    metrics = pytest.importorskip("relplot.metrics")
    f, y, _ = shared["DAFFS"]
    seed, trials, eps = 9, 20, 0.01
    widths = [2.0**-k for k in range(60) if 2.0**-k > eps]
    u = np.random.default_rng(seed).random((len(widths), trials))
    best = 3.0
    for level, width in enumerate(widths):  # relplot's intCE_rand with the documented shifts
        err = np.mean([np.abs(metrics.binning(f, y, bin_size=width, shift=width * s)).sum() / len(f) for s in u[level]])
        best = min(best, err + width)
    assert M.interval_ce_random(f, y, seed=seed, trials=trials, eps=eps) == pytest.approx(best, abs=1e-12)


def test_interval_ce_seeding_weights_and_relplot(shared):
    metrics = pytest.importorskip("relplot.metrics")
    f, y, _ = shared["resnet"]
    a = M.interval_ce_random(f, y, seed=1)
    assert a == M.interval_ce_random(f, y, seed=1)
    assert a != M.interval_ce_random(f, y, seed=2)
    state = np.random.get_state()
    try:
        np.random.seed(0)
        theirs = metrics.intCE_rand(f, y)
    finally:
        np.random.set_state(state)
    assert a == pytest.approx(theirs, abs=2e-3)  # both are random; same expectation
    f, y, _ = shared["DAFFS"]
    reps = np.random.default_rng(2).integers(0, 3, size=f.size)
    assert M.interval_ce_random(f, y, seed=4, weights=reps.astype(float)) == pytest.approx(
        M.interval_ce_random(np.repeat(f, reps), np.repeat(y, reps), seed=4), abs=1e-12)


# ----------------------------------------------------------------------------------
# Input contract
# ----------------------------------------------------------------------------------

def every_measure(f, y, **kw):
    return [
        lambda: M.binned_ece(f, y, **kw),
        lambda: M.binned_ece(f, y, strategy="quantile", **kw),
        lambda: M.binned_calibration(f, y, **kw),
        lambda: M.binned_ece_upper(f, y, 10, **kw),
        lambda: M.debiased_ece(f, y, **kw),
        lambda: M.brier_decomposition(f, y, **kw),
        lambda: M.brier_decomposition(f, y, smooth=True, **kw),
        lambda: M.laplace_kernel_ce(f, y, **kw),
        lambda: M.interval_ce_random(f, y, seed=0, **kw),
    ]


F = np.array([0.1, 0.5, 0.9, 0.3, 0.7])
Y = np.array([0, 1, 1, 0, 1], dtype=np.int8)


def check_refused(exc, pattern, f, y, **kw):
    before = [np.array(a, copy=True) for a in (f, y, kw.get("weights")) if isinstance(a, np.ndarray)]
    for call in every_measure(f, y, **kw):
        with pytest.raises(exc, match=pattern):
            call()
    after = [a for a in (f, y, kw.get("weights")) if isinstance(a, np.ndarray)]
    for b, a in zip(before, after):
        np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("bad, value", [(-0.2, "-0.2"), (1.5, "1.5"), (np.nan, "nan"), (np.inf, "inf"),
                                        (1.0000000000000002, "1.0000000000000002")])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_bad_predictions(bad, value, dtype):
    if dtype == np.float32 and bad == 1.0000000000000002:
        bad, value = 1.0000001, "1.0000001"
    f = F.astype(dtype)
    f[2] = bad
    f[4] = bad
    check_refused(ValueError, rf"^f\[2\] = {re.escape(value)}: predictions must be finite and in \[0, 1\] "
                              rf"\(2 of 5 values in f bad, first at index 2\)(; .*)?$",
                  f, Y)


def test_messages_match_the_core():
    import smoothece

    cases = [
        (np.array([0.1, 3.0, 0.2]), np.array([0, 1, 1]), None),
        (F, np.array([0, 2, 1, 0, 1], dtype=np.int64), None),
        (F, np.array([0, 1, 0.5, 0, np.nan]), None),
        (F, np.array([255, 1, 1, 0, 1], dtype=np.uint8), None),
        (F, np.array([0, 1, 7, 0, 1], dtype=np.uint8).view(bool), None),
        (F, Y, np.array([1.0, -1.0, np.nan, 1.0, 1.0])),
        (F, Y, np.zeros(5)),
        (F.astype(np.float32) - 0.2, Y, None),
    ]
    for f, y, w in cases:
        with pytest.raises(ValueError) as core:
            smoothece.smece(f, y, weights=w)
        for call in every_measure(f, y, weights=w):
            with pytest.raises(ValueError) as ours:
                call()
            assert str(ours.value) == str(core.value)


def test_bad_types_and_shapes():
    check_refused(TypeError, r"^f must be", np.array(["a", "b"]), [0, 1])
    check_refused(TypeError, r"^y must be", [0.1, 0.2], np.array(["0", "1"]))
    check_refused(TypeError, r"^weights must be", [0.1, 0.2], [0, 1], weights=np.array([1 + 0j, 1]))
    check_refused(ValueError, r"f and y must have the same length", F, Y[:4])
    check_refused(ValueError, r"f and weights must have the same length", F, Y, weights=np.ones(3))
    check_refused(ValueError, r"^f is empty", np.array([]), np.array([]))
    check_refused(ValueError, r"^f must be 1-D, got shape \(5, 1\)", F[:, None], Y)


@pytest.mark.parametrize(
    "call, exc, pattern",
    [
        (lambda: M.binned_ece(F, Y, n_bins=2.5), TypeError, r"^n_bins must be an int, got 2\.5"),
        (lambda: M.binned_ece(F, Y, n_bins=True), TypeError, r"^n_bins must be an int, got True"),
        (lambda: M.binned_ece(F, Y, n_bins=0), ValueError, r"^n_bins must be >= 1, got 0"),
        (lambda: M.binned_calibration(F, Y, n_bins=-3), ValueError, r"^n_bins must be >= 1, got -3"),
        (lambda: M.binned_ece_upper(F, Y, 0), ValueError, r"^n_bins must be >= 1, got 0"),
        (lambda: M.debiased_ece(F, Y, n_bins="15"), TypeError, r"^n_bins must be an int, got '15'"),
        (lambda: M.brier_decomposition(F, Y, n_bins=0), ValueError, r"^n_bins must be >= 1"),
        (lambda: M.binned_ece(F, Y, strategy="equal"), ValueError,
         r"^strategy must be 'uniform' or 'quantile', got 'equal'"),
        (lambda: M.binned_ece(F, Y, strategy=None), TypeError, r"^strategy must be a str .*got None"),
        (lambda: M.debiased_ece(F, Y, strategy="Quantile"), ValueError, r"^strategy must be .*got 'Quantile'"),
        (lambda: M.brier_decomposition(F, Y, strategy="x"), ValueError, r"^strategy must be"),
        (lambda: M.binned_ece(F, Y, norm="L1"), ValueError, r"^norm must be 'l1', 'l2' or 'max', got 'L1'"),
        (lambda: M.binned_ece(F, Y, norm=2), TypeError, r"^norm must be a str .*got 2"),
        (lambda: M.binned_calibration(F, Y).ece("linf"), ValueError, r"^norm must be"),
        (lambda: M.laplace_kernel_ce(F, Y, bandwidth=0), ValueError,
         r"^bandwidth must be a finite number >= 1e-06, got 0"),
        (lambda: M.laplace_kernel_ce(F, Y, bandwidth=-1.0), ValueError, r"^bandwidth must be .*got -1\.0"),
        (lambda: M.laplace_kernel_ce(F, Y, bandwidth=np.nan), ValueError, r"^bandwidth must be .*got nan"),
        (lambda: M.laplace_kernel_ce(F, Y, bandwidth=1e-7), ValueError, r"^bandwidth must be .*got 1e-07"),
        (lambda: M.laplace_kernel_ce(F, Y, bandwidth="wide"), TypeError, r"^bandwidth must be a number, got 'wide'"),
        (lambda: M.laplace_kernel_ce(F, Y, bandwidth=[0.1]), TypeError, r"^bandwidth must be a number"),
        (lambda: M.interval_ce_random(F, Y, seed=None), TypeError, r"^seed must be a non-negative int, got None"),
        (lambda: M.interval_ce_random(F, Y, seed=-1), ValueError, r"^seed must be a non-negative int, got -1"),
        (lambda: M.interval_ce_random(F, Y, seed=1, eps=1.0), ValueError,
         r"^eps must be a finite number >= 1e-05 and < 1"),
        (lambda: M.interval_ce_random(F, Y, seed=1, eps=0), ValueError, r"^eps must be"),
        (lambda: M.interval_ce_random(F, Y, seed=1, eps=1e-300), ValueError, r"^eps must be .*got 1e-300"),
        (lambda: M.binned_ece(F, Y, n_bins=2**62), ValueError,
         r"^n_bins must be <= 16,777,216, got 4611686018427387904"),
        (lambda: M.interval_ce_random(F, Y, seed=1, trials=0), ValueError, r"^trials must be >= 1, got 0"),
        (lambda: M.debiased_ece(F, Y, squared="yes"), TypeError, r"^squared must be a bool, got 'yes'"),
        (lambda: M.brier_decomposition(F, Y, smooth=1), TypeError, r"^smooth must be a bool, got 1"),
        (lambda: M.binned_ece(F, Y, clip="x"), TypeError, r"^clip must be a bool or a non-negative float tolerance"),
    ],
)
def test_bad_options(call, exc, pattern):
    with pytest.raises(exc, match=pattern):
        call()


def test_laplace_kernel_ce_at_the_widest_bandwidths():
    # The kernel is flat: Σ_ij a_i a_j = (Σ a)², so the error is |Σ a| / √h (it was NaN
    # at 1.7e308, where the block span overflowed).
    a = (F - Y).mean()
    for h in (1e300, 1.7e308):
        assert M.laplace_kernel_ce(F, Y, bandwidth=h) == pytest.approx(abs(a) / np.sqrt(h), rel=1e-12)


@pytest.mark.parametrize("scale", [2.0**-1000, 1e-300, 1e300])
def test_every_measure_is_invariant_to_scaling_the_weights(scale):
    # Squares of weights (l2 gaps, debiased variances) under- or overflowed at 1e∓300:
    # 0, inf or NaN where the unscaled weights gave 0.07.
    rng = np.random.default_rng(17)
    f = rng.beta(2, 2, 1000)
    y = rng.random(1000) < f**1.3
    w = rng.lognormal(size=1000)
    w /= w.max()
    calls = [
        lambda w: M.binned_ece(f, y, weights=w, norm="l2"),
        lambda w: M.binned_ece(f, y, weights=w, norm="max", strategy="quantile"),
        lambda w: M.debiased_ece(f, y, weights=w, strategy="quantile"),
        lambda w: M.debiased_ece(f, y, weights=w, squared=True),
        lambda w: M.brier_decomposition(f, y, weights=w).reliability,
        lambda w: M.laplace_kernel_ce(f, y, weights=w),
        lambda w: M.interval_ce_random(f, y, weights=w, seed=1),
    ]
    with np.errstate(over="raise", invalid="raise", divide="raise"):
        for call in calls:
            assert call(w * scale) == pytest.approx(call(w), rel=1e-12)
        binned = M.binned_calibration(f, y, weights=w * scale)  # weights reported in the caller's units
        assert binned.total_weight == pytest.approx(np.sum(w * scale), rel=1e-12)
        assert binned.ece("l2") == pytest.approx(M.binned_ece(f, y, weights=w, norm="l2"), rel=1e-12)
