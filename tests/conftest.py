import os
import sys

import numpy as np
import pytest

# tests/exact.py (the independent evaluator) is imported as a plain module.
sys.path.insert(0, os.path.dirname(__file__))

from smoothece import datasets  # noqa: E402


def synthetic(kind: str, n: int, seed: int = 0):
    """Small data sets that stress different parts of the grid."""
    rng = np.random.default_rng(seed)
    if kind == "uniform":
        f = rng.uniform(size=n)
        y = rng.uniform(size=n) < f**2
    elif kind == "near0":
        f = rng.beta(0.3, 5.0, size=n)
        y = rng.uniform(size=n) < np.minimum(1.0, 1.3 * f)
    elif kind == "near1":
        f = 1.0 - rng.beta(0.3, 5.0, size=n)
        y = rng.uniform(size=n) < 0.9 * f
    elif kind == "point_masses":
        f = np.r_[np.zeros(n // 4), np.ones(n // 4), rng.uniform(size=n - 2 * (n // 4))]
        y = rng.uniform(size=n) < 0.5
    elif kind == "all_ones":
        f = rng.uniform(size=n)
        y = np.ones(n, dtype=bool)
    elif kind == "all_zeros":
        f = rng.uniform(size=n)
        y = np.zeros(n, dtype=bool)
    elif kind == "calibrated":
        f = rng.uniform(size=n)
        y = rng.uniform(size=n) < f
    else:
        raise ValueError(kind)
    return f.astype(np.float64), y.astype(np.float64)


def interval_by_hand(value, replicates, level=0.95, nonnegative=True):
    """The bootstrap interval reported beside ``value`` (docs/statistics.md), from the replicates
    with numpy's own quantiles: the smallest interval symmetric about the value (on the squared
    scale for a SmoothECE, never below 0) that holds the percentile interval."""
    q_low, q_high = np.quantile(replicates, [(1 - level) / 2, (1 + level) / 2])
    if not nonnegative:
        d = max(q_high - value, value - q_low)
        return value - d, value + d
    d = max(q_high**2 - value**2, value**2 - q_low**2)
    return np.sqrt(max(0.0, value**2 - d)), np.sqrt(value**2 + d)


@pytest.fixture(autouse=True)
def close_figures():
    """Figures a test made with pyplot are closed after it (pyplot is not imported for the others)."""
    yield
    plt = sys.modules.get("matplotlib.pyplot")
    if plt is not None:
        plt.close("all")


def by_gid(artists, gid):
    """The plot's artists of one role (smoothece tags each with a gid)."""
    return [a for a in artists if a.get_gid() == gid]


@pytest.fixture(scope="session")
def solar():
    return datasets.solar_flares()


@pytest.fixture(scope="session")
def resnet():
    return datasets.imagenet_resnet34()
