"""Diagrams whose curve or bands are defined at no two neighbouring mesh points (rows on
one prediction at sigma* = 0, an all-NaN band): the plot draws what is defined, says what
it left out, and its legend works."""

import dataclasses

import numpy as np
import pytest
from conftest import by_gid

import smoothece

pytest.importorskip("matplotlib")


@pytest.fixture(autouse=True)
def agg():
    import matplotlib

    matplotlib.use("Agg")


def test_rows_on_one_prediction_plot_without_curve_and_bands():
    # Every prediction 0 and every label 0: calibrated, sigma* = 0, and on the logit metric's
    # mesh the curve and both bands are defined at the one mesh point 0 alone.
    d = smoothece.reliability_diagram(np.zeros(10), np.zeros(10), metric="logit", consistency=True, n_boot=20,
                                      n_sim=20, seed=0)
    assert d.smece == 0.0 and np.isfinite(d.mu).sum() == 1 and np.isfinite(d.consistency_lower).sum() == 1
    with pytest.warns(UserWarning, match="curve, consistency band and bootstrap band are not drawn: defined at 1 "
                                         "of 513 mesh points, no two of them neighbours"):
        ax = d.plot(density_panel=True)
    assert not by_gid(ax.collections, "smoothece-consistency") and not by_gid(ax.collections, "smoothece-band")
    assert ax.get_legend() is None  # no band to explain
    legend = ax.legend()  # the caller's legend: the curve's entry
    assert [t.get_text() for t in legend.get_texts()] == ["smoothed reliability"]
    ax.figure.canvas.draw()


def test_an_all_nan_consistency_band_is_left_out_and_said():
    rng = np.random.default_rng(1)
    f = rng.random(500)
    y = rng.random(500) < f
    d = smoothece.reliability_diagram(f, y, consistency=True, n_boot=20, n_sim=20, seed=0)
    nan = np.full_like(d.consistency_lower, np.nan)
    empty = dataclasses.replace(d, consistency_lower=nan, consistency_upper=nan)
    with pytest.warns(UserWarning, match="the diagram's consistency band is not drawn"):
        ax = empty.plot()
    assert not by_gid(ax.collections, "smoothece-consistency")
    assert len(by_gid(ax.collections, "smoothece-band")) == 1 and len(by_gid(ax.collections, "smoothece-curve")) == 1
    ax.legend()
    ax.figure.canvas.draw()
