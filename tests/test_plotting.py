"""The plotting layer: what is drawn, on which Axes, without touching global state."""

import copy
import dataclasses
import subprocess
import sys

import matplotlib

matplotlib.use("Agg")

import matplotlib.image as mpimg  # noqa: E402
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402
from conftest import by_gid  # noqa: E402
from matplotlib.collections import LineCollection, PolyCollection  # noqa: E402
from smoothece.measures import binned_calibration  # noqa: E402
from matplotlib.patches import Rectangle  # noqa: E402

import smoothece  # noqa: E402
from smoothece import plotting  # noqa: E402

DPI = 50


@pytest.fixture(scope="module")
def daffs_diagram(solar):
    d = solar["DAFFS"]
    return smoothece.reliability_diagram(d.f, d.y, n_boot=200, consistency=True, n_sim=200, seed=1)


@pytest.fixture(scope="module")
def resnet_diagram(resnet):
    return smoothece.reliability_diagram(resnet.f, resnet.y, n_boot=100, seed=2)


def saved_png(fig, path):
    fig.savefig(path, dpi=DPI)
    assert path.stat().st_size > 0
    img = mpimg.imread(path)
    assert img.ndim == 3 and img.shape[0] > 10 and img.shape[1] > 10
    assert img.std() > 0
    return img


# --- rendering real data -------------------------------------------------------------------------


@pytest.mark.parametrize("which", ["daffs", "resnet"])
def test_renders_png(which, daffs_diagram, resnet_diagram, tmp_path):
    diagram = daffs_diagram if which == "daffs" else resnet_diagram
    ax = smoothece.plotting.plot_diagram(diagram, density_panel=(which == "daffs"))
    saved_png(ax.figure, tmp_path / f"{which}.png")


def test_side_by_side_with_binned(resnet, resnet_diagram, tmp_path):
    fig, (a, b) = plt.subplots(1, 2, figsize=(8, 4), layout="constrained")
    assert plotting.plot_diagram(resnet_diagram, ax=a) is a
    assert smoothece.plot_binned_diagram(resnet.f, resnet.y, ax=b, show_counts=True) is b
    saved_png(fig, tmp_path / "side.png")


# --- the artists ---------------------------------------------------------------------------------


def test_expected_artists(daffs_diagram):
    d = daffs_diagram
    ax = plotting.plot_diagram(d)
    curves = [c for c in ax.collections if isinstance(c, LineCollection) and c.get_gid() == "smoothece-curve"]
    assert len(curves) == 1
    segments = curves[0].get_segments()
    assert len(segments) == d.mesh.size - 1  # no NaN in DAFFS' curve: every segment drawn
    widths = np.asarray(curves[0].get_linewidths())
    assert widths.size == len(segments) and widths.min() > 0 and widths.max() > 3 * widths.min()
    # thickest where the predictions are densest
    mid = 0.5 * (d.density[:-1] + d.density[1:])
    assert np.argmax(widths) == np.argmax(mid)

    band = by_gid(ax.collections, "smoothece-band")
    assert len(band) == 1 and isinstance(band[0], PolyCollection)
    cons = by_gid(ax.collections, "smoothece-consistency")
    assert len(cons) == 1 and isinstance(cons[0], PolyCollection)
    assert cons[0].get_label() == "consistency band"

    diag = by_gid(ax.lines, "smoothece-diagonal")
    assert len(diag) == 1
    np.testing.assert_array_equal(diag[0].get_xdata(), [0, 1])
    np.testing.assert_array_equal(diag[0].get_ydata(), [0, 1])
    assert diag[0].get_linestyle() == "--"

    pos = by_gid(ax.collections, "smoothece-ticks-positive")
    neg = by_gid(ax.collections, "smoothece-ticks-negative")
    assert len(pos) == 1 and len(neg) == 1
    assert len(pos[0].get_segments()) == int(np.sum(d.sample_y == 1))
    assert len(neg[0].get_segments()) == int(np.sum(d.sample_y == 0))

    texts = [t.get_text() for t in ax.texts]
    # DAFFS' interval is skewed (0.047 below, 0.087 above at 3 digits would be wrong): shown as is.
    assert texts == [f"smECE = {d.smece:.3f}\n95% CI {d.smece_low:.3f}–{d.smece_high:.3f}"]

    # The unit square with margins of 0.05 below and above it, where the rug lies.
    assert ax.get_xlim() == (0.0, 1.0) and ax.get_ylim() == (-0.05, 1.05)
    assert ax.get_aspect() == 1.0
    assert ax.get_xlabel() == "Predicted probability"
    assert ax.get_ylabel() == "Observed frequency"


