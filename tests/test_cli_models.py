"""``smoothece score|plot`` with several ``--pred`` columns (the command line's ``main()`` in this process;
standard input through a pipe to ``python -m smoothece``) on CSV and Parquet files written to tmp_path and on
the bundled solar-flare data.

Every model's numbers are checked against the library on that column alone (``smece``, the sketch's
bootstrap and test, ``smece_by_group``), computed here on the arrays; CSV and JSON outputs are parsed."""

import csv
import io
import json
import shutil

import numpy as np
import pytest

import smoothece
from smoothece import datasets
from smoothece._util import format_p

pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")

# The CLI's runs as test_cli.py makes them (main() in this process; a subprocess for standard input).
from test_cli import run, run_many, spawn  # noqa: E402  (tests/ is on sys.path: conftest.py)

# The CLI streams into a sketch on its fixed grid; smoothece.smece bins on a grid sized to the data:
# both are within ~1e-8 of the exact value (test_accuracy.py), so that is how far apart they may be.
GRID_TOL = 1e-8
SOLAR_MODELS = ("DAFFS", "NOAA", "AMOS", "NJIT")  # AMOS and NJIT miss some days (NA)


def ok(proc):
    assert proc.returncode == 0, proc.stderr
    assert "Traceback" not in proc.stderr
    return proc.stdout


def ok_json(proc):
    return json.loads(ok(proc))


def ok_csv(proc):
    return list(csv.DictReader(io.StringIO(ok(proc))))


def assert_error(proc, code, *needles):
    assert proc.returncode == code, (proc.returncode, proc.stdout, proc.stderr)
    assert "Traceback" not in proc.stderr and proc.stdout == ""
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("smoothece: error: "), proc.stderr
    for needle in needles:
        assert needle in lines[0], (needle, lines[0])
    return lines[0]


def number(text):
    return None if text == "" else float(text)


# ---------------------------------------------------------------------------
# Data
# ---------------------------------------------------------------------------

@pytest.fixture(scope="module")
def solar(tmp_path_factory):
    path = tmp_path_factory.mktemp("solar") / "solar.csv"
    shutil.copy(datasets.path("solar_flares_c1.csv"), path)
    return path, datasets.solar_flares()


@pytest.fixture(scope="module")
def models(tmp_path_factory):
    """12,000 rows, 4 regions over 5 days, weights, three models: p (calibrated), q (p with noise, missing
    on 300 rows), r (overconfident, badly off in region 'c'). As CSV and as Parquet."""
    rng = np.random.default_rng(11)
    n = 12_000
    region = np.array(["a", "b", "c", "d"])[rng.integers(0, 4, n)]
    day = np.datetime64("2024-03-01") + rng.integers(0, 5, n).astype("timedelta64[D]")
    p = rng.beta(2, 2, n)
    y = (rng.random(n) < p).astype(np.int64)
    q = np.clip(p + rng.normal(0, 0.05, n), 0.0, 1.0)
    q_missing = np.zeros(n, dtype=bool)
    q_missing[rng.choice(n, 300, replace=False)] = True
    r = np.where(region == "c", p ** 3, 1 / (1 + np.exp(-2.5 * np.log(p / (1 - p)))))
    w = rng.integers(1, 4, n).astype(np.float64)
    d = tmp_path_factory.mktemp("models")
    csv_path = d / "models.csv"
    q_text = np.where(q_missing, "NA", np.array([repr(v) for v in q.tolist()]))
    with open(csv_path, "w") as fh:
        fh.write("p,q,r,y,w,region,day\n")
        fh.writelines(f"{a!r},{b},{c!r},{t},{u!r},{g},{s}\n" for a, b, c, t, u, g, s in
                      zip(p.tolist(), q_text, r.tolist(), y.tolist(), w.tolist(), region, day.astype(str)))
    parquet = d / "models.parquet"
    pq.write_table(pa.table({"p": p, "q": pa.array(q, mask=q_missing), "r": r, "y": y, "w": w,
                             "region": pa.array(region).dictionary_encode(), "day": day}), parquet,
                   row_group_size=5_000)
    return dict(csv=csv_path, parquet=parquet, p=p, q=q, r=r, y=y, w=w, region=region, day=day,
                q_ok=~q_missing, n=n)


