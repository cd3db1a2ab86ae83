"""Client and server in separate processes: the `interop` scenario.

A point's variant plays one side (`role`, client by default) and `peer` plays the other: a
tlsbench variant (its own driver, built from its own pinned sources) or a real program from
Debian (programs.py: `openssl s_server` / `s_client`, `gnutls-serv` / `gnutls-cli`, nginx,
curl). They meet on a
loopback TCP connection, a new one per handshake, and exchange a minimal HTTP/1.0 request and
response (drivers/core/scenarios/peer.c).

The runner starts the server first and waits for the port it listens on (a driver writes it
to a file once it accepts connections; a program gets a port chosen here), then the client;
both run in their own process groups, are killed together on a timeout or an interrupt, and
each one's failure is kept with its stderr tail. Each tlsbench side checks what it
negotiated against the request; here the two sides' readbacks are also compared with each
other; a real program's offer is pinned as far as the program allows (programs.py).

Timing and heap come from separate runs, as for every scenario: the pair of timing drivers,
then the pair of heap drivers; a side's heap figures are then those of a process that holds
that side alone.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tlsbench.builds.build import Build
from tlsbench.driver.drive import driver_command
from tlsbench.peers import netem, programs

# How long the server may take to listen, and a peer to answer, before the point fails.
START_TIMEOUT_S = 10.0
PEER_TIMEOUT_S = programs.PEER_TIMEOUT_S
# Over a lossy emulated link TCP backs off exponentially (a lost SYN is sent again after 1, 2,
# 4, 8 s...): at 10 % loss a connection in a few hundred waits longer than 10 s for its first
# bytes, which is the network's doing, not a stalled peer. Six backoffs (about 63 s) bound it.
LOSSY_PEER_TIMEOUT_S = 64
STDERR_TAIL_LINES = 12
# The parameters both sides must have read back alike.
AGREED = ("version", "suite", "group", "sigalg", "resumed", "psk")


@dataclass
class Side:
    """One process of a pair: its command, what it printed, how it ended."""

    role: str
    label: str
    command: list[str]
    proc: subprocess.Popen[str] | None = None
    out: str = ""
    err: str = ""
    code: int | None = None
    killed: str = ""

    def start(self, env: dict[str, str], stdin: str | None = None,
              cpus: set[int] | None = None) -> None:  # fmt: skip
        """Starts the process in its own session; `cpus`: the CPUs it may run on (pinned
        before exec, as the runner pins a driver)."""

        def pin() -> None:
            if cpus:
                with contextlib.suppress(OSError):
                    os.sched_setaffinity(0, cpus)

        if _STOPPING.is_set():  # the run was interrupted while this point was setting up
            raise Stopped(f"{self.role} {self.label} not started: {_STOPPING_WHY[0]}")
        self.proc = subprocess.Popen(
            self.command,
            stdin=subprocess.PIPE if stdin is not None else subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
            start_new_session=True,  # a timeout or an interrupt kills its whole group
            preexec_fn=pin if cpus else None,
        )
        self._stdin = stdin
        with _LIVE_LOCK:
            _LIVE.add(self)

    def finish(self, deadline: float) -> None:
        assert self.proc is not None
        try:
            self.out, self.err = self.proc.communicate(
                self._stdin, timeout=max(0.1, deadline - time.monotonic())
            )
        except subprocess.TimeoutExpired:
            self.kill("timeout")
            self.out, self.err = self.proc.communicate()
        self.code = self.proc.returncode
        with _LIVE_LOCK:
            _LIVE.discard(self)

    def kill(self, why: str) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.killed = why
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.proc.pid, signal.SIGKILL)

    def __hash__(self) -> int:
        return id(self)

    def tail(self) -> str:
        lines = self.err.strip().splitlines()[-STDERR_TAIL_LINES:]
        text = "\n".join(f"  {line}" for line in lines) or "  (nothing on stderr)"
        ended = f"killed ({self.killed})" if self.killed else f"exit {self.code}"
        return f"{self.role} {self.label} ({ended}):\n{text}"

    def json(self) -> dict[str, Any] | None:
        try:
            data = json.loads(self.out) if self.out.strip().startswith("{") else None
        except json.JSONDecodeError:
            return None
        return data if isinstance(data, dict) else None


# The sides started and not yet finished, of every thread: points that mostly wait run
# several at a time in threads of the runner (parallel.py), and an interrupt of the runner
# must end all of their processes, which run in sessions of their own.
_LIVE: set[Side] = set()
_LIVE_LOCK = threading.Lock()
# Set by kill_all: no side starts any more (a point still setting up would start one after
# the kill), until allow_starts.
_STOPPING = threading.Event()
_STOPPING_WHY = [""]


class Stopped(Exception):
    """A side was not started because the run is being interrupted."""


def kill_all(why: str) -> None:
    """Kills every side still running and refuses to start new ones (their threads then
    clean up as on a timeout)."""
    _STOPPING_WHY[0] = why
    _STOPPING.set()
    with _LIVE_LOCK:
        live = list(_LIVE)
    for side in live:
        side.kill(why)


def allow_starts() -> None:
    """Sides may start again (after kill_all)."""
    _STOPPING.clear()


# ------------------------------------------------------------------------- commands


# Point keys the runner acts on itself (never driver options).
RUNNER_KEYS = ("accel", "peer", "role", "resume", "rtt_ms", "loss")


def _driver_args(options: dict[str, Any]) -> list[str]:
    """The point's TLS options as driver arguments (the runner's own keys left out)."""
    args: list[str] = []
    for key, value in options.items():
        if key not in RUNNER_KEYS:
            args += [f"--{key.replace('_', '-')}", str(value)]
    if options.get("resume") == "on":
        args.append("--peer-resume")
    return args


def driver_side(build: Build, role: str, options: dict[str, Any], measure: str,
                scratch: Path, connect: str | None, body_any: bool,
                host: str = "127.0.0.1") -> Side:  # fmt: skip
    patience = LOSSY_PEER_TIMEOUT_S if float(options.get("loss") or 0) > 0 else PEER_TIMEOUT_S
    args = [*_driver_args(options), "--role", role, "--peer-timeout", str(patience), "--json"]
    if role == "server":
        args += ["--port-file", str(scratch / "port"), "--listen", f"{host}:0"]
    else:
        assert connect is not None
        args += ["--connect", connect]
        if body_any:
            args += ["--body", "any"]
    command = driver_command(build, "peer", args, measure)
    return Side(role, build.variant.name, command)


def program_side(name: str, options: dict[str, Any], port: int | None, connections: int,
                 scratch: Path, host: str = "127.0.0.1") -> Side | str:  # fmt: skip
    """A real program as the peer (programs.py), or the reason it cannot play this point."""
    program = programs.program(name)
    refused = program.psk_refusal(options) or program.missing() or program.refusal(options)
    if refused is not None:
        return refused
    command = program.command(options, port, connections, scratch, host)
    if isinstance(command, str):
        return command
    return Side(program.role, name, command)


def free_port() -> int:
    """A port the kernel has just handed out, for a program that cannot take port 0.
    Another process could take it before the program binds it: the point then fails
    with the program's "address in use", never with wrong figures."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def wait_for_listener(server: Side, port: int, deadline: float, host: str = "127.0.0.1") -> bool:
    """A program's port accepts connections (a program such as nginx writes no port file,
    and a client such as curl does not retry)."""
    assert server.proc is not None
    while time.monotonic() < deadline:
        if server.proc.poll() is not None:
            return False
        with contextlib.suppress(OSError), socket.create_connection((host, port), 0.2):
            return True
        time.sleep(0.02)
    return False


