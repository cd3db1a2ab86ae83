"""The report's records section of the one-process family (tls.py): record latency (with its
CDF) and bulk throughput; their plots, dashboard metrics and summary cells.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from tlsbench.reportkit.metrics import Metric
from tlsbench.reportkit.reader import (
    BASELINE_VARIANT,
    RunReader,
    case_labels,
    int_or_none,
)
from tlsbench.reportkit.section import (
    Section,
    SummaryCell,
    TableSpec,
    first_per_variant,
    joined_plots,
    joined_views,
)
from tlsbench.reportkit.views import (
    View,
    fmt_ci,
    fmt_count,
    fmt_sig,
    fmt_size,
    p99_cell,
    variant_cell,
)

if TYPE_CHECKING:
    from tlsbench.reportkit.model import RunModel
    from tlsbench.reportkit.plots import Plot
    from tlsbench.reportkit.views import View


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


def record_metrics(model: RunModel) -> list[Any]:
    out: list[Metric] = []
    for r in model.latency:
        out.append(Metric(r.variant, r.point, "latency", "ns", r.p50_ns, r.p50_ci_low_ns,
                          r.p50_ci_high_ns, side=r.op, statistic="median"))  # fmt: skip
        if r.allocs_per_record is not None:
            out.append(Metric(r.variant, r.point, "allocations", "allocations",
                              r.allocs_per_record, side=r.op))  # fmt: skip
    for t in model.throughput:
        out += [Metric(t.variant, t.point, "throughput-mbps", "MB/s", t.sender_mbps,
                       t.sender_ci_low, t.sender_ci_high, higher_is_better=True, side="sender",
                       statistic="median"),
                Metric(t.variant, t.point, "throughput-mbps", "MB/s", t.receiver_mbps,
                       t.receiver_ci_low, t.receiver_ci_high, higher_is_better=True,
                       side="receiver", statistic="median")]  # fmt: skip
    return out


def record_summary(model: RunModel) -> list[SummaryCell]:
    """Per variant: its first record write's p50 and its first bulk sender MB/s."""
    writes = [r for r in model.latency if r.op == "write"]
    cells = [SummaryCell(r.variant, "record write p50 ns", r.p50_ns, fmt_sig(r.p50_ns), r.case)
             for r in first_per_variant(writes)]  # fmt: skip
    cells += [SummaryCell(t.variant, "bulk MB/s", t.sender_mbps, fmt_sig(t.sender_mbps), t.case)
              for t in first_per_variant(model.throughput)]  # fmt: skip
    return cells


def load_records(reader: RunReader) -> dict[str, list[Any]]:
    rows, samples = latency(reader)
    return {"latency": rows, "latency_samples": samples, "throughput": throughput(reader)}


SECTION = Section(
    "records",
    40,
    (TableSpec("latency", "record_latency", "Record latency (ns)", LatencyRow),
     TableSpec("throughput", "bulk_throughput", "Bulk throughput (MB/s)", ThroughputRow),
     TableSpec("latency_samples", "latency_samples", None, LatencySamples)),
    load_records,
    views=joined_views(latency_view, throughput_view),
    plots=joined_plots(record_latency_cdf, throughput_plot),
    metrics=record_metrics,
    summary=record_summary,
)  # fmt: skip
