"""The ``smoothece`` command line, run for real: ``python -m smoothece`` and the
installed console script, in subprocesses, on files written to tmp_path."""

import concurrent.futures
import gzip
import inspect
import io
import json
import os
import shutil
import subprocess
import sys

import numpy as np
import pytest

import smoothece
from smoothece import cli, datasets

# The development install rebuilds the extension on import and, verbosely, says so on stdout.
ENV = {**os.environ, "SKBUILD_EDITABLE_VERBOSE": "0", "PYTHONIOENCODING": "utf-8"}
ENV.pop("SMOOTHECE_DEBUG", None)
MODULE = [sys.executable, "-m", "smoothece"]
TIMEOUT = 300


# The sketch bins on its fixed 2^15-cell grid; the array functions bin on a
# grid sized to the data (first_intervals_for_rows). Both are within ~1e-8 of
# the exact values (test_accuracy.py), so that is how far apart they may be.
GRID_TOL = 1e-8


def _script():
    path = shutil.which("smoothece", path=os.path.dirname(sys.executable))
    if path is None:
        pytest.fail("the `smoothece` console script is not installed next to this Python; reinstall the package "
                    "(pip install -e .) so that its [project.scripts] entry point is created")
    return [path]


def run(*args, cmd=None, cwd=None, env=None):
    return subprocess.run((cmd or MODULE) + [str(a) for a in args], capture_output=True, text=True,
                          encoding="utf-8", cwd=cwd, env=env or ENV, timeout=TIMEOUT)


def run_many(*arg_lists, **kw):
    """Several runs at once (subprocesses in parallel); results in order."""
    with concurrent.futures.ThreadPoolExecutor(max_workers=6) as pool:
        return list(pool.map(lambda args: run(*args, **kw), arg_lists))


def ok_json(proc):
    assert proc.returncode == 0, proc.stderr
    assert "Traceback" not in proc.stderr
    return json.loads(proc.stdout.strip().splitlines()[-1])


def assert_error(proc, code, *needles):
    assert proc.returncode == code, (proc.returncode, proc.stdout, proc.stderr)
    assert "Traceback" not in proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    assert lines[0].startswith("smoothece: error: "), lines[0]
    for needle in needles:
        assert needle in lines[0], (needle, lines[0])
    return lines[0]


# ---------------------------------------------------------------------------
# Files
# ---------------------------------------------------------------------------

@pytest.fixture(scope="module")
def files(tmp_path_factory):
    """Small files, one per case; paths by name."""
    d = tmp_path_factory.mktemp("cli")
    out = {}
    solar = d / "solar.csv"
    shutil.copy(datasets.path("solar_flares_c1.csv"), solar)
    out["solar"] = solar
    texts = {
        "empty.csv": "",
        "header_only.csv": "p,y\n",
        "ragged.csv": "p,y\n0.5,1\n0.2\n",
        "labels.csv": "p,y\n0.5,1\n0.25,2\n",
        "blank_bool.csv": "p,y\n\n0.5,true\n0.25,False\n\n0.75,1\n",
        "weights.tsv": "p\ty\tw\n0.5\t1\t2\n0.25\t0\t0\n0.75\t1\t1.5\n",
        "data.xlsx": "p,y\n0.5,1\n",
    }
    for name, text in texts.items():
        (d / name).write_text(text)
        out[name] = d / name
    out["damaged.csv.gz"] = d / "damaged.csv.gz"
    out["damaged.csv.gz"].write_bytes(gzip.compress(solar.read_bytes())[:300])
    out["fake.parquet"] = d / "fake.parquet"
    out["fake.parquet"].write_text("p,y\n0.5,1\n")
    return out


@pytest.fixture(scope="module")
def solar_parquet(tmp_path_factory):
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    daffs = datasets.solar_flares()["DAFFS"]
    w = (np.arange(daffs.f.size) % 3) + 0.5
    path = tmp_path_factory.mktemp("parquet") / "daffs.parquet"
    pq.write_table(pa.table({"day": np.arange(daffs.f.size), "DAFFS": daffs.f, "flare": daffs.y.astype(bool),
                             "w": w, "note": ["x"] * daffs.f.size}), path, row_group_size=200)
    nulls = path.parent / "nulls.parquet"
    pq.write_table(pa.table({"p": pa.array([0.5, None, 0.25]), "y": pa.array([1, 0, 1])}), nulls)
    return path, daffs, w, nulls


