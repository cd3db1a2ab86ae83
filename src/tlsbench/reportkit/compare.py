"""`tlsbench compare A B`: per point present in both runs, B against A, series by series.

Points pair by variant and name; `--variants BASE CANDIDATE` pairs the points of one variant
in A with those of another in B (two runs, or one run holding both: `tlsbench ab`'s).

Each repetition (one driver process) gives one figure per series: the median of its samples,
or the driver's own per-run figure (AEAD cycles/byte). The verdict tests those per-repetition
figures (`tlsbench.core.stats.compare_repetitions`): "faster"/"slower" only when significant AND
beyond the practical threshold, "too few repetitions" when the test cannot decide, and
"machine drift" when the calibration workload timed beside every point moved in the same
direction by at least half as much as the series did; or, with --normalise, each
repetition's time figures divided by its own calibration before the test. Higher is better
for MB/s and 1/s only.

A series timed by single TSC reads moves in whole steps of the TSC (the driver declares the
step as the series' `resolution_ns`): a change counts only beyond QUANTUM_STEPS of its steps,
so that a median of a few steps cannot claim a change of a few percent.

Warnings say where the two runs are not comparable: another build (cache key) of a variant,
another machine or CPU flags, a point incomplete or partly failed, another experiment text.
"""

from __future__ import annotations

import json
import math
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from tlsbench.core import credentials
from tlsbench.core.errors import UserError
from tlsbench.core.stats import (
    DEFAULT_THRESHOLD,
    FASTER,
    MACHINE_DRIFT,
    SLOWER,
    compare_repetitions,
)
from tlsbench.core.store import Point, Store

HIGHER_IS_BETTER_UNITS = {"MB/s", "1/s"}
# Figures that are a time (the others higher-is-better rates, or counts and bytes, which
# --normalise leaves alone).
TIME_UNITS = {"ns", "TSC cycles/byte", "s/GB"}
# Instruction counts barely move run to run: a smaller threshold fits their resolution.
INSTRUCTION_THRESHOLD = 0.01
# A series quantised by the TSC needs a change of more than this many of its steps (k in
# threshold = max(base, k * step / median A)): one step is the timer's own jitter.
QUANTUM_STEPS = 2


@dataclass
class Row:
    variant: str
    point: str
    series: str
    unit: str
    repetitions_a: int
    repetitions_b: int
    median_a: float
    median_b: float
    ratio: float
    ci_low: float
    ci_high: float
    p_value: float | None
    threshold: float
    verdict: str
    calibration_ratio: float | None = None
    resolution: float | None = None  # the series' step (TSC-quantised series), unit of median
    normalised: bool = False  # figures scaled by their repetition's calibration (--normalise)
    warnings: list[str] = field(default_factory=list)


@dataclass
class _Side:
    """One point of one run: per-repetition figures per series, and what the point lacks."""

    point: Point
    figures: dict[str, tuple[str, list[float]]]  # series -> (unit, one figure per repetition)
    # series -> per figure above, its repetition's calibration (None where it has none)
    figure_calibration: dict[str, list[float | None]]
    steps: dict[str, float]  # series -> the step its values move by (TSC-quantised series)
    calibration: list[float]  # per repetition: mean of the workload's before/after ns
    ok: int
    bad: int
    machines: set[int] = field(default_factory=set)  # where its ok repetitions ran