# ---------------------------------------------------------------------------
# score: one row per model, each the library's answer on its column alone
# ---------------------------------------------------------------------------

def test_each_model_is_scored_as_its_column_alone(solar):
    path, data = solar
    preds = [a for m in SOLAR_MODELS for a in ("--pred", m)]
    common = ("--label", "rlz.C1", "--dropna")
    many, *alone = run_many(("score", path, *preds, *common, "--json"),
                            *(("score", path, "--pred", m, *common, "--json") for m in ("AMOS", "NJIT")))
    records = ok_json(many)
    assert isinstance(records, list) and [r["pred"] for r in records] == list(SOLAR_MODELS)
    for record in records:
        col = data[record["pred"]]  # the dataset's rows where this column has a value
        assert record["n"] == col.f.size and record["dropped"] == 731 - col.f.size
        assert abs(record["smece"] - smoothece.smece(col.f, col.y)) <= GRID_TOL
        assert record["sigma"] == record["smece"]
    # the same object as a run with the column alone (which has no "pred")
    for record, single in zip(records[2:], alone):
        assert {k: v for k, v in record.items() if k != "pred"} == ok_json(single)
    assert records[3]["dropped"] == 260 and records[0]["dropped"] == 0  # NJIT misses 260 days, DAFFS none


def test_intervals_and_tests_per_model_are_the_sketchs_with_the_one_seed(solar):
    path, data = solar
    args = ("score", path, "--pred", "DAFFS", "--pred", "NOAA", "--pred", "AMOS", "--label", "rlz.C1", "--dropna",
            "--ci", "--test", "--seed", "5", "--n-boot", "300", "--n-sim", "200")
    as_json, as_csv, as_text = run_many(args + ("--json",), args + ("--csv",), args)
    records, rows = ok_json(as_json), ok_csv(as_csv)
    assert [r["model"] for r in rows] == ["DAFFS", "NOAA", "AMOS"]
    for record, row in zip(records, rows):
        col = data[record["pred"]]
        sketch = smoothece.CalibrationSketch().update(col.f, col.y)
        boot = sketch.bootstrap_smece(n_boot=300, seed=5)
        test = sketch.calibration_test(n_sim=200, seed=5)
        assert (record["ci_low"], record["ci_high"], record["p_value"]) == (boot.low, boot.high, test.p_value)
        assert record["seed"] == 5 and record["n_boot"] == 300 and record["n_sim"] == 200
        # the CSV row: the same numbers, written to round-trip
        assert int(row["n"]) == record["n"] and int(row["dropped"]) == record["dropped"]
        for key in ("total_weight", "smece", "sigma", "ci_low", "ci_high", "level", "p_value"):
            assert number(row[key]) == record[key], key
        assert int(row["seed"]) == 5 and int(row["n_boot"]) == 300 and int(row["n_sim"]) == 200
    # the text table: a row per model, p-values as format_p writes them ("< 0.005" at the floor of 200)
    lines = ok(as_text).splitlines()
    assert lines[0] == "solar.csv: 3 models (--pred), labels 'rlz.C1', calibration test with 200 simulations"
    assert lines[1].split() == ["model", "n", "smECE", "95%", "CI", "p", "skipped"]
    for line, record in zip(lines[2:5], records):
        cells = line.split()
        p_text = format_p(record["p_value"], 200)
        assert cells[0] == record["pred"] and cells[1] == f"{record['n']:,}"
        assert cells[2] == f"{record['smece']:.4f}" and cells[-1] == f"{record['dropped']:,}"
        assert " ".join(cells[4:-1]) == p_text.removeprefix("p = ").removeprefix("p ")
    assert records[0]["p_value"] == 1 / 201 and lines[2].split()[4:6] == ["<", "0.005"]  # DAFFS: at the floor
    assert lines[5] == ("skipped: rows with a missing value (--dropna), each model its own: the models are scored "
                        "on different rows")


