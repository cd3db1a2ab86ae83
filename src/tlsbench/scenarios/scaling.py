"""Many cores: the `scaling-handshake` and `scaling-resume` scenarios.

A point runs the driver's handshake (or resume) scenario with T threads at once
(drivers/core/threads.c) under one of three models, the `contexts` key:

- `shared`: the T threads share one client and one server context (and so the server's
  session cache or ticket keys), as the threads of one server process do (HAProxy, Envoy);
- `per-thread`: each thread has a context pair of its own: what is left shared is the
  library's global state;
- `processes`: T independent driver processes at once, one thread each: the process
  baseline, what this machine's cores give with nothing shared (frequency, caches and
  memory bandwidth included). Thread figures are read against it.

Each threads point runs twice: the timing driver for the rates, then the same run with
`--locks` for each side's pthread lock calls and contentions per handshake (counting costs a
little per lock call, so never in the timed run). Beside the locks, each side's atomic
operations per handshake (bus-locking instructions: what serialises cores without a lock),
counted once per variant and job under callgrind as instruction mode counts them, on one
thread (callgrind runs threads one at a time; the count per handshake is the code's, the
same at every T). Drivers are not pinned to one CPU here: the threads must have the
machine's cores. A point asking for more threads than this machine has CPUs is unsupported,
with the count.

Report: "scaling with threads" (total handshakes/s, per-thread rate and efficiency against
T = 1 of the same model, the ratio to the process baseline at the same T, locks per
handshake beside them), a plot of total rate and efficiency against T, and the efficiency at
the most threads measured in the per-library summary.
"""

from __future__ import annotations

import concurrent.futures
import dataclasses
import os
import statistics
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from tlsbench.core.points import RunPoint
from tlsbench.driver.declaration import Declared
from tlsbench.driver.process import Outcome, run_driver, unsupported
from tlsbench.reportkit.palette import style
from tlsbench.reportkit.reader import RunReader, case_labels
from tlsbench.reportkit.section import Section, SummaryCell, TableSpec, first_per_variant
from tlsbench.reportkit.views import View, fmt_sig, variant_cell
from tlsbench.scenarios import base, modes
from tlsbench.scenarios.base import (
    THREADS_KEY,
    TLS_KEYS,
    Family,
    Key,
    PointChecker,
    RunContext,
    one_of,
)

if TYPE_CHECKING:
    from tlsbench.builds.build import Build
    from tlsbench.builds.variants import Variant
    from tlsbench.reportkit.model import RunModel
    from tlsbench.reportkit.plots import Plot
    from tlsbench.reportkit.views import View

# The experiment's scenarios and the driver scenario each runs.
DRIVER_SCENARIOS = {"scaling-handshake": "handshake", "scaling-resume": "resume"}
MODELS = ("shared", "per-thread", "processes")
CONTEXTS_KEY = Key("contexts", one_of(MODELS))
# The lock kinds the driver counts (drivers/core/locks.c), as its output names them, and
# those that take a lock (a completed pthread_once is a load; a condition is a wait).
LOCK_KINDS = ("mutex", "rwlock_read", "rwlock_write", "once", "cond_wait", "cond_signal")
ACQUIRING = ("mutex", "rwlock_read", "rwlock_write")


def machine_cpus() -> int:
    """The CPUs this process may run on (a container's or cgroup's share, not the host's)."""
    return len(os.sched_getaffinity(0))


