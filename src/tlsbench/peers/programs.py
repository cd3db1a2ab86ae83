"""The real programs tlsbench runs at the other end of a connection, one class each.

`openssl s_server` / `s_client` (the machine's, or the pinned openssl-3.5.x build's own
`openssl`), `gnutls-serv` / `gnutls-cli`, nginx and curl are interop peers; nginx is also a
load scenario's server and h2load its generator. Each class says, as s2n-tls's test
providers do, how to run it for a point (its command line), what it cannot do for a point
(its refusals, said as a reason, before or when the point runs), how it tells its version
and which Debian package provides it. Nothing else knows a program by name: interop, load,
doctor and findings iterate the registry (PROGRAMS).

A program's offer is pinned to what the point asks where the program can be told: the
protocol version, the group the tlsbench side will check (the point's, or the driver's
default), OpenSSL's programs also the suite and signature scheme, GnuTLS's a TLS 1.3 suite
and the signature scheme; the tlsbench side pins the rest and reads back what was agreed.

Its size (over 600 lines) is the programs' shared vocabulary: every class translates the
same point options (groups, suites, signature schemes, PSK) into its command line, and the
registry at the end lists them all; h2load's report is read back beside its class.
"""

from __future__ import annotations

import functools
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import numpy as np

from tlsbench.builds import certs
from tlsbench.builds.build import Builder
from tlsbench.builds.recipes.openssl import PROGRAM
from tlsbench.builds.variants import Catalog
from tlsbench.core.points import PSK_KX, point_kx

# The pinned build whose own `openssl` program is a peer (its own sources, X25519MLKEM768
# included), beside the machine's OpenSSL 3.0.
PINNED_OPENSSL_LINE = "openssl-3.5.x"
# How long a real client waits for a stalled download (curl's --speed-time).
PEER_TIMEOUT_S = 10
# Where a program is looked for beyond PATH: nginx lives in /usr/sbin, which an unprivileged
# user's PATH may lack.
SBIN = "/usr/sbin"

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
# The pre-shared key of PSK points, as the driver holds it (drivers/core/session.c): a fixed
# test key, never a secret, and its identity; a program that takes one is given the same.
PSK_KEY_HEX = bytes(range(0x10, 0x30)).hex()
PSK_IDENTITY = "tlsbench-device"
# The group a driver checks when the point names none (default_group in the driver core):
# in TLS 1.2 an ECDSA leaf's curve (a mixed kind's leaf too), else x25519.
TLS12_CERT_GROUPS = {"ecdsa-p256": "secp256r1", "ecdsa-p384": "secp384r1"}


# -- what every program shares ------------------------------------------------------------


def point_group(options: dict[str, Any]) -> str:
    """The group the point's tlsbench side will check: a real program is offered that one
    alone, as a tlsbench peer would be (a program left to its own defaults offers others,
    and a side that cannot be held to a group, rustls, or a TLS 1.2 wolfSSL server, which
    takes the client's first curve, would agree on one the run did not ask for)."""
    if options.get("group"):
        return str(options["group"])
    if str(options.get("tls", "1.3")) == "1.2":
        leaf = certs.leaf_algorithm(str(options.get("cert", "rsa2048")))
        return TLS12_CERT_GROUPS.get(leaf, "x25519")
    return "x25519"


def cert_file(options: dict[str, Any], name: str) -> str:
    return str(certs.cert_dir(str(options.get("cert", "rsa2048"))) / name)


def body(length: int) -> str:
    """The body a tlsbench server sends (the pattern of drivers/core/exchange.c)."""
    return "".join(chr(ord("a") + (i * 7) % 26) for i in range(length))


# Whole pattern periods, about 1 MiB: blocks of it join seamlessly.
BODY_BLOCK = 26 * 40330


def response_size(options: dict[str, Any]) -> int:
    """What the client asks for: `bytes` for a download, else `payload`."""
    return int(options.get("bytes") or options.get("payload", 1024))


