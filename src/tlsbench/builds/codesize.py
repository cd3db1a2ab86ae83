"""Code size of what a TLS client and a TLS server link, per built variant.

For each role a minimal program (drivers/embedded/size_<library>.c, the job size_io.h
states: connect, handshake with the server's chain verified, one record each way) is
compiled with -Os and linked statically against the variant's own archives with
-ffunction-sections -fdata-sections and --gc-sections, so only code the role can reach is
counted, then measured with `size` (Berkeley format: text, data, bss).

The library archives are linked exactly as the variant built them: section garbage
collection then drops whole unreferenced sections of those archives (per function where the
build itself used -ffunction-sections, per object file otherwise). Whatever else the build
links is linked statically too and counted (GnuTLS's nettle, hogweed, GMP and libtasn1; the
C++ runtime of BoringSSL, AWS-LC and Botan), except the C library and the compiler's shared
runtime (SHARED_RUNTIME), which every program shares and no library brings. A line that
cannot be linked so says why (NOT_STATIC, or the archive its build links that this machine
does not have) instead of a figure.

Each program must contain its library's real handshake (HANDSHAKE: a symbol of the code
that reads the peer's hello), checked with `nm` on every measurement, and on Linux targets
it runs: `handshake` joins a variant's client and server over loopback.
"""

from __future__ import annotations

import re
import select
import shlex
import subprocess
import tempfile
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from tlsbench.builds import arches, certs
from tlsbench.builds.build import COMPILER, Build
from tlsbench.builds.recipes import system
from tlsbench.builds.variants import Variant
from tlsbench.core import paths
from tlsbench.core.errors import UserError

ROLES = ("client", "server")
SIZE_TOOL = "size"
NM_TOOL = "nm"
CXX = "g++"


@dataclass(frozen=True)
class Program:
    """A library's minimal program: its source (drivers/embedded), its language, and per
    role a pattern that a text symbol of its handshake code matches (as `nm` lists it:
    C++ and Rust names mangled)."""

    source: str
    handshake: dict[str, str]
    cxx: bool = False


# The programs of the libraries with OpenSSL's API are one source (what differs is in it).
PROGRAMS: dict[str, Program] = {
    "mbedtls": Program(
        "size_mbedtls.c",
        {"client": r"^mbedtls_ssl_handshake_client_step$",
         "server": r"^mbedtls_ssl_handshake_server_step$"},
    ),
    "wolfssl": Program("size_wolfssl.c", {"client": r"^DoServerHello$",
                                          "server": r"^DoClientHello$"}),
    "bearssl": Program("size_bearssl.c", {"client": r"^br_ssl_hs_client_run$",
                                          "server": r"^br_ssl_hs_server_run$"}),
    "openssl": Program("size_openssl.c", {"client": r"^tls_process_server_hello$",
                                          "server": r"^tls_process_client_hello$"}),
    "boringssl": Program("size_openssl.c", {"client": r"bssl\d+ssl_client_handshake",
                                            "server": r"bssl\d+ssl_server_handshake"}),
    "awslc": Program("size_openssl.c", {"client": r"bssl\d+ssl_client_handshake",
                                        "server": r"bssl\d+ssl_server_handshake"}),
    "gnutls": Program("size_gnutls.c", {"client": r"^_gnutls13_handshake_client$",
                                        "server": r"^_gnutls13_handshake_server$"}),
    "s2n": Program("size_s2n.c", {"client": r"^s2n_server_hello_recv$",
                                  "server": r"^s2n_client_hello_recv$"}),
    "rustls": Program("size_rustls.c", {"client": r"rustls6client\w*hs",
                                        "server": r"rustls6server\w*hs"}),
    "botan": Program("size_botan.cpp", {"client": r"Botan3TLS\w*Client_Impl_13\w*handle",
                                        "server": r"Botan3TLS\w*Server_Impl_13\w*handle"},
                     cxx=True),
}  # fmt: skip

