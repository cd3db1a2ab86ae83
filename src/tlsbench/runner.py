"""Running an experiment: every point, repeated in separate driver processes, stored as it
finishes.

Order: repetition by repetition, and within one, point names in turn with the variants of a
name one after another, so that slow drift of the machine spreads over all variants rather
than biasing the last one. Each driver process has a timeout; a crash, a hang or a failed
check is stored as a failure (exit code or signal, last lines of stderr) and the run goes
on. Each result is committed on its own: `kill -9` loses at most the process that was
running, and `--resume RUN` runs only what is missing.

A shard of a run (`--shard K/N`, shards.py) runs only its own points. Points that mostly
wait (an emulated network) run several at a time, every other point alone (parallel.py).
"""

from __future__ import annotations

import contextlib
import functools
import json
import os
import platform
import random
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tlsbench import arches, certs, cpuprofile, interop, load, parallel, paths, remote
from tlsbench.build import Build, Builder
from tlsbench.dialect import is_postgres, open_database
from tlsbench.doctor import cpu_facts, cpu_flags, measurement_warnings
from tlsbench.drive import TLS_SCENARIOS, driver_command
from tlsbench.errors import UserError
from tlsbench.experiments import Experiment, RunPoint, check_capabilities
from tlsbench.recipes.base import tool_version
from tlsbench.shards import Shard, shard_of
from tlsbench.store import Point, Store, now
from tlsbench.variants import Catalog

STDERR_TAIL_LINES = 20
MIN_FREE_BYTES = 20 * 1024 * 1024

# CPU crypto acceleration switched off at run time, where the library allows it.
# OpenSSL's OPENSSL_ia32cap: word 1 is CPUID.1 ECX:EDX, word 2 CPUID.7 ECX:EBX. Cleared in
# word 1: AES-NI (57), PCLMULQDQ (33), SSSE3 (41), AVX (60); in word 2: BMI1 (3), AVX2 (5),
# BMI2 (8), AVX-512F/DQ/IFMA/BW/VL (16, 17, 21, 30, 31), ADX (19), SHA (29), VAES (41),
# VPCLMULQDQ (42). With AES-NI left on (an earlier mask), AES-GCM only lost its GHASH
# acceleration: `openssl speed -evp aes-128-gcm` gave 370 MB/s against 77 MB/s truly off.
# GnuTLS: GNUTLS_CPUID_OVERRIDE=0x1 switches GnuTLS's own code paths off; nettle (which
# GnuTLS also calls, e.g. for AES and GHASH) has its own run-time selection, switched off
# by NETTLE_FAT_OVERRIDE=none.
OPENSSL_ACCEL_OFF_MASK = "~0x1200020200000000:~0x600E02B0128"
ACCEL_OFF_ENV = {
    "openssl": {"OPENSSL_ia32cap": OPENSSL_ACCEL_OFF_MASK},
    "gnutls": {"GNUTLS_CPUID_OVERRIDE": "0x1", "NETTLE_FAT_OVERRIDE": "none"},
    # AWS-LC reads OPENSSL_ia32cap in OpenSSL's format (crypto/fipsmodule/cpucap).
    "awslc": {"OPENSSL_ia32cap": OPENSSL_ACCEL_OFF_MASK},
    # BoringSSL reads the same variable, in the same two-word format, at its CPU probe.
    "boringssl": {"OPENSSL_ia32cap": OPENSSL_ACCEL_OFF_MASK},
}
# Build features that are the acceleration of libraries without a run-time switch.
ACCEL_FEATURES = {"wolfssl": {"intelasm", "aesni", "sp-asm"}, "mbedtls": set(),
                  "hacl": {"vec128", "vec256"}}  # fmt: skip
# Libraries whose CPU code paths have no switch tlsbench can set and read back.
ACCEL_NO_SWITCH = {
    "rustls": "rustls' crypto providers (aws-lc-rs, ring) pick CPU code paths at run time "
    "with no switch that rustls-ffi exposes or reports",
}


@dataclass
class Outcome:
    status: str  # ok | unsupported | failed
    exit_code: int | None
    signal: int | None
    seconds: float
    output: dict[str, Any] | None
    stderr_tail: str


@dataclass
class Tally:
    ok: int = 0
    unsupported: int = 0
    failed: list[str] = field(default_factory=list)

    def add(self, point: RunPoint, repetition: int, outcome: Outcome) -> None:
        if outcome.status == "ok":
            self.ok += 1
        elif outcome.status == "unsupported":
            self.unsupported += 1
        else:
            why = (f"signal {outcome.signal} ({signal_name(outcome.signal)})"
                   if outcome.signal else f"exit {outcome.exit_code}")  # fmt: skip
            message = ((outcome.output or {}).get("error") or {}).get("message")
            tail = outcome.stderr_tail.strip().splitlines()[-1:] or ["(nothing on stderr)"]
            last = [str(message)] if message else tail
            self.failed.append(f"{point.name} @ {point.variant} rep {repetition + 1}: "
                               f"{why}: {last[0]}")  # fmt: skip


