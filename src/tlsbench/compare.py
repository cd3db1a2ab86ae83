"""`tlsbench compare A B`: per point present in both runs, B against A, series by series.

Each repetition (one driver process) gives one figure per series: the median of its samples,
or the driver's own per-run figure (AEAD cycles/byte). The verdict tests those per-repetition
figures (`tlsbench.stats.compare_repetitions`): "faster"/"slower" only when significant AND
beyond the practical threshold, "too few repetitions" when the test cannot decide, and
"machine drift" when the calibration workload timed beside every point moved in the same
direction by at least half as much as the series did. Higher is better for MB/s only.

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

from tlsbench.stats import (
    DEFAULT_THRESHOLD,
    FASTER,
    MACHINE_DRIFT,
    SLOWER,
    compare_repetitions,
)
from tlsbench.store import Point, Store

HIGHER_IS_BETTER_UNITS = {"MB/s", "1/s"}
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
    warnings: list[str] = field(default_factory=list)


@dataclass
class _Side:
    """One point of one run: per-repetition figures per series, and what the point lacks."""

    point: Point
    figures: dict[str, tuple[str, list[float]]]  # series -> (unit, one figure per repetition)
    steps: dict[str, float]  # series -> the step its values move by (TSC-quantised series)
    calibration: list[float]  # per repetition: mean of the workload's before/after ns
    ok: int
    bad: int


def _side(store: Store, point: Point) -> _Side:
    figures: dict[str, tuple[str, list[float]]] = {}
    units: dict[str, str] = {}
    resolutions: dict[str, list[float]] = {}
    calibration: list[float] = []
    ok = bad = 0
    for result in store.results(point.id):
        if result["status"] == "failed":
            bad += 1
        if result["status"] != "ok" or not result["output"]:
            continue
        ok += 1
        output = json.loads(result["output"])
        cal = output.get("calibration") or {}
        if cal.get("before_ns") and cal.get("after_ns"):
            calibration.append((float(cal["before_ns"]) + float(cal["after_ns"])) / 2)
        for name, summary in (output.get("summary") or {}).items():
            units[name] = summary.get("unit", "")
            if summary.get("resolution_ns"):
                resolutions.setdefault(name, []).append(float(summary["resolution_ns"]))
        for row in output.get("aead") or []:
            key = f"{row['aead']} {row['payload']} B cycles/byte"
            figures.setdefault(key, ("TSC cycles/byte", []))[1].append(row["tsc_cycles_per_byte"])
    for name in store.series_names(point.id):
        groups = [g for g in store.samples_by_repetition(point.id, name) if g]
        if groups:
            figures[name] = (units.get(name, ""), [float(np.median(g)) for g in groups])
    # Each process measures its own step (and TSC rate): the largest is the coarsest timer.
    steps = {name: max(values) for name, values in resolutions.items() if name in figures}
    return _Side(point, figures, steps, calibration, ok, bad)


def _threshold(series: str, base: float, explicit: bool, median_a: float, step: float) -> float:
    if series.endswith("_instructions") and not explicit:
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


def run_warnings(store: Store, run_a: int, run_b: int) -> list[str]:
    """What makes the two runs less comparable as a whole."""
    a, b = store.run(run_a), store.run(run_b)
    env_a, env_b = json.loads(a["environment"]), json.loads(b["environment"])
    found = []
    if a["owner_host"] != b["owner_host"]:
        found.append(f"the runs were made on different machines ({a['owner_host']} / "
                     f"{b['owner_host']})")  # fmt: skip
    if (env_a.get("cpu") or {}).get("model") != (env_b.get("cpu") or {}).get("model"):
        found.append("the runs were made on different CPUs")
    if env_a.get("cpu_flags") != env_b.get("cpu_flags"):
        found.append("the runs were made with different CPU flags")
    if a["experiment_text"] != b["experiment_text"]:
        found.append("the runs come from different experiment texts")
    if a["mode"] != b["mode"]:
        found.append(f"the runs use different modes ({a['mode']} and {b['mode']})")
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


def compare_runs(
    store: Store, run_a: int, run_b: int, *, threshold: float | None = None
) -> list[Row]:
    points_b = {(p.variant, p.name): p for p in store.points(run_b)}
    rows = []
    for point_a in store.points(run_a):
        point_b = points_b.get((point_a.variant, point_a.name))
        if point_b is not None:
            rows += compare_points(store, point_a, point_b, threshold=threshold)
    return rows


def compare_points(
    store: Store, point_a: Point, point_b: Point, *, threshold: float | None = None
) -> list[Row]:
    """Point B against point A, series by series (same or different runs or variants)."""
    explicit = threshold is not None
    base = DEFAULT_THRESHOLD if threshold is None else threshold
    repetitions = (
        int(store.run(point_a.run_id)["repetitions"]),
        int(store.run(point_b.run_id)["repetitions"]),
    )
    rows = []
    a, b = _side(store, point_a), _side(store, point_b)
    warnings = _point_warnings(a, b, repetitions) if point_a.variant == point_b.variant else []
    calibration_ratio = None
    if a.calibration and b.calibration:
        calibration_ratio = float(np.median(b.calibration) / np.median(a.calibration))
    for name, (unit, fig_a) in a.figures.items():
        if name not in b.figures:
            continue
        fig_b = b.figures[name][1]
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
        if verdict in (FASTER, SLOWER) and _drifted(c.ratio, calibration_ratio):
            verdict = MACHINE_DRIFT
        rows.append(Row(
            point_a.variant, point_a.name, name, unit, len(fig_a), len(fig_b), median_a,
            float(np.median(fig_b)), c.ratio, c.ci_low, c.ci_high, c.p_value, c.threshold,
            verdict, calibration_ratio, step or None, list(warnings),
        ))  # fmt: skip
    return rows


def _fmt_p(p: float | None) -> str:
    return "-" if p is None else f"{p:.3g}"


def _fmt_threshold(r: Row) -> str:
    if r.resolution is None:
        return f"{r.threshold:.1%}"
    return f"{r.threshold:.1%} (step {r.resolution:,.3g} {r.unit})"


def table(rows: list[Row], run_a: int, run_b: int, threshold: float, run_notes: list[str]) -> str:
    lines = [
        f"Run {run_b} against run {run_a}: ratio = median B / median A of the per-repetition "
        "medians, 95 % CI resampling repetitions; Mann-Whitney U on the per-repetition figures "
        f"(alpha 0.05); a change counts only beyond the practical threshold of {threshold:.1%} "
        f"(instruction counts {INSTRUCTION_THRESHOLD:.1%} unless --threshold is given; "
        f"series timed by single TSC reads more than {QUANTUM_STEPS} of their steps, "
        f"threshold = max(threshold, {QUANTUM_STEPS} x step / median A)).",
        "",
    ]
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


def to_json(rows: list[Row], run_a: int, run_b: int, threshold: float, run_notes: list[str]) -> str:
    document: dict[str, Any] = {
        "run_a": run_a,
        "run_b": run_b,
        "threshold": threshold,
        "alpha": 0.05,
        "instruction_threshold": INSTRUCTION_THRESHOLD,
        "quantum_steps": QUANTUM_STEPS,
        "warnings": run_notes,
        "series": [asdict(r) for r in rows],
    }
    return json.dumps(document, indent=2, allow_nan=False) + "\n"