def test_options_switch_artists_off(daffs_diagram):
    ax = plotting.plot_diagram(daffs_diagram, band=False, consistency=False, ticks=False, annotate=False,
                               show_diagonal=False)
    assert [c.get_gid() for c in ax.collections] == ["smoothece-curve"]
    assert ax.lines == [] or not by_gid(ax.lines, "smoothece-diagonal")
    assert len(ax.texts) == 0


def test_no_bootstrap_text_and_band(solar):
    d = solar["DAFFS"]
    diagram = smoothece.reliability_diagram(d.f, d.y, n_boot=0, seed=0)
    ax = plotting.plot_diagram(diagram)
    assert [t.get_text() for t in ax.texts] == [f"smECE = {diagram.smece:.3f}"]
    assert not by_gid(ax.collections, "smoothece-band")


def annotation(diagram, **style):
    ax = plotting.plot_diagram(diagram, **style)
    (text,) = [t.get_text() for t in ax.texts]
    return text


def test_annotation_plus_minus_only_for_a_symmetric_interval(resnet_diagram, daffs_diagram):
    d = resnet_diagram  # 50,000 rows: the interval is symmetric to three digits
    half = 0.5 * (d.smece_high - d.smece_low)
    assert annotation(d) == f"smECE = {d.smece:.3f} ± {half:.3f}"
    assert f"{d.smece - half:.3f}" == f"{d.smece_low:.3f}" and f"{d.smece + half:.3f}" == f"{d.smece_high:.3f}"
    for (v, lo, hi), text in [
        ((0.040, 0.030, 0.050), "smECE = 0.040 ± 0.010"),
        ((0.0404, 0.0296, 0.0504), "smECE = 0.040 ± 0.010"),  # symmetric up to the rounding of the digits shown
        ((0.040, 0.030, 0.052), "smECE = 0.040\n95% CI 0.030–0.052"),
        ((0.040, 0.045, 0.080), "smECE = 0.040\n95% CI 0.045–0.080"),  # v outside its own interval
    ]:
        assert annotation(dataclasses.replace(daffs_diagram, smece=v, smece_low=lo, smece_high=hi),
                          label=None) == text
    skewed = dataclasses.replace(daffs_diagram, smece=0.040, smece_low=0.045, smece_high=0.080, level=0.9)
    assert annotation(skewed, label="A") == "A: smECE = 0.040\n90% CI 0.045–0.080"


def test_annotation_of_a_calibrated_model(tmp_path):
    # Calibrated by construction: the estimate sits at its noise floor and the interval runs from 0 (skewed).
    rng = np.random.default_rng(0)
    f = rng.uniform(size=20_000)
    y = rng.uniform(size=f.size) < f
    d = smoothece.reliability_diagram(f, y, n_boot=300, seed=3)
    assert d.smece_low == 0.0 < d.smece < d.smece_high
    assert annotation(d) == f"smECE = {d.smece:.3f}\n95% CI {d.smece_low:.3f}–{d.smece_high:.3f}"
    fig, ax = plt.subplots(figsize=(4, 4), layout="constrained")
    plotting.plot_diagram(d, ax=ax)
    saved_png(fig, tmp_path / "calibrated.png")
    fig.canvas.draw()
    (text,) = ax.texts
    box = text.get_window_extent()
    assert ax.get_window_extent().x0 <= box.x0 and box.x1 <= ax.get_window_extent().x1  # fits in the frame


