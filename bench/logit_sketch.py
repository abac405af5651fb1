"""The sketches' default grids on calibrated data: resolved up to 10^8 rows, and what they cost.

For n = 10^6, 10^7 and 10^8 calibrated rows (y ~ Bernoulli(f)) of three kinds, f ~ Beta(2, 2),
f ~ U(0, 1) and a segment (f ~ U(0.01, 0.02)), a ``CalibrationSketch`` of each metric at its
default resolution (2^15 intervals on the probability axis, 2^20 on the logit axis) is updated in
batches of 10^6 rows (10^5 for n = 10^6). Reported: whether its grid resolves σ* (``smece()`` without a
``ResolutionWarning``) and how far it lies from ``smoothece.smece`` on the same rows, σ* against the
finest σ the grid resolves (their ratio: above 1 is resolved), the sketch's memory (the blocks its
rows reach) against the full grid's, its bytes, and the update time per row against ``smece`` on the
arrays in the same process (their ratio; times drift on a shared machine, ratios less).

    python bench/logit_sketch.py [--quick] [--sizes 1e6 1e7 1e8] [--out DIR]
"""

from __future__ import annotations

import argparse
import time
import warnings

import numpy as np

import _record
import smoothece
from smoothece import CalibrationSketch, ResolutionWarning

KINDS = {"Beta(2, 2)": lambda rng, n: rng.beta(2, 2, n), "U(0, 1)": lambda rng, n: rng.random(n),
         "segment U(0.01, 0.02)": lambda rng, n: rng.uniform(0.01, 0.02, n)}


def case(kind: str, n: int, metric: str) -> dict:
    rng = np.random.default_rng([20251205, n, list(KINDS).index(kind)])
    f = KINDS[kind](rng, n)
    y = rng.random(n) < f
    start = time.perf_counter()
    exact = smoothece.smece(f, y, metric=metric)
    arrays_s = time.perf_counter() - start
    sketch = CalibrationSketch(metric=metric)
    batch = 100_000 if n <= 1_000_000 else 1_000_000
    start = time.perf_counter()
    for begin in range(0, n, batch):
        sketch.update(f[begin:begin + batch], y[begin:begin + batch])
    update_s = time.perf_counter() - start
    with warnings.catch_warnings():
        warnings.simplefilter("error", ResolutionWarning)
        try:
            value, resolved = sketch.smece(), True
        except ResolutionWarning:
            resolved = False
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", ResolutionWarning)
                value = sketch.smece()
    return {"kind": kind, "n": n, "metric": metric, "resolution": sketch.resolution, "exact_form": sketch.exact,
            "resolved": resolved, "smece_sketch": value, "smece_arrays": exact, "abs_diff": abs(value - exact),
            "min_sigma": sketch.min_sigma, "sigma_over_min": exact / sketch.min_sigma,
            "memory_bytes": sketch._sketch.memory_bytes, "full_grid_bytes": 56 * sketch.resolution,
            "to_bytes": len(sketch.to_bytes()), "update_s": update_s, "arrays_smece_s": arrays_s,
            "update_over_smece": update_s / arrays_s}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", nargs="+", type=float, default=[1e6, 1e7, 1e8])
    _record.add_options(ap, "n = 6e5 of Beta(2, 2) only")
    args = ap.parse_args()
    rec = _record.Record(__file__, args)
    sizes = [600_000] if args.quick else [int(s) for s in args.sizes]
    rows, results = [], []
    for n in sizes:
        for kind in list(KINDS)[:1] if args.quick else KINDS:
            for metric in ("l1", "logit"):
                r = case(kind, n, metric)
                results.append(r)
                print(f"{kind:<22} n={n:.0e} {metric:<5} resolved={r['resolved']} σ*/min σ={r['sigma_over_min']:.2f} "
                      f"|Δ|={r['abs_diff']:.1e} memory {r['memory_bytes'] / 1e6:.1f} MB", flush=True)
                rows.append(f"| {kind} | {n:.0e} | {metric} | 2^{int(np.log2(r['resolution']))} | "
                            f"{'atoms' if r['exact_form'] else 'grid'} | {'yes' if r['resolved'] else '**no**'} | "
                            f"{r['sigma_over_min']:.2f} | {r['abs_diff']:.1e} | {r['memory_bytes'] / 1e6:.1f} / "
                            f"{r['full_grid_bytes'] / 1e6:.1f} | {r['to_bytes'] / 1e6:.2f} | "
                            f"{r['update_over_smece']:.2f} |")
    body = [__doc__.split("\n\n")[1].replace("\n", " "), "",
            "| data | n | metric | resolution | form | resolved | σ* / finest σ | \\|sketch − arrays\\| | "
            "memory / full grid (MB) | bytes (MB) | update / `smece` (time) |",
            "|---|---|---|---|---|---|---|---|---|---|---|", *rows]
    rec.write("The sketches' default grids on calibrated data", body, results)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
