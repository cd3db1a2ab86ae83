"""Memory per open connection: the `connections` scenario.

A point holds `connections` TLS connections open at once in one driver process, each after
its full handshake and an exchange of `payload` bytes each way, and says what one of them
costs (drivers/core/scenarios/connections.c): the heap driver gives each side's requested
heap, usable heap (the allocator's size) and peak heap per connection; the timing driver,
with no accounting in the allocation path, gives the process's resident set growth and its
high-water mark per connection. A repetition runs both (modes.py keeps the series the
driver declares of each), so the stored result has both sides' heap and the RSS.

`release_buffers` asks the library to free a connection's record buffers while they are
empty (OpenSSL's SSL_MODE_RELEASE_BUFFERS); a library that cannot makes the point
unsupported, with the driver's reason. The measurement is once per process (no iterations:
the process is the sample) over the in-memory pair (no TCP: one socket pair per connection
would charge the kernel's buffers to the resident set).

Report: "memory per open connection" (per variant, case and N), a plot of heap per
connection against N, heap per connection at the largest N in the per-library summary.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from tlsbench.core.points import RunPoint
from tlsbench.driver.declaration import Declared, declared
from tlsbench.driver.process import Outcome, unsupported
from tlsbench.reportkit.metrics import Metric
from tlsbench.reportkit.palette import style
from tlsbench.reportkit.reader import RunReader, case_labels, int_or_none
from tlsbench.reportkit.section import Section, SummaryCell, TableSpec, first_per_variant
from tlsbench.reportkit.views import View, fmt_bytes, variant_cell
from tlsbench.scenarios import base, modes
from tlsbench.scenarios.base import (
    CONNECTIONS_KEY,
    TLS_KEYS,
    Family,
    Key,
    PointChecker,
    RunContext,
    flag,
)

if TYPE_CHECKING:
    from tlsbench.builds.variants import Variant
    from tlsbench.reportkit.model import RunModel
    from tlsbench.reportkit.plots import Plot
    from tlsbench.reportkit.views import View

# The TLS keys a point takes: every one but how the two sides are joined (the scenario runs
# over the in-memory pair with tlsbench's callbacks only; check() refuses the others).
JOINING_KEYS = {"transport": "memory", "io": "callbacks"}
POINT_KEYS = tuple(k for k in TLS_KEYS if k not in JOINING_KEYS)
RELEASE_BUFFERS_KEY = Key("release_buffers", flag,
                          lambda on: "release-buffers" if on else "keep-buffers")  # fmt: skip


class Connections(Family):
    def accepts(self, scenario: str, declared: Declared) -> tuple[str, ...]:
        # No iterations or warmup: the driver measures once per process (the repetitions
        # are the samples), so [defaults] that set them leave these points alone.
        own = (o.replace("-", "_") for o in declared.scenario(scenario).options)
        return (*POINT_KEYS, *own, "release_buffers")

    def check(self, checker: PointChecker, scenario: str, values: dict[str, Any],
              variant: Variant) -> None:  # fmt: skip
        for key, only in JOINING_KEYS.items():
            if values.get(key, only) != only:
                raise checker.value_error(key, values[key], f'"{only}" only: {scenario} holds '
                                          "its connections over the in-memory pair")  # fmt: skip
        base.check_key_share(checker, values)
        base.check_kx(checker, values)
        base.check_suite_version(checker, values)

    def run(self, point: RunPoint, ctx: RunContext) -> Outcome:
        if ctx.mode == "instructions" and not declared().scenario(point.scenario).has(
            "instructions"
        ):
            return unsupported(f"instruction mode counts the calls of a measured operation; the "
                               f"driver declares none for {point.scenario}, which measures "
                               "memory held, not work done")  # fmt: skip
        build = ctx.builds[point.variant]
        if ctx.mode == "instructions":
            return modes.run_instructions(point, build, ctx.timeout)
        return modes.run_measured(point, build, ctx.timeout)


# -- the report -------------------------------------------------------------------------------

# The stored series, by row field (bytes per connection; medians over repetitions).
SERIES = {
    "client_heap": "client_heap_per_connection",
    "server_heap": "server_heap_per_connection",
    "client_usable": "client_usable_per_connection",
    "server_usable": "server_usable_per_connection",
    "client_peak": "client_peak_per_connection",
    "server_peak": "server_peak_per_connection",
    "rss": "rss_per_connection",
    "rss_peak": "rss_peak_per_connection",
}


@dataclass(frozen=True)
class ConnectionRow:
    """Memory per open connection of one point (both sides in one process): bytes per
    connection, median over repetitions (None: not measured, e.g. RSS under emulation)."""

    variant: str
    library: str
    point: str
    case: str  # the point's distinguishing options, N and release_buffers excluded
    connections: int
    release_buffers: bool
    repetitions: int
    client_heap: float | None
    server_heap: float | None
    client_usable: float | None
    server_usable: float | None
    client_peak: float | None
    server_peak: float | None
    rss: float | None
    rss_peak: float | None
    failed: str = ""  # "2 of 5 repetitions failed" where the figures rest on fewer
    machine: str = ""  # where the run spans several machines: the one(s) this row ran on

    @property
    def heap(self) -> float | None:
        """Both ends of a connection: client + server requested heap."""
        if self.client_heap is None or self.server_heap is None:
            return None
        return self.client_heap + self.server_heap


def load_connections(reader: RunReader) -> dict[str, list[Any]]:
    points = reader.points_of(FAMILY.scenarios)
    params = {p.id: reader.params(p) for p in points}
    cases = case_labels(params)
    rows = []
    for p in points:
        figures = {field: reader.median_of(p, series) for field, series in SERIES.items()}
        if all(value is None for value in figures.values()):
            continue
        rows.append(ConnectionRow(
            variant=p.variant, library=p.library, point=p.name, case=cases[p.id],
            connections=int_or_none(params[p.id].get("connections")) or 0,
            release_buffers=params[p.id].get("release_buffers") is True,
            repetitions=len(reader.ok(p)), **figures,  # type: ignore[arg-type]
        ))  # fmt: skip
    # Points come in name order ("c10000" before "c100"): N as a number, variants as the
    # run has them.
    order = {v: i for i, v in enumerate(dict.fromkeys(p.variant for p in reader.points))}
    rows.sort(key=lambda r: (order[r.variant], r.case, r.release_buffers, r.connections))
    return {"connections": rows}


def connections_view(model: RunModel) -> list[View]:
    if not model.connections:
        return []
    return [
        View(
            "memory_per_connection",
            "Memory per open connection",
            "N connections held open at once in one process, each after its handshake and "
            "an exchange of application data; bytes per connection, median over "
            "repetitions. `heap`: requested heap bytes per side (the heap driver), `peak`: "
            "the side's highest live heap over the N handshakes, per connection; `RSS`: the "
            "process's resident set growth per connection (both sides; the timing driver, "
            "no accounting in the allocation path) and its high-water mark. `release "
            "buffers`: the library frees record buffers while they are empty.",
            ["variant", "case", "N", "release buffers", "client heap", "server heap",
             "client peak", "server peak", "RSS", "RSS peak"],
            [False, False, True, False, True, True, True, True, True, True],
            [
                [variant_cell(r), r.case, f"{r.connections:,}",
                 "yes" if r.release_buffers else "no", fmt_bytes(r.client_heap),
                 fmt_bytes(r.server_heap), fmt_bytes(r.client_peak), fmt_bytes(r.server_peak),
                 fmt_bytes(r.rss), fmt_bytes(r.rss_peak)]
                for r in model.connections
            ],
        )
    ]  # fmt: skip


def _line_label(row: ConnectionRow, cases: set[str]) -> str:
    return (row.variant + (f" {row.case}" if len(cases) > 1 else "")
            + (" release-buffers" if row.release_buffers else ""))  # fmt: skip


def heap_per_connection_plot(model: RunModel) -> Plot | None:
    """Heap per connection (client + server) and RSS per connection against N (log x)."""
    from tlsbench.reportkit.plots import Plot, figure, legend, wide

    rows = [r for r in model.connections if r.heap is not None or r.rss is not None]
    if not rows or len({r.connections for r in rows}) < 2:
        return None  # one N: the table says it all
    cases = {r.case for r in rows}
    fig = figure(11.0, 4.8)
    axes = fig.subplots(1, 2, sharey=True)
    for ax, title, value in ((axes[0], "heap (client + server)", lambda r: r.heap),
                             (axes[1], "resident set growth", lambda r: r.rss)):  # fmt: skip
        lines: dict[str, list[ConnectionRow]] = {}
        for r in rows:
            if value(r) is not None:
                lines.setdefault(_line_label(r, cases), []).append(r)
        for label, points in lines.items():
            points.sort(key=lambda r: r.connections)
            look = style(points[0].variant).line()
            if points[0].release_buffers:  # the same library, its buffers released: hollow
                look = {**look, "linestyle": "--", "markerfacecolor": "none"}
            ax.plot([r.connections for r in points], [value(r) for r in points], label=label,
                    **look)  # fmt: skip
        ax.set_xscale("log")
        ax.set_xlabel("connections held open (N)")
        ax.set_title(title)
        ax.grid(alpha=0.3)
    if wide([v for r in rows for v in (r.heap, r.rss) if v]):
        axes[0].set_yscale("log")
    axes[0].set_ylabel("bytes per connection")
    legend(fig)
    fig.suptitle("Memory per open connection")
    return Plot("memory_per_connection", "Memory per open connection", "memory_per_connection",
                fig)  # fmt: skip


def connections_metrics(model: RunModel) -> list[Any]:
    out = []
    for r in model.connections:
        for side, value in (("client", r.client_heap), ("server", r.server_heap)):
            if value is not None:
                out.append(Metric(r.variant, r.point, "heap-per-connection", "bytes", value,
                                  side=side))  # fmt: skip
        if r.rss is not None:
            out.append(Metric(r.variant, r.point, "rss-per-connection", "bytes", r.rss))
    return out


def connections_summary(model: RunModel) -> list[SummaryCell]:
    """Per variant: client + server heap per connection at its largest N (buffers kept,
    where the variant has both)."""
    measured = [r for r in model.connections if r.heap is not None]
    ordered = sorted(measured, key=lambda r: (-r.connections, r.release_buffers))
    return [SummaryCell(r.variant, "heap per connection", r.heap, fmt_bytes(r.heap),
                        f"N = {r.connections:,}" + (" release-buffers" if r.release_buffers
                                                    else ""))
            for r in first_per_variant(ordered)]  # fmt: skip


FAMILY = Connections(
    "connections",
    ("connections",),
    keys=(CONNECTIONS_KEY, RELEASE_BUFFERS_KEY),
    claimable=True,
    sections=(
        Section("connections", 45,
                (TableSpec("connections", "memory_per_connection",
                           "Memory per open connection", ConnectionRow),),
                load_connections, views=connections_view,
                plots=lambda model: [p] if (p := heap_per_connection_plot(model)) else [],
                metrics=connections_metrics, summary=connections_summary),
    ),
)  # fmt: skip
