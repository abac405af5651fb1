"""Calibration per group: every number equals the ungrouped call on the group's rows."""

import pickle

import numpy as np
import pytest
from conftest import interval_by_hand

import smoothece
from smoothece import _core
from smoothece import GroupedSketch, InputError, smece_by_group
from smoothece.groups import benjamini_hochberg


F5 = np.array([0.1, 0.5, 0.9, 0.3, 0.7])
Y5 = np.array([0, 1, 1, 0, 1])


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(5)
    n = 30_000
    f = rng.beta(2, 2, n)
    g = rng.integers(0, 40, n)
    y = rng.random(n) < np.where(g % 5 == 0, f ** 1.5, f)  # every fifth group miscalibrated
    w = rng.lognormal(0, 1, n)
    return f, y, g, w


def test_every_group_equals_the_ungrouped_call_bit_for_bit(data):
    f, y, g, w = data
    r = smece_by_group(f, y, g, weights=w, n_boot=100, test=True, n_sim=100, seed=9)
    assert list(r.keys) == sorted(set(g.tolist()))
    for i, k in enumerate(r.keys):
        rows = g == k
        assert r.n[i] == rows.sum()
        assert r.total_weight[i] == pytest.approx(w[rows].sum(), rel=1e-12)
        assert r.smece[i] == smoothece.smece(f[rows], y[rows], weights=w[rows], threads=1)
        if i % 8 == 0:  # the resampling answers too, with seed + i
            b = smoothece.bootstrap_smece(f[rows], y[rows], weights=w[rows], n_boot=100, seed=9 + i, threads=1)
            t = smoothece.calibration_test(f[rows], y[rows], weights=w[rows], n_sim=100, seed=9 + i, threads=1)
            assert (r.low[i], r.high[i], r.p_value[i]) == (b.low, b.high, t.p_value)


def test_group_intervals_hold_their_value_where_the_percentile_interval_did_not():
    # Calibrated groups: σ* sits at its noise floor and the replicates above it. The core's rule
    # (cpp/core/resampling/band.cpp) gives, on a group's replicates, the interval of Python's rule
    # (bootstrap_smece with seed + i draws the same ones) and of the hand computation.
    rng = np.random.default_rng(0)
    f = rng.uniform(size=20_000)
    y = rng.uniform(size=f.size) < f
    g = rng.integers(0, 4, f.size)
    r = smece_by_group(f, y, g, n_boot=200, seed=5)
    excluded = 0
    for i, k in enumerate(r.keys):
        rows = g == k
        b = smoothece.bootstrap_smece(f[rows], y[rows], n_boot=200, seed=5 + i, threads=1)
        excluded += np.quantile(b.replicates, 0.025) > r.smece[i]
        assert (r.low[i], r.high[i]) == (b.low, b.high)
        np.testing.assert_allclose((r.low[i], r.high[i]), interval_by_hand(b.value, b.replicates), rtol=0, atol=1e-15)
        assert r.low[i] == 0.0 <= r.smece[i] <= r.high[i]
    assert excluded >= 2  # groups whose percentile interval lay above their σ*
    stream = GroupedSketch()
    stream.update(f, y, g)
    s = stream.smece_by_group(n_boot=200, seed=5)
    assert np.all(s.low == 0.0) and np.all(s.smece <= s.high)
    np.testing.assert_allclose(s.high, r.high, rtol=0, atol=1e-10)  # the same rows, predictions rounded to 2^-40


def test_the_test_finds_the_miscalibrated_groups(data):
    f, y, g, _ = data
    r = smece_by_group(f, y, g, test=True, n_sim=200, seed=1)
    flagged = set(np.asarray(r.keys)[r.p_adjusted <= 0.05].tolist())
    assert flagged <= {k for k in range(40) if k % 5 == 0}  # no calibrated group flagged
    assert len(flagged) >= 6  # and most miscalibrated ones found (750 rows each)


