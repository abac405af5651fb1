"""Resampling on discrete forecasts: the logit metric against l1 on the same rows.

Forecasts that take few values (a base rate, 2, 11 or 101 distinct values),
and continuous ones for comparison (f ~ Beta(2, 2), the logit metric's
replicates then on grids), n = 10^3 and 10^5 calibrated rows (y ~ Bernoulli(f)),
each timed with both metrics through ``smece`` and the three resampling calls:
``calibration_test`` (1000 replicates), ``bootstrap_smece`` (1000) and
``reliability_diagram`` (1000 bootstrap replicates). Target: the logit
resampling call within 3x the l1 call on the same rows. Each (values, n) runs in a fresh process: one warm-up call on
other data, then every call timed once (best of ``--repeat``).

``--baseline DIR`` also runs every case with the smoothece package found in
DIR (a folder holding a ``smoothece`` package, e.g. an older build) and
reports its times beside these, with the largest differences between the two
builds' numbers: statistic, p-value, interval ends and every replicate (the
null statistics of the test, the bootstrap replicates) of the same seed.

Which null is right where they differ: the mean of the test's null against
``--mc`` direct simulations of the null (labels redrawn row by row as
y* ~ Bernoulli(f), each data set scored by ``smoothece.smece``), in standard
errors of the difference, at n = 10^5 (10^3 with --quick).

    python bench/discrete_speed.py [--quick] [--baseline DIR] [--repeat 1] [--mc 200] [--out DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time

import numpy as np

import _record

KINDS = {"base rate": 1, "2 values": 2, "11 values": 11, "101 values": 101, "continuous": 0}
METRICS = ("l1", "logit")
CALLS = ("smece", "calibration_test", "bootstrap_smece", "reliability_diagram")
SEED = 7


def data(kind: str, n: int):
    """n calibrated rows whose forecasts take KINDS[kind] distinct values (0.5 for a base rate; 0: Beta(2, 2))."""
    values = KINDS[kind]
    rng = np.random.default_rng([20250131, values, n])
    if values == 0:
        f = rng.beta(2, 2, n)
        return f, rng.random(n) < f
    f = np.full(n, 0.5) if values == 1 else rng.integers(0, values, n) / (values - 1)
    if values == 2:
        f = np.where(f > 0.5, 0.7, 0.2)
    y = rng.random(n) < f
    return f, y


def child(kind: str, n: int, replicates: int, repeat: int) -> dict:
    """Times every call on one data set, both metrics; returns times and the numbers to compare."""
    import smoothece

    f, y = data(kind, n)
    warm_f = np.random.default_rng(0).beta(2, 2, 2000)
    smoothece.calibration_test(warm_f, warm_f > 0.5, n_sim=20, seed=0)  # threads and FFTW plans made
    out = {"smoothece": os.path.dirname(smoothece.__file__)}
    for metric in METRICS:
        for call in CALLS:
            if call == "smece":
                def run():
                    return smoothece.smece(f, y, metric=metric)
            elif call == "calibration_test":
                def run():
                    return smoothece.calibration_test(f, y, metric=metric, n_sim=replicates, seed=SEED)
            elif call == "bootstrap_smece":
                def run():
                    return smoothece.bootstrap_smece(f, y, metric=metric, n_boot=replicates, seed=SEED)
            else:
                def run():
                    return smoothece.reliability_diagram(f, y, metric=metric, n_boot=replicates, seed=SEED)
            times = []
            for _ in range(repeat):
                t0 = time.perf_counter()
                r = run()
                times.append(time.perf_counter() - t0)
            if call == "smece":
                numbers = {"value": r}
            elif call == "calibration_test":
                numbers = {"value": r.statistic, "p_value": r.p_value, "replicates": r.null.tolist(),
                           "band_lower": r.band_lower.tolist(), "band_upper": r.band_upper.tolist()}
            elif call == "bootstrap_smece":
                numbers = {"value": r.value, "low": r.low, "high": r.high, "replicates": r.replicates.tolist()}
            else:
                numbers = {"value": r.smece, "low": r.smece_low, "high": r.smece_high,
                           "band_lower": r.lower.tolist(), "band_upper": r.upper.tolist()}
            out[f"{metric} {call}"] = {"seconds": min(times), "times": times, "numbers": numbers}
    return out


def run_child(kind: str, n: int, replicates: int, repeat: int, python_dir: str | None) -> dict:
    env = dict(os.environ)
    if python_dir:
        env["PYTHONPATH"] = os.path.abspath(python_dir) + os.pathsep + os.path.join(_record.BENCH)
    cmd = [sys.executable, os.path.abspath(__file__), "--child", kind, str(n), str(replicates), str(repeat)]
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=_record.REPO)
    if proc.returncode != 0:
        raise RuntimeError(f"{kind} n={n} failed:\n{proc.stderr[-3000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def null_check(kind: str, n: int, metric: str, mc: int, now: dict, base: dict | None) -> dict:
    """The test's null mean of each build against `mc` direct simulations of the null with this build's smece."""
    import smoothece

    f, _ = data(kind, n)
    rng = np.random.default_rng([7, KINDS[kind], n])
    sims = np.array([smoothece.smece(f, rng.random(n) < f, metric=metric) for _ in range(mc)])
    out = {"kind": kind, "n": n, "metric": metric, "direct mean": float(sims.mean()),
           "direct se": float(sims.std(ddof=1) / np.sqrt(mc))}
    for name, build in (("this", now), ("baseline", base)):
        if build:
            null = np.asarray(build[f"{metric} calibration_test"]["numbers"]["replicates"])
            se = np.sqrt(sims.var(ddof=1) / mc + null.var(ddof=1) / null.size)  # of the difference of the means
            out[f"{name} mean"] = float(null.mean())
            out[f"{name} z"] = float((null.mean() - sims.mean()) / se) if se > 0 else 0.0
    return out


def largest_differences(a: dict, b: dict) -> dict:
    """The largest |a − b| of each number two builds gave for one call (NaN where both are NaN)."""
    out = {}
    for key, x in a.items():
        xa, xb = np.asarray(x, dtype=float), np.asarray(b[key], dtype=float)
        both_nan = np.isnan(xa) & np.isnan(xb)
        d = np.where(both_nan, 0.0, np.abs(xa - xb))
        out[key] = float(np.nanmax(np.where(np.isnan(d), np.inf, d))) if d.size else 0.0
    return out


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    if argv and argv[0] == "--child":
        kind, n, replicates, repeat = argv[1], int(argv[2]), int(argv[3]), int(argv[4])
        print(json.dumps(child(kind, n, replicates, repeat)))
        return 0
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    _record.add_options(parser, "smoke run: n = 10^3 only, 50 replicates")
    parser.add_argument("--baseline", help="folder with another smoothece package to time beside this one")
    parser.add_argument("--repeat", type=int, default=1, help="timed calls of each (the best is reported)")
    parser.add_argument("--mc", type=int, help="direct simulations of each null (default 200; 20 with --quick)")
    args = parser.parse_args(argv)
    mc = args.mc or (20 if args.quick else 200)
    sizes = (1000,) if args.quick else (1000, 100_000)
    replicates = 50 if args.quick else 1000
    rec = _record.Record(__file__, args, argv)
    rows, results, null_rows, nulls = [], [], [], []
    for kind in KINDS:
        for n in sizes:
            now = run_child(kind, n, replicates, args.repeat, None)
            base = run_child(kind, n, replicates, args.repeat, args.baseline) if args.baseline else None
            if n == sizes[-1]:
                for metric in METRICS:
                    entry = null_check(kind, n, metric, mc, now, base)
                    nulls.append(entry)
                    line = (f"| {kind} | {n:.0e} | {metric} | {entry['direct mean']:.6f} | "
                            f"{entry['this mean']:.6f} ({entry['this z']:+.1f}) |")
                    if base:
                        line += f" {entry['baseline mean']:.6f} ({entry['baseline z']:+.1f}) |"
                    null_rows.append(line)
                    print(null_rows[-1], flush=True)
            for call in CALLS:
                entry = {"kind": kind, "n": n, "call": call}
                for metric in METRICS:
                    entry[metric] = now[f"{metric} {call}"]["seconds"]
                    if base:
                        entry[f"{metric} baseline"] = base[f"{metric} {call}"]["seconds"]
                        entry[f"{metric} largest differences"] = largest_differences(
                            now[f"{metric} {call}"]["numbers"], base[f"{metric} {call}"]["numbers"])
                entry["logit / l1"] = entry["logit"] / entry["l1"]
                results.append(entry)
                line = (f"| {kind} | {n:.0e} | `{call}` | {1e3 * entry['l1']:.2f} | {1e3 * entry['logit']:.2f} | "
                        f"{entry['logit / l1']:.1f} |")
                if base:
                    diffs = {k: max(entry[f"{m} largest differences"][k] for m in METRICS)
                             for k in entry["logit largest differences"]}
                    line += (f" {1e3 * entry['l1 baseline']:.2f} | {1e3 * entry['logit baseline']:.2f} | "
                             f"{entry['logit baseline'] / entry['l1 baseline']:.1f} | "
                             + ", ".join(f"{k} {v:.1e}" for k, v in diffs.items()) + " |")
                rows.append(line)
                print(line, flush=True)
            rec.save_json({"timings": results, "nulls": nulls})
    head = "| forecasts | n | call | l1 (ms) | logit (ms) | logit / l1 |"
    rule = "|---|---|---|---|---|---|"
    if args.baseline:
        head += " baseline l1 (ms) | baseline logit (ms) | baseline logit / l1 | largest \\|this − baseline\\| |"
        rule += "---|---|---|---|"
    body = [f"{replicates} replicates a call, seed {SEED}; calibrated rows (y ~ Bernoulli(f)); best of "
            f"{args.repeat} timed call(s) after a warm-up on other data. Target: logit / l1 ≤ 3 for the "
            "resampling calls (`smece` for reference: l1 answers few values in microseconds).", "",
            head, rule, *rows]
    if args.baseline:
        body += ["", f"Baseline: the smoothece package in `{args.baseline}`. The differences are over both metrics: "
                 "`value` the statistic or SmoothECE, `p_value`, `low`/`high` the interval, `replicates` every "
                 "replicate value, `band_lower`/`band_upper` every point of the band (NaN where both are NaN)."]
    body += ["", f"The test's null (mean of its {replicates} replicates) against {mc} direct simulations of it "
             "(labels redrawn row by row, each data set scored by `smece`): in brackets, the difference in its "
             "standard errors.", "",
             "| forecasts | n | metric | direct simulation | this build |" + (" baseline |" if args.baseline else ""),
             "|---|---|---|---|---|" + ("---|" if args.baseline else ""), *null_rows]
    rec.write("Resampling on discrete and continuous forecasts: logit against l1", body,
              {"timings": results, "nulls": nulls})
    return 0


if __name__ == "__main__":
    sys.exit(main())
