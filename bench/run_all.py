#!/usr/bin/env python
"""Run the benchmarks of bench/: every script, or those named, one after the other.

    python bench/run_all.py                    # full run, for numbers: writes bench/results/<script>.{md,json}
    python bench/run_all.py --quick            # smoke run of every script (tiny sizes): writes bench/_scratch/
    python bench/run_all.py --only speed peers # some of them
    python bench/run_all.py --list             # what each script measures and writes

Each script runs in its own process as ``python bench/<script>.py [--quick] --out DIR``; its console output
goes to ``<log folder>/<script>.log`` (bench/_scratch/logs/, or DIR/logs/ with --out). A failing script is
reported and the others still run; the exit status is 1 if any failed. A full run takes roughly 20–25 minutes
on a 2-core machine and writes 3.6 GB of CSV files to a temporary folder (cli_bench); run it on a quiet machine.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import os
import signal
import subprocess
import sys
import threading
import time

import _record

# script -> (what it measures, the output files besides <script>.md and <script>.json)
SCRIPTS = {
    "population": ("population SmoothECE of the study models, by quadrature (no smoothece)", ()),
    "coverage": ("coverage of bootstrap_smece's 95% interval (and others), weighted and unweighted", ()),
    "size": ("size and power of calibration_test", ()),
    "compare": ("coverage and size of compare's paired bootstrap of a difference", ()),
    "weight_kind": ("counts as importance or frequency weights: the test's size, the interval's width", ()),
    "groups": ("smece_by_group against loops, sketches, grouped tests, sketch bytes", ()),
    "speed": ("speed and memory against the floor, reference and relplot, n = 1e3 … 1e8", ("png",)),
    "catalogue": ("time and accuracy on 19 hard inputs, resampling cost", ()),
    "peers": ("every README claim about relplot 1.0.3", ()),
    "cli_bench": ("smoothece score on CSV files: speed against pyarrow, peak memory", ()),
    "fft_plans": ("FFTW estimated plans: forward against inverse transforms", ()),
    "measures": ("binned ECE against torchmetrics and netcal, the other measures' times", ()),
    "discrete_speed": ("resampling on discrete forecasts: the logit metric against l1", ()),
    "interrupts": ("Ctrl-C: how long every long-running call takes to stop", ()),
    "logit_sketch": ("the sketches' default grids on calibrated data up to 1e8 rows: resolved, memory, time", ()),
    "fixpoint": ("σ*'s search: evaluations per value and per replicate, resampling times", ()),
}


def run_one(name: str, quick: bool, out: str, logs: str, timeout: float | None) -> dict:
    """Runs one script in its own process: exit status, wall and CPU seconds (its children's included), and
    which of its output files it did not write."""
    cmd = [sys.executable, os.path.join(_record.BENCH, f"{name}.py"), *(["--quick"] if quick else []), "--out", out]
    log = os.path.join(logs, f"{name}.log")
    start, started_at = time.perf_counter(), time.time() - 1
    with open(log, "w") as fh:
        proc = subprocess.Popen(cmd, stdout=fh, stderr=subprocess.STDOUT, cwd=_record.REPO)
        timer = threading.Timer(timeout, proc.kill) if timeout else None
        if timer:
            timer.start()
        _, status, usage = os.wait4(proc.pid, 0)
        proc.returncode = os.waitstatus_to_exitcode(status)
        if timer:
            timer.cancel()
    killed = proc.returncode == -signal.SIGKILL and timeout and time.perf_counter() - start >= timeout
    outputs = [os.path.join(out, f"{name}.{ext}") for ext in ("md", "json", *SCRIPTS[name][1])]
    missing = [p for p in outputs if not os.path.exists(p) or os.path.getmtime(p) < started_at]  # none, or old
    return {"name": name, "rc": "timeout" if killed else proc.returncode, "seconds": time.perf_counter() - start,
            "cpu_s": usage.ru_utime + usage.ru_stime, "log": log, "missing": missing}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], epilog=__doc__.split("\n\n", 1)[1],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="smoke run of every script: seconds each, not to quote")
    ap.add_argument("--only", nargs="+", metavar="NAME", choices=list(SCRIPTS), help="run only these scripts")
    ap.add_argument("--out", help="output folder (default bench/results/, or bench/_scratch/ with --quick)")
    ap.add_argument("--timeout", type=float, help="seconds allowed to each script (default: no limit)")
    ap.add_argument("--jobs", type=int, default=1,
                    help="with --quick: scripts run at once (default 1; a full run is always one at a time, "
                         "since scripts running together would measure each other)")
    ap.add_argument("--list", action="store_true", help="list the scripts and their outputs, run nothing")
    args = ap.parse_args(argv)
    if args.jobs > 1 and not args.quick:
        ap.error("--jobs needs --quick: timings of scripts run together measure each other")

    if args.list:
        for name, (what, extra) in SCRIPTS.items():
            files = ", ".join(f"{name}.{ext}" for ext in ("md", "json", *extra))
            print(f"{name:<11} {what}\n{'':<11} -> bench/results/{files}")
        return 0
    out = os.path.abspath(args.out or (_record.SCRATCH if args.quick else _record.RESULTS))
    logs = os.path.join(out if args.out else _record.SCRATCH, "logs")
    os.makedirs(out, exist_ok=True)
    os.makedirs(logs, exist_ok=True)
    names = args.only or list(SCRIPTS)
    start = time.perf_counter()
    print(f"{'quick' if args.quick else 'full'} run of {', '.join(names)} -> {os.path.relpath(out)}/ "
          f"(logs in {os.path.relpath(logs)}/)", flush=True)
    done = []
    with concurrent.futures.ThreadPoolExecutor(max(1, args.jobs)) as pool:
        runs = [pool.submit(run_one, name, args.quick, out, logs, args.timeout) for name in names]
        for r in (f.result() for f in concurrent.futures.as_completed(runs)):
            done.append(r)
            report(r)
    failed = [r["name"] for r in done if r["rc"] != 0 or r["missing"]]
    print(f"{len(done) - len(failed)} of {len(done)} scripts ok in {time.perf_counter() - start:.0f} s"
          + (f"; failed: {', '.join(failed)}" if failed else ""), flush=True)
    return 1 if failed else 0


def report(r: dict) -> None:
    ok = r["rc"] == 0 and not r["missing"]
    print(f"  {'ok  ' if ok else 'FAIL'} {r['name']:<11} {r['seconds']:6.1f} s ({r['cpu_s']:5.1f} s CPU)"
          + ("" if ok else f"  (exit {r['rc']}; missing {', '.join(map(os.path.basename, r['missing'])) or '–'};"
                           f" log {os.path.relpath(r['log'])})"), flush=True)
    if not ok:
        with open(r["log"]) as fh:
            tail = fh.read()[-1500:]
        print("    " + tail.replace("\n", "\n    "), flush=True)


if __name__ == "__main__":
    sys.exit(main())