def test_benjamini_hochberg_against_its_definition():
    rng = np.random.default_rng(0)
    p = rng.uniform(size=50) ** 3
    p[[3, 7]] = np.nan
    q = benjamini_hochberg(p)
    valid = ~np.isnan(p)
    m = valid.sum()
    for i in np.flatnonzero(valid):
        # q_i = min over p_j ≥ p_i of m p_j / rank(p_j), capped at 1.
        ranks = {j: 1 + np.sum(p[valid] < p[j]) + np.sum(p[valid][: 0] == p[j]) for j in np.flatnonzero(valid)}
        expected = min(min(1.0, m * p[j] / ranks[j]) for j in np.flatnonzero(valid) if p[j] >= p[i])
        assert q[i] == pytest.approx(expected, rel=1e-12)
    assert np.isnan(q[[3, 7]]).all()


@pytest.mark.parametrize("make, order", [
    (lambda k: np.array(["b", "a", "c"])[k], ["a", "b", "c"]),
    (lambda k: np.array([2.5, -0.0, 1.0])[k], [-0.0, 1.0, 2.5]),
    (lambda k: (k == 1), [False, True]),
    (lambda k: np.datetime64("2026-03-01") - k.astype("timedelta64[D]"),
     [np.datetime64("2026-02-27"), np.datetime64("2026-02-28"), np.datetime64("2026-03-01")]),
    (lambda k: np.array(["b", "a", "c"], dtype=object)[k], ["a", "b", "c"]),
])
def test_key_types_and_their_order(make, order):
    rng = np.random.default_rng(1)
    k = rng.integers(0, 3, 600)
    f, y = rng.uniform(size=600), rng.integers(0, 2, 600)
    r = smece_by_group(f, y, make(k))
    assert list(r.keys) == order
    assert r.n.sum() == 600


@pytest.mark.parametrize("dtype", [np.int64, np.int32, np.uint16, np.int8])
def test_integer_keys_dense_or_hashed_factorize_alike(dtype):
    # Narrow ranges take a direct table (codes in ascending order), wide ones
    # the hash (codes in order of first appearance): both factorize alike.
    rng = np.random.default_rng(2)
    for low, high in [(0, 50), (-30, 30), (0, 100)]:
        keys = rng.integers(low, high, 5000).astype(dtype)
        for shifted in ([keys] if dtype != np.int64 else [keys, keys.astype(np.int64) + 2**40]):
            codes, first, count = _core.factorize(shifted)
            distinct, where = np.unique(shifted, return_index=True)
            if codes is None:  # the int64 keys 0..K-1, each present, are their own codes
                assert shifted.dtype == np.int64 and low == 0
                np.testing.assert_array_equal(distinct, np.arange(count))
                continue
            assert count == distinct.size
            # One code per distinct key, each code's first row, equal keys <=> equal codes.
            assert first.size == distinct.size and codes.min() == 0 and codes.max() == distinct.size - 1
            np.testing.assert_array_equal(shifted[first][codes], shifted)
            np.testing.assert_array_equal(np.sort(first), np.sort(where))
            np.testing.assert_array_equal(first, [np.flatnonzero(codes == c)[0] for c in range(first.size)])


@pytest.mark.parametrize("f_type", [np.float64, np.float32])
@pytest.mark.parametrize("y_type", [np.bool_, np.uint8, np.int8, np.int64, np.float64])
@pytest.mark.parametrize("w_type", [None, np.float64, np.float32, np.int32])
def test_every_column_type_gathers_alike(f_type, y_type, w_type):
    # The gathering pass reads common types directly and others through
    # blocks of doubles: each group's σ* is the ungrouped call's either way.
    rng = np.random.default_rng(6)
    n = 2000
    f = rng.beta(2, 2, n).astype(f_type)
    y = (rng.random(n) < f).astype(y_type)
    w = None if w_type is None else rng.integers(0, 4, n).astype(w_type)
    g = rng.integers(0, 7, n)
    r = smece_by_group(f, y, g, weights=w)
    for i, key in enumerate(r.keys):
        rows = g == key
        assert r.smece[i] == smoothece.smece(f[rows], y[rows], weights=None if w is None else w[rows], threads=1)


