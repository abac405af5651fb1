"""CalibrationSketch: streaming equals batch, merges are exact, bytes are safe."""

import pickle
import struct
import time

import numpy as np
import pytest
from conftest import synthetic

import smoothece
from smoothece import CalibrationSketch, InputError, ResolutionWarning


# The sketch bins on its fixed 2^15-cell grid; the array functions bin on a
# grid sized to the data (first_intervals_for_rows). Both are within ~1e-8 of
# the exact values (test_accuracy.py), so that is how far apart they may be.
GRID_TOL = 1e-8


@pytest.fixture(scope="module")
def big():
    rng = np.random.default_rng(0)
    n = 10_000_000
    f = rng.uniform(size=n)
    y = rng.uniform(size=n) < f**1.2
    return f, y


def test_streaming_equals_batch(big):
    f, y = big
    sketch = CalibrationSketch()
    for start in range(0, f.size, 100_000):
        sketch.update(f[start:start + 100_000], y[start:start + 100_000])
    assert sketch.n == f.size
    # Same grid (2^15 cells) as the array path: equal up to summation order.
    assert abs(sketch.smece() - smoothece.smece(f, y)) <= 1e-12
    assert abs(sketch.smece_sigma(0.01) - smoothece.smece_sigma(f, y, 0.01)) <= 1e-12


def test_merge_is_exact_associative_and_commutative():
    f, y = synthetic("near1", 30_000, seed=2)
    w = np.random.default_rng(2).uniform(0.5, 2, size=f.size)
    parts = [CalibrationSketch().update(f[i::3], y[i::3], w[i::3]) for i in range(3)]
    a, b, c = parts
    whole = CalibrationSketch().update(f, y, w)
    left = (a + b) + c
    right = a + (b + c)
    swapped = c + b + a
    for s in (left, right, swapped):
        assert s.n == whole.n
        assert s.smece() == pytest.approx(whole.smece(), abs=1e-13)
        assert s.total_weight == pytest.approx(whole.total_weight, rel=1e-14)
    assert left.smece() == pytest.approx(right.smece(), abs=1e-14)
    assert left.smece() == pytest.approx(swapped.smece(), abs=1e-14)
    # merge in place, and merging a sketch with itself doubles it
    d = a.copy()
    d += b
    assert d.n == a.n + b.n and a.n == f[0::3].size
    twice = a.copy().merge(a)
    assert twice.n == 2 * a.n and twice.smece() == pytest.approx(a.smece(), abs=1e-13)


def test_merge_refuses_different_resolution():
    with pytest.raises(ValueError, match="different metric or resolution"):
        CalibrationSketch(1024).merge(CalibrationSketch(2048))
    with pytest.raises(TypeError, match="CalibrationSketch"):
        CalibrationSketch().merge("sketch")


def test_bytes_round_trip_and_pickle():
    f, y = synthetic("point_masses", 5000, seed=3)
    s = CalibrationSketch(4096).update(f, y)
    b = s.to_bytes()
    t = CalibrationSketch.from_bytes(b)
    assert t == s and t.to_bytes() == b
    assert t.smece() == s.smece() and t.n == s.n and t.resolution == 4096
    u = pickle.loads(pickle.dumps(s))
    assert u == s and u.smece() == s.smece()


def test_fuzzed_bytes_always_raise_value_error():
    f, y = synthetic("uniform", 2000, seed=4)
    good = CalibrationSketch(256).update(f, y).to_bytes()
    rng = np.random.default_rng(5)
    for trial in range(3000):
        data = bytearray(good)
        kind = trial % 4
        if kind == 0:  # flip random bits
            for _ in range(rng.integers(1, 4)):
                i = rng.integers(len(data))
                data[i] ^= 1 << int(rng.integers(8))
        elif kind == 1:  # truncate
            data = data[: rng.integers(len(data))]
        elif kind == 2:  # extend
            data += bytes(rng.integers(0, 256, size=rng.integers(1, 64), dtype=np.uint8))
        else:  # random bytes, sometimes with the right magic
            data = bytearray(rng.integers(0, 256, size=rng.integers(0, 200), dtype=np.uint8))
            if trial % 8 == 3:
                data[:8] = b"SMECESK\0"
        with pytest.raises(ValueError):
            CalibrationSketch.from_bytes(bytes(data))
    with pytest.raises(TypeError):
        CalibrationSketch.from_bytes("not bytes")


