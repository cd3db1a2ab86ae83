"""The library's own AEAD API: the `aead` scenario.

A point seals and opens records of `payload` bytes with 12 bytes of AD through the
library's AEAD (no TLS), timed in batches by the driver; `aead` names one algorithm or all
the driver knows. In instruction mode each point counts one algorithm at one payload.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from tlsbench.core.points import RunPoint
from tlsbench.driver.declaration import Declared
from tlsbench.driver.process import Outcome
from tlsbench.reportkit.metrics import Metric
from tlsbench.reportkit.reader import RunReader
from tlsbench.reportkit.section import Section, SummaryCell, TableSpec, first_per_variant
from tlsbench.reportkit.views import View, fmt_sig, variant_cell
from tlsbench.scenarios import modes
from tlsbench.scenarios.base import Family, RunContext

if TYPE_CHECKING:
    from tlsbench.reportkit.model import RunModel
    from tlsbench.reportkit.plots import Plot
    from tlsbench.reportkit.views import View


class Aead(Family):
    def accepts(self, scenario: str, declared: Declared) -> tuple[str, ...]:
        return (*declared.scenario(scenario).options, "accel", "iterations", "warmup")

    def run(self, point: RunPoint, ctx: RunContext) -> Outcome:
        build = ctx.builds[point.variant]
        if ctx.mode == "instructions":
            return modes.run_instructions(point, build, ctx.timeout)
        return modes.run_measured(point, build, ctx.timeout)


@dataclass(frozen=True)
class AeadRow:
    variant: str
    library: str
    point: str
    aead: str
    payload: int
    ad: int
    runs: int  # measurements over all repetitions
    repetitions: int
    tsc_cycles_per_byte: float  # seal (encrypt + tag)
    ns_per_byte: float
    mbps: float
    failed: str = ""  # "2 of 5 repetitions failed" where the figures rest on fewer
    machine: str = ""  # where the run spans several machines: the one(s) this row ran on
    open_tsc_cycles_per_byte: float | None = None  # open (decrypt + tag check)
    batch: int | None = None  # operations per timed region (one sample = one batch)


def load_aead(reader: RunReader) -> dict[str, list[Any]]:
    rows = []
    for p in reader.points_of(FAMILY.scenarios, ok=False):
        measured: dict[tuple[str, int], list[dict[str, Any]]] = {}
        for result in reader.ok(p):
            for item in (result.output or {}).get("aead", []):
                measured.setdefault((str(item["aead"]), int(item["payload"])), []).append(item)
        for (name, payload), items in measured.items():
            rows.append(
                AeadRow(
                    variant=p.variant,
                    library=p.library,
                    point=p.name,
                    aead=name,
                    payload=payload,
                    ad=int(items[0].get("ad", 0)),
                    runs=sum(int(i.get("runs", 0)) for i in items),
                    repetitions=len(items),
                    tsc_cycles_per_byte=statistics.median(
                        float(i["tsc_cycles_per_byte"]) for i in items
                    ),
                    ns_per_byte=statistics.median(float(i["ns_per_byte"]) for i in items),
                    mbps=statistics.median(float(i["MBps"]) for i in items),
                    open_tsc_cycles_per_byte=(
                        statistics.median(float(i["open_tsc_cycles_per_byte"]) for i in items)
                        if all("open_tsc_cycles_per_byte" in i for i in items)
                        else None
                    ),
                    batch=min(int(i["batch"]) for i in items)
                    if all("batch" in i for i in items)
                    else None,
                )
            )
    # Points come in name order, where "16384B" sorts before "16B": order each variant's
    # rows by AEAD and payload size (as a number), variants as the run has them.
    order = {v: i for i, v in enumerate(dict.fromkeys(p.variant for p in reader.points))}
    return {"aead": sorted(rows, key=lambda r: (order[r.variant], r.aead, r.payload))}


def aead_view(model: RunModel) -> list[View]:
    if not model.aead:
        return []
    return [
        View(
            "aead",
            "AEAD cost",
            "The library's own AEAD API, 12-byte AD; TSC cycles (fixed-rate time-stamp "
            "counter) and ns per byte of payload, median over repetitions; seal = encrypt "
            "+ tag, open = decrypt + tag check; timed in batches of operations long "
            "enough that the timer's steps do not quantise the figure.",
            ["variant", "AEAD", "payload", "runs", "batch", "seal cycles/byte",
             "open cycles/byte", "seal ns/byte", "seal MB/s"],
            [False, False, True, True, True, True, True, True, True],
            [
                [variant_cell(r), r.aead, f"{r.payload:,}", f"{r.runs:,}",
                 "-" if r.batch is None else f"{r.batch:,}",
                 fmt_sig(r.tsc_cycles_per_byte), fmt_sig(r.open_tsc_cycles_per_byte),
                 fmt_sig(r.ns_per_byte), fmt_sig(r.mbps)]
                for r in model.aead
            ],
        )
    ]  # fmt: skip


def aead_cycles(model: RunModel) -> Plot | None:
    from tlsbench.reportkit.plots import Plot, Series, figure, grouped_bars, legend, styles, wide

    if not model.aead:
        return None
    palette = styles(model)
    algorithms = list(dict.fromkeys(r.aead for r in model.aead))
    fig = figure(4.0 * len(algorithms) + 1.0, 4.5)
    axes = fig.subplots(1, len(algorithms), sharey=True, squeeze=False)[0]
    for ax, algorithm in zip(axes, algorithms, strict=True):
        rows = [r for r in model.aead if r.aead == algorithm]
        categories = [f"{p:,}" for p in sorted({r.payload for r in rows})]
        series: list[Series] = []
        for variant in dict.fromkeys(r.variant for r in rows):
            values = {f"{r.payload:,}": r.tsc_cycles_per_byte for r in rows if r.variant == variant}
            series.append((variant, values, {}, palette[variant].bar()))
        grouped_bars(ax, categories, series)
        ax.set_title(algorithm)
        ax.set_xlabel("payload (bytes)")
    if wide([r.tsc_cycles_per_byte for r in model.aead]):
        axes[0].set_yscale("log")
    axes[0].set_ylabel("TSC cycles per byte")
    legend(fig)
    fig.suptitle("AEAD cost (12-byte AD)")
    return Plot("aead_cycles_per_byte", "AEAD cycles per byte", "aead", fig)


def aead_metrics(model: RunModel) -> list[Any]:
    return [Metric(a.variant, a.point, "cycles-per-byte", "TSC cycles/byte",
                   a.tsc_cycles_per_byte, detail=f"{a.aead} {a.payload}B", statistic="median")
            for a in model.aead]  # fmt: skip


def aead_summary(model: RunModel) -> list[SummaryCell]:
    """Per variant: seal cycles/byte of its largest payload of its first AEAD."""
    largest = sorted(model.aead, key=lambda r: -r.payload)
    return [SummaryCell(r.variant, "AEAD cycles/byte", r.tsc_cycles_per_byte,
                        fmt_sig(r.tsc_cycles_per_byte), f"{r.aead} {r.payload:,} B")
            for r in first_per_variant(largest)]  # fmt: skip


FAMILY = Aead(
    "aead",
    ("aead",),
    claimable=True,
    sections=(
        Section("aead", 50, (TableSpec("aead", "aead", "AEAD cost", AeadRow),), load_aead,
                views=aead_view, plots=lambda model: [p] if (p := aead_cycles(model)) else [],
                metrics=aead_metrics, summary=aead_summary),
    ),
)  # fmt: skip
