"""Size and power of the calibration test (too slow for the tests).

Size: under perfect calibration (f ~ Beta(2, 2), y ~ Bernoulli(f)) draw many
data sets of n rows, run `calibration_test(f, y, weights=w, n_sim=…, seed=…)`
on each, and count how often p ≤ 0.05. A test of the right size rejects 5%
of them (target: within [2%, 8%]). Weightings as in coverage.py, independent
of (f, y): `none`, `lognormal` (lognormal(0, 1)), `zero75` (75% exactly 0,
the rest lognormal(0, 1)); every weighting sees the same (f, y) data sets.

Power: the same, on data from the `crossing` model of coverage.py
(E[y | f] = expit(0.6·logit f), population SmoothECE 0.0616), unweighted
unless `--power-weights` asks for more.

Each fraction comes with a Wilson 95% interval for the binomial proportion.

Usage: python bench/size.py [--quick] [--n 2000] [--sets 300] [--sim 1000] [--weights none lognormal zero75]
       [--power-model crossing] [--power-weights none] [--label TEXT] [--out DIR]
"""

import argparse
import json
import time

import numpy as np

import _record
import smoothece
from coverage import WEIGHTINGS, draw, weights, wilson
from population import MODELS


def study(model, kind, args):
    start = time.perf_counter()
    p = np.empty(args.sets)
    for s in range(args.sets):
        f, y = draw(model, args.n, s)
        p[s] = smoothece.calibration_test(f, y, weights=weights(kind, args.n, s), n_sim=args.sim, seed=s).p_value
    k = int((p <= 0.05).sum())
    return {"model": model, "weights": kind, "n": args.n, "sets": args.sets, "n_sim": args.sim,
            "rejected_5pct": k, "rate_5pct": k / args.sets, "ci95": wilson(k, args.sets),
            "rate_1pct": float((p <= 0.01).mean()), "rate_10pct": float((p <= 0.10).mean()),
            "mean_p": float(p.mean()), "seconds": time.perf_counter() - start}


def markdown_body(rows):
    """The body of size.md (the header comes from bench/_record.py)."""
    L = [__doc__.split("\n\nUsage")[0].split("\n\n", 1)[1], "",
         "| study | model | weights | n | sets | n_sim | rejected at 5% | 95% CI | target | at 1% | at 10% | "
         "mean p | s |",
         "|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        lo, hi = r["ci95"]
        size = r["model"] == "calibrated"
        target = "2% – 8%" if size else "–"
        L.append(f"| {'size' if size else 'power'} | {r['model']} | {r['weights']} | {r['n']} | {r['sets']} | "
                 f"{r['n_sim']} | **{r['rate_5pct']:.1%}** ({r['rejected_5pct']}) | {lo:.1%} – {hi:.1%} | {target} | "
                 f"{r['rate_1pct']:.1%} | {r['rate_10pct']:.1%} | {r['mean_p']:.3f} | {r['seconds']:.0f} |")
    return L


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    _record.add_options(ap, "smoke run: 20 sets of n = 300, n_sim = 100 (seconds)")
    ap.add_argument("--n", type=int, help="rows per data set (default 2000; 300 with --quick)")
    ap.add_argument("--sets", type=int, help="data sets per row (default 300; 20 with --quick)")
    ap.add_argument("--sim", type=int, help="n_sim of calibration_test (default 1000; 100 with --quick)")
    ap.add_argument("--weights", nargs="+", default=list(WEIGHTINGS), choices=list(WEIGHTINGS))
    ap.add_argument("--power-model", nargs="*", default=["crossing"], choices=[m for m in MODELS if m != "calibrated"],
                    help="models for the power study (none: size only)")
    ap.add_argument("--power-weights", nargs="+", default=["none"], choices=list(WEIGHTINGS),
                    help="weightings for the power study (default: none)")
    ap.add_argument("--label", default="", help='what is measured, e.g. "before: commit 9cbe3e1"')
    args = ap.parse_args(argv)
    for name, full, quick in (("sets", 300, 20), ("n", 2000, 300), ("sim", 1000, 100)):
        if getattr(args, name) is None:
            setattr(args, name, quick if args.quick else full)

    rec = _record.Record(__file__, args, argv)
    rows = []
    for model in ["calibrated"] + args.power_model:
        for kind in args.weights if model == "calibrated" else args.power_weights:
            rows.append(study(model, kind, args))
            print(json.dumps(rows[-1]), flush=True)
    config = {k: getattr(args, k) for k in ("n", "sets", "sim", "weights", "power_model", "power_weights", "label",
                                            "quick")}
    title = f"Size and power of `calibration_test`{': ' + args.label if args.label else ''}"
    rec.write(title, markdown_body(rows), {"config": config, "rows": rows, "smoothece_file": smoothece.__file__})


if __name__ == "__main__":
    main()