@pytest.mark.parametrize("make", [
    lambda k: k,
    lambda k: k.astype(np.uint64),
    lambda k: k.view("datetime64[ns]"),
    lambda k: np.array(k.tolist(), dtype=object),
    lambda k: np.repeat(k, 2)[::2],  # a stride of 16 bytes: codes are written
])
def test_keys_that_are_their_own_codes(make):
    # 8-byte keys 0..K-1, each present, are their own codes (no pass writes
    # codes): the same groups and numbers as the same keys moved away from 0
    # (a table with an offset), and the caller's keys untouched.
    rng = np.random.default_rng(4)
    k = rng.integers(0, 25, 3000)
    f, y = rng.uniform(size=3000), rng.integers(0, 2, 3000)
    keys = make(k)
    before = keys.copy()
    r = smece_by_group(f, y, keys)
    moved = smece_by_group(f, y, k + 1000)
    np.testing.assert_array_equal(r.smece, moved.smece)
    np.testing.assert_array_equal(r.n, moved.n)
    np.testing.assert_array_equal(np.asarray(r.keys, dtype=keys.dtype), np.unique(keys))
    np.testing.assert_array_equal(keys, before)


@pytest.mark.parametrize("threads", [1, 2])
def test_own_codes_seen_below_and_above_the_byte_table(threads):
    # Which keys occur is kept as a byte per key below 2^16 and a bit per key
    # above: 0..K-1 with K past 2^16, shuffled over two shares, are their own
    # codes; one key missing on either side of 2^16 makes them codes no more.
    rng = np.random.default_rng(9)
    K = 2**16 + 5000
    keys = rng.permutation(np.tile(np.arange(K), 10))  # 705,360 rows: two shares of 2^18 or more
    assert _core.factorize(keys, threads) == (None, None, K)
    for missing in (100, 2**16 + 17):
        gap = np.where(keys == missing, missing + 1, keys)
        codes, first, count = _core.factorize(gap, threads)
        distinct, where = np.unique(gap, return_index=True)
        assert count == K - 1
        np.testing.assert_array_equal(distinct[codes], gap)
        np.testing.assert_array_equal(first, where)


@pytest.mark.parametrize("threads", [1, 2])
def test_factorize_counts_keys_only_a_share_s_first_or_last_row_holds(threads):
    # Each share's range starts at its first key and grows as keys fall
    # outside it: a smallest or largest key held by one row only, the first
    # or the last of a share (2^20 rows: two shares of 2^19), still counts.
    rng = np.random.default_rng(10)
    n = 2**20
    keys = rng.integers(1, 999, n)
    keys[0], keys[n // 2], keys[-1] = 0, 1000, 1001  # unique, at the shares' ends
    codes, first, count = _core.factorize(keys, threads)
    distinct, where = np.unique(keys, return_index=True)
    assert count == distinct.size
    np.testing.assert_array_equal(distinct[codes], keys)
    np.testing.assert_array_equal(first, where)
    keys[keys == 1] = 999  # now 0..1001 with 1 missing; with it, their own codes
    keys[1] = 1
    assert _core.factorize(keys, threads) == (None, None, 1002)
    assert _core.factorize(np.arange(10), threads) == (None, None, 10)


@pytest.mark.parametrize("threads", [1, 2])
def test_factorize_on_threads_with_gaps_and_strides(threads):
    # 2^20 rows: two shares of the parallel table. Ids with unused values in
    # their range (the codes are then remapped), read through a stride.
    rng = np.random.default_rng(3)
    ids = rng.choice(np.arange(0, 3000, 3), size=2**21)  # every third id used
    for keys in (ids, ids[::2]):
        codes, first, _ = _core.factorize(keys, threads)
        distinct, where = np.unique(keys, return_index=True)
        np.testing.assert_array_equal(first, where)  # ascending codes: first rows in key order
        np.testing.assert_array_equal(distinct[codes], keys)


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64])
def test_float_keys_zero_signs_are_one_key(dtype):
    keys = np.array([0.0, -0.0, 1.5, -0.0, 1.5, -2.0], dtype=dtype)
    codes, first, _ = _core.factorize(keys)
    np.testing.assert_array_equal(codes, [0, 0, 1, 0, 1, 2])
    np.testing.assert_array_equal(first, [0, 2, 5])