def test_bad_batch_changes_nothing():
    s = CalibrationSketch().update([0.2, 0.4], [0, 1])
    before = s.to_bytes()
    with pytest.raises(ValueError, match=r"^f\[1\] = 1\.2"):
        s.update([0.5, 1.2], [1, 1])
    with pytest.raises(ValueError, match=r"^y\[0\] = 3"):
        s.update([0.5], [3])
    assert s.to_bytes() == before


@pytest.mark.parametrize("metric", ["l1", "logit"])
def test_bad_batch_changes_nothing_on_the_grid(metric):
    # A sketch on its grid takes small batches row by row onto its blocks: checked before any is added.
    rng = np.random.default_rng(8)
    f = rng.random(2000)
    s = CalibrationSketch(256, metric).update(f, rng.random(2000) < f, rng.lognormal(size=2000))
    assert not s.exact
    before = s.to_bytes()
    bad = {"f": (np.r_[0.5, np.nan, 0.2], [1, 0, 1], [1.0, 1.0, 1.0], r"^f\[1\] = nan"),
           "y": (np.r_[0.5, 0.6, 0.2], [1, 0, 2], [1.0, 1.0, 1.0], r"^y\[2\] = 2"),
           "weights": (np.r_[0.5, 0.6, 0.2], [1, 0, 1], [1.0, -2.0, 1.0], r"^weights\[1\] = -2")}
    for name, (fb, yb, wb, message) in bad.items():
        with pytest.raises(InputError, match=message) as caught:
            s.update(fb, yb, wb)
        assert caught.value.argument == name
    assert s.to_bytes() == before


def test_empty_sketch_and_bad_resolution():
    with pytest.raises(ValueError, match="empty"):
        CalibrationSketch().smece()
    with pytest.raises(ValueError, match="power of two"):
        CalibrationSketch(1000)
    with pytest.raises(TypeError, match="resolution must be an int"):
        CalibrationSketch(1024.0)


def test_sketch_answers_equal_array_answers(solar):
    d = solar["DAFFS"]
    s = CalibrationSketch().update(d.f, d.y)
    assert s.smece() == pytest.approx(smoothece.smece(d.f, d.y), abs=GRID_TOL)
    a = smoothece.reliability_diagram(d.f, d.y, n_boot=0, seed=1)
    b = s.reliability_diagram(n_boot=0, seed=1)
    np.testing.assert_allclose(b.mu, a.mu, atol=GRID_TOL, equal_nan=True)
    np.testing.assert_allclose(b.density, a.density, atol=GRID_TOL)
    assert b.smece_tilde == pytest.approx(a.smece_tilde, abs=GRID_TOL)
    boot = s.bootstrap_smece(n_boot=100, seed=1)
    assert boot.low <= boot.value <= boot.high
    test = s.calibration_test(n_sim=100, seed=1)
    assert 0 < test.p_value <= 1


def test_resolution_warning():
    f, y = synthetic("calibrated", 3000, seed=9)
    s = CalibrationSketch(256).update(f, y)
    with pytest.warns(ResolutionWarning):
        s.smece()
    with pytest.warns(ResolutionWarning):
        s.smece_sigma(0.01)


def test_footprint_grows_with_what_it_holds_then_stays_fixed():
    one = CalibrationSketch().update([0.5], [1])
    f, y = synthetic("uniform", 200_000, seed=1)
    small = CalibrationSketch().update(f[:10_000], y[:10_000])
    large = CalibrationSketch().update(f, y)
    huge = CalibrationSketch().update(np.r_[f, f], np.r_[y, y])
    assert one.exact and small.exact and not large.exact
    assert len(one.to_bytes()) < 200
    assert len(small.to_bytes()) <= 64 * 1024  # about 5 bytes a row without weights
    assert large.nbytes == huge.nbytes < 2_000_000  # the grid: independent of n
    assert len(huge.to_bytes()) == len(large.to_bytes()) <= 1_572_960  # no larger than version 1's


