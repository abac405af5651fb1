"""Where the plots put their text and rugs, measured on the rendered figure (display coordinates):
annotations and legends do not cover the curve, its bands or the densities; the rug lies outside
the unit square; a forest plot's text stays inside its own Axes; p-values read "p < 0.001" at the
resolution of the simulations."""

import copy
import dataclasses

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402
from conftest import by_gid  # noqa: E402
from matplotlib.text import Text  # noqa: E402
from matplotlib.transforms import Bbox  # noqa: E402

import smoothece  # noqa: E402
from smoothece import plotting  # noqa: E402


# --- data ----------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def digits_forest():
    """The top-label diagram of a random forest on scikit-learn's digits (ships with scikit-learn):
    confident and underconfident, its curve and band fill the top of the square."""
    pytest.importorskip("sklearn")
    from sklearn.datasets import load_digits
    from sklearn.ensemble import RandomForestClassifier

    from sklearn.model_selection import train_test_split

    X, y = load_digits(return_X_y=True)
    X_train, X_test, y_train, y_test = train_test_split(X, y, test_size=0.5, random_state=0)
    clf = RandomForestClassifier(n_estimators=50, random_state=0).fit(X_train, y_train)
    # Its interval is skewed: a two-line annotation, over the band in the upper left.
    return smoothece.top_label_diagram(probs=clf.predict_proba(X_test), labels=y_test, n_boot=200, seed=0)


def beta_model(transform, n=5000, seed=0):
    rng = np.random.default_rng(seed)
    truth = rng.beta(2.0, 2.0, size=n)
    return transform(truth), rng.uniform(size=n) < truth


@pytest.fixture(scope="module")
def underconfident():  # predictions pulled towards 1/2: the curve crosses the diagonal
    f, y = beta_model(lambda t: 0.5 + 0.7 * (t - 0.5))
    return smoothece.reliability_diagram(f, y, n_boot=100, seed=0, consistency=True, n_sim=100)


@pytest.fixture(scope="module")
def overconfident():  # predictions pushed up: the curve lies below the diagonal
    f, y = beta_model(np.sqrt)
    return smoothece.reliability_diagram(f, y, n_boot=100, seed=0, consistency=True, n_sim=100)


# --- geometry in display coordinates -------------------------------------------------------------

def rendered(fig):
    fig.canvas.draw()
    return fig.canvas.get_renderer()


def text_box(text, renderer):
    """The text with its background box, in display coordinates."""
    boxes = [text.get_window_extent(renderer)]
    if text.get_bbox_patch() is not None:
        boxes.append(text.get_bbox_patch().get_window_extent(renderer))
    return Bbox.union(boxes)


def within(inner, outer):
    """Whether box ``inner`` lies in box ``outer`` (display coordinates, to a pixel)."""
    return (outer.x0 - 1 <= inner.x0 and inner.x1 <= outer.x1 + 1
            and outer.y0 - 1 <= inner.y0 and inner.y1 <= outer.y1 + 1)


def inside(points, box, pad=0.0):
    """Which display points lie in ``box`` grown by ``pad`` pixels."""
    return ((points[:, 0] >= box.x0 - pad) & (points[:, 0] <= box.x1 + pad)
            & (points[:, 1] >= box.y0 - pad) & (points[:, 1] <= box.y1 + pad))


def curve_points(ax):
    """The curve's vertices in display coordinates and its largest half width in pixels."""
    (curve,) = by_gid(ax.collections, "smoothece-curve")
    xy = np.concatenate([np.asarray(s) for s in curve.get_segments()])
    half = 0.5 * max(curve.get_linewidths()) * ax.figure.dpi / 72.0
    return ax.transData.transform(xy), half