def test_short_byte_string_keys():
    keys = np.array([b"abc", b"ab", b"abc", b"xyz", b"ab"], dtype="S3")
    codes, first, _ = _core.factorize(keys)
    np.testing.assert_array_equal(codes, [0, 1, 0, 2, 1])
    np.testing.assert_array_equal(first, [0, 1, 3])


def test_zero_and_negative_zero_are_one_group():
    r = smece_by_group([0.1, 0.2, 0.3], [0, 1, 1], np.array([0.0, -0.0, 0.0]))
    assert len(r) == 1 and r.n[0] == 3


def test_pandas_keys_keep_category_order():
    pd = pytest.importorskip("pandas")
    f, y = np.array([0.1, 0.5, 0.9, 0.3]), np.array([0, 1, 1, 0])
    cat = pd.Categorical(["x", "y", "x", "z"], categories=["z", "y", "x", "unused"])
    assert list(smece_by_group(f, y, cat).keys) == ["z", "y", "x"]
    assert list(smece_by_group(f, y, pd.Series(cat)).keys) == ["z", "y", "x"]
    assert list(smece_by_group(f, y, pd.Series(["q", "p", "q", "p"])).keys) == ["p", "q"]
    frame = smece_by_group(f, y, cat).to_pandas()
    assert list(frame.columns[:3]) == ["n", "total_weight", "smece"] and len(frame) == 3
    assert frame.index.name == "key" and list(frame.index) == ["z", "y", "x"]  # indexed by the keys, in their order


def test_groups_of_one_row_and_groups_that_weigh_nothing():
    r = smece_by_group([0.3, 0.6, 0.6], [1, 0, 1], ["a", "b", "b"], weights=[1.0, 0.0, 0.0])
    assert r.smece[0] == pytest.approx(0.7)  # one row: |y − f|
    assert r.n[1] == 2 and r.total_weight[1] == 0.0 and np.isnan(r.smece[1])


@pytest.mark.parametrize("keys, what, index", [
    (np.array([1.0, np.nan, 2.0, np.nan]), "NaN", 1),
    (np.array(["a", None, "b", None], dtype=object), "None", 1),
    (np.array(["2026-01-01", "NaT", "2026-01-02", "NaT"], dtype="datetime64[D]"), "NaT", 1),
])
def test_missing_keys_are_refused_with_their_index(keys, what, index):
    with pytest.raises(InputError, match=rf"^groups\[{index}\] is missing \({what}\): 2 of 4") as err:
        smece_by_group([0.1, 0.2, 0.3, 0.4], [0, 1, 0, 1], keys)
    assert (err.value.argument, err.value.index, err.value.count) == ("groups", index, 2)


def test_bad_keys_and_shapes():
    with pytest.raises(TypeError, match="one kind"):
        smece_by_group([0.1, 0.2], [0, 1], np.array(["a", 1], dtype=object))
    with pytest.raises(ValueError, match="one key per row"):
        smece_by_group([0.1, 0.2], [0, 1], [1, 2, 3])
    with pytest.raises(TypeError, match="group keys"):
        smece_by_group([0.1, 0.2], [0, 1], "ab")


def test_bad_rows_are_located_in_the_callers_arrays():
    f = np.array([0.1, 0.2, 0.3, 1.7, 0.5, 2.0])
    before = f.copy()
    with pytest.raises(InputError, match=r"^f\[3\] = 1\.7: .*\(2 of 6 values in f bad, first at index 3\)") as err:
        smece_by_group(f, [0, 1, 0, 1, 0, 1], [5, 5, 6, 6, 7, 7])
    assert (err.value.argument, err.value.index, err.value.value) == ("f", 3, 1.7)
    np.testing.assert_array_equal(f, before)