class Scaling(Family):
    def driver_scenario(self, scenario: str) -> str | None:
        return DRIVER_SCENARIOS[scenario]

    def accepts(self, scenario: str, declared: Declared) -> tuple[str, ...]:
        return (*TLS_KEYS, "threads", "contexts", "iterations", "warmup")

    def check(self, checker: PointChecker, scenario: str, values: dict[str, Any],
              variant: Variant) -> None:  # fmt: skip
        base.check_key_share(checker, values)
        base.check_kx(checker, values, resumes=scenario == "scaling-resume")
        base.check_suite_version(checker, values)

    def run(self, point: RunPoint, ctx: RunContext) -> Outcome:
        if ctx.mode == "instructions":
            return unsupported(
                "instruction mode counts one thread's calls under callgrind, which runs "
                "threads one at a time; scaling measures time"
            )
        build = ctx.builds[point.variant]
        if not build.timing:
            return unsupported(f"{point.variant} runs under emulation: no time to scale")
        threads = int(point.options.get("threads", 1))
        if threads > machine_cpus():
            return unsupported(
                f"{threads} threads on a machine with {machine_cpus()} CPUs would share "
                "cores: the figure would measure the scheduler"
            )
        model = point.options.get("contexts", "shared")
        options = {k: v for k, v in point.options.items() if k != "contexts"}
        driver = dataclasses.replace(point, scenario=DRIVER_SCENARIOS[point.scenario])
        if model == "processes":
            return run_processes(dataclasses.replace(driver, options={**options, "threads": 1}),
                                 build, ctx.timeout, threads)  # fmt: skip
        return run_threads(
            dataclasses.replace(driver, options={**options, "contexts": model}), build, ctx.timeout
        )


def run_threads(point: RunPoint, build: Build, timeout: float) -> Outcome:
    """The timing run, then the lock-counting run of the same point; the stored output is
    the timing run's with the counting run's `locks` and the job's `atomics`."""
    timed = run_driver(point, build, timeout, pinned=False)
    if timed.status != "ok" or timed.output is None:
        return timed
    counted = run_driver(point, build, timeout, extra_args=["--locks"], pinned=False)
    if counted.status != "ok" or counted.output is None:
        counted.stderr_tail = f"(the --locks run)\n{counted.stderr_tail}"
        return counted
    output = {**timed.output, "locks": counted.output.get("locks"),
              "atomics": atomics_per_handshake(point, build, timeout)}  # fmt: skip
    output["measure"] = {"time": "tlsbench-driver", "locks": "tlsbench-driver --locks",
                         "atomics": "tlsbench-driver under callgrind --collect-bus=yes, "
                                    f"{ATOMICS_ITERATIONS} handshakes on one thread"}  # fmt: skip
    return Outcome("ok", 0, None, timed.seconds + counted.seconds, output,
                   "\n".join(t for t in (timed.stderr_tail, counted.stderr_tail) if t))  # fmt: skip


# Handshakes the atomic count covers (deterministic: a few do), and the counts already made
# in this process, by build and job (every T and model of a job shares its count).
ATOMICS_ITERATIONS = 10
_ATOMICS: dict[tuple[str, str, tuple[tuple[str, str], ...]], dict[str, Any]] = {}


def atomics_per_handshake(point: RunPoint, build: Build, timeout: float) -> dict[str, Any]:
    """Each side's atomic operations per handshake of the point's job on one thread, under
    callgrind as instruction mode counts them, once per build and job; what keeps it from
    being counted (the build cannot run under valgrind) instead, never a failed point."""
    options = {k: v for k, v in point.options.items() if k not in ("threads", "contexts")}
    options["iterations"] = ATOMICS_ITERATIONS
    key = (str(build.folder), point.scenario, tuple(sorted((k, str(v)) for k, v in
                                                           options.items())))  # fmt: skip
    if key not in _ATOMICS:
        one = dataclasses.replace(point, options=options)
        refused = modes.instruction_refusal(one, build)
        if refused:
            _ATOMICS[key] = {"not_counted": refused}
        else:
            outcome, by_side = modes.count_costs(one, build, timeout)
            if outcome.status != "ok" or not by_side:
                reason = ((outcome.output or {}).get("error") or {}).get("message") or \
                    outcome.stderr_tail.strip()[-300:]  # fmt: skip
                _ATOMICS[key] = {"not_counted": f"the callgrind run failed: {reason}"}
            else:
                _ATOMICS[key] = {side: c.per_operation(c.atomics) for side, c in by_side.items()}
                _ATOMICS[key]["iterations"] = ATOMICS_ITERATIONS
    return dict(_ATOMICS[key])