def pattern_matches(path: Path, size: int) -> bool:
    """The file holds exactly `size` bytes of the body pattern (read in 1 MiB blocks)."""
    expected = body(BODY_BLOCK).encode()
    done = 0
    with path.open("rb") as f:
        while chunk := f.read(BODY_BLOCK):
            if chunk != expected[: len(chunk)]:
                return False
            done += len(chunk)
    return done == size


def openssl_suite_name(suite: str, executable: str = "openssl") -> str | None:
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


def openssl_offer(options: dict[str, Any], executable: str = "openssl") -> list[str] | str:
    """s_server / s_client options pinning version, suite, group and signature scheme, or
    the reason this openssl cannot offer the point."""
    tls = str(options.get("tls", "1.3"))
    args = ["-tls1_3" if tls == "1.3" else "-tls1_2"]
    suite = options.get("suite")
    if suite and tls == "1.3":
        args += ["-ciphersuites", str(suite)]
    elif suite:
        name = openssl_suite_name(str(suite), executable)
        if name is None:
            return f"{executable} does not know {suite}"
        args += ["-cipher", f"{name}:@SECLEVEL=0"]
    group = point_group(options)
    args += ["-groups", OPENSSL_GROUPS.get(group, group)]
    if options.get("sigalg"):
        args += ["-sigalgs", str(options["sigalg"])]
    return args


def gnutls_priority(options: dict[str, Any]) -> str | None:
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


@functools.cache
def _pinned_openssl() -> str:
    """The pinned build's program, found once per process: every connection of every
    point asks, and finding a build hashes its inputs (the whole drivers tree)."""
    build = Builder(quiet=True).build(Catalog().resolve(PINNED_OPENSSL_LINE))
    return str(build.folder / "prefix" / PROGRAM)


# -- the programs ----------------------------------------------------------------------------


class Program:
    """A real program: its name in experiments, the role it plays, where it comes from."""

    name: str = ""
    role: str = ""  # server | client | generator
    executable: str = ""  # the machine's command
    package: str = ""  # the Debian package that provides it ("": built by tlsbench)
    uses: tuple[str, ...] = ()  # the scenarios that run it
    # Its response body is tlsbench's pattern (a tlsbench client then checks every byte).
    serves_pattern: bool = False
    # It takes a pre-shared key (kx = psk | psk_dhe); the others run with certificates only.
    takes_psk: bool = False

    def find(self, path: str | None = None) -> str | None:
        """Where it is installed (PATH, then /usr/sbin), or None."""
        if path is not None:
            return shutil.which(self.executable, path=path)
        return shutil.which(self.executable) or (
            f"{SBIN}/{self.executable}" if Path(f"{SBIN}/{self.executable}").exists() else None
        )

    def program_file(self) -> str:
        """The executable to run."""
        return self.executable

    def missing(self) -> str | None:
        """Why it cannot run here (not installed), or None."""
        if self.find() is None:
            return f"{self.name} is not installed (Debian package {self.package})"
        return None

    def version_command(self, executable: str) -> list[str]:
        """How the executable tells its version."""
        return [executable, "--version"]

    def version(self) -> str | None:
        """The version it reports (recorded with every point that runs it)."""
        try:
            proc = subprocess.run(self.version_command(self.program_file()), capture_output=True,
                                  text=True, check=False, timeout=10)  # fmt: skip
        except (OSError, subprocess.TimeoutExpired):
            return None
        first = (proc.stdout or proc.stderr).strip().splitlines()[:1]
        return first[0] if first else None

    def psk_refusal(self, options: dict[str, Any]) -> str | None:
        """Why it cannot be keyed by the point's pre-shared key, if the point has one."""
        if point_kx(options) in PSK_KX and not self.takes_psk:
            return f"{self.name} is run with certificates only (no pre-shared key)"
        return None

    # The TLS library it runs on, in a refusal's words, and whether that has ML-DSA.
    library_text: str = ""
    post_quantum: bool = False

    def post_quantum_refusal(self, options: dict[str, Any]) -> str | None:
        """Why it cannot run the point's post-quantum certificate set, if it has one."""
        cert = str(options.get("cert", "rsa2048"))
        if cert not in certs.TOOL_KINDS or self.post_quantum:
            return None
        return (f"{self.name} runs on {self.library_text}, which reads no ML-DSA or SLH-DSA "
                f"key or certificate ({cert}): the pinned {PINNED_OPENSSL_LINE} programs "
                "are the real peers that have them")  # fmt: skip

    def refusal(self, options: dict[str, Any]) -> str | None:
        """What this program cannot do for an interop point, whatever the command: a real
        program runs one process per connection with a one-certificate chain, and a
        post-quantum set only where its library has ML-DSA."""
        if (pq := self.post_quantum_refusal(options)) is not None:
            return pq
        if int(options.get("chain", 1)) != 1:
            return f"{self.name} is run with a one-certificate chain only"
        if options.get("resume") == "on":
            return f"{self.name} starts one process per connection here: nothing to resume"
        return None

    def command(self, options: dict[str, Any], port: int | None, connections: int,
                scratch: Path, host: str) -> list[str] | str:  # fmt: skip
        """Its command line for a point, or the reason it cannot offer the point."""
        raise NotImplementedError

    def check_output(self, out: str, options: dict[str, Any], scratch: Path) -> str | None:
        """A client's verdict on what it printed: None when all is as asked."""
        payload = response_size(options)
        if "HTTP/1.0 200 OK" not in out:
            return f"{self.name} printed no HTTP 200 response"
        if body(payload) not in out:
            return f"{self.name} did not print the {payload}-byte response body intact"
        return None


