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

from typing import TYPE_CHECKING, Any, Dict, Optional, Union

import numpy as np

from ._typing import ArrayLike

if TYPE_CHECKING:  # matplotlib is imported inside the functions, at draw time
    from matplotlib.axes import Axes
    from matplotlib.typing import ColorType

    from .diagram import ReliabilityDiagram
    from .groups import GroupedCalibration


__all__ = ["plot_diagram", "plot_reliability_diagram", "plot_binned_diagram", "plot_groups"]

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


def _frame(ax, show_diagonal: bool, xlabel: str = "Predicted probability",
           ylabel: str = "Observed frequency") -> None:
    """Unit square, equal aspect, axis labels and (once per Axes) the diagonal."""
    ax.set_xlim(0.0, 1.0)
    ax.set_ylim(0.0, 1.0)
    ax.set_aspect("equal", adjustable="box")
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    if show_diagonal and not any(line.get_gid() == "smoothece-diagonal" for line in ax.lines):
        ax.plot([0.0, 1.0], [0.0, 1.0], linestyle="--", color="0.5", linewidth=1.0, zorder=1,
                gid="smoothece-diagonal")


def _annotate(ax, text: str, color) -> None:
    """Writes ``text`` in the upper-left corner, below the tick-mark rug and
    below any earlier annotation of ours on the same Axes (so several models
    drawn on one Axes do not overprint each other)."""
    earlier = sum(t.get_text().count("\n") + 1 for t in ax.texts
                  if (t.get_gid() or "").startswith("smoothece-annotation"))  # lines written so far
    ax.text(0.04, 0.94 - 0.065 * earlier, text, transform=ax.transAxes, ha="left", va="top", color=color,
            fontsize="medium", zorder=5, gid="smoothece-annotation",
            bbox=dict(boxstyle="round,pad=0.25", facecolor="white", edgecolor="none", alpha=0.8))


def _smece_text(diagram, digits: int = 3) -> str:
    """``smECE = v ± w`` when the bootstrap interval is [v − w, v + w] to the digits shown,
    else ``smECE = v`` and ``95% CI lo–hi`` below it (two short lines fit narrow Axes).
    The interval of a calibrated model's SmoothECE lies above the estimate (replicates
    add noise), where ``± w`` would misstate it."""
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
        side = min(width, height / total)  # the diagram is square (equal aspect on the unit square)
        x0 = box.x0 + 0.5 * (width - side) / frame.width
        y0 = box.y0 + (0.5 * (height - side * total) + side * (total - 1.0)) / frame.height
        return Bbox.from_bounds(x0, y0, side / frame.width, side / frame.height)


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
    finite = np.concatenate([pos[np.isfinite(pos)], neg[np.isfinite(neg)]])
    panel.set_ylim(0.0, 1.08 * finite.max() if finite.size and finite.max() > 0 else 1.0)
    panel.set_xlim(0.0, 1.0)
    panel.set_ylabel("Density")
    panel.set_xlabel(ax.get_xlabel())
    panel.tick_params(axis="y", labelsize="small")
    panel.legend(loc="upper right", fontsize="x-small", frameon=False, ncols=2)
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
        curve would lie if the model were perfectly calibrated.
    ticks : bool, default True
        Draw a rug of the sampled predictions: rows with y = 1 at the top
        of the frame, rows with y = 0 at the bottom.
    annotate : bool, default True
        Write the SmoothECE in the upper-left corner: ``smECE = v ± w`` when
        the bootstrap interval is symmetric about ``v`` to the digits shown,
        else ``smECE = v`` with ``95% CI lo–hi`` on a second line (the
        interval of a well calibrated model lies above ``v``); ``smECE = v``
        without bootstrap.
    density_panel : bool, default False
        Add a panel under the diagram with the prediction densities of the
        rows with y = 1 and y = 0; it takes over the x axis label. Diagram
        and panel share the box of ``ax`` (so they fit in a grid of
        subplots); a new figure is made taller for the panel.
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
    ax = _new_axes(ax, 5.0 * (1.0 + _PANEL_GAP + _PANEL_HEIGHT) if density_panel else 5.0)
    mesh = np.asarray(diagram.mesh, dtype=float)
    mu = np.asarray(diagram.mu, dtype=float)

    drew_consistency = False
    if consistency and diagram.consistency_lower is not None and diagram.consistency_upper is not None:
        lo, hi = np.asarray(diagram.consistency_lower, float), np.asarray(diagram.consistency_upper, float)
        ax.fill_between(mesh, lo, hi, where=np.isfinite(lo) & np.isfinite(hi), facecolor="0.55", alpha=0.22,
                        edgecolor="0.4", hatch="////", linewidth=0.0, zorder=1.5,
                        label="consistency band", gid="smoothece-consistency")
        drew_consistency = True

    if band and diagram.lower is not None and diagram.upper is not None:
        lo, hi = np.asarray(diagram.lower, float), np.asarray(diagram.upper, float)
        ax.fill_between(mesh, lo, hi, where=np.isfinite(lo) & np.isfinite(hi), color=color, alpha=0.25,
                        linewidth=0.0, zorder=2,
                        # a labelled model's band is told apart by its colour; one legend entry per model
                        label=f"{diagram.level:.0%} bootstrap band" if label is None else f"_{label} band",
                        gid="smoothece-band")

    segments, widths = _segment_widths(mesh, mu, np.asarray(diagram.density, dtype=float), float(width_scale))
    curve = LineCollection(segments, linewidths=widths, colors=color, capstyle="round", joinstyle="round",
                           zorder=3, label=label if label is not None else "smoothed reliability",
                           gid="smoothece-curve")
    ax.add_collection(curve, autolim=False)

    if ticks:
        # x in data units, y in axes fraction: the rug hugs the frame at any size.
        f = np.asarray(diagram.sample_f, dtype=float)
        y = np.asarray(diagram.sample_y, dtype=float)
        rug: Dict[str, Any] = dict(transform=ax.get_xaxis_transform(), colors=color, linewidths=0.6, alpha=0.35,
                                   zorder=2.5)
        ax.vlines(f[y == 1], 0.965, 1.0, gid="smoothece-ticks-positive", **rug)
        ax.vlines(f[y == 0], 0.0, 0.035, gid="smoothece-ticks-negative", **rug)

    _frame(ax, show_diagonal, diagram.xlabel, diagram.ylabel)

    if annotate:
        text = _smece_text(diagram)
        if label is not None:
            text = f"{label}: {text}"
        _annotate(ax, text, color)

    if drew_consistency:
        # The hatched band needs explaining; otherwise the annotation names the model and
        # a legend is left to the caller (``ax.legend()``).
        ax.legend(loc="lower right", fontsize="small", framealpha=0.85)

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
    _annotate(ax, f"binned ECE = {b.ece('l1'):.3f}", color)
    return ax