def run_processes(point: RunPoint, build: Build, timeout: float, count: int) -> Outcome:
    """`count` driver processes of one thread each, started together: the total rate is the
    sum of theirs (each times its own measured iterations, which overlap but for the
    processes' start-up), the per-process rates are the `thread_handshakes_per_s` samples."""
    with concurrent.futures.ThreadPoolExecutor(count) as pool:
        futures = [pool.submit(run_driver, point, build, timeout, pinned=False)
                   for _ in range(count)]  # fmt: skip
        outcomes = [f.result() for f in futures]
    for outcome in outcomes:
        if outcome.status != "ok" or outcome.output is None:
            return outcome
    outputs = [o.output for o in outcomes if o.output is not None]
    rates = [out["samples"]["total_handshakes_per_s"][0] for out in outputs]
    samples: dict[str, list[float]] = {}
    for out in outputs:
        for name, values in out["samples"].items():
            samples.setdefault(name, []).extend(values)
    samples["thread_handshakes_per_s"] = rates
    samples["total_handshakes_per_s"] = [sum(rates)]
    merged = {**outputs[0], "samples": samples, "processes": count}
    merged["summary"] = {name: {"n": len(values), "median": statistics.median(values)}
                         for name, values in samples.items()}  # fmt: skip
    merged["measure"] = {"time": f"tlsbench-driver x {count} processes"}
    return Outcome("ok", 0, None, max(o.seconds for o in outcomes), merged,
                   "\n".join(o.stderr_tail for o in outcomes if o.stderr_tail))  # fmt: skip


# -- the report -------------------------------------------------------------------------------


@dataclass(frozen=True)
class ScalingRow:
    """One point of a scaling run: rates are medians over repetitions; lock figures are lock
    acquisitions (mutexes, read and write locks) per handshake and side, and contentions of
    every kind (None for the process baseline, which counts none)."""

    variant: str
    library: str
    point: str
    case: str  # the job (scenario, certificate, ...), threads and model excluded
    model: str  # shared, per-thread or processes
    threads: int
    repetitions: int
    total_per_s: float | None
    thread_per_s: float | None
    efficiency: float | None  # total / (threads x total at T = 1), same model and case
    vs_processes: float | None  # total / the process baseline's total at the same T
    client_locks: float | None
    server_locks: float | None
    contended: float | None  # both sides' lock calls that found the lock held, per handshake
    failed: str = ""
    machine: str = ""
    # Atomic operations per handshake and side (callgrind, one thread; None: not counted)
    client_atomics: float | None = None
    server_atomics: float | None = None


@dataclass(frozen=True)
class LockRow:
    """One side's pthread calls per handshake at one point (a kind each), and how many of
    them found the lock held: medians over the repetitions' --locks runs."""

    variant: str
    library: str
    point: str
    case: str
    model: str
    threads: int
    side: str
    mutex: float
    rwlock_read: float
    rwlock_write: float
    once: float
    cond_wait: float
    cond_signal: float
    contended: float
    atomics: float | None = None  # bus-locking instructions per handshake (callgrind)

    @property
    def acquisitions(self) -> float:
        return self.mutex + self.rwlock_read + self.rwlock_write


def _lock_figures(outputs: list[dict[str, Any]], side: str) -> dict[str, float] | None:
    """Per handshake: each kind's calls and all contentions of one side, median over the
    repetitions that counted."""
    per_rep: dict[str, list[float]] = {}
    for out in outputs:
        locks = out.get("locks")
        if not locks or not locks.get("iterations"):
            continue
        n, counts = locks["iterations"], locks[side]
        for kind in LOCK_KINDS:
            per_rep.setdefault(kind, []).append(counts[kind]["calls"] / n)
        per_rep.setdefault("contended", []).append(
            sum(counts[k]["contended"] for k in LOCK_KINDS) / n
        )
    return {k: statistics.median(v) for k, v in per_rep.items()} or None


def _atomic_figures(outputs: list[dict[str, Any]]) -> dict[str, float]:
    """Each side's atomics per handshake: the count of the first repetition that has one
    (every repetition of a job stores the same count)."""
    for out in outputs:
        atomics = out.get("atomics") or {}
        if "client" in atomics:
            return {side: float(atomics[side]) for side in ("client", "server") if side in atomics}
    return {}