def test_nan_segments_skipped(daffs_diagram):
    mu = np.array(daffs_diagram.mu)
    lower, upper = np.array(daffs_diagram.lower), np.array(daffs_diagram.upper)
    mu[100:110] = np.nan
    lower[50:60] = np.nan
    upper[50:60] = np.nan
    diagram = dataclasses.replace(daffs_diagram, mu=mu, lower=lower, upper=upper)
    ax = plotting.plot_diagram(diagram, width_scale=2.0)
    curve = by_gid(ax.collections, "smoothece-curve")[0]
    # 10 NaN points remove the 11 segments that touch them
    assert len(curve.get_segments()) == mu.size - 1 - 11
    assert all(np.isfinite(s).all() for s in curve.get_segments())
    assert np.asarray(curve.get_linewidths()).max() == pytest.approx(2.0 * plotting._MAX_WIDTH)
    assert len(by_gid(ax.collections, "smoothece-band")) == 1
    ax.figure.canvas.draw()


def test_width_scale_refused(daffs_diagram):
    with pytest.raises(ValueError, match="width_scale"):
        plotting.plot_diagram(daffs_diagram, width_scale=0)


def test_two_models_on_one_axes(daffs_diagram, resnet_diagram):
    ax = plotting.plot_diagram(daffs_diagram, label="DAFFS", consistency=False)
    plotting.plot_diagram(resnet_diagram, ax=ax, color="C2", label="ResNet-34")
    assert len(by_gid(ax.lines, "smoothece-diagonal")) == 1
    texts = sorted(ax.texts, key=lambda t: -t.get_position()[1])
    assert texts[0].get_text().startswith("DAFFS: smECE =")
    assert texts[1].get_text().startswith("ResNet-34: smECE =")
    assert texts[0].get_position()[1] > texts[1].get_position()[1]
    ax.figure.canvas.draw()  # DAFFS' two-line annotation leaves room for the next one
    assert texts[0].get_window_extent().y0 > texts[1].get_window_extent().y1
    assert ax.get_legend() is None  # the annotations name the models; no duplicate band entries
    ax.legend()
    assert [t.get_text() for t in ax.get_legend().get_texts()] == ["DAFFS", "ResNet-34"]


# --- Axes handling and global state --------------------------------------------------------------


def test_ax_honoured(daffs_diagram, solar):
    d = solar["DAFFS"]
    fig, axes = plt.subplots(1, 3, figsize=(9, 3), layout="constrained")
    assert plotting.plot_diagram(daffs_diagram, ax=axes[1]) is axes[1]
    assert smoothece.plot_reliability_diagram(d.f, d.y, ax=axes[0], n_boot=20, seed=0) is axes[0]
    assert smoothece.plot_binned_diagram(d.f, d.y, ax=axes[2]) is axes[2]
    assert len(plt.get_fignums()) == 1
    assert all(a.collections or a.patches for a in axes)
    assert daffs_diagram.plot(ax=axes[1]) is axes[1]


def test_new_figure_is_constrained(daffs_diagram):
    ax = plotting.plot_diagram(daffs_diagram)
    assert ax.figure.get_layout_engine().__class__.__name__ == "ConstrainedLayoutEngine"
    assert tuple(ax.figure.get_size_inches()) == (5.0, 5.0)


def test_rcparams_untouched(daffs_diagram, solar, resnet):
    d = solar["DAFFS"]
    before = copy.deepcopy(dict(matplotlib.rcParams))
    plotting.plot_diagram(daffs_diagram, density_panel=True).figure.canvas.draw()
    smoothece.plot_reliability_diagram(d.f, d.y, n_boot=10, seed=0, label="x").figure.canvas.draw()
    smoothece.plot_binned_diagram(resnet.f, resnet.y, strategy="quantile", show_counts=True).figure.canvas.draw()
    assert dict(matplotlib.rcParams) == before


def test_import_does_not_load_pyplot():
    code = "import sys, smoothece; sys.exit('matplotlib.pyplot' in sys.modules)"
    assert subprocess.run([sys.executable, "-c", code], capture_output=True).returncode == 0


