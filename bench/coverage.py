"""Coverage of the bootstrap interval of the SmoothECE (too slow for the tests).

For known distributions, draw many data sets of n rows, run
`bootstrap_smece(f, y, weights=w, n_boot=…, seed=…)` on each and count how
often its 95% interval covers the population SmoothECE, computed by
quadrature (bench/population.py, independent of smoothece). Models:

- `power1.5`: f ~ Beta(2, 2), E[y | f] = f^1.5, over-confident; the residual
  is negative everywhere (one sign), so smECEσ = |E[μ(f) − f]| for every σ
  and σ* = 1/2 − 6/(4.5·3.5) = 0.119048;
- `crossing`: f ~ Beta(2, 2), E[y | f] = expit(0.6·logit f), over-confident
  on both sides; the reliability curve crosses the diagonal at 1/2 and
  σ* = 0.0616158;
- `wiggle`: f ~ U(0, 1), E[y | f] = f + 0.05·sin(2πf), winding around the
  diagonal; σ* = 0.0315219, near the estimate's noise floor at n = 500–2000
  (about 0.3·n^(−1/3): 0.038 and 0.024), where noise inflates the estimate most;
- `calibrated`: f ~ Beta(2, 2), E[y | f] = f; the population SmoothECE is 0,
  so an interval covers it exactly when its lower end is 0.

Weightings, independent of (f, y), so the population value is the weighted
population's, the same: `none`, `lognormal` (importance weights
lognormal(0, 1), effective sample (Σw)²/Σw² ≈ n/e), `zero75` (75% of the
weights exactly 0, the rest lognormal(0, 1): effective sample ≈ n/(4e), 184
rows at n = 2000). Every weighting sees the same (f, y) data sets (set s of
a model and n draws from SeedSequence([2024, model, s])).

From each data set's replicates the script also computes, with numpy and
independently of smoothece: the equal-tailed percentile interval [q₋, q₊]
of the replicates themselves, the basic interval
[2θ̂ − q₊, 2θ̂ − q₋], the bias-corrected percentile interval (BC:
percentiles Φ(2z₀ ± 1.96), z₀ = Φ⁻¹(share of replicates below θ̂)), the
smallest interval symmetric about θ̂ holding [q₋, q₊] (θ̂ ± max(q₊ − θ̂,
θ̂ − q₋)), and the same on the squared scale (√max(0, θ̂² − d), √(θ̂² + d),
d = max(q₊² − θ̂², θ̂² − q₋²)): the rule bootstrap_smece reports, checked
here against the library's interval on every data set. "Excludes θ̂" counts
intervals that do not hold the value printed beside them.

The fixed-bandwidth rows do the same for smECEσ at a fixed σ
(`bootstrap_smece(..., sigma=σ)`) against the population smECEσ by quadrature.

Population check: smoothece.smece on 10^7 rows drawn from each model (10^5
with --quick) against the quadrature; the two are independent and the
difference is the estimate's bias and noise at 10^7 rows.

Usage: python bench/coverage.py [--quick] [--models power1.5 crossing wiggle calibrated] [--n 500 2000 20000]
       [--weights none lognormal zero75] [--fixed wiggle:0.05] [--sets 400] [--boot 1000] [--check-rows 1e7]
       [--label TEXT] [--out DIR]
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
from population import MODELS, UNIFORM, population_smece, population_smece_sigma

WEIGHTINGS = {
    "none": "1 for every row",
    "lognormal": "lognormal(0, 1)",
    "zero75": "75% exactly 0, the rest lognormal(0, 1)",
}
INTERVALS = ("percentile", "basic", "bc", "symmetric", "squared")
INTERVAL_NAMES = {"percentile": "percentile", "basic": "basic", "bc": "BC",
                  "symmetric": "symmetric about θ̂", "squared": "symmetric on the squared scale (reported)"}


def draw(model, n, s):
    """Data set s of a model: f ~ Beta(2, 2) (U(0, 1) for the models of population.UNIFORM), y ~ Bernoulli(μ(f))."""
    mu = MODELS[model][1]
    rng = np.random.default_rng([2024, zlib.crc32(model.encode()), s])
    f = rng.uniform(size=n) if model in UNIFORM else rng.beta(2.0, 2.0, size=n)
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


def intervals(value, replicates, level=0.95):
    """The intervals of INTERVALS from one data set's replicates, by numpy alone."""
    normal, a = NormalDist(), (1.0 - level) / 2.0
    reps = np.asarray(replicates, dtype=float)
    low, high = np.quantile(reps, [a, 1.0 - a])
    below = np.clip(np.mean(reps < value) + 0.5 * np.mean(reps == value), 0.5 / reps.size, 1 - 0.5 / reps.size)
    z0 = normal.inv_cdf(below)
    bc = np.quantile(reps, [normal.cdf(2 * z0 + normal.inv_cdf(a)), normal.cdf(2 * z0 + normal.inv_cdf(1 - a))])
    d = max(high - value, value - low)
    d2 = max(high**2 - value**2, value**2 - low**2)
    return {"percentile": (low, high), "basic": (2 * value - high, 2 * value - low), "bc": tuple(bc),
            "symmetric": (value - d, value + d),
            "squared": (math.sqrt(max(0.0, value**2 - d2)), math.sqrt(value**2 + d2))}


