"""Coverage of the bootstrap interval of the SmoothECE (too slow for the tests).

For a known distribution — f ~ Beta(2, 2), P(y = 1 | f) = f^1.5 (an
overconfident model) — draw many data sets of n = 2000 rows, compute the 95%
bootstrap percentile interval of the SmoothECE on each (1000 replicates), and
count how often it covers the population SmoothECE, estimated once on
n = 10^7 rows from the same distribution (whose own sampling error, ~1e-4,
is far below the intervals' width).

The paper notes that the bootstrap band reflects the sensitivity of the
estimator, not an interval for the true function: the SmoothECE of n rows is
biased upward by noise (smECE ≥ 0 even for calibrated data) and σ* itself
shrinks with n, so coverage of the population value need not be 95%. This
script measures it.

Usage: python bench/coverage.py [--sets 200] [--n 2000] [--boot 1000] [--out bench/coverage.md]
"""

import argparse
import json
import time

import numpy as np

import smoothece


def draw(rng, n, power):
    f = rng.beta(2.0, 2.0, size=n)
    y = rng.uniform(size=n) < f**power
    return f, y


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--sets", type=int, default=200)
    ap.add_argument("--n", type=int, default=2000)
    ap.add_argument("--boot", type=int, default=1000)
    ap.add_argument("--power", type=float, default=1.5)
    ap.add_argument("--out", default="bench/coverage.md")
    args = ap.parse_args()

    rng = np.random.default_rng(2024)
    population = smoothece.smece(*draw(rng, 10_000_000, args.power))
    start = time.perf_counter()
    rows = []
    for s in range(args.sets):
        f, y = draw(rng, args.n, args.power)
        b = smoothece.bootstrap_smece(f, y, n_boot=args.boot, seed=s)
        rows.append((b.value, b.low, b.high))
    elapsed = time.perf_counter() - start
    values, lows, highs = np.array(rows).T
    covered = (lows <= population) & (population <= highs)
    above = lows > population
    coverage = covered.mean()
    se = np.sqrt(coverage * (1 - coverage) / args.sets)
    summary = {
        "distribution": f"f ~ Beta(2,2), P(y=1|f) = f^{args.power}",
        "n": args.n, "sets": args.sets, "n_boot": args.boot, "level": 0.95,
        "population_smece (n=1e7)": population,
        "mean estimate": values.mean(), "sd of estimates": values.std(ddof=1),
        "mean interval width": (highs - lows).mean(),
        "coverage": coverage, "coverage standard error": se,
        "misses with interval above the population value": int(above.sum()),
        "misses with interval below": int((~covered & ~above).sum()),
        "seconds": elapsed,
    }
    text = ["# Bootstrap interval coverage of the SmoothECE", "", __doc__.split("\n\n")[1].replace("\n", " "), "",
            "| quantity | value |", "|---|---|"]
    text += [f"| {k} | {v:.4g} |" if isinstance(v, float) else f"| {k} | {v} |" for k, v in summary.items()]
    with open(args.out, "w") as fh:
        fh.write("\n".join(text) + "\n")
    print(json.dumps(summary, indent=1))


if __name__ == "__main__":
    main()
