"""`tlsbench compare A B`: per point present in both runs, B against A.

For every series of a point (times, throughput, instruction counts, AEAD cycles/byte):
the ratio median(B) / median(A) with its bootstrap 95 % CI, and a Mann-Whitney U verdict
(faster / slower / no difference). Higher is better for throughput (MB/s) only.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from tlsbench.stats import compare
from tlsbench.store import Point, Store

HIGHER_IS_BETTER_UNITS = {"MB/s", "1/s"}


@dataclass
class Row:
    variant: str
    point: str
    series: str
    median_a: float
    median_b: float
    ratio: float
    ci_low: float
    ci_high: float
    p_value: float
    verdict: str


def _series(store: Store, point: Point) -> dict[str, tuple[str, list[float]]]:
    """Series name -> (unit, samples), AEAD rows included as one series each."""
    found: dict[str, tuple[str, list[float]]] = {}
    units = {}
    for result in store.results(point.id):
        if result["status"] != "ok" or not result["output"]:
            continue
        output = json.loads(result["output"])
        for name, summary in (output.get("summary") or {}).items():
            units[name] = summary.get("unit", "")
        for row in output.get("aead") or []:
            key = f"{row['aead']} {row['payload']} B cycles/byte"
            found.setdefault(key, ("TSC cycles/byte", []))[1].append(row["tsc_cycles_per_byte"])
    for name in store.series_names(point.id):
        found[name] = (units.get(name, ""), store.samples(point.id, name))
    return found


def compare_runs(store: Store, run_a: int, run_b: int) -> list[Row]:
    points_b = {(p.variant, p.name): p for p in store.points(run_b)}
    rows = []
    for point_a in store.points(run_a):
        point_b = points_b.get((point_a.variant, point_a.name))
        if point_b is None:
            continue
        series_b = _series(store, point_b)
        for name, (unit, a) in _series(store, point_a).items():
            if name not in series_b or not a or not series_b[name][1]:
                continue
            b = series_b[name][1]
            try:
                c = compare(a, b, lower_is_better=unit not in HIGHER_IS_BETTER_UNITS)
            except ValueError:  # a median of zero (e.g. no allocations): no ratio to give
                continue
            rows.append(Row(point_a.variant, point_a.name, name, _median(a), _median(b),
                            c.ratio, c.ci_low, c.ci_high, c.p_value, c.verdict))  # fmt: skip
    return rows


def _median(values: list[float]) -> float:
    s = sorted(values)
    n = len(s)
    return s[n // 2] if n % 2 else (s[n // 2 - 1] + s[n // 2]) / 2


def table(rows: list[Row], run_a: int, run_b: int) -> str:
    lines = [
        f"Run {run_b} against run {run_a} (ratio = median B / median A, 95 % CI; "
        "Mann-Whitney U, alpha 0.05)",
        "",
        "| variant | point | series | median A | median B | ratio [95 % CI] | p | verdict |",
        "| --- | --- | --- | ---: | ---: | --- | ---: | --- |",
    ]
    for r in rows:
        lines.append(
            f"| {r.variant} | {r.point} | {r.series} | {r.median_a:,.1f} | {r.median_b:,.1f} | "
            f"{r.ratio:.3f} [{r.ci_low:.3f}, {r.ci_high:.3f}] | {r.p_value:.3g} | {r.verdict} |"
        )
    if not rows:
        lines.append("| (no point in common) | | | | | | | |")
    return "\n".join(lines)
