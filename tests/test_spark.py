"""Spark (local mode): a sketch per partition, merged exactly, equals the array answer on the collected rows.

Two references for every number: the array functions (``smoothece.smece``,
``smoothece.smece_by_group``) on the rows collected through pandas (via Arrow), and
one sketch of those rows built in one piece on the driver.

- Against one sketch of all rows the Spark result differs only by the
  rounding of the merged sums (measured ≤ 3.1e-14 here): EXACT_TOL = 1e-12.
- Against the array functions the grid path differs: a sketch keeps
  predictions to 2^-40 and, past resolution/2 distinct predictions, bins them
  on its fixed 2^15-cell grid, where ``smece`` bins the rows on a grid sized
  to the data. Both are within the accuracy contract (1e-6) of the exact
  value; measured apart by ≤ 2.0e-12 here (weighted l1 on the synthetic rows;
  1.9e-12 for ImageNet in logit) and up to 5.3e-11 on other data, so
  ARRAY_TOL = 1e-9.
"""

import os
import subprocess
import sys

import numpy as np
import pytest

pyspark = pytest.importorskip("pyspark")
pd = pytest.importorskip("pandas")
pytest.importorskip("pyarrow")

from pyspark.sql import functions as F  # noqa: E402

import smoothece  # noqa: E402
from smoothece import CalibrationSketch, GroupedCalibration, GroupedSketch, InputError, datasets  # noqa: E402
from smoothece.spark import sketch_from_spark, smece_by_group_spark, smece_spark  # noqa: E402

# PySpark 4 warns, at every Arrow conversion, that it does not fully support the installed pandas 3:
# a note about the environment (mapInArrow does not use pandas), not about this library.
pytestmark = pytest.mark.filterwarnings("ignore:PySpark does not yet fully support pandas:FutureWarning")

N = 20_000
EXACT_TOL = 1e-12
ARRAY_TOL = 1e-9
PARTITIONS = (1, 3, 7)


@pytest.fixture(scope="module")
def spark():
    saved = {k: os.environ.get(k) for k in ("PYSPARK_PYTHON", "PYSPARK_DRIVER_PYTHON")}
    os.environ["PYSPARK_PYTHON"] = os.environ["PYSPARK_DRIVER_PYTHON"] = sys.executable
    from pyspark.sql import SparkSession

    session = (SparkSession.builder.master("local[2]").appName("smoothece-test-spark")
               .config("spark.ui.enabled", "false").config("spark.ui.showConsoleProgress", "false")
               .config("spark.sql.shuffle.partitions", "4")
               .config("spark.driver.host", "127.0.0.1").config("spark.driver.bindAddress", "127.0.0.1")
               .config("spark.sql.session.timeZone", "America/New_York")  # timestamps keyed as Spark shows them
               .config("spark.sql.files.maxPartitionBytes", "512k")  # the ImageNet file (1.4 MB) in 3 partitions
               .config("spark.driver.extraJavaOptions", "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC")  # quicker start
               .getOrCreate())
    session.sparkContext.setLogLevel("ERROR")
    yield session
    session.stop()
    for k, v in saved.items():
        if v is None:
            os.environ.pop(k, None)
        else:
            os.environ[k] = v


def _uniform(k: int):
    """A uniform number in [0, 1) from the row's id alone (the same rows whatever the partitioning)."""
    return (F.xxhash64("id", F.lit(k)).bitwiseAND((1 << 52) - 1) / float(1 << 52))


def _rows(spark, parts: int):
    """N synthetic rows in `parts` partitions, computed from the id (no shuffle, nothing cached)."""
    f = _uniform(1) ** 1.5
    region = F.element_at(F.array(*(F.lit(r) for r in ("north", "south", "east", "west"))),
                         (F.floor(_uniform(2) * 4) + 1).cast("int"))
    truth = F.when(region == "west", f ** 1.5).otherwise(F.least(1.1 * f, F.lit(1.0)))
    # 2024-03-09 to 03-12 at midnight or 5 hours later, across the change to summer time in America/New_York
    stamp = F.expr("timestamp'2024-03-09 00:00:00'") + F.make_interval(
        days=F.floor(_uniform(6) * 4).cast("int"), hours=(F.floor(_uniform(7) * 2) * 5).cast("int"))
    return spark.range(0, N, 1, parts).select(
        "id", f.alias("p"), (_uniform(3) < truth).alias("y"), (-F.log1p(-_uniform(4))).alias("w"),
        region.alias("region"), F.floor(_uniform(5) * 3).cast("int").alias("tier"), stamp.alias("stamp"),
        F.to_date(stamp).alias("day"))


