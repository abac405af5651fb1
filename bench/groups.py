"""Calibration per group and compact sketches, timed and sized in one process.

    python bench/groups.py [--n 1e7] [--groups 1e4] [--out bench/groups.md]

- `smece_by_group` on n rows in K shuffled groups (f ~ Beta(2,2), y ~
  Bernoulli(f)) against `smece` on all rows as one group, against a Python
  loop of `smece` over the groups (rows sorted by group first, then
  contiguous slices) and against the loop most people write (a boolean mask
  per group; timed on 100 groups and scaled), with the peak memory growth;
- `GroupedSketch.update` per row (in 5 batches) against one `CalibrationSketch`,
  `GroupedSketch.total()` and the grouped answer;
- the grouped calibration test under perfect calibration, with and without
  weights: how often anything is rejected after Benjamini–Hochberg;
- `len(CalibrationSketch.to_bytes())` for Beta(2,2) rows and for discrete
  forecasts.
"""

from __future__ import annotations

import argparse
import os
import resource
import time

import numpy as np

import smoothece
from coverage import WEIGHTINGS, draw, weights, wilson

HERE = os.path.dirname(os.path.abspath(__file__))


def best(fn, repeat=3):
    out = float("inf")
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        out = min(out, time.perf_counter() - t)
    return out


def peak_mb():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def family_wise(sets, groups=10, rows=500, n_sim=500):
    """Under perfect calibration in every group, how often does the grouped
    test reject anything after Benjamini–Hochberg (the family-wise error;
    BH's false discovery rate equals it when every null hypothesis is true)?
    n_sim must let a p-value reach BH's smallest threshold, 0.05/groups:
    the smallest p is 1/(1 + n_sim)."""
    assert 1 / (1 + n_sim) <= 0.05 / groups
    lines = [f"## The grouped calibration test under perfect calibration ({sets} data sets of {groups} groups × "
             f"{rows} rows, n_sim = {n_sim})", "",
             "| weights | data sets with any adjusted p ≤ 0.05 | 95% interval | groups with raw p ≤ 0.05 |",
             "|---|---|---|---|"]
    for kind in WEIGHTINGS:
        any_rejected, raw = 0, 0
        for s in range(sets):
            n = groups * rows
            f, y = draw("calibrated", n, s)  # the data sets of bench/size.py's size study
            w = weights(kind, n, s)
            g = np.repeat(np.arange(groups), rows)
            r = smoothece.smece_by_group(f, y, g, weights=w, test=True, n_sim=n_sim, seed=s * groups)
            any_rejected += bool(np.any(r.p_adjusted <= 0.05))
            raw += int(np.sum(r.p_value <= 0.05))
        lo, hi = wilson(any_rejected, sets)
        lines.append(f"| {kind} | {100 * any_rejected / sets:.1f}% ({any_rejected} of {sets}) | {100 * lo:.1f}% – "
                     f"{100 * hi:.1f}% | {100 * raw / (sets * groups):.1f}% |")
    return lines + ["", "Target: at most 5% of the data sets (the tests' level).", ""]


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=float, default=1e7)
    parser.add_argument("--groups", type=float, default=1e4)
    parser.add_argument("--sets", type=int, default=200, help="data sets of the family-wise study")
    parser.add_argument("--out", default=os.path.join(HERE, "groups.md"))
    args = parser.parse_args()
    n, k = int(args.n), int(args.groups)
    rng = np.random.default_rng(20261130)
    f = rng.beta(2, 2, n)
    y = rng.random(n) < f
    g = rng.permutation(np.arange(n) % k)
    lines = ["# Calibration per group and compact sketches", "",
             f"Command: `python bench/groups.py --n {args.n:g} --groups {args.groups:g}` · "
             f"load average {os.getloadavg()[0]:.2f} at start · {os.cpu_count()} CPUs", ""]

    t_one = best(lambda: smoothece.smece(f, y), 5)
    before = peak_mb()
    t_grouped = best(lambda: smoothece.smece_by_group(f, y, g))
    growth = peak_mb() - before

    def sorted_loop():
        order = np.argsort(g, kind="stable")
        fs, ys, gs = f[order], y[order], g[order]
        bounds = np.searchsorted(gs, np.arange(k + 1))
        for i in range(k):
            smoothece.smece(fs[bounds[i]:bounds[i + 1]], ys[bounds[i]:bounds[i + 1]])

    def mask_loop(groups=100):
        for i in range(groups):
            rows = g == i
            smoothece.smece(f[rows], y[rows])

    t_sorted = best(sorted_loop, 1)
    t_mask = best(mask_loop, 1) * k / 100
    lines += [f"## `smece_by_group`: {n:,} rows, {k:,} groups", "",
              "| call | time | ratio |", "|---|---|---|",
              f"| `smece` on all rows | {t_one * 1e3:.0f} ms | 1 |",
              f"| `smece_by_group` | {t_grouped * 1e3:.0f} ms | {t_grouped / t_one:.1f}× `smece` |",
              f"| loop of `smece` over sorted slices (sort included) | {t_sorted:.2f} s | {t_sorted / t_grouped:.1f}× `smece_by_group` |",
              f"| loop of `smece(f[g == key], y[g == key])` (est. from 100 groups) | {t_mask:.0f} s | "
              f"{t_mask / t_grouped:.0f}× `smece_by_group` |", "",
              f"Peak memory growth of `smece_by_group`: {growth:.0f} MB.", ""]

    grouped = smoothece.GroupedSketch()
    t = time.perf_counter()
    for part in np.array_split(np.arange(n), 5):
        grouped.update(f[part], y[part], g[part])
    t_update = time.perf_counter() - t
    single = smoothece.CalibrationSketch()
    t = time.perf_counter()
    for part in np.array_split(np.arange(n), 5):
        single.update(f[part], y[part])
    t_single = time.perf_counter() - t
    t_total = best(grouped.total, 1)
    t_answer = best(grouped.smece_by_group, 1)
    lines += ["## `GroupedSketch`", "",
              f"- `update` in 5 batches: {t_update / n * 1e9:.0f} ns a row, against {t_single / n * 1e9:.0f} ns "
              f"for one `CalibrationSketch` ({t_update / t_single:.0f}×).",
              f"- `total()`: {t_total:.2f} s; `smece_by_group()` from the sketches: {t_answer:.2f} s.", ""]

    lines += family_wise(args.sets)
    lines += ["## Sketch bytes (`len(CalibrationSketch().update(f, y).to_bytes())`)", "",
              "| rows | Beta(2,2) predictions | form | 11 discrete forecasts | form |", "|---|---|---|---|---|"]
    for rows in [10**3, 10**4, 10**5, 10**6, 10**7]:
        fb = rng.beta(2, 2, rows)
        sb = smoothece.CalibrationSketch().update(fb, rng.random(rows) < fb)
        fd = rng.integers(0, 11, rows) / 10
        sd = smoothece.CalibrationSketch().update(fd, rng.random(rows) < fd)
        form = lambda s: "atoms" if s.exact else "grid"  # noqa: E731
        lines.append(f"| {rows:,} | {len(sb.to_bytes()):,} | {form(sb)} | {len(sd.to_bytes()):,} | {form(sd)} |")
    lines.append("")
    text = "\n".join(lines)
    print(text)
    with open(args.out, "w", encoding="utf-8") as fh:
        fh.write(text + "\n")


if __name__ == "__main__":
    main()
