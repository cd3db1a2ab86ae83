"""github-action-benchmark JSON, tool `customSmallerIsBetter`:

    [{"name": "...", "unit": "...", "value": V, "range": "± R", "extra": "..."}, ...]

That tool takes one direction per file, so every figure is given smaller-is-better: times
in ns, instructions, bytes, allocations; the rates are turned into their inverse (a
handshake's ns is already there; MB/s becomes ns per byte). `range` is half the 95 % CI
where the report has one.
"""

from __future__ import annotations

import json
import math
from typing import Any

from tlsbench.reportkit.metrics import metrics
from tlsbench.reportkit.model import RunModel


class GabExporter:
    name = "gab"
    suffix = ".gab.json"

    def render(self, model: RunModel) -> str:
        entries: list[dict[str, Any]] = []
        for m in metrics(model):
            if m.measure == "throughput":
                continue  # handshakes/s: its time per handshake is there already
            value, lower, upper, unit = m.value, m.lower, m.upper, m.unit
            if m.higher_is_better:  # MB/s -> ns per byte (1e9 / (MB/s * 1e6))
                if value <= 0:
                    continue
                value, unit = 1000.0 / value, "ns/byte"
                lower, upper = (1000.0 / upper if upper else None,
                                1000.0 / lower if lower else None)  # fmt: skip
            if not math.isfinite(value):
                continue
            entry: dict[str, Any] = {"name": f"{m.benchmark} {m.measure}", "unit": unit,
                                     "value": value}  # fmt: skip
            if lower is not None and upper is not None and math.isfinite(lower + upper):
                entry["range"] = f"± {(upper - lower) / 2:.6g}"
            entries.append(entry)
        return json.dumps(entries, indent=2, allow_nan=False) + "\n"
