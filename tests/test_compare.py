"""compare() and compare_models(): the paired bootstrap of a difference of SmoothECEs.

Checked against independent computations: the exact SmoothECE of each model
(smece), the classical bootstrap of rows drawn with numpy (the paired
difference's spread), each model's own bootstrap_smece (the marginals), and
properties (a model against itself, swapping the models, frequency weights
equal duplicated rows, any thread count)."""

import numpy as np
import pytest

import smoothece
from smoothece import InputError


def models(n, seed=0):
    rng = np.random.default_rng(seed)
    q = rng.uniform(size=n)
    y = (rng.uniform(size=n) < q).astype(np.int8)
    wiggle = np.clip(q + 0.05 * np.sin(2 * np.pi * q), 0.0, 1.0)
    power = q ** (2.0 / 3.0)
    return q, wiggle, power, y


def test_values_are_each_models_exact_smece():
    q, a, b, y = models(3000)
    c = smoothece.compare(a, b, y, n_boot=50, seed=1)
    assert c.smece_a == smoothece.smece(a, y)
    assert c.smece_b == smoothece.smece(b, y)
    assert c.difference == c.smece_a - c.smece_b
    assert c.names == ("a", "b") and c.n_boot == 50 and c.seed == 1
    assert c.replicates.shape == (50, 2)
    assert c.low <= c.difference <= c.high


def test_spread_of_the_difference_matches_the_classical_bootstrap_of_rows():
    # The paired replicates vary as the classical bootstrap's do: rows drawn
    # with replacement by numpy, both models scored on the same draw.
    q, a, b, y = models(20000, seed=3)
    c = smoothece.compare(a, b, y, n_boot=1000, seed=2)
    rng = np.random.default_rng(7)
    rows = []
    for _ in range(150):
        i = rng.integers(0, y.size, y.size)
        rows.append(smoothece.smece(a[i], y[i]) - smoothece.smece(b[i], y[i]))
    paired = c.replicates[:, 0] - c.replicates[:, 1]
    # 150 classical replicates estimate an sd to about ±12% (2 se)
    assert paired.std() == pytest.approx(np.std(rows), rel=0.2)
    assert paired.mean() == pytest.approx(np.mean(rows), abs=0.5 * np.std(rows))



def test_pairing_sees_that_similar_models_share_their_noise():
    # Two similar models: their SmoothECEs move together under resampling, so
    # the difference varies far less than the two models' spreads added.
    q, a, b, y = models(20000, seed=3)
    # (the classical bootstrap of rows gives a correlation of 0.98 here)
    c = smoothece.compare(a, a ** 1.02, y, n_boot=500, seed=2)
    assert np.corrcoef(c.replicates.T)[0, 1] > 0.95
    paired = (c.replicates[:, 0] - c.replicates[:, 1]).std()
    assert paired < 0.25 * np.hypot(c.replicates[:, 0].std(), c.replicates[:, 1].std())


def test_each_models_replicates_match_its_own_bootstrap():
    q, a, b, y = models(5000, seed=4)
    m = smoothece.compare_models({"wiggle": a, "power": b}, y, n_boot=800, seed=5)
    for k, f in enumerate((a, b)):
        own = smoothece.bootstrap_smece(f, y, n_boot=800, seed=6).replicates
        assert m.replicates[:, k].mean() == pytest.approx(own.mean(), rel=0.05)
        assert m.replicates[:, k].std() == pytest.approx(own.std(), rel=0.15)


def test_a_model_against_itself_differs_by_exactly_nothing():
    q, a, b, y = models(2000, seed=5)
    c = smoothece.compare(a, a.copy(), y, n_boot=200, seed=3)
    assert c.difference == 0.0
    np.testing.assert_array_equal(c.replicates[:, 0], c.replicates[:, 1])
    assert (c.low, c.high) == (0.0, 0.0)
    assert c.p_value == 1.0


def test_swapping_the_models_negates_the_difference():
    q, a, b, y = models(4000, seed=6)
    ab = smoothece.compare(a, b, y, n_boot=300, seed=9)
    ba = smoothece.compare(b, a, y, n_boot=300, seed=9, names=("b", "a"))
    assert ba.difference == -ab.difference
    np.testing.assert_allclose(ba.replicates[:, ::-1], ab.replicates, rtol=1e-12)
    assert ba.low == pytest.approx(-ab.high, abs=1e-12) and ba.high == pytest.approx(-ab.low, abs=1e-12)
    assert ba.p_value == ab.p_value


