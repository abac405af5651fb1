"""Ctrl-C: how long every public long-running call takes to stop.

Each case starts a call sized to run for 20 s or more in a fresh process,
sends it SIGINT ``--delay`` seconds after the call began (several delays, so
the signal lands in different phases of the call) and measures the time from
the signal to the KeyboardInterrupt reaching Python (the child prints it the
moment it catches it). Target: every latency ≤ 0.5 s. A call that finishes
before the signal, or does not stop within ``--timeout`` seconds, is reported.

tests/test_interrupts.py runs every case of CASES once, all at once, with a
generous bound (a hang guard, not a benchmark); ISSUE_CASES, the calls of
issue 31, are measured here alone (gigabytes each).

    python bench/interrupts.py [--quick] [--only NAME ...] [--delays 0.5 1 2] [--out DIR]
"""

from __future__ import annotations

import argparse
import os
import signal
import statistics
import subprocess
import sys
import textwrap
import threading
import time

import _record

# name -> (setup, call): Python run in the child; the setup makes the data (numpy as np, smoothece imported),
# the call runs for 20 s or more on a quiet 2-core machine (far longer than any delay).
_CALIBRATED = "rng = np.random.default_rng(0); f = rng.beta(2, 2, 1_000_000); y = rng.random(f.size) < f\n"
_LOGIT_DATA = ("rng = np.random.default_rng(0); z = rng.normal(size=1_000_000); f = 1 / (1 + np.exp(-z)); "
               "y = rng.random(f.size) < f\n")
_PROBS = ("rng = np.random.default_rng(0); logits = rng.normal(size=(2_000_000, 10)) * 2; "
          "p = np.exp(logits); p /= p.sum(axis=1, keepdims=True); labels = rng.integers(0, 10, 2_000_000)\n")
_PAIRS = ("rng = np.random.default_rng(0); a = rng.random(2_000_000) * 0.98 + 0.01; "
          "f = np.concatenate([a, a + 1e-12]); y = np.repeat([1, 0], a.size); w = np.concatenate([a, 1 - a])\n")
CASES = {
    "smece": (
        # Pairs of rows 1e-12 apart whose weighted residuals f(1 − f) and −(1 − f)f cancel: σ* far below
        # every grid, from 4e6 distinct predictions, 2e6 clusters of two (the second look at the rows).
        _PAIRS, "smoothece.smece(f, y, weights=w)"),
    "smece_sigma": (
        "rng = np.random.default_rng(0); f = rng.random(5_000_000); y = f > 0.5\n",
        "smoothece.smece_sigma(f, y, 1e-8)"),
    "bootstrap_smece": (_CALIBRATED, "smoothece.bootstrap_smece(f, y, n_boot=10**7, seed=0)"),
    "calibration_test": (_LOGIT_DATA, "smoothece.calibration_test(f, y, metric='logit', n_sim=10**5, seed=0)"),
    "reliability_diagram": (
        _LOGIT_DATA,
        "smoothece.reliability_diagram(f, y, metric='logit', n_boot=100_000, consistency=True, n_sim=100_000, seed=0)"),
    "top_label_diagram": (
        _PROBS,
        "smoothece.top_label_diagram(p, labels, n_boot=100_000, consistency=True, n_sim=100_000, seed=0, "
        "metric='logit')"),
    "top_label_smece": (
        # The pairs of "smece" as two classes: their top-label pairs cancel the same way.
        _PAIRS + "p = np.stack([1 - f, f], axis=1); labels = y.astype(np.int64)\n",
        "smoothece.top_label_smece(p, labels, weights=w)"),
    "classwise_smece": (
        # The pairs of "smece" as two classes: both columns' σ* far below every grid.
        _PAIRS + "p = np.stack([1 - f, f], axis=1); labels = y.astype(np.int64)\n",
        "smoothece.classwise_smece(p, labels, weights=w)"),
    "sketch.calibration_test": (
        _LOGIT_DATA + "s = smoothece.CalibrationSketch(metric='logit', resolution=2**18); s.update(f, y)\n",
        "s.calibration_test(n_sim=10**5, seed=0)"),
    "sketch.reliability_diagram": (
        _LOGIT_DATA + "s = smoothece.CalibrationSketch(metric='logit', resolution=2**18); s.update(f, y)\n",
        "s.reliability_diagram(n_boot=100_000, consistency=True, n_sim=100_000, seed=0)"),
    "smece_by_group": (
        _CALIBRATED + "g = rng.integers(0, 20, f.size)\n",
        "smoothece.smece_by_group(f, y, g, n_boot=200_000, test=True, n_sim=200_000, seed=0)"),
    "GroupedSketch.smece_by_group": (
        _CALIBRATED + "g = rng.integers(0, 20, f.size); s = smoothece.GroupedSketch(); s.update(f, y, g)\n",
        "s.smece_by_group(n_boot=200_000, test=True, n_sim=200_000, seed=0)"),
    "compare": (
        _CALIBRATED + "f2 = np.clip(f + rng.normal(0, 0.05, f.size), 0, 1)\n",
        "smoothece.compare(f, f2, y, n_boot=10**6, seed=0)"),
    "compare_models": (
        _CALIBRATED + "fs = {f'm{i}': np.clip(f + rng.normal(0, 0.05, f.size), 0, 1) for i in range(4)}\n",
        "smoothece.compare_models(fs, y, n_boot=10**6, seed=0)"),
    "interval_ce_random": (_CALIBRATED, "smoothece.interval_ce_random(f, y, seed=0, trials=10**7)"),
}