N_BIG = 3_000_000


@pytest.fixture(scope="module")
def big_csv(tmp_path_factory):
    """3,000,000 rows (p, y, w), written quickly from a table of row strings.
    p = k / 10000 is written as repr(p), which reads back as exactly p."""
    rng = np.random.default_rng(2024)
    k = rng.integers(0, 10_001, N_BIG)
    f = k / 10_000
    y = (rng.random(N_BIG) < f ** 1.5).astype(np.int8)
    w = rng.integers(1, 4, N_BIG)
    rows = [f"{kk / 10_000!r},{yy},{ww}\n" for kk in range(10_001) for yy in (0, 1) for ww in (1, 2, 3)]
    index = (k * 2 + y) * 3 + (w - 1)
    path = tmp_path_factory.mktemp("big") / "big.csv"
    with open(path, "w") as fh:
        fh.write("p,y,w\n")
        fh.writelines(map(rows.__getitem__, index.tolist()))
    return path, f, y, w.astype(np.float64)


# ---------------------------------------------------------------------------
# Help, entry points
# ---------------------------------------------------------------------------

def test_help_through_both_entry_points():
    for cmd in (MODULE, _script()):
        top = run("--help", cmd=cmd)
        assert top.returncode == 0, top.stderr
        for word in ("score", "plot", "demo", "exit status"):
            assert word in top.stdout
    proc = run("score", "--help")
    assert proc.returncode == 0 and "--pred" in proc.stdout and proc.stdout.startswith("usage: smoothece score")


@pytest.mark.parametrize("sub, words", [
    ("score", ("--pred", "--label", "--weight", "--metric", "--ci", "--json", "--chunksize", "--dropna", "--clip",
               "--seed")),
    ("plot", ("--output", "--binned", "--n-boot", "--seed", "--weight")),
    ("demo", ("--output", "--seed", "--json")),
])
def test_help_of_each_command(sub, words, capsys):
    assert cli.main([sub, "--help"]) == 0
    out = capsys.readouterr().out
    for word in words:
        assert word in out, (sub, word)


def test_version(capsys):
    assert cli.main(["--version"]) == 0
    assert smoothece.__version__ in capsys.readouterr().out


def test_no_command_prints_help_and_fails():
    proc = run()
    assert proc.returncode == 2
    assert "score" in proc.stdout and "Traceback" not in proc.stderr


def test_main_is_callable_in_process(files, capsys):
    code = cli.main(["score", str(files["solar"]), "--pred", "DAFFS", "--label", "rlz.C1", "--json"])
    assert code == 0
    out = json.loads(capsys.readouterr().out)
    assert out["n"] == 731
    assert cli.main(["score", str(files["solar"]), "--pred", "nope", "--label", "rlz.C1"]) == 2
    assert "smoothece: error:" in capsys.readouterr().err


# ---------------------------------------------------------------------------
# score: numbers agree with the Python API
# ---------------------------------------------------------------------------

@pytest.mark.parametrize("engine", ["numpy", "pyarrow"])
def test_score_solar_csv_matches_api(files, engine):
    if engine == "pyarrow":
        pytest.importorskip("pyarrow")
    daffs = datasets.solar_flares()["DAFFS"]
    out = ok_json(run("score", files["solar"], "--pred", "DAFFS", "--label", "rlz.C1", "--json", "--engine", engine))
    assert set(out) >= {"file", "n", "total_weight", "smece", "sigma", "ci_low", "ci_high", "level", "n_boot",
                        "seed", "metric"}
    assert out["file"] == str(files["solar"])
    assert out["n"] == 731 and out["total_weight"] == 731.0 and out["metric"] == "l1"
    assert abs(out["smece"] - smoothece.smece(daffs.f, daffs.y)) <= GRID_TOL
    assert out["sigma"] == out["smece"]
    assert out["ci_low"] is None and out["ci_high"] is None and out["n_boot"] == 0