# TLS libraries whose builds here cannot link a static program, and why (their recipes).
NOT_STATIC = {
    "nss": (
        "NSS links no static program here: its make build (recipes/nss.py) makes shared "
        "libraries only, since NSS loads its PKCS#11 module (softoken) and softoken its crypto "
        "core (freebl) with dlopen; a static NSS needs NSS_STATIC_SOFTOKEN, which only NSS's "
        "gyp build offers"
    ),
}

# Shared by every program and brought by no TLS library: the C library's parts and the
# compiler's shared runtime. Every other library a build links is linked from its archive.
SHARED_RUNTIME = frozenset({"c", "m", "dl", "pthread", "rt", "util", "resolv", "gcc_s"})


@dataclass(frozen=True)
class RoleSize:
    """Bytes of one role's minimal program, as `size` reports them."""

    role: str
    text: int
    data: int
    bss: int

    @property
    def total(self) -> int:
        return self.text + self.data + self.bss


class NotStatic(UserError):
    """A line whose build cannot link a static program: the reason is the message."""

    def __init__(self, message: str) -> None:
        super().__init__(message, exit_code=2)


def supported(library: str) -> bool:
    """Whether a library has a minimal program (the TLS libraries but NSS)."""
    return library in PROGRAMS


def has_tls(library: str) -> bool:
    """Whether code size means something for the library: a TLS library (measured, or
    refused with the reason); the null baseline and HACL* (an AEAD alone) have no TLS."""
    return library in PROGRAMS or library in NOT_STATIC


def refusal(variant: Variant) -> str | None:
    """Why a variant of a TLS library is not measured, where that is known before building
    (None: it is measured, or its build says why not)."""
    return NOT_STATIC.get(variant.library)


def no_tls(variant: Variant) -> UserError:
    return UserError(
        f"{variant.name}: {variant.library} has no TLS (code size is measured for the TLS "
        f"libraries: {', '.join(sorted([*PROGRAMS, *NOT_STATIC]))})"
    )


def measure(build: Build, handshake: bool = False) -> list[RoleSize]:
    """text/data/bss of the client and the server program linked against `build`; with
    `handshake`, the two programs first join over loopback (Linux targets)."""
    with tempfile.TemporaryDirectory(prefix="tlsbench-size-") as work:
        programs = link_programs(build, Path(work))
        if handshake:
            run_handshake(build, programs)
        return sizes(build, programs)


def sizes(build: Build, programs: dict[str, Path]) -> list[RoleSize]:
    """text/data/bss of linked programs (link_programs), client first."""
    tool = arches.arch(build.variant.arch).tool("size", SIZE_TOOL)
    return [_size(role, programs[role], tool) for role in ROLES]


def link_programs(build: Build, folder: Path) -> dict[str, Path]:
    """The client and server programs of `build`, linked into `folder`, each checked to
    contain its library's handshake code."""
    library = build.variant.library
    if library not in PROGRAMS:
        reason = refusal(build.variant)
        raise NotStatic(f"{build.variant.name}: {reason}") if reason else no_tls(build.variant)
    program = PROGRAMS[library]
    target = arches.arch(build.variant.arch)  # armhf: the cross compiler and its `size`
    cc = target.cc(COMPILER)
    if program.cxx:
        if target.cross is not None:
            raise NotStatic(f"{build.variant.name}: its C++ program is linked natively only")
        cc = CXX
    link = dict(build.manifest["link"])
    if build.variant.line.system_package:
        # The machine's library: its build links the shared objects; the archives need
        # what pkg-config's static list adds.
        link["libraries"] = _pkg_config_static(system.PKG_CONFIG_MODULES[library])
    libraries = static_libraries(build.variant.name, link, cc, target)
    source = paths.DRIVERS / "embedded" / program.source
    folder.mkdir(parents=True, exist_ok=True)
    programs = {}
    for role in ROLES:
        out = folder / role
        _link(source, out, link, libraries, server=(role == "server"), cc=cc, cxx=program.cxx)
        _check_handshake(build.variant.name, role, out, program.handshake[role], target)
        programs[role] = out
    return programs


