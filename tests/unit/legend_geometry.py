"""Where a plot's legends sit against its data, in display coordinates after drawing: what a
reader would see covered. A helper of the plot tests, not of the report."""

from __future__ import annotations

import numpy as np
from matplotlib.axes import Axes
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.collections import PathCollection
from matplotlib.container import BarContainer
from matplotlib.figure import Figure
from matplotlib.legend import Legend
from matplotlib.transforms import Bbox

SLACK = 1.0  # display pixels: a legend frame touching a point's centre is not covering it


def within(points: np.ndarray, box: Bbox, margin: float) -> np.ndarray:
    """Which points lie inside the box grown by margin (shrunk where margin < 0)."""
    xs, ys = points[:, 0], points[:, 1]
    return (
        (xs > box.x0 - margin) & (xs < box.x1 + margin)
        & (ys > box.y0 - margin) & (ys < box.y1 + margin)
    )  # fmt: skip


def bars(ax: Axes) -> list[Bbox]:
    """The display boxes of the axes' bars (none of zero size)."""
    boxes = [
        patch.get_window_extent()
        for container in ax.containers
        if isinstance(container, BarContainer)
        for patch in container.patches
    ]
    return [box for box in boxes if box.width > 0 and box.height > 0]


def data_points(ax: Axes) -> np.ndarray:
    """The display positions of the data an axes shows: line vertices (error bars and caps
    included) and scatter offsets, only those inside the axes (a clipped point is not shown,
    so nothing can hide it). Bars are boxes: bars()."""
    found: list[np.ndarray] = [np.empty((0, 2))]
    for line in ax.get_lines():
        xy = np.asarray(line.get_xydata(), dtype=float).reshape(-1, 2)
        found.append(line.get_transform().transform(xy))
    for collection in ax.collections:  # scatter markers
        if isinstance(collection, PathCollection):
            offsets = np.asarray(collection.get_offsets(), dtype=float).reshape(-1, 2)
            found.append(collection.get_offset_transform().transform(offsets))
    points = np.concatenate(found)
    points = points[np.isfinite(points).all(axis=1)]
    return points[within(points, ax.get_window_extent(), SLACK)]


def covers(box: Bbox, points: np.ndarray) -> int:
    """How many points lie inside the box (less a pixel of slack each side)."""
    return int(within(points, box, -SLACK).sum())


def overlaps(a: Bbox, b: Bbox) -> bool:
    return (min(a.x1, b.x1) - max(a.x0, b.x0) > SLACK
            and min(a.y1, b.y1) - max(a.y0, b.y0) > SLACK)  # fmt: skip


def legend_problems(fig: Figure) -> list[str]:
    """What is wrong with where the figure's legends sit: each legend (an axes' own or the
    figure's) that covers a data point or a bar of any axes, or that reaches past the
    figure's edge. Empty when every legend leaves the data in view."""
    FigureCanvasAgg(fig).draw()
    renderer = fig.canvas.get_renderer()  # type: ignore[attr-defined]
    legends: list[tuple[str, Legend]] = [(f"figure legend {i}", leg)
                                         for i, leg in enumerate(fig.legends)]  # fmt: skip
    for i, ax in enumerate(fig.axes):
        if ax.get_legend() is not None:
            legends.append((f"legend of axes {i} ({ax.get_title()})", ax.get_legend()))
    problems = []
    whole = fig.bbox
    for name, legend in legends:
        box = legend.get_window_extent(renderer)
        if (box.x0 < whole.x0 - SLACK or box.y0 < whole.y0 - SLACK
                or box.x1 > whole.x1 + SLACK or box.y1 > whole.y1 + SLACK):  # fmt: skip
            problems.append(f"{name} reaches past the figure ({box.bounds} in {whole.bounds})")
        for i, ax in enumerate(fig.axes):
            hidden = covers(box, data_points(ax))
            hidden_bars = sum(overlaps(box, bar) for bar in bars(ax))
            if hidden or hidden_bars:
                problems.append(f"{name} hides {hidden} data points and {hidden_bars} bars of "
                                f"axes {i} ({ax.get_title()})")  # fmt: skip
    return problems
