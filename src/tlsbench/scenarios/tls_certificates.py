"""The report's certificate section of the one-process family (tls.py): what a certificate
chain costs a handshake, per library, signature algorithm and chain length. It opens the
report of a run whose handshakes differ in certificate or chain (`pq-signatures`), with what
a user decides on: the bytes of the server's first flight against TCP's initial window, the
round trips, and per side the milliseconds, instructions, heap and allocations.

Segments are what the server's first flight needs at least, MSS bytes each: the driver
counts bytes at its transport, not packets, so the figure is ceil(bytes / MSS) at the
Ethernet MSS with TCP timestamps (1500 - 20 - 20 - 12 = 1448 bytes). A flight of more than
INITIAL_WINDOW segments (RFC 6928's 10, Linux's default) cannot all leave before the first
ACK comes back: `window rounds` is how many round trips slow start (the window doubling per
round trip from 10) needs to send it, so a flight of 2 rounds adds one round trip to the
handshake; the `network` experiment measures it on a real TCP (load-and-networks.md).
"""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from tlsbench.builds import certs
from tlsbench.reportkit.reader import BASELINE_VARIANT, RunReader, number
from tlsbench.reportkit.section import Section, TableSpec, joined_plots, joined_views
from tlsbench.reportkit.views import View, fmt_bytes, fmt_count, fmt_sig, variant_cell

if TYPE_CHECKING:
    from tlsbench.reportkit.model import RunModel
    from tlsbench.reportkit.plots import Plot

MSS = 1448  # bytes: Ethernet MTU 1500 less IPv4, TCP and the timestamp option
INITIAL_WINDOW = 10  # segments (RFC 6928; Linux's TCP_INIT_CWND)
SCENARIOS = ("handshake",)


def segments(flight_bytes: float) -> int:
    """The TCP segments a flight needs at least."""
    return math.ceil(flight_bytes / MSS)


def window_rounds(flight_segments: int, initial: int = INITIAL_WINDOW) -> int:
    """Round trips slow start needs to send `flight_segments`: the window starts at
    `initial` and doubles each round trip (no loss, an ACK for every segment)."""
    rounds, window, sent = 0, initial, 0
    while sent < flight_segments:
        sent += window
        window *= 2
        rounds += 1
    return rounds


@dataclass(frozen=True)
class CertificateRow:
    """One handshake point: its certificate, chain and what they cost."""

    variant: str
    library: str
    point: str
    cert: str
    chain: int
    sigalg: str  # the scheme negotiated and checked ("" where the point did not run)
    status: str  # "ok", or the point's status and reason ("unsupported: ...")
    server_flight_bytes: float | None = None  # the server's first flight
    server_flight_records: float | None = None
    server_flight_segments: int | None = None
    exceeds_window: bool | None = None  # more than INITIAL_WINDOW segments
    window_rounds: int | None = None
    client_hello_bytes: float | None = None
    client_bytes: float | None = None  # everything the client sent in the handshake
    server_bytes: float | None = None
    round_trips: float | None = None  # TLS's: server flights the client waited for
    client_ms: float | None = None  # median CPU time per handshake
    server_ms: float | None = None
    client_instructions: float | None = None  # instruction mode
    server_instructions: float | None = None
    client_heap_peak: float | None = None  # peak - start, first connection, median
    server_heap_peak: float | None = None
    client_allocs: float | None = None
    server_allocs: float | None = None


def _first_server_flight(wire: dict[str, Any]) -> dict[str, Any] | None:
    for flight in wire.get("flights") or []:
        if flight.get("from") == "server":
            return dict(flight)
    return None


def _median(values: list[float]) -> float | None:
    return statistics.median(values) if values else None


def _heap(outputs: list[dict[str, Any]], side: str, name: str) -> float | None:
    return _median([float(o["heap"][side][name]) for o in outputs
                    if (o.get("heap") or {}).get(side)])  # fmt: skip


def rows_of(reader: RunReader) -> list[CertificateRow]:
    points = [p for p in reader.points_of(SCENARIOS, ok=False) if p.variant != BASELINE_VARIANT]
    params = {p.id: reader.params(p) for p in points}
    shown = {(str(params[p.id].get("cert", "rsa2048")), int(params[p.id].get("chain", 1)))
             for p in points}  # fmt: skip
    if len(shown) < 2:  # one certificate and chain: the handshake section says it all
        return []
    rows = []
    for p in points:
        cert = str(params[p.id].get("cert", "rsa2048"))
        chain = int(params[p.id].get("chain", 1))
        status, detail = reader.failure(p)
        if status != "ok":
            rows.append(CertificateRow(p.variant, p.library, p.name, cert, chain, "",
                                       f"{status}: {detail}"))  # fmt: skip
            continue
        outputs = [r.output for r in reader.ok(p) if r.output]
        full = ((outputs[0].get("wire") or {}).get("full") or {}) if outputs else {}
        flight = _first_server_flight(full)
        flight_bytes = number(flight.get("bytes")) if flight else None
        flight_segments = segments(flight_bytes) if flight_bytes is not None else None
        negotiated = (outputs[0].get("negotiated") or {}) if outputs else {}
        rows.append(
            CertificateRow(
                variant=p.variant,
                library=p.library,
                point=p.name,
                cert=cert,
                chain=chain,
                sigalg=str(negotiated.get("sigalg") or ""),
                status="ok",
                server_flight_bytes=flight_bytes,
                server_flight_records=number(flight.get("records")) if flight else None,
                server_flight_segments=flight_segments,
                exceeds_window=(
                    flight_segments > INITIAL_WINDOW if flight_segments is not None else None
                ),
                window_rounds=window_rounds(flight_segments) if flight_segments else None,
                client_hello_bytes=number(full.get("client_hello_bytes")),
                client_bytes=number((full.get("client") or {}).get("bytes_sent")),
                server_bytes=number((full.get("server") or {}).get("bytes_sent")),
                round_trips=number(full.get("round_trips")),
                client_ms=_ms(reader.median_of(p, "client_cpu_ns")),
                server_ms=_ms(reader.median_of(p, "server_cpu_ns")),
                client_instructions=reader.median_of(p, "client_instructions"),
                server_instructions=reader.median_of(p, "server_instructions"),
                client_heap_peak=_heap(outputs, "client", "peak_minus_start"),
                server_heap_peak=_heap(outputs, "server", "peak_minus_start"),
                client_allocs=_heap(outputs, "client", "handshake_allocs"),
                server_allocs=_heap(outputs, "server", "handshake_allocs"),
            )
        )
    order = {kind: i for i, kind in enumerate(certs.KINDS)}
    rows.sort(key=lambda r: (order.get(r.cert, len(order)), r.chain, r.variant))
    return rows


