"""Scalar arguments of the public functions: bounded, checked before any pass over the
rows, and refused with an InputError (or TypeError) that names the argument and its value."""

import numpy as np
import pytest

import smoothece
from smoothece import InputError, _core

RNG = np.random.default_rng(8)
F = RNG.random(2000)
Y = RNG.random(F.size) < F
F_NAN = np.where(np.arange(F.size) == 7, np.nan, F)  # a bad row the pass would refuse


def test_tick_sample_is_at_most_the_rows():
    d = smoothece.reliability_diagram(F, Y, n_boot=0, seed=0, sample_size=10**6)
    assert d.sample_f.size == d.sample_y.size == F.size == d.n
    rows = set(zip(F.tolist(), Y.astype(float).tolist()))
    assert set(zip(d.sample_f.tolist(), d.sample_y.tolist())) <= rows  # drawn from the rows
    few = smoothece.reliability_diagram(F, Y, n_boot=0, seed=0, sample_size=10)
    assert few.sample_f.size == 10
    sketch = smoothece.CalibrationSketch().update(F[:50], Y[:50])
    assert sketch.reliability_diagram(n_boot=0, seed=0, sample_size=10**6).sample_f.size == 50
    assert smoothece.top_label_diagram(np.c_[1 - F, F], Y.astype(int), n_boot=0, seed=0,
                                       sample_size=10**6).sample_f.size == F.size


BAD_OPTIONS = [
    ("level", 1.5, InputError, "level must be in \\(0, 1\\), got 1.5"),
    ("level", 0, InputError, "level must be in \\(0, 1\\), got 0"),
    ("seed", -1, InputError, "seed must be in \\[0, 2\\*\\*64\\), got -1"),
    ("seed", 2**64, InputError, "seed must be in \\[0, 2\\*\\*64\\), got 18446744073709551616"),
    ("seed", 1.0, TypeError, "seed must be an int"),
    ("n_boot", -1, InputError, "n_boot must be >= [01], got -1"),
    ("n_boot", 2**40, InputError, "n_boot must be <= 2,147,483,647, got 1099511627776"),
    ("n_sim", 0, InputError, "n_sim must be >= 1, got 0"),
    ("sample_size", -5, InputError, "sample_size must be >= 0, got -5"),
    ("sample_size", 2**40, InputError, "sample_size must be <= 2,147,483,647, got 1099511627776"),
    ("weight_kind", "freq", InputError, "weight_kind must be 'importance' or 'frequency', got 'freq'"),
    ("threads", 0, InputError, "threads must be >= 1"),
]


def _calls(name, value, f):
    """The public functions that take the option, with it set (and consistency on for n_sim)."""
    extra = {"consistency": True} if name == "n_sim" else {}
    calls = {
        "reliability_diagram": lambda: smoothece.reliability_diagram(f, Y, **{name: value}, **extra),
        "top_label_diagram": lambda: smoothece.top_label_diagram(np.c_[1 - f, f], Y.astype(int),
                                                                 **{name: value}, **extra),
    }
    if name in ("level", "seed", "n_boot", "weight_kind", "threads"):
        calls["bootstrap_smece"] = lambda: smoothece.bootstrap_smece(f, Y, **{name: value})
    if name in ("level", "seed", "n_sim", "weight_kind", "threads"):
        calls["calibration_test"] = lambda: smoothece.calibration_test(f, Y, **{name: value})
    if name in ("level", "seed", "n_boot", "n_sim", "weight_kind"):
        test = {"test": True} if name == "n_sim" else {}
        calls["smece_by_group"] = lambda: smoothece.smece_by_group(f, Y, np.arange(f.size) % 3, **{name: value},
                                                                   **test)
    return calls


@pytest.mark.parametrize("name, value, exc, message", BAD_OPTIONS)
def test_bad_options_are_refused_before_the_rows_are_read(name, value, exc, message):
    # With a NaN row too: the option's error comes first, and no pass over the rows ran.
    for where, call in _calls(name, value, F_NAN).items():
        passes = _core.passes_over_rows()
        with pytest.raises(exc, match=message) as err:
            call()
        assert _core.passes_over_rows() == passes, where
        if exc is InputError:
            assert err.value.argument == name, where


def test_bad_options_of_grouped_calls_come_before_the_keys_pass():
    keys = np.array(["a", None, "b"] * (F.size // 3) + ["a"] * (F.size % 3), dtype=object)  # a missing key
    with pytest.raises(InputError, match="level must be in") as err:
        smoothece.smece_by_group(F, Y, keys, level=2.0)
    assert err.value.argument == "level"
