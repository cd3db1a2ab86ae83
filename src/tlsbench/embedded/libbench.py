"""`cortex-m --library-bench`: the library's own benchmark program on the firmware board, to show
that `--ops` counts the same code the library's authors time.

wolfCrypt's benchmark (wolfcrypt/benchmark/benchmark.c of the pinned archive) is compiled with
the variant's own headers (its options.h: the firmware build's configuration) and linked with
its libwolfssl.a, the firmware images' startup code and linker script, and a port
(libbench_wolfcrypt.c) whose `current_time()` reads the same SysTick/icount clock as the
firmware images: one benchmark second is a fixed number of instructions, which the image
prints first. The program runs a short embedded configuration (BENCH_EMBEDDED: 2 operations
per public-key benchmark, 25 KiB per cipher or hash, no minimum run time) under the core's QEMU
board with `-icount shift=0`; its printed figures convert back to instructions per operation
(per KiB for ciphers and hashes), which are set against `--ops`' counts of the same
operation.
"""

from __future__ import annotations

import hashlib
import re
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tlsbench.builds import arches
from tlsbench.builds.firmware import FIRMWARE, OPERATIONS, TIMEOUT_SECONDS, Core, linker_script
from tlsbench.builds.sources import Sources
from tlsbench.core import paths
from tlsbench.core.errors import UserError
from tlsbench.embedded.qemu import qemu_command

IMAGE = "library-bench.elf"


@dataclass(frozen=True)
class Program:
    """A library's own benchmark program and how tlsbench builds, runs and reads it."""

    library: str
    source: str  # the benchmark's C file, in the pinned source tree
    port: Path  # tlsbench's port: the clock, the seed, main() and the output channel
    wrapper: str  # C that includes the benchmark's source (with what it must see first)
    defines: tuple[str, ...]
    switches: tuple[str, ...]  # the benchmark's own arguments: only what --ops measures
    rows: dict[str, str]  # the benchmark's row (spaces and brackets folded) -> OPERATIONS
    # Where the benchmark's operation is not exactly --ops' call: what it does differently.
    notes: dict[str, str]


WOLFCRYPT = Program(
    library="wolfssl",
    source="wolfcrypt/benchmark/benchmark.c",
    port=Path(__file__).with_name("libbench_wolfcrypt.c"),
    # The firmware build's options.h says HAVE_THREAD_LS (configure's default), which makes
    # the benchmark's statics thread-local; the board has one thread and no TLS block.
    wrapper=(
        "#include <wolfssl/options.h>\n#undef HAVE_THREAD_LS\n"
        '#include "wolfcrypt/benchmark/benchmark.c"\n'
    ),
    defines=(
        "NO_MAIN_FUNCTION",  # the port's main() reads the arguments over semihosting
        "WOLFSSL_USER_CURRTIME",  # the port's current_time(): the emulated clock
        "BENCH_EMBEDDED",  # 2 operations per public-key benchmark, 25 KiB per cipher
        "BENCH_MIN_RUNTIME_SEC=0.0F",  # only those, however short
        "USE_CERT_BUFFERS_2048",  # keys compiled in: the image has no file system
        "USE_CERT_BUFFERS_256",
    ),
    switches=(
        "-ecc-kg",
        "-ecc",
        "-curve25519-kg",
        "-x25519",
        "-rsa",
        "-aes-gcm",
        "-chacha20-poly1305",
        "-sha256",
    ),
    rows={
        "ECC SECP256R1 256 key gen": "p256_keygen",
        "ECDHE SECP256R1 256 agree": "p256_ecdh",
        "ECDSA SECP256R1 256 sign": "p256_sign",
        "ECDSA SECP256R1 256 verify": "p256_verify",
        "CURVE 25519 key gen": "x25519_keygen",
        "CURVE 25519 agree": "x25519_shared",
        "RSA 2048 public": "rsa2048_public",
        "RSA 2048 private": "rsa2048_private",
        "AES-128-GCM-enc": "aes128gcm_kib",
        "CHA-POLY": "chacha20poly1305_kib",
        "SHA-256": "sha256_kib",
    },
    notes={
        "rsa2048_public": "another key and message: the benchmark's own 2048-bit key and 25 "
        "bytes (--ops: the test server's key, 32 bytes)",
        "chacha20poly1305_kib": "no additional data (--ops: 13 bytes)",
        "sha256_kib": "25 updates of 1 KiB then one final, spread over the 25 KiB (--ops: the "
        "update alone)",
        "aes128gcm_kib": "25 KiB as 25 calls of 1 KiB, the loop's own instructions included",
    },
)
PROGRAMS = {p.library: p for p in (WOLFCRYPT,)}


