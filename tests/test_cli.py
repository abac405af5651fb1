"""The ``smoothece`` command line on files written to tmp_path: its ``main()`` in this
process (what it prints, its exit status), and for what crosses the process
boundary (the two entry points, pipes and redirections on standard input, the
environment, resource limits) ``python -m smoothece`` and the installed console
script in subprocesses."""

import gzip
import io
import json
import os
import resource
import shutil
import signal
import subprocess
import sys

import numpy as np
import pytest

import smoothece
from smoothece import cli, datasets
from smoothece._util import format_p
from smoothece.cli.commands import demo_data
from smoothece.cli.progress import Progress

pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")

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


def run(*args, cwd=None):
    """One run of the command line's ``main()`` in this process: its exit status and what it writes, as
    a subprocess would give them (``spawn``). Standard output and error are UTF-8 streams that are not
    terminals (as ``ENV``'s pipes), help is wrapped at the width a pipe gets, and SMOOTHECE_DEBUG is unset;
    a warning that the command does not handle is an error (pytest's filters)."""
    out, err = (io.TextIOWrapper(io.BytesIO(), encoding="utf-8") for _ in range(2))
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(sys, "stdout", out)
        patch.setattr(sys, "stderr", err)
        patch.delenv("SMOOTHECE_DEBUG", raising=False)
        patch.setenv("COLUMNS", ENV.get("COLUMNS", "80"))  # shutil.get_terminal_size's answer on a pipe
        if cwd is not None:
            patch.chdir(cwd)
        code = cli.main([str(a) for a in args])
    texts = []
    for stream in (out, err):
        stream.flush()
        texts.append(stream.buffer.getvalue().decode("utf-8"))
    return subprocess.CompletedProcess(args, code, *texts)


def run_many(*arg_lists, **kw):
    """Several runs, one after the other; results in order."""
    return [run(*args, **kw) for args in arg_lists]


def spawn(*args, cmd=None, cwd=None, env=None, stdin=None, input=None, preexec_fn=None):
    """One run in a subprocess; ``input`` (bytes) arrives through a pipe, ``stdin`` (an open file) as a
    redirection."""
    proc = subprocess.run((cmd or MODULE) + [str(a) for a in args], capture_output=True, cwd=cwd, env=env or ENV,
                          timeout=TIMEOUT, stdin=stdin, input=input, preexec_fn=preexec_fn)
    proc.stdout = proc.stdout.decode("utf-8")
    proc.stderr = proc.stderr.decode("utf-8")
    return proc


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


def write_rows(path, header, columns):
    """A CSV of the given columns, each value written as Python's repr (which reads back exactly)."""
    with open(path, "w") as fh:
        fh.write(header + "\n")
        fh.writelines(",".join(map(repr, row)) + "\n" for row in zip(*(c.tolist() for c in columns)))
    return path


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
        "extra_field.csv": "p,y,note\n0.5,1,a\n0.25,0,b,c\n",
        "labels.csv": "p,y\n0.5,1\n0.25,2\n",
        "blank_bool.csv": "p,y\n\n0.5,true\n0.25,False\n\r\n  \n0.75,1\n\n",
        "weights.tsv": "p\ty\tw\n0.5\t1\t2\n0.25\t0\t0\n0.75\t1\t1.5\n",
        "padded.csv": "p , y\n 0.5 , 1\n0.25, 0 \n 0.75,TRUE\n",
        "data.xlsx": "p,y\n0.5,1\n",
        "underscore.csv": "p,y\n0.5,1\n0.2_5,0\n",
        "comma_decimal.csv": "p;y\n0,5;1\n",
        "dup_used.csv": "p,y,p\n0.5,1,0.2\n",
        "dup_unused.csv": "p,y,x,x\n0.5,1,a,b\n0.25,0,c,d\n",
        "nul.csv": "p,y\n0.5,1\n0.2\x005,0\n",
        "yes_no.csv": "p,y\n0.5,yes\n",
    }
    for name, text in texts.items():
        (d / name).write_bytes(text.encode())
    out.update({name: d / name for name in texts})
    out["damaged.csv.gz"] = d / "damaged.csv.gz"
    out["damaged.csv.gz"].write_bytes(gzip.compress(solar.read_bytes())[:300])
    out["fake.parquet"] = d / "fake.parquet"
    out["fake.parquet"].write_text("p,y\n0.5,1\n")
    return out


@pytest.fixture(scope="module")
def solar_parquet(tmp_path_factory):
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
        top = spawn("--help", cmd=cmd)
        assert top.returncode == 0, top.stderr
        for word in ("score", "plot", "demo", "exit status"):
            assert word in top.stdout
    proc = spawn("score", "--help")
    assert proc.returncode == 0 and "--pred" in proc.stdout and proc.stdout.startswith("usage: smoothece score")


