"""A server under load: the `load` scenario of an experiment.

A point's variant is the server's library. The server (`server`) is that variant's driver
(`serve`, `self`) or nginx (Debian's, linked against the machine's OpenSSL 3.0, so its
variant is `openssl-system`); the load generator (`client`) is a variant's driver (`load`)
or h2load (Debian's nghttp2-client, `--h1`). The runner starts the server, waits until it
listens, runs the generator for `duration_s` seconds with `connections` concurrent
connections in one `pattern` (new | resume | keepalive), then stops the server with SIGTERM
and keeps both sides' reports. Each runs in its own process group, killed on a timeout or an
interrupt, and its stderr tail is kept (interop.Side). Where the machine has two CPUs or
more, the server and the generator are pinned to different ones (recorded in `placement`).

h2load: keep-alive runs for `duration_s` (`-D`). For `new` and `resume`, h2load is given
`Connection: close`: it then opens a new connection for every request, and resumes the
session of the client's first connection on every later one whenever the server offers a
ticket (measured against tlsbench's OpenSSL 3.5 server: 1277 of 1285 handshakes resumed, the
8 full ones the first of each of 4 clients in two h2load processes); against nginx, which
is configured with no tickets and no session cache, 40 requests over 4 clients made 40 full
handshakes. So h2load's `new` runs against nginx only, and its `resume` against a tlsbench
server only (whose count of resumed handshakes checks it). With `-D` h2load does not stop
on such connections: Debian 12's h2load 1.52 re-spawns a closed client after its duration is
over and never exits (nghttp2 issue 2250, fixed after 1.63). So these run by count (`-n`): a
short calibration run gives the rate, and the measured run asks for rate x duration_s
requests. h2load cannot send a client certificate and writes its own request headers:
those points are refused before anything runs. Its latency is from the request's first
byte to the response's last (it excludes connect and handshake, unlike tlsbench's `new`
and `resume`), taken from its per-request log (`--log-file`); it does not verify the
server's certificate nor check the body's bytes (it counts them). It exits 0 whatever
failed, and a keep-alive run by duration counts no failed request once the server is gone
(measured: a killed server, then nothing but refused reconnections): the server's own end
fails such a point.

Its size (over 600 lines) is one sequence read in order: a load point's refusals, its two
sides' commands, one run with its checks, and the merged result.
"""

from __future__ import annotations

import contextlib
import os
import resource
import signal
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

from tlsbench.builds.build import Build
from tlsbench.builds.recipes.runtime import at_run_time
from tlsbench.driver import allocators
from tlsbench.driver.drive import driver_command, driver_environment
from tlsbench.peers import interop, programs
from tlsbench.peers.interop import PairResult, Side
from tlsbench.peers.programs import h2load_problem, parse_h2load, percentiles_us, read_h2load_log

# The load generators that are real programs (programs.py), and nginx, the real server.
GENERATOR_PROGRAMS = programs.playing("generator", "load")
NGINX = programs.NGINX
# The option keys of a load point that the runner acts on (never passed to a driver as such).
LOAD_KEYS = ("client", "server", "pattern", "connections", "rate", "duration_s", "request_size",
             "workers", "threads", "heap", "accel", "payload")  # fmt: skip
# TLS options passed to both tlsbench sides.
TLS_ARG_KEYS = ("tls", "suite", "kx", "group", "sigalg", "cert", "chain", "auth", "record_size")
DEFAULTS = {"pattern": "keepalive", "connections": 1, "duration_s": 3, "payload": 1024,
            "workers": 1, "threads": 1, "server": "self"}  # fmt: skip
# The heap run (heap = true) is a second, short run of the server's heap driver.
HEAP_DURATION_S = 2
# How long the server may take to listen and to report after SIGTERM.
START_TIMEOUT_S = 10.0
STOP_TIMEOUT_S = 10.0
PEER_TIMEOUT_S = 10
SATURATED = 0.9  # generator CPU utilization from which the generator may be the limit
# h2load's `new` calibration: requests per connection before the measured run.
CALIBRATION_PER_CONNECTION = 8

