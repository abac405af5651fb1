"""Group keys are grouped by their values: long double keys (whose padding bytes hold
anything) and strings that differ only in trailing NULs (which numpy's fixed-width strings
drop). Every per-group number is checked against ``smoothece.smece`` on the rows a mask
picks, the mask built here from the keys' own values."""

import json

import numpy as np
import pytest

import smoothece
from smoothece import GroupedSketch, _core, smece_by_group
from smoothece.groups import format_keys


@pytest.fixture(scope="module")
def rows():
    rng = np.random.default_rng(21)
    f = rng.random(6000)
    y = rng.random(f.size) < f ** 1.3
    return f, y


def _check(result, f, y, labels, want):
    """Keys `want` in order; group i holds the rows whose label is want[i], σ* as smece on them."""
    assert list(result.keys) == want
    assert result.n.sum() == f.size
    for i, key in enumerate(want):
        mask = np.array([label == key and type(label) is type(key) for label in labels])
        assert result.n[i] == mask.sum()
        assert result.smece[i] == smoothece.smece(f[mask], y[mask], threads=1), key


def _scribbled_padding(keys):
    """The same long double values with their padding bytes set to noise, where the
    format has padding (x86's 80-bit extended precision in 16 bytes)."""
    out = keys.copy()
    finfo = np.finfo(np.longdouble)
    if out.dtype.itemsize == 16 and finfo.nmant == 63:
        raw = out.view(np.uint8).reshape(-1, 16)
        raw[:, 10:] = np.random.default_rng(3).integers(0, 256, (raw.shape[0], 6), dtype=np.uint8)
        assert np.array_equal(out, keys)  # the same values
    return out


def test_long_double_keys_group_by_value(rows):
    f, y = rows
    tenths = np.round(f, 1)
    keys = _scribbled_padding(tenths.astype(np.longdouble))
    want = [k / 10 for k in range(11)]  # the doubles np.round gives: 0.1 is the double nearest 0.1
    result = smece_by_group(f, y, keys)
    _check(result, f, y, tenths.tolist(), want)
    assert result.keys.dtype == np.longdouble
    assert json.loads(json.dumps(result.to_dict()))["keys"] == want
    streamed = GroupedSketch().update(f[:3000], y[:3000], keys[:3000]).update(f[3000:], y[3000:], keys[3000:])
    back = GroupedSketch.from_bytes(streamed.to_bytes()).smece_by_group()
    assert list(back.keys) == want
    np.testing.assert_array_equal(back.n, result.n)


def test_long_doubles_that_no_double_tells_apart_are_two_groups(rows):
    f, y = rows
    keys = np.full(f.size, 0.5, dtype=np.longdouble)
    if np.finfo(np.longdouble).eps >= np.finfo(np.float64).eps:
        return  # long double is double here (nothing finer to tell apart)
    keys[1::2] += np.finfo(np.longdouble).eps  # 0.5 and the next long double above it
    result = smece_by_group(f, y, _scribbled_padding(keys))
    assert len(result) == 2 and result.keys[0] < result.keys[1]
    half = np.arange(f.size) % 2 == 1
    assert result.smece[0] == smoothece.smece(f[~half], y[~half], threads=1)
    assert result.smece[1] == smoothece.smece(f[half], y[half], threads=1)
    texts = json.loads(json.dumps(result.to_dict()))["keys"]  # no double holds the second: both as text
    assert texts == format_keys(result.keys) and texts[0] == "0.5" and texts[0] != texts[1]
    sketch = GroupedSketch().update(f, y, keys)
    assert len(sketch) == 2
    with pytest.raises(TypeError, match="long double.*cannot be serialized"):
        sketch.to_bytes()


def test_the_core_refuses_floats_wider_than_a_double():
    with pytest.raises(TypeError, match="cannot be factorized"):
        _core.factorize(np.zeros(4, dtype=np.longdouble), 1)


NUL_LABELS = ["a\0", "a", "a\0\0", "b", "a\0b"]  # in Python's order: a, a\0, a\0\0, a\0b, b


def _nul_keys(n):
    return [NUL_LABELS[i] for i in np.random.default_rng(4).integers(0, len(NUL_LABELS), n)]


@pytest.mark.parametrize("form", ["objects", "list", "pandas"])
def test_strings_that_differ_in_trailing_nuls_are_groups_of_their_own(rows, form):
    f, y = rows
    labels = _nul_keys(f.size)
    keys = {"objects": lambda: np.array(labels, dtype=object), "list": lambda: labels,
            "pandas": lambda: pytest.importorskip("pandas").Series(labels)}[form]()
    want = sorted(NUL_LABELS)
    result = smece_by_group(f, y, keys)
    _check(result, f, y, labels, want)
    assert json.loads(json.dumps(result.to_dict()))["keys"] == want
    assert format_keys(result.keys) == ["a", "a\\x00", "a\\x00\\x00", "a\\x00b", "b"]
    if form == "pandas":
        assert list(result.to_pandas().index) == want


def test_grouped_sketch_and_rows_keep_trailing_nuls(rows):
    from smoothece.groups import GroupedRows

    f, y = rows
    labels = _nul_keys(f.size)
    keys = np.array(labels, dtype=object)
    want = sorted(NUL_LABELS)
    sketch = GroupedSketch().update(f[:3000], y[:3000], keys[:3000]).update(f[3000:], y[3000:], keys[3000:])
    assert sorted(sketch.keys()) == want
    back = GroupedSketch.from_bytes(sketch.to_bytes()).smece_by_group()
    assert list(back.keys) == want
    np.testing.assert_array_equal(back.n, [labels.count(k) for k in want])
    # the first batch without NULs (numpy strings), the next with them
    plain = np.where(keys == "a", "a", "b").astype(str)
    batched = GroupedRows().update(f[:3000], y[:3000], plain[:3000]).update(f[3000:], y[3000:], keys[3000:])
    mixed = plain[:3000].tolist() + labels[3000:]
    _check(batched.smece_by_group(), f, y, mixed, sorted(set(mixed)))
