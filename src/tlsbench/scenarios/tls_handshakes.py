"""The report's handshake section of the one-process family (tls.py): heap per side (cold and
warm, against the record size), handshake time per side, and what went over the wire; its
plots, dashboard metrics and summary cells.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from tlsbench.builds.recipes.runtime import at_run_time
from tlsbench.core.store import Point
from tlsbench.reportkit.metrics import Metric
from tlsbench.reportkit.palette import STYLES, style
from tlsbench.reportkit.reader import (
    BASELINE_VARIANT,
    SIDES,
    RunReader,
    case_labels,
    int_or_none,
    number,
)
from tlsbench.reportkit.section import Section, SummaryCell, TableSpec, first_per_variant
from tlsbench.reportkit.views import (
    View,
    fmt_bytes,
    fmt_ci,
    fmt_count,
    fmt_sig,
    fmt_size,
    variant_cell,
)

if TYPE_CHECKING:
    from tlsbench.reportkit.model import RunModel
    from tlsbench.reportkit.plots import Plot
    from tlsbench.reportkit.views import View
from tlsbench.reportkit.section import joined_plots, joined_views

# The scenarios whose points are handshakes: heap per side, time, the wire.
HANDSHAKES = ("handshake", "resume")


# -- the report: rows -------------------------------------------------------------------------

HEAP_FIGURES = (
    "start", "peak", "retained", "peak_minus_start", "retained_minus_start", "conn_peak",
    "conn_retained", "handshake_allocs",
)  # fmt: skip


@dataclass(frozen=True)
class MemoryRow:
    variant: str
    library: str
    line: str
    point: str
    scenario: str
    case: str  # the point's distinguishing options, record size excluded (own column)
    side: str
    record_size: int | None  # params record_size, else mbedTLS's probed IN_CONTENT_LEN
    start: float
    peak: float
    retained: float
    peak_minus_start: float
    retained_minus_start: float
    conn_peak: float
    conn_retained: float
    handshake_allocs: float
    repetitions: int
    stack: float | None = None  # stack high-water of the side's calls, bytes (heap driver)
    # A library's own memory pool (wolfSSL static memory), as the library counts it: what
    # the connection held of it at most and after the handshake.
    pool_peak: float | None = None
    pool_retained: float | None = None
    failed: str = ""  # "2 of 5 repetitions failed" where the figures rest on fewer
    machine: str = ""  # where the run spans several machines: the one(s) this row ran on


@dataclass(frozen=True)
class HandshakeRow:
    variant: str
    library: str
    point: str
    scenario: str
    case: str
    tls: str
    suite: str
    n: int
    ms: float  # median of client + server CPU time per handshake
    ms_ci_low: float
    ms_ci_high: float
    client_ms: float
    server_ms: float
    wall_ms: float | None
    handshakes_per_s: float | None  # None when the median time is 0 (cannot happen for TLS)
    hps_ci_low: float | None
    hps_ci_high: float | None
    failed: str = ""  # "2 of 5 repetitions failed" where the figures rest on fewer
    machine: str = ""  # where the run spans several machines: the one(s) this row ran on


@dataclass(frozen=True)
class WireRow:
    """What one handshake of a one-process point put on the wire, counted by the core at
    its transport (alike in every repetition: the first full and first resumed one)."""

    variant: str
    library: str
    point: str
    case: str
    handshake: str  # "full", "full, ticket issued" (a resume point's first) or "resumed"
    client_hello_bytes: float | None  # the client's first record
    client_bytes: float | None
    server_bytes: float | None
    client_records: float | None
    server_records: float | None
    round_trips: float | None  # server flights the client waited for before it could send
    failed: str = ""  # "2 of 5 repetitions failed" where the figures rest on fewer
    machine: str = ""  # where the run spans several machines: the one(s) this row ran on


# -- the report: loaders ---------------------------------------------------------------------


def _record_size(point: Point, params: dict[str, Any]) -> int | None:
    """The record buffer size a heap figure belongs to.

    An explicit record_size option wins; a library that sizes its record buffers at build
    time (mbedTLS: MBEDTLS_SSL_IN_CONTENT_LEN) has the probe's figure (what the compiled
    library really uses) stand in when the point leaves the option at its default
    (recipes/runtime.py: RECORD_SIZE_PROBE).
    """
    explicit = int_or_none(params.get("record_size"))
    if explicit:
        return explicit
    probe = at_run_time(point.library).record_size_probe
    if probe is not None:
        return int_or_none((point.build.get("probe") or {}).get(probe))
    return None


def memory(reader: RunReader) -> list[MemoryRow]:
    points = reader.points_of(HANDSHAKES)
    cases = case_labels({p.id: reader.params(p) for p in points}, skip=("record_size",))
    rows = []
    for p in points:
        heaps = [r.output["heap"] for r in reader.ok(p) if r.output and r.output.get("heap")]
        if not heaps:
            continue
        # The first (cold) connection per side, then, where measured, a later (warm)
        # connection on the same contexts: "client-warm", "server-warm".
        warm = [f"{s}_warm" for s in SIDES if all(h.get(f"{s}_warm") for h in heaps)]
        for side in (*SIDES, *warm):
            figures: dict[str, Any] = {
                name: statistics.median(float(h[side][name]) for h in heaps)
                for name in HEAP_FIGURES
            }
            rows.append(
                MemoryRow(
                    variant=p.variant,
                    library=p.library,
                    line=str(p.build.get("line") or p.library),
                    point=p.name,
                    scenario=p.scenario,
                    case=cases[p.id],
                    side=side.replace("_", "-"),
                    record_size=_record_size(p, reader.params(p)),
                    repetitions=len(heaps),
                    stack=_median_side_figure(heaps, side, "stack"),
                    pool_peak=_median_side_figure(heaps, side, "pool_peak"),
                    pool_retained=_median_side_figure(heaps, side, "pool_retained"),
                    **figures,
                )
            )
    return rows


def handshakes(reader: RunReader) -> list[HandshakeRow]:
    points = reader.points_of(HANDSHAKES)
    params = {p.id: reader.params(p) for p in points}
    cases = case_labels(params, always=("suite",))
    rows = []
    for p in points:
        client_reps = reader.store.samples_by_repetition(p.id, "client_cpu_ns")
        server_reps = reader.store.samples_by_repetition(p.id, "server_cpu_ns")
        client = [x for rep in client_reps for x in rep]
        server = [x for rep in server_reps for x in rep]
        if not client or len(client) != len(server):
            continue  # both series are written per handshake, so this means no data
        total = reader.summarize(
            p,
            "client + server CPU ns",
            [
                [c + s for c, s in zip(cr, sr, strict=True)]
                for cr, sr in zip(client_reps, server_reps, strict=True)
            ],
        )
        wall = reader.store.samples(p.id, "wall_ns")
        rows.append(
            HandshakeRow(
                variant=p.variant,
                library=p.library,
                point=p.name,
                scenario=p.scenario,
                case=cases[p.id],
                tls=str(params[p.id].get("tls", "")),
                suite=str(params[p.id].get("suite", "")),
                n=total.n,
                ms=total.median / 1e6,
                ms_ci_low=total.ci_low / 1e6,
                ms_ci_high=total.ci_high / 1e6,
                client_ms=statistics.median(client) / 1e6,
                server_ms=statistics.median(server) / 1e6,
                wall_ms=statistics.median(wall) / 1e6 if wall else None,
                handshakes_per_s=1e9 / total.median if total.median > 0 else None,
                # A faster upper time bound is a higher rate: the bounds swap.
                hps_ci_low=1e9 / total.ci_high if total.ci_high > 0 else None,
                hps_ci_high=1e9 / total.ci_low if total.ci_low > 0 else None,
            )
        )
    return rows


def wire(reader: RunReader) -> list[WireRow]:
    points = reader.points_of(HANDSHAKES)
    params = {p.id: reader.params(p) for p in points}
    cases = case_labels(params, always=("suite",))
    rows = []
    for p in points:
        outputs = [r.output for r in reader.ok(p) if r.output]
        wire = (outputs[0].get("wire") or {}) if outputs else {}
        for kind in ("full", "resumed"):
            figures = wire.get(kind)
            if not figures:
                continue
            client, server = figures.get("client") or {}, figures.get("server") or {}
            rows.append(
                WireRow(
                    variant=p.variant,
                    library=p.library,
                    point=p.name,
                    case=cases[p.id],
                    # A resume point's full handshake issues a ticket: more bytes.
                    handshake="full, ticket issued"
                    if kind == "full" and p.scenario == "resume"
                    else kind,
                    client_hello_bytes=number(figures.get("client_hello_bytes")),
                    client_bytes=number(client.get("bytes_sent")),
                    server_bytes=number(server.get("bytes_sent")),
                    client_records=number(client.get("records_sent")),
                    server_records=number(server.get("records_sent")),
                    round_trips=number(figures.get("round_trips")),
                )
            )
    return rows


def _median_side_figure(heaps: list[dict[str, Any]], side: str, name: str) -> float | None:
    """Median of one side's optional figure (stack, pool use), where the driver gave it."""
    values = [float(h[side][name]) for h in heaps if (h.get(side) or {}).get(name) is not None]
    return statistics.median(values) if values else None