def wait_for_port(server: Side, port_file: Path, deadline: float) -> int | None:
    assert server.proc is not None
    while time.monotonic() < deadline:
        with contextlib.suppress(FileNotFoundError, ValueError):
            return int(port_file.read_text().strip())
        if server.proc.poll() is not None:
            return None
        time.sleep(0.01)
    return None


# ------------------------------------------------------------------------- the response


def check_program_client(side: Side, options: dict[str, Any], scratch: Path) -> str | None:
    """What a real client printed: the whole response of the tlsbench server, and what the
    program itself reports of the session (programs.py). None when all is as asked."""
    return programs.program(side.label).check_output(side.out, options, scratch)


# ------------------------------------------------------------------------- one point


@dataclass
class PairResult:
    status: str  # ok | unsupported | failed
    exit_code: int | None
    seconds: float
    output: dict[str, Any] | None
    stderr_tail: str


def run_pair(point_options: dict[str, Any], role: str, build: Build, peer: str,
             peer_build: Build | None, measure: str, timeout: float,
             env: dict[str, str]) -> PairResult:  # fmt: skip
    """One repetition of one interop point with one kind of driver (time or heap)."""
    started = time.monotonic()
    deadline = started + timeout
    connections = int(point_options.get("iterations", 10)) + int(point_options.get("warmup", 1))
    link = netem.Link(float(point_options.get("rtt_ms", 0)),
                      float(point_options.get("loss", 0)) / 100)  # fmt: skip
    emulate = link.rtt_ms > 0 or link.loss > 0
    if emulate and (reason := netem.check_possible()):
        return PairResult("unsupported", 3, 0.0, {"error": {"message": reason}}, reason)
    with (
        tempfile.TemporaryDirectory(prefix="tlsbench-interop-") as tmp,
        netem.emulated(link) if emulate else contextlib.nullcontext() as net,
    ):
        scratch = Path(tmp)
        sides: dict[str, Side] = {}
        try:
            result = _run_pair(point_options, role, build, peer, peer_build, measure, env,
                               scratch, sides, connections, started, deadline, net)  # fmt: skip
            if net is not None and result.output is not None:
                result.output["network"] = {"method": netem.METHOD,
                                            "rtt_ms": link.rtt_ms, "loss": link.loss,
                                            "packets_relayed": net.relayed,
                                            "packets_dropped": net.dropped,
                                            "client": netem.CLIENT_ADDRESS,
                                            "server": netem.SERVER_ADDRESS}  # fmt: skip
            return result
        finally:
            # Nothing outlives the point: not on a failure, a timeout or an interrupt.
            for side in sides.values():
                side.kill("interop point ended")
                if side.proc is not None:
                    side.proc.wait()