def load_scaling(reader: RunReader) -> dict[str, list[Any]]:
    points = reader.points_of(FAMILY.scenarios)
    params = {p.id: {**reader.params(p), "scenario": p.scenario} for p in points}
    # The job: the driver scenario (full or resumed) and the keys that differ; threads and
    # the model are columns of their own.
    labels = case_labels(params, always=("cert",))
    cases = {pid: f"{DRIVER_SCENARIOS[params[pid]['scenario']]} {label}"
             for pid, label in labels.items()}  # fmt: skip
    raw, lock_rows = [], []
    for p in points:
        outputs = [r.output for r in reader.ok(p) if r.output]
        model, threads = params[p.id].get("contexts", "shared"), int(params[p.id].get("threads", 1))
        locks = {}
        atomics = _atomic_figures(outputs)
        for side in ("client", "server"):
            figures = _lock_figures(outputs, side)
            if figures is not None:
                locks[side] = LockRow(p.variant, p.library, p.name, cases[p.id], model, threads,
                                      side, **figures, atomics=atomics.get(side))  # fmt: skip
                lock_rows.append(locks[side])
        raw.append((p, params[p.id], locks, atomics))
    totals = {(p.variant, cases[p.id], ps.get("contexts", "shared"), int(ps.get("threads", 1))):
              reader.median_of(p, "total_handshakes_per_s") for p, ps, _, _ in raw}  # fmt: skip
    rows = []
    for p, ps, locks, atomics in raw:
        model, threads = ps.get("contexts", "shared"), int(ps.get("threads", 1))
        total = totals[(p.variant, cases[p.id], model, threads)]
        one = totals.get((p.variant, cases[p.id], model, 1))
        baseline = totals.get((p.variant, cases[p.id], "processes", threads))
        rows.append(ScalingRow(
            variant=p.variant, library=p.library, point=p.name, case=cases[p.id], model=model,
            threads=threads, repetitions=len(reader.ok(p)), total_per_s=total,
            thread_per_s=reader.median_of(p, "thread_handshakes_per_s"),
            efficiency=total / (threads * one) if total and one else None,
            vs_processes=total / baseline if total and baseline else None,
            client_locks=locks["client"].acquisitions if locks else None,
            server_locks=locks["server"].acquisitions if locks else None,
            contended=locks["client"].contended + locks["server"].contended if locks else None,
            client_atomics=atomics.get("client"), server_atomics=atomics.get("server"),
        ))  # fmt: skip
    order = {v: i for i, v in enumerate(dict.fromkeys(p.variant for p in reader.points))}
    rows.sort(key=lambda r: (order[r.variant], r.case, MODELS.index(r.model), r.threads))
    lock_rows.sort(key=lambda r: (order[r.variant], r.case, MODELS.index(r.model), r.threads,
                                  r.side))  # fmt: skip
    return {"scaling": rows, "locks": lock_rows}


def _ratio(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}"


def scaling_view(model: RunModel) -> list[View]:
    if not model.scaling:
        return []
    return [
        View(
            "scaling",
            "Scaling with threads",
            "T threads running handshakes at once in one process, sharing one client and one "
            "server context (`shared`) or a pair each (`per-thread`), against T independent "
            "processes (`processes`, the baseline: what the cores give with nothing shared). "
            "`total`: every thread's handshakes over the time from the first start to the "
            "last end (the processes': the sum of their rates); `per thread`: the median "
            "thread's rate; `efficiency`: total / (T x total at T = 1) of the same model; "
            "`vs processes`: total / the baseline's total at the same T. Locks: pthread lock "
            "acquisitions per handshake of each side (mutexes, read and write locks) and the "
            "calls that found the lock held (both sides), from a second run with --locks; "
            "exact at T = 1. Atomics: bus-locking instructions per handshake of each side "
            "(LOCK-prefixed read-modify-writes, XCHG with memory), counted once per job under "
            "callgrind on one thread: each one on a line other cores share bounces it between "
            "them, as a lock does, without a pthread call.",
            ["variant", "case", "model", "T", "total hs/s", "per thread hs/s", "efficiency",
             "vs processes", "client locks/hs", "server locks/hs", "contended/hs",
             "client atomics/hs", "server atomics/hs"],
            [False, False, False, True, True, True, True, True, True, True, True, True, True],
            [
                [variant_cell(r), r.case, r.model, str(r.threads), fmt_sig(r.total_per_s),
                 fmt_sig(r.thread_per_s), _ratio(r.efficiency), _ratio(r.vs_processes),
                 fmt_sig(r.client_locks), fmt_sig(r.server_locks), fmt_sig(r.contended),
                 fmt_sig(r.client_atomics), fmt_sig(r.server_atomics)]
                for r in model.scaling
            ],
        ),
        View(
            "locks_per_handshake",
            "Locks per handshake",
            "pthread calls a side's library makes per handshake, by kind (the driver wraps the "
            "pthread entry points: static and shared builds alike), and the calls that found "
            "the lock held (`contended`: a failed try before the blocking call). Exact and "
            "the same every run at T = 1; contention is what grows with threads. Futexes and "
            "a library's own spin locks are not seen by the wrappers; `atomics` are the "
            "side's bus-locking instructions per handshake, counted under callgrind (every "
            "lock call above takes at least one; docs/methodology.md).",
            ["variant", "case", "model", "T", "side", "mutex", "rwlock read", "rwlock write",
             "once", "cond wait", "cond signal", "contended", "atomics"],
            [False, False, False, True, False, True, True, True, True, True, True, True, True],
            [
                [variant_cell(r), r.case, r.model, str(r.threads), r.side, fmt_sig(r.mutex),
                 fmt_sig(r.rwlock_read), fmt_sig(r.rwlock_write), fmt_sig(r.once),
                 fmt_sig(r.cond_wait), fmt_sig(r.cond_signal), fmt_sig(r.contended),
                 fmt_sig(r.atomics)]
                for r in model.locks
            ],
        ),
    ]  # fmt: skip


