"""The command line on large CSV files: its speed against pyarrow reading the
same columns alone, and its peak memory (RSS) as the file grows.

Usage::

    python bench/cli_bench.py                          # 1e7 rows for speed; RSS at 1e7, 3e7, 1e8 rows (3.6 GB of CSV)
    python bench/cli_bench.py --rows 1e6 --sizes 1e6   # a quick look
    python bench/cli_bench.py --quick                  # smoke run: 1e4 rows, one round

Writes bench/results/cli_bench.{md,json} (``--out`` for another folder).

Files are written to a temporary directory (or kept in ``--dir`` and reused;
a 1e8-row file is 2.6 GB) with columns ``p`` (a prediction, 16-17 significant
digits), ``y`` (0/1) and ``g`` (a group, an integer 0..9999). Every command
runs in a fresh process, measured from outside: wall time, and peak RSS from
the kernel's accounting of that child (``os.wait4``). Linux starts a child's
peak at its parent's size at the fork, so this script stays small (the files
are written by another process): about 10 MB of each figure is the launcher.
Speed runs are interleaved (one of each, ``--repeat`` rounds) so that load
from other processes hits all of them alike; the fastest of each is compared.

- ``pyarrow``: ``pyarrow.csv.open_csv(path, include_columns=[p, y])`` with
  its defaults (threads, type inference), every batch read and dropped: the
  floor of any pyarrow-based reader;
- ``score``: ``smoothece score FILE --pred p --label y``;
- ``score --by g``: the same with 10,000 groups.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time

import _record

PYARROW_ALONE = (
    "import sys, pyarrow.csv as c\n"
    "r = c.open_csv(sys.argv[1], convert_options=c.ConvertOptions(include_columns=['p', 'y']))\n"
    "n = 0\n"
    "for batch in r:\n"
    "    n += batch.num_rows\n"
    "print(n)\n"
)
SMOOTHECE = [sys.executable, "-m", "smoothece"]
GROUPS = 10_000


def write_csv(path: str, rows: int, seed: int = 0) -> None:
    """p ~ Beta(2, 2), y ~ Bernoulli(p^1.2), g uniform on 0..9999, in chunks of 10^7 rows
    (run in a process of its own: see the note on peak RSS above)."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.csv as pacsv

    rng = np.random.default_rng(seed)
    schema = pa.schema([("p", pa.float64()), ("y", pa.int8()), ("g", pa.int32())])
    with pacsv.CSVWriter(path, schema, write_options=pacsv.WriteOptions(quoting_style="none")) as writer:
        for start in range(0, rows, 10_000_000):
            n = min(10_000_000, rows - start)
            f = rng.beta(2.0, 2.0, n)
            writer.write_table(pa.table({"p": f, "y": (rng.random(n) < f ** 1.2).astype(np.int8),
                                         "g": rng.integers(0, GROUPS, n).astype(np.int32)}, schema=schema))


