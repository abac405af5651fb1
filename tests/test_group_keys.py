"""Group keys and their order: pandas periods, date objects, several key columns;
one order and one key format in every view; bytes, pandas, polars and JSON outputs.

Every per-group number is checked against ``smoothece.smece`` on the rows a
boolean mask picks, the mask built from row labels computed here in plain
Python (not by the code under test)."""

import datetime
import json
import struct
import sys

import numpy as np
import pytest

import smoothece
from smoothece import GroupedSketch, InputError, smece_by_group
from smoothece.groups import GroupedRows, format_keys

pd = pytest.importorskip("pandas")

N = 1500
START = datetime.date(2023, 11, 20)


@pytest.fixture(scope="module")
def rows():
    """Predictions, labels, a day per row (about 4 months across a year's end), a model and a segment."""
    rng = np.random.default_rng(11)
    f = rng.beta(2, 2, N)
    offsets = rng.integers(0, 120, N)
    days = [START + datetime.timedelta(days=int(d)) for d in offsets]
    model = rng.choice(["gbm", "llm", "baseline"], N)
    segment = rng.integers(8, 12, N)  # 8..11: numbers, so 10 and 11 sort after 9 (not as text)
    y = rng.random(N) < np.where(model == "llm", f ** 1.4, f)
    return f, y, days, model, segment


def _check_against_masks(result, labels, expected_keys, key_label, f, y):
    """Keys in the expected order; each group's rows, n and σ* equal smece on its mask, bit for bit."""
    assert [key_label(k) for k in result.keys] == expected_keys
    assert int(result.n.sum()) == len(labels)
    for i, want in enumerate(expected_keys):
        mask = np.array([label == want for label in labels])
        assert int(result.n[i]) == int(mask.sum())
        assert result.smece[i] == smoothece.smece(f[mask], y[mask], threads=1), want


def _month(d):
    return (d.year, d.month)


def _period_label(p):
    return (p.year, p.month)


def _day_label(k):
    return datetime.date.fromisoformat(str(np.datetime64(k, "D")))


PERIOD_FORMS = {
    "Series.dt.to_period": lambda days: pd.Series(pd.to_datetime(days)).dt.to_period("M"),
    "PeriodIndex": lambda days: pd.PeriodIndex(pd.to_datetime(days), freq="M"),
    "PeriodArray": lambda days: pd.PeriodIndex(pd.to_datetime(days), freq="M").array,
    "object array of Periods": lambda days: np.array([pd.Period(d, "M") for d in days], dtype=object),
}


@pytest.mark.parametrize("form", sorted(PERIOD_FORMS))
def test_period_keys_group_by_the_period_in_time(rows, form):
    f, y, days, _, _ = rows
    r = smece_by_group(f, y, PERIOD_FORMS[form](days))
    months = [_month(d) for d in days]
    _check_against_masks(r, months, sorted(set(months)), _period_label, f, y)
    assert r.ordered and all(isinstance(k, pd.Period) and k.freqstr == "M" for k in r.keys)
    assert format_keys(r.keys)[:3] == ["2023-11", "2023-12", "2024-01"]  # across the year's end, in time


DAY_FORMS = {
    "datetime.date list": lambda days: list(days),
    "datetime.date object Series": lambda days: pd.Series(pd.to_datetime(days)).dt.date,
    "datetime64[D]": lambda days: np.array(days, dtype="datetime64[D]"),
    "datetime64[ns] Series": lambda days: pd.Series(pd.to_datetime(days)),
    "datetime.datetime at midnight": lambda days: [datetime.datetime(d.year, d.month, d.day) for d in days],
    "object array of datetime64": lambda days: np.array([np.datetime64(d, "D") for d in days], dtype=object),
}


@pytest.mark.parametrize("form", sorted(DAY_FORMS))
def test_date_keys_of_every_form_group_alike(rows, form):
    f, y, days, _, _ = rows
    r = smece_by_group(f, y, DAY_FORMS[form](days))
    _check_against_masks(r, days, sorted(set(days)), _day_label, f, y)
    assert r.ordered and r.keys.dtype.kind == "M"
    assert format_keys(r.keys)[0] == "2023-11-20"  # ISO, a day whatever the unit


