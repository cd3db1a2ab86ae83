"""Cost by function, as people read it: the report section of every point that stored each
side's cost by function (instruction mode, `modes.run_instructions`), and the text
`tlsbench explain` prints. The same view in both: per side, the groups (public-key
arithmetic, hashing, ... the table of tlsbench/core/cost_groups.toml) with their
instructions, share, atomic operations and calls per operation, summing exactly to the
side's instruction-mode figure, then the functions that cost most.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from tlsbench.core.costs import OBJECT_GROUP_PREFIX, SideCosts
from tlsbench.reportkit.section import Section, SummaryCell, TableSpec, first_per_variant
from tlsbench.reportkit.views import View, fmt_count, variant_cell

# Functions a report lists per side: more for handshakes, whose costs are spread.
TOP_HANDSHAKE = 8
TOP_OTHER = 3
HANDSHAKE_SCENARIOS = ("handshake", "resume")


@dataclass(frozen=True)
class CostGroupRow:
    """One group of one side's cost at a point, per operation (from one repetition: the
    counts are the same in every one)."""

    variant: str
    library: str
    point: str
    side: str
    group: str
    label: str
    instructions: float
    share: float  # of the side's instructions
    atomics: float
    calls: float


@dataclass(frozen=True)
class CostFunctionRow:
    """One of the functions that cost a side most at a point, per operation."""

    variant: str
    library: str
    point: str
    side: str
    rank: int
    function: str
    group: str
    source: str
    object: str
    instructions: float
    share: float
    atomics: float
    calls: float
    by: str  # "instructions" or "atomics": which ranking it is in


@dataclass(frozen=True)
class CostSideRow:
    """One side's totals at a point, and what its view has to say (objects without symbols)."""

    variant: str
    library: str
    point: str
    side: str
    instructions: float
    atomics: float
    functions: int
    notes: str


def group_rows(variant: str, library: str, point: str, costs: SideCosts) -> list[CostGroupRow]:
    n = costs.operations
    return [CostGroupRow(variant, library, point, costs.side, g.group, g.label,
                         g.instructions / n, g.instructions / costs.instructions
                         if costs.instructions else 0.0, g.atomics / n, g.calls / n)
            for g in costs.groups() if g.instructions or g.atomics]  # fmt: skip


def function_rows(variant: str, library: str, point: str, costs: SideCosts, top: int,
                  by: str = "instructions") -> list[CostFunctionRow]:  # fmt: skip
    n = costs.operations
    return [CostFunctionRow(variant, library, point, costs.side, rank, f.name, f.group,
                            f.source, f.object, f.instructions / n,
                            f.instructions / costs.instructions if costs.instructions else 0.0,
                            f.atomics / n, f.calls / n, by)
            for rank, f in enumerate(costs.top(top, by), start=1)]  # fmt: skip


def stored_costs(output: dict[str, Any]) -> dict[str, SideCosts]:
    """A result's stored cost by function per side, grouped by today's rule table."""
    return {side: SideCosts.from_json(data).regrouped()
            for side, data in (output.get("costs") or {}).items()}  # fmt: skip


def load_costs(reader: Any) -> dict[str, list[Any]]:
    """Every point's stored cost by function, from its first ok repetition that has one."""
    groups: list[CostGroupRow] = []
    functions: list[CostFunctionRow] = []
    sides: list[CostSideRow] = []
    for p in reader.points:
        found = next((stored_costs(r.output) for r in reader.ok(p)
                      if r.output and r.output.get("costs")), None)  # fmt: skip
        if not found:
            continue
        top = TOP_HANDSHAKE if p.scenario in HANDSHAKE_SCENARIOS else TOP_OTHER
        for side, costs in found.items():
            n = costs.operations
            sides.append(CostSideRow(p.variant, p.library, p.name, side, costs.instructions / n,
                                     costs.atomics / n, len(costs.functions),
                                     " ".join(costs.notes)))  # fmt: skip
            groups += group_rows(p.variant, p.library, p.name, costs)
            functions += function_rows(p.variant, p.library, p.name, costs, top)
            if costs.atomics:
                functions += function_rows(p.variant, p.library, p.name, costs, 3, "atomics")
    return {"cost_sides": sides, "cost_groups": groups, "cost_functions": functions}


def _pct(share: float) -> str:
    return f"{100 * share:.1f} %"