def study(model, kind, n, population, args, sigma=None):
    start = time.perf_counter()
    values, reported, by_rule = [], [], {name: [] for name in INTERVALS}
    for s in range(args.sets):
        f, y = draw(model, n, s)
        b = smoothece.bootstrap_smece(f, y, weights=weights(kind, n, s), n_boot=args.boot, seed=s, sigma=sigma)
        values.append(b.value)
        reported.append((b.low, b.high))
        for name, ends in intervals(b.value, b.replicates).items():
            by_rule[name].append(ends)
    values, reported = np.array(values), np.array(reported)
    row = {"model": model, "weights": kind, "n": n, "sigma": sigma, "population": population, "sets": args.sets,
           "n_boot": args.boot, "mean_estimate": values.mean(), "sd_estimate": values.std(ddof=1),
           # the library's interval against the rule computed here by numpy
           "rule_max_abs_difference": float(np.abs(reported - np.array(by_rule["squared"])).max())}
    for name in INTERVALS:
        lows, highs = np.array(by_rule[name]).T
        covered = (lows <= population) & (population <= highs)
        row[name] = {"covered": int(covered.sum()), "coverage": covered.mean(),
                     "coverage_ci95": wilson(int(covered.sum()), args.sets),
                     "misses_above": int((lows > population).sum()), "misses_below": int((highs < population).sum()),
                     "excludes_value": float(((lows > values) | (highs < values)).mean()),
                     "mean_width": float((highs - lows).mean()), "low_is_zero": float((lows <= 0.0).mean())}
    lows, highs = reported.T
    row["reported"] = {"coverage": float(((lows <= population) & (population <= highs)).mean()),
                       "excludes_value": float(((lows > values) | (highs < values)).mean())}
    row["seconds"] = time.perf_counter() - start
    return row


def population_check(model, rows, population):
    """smoothece.smece on ``rows`` rows drawn from the model against the quadrature."""
    mu = MODELS[model][1]
    rng = np.random.default_rng([2026, zlib.crc32(model.encode())])
    f = rng.uniform(size=rows) if model in UNIFORM else rng.beta(2.0, 2.0, size=rows)
    value = smoothece.smece(f, rng.uniform(size=rows) < mu(f))
    return {"model": model, "rows": rows, "quadrature": population, "smece": value, "difference": value - population}


def pct(x):
    return f"{100 * x:.1f}%"


