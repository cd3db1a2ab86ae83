"""How a point of a driver scenario is measured, whatever its family: the modes.

- time and heap (`run_time_and_heap`): the timing driver, then, where the scenario has heap
  figures of its own (the driver declares it `heap`), the heap driver, in separate
  processes: a timing run has no accounting in the allocation path;
- heap only (`run_heap_only`): a variant whose programs run under emulation (armhf on
  qemu-user), where time means nothing;
- instructions (`run_instructions`): the timing driver under callgrind, counting only the
  calls the driver toggles, once per side (the scenarios the driver declares
  `instructions`): instructions and atomic operations (bus-locking instructions) per
  operation as series, the side's cost by function and group as output["costs"]
  (driver/callgrind.py, core/costs.py), with the heap driver's figures beside the counts.

The instructions table of the report is this module's too: any point of any family may
have instruction counts.
"""

from __future__ import annotations

import functools
import statistics
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tlsbench.builds import arches
from tlsbench.builds.build import Build
from tlsbench.builds.recipes.runtime import at_run_time
from tlsbench.core.costs import SideCosts
from tlsbench.core.points import RunPoint
from tlsbench.driver import callgrind
from tlsbench.driver.declaration import declared
from tlsbench.driver.process import Outcome, run_driver, unsupported
from tlsbench.reportkit.metrics import Metric
from tlsbench.reportkit.section import Section, SummaryCell, TableSpec, first_per_variant
from tlsbench.reportkit.views import View, fmt_count, fmt_range, variant_cell
from tlsbench.scenarios.base import Family

# valgrind runs code tens of times slower than the CPU.
VALGRIND_SLOWDOWN = 50
# Instruction mode only: the library draws its random values from the driver's fixed
# stream, so that two runs do the same work (timing and heap runs keep real randomness).
DETERMINISTIC_ARGS = ["--deterministic"]
# What the driver reports about its clocks: meaningless under emulation, so not stored.
CLOCK_FIELDS = ("calibration", "tsc_hz", "tsc_overhead_cycles", "tsc_step_ns",
                "thread_cpu_overhead_ns")  # fmt: skip


def has_heap(scenario: str) -> bool:
    """Whether the driver's heap program has figures of its own for the scenario (heap per
    side, allocations per record): then its repetitions run both drivers."""
    table = declared().scenario_table
    return scenario in table and table[scenario].has("heap")


def heap_driver_series(scenario: str) -> frozenset[str]:
    """The series only the heap driver emits for the scenario, as the driver declares them
    (allocations per record, heap per connection): what a repetition keeps of the heap run
    beside the timing run's series (never the heap run's times)."""
    table = declared().scenario_table
    if scenario not in table:
        return frozenset()
    return frozenset(s.name for s in table[scenario].series if s.when == "heap driver")


def _heap_series(scenario: str, output: dict[str, Any]) -> dict[str, Any]:
    """The heap run's samples of the series only it emits."""
    kept = heap_driver_series(scenario)
    return {k: v for k, v in output.get("samples", {}).items() if k in kept}


def collected_sides(scenario: str) -> tuple[str, ...]:
    """Deterministic mode: the sides whose calls are counted (both where the scenario runs
    TLS: client = handshake side or record writer, server = record reader; else the one)."""
    table = declared().scenario_table
    if scenario not in table or not table[scenario].has("instructions"):
        return ()
    return ("client", "server") if table[scenario].has("tls") else ("client",)


def run_measured(point: RunPoint, build: Build, timeout: float) -> Outcome:
    """One repetition of a one-process point, as its build allows (timed, or heap only)."""
    if not build.timing:
        return run_heap_only(point, build, timeout)
    return run_time_and_heap(point, build, timeout)


def run_time_and_heap(point: RunPoint, build: Build, timeout: float) -> Outcome:
    """One repetition: the timing driver, then (where the scenario has heap figures) the
    heap driver, in separate processes. The stored result carries the timing run's series
    and the heap run's heap figures and the series the driver declares of the heap driver
    (allocations, heap per connection; never its times), and says which program produced
    what in output["measure"]."""
    timed = run_driver(point, build, timeout, measure="time")
    if timed.status != "ok" or not has_heap(point.scenario):
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
    heap_series = _heap_series(point.scenario, heap.output)
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