def test_a_batch_of_zero_weight_is_fine_in_a_stream():
    s = CalibrationSketch().update([0.2, 0.4], [0, 1], weights=[0.0, 0.0])
    with pytest.raises(ValueError, match="sum to zero"):
        s.smece()  # the stream so far weighs nothing
    s.update([0.2, 0.9], [1, 1], weights=[1.0, 2.0])
    assert s.n == 4
    assert s.smece() == pytest.approx(smoothece.smece([0.2, 0.9], [1, 1], weights=[1.0, 2.0]), abs=1e-12)


# --- Overflow, tampered bytes, and what a grid sketch can prove -----------------------------------

def test_sketch_refuses_overflowing_weight_and_rows():
    s = CalibrationSketch(256).update([0.5], [1], [1.5e308])
    with pytest.raises(InputError, match="total weight would overflow") as err:
        s.update([0.5], [0], [1.5e308])
    assert err.value.argument == "weights" and s.n == 1
    t = CalibrationSketch(256).update([0.2, 0.8], [0, 1])
    with pytest.raises(InputError, match=r"row count would pass 2\^53"):
        for _ in range(70):
            t.merge(t)
    assert t.n == 2**53  # the last merge that fitted (counts are exact to 2^53); the refused one changed nothing


def _tamper(blob: bytes, offset: int, raw: bytes) -> bytes:
    """Changes bytes and recomputes the checksum (XXH64, tests/test_bytes.py), as a careful attacker would."""
    body = bytearray(blob[:-8])
    body[offset:offset + len(raw)] = raw
    return bytes(body) + smoothece._core.bytes_checksum(bytes(body)).to_bytes(8, "little")


def _legacy(blob: bytes, version: int, traits: int) -> bytes:
    """Version-4 bytes in the layout of versions 2 and 3: the same fields at 16 (traits at 19), the
    payload's length at 56, an FNV-1a checksum."""
    fields = bytearray(blob[24:64])
    fields[3] = traits
    payload = blob[64:-8]
    body = b"SMECESK\0" + struct.pack("<II", version, 64) + bytes(fields) + struct.pack("<Q", len(payload)) + payload
    h = 0xCBF29CE484222325
    for b in body:
        h = ((h ^ b) * 0x100000001B3) & 0xFFFFFFFFFFFFFFFF
    return body + h.to_bytes(8, "little")


@pytest.mark.parametrize("exact", [True, False])
def test_tampered_sketches_are_refused_or_consistent(exact):
    f, y = synthetic("calibrated", 500 if exact else 40_000, seed=1)
    blob = CalibrationSketch(1024).update(f, y).to_bytes()
    rng = np.random.default_rng(0)
    refused = 0
    for _ in range(150):
        offset = int(rng.integers(16, len(blob) - 8))
        raw = rng.choice([np.float64(1e308).tobytes(), np.float64(-3.5).tobytes(), bytes([rng.integers(256)])])
        tampered = _tamper(blob, offset, raw[: max(1, len(blob) - 8 - offset)])
        try:
            sketch = CalibrationSketch.from_bytes(tampered)
        except ValueError as err:
            refused += 1
            assert "clip" not in str(err) and "[" not in str(err).split(":")[0]
            continue
        # Accepted: it must be consistent enough to answer, quickly.
        start = time.monotonic()
        with np.errstate(all="ignore"):
            try:
                sketch.smece()
                sketch.bootstrap_smece(n_boot=5, seed=1)
            except (ValueError, ResolutionWarning):
                pass
        assert time.monotonic() - start < 30  # a hang guard
    assert refused > 50


