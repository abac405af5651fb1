#!/usr/bin/env python
"""Coverage and size of `smoothece.compare`: the paired bootstrap of SmECE(a) − SmECE(b).

Two models score the same rows: a latent probability q ~ U(0, 1), the label y ~ Bernoulli(q), and each
model a monotone distortion of q, so that its reliability curve and prediction density are known in
closed form and its population SmoothECE follows by quadrature (bench/population.py, independent of
smoothece):

- ``power``: f = q^(2/3), so E[y | f] = f^1.5 (over-confident, one-signed), density 1.5·f^0.5;
- ``crossing``: f = expit(logit(q)/0.6), so E[y | f] = expit(0.6·logit f) (crosses the diagonal at 1/2),
  density 0.6·q(1 − q)/(f(1 − f));
- ``mirror``: f = 1 − (1 − q)^(2/3), the power model reflected (f → 1 − f, y → 1 − y), whose population
  SmoothECE equals power's exactly;
- ``calibrated``: f = q; ``deciles``: f = the centre of q's tenth (calibrated discrete forecasts).

Cases: power vs crossing (a difference: coverage of the population Δ), power vs mirror and calibrated vs
deciles (equal calibration: the test's size and the coverage of Δ = 0). Weights: none, or lognormal(0, 1)
importance weights independent of the rows (the population values do not change).

Usage: python bench/compare.py [--quick] [--sets 200] [--boot 1000] [--n 500 2000 20000]
"""

from __future__ import annotations

import argparse
import json
import math
import time

import numpy as np

import _record
import population
import smoothece

C = 0.6
A = 2.0 / 3.0


def expit(x):
    return 1.0 / (1.0 + np.exp(-x))


def logit(p):
    return np.log(p) - np.log1p(-p)


# name: (prediction from q, E[y | f], density of f); None where no quadrature is needed (calibrated: 0)
MODELS = {
    "power": (lambda q: q ** A, lambda x: np.power(x, 1.0 / A), lambda x: (1.0 / A) * np.power(x, 1.0 / A - 1.0)),
    "crossing": (lambda q: expit(logit(np.clip(q, 1e-15, 1 - 1e-15)) / C), population.logit_slope(C),
                 lambda x: C * (lambda q: q * (1 - q))(population.logit_slope(C)(x)) / np.maximum(x * (1 - x), 1e-300)),
    "mirror": (lambda q: 1.0 - (1.0 - q) ** A, None, None),
    "calibrated": (lambda q: q, None, None),
    "deciles": (lambda q: (np.floor(q * 10.0) + 0.5) / 10.0, None, None),
}
# Models whose population SmoothECE is another's (by symmetry, or both calibrated).
SAME_POPULATION = {"power": "power", "crossing": "crossing", "mirror": "power", "calibrated": "calibrated",
                   "deciles": "calibrated"}
CASES = [("power", "crossing"), ("power", "mirror"), ("calibrated", "deciles")]


def population_value(model, quick):
    """Population SmoothECE by quadrature (0 for a calibrated model: r ≡ 0 at every σ)."""
    if model == "calibrated":
        return 0.0
    _, mu, density = MODELS[model]
    if quick:
        return population.fixpoint(lambda s: population.smece_sigma_grid(mu, density, s, **population.QUICK_GRID))
    return population.fixpoint(lambda s: population.smece_sigma_quad(mu, density, s)[0])


def draw(case, n, s, weighted):
    rng = np.random.default_rng([2026, CASES.index(case), n, s])
    q = rng.uniform(size=n)
    y = rng.uniform(size=n) < q
    w = rng.lognormal(0.0, 1.0, size=n) if weighted else None
    a, b = (MODELS[m][0](q) for m in case)
    return a, b, y, w


