"""`tlsbench drive`: run one scenario with one variant's driver (built if needed). Its arguments
beside its handler.
"""

from __future__ import annotations

import argparse

from tlsbench.cli.common import Verb
from tlsbench.core.errors import UserError

# What `drive --measure` picks: the timing driver, the heap driver, the timing driver with
# lock counting (drive.PROGRAMS; not imported here, to keep start-up light).
MEASURES = ("time", "heap", "locks")
# driver/allocators.py's names (not imported here, to keep start-up light; a unit test
# holds the two equal).
ALLOCATORS = ("glibc", "jemalloc", "tcmalloc", "mimalloc")


def add_arguments(verb: Verb) -> None:
    drive = verb(
        "drive",
        "Run one scenario with one variant's driver (built if needed)",
        "Options after the scenario go to the driver unchanged; `tlsbench drive null info "
        "--help` lists them.",
    )
    drive.add_argument(
        "--measure",
        choices=MEASURES,
        default=None,
        help="time (default): the timing driver, no heap accounting in the allocation path; "
        "heap: the driver that accounts heap per side (its times are not comparable); "
        "locks: the timing driver counting each side's pthread lock calls and contentions "
        "(--locks; handshake and resume); armhf variants run under qemu-user and take heap "
        "only (their default). May also follow the scenario",
    )
    drive.add_argument(
        "--allocator",
        choices=ALLOCATORS,
        default=None,
        help="the allocator the driver runs on: glibc's malloc, or jemalloc, tcmalloc or "
        "mimalloc (Debian's, preloaded); the driver reads back that its malloc comes from it "
        "and fails otherwise. Not with --measure heap (the heap driver's malloc is its own). "
        "May also follow the scenario",
    )
    drive.add_argument(
        "--exec",
        action="store_true",
        help="become the driver (exec it) instead of running it as a child: a signal sent "
        "to this process reaches the driver (how a runner on another host stops a server)",
    )
    drive.add_argument("variant", help="a variant, e.g. openssl-3.5.x or wolfssl-5.7.2:intelasm")
    drive.add_argument(
        "scenario",
        help="one of the driver's scenarios (`tlsbench drive null info --json` declares them)",
    )
    drive.add_argument("driver_args", nargs=argparse.REMAINDER, help="options for the driver")


def run(args: argparse.Namespace) -> int:
    from tlsbench.builds import needs
    from tlsbench.builds.variants import Catalog
    from tlsbench.driver.declaration import declared
    from tlsbench.driver.drive import drive

    known = declared().scenarios
    if args.scenario not in known:
        raise UserError(f"unknown scenario {args.scenario!r}: the driver's are {', '.join(known)}")
    # `--measure` after the scenario is tlsbench's too (the driver has no such option), so
    # that `drive VARIANT handshake --threads 2 --measure locks` reads as it is written.
    driver_args, measure, allocator = list(args.driver_args), args.measure, args.allocator
    if "--measure" in driver_args[:-1]:
        at = driver_args.index("--measure")
        measure = driver_args[at + 1]
        del driver_args[at : at + 2]
    if measure not in (None, *MEASURES):
        raise UserError(f"--measure {measure}: choose one of {', '.join(MEASURES)}")
    if "--allocator" in driver_args[:-1]:
        at = driver_args.index("--allocator")
        allocator = driver_args[at + 1]
        del driver_args[at : at + 2]
    if allocator not in (None, *ALLOCATORS):
        raise UserError(f"--allocator {allocator}: choose one of {', '.join(ALLOCATORS)}")
    job = needs.job_of_driver_args(driver_args)
    if job is not None:  # what a config file leaves out of the job, before anything is built
        needs.refuse_unfit(Catalog().resolve(args.variant), job)
    return drive(args.variant, args.scenario, driver_args, measure=measure,
                 replace=args.exec, allocator=allocator)  # fmt: skip