def test_old_format_refused_clearly():
    blob = bytearray(CalibrationSketch(256).update([0.5], [1]).to_bytes())
    blob[8:12] = (1).to_bytes(4, "little")
    with pytest.raises(ValueError, match="format version 1.*rebuild"):
        CalibrationSketch.from_bytes(bytes(blob))


@pytest.mark.parametrize("exact", [True, False])
def test_versions_2_and_3_are_still_read(exact):
    # Version 3 added the weights' traits (0 in version 2); version 4 moved the fields into the envelope.
    f, y = synthetic("uniform", 500 if exact else 40_000, seed=2)
    w = np.random.default_rng(2).integers(1, 4, f.size).astype(float)
    s = CalibrationSketch(1024).update(f, y, w)
    blob = s.to_bytes()
    assert blob[8:12] == (4).to_bytes(4, "little") and blob[27] == 3  # whole, some above 1
    assert CalibrationSketch.from_bytes(_legacy(blob, 3, 3)) == s
    old = CalibrationSketch.from_bytes(_legacy(blob, 2, 0))
    assert old.exact == exact and old.n == s.n and old.smece() == s.smece()
    old.bootstrap_smece(n_boot=5, seed=0)  # what version 2's weights were is unknown: no warning
    with pytest.warns(smoothece.WeightKindWarning):
        s.bootstrap_smece(n_boot=5, seed=0)
    with pytest.raises(ValueError, match="header flags"):  # version 2 had nothing there
        CalibrationSketch.from_bytes(_legacy(blob, 2, 1))
    with pytest.raises(ValueError, match="unknown format version 5"):
        CalibrationSketch.from_bytes(_tamper(blob, 8, (5).to_bytes(4, "little")))


def test_grid_sketch_states_a_bound_below_its_resolution():
    # Two point masses 1e-6 apart among many distinct predictions: σ* lies below 16/256.
    rng = np.random.default_rng(2)
    f = np.r_[rng.uniform(size=300), np.full(1000, 0.5), np.full(1000, 0.5 + 1e-6)]
    y = np.r_[rng.random(300) < f[:300], np.ones(1000), np.zeros(1000)]
    rows = smoothece.smece(f, y)
    small = CalibrationSketch(256).update(f, y)
    assert not small.exact
    with pytest.warns(ResolutionWarning, match="below"):
        bound = small.smece()
    assert rows < bound == pytest.approx(16 / 256)
    exact_sketch = CalibrationSketch(2**13).update(f, y)  # few enough distinct predictions: kept exactly
    assert exact_sketch.exact and exact_sketch.smece() == pytest.approx(rows, abs=1e-9)


# --- A sketch's form and answers depend on its rows alone, not on how they were batched ----------

def test_tiny_range_stays_exact_in_one_update():
    # 1e5 predictions in [0, 1e-9]: every one distinct, but about 1,100 positions
    # at the sketch's 2^-40, so the sketch keeps them exactly however they come.
    rng = np.random.default_rng(0)
    f = rng.uniform(0.0, 1e-9, 100_000)
    y = rng.random(f.size) < 4e-5
    exact = smoothece.smece(f, y)  # the array path: exact (the rows' own atoms)
    batched = CalibrationSketch()
    for start in range(0, f.size, 5000):
        batched.update(f[start:start + 5000], y[start:start + 5000])
    whole = CalibrationSketch().update(f, y)
    assert batched.exact and whole.exact
    assert whole.smece() == batched.smece()
    assert whole.smece() == pytest.approx(exact, rel=1e-9, abs=1e-15)
    assert exact < 1e-4 < 16 / whole.resolution  # below what the grid resolves: only atoms get it right
    for n in (16_384, 16_385, 40_000):  # more distinct rows in one batch than the sketch keeps positions
        assert CalibrationSketch().update(f[:n], y[:n]).exact