class OpensslProgram(Program):
    """`openssl s_server` / `s_client`: the machine's openssl."""

    executable = "openssl"
    package = "openssl"
    uses = ("interop",)
    takes_psk = True
    library_text = "the machine's OpenSSL 3.0"

    def version_command(self, executable: str) -> list[str]:
        return [executable, "version"]

    def command(self, options: dict[str, Any], port: int | None, connections: int,
                scratch: Path, host: str) -> list[str] | str:  # fmt: skip
        executable = self.program_file()
        offer = openssl_offer(options, executable)
        if isinstance(offer, str):
            return offer
        kx = point_kx(options)
        if kx in PSK_KX:
            return self.psk_command(executable, offer, options, kx, port, connections, host)
        auth = str(options.get("auth", "server"))
        ca = cert_file(options, "ca.pem")
        if self.role == "server":
            command = [executable, "s_server", "-accept", f"{host}:{port}", "-naccept",
                       str(connections), "-www", "-cert", cert_file(options, "server-chain1.pem"),
                       "-key", cert_file(options, "server.key"), "-num_tickets", "0",
                       "-no_ticket", *offer]  # fmt: skip
            if auth == "mutual":
                command += ["-Verify", "1", "-verify_return_error", "-CAfile", ca]
            return command
        command = [executable, "s_client", "-connect", f"{host}:{port}", "-servername",
                   "localhost", "-ign_eof", "-no_ticket", *offer]  # fmt: skip
        if auth != "none":
            command += ["-CAfile", ca, "-verify_return_error", "-verify_hostname", "localhost"]
        if auth == "mutual":
            command += ["-cert", cert_file(options, "client-chain1.pem"),
                        "-key", cert_file(options, "client.key")]  # fmt: skip
        return command

    def psk_command(self, executable: str, offer: list[str], options: dict[str, Any], kx: str,
                    port: int | None, connections: int, host: str) -> list[str] | str:  # fmt: skip
        """Keyed by the pre-shared key (no certificate). A TLS 1.3 external PSK is bound to
        SHA-256 here (s_server / s_client: a TLS_AES_128_GCM_SHA256 session)."""
        tls = str(options.get("tls", "1.3"))
        suite = str(options.get("suite") or "")
        if tls == "1.3" and suite.endswith("SHA384"):
            return (f"{self.name} binds a TLS 1.3 external PSK to SHA-256, and {suite} hashes "
                    "with SHA-384")  # fmt: skip
        psk = ["-psk", PSK_KEY_HEX, "-psk_identity", PSK_IDENTITY]
        if tls == "1.3" and kx == "psk":
            # Allowed, and (3.3 on) preferred by a server; a client offers it beside
            # psk_dhe_ke, never alone: the tlsbench server's readback says which ran.
            psk.append("-allow_no_dhe_kex")
            if self.role == "server" and isinstance(self, PinnedOpenssl):
                psk.append("-prefer_no_dhe_kex")
        if self.role == "server":
            return [executable, "s_server", "-accept", f"{host}:{port}", "-naccept",
                    str(connections), "-www", "-nocert", "-num_tickets", "0", "-no_ticket",
                    *psk, *offer]  # fmt: skip
        return [executable, "s_client", "-connect", f"{host}:{port}", "-servername",
                "localhost", "-ign_eof", "-no_ticket", *psk, *offer]  # fmt: skip

    def check_output(self, out: str, options: dict[str, Any], scratch: Path) -> str | None:
        problem = super().check_output(out, options, scratch)
        if problem is None and self.role == "client":
            # s_client calls a TLS 1.3 handshake with an external PSK "Reused" (OpenSSL
            # counts the PSK as a session); programs here never resume.
            opening = "(?:New|Reused)" if point_kx(options) in PSK_KX else "New"
            m = re.search(rf"^{opening}, (TLSv1\.[23]), Cipher is (\S+)", out, re.M)
            tls = "TLSv" + str(options.get("tls", "1.3"))
            if m is None or m.group(1) != tls:
                return f"openssl s_client reports {m.group(1) if m else 'no protocol'}, not {tls}"
        return problem


