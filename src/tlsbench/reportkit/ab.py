"""`tlsbench ab BASE CANDIDATE [EXPERIMENT]`: both variants in one run, a verdict per figure.

The experiment's points run for BASE and for CANDIDATE in one run, interleaved (the runner
shuffles every repetition's points), so that the machine's drift hits both alike. Then each
point of BASE is set against the same point of CANDIDATE, figure by figure, each figure of a
kind (KINDS) with its own threshold (a fraction of the base's figure):

- time (handshake, record, bulk, AEAD series): `tlsbench.reportkit.compare.compare_points`, the
  statistics of noisy samples (per-repetition medians, Mann-Whitney U, a 95 % CI of the
  ratio, the TSC's step, machine drift): "slower" is a regression, "faster" an improvement,
  "too few repetitions" and "machine drift" are inconclusive;
- instructions, heap peak and retained per side, stack, allocations, bytes and round trips
  on the wire, code size: figures a run should give identically every time. When every
  repetition of each side gave one value, they are compared as such: equal, or changed by
  so much (beyond the threshold: a regression or an improvement). A figure that does vary
  run to run (today's instruction counts of some libraries, a stack depth that depends on
  random values) goes through the same Mann-Whitney test on its per-repetition values, and
  a change must also exceed the two sides' ranges (max - min) together, so that noise is
  never called a change; allocation counts and stack depths have a known jitter too
  (JITTER), within which a change is none;
- a point that failed, or that one side supports and the other does not, is a verdict of
  its own (kind "run").

In instruction mode every point stores each side's cost by function (`output["costs"]`,
tlsbench.core.costs); a figure whose verdict is not "no change" is then explained by the
functions and groups whose counts per operation changed most, up or down, with their counts
before and after (`core.costs.diff_costs`): atomics by their atomics, allocations by calls,
every other figure by instructions. A change inside one function is named by that function.

The exit status: 0 when no regression of a kind in `fail_on` (and nothing failed), 1
otherwise; usage errors are the CLI's 2.
"""

from __future__ import annotations

import json
import math
import statistics
from dataclasses import asdict, dataclass, field
from typing import Any

from tlsbench.core.costs import CostDiff, SideCosts, diff_costs
from tlsbench.core.errors import UserError
from tlsbench.core.stats import (
    DEFAULT_THRESHOLD,
    FASTER,
    MACHINE_DRIFT,
    NO_DIFFERENCE,
    SLOWER,
    TOO_FEW,
    compare_repetitions,
)
from tlsbench.core.store import Point, Store
from tlsbench.reportkit.compare import HIGHER_IS_BETTER_UNITS, TIME_UNITS, compare_points
from tlsbench.reportkit.model import describe_source

KINDS = ("time", "instructions", "atomics", "heap", "stack", "allocations", "wire",
         "code-size")  # fmt: skip
# Fractions of the base's figure a change must exceed. Figures that are the same in every
# run count any change; instruction counts get 1 %, as `compare` does: the seeded libraries
# count the same in every run, but those that cannot be seeded (AWS-LC, BoringSSL, rustls)
# still move by up to ~0.2 %, and a count measured without --deterministic by up to ~1 %.
# Atomic operations are counted beside the instructions, with the same threshold.
DEFAULT_THRESHOLDS = {"time": DEFAULT_THRESHOLD, "instructions": 0.01, "atomics": 0.01,
                      "heap": 0.0, "stack": 0.0, "allocations": 0.0, "wire": 0.0,
                      "code-size": 0.0}  # fmt: skip
# How many functions and groups an explanation names, and what it sorts a kind by.
EXPLAINED = 10
EXPLAINED_BY = {"atomics": "atomics", "allocations": "calls"}
RUN = "run"  # a point that failed, or that only one side supports
# What a figure moves by between runs of the same code today, in its unit: a change no
# larger is no change. An allocation more or less per handshake where the libraries'
# randomness reaches the count (mbedTLS, OpenSSL); the stack high-water by up to 48 bytes
# (mbedTLS's client, 32 for OpenSSL's server), with random values and with the process's
# layout: two names of one commit (`#release`, `#comment`: another argv) put mbedTLS's
# client 32 bytes apart in every repetition. To go once the drivers fix both.
JITTER = {"allocations": 1.0, "stack": 64.0}
# Kinds whose jitter also covers a figure that was constant on each side: four repetitions
# can all land on one allocation count; a stack depth that moves does so within a side too,
# so a constant one that changed moved for real.
JITTER_WHEN_CONSTANT = ("allocations",)