def static_libraries(name: str, link: dict[str, Any], cc: str, target: arches.Arch) -> list[str]:
    """The build's link line with every library but the shared runtime as an archive:
    `-lNAME` becomes the path of libNAME.a; a shared object or a library this machine has no
    archive of refuses the line (NotStatic) with the reason."""
    flags = [*link.get("link_flags", []), *link.get("libraries", [])]
    search = [a.removeprefix("-L") for a in flags if a.startswith("-L")]
    out = []
    for item in link.get("libraries", []):
        if item.startswith("-L"):
            continue
        if re.search(r"\.so(\.\d+)*$", item):
            raise NotStatic(
                f"{name}: its build links the shared library {Path(item).name}, and no "
                "static archive of it"
            )
        lib = re.fullmatch(r"-l(.+)", item)
        if lib is None or lib.group(1) in SHARED_RUNTIME:
            out.append(item)
            continue
        archive = _archive(f"lib{lib.group(1)}.a", search, cc, target)
        if archive is None:
            raise NotStatic(
                f"{name}: its build links {item} (lib{lib.group(1)}), which this machine has as "
                "a shared library only (no static archive)"
            )
        out.append(str(archive))
    return out


def _pkg_config_static(modules: list[str]) -> list[str]:
    """What a program linked statically against the machine's library links: pkg-config's
    `--static` list (the libraries the library's own ones need too)."""
    out = subprocess.run(["pkg-config", "--static", "--libs", *modules],
                         capture_output=True, text=True, check=True)  # fmt: skip
    return shlex.split(out.stdout)


def _archive(filename: str, search: list[str], cc: str, target: arches.Arch) -> Path | None:
    for folder in search:
        if (Path(folder) / filename).is_file():
            return Path(folder) / filename
    # The compiler's own search path (the machine's library folders, the target sysroot's).
    done = subprocess.run([cc, *target.flags, f"-print-file-name={filename}"],
                          capture_output=True, text=True, check=False)  # fmt: skip
    found = Path(done.stdout.strip())
    return found if done.returncode == 0 and found.is_absolute() and found.is_file() else None


def _link(source: Path, program: Path, link: dict[str, Any], libraries: list[str], server: bool,
          cc: str, cxx: bool) -> None:  # fmt: skip
    command = [cc, "-Os", *link.get("c_flags", [])]
    if cxx:
        command += ["-std=c++20", "-static-libstdc++"]
    command += ["-ffunction-sections", "-fdata-sections", "-Wl,--gc-sections"]
    command += [f"-I{d}" for d in link.get("include_dirs", [])]
    command += [f"-D{d}" for d in link.get("defines", [])]
    if server:
        command.append("-DTLSBENCH_SERVER")
    command += [str(source), "-o", str(program), f"-Wl,-Map={program}.map"]
    command += link.get("link_flags", [])
    command += libraries
    # The target's flags come with both the compile and the link flags; gcc refuses a specs
    # file given twice (the Cortex-M targets: newlib's nosys.specs).
    command = [
        a for i, a in enumerate(command) if not a.startswith("--specs=") or a not in command[:i]
    ]
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise UserError(
            f"linking the code-size program {source.name} failed:\n{done.stderr[-2000:]}",
            exit_code=1,
        )


def text_symbols(program: Path, target: arches.Arch) -> list[str]:
    """The names of a program's code symbols (`nm`: types T, t, W, w), as linked."""
    done = subprocess.run([target.tool("nm", NM_TOOL), str(program)],
                          capture_output=True, text=True, check=True)  # fmt: skip
    fields = (line.split() for line in done.stdout.splitlines())
    return [f[2] for f in fields if len(f) == 3 and f[1] in "TtWw"]


def _check_handshake(
    name: str, role: str, program: Path, pattern: str, target: arches.Arch
) -> None:
    """A program without its library's handshake code measures something else: refused."""
    if not any(re.search(pattern, s) for s in text_symbols(program, target)):
        raise UserError(
            f"{name}: the {role} program links no code symbol matching {pattern!r}, the "
            f"library's handshake: its figures would not be a TLS {role}'s",
            exit_code=1,
        )


