"""Calibration per group and compact sketches, timed and sized in one process.

    python bench/groups.py [--quick] [--n 1e7] [--groups 1e4] [--sets 200] [--out DIR]

- `smece_by_group` on n rows in K shuffled groups (f ~ Beta(2,2), y ~
  Bernoulli(f)) against `smece` on all rows as one group, against a Python
  loop of `smece` over the groups (rows sorted by group first, then
  contiguous slices) and against the loop most people write (a boolean mask
  per group; timed on 100 groups and scaled), with the peak memory growth;
- `GroupedSketch.update` per row (in 5 batches) against one `CalibrationSketch`
  and against the floor (`f.sum(); y.sum()` over the same batches), and
  `CalibrationSketch.update` streamed in batches of 10^5 rows against the
  floor over those batches; `GroupedSketch.total()` and the grouped answer;
- the grouped calibration test under perfect calibration, with and without
  weights: how often anything is rejected after Benjamini–Hochberg;
- `len(CalibrationSketch.to_bytes())` for Beta(2,2) rows and for discrete
  forecasts.
"""

from __future__ import annotations

import argparse
import resource
import time

import numpy as np

import _record
import smoothece
from coverage import WEIGHTINGS, draw, weights, wilson


def best(fn, repeat=3):
    out = float("inf")
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        out = min(out, time.perf_counter() - t)
    return out


def peak_mb():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def streaming(f, y, batch):
    """``CalibrationSketch.update`` over consecutive batches, against the floor over the same batches."""
    starts = range(0, f.size, batch)

    def stream():
        s = smoothece.CalibrationSketch()
        for i in starts:
            s.update(f[i:i + batch], y[i:i + batch])

    def floor():
        for i in starts:
            f[i:i + batch].sum()
            y[i:i + batch].sum()

    stream()  # warm-up
    return {"batch": batch, "stream_s": best(stream, 5), "floor_s": best(floor, 5),
            "whole_s": best(lambda: smoothece.CalibrationSketch().update(f, y), 5)}


def family_wise(sets, data, groups=10, rows=500, n_sim=500):
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
    data["family_wise"] = {"sets": sets, "groups": groups, "rows": rows, "n_sim": n_sim, "rows_by_weights": []}
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
        data["family_wise"]["rows_by_weights"].append({"weights": kind, "any_adjusted_rejected": any_rejected,
                                                       "ci95": [lo, hi], "raw_rejected": raw})
        lines.append(f"| {kind} | {100 * any_rejected / sets:.1f}% ({any_rejected} of {sets}) | {100 * lo:.1f}% – "
                     f"{100 * hi:.1f}% | {100 * raw / (sets * groups):.1f}% |")
    return lines + ["", "Target: at most 5% of the data sets (the tests' level).", ""]


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    _record.add_options(parser, "smoke run: 1e5 rows in 100 groups, 5 data sets, sketch bytes up to 1e5 rows")
    parser.add_argument("--n", type=float, help="rows (default 1e7; 1e5 with --quick)")
    parser.add_argument("--groups", type=float, help="groups (default 1e4; 100 with --quick)")
    parser.add_argument("--sets", type=int, help="data sets of the family-wise study (default 200; 5 with --quick)")
    args = parser.parse_args(argv)
    for name, full, quick in (("n", 1e7, 1e5), ("groups", 1e4, 100), ("sets", 200, 5)):
        if getattr(args, name) is None:
            setattr(args, name, quick if args.quick else full)
    rec = _record.Record(__file__, args, argv)
    n, k = int(args.n), int(args.groups)
    rng = np.random.default_rng(20261130)
    f = rng.beta(2, 2, n)
    y = rng.random(n) < f
    g = rng.permutation(np.arange(n) % k)
    lines = []
    data = {"config": {"n": n, "groups": k, "sets": args.sets, "quick": args.quick}}

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
    masked = min(100, k)
    t_mask = best(lambda: mask_loop(masked), 1) * k / masked
    data["by_group"] = {"smece_s": t_one, "smece_by_group_s": t_grouped, "sorted_loop_s": t_sorted,
                        "mask_loop_est_s": t_mask, "mask_loop_groups_timed": masked, "peak_growth_mb": growth}
    lines += [f"## `smece_by_group`: {n:,} rows, {k:,} groups", "",
              "| call | time | ratio |", "|---|---|---|",
              f"| `smece` on all rows | {t_one * 1e3:.0f} ms | 1 |",
              f"| `smece_by_group` | {t_grouped * 1e3:.0f} ms | {t_grouped / t_one:.1f}× `smece` |",
              f"| loop of `smece` over sorted slices (sort included) | {t_sorted:.2f} s | "
              f"{t_sorted / t_grouped:.1f}× `smece_by_group` |",
              f"| loop of `smece(f[g == key], y[g == key])` (est. from {masked} groups) | {t_mask:.3g} s | "
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
    stream = streaming(f, y, batch=100_000)
    lines += ["## Sketches", "",
              f"- `GroupedSketch.update` in 5 batches: {t_update / n * 1e9:.0f} ns a row, against "
              f"{t_single / n * 1e9:.0f} ns for one `CalibrationSketch` ({t_update / t_single:.0f}×).",
              f"- `GroupedSketch.total()`: {t_total:.2f} s; `smece_by_group()` from the sketches: {t_answer:.2f} s.",
              f"- `CalibrationSketch.update` streamed in batches of {stream['batch']:,} rows (best of 5): "
              f"{stream['stream_s'] * 1e3:.3g} ms = {n / stream['stream_s'] / 1e6:.0f} M rows/s, "
              f"{stream['stream_s'] / stream['floor_s']:.1f}× the floor over the same batches "
              f"({stream['floor_s'] * 1e3:.3g} ms); one `update` of all rows {stream['whole_s'] * 1e3:.3g} ms; "
              f"`smece` on the arrays {t_one * 1e3:.3g} ms.", ""]
    data["sketches"] = {"grouped_update_s": t_update, "single_update_s": t_single, "grouped_total_s": t_total,
                        "grouped_answer_s": t_answer, "streaming": stream}

    lines += family_wise(args.sets, data)
    lines += ["## Sketch bytes (`len(CalibrationSketch().update(f, y).to_bytes())`)", "",
              "| rows | Beta(2,2) predictions | form | 11 discrete forecasts | form |", "|---|---|---|---|---|"]
    data["sketch_bytes"] = []
    for rows in [r for r in (10**3, 10**4, 10**5, 10**6, 10**7) if r <= max(n, 10**3)]:
        fb = rng.beta(2, 2, rows)
        sb = smoothece.CalibrationSketch().update(fb, rng.random(rows) < fb)
        fd = rng.integers(0, 11, rows) / 10
        sd = smoothece.CalibrationSketch().update(fd, rng.random(rows) < fd)
        form = lambda s: "atoms" if s.exact else "grid"  # noqa: E731
        lines.append(f"| {rows:,} | {len(sb.to_bytes()):,} | {form(sb)} | {len(sd.to_bytes()):,} | {form(sd)} |")
        data["sketch_bytes"].append({"rows": rows, "beta_bytes": len(sb.to_bytes()), "beta_form": form(sb),
                                     "discrete_bytes": len(sd.to_bytes()), "discrete_form": form(sd)})
    lines.append("")
    print("\n".join(lines))
    rec.write("Calibration per group and compact sketches", lines, data)


if __name__ == "__main__":
    main()
