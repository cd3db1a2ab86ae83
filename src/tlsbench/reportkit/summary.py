"""The answer first: one row per variant with the headline figure of each kind the run
measured, an overview chart of those figures, and the same as plain text for a terminal.

Each family says which figures it contributes (its sections' `summary`: SummaryCells,
src/tlsbench/scenarios/); this module only lays them out, so that a new family's figures
join the summary without a change here.
"""

from __future__ import annotations

import textwrap
from dataclasses import dataclass
from typing import TYPE_CHECKING

from tlsbench.reportkit.model import RunModel
from tlsbench.reportkit.palette import split, style
from tlsbench.reportkit.section import SummaryCell
from tlsbench.reportkit.views import View

if TYPE_CHECKING:
    from tlsbench.reportkit.plots import Plot

INTRO = (
    "The headline figure of each kind the run measured, one row per variant; each comes from "
    "one case of the tables below (the list under this table says which; medians, units in "
    "the headers)."
)

WIDTH = 100  # the terminal summary's prose lines wrap here (the table is as wide as it is)


@dataclass(frozen=True)
class Summary:
    columns: list[str]  # in report order: the sections' ranks
    variants: list[str]  # in the run's point order
    cells: dict[tuple[str, str], SummaryCell]  # (variant, column) -> its figure

    def cell(self, variant: str, column: str) -> SummaryCell | None:
        return self.cells.get((variant, column))

    def cases(self) -> list[tuple[str, str]]:
        """(column, where its figures come from): the case, or each case with the variants
        whose figure comes from it where they differ."""
        out = []
        for column in self.columns:
            by_case: dict[str, list[str]] = {}
            for variant in self.variants:
                cell = self.cell(variant, column)
                if cell is not None and cell.case:
                    by_case.setdefault(cell.case, []).append(variant)
            if len(by_case) == 1:
                out.append((column, next(iter(by_case))))
            elif by_case:
                ranked = sorted(by_case.items(), key=lambda item: -len(item[1]))
                out.append((column, "; ".join(f"{case} ({', '.join(variants)})"
                                              for case, variants in ranked)))  # fmt: skip
        return out


def summary(model: RunModel) -> Summary:
    """Every section's cells, a variant's first cell per column kept."""
    cells: dict[tuple[str, str], SummaryCell] = {}
    columns: list[str] = []
    for section in model.sections:
        for cell in section.summary(model):
            if cell.column not in columns:
                columns.append(cell.column)
            cells.setdefault((cell.variant, cell.column), cell)
    # By name, so that a library is found where the eye looks for it; the harness baseline
    # (null) last.
    variants = sorted({variant for variant, _ in cells}, key=lambda v: (split(v)[0] == "null", v))
    return Summary(columns, variants, cells)


def summary_view(model: RunModel) -> View | None:
    """The summary as a report table, None when no section has a figure."""
    found = summary(model)
    if not found.columns:
        return None
    rows, titles = [], []
    for variant in found.variants:
        cells = [found.cell(variant, column) for column in found.columns]
        rows.append([variant, *("-" if c is None else c.text for c in cells)])
        titles.append(["", *("" if c is None else c.case for c in cells)])
    where = "\n".join(f"{column}: {case}" for column, case in found.cases())
    details = [("Where each column comes from", where)] if where else []
    return View("summary", "Summary", INTRO, ["variant", *found.columns],
                [False, *(True for _ in found.columns)], rows, details, titles)  # fmt: skip


