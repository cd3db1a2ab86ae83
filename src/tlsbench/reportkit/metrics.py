"""A run's figures as flat metrics, for the dashboards CI jobs feed (bmf.py, gab.py).

One metric per figure of the report's tables, named by variant, point and (where a figure
is per side or per operation) side: the same figures as the report, computed once by the
model, with their 95 % CI where the model has one. Rates (handshakes/s, MB/s) are marked
higher-is-better; everything else is lower-is-better.
"""

from __future__ import annotations

from dataclasses import dataclass

from tlsbench.reportkit.model import RunModel


@dataclass(frozen=True)
class Metric:
    benchmark: str  # "VARIANT POINT[ SIDE]"
    measure: str  # a slug: "latency", "instructions", "heap-peak", ...
    unit: str
    value: float
    lower: float | None = None  # 95 % CI, where the report has one
    upper: float | None = None
    higher_is_better: bool = False


def metrics(model: RunModel) -> list[Metric]:
    """Every section's metrics, in report order (src/tlsbench/scenarios/)."""
    return [metric for section in model.sections for metric in section.metrics(model)]