def labels_inside(fig, tmp_path, *axes):
    fig.savefig(tmp_path / "labels.png", dpi=DPI, bbox_inches=None)
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    box = fig.bbox
    for ax in axes:
        for label in (ax.xaxis.label, ax.yaxis.label):
            if not label.get_text():
                continue
            ext = label.get_window_extent(renderer)
            assert ext.x0 >= box.x0 and ext.y0 >= box.y0, label.get_text()
            assert ext.x1 <= box.x1 and ext.y1 <= box.y1, label.get_text()


def test_labels_inside_figure(daffs_diagram, tmp_path):
    ax = plotting.plot_diagram(daffs_diagram)
    labels_inside(ax.figure, tmp_path, ax)


def test_labels_inside_figure_with_density_panel(daffs_diagram, tmp_path):
    ax = plotting.plot_diagram(daffs_diagram, density_panel=True)
    (panel,) = ax.child_axes
    assert panel.get_xlabel() == "Predicted probability"
    labels_inside(ax.figure, tmp_path, ax, panel)


def test_labels_inside_figure_binned(resnet, tmp_path):
    ax = smoothece.plot_binned_diagram(resnet.f, resnet.y)
    labels_inside(ax.figure, tmp_path, ax)


# --- plot_reliability_diagram and the density panel ----------------------------------------------


def test_plot_reliability_diagram(solar):
    d = solar["DAFFS"]
    # 1000 replicates: DAFFS' interval is skewed (0.052–0.086 about 0.067), not
    # by the luck of a few replicates' seed.
    ax = smoothece.plot_reliability_diagram(d.f, d.y, n_boot=1000, seed=3, color="C3", level=0.9)
    assert isinstance(ax, matplotlib.axes.Axes)
    assert len(by_gid(ax.collections, "smoothece-band")) == 1
    assert by_gid(ax.collections, "smoothece-band")[0].get_label() == "90% bootstrap band"
    assert "\n90% CI " in ax.texts[0].get_text()


def test_plot_reliability_diagram_routes_consistency(solar):
    d = solar["DAFFS"]
    ax = smoothece.plot_reliability_diagram(d.f, d.y, n_boot=0, consistency=True, n_sim=50, seed=3)
    assert len(by_gid(ax.collections, "smoothece-consistency")) == 1


def test_density_panel(daffs_diagram):
    ax = plotting.plot_diagram(daffs_diagram, density_panel=True)
    assert len(ax.child_axes) == 1
    panel = ax.child_axes[0]
    assert panel.get_gid() == "smoothece-density-panel"
    assert len(by_gid(panel.lines, "smoothece-density-positive")) == 1
    assert len(by_gid(panel.lines, "smoothece-density-negative")) == 1
    assert ax.get_xlabel() == ""  # moved to the panel
    ax.figure.canvas.draw()
    assert panel.get_position().y1 <= ax.get_position().y0


@pytest.mark.parametrize("layout, size", [(None, None), ("constrained", (10, 3.6)), ("tight", (10, 3.6))])
def test_density_panel_fits_in_a_grid_of_subplots(daffs_diagram, solar, layout, size, tmp_path):
    # The user's own grid: the panel must stay inside the box the grid gives the diagram.
    d = solar["DAFFS"]
    fig, axes = plt.subplots(1, 3, figsize=size, layout=layout)
    smoothece.plot_binned_diagram(d.f, d.y, ax=axes[0])
    ax = plotting.plot_diagram(daffs_diagram, ax=axes[1], density_panel=True)
    plotting.plot_diagram(daffs_diagram, ax=axes[2])
    saved_png(fig, tmp_path / f"grid_{layout}.png")
    renderer = fig.canvas.get_renderer()
    figure_box = fig.bbox
    (panel,) = ax.child_axes
    for artist in (panel, ax, *axes):
        box = artist.get_tightbbox(renderer)
        assert figure_box.x0 <= box.x0 and box.x1 <= figure_box.x1, (layout, box, figure_box)
        assert figure_box.y0 <= box.y0 and box.y1 <= figure_box.y1, (layout, box, figure_box)
    # Diagram and panel share the box of the Axes the user passed, one above the other.
    allotted = ax.get_position(original=True)
    main, below = ax.get_position(), panel.get_position()
    assert below.y1 <= main.y0 and allotted.y0 - 1e-9 <= below.y0 and main.y1 <= allotted.y1 + 1e-9
    assert below.x0 == pytest.approx(main.x0) and below.x1 == pytest.approx(main.x1)
    assert panel.get_xlabel() == "Predicted probability" and ax.get_xlabel() == ""


