"""Plots of a run (matplotlib, Agg): each written as PNG and SVG, each skipped without data.

Figures are built with `matplotlib.figure.Figure`, never pyplot, so nothing global (open
figure lists, the interactive backend) is involved; SVG output is made reproducible (fixed
id salt, no date) so that two reports of one run are byte-identical.
"""

from __future__ import annotations

import io
import re
import textwrap
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")  # never a display: reports are written on build machines and in CI

from matplotlib.axes import Axes
from matplotlib.figure import Figure

from tlsbench.report.model import BASELINE_VARIANT, RunModel

WIDE_RANGE = 20.0  # a log axis once the largest value is this many times the smallest


@dataclass(frozen=True)
class Plot:
    name: str  # file stem
    title: str
    section: str  # the model table it illustrates
    figure: Figure


def _colours(model: RunModel) -> dict[str, Any]:
    """One colour per variant, the same in every plot."""
    cmap = matplotlib.colormaps["tab10"]
    return {v: cmap(i % 10) for i, v in enumerate(model.variants)}


def _figure(width: float = 9.0, height: float = 4.8) -> Figure:
    return Figure(figsize=(width, height), layout="constrained")


def _short(label: str) -> str:
    """Suite names as experiment point names write them (TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256
    -> ECDHE_RSA_AES_128_GCM_SHA256): the same information, room for the plot."""
    return re.sub(r"\bTLS_", "", label).replace("_WITH_", "_")


def _wrap(label: str, width: int = 22) -> str:
    """Wraps at spaces and, inside long option values, after underscores."""
    lines = textwrap.wrap(
        _short(label).replace("_", "_ "), width, break_long_words=False, break_on_hyphens=False
    )
    return "\n".join(line.replace("_ ", "_") for line in lines)


def _wide(values: Sequence[float]) -> bool:
    positive = [v for v in values if v > 0]
    return bool(positive) and max(positive) / min(positive) > WIDE_RANGE


# A bar series: label, value per category, 95 % CI per category (may be empty), bar style.
Series = tuple[str, dict[str, float], dict[str, tuple[float, float]], dict[str, Any]]


def _grouped_bars(ax: Axes, categories: list[str], series: list[Series]) -> None:
    """Bars per category, one per series (label, value per category, CI, bar style)."""
    width = 0.8 / max(len(series), 1)
    for i, (label, values, cis, style) in enumerate(series):
        xs = [c for c in range(len(categories)) if categories[c] in values]
        ys = [values[categories[c]] for c in xs]
        errs = None
        if cis:
            lows = [max(values[categories[c]] - cis[categories[c]][0], 0.0) for c in xs]
            highs = [max(cis[categories[c]][1] - values[categories[c]], 0.0) for c in xs]
            errs = [lows, highs]
        offset = (i - (len(series) - 1) / 2) * width
        ax.bar([x + offset for x in xs], ys, width, yerr=errs, label=label, capsize=2, **style)
    # Labels are option lists ("TLS 1.3 TLS_AES_128_GCM_SHA256 ..."): one option a line.
    ax.set_xticks(range(len(categories)), [_wrap(c) for c in categories], fontsize="small")
    ax.grid(axis="y", alpha=0.3)