def test_date_objects_without_pandas_imported_convert_alike(rows, monkeypatch):
    # Without pandas loaded the conversion is numpy's own (slower): the same groups.
    f, y, days, _, _ = rows
    monkeypatch.setitem(sys.modules, "pandas", None)
    r = smece_by_group(f[:300], y[:300], days[:300])
    monkeypatch.undo()
    want = smece_by_group(f[:300], y[:300], np.array(days[:300], dtype="datetime64[D]"))
    np.testing.assert_array_equal(r.keys, want.keys)
    np.testing.assert_array_equal(r.smece, want.smece)
    assert r.keys.dtype == np.dtype("datetime64[D]")


def test_datetime_objects_with_times_keep_them():
    base = datetime.datetime(2024, 3, 1)
    keys = [base + datetime.timedelta(hours=h) for h in (5, 0, 5, 29, 0, 29)]
    f, y = np.linspace(0.1, 0.9, 6), np.array([0, 1, 1, 0, 1, 0])
    r = smece_by_group(f, y, keys)
    assert format_keys(r.keys) == ["2024-03-01T00:00", "2024-03-01T05:00", "2024-03-02T05:00"]
    assert r.n.tolist() == [2, 2, 2] and r.ordered


TUPLE_FORMS = {
    "tuple of arrays": lambda m, s: (m, s),
    "list of arrays": lambda m, s: [m, s],
    "list of lists": lambda m, s: [m.tolist(), s.tolist()],
    "pandas DataFrame": lambda m, s: pd.DataFrame({"model": m, "segment": s}),
    "tuple of Series": lambda m, s: (pd.Series(m, name="model"), pd.Series(s, name="segment")),
}


@pytest.mark.parametrize("form", sorted(TUPLE_FORMS))
def test_several_key_columns_give_one_group_per_combination(rows, form):
    f, y, _, model, segment = rows
    r = smece_by_group(f, y, TUPLE_FORMS[form](model, segment))
    labels = list(zip(model.tolist(), segment.tolist()))
    expected = sorted(set(labels))  # lexicographic: model as text, then segment as a number
    _check_against_masks(r, labels, expected, tuple, f, y)
    assert not r.ordered and all(isinstance(k, tuple) and len(k) == 2 for k in r.keys)
    assert [k[1] for k in r.keys[:4]] == [8, 9, 10, 11]  # numbers: 10 after 9
    named = form in ("pandas DataFrame", "tuple of Series")
    assert r.key_names == (("model", "segment") if named else None)


def test_key_columns_of_mixed_kinds_keep_each_columns_order(rows):
    # A categorical column keeps its categories' order, a period column is in time, inside the tuple order.
    f, y, days, model, _ = rows
    order = ["llm", "gbm", "baseline"]
    frame = pd.DataFrame({"model": pd.Categorical(model, categories=order + ["unused"]),
                          "month": pd.Series(pd.to_datetime(days)).dt.to_period("M")})
    r = smece_by_group(f, y, frame)
    labels = [(m, _month(d)) for m, d in zip(model.tolist(), days)]
    expected = sorted(set(labels), key=lambda t: (order.index(t[0]), t[1]))
    _check_against_masks(r, labels, expected, lambda k: (k[0], _period_label(k[1])), f, y)
    assert format_keys(r.keys)[0] == "llm / 2023-11" and r.key_names == ("model", "month")


def test_polars_key_columns(rows):
    pl = pytest.importorskip("polars")
    f, y, days, model, _ = rows
    frame = pl.DataFrame({"model": model.tolist(), "day": days})
    r = smece_by_group(f, y, frame)
    labels = list(zip(model.tolist(), days))
    _check_against_masks(r, labels, sorted(set(labels)), lambda k: (k[0], _day_label(k[1])), f, y)
    assert r.key_names == ("model", "day")


def test_one_column_in_a_frame_or_list_is_plain_keys(rows):
    f, y, _, model, _ = rows
    want = smece_by_group(f, y, model)
    for groups in (pd.DataFrame({"model": model}), [model], (pd.Series(model),)):
        r = smece_by_group(f, y, groups)
        assert list(r.keys) == list(want.keys) and r.key_names is None
        np.testing.assert_array_equal(r.smece, want.smece)


