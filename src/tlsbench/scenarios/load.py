"""A server under load: the `load` scenario (tlsbench/load.py runs the two sides).

A point's variant is the server's library; `server` is its program (self = the variant's
driver serving, or nginx), `client` the load generator (a variant's driver, self, or a real
generator: h2load), running `connections` concurrent connections in one `pattern` for
`duration_s` seconds (open loop at `rate` transactions/s where given). `heap = true` adds a
short run of the server's heap driver for its heap per connection. The server and the
generators may run on other hosts (remote.py: server_host, generator_hosts,
server_address).

Report: a row per server, pattern, concurrency and generator, the generators compared on
the same server, and throughput and p99 latency against concurrency.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from tlsbench.builds import arches
from tlsbench.core.errors import UserError
from tlsbench.core.paths import commit_id
from tlsbench.core.points import RunPoint
from tlsbench.core.store import Point
from tlsbench.driver import allocators
from tlsbench.driver.declaration import Declared
from tlsbench.driver.process import Outcome, accel_env, allocator_env, unsupported
from tlsbench.peers import load, programs, remote
from tlsbench.reportkit.palette import server_style
from tlsbench.reportkit.reader import RunReader, case_labels
from tlsbench.reportkit.section import Section, SummaryCell, TableSpec, first_per_variant
from tlsbench.reportkit.views import View, fmt_bytes, fmt_sig, variant_cell
from tlsbench.scenarios import base, modes
from tlsbench.scenarios.base import (
    ALLOCATOR_KEY,
    CONNECTIONS_KEY,
    SERVER_KEY,
    THREADS_KEY,
    TLS_KEYS,
    Family,
    Key,
    PointChecker,
    RunContext,
    bounded_whole,
    flag,
    fmt,
    one_of,
    text,
)

if TYPE_CHECKING:
    from tlsbench.builds.build import Build
    from tlsbench.builds.variants import Variant
    from tlsbench.reportkit.model import RunModel
    from tlsbench.reportkit.plots import Plot
    from tlsbench.reportkit.views import View

# The longest a load point may run (the driver itself takes up to a day).
MAX_DURATION_S = 3600
HOSTS = "a string: OpenSSH destinations"


def _generators(value: Any) -> str:
    return "generators-on-" + "+".join(v.strip() for v in str(value).split(","))


class Load(Family):
    def driver_scenario(self, scenario: str) -> str | None:
        return "serve"

    def driver_scenarios(self) -> tuple[str, ...]:
        return ("serve", "load")  # the server, and tlsbench's generator

    def accepts(self, scenario: str, declared: Declared) -> tuple[str, ...]:
        tls = [k for k in TLS_KEYS if k not in ("key_share", "transport", "io")]
        return (*tls, "payload", *(k.name for k in self.keys))

    def check(self, checker: PointChecker, scenario: str, values: dict[str, Any],
              variant: Variant) -> None:  # fmt: skip
        base.check_key_share(checker, values)
        base.check_kx(checker, values, resumes=values.get("pattern") == "resume")
        base.check_suite_version(checker, values)
        base.check_allocator(checker, values, variant, why_not=(
            "the variant's own server (server = \"self\"): it is preloaded into the driver, "
            "which reads back that its malloc comes from it; nginx has its own pools"
            if values.get("server") == "nginx" else
            "this host's drivers: it is preloaded and read back on this host only"
            if any(values.get(k) for k in remote.HOST_KEYS) else None))  # fmt: skip

    def settle(self, checker: PointChecker, scenario: str, options: dict[str, Any],
               values: dict[str, Any], variant: Variant) -> None:  # fmt: skip
        """A load point's generator (canonical variant name, or a real generator) and what
        no run of it could honour (load.refusal), before anything runs."""
        client = values.get("client")
        allowed = "a variant, self, or " + ", ".join(load.GENERATOR_PROGRAMS)
        if client is None:
            raise checker.error("a load point has no client (the load generator: " + allowed + ")")
        if client == "self":
            options["client"] = variant.name
        elif client not in load.GENERATOR_PROGRAMS:
            try:
                options["client"] = checker.resolve(client).name
            except UserError as exc:
                raise checker.value_error("client", client, f"{allowed} ({exc})") from None
        if remote.uses_hosts(options) and (why := remote.refusal(options)):
            key = next(k for k in remote.HOST_KEYS if k in options)
            raise checker.value_error(key, options[key], why)
        refused = load.refusal(options, variant.line.name, variant.library)
        if refused is not None:
            key, why = refused
            raise checker.value_error(key, options.get(key, values.get(key, variant.name)), why)

    def peer_variants(self, point: RunPoint) -> list[str]:
        client = str(point.options.get("client", ""))
        return [client] if client and not programs.is_program(client) else []

    def describe(self, point: RunPoint, builds: dict[str, Build]) -> dict[str, Any]:
        client = str(point.options.get("client", ""))
        described: dict[str, Any] = {
            "client": builds[client].describe() if client in builds
            else {"program": client, "version": programs.version(client)}
        }  # fmt: skip
        if point.options.get("server") == "nginx":
            described["server"] = {"program": "nginx", "version": programs.version("nginx")}
        return described

    def run(self, point: RunPoint, ctx: RunContext) -> Outcome:
        """A server and a load generator in two processes (load.py); accel = "off" applies
        to the server (the generator stays a fixed, fast client)."""
        if ctx.mode == "instructions":
            return modes.run_instructions(point, ctx.builds[point.variant], ctx.timeout)
        server = ctx.builds[point.variant]
        generators = self.peer_variants(point)
        client_build = ctx.build(generators[0]) if generators else None
        for build in (server, client_build):
            if build is not None and not arches.ARCHES[build.variant.arch].timing:
                return unsupported(
                    f"load measures time, and {arches.no_timing_reason(build.variant.arch)}"
                )
        if remote.uses_hosts(point.options):  # server and generators on other hosts
            assert client_build is not None  # remote.refusal: the generator is a variant
            result = remote.run_point(point.options, server, client_build, ctx.timeout,
                                      commit_id())  # fmt: skip
            return Outcome(result.status, result.exit_code, None, result.seconds,
                           result.output, result.stderr_tail)  # fmt: skip
        env, refused = accel_env(point, server)
        if refused:
            return unsupported(refused)
        # The server's allocator (the generator stays a fixed client on glibc's malloc).
        alloc_env, refused = allocator_env(point, "time")
        if refused:
            return unsupported(refused)
        env = {**env, **alloc_env}
        result = load.run_point(point.options, server, client_build, ctx.timeout, env, {})
        if result.output is not None and alloc_env:
            record = allocators.record(str(point.options["allocator"]))
            result.output["allocator"] = {**(result.output.get("allocator") or {}), **record}
        if result.output is not None and env:
            result.output["run_env"] = env
        return Outcome(result.status, result.exit_code, None, result.seconds, result.output,
                       result.stderr_tail)  # fmt: skip


# -- the report ------------------------------------------------------------------------------


@dataclass(frozen=True)
class LoadRow:
    """One server under one load generator (a load point): medians over repetitions."""

    variant: str  # the server's library
    point: str
    server: str  # the variant's tlsbench server, or nginx
    client: str  # the load generator: a variant's driver, or h2load
    case: str  # what differs between points: version, suite, group, certificate, accel
    pattern: str  # new | resume | keepalive
    connections: int
    result: str  # ok | unsupported | failed
    tps: float | None  # transactions per second
    hps: float | None  # handshakes per second
    mbps: float | None  # response bytes per second (10^6)
    p50_us: float | None
    p99_us: float | None
    server_cpu_ms_per_tx: float | None
    server_heap_per_connection: float | None
    generator_cpu: float | None  # the generator's CPU utilization (fraction of a core)
    saturated: bool  # the generator used 90 % of a core or more in some repetition
    latency_from: str  # "connect" (tlsbench new/resume), "request" (keepalive, h2load)
    detail: str  # why not ok
    failed: str = ""  # "2 of 5 repetitions failed" where the figures rest on fewer
    machine: str = ""  # where the run spans several machines: the one(s) this row ran on
    # The server's model where it is more than one event loop: "2 processes", "2 threads".
    model: str = ""


def _server_model(params: dict[str, Any]) -> str:
    threads, workers = int(params.get("threads", 1)), int(params.get("workers", 1))
    return f"{threads} threads" if threads > 1 else f"{workers} processes" if workers > 1 else ""


def load_rows(reader: RunReader) -> dict[str, list[Any]]:
    points = reader.points_of(FAMILY.scenarios, ok=False)
    # Cases from the points' own TLS options (the load keys have columns of their own).
    load_keys = ("client", "server", "pattern", "connections", "duration_s",
                 "heap", "workers", "threads", "request_size")  # fmt: skip
    cases = case_labels({p.id: {k: v for k, v in p.params.items() if k not in load_keys}
                         for p in points})  # fmt: skip
    rows = []
    for p in points:
        ok = reader.ok(p)
        if ok:
            result, detail = "ok", ""
        else:
            bad = reader.results[p.id][0]
            result = bad.status
            error = (bad.output or {}).get("error") or {}
            detail = str(error.get("message") or f"exit {bad.exit_code}")

        def median_of(series: str, point: Point = p) -> float | None:
            values = reader.store.samples(point.id, series)
            return statistics.median(values) if values else None

        outputs = [r.output for r in ok if r.output]
        pattern = str(p.params.get("pattern", "keepalive"))
        client = str(p.params.get("client", "?"))
        from_request = pattern == "keepalive" or client == "h2load"
        rows.append(
            LoadRow(
                variant=p.variant,
                point=p.name,
                server="nginx" if p.params.get("server") == "nginx" else p.variant,
                client=client,
                case=cases[p.id],
                pattern=pattern,
                connections=int(p.params.get("connections", 1)),
                result=result,
                tps=median_of("load_tps"),
                hps=median_of("load_hps"),
                mbps=median_of("load_MBps"),
                p50_us=median_of("latency_p50_us"),
                p99_us=median_of("latency_p99_us"),
                server_cpu_ms_per_tx=median_of("server_cpu_ms_per_tx"),
                server_heap_per_connection=median_of("server_heap_per_connection"),
                generator_cpu=median_of("generator_cpu_utilization"),
                saturated=any((o.get("load") or {}).get("saturated") for o in outputs),
                # --rate: each transaction's latency counts from when it was due.
                latency_from="due time"
                if p.params.get("rate")
                else "request"
                if from_request
                else "connect",
                detail=detail,
                model=_server_model(p.params),
            )
        )
    order = {v: i for i, v in enumerate(dict.fromkeys(p.variant for p in reader.points))}
    return {"load": sorted(rows, key=lambda r: (order[r.variant], r.server, r.case, r.pattern,
                                                r.client, r.connections, r.model))}  # fmt: skip


def load_views(model: RunModel) -> list[View]:
    if not model.load:
        return []
    out = [
        View(
            "load",
            "Under load",
            "A server (the variant's tlsbench server, or nginx) under a load generator "
            "(a variant's tlsbench generator, or h2load), each on its own CPU: transactions "
            "and handshakes per second, response MB/s, latency percentiles in µs (from "
            "connect to the last response byte for new and resume under tlsbench's "
            "generator, from the request otherwise, and from each transaction's due time "
            "where a rate was offered (open loop): `from`), the server's CPU ms per "
            "transaction and heap per open connection (heap runs only), and the "
            "generator's CPU (fraction of a core). `saturated`: the generator used 90 % of "
            "its core or more, so it, not the server, may have been the limit. Medians over "
            "repetitions.",
            ["server", "case", "pattern", "conns", "generator", "result", "tx/s",
             "handshakes/s", "MB/s", "p50 µs", "p99 µs", "from", "server CPU ms/tx",
             "heap/conn", "generator CPU", "saturated", "detail"],
            [False, False, False, True, False, False, True, True, True, True, True, False,
             True, True, True, False, False],
            [
                [(variant_cell(r) if r.server == r.variant else f"nginx ({r.variant})")
                 + (f" ({r.model})" if r.model else ""), r.case,
                 r.pattern, str(r.connections), r.client, r.result, fmt_sig(r.tps),
                 fmt_sig(r.hps), fmt_sig(r.mbps), fmt_sig(r.p50_us), fmt_sig(r.p99_us),
                 r.latency_from, fmt_sig(r.server_cpu_ms_per_tx),
                 fmt_bytes(r.server_heap_per_connection), fmt_sig(r.generator_cpu),
                 "yes" if r.saturated else "no", r.detail]
                for r in model.load
            ],
        )
    ]  # fmt: skip
    # The same server, pattern and concurrency under h2load and under a tlsbench generator.
    by_cell: dict[tuple[str, str, str, str, str, int], dict[str, Any]] = {}
    for r in model.load:
        if r.result == "ok":
            by_cell.setdefault((r.variant, r.server, r.model, r.case, r.pattern, r.connections),
                               {})[r.client] = r  # fmt: skip
    rows = []
    for (_, server, _, case, pattern, conns), clients in by_cell.items():
        h2 = clients.get("h2load")
        for name, own in clients.items():
            if h2 is None or name == "h2load":
                continue
            ratio = own.tps / h2.tps if own.tps and h2.tps else None
            rows.append([server, case, pattern, str(conns), name, fmt_sig(own.tps),
                         fmt_sig(h2.tps), fmt_sig(ratio), fmt_sig(own.p50_us),
                         fmt_sig(h2.p50_us), fmt_sig(own.p99_us), fmt_sig(h2.p99_us),
                         _saturation(own, h2)])  # fmt: skip
    if rows:
        out.append(
            View(
                "load_generators",
                "Load generators compared",
                "The same server, pattern and concurrency measured by tlsbench's generator "
                "and by h2load: transactions/s of each and their ratio, and latency "
                "percentiles in µs (h2load's from the request's first byte; tlsbench's from "
                "connect for new and resume, from the request for keepalive). `saturated` "
                "names the generators that used 90 % of their core or more: where one did, "
                "the figures compare the generators, not the server.",
                ["server", "case", "pattern", "conns", "tlsbench generator", "tx/s",
                 "h2load tx/s", "ratio", "p50 µs", "h2load p50 µs", "p99 µs",
                 "h2load p99 µs", "saturated"],
                [False, False, False, True, False, True, True, True, True, True, True, True,
                 False],
                rows,
            )
        )  # fmt: skip
    return out


def _saturation(own: Any, h2: Any) -> str:
    names = [name for name, row in (("tlsbench", own), ("h2load", h2)) if row.saturated]
    return " and ".join(names) or "neither"


def capacity(model: RunModel) -> Plot | None:
    """Transactions/s and p99 latency against concurrent connections, one line per server
    and pattern (and generator, where a server had several): where throughput stops growing
    and latency takes off is the saturation point."""
    from tlsbench.reportkit.plots import Plot, figure, legend, short

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
    fig = figure(12.0, 5.5)
    ax_tps, ax_p99 = fig.subplots(1, 2)
    # The server's colour (nginx apart from its library's own server: palette.py), line
    # style per pattern, marker per generator.
    dashes = {"keepalive": "-", "new": "--", "resume": ":"}
    for label, points in lines.items():
        first = points[0]
        style = {"color": server_style(first.server).colour,
                 "marker": "x" if first.client == "h2load" else "o",
                 "linestyle": dashes.get(first.pattern, "-.")}  # fmt: skip
        xs = [r.connections for r in points]
        ax_tps.plot(xs, [r.tps for r in points], label=short(label), **style)
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
    legend(fig, fontsize="x-small")
    ax_tps.set_title("Throughput (solid keepalive, dashed new, dotted resume; x h2load)",
                     fontsize="small")  # fmt: skip
    ax_p99.set_title("p99 latency", fontsize="small")
    return Plot("capacity", "Capacity", "load", fig)


def load_summary(model: RunModel) -> list[SummaryCell]:
    """Per server variant: the most transactions/s any of its ok points served, and the
    server's heap per connection where a point measured it (`heap = true`)."""
    best: dict[str, Any] = {}
    for r in model.load:
        if (
            r.result == "ok"
            and r.tps is not None
            and (r.variant not in best or r.tps > best[r.variant].tps)
        ):
            best[r.variant] = r
    cells = [SummaryCell(v, "load tx/s", r.tps, fmt_sig(r.tps),
                         f"{r.server} {r.pattern} c{r.connections} by {r.client}")
             for v, r in best.items()]  # fmt: skip
    heap = [r for r in model.load if r.result == "ok" and r.server_heap_per_connection]
    cells += [SummaryCell(r.variant, "server heap per connection bytes",
                          r.server_heap_per_connection, fmt_bytes(r.server_heap_per_connection),
                          f"{r.server} {r.pattern} c{r.connections}")
              for r in first_per_variant(heap)]  # fmt: skip
    return cells


FAMILY = Load(
    "load",
    ("load",),
    keys=(
        SERVER_KEY,
        Key("client", text("a variant, self, or " + ", ".join(load.GENERATOR_PROGRAMS), True),
            fmt("by-{}")),
        Key("pattern", one_of()),
        CONNECTIONS_KEY,
        Key("rate", bounded_whole(), fmt("{}tps")),
        Key("request_size", bounded_whole(), fmt("req{}B")),
        Key("workers", bounded_whole(), fmt("w{}")),
        THREADS_KEY,
        ALLOCATOR_KEY,
        # Other hosts (remote.py): OpenSSH destinations of the server and the generators
        # (comma-separated), and the address the generators connect to.
        Key("server_host", text(HOSTS), fmt("server-on-{}")),
        Key("generator_hosts", text(HOSTS), _generators),
        Key("server_address", text(HOSTS), fmt("via-{}")),
        Key("duration_s", bounded_whole((1, MAX_DURATION_S)), None),
        Key("heap", flag, None),
    ),
    sections=(
        Section("load", 80, (TableSpec("load", "load", "Under load", LoadRow),), load_rows,
                views=load_views, plots=lambda model: [p] if (p := capacity(model)) else [],
                summary=load_summary),
    ),
)  # fmt: skip