def table(rows):
    L = ["| model | weights | n | population | mean estimate | coverage: percentile → **reported** (95% CI) | "
         "misses above / below | excludes θ̂: percentile → reported | mean width: percentile → reported | s |",
         "|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        p, q = r["percentile"], r["squared"]
        lo, hi = q["coverage_ci95"]
        L.append(f"| {r['model']} | {r['weights']} | {r['n']} | {r['population']:.6f} | {r['mean_estimate']:.4f} | "
                 f"{pct(p['coverage'])} → **{pct(q['coverage'])}** ({pct(lo)} – {pct(hi)}) | "
                 f"{q['misses_above']} / {q['misses_below']} | {pct(p['excludes_value'])} → "
                 f"{pct(r['reported']['excludes_value'])} | {p['mean_width']:.4f} → {q['mean_width']:.4f} | "
                 f"{r['seconds']:.0f} |")
    return L


def markdown_body(results):
    """The body of coverage.md (the header comes from bench/_record.py)."""
    rows, fixed = results["rows"], results["fixed_rows"]
    L = [__doc__.split("\n\nUsage")[0].split("\n\n", 1)[1], "",
         "Coverage is the fraction of data sets whose interval holds the population value, with a Wilson 95% "
         "interval for that fraction; a miss \"above\" is an interval lying wholly above the population value "
         f"(for `calibrated` every miss). {results['config']['sets']} data sets per row, "
         f"{results['config']['boot']} replicates each; the reported interval equals the rule computed here to "
         f"{max(r['rule_max_abs_difference'] for r in rows + fixed):.1e} on every data set.", "",
         "## The SmoothECE σ*", "", *table(rows), ""]
    if fixed:
        L += ["## smECEσ at a fixed σ (`sigma=`), against the population smECEσ", "", *table(fixed), ""]
    L += ["## Every interval from the same replicates (coverage of the population value)", "",
          "| model | weights | n | σ | " + " | ".join(INTERVAL_NAMES[k] for k in INTERVALS) + " |",
          "|---|---|---|---|" + "---|" * len(INTERVALS)]
    for r in rows + fixed:
        cells = " | ".join(f"{pct(r[k]['coverage'])} (w {r[k]['mean_width']:.4f})" for k in INTERVALS)
        L.append(f"| {r['model']} | {r['weights']} | {r['n']} | {'σ*' if r['sigma'] is None else r['sigma']} | "
                 f"{cells} |")
    calibrated = [r for r in rows if r["model"] == "calibrated"]
    if calibrated:
        L += ["", "Calibrated data: the share of reported intervals whose lower end is 0 (an upper bound): " +
              ", ".join(f"{r['weights']} n = {r['n']}: {pct(r['squared']['low_is_zero'])}" for r in calibrated) +
              "."]
    L += ["", "## Population check", "",
          "| model | rows | quadrature | smoothece.smece | difference |", "|---|---|---|---|---|"]
    L += [f"| {c['model']} | {c['rows']:.0e} | {c['quadrature']:.7f} | {c['smece']:.7f} | {c['difference']:+.1e} |"
          for c in results["population_checks"]]
    return L


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    _record.add_options(ap, "smoke run: 20 sets of n = 300, 100 replicates, populations from population.py's "
                            "coarse grid, the population check on 10^5 rows (seconds)")
    ap.add_argument("--models", nargs="+", default=["power1.5", "crossing", "wiggle", "calibrated"],
                    choices=list(MODELS))
    ap.add_argument("--weights", nargs="+", default=list(WEIGHTINGS), choices=list(WEIGHTINGS))
    ap.add_argument("--n", type=int, nargs="+", help="rows per data set (default 500 2000 20000; 300 with --quick)")
    ap.add_argument("--fixed", nargs="*", default=["wiggle:0.05"], metavar="MODEL:SIGMA",
                    help="fixed-bandwidth rows: smECEσ of MODEL at SIGMA (default wiggle:0.05)")
    ap.add_argument("--sets", type=int, help="data sets per row (default 400; 20 with --quick)")
    ap.add_argument("--boot", type=int, help="bootstrap replicates (default 1000; 100 with --quick)")
    ap.add_argument("--check-rows", type=float, help="rows of the population check (default 1e7; 1e5 with --quick)")
    ap.add_argument("--label", default="", help='what is measured, e.g. "commit 9cbe3e1"')
    args = ap.parse_args(argv)
    for name, full, quick in (("sets", 400, 20), ("n", [500, 2000, 20000], [300]), ("boot", 1000, 100),
                              ("check_rows", 1e7, 1e5)):
        if getattr(args, name) is None:
            setattr(args, name, quick if args.quick else full)
    fixed = [(spec.split(":")[0], float(spec.split(":")[1])) for spec in args.fixed]
    for model, _ in fixed:
        if model not in MODELS:
            ap.error(f"--fixed: unknown model {model!r}")

    rec = _record.Record(__file__, args, argv, packages=("numpy", "scipy", "smoothece"))
    rows, fixed_rows, checks = [], [], []
    for model in args.models:
        population = population_smece(model, quick=args.quick)
        if model != "calibrated":
            checks.append(population_check(model, int(args.check_rows), population))
            print(json.dumps(checks[-1]), flush=True)
        for n in args.n:
            for kind in args.weights:
                rows.append(study(model, kind, n, population, args))
                print(json.dumps(rows[-1]), flush=True)
    for model, sigma in fixed:
        population = population_smece_sigma(model, sigma, quick=args.quick)
        for n in args.n:
            for kind in args.weights:
                if kind != "zero75":
                    fixed_rows.append(study(model, kind, n, population, args, sigma=sigma))
                    print(json.dumps(fixed_rows[-1]), flush=True)
    config = {k: getattr(args, k) for k in ("models", "weights", "n", "fixed", "sets", "boot", "check_rows", "label",
                                            "quick")}
    config["population"] = "grid (quick)" if args.quick else "quadrature (bench/population.py)"
    title = f"Bootstrap interval coverage of the SmoothECE{': ' + args.label if args.label else ''}"
    results = {"config": config, "rows": rows, "fixed_rows": fixed_rows, "population_checks": checks,
               "smoothece_file": smoothece.__file__}
    rec.write(title, markdown_body(results), results)


if __name__ == "__main__":
    main()
