"""Binned ECE at 10^7 rows: smoothece.measures against torchmetrics (CPU) and netcal.

One process, the same data for every library. Reports times (median of a
few runs), their ratios, the numeric agreement, the rule for f = 1.0 on
which torchmetrics differs, and our other measures' times at the same size.
Writes bench/results/measures.{md,json} and prints the report.

    python bench/measures.py [--quick] [--n 10000000] [--repeat 3] [--out DIR]

torch (CPU), torchmetrics and netcal are optional: a missing one is reported
and skipped.
"""

from __future__ import annotations

import argparse
import time

import numpy as np

import _record
from smoothece import measures as M

QUICK_SKIP = "not run by --quick (importing torch takes seconds)"


def timed(fn, repeat):
    """(median seconds, last result) over ``repeat`` runs after one warm-up run."""
    out = fn()
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t0)
    return float(np.median(times)), out


def exact_l1_ece(f, y, n_bins):
    """High-precision reference: bins by our rule, sums with math.fsum-like care (float64, pairwise)."""
    idx = np.minimum((f.astype(np.float64) * n_bins).astype(np.intp), n_bins - 1)
    r = y.astype(np.float64) - f.astype(np.float64)
    sums = np.array([np.sum(r[idx == b]) for b in range(n_bins)])  # numpy's pairwise summation
    return float(np.abs(sums).sum() / f.size)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    _record.add_options(parser, "smoke run: n = 10^4, one timed run each, torchmetrics left out")
    parser.add_argument("--n", type=int, help="rows (default 10^7; 10^4 with --quick)")
    parser.add_argument("--repeat", type=int, help="timed runs after the warm-up (default 3; 1 with --quick)")
    args = parser.parse_args(argv)
    n = args.n or (10_000 if args.quick else 10_000_000)
    repeat = args.repeat or (1 if args.quick else 3)
    n_bins = 15
    rec = _record.Record(__file__, args, argv, packages=("numpy", "smoothece", "torch", "torchmetrics", "netcal"))

    rng = np.random.default_rng(0)
    # Confidences as a classifier emits them: float32, skewed toward 1, labels from a miscalibrated truth.
    f32 = rng.beta(5.0, 1.5, size=n).astype(np.float32)
    y8 = (rng.uniform(size=n) < f32.astype(np.float64) ** 1.3).astype(np.int8)
    f64 = f32.astype(np.float64)
    lines = [
        f"n = {n:,}, {n_bins} equal-width bins, L1 norm, median of {repeat} runs after a warm-up.",
        "Data: f ~ Beta(5, 1.5) as float32, y ~ Bernoulli(f^1.3) as int8; every library gets the same arrays.",
        "",
    ]

    reference = exact_l1_ece(f32, y8, n_bins)
    rows = []
    t_ours32, ours32 = timed(lambda: M.binned_ece(f32, y8, n_bins=n_bins), repeat)
    rows.append(("smoothece `binned_ece` (float32 f, int8 y)", t_ours32, ours32))
    t_ours64, ours64 = timed(lambda: M.binned_ece(f64, y8, n_bins=n_bins), repeat)
    rows.append(("smoothece `binned_ece` (float64 f)", t_ours64, ours64))
    notes = []

    try:
        if args.quick:
            raise ImportError(QUICK_SKIP)
        import torch
        from torchmetrics.classification import BinaryCalibrationError
        from torchmetrics.functional.classification import binary_calibration_error
        import torchmetrics

        tf32, tf64, ty = torch.from_numpy(f32), torch.from_numpy(f64), torch.from_numpy(y8.astype(np.int64))

        def tm_class(preds):
            metric = BinaryCalibrationError(n_bins=n_bins, norm="l1")
            metric.update(preds, ty)
            return float(metric.compute())

        t, v = timed(lambda: tm_class(tf32), repeat)
        rows.append((f"torchmetrics {torchmetrics.__version__} `BinaryCalibrationError` (float32 tensor)", t, v))
        t_tm = t
        t, v = timed(lambda: tm_class(tf64), repeat)
        rows.append(("torchmetrics `BinaryCalibrationError` (float64 tensor)", t, v))
        t, v = timed(lambda: float(binary_calibration_error(tf32, ty, n_bins=n_bins, norm="l1")), repeat)
        rows.append(("torchmetrics functional `binary_calibration_error` (float32)", t, v))
        notes.append(f"torch {torch.__version__} on the CPU with {torch.get_num_threads()} threads.")
    except ImportError as err:
        t_tm = None
        notes.append(f"torchmetrics/torch: {err}." if args.quick
                     else f"torchmetrics/torch not installed ({err}); skipped.")

    try:
        import netcal
        from netcal.metrics import ECE

        t, v = timed(lambda: float(ECE(bins=n_bins).measure(f64, y8.astype(np.int64))), repeat)
        rows.append((f"netcal {netcal.__version__} `ECE(bins=15).measure` (float64)", t, v))
        t_nc = t
    except ImportError as err:
        t_nc = None
        notes.append(f"netcal not installed ({err}); skipped.")

    lines += [
        "| implementation | time (s) | time / smoothece (float32) | value | − reference |",
        "|---|---:|---:|---:|---:|",
    ]
    for name, t, v in rows:
        lines.append(f"| {name} | {t:.3f} | {t / t_ours32:.1f}× | {v:.10f} | {v - reference:+.2e} |")
    lines += [
        "",
        f"Reference {reference:.12f}: the same bins, residuals summed per bin in float64 with numpy's pairwise "
        "summation.",
    ]
    lines += [""] + [f"- {x}" for x in notes]
    if t_tm is not None:
        lines.append(f"- smoothece is {t_tm / t_ours32:.1f}× faster than torchmetrics' metric class on float32 input.")
    if t_nc is not None:
        lines.append(f"- smoothece is {t_nc / t_ours64:.1f}× faster than netcal on float64 input.")

    # Where f = 1.0 goes.
    f1 = np.array([0.05, 0.15, 0.25, 0.95, 1.0])
    y1 = np.array([0, 0, 1, 1, 0])
    ours1 = M.binned_ece(f1, y1, n_bins=10)
    lines += ["", "## Predictions at exactly 1.0", "",
              "f = [0.05, 0.15, 0.25, 0.95, 1.0], y = [0, 0, 1, 1, 0], 10 bins. Bin index "
              "min(floor(f·10), 9) puts 1.0 in the last bin with 0.95: "
              "(0.05 + 0.15 + 0.75 + 2·|0.5 − 0.975|)/5 = 0.38. An extra bin for 1.0 alone gives "
              "(0.05 + 0.15 + 0.75 + 0.05 + 1.0)/5 = 0.40.", "",
              "| implementation | value |", "|---|---:|", f"| smoothece | {ours1:.6f} |"]
    try:
        if args.quick:
            raise ImportError(QUICK_SKIP)
        import torch
        from torchmetrics.classification import BinaryCalibrationError

        metric = BinaryCalibrationError(n_bins=10, norm="l1")
        metric.update(torch.tensor(f1), torch.tensor(y1))
        lines.append(f"| torchmetrics | {float(metric.compute()):.6f} |")
    except ImportError:
        pass
    try:
        from netcal.metrics import ECE

        lines.append(f"| netcal | {float(ECE(bins=10).measure(f1, y1)):.6f} |")
    except ImportError:
        pass
    # The same at scale. The two rules differ only when the rows at 1.0 and the rest of the last
    # bin miss in opposite directions (|a| + |b| ≠ |a + b|): rows in [14/15, 1) labelled 1
    # (under-confident), and every 100th row set to f = 1.0 with y ~ Bernoulli(0.9) (over-confident).
    fs, ys = f32.copy(), y8.copy()
    ys[fs >= np.float32(14 / 15)] = 1
    fs[::100] = 1.0
    ys[::100] = rng.uniform(size=ys[::100].size) < 0.9
    ours_scale = M.binned_ece(fs, ys, n_bins=n_bins)
    text = (f"At n = {n:,}, rows with f in [14/15, 1) labelled 1 and every 100th row set to f = 1.0 with "
            f"y ~ Bernoulli(0.9): smoothece {ours_scale:.6f} (reference by the same rule "
            f"{exact_l1_ece(fs, ys, n_bins):.6f})")
    try:
        if args.quick:
            raise ImportError(QUICK_SKIP)
        import torch
        from torchmetrics.classification import BinaryCalibrationError

        metric = BinaryCalibrationError(n_bins=n_bins, norm="l1")
        metric.update(torch.from_numpy(fs), torch.from_numpy(ys.astype(np.int64)))
        tm_scale = float(metric.compute())
        text += f", torchmetrics {tm_scale:.6f} (difference {tm_scale - ours_scale:+.2e})"
    except ImportError:
        pass
    lines += ["", text + "."]

    # Our other measures at the same size.
    lines += ["", f"## Other smoothece measures at n = {n:,} (float32 f, one run each)", "",
              "| call | time (s) | value |", "|---|---:|---|"]
    calls = [
        ("binned_ece(strategy='quantile')", lambda: M.binned_ece(f32, y8, strategy="quantile")),
        ("binned_calibration()", lambda: M.binned_calibration(f32, y8).ece("l2")),
        ("debiased_ece()", lambda: M.debiased_ece(f32, y8)),
        ("brier_decomposition()", lambda: M.brier_decomposition(f32, y8).reliability),
        ("brier_decomposition(smooth=True)", lambda: M.brier_decomposition(f32, y8, smooth=True).reliability),
        ("laplace_kernel_ce(bandwidth=1.0)", lambda: M.laplace_kernel_ce(f32, y8)),
        ("laplace_kernel_ce(bandwidth=1e-4)", lambda: M.laplace_kernel_ce(f32, y8, bandwidth=1e-4)),
        ("interval_ce_random(seed=0)", lambda: M.interval_ce_random(f32, y8, seed=0)),
    ]
    others = []
    for name, fn in calls:
        t0 = time.perf_counter()
        v = fn()
        others.append({"call": name, "seconds": time.perf_counter() - t0, "value": float(v)})
        lines.append(f"| `{name}` | {others[-1]['seconds']:.3f} | {v:.6g} |")

    print("\n".join(lines))
    rec.write("Binned ECE at scale: smoothece vs torchmetrics and netcal", lines,
              {"n": n, "n_bins": n_bins, "repeat": repeat, "reference": reference,
               "binned_ece": [{"implementation": name, "seconds": t, "value": v} for name, t, v in rows],
               "notes": notes, "at_one": {"smoothece": float(ours1)}, "scale_rule": text,
               "other_measures": others})


if __name__ == "__main__":
    main()