REGRESSION = "regression"
IMPROVEMENT = "improvement"
NO_CHANGE = "no change"
INCONCLUSIVE = "inconclusive"
FAILED = "failed"

SIDES = ("client", "server")
HANDSHAKE_SCENARIOS = ("handshake", "resume")
HEAP_FIGURES = {"peak_minus_start": "heap peak", "retained_minus_start": "heap retained"}


@dataclass
class Verdict:
    point: str
    figure: str  # e.g. "client heap peak", "server_cpu_ns"
    kind: str  # one of KINDS, or "run"
    unit: str
    base: float | None  # median over repetitions (None: the side has no figure)
    candidate: float | None
    threshold: float
    verdict: str  # regression | improvement | no change | inconclusive | failed
    how: str  # how the verdict was reached, for a reader
    repetitions: tuple[int, int] = (0, 0)
    side: str = ""  # client or server, where the figure is one side's
    # What moved, function by function, where the point stored its cost by function
    # (instruction mode) and the verdict is not "no change".
    explained: CostDiff | None = None

    @property
    def change(self) -> float | None:
        if self.base is None or self.candidate is None:
            return None
        return self.candidate - self.base

    @property
    def ratio(self) -> float | None:
        if self.base is None or self.candidate is None or self.base == 0:
            return None
        return self.candidate / self.base


@dataclass
class Outcome:
    """Every verdict of one A/B comparison, and what the exit status follows."""

    base: str
    candidate: str
    run_id: int
    mode: str
    fail_on: tuple[str, ...]
    thresholds: dict[str, float]
    verdicts: list[Verdict] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)  # points neither side could run
    sources: dict[str, str] = field(default_factory=dict)  # variant -> where its code is from

    def failing(self) -> list[Verdict]:
        """What makes the exit status 1: a failed point, or a regression of a kind the
        comparison fails on."""
        gated = (*self.fail_on, RUN)
        return [
            v
            for v in self.verdicts
            if v.verdict == FAILED or (v.verdict == REGRESSION and v.kind in gated)
        ]

    @property
    def exit_status(self) -> int:
        return 1 if self.failing() else 0

    def of(self, verdict: str) -> list[Verdict]:
        return [v for v in self.verdicts if v.verdict == verdict]


# -- options --------------------------------------------------------------------------------


def parse_kinds(text: str) -> tuple[str, ...]:
    """--fail-on: comma-separated kinds, or "all" / "none"."""
    words = [w.strip() for w in text.split(",") if w.strip()]
    if words == ["all"]:
        return KINDS
    if words == ["none"]:
        return ()
    unknown = [w for w in words if w not in KINDS]
    if unknown or not words:
        raise UserError(
            f"--fail-on {text!r}: give figure kinds separated by commas, among "
            f"{', '.join(KINDS)} (or all, none)"
        )
    return tuple(dict.fromkeys(words))


def parse_thresholds(items: list[str]) -> dict[str, float]:
    """--threshold KIND=FRACTION (repeatable, or comma-separated) over the defaults."""
    thresholds = dict(DEFAULT_THRESHOLDS)
    for item in (part.strip() for text in items for part in text.split(",")):
        if not item:
            continue
        kind, sep, value = item.partition("=")
        try:
            fraction = float(value)
        except ValueError:
            fraction = -1.0
        if not sep or kind not in KINDS or not 0 <= fraction < 1 or math.isnan(fraction):
            raise UserError(
                f"--threshold {item!r}: write KIND=FRACTION, KIND among {', '.join(KINDS)} and "
                "the fraction from 0 to below 1 (0.05 = 5 %), e.g. --threshold time=0.03"
            )
        thresholds[kind] = fraction
    return thresholds


# -- figures of one point -------------------------------------------------------------------


@dataclass
class _Figure:
    """One figure of a point (all of these are lower-is-better), a value per repetition."""

    kind: str
    unit: str
    values: list[float]