# --- bad keys ----------------------------------------------------------------------------------

def test_bad_keys_are_refused_clearly():
    f, y = np.linspace(0.1, 0.9, 4), np.array([0, 1, 1, 0])
    utc = datetime.timezone.utc
    with pytest.raises(TypeError, match=r"^groups holds time-zone-aware dates \(datetime64\[.*, UTC\]\).*tz_convert"):
        smece_by_group(f, y, pd.Series(pd.date_range("2024-01-01", periods=4, tz="UTC")))
    with pytest.raises(TypeError, match="^groups holds time-zone-aware datetimes"):
        smece_by_group(f, y, [datetime.datetime(2024, 1, d, tzinfo=utc) for d in (1, 2, 3, 4)])
    with pytest.raises(TypeError, match="^groups must hold periods of one frequency"):
        smece_by_group(f, y, np.array([pd.Period("2024-01", "M"), pd.Period("2024-01-02", "D")] * 2, dtype=object))
    with pytest.raises(TypeError, match=r"one kind.*a mix of \['Period', 'str'\]"):  # pandas would parse the text
        smece_by_group(f, y, np.array([pd.Period("2024-01", "M"), "2024-02"] * 2, dtype=object))
    with pytest.raises(TypeError, match=r"one kind.*a mix of \['date', 'int'\]"):
        smece_by_group(f, y, np.array([datetime.date(2024, 1, 1), 5] * 2, dtype=object))
    months = pd.Series([pd.Period("2024-01", "M"), None, pd.Period("2024-02", "M"), None], dtype="period[M]")
    with pytest.raises(InputError, match=r"^groups\[1\] is missing \(NA\): 2 of 4") as err:
        smece_by_group(f, y, months)
    assert (err.value.argument, err.value.index, err.value.count) == ("groups", 1, 2)
    frame = pd.DataFrame({"model": ["a", "b", "a", "b"], "segment": [1.0, 2.0, np.nan, 1.0]})
    with pytest.raises(InputError, match=r"^groups\[2\] is missing \(NA\) in key column 'segment': 1 of 4") as err:
        smece_by_group(f, y, frame)
    assert (err.value.argument, err.value.index) == ("groups", 2)
    with pytest.raises(ValueError, match=r"^groups \(key column 1\) must be a 1-D array with one key per row: got "
                                         r"shape \(3,\) for 4 rows"):
        smece_by_group(f, y, (np.arange(4), np.arange(3)))
    with pytest.raises(ValueError, match="several key columns go as a tuple of 1-D arrays or a DataFrame"):
        smece_by_group(f, y, [("a", 1), ("b", 2), ("a", 1), ("b", 2)])  # one tuple per row
    with pytest.raises(ValueError, match="several key columns go as a tuple"):
        smece_by_group(f, y, np.zeros((4, 2)))
    with pytest.raises(ValueError, match="^groups has no key columns"):
        smece_by_group(f, y, pd.DataFrame(index=range(4)))


# --- one order, one format -----------------------------------------------------------------------

def test_format_keys_one_iso_format():
    assert format_keys(np.array(["2024-03-01", "2024-03-02"], dtype="datetime64[ns]")) == ["2024-03-01",
                                                                                            "2024-03-02"]
    assert format_keys(np.array(["2024-03-01T00:00", "2024-03-01T05:30"], dtype="datetime64[s]")) == [
        "2024-03-01T00:00", "2024-03-01T05:30"]
    assert format_keys(np.array(["2024-03-01T00:00:00", "2024-03-01T00:00:07"], dtype="datetime64[us]")) == [
        "2024-03-01T00:00:00", "2024-03-01T00:00:07"]
    assert format_keys(np.array(["2024-03", "2025-01"], dtype="datetime64[M]")) == ["2024-03", "2025-01"]
    assert format_keys([datetime.date(2024, 3, 1), datetime.date(2024, 12, 31)]) == ["2024-03-01", "2024-12-31"]
    assert format_keys([pd.Period("2024-03", "M"), pd.Period("2024-04", "M")]) == ["2024-03", "2024-04"]
    assert format_keys([pd.Period("2024Q1", "Q")]) == ["2024Q1"]
    assert format_keys(np.array([1, 20, 3])) == ["1", "20", "3"]
    assert format_keys(np.array([0.5, -0.0, 2.0])) == ["0.5", "-0.0", "2.0"]
    assert format_keys(np.array([False, True])) == ["False", "True"]
    assert format_keys(np.array(["west", "north"])) == ["west", "north"]
    assert format_keys(np.array([b"ab", b"\xff"])) == ["ab", "\\xff"]
    assert format_keys([("gbm", np.datetime64("2024-03-01")), ("llm", np.datetime64("2024-03-02"))]) == [
        "gbm / 2024-03-01", "llm / 2024-03-02"]
    assert format_keys([]) == [] and format_keys(np.empty(0)) == []