def test_score_human_readable_line_and_console_script(files):
    args = ("score", files["solar"], "--pred", "DAFFS", "--label", "rlz.C1", "--ci", "--seed", "3")
    a = run(*args)
    b = run(*args, cmd=_script())
    assert a.returncode == 0 and b.returncode == 0, (a.stderr, b.stderr)
    assert a.stdout == b.stdout
    line = a.stdout.strip()
    assert line.startswith("smECE = 0.0674 (95% CI ") and line.endswith(", n = 731, " + str(files["solar"]))
    assert a.stderr == ""  # no progress bar when stderr is not a terminal


def test_score_ci_is_the_sketch_bootstrap(files):
    daffs = datasets.solar_flares()["DAFFS"]
    out = ok_json(run("score", files["solar"], "--pred", "DAFFS", "--label", "rlz.C1", "--ci", "--seed", "11",
                      "--json"))
    ref = smoothece.CalibrationSketch().update(daffs.f, daffs.y).bootstrap_smece(n_boot=1000, seed=11)
    assert out["n_boot"] == 1000 and out["seed"] == 11 and out["level"] == 0.95
    assert abs(out["ci_low"] - ref.low) <= 1e-12 and abs(out["ci_high"] - ref.high) <= 1e-12
    assert out["ci_low"] < out["smece"] < out["ci_high"]


def test_score_tsv_gzip_blank_lines_and_boolean_labels(files, tmp_path):
    gz = tmp_path / "solar.csv.gz"
    gz.write_bytes(gzip.compress(files["solar"].read_bytes()))
    tsv, blank, gzipped = map(ok_json, run_many(
        ("score", files["weights.tsv"], "--pred", "p", "--label", "y", "--weight", "w", "--json"),
        ("score", files["blank_bool.csv"], "--pred", "p", "--label", "y", "--json"),
        ("score", gz, "--pred", "DAFFS", "--label", "rlz.C1", "--json", "--engine", "numpy")))
    f, y, w = np.array([0.5, 0.25, 0.75]), np.array([1, 0, 1]), np.array([2, 0, 1.5])
    assert tsv["n"] == 3 and tsv["total_weight"] == 3.5
    assert abs(tsv["smece"] - smoothece.smece(f, y, weights=w)) <= 1e-12
    assert blank["n"] == 3 and abs(blank["smece"] - smoothece.smece(f, y)) <= 1e-12
    daffs = datasets.solar_flares()["DAFFS"]
    assert gzipped["n"] == 731 and abs(gzipped["smece"] - smoothece.smece(daffs.f, daffs.y)) <= GRID_TOL


def test_score_dropna_and_clip_match_api(files):
    solar = datasets.solar_flares()
    out = ok_json(run("score", files["solar"], "--pred", "NJIT", "--label", "rlz.C1", "--dropna", "--json"))
    assert out["n"] == 471 and out["dropped"] == 260
    assert abs(out["smece"] - smoothece.smece(solar["NJIT"].f, solar["NJIT"].y)) <= 1e-12
    out = ok_json(run("score", files["solar"], "--pred", "MCEVOL", "--label", "rlz.C1", "--clip", "--json"))
    assert abs(out["smece"] - smoothece.smece(solar["MCEVOL"].f, solar["MCEVOL"].y, clip=True)) <= GRID_TOL


def test_score_parquet_matches_api(solar_parquet):
    path, daffs, w, _ = solar_parquet
    out = ok_json(run("score", path, "--pred", "DAFFS", "--label", "flare", "--weight", "w", "--chunksize", "100",
                      "--json"))
    assert out["n"] == 731 and abs(out["total_weight"] - w.sum()) <= 1e-9
    assert abs(out["smece"] - smoothece.smece(daffs.f, daffs.y, weights=w)) <= GRID_TOL


def test_score_logit_metric(files):
    if "metric" not in inspect.signature(smoothece.smece).parameters:
        pytest.skip("smoothece.smece has no `metric` keyword yet, so `--metric logit` cannot be checked")
    daffs = datasets.solar_flares()["DAFFS"]
    out = ok_json(run("score", files["solar"], "--pred", "DAFFS", "--label", "rlz.C1", "--metric", "logit",
                      "--json"))
    assert out["metric"] == "logit" and out["n"] == 731
    assert abs(out["smece"] - smoothece.smece(daffs.f, daffs.y, metric="logit")) <= 1e-12


