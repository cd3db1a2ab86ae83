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
    variant: str
    point: str
    measure: str  # a slug: "latency", "instructions", "heap-peak", ...
    unit: str
    value: float
    lower: float | None = None  # 95 % CI, where the report has one
    upper: float | None = None
    higher_is_better: bool = False
    side: str = ""  # client / server, sender / receiver, write / read: where one per side
    detail: str = ""  # what else tells a point's figures apart (an AEAD and payload, ...)
    statistic: str = "value"  # "median" where the figure is a distribution's median

    @property
    def benchmark(self) -> str:
        """ "VARIANT POINT[ DETAIL][ SIDE]": a dashboard's name for the series."""
        return " ".join(p for p in (self.variant, self.point, self.detail, self.side) if p)


def metrics(model: RunModel) -> list[Metric]:
    """Every section's metrics, in report order (src/tlsbench/scenarios/)."""
    return [metric for section in model.sections for metric in section.metrics(model)]