# -- views -----------------------------------------------------------------------------------


def memory_view(model: RunModel) -> list[View]:
    if not model.memory:
        return []
    pools = any(r.pool_peak is not None for r in model.memory)
    return [
        View(
            "memory",
            "Handshake heap (bytes)",
            "Requested heap bytes per side: `start` before the context exists, `peak` until "
            "the first handshake completes, `retained` after it with the connection open; "
            "`conn` figures exclude the context. `client-warm` / `server-warm`: a second "
            "connection on the same contexts, after the first was closed (what each "
            "further connection costs; start = live bytes before it). `stack`: how deep "
            "the side's calls went during the connection (painted stack, 0.5 KiB "
            "resolution). Median over repetitions."
            + (" `pool peak` / `pool retained`: a library that serves connections from a "
               "memory pool of its own (wolfSSL's static-memory build) allocates it once "
               "with the context, so its `conn` figures are near 0; these are the "
               "connection's use of that pool, as the library counts it." if pools else ""),
            ["variant", "case", "side", "record size", "start", "peak", "retained",
             "peak - start", "retained - start", "conn peak", "conn retained", "allocs",
             "stack"] + (["pool peak", "pool retained"] if pools else []),
            [False, False, False, True] + [True] * (9 + (2 if pools else 0)),
            [
                [variant_cell(r), _case(r.case, r.scenario), r.side, fmt_size(r.record_size),
                 fmt_bytes(r.start), fmt_bytes(r.peak), fmt_bytes(r.retained),
                 fmt_bytes(r.peak_minus_start), fmt_bytes(r.retained_minus_start),
                 fmt_bytes(r.conn_peak), fmt_bytes(r.conn_retained),
                 fmt_count(r.handshake_allocs), fmt_bytes(r.stack)]
                + ([fmt_bytes(r.pool_peak), fmt_bytes(r.pool_retained)] if pools else [])
                for r in model.memory
            ],
        )
    ]  # fmt: skip


