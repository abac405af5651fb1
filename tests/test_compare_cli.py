"""``smoothece score|plot --compare`` (the command line's ``main()`` in this process; ``python -m smoothece``
in a subprocess for an ASCII-only standard output) on CSV files written to tmp_path and on the bundled
solar-flare data.

Every comparison is checked against :func:`smoothece.compare_models` with the same seed on columns read
here with the csv module (NA as missing), on the rows where every compared model has a value."""

import csv
import json
import math
import re
import shutil

import numpy as np
import pytest

import smoothece
from smoothece import datasets

pytest.importorskip("pyarrow")

# The CLI's runs as test_cli.py makes them (main() in this process; a subprocess for another environment).
from test_cli import ENV, assert_error, run, run_many, spawn  # noqa: E402  (tests/ is on sys.path: conftest.py)

N_BOOT = 200
PAIR_FIELDS = ("names", "smece_a", "smece_b", "difference", "low", "high", "p_value", "level", "n_boot", "seed")


def ok(proc):
    assert proc.returncode == 0, proc.stderr
    assert "Traceback" not in proc.stderr
    return proc.stdout


def read_columns(path, names, weights=None):
    """The file's columns, read with the csv module: floats, NaN where a field is empty or NA."""
    with open(path, newline="") as fh:
        rows = list(csv.DictReader(fh))

    def column(name):
        return np.array([math.nan if r[name].strip() in ("", "NA") else float(r[name]) for r in rows])

    return {name: column(name) for name in names}


def write_csv(path, columns):
    """A CSV of the columns (NaN written as NA, numbers as Python's repr, which reads back exactly)."""
    names = list(columns)
    with open(path, "w") as fh:
        fh.write(",".join(names) + "\n")
        for row in zip(*(columns[n].tolist() for n in names)):
            fh.write(",".join("NA" if isinstance(v, float) and math.isnan(v) else repr(v) for v in row) + "\n")
    return path


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    """2,000 rows: a (calibrated, a little noise), b (overconfident), c (a with other noise), labels y,
    weights w; a second file where b misses 200 rows and c 120 (some the same), and one whose a has
    -0.004 and 1.003 (clipped with --clip)."""
    rng = np.random.default_rng(3)
    n = 2_000
    p = rng.beta(2, 2, n)
    y = (rng.random(n) < p).astype(np.int64)
    a = np.clip(p + rng.normal(0, 0.03, n), 0.0, 1.0)
    b = np.clip(0.5 + 1.5 * (p - 0.5), 0.0, 1.0)
    c = np.clip(p + rng.normal(0, 0.03, n), 0.0, 1.0)
    w = rng.uniform(0.5, 2.0, n)
    d = tmp_path_factory.mktemp("compare")
    full = write_csv(d / "models.csv", dict(a=a, b=b, c=c, y=y, w=w))
    b_na, c_na = b.copy(), c.copy()
    b_na[rng.choice(n, 200, replace=False)] = np.nan
    c_na[rng.choice(n, 120, replace=False)] = np.nan
    missing = write_csv(d / "missing.csv", dict(a=a, b=b_na, c=c_na, y=y))
    a_out = a.copy()
    a_out[[5, 17]] = [-0.004, 1.003]
    outside = write_csv(d / "outside.csv", dict(a=a_out, b=b, y=y))
    return dict(full=full, missing=missing, outside=outside, dir=d, n=n)


def pair_dict(comparison):
    out = {k: getattr(comparison, k) for k in PAIR_FIELDS}
    out["names"] = list(out["names"])
    return out


def printed_numbers(line):
    """The numbers of a pair's line: difference, low, high (as text, to count their decimals)."""
    m = re.search(r": (?:Δ|delta) smECE(?:\[logit\])? = (\S+) \((\d+)% CI (\S+) to (\S+)\), (p [=<] \S+) "
                  r"\(equal calibration\)$", line)
    assert m is not None, line
    return m.group(1), m.group(3), m.group(4), int(m.group(2)), m.group(5)


def assert_rounds(text, value):
    """``text`` is ``value`` to the decimals it shows (3 significant digits at least)."""
    decimals = len(text.split(".")[1])
    assert abs(float(text) - value) <= 0.5 * 10.0**-decimals * (1 + 1e-9), (text, value)
    assert decimals >= 3


# ---------------------------------------------------------------------------
# score --compare: the numbers are compare_models' on the same columns, with the same seed
# ---------------------------------------------------------------------------

