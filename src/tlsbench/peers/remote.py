"""A load point whose server and generators run on other hosts, over OpenSSH.

A load point may name `server_host` (one OpenSSH destination) and `generator_hosts` (one or
more, comma-separated), and `server_address`, the address the generators connect to (by
default the host part of `server_host`). Only these destinations and that address are ever
contacted, and every driver is bounded in time as on one machine (the server by its own
--duration bound, each generator by the point's duration_s and peer timeout).

For each point the runner:

1. asks every host for its tlsbench commit and the build keys of the variants it will run
   (`tlsbench host-info`, which builds what is missing there) and refuses the point unless
   they equal its own: a figure must come from the same code on every host;
2. starts the server's driver on its host (`tlsbench drive --exec ... serve`, listening on
   every address, port chosen by the kernel) and reads the port back from the file the
   driver writes once it listens;
3. starts every generator's driver at once, on its host, against that address and port;
4. stops the server with SIGTERM once they are done (the driver's process id was written
   beside the port), and collects each side's JSON from its ssh session's output;
5. merges the generators: transactions, handshakes, errors and transactions/s summed (they
   ran over the same interval), the latency histograms (HdrHistogram's layout, the same
   buckets on every host) added bucket by bucket and the percentiles read from the merged
   histogram, never averaged; each generator's own figures are kept beside the merge.

The ssh command is `ssh` unless TLSBENCH_SSH gives another (e.g. `ssh -F lab.config`); the
user's ssh configuration and keys apply. The tlsbench command on the hosts is `tlsbench`
unless TLSBENCH_REMOTE gives another (a checkout's `./tlsbench` wrapper, say).
"""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import time
import uuid
from typing import Any

from tlsbench.builds import certs
from tlsbench.builds.build import Build, Builder
from tlsbench.builds.variants import Catalog
from tlsbench.core.paths import commit_id
from tlsbench.peers import load
from tlsbench.peers.interop import PairResult, Side

SSH_ENV = "TLSBENCH_SSH"
REMOTE_ENV = "TLSBENCH_REMOTE"
HOST_KEYS = ("server_host", "generator_hosts", "server_address")
# An OpenSSH destination: [user@]host or an ssh:// URI, nothing a shell would act on.
DESTINATION = re.compile(r"(ssh://)?([A-Za-z0-9._-]+@)?[A-Za-z0-9._:\[\]-]+(:\d+)?")
ASK_TIMEOUT_S = 600.0  # host-info may build variants there
START_TIMEOUT_S = 30.0
MAX_GENERATORS = 64


def uses_hosts(options: dict[str, Any]) -> bool:
    return any(options.get(k) for k in HOST_KEYS)


def destinations(text: str) -> list[str]:
    return [d.strip() for d in str(text).split(",") if d.strip()]


def check_destination(value: str) -> str | None:
    """Why `value` is not an OpenSSH destination tlsbench will use, or None."""
    if not DESTINATION.fullmatch(value):
        return "an OpenSSH destination: [user@]host[:port] or ssh://[user@]host[:port]"
    return None


def host_of(destination: str) -> str:
    """The address part of a destination (user, scheme and port left out)."""
    rest = destination.removeprefix("ssh://").rsplit("@", 1)[-1]
    if rest.startswith("["):
        return rest[1 : rest.index("]")]
    return rest.split(":")[0] if rest.count(":") == 1 else rest


def refusal(options: dict[str, Any]) -> str | None:
    """What a load point with hosts cannot do (checked before anything runs)."""
    if not options.get("server_host") or not options.get("generator_hosts"):
        return "a load point on other hosts names both server_host and generator_hosts"
    if options.get("server", "self") != "self" or options.get("client") in load.GENERATOR_PROGRAMS:
        return (
            "on other hosts, the server and the generators are tlsbench drivers (no nginx, h2load)"
        )
    if options.get("heap") or options.get("accel") == "off":
        return 'on other hosts, heap = true and accel = "off" are not supported'
    hosts = destinations(options["generator_hosts"])
    if not 1 <= len(hosts) <= MAX_GENERATORS:
        return f"generator_hosts: 1 to {MAX_GENERATORS} destinations, comma-separated"
    for host in [str(options["server_host"]), *hosts]:
        if why := check_destination(host):
            return f"{host!r} is not {why}"
    return None