class OpensslServer(OpensslProgram):
    name, role = "openssl-s_server", "server"


class OpensslClient(OpensslProgram):
    name, role = "openssl-s_client", "client"


class PinnedOpenssl(OpensslProgram):
    """The `openssl` program of the pinned openssl-3.5.x build (built on first use)."""

    package = ""  # built by tlsbench, never installed
    library_text = f"the pinned {PINNED_OPENSSL_LINE} build"
    post_quantum = True

    def post_quantum_refusal(self, options: dict[str, Any]) -> str | None:
        cert = str(options.get("cert", "rsa2048"))
        if certs.leaf_algorithm(cert).startswith("slh-dsa"):
            return (f"{self.name}: OpenSSL 3.5 has no TLS code point for SLH-DSA, so a {cert} "
                    "leaf signs no handshake (an SLH-DSA CA over an ML-DSA leaf does)")  # fmt: skip
        return None

    def program_file(self) -> str:
        return _pinned_openssl()

    def missing(self) -> str | None:
        return None


class PinnedOpensslServer(PinnedOpenssl):
    name, role = f"{PINNED_OPENSSL_LINE}-s_server", "server"


class PinnedOpensslClient(PinnedOpenssl):
    name, role = f"{PINNED_OPENSSL_LINE}-s_client", "client"


def gnutls_psk_priority(options: dict[str, Any], kx: str) -> str | None:
    """The priority string of a GnuTLS program keyed by the pre-shared key: TLS 1.3's key
    exchange keyword is the mode; in TLS 1.2 the tlsbench side pins the suite, whose key
    exchange must be among the program's."""
    priority = gnutls_priority(options)
    if priority is None:
        return None
    dhe = "DHE-PSK" if point_group(options).startswith("ffdhe") else "ECDHE-PSK"
    priority += ":-KX-ALL:+" + ("PSK" if kx == "psk" else dhe)
    if str(options.get("tls", "1.3")) == "1.2":
        priority += ":+SHA256:+SHA384"  # the CBC suites' MACs, which NORMAL leaves out
    return priority