def test_two_models_json_text_and_seed_are_the_librarys(data):
    cols = read_columns(data["full"], ("a", "b", "y"))
    base = ("score", data["full"], "--pred", "a", "--pred", "b", "--label", "y", "--compare", "--n-boot", N_BOOT)
    as_json, as_text, plain, fresh = run_many(base + ("--seed", "7", "--json"), base + ("--seed", "7"),
                                              ("score", data["full"], "--pred", "a", "--pred", "b", "--label", "y",
                                               "--json", "--seed", "7"),
                                              base + ("--json",))
    out = json.loads(ok(as_json))
    expected = smoothece.compare(cols["a"], cols["b"], cols["y"], names=("a", "b"), n_boot=N_BOOT, seed=7)
    comparison = out["comparison"]
    assert comparison["pairs"] == [pair_dict(expected)]
    assert {k: comparison[k] for k in ("method", "reference", "n", "total_weight", "skipped", "metric", "n_boot",
                                       "level", "seed", "warnings")} == dict(
        method="paired bootstrap", reference="a", n=data["n"], total_weight=float(data["n"]), skipped=0,
        metric="l1", n_boot=N_BOOT, level=0.95, seed=7, warnings=[])
    # the models: the list a run without --compare prints (their seed is the run's, drawn for the comparison)
    models = json.loads(ok(plain))
    assert [{k: v for k, v in m.items() if k != "seed"} for m in out["models"]] == \
        [{k: v for k, v in m.items() if k != "seed"} for m in models]
    assert {m["seed"] for m in out["models"]} == {7}
    # b is the worse calibrated by far: the interval is below 0 and p at its floor, 2 / (200 + 1)
    assert expected.high < 0 and expected.p_value == pytest.approx(2 / (N_BOOT + 1))

    lines = ok(as_text).splitlines()
    assert lines[-2] == f"paired comparison on 2,000 rows, {N_BOOT} bootstrap replicates, seed 7"
    assert lines[-1].startswith("a − b: Δ smECE = ")
    diff, low, high, level, p_text = printed_numbers(lines[-1])
    for text, value in ((diff, expected.difference), (low, expected.low), (high, expected.high)):
        assert_rounds(text, value)
    assert level == 95 and p_text == "p < 0.01"  # 2/201 = 0.00995: below 0.01, not "= 0.00995"
    assert lines[:4] == ok(run("score", data["full"], "--pred", "a", "--pred", "b", "--label", "y")).splitlines()

    # without --seed a fresh one, recorded: it gives the same numbers again
    drawn = json.loads(ok(fresh))["comparison"]
    again = smoothece.compare(cols["a"], cols["b"], cols["y"], names=("a", "b"), n_boot=N_BOOT, seed=drawn["seed"])
    assert drawn["pairs"] == [pair_dict(again)]


def test_three_models_each_against_the_first_with_weights_level_and_logit(data):
    cols = read_columns(data["full"], ("a", "b", "c", "y", "w"))
    args = ("score", data["full"], "--pred", "a", "--pred", "b", "--pred", "c", "--label", "y", "--weight", "w",
            "--compare", "--n-boot", N_BOOT, "--seed", "11", "--level", "0.9", "--metric", "logit")
    as_json, as_text = run_many(args + ("--json",), args)
    comparison = json.loads(ok(as_json))["comparison"]
    expected = smoothece.compare_models({k: cols[k] for k in "abc"}, cols["y"], weights=cols["w"], metric="logit",
                                        n_boot=N_BOOT, level=0.9, seed=11)
    assert comparison["pairs"] == [pair_dict(expected.pair("a", "b")), pair_dict(expected.pair("a", "c"))]
    assert comparison["total_weight"] == pytest.approx(cols["w"].sum(), rel=1e-12)
    assert (comparison["level"], comparison["metric"], comparison["reference"]) == (0.9, "logit", "a")

    lines = ok(as_text).splitlines()
    assert lines[-3] == (f"paired comparison on 2,000 rows, {N_BOOT} bootstrap replicates, seed 11; p not adjusted "
                         f"for the 2 pairs")
    for line, other in zip(lines[-2:], "bc"):
        assert line.startswith(f"a − {other}: Δ smECE[logit] = ")
        diff, low, high, level, p_text = printed_numbers(line)
        c = expected.pair("a", other)
        for text, value in ((diff, c.difference), (low, c.low), (high, c.high)):
            assert_rounds(text, value)
        assert level == 90
        floor = 2 / (N_BOOT + 1)
        assert p_text == ("p < 0.01" if c.p_value <= floor * (1 + 1e-9) else f"p = {c.p_value:.3g}")
    # a and c are alike (the same model, other noise): their p is not at the floor
    assert expected.pair("a", "c").p_value > 0.05