def _run_pair(options: dict[str, Any], role: str, build: Build, peer: str,
              peer_build: Build | None, measure: str, env: dict[str, str], scratch: Path,
              sides: dict[str, Side], connections: int, started: float,
              deadline: float, net: netem.Network | None = None) -> PairResult:  # fmt: skip
    program = peer_build is None
    # On an emulated network each side runs in its namespace and the server has its address.
    host = netem.SERVER_ADDRESS if net is not None else "127.0.0.1"

    def placed(side: Side) -> Side:
        if net is not None:
            side.command = net.command(side.role, side.command)
        return side

    port: int | None = None
    # nginx as the server with a real client too (`server = "nginx"`): no tlsbench side.
    nginx_serves = role == "server" and options.get("server") == "nginx"
    # The server first.
    if nginx_serves:
        port = free_port()
        made = program_side("nginx", options, port, connections, scratch, host)
        if isinstance(made, str):
            return PairResult("unsupported", 3, 0.0, {"error": {"message": made}}, made)
        sides["server"] = placed(made)
    elif role == "server":
        sides["server"] = placed(driver_side(build, "server", options, measure, scratch, None,
                                             program, host))  # fmt: skip
    elif program:
        port = free_port()
        made = program_side(peer, options, port, connections, scratch, host)
        if isinstance(made, str):
            return PairResult("unsupported", 3, 0.0, {"error": {"message": made}}, made)
        sides["server"] = placed(made)
    else:
        assert peer_build is not None
        sides["server"] = placed(driver_side(peer_build, "server", options, measure, scratch,
                                             None, False, host))  # fmt: skip
    server = sides["server"]
    server.start(env)
    if program and role == "client":
        connect_port: int | None = port  # the client retries until the program listens
    elif nginx_serves:
        assert port is not None
        listening = wait_for_listener(server, port, time.monotonic() + START_TIMEOUT_S, host)
        connect_port = port if listening else None
    else:
        connect_port = wait_for_port(server, scratch / "port", time.monotonic() + START_TIMEOUT_S)
    if connect_port is None:
        server.kill("did not listen")
        server.finish(deadline)
        return _ended(sides, started, options, role, peer, "the server did not start listening")
    # Then the client(s).
    connect = f"{host}:{connect_port}"
    if role == "client" or not program:
        client_build = build if role == "client" else peer_build
        assert client_build is not None
        body_any = program and not programs.program(peer).serves_pattern
        sides["client"] = placed(driver_side(client_build, "client", options, measure, scratch,
                                             connect, body_any))  # fmt: skip
        sides["client"].start(env)
        sides["client"].finish(deadline)
        if sides["client"].code != 0:  # the server would wait for connections that never come
            server.finish(min(deadline, time.monotonic() + 1.0))
    else:
        made = program_side(peer, options, connect_port, connections, scratch, host)
        if isinstance(made, str):
            return PairResult("unsupported", 3, 0.0, {"error": {"message": made}}, made)
        request = f"GET /{programs.response_size(options)} HTTP/1.0\r\n\r\n"
        # A real client makes one connection per process: one per connection the server
        # waits for; the first failure ends the point.
        speeds: list[float] = []  # curl's own MB/s per download
        for _ in range(connections):
            client = placed(Side("client", made.label, made.command))
            sides["client"] = client
            client.start(env, stdin=request)
            client.finish(deadline)
            problem = None if client.code == 0 else f"{client.label} exited {client.code}"
            problem = problem or check_program_client(client, options, scratch)
            if client.label == "curl" and problem is None:
                speeds.append(float(client.out.strip() or 0) / 1e6)
            if problem:
                # The tlsbench server may have ended the connection for a reason of its own
                # (a check that fired): give it a moment to say so.
                server.finish(min(deadline, time.monotonic() + 2.0))
                return _ended(sides, started, options, role, peer, problem)
    if (program and role == "client") or nginx_serves:
        server.kill("the client is done")  # gnutls-serv and nginx serve until stopped
    server.finish(deadline)
    result = _ended(sides, started, options, role, peer, None)
    if role == "server" and program and options.get("bytes") and result.output is not None:
        # What curl measured, after the warm-up connections (as the drivers count).
        warmup = int(options.get("warmup", 1))
        result.output.setdefault("samples", {})["download_MBps"] = speeds[warmup:]
    return result


