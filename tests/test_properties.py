"""Properties of the SmoothECE that hold whatever the data."""

import numpy as np
import pytest
from conftest import synthetic

import smoothece


@pytest.fixture(scope="module")
def data():
    return synthetic("near1", 5000, seed=1)


def test_non_increasing_in_sigma(data, solar):
    for f, y in [data, (solar["DAFFS"].f, solar["DAFFS"].y), (solar["ASSA"].f, solar["ASSA"].y)]:
        sigmas = np.geomspace(0.002, 1.0, 40)
        values = np.array([smoothece.smece_sigma(f, y, s) for s in sigmas])
        assert np.all(np.diff(values) <= 1e-12), values


def test_fixpoint_property(data):
    s = smoothece.smece(*data)
    assert smoothece.smece_sigma(*data, s) == pytest.approx(s, abs=1e-9)


def test_permutation_invariant(data):
    f, y = data
    perm = np.random.default_rng(2).permutation(f.size)
    assert smoothece.smece(f[perm], y[perm]) == pytest.approx(smoothece.smece(f, y), abs=1e-13)
    assert smoothece.smece_sigma(f[perm], y[perm], 0.03) == pytest.approx(smoothece.smece_sigma(f, y, 0.03), abs=1e-13)


def test_integer_weights_equal_duplication(data):
    # (Equal to rounding here because both row counts get the same first grid;
    # test_pbt.py covers counts whose grids differ, to the accuracy bound.)
    f, y = data
    counts = np.random.default_rng(3).integers(0, 4, size=f.size)
    dup_f, dup_y = np.repeat(f, counts), np.repeat(y, counts)
    w = counts.astype(np.float64)
    assert smoothece.smece(f, y, weights=w) == pytest.approx(smoothece.smece(dup_f, dup_y), abs=1e-12)
    assert smoothece.smece_sigma(f, y, 0.02, weights=w) == pytest.approx(
        smoothece.smece_sigma(dup_f, dup_y, 0.02), abs=1e-12
    )


def test_weights_scale_free(data):
    f, y = data
    w = np.random.default_rng(4).uniform(0.5, 2.0, size=f.size)
    assert smoothece.smece(f, y, weights=w) == pytest.approx(smoothece.smece(f, y, weights=1e6 * w), abs=1e-12)


def test_float32_equals_float64_of_same_values(data):
    f, y = data
    f32 = f.astype(np.float32)
    assert abs(smoothece.smece(f32, y) - smoothece.smece(f32.astype(np.float64), y)) <= 1e-6
    assert abs(smoothece.smece(f32, y) - smoothece.smece(f, y)) <= 1e-6


@pytest.mark.parametrize("dtype", [bool, np.int8, np.uint8, np.int32, np.int64, np.float32, np.float64,
                                   np.int16, np.uint64])
def test_label_dtypes_agree(data, dtype):
    f, y = data
    assert smoothece.smece(f, y.astype(dtype)) == smoothece.smece(f, y)


def test_strided_and_reversed_views_read_in_place(data):
    f, y = data
    big_f = np.repeat(f, 3)
    big_y = np.repeat(y.astype(bool), 3)
    assert smoothece.smece(big_f[::3], big_y[::3]) == pytest.approx(smoothece.smece(f, y), abs=1e-13)
    assert smoothece.smece(f[::-1], y[::-1]) == pytest.approx(smoothece.smece(f, y), abs=1e-13)
    both = np.stack([f, y], axis=1)  # a column of a C-ordered 2-D array has stride 16
    assert smoothece.smece(both[:, 0], both[:, 1]) == pytest.approx(smoothece.smece(f, y), abs=1e-13)


def test_lists_and_other_array_likes(data):
    f, y = data
    assert smoothece.smece(list(f[:100]), list(y[:100])) == smoothece.smece(f[:100], y[:100])


def test_thread_counts_agree():
    f, y = synthetic("uniform", 400_000, seed=6)  # large enough to be split
    one = smoothece.smece(f, y, threads=1)
    assert abs(smoothece.smece(f, y, threads=2) - one) <= 1e-12
    assert abs(smoothece.smece(f, y, threads=3) - one) <= 1e-12
    assert abs(smoothece.smece_sigma(f, y, 0.01, threads=2) - smoothece.smece_sigma(f, y, 0.01, threads=1)) <= 1e-12


def test_calibrated_data_shrinks_with_n():
    values = []
    for n in (1_000, 10_000, 100_000, 1_000_000):
        reps = [smoothece.smece(*synthetic("calibrated", n, seed=s)) for s in range(5)]
        values.append(np.mean(reps))
    assert all(b < a for a, b in zip(values, values[1:])), values
    assert values[-1] < 0.3 * values[0]


def test_miscalibration_is_detected():
    rng = np.random.default_rng(8)
    f = rng.uniform(size=200_000)
    y = rng.uniform(size=f.size) < f**2  # E[y|f] = f², calibration error E|f − f²| = 1/6
    assert smoothece.smece(f, y) == pytest.approx(1 / 6, abs=0.02)