def study(case, n, weighted, delta, args):
    start = time.perf_counter()
    covered = rejected = excluded = basic = 0
    widths, diffs = [], []
    for s in range(args.sets):
        a, b, y, w = draw(case, n, s, weighted)
        c = smoothece.compare(a, b, y, weights=w, n_boot=args.boot, seed=s, names=case)
        covered += c.low <= delta <= c.high
        rejected += c.p_value < 0.05
        excluded += not (c.low <= c.difference <= c.high)
        # the alternative: the basic interval of the same replicates (bias-corrected, reflected)
        q_lo, q_hi = np.quantile(c.replicates[:, 0] - c.replicates[:, 1], [0.025, 0.975])
        basic += 2 * c.difference - q_hi <= delta <= 2 * c.difference - q_lo
        widths.append(c.high - c.low)
        diffs.append(c.difference)
    return {"a": case[0], "b": case[1], "n": n, "weights": "lognormal" if weighted else "none", "delta": delta,
            "sets": args.sets, "n_boot": args.boot, "mean_difference": float(np.mean(diffs)),
            "coverage": covered / args.sets, "rejection_rate": rejected / args.sets,
            "excludes_own_value": excluded,
            "coverage_basic": basic / args.sets, "mean_width": float(np.mean(widths)),
            "seconds": round(time.perf_counter() - start, 1)}


def markdown_body(rows):
    lines = ["Paired bootstrap of Δ = SmECE(a) − SmECE(b): the 95% interval `compare` reports (percentile, widened to "
             "hold Δ̂), the basic interval of the same replicates for comparison, the test at 5%, "
             f"{rows[0]['sets']} data sets per row, n_boot = {rows[0]['n_boot']}.", "",
             "| a | b | population Δ | n | weights | mean Δ̂ | coverage of Δ | basic interval's | rejects at 5% "
             "| mean width |",
             "|---|---|---:|---:|---|---:|---:|---:|---:|---:|"]
    for r in rows:
        lines.append(f"| {r['a']} | {r['b']} | {r['delta']:.4f} | {r['n']} | {r['weights']} | "
                     f"{r['mean_difference']:.4f} | {r['coverage']:.1%} | {r['coverage_basic']:.1%} | "
                     f"{r['rejection_rate']:.1%} | "
                     f"{r['mean_width']:.4f} |")
    lines += ["", "Where Δ = 0 (equal calibration) 'rejects' is the test's size; elsewhere its power. No interval "
              "excluded its own point value" if all(r["excludes_own_value"] == 0 for r in rows) else
              "Some intervals excluded their point value (see the JSON)."]
    return "\n".join(lines)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    _record.add_options(ap, "smoke run: 10 sets of n = 500, n_boot = 200, coarse quadrature (seconds)")
    ap.add_argument("--sets", type=int, help="data sets per row (default 200; 10 with --quick)")
    ap.add_argument("--boot", type=int, help="n_boot (default 1000; 200 with --quick)")
    ap.add_argument("--n", type=int, nargs="+", help="rows per data set (default 500 2000 20000; 500 with --quick)")
    args = ap.parse_args(argv)
    for name, full, quick in (("sets", 200, 10), ("boot", 1000, 200), ("n", [500, 2000, 20000], [500])):
        if getattr(args, name) is None:
            setattr(args, name, quick if args.quick else full)
    rec = _record.Record(__file__, args, argv)
    values = {m: population_value(m, args.quick) for m in ("power", "crossing", "calibrated")}
    print("population SmoothECE:", json.dumps(values), flush=True)
    rows = []
    for case in CASES:
        delta = values[SAME_POPULATION[case[0]]] - values[SAME_POPULATION[case[1]]]
        for n in args.n:
            for weighted in (False, True):
                rows.append(study(case, n, weighted, delta, args))
                print(json.dumps(rows[-1]), flush=True)
    rec.write("Coverage and size of `compare` (paired bootstrap of a difference of SmoothECEs)", markdown_body(rows),
              {"population": values, "rows": rows, "config": {"sets": args.sets, "boot": args.boot, "n": args.n}})
    return 0 if math.isfinite(sum(r["coverage"] for r in rows)) else 1


if __name__ == "__main__":
    main()