def test_density_panel_on_a_new_figure(daffs_diagram, tmp_path):
    ax = plotting.plot_diagram(daffs_diagram, density_panel=True)
    fig = ax.figure
    saved_png(fig, tmp_path / "panel.png")
    (panel,) = ax.child_axes
    box = panel.get_tightbbox(fig.canvas.get_renderer())
    # Inside the figure to within half a pixel (matplotlib 3.9's layout leaves the x label 0.03 px out,
    # which no raster shows).
    assert box.y0 >= fig.bbox.y0 - 0.5
    assert ax.get_position().height > 0.55  # the figure grows for the panel: the diagram keeps its size


def test_density_panel_one_class(solar):
    d = solar["DAFFS"]
    diagram = smoothece.reliability_diagram(d.f, np.zeros_like(d.y), n_boot=0, seed=0)
    ax = plotting.plot_diagram(diagram, density_panel=True)
    panel = ax.child_axes[0]
    assert not by_gid(panel.lines, "smoothece-density-positive")
    ax.figure.canvas.draw()


# --- the binned diagram --------------------------------------------------------------------------

F6 = np.array([0.1, 0.2, 0.3, 0.6, 0.7, 1.0])
Y6 = np.array([0, 1, 0, 1, 1, 0])


def _binned_ece(f, y, **kw):
    """The numbers plot_binned_diagram draws (it uses measures.binned_calibration)."""
    b = binned_calibration(f, y, **kw)
    return dict(ece=b.ece("l1"), edges=b.edges, weight=b.weight, count=b.count, mean_f=b.mean_f, mean_y=b.mean_y)


def hand_binned_ece(f, y, bins, w=None):
    """Independent computation: a loop over an explicit list of member indices per bin."""
    w = np.ones(len(f)) if w is None else np.asarray(w, float)
    total = 0.0
    for members in bins:
        if not members:
            continue
        wb = sum(w[i] for i in members)
        mf = sum(w[i] * f[i] for i in members) / wb
        my = sum(w[i] * y[i] for i in members) / wb
        total += wb * abs(my - mf)
    return total / w.sum()


def test_binned_two_bins():
    ax = smoothece.plot_binned_diagram(F6, Y6, n_bins=2)
    # bins [0, .5) and [.5, 1]: |1/3 - 0.2| and |2/3 - 0.7667|, each with half the weight
    hand = hand_binned_ece(F6, Y6, [[0, 1, 2], [3, 4, 5]])
    assert hand == pytest.approx(0.5 * abs(1 / 3 - 0.2) + 0.5 * abs(2 / 3 - 2.3 / 3))
    assert [t.get_text() for t in ax.texts] == [f"binned ECE = {hand:.3f}"]
    assert _binned_ece(F6, Y6, n_bins=2)["ece"] == pytest.approx(hand, rel=1e-12)
    bars = by_gid(ax.patches, "smoothece-bins")
    assert len(bars) == 2
    np.testing.assert_allclose([b.get_height() for b in bars], [1 / 3, 2 / 3])
    np.testing.assert_allclose([b.get_x() for b in bars], [0.0, 0.5])
    (means,) = by_gid(ax.lines, "smoothece-bin-means")
    np.testing.assert_allclose(means.get_xdata(), [0.2, 2.3 / 3])
    assert len(by_gid(ax.lines, "smoothece-diagonal")) == 1


def test_binned_weighted():
    w = np.array([1.0, 2.0, 1.0, 0.5, 1.0, 3.0])
    ax = smoothece.plot_binned_diagram(F6, Y6, n_bins=2, weights=w)
    hand = hand_binned_ece(F6, Y6, [[0, 1, 2], [3, 4, 5]], w)
    assert ax.texts[0].get_text() == f"binned ECE = {hand:.3f}"
    assert _binned_ece(F6, Y6, n_bins=2, weights=w)["ece"] == pytest.approx(hand, rel=1e-12)