# Series stored per point: name -> unit.
SERIES = {
    "load_tps": "transactions/s",
    "load_hps": "handshakes/s",
    "load_MBps": "MB/s",
    "latency_p50_us": "us",
    "latency_p90_us": "us",
    "latency_p99_us": "us",
    "latency_p99.9_us": "us",
    "latency_min_us": "us",
    "latency_mean_us": "us",
    "latency_max_us": "us",
    "latency_sd_us": "us",
    "load_errors": "errors",
    "generator_cpu_utilization": "fraction of a core",
    "generator_saturated": "flag",
    "server_cpu_ms_per_tx": "ms",
    "server_heap_per_connection": "bytes",
}


def option(options: dict[str, Any], key: str) -> Any:
    return options.get(key, DEFAULTS.get(key))


def refusal(options: dict[str, Any], variant_line: str,
            library: str) -> tuple[str, str] | None:  # fmt: skip
    """(key, reason) when no run of this point could be what it asks (of the programs, or of
    the library where its limit is known): checked when the experiment is loaded."""
    client, server = str(options.get("client", "")), str(option(options, "server"))
    threads, workers = int(option(options, "threads")), int(option(options, "workers"))
    if threads > 1 and server == "nginx":
        return ("threads", "1 with nginx: its model is worker processes (workers = N)")
    if threads > 1 and workers > 1:
        return ("threads", "1 with workers > 1: the server is W processes of one event loop "
                "or one process of T threads, one model per point")  # fmt: skip
    if threads > 1 and options.get("heap"):
        return ("heap", "true with threads = 1 only: the server side's heap is every event "
                "loop's at once")  # fmt: skip
    if options.get("kx") in ("psk", "psk_dhe") and (client == "h2load" or server == "nginx"):
        program = "h2load" if client == "h2load" else "nginx"
        return ("client" if program == "h2load" else "server",
                f"{program} is run with certificates only: a pre-shared key (kx = "
                f"{options['kx']}) is for tlsbench's own server and generator")  # fmt: skip
    if client == "h2load":
        pattern = option(options, "pattern")
        if pattern == "resume" and server == "nginx":
            return (
                "client",
                "h2load against nginx cannot resume: nginx runs with no tickets "
                "and no session cache here, and h2load reports no resumption to check",
            )
        if pattern == "new" and server == "self":
            return ("client", "h2load resumes the session of a client's first connection on "
                    "every reconnection when the server offers tickets, as tlsbench's server "
                    'does: with server = "self" use pattern = "resume" (h2load\'s "new" runs '
                    "against nginx, which offers none)")  # fmt: skip
        if options.get("auth") == "mutual":
            return ("client", "h2load has no client certificate option (auth = mutual)")
        if "request_size" in options:
            return ("client", "h2load writes its own request headers: request_size applies "
                    "to tlsbench's generator only")  # fmt: skip
        if "record_size" in options:
            return ("client", "h2load has no record size option")
        if "rate" in options:
            return ("client", "h2load has no open-loop request rate (its --rate paces new "
                    "connections): rate applies to tlsbench's generator only")  # fmt: skip
    if options.get("heap") and option(options, "pattern") != "keepalive":
        return ("heap", "true with keepalive only: heap per connection is measured at steady "
                "state; with new or resume, what the server's session cache accumulates "
                "would be charged to the connections open at that moment")  # fmt: skip
    cannot = at_run_time(library).no_resume_across_workers
    if (cannot is not None and option(options, "pattern") == "resume"
            and int(option(options, "workers")) > 1):  # fmt: skip
        return ("workers", f"1 with resume: {cannot}")
    if server == "nginx":
        if variant_line != NGINX.line:
            return (
                "variant",
                f'with server = "nginx", {NGINX.line} (nginx is Debian\'s, '
                "linked against the machine's OpenSSL: the variant names its library)",
            )
        if options.get("heap"):
            return ("heap", 'with server = "nginx", false: nginx has no heap accounting')
        if int(options.get("chain", 1)) != 1 or "record_size" in options:
            return ("server", "nginx is run with a one-certificate chain and its default "
                    "record size only")  # fmt: skip
    return None


