"""Grid replicates smooth only the window of the axis that their residual reaches, padded by 10σ for every σ up
to four times the hint and the band σ (cpp/core/resampling/grid_replicates.cpp, Window): beyond the pad a
Gaussian carries less than Φ(−10) of a mass, so the window's own ends change nothing beyond rounding; smECEσ is
then read off the window's nodes, 3 per σ as on the whole axis but placed elsewhere, within that read-off's
accuracy (≤ 2.5e-5 on a replicate's σ*). Checked against the same replicates on the whole work grid (the core's
test hook turns the windows off), on data whose residual reaches part of the axis: the logit axis spans 75 units,
of which calibrated data reaches a sixth."""

import zlib

import numpy as np
import pytest

import smoothece
from smoothece import _core


def data(kind, n, rng):
    if kind == "calibrated":
        f = rng.beta(2, 2, n)
        return f, rng.random(n) < f, None
    if kind == "crossing":  # reliability curve crosses the diagonal at 0.5
        f = rng.beta(2, 2, n)
        return f, rng.random(n) < np.clip(0.5 + 1.6 * (f - 0.5), 0, 1), None
    if kind == "weighted":  # lognormal weights, a fifth of them zero
        f = rng.beta(2, 5, n)
        w = rng.lognormal(0, 1, n) * (rng.random(n) > 0.2)
        return f, rng.random(n) < f, w
    if kind == "segment":  # one narrow segment of the axis, both metrics
        f = rng.uniform(0.40, 0.45, n)
        return f, rng.random(n) < f, None
    raise ValueError(kind)


def both(call):
    """call() with windows (the default), then on the whole work grid."""
    before = _core.set_replicate_windows(True)
    try:
        windowed = call()
        _core.set_replicate_windows(False)
        whole = call()
    finally:
        _core.set_replicate_windows(before)
    return windowed, whole


def close(a, b, rtol, atol=0.0):
    np.testing.assert_allclose(np.asarray(a, float), np.asarray(b, float), rtol=rtol, atol=atol, equal_nan=True)


@pytest.mark.parametrize("metric,kind", [("logit", "calibrated"), ("logit", "crossing"), ("logit", "weighted"),
                                         ("logit", "segment"), ("l1", "segment")])
def test_windowed_replicates_equal_the_whole_grids(metric, kind):
    rng = np.random.default_rng(zlib.crc32(f"{metric} {kind}".encode()))
    f, y, w = data(kind, 20_000, rng)
    kw = dict(weights=w, metric=metric, seed=5)
    # Bands where the density is above 1e-4 of its peak: in its far tails μ̂ is the ratio of two tails, each
    # with the transforms' rounding (1e-16 of the peak), which either grid shows there (1e-5 at 1e-11 of it).
    d, d_whole = both(lambda: smoothece.reliability_diagram(f, y, n_boot=50, consistency=True, n_sim=50, **kw))
    body = d.density >= 1e-4 * d.density.max()
    for band in ("lower", "upper", "consistency_lower", "consistency_upper"):
        close(getattr(d, band)[body], getattr(d_whole, band)[body], rtol=0, atol=1e-9)
    # Replicate σ* are solved to 1e-4, relative: the read-off's placement may move the search within it.
    t, t_whole = both(lambda: smoothece.calibration_test(f, y, n_sim=200, **kw))
    close(t.null, t_whole.null, rtol=1e-4)
    assert t.p_value == t_whole.p_value and t.statistic == t_whole.statistic
    close(t.band_lower[body], t_whole.band_lower[body], rtol=0, atol=1e-9)
    close(t.band_upper[body], t_whole.band_upper[body], rtol=0, atol=1e-9)
    b, b_whole = both(lambda: smoothece.bootstrap_smece(f, y, n_boot=200, **kw))
    close(b.replicates, b_whole.replicates, rtol=1e-4)
    # At a fixed σ each replicate is one smECEσ: the read-off's accuracy alone.
    sigma = 4 * b.value if metric == "l1" else 0.05
    b, b_whole = both(lambda: smoothece.bootstrap_smece(f, y, n_boot=200, sigma=sigma, **kw))
    close(b.replicates, b_whole.replicates, rtol=5e-5)


def test_the_hook_turns_windows_off_and_on():
    # The comparison above means something only if the two settings differ: on the logit axis the windowed
    # replicates' transforms are shorter, so their rounding differs somewhere.
    rng = np.random.default_rng(3)
    f, y, _ = data("calibrated", 20_000, rng)
    b, b_whole = both(lambda: smoothece.bootstrap_smece(f, y, n_boot=100, metric="logit", seed=5))
    assert not np.array_equal(b.replicates, b_whole.replicates)
    assert _core.set_replicate_windows(True) is True  # the default is back