def handshake_view(model: RunModel) -> list[View]:
    if not model.handshakes:
        return []
    return [
        View(
            "handshake_time",
            "Handshake time",
            "CPU time inside both sides' library calls per full handshake (median, with the "
            "bootstrap 95 % CI of the median); handshakes/s = 1e9 / (client + server ns).",
            ["variant", "case", "n", "ms", "95 % CI (ms)", "client ms", "server ms",
             "wall ms", "handshakes/s"],
            [False, False, True, True, True, True, True, True, True],
            [
                [variant_cell(r), _case(r.case, r.scenario), str(r.n), fmt_sig(r.ms),
                 fmt_ci(r.ms_ci_low, r.ms_ci_high), fmt_sig(r.client_ms),
                 fmt_sig(r.server_ms), fmt_sig(r.wall_ms), fmt_sig(r.handshakes_per_s)]
                for r in model.handshakes
            ],
        )
    ]  # fmt: skip


def wire_view(model: RunModel) -> list[View]:
    if not model.wire:
        return []
    return [
        View(
            "wire",
            "Handshake on the wire",
            "Bytes and TLS records each side sent during the point's first full (and first "
            "resumed) handshake, counted at the transport; `ClientHello` = the client's "
            "first record; `round trips` = the server flights the client waited for before "
            "it could send application data (TLS 1.3: 1, 2 after a HelloRetryRequest; TLS "
            "1.2: 2).",
            ["variant", "case", "handshake", "ClientHello", "client bytes", "server bytes",
             "client records", "server records", "round trips"],
            [False, False, False] + [True] * 6,
            [
                [variant_cell(r), r.case, r.handshake, fmt_bytes(r.client_hello_bytes),
                 fmt_bytes(r.client_bytes), fmt_bytes(r.server_bytes),
                 fmt_count(r.client_records), fmt_count(r.server_records),
                 fmt_count(r.round_trips)]
                for r in model.wire
            ],
        )
    ]  # fmt: skip