def ssh(destination: str, argv: list[str]) -> list[str]:
    """The local command that runs `argv` on `destination` (quoted for its shell)."""
    prefix = shlex.split(os.environ.get(SSH_ENV) or "ssh")
    return [*prefix, "-o", "BatchMode=yes", destination, "--", shlex.join(argv)]


def tlsbench_there() -> list[str]:
    return shlex.split(os.environ.get(REMOTE_ENV) or "tlsbench")


def host_info(variants: list[str], cert_kinds: list[str]) -> dict[str, Any]:
    """This host's answer to `tlsbench host-info`: commit and build keys (built if needed)."""
    import socket

    catalog, builder = Catalog(), Builder(quiet=True)
    builds = {spec: builder.build(catalog.resolve(spec)) for spec in variants}
    certs.ensure_all(cert_kinds, progress=False)
    return {
        "host": socket.gethostname(),
        "commit": commit_id(),
        "builds": {spec: build_key(build) for spec, build in builds.items()},
    }


def build_key(build: Build) -> str:
    return f"{build.key}/{build.drivers_folder.name.removeprefix('drivers-')[:16]}"


def _run(command: list[str], timeout: float) -> subprocess.CompletedProcess[str]:
    return subprocess.run(command, capture_output=True, text=True, check=False,
                          timeout=max(1.0, timeout), stdin=subprocess.DEVNULL)  # fmt: skip


