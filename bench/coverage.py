"""Coverage of the bootstrap interval of the SmoothECE (too slow for the tests).

For known distributions, draw many data sets of n rows, compute the 95%
bootstrap percentile interval of the SmoothECE on each
(`bootstrap_smece(f, y, weights=w, n_boot=…, seed=…)`), and count how often
it covers the population SmoothECE, computed by quadrature (bench/population.py,
independent of smoothece). Models, all with f ~ Beta(2, 2):

- `power1.5`: E[y | f] = f^1.5, over-confident; the residual is negative
  everywhere, so smECEσ = |E[μ(f) − f]| for every σ and σ* = 1/2 − 6/(4.5·3.5)
  = 0.119048;
- `crossing`: E[y | f] = expit(0.6·logit f), over-confident on both sides
  (E[y|f] > f below 1/2, < f above); the reliability curve crosses the
  diagonal at 1/2, the smoothed residual changes sign, and σ* = 0.06161575
  (bench/population.py: quadrature, confirmed by a grid evaluation to 4e-10);
- `calibrated` (not in the default run): E[y | f] = f; the population
  SmoothECE is exactly 0, so every interval of the (non-negative, upward
  biased) estimate misses it: coverage 0 by construction.

Weightings, independent of (f, y), so the population value is the same:
`none`, `lognormal` (w ~ lognormal(0, 1)), `zero75` (75% of the weights
exactly 0, the rest lognormal(0, 1)). Every weighting sees the same (f, y)
data sets (set s draws from SeedSequence([2024, model, s])), so the rows
differ only in the weights.

The paper notes that the bootstrap band reflects the sensitivity of the
estimator, not an interval for the true function: the SmoothECE of n rows is
biased upward by noise and σ* itself depends on n, so coverage of the
population value need not be 95%. Target here: ≥ 92%.

Reference rows: for each weighting other than `none`, the same models
unweighted at the weights' effective sample size (Σw)²/Σw² (n/e for
lognormal(0, 1), n/(4e) for 75% zero: 736 and 184 rows at n = 2000), to tell
an effect of the weights from one of the smaller effective sample.

The same replicates also give the coverage of other intervals than the
percentile one that bootstrap_smece returns: the basic
(reflected) interval [2θ̂ − q(97.5%), 2θ̂ − q(2.5%)], the bias-corrected
percentile interval (BC: percentiles Φ(2z₀ ± 1.96), z₀ = Φ⁻¹(share of
replicates below θ̂)), and the percentile interval recentred on θ̂ (shifted
by θ̂ − mean of the replicates).

Usage: python bench/coverage.py [--quick] [--models power1.5 crossing] [--weights none lognormal zero75]
       [--sets 300] [--n 2000] [--boot 1000] [--no-reference] [--label TEXT] [--out DIR]
"""

import argparse
import json
import math
import time
import zlib

from statistics import NormalDist

import numpy as np

import _record
import smoothece
from population import MODELS, population_smece

WEIGHTINGS = {
    "none": "1 for every row",
    "lognormal": "lognormal(0, 1)",
    "zero75": "75% exactly 0, the rest lognormal(0, 1)",
}


def draw(model, n, s):
    """Data set s of a model: f ~ Beta(2, 2), y ~ Bernoulli(μ(f))."""
    mu = MODELS[model][1]
    rng = np.random.default_rng([2024, zlib.crc32(model.encode()), s])
    f = rng.beta(2.0, 2.0, size=n)
    return f, rng.uniform(size=n) < mu(f)


def weights(kind, n, s):
    """Weights of data set s, drawn from their own stream (independent of f and y)."""
    rng = np.random.default_rng([2025, zlib.crc32(kind.encode()), s])
    if kind == "none":
        return None
    w = rng.lognormal(0.0, 1.0, size=n)
    if kind == "zero75":
        w[rng.uniform(size=n) < 0.75] = 0.0
    return w


def wilson(k, m, z=1.96):
    """Wilson 95% interval of a binomial proportion k/m."""
    p = k / m
    c = (p + z * z / (2 * m)) / (1 + z * z / m)
    h = z * np.sqrt(p * (1 - p) / m + z * z / (4 * m * m)) / (1 + z * z / m)
    return max(0.0, c - h), min(1.0, c + h)


def effective_n(kind, n):
    """(Σw)²/Σw² of a weighting in expectation: n/e for lognormal(0, 1), n/(4e) with 75% of them zero."""
    return {"none": n, "lognormal": round(n / math.e), "zero75": round(n / (4 * math.e))}[kind]


def other_intervals(value, replicates, level=0.95):
    """The basic, bias-corrected (BC) and recentred percentile intervals of the same replicates."""
    normal, a = NormalDist(), (1.0 - level) / 2.0
    reps = np.sort(np.asarray(replicates))
    low, high = np.quantile(reps, [a, 1.0 - a])
    below = np.clip(np.mean(reps < value) + 0.5 * np.mean(reps == value), 0.5 / reps.size, 1 - 0.5 / reps.size)
    z0 = normal.inv_cdf(below)
    bc = np.quantile(reps, [normal.cdf(2 * z0 + normal.inv_cdf(a)), normal.cdf(2 * z0 + normal.inv_cdf(1 - a))])
    shift = reps.mean() - value
    return {"basic": (2 * value - high, 2 * value - low), "bc": tuple(bc), "recentred": (low - shift, high - shift)}