def _ended(sides: dict[str, Side], started: float, options: dict[str, Any], role: str,
           peer: str, problem: str | None) -> PairResult:  # fmt: skip
    seconds = time.monotonic() - started
    results = {name: side.json() for name, side in sides.items()}
    tails = "\n".join(side.tail() for side in sides.values())
    own = results.get(role)
    codes = {name: (r or {}).get("exit") for name, r in results.items()}
    # Unsupported: a tlsbench side said it cannot honour the request.
    if 3 in codes.values():
        who = next(name for name, code in codes.items() if code == 3)
        reason = ((results[who] or {}).get("error") or {}).get("message", "")
        message = f"{who} ({sides[who].label}): {reason}"
        return PairResult("unsupported", 3, seconds, {"error": {"message": message}}, tails)
    # A tlsbench side's own error says more than what a program or the pairing saw; a side
    # this runner killed (its peer had already failed) has nothing to say.
    errors = []
    for name, side in sides.items():
        if side.killed or programs.is_program(side.label) or side.code is None:
            continue
        if codes.get(name) != 0:
            error = (results[name] or {}).get("error") or {}
            errors.append(f"{name} ({side.label}) failed at {error.get('stage', '?')}: "
                          f"{error.get('message', 'no JSON output')}")  # fmt: skip
    # Both sides' errors where both failed: which one caused the other is for the reader.
    failed = "; ".join(errors) or problem
    if failed is None and own is None and all(programs.is_program(s.label) for s in sides.values()):
        # Two real programs (nginx to curl): no tlsbench side reads anything back; the client
        # checked every byte, and both ends are pinned to the version.
        own = {"schema": 1, "scenario": "interop", "negotiated": {}, "samples": {},
               "summary": {}, "exit": 0}  # fmt: skip
        results[role] = own
    if failed is None and own is not None:
        other = results.get("server" if role == "client" else "client")
        failed = _disagreement(own, other)
    if failed is not None or own is None:
        failed = failed or "no result from the tlsbench side"
        error = {"stage": "interop", "message": failed}
        output = {"exit": 5, "error": error}
        return PairResult("failed", 5, seconds, output, f"tlsbench: {failed}\n{tails}")
    return PairResult("ok", 0, seconds, merge(results, sides, role), tails)


