"""Every claim the README makes about relplot, re-measured on today's code.

    python bench/peers.py [--out bench/peers.md]

Needs the bench extras (relplot 1.0.3, scipy). Prints a Markdown report and
writes it to --out; the README quotes it. Speed is in bench/run.py.
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
import relplot  # noqa: E402
from exact import exact_smece  # noqa: E402

import smoothece  # noqa: E402
from smoothece import datasets  # noqa: E402


def quiet(fn, *args, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # relplot's own deprecation warnings
        return fn(*args, **kwargs)


def theirs(f, y):
    return float(quiet(relplot.smECE, np.asarray(f, dtype=float), np.asarray(y, dtype=float)))


def accuracy(lines):
    lines += ["## SmoothECE against the exact fixpoint (solar-flare forecasts)", "",
              "| data | n | exact (tests/exact.py) | smoothece | error | relplot.smECE | error |", "|---|---|---|---|---|---|---|"]
    solar = datasets.solar_flares()
    for name in ["ASSA", "NJIT", "DAFFS", "NOAA"]:
        d = solar[name]
        f, y = d.f, d.y
        exact = exact_smece(f, y)
        ours, rel = smoothece.smece(f, y), theirs(f, y)
        lines.append(f"| solar {name} | {f.size} | {exact:.6f} | {ours:.6f} | {abs(ours - exact):.1e} | "
                     f"{rel:.6f} | {abs(rel - exact):.1e} |")
    assa = solar["ASSA"]
    at_ends = (assa.f == 0) | (assa.f == 1)
    half = np.where(at_ends, 0.5, 1.0)
    lines += ["", f"ASSA has {int(at_ends.sum())} forecasts at exactly 0 or 1. Halving their weights in smoothece "
              f"(relplot's wrap drops the mirror image of an end point): {smoothece.smece(assa.f, assa.y, weights=half):.6f} "
              f"vs relplot's {theirs(assa.f, assa.y):.6f}.", ""]


def bad_input(lines):
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
            rel = f"{theirs(ff, yy):.4g}, no warning"
        except Exception as err:  # noqa: BLE001 - reported as measured
            rel = f"{type(err).__name__}"
        try:
            ours = f"{smoothece.smece(ff, yy):.4g}"
        except Exception as err:  # noqa: BLE001
            ours = f"{type(err).__name__}: {str(err).splitlines()[0][:90]}"
        lines.append(f"| {label} | {rel} | {ours} |")
    lines.append("")


def style_and_api(lines):
    before = dict(plt.rcParams)
    rng = np.random.default_rng(1)
    f = rng.beta(2, 2, 2000)
    y = rng.uniform(size=f.size) < f
    quiet(relplot.rel_diagram, f, y.astype(float))
    plt.close("all")
    changed = sorted(k for k, v in plt.rcParams.items() if before.get(k) != v)
    plt.rcParams.update(before)
    ours_before = dict(plt.rcParams)
    smoothece.reliability_diagram(f, y, n_boot=50, seed=0).plot()
    plt.close("all")
    ours_changed = sorted(k for k, v in plt.rcParams.items() if ours_before.get(k) != v)
    params = {name: list(inspect.signature(getattr(relplot, name)).parameters) for name in ["smECE", "rel_diagram"]}
    lines += ["## Plot style and API", "",
              f"- `relplot.rel_diagram` changed {len(changed)} matplotlib rcParams of the session "
              f"(e.g. {', '.join(changed[:6])}); `ReliabilityDiagram.plot` changed {len(ours_changed)}.",
              f"- Parameters: `relplot.smECE{tuple(params['smECE'])}`, `relplot.rel_diagram{tuple(params['rel_diagram'])}`"
              " (no weights, no seed).", ""]
    # Its diagram's interval: scipy.stats.bootstrap on the global generator, so two calls differ.
    a = quiet(relplot.prepare_rel_diagram, f, y.astype(float))["ce_ci_width"]
    b = quiet(relplot.prepare_rel_diagram, f, y.astype(float))["ce_ci_width"]
    lines += [f"- `relplot.prepare_rel_diagram` twice on the same data: interval half-widths {a:.5f} and {b:.5f} "
              f"({'different' if a != b else 'equal'}: no seed).", ""]


def bootstrap_time(lines, n):
    rng = np.random.default_rng(2)
    f = rng.beta(2, 2, n)
    y = (rng.uniform(size=n) < np.clip(f + 0.1 * np.sin(6 * f), 0, 1)).astype(float)
    t0 = time.perf_counter()
    quiet(relplot.prepare_rel_diagram, f, y, num_bootstrap=200)
    rel = time.perf_counter() - t0
    ours = []
    for _ in range(5):  # ours is cheap: the best of five calls (relplot's one call takes seconds)
        t0 = time.perf_counter()
        smoothece.reliability_diagram(f, y, n_boot=200, seed=0)
        ours.append(time.perf_counter() - t0)
    lines += [f"## A diagram with 200 bootstrap replicates at n = {n:,} (wall time, one process)", "",
              f"relplot.prepare_rel_diagram (one call): {rel:.2f} s; smoothece.reliability_diagram (best of 5 calls, "
              f"the first {ours[0]:.3f} s): {min(ours):.3f} s ({rel / min(ours):.0f}× faster).", ""]


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", default=os.path.join(HERE, "peers.md"))
    parser.add_argument("--n", type=int, default=100_000, help="rows of the bootstrap timing")
    args = parser.parse_args()
    lines = ["# relplot claims, re-measured", "",
             f"Command: `python bench/peers.py` · smoothece {smoothece.__version__} · relplot "
             f"{getattr(relplot, '__version__', '1.0.3')} · numpy {np.__version__}", ""]
    accuracy(lines)
    bad_input(lines)
    style_and_api(lines)
    bootstrap_time(lines, args.n)
    text = "\n".join(lines)
    print(text)
    with open(args.out, "w", encoding="utf-8") as fh:
        fh.write(text + "\n")


if __name__ == "__main__":
    main()