def _side(store: Store, point: Point) -> _Side:
    figures: dict[str, tuple[str, list[float]]] = {}
    figure_calibration: dict[str, list[float | None]] = {}
    resolutions: dict[str, list[float]] = {}
    calibration: list[float] = []
    samples = store.samples_by_result(point.id)
    ok = bad = 0
    machines: set[int] = set()

    def add(name: str, unit: str, figure: float, cal: float | None) -> None:
        figures.setdefault(name, (unit, []))[1].append(figure)
        figure_calibration.setdefault(name, []).append(cal)

    for result in store.results(point.id):
        if result["status"] == "failed":
            bad += 1
        if result["status"] != "ok" or not result["output"]:
            continue
        ok += 1
        if result["machine_id"] is not None:
            machines.add(int(result["machine_id"]))
        output = json.loads(result["output"])
        c = output.get("calibration") or {}
        cal = None
        if c.get("before_ns") and c.get("after_ns"):
            cal = (float(c["before_ns"]) + float(c["after_ns"])) / 2
            calibration.append(cal)
        summaries = output.get("summary") or {}
        for name, summary in summaries.items():
            if summary.get("resolution_ns"):
                resolutions.setdefault(name, []).append(float(summary["resolution_ns"]))
        for row in output.get("aead") or []:
            name = f"{row['aead']} {row['payload']} B cycles/byte"
            add(name, "TSC cycles/byte", float(row["tsc_cycles_per_byte"]), cal)
        for name, values in sorted(samples.get(result["id"], {}).items()):
            if values:
                unit = (summaries.get(name) or {}).get("unit", "")
                add(name, unit, float(np.median(values)), cal)
    # Each process measures its own step (and TSC rate): the largest is the coarsest timer.
    steps = {name: max(values) for name, values in resolutions.items() if name in figures}
    return _Side(point, figures, figure_calibration, steps, calibration, ok, bad, machines)


# What tells machines apart, as warnings name it.
MACHINE_FACTS = (("host", "host"), ("cpu_model", "CPU"), ("cpu_flags", "CPU flags"),
                 ("kernel", "kernel"), ("commit_id", "tlsbench commit"))  # fmt: skip


def _differences(store: Store, *sides: set[int]) -> str:
    """How the machines of each side differ: "tlsbench commit (a / b)", fact by fact (the
    values of each side joined by a comma, the sides by a slash)."""
    rows = [[r for r in (store.machine_row(m) for m in sorted(ids)) if r] for ids in sides]
    found = []
    for column, label in MACHINE_FACTS:
        values = [sorted({str(r[column]) for r in side}) for side in rows]
        if len({v for side in values for v in side}) > 1:
            shown = [", ".join(v if len(v) <= 40 else v[:37] + "..." for v in side)
                     for side in values]  # fmt: skip
            found.append(f"{label} ({' / '.join(shown)})")
    return "; ".join(found) or "machine ids only"


def _machine_warnings(store: Store, a: _Side, b: _Side, pool: bool) -> list[str]:
    """A point's repetitions from several machines are not one sample: refused unless
    pooling is asked for, and then said on the row; A and B on different machines, said."""
    found = []
    for label, side in (("A", a), ("B", b)):
        if len(side.machines) > 1:
            if not pool:
                raise UserError(
                    f"{side.point.variant} {side.point.name} in run {label} "
                    f"({side.point.run_id}) has repetitions measured on "
                    f"{len(side.machines)} machines, which differ in "
                    f"{_differences(store, side.machines)}. Figures of different machines "
                    "are not one sample; compare runs of one machine, or give "
                    "--pool-machines to pool them anyway"
                )
            found.append(f"{label} pools repetitions of {len(side.machines)} machines")
    if a.machines and b.machines and a.machines != b.machines:
        found.append(f"A and B measured on machines that differ in "
                     f"{_differences(store, a.machines, b.machines)}")  # fmt: skip
    return found


def _normalised(
    unit: str, figures: list[float], calibrations: list[float | None], reference: float
) -> list[float] | None:
    """Each repetition's figure at the reference machine speed: a time scaled by reference /
    its repetition's calibration, a rate by the inverse. None where it cannot be done."""
    if unit not in TIME_UNITS and unit not in HIGHER_IS_BETTER_UNITS:
        return None
    if any(c is None or c <= 0 for c in calibrations) or len(calibrations) != len(figures):
        return None
    factors = [reference / c for c in calibrations if c is not None]
    if unit in HIGHER_IS_BETTER_UNITS:
        factors = [1 / f for f in factors]
    return [f * k for f, k in zip(figures, factors, strict=True)]