def _ms(ns: float | None) -> float | None:
    return ns / 1e6 if ns is not None else None


def _rounds(row: CertificateRow) -> str:
    if row.round_trips is None:
        return "-"
    extra = (row.window_rounds or 1) - 1
    return f"{row.round_trips:.0f}" + (f" + {extra}" if extra else "")


def certificate_view(model: RunModel) -> list[View]:
    rows = model.certificates
    if not rows:
        return []
    instructions = any(r.client_instructions is not None for r in rows)
    timed = any(r.client_ms is not None for r in rows)
    heads = ["certificate", "chain", "variant", "scheme", "server flight", "records",
             f"segments (> {INITIAL_WINDOW}?)", "round trips"]  # fmt: skip
    heads += ["client ms", "server ms"] if timed else []
    heads += ["client instructions", "server instructions"] if instructions else []
    heads += ["client heap peak", "server heap peak", "client allocs", "server allocs"]
    table = []
    for r in rows:
        if r.status != "ok":
            table.append([r.cert, str(r.chain), variant_cell(r), r.status]
                         + [""] * (len(heads) - 4))  # fmt: skip
            continue
        over = "" if r.exceeds_window is None else (" yes" if r.exceeds_window else " no")
        cells = [r.cert, str(r.chain), variant_cell(r), r.sigalg,
                 fmt_bytes(r.server_flight_bytes), fmt_count(r.server_flight_records),
                 f"{fmt_count(r.server_flight_segments)}{over}", _rounds(r)]  # fmt: skip
        cells += [fmt_sig(r.client_ms), fmt_sig(r.server_ms)] if timed else []
        if instructions:
            cells += [fmt_count(r.client_instructions), fmt_count(r.server_instructions)]
        cells += [fmt_bytes(r.client_heap_peak), fmt_bytes(r.server_heap_peak),
                  fmt_count(r.client_allocs), fmt_count(r.server_allocs)]  # fmt: skip
        table.append(cells)
    return [
        View(
            "certificates",
            "What a certificate chain costs a handshake",
            "Per library, certificate kind and chain length (1: the leaf; 2: and the "
            "intermediate; 3: and the root), TLS 1.3, the first full handshake: the "
            "signature scheme negotiated (read back and checked on both sides), the bytes "
            "and TLS records of the server's first flight (ServerHello to Finished), the TCP "
            f"segments it needs at least (MSS {MSS}) and whether that is more than TCP's "
            f"initial window of {INITIAL_WINDOW}; round trips: TLS's, + those slow start "
            "adds to send the flight (ideal, no loss; the network experiment measures it). "
            "Per side: median CPU ms or instructions per handshake, heap peak - start "
            "(bytes) and allocations of the first connection.",
            heads,
            [False, True, False, False] + [True] * (len(heads) - 4),
            table,
        )
    ]


def flight_plot(model: RunModel) -> Plot | None:
    from tlsbench.reportkit.plots import Plot, Series, figure, grouped_bars, legend, styles

    rows = [r for r in model.certificates if r.server_flight_bytes is not None]
    if not rows:
        return None
    palette = styles(model)
    categories = list(dict.fromkeys(f"{r.cert} ({r.chain})" for r in rows))
    series: list[Series] = []
    for variant in dict.fromkeys(r.variant for r in rows):
        values = {f"{r.cert} ({r.chain})": (r.server_flight_bytes or 0) / 1000
                  for r in rows if r.variant == variant}  # fmt: skip
        series.append((variant, values, {}, palette[variant].bar()))
    fig = figure(max(8.0, 0.55 * len(categories)), 5.0)
    ax = fig.subplots()
    grouped_bars(ax, categories, series)
    ax.axhline(INITIAL_WINDOW * MSS / 1000, color="black", linestyle="--", linewidth=1)
    ax.annotate(f"TCP initial window ({INITIAL_WINDOW} x {MSS} B)",
                (0, INITIAL_WINDOW * MSS / 1000), xytext=(2, 3),
                textcoords="offset points", fontsize=8)  # fmt: skip
    ax.set_ylabel("server's first flight (kB)")
    ax.tick_params(axis="x", labelrotation=60)
    legend(fig)
    ax.set_title("Server's first flight per certificate (chain length)")
    return Plot("certificate_flight", "Server's first flight per certificate", "certificates",
                fig)  # fmt: skip


def load_certificates(reader: RunReader) -> dict[str, list[Any]]:
    return {"certificates": rows_of(reader)}


SECTION = Section(
    "certificates",
    5,
    (
        TableSpec(
            "certificates",
            "certificates",
            "What a certificate chain costs a handshake",
            CertificateRow,
        ),
    ),
    load_certificates,
    views=joined_views(certificate_view),
    plots=joined_plots(flight_plot),
)