def run_heap_only(point: RunPoint, build: Build, timeout: float) -> Outcome:
    """A repetition of a variant whose programs run under emulation (armhf on qemu-user):
    the heap driver only. Its heap figures and allocation counts are stored; its time series
    and clock facts are dropped (they time the emulator), and output["measure"] says so.
    Timed-only scenarios (bulk, aead) are unsupported there."""
    reason = arches.no_timing_reason(build.variant.arch)
    if not has_heap(point.scenario):
        return unsupported(f"{point.scenario} measures time only, and {reason}")
    heap = run_driver(point, build, timeout, measure="heap")
    if heap.status != "ok" or heap.output is None:
        heap.stderr_tail = f"(the heap run, tlsbench-driver-heap)\n{heap.stderr_tail}"
        return heap
    output = {k: v for k, v in heap.output.items() if k not in CLOCK_FIELDS}
    heap_series = _heap_series(point.scenario, output)
    output["samples"] = heap_series
    output["summary"] = {k: v for k, v in output.get("summary", {}).items() if k in heap_series}
    output["measure"] = {
        "time": None,
        "heap": "tlsbench-driver-heap",
        "heap_series": sorted(heap_series),
        "time_not_measured": reason,
    }
    return Outcome("ok", 0, None, heap.seconds, output, heap.stderr_tail)


# -- instructions ----------------------------------------------------------------------------


def run_instructions(point: RunPoint, build: Build, timeout: float) -> Outcome:
    """Instruction counts and atomic operations per measured operation and side, identical
    from run to run, and each side's cost by function (output["costs"])."""
    refused = instruction_refusal(point, build)
    if refused:
        return unsupported(refused)
    outcome, by_side = count_costs(point, build, timeout)
    if outcome.status != "ok" or outcome.output is None:
        return outcome
    counts: dict[str, list[float]] = {}
    units: dict[str, str] = {}
    for side, costs in by_side.items():
        counts[f"{side}_instructions"] = [costs.per_operation(costs.instructions)]
        counts[f"{side}_atomics"] = [costs.per_operation(costs.atomics)]
        units |= {f"{side}_instructions": "instructions", f"{side}_atomics": "atomics"}
    outcome.output["samples"] = counts
    outcome.output["summary"] = {k: {"unit": unit} for k, unit in units.items()}
    outcome.output["costs"] = {side: costs.to_json() for side, costs in by_side.items()}
    outcome.output["heap"] = None  # valgrind replaces malloc: the driver's counters read 0
    return with_heap_figures(point, build, timeout, outcome)


def instruction_refusal(point: RunPoint, build: Build) -> str | None:
    """Why instruction mode cannot count a point, or None."""
    if arches.arch(build.variant.arch).emulator:
        return (f"instruction mode runs valgrind on this machine's code; "
                f"{build.variant.name} runs under qemu-user")  # fmt: skip
    undecodable = at_run_time(point.library).valgrind_refusal(build.variant.features)
    if undecodable:
        return f"instruction mode runs valgrind, and {undecodable}"
    if not collected_sides(point.scenario):
        return f"instruction mode does not apply to the {point.scenario} scenario"
    if "aead" in declared().scenario(point.scenario).options \
            and not {"aead", "payload"} <= point.options.keys():  # fmt: skip
        return "instruction mode needs an aead point with one aead and one payload"
    return None