def plot_groups(result: GroupedCalibration, ax: Optional[Axes] = None, *, max_groups: int = 40, alpha: float = 0.05,
                color: ColorType = "C0", flag_color: ColorType = "C3") -> Axes:
    """Draws a :class:`smoothece.GroupedCalibration`: a forest plot for categories,
    a drift plot for ordered keys (numbers, dates).

    Forest plot: one row per group, the ``max_groups`` largest SmoothECEs
    first, each a point with its bootstrap interval (when computed) and its
    row count at the right. Drift plot: the SmoothECE over the keys, with the
    interval as a band. Groups whose Benjamini–Hochberg adjusted p-value is
    at most ``alpha`` (when the test was run) are drawn in ``flag_color``.

    Returns the Axes drawn on (a new figure when ``ax`` is None).
    """
    if isinstance(max_groups, bool) or not isinstance(max_groups, (int, np.integer)) or max_groups < 1:
        raise ValueError(f"max_groups must be a positive int, got {max_groups!r}")
    value = np.asarray(result.smece, dtype=float)
    low, high = np.asarray(result.low, dtype=float), np.asarray(result.high, dtype=float)
    flagged = np.asarray(result.p_adjusted, dtype=float) <= alpha
    has_interval = result.n_boot > 0
    name = "smECE" if result.metric == "l1" else f"smECE[{result.metric}]"
    if result.ordered:
        if ax is None:
            import matplotlib.pyplot as plt

            _, ax = plt.subplots(figsize=(7, 3.8), layout="constrained")
        keys = np.asarray(result.keys)
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
        ax.legend(loc="upper left", fontsize="small", frameon=False)
        return ax
    order = np.argsort(-np.nan_to_num(value, nan=-1.0), kind="stable")[:max_groups]
    rows = len(order)
    if ax is None:
        import matplotlib.pyplot as plt

        _, ax = plt.subplots(figsize=(6, 1.2 + 0.24 * rows), layout="constrained")
    where = np.arange(rows)[::-1]  # the largest at the top
    colors = [flag_color if flagged[i] else color for i in order]
    if has_interval:
        ax.hlines(where, low[order], high[order], colors=colors, linewidth=1.5, gid="smoothece-group-intervals")
    ax.scatter(value[order], where, c=colors, s=18, zorder=3, gid="smoothece-group-points")
    ax.set_yticks(where, [str(k) for k in np.asarray(result.keys)[order]])
    counts = ax.secondary_yaxis("right")
    counts.set_yticks(where, [f"n={int(n):,}" for n in np.asarray(result.n)[order]])
    counts.tick_params(length=0, labelsize="small")
    ax.set_ylim(-0.7, rows - 0.3)
    ax.set_xlim(left=0.0)
    ax.set_xlabel(f"SmoothECE ({name})" + (f", {result.level:.0%} bootstrap intervals" if has_interval else ""))
    hidden = len(result) - rows
    title = f"{rows} of {len(result)} groups, largest first" if hidden else f"{rows} groups, largest first"
    if flagged.any():
        title += f"; red: BH-adjusted p ≤ {alpha:g}"
    ax.set_title(title, fontsize="small")
    return ax