# The calls of issue 31 (gigabytes of memory: a test's band holds 513 points × n_sim curves): measured here,
# not in tests/test_interrupts.py.
ISSUE_CASES = {
    "calibration_test, n_sim=10**6": (_CALIBRATED, "smoothece.calibration_test(f, y, n_sim=10**6, seed=0)"),
    "sketch.calibration_test, n_sim=10**6": (
        _CALIBRATED + "s = smoothece.CalibrationSketch(); s.update(f, y)\n", "s.calibration_test(n_sim=10**6, seed=0)"),
    "reliability_diagram, sample_size=10**9": (
        _CALIBRATED[:-1] + "; f, y = f[:2000], y[:2000]\n",
        "smoothece.reliability_diagram(f, y, sample_size=10**9, n_boot=10**6, seed=0)"),
}
ALL_CASES = {**CASES, **ISSUE_CASES}
# Not run with --baseline: where a build holds all trials × bins at once, this call asks for tens of GB.
BASELINE_SKIP = {"interval_ce_random"}

CHILD = """
import signal, sys, time
import numpy as np
import smoothece
signal.signal(signal.SIGINT, signal.default_int_handler)  # a parent in the background passes SIGINT ignored
{setup}
print("ready", flush=True)
start = time.monotonic()
try:
    {call}
    print("finished", time.monotonic() - start, flush=True)
except KeyboardInterrupt:
    print("interrupted", time.monotonic() - start, flush=True)
"""


