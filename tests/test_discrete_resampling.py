"""Resampling of discrete forecasts (few distinct predictions), above all in logit space, where the
replicates come from the rows' atoms: their distributions against numpy's own simulation of the
model each resampling stands for.

Three forecast values far apart next to σ (in both metrics' units: ≥ 19σ), so that in every replicate the
atoms do not interact and its SmoothECE is Σ_a |residual_a| / W exactly: under the null of the
calibration test a_'s residual is B_a − n_a·f_a with B_a ~ Binomial(n_a, f_a); in the bootstrap (every
row an Exp(1) multiplier) it is G1_a·(1 − f_a) − G0_a·f_a over Σ(G0 + G1), G_ay ~ Gamma(n_ay).
"""

import numpy as np
import pytest

import smoothece

VALUES = np.array([0.1, 0.5, 0.9])
PER_VALUE = 300
N = VALUES.size * PER_VALUE


@pytest.fixture(scope="module")
def rows():
    rng = np.random.default_rng(20250131)
    f = np.repeat(VALUES, PER_VALUE)
    y = rng.random(N) < f
    return f, y


def assert_same_distribution(core, reference, points, what):
    """Mean within 4 standard errors of the core's sample, and the two empirical CDFs at `points` within
    the two-sample KS distance's 0.1% critical value. (The points lie between the values a discrete
    statistic takes: replicates solve σ* to 1e-4, relative, so a value may sit just below its count's.)"""
    se = np.std(reference) / np.sqrt(core.size)
    assert abs(core.mean() - reference.mean()) < 4 * se, (what, core.mean(), reference.mean(), se)
    cdf = lambda s: np.searchsorted(np.sort(s), points, side="right") / s.size  # noqa: E731
    distance = np.max(np.abs(cdf(core) - cdf(reference)))
    assert distance < 1.95 * np.sqrt((core.size + reference.size) / (core.size * reference.size)), (what, distance)


@pytest.mark.parametrize("metric", ["logit", "l1"])
def test_null_of_discrete_forecasts_is_the_binomial_null(rows, metric):
    # On the l1 grid too (cheap, so its replicates once stayed there: the part of an atom's mass that the
    # grid's weights put on a node of the next resampling cell took that cell's draw, and this null's mean
    # came out 3.3% high, 7 standard errors): replicates of few atoms come from the atoms.
    f, y = rows
    test = smoothece.calibration_test(f, y, metric=metric, n_sim=10_000, seed=11)
    rng = np.random.default_rng(5)
    b = rng.binomial(PER_VALUE, VALUES, size=(100_000, VALUES.size))
    reference = np.abs(b - PER_VALUE * VALUES).sum(axis=1) / N
    # Σ|B − n·f| over 300 rows at each of 0.1, 0.5 and 0.9 is a whole number: the null is a multiple of 1/N.
    assert_same_distribution(test.null, reference, (np.arange(200) + 0.5) / N, metric)
    # The observed statistic is the same sum over the data's own counts, and its p-value the reference's tail.
    counts = np.array([y[f == v].sum() for v in VALUES])
    assert test.statistic == pytest.approx(np.abs(counts - PER_VALUE * VALUES).sum() / N, rel=1e-9)
    tail = np.mean(reference >= test.statistic * (1 - 1e-4))
    assert abs(test.p_value - tail) < 4 * np.sqrt(tail * (1 - tail) / 10_000) + 1e-3


@pytest.mark.parametrize("metric", ["logit", "l1"])
def test_bootstrap_of_discrete_forecasts_is_the_gamma_bootstrap(rows, metric):
    f, y = rows
    boot = smoothece.bootstrap_smece(f, y, metric=metric, n_boot=3000, seed=12)
    ones = np.array([y[f == v].sum() for v in VALUES])
    rng = np.random.default_rng(6)
    g1 = rng.gamma(np.maximum(ones, 1e-300), size=(100_000, VALUES.size)) * (ones > 0)
    g0 = rng.gamma(np.maximum(PER_VALUE - ones, 1e-300), size=(100_000, VALUES.size)) * (ones < PER_VALUE)
    reference = np.abs(g1 * (1 - VALUES) - g0 * VALUES).sum(axis=1) / (g0 + g1).sum(axis=1)
    assert_same_distribution(boot.replicates, reference, np.quantile(reference, np.linspace(0.01, 0.99, 99)), metric)


@pytest.mark.parametrize("metric", ["logit", "l1"])
def test_consistency_band_at_a_forecast_is_its_binomial_band(rows, metric):
    # At t = 0.5 (a mesh point, 2.2 logit units and 0.4 from the other forecasts) μ̂ under the null is
    # that value's share of positives, B/300 with B ~ Binomial(300, 0.5): the band is its 2.5% and 97.5%
    # quantiles, to one count (the replicates' quantiles interpolate between counts; a count off by one
    # comes out 1/300 give or take a rounding: l1's upper end is 166/300 against 167/300).
    f, y = rows
    d = smoothece.reliability_diagram(f, y, metric=metric, n_boot=0, consistency=True, n_sim=2000, seed=13)
    at = int(np.argmin(np.abs(d.mesh - 0.5)))
    assert d.mesh[at] == 0.5
    b = np.random.default_rng(7).binomial(PER_VALUE, 0.5, size=200_000) / PER_VALUE
    lo, hi = np.quantile(b, [0.025, 0.975])
    assert abs(d.consistency_lower[at] - lo) <= 1.0 / PER_VALUE + 1e-12
    assert abs(d.consistency_upper[at] - hi) <= 1.0 / PER_VALUE + 1e-12


def test_discrete_replicates_on_any_thread_count(rows):
    f, y = rows
    kw = dict(metric="logit", n_boot=200, consistency=True, n_sim=200, seed=3)
    one = smoothece.reliability_diagram(f, y, threads=1, **kw)
    two = smoothece.reliability_diagram(f, y, threads=2, **kw)
    for a, b in [(one.lower, two.lower), (one.upper, two.upper), (one.consistency_lower, two.consistency_lower),
                 (one.consistency_upper, two.consistency_upper)]:
        np.testing.assert_array_equal(a, b)
    assert (one.smece_low, one.smece_high) == (two.smece_low, two.smece_high)
