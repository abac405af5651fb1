"""Figure 4 of Błasiok & Nakkiran (ICLR 2024): daily probability forecasts
of a C1.0+ solar flare by the DAFFS method, 2016-2017 (731 days; Leka &
Park 2019, as prepared by Dimitriadis, Gneiting & Jordan 2021).

Left: the binned reliability diagram (15 equal-width bins). Right: the
smoothed reliability diagram at σ*, with its 95% bootstrap band and the
hatched consistency band (where the curve would lie if DAFFS were perfectly
calibrated: the curve leaving it is evidence of miscalibration, not noise).

Run from anywhere:  python examples/figure4_solar_flares.py [--out-dir DIR]
Writes solar_flares_daffs.png into DIR (default: examples/images).
"""

import argparse
import os

from matplotlib.figure import Figure  # a bare Figure: no pyplot, no backend to choose

import smoothece
from smoothece import datasets

IMAGES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "images")


def main(out_dir: str = IMAGES) -> str:
    daffs = datasets.solar_flares()["DAFFS"]
    f, y = daffs.f, daffs.y
    diagram = smoothece.reliability_diagram(f, y, n_boot=1000, seed=0, consistency=True)
    test = smoothece.calibration_test(f, y, n_sim=1000, seed=0)
    binned = smoothece.binned_ece(f, y, n_bins=15)

    fig = Figure(figsize=(9.6, 5.0), layout="constrained")
    ax_binned, ax_smooth = fig.subplots(1, 2)
    smoothece.plot_binned_diagram(f, y, ax=ax_binned, n_bins=15, show_counts=True)
    ax_binned.set_title("Binned (15 equal-width bins; rows per bin at the foot)", fontsize="medium")
    diagram.plot(ax=ax_smooth)
    ax_smooth.set_title(f"Smoothed (σ* = {diagram.sigma:.3f})", fontsize="medium")
    for ax in (ax_binned, ax_smooth):
        ax.set_xlabel("Forecast probability of a C1.0+ flare")
        ax.set_ylabel("Observed frequency")
    fig.suptitle(f"DAFFS solar-flare forecasts, 2016–2017 (n = {f.size} days, "
                 f"flare on {y.mean():.0%} of days)")
    os.makedirs(out_dir, exist_ok=True)
    out = os.path.join(out_dir, "solar_flares_daffs.png")
    fig.savefig(out, dpi=110)

    print(f"DAFFS: n = {f.size}, smECE = {diagram.smece:.4f} "
          f"(95% bootstrap interval {diagram.smece_low:.4f} to {diagram.smece_high:.4f}), "
          f"binned ECE (15 bins) = {binned:.4f}, calibration test p = {test.p_value:.3g} "
          f"(at least 1/{test.n_sim + 1}: {test.n_sim} simulations)")
    print(f"wrote {out}")
    return out


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out-dir", default=IMAGES, help="folder for the PNG (default: %(default)s)")
    main(parser.parse_args().out_dir)
