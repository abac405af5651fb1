"""Dask: a sketch per chunk, merged in a tree, equals the one-machine answer."""

import os
import subprocess
import sys
from concurrent.futures import ProcessPoolExecutor
from functools import partial

import numpy as np
import pytest

da = pytest.importorskip("dask.array")
dd = pytest.importorskip("dask.dataframe")
pd = pytest.importorskip("pandas")
import dask  # noqa: E402
from dask.delayed import Delayed  # noqa: E402

import smoothece  # noqa: E402
from smoothece import CalibrationSketch, GroupedSketch, InputError  # noqa: E402
from smoothece.dask import (  # noqa: E402
    sketch_from_dask,
    sketch_from_dask_dataframe,
    smece_dask,
    smece_dask_dataframe,
)

SCHEDULERS = ["threads", "processes", "synchronous"]
N = 200_000


# The sketch bins on its fixed 2^15-cell grid; the array functions bin on a
# grid sized to the data (first_intervals_for_rows). Both are within ~1e-8 of
# the exact values (test_accuracy.py), so that is how far apart they may be.
GRID_TOL = 1e-8


@pytest.fixture(scope="module")
def process_pool():
    """One pool of worker processes for every run on the "processes" scheduler, made as dask makes the one
    it would start for each computation (spawned workers, its initializer, its hash seed)."""
    import dask.multiprocessing as dm

    with pytest.MonkeyPatch.context() as patch:
        if os.environ.get("PYTHONHASHSEED") in (None, "0"):
            patch.setenv("PYTHONHASHSEED", "6640")
        pool = ProcessPoolExecutor(dm.CPU_COUNT, mp_context=dm.get_context(),
                                   initializer=partial(dm.initialize_worker_process, user_initializer=None))
        yield pool
        pool.shutdown()


@pytest.fixture(params=SCHEDULERS)
def scheduler(request):
    """Each scheduler; "processes" on the file's pool (dask.config's ``pool``)."""
    if request.param != "processes":
        yield request.param
        return
    with dask.config.set(pool=request.getfixturevalue("process_pool")):
        yield request.param


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(0)
    f = rng.beta(2.0, 3.0, size=N)
    y = rng.uniform(size=N) < np.clip(1.15 * f, 0, 1)
    w = rng.uniform(0.2, 3.0, size=N)
    return f, y, w


@pytest.fixture(scope="module")
def reference(data):
    f, y, w = data
    return {
        "plain": smoothece.smece(f, y),
        "weighted": smoothece.smece(f, y, weights=w),
        "diagram": smoothece.reliability_diagram(f, y, weights=w, n_boot=0, seed=1),
    }


def _same_diagram(a, b):
    for name in ("mesh", "mu", "density", "density_positive", "density_negative"):
        np.testing.assert_allclose(getattr(a, name), getattr(b, name), rtol=0, atol=GRID_TOL, equal_nan=True)
    assert a.smece == pytest.approx(b.smece, abs=1e-12)
    assert a.smece_tilde == pytest.approx(b.smece_tilde, abs=1e-12)
    assert a.n == b.n and a.total_weight == pytest.approx(b.total_weight, rel=1e-13)