def test_frequency_weights_equal_duplicated_rows():
    q, a, b, y = models(1500, seed=8)
    counts = np.random.default_rng(1).integers(1, 4, size=y.size)
    weighted = smoothece.compare(a, b, y, weights=counts.astype(float), weight_kind="frequency", n_boot=200, seed=4)
    dup = smoothece.compare(np.repeat(a, counts), np.repeat(b, counts), np.repeat(y, counts), n_boot=200, seed=4)
    # the values to the accuracy contract (the two passes have different first grids), the replicates
    # alike (the same units, the same Gamma(Σw) draws) to the precision replicates are solved to
    assert weighted.difference == pytest.approx(dup.difference, abs=1e-8)
    np.testing.assert_allclose(weighted.replicates, dup.replicates, rtol=3e-4)  # replicate σ* are solved to 1e-4


def test_same_numbers_on_any_thread_count():
    q, a, b, y = models(30000, seed=9)
    one = smoothece.compare(a, b, y, n_boot=100, seed=11, threads=1)
    two = smoothece.compare(a, b, y, n_boot=100, seed=11, threads=2)
    np.testing.assert_array_equal(one.replicates, two.replicates)


def test_a_clear_difference_is_found_and_equal_models_are_not():
    q, a, b, y = models(20000, seed=10)
    clear = smoothece.compare(q, b, y, n_boot=500, seed=1, names=("calibrated", "power"))
    assert clear.difference < 0 and clear.high < 0 and clear.p_value < 0.01
    # a model and its mirror image (f -> 1 - f about the latent q) have equal population SmoothECE
    mirror = 1.0 - (1.0 - q) ** (2.0 / 3.0)
    same = smoothece.compare(b, mirror, y, n_boot=500, seed=1)
    assert same.low <= 0.0 <= same.high and same.p_value > 0.05


def test_several_models_and_their_pairs():
    q, a, b, y = models(3000, seed=12)
    m = smoothece.compare_models([q, a, b], y, n_boot=100, seed=2)
    assert m.names == ("model 0", "model 1", "model 2")
    np.testing.assert_array_equal(m.smece, [smoothece.smece(f, y) for f in (q, a, b)])
    assert all(lo <= v <= hi for v, lo, hi in zip(m.smece, m.low, m.high))
    pairs = m.pairs()
    assert [p.names for p in pairs] == [("model 0", "model 1"), ("model 0", "model 2"), ("model 1", "model 2")]
    assert m.pair("model 2", 0).difference == m.smece[2] - m.smece[0]
    assert [row["model"] for row in m.table()] == list(m.names)
    assert set(m.to_dict()) >= {"names", "smece", "low", "high", "replicates"}


def test_weighted_and_logit_comparisons_run_with_exact_values():
    q, a, b, y = models(3000, seed=13)
    w = np.random.default_rng(2).lognormal(size=y.size)
    c = smoothece.compare(a, b, y, weights=w, n_boot=100, seed=1)
    assert c.smece_a == smoothece.smece(a, y, weights=w) and c.smece_b == smoothece.smece(b, y, weights=w)
    c = smoothece.compare(a, b, y, metric="logit", n_boot=100, seed=1)
    assert c.smece_a == smoothece.smece(a, y, metric="logit")
    assert c.low <= c.difference <= c.high


def test_bad_input_names_the_model_and_the_argument():
    q, a, b, y = models(100)
    bad = b.copy()
    bad[7] = 1.5
    with pytest.raises(InputError, match=r"model 'b'.*f\[7\]") as err:
        smoothece.compare(a, bad, y, n_boot=10)
    assert err.value.argument == "f" and err.value.index == 7
    with pytest.raises(InputError, match="length"):
        smoothece.compare(a, b[:50], y, n_boot=10)
    with pytest.raises(InputError, match="at least two models"):
        smoothece.compare_models([a], y)
    with pytest.raises(InputError, match="names"):
        smoothece.compare(a, b, y, names=("m", "m"))
    with pytest.raises(InputError, match="itself"):
        smoothece.compare_models([a, b], y, n_boot=10).pair(1, 1)
    with pytest.raises(InputError, match="no model named"):
        smoothece.compare_models({"x": a, "z": b}, y, n_boot=10).pair("x", "w")
    with pytest.raises(TypeError, match="mapping"):
        smoothece.compare_models(a, y)
    with pytest.raises(ValueError, match="n_boot"):
        smoothece.compare(a, b, y, n_boot=0)