def gnutls_psk_suite_refusal(name: str, options: dict[str, Any]) -> str | None:
    """GnuTLS binds a TLS 1.3 external PSK to its credentials' hash, SHA-256."""
    suite = str(options.get("suite") or "")
    if str(options.get("tls", "1.3")) == "1.3" and suite.endswith("SHA384"):
        return f"{name} binds a TLS 1.3 external PSK to SHA-256, and {suite} hashes with SHA-384"
    return None


class GnutlsServer(Program):
    name, role, executable, package, uses = "gnutls-serv", "server", "gnutls-serv", \
        "gnutls-bin", ("interop",)  # fmt: skip
    takes_psk = True
    library_text = "the machine's GnuTLS 3.7"

    def command(self, options: dict[str, Any], port: int | None, connections: int,
                scratch: Path, host: str) -> list[str] | str:  # fmt: skip
        kx = point_kx(options)
        if kx in PSK_KX:
            refused = gnutls_psk_suite_refusal(self.name, options)
            priority = gnutls_psk_priority(options, kx)
            if refused or priority is None:
                return refused or f"{self.name} cannot be pinned to this point's group or suite"
            passwd = scratch / "psk.passwd"
            passwd.write_text(f"{PSK_IDENTITY}:{PSK_KEY_HEX}\n")
            return ["gnutls-serv", "--port", str(port), "--http", "--pskpasswd", str(passwd),
                    "--priority", priority, "--noticket"]  # fmt: skip
        if options.get("key_share"):
            return ("gnutls-serv is run with GnuTLS's NORMAL groups: it accepts the client's "
                    "first key share, so no HelloRetryRequest")  # fmt: skip
        priority = gnutls_priority(options)
        if priority is None:
            return f"{self.name} cannot be pinned to this point's group, suite or signature scheme"
        command = ["gnutls-serv", "--port", str(port), "--http",
                   "--x509certfile", cert_file(options, "server-chain1.pem"),
                   "--x509keyfile", cert_file(options, "server.key"), "--priority", priority,
                   "--noticket"]  # fmt: skip
        if str(options.get("auth", "server")) == "mutual":
            command += ["--require-client-cert", "--verify-client-cert", "--x509cafile",
                        cert_file(options, "ca.pem")]  # fmt: skip
        return command


class GnutlsClient(Program):
    name, role, executable, package, uses = "gnutls-cli", "client", "gnutls-cli", \
        "gnutls-bin", ("interop",)  # fmt: skip
    takes_psk = True
    library_text = "the machine's GnuTLS 3.7"

    def command(self, options: dict[str, Any], port: int | None, connections: int,
                scratch: Path, host: str) -> list[str] | str:  # fmt: skip
        kx = point_kx(options)
        if kx in PSK_KX:
            refused = gnutls_psk_suite_refusal(self.name, options)
            priority = gnutls_psk_priority(options, kx)
            if refused or priority is None:
                return refused or f"{self.name} cannot be pinned to this point's group or suite"
            return ["gnutls-cli", "--port", str(port), host, "--sni-hostname", "localhost",
                    "--priority", priority, "--pskusername", PSK_IDENTITY, "--pskkey",
                    PSK_KEY_HEX]  # fmt: skip
        priority = gnutls_priority(options)
        if priority is None:
            return f"{self.name} cannot be pinned to this point's group, suite or signature scheme"
        auth = str(options.get("auth", "server"))
        command = ["gnutls-cli", "--port", str(port), host, "--sni-hostname",
                   "localhost", "--priority", priority]  # fmt: skip
        command += (["--x509cafile", cert_file(options, "ca.pem"), "--verify-hostname",
                     "localhost"] if auth != "none" else ["--insecure"])  # fmt: skip
        if auth == "mutual":
            command += ["--x509certfile", cert_file(options, "client-chain1.pem"),
                        "--x509keyfile", cert_file(options, "client.key")]  # fmt: skip
        return command


