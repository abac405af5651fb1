"""Every claim the README makes about relplot, re-measured on the code as it stands.

    python bench/peers.py [--quick] [--n 100000] [--out DIR]

Needs the bench extras (relplot 1.0.3, scipy); without relplot its columns
say "relplot not installed" and only our side is measured. Prints a Markdown
report and writes bench/results/peers.{md,json}; the README quotes it. Speed
is in bench/speed.py.
"""

from __future__ import annotations

import argparse
import inspect
import os
import sys
import time
import warnings

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests"))  # the exact evaluator of the tests

import matplotlib  # noqa: E402

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from exact import exact_smece  # noqa: E402

import _record  # noqa: E402
import smoothece  # noqa: E402
from smoothece import datasets  # noqa: E402

try:
    import relplot
except ImportError:  # measured without it: every relplot cell says so
    relplot = None
MISSING = "relplot not installed"
QUICK_SKIP = "not run by --quick (each of its diagrams runs a 100-resample scipy bootstrap of smECE: seconds)"


def quiet(fn, *args, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # relplot's own deprecation warnings
        return fn(*args, **kwargs)


def theirs(f, y):
    return float(quiet(relplot.smECE, np.asarray(f, dtype=float), np.asarray(y, dtype=float)))


def accuracy(lines, data, names):
    lines += ["## SmoothECE against the exact fixpoint (solar-flare forecasts)", "",
              "| data | n | exact (tests/exact.py) | smoothece | error | relplot.smECE | error |",
              "|---|---|---|---|---|---|---|"]
    solar = datasets.solar_flares()
    for name in names:
        d = solar[name]
        f, y = d.f, d.y
        exact = exact_smece(f, y)
        ours, rel = smoothece.smece(f, y), (theirs(f, y) if relplot else None)
        their_cells = f"{rel:.6f} | {abs(rel - exact):.1e}" if relplot else f"{MISSING} | –"
        lines.append(f"| solar {name} | {f.size} | {exact:.6f} | {ours:.6f} | {abs(ours - exact):.1e} | "
                     f"{their_cells} |")
        data["accuracy"].append({"data": f"solar {name}", "n": int(f.size), "exact": exact, "smoothece": ours,
                                 "relplot": rel})
    assa = solar["ASSA"]
    at_ends = (assa.f == 0) | (assa.f == 1)
    half = np.where(at_ends, 0.5, 1.0)
    halved = smoothece.smece(assa.f, assa.y, weights=half)
    rel = f"{theirs(assa.f, assa.y):.6f}" if relplot else f"– ({MISSING})"
    lines += ["", f"ASSA has {int(at_ends.sum())} forecasts at exactly 0 or 1. Halving their weights in smoothece "
              f"(relplot's wrap drops the mirror image of an end point): {halved:.6f} vs relplot's {rel}.", ""]
    data["assa_ends_halved"] = halved


def logit_metric(lines, data):
    """relplot's logit kernel against ours: its σ is a quarter of ours, and its SmoothECE another fixpoint."""
    rng = np.random.default_rng(5)
    z = rng.normal(0.0, 1.0, 5000)
    f = 1.0 / (1.0 + np.exp(-z))
    y = (rng.uniform(size=z.size) < 1.0 / (1.0 + np.exp(-3.0 * z))).astype(float)
    lines += ["## The logit metric: relplot's σ is a quarter of ours", "",
              "Over-confident logits (z ~ N(0, 1), f = expit(z), P(y = 1) = expit(3z), n = 5000). relplot with "
              "`config.use_logit_scaling = True` smooths with σ·4/R on logits rescaled by their range R: a "
              "Gaussian of 4σ logit units, where `metric=\"logit\"` has σ.", "",
              "| σ | relplot logit smECEσ | smoothece at 4σ | smoothece at σ |", "|---|---|---|---|"]
    sigmas = (0.01, 0.03, 0.1)
    theirs_at, fixpoint, width = {}, None, None
    if relplot is not None:
        relplot.config.use_logit_scaling = True
        try:
            theirs_at = {s: float(quiet(relplot.smECE_sigma, f, y, s)) for s in sigmas}
            fixpoint, width = quiet(relplot.smECE, f, y, return_width=True)
        finally:
            relplot.config.use_logit_scaling = False
    rows = []
    for s in sigmas:
        at4, at1 = smoothece.smece_sigma(f, y, 4 * s, metric="logit"), smoothece.smece_sigma(f, y, s, metric="logit")
        their = f"{theirs_at[s]:.6f}" if s in theirs_at else MISSING
        lines.append(f"| {s} | {their} | {at4:.6f} | {at1:.6f} |")
        rows.append({"sigma": s, "relplot": theirs_at.get(s), "smoothece_4sigma": at4, "smoothece_sigma": at1})
    ours = smoothece.smece(f, y, metric="logit")
    if fixpoint is not None:
        at_width = smoothece.smece_sigma(f, y, 4 * width, metric="logit")
        lines += ["", f"SmoothECE: relplot {fixpoint:.6f} (its bisection's σ = {width}, the fixpoint of "
                  f"σ ↦ smECE at 4σ; smoothece at 4·{width}: {at_width:.6f}); smoothece's σ* (the fixpoint of "
                  f"σ ↦ smECEσ): {ours:.6f}.", ""]
    else:
        lines += ["", f"SmoothECE: relplot {MISSING}; smoothece's σ*: {ours:.6f}.", ""]
    data["logit_metric"] = {"at_sigma": rows, "relplot_smece": None if fixpoint is None else float(fixpoint),
                            "relplot_width": width, "smoothece_smece": ours}


def bad_input(lines, data):
    rng = np.random.default_rng(0)
    f = rng.uniform(size=200)
    y = (rng.uniform(size=200) < f).astype(float)
    lines += ["## Bad input", "", "| input | relplot.smECE | smoothece.smece |", "|---|---|---|"]
    cases = [
        ("f[0] = 3.0", lambda: (np.r_[3.0, f[1:]], y)),
        ("f in percent (f × 100)", lambda: (f * 100, y)),
        ("f[0] = NaN", lambda: (np.r_[np.nan, f[1:]], y)),
        ("y in {−1, +1}", lambda: (f, 2 * y - 1)),
        ("f and y swapped", lambda: (y, f)),
    ]
    for label, make in cases:
        ff, yy = make()
        try:
            rel = f"{theirs(ff, yy):.4g}, no warning" if relplot else MISSING
        except Exception as err:  # noqa: BLE001 - reported as measured
            rel = f"{type(err).__name__}"
        try:
            ours = f"{smoothece.smece(ff, yy):.4g}"
        except Exception as err:  # noqa: BLE001
            ours = f"{type(err).__name__}: {str(err).splitlines()[0][:90]}"
        lines.append(f"| {label} | {rel} | {ours} |")
        data["bad_input"].append({"input": label, "relplot": rel, "smoothece": ours})
    lines.append("")


def style_and_api(lines, data, rows, their_diagrams):
    """rcParams changed by a diagram of each, relplot's parameters, its unseeded interval (``their_diagrams``:
    whether to call relplot's diagram functions, which take seconds each)."""
    rng = np.random.default_rng(1)
    f = rng.beta(2, 2, rows)
    y = rng.uniform(size=f.size) < f
    ours_before = dict(plt.rcParams)
    smoothece.reliability_diagram(f, y, n_boot=50, seed=0).plot()
    plt.close("all")
    ours_changed = sorted(k for k, v in plt.rcParams.items() if ours_before.get(k) != v)
    data["rcparams_changed"] = {"smoothece": ours_changed}
    if relplot is None or not their_diagrams:
        why = MISSING if relplot is None else QUICK_SKIP
        lines += ["## Plot style and API", "", f"- `ReliabilityDiagram.plot` changed {len(ours_changed)} matplotlib "
                  f"rcParams of the session; relplot: {why}.", ""]
        return
    before = dict(plt.rcParams)
    quiet(relplot.rel_diagram, f, y.astype(float))
    plt.close("all")
    changed = sorted(k for k, v in plt.rcParams.items() if before.get(k) != v)
    plt.rcParams.update(before)
    data["rcparams_changed"]["relplot"] = changed
    params = {name: list(inspect.signature(getattr(relplot, name)).parameters) for name in ["smECE", "rel_diagram"]}
    lines += ["## Plot style and API", "",
              f"- `relplot.rel_diagram` changed {len(changed)} matplotlib rcParams of the session "
              f"(e.g. {', '.join(changed[:6])}); `ReliabilityDiagram.plot` changed {len(ours_changed)}.",
              f"- Parameters: `relplot.smECE{tuple(params['smECE'])}`, "
              f"`relplot.rel_diagram{tuple(params['rel_diagram'])}`"
              " (no weights, no seed).", ""]
    # Its diagram's interval: scipy.stats.bootstrap on the global generator, so two calls differ.
    a = quiet(relplot.prepare_rel_diagram, f, y.astype(float))["ce_ci_width"]
    b = quiet(relplot.prepare_rel_diagram, f, y.astype(float))["ce_ci_width"]
    lines += [f"- `relplot.prepare_rel_diagram` twice on the same data: interval half-widths {a:.5f} and {b:.5f} "
              f"({'different' if a != b else 'equal'}: no seed).", ""]
    data["relplot_interval_half_widths"] = [float(a), float(b)]


def bootstrap_time(lines, data, n, boot, their_diagrams):
    rng = np.random.default_rng(2)
    f = rng.beta(2, 2, n)
    y = (rng.uniform(size=n) < np.clip(f + 0.1 * np.sin(6 * f), 0, 1)).astype(float)
    rel = None
    if relplot and their_diagrams:
        t0 = time.perf_counter()
        quiet(relplot.prepare_rel_diagram, f, y, num_bootstrap=boot)
        rel = time.perf_counter() - t0
    ours = []
    for _ in range(5):  # ours is cheap: the best of five calls (relplot's one call takes seconds)
        t0 = time.perf_counter()
        smoothece.reliability_diagram(f, y, n_boot=boot, seed=0)
        ours.append(time.perf_counter() - t0)
    their = (f"relplot.prepare_rel_diagram (one call): {rel:.2f} s" if rel is not None
             else f"relplot.prepare_rel_diagram: {MISSING if relplot is None else QUICK_SKIP}")
    speedup = f" ({rel / min(ours):.0f}× faster)" if rel is not None else ""
    lines += [f"## A diagram with {boot} bootstrap replicates at n = {n:,} (wall time, one process)", "",
              f"{their}; smoothece.reliability_diagram (best of 5 calls, "
              f"the first {ours[0]:.3f} s): {min(ours):.3f} s{speedup}.", ""]
    data["diagram_timing"] = {"n": n, "replicates": boot, "relplot_s": rel, "smoothece_best_s": min(ours),
                              "smoothece_s": ours}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    _record.add_options(parser, "smoke run: relplot's diagrams left out (seconds each), no DAFFS (its exact value "
                                "takes seconds), our diagram timed at n = 2000 with 10 replicates")
    parser.add_argument("--n", type=int, help="rows of the bootstrap timing (default 100000; 2000 with --quick)")
    args = parser.parse_args(argv)
    n = args.n or (2000 if args.quick else 100_000)
    rec = _record.Record(__file__, args, argv, packages=("numpy", "smoothece", "relplot", "scipy", "matplotlib"))
    lines = []
    if relplot is None:
        lines += [f"**{MISSING}** (`pip install relplot==1.0.3`): its columns are left out; only smoothece's side "
                  "is measured.", ""]
        print(MISSING + ": only smoothece's side is measured", flush=True)
    lines += ["relplot's numbers are those of its default kernel, the reflected Gaussian on [0, 1] of "
              "`metric=\"l1\"`. Its logit kernel is not `metric=\"logit\"`: its σ is a quarter of ours (its "
              "smECEσ is ours at 4σ) and its SmoothECE is the fixpoint of σ ↦ smECE at 4σ, so logit values of the "
              "two packages differ (last section).", ""]
    data = {"relplot_installed": relplot is not None, "accuracy": [], "bad_input": []}
    accuracy(lines, data, ["ASSA", "NJIT", "NOAA"] if args.quick else ["ASSA", "NJIT", "DAFFS", "NOAA"])
    bad_input(lines, data)
    style_and_api(lines, data, 500 if args.quick else 2000, not args.quick)
    bootstrap_time(lines, data, n, 10 if args.quick else 200, not args.quick)
    logit_metric(lines, data)
    print("\n".join(lines))
    rec.write("relplot claims, re-measured", lines, data)


if __name__ == "__main__":
    main()