@pytest.mark.parametrize("sub, words", [
    ("score", ("--pred", "--label", "--weight", "--weight-kind", "--by", "--metric", "--ci", "--test", "--json",
               "--chunksize", "--dropna", "--clip", "--seed", "standard input")),
    ("plot", ("--output", "--binned", "--by", "--metric", "--n-boot", "--seed", "--weight", "--test")),
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

def test_score_solar_csv_matches_api(files):
    daffs = datasets.solar_flares()["DAFFS"]
    out = ok_json(run("score", files["solar"], "--pred", "DAFFS", "--label", "rlz.C1", "--json"))
    assert set(out) >= {"file", "n", "total_weight", "smece", "sigma", "ci_low", "ci_high", "level", "n_boot",
                        "p_value", "n_sim", "seed", "metric", "dropped", "warnings"}
    assert out["file"] == str(files["solar"])
    assert out["n"] == 731 and out["total_weight"] == 731.0 and out["metric"] == "l1"
    assert abs(out["smece"] - smoothece.smece(daffs.f, daffs.y)) <= GRID_TOL
    assert out["sigma"] == out["smece"]
    assert out["ci_low"] is None and out["ci_high"] is None and out["n_boot"] == 0 and out["seed"] is None
    assert out["p_value"] is None and out["warnings"] == []


def test_score_human_readable_line_and_console_script(files):
    args = ("score", files["solar"], "--pred", "DAFFS", "--label", "rlz.C1", "--ci", "--seed", "3")
    a = spawn(*args)
    b = spawn(*args, cmd=_script())
    assert a.returncode == 0 and b.returncode == 0, (a.stderr, b.stderr)
    assert a.stdout == b.stdout
    line = a.stdout.strip()
    assert line.startswith("smECE = 0.0674 (95% CI ") and line.endswith(", n = 731, " + str(files["solar"]))
    assert a.stderr == ""  # no progress bar when stderr is not a terminal


def test_score_ci_and_test_are_the_sketch_resampling(files):
    daffs = datasets.solar_flares()["DAFFS"]
    out = ok_json(run("score", files["solar"], "--pred", "DAFFS", "--label", "rlz.C1", "--ci", "--test", "--seed",
                      "11", "--n-sim", "200", "--json"))
    sketch = smoothece.CalibrationSketch().update(daffs.f, daffs.y)
    ref = sketch.bootstrap_smece(n_boot=1000, seed=11)
    assert out["n_boot"] == 1000 and out["seed"] == 11 and out["level"] == 0.95
    assert abs(out["ci_low"] - ref.low) <= 1e-12 and abs(out["ci_high"] - ref.high) <= 1e-12
    assert out["ci_low"] < out["smece"] < out["ci_high"]
    assert out["n_sim"] == 200 and out["p_value"] == sketch.calibration_test(n_sim=200, seed=11).p_value


def test_score_tsv_gzip_blank_lines_padding_and_boolean_labels(files, tmp_path):
    gz = tmp_path / "solar.csv.gz"
    gz.write_bytes(gzip.compress(files["solar"].read_bytes()))
    tsv, blank, padded, gzipped = map(ok_json, run_many(
        ("score", files["weights.tsv"], "--pred", "p", "--label", "y", "--weight", "w", "--json"),
        ("score", files["blank_bool.csv"], "--pred", "p", "--label", "y", "--json"),
        ("score", files["padded.csv"], "--pred", "p", "--label", "y", "--json"),
        ("score", gz, "--pred", "DAFFS", "--label", "rlz.C1", "--json")))
    f, y, w = np.array([0.5, 0.25, 0.75]), np.array([1, 0, 1]), np.array([2, 0, 1.5])
    assert tsv["n"] == 3 and tsv["total_weight"] == 3.5
    assert abs(tsv["smece"] - smoothece.smece(f, y, weights=w)) <= 1e-12
    for out in (blank, padded):
        assert out["n"] == 3 and abs(out["smece"] - smoothece.smece(f, y)) <= 1e-12
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


def test_score_logit_metric_streams_into_a_logit_sketch(files):
    """--metric logit (with --ci too) is the logit sketch's answer, read in chunks: the interval is the
    sketch's bootstrap (cells), not the array function's."""
    daffs = datasets.solar_flares()["DAFFS"]
    plain, boot = map(ok_json, run_many(
        ("score", files["solar"], "--pred", "DAFFS", "--label", "rlz.C1", "--metric", "logit", "--chunksize", "100",
         "--json"),
        ("score", files["solar"], "--pred", "DAFFS", "--label", "rlz.C1", "--metric", "logit", "--ci", "--seed", "5",
         "--json")))
    sketch = smoothece.CalibrationSketch(metric="logit").update(daffs.f, daffs.y)
    assert plain["metric"] == "logit" and plain["n"] == 731
    assert abs(plain["smece"] - sketch.smece()) <= 1e-12
    assert abs(plain["smece"] - smoothece.smece(daffs.f, daffs.y, metric="logit")) <= GRID_TOL
    ref = sketch.bootstrap_smece(n_boot=1000, seed=5)
    assert boot["metric"] == "logit" and boot["n_boot"] == 1000
    assert (boot["smece"], boot["ci_low"], boot["ci_high"]) == (ref.value, ref.low, ref.high)


def test_score_streams_a_multi_million_row_csv(big_csv):
    path, f, y, w = big_csv
    proc = run("score", path, "--pred", "p", "--label", "y", "--weight", "w", "--chunksize", "250000", "--json")
    out = ok_json(proc)
    assert proc.stderr == ""
    assert out["n"] == N_BIG and out["total_weight"] == w.sum()
    assert abs(out["smece"] - smoothece.smece(f, y, weights=w)) <= 1e-12


def test_json_carries_the_warnings(tmp_path):
    """A warning (here: the SmoothECE is below what a coarse sketch resolves) is in --json's output, and
    on stderr without --json."""
    rng = np.random.default_rng(0)
    f = rng.random(20_000)
    path = write_rows(tmp_path / "calibrated.csv", "p,y", [f, (rng.random(f.size) < f).astype(int)])
    as_json, as_text = run_many(("score", path, "--pred", "p", "--label", "y", "--resolution", "256", "--json"),
                                ("score", path, "--pred", "p", "--label", "y", "--resolution", "256"))
    out = ok_json(as_json)
    assert len(out["warnings"]) == 1 and "grid resolves only bandwidths from 0.0625" in out["warnings"][0]
    assert out["warnings"][0].endswith("(here: a larger --resolution, up to 4194304)")
    assert as_json.stderr == ""
    assert as_text.returncode == 0 and as_text.stderr.startswith("smoothece: warning: this sketch's grid resolves only")


def test_weight_kind_reaches_the_resampling(tmp_path):
    """Whole weights above 1 without --weight-kind: a note naming the option; with it, the library's
    numbers for that kind and no note."""
    rng = np.random.default_rng(3)
    f = np.round(rng.random(3000), 2)
    y, w = (rng.random(f.size) < f).astype(int), rng.integers(1, 4, f.size)
    path = write_rows(tmp_path / "counts.csv", "p,y,w", [f, y, w])
    args = ("score", path, "--pred", "p", "--label", "y", "--weight", "w", "--ci", "--test", "--n-boot", "50",
            "--n-sim", "50", "--seed", "7", "--json")
    left_out, frequency = map(ok_json, run_many(args, (*args, "--weight-kind", "frequency")))
    assert len(left_out["warnings"]) == 1 and "weight_kind='frequency'" in left_out["warnings"][0]
    assert left_out["warnings"][0].endswith("(here: --weight-kind frequency or --weight-kind importance)")
    assert frequency["warnings"] == []
    sketch = smoothece.CalibrationSketch().update(f, y, w.astype(float))
    for out, kind in ((left_out, "importance"), (frequency, "frequency")):
        boot = sketch.bootstrap_smece(n_boot=50, seed=7, weight_kind=kind)
        test = sketch.calibration_test(n_sim=50, seed=7, weight_kind=kind)
        assert (out["ci_low"], out["ci_high"], out["p_value"]) == (boot.low, boot.high, test.p_value)
    assert frequency["ci_high"] - frequency["ci_low"] < left_out["ci_high"] - left_out["ci_low"]


# ---------------------------------------------------------------------------
# Standard input
# ---------------------------------------------------------------------------

def test_score_reads_standard_input_from_a_pipe_and_a_redirection(files, big_csv):
    solar = files["solar"].read_bytes()
    daffs = datasets.solar_flares()["DAFFS"]
    args = ("score", "-", "--pred", "DAFFS", "--label", "rlz.C1", "--json")
    piped = ok_json(spawn(*args, input=solar))
    zipped = ok_json(spawn(*args, input=gzip.compress(solar)))  # gzip is recognised by its magic bytes
    with open(files["solar"], "rb") as fh:
        redirected = ok_json(spawn(*args, stdin=fh))
    for out in (piped, zipped, redirected):
        assert out["file"] == "-" and out["n"] == 731
        assert abs(out["smece"] - smoothece.smece(daffs.f, daffs.y)) <= GRID_TOL
    # A shell pipeline, and a file of millions of rows through it, in chunks.
    path, f, y, w = big_csv
    proc = subprocess.run(f"cat {path} | {sys.executable} -m smoothece score - --pred p --label y --weight w "
                          f"--chunksize 100000 --json", shell=True, capture_output=True, text=True, env=ENV,
                          timeout=TIMEOUT)
    out = ok_json(proc)
    assert out["n"] == N_BIG and abs(out["smece"] - smoothece.smece(f, y, weights=w)) <= 1e-12


def test_standard_input_formats_and_errors(files):
    tsv = spawn("score", "-", "--pred", "p", "--label", "y", "--weight", "w", "--format", "tsv", "--json",
                input=files["weights.tsv"].read_bytes())
    assert ok_json(tsv)["total_weight"] == 3.5
    assert_error(spawn("score", "-", "--pred", "p", "--label", "y", input=files["labels.csv"].read_bytes()), 1,
                 "<stdin> line 3, column 'y': y = 2")
    assert_error(spawn("score", "-", "--pred", "p", "--label", "y", "--format", "parquet", input=b""), 2,
                 "Parquet cannot be read from standard input")
    assert_error(spawn("score", "-", "--pred", "p", "--label", "y", input=b""), 1, "<stdin> is empty")


# ---------------------------------------------------------------------------
# Errors: one line on stderr, exit 2 (command line) or 1 (data), never a traceback
# ---------------------------------------------------------------------------

def _error_cases(files):
    s, cols = files["solar"], ("--pred", "DAFFS", "--label", "rlz.C1")
    mcevol = int(np.count_nonzero(datasets.solar_flares()["MCEVOL"].f < 0))
    return {
        "missing file": (("score", s.parent / "nope.csv") + cols, 2, ("nope.csv", "no such file")),
        "missing column": (("score", s, "--pred", "DAFS", "--label", "rlz.C1"), 2,
                           ("no column 'DAFS'", "'DAFFS'", "'NJIT'", "'rlz.C1'")),
        "missing option": (("score", s, "--pred", "DAFFS"), 2, ("--label",)),
        "bad extension": (("score", files["data.xlsx"], "--pred", "p", "--label", "y"), 2,
                          (".xlsx", ".csv", ".parquet")),
        "bad output extension": (("plot", s) + cols + ("-o", s.parent / "x.gif"), 2, ("x.gif", ".png")),
        "removed engine": (("score", s) + cols + ("--engine", "numpy"), 2, ("--engine", "'numpy'")),
        "non-numeric column": (("score", s, "--pred", "VALID_DATE", "--label", "rlz.C1"), 1,
                               ("line 2", "'VALID_DATE'", "'2016-01-01'", "not a number")),
        "out of range": (("score", s, "--pred", "MCEVOL", "--label", "rlz.C1"), 1,
                         ("solar.csv line 157, column 'MCEVOL': f = -0.01: predictions must be finite and in [0, 1] "
                          f"({mcevol} of 731 values bad, first at line 157); pass --clip to clamp",)),
        "out of range across chunks": (("score", s, "--pred", "MCEVOL", "--label", "rlz.C1", "--chunksize", "100"),
                                       1, ("line 157, column 'MCEVOL': f = -0.01", f"({mcevol} of 731 values bad, "
                                                                                   f"first at line 157)")),
        "missing value": (("score", s, "--pred", "NJIT", "--label", "rlz.C1"), 1,
                          ("line 21, column 'NJIT': missing value", "260 of 731 rows", "--dropna")),
        "bad label": (("score", files["labels.csv"], "--pred", "p", "--label", "y"), 1,
                      ("line 3, column 'y': y = 2: labels must be 0 or 1",)),
        "not a label": (("score", files["yes_no.csv"], "--pred", "p", "--label", "y"), 1,
                        ("line 2, column 'y': 'yes' is not a label",)),
        "short row": (("score", files["ragged.csv"], "--pred", "p", "--label", "y"), 1,
                      ("ragged.csv line 3: 1 field, but the header has 2",)),
        "extra field": (("score", files["extra_field.csv"], "--pred", "p", "--label", "y"), 1,
                        ("extra_field.csv line 3: 4 fields, but the header has 3",)),
        "duplicate column": (("score", files["dup_used.csv"], "--pred", "p", "--label", "y"), 2,
                             ("column 'p' (given as --pred) appears 2 times in the header (fields 1 and 3)",)),
        "NUL byte": (("score", files["nul.csv"], "--pred", "p", "--label", "y"), 1,
                     ("nul.csv line 3, column 'p': '0.2\\x005' is not a number", "NUL byte")),
        "underscore in a number": (("score", files["underscore.csv"], "--pred", "p", "--label", "y"), 1,
                                   ("underscore.csv line 3, column 'p': '0.2_5' is not a number",)),
        "decimal comma": (("score", files["comma_decimal.csv"], "--pred", "p", "--label", "y"), 1,
                          ("line 2, column 'p': '0,5' is not a number",)),
        "empty file": (("score", files["empty.csv"], "--pred", "p", "--label", "y"), 1, ("empty",)),
        "no rows": (("score", files["header_only.csv"], "--pred", "p", "--label", "y"), 1, ("no data rows",)),
        "damaged gzip": (("score", files["damaged.csv.gz"]) + cols, 1, ("cannot read damaged.csv.gz",)),
        "not parquet": (("score", files["fake.parquet"], "--pred", "p", "--label", "y"), 1, ("fake.parquet",)),
    }


ERROR_CASES = ["missing file", "missing column", "missing option", "bad extension", "bad output extension",
               "removed engine", "non-numeric column", "out of range", "out of range across chunks", "missing value",
               "bad label", "not a label", "short row", "extra field", "duplicate column", "NUL byte",
               "underscore in a number", "decimal comma", "empty file", "no rows", "damaged gzip", "not parquet"]


def test_error_cases_are_all_listed(files):
    assert sorted(_error_cases(files)) == sorted(ERROR_CASES)


@pytest.mark.parametrize("case", ERROR_CASES)
def test_error(files, case):
    args, code, needles = _error_cases(files)[case]
    assert_error(run(*args), code, *needles)


def test_line_breaks_inside_quotes_are_reported(tmp_path):
    """A quoted field may run over line breaks (legal CSV), and a quote left open swallows the lines
    after it: either way lines are not rows, which the output says instead of losing rows silently."""
    legal = tmp_path / "legal.csv"
    legal.write_text('p,y,note\n0.5,1,"two\nlines"\n0.25,0,"a,b"\n0.75,1,"say ""hi"""\n')
    unclosed = tmp_path / "unclosed.csv"
    unclosed.write_text('p,y,note\n0.5,1,"oops\n0.25,0,x\n0.75,1,y\n')
    out = ok_json(run("score", legal, "--pred", "p", "--label", "y", "--json"))
    assert out["n"] == 3 and out["warnings"] == ["legal.csv: 1 line break is inside quoted fields, so its 5 lines "
                                                 "hold 3 rows (a quote left open swallows the lines after it); line "
                                                 "numbers given count a row as one line"]
    proc = run("score", unclosed, "--pred", "p", "--label", "y")
    assert proc.returncode == 0 and proc.stdout.startswith("smECE = 0.500, n = 1,")
    assert proc.stderr.startswith("smoothece: warning: unclosed.csv: 2 line breaks are inside quoted fields, so its "
                                  "4 lines hold 1 row")


def test_a_duplicated_column_that_is_not_used_is_fine(files):
    out = ok_json(run("score", files["dup_unused.csv"], "--pred", "p", "--label", "y", "--json"))
    assert out["n"] == 2


def test_bad_values_are_placed_by_file_line_and_counted_over_the_whole_file(tmp_path):
    """Chunks of 1,000 rows; three bad predictions in three chunks, blank lines before them: the error names
    the first one's line in the file and counts all three, with no --clip advice (1.7 is not round-off)."""
    rng = np.random.default_rng(1)
    f = rng.random(10_000)
    y = (rng.random(f.size) < f).astype(int)
    f[[7000, 8500, 9998]] = [1.7, 2.5, -3.0]
    path = write_rows(tmp_path / "preds.csv", "p,y", [f, y])
    text = path.read_text().splitlines(keepends=True)
    path.write_text(text[0] + "\n" + "".join(text[1:3000]) + "\r\n" + "".join(text[3000:]))  # two blank lines
    line = assert_error(run("score", path, "--pred", "p", "--label", "y", "--chunksize", "1000"), 1,
                        "preds.csv line 7004, column 'p': f = 1.7: predictions must be finite and in [0, 1] "
                        "(3 of 10,000 values bad, first at line 7004)")
    assert "--clip" not in line
    # Labels and weights, in the same way.
    f[[7000, 8500, 9998]] = 0.5
    labels = y.copy()
    labels[4321] = 3
    w = np.ones(f.size)
    w[[12, 5000]] = [-1.0, np.inf]
    bad_labels = write_rows(tmp_path / "labels.csv", "p,y,w", [f, labels, np.ones(f.size)])
    bad_weights = write_rows(tmp_path / "weights.csv", "p,y,w", [f, y, w])
    labels_run, weights_run, weights_as_labels = run_many(
        ("score", bad_labels, "--pred", "p", "--label", "y", "--weight", "w", "--chunksize", "1000"),
        ("score", bad_weights, "--pred", "p", "--label", "y", "--weight", "w", "--chunksize", "1000"),
        ("score", bad_weights, "--pred", "p", "--label", "w", "--chunksize", "1000"))
    assert_error(labels_run, 1, "labels.csv line 4323, column 'y': y = 3: labels must be 0 or 1 (1 of 10,000 values "
                                "bad, first at line 4323)")
    assert_error(weights_run, 1, "weights.csv line 14, column 'w': weights = -1: weights must be finite and "
                                 "non-negative (2 of 10,000 values bad, first at line 14)")
    assert_error(weights_as_labels, 1, "line 14, column 'w': y = -1: labels must be 0 or 1")


def test_the_librarys_hints_reach_the_command_line(tmp_path):
    rng = np.random.default_rng(2)
    f = rng.random(5_000)
    y = (rng.random(f.size) < f).astype(int)
    percent = write_rows(tmp_path / "percent.csv", "p,y", [np.round(100 * f, 1), y])
    logits = write_rows(tmp_path / "logits.csv", "p,y", [np.log(f / (1 - f)), y])
    rounded = f.copy()
    rounded[[10, 4000]] = [1.004, -0.002]
    roundoff = write_rows(tmp_path / "roundoff.csv", "p,y", [rounded, y])
    p, lg, ro, clipped = run_many(("score", percent, "--pred", "p", "--label", "y"),
                                  ("score", logits, "--pred", "p", "--label", "y"),
                                  ("score", roundoff, "--pred", "p", "--label", "y", "--chunksize", "1000"),
                                  ("score", roundoff, "--pred", "p", "--label", "y", "--clip", "--json"))
    assert "--clip" not in assert_error(p, 1, "look like percentages: divide them by 100")
    assert "--clip" not in assert_error(lg, 1, "look like logits")
    assert_error(ro, 1, "line 12, column 'p': f = 1.004", "(2 of 5,000 values bad",
                 "pass --clip to clamp these 2 (all within 0.01 of [0, 1])")
    assert ok_json(clipped)["n"] == 5_000


def test_parquet_errors(solar_parquet):
    path, _, _, nulls = solar_parquet
    not_numbers, no_column, null, dropped = run_many(
        ("score", path, "--pred", "note", "--label", "flare"),
        ("score", path, "--pred", "DAFFS", "--label", "nope"),
        ("score", nulls, "--pred", "p", "--label", "y"),
        ("score", nulls, "--pred", "p", "--label", "y", "--dropna", "--json"))
    assert_error(not_numbers, 1, "row index 0, column 'note': 'x' is not a number")
    assert_error(no_column, 2, "no column 'nope'", "'flare'")
    assert_error(null, 1, "row index 1, column 'p': missing value", "--dropna")
    out = ok_json(dropped)
    assert out["n"] == 2 and out["dropped"] == 1


def test_without_pyarrow(files, solar_parquet, tmp_path):
    """pyarrow is a dependency: with it hidden, reading any file is one clear line."""
    blocker = tmp_path / "block"
    (blocker / "pyarrow").mkdir(parents=True)
    (blocker / "pyarrow" / "__init__.py").write_text("raise ImportError('pyarrow hidden by the test')\n")
    env = {**ENV, "PYTHONPATH": os.pathsep.join([str(blocker), ENV.get("PYTHONPATH", "")])}
    for path, cols in ((solar_parquet[0], ("DAFFS", "flare")), (files["solar"], ("DAFFS", "rlz.C1"))):
        assert_error(spawn("score", path, "--pred", cols[0], "--label", cols[1], env=env), 1,
                     "reading files needs pyarrow", "pip install pyarrow")


# ---------------------------------------------------------------------------
# --by: calibration by slice
# ---------------------------------------------------------------------------

@pytest.fixture(scope="module")
def sliced(tmp_path_factory):
    """30,000 rows in 5 regions (region 'c' badly calibrated) over 10 days, as CSV and Parquet."""
    rng = np.random.default_rng(7)
    n = 30_000
    regions = np.array(["a", "b", "c", "d", "e"])[rng.integers(0, 5, n)]
    days = np.datetime64("2024-03-01") + rng.integers(0, 10, n).astype("timedelta64[D]")
    f = rng.beta(2, 2, n)
    truth = np.where(regions == "c", f ** 2, f)
    y = (rng.random(n) < truth).astype(int)
    d = tmp_path_factory.mktemp("by")
    csv_path = d / "sliced.csv"
    with open(csv_path, "w") as fh:
        fh.write("p,y,region,day\n")
        fh.writelines(f"{a!r},{b},{r},{t}\n" for a, b, r, t in zip(f.tolist(), y.tolist(), regions, days.astype(str)))
    parquet = d / "sliced.parquet"
    pq.write_table(pa.table({"p": f, "y": y, "region": pa.array(regions).dictionary_encode(), "day": days}), parquet,
                   row_group_size=7_000)
    return csv_path, parquet, f, y, regions, days


def test_by_scores_each_group_in_the_librarys_order_with_the_overall(sliced):
    csv_path, parquet, f, y, regions, days = sliced
    args = ("--pred", "p", "--label", "y", "--by", "region", "--chunksize", "4000")
    grouped, parquet_run, plain, text, worst_first = run_many(
        ("score", csv_path) + args + ("--json",), ("score", parquet) + args + ("--json",),
        ("score", csv_path, "--pred", "p", "--label", "y", "--json"), ("score", csv_path) + args,
        ("score", csv_path) + args + ("--json", "--sort", "smece"))
    out, pout, overall = ok_json(grouped), ok_json(parquet_run), ok_json(plain)
    ref = smoothece.smece_by_group(f, y, regions)
    by_key = dict(zip(ref.keys.tolist(), ref.smece.tolist()))
    assert out["by"] == "region" and out["ordered"] is False and len(out["groups"]) == 5
    assert [g["key"] for g in out["groups"]] == ref.keys.tolist()  # smece_by_group's order, not re-sorted
    # --sort smece asks for worst first: region c, badly calibrated by construction
    sorted_out = ok_json(worst_first)
    values = [g["smece"] for g in sorted_out["groups"]]
    assert sorted_out["groups"][0]["key"] == "c" and values == sorted(values, reverse=True)
    assert sorted(sorted_out["groups"], key=lambda g: g["key"]) == sorted(out["groups"], key=lambda g: g["key"])
    for g in out["groups"]:
        assert g["smece"] == by_key[g["key"]]  # the rows by group, read in chunks: smece_by_group's numbers
        assert g["n"] == int(np.count_nonzero(regions == g["key"]))
    assert pout["groups"] == out["groups"]  # a Parquet dictionary column gives the same groups
    # The overall is the score without --by, and all groups' sketches merged.
    assert abs(out["smece"] - overall["smece"]) <= 1e-12 and out["n"] == overall["n"] == f.size
    total = smoothece.GroupedSketch().update(f, y, regions).total().smece()
    assert abs(out["smece"] - total) <= 1e-12
    lines = text.stdout.splitlines()
    assert lines[0].startswith("smECE = ") and lines[1] == "by region: 5 groups"
    assert lines[2].split() == ["region", "n", "smECE"] and [ln.split()[0] for ln in lines[3:]] == ref.keys.tolist()


def test_by_with_intervals_and_tests(sliced):
    csv_path, _, f, y, regions, _ = sliced
    out = ok_json(run("score", csv_path, "--pred", "p", "--label", "y", "--by", "region", "--ci", "--test",
                      "--n-boot", "200", "--n-sim", "200", "--seed", "3", "--json"))
    # The rows by group, read in chunks, answer as smece_by_group on the arrays: group i resamples with seed 3 + i.
    ref = smoothece.smece_by_group(f, y, regions, n_boot=200, test=True, n_sim=200, seed=3)
    overall = smoothece.CalibrationSketch().update(f, y)  # one chunk
    assert out["seed"] == 3 and out["n_sim"] == 200
    assert out["p_value"] == overall.calibration_test(n_sim=200, seed=3).p_value
    assert out["ci_low"] == overall.bootstrap_smece(n_boot=200, seed=3).low
    for g in out["groups"]:
        i = ref.keys.tolist().index(g["key"])
        assert (g["smece"], g["ci_low"], g["ci_high"]) == (ref.smece[i], ref.low[i], ref.high[i])
        assert (g["p_value"], g["p_adjusted"]) == (ref.p_value[i], ref.p_adjusted[i])
    worst = next(g for g in out["groups"] if g["key"] == "c")
    assert worst["smece"] == max(g["smece"] for g in out["groups"]) and worst["p_adjusted"] < 0.05
    text = run("score", csv_path, "--pred", "p", "--label", "y", "--by", "region", "--ci", "--test", "--n-boot",
               "100", "--n-sim", "100", "--seed", "3")
    assert text.returncode == 0, text.stderr
    assert text.stdout.splitlines()[2].split() == ["region", "n", "smECE", "95%", "CI", "p", "p", "(BH)"]


def test_by_dates_are_ordered_keys_and_drawn_as_a_drift(sliced, tmp_path):
    csv_path, parquet, *_ = sliced
    args = ("--pred", "p", "--label", "y", "--by", "day")
    from_csv, from_parquet, drift, forest = run_many(
        ("score", csv_path) + args + ("--json",), ("score", parquet) + args + ("--json",),
        ("plot", csv_path) + args + ("-o", tmp_path / "drift.png", "--n-boot", "50", "--test", "--n-sim", "50"),
        ("plot", parquet, "--pred", "p", "--label", "y", "--by", "region", "-o", tmp_path / "forest.svg",
         "--n-boot", "50"))
    a, b = ok_json(from_csv), ok_json(from_parquet)
    assert a["ordered"] is True and b["ordered"] is True
    assert sorted(g["key"] for g in a["groups"]) == [f"2024-03-{d:02d}" for d in range(1, 11)]
    assert a["groups"] == b["groups"]
    for proc, out in ((drift, tmp_path / "drift.png"), (forest, tmp_path / "forest.svg")):
        assert proc.returncode == 0, proc.stderr
        assert proc.stdout.strip().endswith(f"-> {out}") and "groups by" in proc.stdout
    assert (tmp_path / "drift.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert b"<svg" in (tmp_path / "forest.svg").read_bytes()[:500]


def test_by_errors_name_the_line_and_the_group(tmp_path, sliced):
    csv_path = sliced[0]
    text = csv_path.read_text().splitlines(keepends=True)
    fields = text[20_001].split(",")
    fields[0] = "1.5"
    text[20_001] = ",".join(fields)
    bad = tmp_path / "bad.csv"
    bad.write_text("".join(text))
    missing_key = tmp_path / "missing_key.csv"
    missing_key.write_text("p,y,g\n0.5,1,a\n0.25,0,\n")
    mixed = tmp_path / "mixed.csv"  # integer keys in the first chunk, then a word
    mixed.write_text("p,y,g\n" + "0.5,1,1\n" * 20_000 + "0.75,1,x\n")
    value, key, kinds, binned = run_many(
        ("score", bad, "--pred", "p", "--label", "y", "--by", "region", "--chunksize", "1000"),
        ("score", missing_key, "--pred", "p", "--label", "y", "--by", "g"),
        ("score", mixed, "--pred", "p", "--label", "y", "--by", "g", "--chunksize", "1000"),
        ("plot", csv_path, "--pred", "p", "--label", "y", "--by", "region", "--binned", "-o", tmp_path / "x.png"))
    assert_error(value, 1, f"bad.csv line 20002 (group '{fields[2]}'), column 'p': f = 1.5",
                 "(1 of 30,000 values bad, first at line 20002)")
    assert_error(key, 1, "line 3, column 'g': missing value", "--dropna")
    assert_error(kinds, 1, "mixed.csv line 20002, column 'g': 'x' is not an integer like the keys before it")
    assert_error(binned, 2, "--binned", "--by")
    dropped = ok_json(run("score", missing_key, "--pred", "p", "--label", "y", "--by", "g", "--dropna", "--json"))
    assert dropped["n"] == 1 and dropped["dropped"] == 1 and [g["key"] for g in dropped["groups"]] == ["a"]


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
    proc = spawn("plot", files["solar"], "--pred", "DAFFS", "--label", "rlz.C1", "-o", svg, "--n-boot", "0",
                 "--metric", "logit", cmd=_script())
    assert proc.returncode == 0, proc.stderr
    assert "smECE[logit] = " in proc.stdout
    assert b"<svg" in svg.read_bytes()[:500]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["d.png", "d.svg"]  # no temporary file left


def test_plot_refuses_an_image_too_large_to_draw(files, tmp_path):
    proc = run("plot", files["solar"], "--pred", "DAFFS", "--label", "rlz.C1", "-o", tmp_path / "x.png", "--dpi",
               "100000", "--n-boot", "0")
    assert_error(proc, 2, "--dpi 100000 makes a 520,000 x 540,000 pixel image", "use --dpi 12136 or less")
    assert not (tmp_path / "x.png").exists()


@pytest.mark.skipif(sys.platform != "linux", reason="address-space limits as Linux applies them")
def test_plot_out_of_memory_names_the_image_size(files, tmp_path):
    def limit_memory():  # 3 GB of address space: a 31,200 x 32,400 pixel canvas (4 GB) cannot be allocated
        resource.setrlimit(resource.RLIMIT_AS, (3 << 30, 3 << 30))

    proc = spawn("plot", files["solar"], "--pred", "DAFFS", "--label", "rlz.C1", "-o", tmp_path / "x.png", "--dpi",
                 "6000", "--n-boot", "0", preexec_fn=limit_memory)
    assert_error(proc, 1, "not enough memory to draw", "31,200 x 32,400 pixels (--dpi 6000)", "lower --dpi")


@pytest.mark.skipif(not hasattr(signal, "SIGXFSZ"), reason="needs POSIX file-size limits")
def test_a_failed_write_leaves_the_old_image(files, tmp_path):
    """The figure is written beside the output and renamed: a write that fails (here at 20 kB, by a
    file-size limit) leaves the image already there as it was, and no temporary file."""
    keep = tmp_path / "keep.png"
    args = ("plot", files["solar"], "--pred", "DAFFS", "--label", "rlz.C1", "-o", keep, "--n-boot", "0")
    assert run(*args).returncode == 0
    before = keep.read_bytes()
    assert len(before) > 40_000

    def limit_file_size():
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a write past the limit then fails with EFBIG
        resource.setrlimit(resource.RLIMIT_FSIZE, (20_000, 20_000))

    assert_error(spawn(*args, "--title", "another", preexec_fn=limit_file_size), 1, "cannot write", "keep.png",
                 "File too large")
    assert keep.read_bytes() == before
    assert [p.name for p in tmp_path.iterdir()] == ["keep.png"]


def test_a_title_that_cannot_be_drawn_is_one_line(files, tmp_path):
    # A subprocess, under Python's own warning filters: matplotlib < 3.10 builds its mathtext parser on
    # first use with names that pyparsing 3.3 deprecates (errors under pytest's filters, silent to a user).
    out = tmp_path / "t.pdf"
    proc = spawn("plot", files["solar"], "--pred", "DAFFS", "--label", "rlz.C1", "-o", out, "--n-boot", "0", "--title",
                 r"$\frac$")
    assert_error(proc, 1, "cannot draw", "t.pdf")
    assert not out.exists()


def test_demo_model_is_underconfident_and_its_help_says_so():
    f, y = demo_data(200_000, 0)
    low, high = f < 0.3, f > 0.7
    assert y[low].mean() < f[low].mean() - 0.02 and y[high].mean() > f[high].mean() + 0.02  # crosses the diagonal
    help_text = run("demo", "--help").stdout
    assert "overconfident" not in help_text
    assert "underconfident" in help_text and "expit(1.3 logit f)" in help_text


def test_demo_writes_its_diagram_in_the_current_directory(tmp_path):
    proc, text = run_many(("demo", "--json", "--n-boot", "100"),
                          ("demo", "-o", tmp_path / "demo.svg", "--n-boot", "50", "--seed", "1"), cwd=tmp_path)
    out = ok_json(proc)
    png = tmp_path / "smoothece-demo.png"
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and png.stat().st_size > 10_000
    assert out["n"] == 20_000 and out["p_value"] < 0.05 and 0.02 < out["smece"] < 0.06
    assert out["ci_low"] < out["smece"] < out["ci_high"]
    f, y = demo_data(20_000, 0)
    assert abs(out["smece"] - smoothece.smece(f, y)) <= 1e-12
    # Miscalibration of both signs cancels under a wide kernel: smECE_sigma falls visibly with sigma.
    by_sigma = out["smece_sigma"]
    assert by_sigma["0.01"] > by_sigma["0.05"] > by_sigma["0.2"] + 0.005
    assert text.returncode == 0, text.stderr
    # the p-value as format_p writes it ("p < 0.1" at the floor of 50 simulations), of the test on the same data
    f1, y1 = demo_data(20_000, 1)
    p1 = smoothece.calibration_test(f1, y1, n_sim=50, seed=1).p_value
    assert "underconfident" in text.stdout and f"calibration test: {format_p(p1, 50)} (50 simulations" in text.stdout
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
    bar = Progress("big.csv", 1000, stream=term, clock=lambda: now[0])
    bar.update(100, 10)
    assert term.getvalue() == ""  # quick reads print nothing
    now[0] = 1.5
    bar.update(500, 50)
    shown = term.getvalue()
    assert shown.startswith("\r") and "big.csv" in shown and "50%" in shown and "\n" not in shown
    bar.close()
    assert term.getvalue().endswith("\r") and "\n" not in term.getvalue()
    pipe = io.StringIO()
    quiet = Progress("big.csv", 1000, stream=pipe, clock=lambda: now[0] + 10)
    quiet.update(500, 50)
    quiet.close()
    assert pipe.getvalue() == ""


def test_counts_and_seeds_beyond_the_librarys_are_usage_errors(tmp_path):
    # (an "internal error, please report it" before, from the library's refusal)
    rows = write_rows(tmp_path / "rows.csv", "p,y", [np.array([0.2, 0.7, 0.4]), np.array([0, 1, 1])])
    base = ("score", rows, "--pred", "p", "--label", "y")
    seed, boot, sim, demo = run_many(base + ("--ci", "--seed", 2**64), base + ("--ci", "--n-boot", 2**63),
                                     base + ("--test", "--n-sim", 2**31),
                                     ("demo", "--n", 10**10, "-o", tmp_path / "d.png"))
    assert_error(seed, 2, "argument --seed: expected an integer from 0 to 2**64 - 1, got '18446744073709551616'")
    assert_error(boot, 2, "argument --n-boot: expected an integer from 1 to 2,147,483,647")
    assert_error(sim, 2, "argument --n-sim: expected an integer from 1 to 2,147,483,647, got '2147483648'")
    assert_error(demo, 2, "argument --n: expected an integer from 1 to 1,000,000,000")
    assert ok_json(run(*base, "--ci", "--seed", 2**64 - 1, "--n-boot", 20, "--json"))["seed"] == 2**64 - 1


def test_a_refused_integer_is_written_to_its_last_digit(tmp_path):
    # The error's value is a float: 2**53 + 1 printed as ...992, 2**63 - 1 overflowed int64 (OverflowError).
    cases = {"i64": (np.int64, 2**63 - 1), "u64": (np.uint64, 2**64 - 1), "i53": (np.int64, 2**53 + 1)}
    runs = []
    for name, (dtype, value) in cases.items():
        path = tmp_path / f"{name}.parquet"
        pq.write_table(pa.table({"p": [0.2, 0.5, 0.7], "y": np.array([0, value, 1], dtype=dtype)}), path)
        runs.append(("score", path, "--pred", "p", "--label", "y"))
    for proc, (dtype, value) in zip(run_many(*runs), cases.values()):
        assert_error(proc, 1, f"row index 1, column 'y': y = {value}: labels must be 0 or 1")


def test_plot_tests_calibration_and_the_help_example_is_todays_output(tmp_path):
    # plot --test without --by ran no test (and --consistency ignored --n-sim).
    common = (datasets.path("solar_flares_c1.csv"), "--pred", "DAFFS", "--label", "rlz.C1", "--dropna", "--seed", "0")
    plot, score, helptext = run_many(("plot", *common, "-o", tmp_path / "d.png", "--test", "--n-sim", 50,
                                      "--n-boot", 50), ("score", *common, "--ci"), ("score", "--help"))
    assert plot.returncode == 0, plot.stderr
    daffs = datasets.solar_flares()["DAFFS"]
    p = smoothece.CalibrationSketch().update(daffs.f, daffs.y).calibration_test(n_sim=50, seed=0).p_value
    assert f"calibration test {format_p(p, 50)} (50 simulations)" in plot.stdout
    # score --help shows this run's output (its file called preds.csv)
    shown = next(line.strip() for line in helptext.stdout.splitlines() if line.strip().startswith("smECE = "))
    assert score.stdout.split(", n = 731")[0].replace("–", "-") == shown.split(", n = 731")[0]