@pytest.mark.parametrize("weighted", [False, True])
def test_grouped_rows_in_batches_answer_as_smece_by_group_on_all_rows(data, weighted):
    # The command line's --by: batches (in float32 too, keys new in later batches, one of no rows)
    # handed to the core as parts, their codes renumbered in place: smece_by_group's numbers, bit for bit.
    from smoothece.groups import GroupedRows

    f, y, g, w = data
    w = w if weighted else None
    keys = np.array([f"user {k:02d}" for k in g])
    order = np.argsort(g % 7, kind="stable")  # groups 0, 7, 14, ... first: later batches bring new keys
    f, y, keys = f[order], y[order], keys[order]
    w = None if w is None else w[order]
    rows = GroupedRows()
    for lo in range(0, f.size, 7000):
        hi = min(f.size, lo + 7000)
        rows.update(f[lo:hi], y[lo:hi], keys[lo:hi], None if w is None else w[lo:hi])
    rows.update(f[:0], y[:0], keys[:0], None if w is None else w[:0])
    assert len(rows) == 40
    got = rows.smece_by_group(n_boot=50, test=True, n_sim=50, seed=4)
    want = smece_by_group(f, y, keys, weights=w, n_boot=50, test=True, n_sim=50, seed=4)
    assert list(got.keys) == list(want.keys) == sorted(set(keys.tolist()))
    for name in ("n", "total_weight", "smece", "low", "high", "p_value", "p_adjusted"):
        np.testing.assert_array_equal(getattr(got, name), getattr(want, name), err_msg=name)
    with pytest.raises(RuntimeError, match="answers once"):
        rows.smece_by_group()
    parts = GroupedRows().update(f[:9000].astype(np.float32), y[:9000], keys[:9000])
    parts.update(f[9000:], y[9000:], keys[9000:])
    mixed = parts.smece_by_group()
    np.testing.assert_array_equal(mixed.smece, smece_by_group(np.concatenate([f[:9000].astype(np.float32).astype(
        np.float64), f[9000:]]), y, keys).smece)


def test_grouped_rows_refuse_batches_with_and_without_weights(data):
    from smoothece.groups import GroupedRows

    f, y, g, w = data
    rows = GroupedRows().update(f[:100], y[:100], g[:100], w[:100])
    with pytest.raises(InputError, match="earlier batches had weights") as err:
        rows.update(f[100:200], y[100:200], g[100:200])
    assert err.value.argument == "weights"
    unweighted = GroupedRows().update(f[:100], y[:100], g[:100])
    with pytest.raises(InputError, match="earlier batches had no weights"):
        unweighted.update(f[100:200], y[100:200], g[100:200], w[100:200])
    # the refused batch is not kept: the rows answer as the first batch alone
    got = rows.smece_by_group()
    np.testing.assert_array_equal(got.smece, smece_by_group(f[:100], y[:100], g[:100], weights=w[:100]).smece)


def test_grouped_sketch_streams_merges_and_serializes(data):
    f, y, g, w = data
    keys = np.array([f"user {k}" for k in g])
    whole = smece_by_group(f, y, keys, weights=w)
    left, right = GroupedSketch(), GroupedSketch()
    half = f.size // 2
    for lo in range(0, half, 4000):  # one machine streams the first half in batches
        hi = min(half, lo + 4000)
        left.update(f[lo:hi], y[lo:hi], keys[lo:hi], w[lo:hi])
    right.update(f[half:], y[half:], keys[half:], w[half:])  # another the rest at once
    merged = GroupedSketch.from_bytes(left.to_bytes()).merge(pickle.loads(pickle.dumps(right)))
    streamed = merged.smece_by_group()
    assert list(streamed.keys) == list(whole.keys)
    np.testing.assert_array_equal(streamed.n, whole.n)
    np.testing.assert_allclose(streamed.smece, whole.smece, atol=1e-9)  # predictions kept to 2^-40
    assert merged.total().smece() == pytest.approx(smoothece.smece(f, y, weights=w), abs=1e-9)
    assert merged["user 3"].n == (g == 3).sum()