# -- plots ------------------------------------------------------------------------------------


def heap_vs_record_size(model: RunModel) -> Plot | None:
    from tlsbench.reportkit.plots import Plot, figure, legend, short

    # The first connection per side (warm connections are in the table).
    rows = [r for r in model.memory if r.record_size and r.side in ("client", "server")]
    if len({r.record_size for r in rows}) < 2:  # one record size: a line of one point
        return None
    cases = list(dict.fromkeys(r.case for r in rows))
    entries = len({(r.line, r.side, r.case) for r in rows})
    fig = figure(10.0, 4.2 + 0.2 * entries)  # room for the legend below the axes
    axes = fig.subplots(1, 2, sharex=True)
    for ax, shown, label in (
        (axes[0], "peak_minus_start", "peak - start"),
        (axes[1], "retained_minus_start", "retained - start"),
    ):
        lines: dict[tuple[str, str, str], list[tuple[int, float]]] = {}
        for r in rows:
            assert r.record_size is not None
            lines.setdefault((r.line, r.side, r.case), []).append(
                (r.record_size, getattr(r, shown))
            )
        for (line, side, case), points in lines.items():
            points.sort()
            name = f"{line} {side}" + (f" ({short(case)})" if len(cases) > 1 else "")
            # The variant's colour and marker (another marker per further case); the client
            # solid, the server dashed.
            look = style(line)
            marker = look.marker if case == cases[0] else STYLES[cases.index(case)][0]
            ax.plot(
                [x for x, _ in points],
                [y / 1024 for _, y in points],
                marker=marker,
                linestyle="-" if side == "client" else "--",
                color=look.colour,
                label=name,
            )
        sizes = sorted({r.record_size for r in rows if r.record_size})
        ax.set_xscale("log", base=2)
        ax.set_xticks(sizes, [f"{s:,}" for s in sizes])
        ax.minorticks_off()
        ax.set_xlabel("record buffer size (bytes)")
        ax.set_ylabel(f"{label} (KiB)")
        ax.set_title(label)
        ax.grid(alpha=0.3)
    legend(fig)
    fig.suptitle("Handshake heap vs record size")
    return Plot("heap_vs_record_size", "Handshake heap vs record size", "memory", fig)