def test_every_result_is_in_key_order_and_prints_it(rows):
    f, y, days, _, _ = rows
    shuffled = np.random.default_rng(3).permutation(N)
    keys = np.array(days, dtype="datetime64[D]")
    r = smece_by_group(f[shuffled], y[shuffled], keys[shuffled])
    assert np.all(np.diff(r.keys.astype(np.int64)) > 0)  # chronological, whatever the rows' order
    text = repr(r)
    lines = text.splitlines()
    assert lines[0].startswith(f"GroupedCalibration({len(r)} groups in key order, metric='l1'")
    assert lines[1].startswith("  2023-11-20: smece=") and lines[2].startswith("  2023-11-21: smece=")
    assert f"  ... {len(r) - 18} more groups" in lines  # the first 15, the last 3
    assert lines[-1].startswith(f"  {format_keys(r.keys)[-1]}: smece=")
    # The streaming answers come in the same order.
    sketch = GroupedSketch().update(f[shuffled], y[shuffled], keys[shuffled])
    np.testing.assert_array_equal(sketch.smece_by_group().keys, r.keys)
    batches = GroupedRows().update(f[:700], y[:700], keys[:700]).update(f[700:], y[700:], keys[700:])
    np.testing.assert_array_equal(batches.smece_by_group().keys, r.keys)


def test_sorting_is_asked_for_and_puts_nan_last():
    # Group "c" weighs nothing (NaN σ*); "a" and "d" tie: ties keep key order either way.
    f = np.array([0.1, 0.9, 0.3, 0.3, 0.6, 0.6, 0.1, 0.9])
    y = np.array([1, 0, 1, 0, 1, 1, 1, 0])
    w = np.array([1, 1, 1, 1, 0, 0, 1, 1.0])
    g = np.array(["a", "a", "b", "b", "c", "c", "d", "d"])
    r = smece_by_group(f, y, g, weights=w)
    values = {k: smoothece.smece(f[g == k], y[g == k], weights=w[g == k]) for k in ("a", "b", "d")}
    assert values["a"] == values["d"] > values["b"] and np.isnan(r.smece[2])
    assert r.keys[r.order("smece")].tolist() == ["a", "d", "b", "c"]  # largest first, NaN last
    assert r.keys[r.order("smece", descending=False)].tolist() == ["b", "a", "d", "c"]
    assert r.order("key").tolist() == [0, 1, 2, 3] and r.order("key", descending=True).tolist() == [3, 2, 1, 0]
    assert r.keys[r.order("n")].tolist() == ["a", "b", "c", "d"]  # all 2 rows: key order
    lines = r.table(sort_by="smece").splitlines()
    assert "groups by smece, largest first" in lines[0]
    assert [line.split(":")[0].strip() for line in lines[1:]] == ["a", "d", "b", "c"]
    assert r.table(limit=2).splitlines()[1:] == repr(r).splitlines()[1:3] + ["  ... 2 more groups"]
    assert r.to_pandas(sort_by="smece").index.tolist() == ["a", "d", "b", "c"]
    with pytest.raises(ValueError, match="^by must be one of"):
        r.order("worst")
    with pytest.raises(TypeError, match="^descending must be a bool"):
        r.order("smece", descending="yes")
    with pytest.raises(ValueError, match="^limit must be"):
        r.table(limit=-1)