def _figures(store: Store, point: Point) -> dict[str, _Figure]:
    """The figures that should not move run to run, one value per ok repetition (time
    series are compare_points')."""
    found: dict[str, _Figure] = {}

    def add(name: str, kind: str, unit: str, value: Any) -> None:
        if isinstance(value, int | float) and not isinstance(value, bool):
            found.setdefault(name, _Figure(kind, unit, [])).values.append(float(value))

    samples = store.samples_by_result(point.id)
    for result in store.results(point.id):
        if result["status"] != "ok" or not result["output"]:
            continue
        output = json.loads(result["output"])
        # A handshake's heap, stack, allocations and wire bytes are the handshake points'
        # (records and bulk points handshake too, but are about their records).
        heap = (output.get("heap") or {}) if point.scenario in HANDSHAKE_SCENARIOS else {}
        for side in SIDES:
            figures = heap.get(side) or {}
            for key, label in HEAP_FIGURES.items():
                add(f"{side} {label}", "heap", "bytes", figures.get(key))
            add(f"{side} stack", "stack", "bytes", figures.get("stack"))
            add(f"{side} allocations per handshake", "allocations", "allocations",
                figures.get("handshake_allocs"))  # fmt: skip
        wires = (output.get("wire") or {}) if point.scenario in HANDSHAKE_SCENARIOS else {}
        for handshake, wire in sorted(wires.items()):
            if not isinstance(wire, dict):
                continue
            for side in SIDES:
                add(f"{handshake} handshake {side} bytes", "wire", "bytes",
                    (wire.get(side) or {}).get("bytes_sent"))  # fmt: skip
            add(f"{handshake} handshake round trips", "wire", "round trips",
                wire.get("round_trips"))  # fmt: skip
        for row in output.get("code_size") or []:
            add(f"{row.get('role')} program ({row.get('target')}) text+data+bss",
                "code-size", "bytes", row.get("total"))  # fmt: skip
        units = {k: (v or {}).get("unit", "") for k, v in (output.get("summary") or {}).items()}
        for series, values in sorted(samples.get(result["id"], {}).items()):
            if not values:
                continue
            if series.endswith("_instructions"):
                add(series.replace("_", " "), "instructions", "instructions",
                    statistics.median(values))  # fmt: skip
            elif series.endswith("_atomics"):
                add(series.replace("_", " "), "atomics", "atomics",
                    statistics.median(values))  # fmt: skip
            elif series.endswith("_allocs") and units.get(series) not in TIME_UNITS:
                # Per record (records) or per operation: the mean, as the report shows it.
                add(f"{series.removesuffix('_allocs')} allocations per record", "allocations",
                    "allocations", statistics.fmean(values))  # fmt: skip
    return found


def deterministic_verdict(
    base: list[float],
    candidate: list[float],
    threshold: float,
    higher_is_better: bool = False,
    jitter: float = 0.0,
    jitter_when_constant: bool = False,
) -> tuple[str, str]:
    """(verdict, how) for a figure that should be the same in every run; `jitter` is what
    it is known to move by between runs of the same code today (JITTER), in its unit, when
    it varies within a side (or always, with `jitter_when_constant`)."""
    median_a, median_b = statistics.median(base), statistics.median(candidate)
    change = median_b - median_a
    worse = (change > 0) != higher_is_better
    within_jitter = f"within the run-to-run jitter of {jitter:g}" if jitter else ""
    if len(set(base)) == 1 and len(set(candidate)) == 1:
        if change == 0:
            return NO_CHANGE, "equal (identical in every repetition)"
        if jitter_when_constant and abs(change) <= jitter:
            return NO_CHANGE, f"changed by {_relative(change, median_a)}, {within_jitter}"
        relative = abs(change) / abs(median_a) if median_a else math.inf
        if relative <= threshold:
            return NO_CHANGE, f"changed by {_relative(change, median_a)}, within the threshold"
        return (REGRESSION if worse else IMPROVEMENT), "identical in every repetition"
    if median_a == 0:
        return INCONCLUSIVE, "varies run to run around 0: no ratio to test"
    # The two sides' ranges (max - min) together, relative to the base: how far apart
    # runs of one code can land, so no change within it can be told from noise (two
    # samples of the same code that happen not to overlap stay "no change").
    spread = ((max(base) - min(base)) + (max(candidate) - min(candidate))) / abs(median_a)
    limit = max(threshold, spread)
    comparison = compare_repetitions(base, candidate, lower_is_better=not higher_is_better,
                                     threshold=limit)  # fmt: skip
    how = (f"varies run to run (ranges {spread:.2%} together): Mann-Whitney "
           f"p={_p(comparison.p_value)}, a change must exceed {limit:.2%}")  # fmt: skip
    if comparison.verdict == TOO_FEW:
        return INCONCLUSIVE, f"varies run to run (ranges {spread:.2%} together): too few " \
            "repetitions for a test (4 per side at least)"  # fmt: skip
    if comparison.verdict in (SLOWER, FASTER) and abs(change) <= jitter:
        return NO_CHANGE, f"{how}; {within_jitter}"
    if comparison.verdict == SLOWER:
        return REGRESSION, how
    if comparison.verdict == FASTER:
        return IMPROVEMENT, how
    return NO_CHANGE, how


