"""The command line's input files: never written over (an image or standard output that is
the input file), damaged Parquet pages refused where the file holds their checksums, and
CSV rows longer than the reader's block of bytes read (a long field in a column not used).
The command line's main() in this process, and ``python -m smoothece`` in subprocesses where
standard input or output is a file; every score is checked against the library on the arrays."""

import json
import os
import subprocess
import sys

import numpy as np
import pytest

import smoothece

pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")

# main() in this process, as test_cli.py runs it (tests/ is on sys.path: conftest.py).
from test_cli import run  # noqa: E402

ENV = {**os.environ, "SKBUILD_EDITABLE_VERBOSE": "0", "PYTHONIOENCODING": "utf-8"}
ENV.pop("SMOOTHECE_DEBUG", None)


def spawn(*args, stdin=None, stdout=subprocess.PIPE, cwd=None):
    """``python -m smoothece`` with standard input and output as given (open files, or pipes)."""
    proc = subprocess.run([sys.executable, "-m", "smoothece", *map(str, args)], stdin=stdin, stdout=stdout,
                          stderr=subprocess.PIPE, env=ENV, timeout=300, cwd=cwd)
    proc.stderr = proc.stderr.decode("utf-8")
    proc.stdout = proc.stdout.decode("utf-8") if proc.stdout is not None else ""
    return proc


def one_error(proc, code, *needles):
    assert proc.returncode == code, (proc.returncode, proc.stdout, proc.stderr)
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("smoothece: error: "), proc.stderr
    for needle in needles:
        assert needle in lines[0], (needle, lines[0])


RNG = np.random.default_rng(12)
F = np.round(RNG.random(3000), 6)
Y = (RNG.random(F.size) < F).astype(np.int64)


def write_csv(path, f, y, extra=None):
    with open(path, "w") as fh:
        fh.write("p,y,note\n")
        for i, (a, b) in enumerate(zip(f, y)):
            fh.write(f"{a},{b},{'x' if extra is None or i not in extra else extra[i]}\n")


def score_json(*args, **kw):
    proc = run("score", *args, "--pred", "p", "--label", "y", "--json", **kw)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def test_the_image_is_never_written_over_the_input(tmp_path):
    data = tmp_path / "data.png"  # a CSV file with an image's name
    write_csv(data, F, Y)
    before = data.read_bytes()
    other = tmp_path / "other name.png"
    os.link(data, other)  # the same file under another name
    (tmp_path / "sub").mkdir()
    for out in (data, other, tmp_path / "sub" / ".." / "data.png", "data.png"):
        proc = run("plot", data, "--format", "csv", "--pred", "p", "--label", "y", "--n-boot", "0", "-o", out,
                   cwd=tmp_path)
        one_error(proc, 2, "is the input file", "writing the image would replace the data")
        assert data.read_bytes() == before
    proc = run("plot", data, "--format", "csv", "--pred", "p", "--label", "y", "--n-boot", "0", "-o",
               tmp_path / "image.png")
    assert proc.returncode == 0, proc.stderr
    assert data.read_bytes() == before


def test_standard_output_into_the_input_is_refused(tmp_path):
    data = tmp_path / "data.csv"
    write_csv(data, F, Y)
    before = data.read_bytes()
    for output in ("--csv", "--json", None):
        with open(data, "ab") as out:  # >> data.csv: what is read would grow by what is written
            proc = spawn("score", data, "--pred", "p", "--label", "y", *([output] if output else []), stdout=out)
        one_error(proc, 2, f"standard output is the input file {data}")
        assert data.read_bytes() == before
    with open(data, "rb") as source, open(data, "ab") as out:  # < data.csv >> data.csv
        proc = spawn("score", "-", "--pred", "p", "--label", "y", "--csv", stdin=source, stdout=out)
    one_error(proc, 2, "standard output is the file on standard input")
    assert data.read_bytes() == before
    with open(tmp_path / "scores.csv", "wb") as out:
        assert spawn("score", data, "--pred", "p", "--label", "y", "--csv", stdout=out).returncode == 0


def _damaged_parquet(path, checksums):
    pq.write_table(pa.table({"p": F, "y": Y}), path, write_page_checksum=checksums)
    raw = bytearray(path.read_bytes())
    raw[100:300] = bytes(200)  # inside the first data page of p
    path.write_bytes(bytes(raw))


def test_damaged_parquet_pages_are_refused_where_the_file_has_checksums(tmp_path):
    if tuple(int(v) for v in pa.__version__.split(".")[:1]) < (15,):
        pytest.skip("pyarrow 14 reads no page checksums (ParquetFile has page_checksum_verification from 15 on)")
    good = tmp_path / "good.parquet"
    pq.write_table(pa.table({"p": F, "y": Y}), good, write_page_checksum=True)
    assert score_json(good)["smece"] == pytest.approx(smoothece.smece(F, Y), abs=1e-8)
    damaged = tmp_path / "damaged.parquet"
    _damaged_parquet(damaged, checksums=True)
    for command in (["score"], ["plot", "-o", tmp_path / "d.png"]):
        proc = run(*command, damaged, "--pred", "p", "--label", "y")
        one_error(proc, 1, "cannot read damaged.parquet", "CRC checksum verification failed",
                  "the file is damaged")


def test_a_csv_row_longer_than_the_reader_s_block_is_read(tmp_path):
    # A 3 MB field in a column not used, after rows enough for chunks to have been scored: the
    # file is read again with larger blocks, and the rows scored already are not scored twice.
    long_row = 2100
    data = tmp_path / "long.csv"
    write_csv(data, F, Y, extra={long_row: "z" * (3 << 20)})
    want = smoothece.smece(F, Y)
    for chunks in ([], ["--chunksize", "500"], ["--chunksize", "7"]):
        got = score_json(data, *chunks)
        assert got["n"] == F.size and got["smece"] == pytest.approx(want, abs=1e-8), chunks
    # rows with missing values before the long row are counted once
    missing = tmp_path / "missing.csv"
    f = F.astype(object)
    f[[5, 1500]] = ""
    write_csv(missing, f, Y, extra={long_row: "z" * (3 << 20)})
    keep = np.ones(F.size, dtype=bool)
    keep[[5, 1500]] = False
    got = score_json(missing, "--dropna", "--chunksize", "500")
    assert (got["n"], got["dropped"]) == (F.size - 2, 2)
    assert got["smece"] == pytest.approx(smoothece.smece(F[keep], Y[keep]), abs=1e-8)
    # from standard input the file cannot be read again: the error says what to do
    with open(data, "rb") as source:
        proc = spawn("score", "-", "--pred", "p", "--label", "y", stdin=source)
    one_error(proc, 1, "<stdin>: a row at or after line", "is longer than 1,024 kB",
              "save the data to a file and pass its name")