def band_points(ax, diagram, lower, upper):
    """Points filling a band (5 between its ends at every mesh point), in display coordinates."""
    lo, hi = np.asarray(lower, float), np.asarray(upper, float)
    keep = np.isfinite(lo) & np.isfinite(hi)
    t = np.linspace(0.0, 1.0, 5)[:, None]
    x = np.broadcast_to(np.asarray(diagram.mesh)[keep], (t.size, int(keep.sum())))
    y = lo[keep] + t * (hi[keep] - lo[keep])
    return ax.transData.transform(np.column_stack([x.ravel(), y.ravel()]))


def assert_covers_no_data(ax, diagram, box, what):
    curve, half = curve_points(ax)
    covered = inside(curve, box, pad=half)
    assert not covered.any(), f"{what} covers the curve at {ax.transData.inverted().transform(curve[covered][:3])}"
    bands = [(diagram.lower, diagram.upper)]
    if by_gid(ax.collections, "smoothece-consistency"):
        bands.append((diagram.consistency_lower, diagram.consistency_upper))
    for lower, upper in bands:
        if lower is not None:
            assert not inside(band_points(ax, diagram, lower, upper), box).any(), f"{what} covers a band"


def annotation_box(ax, renderer):
    (text,) = by_gid(ax.texts, "smoothece-annotation")
    return text_box(text, renderer)


# --- 1. the annotation covers no data ------------------------------------------------------------

@pytest.mark.parametrize("panel", [False, True])
def test_annotation_clear_of_a_top_label_curve(digits_forest, panel, tmp_path):
    ax = digits_forest.plot(density_panel=panel)
    if panel:
        ax.figure.savefig(tmp_path / "top_label.png", dpi=60)
        assert (tmp_path / "top_label.png").stat().st_size > 1000
    renderer = rendered(ax.figure)
    box = annotation_box(ax, renderer)
    assert box.width > 50 and box.height > 20  # the two-line text was measured
    assert_covers_no_data(ax, digits_forest, box, "the annotation")
    assert within(box, ax.bbox)  # inside the frame


@pytest.mark.parametrize("which", ["underconfident", "overconfident"])
@pytest.mark.parametrize("grid", [None, "plain", "constrained"])
def test_annotation_and_legend_clear_of_data(which, grid, underconfident, overconfident):
    diagram = underconfident if which == "underconfident" else overconfident
    if grid is None:
        ax = diagram.plot()  # a new 5 x 5 inch figure
    elif grid == "plain":  # no layout engine: the boxes are final when the plot is made
        _, (ax, other) = plt.subplots(1, 2)
        diagram.plot(ax=ax)
        diagram.plot(ax=other, density_panel=True)
    else:  # small constrained panels, one with a density panel: the layout only settles at draw time
        fig, axes = plt.subplots(1, 3, figsize=(9, 3.2), layout="constrained")
        diagram.plot(ax=axes[0])
        ax = diagram.plot(ax=axes[1], density_panel=True)
    fig = ax.figure
    renderer = rendered(fig)
    for axes in fig.axes:
        if not by_gid(axes.collections, "smoothece-curve"):
            continue
        box = annotation_box(axes, renderer)
        assert_covers_no_data(axes, diagram, box, "the annotation")
        legend = axes.get_legend()
        assert legend is not None  # the consistency band is explained
        legend_box = legend.get_window_extent(renderer)
        assert_covers_no_data(axes, diagram, legend_box, "the legend")
        assert not legend_box.overlaps(box)
        assert "consistency band" in [t.get_text() for t in legend.get_texts()]


def test_two_models_stack_in_one_corner(underconfident, overconfident):
    ax = underconfident.plot(label="A", consistency=False)
    overconfident.plot(ax=ax, label="B", color="C2", consistency=False)
    renderer = rendered(ax.figure)
    first, second = (text_box(t, renderer) for t in by_gid(ax.texts, "smoothece-annotation"))
    assert not first.overlaps(second)
    assert first.x0 == pytest.approx(second.x0, abs=1.0) or first.x1 == pytest.approx(second.x1, abs=1.0)