def test_p_values_sort_smallest_first(rows):
    f, y, _, model, _ = rows
    r = smece_by_group(f, y, model, test=True, n_sim=200, seed=1)
    p = r.p_value.tolist()
    assert r.order("p_value").tolist() == sorted(range(len(p)), key=lambda i: (p[i], i))


# --- outputs ------------------------------------------------------------------------------------

def test_to_pandas_indexes_by_the_keys(rows):
    f, y, days, model, segment = rows
    by_day = smece_by_group(f, y, np.array(days, dtype="datetime64[D]")).to_pandas()
    assert isinstance(by_day.index, pd.DatetimeIndex) and by_day.index.name == "key"
    assert by_day.index[0] == pd.Timestamp("2023-11-20") and by_day.index.is_monotonic_increasing
    by_month = smece_by_group(f, y, pd.Series(pd.to_datetime(days)).dt.to_period("M"))
    frame = by_month.to_pandas()
    assert isinstance(frame.index, pd.PeriodIndex) and frame.index.astype(str).tolist()[:2] == ["2023-11", "2023-12"]
    np.testing.assert_array_equal(frame["smece"].to_numpy(), by_month.smece)
    both = smece_by_group(f, y, pd.DataFrame({"model": model, "segment": segment})).to_pandas()
    assert isinstance(both.index, pd.MultiIndex) and list(both.index.names) == ["model", "segment"]
    labels = list(zip(model.tolist(), segment.tolist()))
    mask = np.array([label == ("llm", 10) for label in labels])
    assert both.loc[("llm", 10), "smece"] == smoothece.smece(f[mask], y[mask], threads=1)
    assert list(both.columns) == ["n", "total_weight", "smece", "low", "high", "p_value", "p_adjusted"]
    unnamed = smece_by_group(f, y, (model, segment)).to_pandas()
    assert list(unnamed.index.names) == ["key_0", "key_1"]


def test_to_polars(rows):
    pl = pytest.importorskip("polars")
    f, y, days, model, _ = rows
    r = smece_by_group(f, y, (model, np.array(days, dtype="datetime64[D]")))
    frame = r.to_polars()
    assert frame.columns[:3] == ["key_0", "key_1", "n"]
    assert frame.schema["key_0"] == pl.String and frame.schema["key_1"] == pl.Date
    first = min(zip(model.tolist(), days))
    assert (frame["key_0"][0], frame["key_1"][0]) == first
    np.testing.assert_array_equal(frame["smece"].to_numpy(), r.smece)
    months = smece_by_group(f, y, pd.Series(pd.to_datetime(days)).dt.to_period("M")).to_polars(sort_by="smece")
    assert months.schema["key"] == pl.String and sorted(months["key"].to_list())[0] == "2023-11"
    assert months["smece"].to_list() == sorted(months["smece"].to_list(), reverse=True)


def test_to_dict_is_json(rows):
    f, y, days, model, _ = rows
    w = np.where(model == "baseline", 0.0, 1.0)  # the baseline groups weigh nothing: NaN σ*
    r = smece_by_group(f, y, (model, pd.Series(pd.to_datetime(days)).dt.to_period("M")), weights=w, n_boot=20, seed=4)
    out = json.loads(json.dumps(r.to_dict()))
    assert out["keys"][0] == ["baseline", "2023-11"] and out["smece"][0] is None  # NaN → null
    assert out["keys"] == [list(k.split(" / ")) for k in format_keys(r.keys)]
    assert out["n"] == r.n.tolist() and out["ordered"] is False and out["seed"] == 4 and out["key_names"] is None
    numbers = smece_by_group(f, y, np.array([d.day for d in days])).to_dict()
    assert numbers["keys"][:3] == [1, 2, 3] and isinstance(numbers["keys"][0], int)
    by_day = json.loads(json.dumps(smece_by_group(f, y, days).to_dict()))
    assert by_day["keys"][0] == "2023-11-20" and by_day["ordered"] is True