@pytest.mark.parametrize("kind", ["discrete", "continuous", "mixed"])
def test_grouped_sketch_total_is_every_row_in_one_sketch(kind):
    # total() merges atoms while few and adds the rest once into one grid:
    # it must equal the merge one by one and the sketch of all rows.
    rng = np.random.default_rng(7)
    n, resolution = 6000, 256  # at most 128 atoms: continuous groups go to the grid
    f = rng.integers(0, 11, n) / 10 if kind == "discrete" else rng.beta(2, 2, n)
    if kind == "mixed":
        f[: n // 2] = np.round(f[: n // 2], 1)
    y = rng.uniform(size=n) < f ** 1.3
    w = rng.lognormal(size=n) * 2.0 ** rng.integers(-600, 600, n) if kind == "mixed" else None
    g = rng.integers(0, 100, n)  # ~60 rows a group: every group keeps atoms, their union may not
    grouped = GroupedSketch(resolution=resolution).update(f[: n // 2], y[: n // 2], g[: n // 2],
                                                          None if w is None else w[: n // 2])
    grouped.update(f[n // 2:], y[n // 2:], g[n // 2:], None if w is None else w[n // 2:])
    total = grouped.total()
    one_by_one = smoothece.CalibrationSketch(resolution)
    for key in grouped.keys():
        one_by_one.merge(grouped[key])
    everything = smoothece.CalibrationSketch(resolution).update(f, y, w)
    assert all(grouped[key].exact for key in grouped.keys())
    assert total.n == n and total.exact == one_by_one.exact == everything.exact == (kind == "discrete")
    assert total.smece() == pytest.approx(one_by_one.smece(), rel=1e-10)
    assert total.smece() == pytest.approx(everything.smece(), rel=1e-9)
    assert total.total_weight == pytest.approx(everything.total_weight, rel=1e-12)


def test_empty_grouped_sketch_keeps_its_resolution_and_metric_through_bytes():
    empty = GroupedSketch(resolution=1024, metric="logit")
    back = GroupedSketch.from_bytes(empty.to_bytes())
    assert (back._core.resolution, back._metric, len(back)) == (1024, "logit", 0)
    back.update([0.2, 0.7], [0, 1], ["a", "b"])  # and it grows as the original would
    assert back["a"].resolution == 1024 and back["a"].metric == "logit"
    # Versions 1 and 2 (no checksum; version 1 without header fields either: the set took
    # its first group's resolution and metric) still read, as version 5 next.
    records = b"".join(b"s\x01\x00\x00\x00" + k.encode() + len(raw).to_bytes(8, "little") + raw
                       for k, raw in (("a", back["a"].to_bytes()), ("b", back["b"].to_bytes())))
    v2 = b"SMECEGK\0" + (2).to_bytes(4, "little") + (2).to_bytes(4, "little") + (1024).to_bytes(4, "little") + b"\1"
    v1 = b"SMECEGK\0" + (1).to_bytes(4, "little") + (2).to_bytes(4, "little")
    for raw in (v2 + records, v1 + records):
        old = GroupedSketch.from_bytes(raw)
        assert old.keys() == ["a", "b"] and old["b"].resolution == 1024 and old._metric == "logit"
        assert old.to_bytes() == back.to_bytes()


def test_grouped_sketch_bytes_check_their_keys():
    s = GroupedSketch().update([0.1, 0.2, 0.3], [0, 1, 1], ["a", "b", "a"])
    raw = s.to_bytes()
    key_b = raw.index(b"s\x01\x00\x00\x00b")
    # A key changed in transit: the set's checksum covers it.
    flipped = raw[:key_b + 5] + b"`" + raw[key_b + 6:]
    with pytest.raises(ValueError, match="checksum mismatch"):
        GroupedSketch.from_bytes(flipped)
    # A key written twice (with a valid checksum) would fold two groups into one.
    body = raw[:key_b + 5] + b"a" + raw[key_b + 6:-8]
    with pytest.raises(ValueError, match="the key 'a' appears twice"):
        GroupedSketch.from_bytes(body + smoothece._core.bytes_checksum(body).to_bytes(8, "little"))
    assert GroupedSketch.from_bytes(raw).n == 3


def test_grouped_sketch_failed_merge_changes_nothing():
    a = GroupedSketch(256).update(F5, Y5, ["a"] * 5)
    before = a.to_bytes()
    for other in (GroupedSketch(512).update(F5, Y5, ["b"] * 5), GroupedSketch(256, "logit").update(F5, Y5, ["b"] * 5)):
        with pytest.raises(InputError,
                           match=r"different metric or resolution \(l1 at 256 and (l1 at 512|logit at 256)\)"):
            a.merge(other)
        assert a.keys() == ["a"] and a.to_bytes() == before and a.n == 5  # the process used to abort here
    assert a.smece_by_group().n.tolist() == [5]


def test_grouped_sketch_keys_are_of_one_kind():
    s = GroupedSketch().update(F5, Y5, [1, 1, 2, 2, 2])
    before = s.to_bytes()
    with pytest.raises(TypeError, match="this sketch holds number keys, got '1'"):
        s.update(F5, Y5, ["1"] * 5)  # "1" and 1 would be two groups that print alike
    with pytest.raises(TypeError, match="this sketch holds number keys"):
        s.merge(GroupedSketch().update(F5, Y5, ["x"] * 5))
    assert s.keys() == [1, 2] and s.to_bytes() == before
    s.update(F5, Y5, [2.0, 3.0, 3.0, 1.0, 1.0])  # numbers of any type are one kind, as in smece_by_group
    assert s.keys() == [1, 2, 3.0] and s.n == 10


def test_grouped_sketch_bad_batch_adds_nothing():
    s = GroupedSketch().update([0.1, 0.2], [0, 1], ["a", "b"])
    with pytest.raises(InputError, match=r"^y\[1\] = 2"):
        s.update([0.3, 0.4], [1, 2], ["a", "c"])
    assert s.keys() == ["a", "b"] and s.n == 2
    with pytest.raises(ValueError, match="corrupt"):
        GroupedSketch.from_bytes(s.to_bytes()[:-3])
    with pytest.raises(ValueError, match="corrupt grouped sketch"):
        GroupedSketch.from_bytes(b"SMECEGK\0" + b"\x07" * 12)


def test_forest_and_drift_plots_render(data, tmp_path):
    import matplotlib

    matplotlib.use("Agg")
    f, y, g, _ = data
    forest = smece_by_group(f, y, np.array([f"segment {k}" for k in g]), n_boot=50, test=True, n_sim=50, seed=2)
    ax = forest.plot(max_groups=12)
    assert len(ax.get_yticks()) == 12 and ax.findobj(lambda a: a.get_gid() == "smoothece-group-intervals")
    ax.figure.savefig(tmp_path / "forest.png", dpi=40)
    days = np.datetime64("2026-01-01") + g.astype("timedelta64[D]")
    drift = smece_by_group(f, y, days, n_boot=50, seed=2)
    assert drift.ordered
    ax = drift.plot()
    assert ax.findobj(lambda a: a.get_gid() == "smoothece-group-band")
    ax.figure.savefig(tmp_path / "drift.png", dpi=40)
    assert (tmp_path / "forest.png").stat().st_size > 1000 and (tmp_path / "drift.png").stat().st_size > 1000


def test_old_bytes_with_keys_of_two_kinds_are_refused():
    # Sets of version 1 could mix kinds; update refuses them, and so does reading.
    raw = GroupedSketch().update(F5, Y5, ["a"] * 5).to_bytes()
    one = GroupedSketch().update(F5, Y5, [1] * 5).to_bytes()
    group = lambda b: b[56:-8]  # version 5: the key and the group's record follow the 56-byte header
    mixed = b"SMECEGK\0" + (1).to_bytes(4, "little") + (2).to_bytes(4, "little") + group(raw) + group(one)
    with pytest.raises(ValueError, match=r"corrupt grouped sketch: keys of two kinds \(string and number\)"):
        GroupedSketch.from_bytes(mixed)