def test_score_streams_a_multi_million_row_csv(big_csv):
    path, f, y, w = big_csv
    expected = smoothece.smece(f, y, weights=w)
    engines = ["numpy"] + (["pyarrow"] if cli._try_import_pyarrow() is not None else [])
    for engine in engines:
        proc = run("score", path, "--pred", "p", "--label", "y", "--weight", "w", "--chunksize", "250000",
                   "--engine", engine, "--json")
        out = ok_json(proc)
        assert proc.stderr == ""
        assert out["n"] == N_BIG and out["total_weight"] == w.sum()
        assert abs(out["smece"] - expected) <= 1e-12, engine


# ---------------------------------------------------------------------------
# Errors: one line on stderr, exit 2 (command line) or 1 (data), never a traceback
# ---------------------------------------------------------------------------

def _error_cases(files):
    s, cols = files["solar"], ("--pred", "DAFFS", "--label", "rlz.C1")
    return {
        "missing file": (("score", s.parent / "nope.csv") + cols, 2, ("nope.csv", "no such file")),
        "missing column": (("score", s, "--pred", "DAFS", "--label", "rlz.C1"), 2,
                           ("no column 'DAFS'", "'DAFFS'", "'NJIT'", "'rlz.C1'")),
        "missing option": (("score", s, "--pred", "DAFFS"), 2, ("--label",)),
        "bad extension": (("score", files["data.xlsx"], "--pred", "p", "--label", "y"), 2,
                          (".xlsx", ".csv", ".parquet")),
        "bad output extension": (("plot", s) + cols + ("-o", s.parent / "x.gif"), 2, ("x.gif", ".png")),
        "non-numeric column": (("score", s, "--pred", "VALID_DATE", "--label", "rlz.C1"), 1,
                               ("line 2", "'VALID_DATE'", "'2016-01-01'", "not a number")),
        "out of range": (("score", s, "--pred", "MCEVOL", "--label", "rlz.C1"), 1,
                         ("line 157", "'MCEVOL'", "f[155] = -0.01", "--clip")),
        "out of range numpy": (("score", s, "--pred", "MCEVOL", "--label", "rlz.C1", "--engine", "numpy",
                                "--chunksize", "100"), 1, ("line 157", "f[55] = -0.01", "within a chunk of 100")),
        "missing value": (("score", s, "--pred", "NJIT", "--label", "rlz.C1"), 1, ("line 21", "'NJIT'", "--dropna")),
        "bad label": (("score", files["labels.csv"], "--pred", "p", "--label", "y"), 1, ("line 3", "y[1] = 2")),
        "short row": (("score", files["ragged.csv"], "--pred", "p", "--label", "y"), 1, ("line 3", "field")),
        "empty file": (("score", files["empty.csv"], "--pred", "p", "--label", "y"), 1, ("empty",)),
        "no rows": (("score", files["header_only.csv"], "--pred", "p", "--label", "y"), 1, ("no data rows",)),
        "damaged gzip": (("score", files["damaged.csv.gz"]) + cols, 1, ("cannot read damaged.csv.gz",)),
        "not parquet": (("score", files["fake.parquet"], "--pred", "p", "--label", "y"), 1, ("fake.parquet",)),
    }


@pytest.fixture(scope="module")
def error_runs(files):
    """Every error case at once, in parallel subprocesses (each test checks one)."""
    cases = _error_cases(files)
    procs = run_many(*(args for args, _, _ in cases.values()))
    return {name: (proc, code, needles) for (name, (_, code, needles)), proc in zip(cases.items(), procs)}


ERROR_CASES = ["missing file", "missing column", "missing option", "bad extension", "bad output extension",
               "non-numeric column", "out of range", "out of range numpy", "missing value", "bad label", "short row",
               "empty file", "no rows", "damaged gzip", "not parquet"]


def test_error_cases_are_all_listed(files):
    assert sorted(_error_cases(files)) == sorted(ERROR_CASES)


@pytest.mark.parametrize("case", ERROR_CASES)
def test_error(error_runs, case):
    proc, code, needles = error_runs[case]
    assert_error(proc, code, *needles)


