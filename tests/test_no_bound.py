"""No number from a bound (issue 31, item 2): where a sketch's grid does not resolve σ*, a test, an
interval or a diagram is refused with the resolution that would answer (the CLI reads its file again at
that resolution); resampling at a fixed σ is resolved or refused; frequency weights of less than one row
are refused. Each reproducer gave a confident wrong answer before (a p-value of 0.003 on a calibrated
model, an interval that excluded its value, σ* above its metric's maximum)."""

import subprocess
import sys

import numpy as np
import pytest

import smoothece
from smoothece import CalibrationSketch, GroupedSketch, InputError, ResolutionError, ResolutionWarning


def calibrated(n, seed=0):
    rng = np.random.default_rng(seed)
    f = rng.beta(2, 2, n)
    return f, (rng.random(n) < f).astype(np.int8)


def sketch_of(f, y, resolution=None, metric="l1"):
    sketch = CalibrationSketch(resolution, metric)
    sketch.update(f, y)
    return sketch


def rare_events(n, seed=0):
    """A calibrated model of a rare event (mean prediction 0.0005): σ* ≈ 1e-3 logit units at 1e5
    rows, below what either default grid resolves."""
    rng = np.random.default_rng(seed)
    f = rng.beta(1, 2000, n)
    return f, (rng.random(n) < f).astype(np.int8)


@pytest.fixture(scope="module")
def coarse():
    """2e5 calibrated rows in a sketch of 256 intervals (σ ≥ 1/16 resolved; σ* of the rows ≈ 0.005)."""
    f, y = calibrated(200_000)
    return f, y, sketch_of(f, y, 256)


@pytest.mark.parametrize("ask", ["calibration_test", "bootstrap_smece", "reliability_diagram"])
def test_a_coarse_sketch_refuses_what_would_come_from_its_bound(coarse, ask):
    f, y, sketch = coarse
    with pytest.raises(ResolutionError, match=r"resolves only bandwidths from 0\.0625 on") as caught:
        getattr(sketch, ask)(seed=1)
    err = caught.value
    assert isinstance(err, InputError) and err.argument == "resolution"
    assert err.lower <= smoothece.smece(f, y) < err.upper == 0.0625  # σ* of the rows lies where it says
    assert err.needed is not None and f"resolution={err.needed}" in str(err)
    # The resolution it names answers, with σ* equal to the rows' (the accuracy contract).
    finer = sketch_of(f, y, err.needed)
    assert finer.calibration_test(seed=1, n_sim=200).statistic == pytest.approx(smoothece.smece(f, y), abs=1e-6)


def test_a_coarse_sketch_draws_at_a_bandwidth_its_grid_resolves(coarse):
    f, y, sketch = coarse
    d = sketch.reliability_diagram(sigma=0.0625, n_boot=100, seed=1)
    assert d.smece == pytest.approx(smoothece.smece_sigma(f, y, 0.0625), abs=1e-6)
    assert d.smece_low <= d.smece <= d.smece_high