@pytest.fixture(scope="module")
def frames(spark):
    """The same rows in 1, 3 and 7 partitions, and those rows collected through pandas (with the
    timestamps as Spark shows them)."""
    out = {parts: _rows(spark, parts) for parts in PARTITIONS}
    shown = out[7].withColumn("stamp_shown", F.date_format("stamp", "yyyy-MM-dd HH:mm:ss"))
    collected = shown.toArrow().to_pandas()
    assert len(collected) == N
    return out, collected


def _with_nulls_and_bad_values(spark):
    """1000 rows in 3 partitions, and where each id lies (partition, row within it)."""
    small = spark.range(0, 1000, 1, 3).select("id", _uniform(1).alias("p"), (_uniform(2) < 0.5).cast("int").alias("y"))
    located = small.withColumn("pid", F.spark_partition_id()).toArrow().to_pandas()
    located["row"] = located.groupby("pid").cumcount()
    return small, located.set_index("id")


# -- numbers -----------------------------------------------------------------------------------
def test_every_partitioning_equals_the_collected_rows(frames):
    out, c = frames
    ref_weighted = smoothece.smece(c.p, c.y, weights=c.w)
    one = CalibrationSketch().update(c.p, c.y, c.w)
    for parts, split_every in zip(PARTITIONS, (None, None, 2)):  # 7 partitions with split_every=2: a 3-level tree
        sketch = sketch_from_spark(out[parts], "p", "y", "w", split_every=split_every)
        assert isinstance(sketch, CalibrationSketch) and sketch.n == N and not sketch.exact
        assert sketch.total_weight == pytest.approx(c.w.sum(), rel=1e-12)
        assert abs(sketch.smece() - one.smece()) <= EXACT_TOL
        assert abs(sketch.smece() - ref_weighted) <= ARRAY_TOL
    assert abs(smece_spark(out[3], "p", "y") - smoothece.smece(c.p, c.y)) <= ARRAY_TOL


def test_logit_metric_resolution_and_column_types(frames):
    out, c = frames
    # With metric="logit" the default grid resolves sigma >= 0.0367 logit units; these rows' sigma* is 0.028.
    sketch = sketch_from_spark(out[7], "p", "y", "w", metric="logit", resolution=1 << 18)
    assert (sketch.metric, sketch.resolution) == ("logit", 1 << 18)
    ref = smoothece.smece(c.p, c.y, weights=c.w, metric="logit")
    assert abs(sketch.smece() - ref) <= ARRAY_TOL
    assert abs(sketch.smece() - CalibrationSketch(1 << 18, "logit").update(c.p, c.y, c.w).smece()) <= EXACT_TOL
    # float predictions, integer labels, decimal weights, a column name with a dot and a space
    typed = out[3].select(F.col("p").cast("float").alias("p 32"), F.col("y").cast("int").alias("y.int"),
                          F.col("w").cast("decimal(12,6)").alias("w"))
    t = typed.toArrow().to_pandas()
    assert t["p 32"].dtype == np.float32
    got = smece_spark(typed, "p 32", "y.int", "w")
    assert abs(got - smoothece.smece(t["p 32"], t["y.int"], weights=t.w.astype(float))) <= ARRAY_TOL


def test_by_group_equals_smece_by_group_on_the_collected_rows(frames):
    out, c = frames
    options = dict(n_boot=50, test=True, n_sim=50, seed=3)
    got = smece_by_group_spark(out[7], "p", "y", "w", by="region", split_every=3, **options)
    assert isinstance(got, GroupedCalibration)
    ref = smoothece.smece_by_group(c.p, c.y, c.region, weights=c.w, **options)
    np.testing.assert_array_equal(got.keys, ["east", "north", "south", "west"])
    np.testing.assert_array_equal(got.keys, ref.keys)
    np.testing.assert_array_equal(got.n, ref.n)
    np.testing.assert_allclose(got.total_weight, ref.total_weight, rtol=1e-12)
    np.testing.assert_allclose(got.smece, ref.smece, rtol=0, atol=ARRAY_TOL)
    assert int(np.argmax(got.smece)) == 3  # "west" is the miscalibrated region
    # intervals and tests are drawn from each group's sketch (group i with seed + i): those of one sketch of all rows
    one = GroupedSketch().update(c.p, c.y, c.region, c.w).smece_by_group(**options)
    for name in ("smece", "low", "high"):
        np.testing.assert_allclose(getattr(got, name), getattr(one, name), rtol=0, atol=EXACT_TOL)
    np.testing.assert_array_equal(got.p_value, one.p_value)
    np.testing.assert_array_equal(got.p_adjusted, one.p_adjusted)


