"""Plots of a run (matplotlib, Agg): each written as PNG and SVG, each skipped without data.

Figures are built with `matplotlib.figure.Figure`, never pyplot, so nothing global (open
figure lists, the interactive backend) is involved; SVG output is made reproducible (fixed
id salt, no date) so that two reports of one run are byte-identical.
"""

from __future__ import annotations

import io
import math
import re
import textwrap
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import matplotlib

matplotlib.use("Agg")  # never a display: reports are written on build machines and in CI

from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.legend import Legend

from tlsbench.reportkit.model import RunModel
from tlsbench.reportkit.palette import Style
from tlsbench.reportkit.palette import style as variant_style

WIDE_RANGE = 20.0  # a log axis once the largest value is this many times the smallest


@dataclass(frozen=True)
class Plot:
    name: str  # file stem
    title: str
    section: str  # the model table it illustrates
    figure: Figure


def styles(model: RunModel) -> dict[str, Style]:
    """The look of each of the run's variants (palette.py: the same in every report)."""
    return {v: variant_style(v) for v in model.variants}


def figure(width: float = 9.0, height: float = 4.8) -> Figure:
    return Figure(figsize=(width, height), layout="constrained")


def legend(fig: Figure, title: str | None = None, fontsize: str = "small") -> Legend | None:
    """The figure's one legend, beside its axes on the right, never over them: a legend inside
    an axes hides whatever data runs under it (tests/unit/test_legends.py). One entry per
    label over every axes (panels repeat their series); as many columns as it takes to fit
    the figure's height, and the figure made wider by the legend's width, so that the axes
    keep the room they were drawn for (constrained layout puts the legend beside them)."""
    handles: list[Any] = []
    labels: list[str] = []
    for ax in fig.axes:
        for handle, label in zip(*ax.get_legend_handles_labels(), strict=True):
            if label not in labels:
                handles.append(handle)
                labels.append(label)
    if not labels:
        return None

    def place(columns: int) -> Legend:
        return fig.legend(handles, labels, loc="outside right upper", ncols=columns,
                          fontsize=fontsize, title=title, title_fontsize="x-small")  # fmt: skip

    room = 0.92 * fig.get_figheight() * fig.dpi  # less the margins
    placed = place(1)
    tall = placed.get_window_extent().height
    if tall > room:
        placed.remove()
        placed = place(math.ceil(tall / room))
    fig.set_figwidth(fig.get_figwidth() + placed.get_window_extent().width / fig.dpi)
    return placed


def short(label: str) -> str:
    """Suite names as experiment point names write them (TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256
    -> ECDHE_RSA_AES_128_GCM_SHA256): the same information, room for the plot."""
    return re.sub(r"\bTLS_", "", label).replace("_WITH_", "_")


def wrap(label: str, width: int = 22) -> str:
    """Wraps at spaces and, inside long option values, after underscores."""
    lines = textwrap.wrap(
        short(label).replace("_", "_ "), width, break_long_words=False, break_on_hyphens=False
    )
    return "\n".join(line.replace("_ ", "_") for line in lines)


def wide(values: Sequence[float]) -> bool:
    positive = [v for v in values if v > 0]
    return bool(positive) and max(positive) / min(positive) > WIDE_RANGE


# A bar series: label, value per category, 95 % CI per category (may be empty), bar style.
Series = tuple[str, dict[str, float], dict[str, tuple[float, float]], dict[str, Any]]


def grouped_bars(ax: Axes, categories: list[str], series: list[Series]) -> None:
    """Bars per category, one per series (label, value per category, CI, bar style)."""
    width = 0.8 / max(len(series), 1)
    for i, (label, values, cis, style) in enumerate(series):
        xs = [c for c in range(len(categories)) if categories[c] in values]
        ys = [values[categories[c]] for c in xs]
        errs = None
        if cis:
            lows = [max(values[categories[c]] - cis[categories[c]][0], 0.0) for c in xs]
            highs = [max(cis[categories[c]][1] - values[categories[c]], 0.0) for c in xs]
            errs = [lows, highs]
        offset = (i - (len(series) - 1) / 2) * width
        ax.bar([x + offset for x in xs], ys, width, yerr=errs, label=label, capsize=2, **style)
    # Labels are option lists ("TLS 1.3 TLS_AES_128_GCM_SHA256 ..."): one option a line.
    ax.set_xticks(range(len(categories)), [wrap(c) for c in categories], fontsize="small")
    ax.grid(axis="y", alpha=0.3)


def svg_text(fig: Figure) -> str:
    buffer = io.StringIO()
    # A fixed id salt keeps the file stable from run to run; fonttype none keeps text text.
    with matplotlib.rc_context({"svg.hashsalt": "tlsbench", "svg.fonttype": "none"}):
        fig.savefig(buffer, format="svg", metadata={"Date": None})
    return buffer.getvalue()


def png_bytes(fig: Figure, dpi: int = 110) -> bytes:
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=dpi, metadata={"Software": None})
    return buffer.getvalue()


def inline_svg(svg: str, prefix: str) -> str:
    """An SVG file made fit to sit inside HTML: no XML prologue, DOCTYPE or RDF metadata
    (which names external URLs), and ids prefixed so that two plots never share one."""
    svg = svg[svg.index("<svg") :]
    svg = re.sub(r"<metadata>.*?</metadata>\s*", "", svg, flags=re.DOTALL)
    ids = set(re.findall(r'\bid="([^"]+)"', svg))
    if ids:
        pattern = re.compile(
            r'(\bid="|url\(#|href="#)('
            + "|".join(map(re.escape, sorted(ids, key=len, reverse=True)))
            + r")\b"
        )
        svg = pattern.sub(lambda m: f"{m.group(1)}{prefix}{m.group(2)}", svg)
    return svg