def test_csv_and_parquet_with_weights_give_the_librarys_numbers(models):
    m = models
    args = ("--pred", "p", "--pred", "q", "--pred", "r", "--label", "y", "--weight", "w", "--dropna",
            "--chunksize", "2500")
    from_csv, from_parquet, as_csv = run_many(("score", m["csv"], *args, "--json"),
                                              ("score", m["parquet"], *args, "--json"),
                                              ("score", m["csv"], *args, "--csv"))
    a, b, rows = ok_json(from_csv), ok_json(from_parquet), ok_csv(as_csv)
    assert a == [dict(r, file=str(m["csv"])) for r in b]  # the same answers from either format
    ok_rows = {"p": slice(None), "q": m["q_ok"], "r": slice(None)}
    for record, row in zip(a, rows):
        keep = ok_rows[record["pred"]]
        f, y, w = m[record["pred"]][keep], m["y"][keep], m["w"][keep]
        assert record["n"] == f.size and record["total_weight"] == w.sum()
        assert abs(record["smece"] - smoothece.smece(f, y, weights=w)) <= GRID_TOL
        assert record["dropped"] == m["n"] - f.size
        assert row["model"] == record["pred"] and number(row["smece"]) == record["smece"]
    assert [r["dropped"] for r in a] == [0, 300, 0]


def test_by_crosses_models_and_groups(models):
    m = models
    args = ("--pred", "p", "--pred", "q", "--pred", "r", "--label", "y", "--by", "day", "--dropna", "--chunksize",
            "3000", "--ci", "--test", "--n-boot", "100", "--n-sim", "100", "--seed", "9")
    as_json, as_csv, as_text, worst_first = run_many(
        ("score", m["parquet"], *args, "--json"), ("score", m["parquet"], *args, "--csv"),
        ("score", m["parquet"], *args), ("score", m["csv"], *args, "--csv", "--sort", "smece"))
    records, rows = ok_json(as_json), ok_csv(as_csv)
    days = [f"2024-03-{d:02d}" for d in range(1, 6)]
    expected_rows = []
    for record in records:
        keep = m["q_ok"] if record["pred"] == "q" else slice(None)
        ref = smoothece.smece_by_group(m[record["pred"]][keep], m["y"][keep], m["day"][keep], n_boot=100, test=True,
                                       n_sim=100, seed=9)
        assert record["by"] == "day" and record["ordered"] is True
        assert [g["key"] for g in record["groups"]] == days  # the library's order: in time
        for i, g in enumerate(record["groups"]):
            assert (g["n"], g["smece"], g["ci_low"], g["ci_high"]) == (ref.n[i], ref.smece[i], ref.low[i],
                                                                      ref.high[i])
            assert (g["p_value"], g["p_adjusted"]) == (ref.p_value[i], ref.p_adjusted[i])
            expected_rows.append((record["pred"], days[i], g))
    # CSV: one row per (model, group), models as given, groups in the library's order
    assert len(rows) == 15 == len(expected_rows)
    for row, (model, day, g) in zip(rows, expected_rows):
        assert (row["model"], row["group"], int(row["n"])) == (model, day, g["n"])
        for key in ("smece", "ci_low", "ci_high", "p_value", "p_adjusted"):
            assert number(row[key]) == g[key], key
        assert int(row["seed"]) == 9 and int(row["n_sim"]) == 100
    # text: the models' table, then the crossed one
    lines = ok(as_text).splitlines()
    at = lines.index("by day: 5 groups per model; p (BH): adjusted across each model's groups")
    assert lines[at + 1].split() == ["model", "day", "n", "smECE", "95%", "CI", "p", "p", "(BH)"]
    assert [ln.split()[:3] for ln in lines[at + 2:]] == [[mod, day, f"{g['n']:,}"] for mod, day, g in expected_rows]
    # --sort smece: the same rows, worst first (r is badly miscalibrated: its days come first)
    ranked = ok_csv(worst_first)
    values = [float(r["smece"]) for r in ranked]
    assert values == sorted(values, reverse=True) and {r["model"] for r in ranked[:5]} == {"r"}
    assert sorted((r["model"], r["group"], r["smece"]) for r in ranked) == sorted(
        (r["model"], r["group"], r["smece"]) for r in rows)


