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


def test_the_rows_order_does_not_change_the_numbers():
    q, a, b, y = models(5000, seed=14)
    p = np.random.default_rng(3).permutation(y.size)
    c = smoothece.compare(a, b, y, n_boot=100, seed=8)
    d = smoothece.compare(a[p], b[p], y[p], n_boot=100, seed=8)
    assert d.difference == pytest.approx(c.difference, abs=1e-12)
    # the same draws for the same units; sums that differ in rounding can stop a replicate's solver one step
    # apart, within the precision replicates are solved to (1e-4)
    np.testing.assert_allclose(d.replicates, c.replicates, rtol=3e-4)


# -- ComparisonSketch -------------------------------------------------------------------------------------------

def batches(arrays, y, w, sizes):
    start = 0
    for size in sizes:
        yield [f[start:start + size] for f in arrays], y[start:start + size], \
            None if w is None else w[start:start + size]
        start += size


@pytest.mark.parametrize("weighted", [False, True])
def test_a_sketch_fed_in_batches_answers_as_the_arrays_do(weighted):
    q, a, b, y = models(60000, seed=15)
    w = np.random.default_rng(4).lognormal(size=y.size) if weighted else None
    sketch = smoothece.ComparisonSketch(["wiggle", "power"])
    for fs, yb, wb in batches([a, b], y, w, [10000] * 6):
        sketch.update(fs, yb, wb)
    assert sketch.n == y.size and sketch.units > 0
    got = sketch.compare(n_boot=600, seed=3)
    want = smoothece.compare_models({"wiggle": a, "power": b}, y, weights=w, n_boot=600, seed=3)
    # values: each model's sketch on its grid, to the accuracy contract
    np.testing.assert_allclose(got.smece, [smoothece.smece(f, y, weights=w) for f in (a, b)], atol=1e-6)
    # replicates: the same distribution (units of 512 cells here, of σ*/4 for arrays)
    np.testing.assert_allclose(got.replicates.std(axis=0), want.replicates.std(axis=0), rtol=0.15)
    d_got = got.replicates[:, 0] - got.replicates[:, 1]
    d_want = want.replicates[:, 0] - want.replicates[:, 1]
    assert d_got.std() == pytest.approx(d_want.std(), rel=0.15)
    assert got.pair(0, 1).difference == pytest.approx(want.pair(0, 1).difference, abs=2e-6)


def test_batching_and_merge_order_do_not_change_a_sketchs_numbers():
    q, a, b, y = models(30000, seed=16)
    one = smoothece.ComparisonSketch(2).update([a, b], y)
    parts = []
    for fs, yb, _ in batches([a, b], y, None, [7000, 13000, 10000]):
        parts.append(smoothece.ComparisonSketch(2).update(fs, yb))
    merged = parts[2].copy().merge(parts[0]).merge(parts[1])
    assert merged.units == one.units and merged.n == one.n
    x, z = one.compare(n_boot=200, seed=5), merged.compare(n_boot=200, seed=5)
    np.testing.assert_allclose(z.smece, x.smece, rtol=1e-9)
    np.testing.assert_allclose(z.replicates, x.replicates, rtol=3e-4)  # as for the rows' order


def test_a_sketch_refuses_a_bad_batch_whole_and_names_the_model():
    q, a, b, y = models(1000, seed=17)
    sketch = smoothece.ComparisonSketch(["a", "b"]).update({"a": a, "b": b}, y)
    bad = b.copy()
    bad[3] = np.nan
    with pytest.raises(InputError, match=r"model 'b'.*f\[3\]"):
        sketch.update({"a": a, "b": bad}, y)
    assert sketch.n == 1000 and sketch.model("a").n == 1000 and sketch.model(1).n == 1000
    with pytest.raises(InputError, match="name the sketch's models"):
        sketch.update({"a": a, "c": b}, y)
    with pytest.raises(InputError, match="compares 2 models"):
        sketch.update([a, b, b], y)
    with pytest.raises(InputError, match="other models"):
        sketch.merge(smoothece.ComparisonSketch(["a", "z"]))
    with pytest.raises(InputError, match="unit_cells"):
        smoothece.ComparisonSketch(2, unit_cells=100)
    with pytest.raises(InputError, match="models"):
        smoothece.ComparisonSketch(1)
    assert sketch.model("b").smece() == pytest.approx(smoothece.smece(b, y), abs=1e-9)


def test_a_sketchs_unit_table_is_bounded_and_its_level_depends_on_the_rows_alone():
    # four noisy models: nearly a unit a row at 512 cells, so the table coarsens
    rng = np.random.default_rng(18)
    n = 300_000
    q = rng.uniform(size=n)
    y = (rng.uniform(size=n) < q).astype(np.int8)
    fs = [np.clip(q + rng.normal(0.0, s, size=n), 0.0, 1.0) for s in (0.1, 0.15, 0.2, 0.25)]
    one = smoothece.ComparisonSketch(4, resolution=256).update(fs, y)
    assert one.units <= 2 ** 18 and one.unit_cells < 512
    parts = [smoothece.ComparisonSketch(4, resolution=256).update([f[i:i + 60_000] for f in fs], y[i:i + 60_000])
             for i in range(0, n, 60_000)]
    assert all(p.unit_cells == 512 for p in parts)  # each part alone fits
    merged = parts[3].copy()
    for p in (parts[0], parts[4], parts[1], parts[2]):
        merged.merge(p)
    assert (merged.unit_cells, merged.units, merged.n) == (one.unit_cells, one.units, n)


def test_counts_as_weights_ask_what_they_mean():
    q, a, b, y = models(2000, seed=19)
    counts = np.random.default_rng(2).integers(1, 5, size=y.size).astype(float)
    with pytest.warns(smoothece.WeightKindWarning, match="frequency"):
        smoothece.compare(a, b, y, weights=counts, n_boot=20, seed=1)
    smoothece.compare(a, b, y, weights=counts, n_boot=20, seed=1, weight_kind="importance")  # no warning (errors)
    sketch = smoothece.ComparisonSketch(2).update([a, b], y, counts)
    with pytest.warns(smoothece.WeightKindWarning):
        sketch.compare(n_boot=20, seed=1)
    sketch.compare(n_boot=20, seed=1, weight_kind="frequency")
    with pytest.raises(ValueError, match="weight_kind"):
        smoothece.compare(a, b, y, weight_kind="counts")
