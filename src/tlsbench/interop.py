"""Client and server in separate processes: the `interop` scenario.

A point's variant plays one side (`role`, client by default) and `peer` plays the other: a
tlsbench variant (its own driver, built from its own pinned sources) or a real program from
Debian (`openssl s_server` / `s_client`, `gnutls-serv` / `gnutls-cli`). They meet on a
loopback TCP connection, a new one per handshake, and exchange a minimal HTTP/1.0 request and
response (drivers/core/scenarios/peer.c).

The runner starts the server first and waits for the port it listens on (a driver writes it
to a file once it accepts connections; a program gets a port chosen here), then the client;
both run in their own process groups, are killed together on a timeout or an interrupt, and
each one's failure is kept with its stderr tail. Each tlsbench side checks what it
negotiated against the request; here the two sides' readbacks are also compared with each
other. A real program's offer is pinned to the protocol version and to the group the
tlsbench side checks (the point's, or the driver's default), OpenSSL's programs also to the
suite and signature scheme, GnuTLS's to a TLS 1.3 suite and the signature scheme: the
tlsbench side pins the rest and reads back what was agreed.

Timing and heap come from separate runs, as for every scenario: the pair of timing drivers,
then the pair of heap drivers; a side's heap figures are then those of a process that holds
that side alone.
"""

from __future__ import annotations

import contextlib
import functools
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tlsbench import certs, netem
from tlsbench.build import Build
from tlsbench.drive import driver_command
from tlsbench.experiments import PSK_KX, point_kx

# Real programs that can be the peer, by the role they play.
# `openssl-3.5.x-s_server` / `-s_client`: the `openssl` program of the pinned openssl-3.5.x
# build (its own sources, X25519MLKEM768 included), beside the machine's OpenSSL 3.0.
PINNED_OPENSSL_LINE = "openssl-3.5.x"
SERVER_PROGRAMS = ("openssl-s_server", f"{PINNED_OPENSSL_LINE}-s_server", "gnutls-serv", "nginx")
CLIENT_PROGRAMS = ("openssl-s_client", f"{PINNED_OPENSSL_LINE}-s_client", "gnutls-cli", "curl")
# Real servers whose response body is tlsbench's pattern (nginx serves it from a file).
PATTERN_SERVERS = ("nginx",)
# Where each program comes from (the message when it is missing).
PROGRAM_PACKAGES = {"openssl-s_server": "openssl", "openssl-s_client": "openssl",
                    "gnutls-serv": "gnutls-bin", "gnutls-cli": "gnutls-bin",
                    "nginx": "nginx-light", "curl": "curl"}  # fmt: skip
OPENSSL_SERVERS = ("openssl-s_server", f"{PINNED_OPENSSL_LINE}-s_server")
OPENSSL_CLIENTS = ("openssl-s_client", f"{PINNED_OPENSSL_LINE}-s_client")
PROGRAMS = SERVER_PROGRAMS + CLIENT_PROGRAMS
# How long the server may take to listen, and a peer to answer, before the point fails.
START_TIMEOUT_S = 10.0
PEER_TIMEOUT_S = 10
STDERR_TAIL_LINES = 12
# The parameters both sides must have read back alike.
AGREED = ("version", "suite", "group", "sigalg", "resumed", "psk")
# The pre-shared key of PSK points, as the driver holds it (drivers/core/session.c): a fixed
# test key, never a secret, and its identity; a real program is given the same.
PSK_KEY_HEX = bytes(range(0x10, 0x30)).hex()
PSK_IDENTITY = "tlsbench-device"
# Real programs that take a pre-shared key (nginx and curl are run with certificates).
PSK_PROGRAMS = (*OPENSSL_SERVERS, *OPENSSL_CLIENTS, "gnutls-serv", "gnutls-cli")

OPENSSL_GROUPS = {"secp256r1": "P-256", "secp384r1": "P-384"}
# GnuTLS's priority-string names (`gnutls-cli --list`) of tlsbench's groups, TLS 1.3 suites
# (a TLS 1.3 suite is its cipher) and signature schemes; a scheme of ECDSA has one name per
# protocol version (TLS 1.2's says nothing of the curve).
GNUTLS_GROUPS = {
    "x25519": "X25519", "x448": "X448", "secp256r1": "SECP256R1", "secp384r1": "SECP384R1",
    "secp521r1": "SECP521R1", **{f"ffdhe{n}": f"FFDHE{n}" for n in (2048, 3072, 4096, 6144, 8192)},
}  # fmt: skip
GNUTLS_TLS13_CIPHERS = {"TLS_AES_128_GCM_SHA256": "AES-128-GCM",
                        "TLS_AES_256_GCM_SHA384": "AES-256-GCM",
                        "TLS_CHACHA20_POLY1305_SHA256": "CHACHA20-POLY1305",
                        "TLS_AES_128_CCM_SHA256": "AES-128-CCM",
                        "TLS_AES_128_CCM_8_SHA256": "AES-128-CCM-8"}  # fmt: skip