def check_hosts(hosts: list[str], builds: dict[str, Build], cert: str, commit: str,
                deadline: float) -> str | None:  # fmt: skip
    """Why a host cannot run the point (unreachable, another commit, other builds), or None."""
    wanted = {spec: build_key(b) for spec, b in builds.items()}
    for host in dict.fromkeys(hosts):
        command = ssh(host, [*tlsbench_there(), "host-info", *wanted, "--cert", cert])
        try:
            proc = _run(command, min(ASK_TIMEOUT_S, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            return f"{host}: no answer to tlsbench host-info in time"
        try:
            said = json.loads(proc.stdout)
        except json.JSONDecodeError:
            tail = proc.stderr.strip().splitlines()[-1:] or [f"exit {proc.returncode}"]
            return f"{host}: tlsbench host-info failed ({tail[0]})"
        if said.get("commit") != commit:
            return (f"{host} has tlsbench commit {said.get('commit')}, this runner {commit}: "
                    "check out the same commit there")  # fmt: skip
        for spec, key in wanted.items():
            theirs = (said.get("builds") or {}).get(spec)
            if theirs != key:
                return (f"{host} builds {spec} as {theirs}, this runner as {key} (another "
                        "compiler or options): its figures would be of other code")  # fmt: skip
    return None


def _drive(destination: str, variant: str, scenario: str, args: list[str],
           marker: str | None = None) -> list[str]:  # fmt: skip
    """A driver on `destination`; with `marker` (a file path there), its process id is
    written to MARKER.pid before it starts (so that it can be stopped)."""
    command = [*tlsbench_there(), "drive", "--exec", "--measure", "time", variant, scenario,
               *args]  # fmt: skip
    if marker is None:
        return ssh(destination, command)
    return ssh(destination, ["sh", "-c", 'echo $$ > "$0.pid" && exec "$@"', marker, *command])


def _read_port(destination: str, marker: str, server: Side, by: float) -> tuple[int, int] | None:
    """(process id, port) of the server once it listens, or None."""
    while time.monotonic() < by:
        if server.proc is not None and server.proc.poll() is not None:
            return None
        proc = _run(ssh(destination, ["sh", "-c", 'cat "$0.pid" "$0" 2>/dev/null', marker]), 30)
        found = proc.stdout.split()
        if len(found) == 2 and all(f.isdigit() for f in found):
            return int(found[0]), int(found[1])
        time.sleep(0.2)
    return None


def run_point(options: dict[str, Any], build: Build, client_build: Build, timeout: float,
              commit: str) -> PairResult:  # fmt: skip
    started = time.monotonic()
    deadline = started + timeout
    if reason := refusal(options):
        return PairResult("unsupported", 3, 0.0, {"error": {"message": reason}}, reason)
    server_host = str(options["server_host"])
    generators = destinations(options["generator_hosts"])
    address = str(options.get("server_address") or host_of(server_host))
    builds = {build.variant.name: build, client_build.variant.name: client_build}
    problem = check_hosts([server_host, *generators], builds,
                          str(options.get("cert", "rsa2048")), commit, deadline)  # fmt: skip
    if problem:
        output = {"exit": 5, "error": {"stage": "hosts", "message": problem}}
        return PairResult("failed", 5, time.monotonic() - started, output, problem)
    sides: dict[str, Side] = {}
    marker = f"/tmp/tlsbench-serve-{uuid.uuid4().hex}"
    try:
        return _run_point(options, build, client_build, server_host, generators, address,
                          marker, sides, started, deadline)  # fmt: skip
    finally:
        for side in sides.values():  # nothing outlives the point on this side either
            side.kill("load point ended")
            if side.proc is not None:
                side.proc.wait()
        _run(ssh(server_host, ["rm", "-f", marker, f"{marker}.pid"]), 30)


def _run_point(options: dict[str, Any], build: Build, client_build: Build, server_host: str,
               generators: list[str], address: str, marker: str, sides: dict[str, Side],
               started: float, deadline: float) -> PairResult:  # fmt: skip
    duration = int(load.option(options, "duration_s"))
    bound = int(max(1, deadline - time.monotonic()) + load.STOP_TIMEOUT_S)
    server = Side("server", f"{build.variant.name} on {server_host}",
                  _drive(server_host, build.variant.name, "serve",
                         load.serve_args(options, marker, bound, listen="0.0.0.0:0"),
                         marker))  # fmt: skip
    sides["server"] = server
    server.start(dict(os.environ))
    listening = _read_port(server_host, marker, server, time.monotonic() + START_TIMEOUT_S)
    if listening is None:
        server.kill("did not listen")
        server.finish(deadline)
        return _failed(sides, started, f"the server on {server_host} did not start listening")
    pid, port = listening
    for i, host in enumerate(generators, 1):
        sides[f"generator {i}"] = Side(
            "generator", f"{client_build.variant.name} on {host}",
            _drive(host, client_build.variant.name, "load",
                   load.load_args(options, f"{address}:{port}", duration)),
        )  # fmt: skip
    for name, side in sides.items():
        if name != "server":
            side.start(dict(os.environ))
    for name, side in sides.items():
        if name != "server":
            side.finish(deadline)
    _run(ssh(server_host, ["kill", "-TERM", str(pid)]), 30)
    server.finish(min(deadline, time.monotonic() + load.STOP_TIMEOUT_S))
    return _ended(options, build, sides, started, server_host, generators)


def _failed(sides: dict[str, Side], started: float, problem: str) -> PairResult:
    tails = "\n".join(side.tail() for side in sides.values())
    output = {"exit": 5, "error": {"stage": "load on hosts", "message": problem}}
    return PairResult("failed", 5, time.monotonic() - started, output,
                      f"tlsbench: {problem}\n{tails}")  # fmt: skip


def _ended(options: dict[str, Any], build: Build, sides: dict[str, Side], started: float,
           server_host: str, generators: list[str]) -> PairResult:  # fmt: skip
    server = sides["server"]
    served = server.json()
    loads = []
    for name, side in sides.items():
        if name == "server":
            continue
        said = side.json()
        if said is not None and said.get("exit") == 3:
            reason = (said.get("error") or {}).get("message", "")
            message = f"{name} ({side.label}): {reason}"
            return PairResult("unsupported", 3, time.monotonic() - started,
                              {"error": {"message": message}}, message)  # fmt: skip
        if said is None or said.get("load") is None:
            ended = f"killed: {side.killed}" if side.killed else f"exit {side.code}"
            return _failed(sides, started, f"{name} ({side.label}) printed no result ({ended})")
        found = dict(said["load"])
        if side.code != 0 or found.get("errors"):
            first = found.get("first_error") or f"exit {side.code}"
            return _failed(sides, started, f"{name} ({side.label}) saw "
                           f"{found.get('errors', 0)} errors; the first: {first}")  # fmt: skip
        loads.append(found)
    if served is None or served.get("serve") is None:
        return _failed(sides, started, f"the server ({server.label}) printed no result "
                       f"(exit {server.code} {server.killed})".strip())  # fmt: skip
    serve = dict(served["serve"])
    if server.code != 0 or serve.get("errors"):
        first = serve.get("first_error") or f"exit {server.code}"
        return _failed(sides, started, f"the server ({server.label}) saw "
                       f"{serve.get('errors', 0)} errors; the first: {first}")  # fmt: skip
    merged = merge_loads(loads)
    first_generator = next(s for n, s in sides.items() if n != "server")
    output = load._output(options, build, merged, serve, served, first_generator.json(),
                          {"server": server, "generator": first_generator}, "time",
                          None, None)  # fmt: skip
    output["warnings"] = [w for w in output["warnings"] if not w.startswith("one CPU")]
    output["placement"] = {"server": server_host, "generators": generators}
    output["hosts"] = {
        "server": server_host,
        "generators": [
            {"host": host, **{k: v for k, v in found.items() if k != "histogram"}}
            for host, found in zip(generators, loads, strict=True)
        ],
    }
    output["sides"] = {name: {"program": side.label, "kind": "driver"}
                       for name, side in sides.items()}  # fmt: skip
    tails = "\n".join(side.tail() for side in sides.values())
    return PairResult("ok", 0, time.monotonic() - started, output, tails)


# ------------------------------------------------------------------------- merging

SUMMED = ("transactions", "handshakes", "resumed", "errors", "unstarted", "connections",
          "rate", "tps", "hps", "MBps", "cpu_s")  # fmt: skip
MARKS = (("p50", 50.0), ("p90", 90.0), ("p99", 99.0), ("p99.9", 99.9))


def merge_histograms(histograms: list[list[list[float]]]) -> list[list[float]]:
    """[upper bound in us, count] rows of several generators, added bucket by bucket (the
    driver's buckets are the same on every host: HdrHistogram's layout)."""
    counts: dict[float, int] = {}
    for rows in histograms:
        for upper, count in rows:
            counts[float(upper)] = counts.get(float(upper), 0) + int(count)
    return [[upper, counts[upper]] for upper in sorted(counts)]


def percentile(histogram: list[list[float]], p: float, highest: float) -> float:
    """Nearest rank, as the driver reads its own histogram: the smallest bucket bound with
    at least p % of the samples at or below it (never above the largest sample)."""
    total = sum(int(c) for _, c in histogram)
    rank = max(1, int(p / 100.0 * total + 0.999999))
    seen = 0
    for upper, count in histogram:
        seen += int(count)
        if seen >= rank:
            return min(float(upper), highest)
    return highest


def merge_loads(loads: list[dict[str, Any]]) -> dict[str, Any]:
    """One `load` object from several generators' (see the module's description)."""
    merged: dict[str, Any] = dict(loads[0])
    for key in SUMMED:
        values = [g.get(key) for g in loads]
        if all(v is not None for v in values):
            merged[key] = sum(values)
    merged["wall_s"] = max(float(g.get("wall_s") or 0) for g in loads)
    utilizations = [float(g.get("cpu_utilization") or 0) for g in loads]
    merged["cpu_utilization"] = max(utilizations)  # the busiest generator may be the limit
    merged["saturated"] = any(g.get("saturated") for g in loads)
    merged["first_error"] = next((g["first_error"] for g in loads if g.get("first_error")), None)
    histogram = merge_histograms([g.get("histogram") or [] for g in loads])
    merged["histogram"] = histogram
    latencies = [g.get("latency_us") or {} for g in loads]
    counts = [sum(int(c) for _, c in (g.get("histogram") or [])) for g in loads]
    latency: dict[str, float] = {}
    if histogram:
        highest = max(float(lat["max"]) for lat in latencies if "max" in lat)
        latency["min"] = min(float(lat["min"]) for lat in latencies if "min" in lat)
        weighted = [float(lat.get("mean", 0)) * n
                    for lat, n in zip(latencies, counts, strict=True)]  # fmt: skip
        latency["mean"] = sum(weighted) / sum(counts)
        for name, p in MARKS:
            latency[name] = percentile(histogram, p, highest)
        latency["max"] = highest
    merged["latency_us"] = latency
    merged["generators"] = len(loads)
    merged["merged_from"] = "histograms added bucket by bucket; rates summed"
    return merged