@pytest.mark.parametrize("n", [100_000, 1_000_000])
def test_the_logit_sketch_by_default_answers_a_calibrated_model(n):
    # The issue: at its default resolution (2^15 then) the logit sketch's statistic was the bound,
    # 0.0367, and p = 0.001 on a calibrated model. Its default resolves σ* up to ~1e8 rows.
    f, y = calibrated(n, seed=2)
    sketch = CalibrationSketch(metric="logit")
    for part in np.array_split(np.arange(n), 7):  # batches much smaller than the grid: spread onto its blocks
        sketch.update(f[part], y[part])
    assert sketch.resolution == smoothece.sketch.DEFAULT_LOGIT_RESOLUTION
    assert sketch.exact == (n <= sketch.resolution // 2)  # its atoms, then its grid
    test = sketch.calibration_test(seed=1, n_sim=200)
    assert test.statistic == pytest.approx(smoothece.smece(f, y, metric="logit"), abs=1e-6)
    assert test.p_value > 0.01


def test_a_logit_sketch_refuses_what_its_default_grid_does_not_resolve():
    f, y = rare_events(600_000, seed=2)  # past resolution/2 distinct predictions: its grid
    sketch = sketch_of(f, y, metric="logit")
    assert not sketch.exact
    with pytest.raises(ResolutionError) as caught:
        sketch.calibration_test(seed=1)
    needed = caught.value.needed
    assert needed is not None and smoothece.sketch.DEFAULT_LOGIT_RESOLUTION < needed <= 2**22
    finer = sketch_of(f, y, needed, metric="logit")  # resolves σ* (its calibration test: 40 s at 2^21)
    assert finer.smece() == pytest.approx(smoothece.smece(f, y, metric="logit"), abs=1e-6)


def test_sigma_star_bound_never_exceeds_the_mean_absolute_residual():
    # Logit at 256 intervals resolves σ ≥ 4.7 logit units; σ* ≤ smECE₀ = E|y − f| ≤ 1 bounds it better.
    f, y = calibrated(3000, seed=3)
    sketch = sketch_of(f, y, 256, metric="logit")
    assert not sketch.exact
    with pytest.warns(ResolutionWarning, match="upper bound"):
        bound = sketch.smece()
    assert bound == pytest.approx(np.mean(np.abs(y - f)), rel=1e-9)
    assert smoothece.smece(f, y, metric="logit") <= bound <= 1.0


def test_fixed_sigma_replicates_match_a_bayesian_bootstrap_of_rows():
    """The cell method at a fixed σ against the same bootstrap done row by row in numpy (an Exp(1)
    multiplier per row, the exact smece_sigma of the reweighted rows): their medians agree to 2% from
    σ = 0.1 down to 1e-4 (replicate cells are half the σ wide; before, replicates there were drawn in
    groups as wide as σ*/2: 6% low at 3e-3, 25% low at 3e-4; below 1.5e-5, read at a coarser σ)."""
    rng = np.random.default_rng(1)
    n = 20_000
    f = rng.beta(2, 2, n)
    y = (rng.random(n) < np.clip(f + 0.05 * np.sin(2 * np.pi * f), 0, 1)).astype(np.int8)
    multipliers = np.random.default_rng(5).exponential(size=(40, n))
    for sigma in (0.1, 3e-3, 3e-4, 1e-4):
        cells = smoothece.bootstrap_smece(f, y, sigma=sigma, seed=0, n_boot=200)
        rows = [smoothece.smece_sigma(f, y, sigma, weights=m) for m in multipliers]
        assert np.median(cells.replicates) == pytest.approx(np.median(rows), rel=0.02), sigma
        assert cells.low <= cells.value <= cells.high


@pytest.mark.parametrize("where", ["arrays", "diagram", "sketch"])
def test_a_fixed_sigma_finer_than_the_cells_is_refused(where):
    f, y = calibrated(20_000, seed=4)
    finest = smoothece._core.finest_fixed_sigma("l1")
    with pytest.raises(InputError, match=r"sigma=1e-05 lies below") as caught:
        if where == "arrays":
            smoothece.bootstrap_smece(f, y, sigma=1e-5, seed=0)  # was: value 0.31, replicates ~0.04
        elif where == "diagram":
            smoothece.reliability_diagram(f, y, sigma=1e-5, seed=0)
        else:
            sketch_of(f, y, 4096).bootstrap_smece(sigma=1e-5, seed=0)
    assert caught.value.argument == "sigma"
    hint = {"arrays": "method='rows'", "diagram": "n_boot=0", "sketch": "resolution=2097152 (or more)"}[where]
    assert hint in str(caught.value) and (where == "sketch" or f"{finest:.3g}" in str(caught.value))
    # What the hints say works: the rows method, a diagram without its band.
    if where == "arrays":
        rows = smoothece.bootstrap_smece(f[:2000], y[:2000], sigma=1e-5, seed=0, n_boot=20, method="rows")
        assert rows.value == pytest.approx(smoothece.smece_sigma(f[:2000], y[:2000], 1e-5), abs=1e-12)
    if where == "diagram":
        d = smoothece.reliability_diagram(f, y, sigma=1e-5, n_boot=0)
        assert d.smece == pytest.approx(smoothece.smece_sigma(f, y, 1e-5), abs=1e-12)


@pytest.mark.parametrize("ask", ["bootstrap_smece", "calibration_test"])
def test_frequency_weights_of_less_than_one_row_are_refused(ask):
    f, y = calibrated(20_000, seed=5)
    w = np.full(f.size, 1e-12)
    with pytest.raises(InputError, match=r"sum to 2e-08, less than one row") as caught:
        getattr(smoothece, ask)(f, y, weights=w, weight_kind="frequency", seed=0)
    assert caught.value.argument == "weight_kind"
    # As importance weights (any scale) they are the unweighted rows' answer.
    assert getattr(smoothece, ask)(f, y, weights=w, weight_kind="importance", seed=0, **{
        "bootstrap_smece": {"n_boot": 50}, "calibration_test": {"n_sim": 50}}[ask]) is not None


def test_grouped_sketch_groups_below_its_grid_get_no_interval_or_p_value():
    f, y = calibrated(60_000, seed=6)
    rng = np.random.default_rng(6)
    miscalibrated = np.clip(f + 0.25, 0, 1)  # group "b": σ* ≈ 0.2, resolved at 256 intervals
    groups = np.where(rng.random(f.size) < 0.5, "a", "b")
    preds = np.where(groups == "a", f, miscalibrated)
    sketch = GroupedSketch(resolution=256)
    sketch.update(preds, y, groups)
    with pytest.warns(ResolutionWarning, match=r"1 of 2 groups \('a'\)"):
        result = sketch.smece_by_group(n_boot=100, test=True, n_sim=100, seed=0)
    a, b = list(result.keys).index("a"), list(result.keys).index("b")
    assert np.isnan(result.low[a]) and np.isnan(result.high[a]) and np.isnan(result.p_value[a])
    assert result.smece[a] == pytest.approx(0.0625)  # the bound, said to be one
    rows_b = groups == "b"
    assert result.smece[b] == pytest.approx(smoothece.smece(preds[rows_b], y[rows_b]), abs=1e-6)
    assert result.low[b] <= result.smece[b] <= result.high[b] and result.p_value[b] < 0.05


def run_cli(*args, stdin=None):
    return subprocess.run([sys.executable, "-m", "smoothece", *args], capture_output=True, text=True,
                          stdin=stdin, timeout=300)


def test_cli_reads_a_file_again_at_a_resolution_that_resolves_it(tmp_path):
    # The issue: `score x.csv --metric logit --test --ci` printed 0.0367 (the bound), p = 0.000999.
    # Its calibrated rows are resolved at the logit default; a rare event's are not: read again.
    import json

    paths = {}
    cases = {"calibrated": (calibrated(100_000, seed=7), "logit"), "rare": (rare_events(100_000, seed=7), "l1")}
    for name, ((f, y), metric) in cases.items():
        paths[name] = tmp_path / f"{name}.csv"
        np.savetxt(paths[name], np.c_[f, y], delimiter=",", header="p,y", comments="", fmt=["%.17g", "%d"])
        out = run_cli("score", str(paths[name]), "--pred", "p", "--label", "y", "--metric", metric, "--test",
                      "--ci", "--n-sim", "200", "--n-boot", "200", "--json")
        assert out.returncode == 0, out.stderr
        record = json.loads(out.stdout)
        assert record["smece"] == pytest.approx(smoothece.smece(f, y, metric=metric), abs=1e-6)
        assert record["p_value"] > 0.01 and record["ci_low"] <= record["smece"] <= record["ci_high"]
        read_again = any("read again with --resolution" in w for w in record["warnings"])
        assert read_again == (name == "rare")
    with open(paths["rare"]) as stdin:  # standard input cannot be read twice: an error naming the option
        piped = run_cli("score", "-", "--pred", "p", "--label", "y", "--test", stdin=stdin)
    assert piped.returncode == 1 and "(here: --resolution " in piped.stderr and "internal error" not in piped.stderr
