"""Drawing smoothed and binned reliability diagrams with matplotlib.

matplotlib is imported inside the functions, so ``import smoothece`` never
touches pyplot. The functions never change global matplotlib state (no
rcParams, no styles); every function takes ``ax=`` and returns the Axes it
drew on. When ``ax`` is None a new ``5 x 5`` inch figure with constrained
layout is created, so axis labels are never cut.

Every artist drawn gets a ``gid`` starting with ``"smoothece-"`` (for
example ``"smoothece-curve"``, ``"smoothece-band"``), so that tests and
users can find them again on a busy Axes.
"""

from __future__ import annotations

import warnings
from typing import TYPE_CHECKING, Any, Dict, Mapping, Optional, Sequence, Union

import numpy as np

from . import _validate
from ._typing import ArrayLike
from ._util import format_p, format_paired_p

if TYPE_CHECKING:  # matplotlib is imported inside the functions, at draw time
    from matplotlib.axes import Axes
    from matplotlib.typing import ColorType

    from .compare import Comparison
    from .diagram import ReliabilityDiagram
    from .groups import GroupedCalibration


__all__ = ["plot_diagram", "plot_reliability_diagram", "plot_binned_diagram", "plot_groups", "plot_comparison"]

#: Line widths (points) of the curve at zero density and at the maximum density.
_MIN_WIDTH = 0.6
_MAX_WIDTH = 5.0

#: Keyword arguments of :func:`smoothece.reliability_diagram` that
#: :func:`plot_reliability_diagram` routes to the computation.
_COMPUTE_KEYS = frozenset(
    ("weights", "sigma", "n_boot", "level", "seed", "consistency", "n_sim", "sample_size", "clip", "threads")
)


def _new_axes(ax: Optional[Axes], height: float = 5.0) -> Axes:
    """``ax``, or the Axes of a new ``5 x height`` inch constrained-layout figure."""
    if ax is not None:
        return ax
    import matplotlib.pyplot as plt

    _, ax = plt.subplots(figsize=(5, height), layout="constrained")
    return ax


#: Margin of the frame below and above the unit square (data units): the rug of sampled
#: predictions lies in it, outside the data, so that it never hides the curve's ends.
#: (Only in y: a margin in x as well sends constrained layout's first pass, with the
#: equal aspect, into cutting the x label of two diagrams side by side.)
_MARGIN = 0.05
#: The frame's height per unit of width.
_TALL = 1.0 + 2.0 * _MARGIN
#: The rug's strips: from _RUG[0] to _RUG[1] beyond 1 (rows with y = 1) and below 0 (y = 0).
_RUG = (0.2 * _MARGIN, 0.9 * _MARGIN)
#: Inset of annotations and legends from the corners of the unit square (data units).
_INSET = 0.02


def _frame(ax, show_diagonal: bool, xlabel: str = "Predicted probability",
           ylabel: str = "Observed frequency") -> None:
    """The unit square with margins below and above it for the rug, equal aspect, axis
    labels and (once per Axes) the diagonal."""
    ax.set_xlim(0.0, 1.0)
    ax.set_ylim(-_MARGIN, 1.0 + _MARGIN)
    ax.set_aspect("equal", adjustable="box")
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    if show_diagonal and not any(line.get_gid() == "smoothece-diagonal" for line in ax.lines):
        ax.plot([0.0, 1.0], [0.0, 1.0], linestyle="--", color="0.5", linewidth=1.0, zorder=1,
                gid="smoothece-diagonal")


# --- placing text where it covers no data ----------------------------------------------------------
#
# Annotations and legends go in a corner of the unit square that the drawn data (the curve,
# its bands, the bars) leave free. Their size in data units is estimated when they are drawn,
# from the text's width in points (font metrics, no renderer) and the size of the Axes once
# the figure's layout engine has placed it (:func:`_settle`). Drawn in data coordinates, they
# stay where they were put; an Axes resized a lot afterwards may want the plot redrawn.

#: The corners (legend locations), in order of preference when several are free: the anchor
#: (x, y) in data units and the text's alignment there.
_CORNERS = {
    "upper left": (_INSET, 1.0 - _INSET, "left", "top"),
    "lower right": (1.0 - _INSET, _INSET, "right", "bottom"),
    "upper right": (1.0 - _INSET, 1.0 - _INSET, "right", "top"),
    "lower left": (_INSET, _INSET, "left", "bottom"),
}


def _points(size) -> float:
    """A font size ("small", 9, ...) in points (reads rcParams, changes nothing)."""
    from matplotlib.font_manager import FontProperties

    return float(FontProperties(size=size).get_size_in_points())


def _text_width(lines, size) -> float:
    """Width in points of the widest of ``lines`` at font ``size``: the font's metrics (no
    renderer needed) with room for the hinting of small text, which Agg draws up to 10% wider
    at some resolutions."""
    from matplotlib.font_manager import FontProperties
    from matplotlib.textpath import TextToPath

    prop, measure = FontProperties(size=size), TextToPath()
    widest = max((measure.get_text_width_height_descent(line, prop, ismath=False)[0] for line in lines), default=0.0)
    return 1.1 * widest + 1.0


def _settle(ax) -> None:
    """Lets the figure's layout engine (constrained, tight), if any, place the Axes now, so
    that its size is the one it will be drawn at (the engine runs again at every draw)."""
    fig = ax.figure.canvas.figure  # the root figure (of a subfigure too): it lays out
    engine = fig.get_layout_engine()
    if engine is not None:
        engine.execute(fig)


def _axes_points(ax):
    """Width and height in points of the box the layout gives ``ax`` now."""
    box = ax.get_window_extent()
    scale = 72.0 / ax.figure.dpi
    return box.width * scale, box.height * scale


