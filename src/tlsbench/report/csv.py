"""CSV, two shapes.

`csv` (tidy data): one row per figure, with the columns

    run, variant, point, side, detail, metric, statistic, value, unit, note

so that pandas (`pd.read_csv`), R (`read.csv`) and DuckDB (`read_csv_auto`) load it without
knowing tlsbench: a figure is selected by filtering columns, never by parsing a name. The
figures are the report's metrics (reportkit/metrics.py: the same ones the dashboards get):
`side` is client / server, sender / receiver or write / read where a figure is per side,
`detail` what else tells a point's figures apart (an AEAD and payload, full or resumed, the
code-size target); `statistic` is `median` for a distribution's median (handshake time,
record latency, MB/s, AEAD cycles/byte), `value` for an exact figure (instructions, heap,
bytes), and `ci95_low` / `ci95_high` for the bounds of a median's 95 % confidence interval
(a row each); `note` says where a figure rests on fewer repetitions than the run asked for
("1 of 3 repetitions failed"). A report of several runs names them all in `run` (`1+2`),
and each row's variant carries its machine (`variant @ machine`).

`csv-wide`: every table of the report in ONE file, the `table` column saying which table a
row belongs to; the columns are the union of all tables' columns (a row leaves the others
empty), so a table is `df[df.table == "memory"].dropna(axis=1, how="all")`.

Values are raw in both (no rounding, no separators): floats as Python prints them (exact round
trip), booleans as true/false, None as an empty cell.
"""

from __future__ import annotations

import csv
import io
import math
from dataclasses import asdict
from typing import Any

from tlsbench.reportkit.metrics import metrics
from tlsbench.reportkit.model import RunModel

TIDY_COLUMNS = (
    "run", "variant", "point", "side", "detail", "metric", "statistic", "value", "unit", "note",
)  # fmt: skip


def _value(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


class CsvExporter:
    """Tidy data: one figure per row."""

    name = "csv"
    suffix = ".csv"

    def render(self, model: RunModel) -> str:
        runs = "+".join(str(r.id) for r in (model.runs or [model.run]))
        # A point whose figures rest on fewer repetitions than the run asked for says so.
        notes = {(r.variant, r.point): r.failed for rows in model.figures.values() for r in rows
                 if getattr(r, "failed", None)}  # fmt: skip
        buffer = io.StringIO()
        writer = csv.writer(buffer, lineterminator="\n")
        writer.writerow(TIDY_COLUMNS)
        for m in metrics(model):
            rows = [(m.statistic, m.value)]
            if m.lower is not None and m.upper is not None:
                rows += [("ci95_low", m.lower), ("ci95_high", m.upper)]
            for statistic, value in rows:
                if value is None or not math.isfinite(value):
                    continue
                note = notes.get((m.variant, m.point), "")
                writer.writerow([runs, m.variant, m.point, m.side, m.detail, m.measure,
                                 statistic, _value(value), m.unit, note])  # fmt: skip
        return buffer.getvalue()


class WideCsvExporter:
    """Every table of the report in one file, a `table` column naming each row's."""

    name = "csv-wide"
    suffix = ".wide.csv"

    def render(self, model: RunModel) -> str:
        tables = model.tables()
        columns = list(dict.fromkeys(c for t in tables for c in t.columns()))
        buffer = io.StringIO()
        writer = csv.writer(buffer, lineterminator="\n")
        writer.writerow(["table", *columns])
        for t in tables:
            for row in t.rows:
                values = asdict(row)
                writer.writerow([t.name, *(_value(values.get(c)) for c in columns)])
        return buffer.getvalue()