def test_by_with_keys_some_model_lacks_and_one_model(models, tmp_path):
    """Groups follow each model's rows: a model whose column is missing for a whole group has no such
    group. One --pred with --csv is a one-model table."""
    path = tmp_path / "holes.csv"
    path.write_text("a,b,y,g\n0.2,0.3,0,x\n0.7,NA,1,y\n0.4,0.1,1,x\n0.9,NA,0,y\n")
    crossed, one = run_many(("score", path, "--pred", "a", "--pred", "b", "--label", "y", "--by", "g", "--dropna",
                             "--csv"),
                            ("score", models["csv"], "--pred", "r", "--label", "y", "--by", "region", "--csv"))
    rows = ok_csv(crossed)
    assert [(r["model"], r["group"], r["n"]) for r in rows] == [("a", "x", "2"), ("a", "y", "2"), ("b", "x", "2")]
    assert crossed.stderr == "smoothece: warning: --pred 'b': 2 rows with missing values skipped (2 missing a value " \
                             "in this column alone)\n"
    ref = smoothece.smece_by_group(np.array([0.2, 0.4]), np.array([0, 1]), np.array(["x", "x"]))
    assert float(rows[0]["smece"]) == ref.smece[0]
    single = ok_csv(one)
    ref = smoothece.smece_by_group(models["r"], models["y"], models["region"])
    assert [r["group"] for r in single] == ["a", "b", "c", "d"] and {r["model"] for r in single} == {"r"}
    assert [float(r["smece"]) for r in single] == ref.smece.tolist()


# ---------------------------------------------------------------------------
# Bad rows, per model
# ---------------------------------------------------------------------------

def test_missing_predictions_are_refused_or_skipped_per_model(tmp_path):
    path = tmp_path / "gaps.csv"
    # q misses line 3 and 5; the label misses line 6 (a row every model needs)
    path.write_text("p,q,y\n0.2,0.25,0\n0.6,NA,1\n0.3,0.35,0\n0.8,,1\n0.5,0.4,NA\n0.9,0.95,1\n0.1,0.2,0\n")
    refused, skipped, text = run_many(
        ("score", path, "--pred", "p", "--pred", "q", "--label", "y"),
        ("score", path, "--pred", "p", "--pred", "q", "--label", "y", "--dropna", "--ci", "--seed", "1",
         "--n-boot", "50", "--json"),
        ("score", path, "--pred", "p", "--pred", "q", "--label", "y", "--dropna"))
    assert_error(refused, 1, "gaps.csv line 3, column 'q': missing value",
                 "2 of 7 rows miss a value there, first at line 3", "--dropna")
    p_rec, q_rec = ok_json(skipped)
    f_p, y_p = np.array([0.2, 0.6, 0.3, 0.8, 0.9, 0.1]), np.array([0, 1, 0, 1, 1, 0])
    f_q, y_q = np.array([0.25, 0.35, 0.95, 0.2]), np.array([0, 0, 1, 0])
    assert (p_rec["n"], p_rec["dropped"], q_rec["n"], q_rec["dropped"]) == (6, 1, 4, 3)
    assert abs(p_rec["smece"] - smoothece.smece(f_p, y_p)) <= GRID_TOL
    assert abs(q_rec["smece"] - smoothece.smece(f_q, y_q)) <= GRID_TOL
    lines = ok(text).splitlines()
    assert lines[1].split() == ["model", "n", "smECE", "skipped"]
    assert lines[2].split()[::3] == ["p", "1"] and lines[3].split()[::3] == ["q", "3"]
    assert lines[4].endswith("each model its own: the models are scored on different rows")
    ref = smoothece.CalibrationSketch().update(f_q, y_q).bootstrap_smece(n_boot=50, seed=1)
    assert (q_rec["ci_low"], q_rec["ci_high"]) == (ref.low, ref.high)