def handshake_time_plot(model: RunModel) -> Plot | None:
    from tlsbench.reportkit.plots import Plot, Series, figure, grouped_bars, legend, styles

    # The null variant does no TLS: microseconds beside milliseconds, a bar nobody can see.
    # It stays in the table; the plot compares libraries on a linear axis.
    rows = [r for r in model.handshakes if r.variant != BASELINE_VARIANT]
    if not rows:
        return None
    palette = styles(model)
    categories = list(
        dict.fromkeys(r.case + (" (resumed)" if r.scenario == "resume" else "") for r in rows)
    )
    series: list[Series] = []
    for variant in dict.fromkeys(r.variant for r in rows):
        values, cis = {}, {}
        for r in rows:
            if r.variant == variant:
                key = r.case + (" (resumed)" if r.scenario == "resume" else "")
                values[key] = r.ms
                cis[key] = (r.ms_ci_low, r.ms_ci_high)
        series.append((variant, values, cis, palette[variant].bar()))
    fig = figure()
    ax = fig.subplots()
    grouped_bars(ax, categories, series)
    ax.set_ylabel("ms per handshake (client + server CPU)")
    legend(fig)
    ax.set_title("Handshake time per suite (median, 95 % CI)")
    return Plot("handshake_time", "Handshake time per suite", "handshake_time", fig)


def _case(case: str, scenario: str) -> str:
    return f"{case} (resumed)" if scenario == "resume" else case


# -- metrics (dashboard formats) and the per-library summary ------------------------------------


def handshake_metrics(model: RunModel) -> list[Any]:
    out: list[Metric] = []
    for m in model.memory:
        v, p, side = m.variant, m.point, m.side
        out += [
            Metric(v, p, "heap-peak", "bytes", m.peak_minus_start, side=side),
            Metric(v, p, "heap-retained", "bytes", m.retained_minus_start, side=side),
            Metric(v, p, "allocations", "allocations", m.handshake_allocs, side=side),
        ]
        if m.stack is not None:
            out.append(Metric(v, p, "stack", "bytes", m.stack, side=side))
    for h in model.handshakes:
        out.append(Metric(h.variant, h.point, "latency", "ns", h.ms * 1e6, h.ms_ci_low * 1e6,
                          h.ms_ci_high * 1e6, statistic="median"))  # fmt: skip
        if h.handshakes_per_s is not None:
            out.append(Metric(h.variant, h.point, "throughput", "handshakes/s",
                              h.handshakes_per_s, h.hps_ci_low, h.hps_ci_high,
                              higher_is_better=True, statistic="median"))  # fmt: skip
    for w in model.wire:
        for side, value in (("client", w.client_bytes), ("server", w.server_bytes)):
            if value is not None:
                out.append(Metric(w.variant, w.point, "wire-bytes", "bytes", value, side=side,
                                  detail=w.handshake))  # fmt: skip
        if w.round_trips is not None:
            out.append(Metric(w.variant, w.point, "round-trips", "round trips", w.round_trips,
                              detail=w.handshake))  # fmt: skip
    return out


def handshake_summary(model: RunModel) -> list[SummaryCell]:
    """Per variant: its first handshake row's time and its first client row's heap peak."""
    cells = []
    for r in first_per_variant(model.handshakes):
        cells.append(SummaryCell(r.variant, "handshake ms", r.ms, fmt_sig(r.ms),
                                 _case(r.case, r.scenario)))  # fmt: skip
    clients = [r for r in model.memory if r.side == "client"]
    for m in first_per_variant(clients):
        cells.append(SummaryCell(m.variant, "client heap peak bytes", m.peak_minus_start,
                                 fmt_bytes(m.peak_minus_start), m.case))  # fmt: skip
    return cells


# -- the family ----------------------------------------------------------------------------------


def load_handshakes(reader: RunReader) -> dict[str, list[Any]]:
    return {"memory": memory(reader), "handshakes": handshakes(reader), "wire": wire(reader)}


SECTION = Section(
    "handshakes",
    20,
    (TableSpec("memory", "memory", "Handshake heap (bytes)", MemoryRow),
     TableSpec("handshakes", "handshake_time", "Handshake time", HandshakeRow),
     TableSpec("wire", "wire", "Handshake on the wire", WireRow)),
    load_handshakes,
    views=joined_views(memory_view, handshake_view, wire_view),
    plots=joined_plots(heap_vs_record_size, handshake_time_plot),
    metrics=handshake_metrics,
    summary=handshake_summary,
)  # fmt: skip