def test_group_keys_of_every_kind(frames):
    out, c = frames
    cases = {
        "tier": (c.tier.to_numpy(), True),  # integers: ordered
        "day": (np.array(c.day.tolist(), dtype="datetime64[D]"), True),  # Spark dates
        "stamp": (np.array(c.stamp_shown, dtype="datetime64[us]"), True),  # timestamps as Spark shows them
        ("region", "tier"): ((c.region + "|" + c.tier.astype(str)).to_numpy(), False),  # one string key
    }
    for by, (keys, ordered) in cases.items():
        sketch = sketch_from_spark(out[3], "p", "y", by=list(by) if isinstance(by, tuple) else by)
        assert isinstance(sketch, GroupedSketch)
        got = sketch.smece_by_group()
        ref = smoothece.smece_by_group(c.p, c.y, keys)
        np.testing.assert_array_equal(got.keys, ref.keys)
        np.testing.assert_array_equal(got.n, ref.n)
        np.testing.assert_allclose(got.smece, ref.smece, rtol=0, atol=ARRAY_TOL)
        assert got.ordered == ref.ordered == ordered
    # midnight or 5 hours later on each of 4 days, the day summer time begins 6 hours later
    assert np.datetime64("2024-03-10T06:00") in cases["stamp"][0] and np.unique(cases["stamp"][0]).size == 8


# -- real data ---------------------------------------------------------------------------------
def test_solar_flare_forecasts_as_published(spark):
    """The shipped CSV read by Spark as it is: NA (null) where a method issued no forecast, -0.01 in MCEVOL."""
    path = datasets.path("solar_flares_c1.csv")
    with open(path, encoding="utf-8") as fh:
        header = [h.strip('"') for h in fh.readline().strip().split(",")]
    schema = ", ".join(["`VALID_DATE` date"] + [f"`{h}` double" for h in header[1:]])
    raw = spark.read.csv(path, header=True, schema=schema, nullValue="NA")
    forecasts = datasets.solar_flares()  # read independently (numpy), rows without a forecast dropped
    missing = 731 - forecasts["NJIT"].f.size
    nulls = rf"column 'NJIT' \(pred\) holds null values: {missing} of 731 rows, the first at row \d+ of Spark partition"
    with pytest.raises(InputError, match=nulls + r".*dropna\(subset=\['NJIT'\]\)") as info:
        smece_spark(raw, "NJIT", "rlz.C1")
    assert (info.value.argument, info.value.count, info.value.size) == ("f", missing, 731)
    with pytest.raises(InputError, match=r"column 'MCEVOL': f\[\d+\] = -0\.01: predictions .*Spark partition \d"):
        smece_spark(raw, "MCEVOL", "rlz.C1")
    # long form, one row per forecast: per method, clipped as the array functions clip
    long = raw.unpivot(F.col("`rlz.C1`"), header[1:-1], "method", "f").dropna(subset=["f"])
    got = smece_by_group_spark(long, "f", "rlz.C1", by="method", clip=True)
    f = np.concatenate([v.f for v in forecasts.values()])
    y = np.concatenate([v.y for v in forecasts.values()])
    method = np.concatenate([[k] * v.f.size for k, v in forecasts.items()])
    ref = smoothece.smece_by_group(f, y, method, clip=True)
    np.testing.assert_array_equal(got.keys, sorted(forecasts))
    np.testing.assert_array_equal(got.n, ref.n)
    np.testing.assert_allclose(got.smece, ref.smece, rtol=0, atol=ARRAY_TOL)


def test_imagenet_confidences(spark):
    path = datasets.path("imagenet_resnet34.csv")
    table = (spark.read.csv(path, header=True, schema="true_label int, pred_label int, confidence double")
             .withColumn("correct", F.col("true_label") == F.col("pred_label")))
    assert table.rdd.getNumPartitions() == 3
    r = datasets.imagenet_resnet34()
    assert abs(smece_spark(table, "confidence", "correct") - smoothece.smece(r.f, r.y)) <= ARRAY_TOL
    assert abs(smece_spark(table, "confidence", "correct", metric="logit", split_every=2)
               - smoothece.smece(r.f, r.y, metric="logit")) <= ARRAY_TOL


def test_the_readmes_spark_snippet_on_this_session(spark):
    """The README's Spark snippet, as test_readme.py runs the others, and the value it quotes: its
    getOrCreate() returns this file's session (a JVM of its own took longer than this file's tests)."""
    from test_readme import SPARK_BLOCKS, assert_as_quoted, quoted, run_here

    assert SPARK_BLOCKS
    for block in SPARK_BLOCKS:
        pairs = quoted(block)
        assert pairs
        assert_as_quoted(pairs, run_here(block))