def count_costs(point: RunPoint, build: Build, timeout: float, extra_args: Sequence[str] = (),
                deterministic: bool = True) -> tuple[Outcome, dict[str, SideCosts]]:  # fmt: skip
    """The timing driver under callgrind once per side the scenario counts, as instruction
    mode runs it (`extra_args` after the point's own options: `tlsbench explain` gives its
    user's there; `deterministic` False: the library's own randomness, for a library the
    fixed stream cannot reach, whose counts may then differ run to run): the last run's
    outcome, and each side's cost by function."""
    by_side: dict[str, SideCosts] = {}
    outcome = unsupported(f"instruction mode does not apply to the {point.scenario} scenario")
    with tempfile.TemporaryDirectory(prefix="tlsbench-callgrind-") as scratch:
        for side in collected_sides(point.scenario):
            out_file = Path(scratch) / f"callgrind.{side}.out"
            outcome = run_driver(
                point,
                build,
                timeout * VALGRIND_SLOWDOWN,
                prefix=callgrind.command_prefix(out_file),
                extra_env={"TLSBENCH_COLLECT": side},
                extra_args=[*extra_args, *(DETERMINISTIC_ARGS if deterministic else [])],
            )
            if outcome.status != "ok" or outcome.output is None:
                return outcome, by_side
            per = int(outcome.output["params"]["iterations"])
            by_side[side] = side_costs(out_file, side, per, build)
            out_file.unlink()
    return outcome, by_side


def side_costs(out_file: Path, side: str, operations: int, build: Build) -> SideCosts:
    """One side's cost by function from its callgrind output, whose groups sum exactly to
    the count instruction mode stores (callgrind's total): asserted, never assumed."""
    costs = callgrind.read_costs(out_file, side, operations, linked_archives(build))
    total = callgrind.read_totals(out_file)
    assert sum(g.instructions for g in costs.groups()) == total["Ir"] == costs.instructions
    assert sum(g.atomics for g in costs.groups()) == total.get("Ge", 0) == costs.atomics
    return costs


def linked_archives(build: Build) -> list[str]:
    """The static libraries linked into a build's driver (where a function's source file is
    found: the pinned builds have no debug information)."""
    return [str(f) for f in (build.manifest.get("link") or {}).get("library_files") or []]


def with_heap_figures(point: RunPoint, build: Build, timeout: float, counted: Outcome) -> Outcome:
    """Instruction mode: the heap driver's figures (heap and stack per side, allocations)
    beside the counts, from a run of its own outside valgrind (which replaces malloc), so
    that `tlsbench ab --mode instructions` judges heap too. Its times are not kept."""
    if not has_heap(point.scenario) or counted.output is None:
        return counted
    heap = run_driver(point, build, timeout, measure="heap")
    if heap.status != "ok" or heap.output is None:
        heap.stderr_tail = f"(the heap run, tlsbench-driver-heap)\n{heap.stderr_tail}"
        return heap
    output = counted.output
    output["heap"] = heap.output.get("heap")
    allocs = _heap_series(point.scenario, heap.output)
    output["samples"] = {**output["samples"], **allocs}
    output["summary"] = {**output["summary"],
                         **{k: v for k, v in heap.output.get("summary", {}).items()
                            if k in allocs}}  # fmt: skip
    output["measure"] = {"instructions": "tlsbench-driver under callgrind",
                         "heap": "tlsbench-driver-heap", "heap_series": sorted(allocs)}  # fmt: skip
    return Outcome("ok", 0, None, counted.seconds + heap.seconds, output,
                   "\n".join(t for t in (counted.stderr_tail, heap.stderr_tail) if t))  # fmt: skip


# -- the report: instruction counts of any point ----------------------------------------------


@dataclass(frozen=True)
class InstructionRow:
    """Instruction mode: instructions of one side's measured calls per operation."""

    variant: str
    library: str
    point: str
    side: str  # client (handshake side / record write) or server (record read)
    instructions: float  # median over repetitions
    repetitions: int
    identical: bool  # every repetition gave the same count
    failed: str = ""  # "2 of 5 repetitions failed" where the figures rest on fewer
    machine: str = ""  # where the run spans several machines: the one(s) this row ran on
    # Atomic operations (bus-locking instructions) per operation, median over repetitions:
    # callgrind's global bus events, counted beside the instructions (None: not counted,
    # firmware points and runs stored before atomics were).
    atomics: float | None = None
    # Firmware (Cortex-M) points: the count projected to ms at a reference part's clock, low
    # and high end of the core's CPI range (builds/firmware.py); the firmware table has the rest.
    projected_ms: float | None = None
    projected_ms_high: float | None = None