def _unit_points(ax, panel: bool = False) -> float:
    """Points per data unit of a diagram on ``ax`` (1 unit wide, ``_TALL`` high; sharing its
    box with the density panel when ``panel``)."""
    width, height = _axes_points(ax)
    return max(min(width, height / (_TALL * (1.0 + _PANEL_GAP + _PANEL_HEIGHT if panel else 1.0))), 1.0)


def _ink(box, regions) -> float:
    """Area (data units²) of ``regions`` inside ``box`` = (x0, x1, y0, y1); each region is
    (x, lo, hi, weight): the band lo(x)..hi(x) sampled on an even grid x."""
    x0, x1, y0, y1 = box
    total = 0.0
    for x, lo, hi, weight in regions:
        if x.size < 2:
            continue
        inside = (x >= x0) & (x <= x1) & np.isfinite(lo) & np.isfinite(hi)
        overlap = np.clip(np.minimum(hi[inside], y1) - np.maximum(lo[inside], y0), 0.0, None)
        total += weight * float(overlap.sum()) * float(x[1] - x[0])
    return total


def _corner_box(corner: str, width: float, height: float):
    """(x0, x1, y0, y1) of a ``width x height`` box (data units) in ``corner``."""
    x, y, ha, va = _CORNERS[corner]
    x0 = x if ha == "left" else x - width
    y1 = y if va == "top" else y + height
    return x0, x0 + width, y1 - height, y1


#: Room (points) kept between text and the data it must not cover.
_GAP = 3.0


def _place(candidates, regions, unit: float):
    """The first of ``candidates`` — (choice, corners, width, height in points), in order of
    preference — with a corner where its box, and a gap around it, covers none of
    ``regions``; else the one covering least. Returns (choice, corner, box in data units)."""
    best = None
    grow = _GAP / unit
    for choice, corners, width, height in candidates:
        for corner in corners:
            box = _corner_box(corner, width / unit, height / unit)
            ink = _ink((box[0] - grow, box[1] + grow, box[2] - grow, box[3] + grow), regions)
            if ink == 0.0:
                return choice, corner, box
            if best is None or ink < best[0]:
                best = (ink, choice, corner, box)
    return best[1:]


def _band(x, lo, hi, weight: float = 1.0):
    return (np.asarray(x, float), np.asarray(lo, float), np.asarray(hi, float), weight)


def _line_region(x, y, half: float, weight: float = 1.0):
    """A line drawn ``2 * half`` data units thick, as a region."""
    y = np.asarray(y, float)
    return _band(x, y - half, y + half, weight)


#: The diagonal, as a region: text over it hides a reference, not data.
_DIAGONAL = np.linspace(0.0, 1.0, 257)


def _box_region(box, weight: float = 10.0):
    """A box (x0, x1, y0, y1) as a region: what a legend must not cover."""
    x0, x1, y0, y1 = box
    x = np.linspace(x0, x1, 65)
    return _band(x, np.full(x.size, y0), np.full(x.size, y1), weight)


#: Font sizes of annotations, largest first: a smaller one where the larger covers data.
_ANNOTATION_SIZES = ("medium", "small", "x-small")


def _annotate(ax, text: str, color, regions, panel: bool = False):
    """Writes ``text`` in the corner of the unit square where it covers none of ``regions``
    (the curve, its bands, the bars) nor the diagonal, in the largest of the annotation sizes
    for which there is such a corner (else where it covers least). A later annotation on the
    same Axes (another model) goes in the same corner and size, below (or above) the earlier
    ones. Returns the corner and the box (data units) that all annotations there take."""
    unit = _unit_points(ax, panel)

    def height(t, fs):  # points: each line with its spacing, the white box's padding, a gap
        return 1.2 * fs * (t.count("\n") + 1) + 0.5 * fs + 2.0

    def width(texts, size):
        return _text_width([line for t in texts for line in t.split("\n")], size) + 0.5 * _points(size) + 2.0

    earlier = [t for t in ax.texts if (t.get_gid() or "").startswith("smoothece-annotation")]
    texts = [t.get_text() for t in earlier] + [text]
    if earlier:
        x, y = earlier[0].xy
        corner = next((c for c, (cx, cy, ha, va) in _CORNERS.items()
                       if (cx, cy, ha, va) == (x, y, earlier[0].get_ha(), earlier[0].get_va())), "upper left")
        size = earlier[0].get_fontsize()
    else:
        candidates = [(size, list(_CORNERS), width(texts, size), height(text, _points(size)))
                      for size in _ANNOTATION_SIZES]
        size, corner, _ = _place(candidates, regions + [_line_region(_DIAGONAL, _DIAGONAL, 0.005, 0.5)], unit)
    fs = _points(size)
    pad = 0.25 * fs  # the white box's padding
    x, y, ha, va = _CORNERS[corner]
    below = sum(height(t, fs) for t in texts[:-1])
    sign = -1.0 if va == "top" else 1.0
    ax.annotate(text, (x, y), xycoords="data", textcoords="offset points",
                xytext=(pad if ha == "left" else -pad, sign * (pad + below)), ha=ha, va=va, color=color,
                fontsize=size, zorder=5, gid="smoothece-annotation", annotation_clip=False,
                bbox=dict(boxstyle="round,pad=0.25", facecolor="white", edgecolor="none", alpha=0.8))
    return corner, _corner_box(corner, width(texts, size) / unit, sum(height(t, fs) for t in texts) / unit)