def test_binned_empty_bins_not_drawn():
    # 5 bins: 0.1 -> 0, 0.2 and 0.3 -> 1, 0.6 and 0.7 -> 3, 1.0 -> 4 (last bin closed); bin 2 empty
    ax = smoothece.plot_binned_diagram(F6, Y6, n_bins=5, show_counts=True)
    bars = [p for p in ax.patches if isinstance(p, Rectangle) and p.get_gid() == "smoothece-bins"]
    assert len(bars) == 4
    np.testing.assert_allclose([b.get_x() for b in bars], [0.0, 0.2, 0.6, 0.8])
    assert len(by_gid(ax.lines, "smoothece-bin-means")[0].get_xdata()) == 4
    assert sorted(t.get_text() for t in ax.texts if t.get_gid() == "smoothece-count") == ["1", "1", "2", "2"]
    hand = hand_binned_ece(F6, Y6, [[0], [1, 2], [], [3, 4], [5]])
    assert _binned_ece(F6, Y6, n_bins=5)["ece"] == pytest.approx(hand, rel=1e-12)


def test_binned_quantile(resnet):
    b = _binned_ece(resnet.f, resnet.y, n_bins=10, strategy="quantile")
    assert b["count"].sum() == resnet.f.size
    # equal mass up to ties at the edges
    assert np.all(np.abs(b["count"] - resnet.f.size / 10) <= 0.01 * resnet.f.size)
    ax = smoothece.plot_binned_diagram(resnet.f, resnet.y, n_bins=10, strategy="quantile")
    assert len(by_gid(ax.patches, "smoothece-bins")) == 10
    assert ax.texts[0].get_text() == f"binned ECE = {b['ece']:.3f}"
    # tiny example, by hand: 3 bins of two rows each
    hand = hand_binned_ece(F6, Y6, [[0, 1], [2, 3], [4, 5]])
    assert _binned_ece(F6, Y6, n_bins=3, strategy="quantile")["ece"] == pytest.approx(hand, rel=1e-12)


def test_binned_refuses_out_of_range():
    f = np.array([0.1, 0.2, 1.5, 0.3])
    y = np.array([0, 1, 1, 0])
    with pytest.raises(ValueError, match=r"f\[2\] = 1\.5"):
        smoothece.plot_binned_diagram(f, y)
    with pytest.raises(ValueError, match=r"f\[0\] = nan"):
        smoothece.plot_binned_diagram(np.array([np.nan, 0.2]), np.array([0, 1]), clip=True)
    with pytest.raises(ValueError, match=r"f\[2\] = 1\.5"):  # clip=True clamps within 0.01 only
        smoothece.plot_binned_diagram(f, y, clip=True)
    f[2] = 1.004
    ax = smoothece.plot_binned_diagram(f, y, clip=True, n_bins=2)  # 1.004 counts as 1.0
    hand = hand_binned_ece(np.array([0.1, 0.2, 1.0, 0.3]), y, [[0, 1, 3], [2]])
    assert ax.texts[0].get_text() == f"binned ECE = {hand:.3f}"


@pytest.mark.parametrize(
    "kw, exc, pattern",
    [
        (dict(y=np.array([0, 2, 1, 0, 1, 0])), ValueError, r"y\[1\] = 2"),
        (dict(weights=np.array([1.0, -1.0, 1, 1, 1, 1])), ValueError, r"weights\[1\] = -1"),
        (dict(weights=np.zeros(6)), ValueError, "sum to zero"),
        (dict(y=np.array([0, 1])), ValueError, "same length"),
        (dict(f=np.array([], float), y=np.array([], float)), ValueError, "empty"),
        (dict(f="abc"), TypeError, "f must be"),
        (dict(strategy="kmeans"), ValueError, "strategy"),
        (dict(n_bins=0), ValueError, "n_bins"),
    ],
)
def test_binned_bad_input(kw, exc, pattern):
    args = dict(f=F6, y=Y6)
    args.update(kw)
    f, y = args.pop("f"), args.pop("y")
    with pytest.raises(exc, match=pattern):
        smoothece.plot_binned_diagram(f, y, **args)
    assert plt.get_fignums() == []  # refused before any figure was made