def heap_vs_record_size(model: RunModel) -> Plot | None:
    # The first connection per side (warm connections are in the table).
    rows = [r for r in model.memory if r.record_size and r.side in ("client", "server")]
    if not rows:
        return None
    colours = {line: matplotlib.colormaps["tab10"](i % 10) for i, line in
               enumerate(dict.fromkeys(r.line for r in rows))}  # fmt: skip
    cases = {r.case for r in rows}
    entries = len({(r.line, r.side, r.case) for r in rows})
    fig = _figure(10.0, 4.2 + 0.2 * entries)  # room for the legend below the axes
    axes = fig.subplots(1, 2, sharex=True)
    for ax, figure, label in (
        (axes[0], "peak_minus_start", "peak - start"),
        (axes[1], "retained_minus_start", "retained - start"),
    ):
        lines: dict[tuple[str, str, str], list[tuple[int, float]]] = {}
        for r in rows:
            assert r.record_size is not None
            lines.setdefault((r.line, r.side, r.case), []).append(
                (r.record_size, getattr(r, figure))
            )
        for (line, side, case), points in lines.items():
            points.sort()
            name = f"{line} {side}" + (f" ({_short(case)})" if len(cases) > 1 else "")
            ax.plot(
                [x for x, _ in points],
                [y / 1024 for _, y in points],
                marker="o" if side == "client" else "s",
                linestyle="-" if side == "client" else "--",
                color=colours[line],
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
    # Labels name the library line, side and case: too long to sit inside an axis.
    fig.legend(*axes[0].get_legend_handles_labels(), loc="outside lower center",
               fontsize="small")  # fmt: skip
    fig.suptitle("Handshake heap vs record size")
    return Plot("heap_vs_record_size", "Handshake heap vs record size", "memory", fig)


def handshake_time(model: RunModel) -> Plot | None:
    # The null variant does no TLS: microseconds beside milliseconds, a bar nobody can see.
    # It stays in the table; the plot compares libraries on a linear axis.
    rows = [r for r in model.handshakes if r.variant != BASELINE_VARIANT]
    if not rows:
        return None
    colours = _colours(model)
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
        series.append((variant, values, cis, {"color": colours[variant]}))
    fig = _figure()
    ax = fig.subplots()
    _grouped_bars(ax, categories, series)
    ax.set_ylabel("ms per handshake (client + server CPU)")
    ax.legend(fontsize="small")
    ax.set_title("Handshake time per suite (median, 95 % CI)")
    return Plot("handshake_time", "Handshake time per suite", "handshake_time", fig)


def projected_handshake(model: RunModel) -> Plot | None:
    """Firmware points: the client's handshake time on its core's reference part, as the
    range the core's cycles per instruction allow (a bar from low to high), per core and job,
    a colour per library build; log scale."""
    rows = [r for r in model.firmware if r.side == "client"]
    if not rows:
        return None
    ordered = sorted(rows, key=lambda r: (r.job, int("".join(c for c in r.core if c.isdigit()))))
    labels = list(dict.fromkeys(f"{r.core}  {r.job}" for r in ordered))
    # A colour per library line: the same library on every core reads as one.
    lines = list(dict.fromkeys(r.variant.split(":")[0] for r in rows))
    cmap = matplotlib.colormaps["tab10"]
    colours = {line: cmap(i % 10) for i, line in enumerate(lines)}
    step = 0.8 / max(1, len(lines))
    fig = _figure(11.0, 1.5 + 0.2 * len(labels))
    ax = fig.subplots()
    for r in rows:
        offset = (lines.index(r.variant.split(":")[0]) - (len(lines) - 1) / 2) * step
        y = labels.index(f"{r.core}  {r.job}") + offset
        ax.plot([r.ms_low, r.ms_high], [y, y], color=colours[r.variant.split(":")[0]],
                linewidth=3, solid_capstyle="butt")  # fmt: skip
    for line in lines:
        ax.plot([], [], color=colours[line], linewidth=3, label=line)
    ax.set_xscale("log")
    ax.set_xlabel("client handshake ms (projected range)")
    ax.set_yticks(range(len(labels)), labels, fontsize="xx-small")
    ax.invert_yaxis()
    ax.grid(alpha=0.3, axis="x")
    ax.legend(fontsize="x-small")
    ax.set_title("Firmware handshake, client: instructions x the core's CPI range at its "
                 "reference part's clock", fontsize="small")  # fmt: skip
    return Plot("projected_handshake", "Firmware projected handshake", "firmware", fig)


def record_latency_cdf(model: RunModel) -> Plot | None:
    sets = [s for s in model.latency_samples if s.write_ns or s.read_ns]
    if not sets:
        return None
    colours = _colours(model)
    payloads = {s.payload for s in sets}
    fig = _figure(10.0, 4.8)
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
            ax.step(values, [(i + 1) / n for i in range(n)], where="post",
                    color=colours[s.variant], label=label)  # fmt: skip
        if _wide(everything):
            ax.set_xscale("log")
        ax.set_xlabel(f"{op} ns per record")
        ax.set_title(op)
        ax.grid(alpha=0.3)
    axes[0].set_ylabel("fraction of records")
    axes[0].legend(fontsize="small")
    fig.suptitle("Record latency CDF")
    return Plot("record_latency_cdf", "Record latency CDF", "record_latency", fig)


def aead_cycles(model: RunModel) -> Plot | None:
    if not model.aead:
        return None
    colours = _colours(model)
    algorithms = list(dict.fromkeys(r.aead for r in model.aead))
    fig = _figure(4.0 * len(algorithms) + 1.0, 4.5)
    axes = fig.subplots(1, len(algorithms), sharey=True, squeeze=False)[0]
    for ax, algorithm in zip(axes, algorithms, strict=True):
        rows = [r for r in model.aead if r.aead == algorithm]
        categories = [f"{p:,}" for p in sorted({r.payload for r in rows})]
        series: list[Series] = []
        for variant in dict.fromkeys(r.variant for r in rows):
            values = {f"{r.payload:,}": r.tsc_cycles_per_byte for r in rows if r.variant == variant}
            series.append((variant, values, {}, {"color": colours[variant]}))
        _grouped_bars(ax, categories, series)
        ax.set_title(algorithm)
        ax.set_xlabel("payload (bytes)")
    if _wide([r.tsc_cycles_per_byte for r in model.aead]):
        axes[0].set_yscale("log")
    axes[0].set_ylabel("TSC cycles per byte")
    axes[0].legend(fontsize="small")
    fig.suptitle("AEAD cost (12-byte AD)")
    return Plot("aead_cycles_per_byte", "AEAD cycles per byte", "aead", fig)


def throughput(model: RunModel) -> Plot | None:
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
    fig = _figure()
    ax = fig.subplots()
    _grouped_bars(ax, categories, series)
    baseline = next((r for r in model.throughput if r.baseline), None)
    if baseline is not None:
        # The harness alone: what no library can beat on this machine.
        ax.axhline(baseline.sender_mbps, color="grey", linestyle=":",
                   label="null baseline (sender)")  # fmt: skip
    everything = [r.sender_mbps for r in model.throughput] + [
        r.receiver_mbps for r in model.throughput
    ]
    if _wide(everything):
        ax.set_yscale("log")
    ax.set_ylabel("MB/s (10^6 bytes per second)")
    ax.legend(fontsize="small")
    ax.set_title("Bulk throughput (median, 95 % CI)")
    return Plot("bulk_throughput", "Bulk throughput", "bulk_throughput", fig)


def code_size(model: RunModel) -> Plot | None:
    """Stacked text / data / bss per variant and target, client and server side by side."""
    rows = model.code_size
    if not rows:
        return None
    fig = _figure(11.0, 5.0)
    ax = fig.subplots()
    labels = list(dict.fromkeys(f"{r.variant} ({r.target})" for r in rows))
    width = 0.38
    parts = (("text", "tab:blue"), ("data", "tab:orange"), ("bss", "tab:green"))
    for i, role in enumerate(("client", "server")):
        by_label = {f"{r.variant} ({r.target})": r for r in rows if r.role == role}
        xs = [x for x, label in enumerate(labels) if label in by_label]
        bottom = [0.0] * len(xs)
        for part, colour in parts:
            heights = [float(getattr(by_label[labels[x]], part)) / 1024 for x in xs]
            ax.bar([x + (i - 0.5) * width for x in xs], heights, width * 0.95, bottom=bottom,
                   color=colour, alpha=1.0 if role == "client" else 0.55,
                   label=f"{part} ({role})")  # fmt: skip
            bottom = [b + h for b, h in zip(bottom, heights, strict=True)]
    ax.set_xticks(range(len(labels)), [_wrap(label) for label in labels], fontsize="small")
    ax.set_ylabel("KiB")
    ax.grid(axis="y", alpha=0.3)
    ax.legend(fontsize="small", ncols=2)
    ax.set_title("Code size of a minimal client (left) and server (right, lighter)")
    return Plot("code_size", "Code size", "code_size", fig)


def capacity(model: RunModel) -> Plot | None:
    """Transactions/s and p99 latency against concurrent connections, one line per server
    and pattern (and generator, where a server had several): where throughput stops growing
    and latency takes off is the saturation point."""
    rows = [r for r in model.load if r.result == "ok" and r.tps is not None]
    lines: dict[str, list[Any]] = {}  # label -> rows by connections
    clients: dict[tuple[str, str, str], set[str]] = {
        (r.server, r.case, r.pattern): set() for r in rows
    }
    for r in rows:
        clients[(r.server, r.case, r.pattern)].add(r.client)
    for r in rows:
        label = f"{r.server} {r.pattern}" + (f" {r.case}" if r.case != "default" else "")
        if len(clients[(r.server, r.case, r.pattern)]) > 1:
            label += f" by {r.client}"
        lines.setdefault(label, []).append(r)
    lines = {k: sorted(v, key=lambda r: r.connections) for k, v in lines.items() if len(v) > 1}
    if not lines:
        return None
    fig = _figure(12.0, 5.5)
    ax_tps, ax_p99 = fig.subplots(1, 2)
    # Colour per server (nginx apart from its library's own server), line style per pattern,
    # marker per generator.
    cmap = matplotlib.colormaps["tab10"]
    servers = list(dict.fromkeys(points[0].server for points in lines.values()))
    dashes = {"keepalive": "-", "new": "--", "resume": ":"}
    for label, points in lines.items():
        first = points[0]
        style = {"color": cmap(servers.index(first.server) % 10),
                 "marker": "x" if first.client == "h2load" else "o",
                 "linestyle": dashes.get(first.pattern, "-.")}  # fmt: skip
        xs = [r.connections for r in points]
        ax_tps.plot(xs, [r.tps for r in points], label=_short(label), **style)
        p99 = [(r.connections, r.p99_us / 1e3) for r in points if r.p99_us is not None]
        if p99:
            ax_p99.plot([x for x, _ in p99], [y for _, y in p99], **style)
    for ax in (ax_tps, ax_p99):
        ax.set_xscale("log", base=2)
        ax.set_xlabel("concurrent connections")
        ax.grid(alpha=0.3)
    ax_tps.set_yscale("log")
    ax_tps.set_ylabel("transactions/s")
    ax_p99.set_yscale("log")
    ax_p99.set_ylabel("p99 latency (ms)")
    fig.legend(fontsize="x-small", loc="outside right upper")
    ax_tps.set_title("Throughput (solid keepalive, dashed new, dotted resume; x h2load)",
                     fontsize="small")  # fmt: skip
    ax_p99.set_title("p99 latency", fontsize="small")
    return Plot("capacity", "Capacity", "load", fig)


def network_latency(model: RunModel) -> Plot | None:
    """Handshake completion time against round-trip time over the emulated network: one
    line per pair and case (group, certificate, chain...) and loss; the median solid, the
    90th percentile thin. Against the model line (round trips x RTT) a flight that does not
    fit TCP's initial window, or a retransmission, shows as the gap growing with RTT."""
    rows = [
        r
        for r in model.interop
        if r.result == "ok" and r.rtt_ms is not None and r.client_wall_ms is not None
    ]
    lines: dict[tuple[str, float], list[Any]] = {}
    for r in rows:
        lines.setdefault((f"{r.client} vs {r.server} {r.line}", r.loss or 0.0), []).append(r)
    lines = {k: sorted(v, key=lambda r: r.rtt_ms) for k, v in lines.items() if len(v) > 1}
    if not lines:
        return None
    losses = sorted({loss for _, loss in lines})
    fig = _figure(12.0, 3.8 * len(losses))
    axes = fig.subplots(len(losses), 1, squeeze=False)[:, 0]
    cmap = matplotlib.colormaps["tab20"]
    labels = list(dict.fromkeys(label for label, _ in lines))
    labelled: set[str] = set()
    for ax, loss in zip(axes, losses, strict=True):
        for (label, line_loss), points in lines.items():
            if line_loss != loss:
                continue
            colour = cmap(labels.index(label) % 20)
            xs = [r.rtt_ms for r in points]
            first = label not in labelled  # one legend entry per line, over all panels
            labelled.add(label)
            ax.plot(xs, [r.client_wall_ms for r in points], marker="o", color=colour,
                    label=_short(label) if first else None)  # fmt: skip
            p90 = [(r.rtt_ms, r.client_wall_p90_ms) for r in points if r.client_wall_p90_ms]
            if p90:
                ax.plot([x for x, _ in p90], [y for _, y in p90], color=colour, linewidth=0.6)
        ax.set_ylabel("handshake ms")
        ax.set_title(f"loss {loss:g} %", fontsize="small")
        ax.grid(alpha=0.3)
    axes[-1].set_xlabel("round-trip time (ms)")
    fig.legend(fontsize="x-small", loc="outside right upper")
    fig.suptitle("Connect to handshake done against RTT (median solid, p90 thin)",
                 fontsize="small")  # fmt: skip
    return Plot("network_latency", "Handshake time over the network", "interop", fig)


PLOTS: tuple[Callable[[RunModel], Plot | None], ...] = (
    heap_vs_record_size,
    handshake_time,
    record_latency_cdf,
    aead_cycles,
    throughput,
    projected_handshake,
    code_size,
    capacity,
    network_latency,
)


def plots(model: RunModel) -> list[Plot]:
    """Every plot the run has data for, in report order."""
    return [p for p in (make(model) for make in PLOTS) if p is not None]


def svg_text(figure: Figure) -> str:
    buffer = io.StringIO()
    # A fixed id salt keeps the file stable from run to run; fonttype none keeps text text.
    with matplotlib.rc_context({"svg.hashsalt": "tlsbench", "svg.fonttype": "none"}):
        figure.savefig(buffer, format="svg", metadata={"Date": None})
    return buffer.getvalue()


def png_bytes(figure: Figure, dpi: int = 110) -> bytes:
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", dpi=dpi, metadata={"Software": None})
    return buffer.getvalue()


def write_plots(model: RunModel, out_dir: Path) -> list[Path]:
    """Writes NAME.png and NAME.svg per plot into out_dir; returns the files written."""
    out_dir.mkdir(parents=True, exist_ok=True)
    written = []
    for plot in plots(model):
        png = out_dir / f"{plot.name}.png"
        png.write_bytes(png_bytes(plot.figure))
        svg = out_dir / f"{plot.name}.svg"
        svg.write_text(svg_text(plot.figure))
        written += [png, svg]
    return written


def inline_svg(svg: str, prefix: str) -> str:
    """An SVG file made fit to sit inside HTML: no XML prologue, DOCTYPE or RDF metadata
    (which names external URLs), and ids prefixed so that two plots never share one."""
    svg = svg[svg.index("<svg") :]
    svg = re.sub(r"<metadata>.*?</metadata>\s*", "", svg, flags=re.DOTALL)
    ids = set(re.findall(r'\bid="([^"]+)"', svg))
    if ids:
        pattern = re.compile(
            r'(\bid="|url\(#|href="#)('
            + "|".join(map(re.escape, sorted(ids, key=len, reverse=True)))
            + r")\b"
        )
        svg = pattern.sub(lambda m: f"{m.group(1)}{prefix}{m.group(2)}", svg)
    return svg