def test_arrays_equal_one_machine(data, reference, scheduler):
    f, y, w = data
    F = da.from_array(f, chunks=N // 5)       # 5 chunks
    Y = da.from_array(y, chunks=N // 3 + 1)   # other chunks: rechunked to F's
    sketch = sketch_from_dask(F, Y, w, scheduler=scheduler)  # numpy weights: chunked like F
    assert isinstance(sketch, CalibrationSketch) and sketch.n == N
    assert abs(sketch.smece() - reference["weighted"]) <= 1e-12
    _same_diagram(sketch.reliability_diagram(n_boot=0, seed=1), reference["diagram"])
    assert abs(smece_dask(F, Y, scheduler=scheduler) - reference["plain"]) <= GRID_TOL


def test_dataframe_equals_one_machine(data, reference, scheduler):
    f, y, w = data
    df = dd.from_pandas(pd.DataFrame({"score": f, "hit": y, "w": w, "other": np.arange(N)}), npartitions=4)
    sketch = sketch_from_dask_dataframe(df, "score", "hit", "w", scheduler=scheduler)
    assert sketch.n == N
    assert abs(sketch.smece() - reference["weighted"]) <= 1e-12
    _same_diagram(sketch.reliability_diagram(n_boot=0, seed=1), reference["diagram"])
    plain = smece_dask_dataframe(df, pred="score", label="hit", scheduler=scheduler)
    assert abs(plain - reference["plain"]) <= GRID_TOL


def test_default_scheduler_tree_shapes_and_resolution(data, reference):
    f, y, w = data
    F = da.from_array(f, chunks=N // 13 + 1)  # 13 chunks, the last one shorter
    Y = da.from_array(y, chunks=N // 13 + 1)
    W = da.from_array(w, chunks=N // 7)
    for split_every in (2, 3, 8, 100):
        s = sketch_from_dask(F, Y, W, split_every=split_every)  # the current (default) scheduler
        assert abs(s.smece() - reference["weighted"]) <= 1e-12
    with dask.config.set(scheduler="synchronous"):
        assert abs(smece_dask(F, Y) - reference["plain"]) <= GRID_TOL
    small = sketch_from_dask(F, Y, resolution=1024)
    assert small.resolution == 1024
    assert abs(small.smece() - CalibrationSketch(1024).update(f, y).smece()) <= 1e-12
    # a single chunk, and one-row chunks
    assert abs(smece_dask(da.from_array(f), da.from_array(y)) - reference["plain"]) <= GRID_TOL
    tiny = da.from_array(f[:50], chunks=1)
    assert abs(smece_dask(tiny, y[:50], split_every=4) - smoothece.smece(f[:50], y[:50])) <= GRID_TOL


def test_compute_false_returns_delayed(data, reference):
    f, y, w = data
    F, Y = da.from_array(f, chunks=N // 4), da.from_array(y, chunks=N // 4)
    df = dd.from_pandas(pd.DataFrame({"f": f, "y": y}), npartitions=3)
    a = sketch_from_dask(F, Y, compute=False)
    b = sketch_from_dask_dataframe(df, "f", "y", compute=False)
    assert isinstance(a, Delayed) and isinstance(b, Delayed)
    sa, sb = dask.compute(a, b, scheduler="threads")
    assert abs(sa.smece() - reference["plain"]) <= GRID_TOL
    assert abs(sb.smece() - reference["plain"]) <= GRID_TOL


def test_clip_and_dataframe_dtypes():
    f = np.array([-0.01, 0.2, 0.5, 0.9, 1.0, 0.3] * 100)
    y = np.array([0, 0, 1, 1, 1, 0] * 100)
    F = da.from_array(f, chunks=250)
    assert abs(smece_dask(F, y, clip=0.02) - smoothece.smece(f, y, clip=0.02)) <= GRID_TOL
    # pandas nullable dtypes and bool labels
    pdf = pd.DataFrame({"p": pd.array(np.clip(f, 0, 1), dtype="Float64"), "y": y.astype(bool)})
    assert abs(smece_dask_dataframe(dd.from_pandas(pdf, npartitions=2), "p", "y", scheduler="synchronous")
               - smoothece.smece(np.clip(f, 0, 1), y)) <= GRID_TOL
    # empty partitions (after a filter) are skipped
    ddf = dd.from_pandas(pd.DataFrame({"p": np.clip(f, 0, 1), "y": y, "g": np.repeat([0, 1, 2], 200)}),
                         npartitions=3, sort=False)
    part = ddf[ddf.g != 1]
    keep = np.repeat([0, 1, 2], 200) != 1
    assert abs(smece_dask_dataframe(part, "p", "y", scheduler="synchronous")
               - smoothece.smece(np.clip(f, 0, 1)[keep], y[keep])) <= GRID_TOL


def test_logit_metric_per_chunk(data):
    f, y, w = data
    F = da.from_array(f, chunks=N // 5)
    sketch = sketch_from_dask(F, y, w, metric="logit", scheduler="threads")
    ref = CalibrationSketch(metric="logit").update(f, y, w)
    assert sketch.metric == "logit" and abs(sketch.smece() - ref.smece()) <= 1e-12
    df = dd.from_pandas(pd.DataFrame({"p": f, "y": y}), npartitions=3)
    assert abs(smece_dask_dataframe(df, "p", "y", metric="logit", scheduler="synchronous")
               - CalibrationSketch(metric="logit").update(f, y).smece()) <= 1e-12
    assert abs(smece_dask(F, y, metric="logit", scheduler="synchronous")
               - smoothece.smece(f, y, metric="logit")) <= GRID_TOL
    with pytest.raises(ValueError, match="metric must be 'l1' or 'logit'"):
        sketch_from_dask(F, y, metric="l2")


# -- grouped ---------------------------------------------------------------------
@pytest.fixture(scope="module")
def grouped_frame(data):
    f, y, w = data
    rng = np.random.default_rng(5)
    region = np.array(["north", "south", "east", "west"])[rng.integers(0, 4, N)]
    day = np.datetime64("2024-01-01") + rng.integers(0, 30, N).astype("timedelta64[D]")
    return pd.DataFrame({"p": f, "y": y, "w": w, "region": region, "day": day, "tier": rng.integers(0, 3, N)})


def test_grouped_equals_smece_by_group_on_the_computed_dataframe(grouped_frame, scheduler):
    ddf = dd.from_pandas(grouped_frame, npartitions=7)
    pdf = ddf.compute(scheduler="synchronous")
    for by, weight in (("region", "w"), ("day", None), ("tier", None)):
        sketch = sketch_from_dask_dataframe(ddf, "p", "y", weight, by=by, scheduler=scheduler, split_every=3)
        assert isinstance(sketch, GroupedSketch)
        got = sketch.smece_by_group(n_boot=0)
        ref = smoothece.smece_by_group(pdf["p"], pdf["y"], pdf[by], weights=None if weight is None else pdf[weight])
        np.testing.assert_array_equal(got.keys, ref.keys)
        np.testing.assert_array_equal(got.n, ref.n)
        # sketches keep predictions to 2^-40: a group's sigma* moves by ~1e-12, far inside 1e-9
        np.testing.assert_allclose(got.smece, ref.smece, rtol=0, atol=1e-9)
        assert got.ordered == ref.ordered == (by != "region")


def test_grouped_keys_logit_empty_partitions_and_delayed(grouped_frame):
    pdf = grouped_frame.assign(region=grouped_frame["region"].astype("category"))
    ddf = dd.from_pandas(pdf, npartitions=4)
    part = ddf[ddf.tier != 1]  # partitions keep their count, some rows (and groups' rows) gone
    keep = pdf[pdf.tier != 1]
    delayed = sketch_from_dask_dataframe(part, "p", "y", by="region", metric="logit", compute=False)
    assert isinstance(delayed, Delayed)
    (sketch,) = dask.compute(delayed, scheduler="synchronous")
    got = sketch.smece_by_group()
    ref = smoothece.smece_by_group(keep["p"], keep["y"], keep["region"], metric="logit")
    assert got.metric == "logit" and sorted(got.keys.tolist()) == sorted(ref.keys.tolist())
    for key, value in zip(got.keys.tolist(), got.smece):
        assert abs(value - ref.smece[ref.keys.tolist().index(key)]) <= 1e-9
    empty = ddf[ddf.p > 2]
    assert len(sketch_from_dask_dataframe(empty, "p", "y", by="region", scheduler="synchronous")) == 0


def test_grouped_errors_name_the_partition_column_and_index_label(grouped_frame):
    bad = grouped_frame.copy()
    bad.loc[bad.index[120_003], "p"] = 1.5
    with pytest.raises(InputError, match=r"column 'p': f\[\d+\] = 1\.5: predictions.*Dask partition 2.*index "
                                         r"label 120003 of the dataframe") as info:
        sketch_from_dask_dataframe(dd.from_pandas(bad, npartitions=4), "p", "y", by="region",
                                   scheduler="synchronous")
    assert info.value.argument == "f" and info.value.value == 1.5
    keys = grouped_frame.assign(g=grouped_frame["tier"].astype(float))
    keys.loc[keys.index[7], "g"] = np.nan
    with pytest.raises(InputError, match=r"column 'g': groups\[7\] is missing.*Dask partition 0.*index label 7"):
        sketch_from_dask_dataframe(dd.from_pandas(keys, npartitions=4), "p", "y", by="g", scheduler="synchronous")
    with pytest.raises(ValueError, match=r"by='nope' is not a column of df"):
        sketch_from_dask_dataframe(dd.from_pandas(keys, npartitions=2), "p", "y", by="nope")


# -- errors --------------------------------------------------------------------
def test_bad_values_name_the_chunk_and_row(data):
    f, y, _ = data
    bad = f.copy()
    bad[150_001] = 1.5
    bad[150_007] = np.nan
    with pytest.raises(InputError, match=r"f\[1\] = 1\.5: predictions.*2 of 50000 values in f bad.*Dask chunk 3 "
                                         r"\(rows 150000 to 199999\).*row 150001 of the whole array") as info:
        smece_dask(da.from_array(bad, chunks=N // 4), y, scheduler="synchronous")
    err = info.value
    assert (err.argument, err.index, err.value, err.count, err.size) == ("f", 150_001, 1.5, 2, 50_000)
    before = bad.copy()
    with pytest.raises(InputError, match=r"column 'score': f\[1\] = 1\.5.*Dask partition 3.*index label 150001"):
        smece_dask_dataframe(dd.from_pandas(pd.DataFrame({"score": bad, "y": y}), npartitions=4), "score", "y",
                             scheduler="synchronous")
    np.testing.assert_array_equal(bad, before)
    labels = y.astype(np.int64)
    labels[10] = 2
    with pytest.raises(InputError, match=r"y\[10\] = 2: labels must be 0 or 1.*Dask chunk 0.*row 10 of the whole"):
        smece_dask(da.from_array(f, chunks=N // 4), labels, scheduler="threads")
    w = np.ones(N)
    w[N - 1] = -1.0
    with pytest.raises(InputError, match=r"weights\[49999\] = -1.*row 199999 of the whole array") as info:
        smece_dask(da.from_array(f, chunks=N // 4), y, w, scheduler="synchronous")
    assert info.value.index == N - 1
    pdf = pd.DataFrame({"p": pd.array([0.1, None, 0.3], dtype="Float64"), "y": [0, 1, 1]})
    with pytest.raises(InputError, match=r"column 'p': f\[1\] = nan"):
        smece_dask_dataframe(dd.from_pandas(pdf, npartitions=1), "p", "y", scheduler="synchronous")
    # The library's hints survive: percentages.
    with pytest.raises(InputError, match=r"look like percentages: divide them by 100 \[in Dask chunk \d"):
        smece_dask(da.from_array(100 * f, chunks=N // 4), y, scheduler="synchronous")


def test_argument_errors(data):
    f, y, _ = data
    F = da.from_array(f, chunks=N // 4)
    df = dd.from_pandas(pd.DataFrame({"f": f, "y": y, "s": ["a"] * N}), npartitions=2)
    with pytest.raises(TypeError, match="sketch_from_dask_dataframe"):
        sketch_from_dask(df, y)
    with pytest.raises(TypeError, match="f must be a Dask array, got ndarray"):
        sketch_from_dask(f, y)
    with pytest.raises(TypeError, match="f must be an array of real numbers, got dtype"):
        sketch_from_dask(da.from_array(np.array(["a", "b"])), [0, 1])
    with pytest.raises(TypeError, match="y must be a 1-D Dask array of numbers, got None"):
        sketch_from_dask(F, None)
    with pytest.raises(ValueError, match=r"f and y must have the same length.*\(200000,\).*\(199999,\)"):
        sketch_from_dask(F, da.from_array(y[1:]))
    with pytest.raises(ValueError, match=r"f must be 1-D, got shape \(2, 2\)"):
        sketch_from_dask(da.ones((2, 2)), da.ones(4))
    with pytest.raises(ValueError, match="unknown chunk sizes"):
        sketch_from_dask(F[F > 0.5], y)
    with pytest.raises(ValueError, match="f is empty"):
        sketch_from_dask(da.ones(0), da.ones(0))
    with pytest.raises(ValueError, match="power of two"):
        sketch_from_dask(F, y, resolution=1000)
    with pytest.raises(ValueError, match="split_every must be >= 2"):
        sketch_from_dask(F, y, split_every=1)
    with pytest.raises(TypeError, match="df must be a dask.dataframe.DataFrame"):
        sketch_from_dask_dataframe(F, "f", "y")
    with pytest.raises(ValueError, match=r"pred='g' is not a column of df"):
        sketch_from_dask_dataframe(df, "g", "y")
    with pytest.raises(ValueError, match=r"weight='w' is not a column of df"):
        sketch_from_dask_dataframe(df, "f", "y", "w")
    with pytest.raises(TypeError, match=r"column 's' \(label\) must hold real numbers"):
        sketch_from_dask_dataframe(df, "f", "s")
    with pytest.raises(ValueError, match="df has no rows"):
        smece_dask_dataframe(df[df.f > 2], "f", "y", scheduler="synchronous")


def test_import_smoothece_does_not_import_dask():
    code = "import sys, smoothece; assert 'dask' not in sys.modules, sorted(m for m in sys.modules if 'dask' in m)"
    subprocess.run([sys.executable, "-c", code], check=True, capture_output=True)