def program_of(variant: Any) -> Program:
    """The benchmark program of a firmware variant's library, or a usage error."""
    if variant.library not in PROGRAMS:
        raise UserError(
            f"--library-bench: tlsbench runs the library's own benchmark program for "
            f"{', '.join(sorted(PROGRAMS))} only, not {variant.library} ({variant.name})"
        )
    if not variant.arch.startswith("cortex-m"):
        raise UserError(f"--library-bench: the port's clock is the Cortex-M SysTick; "
                        f"{variant.name} is for {variant.arch}")  # fmt: skip
    if variant.line.pin is None:
        raise UserError(f"--library-bench: {variant.name} has no pinned archive to take the "
                        "benchmark program from")  # fmt: skip
    return PROGRAMS[variant.library]


def image(build: Any, core: Core) -> Path:
    """The benchmark image of a built firmware variant: built once per variant build, port and
    program, beside the library build in the cache."""
    variant = build.variant
    program = program_of(variant)
    source_root = Sources().source_dir(variant.line.name)
    benchmark = source_root / program.source
    if not benchmark.exists():
        raise UserError(f"{variant.line.name}'s archive has no {program.source}", exit_code=1)
    target = arches.arch(variant.arch)
    manifest_link = build.manifest["link"]
    inputs = [program.port.read_bytes(), program.wrapper.encode(), benchmark.read_bytes(),
              " ".join((*program.defines, *target.flags)).encode(),
              linker_script(core).encode(),
              *((FIRMWARE / n).read_bytes() for n in ("startup.c", "semihost.c"))]  # fmt: skip
    key = hashlib.sha256(b"\0".join(inputs)).hexdigest()[:16]
    folder = Path(build.folder) / f"library-bench-{key}"
    built = folder / IMAGE
    if built.exists():
        return built
    with paths.building_folder(folder, built, ".library-bench-") as tmp:
        (tmp / "benchmark_wrapper.c").write_text(program.wrapper)
        (tmp / "firmware.ld").write_text(linker_script(core))
        command = [
            target.cc("cc"), *target.flags, "-Os", "-g", "-ffunction-sections",
            "-fdata-sections", *(f"-I{d}" for d in manifest_link.get("include_dirs", [])),
            f"-I{source_root}", f"-I{FIRMWARE}", *(f"-D{d}" for d in program.defines),
            str(FIRMWARE / "startup.c"), str(FIRMWARE / "semihost.c"), str(program.port),
            str(tmp / "benchmark_wrapper.c"), "-T", str(tmp / "firmware.ld"), "-nostartfiles",
            "-Wl,--gc-sections", *manifest_link.get("libraries", []), "-o", str(tmp / IMAGE),
        ]  # fmt: skip
        command = [a for i, a in enumerate(command)
                   if not a.startswith("--specs=") or a not in command[:i]]  # fmt: skip
        done = subprocess.run(command, capture_output=True, text=True, check=False)
        if done.returncode != 0:
            raise UserError(f"building {program.source} for {variant.name} failed:\n"
                            f"{done.stderr[-3000:]}", exit_code=1)  # fmt: skip
    return built