def scaling_plot(model: RunModel) -> Plot | None:
    """Total rate and efficiency against T, a line per variant and model (the process
    baseline dashed)."""
    from tlsbench.reportkit.plots import Plot, figure, legend

    rows = [r for r in model.scaling if r.total_per_s]
    if not rows or len({r.threads for r in rows}) < 2:
        return None
    cases = {r.case for r in rows}
    fig = figure(11.0, 4.8)
    axes = fig.subplots(1, 2)
    lines: dict[str, list[ScalingRow]] = {}
    for r in rows:
        label = f"{r.variant} {r.model}" + (f" {r.case}" if len(cases) > 1 else "")
        lines.setdefault(label, []).append(r)
    for label, points in lines.items():
        points.sort(key=lambda r: r.threads)
        look = style(points[0].variant).line()
        if points[0].model == "processes":
            look = {**look, "linestyle": "--", "markerfacecolor": "none"}
        elif points[0].model == "per-thread":
            look = {**look, "linestyle": ":"}
        xs = [r.threads for r in points]
        axes[0].plot(xs, [r.total_per_s for r in points], label=label, **look)
        axes[1].plot(xs, [r.efficiency for r in points], **look)
    for ax, title in ((axes[0], "total handshakes/s"), (axes[1], "efficiency (1 = linear)")):
        ax.set_xlabel("threads (T)")
        ax.set_title(title)
        ax.grid(alpha=0.3)
    axes[1].set_ylim(bottom=0)
    legend(fig)
    fig.suptitle("Scaling with threads (processes dashed)")
    return Plot("scaling", "Scaling with threads", "scaling", fig)


def scaling_summary(model: RunModel) -> list[SummaryCell]:
    """Per variant: the efficiency of threads sharing contexts at the most threads measured."""
    shared = [r for r in model.scaling if r.model == "shared" and r.efficiency is not None]
    ordered = sorted(shared, key=lambda r: -r.threads)
    return [SummaryCell(r.variant, "thread efficiency", r.efficiency, _ratio(r.efficiency),
                        f"T = {r.threads} {r.case}")
            for r in first_per_variant(ordered)]  # fmt: skip


FAMILY = Scaling(
    "scaling",
    tuple(DRIVER_SCENARIOS),
    keys=(THREADS_KEY, CONTEXTS_KEY),
    sections=(
        Section("scaling", 25,
                (TableSpec("scaling", "scaling", "Scaling with threads", ScalingRow),
                 TableSpec("locks", "locks_per_handshake", "Locks per handshake", LockRow)),
                load_scaling, views=scaling_view,
                plots=lambda model: [p] if (p := scaling_plot(model)) else [],
                summary=scaling_summary),
    ),
)  # fmt: skip