def _size(role: str, program: Path, tool: str) -> RoleSize:
    done = subprocess.run(
        [tool, "--format=berkeley", str(program)],
        capture_output=True,
        text=True,
        check=True,
    )
    # Two lines: a header, then "text data bss dec hex filename".
    fields = done.stdout.splitlines()[1].split()
    return RoleSize(role=role, text=int(fields[0]), data=int(fields[1]), bss=int(fields[2]))


# -- where the bytes come from ---------------------------------------------------------------

# The linker's own output sections: dynamic symbols and relocations (a position-independent
# program's, for every pointer in the libraries' tables), the PLT and GOT, notes, the unwind
# index. The map charges them to the first object file; here they are the linker's.
LINKER_SECTIONS = re.compile(
    r"^\.(interp|note.*|hash|gnu\.hash|dynsym|dynstr|gnu\.version.*|rela?\..*|plt.*|got.*"
    r"|dynamic|eh_frame_hdr)$"
)
PROGRAM_OBJECTS = "program, crt"  # the program's own object and the C runtime's start files
LINKING = "linker"  # LINKER_SECTIONS
PADDING = "padding"  # alignment between input sections
_MAP_INPUT = re.compile(r"^ (\S+)\s+0x([0-9a-f]+)\s+0x([0-9a-f]+)\s+(\S.*)$")
_MAP_WRAPPED = re.compile(r"^\s+0x([0-9a-f]+)\s+0x([0-9a-f]+)\s+(\S.*)$")
_ARCHIVE_MEMBER = re.compile(r"^(?:.*/)?([^/()]+\.a)\(.*\)$")


@dataclass(frozen=True)
class Origin:
    """Bytes of one role's program that one archive (or the linker, or padding) brought."""

    origin: str  # an archive's file name (libgnutls.a, libstdc++.a), PROGRAM_OBJECTS, LINKING
    text: int
    data: int
    bss: int

    @property
    def total(self) -> int:
        return self.text + self.data + self.bss


def by_archive(build: Build, programs: dict[str, Path]) -> dict[str, list[Origin]]:
    """Per role, the text / data / bss each archive brought into the program, from the
    linker's map of its own link (link_programs writes it), largest first; what no input
    section holds (alignment) is PADDING, so that the rows add up to `size`'s figures."""
    target = arches.arch(build.variant.arch)
    out = {}
    for size in sizes(build, programs):
        program = programs[size.role]
        classes = _section_classes(program, target)
        sums: dict[str, list[int]] = {}
        for output, origin, length in _map_inputs(Path(f"{program}.map")):
            kind = classes.get(output)
            if kind is None:
                continue  # not loaded (.comment, debug sections): `size` leaves it out too
            member = _ARCHIVE_MEMBER.match(origin)
            who = LINKING if LINKER_SECTIONS.match(output) else \
                member.group(1) if member else PROGRAM_OBJECTS  # fmt: skip
            sums.setdefault(who, [0, 0, 0])[("text", "data", "bss").index(kind)] += length
        rows = [Origin(who, *figures) for who, figures in sums.items() if any(figures)]
        rows.sort(key=lambda r: -r.total)
        gap = [size.text - sum(r.text for r in rows), size.data - sum(r.data for r in rows),
               size.bss - sum(r.bss for r in rows)]  # fmt: skip
        out[size.role] = [*rows, Origin(PADDING, *gap)]
    return out


def _map_inputs(path: Path) -> list[tuple[str, str, int]]:
    """(output section, origin, bytes) of every input section a GNU ld map places."""
    lines = path.read_text(errors="replace").splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("Linker script and memory"))
    placed = []
    output = pending = ""
    for line in lines[start + 1 :]:
        if line.startswith(("/DISCARD/", "OUTPUT(")):
            break
        if line and not line[0].isspace():
            output, pending = line.split()[0], ""
            continue
        if line.startswith((" *", "  ")) and not _MAP_WRAPPED.match(line):
            continue  # a script pattern, fill, a symbol's address
        if (found := _MAP_INPUT.match(line)) is not None:
            placed.append((output, found.group(4), int(found.group(3), 16)))
            pending = ""
        elif (wrapped := _MAP_WRAPPED.match(line)) is not None and pending:
            placed.append((output, wrapped.group(3), int(wrapped.group(2), 16)))
            pending = ""
        elif re.fullmatch(r" \S+", line):
            pending = line.strip()  # an input section's name; its figures on the next line
    return placed