def _threshold(series: str, base: float, explicit: bool, median_a: float, step: float) -> float:
    if series.endswith(("_instructions", "_atomics")) and not explicit:
        return INSTRUCTION_THRESHOLD
    if step > 0 and median_a != 0:
        # A median can only move in whole steps: smaller "changes" are the timer's resolution.
        return max(base, QUANTUM_STEPS * step / abs(median_a))
    return base


def _drifted(ratio: float, calibration_ratio: float | None) -> bool:
    """The machine itself moved in the same direction by at least half the series' change."""
    if calibration_ratio is None or calibration_ratio <= 0 or ratio <= 0:
        return False
    moved, series = math.log(calibration_ratio), math.log(ratio)
    return moved * series > 0 and abs(moved) >= abs(series) / 2


def check_same_credentials(store: Store, run_a: int, run_b: int) -> None:
    """Two runs made with different certificate sets cannot be judged: an RSA or ECDSA
    operation's cost, a certificate's length and the wire bytes depend on the key."""
    env_a = json.loads(store.run(run_a)["environment"])
    env_b = json.loads(store.run(run_b)["environment"])
    differing = credentials.differing_kinds(env_a.get("credentials"), env_b.get("credentials"))
    if differing:
        raise UserError(
            f"runs {run_a} and {run_b} were made with different certificate sets "
            f"({', '.join(differing)}: other keys), so their figures that depend on a key "
            "cannot be compared; rerun one of them where `tlsbench certs` prints the same "
            "digests"
        )


def run_warnings(store: Store, run_a: int, run_b: int) -> list[str]:
    """What makes the two runs less comparable as a whole."""
    a, b = store.run(run_a), store.run(run_b)
    env_a, env_b = json.loads(a["environment"]), json.loads(b["environment"])
    found = []
    machines_a = {int(m["id"]) for m in store.machines_of_run(run_a)}
    machines_b = {int(m["id"]) for m in store.machines_of_run(run_b)}
    if machines_a and machines_b and machines_a != machines_b:
        found.append("the runs were made on machines that differ in "
                     + _differences(store, machines_a, machines_b))  # fmt: skip
    if (env_a.get("cpu") or {}).get("model") != (env_b.get("cpu") or {}).get("model"):
        found.append("the runs were made on different CPUs")
    if env_a.get("cpu_flags") != env_b.get("cpu_flags"):
        found.append("the runs were made with different CPU flags")
    if a["experiment_text"] != b["experiment_text"]:
        found.append("the runs come from different experiment texts")
    if a["mode"] != b["mode"]:
        found.append(f"the runs use different modes ({a['mode']} and {b['mode']})")
    for run, env in ((run_a, env_a), (run_b, env_b)):
        if "credentials" not in env:
            found.append(
                f"run {run} names no certificate set (it was made before the sets were the "
                "same on every machine): figures that depend on a key may differ for that alone"
            )
    return found


def _point_warnings(a: _Side, b: _Side, repetitions: tuple[int, int]) -> list[str]:
    found = []
    key_a, key_b = a.point.build.get("cache_key"), b.point.build.get("cache_key")
    if key_a != key_b:
        found.append(f"variant {a.point.variant} was built differently ({key_a} / {key_b})")
    for label, side, reps in (("A", a, repetitions[0]), ("B", b, repetitions[1])):
        if side.bad:
            found.append(f"{side.bad} of {reps} repetitions failed in {label}")
        elif side.ok < reps:
            found.append(f"only {side.ok} of {reps} repetitions in {label}")
    return found