GNUTLS_SIGNS = {
    **{f"rsa_pss_rsae_sha{h}": f"RSA-PSS-RSAE-SHA{h}" for h in (256, 384, 512)},
    **{f"rsa_pss_pss_sha{h}": f"RSA-PSS-SHA{h}" for h in (256, 384, 512)},
    **{f"rsa_pkcs1_sha{h}": f"RSA-SHA{h}" for h in (256, 384, 512)},
    "ed25519": "EdDSA-Ed25519", "ed448": "EdDSA-Ed448",
}  # fmt: skip
GNUTLS_ECDSA_SIGNS = {"ecdsa_secp256r1_sha256": (256, 256), "ecdsa_secp384r1_sha384": (384, 384),
                      "ecdsa_secp521r1_sha512": (521, 512)}  # fmt: skip
GNUTLS_VERSIONS = {"1.2": "+VERS-TLS1.2", "1.3": "+VERS-TLS1.3"}
# The group a driver checks when the point names none (default_group in
# drivers/core/main.c): in TLS 1.2 an ECDSA certificate's curve, else x25519.
TLS12_CERT_GROUPS = {"ecdsa-p256": "secp256r1", "ecdsa-p384": "secp384r1"}


def point_group(options: dict[str, Any]) -> str:
    """The group the point's tlsbench side will check: a real program is offered that one
    alone, as a tlsbench peer would be (a program left to its own defaults offers others,
    and a side that cannot be held to a group, rustls, or a TLS 1.2 wolfSSL server, which
    takes the client's first curve, would agree on one the run did not ask for)."""
    if options.get("group"):
        return str(options["group"])
    if str(options.get("tls", "1.3")) == "1.2":
        return TLS12_CERT_GROUPS.get(str(options.get("cert", "rsa2048")), "x25519")
    return "x25519"


def is_program(name: str) -> bool:
    return name in PROGRAMS


def program_role(name: str) -> str:
    return "server" if name in SERVER_PROGRAMS else "client"


def program_executable(name: str) -> str:
    """The machine's executable a peer name runs: `openssl` for `openssl-s_server`."""
    return name.split("-")[0] if name.startswith("openssl") else name


def version_command(executable: str) -> list[str]:
    """How an executable tells its version (nginx prints it on stderr)."""
    if Path(executable).name == "openssl":
        return [executable, "version"]
    return [executable, "-v"] if Path(executable).name == "nginx" else [executable, "--version"]


def pinned_program(name: str) -> bool:
    """A program built by tlsbench from pinned sources (not the machine's)."""
    return name.startswith(f"{PINNED_OPENSSL_LINE}-")


def openssl_executable(name: str) -> str:
    """The `openssl` program a peer name means: the machine's, or the pinned build's (built
    on first use, like any variant)."""
    return _pinned_openssl() if pinned_program(name) else "openssl"


@functools.cache
def _pinned_openssl() -> str:
    """The pinned build's program, found once per process: every connection of every
    point asks, and finding a build hashes its inputs (the whole drivers tree)."""
    from tlsbench.build import Builder
    from tlsbench.recipes.openssl import PROGRAM
    from tlsbench.variants import Catalog

    build = Builder(quiet=True).build(Catalog().resolve(PINNED_OPENSSL_LINE))
    return str(build.folder / "prefix" / PROGRAM)


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


def _cert_file(options: dict[str, Any], name: str) -> str:
    return str(certs.cert_dir(str(options.get("cert", "rsa2048"))) / name)


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
    args = [*_driver_args(options), "--role", role, "--peer-timeout", str(PEER_TIMEOUT_S), "--json"]
    if role == "server":
        args += ["--port-file", str(scratch / "port"), "--listen", f"{host}:0"]
    else:
        assert connect is not None
        args += ["--connect", connect]
        if body_any:
            args += ["--body", "any"]
    command = driver_command(build, "peer", args, measure)
    return Side(role, build.variant.name, command)