def _kind(name, n, rng):
    """(f, y, weights, metric) of one kind of data."""
    f = rng.beta(2, 2, n)
    y = rng.random(n) < f**1.3
    disc = np.round(f, 2)
    y_disc = rng.random(n) < disc
    if name == "continuous":
        return f, y, None, "l1"
    if name == "continuous, weighted":
        return f, y, rng.lognormal(size=n), "l1"
    if name == "discrete":
        return disc, y_disc, None, "l1"
    if name == "piled at 0 and 1":
        piled = np.where(rng.random(n) < 0.4, 0.0, np.where(rng.random(n) < 0.5, 1.0, np.round(f, 3)))
        return piled, rng.random(n) < np.clip(piled, 0.02, 0.98), None, "l1"
    if name == "tiny range":
        return rng.uniform(0, 1e-9, n), rng.random(n) < 0.3, None, "l1"
    if name == "tiny range, logit":
        return 0.5 + rng.uniform(0, 1e-9, n), rng.random(n) < 0.5, None, "logit"
    if name == "weighted":
        return disc, y_disc, rng.lognormal(size=n), "l1"
    if name == "counts":
        return disc, y_disc, rng.integers(0, 5, n).astype(float), "l1"
    if name == "distinct rows of zero weight":
        w = (rng.random(n) < 0.5).astype(float)
        return np.where(w > 0, disc, f), y_disc, w, "l1"
    raise ValueError(name)


KINDS = ["continuous", "continuous, weighted", "discrete", "piled at 0 and 1", "tiny range", "tiny range, logit",
         "weighted", "counts", "distinct rows of zero weight"]
EXACT_SUMS = {"discrete", "piled at 0 and 1", "tiny range", "tiny range, logit", "counts",
              "distinct rows of zero weight"}  # unit or whole weights: every sum exact in any order


def _batchings(f, y, w, metric, rng, resolution):
    """The same rows as one sketch in many ways: batches, orders, merges, bytes, a grouped total."""
    new = lambda: CalibrationSketch(resolution, metric)  # noqa: E731
    n = f.size

    def rows(idx):
        return f[idx], y[idx], None if w is None else w[idx]

    out = {"one update": new().update(*rows(slice(None)))}
    s = new()
    for part in np.array_split(np.arange(n), 9):
        s.update(*rows(part))
    out["9 batches"] = s
    s = new()
    cuts = np.sort(rng.choice(np.arange(1, n), 5, replace=False))
    for part in np.split(rng.permutation(n), cuts):  # rows shuffled, batches of unequal size
        s.update(*rows(part))
    out["shuffled"] = s
    parts = [new().update(*rows(p)) for p in np.array_split(rng.permutation(n), 4)]
    out["merged left"] = ((parts[0] + parts[1]) + parts[2]) + parts[3]
    out["merged right"] = parts[3] + (parts[2] + (parts[1] + parts[0]))
    back = [CalibrationSketch.from_bytes(p.to_bytes()) for p in parts]
    out["through bytes"] = CalibrationSketch.from_bytes((back[2] + back[0]).to_bytes()) + (back[3] + back[1])
    grouped = smoothece.GroupedSketch(resolution, metric)
    for part in np.array_split(np.arange(n), 3):
        grouped.update(*rows(part)[:2], rng.integers(0, 5, part.size), rows(part)[2])
    out["grouped total"] = grouped.total()
    return out


def _answers(s, sigmas):
    d = s.reliability_diagram(n_boot=0, seed=0)
    return np.r_[s.smece(), [s.smece_sigma(x) for x in sigmas], d.mu, d.density]