def test_skipping_only_shared_rows_says_the_rows_are_the_same(tmp_path):
    path = tmp_path / "shared.csv"
    path.write_text("p,q,y\n0.2,0.25,0\n0.6,0.5,NA\n0.3,0.35,1\n")
    lines = ok(run("score", path, "--pred", "p", "--pred", "q", "--label", "y", "--dropna")).splitlines()
    assert [ln.split()[-1] for ln in lines[2:4]] == ["1", "1"]
    assert lines[4] == "skipped: rows with a missing value (--dropna), the same for every model"


def test_a_bad_value_in_one_models_column_names_it_and_its_line(tmp_path):
    rng = np.random.default_rng(3)
    n = 5_000
    p, q = rng.uniform(size=n), rng.uniform(size=n)
    y = (rng.random(n) < p).astype(int)
    q_text = [repr(v) for v in q.tolist()]
    for i in (10, 20, 4_000):  # q missing here (skipped for q alone with --dropna)
        q_text[i] = "NA"
    q_text[30] = "1.5"  # line 32, the 28th of q's rows
    q_text[4_100] = "-0.2"
    path = tmp_path / "bad_q.csv"
    path.write_text("p,q,y\n" + "".join(f"{a!r},{b},{c}\n" for a, b, c in zip(p.tolist(), q_text, y.tolist())))
    clip_path = tmp_path / "clip_q.csv"
    q_text[30], q_text[4_100] = "1.004", "0.5"
    clip_path.write_text("p,q,y\n" + "".join(f"{a!r},{b},{c}\n" for a, b, c in zip(p.tolist(), q_text, y.tolist())))
    bad, clip, clipped = run_many(
        ("score", path, "--pred", "p", "--pred", "q", "--label", "y", "--dropna", "--chunksize", "1000"),
        ("score", clip_path, "--pred", "p", "--pred", "q", "--label", "y", "--dropna"),
        ("score", clip_path, "--pred", "p", "--pred", "q", "--label", "y", "--dropna", "--clip", "--json"))
    # counted over the whole file (5 chunks), q's own rows only
    assert_error(bad, 1, "bad_q.csv line 32, column 'q': f = 1.5: predictions must be finite and in [0, 1]",
                 "(2 of 4,997 values bad, first at line 32)")
    assert_error(clip, 1, "clip_q.csv line 32, column 'q': f = 1.004", "pass --clip to clamp it")
    keep = np.array([t != "NA" for t in q_text])
    q_vals = np.array([float(t) if t != "NA" else 0.0 for t in q_text])[keep]
    q_rec = ok_json(clipped)[1]
    assert q_rec["n"] == 4_997 and abs(q_rec["smece"] - smoothece.smece(q_vals, y[keep], clip=True)) <= GRID_TOL


def test_command_line_errors_with_several_columns(models, solar, tmp_path):
    m = models
    path = tmp_path / "empty_q.csv"
    path.write_text("p,q,y\n0.2,NA,0\n0.6,,1\n")
    twice, absent, empty, csv_and_json = run_many(
        ("score", m["csv"], "--pred", "p", "--pred", "p", "--label", "y"),
        ("score", m["csv"], "--pred", "p", "--pred", "qq", "--label", "y"),
        ("score", path, "--pred", "p", "--pred", "q", "--label", "y", "--dropna"),
        ("score", m["csv"], "--pred", "p", "--label", "y", "--csv", "--json"))
    assert_error(twice, 2, "column 'p' is given twice as --pred")
    assert_error(absent, 2, "models.csv has no column 'qq' (given as --pred)", "did you mean 'q'?")
    assert_error(empty, 1, "column 'q' (given as --pred) has no value in the 2 rows read", "every one is missing")
    assert_error(csv_and_json, 2, "--json: not allowed with argument --csv")


# ---------------------------------------------------------------------------
# p-values at the floor of the simulations; one column as before
# ---------------------------------------------------------------------------