def unsupported(options: dict[str, Any]) -> str | None:
    """What the real programs cannot offer (a capability, reported as unsupported), or that
    one is not installed."""
    used = [programs.program(p) for p in (str(option(options, "server")),
                                          str(options.get("client")))
            if programs.is_program(p)]  # fmt: skip
    for program in used:
        if (missing := program.missing()) is not None:
            return missing
    if used and str(options.get("group", "")) == "X25519MLKEM768":
        return (f"{used[0].name} links the machine's OpenSSL 3.0, which has no ML-KEM "
                "(X25519MLKEM768)")  # fmt: skip
    return None


# ------------------------------------------------------------------------- placement


def placement() -> tuple[set[int] | None, set[int] | None]:
    """(server CPUs, generator CPUs): the generator on the last CPU this process may use, the
    server on the others; None for both where there is one CPU or pinning is not allowed."""
    try:
        allowed = sorted(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return None, None
    if len(allowed) < 2:
        return None, None
    return set(allowed[:-1]), {allowed[-1]}


class ChildCpu:
    """CPU seconds of the children reaped between two readings (user + system): a program
    (nginx, h2load) reports none of its own. Nothing else is reaped meanwhile: the runner
    runs one point at a time, and a side is read around its own wait."""

    def __init__(self) -> None:
        self.start = self._now()

    @staticmethod
    def _now() -> float:
        usage = resource.getrusage(resource.RUSAGE_CHILDREN)
        return usage.ru_utime + usage.ru_stime

    def seconds(self) -> float:
        return self._now() - self.start


# ------------------------------------------------------------------------- commands


def tls_args(options: dict[str, Any]) -> list[str]:
    args: list[str] = []
    for key in TLS_ARG_KEYS:
        if key in options:
            args += [f"--{key.replace('_', '-')}", str(options[key])]
    return args


def serve_args(options: dict[str, Any], port_file: str, bound_s: int,
               listen: str = "127.0.0.1:0") -> list[str]:  # fmt: skip
    """The `serve` driver's options (remote.py runs them on another host)."""
    # --threads only where asked, so that the worker points' commands stay as they were.
    threads = int(option(options, "threads"))
    return [*tls_args(options), "--listen", listen, "--port-file", port_file,
            "--workers", str(option(options, "workers")),
            *(["--threads", str(threads)] if threads > 1 else []), "--duration", str(bound_s),
            "--peer-timeout", str(PEER_TIMEOUT_S), "--json"]  # fmt: skip


def serve_command(build: Build, options: dict[str, Any], measure: str, port_file: Path,
                  bound_s: int) -> list[str]:  # fmt: skip
    return driver_command(build, "serve", serve_args(options, str(port_file), bound_s), measure)


def load_args(options: dict[str, Any], connect: str, duration: int,
              latencies: Path | None = None) -> list[str]:  # fmt: skip
    """The `load` driver's options (remote.py runs them on other hosts)."""
    args = [*tls_args(options), "--connect", connect,
            "--connections", str(option(options, "connections")),
            "--pattern", str(option(options, "pattern")), "--duration", str(duration),
            "--payload", str(option(options, "payload")),
            "--peer-timeout", str(PEER_TIMEOUT_S), "--json"]  # fmt: skip
    if "request_size" in options:
        args += ["--request-size", str(options["request_size"])]
    if "rate" in options:
        args += ["--rate", str(options["rate"])]
    if latencies is not None:
        args += ["--latencies", str(latencies)]
    return args


def load_command(build: Build, options: dict[str, Any], connect: str, duration: int,
                 latencies: Path | None = None) -> list[str]:  # fmt: skip
    return driver_command(build, "load", load_args(options, connect, duration, latencies), "time")


def h2load_command(options: dict[str, Any], port: int, log: Path, duration: int | None,
                   requests: int | None) -> list[str]:  # fmt: skip
    """h2load (programs.H2load) for the point: by duration or by a count of requests."""
    return programs.H2LOAD.load_command(
        options, port, int(option(options, "connections")), log, duration, requests,
        str(option(options, "pattern")), int(option(options, "payload")))  # fmt: skip


# ------------------------------------------------------------------------- one run


def run_point(options: dict[str, Any], build: Build, client_build: Build | None,
              timeout: float, server_env: dict[str, str],
              client_env: dict[str, str]) -> PairResult:  # fmt: skip
    """One repetition: the timed run, then (heap = true, server = self) a short run of the
    server's heap driver for its heap per connection."""
    reason = unsupported(options)
    if reason:
        return PairResult("unsupported", 3, 0.0, {"error": {"message": reason}}, reason)
    started = time.monotonic()
    deadline = started + timeout
    duration = int(option(options, "duration_s"))
    timed = run_once(options, build, client_build, "time", duration, deadline, server_env,
                     client_env)  # fmt: skip
    if timed.status != "ok" or timed.output is None or not options.get("heap"):
        return timed
    # The heap driver keeps its own accounting over glibc's malloc: no allocator preloaded.
    heap = run_once(options, build, client_build, "heap", min(duration, HEAP_DURATION_S),
                    deadline, allocators.without(server_env), client_env)  # fmt: skip
    if heap.status != "ok" or heap.output is None:
        heap.stderr_tail = f"(the heap run, tlsbench-driver-heap serve)\n{heap.stderr_tail}"
        return heap
    per_connection = (heap.output.get("serve") or {}).get("heap_per_connection")
    output = timed.output
    if per_connection is not None:
        output["samples"]["server_heap_per_connection"] = [float(per_connection)]
        output["summary"]["server_heap_per_connection"] = {"unit": "bytes"}
    output["heap_run"] = {"serve": heap.output.get("serve"), "load": heap.output.get("load")}
    output["measure"] = {"time": "tlsbench-driver serve", "heap": "tlsbench-driver-heap serve"}
    if allocators.ALLOCATOR_ENV in server_env:  # the timed run's allocator is not the heap run's
        output["measure"]["heap_allocator"] = "glibc's, under the heap driver's own accounting"
    return PairResult("ok", 0, time.monotonic() - started, output,
                      "\n".join(t for t in (timed.stderr_tail, heap.stderr_tail) if t))  # fmt: skip


def run_once(options: dict[str, Any], build: Build, client_build: Build | None, measure: str,
             duration: int, deadline: float, server_env: dict[str, str],
             client_env: dict[str, str]) -> PairResult:  # fmt: skip
    started = time.monotonic()
    sides: dict[str, Side] = {}
    with tempfile.TemporaryDirectory(prefix="tlsbench-load-") as tmp:
        try:
            return _run_once(options, build, client_build, measure, duration, deadline,
                             server_env, client_env, Path(tmp), sides, started)  # fmt: skip
        finally:
            # Nothing outlives the point: not on a failure, a timeout or an interrupt.
            for side in sides.values():
                side.kill("load point ended")
                if side.proc is not None:
                    side.proc.wait()


def _run_once(options: dict[str, Any], build: Build, client_build: Build | None, measure: str,
              duration: int, deadline: float, server_env: dict[str, str],
              client_env: dict[str, str], scratch: Path, sides: dict[str, Side],
              started: float) -> PairResult:  # fmt: skip
    server_name = str(option(options, "server"))
    client_name = str(options.get("client"))
    connections = int(option(options, "connections"))
    server_cpus, generator_cpus = placement()
    # The server's own bound: it stops by itself even if this runner dies.
    bound = int(max(1, deadline - time.monotonic()) + STOP_TIMEOUT_S)
    if server_name == "nginx":
        port = interop.free_port()
        command = NGINX.configured(options, port, scratch, "127.0.0.1",
                                   workers=int(option(options, "workers")),
                                   max_connections=connections + 64,
                                   keep_env=tuple(sorted(server_env)))  # fmt: skip
        server = Side("server", "nginx", command)
    else:
        server = Side("server", build.variant.name,
                      serve_command(build, options, measure, scratch / "port", bound))  # fmt: skip
    sides["server"] = server
    server.start(_environment(server_env), cpus=server_cpus)
    listen_by = time.monotonic() + START_TIMEOUT_S
    if server_name == "nginx":
        port_ok: int | None = port if interop.wait_for_listener(server, port, listen_by) else None
    else:
        port_ok = interop.wait_for_port(server, scratch / "port", listen_by)
    if port_ok is None:
        if server.proc is not None and server.proc.poll() is None:
            server.kill("did not listen")
        server.finish(deadline)
        said = server.json() or {}
        reason = (said.get("error") or {}).get("message")
        if said.get("exit") == 3:  # the library cannot honour the point
            return _failed(sides, started, f"server ({server.label}): {reason}", "unsupported", 3)
        return _failed(sides, started, "the server did not start listening"
                       + (f": {reason}" if reason else f" ({_ending(server)})"))  # fmt: skip
    # The generator.
    calibration: dict[str, Any] | None = None
    if client_name == "h2load":
        log = scratch / "h2load.log"
        requests = None
        if option(options, "pattern") != "keepalive":  # by count: see the module's docstring
            probe = Side("generator", "h2load (calibration)",
                         h2load_command(options, port_ok, scratch / "calibration.log", None,
                                        CALIBRATION_PER_CONNECTION * connections))  # fmt: skip
            sides["generator"] = probe
            probe.start(_environment(client_env), cpus=generator_cpus)
            probe.finish(deadline)
            found = parse_h2load(probe.out)
            problem = h2load_problem(found, options, int(option(options, "payload")), probe.code)
            if problem:
                _stop(server, deadline)
                return _failed(sides, started, f"{problem} (calibration run)")
            calibration = {"requests": found["succeeded"], "wall_s": found["wall_s"]}
            requests = max(connections, int(found["succeeded"] / found["wall_s"] * duration))
        generator = Side(
            "generator",
            "h2load",
            h2load_command(options, port_ok, log, duration if requests is None else None, requests),
        )
    else:
        assert client_build is not None
        generator = Side(
            "generator",
            client_build.variant.name,
            load_command(client_build, options, f"127.0.0.1:{port_ok}", duration),
        )
    sides["generator"] = generator
    generator_cpu = ChildCpu()
    generator.start(_environment(client_env), cpus=generator_cpus)
    generator.finish(deadline)
    generator_cpu_s = generator_cpu.seconds()
    # Then the server: SIGTERM, and its report.
    server_cpu = ChildCpu()  # the server's CPU: what its wait reaps (workers included)
    _stop(server, deadline)
    server_cpu_s = server_cpu.seconds()
    return _ended(options, build, sides, started, measure, generator_cpu_s, server_cpu_s,
                  calibration, server_cpus, generator_cpus, scratch)  # fmt: skip


def _environment(point_env: dict[str, str]) -> dict[str, str]:
    return driver_environment(point_env)


def _stop(server: Side, deadline: float) -> None:
    if server.proc is not None and server.proc.poll() is None:
        with contextlib.suppress(ProcessLookupError):
            os.kill(server.proc.pid, signal.SIGTERM)
    server.finish(min(deadline, time.monotonic() + STOP_TIMEOUT_S))


def _failed(sides: dict[str, Side], started: float, problem: str,
            status: str = "failed", code: int = 5) -> PairResult:  # fmt: skip
    tails = "\n".join(side.tail() for side in sides.values())
    output = {"exit": code, "error": {"stage": "load", "message": problem}}
    return PairResult(status, code, time.monotonic() - started, output,
                      f"tlsbench: {problem}\n{tails}")  # fmt: skip


def _ended(options: dict[str, Any], build: Build, sides: dict[str, Side], started: float,
           measure: str, generator_cpu_s: float, server_cpu_s: float,
           calibration: dict[str, Any] | None, server_cpus: set[int] | None,
           generator_cpus: set[int] | None, scratch: Path) -> PairResult:  # fmt: skip
    server, generator = sides["server"], sides["generator"]
    served = server.json() if server.label != "nginx" else None
    loaded = generator.json() if generator.label != "h2load" else None
    # Unsupported: a tlsbench side said it cannot honour the request.
    for name, result in (("server", served), ("generator", loaded)):
        if result is not None and result.get("exit") == 3:
            reason = (result.get("error") or {}).get("message", "")
            return _failed(sides, started, f"{name} ({sides[name].label}): {reason}",
                           "unsupported", 3)  # fmt: skip
    # The generator's verdict first: its errors are what the load run saw.
    if generator.label == "h2load":
        found = parse_h2load(generator.out)
        problem = h2load_problem(found, options, int(option(options, "payload")), generator.code)
        if generator.killed:
            problem = f"h2load did not finish ({generator.killed})"
        if problem:
            return _failed(sides, started, problem + _server_says(served))
        load = _h2load_load(found, options, read_h2load_log(scratch / "h2load.log"),
                            generator_cpu_s)  # fmt: skip
        if calibration:
            load["calibration"] = calibration
    else:
        if loaded is None or loaded.get("load") is None:
            return _failed(
                sides,
                started,
                f"the generator ({generator.label}) printed no result ({_ending(generator)})",
            )
        load = dict(loaded["load"])
        if generator.code != 0 or load.get("errors"):
            error = loaded.get("error") or {}
            first = load.get("first_error") or error.get("message") or f"exit {generator.code}"
            return _failed(sides, started, f"the generator ({generator.label}) saw "
                           f"{load.get('errors', 0)} errors; the first: {first}"
                           + _server_says(served))  # fmt: skip
    # Then the server's.
    if server.label == "nginx":
        if server.code not in (0, None) or server.killed:
            return _failed(sides, started, f"nginx ended with exit {server.code} "
                           f"{server.killed}".strip())  # fmt: skip
        serve = {"program": "nginx", "cpu_s": server_cpu_s,
                 "transactions": load.get("transactions"), "cpu_from": "rusage"}  # fmt: skip
    else:
        if served is None or served.get("serve") is None:
            return _failed(sides, started, f"the server ({server.label}) printed no result "
                           f"(exit {server.code} {server.killed})".strip())  # fmt: skip
        serve = dict(served["serve"])
        if server.code != 0 or serve.get("errors"):
            error = served.get("error") or {}
            first = serve.get("first_error") or error.get("message") or f"exit {server.code}"
            return _failed(sides, started, f"the server ({server.label}) saw "
                           f"{serve.get('errors', 0)} errors; the first: {first}")  # fmt: skip
        if generator.label == "h2load" and (problem := _h2load_resumption(serve, options)):
            return _failed(sides, started, problem)
    output = _output(options, build, load, serve, served, loaded, sides, measure,
                     server_cpus, generator_cpus)  # fmt: skip
    tails = "\n".join(side.tail() for side in sides.values())
    return PairResult("ok", 0, time.monotonic() - started, output, tails)


def _server_says(served: dict[str, Any] | None) -> str:
    """The tlsbench server's first error, beside the generator's: which caused which is for
    the reader (a server check that fired shows as a closed connection at the generator)."""
    serve = (served or {}).get("serve") or {}
    first = serve.get("first_error") or ((served or {}).get("error") or {}).get("message")
    return f"; the server: {first}" if first else ""


def _ending(side: Side) -> str:
    return f"killed: {side.killed}" if side.killed else f"exit {side.code}"


def _h2load_resumption(serve: dict[str, Any], options: dict[str, Any]) -> str | None:
    """h2load reports no resumption: the tlsbench server's count checks it. `resume`: all
    but each client's first connection (one per client in each of the two h2load
    processes, calibration and measured run) resumed."""
    if option(options, "pattern") != "resume":
        return None
    full = int(serve.get("handshakes") or 0) - int(serve.get("resumed") or 0)
    limit = 2 * int(option(options, "connections"))
    if not serve.get("resumed") or full > limit:
        return (
            f"h2load resumed {serve.get('resumed')} of {serve.get('handshakes')} handshakes "
            f"at the server: {full} full ones, more than one per client ({limit})"
        )
    return None


def _h2load_load(found: dict[str, Any], options: dict[str, Any], latencies_us: np.ndarray,
                 cpu_s: float) -> dict[str, Any]:  # fmt: skip
    """h2load's figures in the shape of the driver's `load` object."""
    wall = float(found["wall_s"])
    done = int(found["succeeded"])
    pattern = str(option(options, "pattern"))
    connections = int(option(options, "connections"))
    # h2load counts no handshakes: one per request for `new` and `resume`, one per client
    # for keepalive.
    handshakes = connections if pattern == "keepalive" else done
    latency: dict[str, Any] = {k: v for k, v in (found.get("request_us") or {}).items()}
    if latencies_us.size:
        latency.update(percentiles_us(latencies_us))
    utilization = cpu_s / wall if wall > 0 else None
    return {
        "generator": "h2load", "pattern": pattern, "connections": connections,
        "transactions": done, "handshakes": handshakes, "handshakes_derived": True,
        "errors": 0, "first_error": None, "wall_s": wall, "tps": done / wall if wall else 0.0,
        "hps": handshakes / wall if wall else 0.0, "cpu_s": cpu_s, "cpu_utilization": utilization,
        "saturated": utilization is not None and utilization >= SATURATED,
        "latency_us": latency, "latency_from": "request",
        "negotiated": {"version": found.get("version"), "suite": found.get("cipher"),
                       "group": found.get("temp_key"), "reported_by": "h2load"},
        "latency_samples": int(latencies_us.size),
    }  # fmt: skip


def _output(options: dict[str, Any], build: Build, load: dict[str, Any], serve: dict[str, Any],
            served: dict[str, Any] | None, loaded: dict[str, Any] | None,
            sides: dict[str, Side], measure: str, server_cpus: set[int] | None,
            generator_cpus: set[int] | None) -> dict[str, Any]:  # fmt: skip
    payload = int(option(options, "payload"))
    latency = load.get("latency_us") or {}
    samples: dict[str, list[float]] = {
        "load_tps": [float(load["tps"])],
        "load_hps": [float(load["hps"])],
        "load_MBps": [float(load["tps"]) * payload / 1e6],
        "load_errors": [float(load.get("errors") or 0)],
        "generator_saturated": [1.0 if load.get("saturated") else 0.0],
    }
    if load.get("cpu_utilization") is not None:
        samples["generator_cpu_utilization"] = [float(load["cpu_utilization"])]
    for key in ("p50", "p90", "p99", "p99.9", "min", "mean", "max", "sd"):
        if latency.get(key) is not None:
            samples[f"latency_{key}_us"] = [float(latency[key])]
    transactions = serve.get("transactions") or load.get("transactions")
    if serve.get("cpu_s") is not None and transactions:
        samples["server_cpu_ms_per_tx"] = [float(serve["cpu_s"]) * 1e3 / float(transactions)]
    warnings = []
    if load.get("saturated"):
        warnings.append(
            f"load {option(options, 'pattern')} c{option(options, 'connections')} by "
            f"{sides['generator'].label}: the generator used "
            f"{float(load.get('cpu_utilization') or 0):.0%} of a core; it, not the server, "
            "may be the limit")  # fmt: skip
    unstarted, rate = load.get("unstarted") or 0, load.get("rate")
    if rate and unstarted > 0.05 * float(rate) * float(load.get("wall_s") or 0):
        warnings.append(
            f"load rate {rate}/s: {unstarted} transactions came due but never started: the "
            "server fell behind the offered rate (past saturation the latency grows with the "
            "run's length)")  # fmt: skip
    if server_cpus is None:
        warnings.append("one CPU: the server and the generator share it")
    negotiated = ((served or {}).get("negotiated") or (loaded or {}).get("negotiated")
                  or load.get("negotiated") or {})  # fmt: skip
    return {
        "schema": 1,
        "variant": build.variant.name,
        "library": build.variant.library,
        "scenario": "load",
        "params": {
            k: option(options, k)
            for k in (*LOAD_KEYS, *TLS_ARG_KEYS)
            if option(options, k) is not None
        },
        "negotiated": negotiated,
        # The tlsbench server's read-back of its malloc (where the point asks an allocator).
        **({"allocator": served["allocator"]} if served and served.get("allocator") else {}),
        "load": {k: v for k, v in load.items() if k != "histogram"},
        "histogram": load.get("histogram"),
        "serve": serve,
        "placement": {
            "server_cpus": sorted(server_cpus) if server_cpus else None,
            "generator_cpus": sorted(generator_cpus) if generator_cpus else None,
        },
        "sides": {
            name: {
                "program": side.label,
                "kind": "program" if side.label in ("nginx", "h2load") else "driver",
            }
            for name, side in sides.items()
            if "calibration" not in side.label
        },
        "measure": {
            "time": f"{sides['server'].label} and {sides['generator'].label}",
            "server": measure,
        },
        "samples": samples,
        "summary": {k: {"unit": SERIES[k]} for k in samples},
        "warnings": warnings,
        "exit": 0,
    }