def test_binned_annotation_clear_of_the_bars():
    f, y = beta_model(np.sqrt)  # overconfident: bars below the diagonal, the upper left empty
    ax = smoothece.plot_binned_diagram(f, y, n_bins=10)
    renderer = rendered(ax.figure)
    (text,) = [t for t in ax.texts if t.get_text().startswith("binned ECE")]
    box = text_box(text, renderer)
    for bar in by_gid(ax.patches, "smoothece-bins"):
        assert not bar.get_window_extent(renderer).overlaps(box)
    (means,) = by_gid(ax.lines, "smoothece-bin-means")
    assert not inside(ax.transData.transform(means.get_xydata()), box, pad=3).any()


# --- 2. the rug lies outside the unit square -----------------------------------------------------

@pytest.mark.parametrize("panel", [False, True])
def test_rug_outside_the_data(digits_forest, panel):
    d = digits_forest
    ax = d.plot(density_panel=panel)
    rendered(ax.figure)
    (x0, y0), (x1, y1) = ax.transData.transform([(0.0, 0.0), (1.0, 1.0)])  # the unit square on screen
    frame = ax.bbox
    for gid, n, above in [("smoothece-ticks-positive", int(np.sum(d.sample_y == 1)), True),
                          ("smoothece-ticks-negative", int(np.sum(d.sample_y == 0)), False)]:
        (rug,) = by_gid(ax.collections, gid)
        segments = rug.get_segments()
        assert len(segments) == n > 0
        ys = ax.transData.transform(np.concatenate(segments))[:, 1]
        if above:
            assert ys.min() > y1 + 1.0  # above the square: the curve's end at (1, 1) shows
        else:
            assert ys.max() < y0 - 1.0
        assert frame.y0 <= ys.min() and ys.max() <= frame.y1  # inside the frame: drawn, not clipped
    # The curve reaches its ends within the square, and no rug is drawn over them.
    curve, half = curve_points(ax)
    assert curve[:, 1].max() <= y1 + half and curve[:, 1].min() >= y0 - half
    assert x0 < x1


@pytest.mark.parametrize("size", [(10.4, 5.4), (9.6, 5.0)])
def test_two_diagrams_side_by_side_keep_their_labels_on_the_first_draw(underconfident, size):
    # The CLI's demo and the examples: two equal-aspect diagrams in a constrained figure with
    # titles. A margin in x as well as in y sends the layout's first pass below the figure's edge.
    fig = plt.figure(figsize=size, layout="constrained")
    a, b = fig.subplots(1, 2)
    underconfident.plot(ax=a)
    f, y = beta_model(lambda t: 0.5 + 0.7 * (t - 0.5))
    smoothece.plot_binned_diagram(f, y, ax=b)
    for ax in (a, b):
        ax.set_title("a title", fontsize="medium")
    fig.suptitle("a figure title")
    renderer = rendered(fig)  # the first draw: what savefig writes
    for ax in (a, b):
        for label in (ax.xaxis.label, ax.yaxis.label, ax.title):
            assert within(label.get_window_extent(renderer), fig.bbox), (label.get_text(), size)


# --- 3. the density legend covers no density -----------------------------------------------------

@pytest.mark.parametrize("which", ["digits", "underconfident", "overconfident"])
def test_density_legend_clear_of_the_densities(which, digits_forest, underconfident, overconfident):
    diagram = {"digits": digits_forest, "underconfident": underconfident, "overconfident": overconfident}[which]
    ax = diagram.plot(density_panel=True)
    renderer = rendered(ax.figure)
    (panel,) = ax.child_axes
    legend = panel.get_legend()
    box = legend.get_window_extent(renderer)
    assert within(box, panel.bbox)  # inside the panel
    for gid in ("smoothece-density-positive", "smoothece-density-negative"):
        (line,) = by_gid(panel.lines, gid)
        xy = panel.transData.transform(line.get_xydata())
        assert not inside(xy, box, pad=1.0).any(), gid
        peak = xy[np.nanargmax(line.get_ydata())]
        assert peak[1] < box.y0 or not (box.x0 <= peak[0] <= box.x1)
    top = max(np.nanmax(diagram.density_positive), np.nanmax(diagram.density_negative))
    assert top < panel.get_ylim()[1] <= 2.0 * top  # the densities keep most of the panel's height