def _p(value: float | None) -> str:
    return "-" if value is None else f"{value:.3g}"


def _relative(change: float, base: float) -> str:
    return f"{change:+,.6g}" + (f" ({change / base:+.2%})" if base else "")


def _run_verdicts(store: Store, a: Point, b: Point, reps: tuple[int, int]) -> list[Verdict]:
    """A point that failed, or that only one side can run."""

    def state(point: Point) -> tuple[str, int, str]:
        results = store.results(point.id)
        failed = [r for r in results if r["status"] == "failed"]
        if failed:
            return FAILED, len(failed), _message(failed[0])
        if results and all(r["status"] == "unsupported" for r in results):
            return "unsupported", len(results), _message(results[0])
        ok = sum(1 for r in results if r["status"] == "ok")
        return ("ok" if ok else "missing"), ok, ""

    (sa, na, why_a), (sb, nb, why_b) = state(a), state(b)
    out = []
    for side, status, count, why, total in (("base", sa, na, why_a, reps[0]),
                                            ("candidate", sb, nb, why_b, reps[1])):  # fmt: skip
        if status == FAILED:
            out.append(Verdict(a.name, f"{side} failed", RUN, "", None, None, 0.0, FAILED,
                               f"{count} of {total} repetitions failed: {why}", reps))  # fmt: skip
        elif status == "missing":
            out.append(Verdict(a.name, f"{side} has no result", RUN, "", None, None, 0.0, FAILED,
                               "the run did not finish this point", reps))  # fmt: skip
    if sa == "ok" and sb == "unsupported":
        out.append(Verdict(a.name, "supported", RUN, "", None, None, 0.0, REGRESSION,
                           f"the candidate no longer runs it: {why_b}", reps))  # fmt: skip
    if sa == "unsupported" and sb == "ok":
        out.append(Verdict(a.name, "supported", RUN, "", None, None, 0.0, IMPROVEMENT,
                           f"the candidate runs it; the base did not: {why_a}", reps))  # fmt: skip
    return out


def _message(result: Any) -> str:
    output = json.loads(result["output"]) if result["output"] else {}
    message = ((output or {}).get("error") or {}).get("message")
    tail = str(result["stderr_tail"] or "").strip().splitlines()[-1:]
    return str(message or (tail[0] if tail else f"exit {result['exit_code']}"))


def compare_pair(
    store: Store, a: Point, b: Point, thresholds: dict[str, float], reps: tuple[int, int]
) -> list[Verdict]:
    """Every verdict of point B (candidate) against point A (base)."""
    verdicts = _run_verdicts(store, a, b, reps)
    for row in compare_points(store, a, b, threshold=thresholds["time"]):
        if row.unit not in TIME_UNITS and row.unit not in HIGHER_IS_BETTER_UNITS:
            continue  # counts and instructions: deterministic figures below
        verdict = {SLOWER: REGRESSION, FASTER: IMPROVEMENT, NO_DIFFERENCE: NO_CHANGE}.get(
            row.verdict, INCONCLUSIVE
        )
        how = (f"ratio {row.ratio:.3f} [{row.ci_low:.3f}, {row.ci_high:.3f}], "
               f"p={_p(row.p_value)}")  # fmt: skip
        if row.verdict in (TOO_FEW, MACHINE_DRIFT):
            how = f"{row.verdict}; {how}"
        verdicts.append(Verdict(a.name, row.series, "time", row.unit, row.median_a, row.median_b,
                                row.threshold, verdict, how,
                                (row.repetitions_a, row.repetitions_b)))  # fmt: skip
    figures_a, figures_b = _figures(store, a), _figures(store, b)
    for name, fa in figures_a.items():
        fb = figures_b.get(name)
        if fb is None or not fa.values or not fb.values:
            continue
        threshold = thresholds[fa.kind]
        verdict, how = deterministic_verdict(fa.values, fb.values, threshold, False,
                                             JITTER.get(fa.kind, 0.0),
                                             fa.kind in JITTER_WHEN_CONSTANT)  # fmt: skip
        verdicts.append(Verdict(a.name, name, fa.kind, fa.unit, statistics.median(fa.values),
                                statistics.median(fb.values), threshold, verdict, how,
                                (len(fa.values), len(fb.values)), side_of(name)))  # fmt: skip
    explain(store, a, b, verdicts)
    return verdicts


