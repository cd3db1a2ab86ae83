"""The answer first: one row per variant with the headline figure of each kind the run
measured, an overview chart of those figures, and the same as plain text for a terminal.

Each family says which figures it contributes (its sections' `summary`: SummaryCells,
src/tlsbench/scenarios/); this module only lays them out, so that a new family's figures
join the summary without a change here.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from tlsbench.report.model import RunModel
from tlsbench.report.views import View
from tlsbench.scenarios.base import SummaryCell

if TYPE_CHECKING:
    from tlsbench.report.plots import Plot

INTRO = (
    "The headline figure of each kind the run measured, one row per variant; each comes from "
    "one case of the tables below (the list under this table says which; medians, units in "
    "the headers)."
)


@dataclass(frozen=True)
class Summary:
    columns: list[str]  # in report order: the sections' ranks
    variants: list[str]  # in the run's point order
    cells: dict[tuple[str, str], SummaryCell]  # (variant, column) -> its figure

    def cell(self, variant: str, column: str) -> SummaryCell | None:
        return self.cells.get((variant, column))

    def cases(self) -> list[tuple[str, str]]:
        """(column, where its figures come from): one case where every variant's figure
        shares it, else each variant's."""
        out = []
        for column in self.columns:
            found = {v: c.case for v in self.variants if (c := self.cell(v, column)) and c.case}
            if not found:
                continue
            if len(set(found.values())) == 1:
                out.append((column, next(iter(found.values()))))
            else:
                out.append((column, "; ".join(f"{v}: {case}" for v, case in found.items())))
        return out


def summary(model: RunModel) -> Summary:
    """Every section's cells, a variant's first cell per column kept."""
    from tlsbench.scenarios import sections

    cells: dict[tuple[str, str], SummaryCell] = {}
    columns: list[str] = []
    for section in sections():
        for cell in section.summary(model):
            if cell.column not in columns:
                columns.append(cell.column)
            cells.setdefault((cell.variant, cell.column), cell)
    named = {variant for variant, _ in cells}
    variants = [v for v in model.variants if v in named]
    variants += sorted(named - set(variants))  # a variant only a peer or server names
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
    details = [("Cases", "\n".join(f"{column}: {case}" for column, case in found.cases()))]
    return View("summary", "Summary", INTRO, ["variant", *found.columns],
                [False, *(True for _ in found.columns)], rows, details, titles)  # fmt: skip


def text(model: RunModel) -> str:
    """The summary for a terminal: the run, the table in aligned columns, where each column
    comes from, and what went wrong (counts)."""
    run = model.run
    lines = [f"tlsbench run {run.id}, experiment {run.experiment} ({run.status}, "
             f"{run.repetitions} repetitions, {run.mode} mode)"]  # fmt: skip
    if run.question:
        lines.append(run.question)
    view = summary_view(model)
    if view is None:
        lines.append("no figures: every point failed or was unsupported")
    else:
        table = [view.headers, *view.rows]
        widths = [max(len(row[i]) for row in table) for i in range(len(view.headers))]

        def aligned(row: list[str]) -> str:
            cells = zip(row, widths, view.numeric, strict=True)
            return "  ".join(c.rjust(w) if num else c.ljust(w) for c, w, num in cells).rstrip()

        lines += ["", aligned(view.headers), "  ".join("-" * w for w in widths)]
        lines += [aligned(row) for row in view.rows]
        lines += ["", "from:"] + [f"  {column}: {case}" for column, case in summary(model).cases()]
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
    hatch as in every plot), so that the run's answer reads at a glance."""
    from tlsbench.report.palette import style
    from tlsbench.report.plots import Plot, figure, wide

    found = summary(model)
    panels = [c for c in found.columns
              if any((cell := found.cell(v, c)) and cell.value is not None
                     for v in found.variants)]  # fmt: skip
    if not panels:
        return None
    per_row = min(3, len(panels))
    rows = -(-len(panels) // per_row)
    height = 0.9 + rows * (0.6 + 0.24 * len(found.variants))
    fig = figure(3.6 * per_row + 1.6, height)
    axes = fig.subplots(rows, per_row, squeeze=False, sharey=True)
    positions = range(len(found.variants))
    for index, ax in enumerate(axes.flat):
        if index >= len(panels):
            ax.set_visible(False)
            continue
        column = panels[index]
        values = []
        for y, variant in enumerate(found.variants):
            cell = found.cell(variant, column)
            if cell is None or cell.value is None:
                continue
            values.append(cell.value)
            ax.barh(y, cell.value, height=0.7, **style(variant).bar())
        if wide(values) and min(values) > 0:
            ax.set_xscale("log")
        ax.set_title(column, fontsize="small")
        ax.tick_params(axis="x", labelsize="x-small")
        ax.grid(axis="x", alpha=0.3)
        ax.set_yticks(list(positions), found.variants, fontsize="x-small")
    axes.flat[0].invert_yaxis()  # the first variant on top, as in the table (shared y)
    fig.suptitle(f"Summary of run {model.run.id} ({model.run.experiment})", fontsize="medium")
    return Plot("overview", "Overview: the summary's figures per variant", "summary", fig)