def test_outputs_without_the_framework_say_how_to_install(rows, monkeypatch):
    f, y, _, model, _ = rows
    r = smece_by_group(f, y, model)
    monkeypatch.setitem(sys.modules, "pandas", None)
    monkeypatch.setitem(sys.modules, "polars", None)
    with pytest.raises(ImportError, match=r"to_pandas\(\) needs pandas, which is not installed: pip install pandas"):
        r.to_pandas()
    with pytest.raises(ImportError, match=r"to_polars\(\) needs polars, which is not installed: pip install polars"):
        r.to_polars()
    assert json.dumps(r.to_dict())  # needs neither


# --- streams: sketches, batches and their bytes --------------------------------------------------

def test_grouped_sketch_with_tuple_and_period_keys_round_trips(rows):
    f, y, days, model, _ = rows
    months = pd.Series(pd.to_datetime(days)).dt.to_period("M")
    half = N // 2
    sketch = GroupedSketch().update(f[:half], y[:half], (model[:half], months[:half]))
    other = GroupedSketch().update(f[half:], y[half:], pd.DataFrame({"m": model[half:],
                                                                     "p": months[half:].to_numpy()}))
    sketch.merge(other)
    raw = sketch.to_bytes()
    assert struct.unpack_from("<I", raw, 8)[0] == 5
    back = GroupedSketch.from_bytes(raw)
    assert back.keys() == sketch.keys() and back.to_bytes() == raw
    streamed = back.smece_by_group()
    whole = smece_by_group(f, y, (model, months))
    assert list(streamed.keys) == list(whole.keys)
    np.testing.assert_array_equal(streamed.n, whole.n)
    np.testing.assert_allclose(streamed.smece, whole.smece, atol=1e-9)  # predictions kept to 2^-40
    mask = np.array([m == "gbm" and _month(d) == (2024, 1) for m, d in zip(model.tolist(), days)])
    assert back[("gbm", pd.Period("2024-01", "M"))].n == mask.sum()

    by_month = GroupedSketch().update(f, y, months)
    raw = by_month.to_bytes()
    assert struct.unpack_from("<I", raw, 8)[0] == 5
    again = GroupedSketch.from_bytes(raw)
    assert again.keys() == by_month.keys() and again.smece_by_group().ordered
    assert format_keys(again.smece_by_group().keys)[0] == "2023-11"


def test_grouped_sketch_plain_keys_write_version_5_too(rows):
    f, y, days, model, _ = rows
    for keys in (model, days, np.arange(N) % 7):
        raw = GroupedSketch().update(f, y, keys).to_bytes()
        assert struct.unpack_from("<I", raw, 8)[0] == 5
    back = GroupedSketch.from_bytes(GroupedSketch().update(f, y, days).to_bytes())
    assert back.keys()[0] == np.datetime64("2023-11-20")  # date objects became datetime64 days


def test_grouped_sketch_refuses_keys_of_another_kind(rows):
    f, y, days, model, segment = rows
    sketch = GroupedSketch().update(f[:50], y[:50], (model[:50], segment[:50]))
    before = sketch.to_bytes()
    with pytest.raises(TypeError, match=r"this sketch holds \(string, number\) keys, got 'baseline'"):
        sketch.update(f[:50], y[:50], model[:50])
    with pytest.raises(TypeError, match=r"this sketch holds \(string, number\) keys"):
        sketch.update(f[:50], y[:50], (segment[:50], model[:50]))
    assert sketch.to_bytes() == before
    months = GroupedSketch().update(f[:50], y[:50], pd.PeriodIndex(pd.to_datetime(days[:50]), freq="M"))
    with pytest.raises(TypeError, match=r"this sketch holds period\[M\] keys"):
        months.update(f[:50], y[:50], pd.PeriodIndex(pd.to_datetime(days[:50]), freq="D"))


def _resealed(body: bytes) -> bytes:
    """Bytes with their checksum (XXH64, tests/test_bytes.py) recomputed."""
    return body + smoothece._core.bytes_checksum(body).to_bytes(8, "little")


