"""Both sides in one process: the `handshake`, `resume`, `records` and `bulk` scenarios.

The driver runs both sides of the connection over its in-memory pair (or loopback TCP) and
times each side's library calls; its heap program counts each side's heap. A point takes
every TLS key, and the options its driver scenario declares among payload and bytes. It
runs as modes.py says (time and heap in separate processes, heap only under emulation,
instructions under callgrind).

Report: the handshake section (heap per side, handshake time, what went over the wire) and
the records section (record latency with its CDF, bulk throughput).
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from tlsbench.builds.recipes.runtime import at_run_time
from tlsbench.core.points import RunPoint
from tlsbench.core.store import Point
from tlsbench.driver.declaration import Declared
from tlsbench.driver.process import Outcome
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
    p99_cell,
    variant_cell,
)
from tlsbench.scenarios import base, modes
from tlsbench.scenarios.base import TLS_KEYS, Family, PointChecker, RunContext

if TYPE_CHECKING:
    from tlsbench.builds.variants import Variant
    from tlsbench.reportkit.model import RunModel
    from tlsbench.reportkit.plots import Plot
    from tlsbench.reportkit.views import View

# The scenarios whose points are handshakes: heap per side, time, the wire.
HANDSHAKES = ("handshake", "resume")


class OneProcess(Family):
    def accepts(self, scenario: str, declared: Declared) -> tuple[str, ...]:
        own = set(declared.scenario(scenario).options) & {"payload", "bytes"}
        return (*TLS_KEYS, *sorted(own), "iterations", "warmup")

    def check(self, checker: PointChecker, scenario: str, values: dict[str, Any],
              variant: Variant) -> None:  # fmt: skip
        if values.get("io") == "fd" and values.get("transport") != "tcp":
            raise checker.value_error("io", "fd", 'with transport = "tcp" only (the library '
                                      "needs a socket of its own)")  # fmt: skip
        base.check_key_share(checker, values)
        base.check_kx(checker, values, resumes=scenario == "resume")
        base.check_suite_version(checker, values)
        if scenario == "records" and "payload" in values:
            limit = values.get("record_size") or checker.declared.ranges["record_size"].max
            if values["payload"] > limit:
                raise checker.value_error(
                    "payload",
                    values["payload"],
                    f"at most the record size ({limit}): records measures one record per "
                    "write; bulk measures larger writes",
                )

    def run(self, point: RunPoint, ctx: RunContext) -> Outcome:
        build = ctx.builds[point.variant]
        if ctx.mode == "instructions":
            return modes.run_instructions(point, build, ctx.timeout)
        return modes.run_measured(point, build, ctx.timeout)


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


@dataclass(frozen=True)
class LatencyRow:
    variant: str
    library: str
    point: str
    case: str
    payload: int | None
    op: str  # "write" (encrypt + frame) or "read" (decrypt)
    n: int
    min_ns: float
    avg_ns: float
    p50_ns: float
    p99_ns: float | None  # None: too few samples per repetition for a tail
    max_ns: float
    p50_ci_low_ns: float
    p50_ci_high_ns: float
    allocs_per_record: float | None
    # Median of per-record means of batches of records (not quantised by the TSC's step).
    batch_mean_ns: float | None = None
    failed: str = ""  # "2 of 5 repetitions failed" where the figures rest on fewer
    machine: str = ""  # where the run spans several machines: the one(s) this row ran on


@dataclass(frozen=True)
class ThroughputRow:
    variant: str
    library: str
    point: str
    case: str
    payload: int | None
    bytes: int | None
    baseline: bool  # the null variant: the harness alone, no TLS
    n: int
    sender_mbps: float
    sender_ci_low: float
    sender_ci_high: float
    receiver_mbps: float
    receiver_ci_low: float
    receiver_ci_high: float
    failed: str = ""  # "2 of 5 repetitions failed" where the figures rest on fewer
    machine: str = ""  # where the run spans several machines: the one(s) this row ran on


@dataclass(frozen=True)
class LatencySamples:
    """Raw record latencies of one point, for the CDF plot (not a table)."""

    variant: str
    point: str
    payload: int | None
    write_ns: list[float]
    read_ns: list[float]


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


def latency(reader: RunReader) -> tuple[list[LatencyRow], list[LatencySamples]]:
    points = reader.points_of(("records",))
    params = {p.id: reader.params(p) for p in points}
    cases = case_labels(params, skip=("payload",))
    rows: list[LatencyRow] = []
    samples: list[LatencySamples] = []
    for p in points:
        payload = int_or_none(params[p.id].get("payload"))
        by_op: dict[str, list[float]] = {}
        for op in ("write", "read"):
            groups = reader.store.samples_by_repetition(p.id, f"{op}_ns")
            values = [x for rep in groups for x in rep]
            if not values:
                continue
            by_op[op] = values
            s = reader.summarize(p, f"{op} ns", groups)
            allocs = reader.store.samples(p.id, f"{op}_allocs")
            batches = reader.store.samples(p.id, f"{op}_batch_ns")
            rows.append(
                LatencyRow(
                    variant=p.variant,
                    library=p.library,
                    point=p.name,
                    case=cases[p.id],
                    payload=payload,
                    op=op,
                    n=s.n,
                    min_ns=s.min,
                    avg_ns=s.mean,
                    p50_ns=s.median,
                    p99_ns=s.p99,
                    max_ns=s.max,
                    p50_ci_low_ns=s.ci_low,
                    p50_ci_high_ns=s.ci_high,
                    allocs_per_record=statistics.fmean(allocs) if allocs else None,
                    batch_mean_ns=statistics.median(batches) if batches else None,
                )
            )
        if by_op:
            samples.append(
                LatencySamples(
                    p.variant, p.name, payload, by_op.get("write", []), by_op.get("read", [])
                )
            )
    return rows, samples


def throughput(reader: RunReader) -> list[ThroughputRow]:
    points = reader.points_of(("bulk",))
    params = {p.id: reader.params(p) for p in points}
    cases = case_labels(params)
    rows = []
    for p in points:
        sender = reader.store.samples_by_repetition(p.id, "sender_MBps")
        receiver = reader.store.samples_by_repetition(p.id, "receiver_MBps")
        if not any(sender) or not any(receiver):
            continue
        s = reader.summarize(p, "sender MB/s", sender)
        r = reader.summarize(p, "receiver MB/s", receiver)
        rows.append(
            ThroughputRow(
                variant=p.variant,
                library=p.library,
                point=p.name,
                case=cases[p.id],
                payload=int_or_none(params[p.id].get("payload")),
                bytes=int_or_none(params[p.id].get("bytes")),
                baseline=p.variant == BASELINE_VARIANT,
                n=s.n,
                sender_mbps=s.median,
                sender_ci_low=s.ci_low,
                sender_ci_high=s.ci_high,
                receiver_mbps=r.median,
                receiver_ci_low=r.ci_low,
                receiver_ci_high=r.ci_high,
            )
        )
    # The baseline first: every other row reads against it.
    return sorted(rows, key=lambda row: not row.baseline)


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


def latency_view(model: RunModel) -> list[View]:
    if not model.latency:
        return []
    return [
        View(
            "record_latency",
            "Record latency (ns)",
            "Per application record after warm-up: `write` encrypts and frames, `read` "
            "decrypts; p50 and p99 are medians over repetitions of each repetition's own "
            "(p99 only from repetitions of at least 1,000 records, else \"n too small\"); "
            "`batched` = the median per-record mean of batches of up to 64 records timed "
            "as one region, which the TSC's step does not quantise.",
            ["variant", "case", "payload", "op", "n", "min", "avg", "p50", "p99", "max",
             "batched", "allocs/record"],
            [False, False, True, False] + [True] * 8,
            [
                [variant_cell(r), r.case, fmt_size(r.payload), r.op, str(r.n), fmt_sig(r.min_ns),
                 fmt_sig(r.avg_ns), fmt_sig(r.p50_ns), p99_cell(r.p99_ns), fmt_sig(r.max_ns),
                 fmt_sig(r.batch_mean_ns), fmt_count(r.allocs_per_record)]
                for r in model.latency
            ],
        )
    ]  # fmt: skip


def throughput_view(model: RunModel) -> list[View]:
    if not model.throughput:
        return []
    baseline = next((r for r in model.throughput if r.baseline), None)
    return [
        View(
            "bulk_throughput",
            "Bulk throughput (MB/s)",
            "Application data in the largest records, MB/s = 10^6 bytes per second of each "
            "side's own time (median, 95 % CI)."
            + (" `null` is the harness alone, no TLS: the ceiling." if baseline else ""),
            ["variant", "case", "n", "sender MB/s", "95 % CI", "receiver MB/s", "95 % CI"]
            + (["sender % of null"] if baseline else []),
            [False, False, True, True, True, True, True] + ([True] if baseline else []),
            [
                [variant_cell(r) + (" (baseline)" if r.baseline else ""), r.case, str(r.n),
                 fmt_sig(r.sender_mbps), fmt_ci(r.sender_ci_low, r.sender_ci_high),
                 fmt_sig(r.receiver_mbps), fmt_ci(r.receiver_ci_low, r.receiver_ci_high)]
                + ([fmt_sig(100 * r.sender_mbps / baseline.sender_mbps)]
                   if baseline and baseline.sender_mbps else [])
                for r in model.throughput
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


def record_latency_cdf(model: RunModel) -> Plot | None:
    from tlsbench.reportkit.plots import Plot, figure, legend, styles, wide

    sets = [s for s in model.latency_samples if s.write_ns or s.read_ns]
    if not sets:
        return None
    palette = styles(model)
    payloads = {s.payload for s in sets}
    fig = figure(10.0, 4.8)
    axes = fig.subplots(1, 2, sharey=True)
    for ax, op in ((axes[0], "write"), (axes[1], "read")):
        everything: list[float] = []
        for s in sets:
            values = sorted(s.write_ns if op == "write" else s.read_ns)
            if not values:
                continue
            everything += values
            n = len(values)
            label = s.variant + (f" {s.payload} B" if len(payloads) > 1 else "")
            ax.step(values, [(i + 1) / n for i in range(n)], where="post", label=label,
                    markevery=0.1, markersize=4, **palette[s.variant].line())  # fmt: skip
        if wide(everything):
            ax.set_xscale("log")
        ax.set_xlabel(f"{op} ns per record")
        ax.set_title(op)
        ax.grid(alpha=0.3)
    axes[0].set_ylabel("fraction of records")
    legend(fig)
    fig.suptitle("Record latency CDF")
    return Plot("record_latency_cdf", "Record latency CDF", "record_latency", fig)


def throughput_plot(model: RunModel) -> Plot | None:
    from tlsbench.reportkit.plots import Plot, Series, figure, grouped_bars, legend, wide

    if not model.throughput:
        return None
    cases = {r.case for r in model.throughput}
    label = {id(r): r.variant + (f" {r.case}" if len(cases) > 1 else "") for r in model.throughput}
    categories = list(dict.fromkeys(label[id(r)] for r in model.throughput))
    series: list[Series] = []
    for side, colour in (("sender", "tab:blue"), ("receiver", "tab:orange")):
        values = {label[id(r)]: getattr(r, f"{side}_mbps") for r in model.throughput}
        cis = {
            label[id(r)]: (getattr(r, f"{side}_ci_low"), getattr(r, f"{side}_ci_high"))
            for r in model.throughput
        }
        series.append((side, values, cis, {"color": colour}))
    fig = figure()
    ax = fig.subplots()
    grouped_bars(ax, categories, series)
    baseline = next((r for r in model.throughput if r.baseline), None)
    if baseline is not None:
        # The harness alone: what no library can beat on this machine.
        ax.axhline(baseline.sender_mbps, color="grey", linestyle=":",
                   label="null baseline (sender)")  # fmt: skip
    everything = [r.sender_mbps for r in model.throughput] + [
        r.receiver_mbps for r in model.throughput
    ]
    if wide(everything):
        ax.set_yscale("log")
    ax.set_ylabel("MB/s (10^6 bytes per second)")
    legend(fig)
    ax.set_title("Bulk throughput (median, 95 % CI)")
    return Plot("bulk_throughput", "Bulk throughput", "bulk_throughput", fig)


def _case(case: str, scenario: str) -> str:
    return f"{case} (resumed)" if scenario == "resume" else case


# -- metrics (dashboard formats) and the per-library summary ------------------------------------


def handshake_metrics(model: RunModel) -> list[Any]:
    out: list[Metric] = []
    for m in model.memory:
        name = f"{m.variant} {m.point} {m.side}"
        out += [Metric(name, "heap-peak", "bytes", m.peak_minus_start),
                Metric(name, "heap-retained", "bytes", m.retained_minus_start),
                Metric(name, "allocations", "allocations", m.handshake_allocs)]  # fmt: skip
        if m.stack is not None:
            out.append(Metric(name, "stack", "bytes", m.stack))
    for h in model.handshakes:
        name = f"{h.variant} {h.point}"
        out.append(Metric(name, "latency", "ns", h.ms * 1e6, h.ms_ci_low * 1e6,
                          h.ms_ci_high * 1e6))  # fmt: skip
        if h.handshakes_per_s is not None:
            out.append(Metric(name, "throughput", "handshakes/s", h.handshakes_per_s,
                              h.hps_ci_low, h.hps_ci_high, higher_is_better=True))  # fmt: skip
    for w in model.wire:
        name = f"{w.variant} {w.point} {w.handshake}"
        for side, value in (("client", w.client_bytes), ("server", w.server_bytes)):
            if value is not None:
                out.append(Metric(f"{name} {side}", "wire-bytes", "bytes", value))
        if w.round_trips is not None:
            out.append(Metric(name, "round-trips", "round trips", w.round_trips))
    return out


def record_metrics(model: RunModel) -> list[Any]:
    out: list[Metric] = []
    for r in model.latency:
        name = f"{r.variant} {r.point} {r.op}"
        out.append(Metric(name, "latency", "ns", r.p50_ns, r.p50_ci_low_ns, r.p50_ci_high_ns))
        if r.allocs_per_record is not None:
            out.append(Metric(name, "allocations", "allocations", r.allocs_per_record))
    for t in model.throughput:
        name = f"{t.variant} {t.point}"
        out += [Metric(f"{name} sender", "throughput-mbps", "MB/s", t.sender_mbps,
                       t.sender_ci_low, t.sender_ci_high, higher_is_better=True),
                Metric(f"{name} receiver", "throughput-mbps", "MB/s", t.receiver_mbps,
                       t.receiver_ci_low, t.receiver_ci_high, higher_is_better=True)]  # fmt: skip
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


def record_summary(model: RunModel) -> list[SummaryCell]:
    """Per variant: its first record write's p50 and its first bulk sender MB/s."""
    writes = [r for r in model.latency if r.op == "write"]
    cells = [SummaryCell(r.variant, "record write p50 ns", r.p50_ns, fmt_sig(r.p50_ns), r.case)
             for r in first_per_variant(writes)]  # fmt: skip
    cells += [SummaryCell(t.variant, "bulk MB/s", t.sender_mbps, fmt_sig(t.sender_mbps), t.case)
              for t in first_per_variant(model.throughput)]  # fmt: skip
    return cells