def side_of(figure: str) -> str:
    """The side a figure is of: "client instructions", "full handshake server bytes"."""
    words = figure.split()
    return next((w for w in words if w in SIDES), "")


def stored_costs(store: Store, point: Point) -> dict[str, SideCosts]:
    """A point's cost by function per side, from its first ok repetition that stored one
    (instruction mode; the counts are the same in every repetition)."""
    for result in store.results(point.id):
        if result["status"] != "ok" or not result["output"]:
            continue
        output = json.loads(result["output"])
        if output.get("costs"):
            # Grouped by today's rules, the same for both points of a comparison.
            return {side: SideCosts.from_json(data).regrouped()
                    for side, data in output["costs"].items()}  # fmt: skip
    return {}


def explain(store: Store, a: Point, b: Point, verdicts: list[Verdict],
            top: int = EXPLAINED) -> None:  # fmt: skip
    """Each verdict of one side's figure that is not "no change" gets the functions and
    groups of that side that changed most, where both points stored their costs."""
    wanted = [v for v in verdicts if v.verdict != NO_CHANGE and v.side and v.kind != RUN]
    if not wanted:
        return
    before, after = stored_costs(store, a), stored_costs(store, b)
    diffs: dict[tuple[str, str], CostDiff] = {}
    for v in wanted:
        if v.side not in before or v.side not in after:
            continue
        measure = EXPLAINED_BY.get(v.kind, "instructions")
        key = (v.side, measure)
        if key not in diffs:
            diffs[key] = diff_costs(before[v.side], after[v.side], top, measure)
        v.explained = diffs[key]


def compare_variants(
    store: Store,
    run_id: int,
    base: str,
    candidate: str,
    thresholds: dict[str, float],
    fail_on: tuple[str, ...],
) -> Outcome:
    """The verdicts of `candidate` against `base`, two variants of one stored run."""
    run = store.run(run_id)
    points = store.points(int(run["id"]))
    by_variant: dict[str, dict[str, Point]] = {}
    for p in points:
        by_variant.setdefault(p.variant, {})[p.name] = p
    for name in (base, candidate):
        if name not in by_variant:
            raise UserError(
                f"run {run['id']} has no point of {name}; its variants: "
                f"{', '.join(sorted(by_variant))}"
            )
    outcome = Outcome(base, candidate, int(run["id"]), str(run["mode"]), fail_on, thresholds)
    reps = int(run["repetitions"])
    for name, a in by_variant[base].items():
        b = by_variant[candidate].get(name)
        if b is None:
            continue
        verdicts = compare_pair(store, a, b, thresholds, (reps, reps))
        if not verdicts and _all_unsupported(store, a) and _all_unsupported(store, b):
            outcome.skipped.append(name)
        outcome.verdicts += verdicts
    for variant, point in ((base, next(iter(by_variant[base].values()))),
                           (candidate, next(iter(by_variant[candidate].values())))):  # fmt: skip
        outcome.sources[variant] = _source_line(point.build)
    return outcome


def _all_unsupported(store: Store, point: Point) -> bool:
    results = store.results(point.id)
    return bool(results) and all(r["status"] == "unsupported" for r in results)


def _source_line(build: dict[str, Any]) -> str:
    text = describe_source(build.get("source") or {})
    configs = [f"{c['option']}={c['path']} (sha256 {c['sha256'][:12]})"
               for c in build.get("config_files") or []]  # fmt: skip
    return "; ".join([text, *configs]) if configs else text


# -- output ---------------------------------------------------------------------------------