def study(model, kind, population, args, n=None, role="main"):
    start = time.perf_counter()
    n = n or args.n
    rows, others = [], {"basic": 0, "bc": 0, "recentred": 0}
    for s in range(args.sets):
        f, y = draw(model, n, s)
        b = smoothece.bootstrap_smece(f, y, weights=weights(kind, n, s), n_boot=args.boot, seed=s)
        rows.append((b.value, b.low, b.high))
        for name, (lo, hi) in other_intervals(b.value, b.replicates).items():
            others[name] += int(lo <= population <= hi)
    values, lows, highs = np.array(rows).T
    covered = (lows <= population) & (population <= highs)
    above = lows > population
    k = int(covered.sum())
    return {
        "role": role, "model": model, "weights": kind, "population": population, "n": n, "sets": args.sets,
        "n_boot": args.boot, "mean_estimate": values.mean(), "sd_estimate": values.std(ddof=1),
        "mean_width": (highs - lows).mean(), "covered": k, "coverage": k / args.sets,
        "coverage_ci95": wilson(k, args.sets), "miss_above": int(above.sum()),
        "miss_below": int((~covered & ~above).sum()), "seconds": time.perf_counter() - start,
        **{f"coverage_{name}": k / args.sets for name, k in others.items()},
    }


def table(rows):
    L = ["| model | weights | population σ* | n | sets | mean estimate | sd | mean interval width | coverage | "
         "95% CI | misses above / below | s |",
         "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        lo, hi = r["coverage_ci95"]
        kind = r["weights"] + (f" (effective n of {r['reference_for']})" if r.get("reference_for") else "")
        L.append(f"| {r['model']} | {kind} | {r['population']:.8f} | {r['n']} | {r['sets']} | "
                 f"{r['mean_estimate']:.4f} | {r['sd_estimate']:.4f} | {r['mean_width']:.4f} | "
                 f"**{r['coverage']:.1%}** | {lo:.1%} – {hi:.1%} | {r['miss_above']} / {r['miss_below']} | "
                 f"{r['seconds']:.0f} |")
    return L


def markdown_body(results):
    """The body of coverage.md (the header comes from bench/_record.py)."""
    rows = results["rows"]
    main = [r for r in rows if r.get("role", "main") == "main"]
    ref = [r for r in rows if r.get("role") == "reference"]
    L = [__doc__.split("\n\nUsage")[0].split("\n\n", 1)[1], "",
         "Coverage is the fraction of data sets whose interval contains the population σ*, with a Wilson 95% "
         "interval for that fraction; a miss \"above\" is an interval lying wholly above the population value.", "",
         *table(main), ""]
    if ref:
        L += ["## Reference rows: unweighted, at the weights' effective sample size", "", *table(ref), ""]
    if main and "coverage_bc" in main[0]:
        L += ["## Other intervals from the same replicates (coverage of the population σ*)", "",
              "| model | weights | n | percentile (returned) | basic | BC | recentred percentile |",
              "|---|---|---|---|---|---|---|"]
        for r in main + ref:
            L.append(f"| {r['model']} | {r['weights']} | {r['n']} | {r['coverage']:.1%} | {r['coverage_basic']:.1%} | "
                     f"{r['coverage_bc']:.1%} | {r['coverage_recentred']:.1%} |")
        L.append("")
    return L


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    _record.add_options(ap, "smoke run: 20 sets of n = 300, 100 replicates, populations from population.py's "
                            "coarse grid (seconds)")
    ap.add_argument("--models", nargs="+", default=["power1.5", "crossing"], choices=list(MODELS))
    ap.add_argument("--weights", nargs="+", default=list(WEIGHTINGS), choices=list(WEIGHTINGS))
    ap.add_argument("--sets", type=int, help="data sets per row (default 300; 20 with --quick)")
    ap.add_argument("--n", type=int, help="rows per data set (default 2000; 300 with --quick)")
    ap.add_argument("--boot", type=int, help="bootstrap replicates (default 1000; 100 with --quick)")
    ap.add_argument("--no-reference", action="store_true",
                    help="leave out the unweighted rows at the weights' effective sample size")
    ap.add_argument("--label", default="", help='what is measured, e.g. "before: commit 9cbe3e1"')
    args = ap.parse_args(argv)
    for name, full, quick in (("sets", 300, 20), ("n", 2000, 300), ("boot", 1000, 100)):
        if getattr(args, name) is None:
            setattr(args, name, quick if args.quick else full)

    rec = _record.Record(__file__, args, argv, packages=("numpy", "scipy", "smoothece"))
    rows = []
    for model in args.models:
        population = population_smece(model, quick=args.quick)
        for kind in args.weights:
            rows.append(study(model, kind, population, args))
            print(json.dumps(rows[-1]), flush=True)
        if not args.no_reference:
            for kind in args.weights:
                if kind != "none":
                    rows.append(study(model, "none", population, args, n=effective_n(kind, args.n),
                                      role="reference"))
                    rows[-1]["reference_for"] = kind
                    print(json.dumps(rows[-1]), flush=True)
    config = {k: getattr(args, k) for k in ("models", "weights", "sets", "n", "boot", "label", "quick")}
    config["population"] = "grid (quick)" if args.quick else "quadrature (bench/population.py)"
    title = f"Bootstrap interval coverage of the SmoothECE{': ' + args.label if args.label else ''}"
    results = {"config": config, "rows": rows, "smoothece_file": smoothece.__file__}
    rec.write(title, markdown_body(results), results)


if __name__ == "__main__":
    main()
