"""Client and server in two processes: the `interop` scenario (tlsbench/interop.py runs the
pair).

A point's variant plays `role` (client by default) and `peer` the other side: a variant's
driver (`self`: the point's own) or a real program (programs.py) that plays the role the
variant does not; `server = "nginx"` serves a real client with no tlsbench side at all.
`rtt_ms` and `loss` put an emulated network between them (netem.py); such points mostly
wait, so several run at once (parallel.py). Timing and heap come from separate pairs of
drivers, as for every scenario.

Report: one client x server grid per case, the failures with the finding that explains
each (findings.py), downloads, the figures per pair, and handshake time against RTT.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from tlsbench.builds import arches
from tlsbench.core.errors import UserError
from tlsbench.core.points import RunPoint
from tlsbench.core.store import Point
from tlsbench.driver import parallel
from tlsbench.driver.declaration import Declared
from tlsbench.driver.drive import driver_environment
from tlsbench.driver.process import Outcome, unsupported
from tlsbench.peers import findings, interop, programs
from tlsbench.reportkit.palette import series_styles
from tlsbench.reportkit.reader import RunReader, case_labels, int_or_none
from tlsbench.reportkit.section import Section, SummaryCell, TableSpec
from tlsbench.reportkit.views import View, fmt_bytes, fmt_count, fmt_sig
from tlsbench.scenarios import base, modes, tls_certificates
from tlsbench.scenarios.base import (
    SERVER_KEY,
    TLS_KEYS,
    Family,
    Key,
    PointChecker,
    RunContext,
    fmt,
    number,
    one_of,
)

if TYPE_CHECKING:
    from tlsbench.builds.build import Build
    from tlsbench.builds.variants import Variant
    from tlsbench.reportkit.model import RunModel
    from tlsbench.reportkit.plots import Plot
    from tlsbench.reportkit.views import View

# The emulated network of a point (netem.py): round-trip time in milliseconds and loss in
# percent of packets, each direction.
NETWORK_RANGES = {"rtt_ms": (0, 10000), "loss": (0, 50)}


class Interop(Family):
    def driver_scenario(self, scenario: str) -> str | None:
        return "peer"

    def accepts(self, scenario: str, declared: Declared) -> tuple[str, ...]:
        tls = [k for k in TLS_KEYS if k not in ("accel", "transport", "io")]
        return (*tls, "payload", "bytes", *(k.name for k in self.keys), "iterations", "warmup")

    def check(self, checker: PointChecker, scenario: str, values: dict[str, Any],
              variant: Variant) -> None:  # fmt: skip
        why = None
        if values.get("role", "client") != "client":
            why = 'with role = "client" only: it is the tlsbench client\'s first key share'
        base.check_key_share(checker, values, why)
        base.check_kx(checker, values, resumes=values.get("resume") == "on")

    def settle(self, checker: PointChecker, scenario: str, options: dict[str, Any],
               values: dict[str, Any], variant: Variant) -> None:  # fmt: skip
        options["peer"] = self.peer(checker, values, variant.name)
        if options.get("server") == "nginx":
            self.check_two_programs(checker, options, variant)

    @staticmethod
    def peer(checker: PointChecker, values: dict[str, Any], variant: str) -> str:
        """The other side of an interop point: a variant (canonical name; `self` = the
        point's own) or a real program that plays the role the point's variant does not."""
        peer = values.get("peer")
        role = str(values.get("role", "client"))
        wanted = programs.playing("server" if role == "client" else "client", "interop")
        allowed = f"a variant, self, or a real {'server' if role == 'client' else 'client'}: " \
            + ", ".join(wanted)  # fmt: skip
        if not isinstance(peer, str):
            raise checker.value_error("peer", peer, allowed)
        if peer == "self":
            return variant
        if programs.is_program(peer):
            if peer not in wanted:
                raise checker.value_error("peer", peer, f"with role = {role!r}, {allowed}")
            return peer
        try:
            return checker.resolve(peer).name
        except UserError as exc:  # an unknown variant: say where it is asked for
            raise checker.value_error("peer", peer, f"{allowed} ({exc})") from None

    @staticmethod
    def check_two_programs(checker: PointChecker, options: dict[str, Any],
                           variant: Variant) -> None:  # fmt: skip
        """An interop point served by nginx to a real client: no tlsbench side at all."""
        if options.get("role") != "server":
            raise checker.value_error(
                "server",
                "nginx",
                'with role = "server" and a real client '
                "as peer (nginx serves; the variant names its library)",
            )
        if not programs.is_program(str(options["peer"])):
            raise checker.value_error(
                "peer",
                options["peer"],
                'with server = "nginx", a real client: '
                + ", ".join(programs.playing("client", "interop")),
            )
        if variant.line.name != programs.NGINX.line:
            raise checker.value_error(
                "variant",
                variant.name,
                f'with server = "nginx", {programs.NGINX.line} (nginx links the machine\'s '
                "OpenSSL)",
            )

    def peer_variants(self, point: RunPoint) -> list[str]:
        peer = str(point.options.get("peer", ""))
        return [peer] if peer and not programs.is_program(peer) else []

    def extra_builds(self, point: RunPoint) -> list[str]:
        """A pinned program (openssl-3.5.x-s_server) is its line's build."""
        peer = programs.BY_NAME.get(str(point.options.get("peer", "")))
        return [programs.PINNED_OPENSSL_LINE] if isinstance(peer, programs.PinnedOpenssl) else []

    def describe(self, point: RunPoint, builds: dict[str, Build]) -> dict[str, Any]:
        described: dict[str, Any] = {}
        peer = str(point.options.get("peer", ""))
        if peer in builds:
            described["peer"] = builds[peer].describe()
        else:
            described["peer"] = {"program": peer, "version": programs.version(peer)}
            if self.extra_builds(point) and programs.PINNED_OPENSSL_LINE in builds:
                # The program is the pinned build's own: trace it to that build.
                described["peer"]["build"] = builds[programs.PINNED_OPENSSL_LINE].describe()
        if point.options.get("server") == "nginx":
            described["server"] = {"program": "nginx", "version": programs.version("nginx")}
        return described

    def waits(self, params: dict[str, Any], mode: str) -> bool:
        return parallel.waits("interop", params, mode)

    def run(self, point: RunPoint, ctx: RunContext) -> Outcome:
        """Client and server in two processes (interop.py); the peer is another variant's
        driver or a real program."""
        if ctx.mode == "instructions":
            return modes.run_instructions(point, ctx.builds[point.variant], ctx.timeout)
        peers = self.peer_variants(point)
        peer_build = ctx.build(peers[0]) if peers else None
        for build in (ctx.builds[point.variant], peer_build):
            if build is not None and not arches.ARCHES[build.variant.arch].timing:
                # Two processes timed against each other: not under emulation.
                reason = arches.no_timing_reason(build.variant.arch)
                return unsupported(f"interop measures time, and {reason}")
        result = interop.run_point(point.options, ctx.builds[point.variant], peer_build,
                                   ctx.timeout, driver_environment({}))  # fmt: skip
        return Outcome(result.status, result.exit_code, None, result.seconds, result.output,
                       result.stderr_tail)  # fmt: skip


# -- the report ------------------------------------------------------------------------------


@dataclass(frozen=True)
class InteropRow:
    """One client x server pair of an interop point (two processes)."""

    variant: str  # the point's variant (plays `role`)
    point: str
    client: str  # variant or real program
    server: str
    case: str
    result: str  # ok | unsupported | failed
    # version, suite, PSK mode, group, signature scheme as the tlsbench side read back
    negotiated: str
    detail: str  # why not ok
    client_wall_ms: float | None  # connect to handshake done, median
    client_cpu_ms: float | None
    server_cpu_ms: float | None
    client_heap_peak: float | None  # connection peak (context excluded), whole process
    server_heap_peak: float | None
    client_bytes: float | None  # sent during the first full handshake
    server_bytes: float | None
    round_trips: float | None
    # Over an emulated network: CPU of both sides + (TCP's + TLS's round trips) x RTT, and
    # what the measured client wall time adds to it.
    model_ms: float | None = None
    residual_ms: float | None = None
    # The server's first flight as the client received it, its TCP segments and the round
    # trips slow start needs to send it (tls_certificates.py), and over an emulated network
    # the model with those rounds, the measured round trips ((wall - CPU) / RTT), the mean
    # wall time and the number of handshakes.
    server_flight_bytes: float | None = None
    server_flight_segments: int | None = None
    window_rounds: int | None = None
    window_model_ms: float | None = None
    measured_round_trips: float | None = None
    client_wall_mean_ms: float | None = None
    handshakes: int = 0
    # A download (`bytes`): its size, the client's MB/s (tlsbench's or curl's own figure)
    # and each tlsbench side's CPU seconds per GB in its read / write calls.
    download_bytes: int | None = None
    download_mbps: float | None = None
    client_cpu_s_per_gb: float | None = None
    server_cpu_s_per_gb: float | None = None
    failed: str = ""  # "2 of 5 repetitions failed" where the figures rest on fewer
    machine: str = ""  # where the run spans several machines: the one(s) this row ran on
    # Over an emulated network: its round-trip time and loss, the 90th percentile of the
    # client's wall time (over connections and repetitions), and the case without the
    # network (one line of the latency-vs-RTT plot per such case and loss).
    rtt_ms: float | None = None
    loss: float | None = None
    client_wall_p90_ms: float | None = None
    line: str = ""
    # A failed pair: the known finding that explains it (findings/findings.toml), else
    # findings.UNEXPLAINED; and the command that shows the finding without tlsbench.
    finding: str = ""  # the finding's id, "" when none explains the failure
    verdict: str = ""
    reproduce: str = ""


def heap_peak(outputs: list[dict[str, Any]], side: str) -> float | None:
    """Median connection heap peak of one side over the repetitions that measured it."""
    peaks = [
        float(o["heap"][side]["conn_peak"])
        for o in outputs
        if o.get("heap") and (o["heap"].get(side) or {}).get("conn_peak") is not None
    ]
    return statistics.median(peaks) if peaks else None


def first_wire(outputs: list[dict[str, Any]], side: str | None, key: str) -> float | None:
    """A wire figure of the first full handshake (alike in every repetition)."""
    full = ((outputs[0].get("wire") or {}).get("full") or {}) if outputs else {}
    value = (full.get(side) or {}).get(key) if side else full.get(key)
    return float(value) if value is not None else None


def load_interop(reader: RunReader) -> dict[str, list[Any]]:
    points = reader.points_of(FAMILY.scenarios, ok=False)
    # From the points' own options: a pair that never ran (unsupported) has no resolved
    # parameters, and must land in the same grid as those that did.
    cases = case_labels({p.id: dict(p.params) for p in points})
    lines = case_labels({p.id: dict(p.params) for p in points}, skip=("rtt_ms", "loss"))
    known = findings.load() if points else []
    rows = []
    for p in points:
        role = str(p.params.get("role", "client"))
        peer = str(p.params.get("peer", "?"))
        client, server = (p.variant, peer) if role == "client" else (peer, p.variant)
        if p.params.get("server") == "nginx":
            server = f"nginx ({p.variant})"
        ok = reader.ok(p)
        results = reader.results[p.id]
        if ok:
            result, detail = "ok", ""
        else:
            bad = results[0]
            result = bad.status
            error = (bad.output or {}).get("error") or {}
            detail = str(error.get("message") or f"exit {bad.exit_code}")
        outputs = [r.output for r in ok if r.output]
        negotiated = ""
        if outputs:
            n = outputs[0].get("negotiated") or {}
            # The pre-shared key's mode (psk, psk_dhe) where one keyed the handshake.
            parts = [n.get("version"), n.get("suite"), n.get("psk"), n.get("group"),
                     n.get("sigalg")]  # fmt: skip
            negotiated = " ".join(str(x) for x in parts if x) + (
                " resumed" if n.get("resumed") else ""
            )

        def median_of(series: str, point: Point = p) -> float | None:
            values = reader.store.samples(point.id, series)
            return statistics.median(values) if values else None

        def median_ms(series: str) -> float | None:
            value = median_of(series)
            return value / 1e6 if value is not None else None

        client_wall = median_ms("client_wall_ns")
        walls = reader.store.samples(p.id, "client_wall_ns")
        wall_p90 = float(np.percentile(walls, 90, method="inverted_cdf")) / 1e6 if walls else None
        round_trips = first_wire(outputs, None, "round_trips")
        received = (
            ((outputs[0].get("wire") or {}).get("full") or {}).get("server_flights_received")
            if outputs
            else None
        )
        flight = float(received[0]) if received else None
        flight_segments = tls_certificates.segments(flight) if flight else None
        rounds = tls_certificates.window_rounds(flight_segments) if flight_segments else None
        rtt = float(p.params.get("rtt_ms") or 0)
        model_ms = residual_ms = window_model_ms = measured_rounds = None
        if rtt > 0 and round_trips is not None and client_wall is not None:
            cpu = (median_ms("client_cpu_ns") or 0.0) + (median_ms("server_cpu_ns") or 0.0)
            model_ms = cpu + (round_trips + 1) * rtt  # + 1: TCP's own handshake
            residual_ms = client_wall - model_ms
            if rounds is not None:
                window_model_ms = model_ms + (rounds - 1) * rtt
            measured_rounds = (client_wall - cpu) / rtt
        finding = verdict = reproduce = ""
        if result == "failed":
            match = findings.explain(known, client, server, dict(p.params), detail)
            if match is None:
                verdict = findings.UNEXPLAINED
            else:
                finding, reproduce = match.id, match.reproduce
                verdict = f"finding {match.id}: {match.title}"
        case, line = cases[p.id], lines[p.id]
        if p.params.get("resume") == "on":
            case = f"{case} resumed" if case != "default" else "resumed"
            line = f"{line} resumed" if line != "default" else "resumed"
        rows.append(
            InteropRow(
                variant=p.variant,
                point=p.name,
                client=client,
                server=server,
                case=case,
                result=result,
                negotiated=negotiated,
                detail=detail,
                client_wall_ms=client_wall,
                client_cpu_ms=median_ms("client_cpu_ns"),
                server_cpu_ms=median_ms("server_cpu_ns"),
                client_heap_peak=heap_peak(outputs, "client"),
                server_heap_peak=heap_peak(outputs, "server"),
                client_bytes=first_wire(outputs, "client", "bytes_sent"),
                server_bytes=first_wire(outputs, "server", "bytes_sent"),
                round_trips=round_trips,
                model_ms=model_ms,
                residual_ms=residual_ms,
                server_flight_bytes=flight,
                server_flight_segments=flight_segments,
                window_rounds=rounds,
                window_model_ms=window_model_ms,
                measured_round_trips=measured_rounds,
                client_wall_mean_ms=float(np.mean(walls)) / 1e6 if walls else None,
                handshakes=len(walls),
                rtt_ms=float(p.params["rtt_ms"]) if "rtt_ms" in p.params else None,
                loss=float(p.params.get("loss") or 0) if "rtt_ms" in p.params else None,
                client_wall_p90_ms=wall_p90,
                line=line,
                finding=finding,
                verdict=verdict,
                reproduce=reproduce,
                download_bytes=int_or_none(p.params.get("bytes")),
                download_mbps=median_of("download_MBps"),
                client_cpu_s_per_gb=median_of("client_cpu_s_per_GB"),
                server_cpu_s_per_gb=median_of("server_cpu_s_per_GB"),
            )
        )
    return {"interop": rows}


INTEROP_MARK = {"ok": "✓", "unsupported": "unsupported"}
# A failed cell says whether a known finding explains it (findings/findings.toml).
FAILED_MARK = {True: "✗ finding", False: "✗ unexplained"}


def interop_mark(row: InteropRow) -> str:
    if row.result == "failed":
        return FAILED_MARK[bool(row.finding)]
    return INTEROP_MARK.get(row.result, "?")


def interop_views(model: RunModel) -> list[View]:
    """One client x server grid per case (what talks to what), then the figures per pair."""
    if not model.interop:
        return []
    out = []
    for case in dict.fromkeys(r.case for r in model.interop):
        rows = [r for r in model.interop if r.case == case]
        # tlsbench variants first, then real programs, each in name order.
        clients = sorted({r.client for r in rows}, key=lambda n: (programs.is_program(n), n))
        servers = sorted({r.server for r in rows}, key=lambda n: (programs.is_program(n), n))
        cell = {(r.client, r.server): r for r in rows}

        def title(client: str, server: str, cell: dict = cell) -> str:
            row = cell.get((client, server))
            if row is None:
                return ""
            if row.result == "failed":
                return f"{row.detail} ({row.verdict})"
            return row.negotiated if row.result == "ok" else row.detail

        out.append(
            View(
                "interop_matrix",
                f"Interop: {case}" if case != "default" else "Interop",
                "Client (row) against server (column), each in its own process over loopback "
                "TCP: ✓ = the handshake completed with exactly the requested parameters on "
                "the tlsbench side(s), both sides read back the same, and the HTTP response "
                "arrived intact on every connection; ✗ finding = it failed as a known library "
                "incompatibility explains, ✗ unexplained = it failed and nothing explains it "
                "yet: a harness fault until shown otherwise (both in Interop failures); "
                "unsupported = one side cannot offer the request.",
                ["client \\ server", *servers],
                [False] * (len(servers) + 1),
                [
                    [client]
                    + [
                        interop_mark(cell[(client, server)]) if (client, server) in cell else ""
                        for server in servers
                    ]
                    for client in clients
                ],
                titles=[["", *(title(c, server) for server in servers)] for c in clients],
            )
        )
    failed = [r for r in model.interop if r.result == "failed"]
    if failed:
        out.append(
            View(
                "interop_failures",
                "Interop failures",
                "Each failed pair: the known finding that explains it (findings/findings.toml, "
                "docs/interop.md) with the command, run from the repository root, that shows "
                "the same failure with the libraries' own programs, without tlsbench; or "
                f"\"{findings.UNEXPLAINED}\".",
                ["client", "server", "case", "verdict", "reproduce", "failure"],
                [False] * 6,
                [[r.client, r.server, r.case, r.verdict,
                  r.reproduce or "-", r.detail] for r in failed],
            )
        )  # fmt: skip
    downloads = [r for r in model.interop if r.download_bytes]
    if downloads:
        out.append(
            View(
                "downloads",
                "Downloads",
                "One response of `bytes` per connection after the handshake: the client's "
                "MB/s (10^6 bytes per second from the first to the last response byte; curl's "
                "own figure where curl is the client) and each tlsbench side's CPU seconds per "
                "GB (10^9 bytes) in its library's read or write calls; every byte checked. "
                "Median over connections and repetitions.",
                ["client", "server", "case", "bytes", "result", "MB/s", "client CPU s/GB",
                 "server CPU s/GB"],
                [False, False, False, True, False, True, True, True],
                [
                    [r.client, r.server, r.case, fmt_bytes(r.download_bytes), r.result,
                     fmt_sig(r.download_mbps), fmt_sig(r.client_cpu_s_per_gb),
                     fmt_sig(r.server_cpu_s_per_gb)]
                    for r in downloads
                ],
            )
        )  # fmt: skip
    emulated = any(r.model_ms is not None for r in model.interop)
    out.append(
        View(
            "interop",
            "Interop pairs",
            "Per pair: what the tlsbench side read back; the client's wall time from connect "
            "to handshake done; each tlsbench side's CPU time in its library calls and its "
            "heap peak for the connection (its own process: no attribution between sides); "
            "bytes each side sent during the first full handshake and the client's round "
            "trips. Medians over connections and repetitions; `-` where a side is a real "
            "program (not measured)."
            + (" Over an emulated network, `model ms` = both sides' CPU + (TLS round trips + "
               "1 for TCP's handshake) x RTT, and `residual` = measured - model (a real "
               "program's CPU is not in the model)." if emulated else ""),
            ["client", "server", "case", "result", "negotiated", "client wall ms",
             "client CPU ms", "server CPU ms", "client heap peak", "server heap peak",
             "client bytes", "server bytes", "RTT"]
            + (["model ms", "residual ms"] if emulated else []) + ["detail"],
            [False, False, False, False, False] + [True] * 8 + [True, True] * emulated
            + [False],
            [
                [r.client + (f" (partial: {r.failed})" if r.failed else ""), r.server, r.case,
                 r.result, r.negotiated or "-", fmt_sig(r.client_wall_ms),
                 fmt_sig(r.client_cpu_ms), fmt_sig(r.server_cpu_ms),
                 fmt_bytes(r.client_heap_peak), fmt_bytes(r.server_heap_peak),
                 fmt_bytes(r.client_bytes), fmt_bytes(r.server_bytes),
                 fmt_count(r.round_trips)]
                + ([fmt_sig(r.model_ms), fmt_sig(r.residual_ms)] if emulated else [])
                + [r.detail or "-"]
                for r in model.interop
            ],
        )
    )  # fmt: skip
    out += network_rounds_view(model)
    return out


def network_rounds_view(model: RunModel) -> list[View]:
    """Over an emulated network: the server's first flight against TCP's initial window, and
    the round trips it took, per RTT and loss."""
    rows = [r for r in model.interop if r.result == "ok" and r.rtt_ms is not None
            and r.server_flight_bytes is not None]  # fmt: skip
    if not rows:
        return []
    rows.sort(key=lambda r: (r.client, r.server, r.line, r.loss or 0, r.rtt_ms or 0))
    window = tls_certificates.INITIAL_WINDOW
    return [
        View(
            "network_rounds",
            "Round trips over the network: the server's first flight against TCP's window",
            "Per pair, case, loss and RTT: the server's first flight as the client received "
            f"it, the TCP segments it needs (MSS {tls_certificates.MSS}) and the rounds slow "
            f"start takes to send it from an initial window of {window} segments; `model` = "
            "TCP's handshake + TLS's round trips + the extra rounds; `measured` = (median "
            "client wall - both sides' CPU) / RTT, the round trips the handshake really took "
            "(loss adds retransmission timeouts: the mean and p90 say how often). n = "
            "handshakes measured.",
            ["client", "server", "case", "loss %", "RTT ms", "server flight", "segments",
             "rounds", "model round trips", "measured round trips", "wall ms (median)",
             "mean", "p90", "n"],
            [False, False, False] + [True] * 11,
            [
                [r.client, r.server, r.line, f"{r.loss or 0:g}", f"{r.rtt_ms:g}",
                 fmt_bytes(r.server_flight_bytes), fmt_count(r.server_flight_segments),
                 fmt_count(r.window_rounds),
                 fmt_count((r.round_trips or 0) + 1 + (r.window_rounds or 1) - 1),
                 fmt_sig(r.measured_round_trips), fmt_sig(r.client_wall_ms),
                 fmt_sig(r.client_wall_mean_ms), fmt_sig(r.client_wall_p90_ms),
                 str(r.handshakes)]
                for r in rows
            ],
        )
    ]  # fmt: skip


def network_latency(model: RunModel) -> Plot | None:
    """Handshake completion time against round-trip time over the emulated network: one
    line per pair and case (group, certificate, chain...) and loss, in its variant's colour
    (palette.py) and a marker per case; the median solid, the 90th percentile thin. Against
    the model line (round trips x RTT) a flight that does not fit TCP's initial window, or a
    retransmission, shows as the gap growing with RTT."""
    from tlsbench.reportkit.plots import Plot, figure, legend, short

    rows = [
        r
        for r in model.interop
        if r.result == "ok" and r.rtt_ms is not None and r.client_wall_ms is not None
    ]
    lines: dict[tuple[str, str, float], list[Any]] = {}
    for r in rows:
        key = (r.variant, f"{r.client} vs {r.server} {r.line}", r.loss or 0.0)
        lines.setdefault(key, []).append(r)
    lines = {k: sorted(v, key=lambda r: r.rtt_ms) for k, v in lines.items() if len(v) > 1}
    if not lines:
        return None
    losses = sorted({loss for _, _, loss in lines})
    fig = figure(12.0, 3.8 * len(losses))
    axes = fig.subplots(len(losses), 1, squeeze=False)[:, 0]
    # The point's variant gives the colour (the library under test); pairs and cases of one
    # variant each get a marker of their own.
    looks = series_styles((variant, label) for variant, label, _ in lines)
    labelled: set[str] = set()
    for ax, loss in zip(axes, losses, strict=True):
        for (variant, label, line_loss), points in lines.items():
            if line_loss != loss:
                continue
            look = looks[(variant, label)]
            xs = [r.rtt_ms for r in points]
            first = label not in labelled  # one legend entry per line, over all panels
            labelled.add(label)
            ax.plot(xs, [r.client_wall_ms for r in points], marker=look.marker,
                    color=look.colour, label=short(label) if first else None)  # fmt: skip
            p90 = [(r.rtt_ms, r.client_wall_p90_ms) for r in points if r.client_wall_p90_ms]
            if p90:
                ax.plot([x for x, _ in p90], [y for _, y in p90], color=look.colour,
                        linewidth=0.6)  # fmt: skip
        ax.set_ylabel("handshake ms")
        ax.set_title(f"loss {loss:g} %", fontsize="small")
        ax.grid(alpha=0.3)
    axes[-1].set_xlabel("round-trip time (ms)")
    legend(fig, fontsize="x-small")
    fig.suptitle("Connect to handshake done against RTT (median solid, p90 thin)",
                 fontsize="small")  # fmt: skip
    return Plot("network_latency", "Handshake time over the network", "interop", fig)


def interop_summary(model: RunModel) -> list[SummaryCell]:
    """Per variant: how many of its pairs (as client or server) completed, and how many
    failed (an unsupported pair is neither)."""
    pairs: dict[str, list[str]] = {}
    for r in model.interop:
        pairs.setdefault(r.variant, []).append(r.result)
    cells = []
    for variant, results in pairs.items():
        ok, failed = results.count("ok"), results.count("failed")
        cells += [SummaryCell(variant, "interop ok", float(ok), f"{ok} of {len(results)}"),
                  SummaryCell(variant, "interop failed", float(failed), str(failed))]  # fmt: skip
    return cells


FAMILY = Interop(
    "interop",
    ("interop",),
    keys=(
        Key("role", one_of(), fmt("as-{}")),
        Key("peer", one_of(), fmt("with-{}")),
        Key("resume", one_of(("on", "off")), fmt("resume-{}")),
        Key("rtt_ms", number(*NETWORK_RANGES["rtt_ms"]), fmt("rtt{}ms")),
        Key("loss", number(*NETWORK_RANGES["loss"]), fmt("loss{}pct")),
        SERVER_KEY,
    ),
    sections=(
        Section("interop", 70, (TableSpec("interop", "interop", "Interop", InteropRow),),
                load_interop, views=interop_views,
                plots=lambda model: [p] if (p := network_latency(model)) else [],
                summary=interop_summary),
    ),
)  # fmt: skip