def _number(value: float | None, unit: str) -> str:
    if value is None:
        return "-"
    text = f"{value:,.0f}" if abs(value) >= 100 or float(value).is_integer() else f"{value:,.3g}"
    return f"{text} {unit}" if unit in ("ns", "bytes", "MB/s", "1/s") else text


def _change(v: Verdict) -> str:
    if v.change is None:
        return "-"
    if v.change == 0 or (v.base and abs(v.change) < 1e-9 * abs(v.base)):
        return "0"
    text = f"{v.change:+,.0f}" if abs(v.change) >= 100 else f"{v.change:+,.3g}"
    return text + (f" ({v.ratio - 1:+.2%})" if v.ratio is not None else "")


def _ordered(verdicts: list[Verdict]) -> list[Verdict]:
    """Failed points first, then by kind (KINDS' order), point and figure."""
    order = {kind: i for i, kind in enumerate((RUN, *KINDS))}
    return sorted(verdicts, key=lambda v: (order.get(v.kind, len(order)), v.point, v.figure))


def _table(verdicts: list[Verdict], fail_on: tuple[str, ...] | None = None) -> list[str]:
    lines = ["| point | figure | kind | base | candidate | change | threshold | how |",
             "| --- | --- | --- | ---: | ---: | ---: | ---: | --- |"]  # fmt: skip
    for v in _ordered(verdicts):
        note = ""
        if fail_on is not None and v.verdict == REGRESSION and v.kind not in (*fail_on, RUN):
            note = f" (not failing: {v.kind} is not in --fail-on)"
        threshold = "-" if v.kind == RUN else f"{v.threshold:.1%}"
        lines.append(
            f"| {v.point} | {v.figure} | {v.kind} | {_number(v.base, v.unit)} | "
            f"{_number(v.candidate, v.unit)} | {_change(v)} | {threshold} | "
            f"{v.how.replace('|', '/')}{note} |"
        )
    return lines


def markdown(outcome: Outcome, db: str = "") -> str:
    """A summary fit for a pull-request comment or a CI job summary: the result, then
    regressions, improvements, inconclusive figures, and the unchanged ones counted."""
    failing = outcome.failing()
    regressions = outcome.of(FAILED) + outcome.of(REGRESSION)
    improvements = outcome.of(IMPROVEMENT)
    unchanged = outcome.of(NO_CHANGE)
    inconclusive = outcome.of(INCONCLUSIVE)
    if failing:
        result = "regression"
    elif regressions:
        kinds = sorted({v.kind for v in regressions})
        result = f"no failing regression ({', '.join(kinds)} not in --fail-on)"
    else:
        result = "no regression"
    lines = [
        f"## tlsbench ab: {result}",
        "",
        f"**{len(regressions)} regression{'s' * (len(regressions) != 1)}, "
        f"{len(improvements)} improvement{'s' * (len(improvements) != 1)}, "
        f"{len(unchanged)} no change**"
        + (f", {len(inconclusive)} inconclusive" if inconclusive else "")
        + f" (exit status {outcome.exit_status})",
        "",
        "| | variant | code |",
        "| --- | --- | --- |",
        f"| base | `{outcome.base}` | {outcome.sources.get(outcome.base, '-')} |",
        f"| candidate | `{outcome.candidate}` | {outcome.sources.get(outcome.candidate, '-')} |",
        "",
        f"Run {outcome.run_id}{f' in {db}' if db else ''}, {outcome.mode} mode: both variants' "
        "points interleaved in one run. Fails on: "
        + (", ".join(outcome.fail_on) or "nothing but failed points")
        + "; thresholds: "
        + ", ".join(f"{k} {v:.1%}" for k, v in outcome.thresholds.items())
        + "; changes within today's run-to-run jitter count as none: "
        + ", ".join(
            f"{k} {v:g}{' bytes (where it varies within a side)' * (k == 'stack')}"
            for k, v in JITTER.items()
        )
        + ".",
    ]
    for title, items in (("Regressions", regressions), ("Improvements", improvements),
                         ("Inconclusive", inconclusive)):  # fmt: skip
        if items:
            lines += ["", f"### {title} ({len(items)})", "", *_table(items, outcome.fail_on)]
    lines += explanations(outcome.verdicts)
    by_kind: dict[str, int] = {}
    for v in unchanged:
        by_kind[v.kind] = by_kind.get(v.kind, 0) + 1
    equal = sum(1 for v in unchanged if v.how.startswith("equal"))
    lines += [
        "",
        f"### No change ({len(unchanged)})",
        "",
        (", ".join(f"{kind} {n}" for kind, n in by_kind.items()) or "none")
        + (f"; {equal} of them equal in every repetition" if unchanged else "")
        + ".",
    ]
    if outcome.skipped:
        lines += ["", f"Unsupported by both (no verdict): {', '.join(outcome.skipped)}."]
    if unchanged:
        lines += ["", "<details><summary>Every unchanged figure</summary>", "",
                  *_table(unchanged), "", "</details>"]  # fmt: skip
    return "\n".join(lines) + "\n"