def test_grouped_sketch_bytes_with_bad_tags_are_refused():
    f, y = np.array([0.2, 0.7]), np.array([0, 1])
    raw = GroupedSketch().update(f, y, (["a", "b"], [1, 2])).to_bytes()
    body = raw[:-8]
    nested = body.replace(b"t\x02\x00\x00\x00s", b"t\x02\x00\x00\x00t", 1)  # a tuple inside a tuple
    with pytest.raises(ValueError, match="corrupt grouped sketch"):
        GroupedSketch.from_bytes(_resealed(nested))
    huge = body.replace(b"t\x02\x00\x00\x00", b"t\xff\xff\xff\x7f", 1)  # more elements than bytes
    with pytest.raises(ValueError, match="corrupt grouped sketch"):
        GroupedSketch.from_bytes(_resealed(huge))
    months = GroupedSketch().update(f, y, pd.PeriodIndex(["2024-01", "2024-02"], freq="M")).to_bytes()[:-8]
    bad_freq = months.replace(b"P\x01M", b"P\x01!", 1)
    with pytest.raises(ValueError, match="corrupt grouped sketch: bad period frequency '!'"):
        GroupedSketch.from_bytes(_resealed(bad_freq))


def test_reading_period_keys_without_pandas_says_so(monkeypatch):
    raw = GroupedSketch().update([0.2, 0.7], [0, 1], pd.PeriodIndex(["2024-01", "2024-02"], freq="M")).to_bytes()
    plain = GroupedSketch().update([0.2, 0.7], [0, 1], ["a", "b"]).to_bytes()
    monkeypatch.setitem(sys.modules, "pandas", None)
    with pytest.raises(ImportError, match="period keys needs pandas.*pip install pandas"):
        GroupedSketch.from_bytes(raw)
    assert GroupedSketch.from_bytes(plain).keys() == ["a", "b"]  # other keys need no pandas


def test_grouped_rows_in_batches_with_new_key_kinds(rows):
    # The command line's path: batches of rows answered once, as smece_by_group on all of them.
    f, y, days, model, _ = rows
    months = pd.Series(pd.to_datetime(days)).dt.to_period("M")
    for keys in ((model, months), months, days):
        whole = smece_by_group(f, y, keys)
        batches = GroupedRows()
        for lo in range(0, N, 400):
            part = tuple(k[lo:lo + 400] for k in keys) if isinstance(keys, tuple) else keys[lo:lo + 400]
            batches.update(f[lo:lo + 400], y[lo:lo + 400], part)
        got = batches.smece_by_group()
        assert list(got.keys) == list(whole.keys) and got.ordered == whole.ordered
        np.testing.assert_array_equal(got.smece, whole.smece)


def test_plots_of_period_and_tuple_keys(tmp_path):
    pd = pytest.importorskip("pandas")
    from matplotlib.figure import Figure

    rng = np.random.default_rng(11)
    day = pd.Series(pd.Timestamp("2024-01-30") + pd.to_timedelta(rng.integers(0, 120, 6000), unit="D"))
    model = rng.choice(["a", "b"], day.size)
    f = rng.beta(2, 2, day.size)
    y = rng.random(f.size) < f
    fig = Figure(figsize=(10, 4), layout="constrained")
    drift_ax, forest_ax = fig.subplots(1, 2)
    months = smoothece.smece_by_group(f, y, day.dt.to_period("M"))
    months.plot(ax=drift_ax)  # a drift over the months' starts
    line = next(a for a in drift_ax.lines if a.get_gid() == "smoothece-group-line")
    starts = pd.PeriodIndex(months.keys).to_timestamp().to_numpy()
    np.testing.assert_array_equal(np.asarray(line.get_xdata(), dtype="datetime64[ns]"), starts)
    np.testing.assert_array_equal(line.get_ydata(), months.smece)
    pairs = smoothece.smece_by_group(f, y, (model, day.dt.to_period("M")))
    pairs.plot(ax=forest_ax)  # a forest, labelled as format_keys writes the keys, worst at the top
    ticks = sorted(forest_ax.get_yticklabels(), key=lambda t: -t.get_position()[1])  # top to bottom
    shown = [t.get_text() for t in ticks]
    expected = [smoothece.groups.format_keys(pairs.keys)[i] for i in pairs.order("smece")]
    assert shown == expected and " / 2024-0" in shown[0]
    fig.savefig(tmp_path / "keys.png")
