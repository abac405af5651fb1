"""Counts passed as weights: the calibration test's size and the bootstrap interval's width when whole-number
weights are read as importance weights (the default) or as frequency weights (too slow for the tests).

Two settings, each on many data sets of calibrated rows (f ~ Beta(2, 2) rounded to 0.01, y ~ Bernoulli(f)):

- `counts`: n independent rows collapsed into one weighted row per distinct (f, y), its weight the count of
  rows (about 200 weighted rows). The truth is the n rows themselves: frequency weights should give their test
  and interval; importance weights make each collapsed row one sampled unit.
- `unit rows`: n rows that are each one sampled unit, with whole weights 1 to 5 drawn independently of (f, y)
  (a survey's integer weights). Here importance weights are right and frequency weights would claim Σw rows.

For each data set: `calibration_test` (p ≤ 0.05 counted; the target is 5%) and the width of `bootstrap_smece`'s
95% interval, as importance and as frequency weights, and for `counts` on the expanded rows too. Widths are
reported as the median, over the data sets, of the ratio to the reference width (the expanded rows' for
`counts`, importance weights' for `unit rows`). Fractions come with Wilson 95% intervals.

Usage: python bench/weight_kind.py [--quick] [--n 2000] [--sets 300] [--sim 1000] [--boot 1000] [--out DIR]
"""

import argparse
import json
import time

import numpy as np

import _record
import smoothece
from coverage import wilson


def data(setting, n, s):
    """(f, y, w, rows): the weighted rows of data set s, and the expanded rows (f, y) for `counts`."""
    rng = np.random.default_rng([2026, 0 if setting == "counts" else 1, s])
    f = np.round(rng.beta(2.0, 2.0, size=n), 2)
    y = rng.uniform(size=n) < f
    if setting == "unit rows":
        return f, y, rng.integers(1, 6, size=n).astype(float), None
    keys, counts = np.unique(np.round(f * 100).astype(np.int64) * 2 + y, return_counts=True)
    return (keys // 2) / 100, (keys % 2).astype(bool), counts.astype(float), (f, y)


def study(setting, args):
    start = time.perf_counter()
    kinds = ["importance", "frequency"] + (["rows"] if setting == "counts" else [])
    p = {k: np.empty(args.sets) for k in kinds}
    width = {k: np.empty(args.sets) for k in kinds}
    for s in range(args.sets):
        f, y, w, rows = data(setting, args.n, s)
        for kind in kinds:
            if kind == "rows":
                fk, yk, wk, opts = rows[0], rows[1], None, {}
            else:
                fk, yk, wk, opts = f, y, w, {"weight_kind": kind}
            p[kind][s] = smoothece.calibration_test(fk, yk, weights=wk, n_sim=args.sim, seed=s, **opts).p_value
            b = smoothece.bootstrap_smece(fk, yk, weights=wk, n_boot=args.boot, seed=s, **opts)
            width[kind][s] = b.high - b.low
    ref = "rows" if setting == "counts" else "importance"
    out = {"setting": setting, "n": args.n, "sets": args.sets, "n_sim": args.sim, "n_boot": args.boot,
           "reference": ref, "weighted_rows_median": int(np.median([data(setting, args.n, s)[2].size
                                                                    for s in range(min(args.sets, 20))])),
           "kinds": {}}
    for kind in kinds:
        k = int((p[kind] <= 0.05).sum())
        out["kinds"][kind] = {"rejected_5pct": k, "rate_5pct": k / args.sets, "ci95": wilson(k, args.sets),
                              "mean_p": float(p[kind].mean()),
                              "median_width": float(np.median(width[kind])),
                              "median_width_ratio": float(np.median(width[kind] / width[ref]))}
    out["seconds"] = time.perf_counter() - start
    return out


WHAT = {("counts", "rows"): "the n rows themselves (the truth)",
        ("counts", "frequency"): "counts as frequency weights",
        ("counts", "importance"): "counts as importance weights (the default)",
        ("unit rows", "importance"): "whole weights as importance weights (right here)",
        ("unit rows", "frequency"): "whole weights as frequency weights"}


def markdown_body(rows):
    L = [__doc__.split("\n\nUsage")[0].split("\n\n", 1)[1], "",
         "| setting | read as | n | weighted rows | sets | rejected at 5% | 95% CI | mean p | median width | "
         "width / reference |",
         "|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        for kind, k in r["kinds"].items():
            lo, hi = k["ci95"]
            L.append(f"| {r['setting']} | {WHAT[(r['setting'], kind)]} | {r['n']} | {r['weighted_rows_median']} | "
                     f"{r['sets']} | **{k['rate_5pct']:.1%}** ({k['rejected_5pct']}) | {lo:.1%} – {hi:.1%} | "
                     f"{k['mean_p']:.3f} | {k['median_width']:.4f} | {k['median_width_ratio']:.2f} |")
    return L


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    _record.add_options(ap, "smoke run: 10 sets of n = 500, 100 simulations and replicates (seconds)")
    ap.add_argument("--n", type=int, help="rows per data set (default 2000; 500 with --quick)")
    ap.add_argument("--sets", type=int, help="data sets per setting (default 300; 10 with --quick)")
    ap.add_argument("--sim", type=int, help="n_sim of calibration_test (default 1000; 100 with --quick)")
    ap.add_argument("--boot", type=int, help="n_boot of bootstrap_smece (default 1000; 100 with --quick)")
    args = ap.parse_args(argv)
    for name, full, quick in (("sets", 300, 10), ("n", 2000, 500), ("sim", 1000, 100), ("boot", 1000, 100)):
        if getattr(args, name) is None:
            setattr(args, name, quick if args.quick else full)
    rec = _record.Record(__file__, args, argv)
    rows = []
    for setting in ("counts", "unit rows"):
        rows.append(study(setting, args))
        print(json.dumps(rows[-1]), flush=True)
    config = {k: getattr(args, k) for k in ("n", "sets", "sim", "boot", "quick")}
    rec.write("Counts as weights: `weight_kind` and the test's size, the interval's width", markdown_body(rows),
              {"config": config, "rows": rows, "smoothece_file": smoothece.__file__})


if __name__ == "__main__":
    main()