class Nginx(Program):
    """Debian's nginx: an interop server (with a real client too) and a load scenario's
    server. It links the machine's OpenSSL, so its library is that of NGINX_LINE."""

    name, role, executable, package, uses = "nginx", "server", "nginx", "nginx-light", \
        ("interop", "load")  # fmt: skip
    serves_pattern = True
    # Its TLS library: the machine's OpenSSL, tlsbench's openssl-system.
    line = "openssl-system"
    library_text = "the machine's OpenSSL 3.0"

    def version_command(self, executable: str) -> list[str]:
        return [executable, "-v"]  # nginx prints it on stderr

    def command(self, options: dict[str, Any], port: int | None, connections: int,
                scratch: Path, host: str) -> list[str] | str:  # fmt: skip
        """As an interop peer: offered the group the tlsbench side checks, as every program."""
        offer = openssl_offer(options)
        if isinstance(offer, str):
            return offer
        return self.configured({**options, "group": point_group(options)}, port, scratch, host)

    def configured(self, options: dict[str, Any], port: int | None, scratch: Path, host: str,
                   workers: int = 1, max_connections: int = 64,
                   keep_env: tuple[str, ...] = ()) -> list[str]:  # fmt: skip
        """nginx in the foreground with a configuration in the scratch folder: the point's
        certificate, version, suite, group and signature scheme, no tickets and no session
        cache, and the response body as a file named after its size. `workers` worker
        processes of `max_connections` each, keep-alive connections never closed by count;
        `keep_env`: variables the workers keep (nginx clears its workers' environment, so
        an OPENSSL_ia32cap would reach the master only)."""
        tls = str(options.get("tls", "1.3"))
        payload = response_size(options)
        www = scratch / "www"
        www.mkdir(exist_ok=True)
        block = body(BODY_BLOCK).encode()
        with (www / str(payload)).open("wb") as f:
            for done in range(0, payload, len(block)):
                f.write(block[: min(len(block), payload - done)])
        suite = str(options.get("suite") or "")
        lines = [
            f"listen {host}:{port} ssl;",
            f"ssl_certificate {cert_file(options, 'server-chain1.pem')};",
            f"ssl_certificate_key {cert_file(options, 'server.key')};",
            f"ssl_protocols TLSv{tls};",
            "ssl_session_tickets off;",
            "ssl_session_cache off;",
            "ssl_conf_command NumTickets 0;",
            f"root {www};",
        ]
        if suite and tls == "1.3":
            lines.append(f"ssl_conf_command Ciphersuites {suite};")
        elif suite:
            lines.append(f"ssl_ciphers {openssl_suite_name(suite, 'openssl')}:@SECLEVEL=0;")
        if options.get("group"):
            group = str(options["group"])
            lines.append(f"ssl_ecdh_curve {OPENSSL_GROUPS.get(group, group)};")
        if options.get("sigalg"):
            lines.append(f"ssl_conf_command SignatureAlgorithms {options['sigalg']};")
        if str(options.get("auth", "server")) == "mutual":
            lines += ["ssl_verify_client on;",
                      f"ssl_client_certificate {cert_file(options, 'ca.pem')};"]  # fmt: skip
        kinds = ("client_body", "proxy", "fastcgi", "uwsgi", "scgi")
        temp = " ".join(f"{kind}_temp_path {scratch / kind};" for kind in kinds)
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


class Curl(Program):
    name, role, executable, package, uses = "curl", "client", "curl", "curl", ("interop",)
    library_text = "the machine's OpenSSL 3.0"

    def command(self, options: dict[str, Any], port: int | None, connections: int,
                scratch: Path, host: str) -> list[str] | str:  # fmt: skip
        tls = str(options.get("tls", "1.3"))
        auth = str(options.get("auth", "server"))
        # The body goes to a file (checked afterwards); stdout says how fast it came.
        command = ["curl", "--silent", "--show-error", "--fail", "--http1.0",
                   "--speed-limit", "1", "--speed-time", str(PEER_TIMEOUT_S),
                   f"--tlsv{tls}", "--tls-max", tls, "--resolve", f"localhost:{port}:{host}",
                   "--output", str(scratch / "curl-body"), "--write-out", "%{speed_download}",
                   f"https://localhost:{port}/{response_size(options)}"]  # fmt: skip
        command += ["--cacert", cert_file(options, "ca.pem")] if auth != "none" else ["--insecure"]
        if auth == "mutual":
            command += ["--cert", cert_file(options, "client-chain1.pem"),
                        "--key", cert_file(options, "client.key")]  # fmt: skip
        return command

    def check_output(self, out: str, options: dict[str, Any], scratch: Path) -> str | None:
        """curl writes the body to a file (and fails on an HTTP error)."""
        payload = response_size(options)
        received = scratch / "curl-body"
        ok = received.exists() and pattern_matches(received, payload)
        received.unlink(missing_ok=True)
        return None if ok else f"curl did not receive the {payload}-byte response body intact"