# --- 4. a forest plot's text stays inside its Axes -----------------------------------------------

NAMES = np.array(["ASAP", "BOM", "DAFFS", "MAG4", "MCSTAT", "NOAA", "SIDC", "AMOS"])


@pytest.fixture(scope="module")
def grouped():
    rng = np.random.default_rng(1)
    g = rng.integers(0, NAMES.size, 8000)
    f, y = beta_model(lambda t: t, n=g.size, seed=1)
    f = np.where(g == 3, np.clip(1.3 * f, 0.0, 1.0), f)  # MAG4 overconfident
    return smoothece.smece_by_group(f, y, NAMES[g], n_boot=50, test=True, n_sim=199, seed=1)


def our_texts(ax):
    """Every visible text under ``ax`` but the group names (its y tick labels, placed by the layout)."""
    names = set(map(id, ax.get_yticklabels()))
    return [t for t in ax.findobj(Text) if t.get_visible() and t.get_text() and id(t) not in names]


def test_forest_side_by_side_in_plain_subplots(grouped, tmp_path):
    fig, (a, b) = plt.subplots(1, 2)
    assert smoothece.plot_groups(grouped, ax=a) is a
    assert grouped.plot(ax=b) is b
    fig.savefig(tmp_path / "pair.png", dpi=60)
    renderer = rendered(fig)
    for ax, other in ((a, b), (b, a)):
        texts = our_texts(ax)
        counts = [t for t in texts if t.get_text().startswith("n=")]
        assert sorted(t.get_text() for t in counts) == sorted(f"n={int(n):,}" for n in grouped.n)
        for t in texts:
            box = t.get_window_extent(renderer)
            assert not box.overlaps(other.bbox), (t.get_text(), box, other.bbox)
        for t in counts:
            assert within(t.get_window_extent(renderer), ax.bbox)
        # The column starts right of every interval and point.
        (intervals,) = by_gid(ax.collections, "smoothece-group-intervals")
        ends = ax.transData.transform(np.concatenate(intervals.get_segments()))[:, 0].max()
        points = ax.transData.transform(by_gid(ax.collections, "smoothece-group-points")[0].get_offsets())
        assert max(ends, points[:, 0].max()) < min(t.get_window_extent(renderer).x0 for t in counts)


@pytest.mark.parametrize("layout", [None, "constrained"])
def test_forest_column_inside_its_axes(grouped, layout):
    if layout is None:
        ax = grouped.plot()  # its own constrained figure
    else:
        _, (ax, _other) = plt.subplots(1, 2, figsize=(10, 3.5), layout=layout)
        grouped.plot(ax=ax)
    fig = ax.figure
    renderer = rendered(fig)
    column = [t for t in ax.texts if t.get_gid() in ("smoothece-group-n", "smoothece-group-p")]
    assert len(column) >= len(grouped)
    right = ax.transData.transform(np.column_stack([grouped.high, np.zeros(len(grouped))]))[:, 0].max()
    for t in column:
        box = t.get_window_extent(renderer)
        assert ax.bbox.x0 <= box.x0 and box.x1 <= ax.bbox.x1
        assert box.x0 > right  # clear of the intervals
    assert len(ax.get_yticks()) == len(grouped)


# --- 5. p-values at the resolution of the simulations --------------------------------------------