class Run:
    """One case in a child process: started at once; ``interrupt`` sends SIGINT ``delay`` seconds after the
    call began; ``result`` then waits for the child's verdict."""

    def __init__(self, name: str, env=None):
        setup, call = ALL_CASES[name]
        code = CHILD.format(setup=setup, call=call)
        self.name = name
        self.proc = subprocess.Popen([sys.executable, "-c", textwrap.dedent(code)], stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, text=True, env=env, cwd=_record.REPO)
        self.lines: list = []
        self.stamps: list = []
        self.ready = threading.Event()
        self.verdict = threading.Event()
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self):
        for line in self.proc.stdout:
            self.lines.append(line.split())
            self.stamps.append(time.monotonic())
            if line.startswith("ready"):
                self.ready.set()
            elif line.startswith(("interrupted", "finished")):
                self.verdict.set()
        self.ready.set()
        self.verdict.set()

    def interrupt(self, delay: float, started_by: float = 600.0) -> None:
        if not self.ready.wait(started_by):
            raise RuntimeError(f"{self.name}: the setup did not finish in {started_by} s")
        time.sleep(max(0.0, delay - (time.monotonic() - self.stamps[0])) if self.stamps else delay)
        self.sent = time.monotonic()
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGINT)

    def result(self, timeout: float) -> dict:
        """{'outcome': interrupted | finished | hung | failed, 'latency': s from SIGINT to KeyboardInterrupt}"""
        got = self.verdict.wait(timeout)
        out = {"name": self.name, "outcome": "hung", "latency": None}
        if got:
            last = next((line for line in self.lines if line and line[0] in ("interrupted", "finished")), None)
            if last is None:
                out["outcome"] = "failed"
            else:
                out["outcome"] = last[0]
                at = self.stamps[self.lines.index(last)]
                out["latency"] = at - self.sent
                out["call_seconds"] = float(last[1])
        try:
            self.proc.wait(timeout=10 if got else 0.1)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.reader.join(10)
        if out["outcome"] == "failed":
            out["stderr"] = self.proc.stderr.read()[-2000:]
        self.proc.stdout.close()
        self.proc.stderr.close()
        return out


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    _record.add_options(parser, "smoke run: one delay (0.5 s), three cases")
    parser.add_argument("--only", nargs="+", choices=list(ALL_CASES), metavar="NAME", help="these cases only")
    parser.add_argument("--delays", nargs="+", type=float, help="seconds after the call began (default 0.5 1 2 4)")
    parser.add_argument("--timeout", type=float, default=30.0, help="seconds to wait for a call to stop")
    parser.add_argument("--baseline", help="folder with another smoothece package to measure beside this one")
    args = parser.parse_args(argv)
    names = args.only or (["calibration_test", "interval_ce_random", "smece_sigma"] if args.quick else list(ALL_CASES))
    delays = args.delays or ([0.5] if args.quick else [0.5, 1.0, 2.0, 4.0])
    rec = _record.Record(__file__, args, argv)
    builds = {"this": None}
    if args.baseline:
        builds["baseline"] = dict(os.environ, PYTHONPATH=os.path.abspath(args.baseline))
    results, rows = [], []
    for name in names:
        cells = []
        for build, env in builds.items():
            if build == "baseline" and name in BASELINE_SKIP:
                cells.append("– | – | not run")
                continue
            runs = []
            for delay in delays:
                run = Run(name, env=env)
                run.interrupt(delay)
                r = run.result(args.timeout)
                r.update(delay=delay, build=build)
                runs.append(r)
                print(f"{name:<30} {build:<8} delay {delay:4.1f} s: {r['outcome']:<11} "
                      + (f"{r['latency']:.3f} s" if r["latency"] is not None else "") + r.get("stderr", ""), flush=True)
            results.extend(runs)
            latencies = [r["latency"] for r in runs if r["outcome"] == "interrupted"]
            bad = [f"{r['outcome']} at {r['delay']:g} s" for r in runs if r["outcome"] != "interrupted"]
            cells.append((f"{max(latencies):.3f} | {statistics.median(latencies):.3f}" if latencies else "– | –")
                         + f" | {', '.join(bad) or '–'}")
        rows.append(f"| `{name}` | `{ALL_CASES[name][1]}` | " + " | ".join(cells) + " |")
        rec.save_json(results)
    head, rule = "| case | call | worst latency (s) | median (s) | not interrupted |", "|---|---|---|---|---|"
    if args.baseline:
        head += " baseline: worst (s) | median (s) | not interrupted |"
        rule += "---|---|---|"
    body = [f"SIGINT sent {', '.join(f'{d:g}' for d in delays)} s after each call began (one fresh process "
            "each); latency: from the signal to the KeyboardInterrupt caught in the child. Target ≤ 0.5 s. "
            f"\"hung\": not stopped within {args.timeout:g} s.", "", head, rule, *rows]
    if args.baseline:
        body += ["", f"Baseline: the smoothece package in `{args.baseline}`."]
    rec.write("Ctrl-C: time for every long call to stop", body, results)
    return 0 if all(r["outcome"] == "interrupted" for r in results if r["build"] == "this") else 1


if __name__ == "__main__":
    sys.exit(main())