def _openssl_suite_name(suite: str, executable: str) -> str | None:
    """OpenSSL's name of a TLS 1.2 suite (`openssl ciphers -stdname` maps them)."""
    proc = subprocess.run(
        [executable, "ciphers", "-stdname", "ALL:COMPLEMENTOFALL"],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    for line in proc.stdout.splitlines():
        parts = line.split()
        if len(parts) >= 3 and parts[0] == suite:
            return parts[2]
    return None


def _openssl_offer(options: dict[str, Any], executable: str = "openssl") -> list[str] | str:
    """s_server / s_client options pinning version, suite, group and signature scheme, or
    the reason this openssl cannot offer the point."""
    tls = str(options.get("tls", "1.3"))
    args = ["-tls1_3" if tls == "1.3" else "-tls1_2"]
    suite = options.get("suite")
    if suite and tls == "1.3":
        args += ["-ciphersuites", str(suite)]
    elif suite:
        name = _openssl_suite_name(str(suite), executable)
        if name is None:
            return f"{executable} does not know {suite}"
        args += ["-cipher", f"{name}:@SECLEVEL=0"]
    group = point_group(options)
    args += ["-groups", OPENSSL_GROUPS.get(group, group)]
    if options.get("sigalg"):
        args += ["-sigalgs", str(options["sigalg"])]
    return args


def _gnutls_priority(options: dict[str, Any]) -> str | None:
    """gnutls-serv / gnutls-cli's priority string: GnuTLS's NORMAL less every version, group,
    TLS 1.3 suite and signature scheme but the point's; None when GnuTLS has no name for one
    of them. (A TLS 1.2 suite is left to the tlsbench side, which offers that one alone.)"""
    tls = str(options.get("tls", "1.3"))
    group = GNUTLS_GROUPS.get(point_group(options))
    if group is None:
        return None
    parts = ["NORMAL", "-VERS-ALL", GNUTLS_VERSIONS[tls], "-GROUP-ALL", f"+GROUP-{group}"]
    suite = str(options.get("suite") or "")
    if suite and tls == "1.3":
        if suite not in GNUTLS_TLS13_CIPHERS:
            return None
        parts += ["-CIPHER-ALL", f"+{GNUTLS_TLS13_CIPHERS[suite]}"]
    sigalg = str(options.get("sigalg") or "")
    if sigalg:
        if sigalg in GNUTLS_ECDSA_SIGNS:
            curve, hash_bits = GNUTLS_ECDSA_SIGNS[sigalg]
            sign = (f"ECDSA-SECP{curve}R1-SHA{hash_bits}" if tls == "1.3"
                    else f"ECDSA-SHA{hash_bits}")  # fmt: skip
        elif sigalg in GNUTLS_SIGNS:
            sign = GNUTLS_SIGNS[sigalg]
        else:
            return None
        parts += ["-SIGN-ALL", f"+SIGN-{sign}"]
    return ":".join(parts)


def _psk_program(name: str, executable: str, options: dict[str, Any], kx: str, port: int | None,
                 connections: int, scratch: Path, host: str) -> Side | str:  # fmt: skip
    """A real program keyed by the pre-shared key (no certificate), or why it cannot be. The
    programs bind a TLS 1.3 external PSK to SHA-256 (s_server / s_client: a TLS_AES_128_GCM_
    SHA256 session; GnuTLS: its credentials' binder hash)."""
    tls = str(options.get("tls", "1.3"))
    suite = str(options.get("suite") or "")
    if tls == "1.3" and suite.endswith("SHA384"):
        return f"{name} binds a TLS 1.3 external PSK to SHA-256, and {suite} hashes with SHA-384"
    role = program_role(name)
    if name in OPENSSL_SERVERS or name in OPENSSL_CLIENTS:
        offer = _openssl_offer(options, executable)
        if isinstance(offer, str):
            return offer
        psk = ["-psk", PSK_KEY_HEX, "-psk_identity", PSK_IDENTITY]
        if tls == "1.3" and kx == "psk":
            # Allowed, and (3.3 on) preferred by a server; a client offers it beside
            # psk_dhe_ke, never alone: the tlsbench server's readback says which ran.
            psk.append("-allow_no_dhe_kex")
            if role == "server" and pinned_program(name):
                psk.append("-prefer_no_dhe_kex")
        if role == "server":
            command = [executable, "s_server", "-accept", f"{host}:{port}", "-naccept",
                       str(connections), "-www", "-nocert", "-num_tickets", "0", "-no_ticket",
                       *psk, *offer]  # fmt: skip
        else:
            command = [executable, "s_client", "-connect", f"{host}:{port}", "-servername",
                       "localhost", "-ign_eof", "-no_ticket", *psk, *offer]  # fmt: skip
        return Side(role, name, command)
    priority = _gnutls_priority(options)
    if priority is None:
        return f"{name} cannot be pinned to this point's group or suite"
    # TLS 1.3: the key exchange keyword is the mode; TLS 1.2: the tlsbench side pins the
    # suite, whose key exchange must be among the program's.
    group = point_group(options)
    dhe = "DHE-PSK" if group.startswith("ffdhe") else "ECDHE-PSK"
    priority += ":-KX-ALL:+" + ("PSK" if kx == "psk" else dhe)
    if tls == "1.2":
        priority += ":+SHA256:+SHA384"  # the CBC suites' MACs, which NORMAL leaves out
    if role == "server":
        passwd = scratch / "psk.passwd"
        passwd.write_text(f"{PSK_IDENTITY}:{PSK_KEY_HEX}\n")
        command = ["gnutls-serv", "--port", str(port), "--http", "--pskpasswd", str(passwd),
                   "--priority", priority, "--noticket"]  # fmt: skip
    else:
        command = ["gnutls-cli", "--port", str(port), host, "--sni-hostname", "localhost",
                   "--priority", priority, "--pskusername", PSK_IDENTITY, "--pskkey",
                   PSK_KEY_HEX]  # fmt: skip
    return Side(role, name, command)


def program_side(name: str, options: dict[str, Any], port: int | None, connections: int,
                 scratch: Path, host: str = "127.0.0.1") -> Side | str:  # fmt: skip
    """A real program as the peer, or the reason it cannot play this point."""
    kx = point_kx(options)
    if kx in PSK_KX and name not in PSK_PROGRAMS:
        return f"{name} is run with certificates only (no pre-shared key)"
    executable = program_executable(name)
    if pinned_program(name):
        executable = openssl_executable(name)
    elif shutil.which(executable) is None and not Path(f"/usr/sbin/{executable}").exists():
        return f"{name} is not installed (Debian package {PROGRAM_PACKAGES[name]})"
    if int(options.get("chain", 1)) != 1:
        return f"{name} is run with a one-certificate chain only"
    if options.get("resume") == "on":
        return f"{name} starts one process per connection here: nothing to resume"
    if kx in PSK_KX:
        return _psk_program(name, executable, options, kx, port, connections, scratch, host)
    auth = str(options.get("auth", "server"))
    chain, key = _cert_file(options, "server-chain1.pem"), _cert_file(options, "server.key")
    client_chain, client_key = (_cert_file(options, "client-chain1.pem"),
                                _cert_file(options, "client.key"))  # fmt: skip
    ca = _cert_file(options, "ca.pem")
    role = program_role(name)
    if name in OPENSSL_SERVERS:
        offer = _openssl_offer(options, executable)
        if isinstance(offer, str):
            return offer
        command = [executable, "s_server", "-accept", f"{host}:{port}", "-naccept",
                   str(connections), "-www", "-cert", chain, "-key", key, "-num_tickets", "0",
                   "-no_ticket", *offer]  # fmt: skip
        if auth == "mutual":
            command += ["-Verify", "1", "-verify_return_error", "-CAfile", ca]
    elif name == "gnutls-serv":
        if options.get("key_share"):
            return ("gnutls-serv is run with GnuTLS's NORMAL groups: it accepts the client's "
                    "first key share, so no HelloRetryRequest")  # fmt: skip
        priority = _gnutls_priority(options)
        if priority is None:
            return f"{name} cannot be pinned to this point's group, suite or signature scheme"
        command = ["gnutls-serv", "--port", str(port), "--http", "--x509certfile", chain,
                   "--x509keyfile", key, "--priority", priority, "--noticket"]  # fmt: skip
        if auth == "mutual":
            command += ["--require-client-cert", "--verify-client-cert", "--x509cafile", ca]
    elif name == "nginx":
        offer = _openssl_offer(options)
        if isinstance(offer, str):
            return offer
        command = nginx_command({**options, "group": point_group(options)}, port, scratch, host)
    elif name == "curl":
        tls = str(options.get("tls", "1.3"))
        # The body goes to a file (checked afterwards); stdout says how fast it came.
        command = ["curl", "--silent", "--show-error", "--fail", "--http1.0",
                   "--speed-limit", "1", "--speed-time", str(PEER_TIMEOUT_S),
                   f"--tlsv{tls}", "--tls-max", tls, "--resolve", f"localhost:{port}:{host}",
                   "--output", str(scratch / "curl-body"), "--write-out", "%{speed_download}",
                   f"https://localhost:{port}/{response_size(options)}"]  # fmt: skip
        command += ["--cacert", ca] if auth != "none" else ["--insecure"]
        if auth == "mutual":
            command += ["--cert", client_chain, "--key", client_key]
    elif name in OPENSSL_CLIENTS:
        offer = _openssl_offer(options, executable)
        if isinstance(offer, str):
            return offer
        command = [executable, "s_client", "-connect", f"{host}:{port}", "-servername",
                   "localhost", "-ign_eof", "-no_ticket", *offer]  # fmt: skip
        if auth != "none":
            command += ["-CAfile", ca, "-verify_return_error", "-verify_hostname", "localhost"]
        if auth == "mutual":
            command += ["-cert", client_chain, "-key", client_key]
    else:  # gnutls-cli
        priority = _gnutls_priority(options)
        if priority is None:
            return f"{name} cannot be pinned to this point's group, suite or signature scheme"
        command = ["gnutls-cli", "--port", str(port), host, "--sni-hostname",
                   "localhost", "--priority", priority]  # fmt: skip
        command += (["--x509cafile", ca, "--verify-hostname", "localhost"] if auth != "none"
                    else ["--insecure"])  # fmt: skip
        if auth == "mutual":
            command += ["--x509certfile", client_chain, "--x509keyfile", client_key]
    return Side(role, name, command)


def nginx_command(options: dict[str, Any], port: int | None, scratch: Path, host: str,
                  workers: int = 1, max_connections: int = 64,
                  keep_env: tuple[str, ...] = ()) -> list[str]:  # fmt: skip
    """nginx (Debian's) in the foreground with a configuration in the scratch folder: the
    point's certificate, version, suite, group and signature scheme, no tickets and no
    session cache, and the response body as a file named after its size. `workers` worker
    processes of `max_connections` each, keep-alive connections never closed by count;
    `keep_env`: variables the workers keep (nginx clears its workers' environment, so an
    OPENSSL_ia32cap would reach the master only)."""
    tls = str(options.get("tls", "1.3"))
    payload = response_size(options)
    www = scratch / "www"
    www.mkdir(exist_ok=True)
    block = _body(26 * 40330).encode()  # whole pattern periods: blocks join seamlessly
    with (www / str(payload)).open("wb") as f:
        for done in range(0, payload, len(block)):
            f.write(block[: min(len(block), payload - done)])
    suite = str(options.get("suite") or "")
    lines = [
        f"listen {host}:{port} ssl;",
        f"ssl_certificate {_cert_file(options, 'server-chain1.pem')};",
        f"ssl_certificate_key {_cert_file(options, 'server.key')};",
        f"ssl_protocols TLSv{tls};",
        "ssl_session_tickets off;",
        "ssl_session_cache off;",
        "ssl_conf_command NumTickets 0;",
        f"root {www};",
    ]
    if suite and tls == "1.3":
        lines.append(f"ssl_conf_command Ciphersuites {suite};")
    elif suite:
        lines.append(f"ssl_ciphers {_openssl_suite_name(suite, 'openssl')}:@SECLEVEL=0;")
    if options.get("group"):
        group = str(options["group"])
        lines.append(f"ssl_ecdh_curve {OPENSSL_GROUPS.get(group, group)};")
    if options.get("sigalg"):
        lines.append(f"ssl_conf_command SignatureAlgorithms {options['sigalg']};")
    if str(options.get("auth", "server")) == "mutual":
        lines += ["ssl_verify_client on;",
                  f"ssl_client_certificate {_cert_file(options, 'ca.pem')};"]  # fmt: skip
    temp = " ".join(f"{kind}_temp_path {scratch / kind};"
                    for kind in ("client_body", "proxy", "fastcgi", "uwsgi", "scgi"))  # fmt: skip
    config = scratch / "nginx.conf"
    config.write_text(
        # `user root`: the workers read the body from the scratch folder (mode 0700).
        f"user root;\nworker_processes {workers};\npid {scratch / 'nginx.pid'};\n"
        + "".join(f"env {name};\n" for name in keep_env)
        + f"error_log {scratch / 'error.log'};\n"
        f"events {{ worker_connections {max_connections}; }}\n"
        # keepalive_requests: nginx closes a connection after 1000 requests by default,
        # which would turn a keep-alive load into reconnections.
        f"http {{\n  access_log off;\n  keepalive_requests 1000000000;\n  {temp}\n"
        "  server {\n    " + "\n    ".join(lines) + "\n  }\n}\n"
    )
    return ["nginx", "-e", str(scratch / "error.log"), "-p", str(scratch), "-c", str(config),
            "-g", "daemon off;"]  # fmt: skip


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


def _body(length: int) -> str:
    """The body a tlsbench server sends (the pattern of drivers/core/exchange.c)."""
    return "".join(chr(ord("a") + (i * 7) % 26) for i in range(length))


def response_size(options: dict[str, Any]) -> int:
    """What the client asks for: `bytes` for a download, else `payload`."""
    return int(options.get("bytes") or options.get("payload", 1024))


def _pattern_matches(path: Path, size: int) -> bool:
    """The file holds exactly `size` bytes of the body pattern (read in 1 MiB blocks)."""
    block = 26 * 40330  # a whole number of pattern periods, about 1 MiB
    expected = _body(block).encode()
    done = 0
    with path.open("rb") as f:
        while chunk := f.read(block):
            if chunk != expected[: len(chunk)]:
                return False
            done += len(chunk)
    return done == size


def check_program_client(side: Side, options: dict[str, Any], scratch: Path) -> str | None:
    """What a real client printed: the whole response of the tlsbench server, and (for
    s_client) the version and suite it reports. None when all is as asked."""
    payload = response_size(options)
    if side.label == "curl":  # writes the body to a file (and fails on an HTTP error)
        body = scratch / "curl-body"
        ok = body.exists() and _pattern_matches(body, payload)
        body.unlink(missing_ok=True)
        return None if ok else f"curl did not receive the {payload}-byte response body intact"
    if "HTTP/1.0 200 OK" not in side.out:
        return f"{side.label} printed no HTTP 200 response"
    if _body(payload) not in side.out:
        return f"{side.label} did not print the {payload}-byte response body intact"
    if side.label in OPENSSL_CLIENTS:
        # s_client calls a TLS 1.3 handshake with an external PSK "Reused" (OpenSSL counts
        # the PSK as a session); programs here never resume.
        opening = "(?:New|Reused)" if point_kx(options) in PSK_KX else "New"
        m = re.search(rf"^{opening}, (TLSv1\.[23]), Cipher is (\S+)", side.out, re.M)
        tls = "TLSv" + str(options.get("tls", "1.3"))
        if m is None or m.group(1) != tls:
            return f"openssl s_client reports {m.group(1) if m else 'no protocol'}, not {tls}"
    return None


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
        body_any = program and peer not in PATTERN_SERVERS
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
        request = f"GET /{response_size(options)} HTTP/1.0\r\n\r\n"
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
        if side.killed or is_program(side.label) or side.code is None:
            continue
        if codes.get(name) != 0:
            error = (results[name] or {}).get("error") or {}
            errors.append(f"{name} ({side.label}) failed at {error.get('stage', '?')}: "
                          f"{error.get('message', 'no JSON output')}")  # fmt: skip
    # Both sides' errors where both failed: which one caused the other is for the reader.
    failed = "; ".join(errors) or problem
    if failed is None and own is None and all(is_program(s.label) for s in sides.values()):
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
        for key in ("client_hello_bytes", "round_trips"):
            if key in other_wire:
                wire_full[key] = other_wire[key]
        verified.update(((result.get("negotiated") or {}).get("peer_verified")) or {})
    negotiated["peer_verified"] = verified
    wire_full.pop("bytes_received", None)
    own.update(samples=samples, summary=summary, heap=heap, negotiated=negotiated)
    if wire_full:
        own["wire"] = {"full": wire_full}
    own["sides"] = {
        name: {"program": side.label, "kind": "program" if is_program(side.label) else "driver",
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


def program_version(name: str) -> str | None:
    """The version a real program reports (recorded with every interop point)."""
    command = version_command(openssl_executable(name) if name.startswith("openssl") else name)
    try:
        proc = subprocess.run(command, capture_output=True, text=True, check=False, timeout=10)
    except (OSError, subprocess.TimeoutExpired):
        return None
    first = (proc.stdout or proc.stderr).strip().splitlines()[:1]
    return first[0] if first else None
