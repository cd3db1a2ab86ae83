"""Bencher Metric Format (BMF) JSON: what `bencher run --adapter json` reads.

    {"BENCHMARK": {"MEASURE": {"value": V, "lower_value": L, "upper_value": U}}}

One benchmark per variant, point and (where the figure is per side or per operation) side;
measures by slug (Bencher creates a measure the first time it sees its slug): latency (ns,
Bencher's built-in), throughput (handshakes/s, built-in), instructions, atomics, heap-peak,
heap-retained, stack, allocations, wire-bytes, round-trips, code-size (bytes),
throughput-mbps, cycles-per-byte. lower_value / upper_value are the 95 % CI where the
report has one.
"""

from __future__ import annotations

import json
import math
from typing import Any

from tlsbench.reportkit.metrics import metrics
from tlsbench.reportkit.model import RunModel


class BmfExporter:
    name = "bmf"
    suffix = ".bmf.json"

    def render(self, model: RunModel) -> str:
        document: dict[str, dict[str, dict[str, Any]]] = {}
        for m in metrics(model):
            if not math.isfinite(m.value):
                continue
            entry: dict[str, Any] = {"value": m.value}
            if m.lower is not None and m.upper is not None and math.isfinite(m.lower + m.upper):
                entry["lower_value"], entry["upper_value"] = m.lower, m.upper
            document.setdefault(m.benchmark, {})[m.measure] = entry
        return json.dumps(document, indent=2, allow_nan=False) + "\n"