def text(model: RunModel) -> str:
    """The summary for a terminal: the run, the table in aligned columns, where each column
    comes from, and what went wrong (counts)."""
    run = model.run
    lines = [f"Run {run.id}, experiment {run.experiment} ({run.status}, "
             f"{run.repetitions} repetitions, {run.mode} mode)"]  # fmt: skip
    if run.question:
        lines += textwrap.wrap(run.question, WIDTH)
    view = summary_view(model)
    if view is None:
        lines.append("no figures: every point failed or was unsupported")
    else:
        # Headers wrap onto lines as wide as their column's figures (a terminal is narrow).
        heads = []
        for i, header in enumerate(view.headers):
            widest = max([len(row[i]) for row in view.rows] + [(len(header) + 1) // 2])
            heads.append(textwrap.wrap(header, widest, break_long_words=False) or [""])
        widths = [max(len(t) for t in [*head, *(row[i] for row in view.rows)])
                  for i, head in enumerate(heads)]  # fmt: skip
        depth = max(len(head) for head in heads)

        def aligned(row: list[str]) -> str:
            cells = zip(row, widths, view.numeric, strict=True)
            return "  ".join(c.rjust(w) if num else c.ljust(w) for c, w, num in cells).rstrip()

        lines.append("")
        for k in range(depth):  # a header's last line sits on the rule
            lines.append(aligned([h[k - depth + len(h)] if k >= depth - len(h) else ""
                                  for h in heads]))  # fmt: skip
        lines.append("  ".join("-" * w for w in widths))
        lines += [aligned(row) for row in view.rows]
        lines += ["", "Where each column comes from:"]
        for column, case in summary(model).cases():
            lines += textwrap.wrap(f"{column}: {case}", WIDTH, initial_indent="  ",
                                   subsequent_indent="      ", break_on_hyphens=False)  # fmt: skip
    bad = {status: sum(1 for p in model.problems if p.status == status)
           for status in ("unsupported", "failed")}  # fmt: skip
    if any(bad.values()):
        lines.append("")
        lines.append(", ".join(f"{n} point(s) {status}" for status, n in bad.items() if n)
                     + ": see the report's 'Unsupported and failed points'")  # fmt: skip
    warnings = sum(1 for n in model.notes if n.kind != "environment")
    if warnings:
        lines.append(f"{warnings} note(s) on figures that may be less trustworthy: see 'Notes'")
    return "\n".join(lines) + "\n"


def overview_plot(model: RunModel) -> Plot | None:
    """Small multiples: a panel per summary column, a bar per variant (its colour and
    hatch as in every plot) labelled with the figure, so that the run's answer reads at a
    glance. The harness baseline (null) stays in the table: beside it, libraries' bars
    would be slivers."""
    from matplotlib.ticker import FuncFormatter, MaxNLocator

    from tlsbench.reportkit.plots import Plot, figure

    found = summary(model)
    variants = [v for v in found.variants if split(v)[0] != "null"]

    def drawn(column: str) -> list[tuple[int, SummaryCell]]:
        cells = [(y, found.cell(v, column)) for y, v in enumerate(variants)]
        return [(y, c) for y, c in cells if c is not None and c.value is not None]

    # A panel where every figure is 0 (no interop failure) says nothing a bar could show.
    panels = [c for c in found.columns if any(cell.value for _, cell in drawn(c))]
    if not panels:
        return None
    per_row = min(3, len(panels))
    rows = -(-len(panels) // per_row)
    fig = figure(3.4 * per_row + 1.8, 0.9 + rows * (0.7 + 0.22 * len(variants)))
    axes = fig.subplots(rows, per_row, squeeze=False, sharey=True)
    thousands = FuncFormatter(lambda x, _: f"{x / 1000:g}k" if abs(x) >= 1000 else f"{x:g}")
    for index, ax in enumerate(axes.flat):
        if index >= len(panels):
            ax.set_visible(False)
            continue
        column = panels[index]
        cells = drawn(column)
        for y, cell in cells:
            bars = ax.barh(y, cell.value, height=0.7, **style(variants[y]).bar())
            ax.bar_label(bars, [cell.text], padding=2, fontsize="xx-small")
        ax.set_xlim(0, 1.35 * max(cell.value or 0 for _, cell in cells))  # room for labels
        counts = all(float(cell.value or 0).is_integer() for _, cell in cells)
        ax.xaxis.set_major_locator(MaxNLocator(4, integer=counts))
        ax.xaxis.set_major_formatter(thousands)
        ax.set_title(column, fontsize="small")
        ax.tick_params(axis="x", labelsize="x-small")
        ax.grid(axis="x", alpha=0.3)
        ax.set_yticks(range(len(variants)), variants, fontsize="x-small")
    axes.flat[0].invert_yaxis()  # the first variant on top, as in the table (shared y)
    title = f"Summary of run {model.run.id} ({model.run.experiment}): medians, one case per "
    fig.suptitle(title + "column (the summary table says which)", fontsize="small")
    return Plot("overview", "Overview: the summary's figures per variant", "summary", fig)