def _disagreement(own: dict[str, Any], other: dict[str, Any] | None) -> str | None:
    if other is None:
        return None
    mine, theirs = own.get("negotiated") or {}, other.get("negotiated") or {}
    for key in AGREED:
        if mine.get(key) != theirs.get(key):
            return (f"the two sides read back different {key}: {mine.get(key)!r} and "
                    f"{theirs.get(key)!r}")  # fmt: skip
    return None


def merge(results: dict[str, dict[str, Any] | None], sides: dict[str, Side],
          role: str) -> dict[str, Any]:  # fmt: skip
    """One stored result from the two sides: the point's own side's output, with the other
    side's series, heap and wire figures beside it."""
    own = dict(results[role] or {})
    samples = dict(own.get("samples") or {})
    summary = dict(own.get("summary") or {})
    heap = dict(own.get("heap") or {}) if own.get("heap") else None
    wire_full: dict[str, Any] = dict(((own.get("wire") or {}).get("full")) or {})
    negotiated = dict(own.get("negotiated") or {})
    verified = dict(negotiated.get("peer_verified") or {})
    for name, result in results.items():
        if name == role or result is None:
            continue
        samples.update(result.get("samples") or {})
        summary.update(result.get("summary") or {})
        if heap is not None and result.get("heap"):
            heap[name] = result["heap"].get(name)
        other_wire = (result.get("wire") or {}).get("full") or {}
        if name in other_wire:
            wire_full[name] = other_wire[name]
        for key in (
            "client_hello_bytes",
            "round_trips",
            "server_flights_received",
            "client_flights_received",
        ):
            if key in other_wire:
                wire_full[key] = other_wire[key]
        verified.update(((result.get("negotiated") or {}).get("peer_verified")) or {})
    negotiated["peer_verified"] = verified
    wire_full.pop("bytes_received", None)
    own.update(samples=samples, summary=summary, heap=heap, negotiated=negotiated)
    if wire_full:
        own["wire"] = {"full": wire_full}
    own["sides"] = {
        name: {"program": side.label,
               "kind": "program" if programs.is_program(side.label) else "driver",
               "version": (results.get(name) or {}).get("version")}
        for name, side in sides.items()
    }  # fmt: skip
    return own


def run_point(options: dict[str, Any], build: Build, peer_build: Build | None, timeout: float,
              env: dict[str, str]) -> PairResult:  # fmt: skip
    """One repetition: the pair of timing drivers, then the pair of heap drivers (whose
    heap figures replace the timing run's nulls; their times are not used)."""
    role = str(options.get("role", "client"))
    peer = str(options["peer"])
    timed = run_pair(options, role, build, peer, peer_build, "time", timeout, env)
    if timed.status != "ok" or timed.output is None:
        return timed
    heap = run_pair(options, role, build, peer, peer_build, "heap", timeout, env)
    if heap.status != "ok" or heap.output is None:
        heap.stderr_tail = f"(the heap run, tlsbench-driver-heap)\n{heap.stderr_tail}"
        return heap
    merged = dict(timed.output)
    merged["heap"] = heap.output.get("heap")
    merged["measure"] = {"time": "tlsbench-driver (each side)",
                         "heap": "tlsbench-driver-heap (each side)"}  # fmt: skip
    return PairResult("ok", 0, timed.seconds + heap.seconds, merged,
                      "\n".join(t for t in (timed.stderr_tail, heap.stderr_tail) if t))  # fmt: skip