def environment(builder: Builder) -> dict[str, Any]:
    """The machine and software facts stored with every run."""
    cpu = cpu_facts()
    return {
        "cpu": cpu,
        "cpu_flags": " ".join(cpu_flags()),
        "kernel": platform.release(),
        "compiler": builder.compiler(),
        "python": platform.python_version(),
        "date": now(),
        "warnings": measurement_warnings(cpu),
        "commit": commit_id(),
        "cmake": tool_version(["cmake", "--version"]),
        "pinned_cpu": PINNED_CPU,
        "filtered_env": sorted(
            n for n in os.environ if n.startswith(FILTERED_ENV_PREFIXES) or n in FILTERED_ENV_NAMES
        ),
        "cpu_profile": {
            "name": cpuprofile.active().name,
            "environment": cpuprofile.active_environment(),
        },
    }


def machine_facts(env: dict[str, Any]) -> dict[str, Any]:
    """What identifies the machine a result ran on (store.MACHINE_IDENTITY: host, CPU model
    and flags, kernel, tlsbench commit), with other facts worth showing beside them."""
    cpu = env.get("cpu") or {}
    return {
        "host": socket.gethostname(),
        "cpu_model": str(cpu.get("model", "unknown")),
        "cpu_flags": str(env.get("cpu_flags", "")),
        "kernel": str(env.get("kernel", "")),
        "commit_id": str(env.get("commit", "unknown")),
        "cores": cpu.get("cores"),
        "virtualization": cpu.get("virtualization"),
        "compiler": env.get("compiler"),
        "python": env.get("python"),
    }


def result_build_key(point: RunPoint, builds: dict[str, Build]) -> str:
    """The builds a result ran, as `variant=cache key/drivers key` (the peer or generator
    too, where it is a variant), so that a figure traces to its exact binaries."""
    specs = [
        point.variant,
        str(point.options.get("peer", "")),
        str(point.options.get("client", "")),
    ]
    return " ".join(f"{spec}={remote.build_key(builds[spec])}"
                    for spec in dict.fromkeys(s for s in specs if s in builds))  # fmt: skip