def measure(cmd: list) -> dict:
    """Wall time (s) and peak RSS (MB) of one command in a fresh process."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        start = time.perf_counter()
        proc = subprocess.Popen(cmd, stdout=out, stderr=err)
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - start
        proc.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        stdout, stderr = out.read().decode(), err.read().decode()
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(map(str, cmd))} failed ({proc.returncode}): {stderr.strip()}")
    return {"seconds": wall, "rss_mb": usage.ru_maxrss / 1024, "stdout": stdout.strip().splitlines()[-1]}


def speed(path: str, repeat: int) -> dict:
    tasks = {
        "pyarrow": [sys.executable, "-c", PYARROW_ALONE, path],
        "score": SMOOTHECE + ["score", path, "--pred", "p", "--label", "y"],
        "score --by g": SMOOTHECE + ["score", path, "--pred", "p", "--label", "y", "--by", "g", "--json"],
    }
    runs = {name: [] for name in tasks}
    for _ in range(repeat):
        for name, cmd in tasks.items():
            runs[name].append(measure(cmd))
            print(f"  {name}: {runs[name][-1]['seconds']:.2f} s, {runs[name][-1]['rss_mb']:.0f} MB", flush=True)
    best = {name: min(r["seconds"] for r in rs) for name, rs in runs.items()}
    return {
        "runs": {name: [{k: v for k, v in r.items() if k != "stdout"} for r in rs] for name, rs in runs.items()},
        "best_seconds": best,
        "peak_rss_mb": {name: max(r["rss_mb"] for r in rs) for name, rs in runs.items()},
        "score_over_pyarrow": best["score"] / best["pyarrow"],
        "by_over_score": best["score --by g"] / best["score"],
        "score_output": runs["score"][0]["stdout"],
    }


VARIANTS = {"l1": [], "logit": ["--metric", "logit"], "logit --ci": ["--metric", "logit", "--ci", "--seed", "0"]}


def memory(paths: dict, variants: dict) -> dict:
    out = {}
    for rows, path in paths.items():
        for name, extra in variants.items():
            r = measure(SMOOTHECE + ["score", path, "--pred", "p", "--label", "y"] + extra)
            out[f"{rows:.0e} {name}"] = {"rows": rows, "variant": name, "seconds": r["seconds"],
                                         "rss_mb": r["rss_mb"], "output": r["stdout"]}
            print(f"  {rows:,} rows, {name}: {r['rss_mb']:.0f} MB peak RSS, {r['seconds']:.1f} s", flush=True)
    return out


def markdown_body(result: dict) -> list:
    """The body of cli_bench.md (the header comes from bench/_record.py)."""
    s = result["speed"]
    rows = s.get("rows")
    L = [__doc__.split("\n\n", 1)[0].replace("\n", " "), "",
         f"## Speed{f' ({rows:,} rows)' if rows else ''}: fastest of the interleaved rounds", "",
         "| run | best time | ratio | peak RSS |", "|---|---|---|---|",
         f"| `pyarrow.csv.open_csv`, columns p, y, batches dropped | {s['best_seconds']['pyarrow']:.2f} s | 1 | "
         f"{s['peak_rss_mb']['pyarrow']:.0f} MB |",
         f"| `smoothece score` | {s['best_seconds']['score']:.2f} s | {s['score_over_pyarrow']:.2f}× pyarrow alone | "
         f"{s['peak_rss_mb']['score']:.0f} MB |",
         f"| `smoothece score --by g` ({GROUPS:,} groups) | {s['best_seconds']['score --by g']:.2f} s | "
         f"{s['by_over_score']:.2f}× score | {s['peak_rss_mb']['score --by g']:.0f} MB |", "",
         f"`score` printed: `{s.get('score_output', '')}`", "",
         "## Peak RSS as the file grows", "", "| rows | run | peak RSS | time |", "|---|---|---|---|"]
    for r in result["memory"].values():
        L.append(f"| {r['rows']:,} | `score` {r['variant']} | {r['rss_mb']:.0f} MB | {r['seconds']:.1f} s |")
    return L + [""]


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    _record.add_options(ap, "smoke run: 1e4 rows, one round, memory of `--metric logit --ci` only")
    ap.add_argument("--rows", type=float, help="rows of the speed file (default 1e7; 1e4 with --quick)")
    ap.add_argument("--sizes", help="rows of the memory files (default 1e7,3e7,1e8; 1e4 with --quick)")
    ap.add_argument("--repeat", type=int, help="rounds of the speed runs (default 3; 1 with --quick)")
    ap.add_argument("--dir", default=None, help="keep the files here and reuse them (default: a temporary directory)")
    ap.add_argument("--write", nargs=2, metavar=("PATH", "ROWS"), help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.write:
        write_csv(args.write[0], int(args.write[1]))
        return
    for name, full, quick in (("rows", 1e7, 1e4), ("sizes", "1e7,3e7,1e8", "1e4"), ("repeat", 3, 1)):
        if getattr(args, name) is None:
            setattr(args, name, quick if args.quick else full)
    rec = _record.Record(__file__, args, argv, packages=("numpy", "smoothece", "pyarrow"))
    sizes = [int(float(s)) for s in args.sizes.split(",") if s]
    with tempfile.TemporaryDirectory() as tmp:
        where = args.dir or tmp
        files = {}
        for rows in sorted({int(args.rows), *sizes}):
            files[rows] = os.path.join(where, f"rows_{rows}.csv")
            if os.path.exists(files[rows]):
                continue
            start = time.perf_counter()
            subprocess.run([sys.executable, __file__, "--write", files[rows], str(rows)], check=True)
            print(f"wrote {rows:,} rows ({os.path.getsize(files[rows]) / 1e9:.2f} GB) in "
                  f"{time.perf_counter() - start:.0f} s", flush=True)
        print(f"speed, {int(args.rows):,} rows, {args.repeat} rounds:")
        result = {"speed": speed(files[int(args.rows)], args.repeat)}
        result["speed"]["rows"] = int(args.rows)
        print("memory:")
        variants = {"logit --ci": VARIANTS["logit --ci"]} if args.quick else VARIANTS
        result["memory"] = memory({rows: files[rows] for rows in sizes}, variants)
    s = result["speed"]
    print(f"\nscore: {s['best_seconds']['score']:.2f} s = {s['score_over_pyarrow']:.2f}x pyarrow alone "
          f"({s['best_seconds']['pyarrow']:.2f} s); --by g ({GROUPS:,} groups): "
          f"{s['best_seconds']['score --by g']:.2f} s = {s['by_over_score']:.2f}x score, "
          f"peak RSS {s['peak_rss_mb']['score --by g']:.0f} MB")
    rec.write("The command line on large CSV files", markdown_body(result), result)


if __name__ == "__main__":
    main()
