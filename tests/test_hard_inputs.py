"""The data people bring: base rates, point masses, discrete forecasts, tiny σ,
extreme weights, threads, interrupts and tampered sketches. Every input gets
an exact answer (checked against a closed form or the independent exact
evaluator) and none may hang or crash the process."""

import math
from fractions import Fraction
import os
import signal
import subprocess
import sys
import textwrap
import time

import numpy as np
import pytest
from conftest import synthetic
from exact import exact_smece, exact_smece_sigma
from scipy.special import expit, logit, ndtr

import smoothece
from smoothece import CalibrationSketch, InputError, ResolutionWarning, _core


def atoms_limit(f, y, w=None):
    """Σ over distinct predictions of |Σ w(y − f)| / W: smECEσ once σ is far below every gap."""
    w = np.ones_like(f) if w is None else np.asarray(w, dtype=float)
    values, inverse = np.unique(f, return_inverse=True)
    sums = np.bincount(inverse, weights=w * (y - f), minlength=values.size)
    return np.abs(sums).sum() / w.sum()


# --- Point masses: σ* exact and at once ---------------------------------------------------------

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


# --- Any σ > 0 ----------------------------------------------------------------------------------

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


# --- Weights ------------------------------------------------------------------------------------

@pytest.mark.parametrize("factor", [1e-310, 1e-300, 2.0**-1000, 1e300])
def test_weights_scale_invariant_down_to_subnormal(factor):
    f, y = synthetic("uniform", 1000, seed=5)
    w = np.random.default_rng(5).lognormal(0, 1, f.size)
    base = smoothece.smece(f, y, weights=w)
    assert smoothece.smece(f, y, weights=w * factor) == pytest.approx(base, rel=1e-9)
    unit = smoothece.smece(f, y)
    assert smoothece.smece(f, y, weights=np.full(f.size, 5e-324)) == pytest.approx(unit, rel=1e-12)


def test_huge_weights_do_not_overflow():
    assert smoothece.smece([0.5, 0.5], [1, 0], weights=[1.5e308, 1.5e308]) == pytest.approx(0.0, abs=1e-15)
    assert smoothece.smece([0.25, 0.5], [1, 0], weights=[1.5e308, 1.5e308]) > 0


def test_resampling_replicates_invariant_to_scaling():
    f, y = synthetic("calibrated", 3000, seed=9)
    k = np.random.default_rng(9).integers(1, 9, f.size).astype(float)
    a = smoothece.bootstrap_smece(f, y, weights=k, n_boot=50, seed=3)
    b = smoothece.bootstrap_smece(f, y, weights=k * 2.0**-1070, n_boot=50, seed=3)  # exact subnormals
    np.testing.assert_array_equal(a.replicates, b.replicates)
    c = smoothece.bootstrap_smece(f, y, weights=k * 0.37, n_boot=50, seed=3)  # rounded: equal to the replicates' precision
    np.testing.assert_allclose(a.replicates, c.replicates, rtol=1e-6)


def test_zero_weight_rows_are_not_rows():
    f, y = synthetic("calibrated", 2000, seed=10)
    w = np.random.default_rng(10).lognormal(0, 1, f.size)
    padded_f = np.r_[f, np.random.default_rng(1).uniform(size=5000)]
    padded_y = np.r_[y, np.ones(5000)]
    padded_w = np.r_[w, np.zeros(5000)]
    a = smoothece.calibration_test(f, y, weights=w, n_sim=100, seed=4)
    b = smoothece.calibration_test(padded_f, padded_y, weights=padded_w, n_sim=100, seed=4)
    assert a.statistic == pytest.approx(b.statistic, abs=1e-8)  # the first grid follows the row count
    assert abs(np.median(a.null) - np.median(b.null)) < 0.2 * np.median(a.null)


def test_frequency_weights_resample_like_repeated_rows():
    rng = np.random.default_rng(12)
    f = rng.beta(2, 2, 3000)
    y = rng.random(f.size) < f**1.3
    k = rng.integers(1, 4, f.size)
    freq = smoothece.bootstrap_smece(f, y, weights=k.astype(float), n_boot=400, seed=1, weight_kind="frequency")
    repeated = smoothece.bootstrap_smece(np.repeat(f, k), np.repeat(y, k), n_boot=400, seed=2)
    importance = smoothece.bootstrap_smece(f, y, weights=k.astype(float), n_boot=400, seed=3)
    assert freq.value == pytest.approx(repeated.value, abs=1e-12)
    sd_freq, sd_rep, sd_imp = (np.std(r.replicates) for r in (freq, repeated, importance))
    assert abs(sd_freq / sd_rep - 1) < 0.15  # a weight counts rows
    assert sd_imp > 1.2 * sd_rep  # a row is a unit: fewer units, more spread


