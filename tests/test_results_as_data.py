"""Every result type is plain data: to_dict() is JSON-safe and holds the result's own numbers."""

import dataclasses
import datetime
import json
import math

import numpy as np
import pytest

import smoothece
from smoothece._util import jsonable


def _data(n=1500, seed=0):
    rng = np.random.default_rng(seed)
    f = rng.uniform(size=n)
    y = rng.uniform(size=n) < f**1.3
    return f, y


def _results():
    f, y = _data()
    rng = np.random.default_rng(1)
    probs = rng.dirichlet(np.ones(3), size=600)
    labels = rng.integers(0, 3, size=600)
    return [
        smoothece.bootstrap_smece(f, y, n_boot=40, seed=1),
        smoothece.calibration_test(f, y, n_sim=40, seed=1),
        smoothece.reliability_diagram(f, y, n_boot=20, seed=1, consistency=True, n_sim=20),
        smoothece.reliability_diagram(f, y, n_boot=0, seed=1),  # None bands, NaN interval
        smoothece.binned_calibration(np.r_[f, 0.999], np.r_[y, True], n_bins=30, strategy="uniform"),
        smoothece.brier_decomposition(f, y),
        smoothece.brier_decomposition(f, y, smooth=True),
        smoothece.classwise_smece(probs, labels),
    ]


def _same(plain, value):
    """plain (from to_dict) stands for value: NaN/inf as None, arrays as lists."""
    if isinstance(value, np.ndarray):
        assert isinstance(plain, list) and len(plain) == value.size
        for p, v in zip(plain, value.tolist()):
            _same(p, v)
    elif isinstance(value, dict):
        assert set(plain) == {str(k) for k in value}
        for k, v in value.items():
            _same(plain[str(k)], v)
    elif isinstance(value, float) and not math.isfinite(value):
        assert plain is None
    else:
        assert plain == value and type(plain) in (bool, int, float, str, type(None))


@pytest.mark.parametrize("result", _results(), ids=lambda r: type(r).__name__)
def test_to_dict_is_json_and_the_results_numbers(result):
    plain = result.to_dict()
    text = json.dumps(plain, allow_nan=False)  # no NaN, inf, numpy scalars or arrays left
    assert json.loads(text) == plain
    public = [f.name for f in dataclasses.fields(result) if not f.name.startswith("_")]
    assert list(plain) == public
    for name in public:
        _same(plain[name], getattr(result, name))


def test_nan_and_inf_become_none_and_the_rest_stays():
    assert jsonable(np.array([1.5, np.nan, np.inf, -np.inf])) == [1.5, None, None, None]
    assert jsonable({0.5: np.float32(0.25), "k": np.int64(3)}) == {"0.5": 0.25, "k": 3}
    assert jsonable(np.array(["2024-03-01", "NaT"], dtype="datetime64[D]")) == ["2024-03-01", None]
    assert jsonable(datetime.date(2024, 3, 1)) == "2024-03-01"
    assert jsonable((np.bool_(True), None, "x")) == [True, None, "x"]


@pytest.mark.parametrize("p, n_sim, text", [
    (1 / 1001, 1000, "p < 0.001"),     # the floor of 1000 simulations
    (1 / 2001, 2000, "p < 0.0005"),
    (1 / 51, 50, "p < 0.02"),          # 0.0196, rounded up to one significant digit
    (1 / 50, 49, "p < 0.02"),          # exactly 0.02: not pushed to 0.03 by rounding
    (2 / 1001, 1000, "p = 0.002"),     # above the floor: the value
    (0.5, 1000, "p = 0.5"),
    (float("nan"), 1000, "p = n/a"),
])
def test_p_values_at_the_simulation_floor_read_as_a_bound(p, n_sim, text):
    from smoothece._util import format_p

    assert format_p(p, n_sim) == text
