"""Running a variant's driver: build it if needed, give it certificates, pass options on."""

from __future__ import annotations

import os
import signal
import subprocess
import sys

from tlsbench.builds import arches, certs
from tlsbench.builds.build import Build, Builder
from tlsbench.builds.variants import Catalog, Variant
from tlsbench.core.errors import UserError
from tlsbench.driver import allocators, cpuprofile
from tlsbench.driver.declaration import declared

# Two programs from the same sources: timing without heap accounting in the allocation path,
# and heap accounting (malloc wrapped) whose times are not used.
DRIVER = "tlsbench-driver"
HEAP_DRIVER = "tlsbench-driver-heap"
PROGRAMS = {"time": DRIVER, "heap": HEAP_DRIVER, "locks": DRIVER}
# What `--measure` adds to the driver's own options: locks are counted by the timing driver.
MEASURE_OPTIONS = {"locks": ["--locks"]}


# Variables that change what a library or the allocator does. A driver gets them only when a
# point asks (accel=off sets its own); a stray one in the user's shell would silently change
# every figure of a run.
FILTERED_ENV_PREFIXES = ("OPENSSL_", "GNUTLS_", "NETTLE_", "WOLFSSL_", "MBEDTLS_", "MALLOC_")
# TLSBENCH_ALLOCATOR tells the driver which allocator it must find (allocators.py): only the
# runner sets it, with the preload it goes with.
FILTERED_ENV_NAMES = {"GLIBC_TUNABLES", "LD_PRELOAD", "LD_BIND_NOW", "SSLKEYLOGFILE",
                      "TLSBENCH_ALLOCATOR"}  # fmt: skip


def driver_environment(point_env: dict[str, str]) -> dict[str, str]:
    """The runner's environment without library and allocator switches, plus the CPU
    profile's switches (cpuprofile.py), plus the point's (which win: accel=off hides more)."""
    kept = {
        name: value
        for name, value in os.environ.items()
        if not name.startswith(FILTERED_ENV_PREFIXES) and name not in FILTERED_ENV_NAMES
    }
    return {**kept, **cpuprofile.active_environment(), **point_env}


def runs_tls(scenario: str) -> bool:
    """Whether the driver declares the scenario a TLS one (it then needs certificates)."""
    table = declared().scenario_table
    return scenario in table and table[scenario].has("tls")


def timed_only(scenario: str) -> bool:
    """A scenario the runner measures (instructions) whose figures are times only: no heap
    figures of its own (bulk, aead)."""
    table = declared().scenario_table
    return scenario in table and table[scenario].has("instructions") \
        and not table[scenario].has("heap")  # fmt: skip


def option_value(args: list[str], name: str, default: str) -> str:
    """The value of `--name V` or `--name=V` in a driver argument list."""
    for i, arg in enumerate(args):
        if arg == name and i + 1 < len(args):
            return args[i + 1]
        if arg.startswith(name + "="):
            return arg.split("=", 1)[1]
    return default


def driver_command(
    build: Build, scenario: str, args: list[str], measure: str = "time"
) -> list[str]:
    """The command line of one driver run: `measure` "time" or "heap" picks the program."""
    command = [*build.command(PROGRAMS[measure]), scenario, "--variant", build.variant.name]
    command += [o for o in MEASURE_OPTIONS.get(measure, []) if o not in args]
    if "--cert-dir" not in args and runs_tls(scenario):
        kind = option_value(args, "--cert", "rsa2048")
        if kind in certs.KINDS:  # an unknown kind is the driver's usage error to report
            command += ["--cert-dir", str(certs.cert_dir(kind).parent)]
    return command + args


def allocator_environment(variant: Variant, allocator: str | None,
                          measure: str | None) -> dict[str, str]:  # fmt: skip
    """`drive --allocator`'s environment, refused where it cannot apply (exit 2)."""
    if allocator is None:
        return {}
    if allocator != "glibc" and variant.arch != "x86_64":
        raise UserError(f"--allocator {allocator}: the allocators are x86-64 objects, and "
                        f"{variant.name} is not an x86-64 build")  # fmt: skip
    if measure == "heap":
        raise UserError(f"--allocator {allocator} with --measure heap: "
                        f"{allocators.HEAP_REFUSAL}")  # fmt: skip
    why = allocators.refusal(allocator)
    if why:
        raise UserError(f"--allocator {allocator}: {why}")
    return allocators.environment(allocator)


def drive(
    spec: str,
    scenario: str,
    args: list[str],
    catalog: Catalog | None = None,
    measure: str | None = None,
    replace: bool = False,
    allocator: str | None = None,
) -> int:
    """Runs one driver; `measure` None = "time", or "heap" where time means nothing (armhf
    under qemu-user), where an explicit "time" is refused. `replace`: exec the driver in
    this process (no tlsbench process stays around it). `allocator`: the one the driver
    runs on (allocators.py), read back by the driver."""
    catalog = catalog or Catalog()
    variant = catalog.resolve(spec)
    if not arches.arch(variant.arch).timing:
        if timed_only(scenario):
            raise UserError(  # unsupported (3), as the runner stores such a point
                f"{variant.name}: {scenario} measures time only, and "
                f"{arches.no_timing_reason(variant.arch)}",
                3,
            )
        if measure == "time":
            raise UserError(
                f"{variant.name}: {arches.no_timing_reason(variant.arch)}; "
                "use --measure heap (the default for it)"
            )
        measure = "heap"
        print(
            f"tlsbench: {variant.name} runs under qemu-user: heap figures only; "
            "the times in the driver's output are the emulator's, not an ARM core's",
            file=sys.stderr,
        )
    alloc_env = allocator_environment(variant, allocator, measure)
    build = Builder().build(variant)
    command = driver_command(build, scenario, args, measure or "time")
    if replace:
        # This process becomes the driver: a signal sent to it (a remote runner's SIGTERM
        # that stops a server) reaches the driver, and its output is the driver's own.
        sys.stdout.flush()
        sys.stderr.flush()
        os.execvpe(command[0], command, driver_environment(alloc_env))
    # The user's own switches pass through; a CPU profile adds its own on top of them, and
    # an allocator asked for replaces any preload of the user's.
    env = {**os.environ, **cpuprofile.active_environment(), **alloc_env}
    code = subprocess.run(command, check=False, env=env).returncode
    if code < 0:  # killed by a signal: say which, and exit as a shell would (128 + n)
        try:
            name = signal.Signals(-code).name
        except ValueError:
            name = "an unknown signal"
        print(f"tlsbench: the driver was killed by signal {-code} ({name})", file=sys.stderr)
        return 128 - code
    return code