def test_weighted_calibration_test_has_its_size():
    # A small version of bench/size.py: calibrated data, lognormal and 75%-zero weights.
    rng = np.random.default_rng(13)
    rejected = {"lognormal": 0, "zeros": 0}
    trials = 40
    for t in range(trials):
        f = rng.beta(2, 2, 1500)
        y = rng.random(f.size) < f
        w = rng.lognormal(0, 1, f.size)
        for kind in rejected:
            ww = w * (rng.random(f.size) >= 0.75) if kind == "zeros" else w
            rejected[kind] += smoothece.calibration_test(f, y, weights=ww, n_sim=100, seed=t).p_value <= 0.05
    for kind, count in rejected.items():
        assert count <= 6, (kind, count)  # 5% of 40 is 2; today's bug rejected 17 and 24


# --- Threads, interrupts, exit --------------------------------------------------------------------

def run_python(code, timeout=120, **kw):
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True,
                          timeout=timeout, **kw)


def test_threads_argument():
    f, y = synthetic("uniform", 1000)
    base = smoothece.smece(f, y)
    assert smoothece.smece(f, y, threads=10**6) == base  # capped at the CPUs this process may use
    assert smoothece.smece(f, y, threads=2**31) == base
    for bad, exc in [(0, ValueError), (-1, ValueError), (1.5, TypeError), (True, TypeError), ("2", TypeError)]:
        with pytest.raises(exc, match="threads"):
            smoothece.smece(f, y, threads=bad)


@pytest.mark.skipif(not hasattr(os, "sched_setaffinity"), reason="needs sched_setaffinity (Linux)")
def test_cpus_follow_the_affinity_mask():
    out = run_python("""
        import os
        os.sched_setaffinity(0, {sorted(os.sched_getaffinity(0))[0]})
        import smoothece
        print(smoothece._core.available_cpus())
    """)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "1"


@pytest.mark.parametrize("call", [
    "smoothece.smece(f, y)",
    "smoothece.smece(f, y, threads=1)",
    "smoothece.CalibrationSketch().update(f, y)",
    "smoothece.bootstrap_smece(f[:20000], y[:20000], n_boot=200, seed=1)",
])
def test_daemon_threads_at_interpreter_exit(call):
    code = f"""
        import threading, time
        import numpy as np, smoothece
        f = np.random.default_rng(0).uniform(size=2_000_000)
        y = f > 0.5
        def work():
            while True:
                {call}
        for _ in range(2):
            threading.Thread(target=work, daemon=True).start()
        time.sleep(0.4)
    """
    for _ in range(3):
        out = run_python(code)
        assert out.returncode == 0, out.stderr
        assert "terminate" not in out.stderr


@pytest.mark.skipif(sys.platform == "win32", reason="SIGINT delivery")
def test_ctrl_c_stops_a_long_call_within_seconds():
    # The child turns Ctrl-C into KeyboardInterrupt itself: a parent started in the background (a CI
    # script's `cmd &`) passes SIGINT on ignored, and Python then leaves it ignored.
    code = """
        import signal, time, numpy as np, smoothece
        signal.signal(signal.SIGINT, signal.default_int_handler)
        f = np.random.default_rng(0).uniform(size=3_000_000)
        y = f > 0.5
        print("ready", flush=True)
        start = time.monotonic()
        try:
            smoothece.smece_sigma(f, y, 1e-8)  # dense data far below every grid: minutes of work
        except KeyboardInterrupt:
            print("interrupted", round(time.monotonic() - start, 1), flush=True)
    """
    proc = subprocess.Popen([sys.executable, "-c", textwrap.dedent(code)], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    assert proc.stdout.readline().strip() == "ready"
    time.sleep(2.0)
    sent = time.monotonic()
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=60)
    assert "interrupted" in out, err
    assert time.monotonic() - sent < 10  # a hang guard, not a benchmark: without the check it runs for minutes


# --- Sketches: overflow, integrity, what they can prove -----------------------------------------

def test_sketch_refuses_overflowing_weight_and_rows():
    s = CalibrationSketch(256).update([0.5], [1], [1.5e308])
    with pytest.raises(InputError, match="total weight would overflow") as err:
        s.update([0.5], [0], [1.5e308])
    assert err.value.argument == "weights" and s.n == 1
    t = CalibrationSketch(256).update([0.2, 0.8], [0, 1])
    with pytest.raises(InputError, match="row count would overflow"):
        for _ in range(70):
            t.merge(t)
    assert t.n == 2**63  # the last merge that fitted; the refused one changed nothing


def _tamper(blob: bytes, offset: int, raw: bytes) -> bytes:
    """Changes bytes and recomputes the checksum (FNV-1a), as a careful attacker would."""
    body = bytearray(blob[:-8])
    body[offset:offset + len(raw)] = raw
    h = 0xCBF29CE484222325
    for b in body:
        h = ((h ^ b) * 0x100000001B3) & 0xFFFFFFFFFFFFFFFF
    return bytes(body) + h.to_bytes(8, "little")


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