@pytest.mark.parametrize("kind", KINDS)
def test_batching_never_changes_a_sketch(kind):
    rng = np.random.default_rng(KINDS.index(kind))
    f, y, w, metric = _kind(kind, 12_000, rng)
    resolution = 2**12  # keeps 2,048 positions: the exact kinds have fewer, but more distinct rows
    states = _batchings(f, y, w, metric, rng, resolution)
    forms = {name: s.exact for name, s in states.items()}
    assert len(set(forms.values())) == 1, forms
    first = states["one update"]
    assert first.exact == (kind not in ("continuous", "continuous, weighted"))
    sigmas = (1e-6, 1e-3, 0.05) if first.exact else (0.01, 0.05)
    ref = _answers(first, sigmas)
    for name, s in states.items():
        assert s.n == f.size and s.total_weight == pytest.approx(first.total_weight, rel=1e-14)
        got = _answers(s, sigmas)
        if first.exact and kind in EXACT_SUMS:  # the same state, bit for bit
            assert s.to_bytes() == first.to_bytes(), name
            np.testing.assert_array_equal(got, ref, err_msg=name)
        else:  # sums added in another order (and, on the grid, rows at their 2^-40 positions or not)
            np.testing.assert_allclose(got, ref, rtol=0, atol=1e-12, err_msg=name, equal_nan=True)
    # ... and the rows' own answers, from the arrays (exact while the sketch is; else its grid's accuracy)
    arrays = smoothece.smece(f, y, weights=w, metric=metric)
    assert first.smece() == pytest.approx(arrays, abs=1e-12 if first.exact else GRID_TOL)


# --- the logit default: a fine grid held in the blocks its rows reach ------------------------------

def logit_rows(kind, n, seed):
    """Rows people bring, spread over the logit axis as they would be."""
    rng = np.random.default_rng(seed)
    f = rng.beta(2, 2, n)
    w = None
    if kind == "piled":  # a seventh of the predictions exactly 0 or 1
        f[rng.random(n) < 0.09] = 0.0
        f[rng.random(n) < 0.06] = 1.0
    elif kind == "crossing":  # the reliability curve crosses the diagonal at 1/2
        f = rng.random(n)
    elif kind == "weighted":  # lognormal weights, a fifth of them zero
        w = rng.lognormal(0.0, 1.0, n) * (rng.random(n) > 0.2)
    truth = 0.5 + 1.3 * (f - 0.5) if kind == "crossing" else f
    y = (rng.random(n) < np.clip(truth, 0, 1)).astype(np.int8)
    return f, y, w


@pytest.mark.parametrize("kind", ["calibrated", "piled", "crossing", "weighted"])
def test_the_logit_default_answers_as_the_rows_do(kind):
    f, y, w = logit_rows(kind, 700_000, seed=11)
    sketch = CalibrationSketch(metric="logit")
    parts = np.array_split(np.arange(f.size), 5)
    for part in parts:  # batches spread onto the blocks (each far smaller than the grid)
        sketch.update(f[part], y[part], None if w is None else w[part])
    assert not sketch.exact and sketch.resolution == 2**20
    expected = smoothece.smece(f, y, weights=w, metric="logit")
    assert sketch.smece() == pytest.approx(expected, abs=1e-6)
    for sigma in (0.01, 0.3):
        assert sketch.smece_sigma(sigma) == pytest.approx(
            smoothece.smece_sigma(f, y, sigma, weights=w, metric="logit"), abs=1e-6)
    # Merged from parts in another order, and through its bytes: the same answers.
    merged = CalibrationSketch(metric="logit")
    for part in reversed(parts):
        merged.merge(CalibrationSketch(metric="logit").update(f[part], y[part], None if w is None else w[part]))
    back = CalibrationSketch.from_bytes(merged.to_bytes())
    assert back == merged and back.smece() == pytest.approx(sketch.smece(), abs=1e-12)
    # Its memory follows where the rows lie: less than half of the full grid's 56·resolution bytes.
    assert sketch._sketch.memory_bytes < 28 * sketch.resolution


def test_a_logit_segment_holds_few_blocks():
    # A segment whose predictions lie in [0.01, 0.02]: a few blocks of the logit axis.
    rng = np.random.default_rng(4)
    f = rng.uniform(0.01, 0.02, 600_000)
    y = (rng.random(f.size) < f).astype(np.int8)
    sketch = CalibrationSketch(metric="logit").update(f, y)
    assert not sketch.exact and sketch._sketch.memory_bytes < 2e6  # the full grid: 59 MB
    assert sketch.smece() == pytest.approx(smoothece.smece(f, y, metric="logit"), abs=1e-6)