# -- the family ----------------------------------------------------------------------------------


def load_handshakes(reader: RunReader) -> dict[str, list[Any]]:
    return {"memory": memory(reader), "handshakes": handshakes(reader), "wire": wire(reader)}


def load_records(reader: RunReader) -> dict[str, list[Any]]:
    rows, samples = latency(reader)
    return {"latency": rows, "latency_samples": samples, "throughput": throughput(reader)}


def _views(*makers: Any) -> Any:
    return lambda model: [v for make in makers for v in make(model)]


def _plots(*makers: Any) -> Any:
    return lambda model: [p for make in makers if (p := make(model)) is not None]


FAMILY = OneProcess(
    "tls",
    ("handshake", "resume", "records", "bulk"),
    claimable=True,
    sections=(
        Section(
            "handshakes",
            20,
            (TableSpec("memory", "memory", "Handshake heap (bytes)", MemoryRow),
             TableSpec("handshakes", "handshake_time", "Handshake time", HandshakeRow),
             TableSpec("wire", "wire", "Handshake on the wire", WireRow)),
            load_handshakes,
            views=_views(memory_view, handshake_view, wire_view),
            plots=_plots(heap_vs_record_size, handshake_time_plot),
            metrics=handshake_metrics,
            summary=handshake_summary,
        ),
        Section(
            "records",
            40,
            (TableSpec("latency", "record_latency", "Record latency (ns)", LatencyRow),
             TableSpec("throughput", "bulk_throughput", "Bulk throughput (MB/s)", ThroughputRow),
             TableSpec("latency_samples", "latency_samples", None, LatencySamples)),
            load_records,
            views=_views(latency_view, throughput_view),
            plots=_plots(record_latency_cdf, throughput_plot),
            metrics=record_metrics,
            summary=record_summary,
        ),
    ),
)  # fmt: skip