# -- errors ------------------------------------------------------------------------------------
def test_bad_values_and_nulls_name_the_column_partition_and_row(spark):
    small, where = _with_nulls_and_bad_values(spark)
    # two bad predictions in two partitions: the first partition's is reported, the other counted
    a = int(where.index[(where.pid == 2) & (where.row == 5)][0])
    b = int(where.index[where.pid == 0][40])
    bad = small.withColumn("p", F.when(F.col("id").isin(a, b), 1.5).otherwise(F.col("p")))
    placed = r"\[in Spark partition 0; .*row 40 of the partition; 1 other partition has bad rows too \(2\)\]"
    with pytest.raises(InputError, match=r"column 'p': f\[40\] = 1\.5: predictions must be.*" + placed) as info:
        smece_spark(bad, "p", "y")
    assert (info.value.argument, info.value.index, info.value.value, info.value.count) == ("f", 40, 1.5, 1)
    # nulls: counted over the whole DataFrame, the first (by partition, then row) named
    ids = np.arange(7, 1000, 250)
    holed = (small.withColumn("p", F.when(F.col("id").isin(*ids.tolist()), None).otherwise(F.col("p")))
             .withColumn("y", F.when(F.col("id") == 3, None).otherwise(F.col("y"))))
    first_pid, first_row = (int(v) for v in where.loc[ids].sort_values(["pid", "row"])[["pid", "row"]].iloc[0])
    with pytest.raises(InputError, match=rf"column 'p' \(pred\) holds null values: 4 of 1,000 rows, the first at "
                                         rf"row {first_row} of Spark partition {first_pid}; other columns with nulls: "
                                         r"'y' \(1\)") as info:
        sketch_from_spark(holed, "p", "y", by="id")
    assert (info.value.argument, info.value.index, info.value.count, info.value.size) == ("f", first_row, 4, 1000)


def test_argument_errors_before_any_job(frames):
    out, c = frames
    df = out[1]
    with pytest.raises(TypeError, match=r"df must be a pyspark.sql.DataFrame, got pandas.*smoothece.smece"):
        sketch_from_spark(c, "p", "y")
    with pytest.raises(InputError, match=r"pred='P' is not a column of df \(columns: \['id', 'p', .*\]\); "
                                         r"did you mean 'p'\?") as info:
        smece_spark(df, "P", "y")
    assert info.value.argument == "pred"
    with pytest.raises(InputError, match=r"weight='weight' is not a column of df"):
        smece_spark(df, "p", "y", "weight")
    with pytest.raises(TypeError, match=r"pred must be a column name \(str\), got Column"):
        smece_spark(df, F.col("p"), "y")
    with pytest.raises(TypeError, match=r"column 'region' \(label\) must hold real numbers, got Spark type string"):
        smece_spark(df, "p", "region")
    with pytest.raises(TypeError, match=r"column 'keys' \(by\) must hold group keys .*got Spark type array<int>"):
        sketch_from_spark(df.withColumn("keys", F.array("tier")), "p", "y", by="keys")
    with pytest.raises(InputError, match=r"label='y' is ambiguous: df has 2 columns of that name"):
        smece_spark(df.select("p", "y", F.col("w").alias("y")), "p", "y")
    with pytest.raises(InputError, match=r"by names a column twice"):
        sketch_from_spark(df, "p", "y", by=["region", "region"])
    with pytest.raises(ValueError, match="metric must be 'l1' or 'logit'"):
        smece_spark(df, "p", "y", metric="l2")
    with pytest.raises(ValueError, match="power of two"):
        smece_spark(df, "p", "y", resolution=1000)
    with pytest.raises(ValueError, match="split_every must be >= 2"):
        smece_spark(df, "p", "y", split_every=1)
    with pytest.raises(TypeError, match="clip must be a bool or a float"):
        smece_spark(df, "p", "y", clip=1)
    with pytest.raises(TypeError, match="needs by="):
        smece_by_group_spark(df, "p", "y", by=None)
    with pytest.raises(ValueError, match="n_boot"):
        smece_by_group_spark(df, "p", "y", by="region", n_boot=-1)


def test_empty_dataframe_is_refused_like_empty_arrays(frames):
    out, _ = frames
    empty = out[3].filter(F.col("p") > 2)
    with pytest.raises(InputError) as ref:
        smoothece.smece(np.empty(0), np.empty(0))
    with pytest.raises(InputError, match="df has no rows: at least one prediction is needed") as info:
        smece_spark(empty, "p", "y")
    assert (info.value.argument, info.value.size) == (ref.value.argument, ref.value.size) == ("f", 0)
    grouped = sketch_from_spark(empty, "p", "y", by="region", metric="logit")
    assert isinstance(grouped, GroupedSketch) and len(grouped) == 0
    with pytest.raises(InputError, match="df has no rows"):
        smece_by_group_spark(empty, "p", "y", by="region")


def test_import_smoothece_does_not_import_pyspark():
    code = ("import sys, smoothece; assert 'pyspark' not in sys.modules and 'pandas' not in sys.modules; "
            "smoothece.spark; assert 'pyspark' not in sys.modules")
    subprocess.run([sys.executable, "-c", code], check=True, capture_output=True)