def _section_classes(program: Path, target: arches.Arch) -> dict[str, str]:
    """Each loaded output section's column in `size`'s Berkeley format: text (read-only),
    data (writable, in the file), bss (writable, not in the file)."""
    done = subprocess.run([target.tool("readelf", "readelf"), "-SW", str(program)],
                          capture_output=True, text=True, check=True)  # fmt: skip
    classes = {}
    for line in done.stdout.splitlines():
        found = re.match(r"^\s*\[\s*\d+\]\s+(\S+)\s+(\S+)\s+\S+\s+\S+\s+\S+\s+\S+\s+(\S*)", line)
        if found is None or "A" not in found.group(3):
            continue
        name, kind, flags = found.groups()
        classes[name] = "bss" if kind == "NOBITS" else "data" if "W" in flags else "text"
    return classes


# -- the programs at work --------------------------------------------------------------------

HANDSHAKE_CERT = "rsa2048"
HANDSHAKE_TIMEOUT = 60.0  # seconds, per program (qemu-user's armhf programs included)


def run_handshake(build: Build, programs: dict[str, Path], cert: str = HANDSHAKE_CERT,
                  ca: str = "ca.pem", timeout: float = HANDSHAKE_TIMEOUT) -> None:  # fmt: skip
    """The variant's server and client programs once over loopback: the server takes any
    free port and says which, the client connects, both must exit 0 (the client verified
    the chain and the name, and its record came back unchanged). `ca`: the client's trust
    anchor in the certificate set (wrong-ca.pem: the negative control, which must fail)."""
    target = arches.arch(build.variant.arch)
    if target.firmware:
        raise UserError(
            f"{build.variant.name}: a {target.name} program runs on a board, not here; "
            "measure its size without running it",
        )
    folder = certs.cert_dir(cert)
    chain = (folder / "server-chain1.pem").read_text()
    key = (folder / "server.key").read_text()
    anchor = (folder / ca).read_text()
    prefix = target.run_prefix()
    server = subprocess.Popen(
        [*prefix, str(programs["server"]), "0", chain, key],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        port = _port(server, timeout)
        client = subprocess.run(
            [*prefix, str(programs["client"]), port, anchor],
            capture_output=True, text=True, timeout=timeout, check=False,
        )  # fmt: skip
        _, server_err = server.communicate(timeout=timeout)
    except (subprocess.TimeoutExpired, UserError) as exc:
        server.kill()
        server.communicate()
        raise UserError(
            f"{build.variant.name}: the code-size programs did not finish their handshake over "
            f"loopback: {exc}",
            exit_code=1,
        ) from None
    if client.returncode != 0 or server.returncode != 0:
        raise UserError(
            f"{build.variant.name}: the code-size programs' handshake over loopback failed "
            f"(client exit {client.returncode}, server exit {server.returncode})\n"
            f"client: {client.stderr[-1000:]}\nserver: {server_err[-1000:]}",
            exit_code=1,
        )


def _port(server: subprocess.Popen[str], timeout: float) -> str:
    """The port the server program printed once it listens."""
    assert server.stdout is not None
    ready, _, _ = select.select([server.stdout], [], [], timeout)
    line = server.stdout.readline().strip() if ready else ""
    if not line.isdigit():
        raise UserError(f"the server program printed no port ({line!r})")
    return line


def as_rows(build: Build, sizes: list[RoleSize]) -> list[dict[str, Any]]:
    """One row per role, with the variant's name and target (x86-64, i686, armhf, cortex-m4 ...)."""
    target = arches.arch(build.variant.arch).label
    return [
        {"variant": build.variant.name, "target": target, **asdict(s), "total": s.total}
        for s in sizes
    ]
