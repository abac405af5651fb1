"""Figure 3 of Błasiok & Nakkiran (ICLR 2024): confidence calibration of a
ResNet-34 on the ImageNet validation set (50,000 images).

The prediction is the top-class probability ("confidence"), the outcome is
whether the top class is the true label. Left: the classic binned
reliability diagram (15 equal-width bins). Right: the smoothed reliability
diagram at the SmoothECE bandwidth σ*, with its 95% bootstrap band; the
curve is thick where many predictions lie and thin where few do, and the
tick marks along the top (correct) and bottom (wrong) edges are a sample of
the predictions.

Run from anywhere:  python examples/figure3_imagenet.py [--out-dir DIR]
Writes imagenet_resnet34.png into DIR (default: examples/images).
"""

import argparse
import os

from matplotlib.figure import Figure  # a bare Figure: no pyplot, no backend to choose

import smoothece
from smoothece import datasets

IMAGES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "images")


def main(out_dir: str = IMAGES) -> str:
    data = datasets.imagenet_resnet34()
    f, y = data.f, data.y
    diagram = smoothece.reliability_diagram(f, y, n_boot=1000, seed=0)
    binned = smoothece.binned_ece(f, y, n_bins=15)

    fig = Figure(figsize=(9.6, 5.0), layout="constrained")
    ax_binned, ax_smooth = fig.subplots(1, 2)
    smoothece.plot_binned_diagram(f, y, ax=ax_binned, n_bins=15)
    ax_binned.set_title("Binned (15 equal-width bins)", fontsize="medium")
    diagram.plot(ax=ax_smooth)
    ax_smooth.set_title(f"Smoothed (σ* = {diagram.sigma:.3f})", fontsize="medium")
    for ax in (ax_binned, ax_smooth):
        ax.set_xlabel("Confidence (top-class probability)")
        ax.set_ylabel("Accuracy")
    fig.suptitle(f"ResNet-34 on ImageNet validation: confidence calibration (n = {f.size:,}, "
                 f"accuracy {y.mean():.1%})")
    os.makedirs(out_dir, exist_ok=True)
    out = os.path.join(out_dir, "imagenet_resnet34.png")
    fig.savefig(out, dpi=110)

    print(f"ResNet-34 / ImageNet: n = {f.size:,}, accuracy = {y.mean():.4f}, mean confidence = {f.mean():.4f}")
    print(f"smECE = {diagram.smece:.4f} (95% bootstrap interval {diagram.smece_low:.4f} to {diagram.smece_high:.4f}), "
          f"sigma* = {diagram.sigma:.4f}")
    print(f"binned ECE (15 bins) = {binned:.4f}")
    print(f"wrote {out}")
    return out


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out-dir", default=IMAGES, help="folder for the PNG (default: %(default)s)")
    main(parser.parse_args().out_dir)