def test_dropna_compares_the_rows_where_every_model_has_a_prediction(data):
    cols = read_columns(data["missing"], ("a", "b", "c", "y"))
    every = ~np.isnan(cols["b"]) & ~np.isnan(cols["c"])
    skipped = int(np.count_nonzero(~every))
    assert 200 < skipped < 320  # some rows miss both
    args = ("score", data["missing"], "--pred", "a", "--pred", "b", "--pred", "c", "--label", "y", "--dropna",
            "--compare", "--n-boot", N_BOOT, "--seed", "3")
    as_json, as_text, refused = run_many(args + ("--json",), args, [a for a in args if a != "--dropna"])
    out = json.loads(ok(as_json))
    expected = smoothece.compare_models({k: cols[k][every] for k in "abc"}, cols["y"][every], n_boot=N_BOOT,
                                        seed=3)
    comparison = out["comparison"]
    assert comparison["pairs"] == [pair_dict(expected.pair(0, 1)), pair_dict(expected.pair(0, 2))]
    assert (comparison["n"], comparison["skipped"]) == (int(every.sum()), skipped)
    # each model's own row is still scored on its own rows
    assert [m["n"] for m in out["models"]] == [2_000, 1_800, 1_880]
    lines = ok(as_text).splitlines()
    assert lines[-3].startswith(f"paired comparison on {int(every.sum()):,} rows ({skipped} rows missing a "
                                f"prediction skipped), {N_BOOT} bootstrap replicates, seed 3")
    assert_error(refused, 1, "missing value", "pass --dropna")


def test_clip_applies_to_the_comparison(data):
    cols = read_columns(data["outside"], ("a", "b", "y"))
    args = ("score", data["outside"], "--pred", "a", "--pred", "b", "--label", "y", "--compare", "--n-boot", N_BOOT,
            "--seed", "5", "--json")
    clipped, refused = run_many(args + ("--clip",), args)
    expected = smoothece.compare(cols["a"], cols["b"], cols["y"], names=("a", "b"), n_boot=N_BOOT, seed=5, clip=True)
    assert json.loads(ok(clipped))["comparison"]["pairs"] == [pair_dict(expected)]
    assert_error(refused, 1, "column 'a'", "-0.004", "pass --clip")


def test_solar_flares_with_missing_forecasts(tmp_path):
    """The bundled data: AMOS and NJIT miss days; the comparison takes the days all three have."""
    path = tmp_path / "solar.csv"
    shutil.copy(datasets.path("solar_flares_c1.csv"), path)
    cols = read_columns(path, ("DAFFS", "AMOS", "NJIT", "rlz.C1"))
    every = ~(np.isnan(cols["DAFFS"]) | np.isnan(cols["AMOS"]) | np.isnan(cols["NJIT"]))
    out = json.loads(ok(run("score", path, "--pred", "DAFFS", "--pred", "AMOS", "--pred", "NJIT", "--label", "rlz.C1",
                            "--dropna", "--compare", "--n-boot", N_BOOT, "--seed", "1", "--json")))
    expected = smoothece.compare_models({k: cols[k][every] for k in ("DAFFS", "AMOS", "NJIT")},
                                        cols["rlz.C1"][every], n_boot=N_BOOT, seed=1)
    assert out["comparison"]["pairs"] == [pair_dict(expected.pair(0, 1)), pair_dict(expected.pair(0, 2))]
    assert out["comparison"]["n"] == int(every.sum()) and out["comparison"]["skipped"] == 731 - int(every.sum())


def test_ascii_output_spells_the_symbols(data):
    env = {**ENV, "PYTHONIOENCODING": "ascii"}
    lines = ok(spawn("score", data["full"], "--pred", "a", "--pred", "b", "--label", "y", "--compare", "--n-boot",
                     N_BOOT, "--seed", "7", env=env)).splitlines()
    assert lines[-1].startswith("a - b: delta smECE = ")
    printed_numbers(lines[-1])