class H2load(Program):
    """nghttp2's h2load over HTTP/1.1: a load scenario's generator (load.py says what it
    measures and what it cannot)."""

    name, role, executable, package, uses = "h2load", "generator", "h2load", \
        "nghttp2-client", ("load",)  # fmt: skip

    def command(self, options: dict[str, Any], port: int | None, connections: int,
                scratch: Path, host: str) -> list[str] | str:  # fmt: skip
        return "h2load is a load generator (load.py), not an interop peer"

    def load_command(self, options: dict[str, Any], port: int, connections: int, log: Path,
                     duration: int | None, requests: int | None, pattern: str,
                     payload: int) -> list[str]:  # fmt: skip
        """One thread (one core, like tlsbench's generator), offering the point's suite and
        group (its TLS library is the machine's OpenSSL 3.0); by `duration` (-D) or by a
        count of `requests` (-n)."""
        command = ["h2load", "--h1", "-t", "1", "-c", str(connections), f"--log-file={log}"]
        command += ["-D", str(duration)] if duration is not None else ["-n", str(requests)]
        if pattern != "keepalive":
            command += ["-H", "Connection: close"]
        suite = options.get("suite")
        if suite and str(options.get("tls", "1.3")) == "1.3":
            command.append(f"--tls13-ciphers={suite}")
        elif suite:
            command.append(f"--ciphers={openssl_suite_name(str(suite), 'openssl')}")
        if options.get("group"):
            group = str(options["group"])
            command.append(f"--groups={OPENSSL_GROUPS.get(group, group)}")
        return [*command, f"https://127.0.0.1:{port}/{payload}"]


# Every real program, servers then clients then generators (the order error messages list).


# ------------------------------------------------------------------------- h2load's report
# What h2load prints and logs, read back: its summary, its per-request latency log, and
# whether the run did what the point asked.

_UNITS = {"us": 1e-6, "ms": 1e-3, "s": 1.0}


def _seconds(text: str) -> float:
    m = re.fullmatch(r"([\d.]+)(us|ms|s)", text)
    if m is None:
        raise ValueError(f"not a duration: {text!r}")
    return float(m.group(1)) * _UNITS[m.group(2)]


def parse_h2load(out: str) -> dict[str, Any]:
    """The figures h2load prints: wall time, request counts, status codes, the request-time
    statistics (min / max / mean / sd, in µs) and what it negotiated."""
    found: dict[str, Any] = {}
    m = re.search(r"^finished in ([\d.]+(?:us|ms|s)), ([\d.]+) req/s", out, re.M)
    if m:
        found["wall_s"] = _seconds(m.group(1))
        found["req_per_s"] = float(m.group(2))
    m = re.search(r"^requests: (\d+) total, (\d+) started, (\d+) done, (\d+) succeeded, "
                  r"(\d+) failed, (\d+) errored, (\d+) timeout", out, re.M)  # fmt: skip
    if m:
        keys = ("total", "started", "done", "succeeded", "failed", "errored", "timeout")
        found.update({k: int(v) for k, v in zip(keys, m.groups(), strict=True)})
    m = re.search(r"^status codes: (\d+) 2xx, (\d+) 3xx, (\d+) 4xx, (\d+) 5xx", out, re.M)
    if m:
        found["not_2xx"] = sum(int(x) for x in m.groups()[1:])
    m = re.search(r"^traffic: .*?, [\d.]+\w*B \((\d+)\) data", out, re.M)
    if m:
        found["data_bytes"] = int(m.group(1))
    m = re.search(r"^time for request:\s+(\S+)\s+(\S+)\s+(\S+)\s+(\S+)", out, re.M)
    if m:
        found["request_us"] = {k: _seconds(v) * 1e6
                               for k, v in zip(("min", "max", "mean", "sd"), m.groups(),
                                               strict=True)}  # fmt: skip
    printed = (
        ("version", r"^TLS Protocol: TLSv(1\.[23])"),
        ("cipher", r"^Cipher: (\S+)"),
        ("temp_key", r"^Server Temp Key: (.+)$"),
    )
    for key, pattern in printed:
        m = re.search(pattern, out, re.M)
        if m:
            found[key] = m.group(1).strip()
    return found