def load_instructions(reader: Any, families: Sequence[Family]) -> dict[str, list[Any]]:
    """Every point's instruction counts, projected to milliseconds where a family projects
    its points' counts (firmware images)."""
    rows = []
    for p in reader.points:
        for series in reader.store.series_names(p.id):
            if not series.endswith("_instructions"):
                continue
            counts = reader.store.samples(p.id, series)
            side = series.removesuffix("_instructions")
            projected = next((found for r in reader.ok(p) for f in families
                              if (found := f.projected_ms(r.output or {}, side))),
                             None)  # fmt: skip
            atomics = reader.store.samples(p.id, f"{side}_atomics")
            if counts:
                rows.append(InstructionRow(
                    variant=p.variant, library=p.library, point=p.name, side=side,
                    instructions=statistics.median(counts), repetitions=len(counts),
                    identical=len(set(counts)) == 1,
                    atomics=statistics.median(atomics) if atomics else None,
                    projected_ms=projected[0] if projected else None,
                    projected_ms_high=projected[1] if projected else None,
                ))  # fmt: skip
    return {"instructions": rows}


def instruction_views(model: Any) -> list[Any]:
    if not model.instructions:
        return []
    projected = any(r.projected_ms is not None for r in model.instructions)
    atomics = any(r.atomics is not None for r in model.instructions)
    return [
        View(
            "instructions",
            "Instructions (deterministic mode)",
            "Instructions counted by callgrind inside one side's measured library calls, "
            "per operation (handshake, record or bulk pass); `client` is the record "
            "writer, `server` the reader. Median over repetitions, which should agree."
            + (" `atomics`: the bus-locking instructions among them (LOCK-prefixed "
               "read-modify-writes and XCHG with memory: callgrind's global bus events), "
               "each a cache line that bounces between cores when shared "
               "(docs/methodology.md)." if atomics else "")
            + (" Firmware points: instructions of each side's handshake calls counted by "
               "QEMU (-icount), projected to ms as a range: the core's cycles per "
               "instruction at a reference part's clock (an assumption, not a measurement "
               "of a board: the firmware section says which)." if projected else ""),
            ["variant", "point", "side", "instructions", *(["atomics"] if atomics else []),
             "repetitions", "identical", *(["projected ms"] if projected else [])],
            [False, False, False, True, *([True] if atomics else []), True, False,
             *([True] if projected else [])],
            [
                [variant_cell(r), r.point, r.side, fmt_count(r.instructions),
                 *([fmt_count(r.atomics) if r.atomics is not None else "-"] if atomics else []),
                 str(r.repetitions), "yes" if r.identical else "no",
                 *([fmt_range(r.projected_ms, r.projected_ms_high)] if projected else [])]
                for r in model.instructions
            ],
        )
    ]  # fmt: skip


def instruction_metrics(model: Any) -> list[Any]:
    return [Metric(i.variant, i.point, "instructions", "instructions", i.instructions,
                   side=i.side) for i in model.instructions] + [
        Metric(i.variant, i.point, "atomics", "atomics", i.atomics, side=i.side)
        for i in model.instructions if i.atomics is not None]  # fmt: skip


def instruction_summary(model: Any) -> list[SummaryCell]:
    """Per variant: its first client row's instruction count (of its first point), and the
    atomic operations of the same row where they were counted."""
    clients = first_per_variant([r for r in model.instructions if r.side == "client"])
    cells = [SummaryCell(r.variant, "client instructions", r.instructions,
                         fmt_count(r.instructions), r.point) for r in clients]  # fmt: skip
    cells += [SummaryCell(r.variant, "client atomics", r.atomics, fmt_count(r.atomics), r.point)
              for r in clients if r.atomics is not None]  # fmt: skip
    return cells


def instructions_section(families: Sequence[Family]) -> Section:
    """The instruction counts any point may have (projected by `families`), as a section."""
    return Section(
        "instructions",
        60,
        (TableSpec("instructions", "instructions", "Instructions", InstructionRow),),
        functools.partial(load_instructions, families=tuple(families)),
        views=instruction_views,
        metrics=instruction_metrics,
        summary=instruction_summary,
    )
