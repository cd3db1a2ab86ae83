"""CSV: every table in ONE file, the `table` column saying which table a row belongs to.

One file keeps `tlsbench report --csv > out.csv` a single stream; the columns are the union
of all tables' columns (a row leaves the others empty), so a table is
`rows where table == "memory"`, e.g. `df[df.table == "memory"].dropna(axis=1, how="all")`.
Values are raw (no rounding, no separators): floats as Python prints them (exact round trip),
booleans as true/false, None as an empty cell.
"""

from __future__ import annotations

import csv
import io
from dataclasses import asdict
from typing import Any

from tlsbench.reportkit.model import RunModel


def _value(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


class CsvExporter:
    name = "csv"
    suffix = ".csv"

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