def percentiles_us(latencies_us: np.ndarray) -> dict[str, float]:
    """p50 / p90 / p99 / p99.9 of raw latencies: the smallest value with at least p % of
    the samples at or below it, as HdrHistogram reads a percentile."""
    return {name: float(np.percentile(latencies_us, q, method="inverted_cdf"))
            for name, q in (("p50", 50), ("p90", 90), ("p99", 99), ("p99.9", 99.9))}  # fmt: skip


def read_h2load_log(path: Path) -> np.ndarray:
    """Per-request durations (µs) of h2load's --log-file (start, status, duration; tabs)."""
    if not path.exists():
        return np.array([], dtype=float)
    values = [float(line.split("\t")[2]) for line in path.read_text().splitlines()
              if line.count("\t") >= 2]  # fmt: skip
    return np.array(values, dtype=float)


def h2load_problem(
    found: dict[str, Any], options: dict[str, Any], payload: int, code: int | None
) -> str | None:
    """Why h2load's run is not a measurement, or None."""
    if "succeeded" not in found:
        return f"h2load printed no request counts (exit {code})"
    errors = found["failed"] + found["timeout"] + found.get("not_2xx", 0)
    if errors or found["succeeded"] == 0 or code != 0:
        return (
            f"h2load: {found['failed']} of {found['total']} requests failed "
            f"({found['errored']} errored, {found['timeout']} timed out, "
            f"{found.get('not_2xx', 0)} not 2xx, {found['succeeded']} succeeded; exit {code})"
        )
    tls = str(options.get("tls", "1.3"))
    if found.get("version") != tls:
        return f"h2load negotiated TLS {found.get('version')}, not {tls}"
    suite = options.get("suite")
    if suite:
        want = str(suite) if tls == "1.3" else openssl_suite_name(str(suite))
        if found.get("cipher") != want:
            return f"h2load negotiated {found.get('cipher')}, not {want}"
    if found.get("data_bytes", 0) < found["succeeded"] * payload:
        return (f"h2load received {found.get('data_bytes')} body bytes for {found['succeeded']} "
                f"responses of {payload}")  # fmt: skip
    return None


NGINX = Nginx()
H2LOAD = H2load()
PROGRAMS: tuple[Program, ...] = (
    OpensslServer(),
    PinnedOpensslServer(),
    GnutlsServer(),
    NGINX,
    OpensslClient(),
    PinnedOpensslClient(),
    GnutlsClient(),
    Curl(),
    H2LOAD,
)
BY_NAME = {p.name: p for p in PROGRAMS}


def is_program(name: str) -> bool:
    return name in BY_NAME


def program(name: str) -> Program:
    return BY_NAME[name]


def playing(role: str, scenario: str) -> tuple[str, ...]:
    """The names of the programs that play `role` in `scenario`, in registry order."""
    return tuple(p.name for p in PROGRAMS if p.role == role and scenario in p.uses)


def version(name: str) -> str | None:
    """The version a real program reports (recorded with every point that runs it)."""
    return BY_NAME[name].version()