_SYM = re.compile(
    r"^(?P<name>\S.*?)\s+(?P<amount>\d+) (?P<unit>bytes|KiB|MiB) took "
    r"(?P<secs>[\d.]+) seconds,\s+(?P<rate>[\d.]+) (?P<rate_unit>bytes|KiB|MiB)/s"
)
_ASYM = re.compile(r"^(?P<name>\S.*?)\s+(?P<count>\d+) ops took (?P<secs>[\d.]+) sec, avg "
                   r"(?P<ms>[\d.]+) ms")  # fmt: skip
_KIB = {"bytes": 1 / 1024, "KiB": 1.0, "MiB": 1024.0}


def _row_name(text: str) -> str:
    return re.sub(r"[\s\[\]]+", " ", text).strip()


def parse(output: str, program: Program) -> dict[str, Any]:
    """The benchmark's printed rows as instructions per operation (per KiB for ciphers and
    hashes), keyed by OPERATIONS' names; the raw line beside each figure."""
    per_second = re.search(r"^tlsbench: instructions_per_second (\d+)$", output, re.M)
    if per_second is None or "tlsbench: benchmark returned 0" not in output:
        raise UserError(f"the library's benchmark program failed:\n{output[-2000:]}", 1)
    unit = int(per_second.group(1))
    found: dict[str, Any] = {}
    for line in output.splitlines():
        sym, asym = _SYM.match(line), _ASYM.match(line)
        match = sym or asym
        if match is None or _row_name(match.group("name")) not in program.rows:
            continue
        name = program.rows[_row_name(match.group("name"))]
        if sym is not None:
            kib_per_second = float(sym.group("rate")) * _KIB[sym.group("rate_unit")]
            found[name] = {
                "instructions": unit / kib_per_second,
                "line": line.strip(),
                "amount": f"{sym.group('amount')} {sym.group('unit')}",
            }
        elif asym is not None:
            found[name] = {
                "instructions": float(asym.group("ms")) / 1000 * unit,
                "line": line.strip(),
                "amount": f"{asym.group('count')} ops",
            }
    missing = [n for n in program.rows.values() if n not in found]
    if missing:
        raise UserError(f"the library's benchmark printed no row for {', '.join(missing)}:\n"
                        f"{output[-2000:]}", exit_code=1)  # fmt: skip
    return {"instructions_per_second": unit, "ops": found}


def run(image_path: Path, core: Core, program: Program,
        timeout: float = TIMEOUT_SECONDS) -> dict[str, Any]:  # fmt: skip
    """One run of the benchmark image: its rows as instructions per operation."""
    # The image's argv[0] is "firmware" (qemu_command's, as every image's), then the switches.
    command = qemu_command(image_path, core, list(program.switches))
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=timeout,
                              check=False)  # fmt: skip
    except subprocess.TimeoutExpired:
        raise UserError(
            f"the library's benchmark did not finish within {timeout:.0f} s", 1
        ) from None
    return parse(done.stdout + done.stderr, program)


def compare(bench: dict[str, Any], ops: dict[str, Any], program: Program) -> list[dict[str, Any]]:
    """Per operation both measure: the benchmark's instructions, --ops', and their ratio."""
    counted = {op["name"]: op for op in ops["ops"] if "instructions" in op}
    rows = []
    for name, spec in OPERATIONS.items():
        if name not in bench["ops"] or name not in counted:
            continue
        theirs = bench["ops"][name]["instructions"]
        ours = counted[name]["instructions"]
        rows.append({
            "name": name, "label": spec.label, "per": spec.per,
            "library_bench_instructions": round(theirs), "ops_instructions": ours,
            "ratio": theirs / ours, "library_bench_line": bench["ops"][name]["line"],
            "library_bench_amount": bench["ops"][name]["amount"],
            "difference": program.notes.get(name, ""),
        })  # fmt: skip
    return rows