def _per_op(value: float) -> str:
    return f"{value:,.0f}" if abs(value) >= 100 or float(value).is_integer() else f"{value:,.3g}"


def _delta(before: float, after: float) -> str:
    change = after - before
    text = f"{change:+,.0f}" if abs(change) >= 100 or float(change).is_integer() \
        else f"{change:+,.3g}"  # fmt: skip
    return text + (f" ({change / before:+.1%})" if before else " (new)" if after else "")


def explanations(verdicts: list[Verdict]) -> list[str]:
    """ "What changed, by function": one block per point, side and measure whose figures
    changed, naming the figures it explains, then its functions and groups (per operation,
    base and candidate)."""
    blocks: dict[tuple[str, str, int], tuple[CostDiff, list[Verdict]]] = {}
    for v in _ordered(verdicts):
        if v.explained is not None:
            key = (v.point, v.side, id(v.explained))
            blocks.setdefault(key, (v.explained, []))[1].append(v)
    if not blocks:
        return []
    lines = ["", "### What changed, by function", "",
             "Per operation (handshake, record), self cost (a function's own instructions, "
             "not its callees'), the largest changes first, in both directions."]  # fmt: skip
    for (point, side, _), (diff, figures) in blocks.items():
        names = ", ".join(f"{v.figure} ({v.verdict})" for v in figures)
        what = diff.measure
        lines += [
            "",
            f"**{point}, {side}**: {names}; by {what}, "
            f"{_per_op(diff.before_total)} -> {_per_op(diff.after_total)}",
            "",
        ]
        lines += [f"| function | group | object | base {what} | candidate {what} | change | "
                  "calls base -> candidate |",
                  "| --- | --- | --- | ---: | ---: | ---: | ---: |"]  # fmt: skip
        for c in diff.functions:
            lines.append(
                f"| `{c.name.replace('|', '/')}` | {c.label} | {c.object} | "
                f"{_per_op(c.before[what])} | {_per_op(c.after[what])} | "
                f"{_delta(c.before[what], c.after[what])} | "
                f"{_per_op(c.before['calls'])} -> {_per_op(c.after['calls'])} |"
            )
        lines += ["", f"| group | base {what} | candidate {what} | change |",
                  "| --- | ---: | ---: | ---: |"]  # fmt: skip
        for c in diff.groups:
            lines.append(f"| {c.label} | {_per_op(c.before[what])} | {_per_op(c.after[what])} | "
                         f"{_delta(c.before[what], c.after[what])} |")  # fmt: skip
    return lines


def to_json(outcome: Outcome) -> str:
    document = {
        "format": "tlsbench-ab",
        "version": 1,
        "base": {"variant": outcome.base, "code": outcome.sources.get(outcome.base)},
        "candidate": {
            "variant": outcome.candidate,
            "code": outcome.sources.get(outcome.candidate),
        },
        "run": outcome.run_id,
        "mode": outcome.mode,
        "fail_on": list(outcome.fail_on),
        "thresholds": outcome.thresholds,
        "exit_status": outcome.exit_status,
        "counts": {
            name: len(outcome.of(name))
            for name in (REGRESSION, IMPROVEMENT, NO_CHANGE, INCONCLUSIVE, FAILED)
        },
        "skipped": outcome.skipped,
        "verdicts": [
            {
                **{k: value for k, value in asdict(v).items() if k != "explained"},
                "change": v.change,
                "ratio": v.ratio,
                "failing": v in outcome.failing(),
                "changed": v.explained.to_json() if v.explained is not None else None,
            }
            for v in outcome.verdicts
        ],
    }
    return json.dumps(document, indent=2, allow_nan=False) + "\n"
