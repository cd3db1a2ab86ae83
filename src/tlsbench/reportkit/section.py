"""A report section: what a scenario family contributes to the report (its tables, how it
reads its rows from the store, its views, plots, metrics and summary cells). The families
(src/tlsbench/scenarios/) make sections; the kit's functions lay out whatever sections the
model was loaded with, so that the kit never reaches up to the families."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from tlsbench.reportkit.model import RunModel
    from tlsbench.reportkit.plots import Plot
    from tlsbench.reportkit.reader import RunReader
    from tlsbench.reportkit.views import View


@dataclass(frozen=True)
class TableSpec:
    """One table of a section: its attribute on the model (model.handshakes), its name in
    exports (handshake_time), title and row type. No title: data for plots only."""

    attr: str
    name: str
    title: str | None
    row_type: type


@dataclass(frozen=True)
class SummaryCell:
    """One figure a section gives a per-library summary: for a variant, under a column."""

    variant: str
    column: str  # "handshake ms"
    value: float | None
    text: str  # as the summary shows it
    case: str = ""  # which of the variant's points it comes from, where several


@dataclass(frozen=True)
class Section:
    """A family's part of the report: tables in report order, by rank (certificates 5,
    firmware 10, handshakes 20, code size 30, records 40, connections 45, AEAD 50,
    instructions 60, interop 70, load 80: a new family takes a rank between those it belongs
    between)."""

    name: str
    rank: int
    tables: tuple[TableSpec, ...]
    load: Callable[[RunReader], dict[str, list[Any]]]
    views: Callable[[RunModel], list[View]] = lambda model: []
    plots: Callable[[RunModel], list[Plot]] = lambda model: []
    metrics: Callable[[RunModel], list[Any]] = lambda model: []
    summary: Callable[[RunModel], list[SummaryCell]] = lambda model: []


def first_per_variant(rows: list[Any]) -> list[Any]:
    """A summary's pick where a variant has several points: each variant's row of the case
    most variants share (so that a summary column compares like with like: server-only
    beside server-only authentication), else its first row; in the rows' order."""
    shared: dict[str, set[str]] = {}
    for row in rows:
        shared.setdefault(getattr(row, "case", ""), set()).add(row.variant)
    rank = {case: (-len(variants), i) for i, (case, variants) in enumerate(shared.items())}
    best: dict[str, Any] = {}
    for row in rows:
        held = best.get(row.variant)
        if held is None or rank[getattr(row, "case", "")] < rank[getattr(held, "case", "")]:
            best[row.variant] = row
    order = {id(row): i for i, row in enumerate(rows)}
    return sorted(best.values(), key=lambda row: order[id(row)])


def joined_views(*makers: Callable[[RunModel], list[View]]) -> Callable[[RunModel], list[View]]:
    """A section's views: each maker's, in order."""
    return lambda model: [v for make in makers for v in make(model)]


def joined_plots(
    *makers: Callable[[RunModel], Plot | None],
) -> Callable[[RunModel], list[Plot]]:
    """A section's plots: each maker's that has data, in order."""
    return lambda model: [p for make in makers if (p := make(model)) is not None]
