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

import collections
import functools
import json
import os
import platform
import random
import shutil
import socket
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tlsbench import scenarios
from tlsbench.builds import arches, certs, firmware
from tlsbench.builds.build import Build, Builder
from tlsbench.builds.recipes.base import tool_version
from tlsbench.builds.variants import Catalog
from tlsbench.core import credentials, paths, progress
from tlsbench.core.dialect import is_postgres, open_database
from tlsbench.core.errors import UserError
from tlsbench.core.machine import cpu_facts, cpu_flags, measurement_warnings
from tlsbench.core.points import RunPoint
from tlsbench.core.store import Point, Store, now
from tlsbench.driver import cpuprofile, parallel
from tlsbench.driver.drive import FILTERED_ENV_NAMES, FILTERED_ENV_PREFIXES
from tlsbench.driver.process import PINNED_CPU, Outcome, signal_name
from tlsbench.peers import interop, remote
from tlsbench.run.experiments import Experiment, check_capabilities
from tlsbench.run.shards import Shard, shard_of
from tlsbench.scenarios.base import RunContext

MIN_FREE_BYTES = 20 * 1024 * 1024


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
    hidden = cpuprofile.active().absent
    return {
        "cpu": cpu,
        # The extensions the libraries may use: those a CPU profile hides are left out, so
        # that a run under `avx2` on an AVX-512 machine is another machine's figure in the
        # store's identity, and `compare` says how the two differ.
        "cpu_flags": " ".join(f for f in cpu_flags() if f not in hidden),
        "kernel": platform.release(),
        "compiler": builder.compiler(),
        "python": platform.python_version(),
        "date": now(),
        "warnings": measurement_warnings(cpu),
        "commit": paths.commit_id(),
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
        "cpu_profile": (env.get("cpu_profile") or {}).get("name", "native"),
        "cores": cpu.get("cores"),
        "virtualization": cpu.get("virtualization"),
        "compiler": env.get("compiler"),
        "python": env.get("python"),
    }


def credential_kinds(points: list[RunPoint], builds: dict[str, Build]) -> list[str]:
    """The certificate kinds a run's points use: each TLS point's `cert`, and the kinds that
    firmware images carry compiled in."""
    table = scenarios.declared()
    kinds = {str(p.options.get("cert", "rsa2048")) for p in points
             if scenarios.by_scenario(p.scenario).runs_tls(p.scenario, table)}  # fmt: skip
    if any(arches.arch(b.variant.arch).firmware for b in builds.values()):
        kinds.update(firmware.CERTS)
    return sorted(kinds)


def result_build_key(point: RunPoint, builds: dict[str, Build]) -> str:
    """The builds a result ran, as `variant=cache key/drivers key` (the peer or generator
    too, where it is a variant), so that a figure traces to its exact binaries."""
    specs = [point.variant, *family_of(point, builds).peer_variants(point)]
    return " ".join(f"{spec}={remote.build_key(builds[spec])}"
                    for spec in dict.fromkeys(s for s in specs if s in builds))  # fmt: skip


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


class Progress:
    """Points done / total, failures, ETA, what runs now, on stderr. At a terminal: one bar
    redrawn in place. Without one (a CI log): a line per finished point (all its repetitions)
    and a status line at most every core.progress.STATUS_INTERVAL seconds."""

    def __init__(self, total: int, quiet: bool = False) -> None:
        self.total = total
        self.done = 0
        self.started = time.monotonic()
        self.quiet = quiet
        self.tty = progress.interactive()

    def _line(self, what: str, failed: int) -> str:
        elapsed = time.monotonic() - self.started
        eta = ""
        if self.done:
            remaining = elapsed / self.done * (self.total - self.done)
            eta = f" ETA {int(remaining // 60)}m{int(remaining % 60):02d}s"
        width = 24
        filled = int(width * self.done / max(self.total, 1))
        bar = "#" * filled + "." * (width - filled)
        failures = f" {failed} failed" if failed else ""
        return f"[{bar}] {self.done}/{self.total}{failures}{eta}  {what}"

    def show(self, what: str, failed: int, final: bool = False) -> None:
        if self.quiet:
            return
        line = self._line(what, failed)
        if self.tty:
            print("\r\x1b[2K" + line[:160], end="", file=sys.stderr, flush=True)
        elif final:
            progress.event(line)
        else:
            progress.status(line)

    def point_finished(self, what: str, statuses: list[str], failed: int) -> None:
        """A point's last repetition is stored: a line of the log (the bar says it at a
        terminal)."""
        if self.quiet or self.tty:
            return
        counts = ", ".join(f"{statuses.count(s)} {s}" for s in dict.fromkeys(statuses))
        progress.event(self._line(f"{what}: {counts}", failed))

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


def family_of(point: RunPoint, builds: dict[str, Build]) -> scenarios.Family:
    """The family that runs a point (its scenario's, or the one that claims its variant)."""
    if point.variant in builds:
        return scenarios.family_for(point.scenario, builds[point.variant].variant)
    return scenarios.by_scenario(point.scenario)


def build_description(point: RunPoint, builds: dict[str, Build]) -> dict[str, Any]:
    """What a point's figures come from: its variant's build, and what its family adds (an
    interop peer's build or program, a load generator's)."""
    return {**builds[point.variant].describe(), **family_of(point, builds).describe(point, builds)}


