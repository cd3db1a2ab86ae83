"""JSON: the run and every table as lists of objects, raw values (no rounding).

    {"format": "tlsbench-report", "version": 1, "run": {...},
     "tables": {"memory": [{...}, ...], "handshake_time": [...], ...}}

Raw samples stay in the store (`Store.samples`); NaN and infinities become null.
"""

from __future__ import annotations

import json
import math
from dataclasses import asdict
from typing import Any

from tlsbench.reportkit.model import RunModel

FORMAT_VERSION = 1


def _clean(value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: _clean(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_clean(v) for v in value]
    return value


class JsonExporter:
    name = "json"
    suffix = ".json"

    def render(self, model: RunModel) -> str:
        document = {
            "format": "tlsbench-report",
            "version": FORMAT_VERSION,
            "run": asdict(model.run),
            "runs": [asdict(r) for r in model.runs] or None,
            "tables": {
                t.name: [asdict(row) for row in t.rows] for t in model.tables() if t.name != "run"
            },
        }
        return json.dumps(_clean(document), indent=2, allow_nan=False) + "\n"