def commit_id() -> str:
    proc = subprocess.run(
        ["git", "-C", str(paths.REPO), "describe", "--always", "--dirty", "--abbrev=12"],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    return proc.stdout.strip() or "unknown"


def check_results_location(target: str) -> None:
    """An unwritable or full results location, or a database server that cannot be reached,
    is reported before anything runs."""
    if is_postgres(target):
        open_database(target, readonly=True).close()  # connects, or says why it cannot
        return
    db_path = Path(target)
    folder = db_path.parent
    try:
        folder.mkdir(parents=True, exist_ok=True)
        probe = folder / f".tlsbench-write-test-{os.getpid()}"
        probe.write_bytes(b"x" * 4096)
        probe.unlink()
    except OSError as exc:
        raise UserError(
            f"--db {db_path}: cannot write results to {folder} ({exc.strerror or exc}); "
            "choose another --db (reading verbs work on a read-only store as is)"
        ) from exc
    if shutil.disk_usage(folder).free < MIN_FREE_BYTES:
        raise UserError(
            f"{folder} has less than {MIN_FREE_BYTES // 2**20} MiB free: free some space or "
            "choose another --db",
            1,
        )


def signal_name(number: int) -> str:
    try:
        return signal.Signals(number).name
    except ValueError:
        return f"signal {number}"


def accel_env(point: RunPoint, build: Build) -> tuple[dict[str, str], str | None]:
    """Environment for accel=off, or the reason the library cannot run without it."""
    if point.options.get("accel") != "off":
        return {}, None
    if point.library in ACCEL_OFF_ENV:
        return ACCEL_OFF_ENV[point.library], None
    features = set(build.variant.features)
    if point.library in ACCEL_FEATURES:
        active = features & ACCEL_FEATURES[point.library]
        if point.library == "mbedtls" and "no-asm" not in features:
            return {}, "mbedTLS has no run-time switch: use the mbedtls no-asm variant"
        if active:
            return {}, f"{build.variant.name} is built with {', '.join(sorted(active))}"
        return {}, None  # this build has no acceleration to switch off
    if point.library in ACCEL_NO_SWITCH:
        return {}, ACCEL_NO_SWITCH[point.library]
    return {}, None


# Deterministic mode: which sides' calls are counted, per scenario.
COLLECT_SIDES = {
    "handshake": ("client", "server"),
    "resume": ("client", "server"),
    "records": ("client", "server"),  # client = write (encrypt), server = read (decrypt)
    "bulk": ("client", "server"),
    "aead": ("client",),
}
# Builds whose code valgrind cannot run (it stops them with SIGILL), by (library, feature).
VALGRIND_UNDECODABLE = {
    ("hacl", "vec256"): "valgrind 3.19 cannot decode the register form of VMOVQ (VEX 66 0F D6) "
    "that HACL*'s AVX2 Poly1305 uses (SIGILL in Hacl_MAC_Poly1305_Simd256_load_acc4)",
}
# valgrind runs code tens of times slower than the CPU.
VALGRIND_SLOWDOWN = 50
# Instruction mode only: the library draws its random values from the driver's fixed
# stream, so that two runs do the same work (timing and heap runs keep real randomness).
DETERMINISTIC_ARGS = ["--deterministic"]


def callgrind_prefix(out_file: Path) -> list[str]:
    """callgrind counting only what the driver toggles, with address randomisation off."""
    return [
        "setarch", "-R", "valgrind", "--tool=callgrind", "--collect-atstart=no",
        f"--callgrind-out-file={out_file}",
    ]  # fmt: skip


def callgrind_total(out_file: Path) -> int:
    for line in out_file.read_text().splitlines():
        if line.startswith("totals:"):
            return int(line.split()[1])
    raise ValueError(f"no totals in {out_file}")


def run_instructions(point: RunPoint, build: Build, timeout: float, scratch: Path) -> Outcome:
    """Instruction counts per measured operation and side, identical from run to run."""
    if arches.arch(build.variant.arch).emulator:
        reason = (f"instruction mode runs valgrind on this machine's code; {build.variant.name} "
                  "runs under qemu-user")  # fmt: skip
        return Outcome("unsupported", 3, None, 0.0, {"error": {"message": reason}}, reason)
    undecodable = [VALGRIND_UNDECODABLE[(point.library, f)] for f in build.variant.features
                   if (point.library, f) in VALGRIND_UNDECODABLE]  # fmt: skip
    if undecodable:
        reason = f"instruction mode runs valgrind, and {undecodable[0]}"
        return Outcome("unsupported", 3, None, 0.0, {"error": {"message": reason}}, reason)
    if point.scenario not in COLLECT_SIDES:
        reason = f"instruction mode does not apply to the {point.scenario} scenario"
        return Outcome("unsupported", 3, None, 0.0, {"error": {"message": reason}}, reason)
    if point.scenario == "aead" and not {"aead", "payload"} <= point.options.keys():
        reason = "instruction mode needs an aead point with one aead and one payload"
        return Outcome("unsupported", 3, None, 0.0, {"error": {"message": reason}}, reason)
    iterations = int(point.options.get("iterations", 0)) or None
    outcome: Outcome | None = None
    counts: dict[str, list[float]] = {}
    for side in COLLECT_SIDES[point.scenario]:
        out_file = scratch / f"callgrind.{side}.out"
        outcome = run_driver(
            point,
            build,
            timeout * VALGRIND_SLOWDOWN,
            prefix=callgrind_prefix(out_file),
            extra_env={"TLSBENCH_COLLECT": side},
            extra_args=DETERMINISTIC_ARGS,
        )
        if outcome.status != "ok" or outcome.output is None:
            return outcome
        per = iterations or int(outcome.output["params"]["iterations"])
        counts[f"{side}_instructions"] = [callgrind_total(out_file) / per]
        out_file.unlink()
    assert outcome is not None and outcome.output is not None
    outcome.output["samples"] = counts
    outcome.output["summary"] = {k: {"unit": "instructions"} for k in counts}
    outcome.output["heap"] = None  # valgrind replaces malloc: the driver's counters read 0
    return with_heap_figures(point, build, timeout, outcome)


def with_heap_figures(point: RunPoint, build: Build, timeout: float, counted: Outcome) -> Outcome:
    """Instruction mode: the heap driver's figures (heap and stack per side, allocations)
    beside the counts, from a run of its own outside valgrind (which replaces malloc), so
    that `tlsbench ab --mode instructions` judges heap too. Its times are not kept."""
    if point.scenario not in HEAP_SCENARIOS or counted.output is None:
        return counted
    heap = run_driver(point, build, timeout, measure="heap")
    if heap.status != "ok" or heap.output is None:
        heap.stderr_tail = f"(the heap run, tlsbench-driver-heap)\n{heap.stderr_tail}"
        return heap
    output = counted.output
    output["heap"] = heap.output.get("heap")
    allocs = {k: v for k, v in heap.output.get("samples", {}).items() if k.endswith("_allocs")}
    output["samples"] = {**output["samples"], **allocs}
    output["summary"] = {**output["summary"],
                         **{k: v for k, v in heap.output.get("summary", {}).items()
                            if k in allocs}}  # fmt: skip
    output["measure"] = {"instructions": "tlsbench-driver under callgrind",
                         "heap": "tlsbench-driver-heap", "heap_series": sorted(allocs)}  # fmt: skip
    return Outcome("ok", 0, None, counted.seconds + heap.seconds, output,
                   "\n".join(t for t in (counted.stderr_tail, heap.stderr_tail) if t))  # fmt: skip


# Scenarios whose figures include heap ones (heap per side, allocations per record): their
# repetitions run both drivers. The others (bulk, aead) are timed only.
HEAP_SCENARIOS = {"handshake", "resume", "records"}


def run_time_and_heap(point: RunPoint, build: Build, timeout: float) -> Outcome:
    """One repetition: the timing driver, then (where the scenario has heap figures) the
    heap driver, in separate processes. The stored result carries the timing run's series
    and the heap run's heap figures and allocation counts (never its times), and says which
    program produced what in output["measure"]."""
    if not build.timing:
        return run_heap_only(point, build, timeout)
    timed = run_driver(point, build, timeout, measure="time")
    if timed.status != "ok" or point.scenario not in HEAP_SCENARIOS:
        if timed.output is not None:
            timed.output["measure"] = {"time": "tlsbench-driver"}
        return timed
    heap = run_driver(point, build, timeout, measure="heap")
    if heap.status != "ok" or heap.output is None:
        heap.stderr_tail = f"(the heap run, tlsbench-driver-heap)\n{heap.stderr_tail}"
        return heap
    assert timed.output is not None
    merged = dict(timed.output)
    merged["heap"] = heap.output.get("heap")
    heap_series = {k: v for k, v in heap.output.get("samples", {}).items() if k.endswith("_allocs")}
    merged["samples"] = {**timed.output.get("samples", {}), **heap_series}
    merged["summary"] = {
        **timed.output.get("summary", {}),
        **{k: v for k, v in heap.output.get("summary", {}).items() if k in heap_series},
    }
    merged["measure"] = {
        "time": "tlsbench-driver",
        "heap": "tlsbench-driver-heap",
        "heap_series": sorted(heap_series),
    }
    return Outcome(
        "ok",
        0,
        None,
        timed.seconds + heap.seconds,
        merged,
        "\n".join(t for t in (timed.stderr_tail, heap.stderr_tail) if t),
    )


def run_code_size(point: RunPoint, build: Build) -> Outcome:
    """A code-size point: text / data / bss of the minimal client and server programs linked
    against the variant's archives (codesize.py). Deterministic, so every repetition must
    agree; the runner measures it itself (no driver process)."""
    from tlsbench import codesize

    started = time.monotonic()
    try:
        rows = codesize.as_rows(build, codesize.measure(build))
    except (UserError, OSError, subprocess.CalledProcessError) as exc:
        message = str(exc)
        return Outcome("failed", 1, None, time.monotonic() - started,
                       {"error": {"stage": "code size", "message": message}}, message)  # fmt: skip
    output = {"schema": 1, "variant": build.variant.name, "library": build.variant.library,
              "scenario": "code-size", "params": {}, "code_size": rows, "exit": 0}  # fmt: skip
    return Outcome("ok", 0, None, time.monotonic() - started, output, "")


def run_firmware(point: RunPoint, build: Build, timeout: float) -> Outcome:
    """A repetition of a firmware variant (a Cortex-M core): one handshake of its image under
    qemu-system-arm; instructions per side (deterministic), heap and stack per side, and
    the one-role images' sizes (cortexm.run_point)."""
    from tlsbench import cortexm

    started = time.monotonic()
    status, output, message = cortexm.run_point(point.scenario, point.options, build, timeout)
    code = {"ok": 0, "unsupported": 3}.get(status, 1)
    return Outcome(status, code, None, time.monotonic() - started, output, message)


# What the driver reports about its clocks: meaningless under emulation, so not stored.
CLOCK_FIELDS = ("calibration", "tsc_hz", "tsc_overhead_cycles", "tsc_step_ns",
                "thread_cpu_overhead_ns")  # fmt: skip


def run_heap_only(point: RunPoint, build: Build, timeout: float) -> Outcome:
    """A repetition of a variant whose programs run under emulation (armhf on qemu-user):
    the heap driver only. Its heap figures and allocation counts are stored; its time series
    and clock facts are dropped (they time the emulator), and output["measure"] says so.
    Timed-only scenarios (bulk, aead) are unsupported there."""
    reason = arches.no_timing_reason(build.variant.arch)
    if point.scenario not in HEAP_SCENARIOS:
        message = f"{point.scenario} measures time only, and {reason}"
        return Outcome("unsupported", 3, None, 0.0, {"error": {"message": message}}, message)
    heap = run_driver(point, build, timeout, measure="heap")
    if heap.status != "ok" or heap.output is None:
        heap.stderr_tail = f"(the heap run, tlsbench-driver-heap)\n{heap.stderr_tail}"
        return heap
    output = {k: v for k, v in heap.output.items() if k not in CLOCK_FIELDS}
    heap_series = {k: v for k, v in output.get("samples", {}).items() if k.endswith("_allocs")}
    output["samples"] = heap_series
    output["summary"] = {k: v for k, v in output.get("summary", {}).items() if k in heap_series}
    output["measure"] = {
        "time": None,
        "heap": "tlsbench-driver-heap",
        "heap_series": sorted(heap_series),
        "time_not_measured": reason,
    }
    return Outcome("ok", 0, None, heap.seconds, output, heap.stderr_tail)


# Variables that change what a library or the allocator does. A driver gets them only when a
# point asks (accel=off sets its own); a stray one in the user's shell would silently change
# every figure of a run.
FILTERED_ENV_PREFIXES = ("OPENSSL_", "GNUTLS_", "NETTLE_", "WOLFSSL_", "MBEDTLS_", "MALLOC_")
FILTERED_ENV_NAMES = {"GLIBC_TUNABLES", "LD_PRELOAD", "LD_BIND_NOW", "SSLKEYLOGFILE"}


def driver_environment(point_env: dict[str, str]) -> dict[str, str]:
    """The runner's environment without library and allocator switches, plus the CPU
    profile's switches (cpuprofile.py), plus the point's (which win: accel=off hides more)."""
    kept = {
        name: value
        for name, value in os.environ.items()
        if not name.startswith(FILTERED_ENV_PREFIXES) and name not in FILTERED_ENV_NAMES
    }
    return {**kept, **cpuprofile.active_environment(), **point_env}


def pinning_cpu() -> int | None:
    """The CPU drivers are pinned to: the last one this process may use, as CPU 0 takes most
    interrupts; None where there is only one or the machine does not allow pinning."""
    try:
        allowed = sorted(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return None
    return allowed[-1] if len(allowed) > 1 else None


def run_driver(
    point: RunPoint,
    build: Build,
    timeout: float,
    prefix: list[str] | None = None,
    extra_env: dict[str, str] | None = None,
    measure: str = "time",
    extra_args: list[str] | None = None,
) -> Outcome:
    env, refused = accel_env(point, build)
    if refused:
        return Outcome("unsupported", 3, None, 0.0, {"error": {"message": refused}}, refused)
    args = [*point.driver_args(), *(extra_args or []), "--json"]
    command = driver_command(build, point.scenario, args, measure)
    command = [*(prefix or []), *command]
    env = {**env, **(extra_env or {})}
    started = time.monotonic()
    proc = subprocess.Popen(
        command,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=driver_environment(env),
        start_new_session=True,  # a timeout kills the whole process group
        preexec_fn=_pin if PINNED_CPU is not None else None,
    )
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        out, err = proc.communicate()
        err += f"\ntlsbench: killed after the {timeout:.0f} s timeout"
    except BaseException:
        # Interrupted (SIGINT, SIGTERM): the driver runs in its own session, so nothing
        # else would stop it; it must not outlive the runner.
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
        raise
    seconds = time.monotonic() - started
    tail = "\n".join(err.strip().splitlines()[-STDERR_TAIL_LINES:])
    code = proc.returncode
    sig = -code if code < 0 else None
    output = None
    try:
        output = json.loads(out) if out.strip() else None
    except json.JSONDecodeError:
        tail += "\ntlsbench: the driver's output is not valid JSON"
        return Outcome("failed", code if sig is None else None, sig, seconds, None, tail)
    if output is not None and env:
        output["run_env"] = env
    if code == 0 and output is not None:
        return Outcome("ok", 0, None, seconds, output, tail)
    status = "unsupported" if code == 3 else "failed"
    return Outcome(status, code if sig is None else None, sig, seconds, output, tail)


PINNED_CPU = pinning_cpu()


def _pin() -> None:
    """In the child before exec: one CPU, so that the scheduler does not move the driver
    between cores in the middle of a timed region."""
    if PINNED_CPU is not None:
        with contextlib.suppress(OSError):
            os.sched_setaffinity(0, {PINNED_CPU})


class Progress:
    """One line on stderr: points done / total, failures, ETA, what runs now."""

    def __init__(self, total: int, quiet: bool = False) -> None:
        self.total = total
        self.done = 0
        self.started = time.monotonic()
        self.quiet = quiet
        self.tty = sys.stderr.isatty()

    def show(self, what: str, failed: int) -> None:
        if self.quiet:
            return
        elapsed = time.monotonic() - self.started
        eta = ""
        if self.done:
            remaining = elapsed / self.done * (self.total - self.done)
            eta = f" ETA {int(remaining // 60)}m{int(remaining % 60):02d}s"
        width = 24
        filled = int(width * self.done / max(self.total, 1))
        bar = "#" * filled + "." * (width - filled)
        failures = f" {failed} failed" if failed else ""
        line = f"[{bar}] {self.done}/{self.total}{failures}{eta}  {what}"
        if self.tty:
            print("\r\x1b[2K" + line[:160], end="", file=sys.stderr, flush=True)
        else:
            print(line, file=sys.stderr, flush=True)

    def finish(self) -> None:
        if self.tty and not self.quiet:
            print(file=sys.stderr)


def interleaved(points: list[RunPoint]) -> list[RunPoint]:
    return sorted(points, key=lambda p: (p.scenario, p.name, p.variant))


def run_order(points: list[Point], repetitions: int, seed: int) -> list[tuple[int, Point]]:
    """(repetition, point) in the order they run: repetition by repetition, so that every
    round spans the whole run's time, and the points of each round shuffled by the run's
    seed, so that no point or library is always first or always after the same neighbour.
    The same seed gives the same order (resume follows it)."""
    rng = random.Random(seed)
    order = []
    for repetition in range(repetitions):
        round_ = list(points)
        rng.shuffle(round_)
        order += [(repetition, p) for p in round_]
    return order


def build_description(point: RunPoint, builds: dict[str, Build]) -> dict[str, Any]:
    """What a point's figures come from: its variant's build, and an interop peer's."""
    described = builds[point.variant].describe()
    peer = str(point.options.get("peer", ""))
    if point.scenario == "interop" and peer in builds:
        described["peer"] = builds[peer].describe()
    elif point.scenario == "interop":
        described["peer"] = {"program": peer, "version": interop.program_version(peer)}
        if interop.pinned_program(peer) and interop.PINNED_OPENSSL_LINE in builds:
            # The program is the pinned build's own: trace it to that build.
            described["peer"]["build"] = builds[interop.PINNED_OPENSSL_LINE].describe()
    if point.scenario == "interop" and point.options.get("server") == "nginx":
        described["server"] = {"program": "nginx", "version": interop.program_version("nginx")}
    if point.scenario == "load":
        client = str(point.options.get("client", ""))
        described["client"] = (
            builds[client].describe()
            if client in builds
            else {"program": client, "version": interop.program_version(client)}
        )
        if point.options.get("server") == "nginx":
            described["server"] = {"program": "nginx",
                                   "version": interop.program_version("nginx")}  # fmt: skip
    return described


def refuse_impossible(points: list[RunPoint], builds: dict[str, Build]) -> None:
    """Refuses, before anything is stored or runs, what a build declares it can never run:
    TLS points (an interop peer included) of a variant whose driver's `info` declares no TLS
    version, an AEAD-only library (experiments.check_capabilities)."""
    # Firmware images (Cortex-M) have no driver to ask: their points say what they refuse.
    users = [spec for spec in tls_variants(points)
             if spec in builds and not arches.arch(builds[spec].variant.arch).firmware]  # fmt: skip
    check_capabilities(points, {spec: builds[spec].info() for spec in users})


def tls_variants(points: list[RunPoint]) -> list[str]:
    """The variants that run TLS in these points (interop peers included; not programs)."""
    specs = [spec for p in points if p.scenario not in ("aead", "code-size")
             for spec in (p.variant, str(p.options.get("peer", "")),
                          str(p.options.get("client", "")))]  # fmt: skip
    return [
        s
        for s in dict.fromkeys(specs)
        if s and not interop.is_program(s) and s not in load.GENERATOR_PROGRAMS
    ]


class Runner:
    def __init__(self, store: Store, builder: Builder | None = None, quiet: bool = False):
        self.store = store
        self.mode = "time"
        self.builder = builder or Builder(quiet=quiet)
        self.quiet = quiet
        self.catalog = Catalog()
        self.machine_id: int | None = None
        # Points that mostly wait run several at a time (parallel.py); False: one at a time.
        self.parallel_waiting = True

    def prepare(self, points: list[RunPoint]) -> dict[str, Build]:
        """Builds every variant and makes every certificate the points need, up front."""
        builds = {}
        # The peers of interop points are built too (real programs need no build).
        peers = [str(p.options["peer"]) for p in points if p.scenario == "interop"]
        # A pinned program (openssl-3.5.x-s_server) is its line's build.
        peers = [interop.PINNED_OPENSSL_LINE if interop.pinned_program(p) else p for p in peers]
        # The load generators that are variants.
        peers += [str(p.options["client"]) for p in points if p.scenario == "load"
                  and p.options.get("client") not in load.GENERATOR_PROGRAMS]  # fmt: skip
        for spec in dict.fromkeys([*(p.variant for p in points), *peers]):
            if interop.is_program(spec) or spec in load.GENERATOR_PROGRAMS:
                continue
            builds[spec] = self.builder.build(self.catalog.resolve(spec))
        refuse_impossible(points, builds)
        kinds = {str(p.options.get("cert", "rsa2048")) for p in points
                 if p.scenario in TLS_SCENARIOS or p.scenario in ("interop", "load")}  # fmt: skip
        certs.ensure_all(sorted(kinds), progress=not self.quiet)
        return builds

    def start(
        self,
        experiment: Experiment,
        points: list[RunPoint],
        repetitions: int,
        timeout: float | None = None,
        seed: int | None = None,
        shard: Shard | None = None,
        run_key: str | None = None,
    ) -> int:
        """Makes the run (builds, certificates, the run and its points in the store), or,
        for a shard whose run another shard made already (same `run_key`), joins it."""
        builds = self.prepare(points)
        env = environment(self.builder)
        env["order_seed"] = seed if seed is not None else random.SystemRandom().randrange(2**32)
        count = shard.count if shard else 1
        settings = {
            "experiment": experiment.name, "question": experiment.question, "mode": self.mode,
            "repetitions": repetitions, "experiment_text": experiment.text,
            "commit_id": commit_id(), "shard_count": count,
            "timeout": timeout if timeout is not None else experiment.timeout,
        }  # fmt: skip
        stored = [
            {"name": p.name, "variant": p.variant, "library": p.library,
             "scenario": p.scenario, "params": {"scenario": p.scenario, **p.options},
             "build": build_description(p, builds), "shard": shard_of(position, count)}
            for position, p in enumerate(interleaved(points))
        ]  # fmt: skip
        run_id, joined = self.store.start_or_join(run_key, settings, stored, env)
        if joined:
            self.check_same_builds(run_id)
        if not self.quiet:
            part = f", shard {shard}" if shard else ""
            verb = "joined" if joined else "started"
            print(f"run {run_id} ({verb}{part}): {experiment.name}, {len(points)} points x "
                  f"{repetitions} repetitions -> {self.store.path}", file=sys.stderr)  # fmt: skip
        return run_id

    def run_interop(self, point: RunPoint, builds: dict[str, Build], timeout: float) -> Outcome:
        """Client and server in two processes (interop.py); the peer is another variant's
        driver or a real program."""
        peer = str(point.options["peer"])
        peer_build = None
        if not interop.is_program(peer):
            if peer not in builds:
                builds[peer] = self.builder.build(self.catalog.resolve(peer))
            peer_build = builds[peer]
        for build in (builds[point.variant], peer_build):
            if build is not None and not arches.ARCHES[build.variant.arch].timing:
                # Two processes timed against each other: not under emulation.
                reason = arches.no_timing_reason(build.variant.arch)
                message = f"interop measures time, and {reason}"
                return Outcome("unsupported", 3, None, 0.0, {"error": {"message": message}},
                               message)  # fmt: skip
        result = interop.run_point(point.options, builds[point.variant], peer_build, timeout,
                                   driver_environment({}))  # fmt: skip
        return Outcome(result.status, result.exit_code, None, result.seconds, result.output,
                       result.stderr_tail)  # fmt: skip

    def run_load(self, point: RunPoint, builds: dict[str, Build], timeout: float) -> Outcome:
        """A server and a load generator in two processes (load.py); accel = "off" applies
        to the server (the generator stays a fixed, fast client)."""
        client = str(point.options["client"])
        client_build = None
        if client not in load.GENERATOR_PROGRAMS:
            if client not in builds:
                builds[client] = self.builder.build(self.catalog.resolve(client))
            client_build = builds[client]
        for build in (builds[point.variant], client_build):
            if build is not None and not arches.ARCHES[build.variant.arch].timing:
                message = f"load measures time, and {arches.no_timing_reason(build.variant.arch)}"
                return Outcome("unsupported", 3, None, 0.0, {"error": {"message": message}},
                               message)  # fmt: skip
        if remote.uses_hosts(point.options):  # server and generators on other hosts
            assert client_build is not None  # remote.refusal: the generator is a variant
            result = remote.run_point(point.options, builds[point.variant], client_build,
                                      timeout, commit_id())  # fmt: skip
            return Outcome(result.status, result.exit_code, None, result.seconds,
                           result.output, result.stderr_tail)  # fmt: skip
        env, refused = accel_env(point, builds[point.variant])
        if refused:
            return Outcome("unsupported", 3, None, 0.0, {"error": {"message": refused}}, refused)
        result = load.run_point(point.options, builds[point.variant], client_build, timeout,
                                env, {})  # fmt: skip
        if result.output is not None and env:
            result.output["run_env"] = env
        return Outcome(result.status, result.exit_code, None, result.seconds, result.output,
                       result.stderr_tail)  # fmt: skip

    def check_same_builds(self, run_id: int) -> None:
        """Resuming with a different build of a variant (or under another CPU profile) would
        mix two builds in one run."""
        stored_profile = json.loads(self.store.run(run_id)["environment"]).get("cpu_profile")
        profile = cpuprofile.active().name
        if (stored_profile or {"name": "native"})["name"] != profile:
            raise UserError(
                f"run {run_id} cannot be resumed: it ran under CPU profile "
                f"{(stored_profile or {'name': 'native'})['name']!r}, and "
                f"${cpuprofile.ENV_VARIABLE} now selects {profile!r}: set it as the run had it"
            )
        for point in self.store.points(run_id):
            stored_key = point.build.get("cache_key")
            current = self.builder.key(self.catalog.resolve(point.variant))
            if stored_key and stored_key != current:
                raise UserError(
                    f"run {run_id} cannot be resumed: variant {point.variant} was built with "
                    f"cache key {stored_key}, and would now be built with {current} (its "
                    "sources, options, compiler or recipe changed). Resuming would mix two "
                    "builds in one run: start a new run instead."
                )
            stored_drivers = point.build.get("drivers_key")
            drivers = self.builder.drivers_key(current)[:16]
            if stored_drivers and stored_drivers != drivers:
                raise UserError(
                    f"run {run_id} cannot be resumed: variant {point.variant}'s driver programs "
                    f"were built with drivers key {stored_drivers}, and would now be built with "
                    f"{drivers} (the drivers/ sources or cmake changed). Resuming would mix two "
                    "driver builds in one run: start a new run instead."
                )

    def execute(self, run_id: int, timeout: float, shard: int = 1) -> Tally:
        """Runs every (point, repetition) of the run's shard without a final result (ok or
        unsupported), as the shard's owner; an interruption marks the shard interrupted."""
        env = environment(self.builder)
        self.machine_id = self.store.machine(machine_facts(env))
        self.store.claim(run_id, shard, self.machine_id)
        stop = threading.Event()
        beat = threading.Thread(target=_heartbeat, args=(self.store.target, run_id, shard, stop))
        beat.start()
        try:
            tally = self._execute(run_id, timeout, shard)
        except BaseException:
            # The heartbeat's connection is closed before the final write: a thread left
            # writing while the process exits can lose that write.
            stop.set()
            beat.join()
            self.store.finish_run(run_id, "interrupted", shard)
            raise
        stop.set()
        beat.join()
        failed = self.store.failed_count(run_id, shard)
        self.store.finish_run(run_id, "failed" if failed else "complete", shard)
        return tally

    def _execute(self, run_id: int, timeout: float, shard: int) -> Tally:
        run = self.store.run(run_id)
        stored = self.store.points(run_id, shard)
        seed = int(json.loads(run["environment"]).get("order_seed", 0))
        done = self.store.done_by_point(run_id)
        todo = [
            (repetition, candidate)
            for repetition, candidate in run_order(stored, run["repetitions"], seed)
            if repetition not in done.get(candidate.id, set())
        ]
        mode = str(run["mode"])
        # Every build before any point runs: points that wait run in threads (parallel.py).
        builds = self.builds_for([as_run_point(p) for _, p in todo])
        tally = Tally()
        progress = Progress(len(todo), self.quiet)
        width = parallel.slots() if self.parallel_waiting else 1

        def work(item: tuple[int, Point]) -> tuple[str, Outcome]:
            started_at = now()
            return started_at, self.run_one(as_run_point(item[1]), builds, timeout, mode)

        def record(item: tuple[int, Point], result: tuple[str, Outcome]) -> None:
            repetition, stored_point = item
            started_at, outcome = result
            point = as_run_point(stored_point)
            if parallel.waits(point.scenario, point.options, mode) and outcome.output:
                outcome.output["scheduling"] = {
                    "waiting_points_at_once": width,
                    "rule": "parallel.py: an emulated link of RTT >= "
                    f"{parallel.WAIT_RTT_MS:g} ms or with loss waits",
                }
            self.store.add_result(
                stored_point.id, repetition, outcome.status, outcome.exit_code, outcome.signal,
                outcome.seconds, started_at, outcome.output, outcome.stderr_tail,
                self.machine_id, result_build_key(point, builds),
            )  # fmt: skip
            progress.done += 1
            tally.add(point, repetition, outcome)
            progress.show(f"{point.name} @ {point.variant} (rep {repetition + 1}) done",
                          len(tally.failed))  # fmt: skip

        def waiting(stored_point: Point) -> bool:
            return width > 1 and parallel.waits(stored_point.scenario, stored_point.params, mode)

        for alone, together in parallel.rounds(todo, waiting):
            for item in alone:
                repetition, stored_point = item
                progress.show(f"{stored_point.name} @ {stored_point.variant} "
                              f"(rep {repetition + 1})", len(tally.failed))  # fmt: skip
                record(item, work(item))
            if together:
                progress.show(f"{len(together)} points that wait, {width} at a time",
                              len(tally.failed))  # fmt: skip
                stop = functools.partial(interop.kill_all, "the run was interrupted")
                interop.allow_starts()
                parallel.run_together(together, width, work, record, abort=stop)
        progress.show("done", len(tally.failed))
        progress.finish()
        return tally

    def builds_for(self, points: list[RunPoint]) -> dict[str, Build]:
        """The builds these points run (variants, interop peers, load generators), and the
        pinned OpenSSL program where a peer is it."""
        builds: dict[str, Build] = {}
        for point in points:
            specs = [point.variant]
            peer = str(point.options.get("peer", ""))
            if point.scenario == "interop" and interop.pinned_program(peer):
                interop.openssl_executable(peer)
            elif point.scenario == "interop" and not interop.is_program(peer):
                specs.append(peer)
            client = str(point.options.get("client", ""))
            if point.scenario == "load" and client not in load.GENERATOR_PROGRAMS:
                specs.append(client)
            for spec in specs:
                if spec and spec not in builds:
                    builds[spec] = self.builder.build(self.catalog.resolve(spec))
        return builds

    def run_one(self, point: RunPoint, builds: dict[str, Build], timeout: float,
                mode: str) -> Outcome:  # fmt: skip
        """One repetition of one point, whatever its scenario."""
        if point.scenario == "code-size":  # the same in every mode: no driver runs
            return run_code_size(point, builds[point.variant])
        if mode == "instructions":
            with tempfile.TemporaryDirectory(prefix="tlsbench-callgrind-") as scratch:
                return run_instructions(point, builds[point.variant], timeout, Path(scratch))
        if point.scenario == "interop":
            return self.run_interop(point, builds, timeout)
        if point.scenario == "load":
            return self.run_load(point, builds, timeout)
        if arches.arch(builds[point.variant].variant.arch).firmware:
            return run_firmware(point, builds[point.variant], timeout)
        return run_time_and_heap(point, builds[point.variant], timeout)


def as_run_point(stored: Point) -> RunPoint:
    """A stored point as the runner runs it (its options without the scenario key)."""
    return RunPoint(stored.name, stored.variant, stored.library, stored.scenario,
                    {k: v for k, v in stored.params.items() if k != "scenario"})  # fmt: skip


HEARTBEAT_S = 5.0


def _heartbeat(target: str, run_id: int, shard: int, stop: threading.Event) -> None:
    """Beats in its own connection while the runner waits on a driver (points can be long)."""
    store = Store(target)
    try:
        while not stop.wait(HEARTBEAT_S):
            store.heartbeat(run_id, shard)
    finally:
        store.close()