def test_parquet_errors(solar_parquet):
    path, _, _, nulls = solar_parquet
    not_numbers, no_column, null, dropped = run_many(
        ("score", path, "--pred", "note", "--label", "flare"),
        ("score", path, "--pred", "DAFFS", "--label", "nope"),
        ("score", nulls, "--pred", "p", "--label", "y"),
        ("score", nulls, "--pred", "p", "--label", "y", "--dropna", "--json"))
    assert_error(not_numbers, 1, "'note'", "not a number")
    assert_error(no_column, 2, "no column 'nope'", "'flare'")
    assert_error(null, 1, "row index 1", "'p'", "--dropna")
    out = ok_json(dropped)
    assert out["n"] == 2 and out["dropped"] == 1


def test_without_pyarrow(files, solar_parquet, tmp_path):
    """With pyarrow hidden, Parquet asks for the extra and CSV still works (NumPy parser)."""
    blocker = tmp_path / "block"
    (blocker / "pyarrow").mkdir(parents=True)
    (blocker / "pyarrow" / "__init__.py").write_text("raise ImportError('pyarrow hidden by the test')\n")
    env = {**ENV, "PYTHONPATH": os.pathsep.join([str(blocker), ENV.get("PYTHONPATH", "")])}
    assert_error(run("score", solar_parquet[0], "--pred", "DAFFS", "--label", "flare", env=env), 1,
                 "pip install smoothece[parquet]")
    out = ok_json(run("score", files["solar"], "--pred", "DAFFS", "--label", "rlz.C1", "--json", env=env))
    daffs = datasets.solar_flares()["DAFFS"]
    assert abs(out["smece"] - smoothece.smece(daffs.f, daffs.y)) <= GRID_TOL


# ---------------------------------------------------------------------------
# plot and demo
# ---------------------------------------------------------------------------

def test_plot_writes_png_and_svg(files, tmp_path):
    png, svg = tmp_path / "d.png", tmp_path / "d.svg"
    proc = run("plot", files["solar"], "--pred", "DAFFS", "--label", "rlz.C1", "-o", png, "--binned",
               "--n-boot", "100", "--seed", "0")
    assert proc.returncode == 0, proc.stderr
    assert "smECE = 0.0674" in proc.stdout and str(png) in proc.stdout
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and png.stat().st_size > 10_000
    proc = run("plot", files["solar"], "--pred", "DAFFS", "--label", "rlz.C1", "-o", svg, "--n-boot", "0",
               cmd=_script())
    assert proc.returncode == 0, proc.stderr
    assert b"<svg" in svg.read_bytes()[:500]


def test_demo_writes_its_diagram_in_the_current_directory(tmp_path):
    proc, text = run_many(("demo", "--json", "--n-boot", "100"),
                          ("demo", "-o", tmp_path / "demo.svg", "--n-boot", "50", "--seed", "1"), cwd=tmp_path)
    out = ok_json(proc)
    png = tmp_path / "smoothece-demo.png"
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and png.stat().st_size > 10_000
    assert out["n"] == 20_000 and out["p_value"] < 0.01 and 0.05 < out["smece"] < 0.2
    assert out["ci_low"] < out["smece"] < out["ci_high"]
    f, y = cli.demo_data(20_000, 0)
    assert abs(out["smece"] - smoothece.smece(f, y)) <= 1e-12
    assert text.returncode == 0, text.stderr
    assert "smECE = " in text.stdout and "calibration test: p = " in text.stdout
    assert (tmp_path / "demo.svg").stat().st_size > 0


# ---------------------------------------------------------------------------
# Progress line (only on a terminal, only after a second)
# ---------------------------------------------------------------------------

class _Terminal(io.StringIO):
    def isatty(self):
        return True


def test_progress_line_only_on_a_terminal_and_after_a_second():
    now = [0.0]
    term = _Terminal()
    bar = cli.Progress("big.csv", 1000, stream=term, clock=lambda: now[0])
    bar.update(100, 10)
    assert term.getvalue() == ""  # quick reads print nothing
    now[0] = 1.5
    bar.update(500, 50)
    shown = term.getvalue()
    assert shown.startswith("\r") and "big.csv" in shown and "50%" in shown and "\n" not in shown
    bar.close()
    assert term.getvalue().endswith("\r") and "\n" not in term.getvalue()
    pipe = io.StringIO()
    quiet = cli.Progress("big.csv", 1000, stream=pipe, clock=lambda: now[0] + 10)
    quiet.update(500, 50)
    quiet.close()
    assert pipe.getvalue() == ""