def pairs(
    store: Store, run_a: int, run_b: int, variants: tuple[str, str] | None = None
) -> list[tuple[Point, Point]]:
    """The points of run A and run B that compare with each other: with `variants` (A's,
    B's), the points of the one in A and of the other in B with the same name; else the
    points of the same variant and name; and when the runs share no variant but hold one
    each (two builds measured apart, e.g. a commit and its parent), those two by name."""
    points_a, points_b = store.points(run_a), store.points(run_b)
    if variants is None:
        by_key = {(p.variant, p.name): p for p in points_b}
        same = [(a, by_key[(a.variant, a.name)]) for a in points_a
                if (a.variant, a.name) in by_key]  # fmt: skip
        only_a = {p.variant for p in points_a}
        only_b = {p.variant for p in points_b}
        if same or len(only_a) != 1 or len(only_b) != 1:
            return same
        variants = (next(iter(only_a)), next(iter(only_b)))
    variant_a, variant_b = variants
    for run, points, variant in ((run_a, points_a, variant_a), (run_b, points_b, variant_b)):
        if not any(p.variant == variant for p in points):
            raise UserError(
                f"run {run} has no point of {variant}; its variants: "
                f"{', '.join(sorted({p.variant for p in points}))}"
            )
    by_name = {p.name: p for p in points_b if p.variant == variant_b}
    return [(a, by_name[a.name]) for a in points_a if a.variant == variant_a and a.name in by_name]


def compare_runs(
    store: Store,
    run_a: int,
    run_b: int,
    *,
    threshold: float | None = None,
    normalise: bool = False,
    pool_machines: bool = False,
    variants: tuple[str, str] | None = None,
) -> list[Row]:
    rows = []
    for point_a, point_b in pairs(store, run_a, run_b, variants):
        rows += compare_points(
            store, point_a, point_b, threshold=threshold, normalise=normalise,
            pool_machines=pool_machines,
        )  # fmt: skip
    return rows


def compare_points(
    store: Store,
    point_a: Point,
    point_b: Point,
    *,
    threshold: float | None = None,
    normalise: bool = False,
    pool_machines: bool = False,
) -> list[Row]:
    """Point B against point A, series by series (same or different runs or variants).

    With `normalise`, each repetition's time figure is divided by its repetition's
    calibration and multiplied by the median calibration of A: B's figures are at A's machine
    speed, and a drift of the machine no longer shows as a change (nor as "machine drift").
    """
    explicit = threshold is not None
    base = DEFAULT_THRESHOLD if threshold is None else threshold
    repetitions = (
        int(store.run(point_a.run_id)["repetitions"]),
        int(store.run(point_b.run_id)["repetitions"]),
    )
    rows = []
    a, b = _side(store, point_a), _side(store, point_b)
    warnings = _point_warnings(a, b, repetitions) if point_a.variant == point_b.variant else []
    warnings += _machine_warnings(store, a, b, pool_machines)
    calibration_ratio = None
    if a.calibration and b.calibration:
        calibration_ratio = float(np.median(b.calibration) / np.median(a.calibration))
    reference = float(np.median(a.calibration)) if a.calibration else 0.0
    for name, (unit, fig_a) in a.figures.items():
        if name not in b.figures:
            continue
        fig_b = b.figures[name][1]
        row_warnings = list(warnings)
        normalised = False
        if normalise and (unit in TIME_UNITS or unit in HIGHER_IS_BETTER_UNITS):
            norm_a = _normalised(unit, fig_a, a.figure_calibration[name], reference)
            norm_b = _normalised(unit, fig_b, b.figure_calibration[name], reference)
            if norm_a is None or norm_b is None:
                row_warnings.append("not normalised: a repetition has no calibration")
            else:
                fig_a, fig_b, normalised = norm_a, norm_b, True
        median_a = float(np.median(fig_a))
        step = max(a.steps.get(name, 0.0), b.steps.get(name, 0.0))
        limit = _threshold(name, base, explicit, median_a, step)
        try:
            c = compare_repetitions(
                fig_a, fig_b, lower_is_better=unit not in HIGHER_IS_BETTER_UNITS,
                threshold=limit,
            )  # fmt: skip
        except ValueError:  # a median of zero (e.g. no allocations): no ratio to give
            continue
        verdict = c.verdict
        if verdict in (FASTER, SLOWER) and not normalised and _drifted(c.ratio, calibration_ratio):
            verdict = MACHINE_DRIFT
        variant = point_a.variant if point_a.variant == point_b.variant \
            else f"{point_a.variant} -> {point_b.variant}"  # fmt: skip
        rows.append(Row(
            variant, point_a.name, name, unit, len(fig_a), len(fig_b), median_a,
            float(np.median(fig_b)), c.ratio, c.ci_low, c.ci_high, c.p_value, c.threshold,
            verdict, calibration_ratio, step or None, normalised, row_warnings,
        ))  # fmt: skip
    return rows