def test_forest_p_values_at_the_floor_read_p_below():
    rng = np.random.default_rng(2)
    n = 2000
    truth = rng.uniform(size=2 * n)
    y = rng.uniform(size=truth.size) < truth
    f = np.clip(truth + 0.25, 0.0, 1.0)  # both groups far from calibrated: no simulation reaches them
    result = smoothece.smece_by_group(f, y, np.repeat(["x", "z"], n), test=True, n_sim=999, seed=0)
    # The simulated p-value's floor: (1 + 0) / (1 + 999); BH keeps it when every group is there.
    np.testing.assert_array_equal(result.p_value, [1 / 1000, 1 / 1000])
    np.testing.assert_array_equal(result.p_adjusted, [1 / 1000, 1 / 1000])
    ax = result.plot(p_values=True)
    texts = [t.get_text() for t in ax.figure.findobj(Text)]
    assert [t.get_text() for t in by_gid(ax.texts, "smoothece-group-p")] == ["p < 0.001", "p < 0.001"]
    assert not any("0.000999" in t or "0.001 " in t for t in texts)
    assert "p: BH-adjusted; red: p ≤ 0.05" in ax.get_title()

    # Off the floor: three significant digits; with 99 simulations the floor reads p < 0.01.
    other = dataclasses.replace(result, p_adjusted=np.array([0.0123456, 1 / 1000]))
    ax = other.plot(p_values=True)
    assert sorted(t.get_text() for t in by_gid(ax.texts, "smoothece-group-p")) == ["p < 0.001", "p = 0.0123"]
    coarse = dataclasses.replace(result, n_sim=99, p_adjusted=np.array([0.01, 0.5]))
    ax = coarse.plot(p_values=True)
    assert sorted(t.get_text() for t in by_gid(ax.texts, "smoothece-group-p")) == ["p < 0.01", "p = 0.5"]
    # Hidden on request, and without a test there is none to show.
    assert not by_gid(result.plot(p_values=False).texts, "smoothece-group-p")
    untested = smoothece.smece_by_group(f, y, np.repeat(["x", "z"], n), seed=0)
    assert not by_gid(untested.plot(p_values=True).texts, "smoothece-group-p")
    with pytest.raises(TypeError, match="p_values must be a bool or None"):
        result.plot(p_values="yes")


def test_forest_p_values_left_out_where_they_would_crowd_the_data(grouped):
    wide = grouped.plot()  # 6 inches: room for both columns
    assert len(by_gid(wide.texts, "smoothece-group-p")) == len(grouped)
    _, (narrow, _) = plt.subplots(1, 2, figsize=(5, 3))
    grouped.plot(ax=narrow)
    assert not by_gid(narrow.texts, "smoothece-group-p")
    assert "red: BH-adjusted p ≤ 0.05" in narrow.get_title()  # the colours still say which


# --- global state --------------------------------------------------------------------------------

def test_layout_leaves_rcparams_alone(digits_forest, grouped):
    before = copy.deepcopy(dict(matplotlib.rcParams))
    digits_forest.plot(density_panel=True).figure.canvas.draw()
    grouped.plot().figure.canvas.draw()
    _, (a, b) = plt.subplots(1, 2, layout="tight")
    digits_forest.plot(ax=a)
    smoothece.plot_groups(grouped, ax=b)
    a.figure.canvas.draw()
    assert dict(matplotlib.rcParams) == before


@pytest.mark.parametrize("dpi", [50, 72, 100, 150, 200])
def test_estimates_match_the_renderer(dpi):
    # The layout helpers measure text without a renderer (font metrics and a margin for hinting):
    # never narrower than what Agg draws, and not much wider.
    fig, ax = plt.subplots(dpi=dpi)
    renderer = rendered(fig)
    for text, size in [("smECE = 0.231 ± 0.005", "medium"), ("95% CI 0.220–0.245", "medium"),
                       ("n=2,597", "small"), ("p < 0.001", "small"), ("y = 1", "x-small")]:
        t = ax.text(0.5, 0.5, text, fontsize=size)
        measured = t.get_window_extent(renderer).width * 72.0 / dpi
        assert measured <= plotting._text_width([text], size) <= 1.3 * measured, (text, size)