def cost_views(model: Any) -> list[View]:
    if not model.cost_sides:
        return []
    notes = [(f"{r.variant} {r.point} {r.side}", r.notes) for r in model.cost_sides if r.notes]
    return [
        View(
            "cost_groups",
            "Cost by function group",
            "Where each side's measured instructions go (instruction mode, callgrind: a "
            "function's own instructions, not its callees'), per operation, grouped by the "
            "rules of tlsbench/core/cost_groups.toml; the groups of a side sum exactly to its "
            "instruction count in the instructions table. `atomics`: bus-locking "
            "instructions (LOCK-prefixed, XCHG with memory); `calls`: entries into the "
            "group's functions. An object without symbols is one group of its own (its file).",
            ["variant", "point", "side", "group", "instructions", "share", "atomics", "calls"],
            [False, False, False, False, True, True, True, True],
            [[variant_cell(r), r.point, r.side, r.label, fmt_count(r.instructions),
              _pct(r.share), fmt_count(r.atomics), fmt_count(r.calls)]
             for r in model.cost_groups],
            details=notes,
        ),
        View(
            "cost_functions",
            "Top functions",
            "The functions that cost each side most, per operation: by instructions (the "
            f"first {TOP_HANDSHAKE} of a handshake or resumption, {TOP_OTHER} of a record or "
            "bulk point), then by atomic operations (the first 3) where the side has any.",
            ["variant", "point", "side", "by", "#", "function", "group", "object",
             "instructions", "share", "atomics", "calls"],
            [False, False, False, False, True, False, False, False, True, True, True, True],
            [[variant_cell(r), r.point, r.side, r.by, str(r.rank), r.function, r.group,
              r.object, fmt_count(r.instructions), _pct(r.share), fmt_count(r.atomics),
              fmt_count(r.calls)] for r in model.cost_functions],
        ),
    ]  # fmt: skip


def cost_summary(model: Any) -> list[SummaryCell]:
    """Per variant: the group that costs its client most, at its first handshake point."""
    handshake = [r for r in model.cost_sides if r.side == "client"]
    cells = []
    for side in first_per_variant(handshake):
        rows = [g for g in model.cost_groups if (g.variant, g.point, g.side) ==
                (side.variant, side.point, side.side)]  # fmt: skip
        if rows:
            top = max(rows, key=lambda g: g.instructions)
            cells.append(SummaryCell(side.variant, "client's largest group", top.share,
                                     f"{top.group} {_pct(top.share)}", side.point))  # fmt: skip
    return cells


SECTION = Section(
    "cost_by_function",
    61,
    (TableSpec("cost_sides", "cost_sides", None, CostSideRow),
     TableSpec("cost_groups", "cost_groups", "Cost by function group", CostGroupRow),
     TableSpec("cost_functions", "cost_functions", "Top functions", CostFunctionRow)),
    load_costs,
    views=cost_views,
    summary=cost_summary,
)  # fmt: skip


# ---------------------------------------------------------------------------- as text


def side_text(costs: SideCosts, top: int, label: str = "operation") -> list[str]:
    """One side's view in the terminal: its totals, groups and top functions."""
    n = costs.operations
    total = costs.instructions
    lines = [f"{costs.side}: {costs.per_operation(total):,.0f} instructions and "
             f"{costs.per_operation(costs.atomics):,.1f} atomic operations per {label} "
             f"({n} measured)"]  # fmt: skip
    lines.append(f"  {'group':<52} {'instructions':>13} {'share':>7} {'atomics':>9} "
                 f"{'calls':>10}")  # fmt: skip
    for g in costs.groups():
        if not (g.instructions or g.atomics):
            continue
        lines.append(f"  {g.label[:52]:<52} {g.instructions / n:>13,.0f} "
                     f"{100 * g.instructions / total if total else 0:>6.1f}% "
                     f"{g.atomics / n:>9,.1f} {g.calls / n:>10,.1f}")  # fmt: skip
    lines.append(f"  {'total (the instruction-mode figure)':<52} {total / n:>13,.0f} "
                 f"{100.0:>6.1f}% {costs.atomics / n:>9,.1f}")  # fmt: skip
    for by in ("instructions", "atomics"):
        ranked = costs.top(top, by)
        if not ranked:
            continue
        lines.append(f"  top functions by {by}:")
        lines.append(f"    {'function':<44} {'group':<12} {'object':<18} {'instructions':>12} "
                     f"{'share':>7} {'atomics':>8} {'calls':>9}")  # fmt: skip
        for f in ranked:
            name = f.name if len(f.name) <= 44 else f.name[:41] + "..."
            group = "no symbols" if f.group.startswith(OBJECT_GROUP_PREFIX) else f.group
            lines.append(f"    {name:<44} {group[:12]:<12} {f.object[:18]:<18} "
                         f"{f.instructions / n:>12,.0f} "
                         f"{100 * f.instructions / total if total else 0:>6.1f}% "
                         f"{f.atomics / n:>8,.1f} {f.calls / n:>9,.1f}")  # fmt: skip
    lines += [f"  note: {note}" for note in costs.notes]
    return lines


def side_json(costs: SideCosts, top: int) -> dict[str, Any]:
    """One side's view as data: totals and groups per operation, the top functions."""
    n = costs.operations
    return {
        "operations": n,
        "instructions": costs.instructions / n,
        "atomics": costs.atomics / n,
        "groups": [{"group": g.group, "label": g.label, "instructions": g.instructions / n,
                    "share": g.instructions / costs.instructions if costs.instructions else 0.0,
                    "atomics": g.atomics / n, "calls": g.calls / n,
                    "functions": g.functions} for g in costs.groups()],
        "top_functions": {by: [{"function": f.name, "group": f.group, "source": f.source,
                                "object": f.object, "instructions": f.instructions / n,
                                "atomics": f.atomics / n, "calls": f.calls / n}
                               for f in costs.top(top, by)]
                          for by in ("instructions", "atomics")},
        "unsymbolised": list(costs.unsymbolised),
        "notes": list(costs.notes),
    }  # fmt: skip