def _fmt_p(p: float | None) -> str:
    return "-" if p is None else f"{p:.3g}"


def _fmt_threshold(r: Row) -> str:
    if r.resolution is None:
        return f"{r.threshold:.1%}"
    return f"{r.threshold:.1%} (step {r.resolution:,.3g} {r.unit})"


NORMALISED_NOTE = (
    "Time figures normalised (--normalise): each repetition's figure divided by its "
    "repetition's calibration workload time and multiplied by the median calibration of A "
    "(rates: the inverse), so that the machine's drift between the runs is divided out; no "
    "'machine drift' verdict is given for them."
)


def table(
    rows: list[Row],
    run_a: int,
    run_b: int,
    threshold: float,
    run_notes: list[str],
    normalise: bool = False,
) -> str:
    lines = [
        f"Run {run_b} against run {run_a}: ratio = median B / median A of the per-repetition "
        "medians, 95 % CI resampling repetitions; Mann-Whitney U on the per-repetition figures "
        f"(alpha 0.05); a change counts only beyond the practical threshold of {threshold:.1%} "
        f"(instruction counts {INSTRUCTION_THRESHOLD:.1%} unless --threshold is given; "
        f"series timed by single TSC reads more than {QUANTUM_STEPS} of their steps, "
        f"threshold = max(threshold, {QUANTUM_STEPS} x step / median A)).",
        "",
    ]
    if normalise:
        lines += [NORMALISED_NOTE, ""]
    lines += [f"Warning: {note}." for note in run_notes]
    if run_notes:
        lines.append("")
    lines += [
        "| variant | point | series | reps A/B | median A | median B | ratio [95 % CI] | p "
        "| threshold | verdict |",
        "| --- | --- | --- | ---: | ---: | ---: | --- | ---: | ---: | --- |",
    ]
    for r in rows:
        verdict = r.verdict + "".join(f" (warning: {w})" for w in r.warnings)
        lines.append(
            f"| {r.variant} | {r.point} | {r.series} | {r.repetitions_a}/{r.repetitions_b} | "
            f"{r.median_a:,.1f} | {r.median_b:,.1f} | "
            f"{r.ratio:.3f} [{r.ci_low:.3f}, {r.ci_high:.3f}] | {_fmt_p(r.p_value)} | "
            f"{_fmt_threshold(r)} | {verdict} |"
        )
    if not rows:
        lines.append("| (no point in common) | | | | | | | | | |")
    return "\n".join(lines)


def to_json(
    rows: list[Row],
    run_a: int,
    run_b: int,
    threshold: float,
    run_notes: list[str],
    normalise: bool = False,
) -> str:
    document: dict[str, Any] = {
        "run_a": run_a,
        "run_b": run_b,
        "threshold": threshold,
        "alpha": 0.05,
        "instruction_threshold": INSTRUCTION_THRESHOLD,
        "quantum_steps": QUANTUM_STEPS,
        "normalised": NORMALISED_NOTE if normalise else None,
        "warnings": run_notes,
        "series": [asdict(r) for r in rows],
    }
    return json.dumps(document, indent=2, allow_nan=False) + "\n"