def _legend_size(labels, size, ncols: int = 1, frame: bool = True):
    """Width and height in points of a legend of ``labels`` (matplotlib's default spacing)."""
    import matplotlib

    fs = _points(size)
    rc = matplotlib.rcParams
    rows = -(-len(labels) // ncols)
    entry = (rc["legend.handlelength"] + rc["legend.handletextpad"]) * fs + _text_width(labels, size)
    width = ncols * entry + (ncols - 1) * rc["legend.columnspacing"] * fs
    height = rows * 1.2 * fs + (rows - 1) * rc["legend.labelspacing"] * fs
    border = 2.0 * (rc["legend.borderpad"] + rc["legend.borderaxespad"]) * fs + (2.0 if frame else 0.0)
    return width + border, height + border


def _smece_text(diagram, digits: int = 3) -> str:
    """``smECE = v ± w`` when the bootstrap interval is [v − w, v + w] to the digits shown,
    else ``smECE = v`` and ``95% CI lo–hi`` below it (two short lines fit narrow Axes).
    The interval is symmetric on the squared scale, so it is skewed about ``v`` where ``v`` is
    small next to its noise (from 0 for a calibrated model), where ``± w`` would misstate it."""
    v, lo, hi = diagram.smece, diagram.smece_low, diagram.smece_high
    text = f"smECE = {v:.{digits}f}"
    if diagram.n_boot == 0 or not (np.isfinite(lo) and np.isfinite(hi)):
        return text
    half = 0.5 * (hi - lo)
    # v ± w puts each end within half the asymmetry of its place: below one unit of the
    # last digit shown, the reader cannot tell it from the interval itself.
    if abs((hi - v) - (v - lo)) < 10.0**-digits:
        return f"{text} ± {half:.{digits}f}"
    return f"{text}\n{diagram.level:.0%} CI {lo:.{digits}f}–{hi:.{digits}f}"


def _drawable(lower: np.ndarray, upper: np.ndarray) -> bool:
    """Whether a band has two neighbouring mesh points where both its edges are
    defined: something to fill (isolated points fill nothing)."""
    ok = np.isfinite(lower) & np.isfinite(upper)
    return bool(np.any(ok[1:] & ok[:-1]))


def _segment_widths(mesh: np.ndarray, mu: np.ndarray, density: np.ndarray, width_scale: float):
    """Segments of the curve between neighbouring mesh points where both ends
    are finite, with line widths proportional to the density at the
    segment's midpoint relative to the largest density (clipped to a visible
    minimum)."""
    points = np.column_stack([mesh, mu])
    segments = np.stack([points[:-1], points[1:]], axis=1)
    mid_density = 0.5 * (density[:-1] + density[1:])
    keep = np.isfinite(segments).all(axis=(1, 2)) & np.isfinite(mid_density)
    segments, mid_density = segments[keep], mid_density[keep]
    top = mid_density.max() if mid_density.size else 0.0
    relative = mid_density / top if top > 0 else np.ones_like(mid_density)
    widths = width_scale * np.clip(_MAX_WIDTH * relative, _MIN_WIDTH, _MAX_WIDTH)
    return segments, widths


#: Height of the density panel and of the gap above it, as fractions of the diagram's height.
_PANEL_HEIGHT = 0.25
_PANEL_GAP = 0.05


class _AbovePanel:
    """Axes locator of a diagram with a density panel: diagram and panel (an inset that
    follows the diagram) are placed together, centred, in the box the layout gives the
    Axes (``subplots``, constrained or tight layout; at every draw), so that both stay
    inside the Axes' own box in any grid of subplots."""

    def __init__(self, ax):
        self._ax = ax

    def get_subplotspec(self):  # tight_layout asks the locator where the Axes sits
        return self._ax.get_subplotspec()

    def __call__(self, ax, renderer):
        from matplotlib.transforms import Bbox

        box = ax.get_position(original=True)  # in (sub)figure coordinates
        frame = ax.figure.bbox
        width, height = box.width * frame.width, box.height * frame.height  # pixels
        total = 1.0 + _PANEL_GAP + _PANEL_HEIGHT  # the pair's height, in diagram heights
        wide = min(width, height / (total * _TALL))  # the diagram is _TALL times as high as wide
        high = _TALL * wide
        x0 = box.x0 + 0.5 * (width - wide) / frame.width
        y0 = box.y0 + (0.5 * (height - high * total) + high * (total - 1.0)) / frame.height
        return Bbox.from_bounds(x0, y0, wide / frame.width, high / frame.height)


def _legend_headroom(panel, ax, mesh, pos, neg) -> float:
    """Draws the density panel's legend in the top corner (right, left or centre) where the
    densities leave the most room, and returns the panel's upper y limit: 8% above the
    highest density, raised where needed so that the densities under the legend stay below it."""
    labels = [line.get_label() for line in panel.lines]
    curves = np.vstack([pos, neg])
    finite = curves[np.isfinite(curves)]
    peak = float(finite.max()) if finite.size and finite.max() > 0 else 1.0 / 1.08
    if not labels:
        return 1.08 * peak
    unit = _unit_points(ax, panel=True)
    width, height = _legend_size(labels, "x-small", ncols=2, frame=False)
    under = min(height / (_PANEL_HEIGHT * _TALL * unit), 0.8)  # of the panel's height
    half = 0.5 * width / unit
    spans = {"upper right": (1.0 - 2.0 * half, 1.0), "upper left": (0.0, 2.0 * half),
             "upper center": (0.5 - half, 0.5 + half)}

    def top(span):
        inside = (mesh >= span[0]) & (mesh <= span[1])
        there = curves[:, inside]
        there = there[np.isfinite(there)]
        return max(1.08 * peak, float(there.max()) / (1.0 - under) * 1.03 if there.size else 0.0)

    loc = min(spans, key=lambda c: top(spans[c]))
    panel.legend(loc=loc, fontsize="x-small", frameon=False, ncols=2)
    return top(spans[loc])


def _density_panel(ax, diagram, color) -> Any:
    """A short panel under the diagram with the prediction densities of each label
    class, inside the box of ``ax``. The diagram's x tick labels and x label move
    to the panel."""
    ax.set_axes_locator(_AbovePanel(ax))
    panel = ax.inset_axes([0.0, -(_PANEL_GAP + _PANEL_HEIGHT), 1.0, _PANEL_HEIGHT], sharex=ax)
    panel.set_gid("smoothece-density-panel")
    mesh = np.asarray(diagram.mesh)
    pos = np.asarray(diagram.density_positive, dtype=float)
    neg = np.asarray(diagram.density_negative, dtype=float)
    if np.isfinite(pos).any():
        panel.plot(mesh, pos, color=color, linewidth=1.2, label="y = 1", gid="smoothece-density-positive")
        panel.fill_between(mesh, 0.0, pos, where=np.isfinite(pos), color=color, alpha=0.2, linewidth=0)
    if np.isfinite(neg).any():
        panel.plot(mesh, neg, color="0.35", linewidth=1.2, linestyle="--", label="y = 0",
                   gid="smoothece-density-negative")
    panel.set_ylim(0.0, _legend_headroom(panel, ax, mesh, pos, neg))
    panel.set_xlim(0.0, 1.0)
    panel.set_ylabel("Density")
    panel.set_xlabel(ax.get_xlabel())
    panel.tick_params(axis="y", labelsize="small")
    ax.set_xlabel("")
    ax.tick_params(axis="x", labelbottom=False)
    return panel


def plot_diagram(
    diagram: ReliabilityDiagram,
    ax: Optional[Axes] = None,
    *,
    color: ColorType = "C0",
    band: bool = True,
    consistency: bool = True,
    ticks: bool = True,
    annotate: bool = True,
    density_panel: bool = False,
    width_scale: float = 1.0,
    label: Optional[str] = None,
    show_diagonal: bool = True,
) -> Axes:
    """Draws a smoothed reliability diagram (Błasiok & Nakkiran 2024, Fig. 1 right).

    Parameters
    ----------
    diagram : smoothece.ReliabilityDiagram
        The result of :func:`smoothece.reliability_diagram`.
    ax : matplotlib.axes.Axes, optional
        Axes to draw on. None creates a ``5 x 5`` inch figure with
        constrained layout.
    color : color, default "C0"
        Colour of the curve, its bootstrap band and its annotation.
    band : bool, default True
        Draw the pointwise bootstrap band (when the diagram has one).
    consistency : bool, default True
        Draw the consistency band (when the diagram has one): where the
        curve would lie if the model were perfectly calibrated. A legend
        explains it, in a corner the annotation and the data leave free
        (only the band's own entry, or a smaller font, where the whole
        legend does not fit).
    ticks : bool, default True
        Draw a rug of the sampled predictions in the frame's margins, outside
        the unit square: rows with y = 1 above 1, rows with y = 0 below 0.
    annotate : bool, default True
        Write the SmoothECE in the corner of the unit square that the curve,
        its bands and the diagonal leave free (upper left when several are;
        in a smaller font where the Axes are too small for the usual one;
        a later model on the same Axes below the earlier): ``smECE = v ± w`` when
        the bootstrap interval is symmetric about ``v`` to the digits shown,
        else ``smECE = v`` with ``95% CI lo–hi`` on a second line (that of a
        well calibrated model runs from 0); ``smECE = v`` without bootstrap.
    density_panel : bool, default False
        Add a panel under the diagram with the prediction densities of the
        rows with y = 1 and y = 0; it takes over the x axis label. Its legend
        goes in the top corner the densities leave free (the panel's top is
        raised where they leave none). Diagram and panel share the box of
        ``ax`` (so they fit in a grid of subplots); a new figure is made
        taller for the panel.
    width_scale : float, default 1.0
        Multiplies the curve's line widths, which follow the prediction
        density (thick where there is data, thin where there is little).
    label : str, optional
        Legend label of the curve (for a later ``ax.legend()``); also
        prefixes the annotation, which is how several models drawn on one
        Axes are told apart. A legend is added automatically only to explain
        the consistency band.
    show_diagonal : bool, default True
        Draw the line of perfect calibration y = x (once per Axes).

    Returns
    -------
    matplotlib.axes.Axes
        The main Axes (the density panel, if any, is in ``ax.child_axes``).
    """
    from matplotlib.collections import LineCollection

    if not (np.isfinite(width_scale) and width_scale > 0):
        raise ValueError(f"width_scale must be a positive finite number, got {width_scale!r}")
    band, consistency, ticks, annotate, density_panel, show_diagonal = (
        _validate.flag(value, name) for value, name in
        ((band, "band"), (consistency, "consistency"), (ticks, "ticks"), (annotate, "annotate"),
         (density_panel, "density_panel"), (show_diagonal, "show_diagonal")))
    ax = _new_axes(ax, 5.0 * (1.0 + _PANEL_GAP + _PANEL_HEIGHT) if density_panel else 5.0)
    mesh = np.asarray(diagram.mesh, dtype=float)
    mu = np.asarray(diagram.mu, dtype=float)

    drew_consistency = False
    shaded = []  # the bands drawn, (lower, upper)
    undrawn = []  # what was asked for but has no two neighbouring mesh points where it is defined
    if consistency and diagram.consistency_lower is not None and diagram.consistency_upper is not None:
        lo, hi = np.asarray(diagram.consistency_lower, float), np.asarray(diagram.consistency_upper, float)
        if _drawable(lo, hi):
            consistency_band = ax.fill_between(
                mesh, lo, hi, where=np.isfinite(lo) & np.isfinite(hi), facecolor="0.55", alpha=0.22,
                edgecolor="0.4", hatch="////", linewidth=0.0, zorder=1.5, label="consistency band",
                gid="smoothece-consistency")
            drew_consistency = True
            shaded.append((lo, hi))
        else:
            undrawn.append("consistency band")

    if band and diagram.lower is not None and diagram.upper is not None:
        lo, hi = np.asarray(diagram.lower, float), np.asarray(diagram.upper, float)
        if _drawable(lo, hi):
            ax.fill_between(mesh, lo, hi, where=np.isfinite(lo) & np.isfinite(hi), color=color, alpha=0.25,
                            linewidth=0.0, zorder=2,
                            # a labelled model's band is told apart by its colour; one legend entry per model
                            label=f"{diagram.level:.0%} bootstrap band" if label is None else f"_{label} band",
                            gid="smoothece-band")
            shaded.append((lo, hi))
        else:
            undrawn.append("bootstrap band")

    segments, widths = _segment_widths(mesh, mu, np.asarray(diagram.density, dtype=float), float(width_scale))
    if not len(segments):
        undrawn.insert(0, "curve")
    curve = LineCollection(segments, colors=color, capstyle="round", joinstyle="round", zorder=3,
                           # a width even without segments: a legend entry reads the first
                           linewidths=widths if widths.size else [_MIN_WIDTH * width_scale],
                           label=label if label is not None else "smoothed reliability", gid="smoothece-curve")
    ax.add_collection(curve, autolim=False)
    if undrawn:
        finite = int(np.count_nonzero(np.isfinite(mu)))
        parts = undrawn[0] if len(undrawn) == 1 else ", ".join(undrawn[:-1]) + " and " + undrawn[-1]
        warnings.warn(f"the diagram's {parts} {'is' if len(undrawn) == 1 else 'are'} not drawn: "
                      f"defined at {finite} of {mesh.size} mesh points, no two of them neighbours (no rows within "
                      f"reach of the kernel elsewhere, at sigma = {diagram.sigma:.3g})", UserWarning, stacklevel=2)

    if ticks:
        # In the frame's margin, outside the unit square: the curve's ends at 0 and 1 stay visible.
        f = np.asarray(diagram.sample_f, dtype=float)
        y = np.asarray(diagram.sample_y, dtype=float)
        rug: Dict[str, Any] = dict(colors=color, linewidths=0.6, alpha=0.35, zorder=2.5)
        ax.vlines(f[y == 1], 1.0 + _RUG[0], 1.0 + _RUG[1], gid="smoothece-ticks-positive", **rug)
        ax.vlines(f[y == 0], -_RUG[1], -_RUG[0], gid="smoothece-ticks-negative", **rug)

    _frame(ax, show_diagonal, diagram.xlabel, diagram.ylabel)

    # What text must not cover: the curve (as thick as drawn, plus a little), its bands.
    _settle(ax)
    unit = _unit_points(ax, density_panel)
    regions = [_line_region(segments[:, :, 0].mean(axis=1), segments[:, :, 1].mean(axis=1),
                            (0.5 * widths.max() + 2.0) / unit if widths.size else 0.0)] if len(segments) else []
    regions += [_band(mesh, lo, hi) for lo, hi in shaded]
    corner, obstacles = None, list(regions)
    if annotate:
        text = _smece_text(diagram)
        if label is not None:
            text = f"{label}: {text}"
        corner, box = _annotate(ax, text, color, regions, density_panel)
        obstacles.append(_box_region(box))

    if drew_consistency:
        # The hatched band needs explaining; otherwise the annotation names the model and
        # a legend is left to the caller (``ax.legend()``). In a corner the annotation left
        # free where it covers no data: the whole legend, else only the hatched band's entry,
        # else that entry in a smaller font (else where it covers least).
        free = [c for c in _CORNERS if c != corner]
        free = free[1:] + free[:1] if corner is None else free  # lower right first, as ever
        handles, labels = ax.get_legend_handles_labels()
        alone = ([consistency_band], [consistency_band.get_label()])
        candidates = [((entries, size), free, *_legend_size(entries[1], size))
                      for entries, size in [((handles, labels), "small"), (alone, "small"), (alone, "x-small")]]
        obstacles.append(_line_region(_DIAGONAL, _DIAGONAL, 0.005, 0.5))
        ((handles, labels), size), loc, _ = _place(candidates, obstacles, unit)
        ax.legend(handles, labels, loc=loc, bbox_to_anchor=(0.0, 0.0, 1.0, 1.0), bbox_transform=ax.transData,
                  fontsize=size, framealpha=0.85)

    if density_panel:
        _density_panel(ax, diagram, color)
    return ax


def plot_reliability_diagram(f: ArrayLike, y: ArrayLike, ax: Optional[Axes] = None, **kw: Any) -> Axes:
    """Computes and draws the smoothed reliability diagram of ``(f, y)``.

    Parameters
    ----------
    f, y : array_like
        Predictions in [0, 1] and labels in {0, 1}.
    ax : matplotlib.axes.Axes, optional
        Axes to draw on; None creates a new figure.
    **kw
        ``weights``, ``sigma``, ``n_boot``, ``level``, ``seed``,
        ``consistency``, ``n_sim``, ``sample_size``, ``clip`` and ``threads``
        go to :func:`smoothece.reliability_diagram`; everything else to
        :func:`plot_diagram` (whose ``consistency`` option follows the
        computed one).

    Returns
    -------
    matplotlib.axes.Axes
        The Axes drawn on.
    """
    from .diagram import reliability_diagram

    compute = {k: v for k, v in kw.items() if k in _COMPUTE_KEYS}
    style = {k: v for k, v in kw.items() if k not in _COMPUTE_KEYS}
    diagram = reliability_diagram(f, y, **compute)
    return plot_diagram(diagram, ax=ax, **style)


def plot_binned_diagram(
    f: ArrayLike,
    y: ArrayLike,
    ax: Optional[Axes] = None,
    *,
    n_bins: int = 15,
    weights: Optional[ArrayLike] = None,
    strategy: str = "uniform",
    color: ColorType = "C1",
    show_counts: bool = False,
    clip: Union[bool, float] = False,
) -> Axes:
    """Draws the classic binned reliability diagram, for comparison.

    Each non-empty bin gets a bar over its extent up to its (weighted) mean
    label, and a marker at (mean prediction, mean label) in the bin; the
    markers are joined by a line. Empty bins are not drawn.

    Parameters
    ----------
    f, y : array_like
        Predictions in [0, 1] and labels in {0, 1}.
    ax : matplotlib.axes.Axes, optional
        Axes to draw on; None creates a new figure.
    n_bins : int, default 15
        Number of bins.
    weights : array_like, optional
        Non-negative row weights.
    strategy : {"uniform", "quantile"}, default "uniform"
        As in :func:`smoothece.measures.binned_calibration`, which computes
        the bins: equal-width bins on [0, 1] (the last closed at 1), or bins
        of equal (weighted) mass.
    color : color, default "C1"
        Colour of bars, markers and annotation.
    show_counts : bool, default False
        Write the number of rows of each bin at the foot of its bar.
    clip : bool or float, default False
        As in :func:`smoothece.smece`: False refuses predictions outside
        [0, 1], True clamps them, a number ``tol`` clamps those within
        ``[-tol, 1 + tol]``.

    Returns
    -------
    matplotlib.axes.Axes
        The Axes drawn on; the text ``binned ECE = v`` (the weighted L1
        binned ECE) is in ``ax.texts``.
    """
    from .measures import binned_calibration

    show_counts = _validate.flag(show_counts, "show_counts")
    b = binned_calibration(f, y, n_bins=n_bins, weights=weights, strategy=strategy, clip=clip)
    ax = _new_axes(ax)
    filled = b.filled
    left, right = b.edges[:-1][filled], b.edges[1:][filled]
    bars = ax.bar(left, b.mean_y[filled], width=right - left, align="edge", color=color, alpha=0.3,
                  edgecolor=color, linewidth=0.8, zorder=2, label=f"{n_bins} {strategy} bins",
                  gid="smoothece-bins")
    ax.plot(b.mean_f[filled], b.mean_y[filled], marker="o", markersize=4, color=color, linewidth=1.0,
            zorder=3, gid="smoothece-bin-means")
    if show_counts:
        for bar, n in zip(bars, b.count[filled]):
            # Upright at the foot of the bar, clear of the markers and the line; above
            # bars too short to hold the number.
            short = bar.get_height() < 0.12
            ax.annotate(f"{n}", (bar.get_x() + bar.get_width() / 2, bar.get_height() if short else 0.0),
                        xytext=(0, 5 if short else 3),
                        textcoords="offset points", ha="center", va="bottom", rotation=90,
                        fontsize="xx-small", color="0.25", gid="smoothece-count")
    _frame(ax, show_diagonal=True)
    # What the annotation must not cover: the bars (from 0 up to their mean label) and the markers' line.
    x = np.linspace(0.0, 1.0, 513)
    which = np.clip(np.searchsorted(right, x, side="left"), 0, max(right.size - 1, 0))
    in_bar = (x >= left[which]) & (x <= right[which]) if right.size else np.zeros(x.size, bool)
    tops = np.where(in_bar, b.mean_y[filled][which] if right.size else 0.0, np.nan)
    _settle(ax)
    unit = _unit_points(ax)
    regions = [_band(x, np.zeros_like(x), tops)]
    if right.size:
        means = np.interp(x, b.mean_f[filled], b.mean_y[filled], left=np.nan, right=np.nan)
        regions.append(_line_region(x, means, 4.0 / unit))
    _annotate(ax, f"binned ECE = {b.ece('l1'):.3f}", color, regions)
    return ax


# --- comparing models ----------------------------------------------------------------------------

#: Models one comparison draws at most: one colour each from matplotlib's default cycle.
_MAX_COMPARED = 10


def _decimals(values, significant: int = 2) -> int:
    """Decimals that show the smallest positive of ``values`` to ``significant`` digits (3 to 6)."""
    values = np.abs(np.asarray(values, dtype=float))
    values = values[np.isfinite(values) & (values > 0)]
    if not values.size:
        return 3
    return int(min(6, max(3, significant - 1 - np.floor(np.log10(values.min())))))


def _signed(value: float, digits: int) -> str:
    """A number with a real minus sign (as matplotlib writes tick labels)."""
    return f"{value:.{digits}f}".replace("-", "−")


def _comparison_text(comparison: Comparison, digits: Optional[int] = None, name: str = "smECE") -> str:
    """A :class:`~smoothece.Comparison` in two short lines (narrow Axes hold them in a legible font):
    ``a − b: Δ smECE = v, p = ...`` and ``95% CI lo to hi`` (``digits``: decimals; by default two
    significant digits of the interval's width)."""
    c = comparison
    if digits is None:
        digits = _decimals([c.high - c.low])
    a, b = (_text_name(n) for n in c.names)
    return (f"{a} − {b}: Δ {name} = {_signed(c.difference, digits)}, {format_paired_p(c.p_value, c.n_boot)}\n"
            f"{c.level:.0%} CI {_signed(c.low, digits)} to {_signed(c.high, digits)}")


def _diagram_regions(diagram, unit: float) -> list:
    """What text over a drawn diagram must not cover: its curve (as thick as drawn at most, plus a
    little) and its bootstrap band."""
    mesh, mu = np.asarray(diagram.mesh, float), np.asarray(diagram.mu, float)
    regions = [_line_region(mesh, mu, (0.5 * _MAX_WIDTH + 2.0) / unit)]
    if diagram.lower is not None and diagram.upper is not None:
        regions.append(_band(mesh, diagram.lower, diagram.upper))
    return regions


def _draw_comparison(ax, diagrams, names, comparisons, *, colors=None, ticks: bool = True) -> Axes:
    """Several models' diagrams overlaid on ``ax``, one colour each, with a legend naming each model
    with its SmoothECE and the ``comparisons`` (:class:`~smoothece.Comparison`) written one a line
    in the corner the curves and bands leave free (the legend in another)."""
    from matplotlib.lines import Line2D

    colors = [f"C{k}" for k in range(len(diagrams))] if colors is None else list(colors)
    for diagram, name, color in zip(diagrams, names, colors):
        # Named in the legend, not in an annotation each: the corner's text is the comparison.
        plot_diagram(diagram, ax=ax, color=color, annotate=False, consistency=False, ticks=ticks, label=name)
    _settle(ax)
    unit = _unit_points(ax)
    regions = [r for d in diagrams for r in _diagram_regions(d, unit)]
    name = "smECE" if diagrams[0].metric == "l1" else f"smECE[{diagrams[0].metric}]"
    digits = _decimals([c.high - c.low for c in comparisons])
    text = "\n".join(_comparison_text(c, digits, name) for c in comparisons)
    corner, box = _annotate(ax, text, "black", regions)
    ax.texts[-1].set_gid("smoothece-annotation-comparison")
    d = _decimals([dg.smece for dg in diagrams])
    handles = [Line2D([], [], color=color, linewidth=2.5) for color in colors[:len(diagrams)]]
    # A zero-width space before a name starting with "_": matplotlib < 3.10 drops such legend entries (warning).
    labels = [("\u200b" if n.startswith("_") else "") + f"{_text_name(n)}: {name} = {dg.smece:.{d}f}"
              for n, dg in zip(names, diagrams)]
    free = [c for c in _CORNERS if c != corner]
    obstacles = regions + [_box_region(box), _line_region(_DIAGONAL, _DIAGONAL, 0.005, 0.5)]
    candidates = [(size, free, *_legend_size(labels, size)) for size in ("small", "x-small")]
    size, loc, _ = _place(candidates, obstacles, unit)
    legend = ax.legend(handles, labels, loc=loc, bbox_to_anchor=(0.0, 0.0, 1.0, 1.0), bbox_transform=ax.transData,
                       fontsize=size, framealpha=0.85)
    legend.set_gid("smoothece-legend")
    return ax


def _text_name(name: str) -> str:
    """A model's name as text in a figure: not mathtext."""
    return str(name).replace("$", r"\$")


def plot_comparison(
    predictions: Union[Mapping[str, ArrayLike], Sequence[ArrayLike]],
    y: ArrayLike,
    *,
    weights: Optional[ArrayLike] = None,
    ax: Optional[Axes] = None,
    n_boot: int = 1000,
    level: float = 0.95,
    seed: Optional[int] = None,
    metric: str = "l1",
    weight_kind: Optional[str] = None,
    clip: Union[bool, float] = False,
    threads: Optional[int] = None,
    ticks: bool = True,
) -> Axes:
    """Draws several models' smoothed reliability diagrams on one Axes, with the
    difference of their SmoothECEs from :func:`smoothece.compare_models`.

    Parameters
    ----------
    predictions : mapping of name to predictions, or a sequence of arrays
        Each model's predictions of the same rows (2 to 10 models), as in
        :func:`smoothece.compare_models`.
    y, weights, n_boot, level, seed, metric, weight_kind, clip, threads
        As in :func:`smoothece.compare_models`; each diagram's bootstrap band
        uses the same ``n_boot``, ``level`` and seed.
    ax : matplotlib.axes.Axes, optional
        Axes to draw on; None creates a new figure.
    ticks : bool, default True
        Draw each model's rug of sampled predictions (:func:`plot_diagram`).

    Each model is drawn by :func:`plot_diagram` (curve and bootstrap band,
    colours C0, C1, ...); the legend names each with its SmoothECE, and the
    corner the curves leave free holds the difference SmoothECE(first) −
    SmoothECE(other) of the first model with each other one, with its paired
    bootstrap interval and the p-value of the test of equal calibration
    (not adjusted for the number of comparisons). ``seed=None`` draws a
    fresh seed; pass one to get the same numbers from
    :func:`smoothece.compare_models`.

    Returns
    -------
    matplotlib.axes.Axes
        The Axes drawn on.
    """
    from . import _validate
    from .compare import _named, compare_models
    from .diagram import reliability_diagram

    names, arrays = _named(predictions)
    if len(arrays) > _MAX_COMPARED:
        from ._errors import InputError

        raise InputError(f"plot_comparison draws at most {_MAX_COMPARED} models (one colour each), got "
                         f"{len(arrays)}; compare_models compares any number", "predictions")
    seed = _validate.seed(seed)  # one seed for the comparison and every band, drawn once when None
    result = compare_models(dict(zip(names, arrays)), y, weights=weights, metric=metric, n_boot=n_boot, level=level,
                            seed=seed, weight_kind=weight_kind, clip=clip, threads=threads)
    diagrams = [reliability_diagram(f, y, weights=weights, metric=metric, n_boot=n_boot, level=level, seed=seed,
                                    weight_kind=weight_kind, clip=clip, threads=threads) for f in arrays]
    comparisons = [result.pair(0, k) for k in range(1, len(names))]
    return _draw_comparison(_new_axes(ax), diagrams, names, comparisons, ticks=ticks)


def _drift_axis(keys: np.ndarray) -> np.ndarray:
    """Ordered keys as x values matplotlib can draw: pandas periods at their start."""
    keys = np.asarray(keys)
    if keys.dtype.kind == "O" and keys.size and type(keys[0]).__name__ == "Period":
        import pandas as pd  # period keys come from pandas, so it is installed

        return pd.PeriodIndex(keys).to_timestamp().to_numpy()
    return keys


def plot_groups(result: GroupedCalibration, ax: Optional[Axes] = None, *, max_groups: int = 40, alpha: float = 0.05,
                color: ColorType = "C0", flag_color: ColorType = "C3", p_values: Optional[bool] = None) -> Axes:
    """Draws a :class:`smoothece.GroupedCalibration`: a forest plot for categories,
    a drift plot for ordered keys (numbers, dates).

    Forest plot: one row per group, the ``max_groups`` largest SmoothECEs
    first, each a point with its bootstrap interval (when computed), and a
    column inside the Axes at the right with its row count and (when the
    test was run) its Benjamini–Hochberg adjusted p-value, ``p < 0.001`` at
    the resolution of the simulations. ``p_values`` True or False shows or
    hides that p-value; None shows it where the column leaves the data at
    least 60% of the Axes' width (the colour flags the groups either way).
    Drift plot: the SmoothECE over the keys, with the interval as a band.
    Groups whose adjusted p-value is at most ``alpha`` (when the test was
    run) are drawn in ``flag_color``.

    Everything but the group names (tick labels) and axis labels is drawn
    inside the Axes, so panels side by side do not overprint each other;
    long group names need a layout (``layout="constrained"``) as any tick
    labels do.

    Returns the Axes drawn on (a new figure when ``ax`` is None).
    """
    if isinstance(max_groups, bool) or not isinstance(max_groups, (int, np.integer)) or max_groups < 1:
        raise ValueError(f"max_groups must be a positive int, got {max_groups!r}")
    if p_values is not None and not isinstance(p_values, (bool, np.bool_)):
        raise TypeError(f"p_values must be a bool or None, got {p_values!r}")
    value = np.asarray(result.smece, dtype=float)
    low, high = np.asarray(result.low, dtype=float), np.asarray(result.high, dtype=float)
    flagged = np.asarray(result.p_adjusted, dtype=float) <= alpha
    has_interval = result.n_boot > 0
    name = "smECE" if result.metric == "l1" else f"smECE[{result.metric}]"
    if result.ordered:
        if ax is None:
            import matplotlib.pyplot as plt

            _, ax = plt.subplots(figsize=(7, 3.8), layout="constrained")
        keys = _drift_axis(result.keys)
        if has_interval:
            ax.fill_between(keys, low, high, color=color, alpha=0.2, linewidth=0, gid="smoothece-group-band",
                            label=f"{result.level:.0%} bootstrap interval")
        ax.plot(keys, value, marker="o", markersize=3, color=color, linewidth=1.2, gid="smoothece-group-line",
                label=name)
        if flagged.any():
            ax.plot(keys[flagged], value[flagged], linestyle="none", marker="o", markersize=5, color=flag_color,
                    gid="smoothece-group-flagged", label=f"miscalibrated (BH-adjusted p ≤ {alpha:g})")
        if keys.dtype.kind == "M":  # dates: short labels that do not overlap
            import matplotlib.dates as mdates

            locator = mdates.AutoDateLocator()
            ax.xaxis.set_major_locator(locator)
            ax.xaxis.set_major_formatter(mdates.ConciseDateFormatter(locator))
        ax.set_ylabel(f"SmoothECE ({name})")
        ax.set_ylim(bottom=0.0)
        ax.legend(loc="best", fontsize="small", frameon=False)
        return ax
    order = result.order("smece")[:max_groups]  # the worst at the top, NaN last
    rows = len(order)
    if ax is None:
        import matplotlib.pyplot as plt

        _, ax = plt.subplots(figsize=(6, 1.3 + 0.24 * rows), layout="constrained")
    where = np.arange(rows)[::-1]  # the largest at the top
    colors = [flag_color if flagged[i] else color for i in order]
    if has_interval:
        ax.hlines(where, low[order], high[order], colors=colors, linewidth=1.5, gid="smoothece-group-intervals")
    ax.scatter(value[order], where, c=colors, s=18, zorder=3, gid="smoothece-group-points")
    from .groups import format_keys

    labels = format_keys(result.keys)
    ax.set_yticks(where, [labels[i] for i in order])
    ax.set_ylim(-0.7, rows - 0.3)
    ax.set_xlabel(name + (f" ({result.level:.0%} bootstrap CI)" if has_interval else ""))

    # A text column at the right, inside the Axes (so that it never runs into a neighbouring
    # panel): each group's row count and, when tested, its BH-adjusted p-value. The data keep
    # the rest of the width.
    counts = [f"n={int(n):,}" for n in np.asarray(result.n)[order]]
    p_texts = [format_p(p, result.n_sim) for p in np.asarray(result.p_adjusted)[order]] if result.n_sim else []
    size = "small"
    gap = 0.8 * _points(size)
    n_width, p_width = _text_width(counts, size) + gap + 4.0, _text_width(p_texts, size) + gap  # points
    hidden = len(result) - rows
    title = f"{rows} of {len(result)} groups, largest first" if hidden else f"{rows} groups, largest first"
    if p_values is None:  # p-values where they leave the data at least 60% of the width
        _settle(ax)
        p_values = bool(p_texts) and (n_width + p_width) / max(_axes_points(ax)[0], 1.0) <= 0.4
    if not (p_values and p_texts):
        p_texts, p_width = [], 0.0
    if p_texts:
        title += f"\np: BH-adjusted; red: p ≤ {alpha:g}" if flagged.any() else "\np: BH-adjusted"
    elif flagged.any():
        title += f"\nred: BH-adjusted p ≤ {alpha:g}"
    ax.set_title(title, fontsize="small")
    _settle(ax)
    share = min((n_width + p_width) / max(_axes_points(ax)[0], 1.0), 0.6)  # of the Axes' width
    for y_at, n_text, p_text in zip(where, counts, p_texts or [None] * rows):
        ax.annotate(n_text, (1.0, y_at), xycoords=("axes fraction", "data"), xytext=(-4.0 - p_width, 0.0),
                    textcoords="offset points", ha="right", va="center", fontsize=size, color="0.3",
                    gid="smoothece-group-n")
        if p_text is not None:
            ax.annotate(p_text, (1.0, y_at), xycoords=("axes fraction", "data"), xytext=(-4.0, 0.0),
                        textcoords="offset points", ha="right", va="center", fontsize=size, color="0.3",
                        gid="smoothece-group-p")
    shown = np.concatenate([value[order], high[order] if has_interval else []])
    shown = shown[np.isfinite(shown)]
    right = 1.05 * float(shown.max()) if shown.size and shown.max() > 0 else 1.0
    ax.set_xlim(0.0, right / (1.0 - share))
    return ax