# ---------------------------------------------------------------------------
# What --compare refuses
# ---------------------------------------------------------------------------

def test_usage_and_data_errors(data, tmp_path):
    full = data["full"]
    two = ("--pred", "a", "--pred", "b", "--label", "y", "--compare")
    # rows where every model has a value: none (b and c never both), and weights summing to zero on them
    n = 40
    half = np.arange(n) < n // 2
    f = np.linspace(0.1, 0.9, n)
    disjoint = write_csv(tmp_path / "disjoint.csv", dict(a=f, b=np.where(half, f, np.nan), c=np.where(half, np.nan, f),
                                                         y=(np.arange(n) % 2).astype(np.int64)))
    # a misses rows 0-9, b rows 10-19: each has rows of weight 1, the 20 rows both have weight 0
    first, second = np.arange(n) < 10, (np.arange(n) >= 10) & half
    zero = write_csv(tmp_path / "zero.csv", dict(a=np.where(first, np.nan, f), b=np.where(second, np.nan, f),
                                                 y=(np.arange(n) % 2).astype(np.int64), w=np.where(half, 1.0, 0.0)))
    runs = run_many(
        ("score", full, "--pred", "a", "--label", "y", "--compare"),
        ("score", full, *two, "--by", "y"),
        ("score", full, *two, "--csv"),
        ("plot", full, "--pred", "a", "--label", "y", "--compare", "-o", tmp_path / "one.png"),
        ("plot", full, *two, "--n-boot", "0", "-o", tmp_path / "none.png"),
        ("score", disjoint, "--pred", "b", "--pred", "c", "--label", "y", "--dropna", "--compare"),
        ("score", zero, "--pred", "a", "--pred", "b", "--label", "y", "--weight", "w", "--dropna", "--compare",
         "--n-boot", "50"),
    )
    one, by, as_csv, plot_one, no_boot, nothing, zero_weight = runs
    assert_error(one, 2, "--compare", "at least two --pred columns (got one)")
    assert_error(plot_one, 2, "--compare", "at least two --pred columns (got one)")
    assert_error(by, 2, "--compare does not go with --by")
    assert_error(as_csv, 2, "--csv writes one table", "use --json")
    assert_error(no_boot, 2, "--compare needs bootstrap replicates", "--n-boot 1 or more")
    assert_error(nothing, 1, "disjoint.csv", "no row has a value in every --pred column (40 rows miss one)")
    assert_error(zero_weight, 1, "zero.csv", "cannot compare the models on the rows (the 20 rows where every --pred "
                                             "column has a value)", "weights")
    assert not (tmp_path / "one.png").exists() and not (tmp_path / "none.png").exists()


# ---------------------------------------------------------------------------
# plot --compare
# ---------------------------------------------------------------------------

def test_plot_compare_writes_the_difference_in_the_figure(data, tmp_path):
    cols = read_columns(data["full"], ("a", "b", "c", "y"))
    svg, png = tmp_path / "cmp.svg", tmp_path / "cmp.png"
    common = ("--pred", "a", "--pred", "b", "--pred", "c", "--label", "y", "--compare", "--n-boot", N_BOOT, "--seed",
              "9")
    as_svg, as_png, scored = run_many(("plot", data["full"], *common, "-o", svg), ("plot", data["full"], *common,
                                                                                   "-o", png),
                                      ("score", data["full"], *common))
    lines = ok(as_svg).splitlines()
    assert lines[-1] == f"{data['full']} -> {svg}"
    assert lines[3:6] == ok(scored).splitlines()[-3:]  # the comparison's lines, as score prints them
    expected = smoothece.compare_models({k: cols[k] for k in "abc"}, cols["y"], n_boot=N_BOOT, seed=9)
    text = svg.read_text()
    assert text.count('id="smoothece-curve') == 3 and text.count('id="smoothece-band') == 3
    # the legend names each model with its SmoothECE; the annotation holds both differences
    for name in "abc":
        value = smoothece.smece(cols[name], cols["y"])
        assert f"<!-- {name}: smECE = {value:.3f} -->" in text
    for other in "bc":
        c = expected.pair("a", other)
        assert f"<!-- a − {other}: Δ smECE = {c.difference:.3f}".replace("-0", "−0") in text
        assert f"95% CI {c.low:.3f} to {c.high:.3f} -->".replace("-0", "−0") in text
    assert png.stat().st_size > 10_000