def test_p_values_at_the_floor_read_as_a_bound(models):
    m = models
    one, by = run_many(("score", m["csv"], "--pred", "r", "--label", "y", "--test", "--n-sim", "100", "--seed", "2"),
                       ("score", m["csv"], "--pred", "r", "--label", "y", "--by", "region", "--test", "--n-sim",
                        "100", "--seed", "2", "--json"))
    p = smoothece.CalibrationSketch().update(m["r"], m["y"]).calibration_test(n_sim=100, seed=2).p_value
    assert p == 1 / 101  # badly miscalibrated: no simulation reaches it
    assert ", calibration test p < 0.01 (100 simulations), " in ok(one)
    groups = ok_json(by)["groups"]
    assert groups[2]["key"] == "c" and groups[2]["p_value"] == 1 / 101  # JSON keeps the number


def test_sort_smece_puts_the_worst_model_first(solar):
    path, data = solar
    args = ("score", path, "--pred", "NOAA", "--pred", "DAFFS", "--pred", "NJIT", "--label", "rlz.C1", "--dropna")
    ranked, ranked_json = run_many(args + ("--sort", "smece"), args + ("--sort", "smece", "--json"))
    truth = {name: smoothece.smece(data[name].f, data[name].y) for name in ("NOAA", "DAFFS", "NJIT")}
    worst_first = sorted(truth, key=truth.get, reverse=True)
    assert [ln.split()[0] for ln in ok(ranked).splitlines()[2:5]] == worst_first
    assert [r["pred"] for r in ok_json(ranked_json)] == worst_first


def test_standard_input_with_several_columns(solar):
    path, data = solar
    out = ok_json(spawn("score", "-", "--pred", "DAFFS", "--pred", "AMOS", "--label", "rlz.C1", "--dropna",
                        "--json", input=path.read_bytes()))
    assert [r["file"] for r in out] == ["-", "-"] and [r["n"] for r in out] == [731, data["AMOS"].f.size]


# ---------------------------------------------------------------------------
# plot: the models overlaid
# ---------------------------------------------------------------------------

def test_plot_overlays_several_models(solar, tmp_path):
    path, data = solar
    svg = tmp_path / "models.svg"
    names = ("DAFFS", "NOAA", "AMOS")
    preds = [a for name in names for a in ("--pred", name)]
    common = (*preds, "--label", "rlz.C1", "--dropna", "--seed", "0", "--n-boot", "100")
    as_svg, binned, by, many = run_many(
        ("plot", path, *common, "-o", svg, "--test", "--n-sim", "100"),
        ("plot", path, *common, "-o", tmp_path / "b.png", "--binned"),
        ("plot", path, *common, "-o", tmp_path / "g.png", "--by", "VALID_DATE"),
        ("plot", path, *[a for k in range(11) for a in ("--pred", f"m{k}")], "--label", "y", "-o", tmp_path / "m.png"))
    lines = ok(as_svg).splitlines()
    assert lines[-1] == f"{path} -> {svg}"
    for line, name in zip(lines, names):
        value = smoothece.smece(data[name].f, data[name].y)
        assert line.startswith(f"{name}: smECE = {value:.4f} (95% CI ") and f"n = {data[name].f.size:,}" in line
        p = smoothece.CalibrationSketch().update(data[name].f, data[name].y).calibration_test(n_sim=100,
                                                                                            seed=0).p_value
        assert line.endswith(f"calibration test {format_p(p, 100)} (100 simulations)")
    assert "(71 rows with missing values skipped)" in lines[2]
    # one Axes with a curve, a band and a legend entry per model, in three colours
    text = svg.read_text()
    assert text.count('id="smoothece-curve') == 3 and text.count('id="smoothece-band') == 3
    for name, colour in zip(names, ("#1f77b4", "#ff7f0e", "#2ca02c")):
        assert f"<!-- {name} -->" in text and colour in text
    assert_error(binned, 2, "--binned draws one model; with 3 --pred columns plot overlays")
    assert_error(by, 2, "--by draws one model")
    assert_error(many, 2, "plot overlays at most 10 --pred columns")
    assert not (tmp_path / "b.png").exists() and not (tmp_path / "g.png").exists()