def refuse_impossible(points: list[RunPoint], builds: dict[str, Build]) -> None:
    """Refuses, before anything is stored or runs, what a build declares it can never run:
    TLS points (an interop peer included) of a variant whose driver's `info` declares no TLS
    version, an AEAD-only library (experiments.check_capabilities)."""
    # A variant a family claims (a firmware image) has no driver to ask: its points say
    # what they refuse.
    users = [spec for spec in tls_variants(points)
             if spec in builds and not any(f.claims(builds[spec].variant)
                                           for f in scenarios.families())]  # fmt: skip
    check_capabilities(points, {spec: builds[spec].info() for spec in users})


def tls_variants(points: list[RunPoint]) -> list[str]:
    """The variants that run TLS in these points (interop peers and load generators
    included; not programs)."""
    table = scenarios.declared()
    specs = []
    for p in points:
        family = scenarios.by_scenario(p.scenario)
        if family.runs_tls(p.scenario, table):
            specs += [p.variant, *family.peer_variants(p)]
    return list(dict.fromkeys(specs))


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
        builds = self.builds_for(points)
        refuse_impossible(points, builds)
        certs.ensure_all(credential_kinds(points, builds), progress=not self.quiet)
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
        # The credentials' digests: figures that depend on a key are only comparable between
        # runs made with the same set (compare and ab check it).
        env["credentials"] = certs.credentials_record(credential_kinds(points, builds))
        count = shard.count if shard else 1
        settings = {
            "experiment": experiment.name, "question": experiment.question, "mode": self.mode,
            "repetitions": repetitions, "experiment_text": experiment.text,
            "commit_id": paths.commit_id(), "shard_count": count,
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

    def check_same_builds(self, run_id: int) -> None:
        """Resuming with a different build of a variant (or under another CPU profile) would
        mix two builds in one run."""
        stored_env = json.loads(self.store.run(run_id)["environment"])
        stored_profile = stored_env.get("cpu_profile")
        profile = cpuprofile.active().name
        if (stored_profile or {"name": "native"})["name"] != profile:
            raise UserError(
                f"run {run_id} cannot be resumed: it ran under CPU profile "
                f"{(stored_profile or {'name': 'native'})['name']!r}, and "
                f"${cpuprofile.ENV_VARIABLE} now selects {profile!r}: set it as the run had it"
            )
        stored_credentials = stored_env.get("credentials")
        if stored_credentials:
            here = certs.credentials_record(stored_credentials.get("kinds") or {})
            differing = credentials.differing_kinds(stored_credentials, here)
            if differing:
                raise UserError(
                    f"run {run_id} cannot be resumed here: its {', '.join(differing)} "
                    "certificates had other bytes than this machine's (`tlsbench certs` prints "
                    "the digests), and a figure that depends on a key would mix two sets"
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
        bar = Progress(len(todo), self.quiet)
        # Repetitions left per point, and the statuses of those done: a point's line is
        # written once all of its repetitions in this execution are stored.
        left = collections.Counter(p.id for _, p in todo)
        statuses: dict[int, list[str]] = collections.defaultdict(list)
        width = parallel.slots() if self.parallel_waiting else 1

        def work(item: tuple[int, Point]) -> tuple[str, Outcome]:
            started_at = now()
            return started_at, self.run_one(as_run_point(item[1]), builds, timeout, mode)

        def record(item: tuple[int, Point], result: tuple[str, Outcome]) -> None:
            repetition, stored_point = item
            started_at, outcome = result
            point = as_run_point(stored_point)
            if family_of(point, builds).waits(point.options, mode) and outcome.output:
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
            bar.done += 1
            tally.add(point, repetition, outcome)
            left[stored_point.id] -= 1
            statuses[stored_point.id].append(outcome.status)
            if left[stored_point.id] == 0:
                bar.point_finished(f"{point.name} @ {point.variant}",
                                   statuses[stored_point.id], len(tally.failed))  # fmt: skip
            bar.show(f"{point.name} @ {point.variant} (rep {repetition + 1}) done",
                     len(tally.failed))  # fmt: skip

        def waiting(stored_point: Point) -> bool:
            point = as_run_point(stored_point)
            return width > 1 and family_of(point, builds).waits(point.options, mode)

        for alone, together in parallel.rounds(todo, waiting):
            for item in alone:
                repetition, stored_point = item
                bar.show(f"{stored_point.name} @ {stored_point.variant} "
                         f"(rep {repetition + 1})", len(tally.failed))  # fmt: skip
                record(item, work(item))
            if together:
                bar.show(f"{len(together)} points that wait, {width} at a time",
                         len(tally.failed))  # fmt: skip
                stop = functools.partial(interop.kill_all, "the run was interrupted")
                interop.allow_starts()
                parallel.run_together(together, width, work, record, abort=stop)
        bar.show("done", len(tally.failed), final=True)
        bar.finish()
        return tally

    def builds_for(self, points: list[RunPoint]) -> dict[str, Build]:
        """The builds these points run: their variants, their families' other variants
        (interop peers, load generators) and what those need besides (a pinned program's
        build); real programs need none."""
        builds: dict[str, Build] = {}
        for point in points:
            family = scenarios.by_scenario(point.scenario)
            specs = [point.variant, *family.peer_variants(point), *family.extra_builds(point)]
            for spec in specs:
                if spec not in builds:
                    builds[spec] = self.builder.build(self.catalog.resolve(spec))
        return builds

    def run_one(self, point: RunPoint, builds: dict[str, Build], timeout: float,
                mode: str) -> Outcome:  # fmt: skip
        """One repetition of one point: its family runs it."""
        ctx = RunContext(builds, self.builder, self.catalog, mode, timeout)
        return family_of(point, builds).run(point, ctx)


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
