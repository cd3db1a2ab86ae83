"""`tlsbench bisect`: the first commit of a user's git tree whose figure moved past a threshold
against GOOD's.

The search is core/bisection.py's, a loop over a predicate; this module is the predicate and
what surrounds it: the request checked before anything is built (two commits of one tree
and one library, GOOD an ancestor of BAD, a figure that exists, a variant instruction mode
can run), the figures (the instruction-mode points of `tlsbench ab`'s default experiment),
one commit measured (its build, cached by content; one instruction-mode run, whose counts
are exact, so one is enough), the stored steps, and the culprit's function diff against its
parent.

Stored steps: one JSON file per tree, build options and job under the cache's `bisect/`
folder, rewritten atomically (a temporary file renamed over it) after every step, beside each
measured commit's cost by function per side (core/costs.py's, as instruction mode stores
it: what the culprit's diff against its parent is made of). A step is reused while the
commit's library build, the driver sources (the drivers key says both) and the certificate
set (its digest) are those it was measured with, so that an interrupted bisect resumes where
it stopped and another range of the same tree measures only the commits it has not.

Its size (over 600 lines) is one command's: the request's checks, the figures, the stored
steps, the session around the search and its output depend on one another's data and read
best in one place; the search itself, the part worth testing alone, is core/bisection.py.
"""

from __future__ import annotations

import contextlib
import dataclasses
import fcntl
import gzip
import hashlib
import json
import math
import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tlsbench.builds import certs, localsource
from tlsbench.builds.build import Build, Builder
from tlsbench.builds.variants import Catalog, Variant
from tlsbench.core import bisection, costs, paths
from tlsbench.core.costs import SideCosts
from tlsbench.core.errors import BuildError, UserError
from tlsbench.core.points import RunPoint
from tlsbench.reportkit.ab import DEFAULT_THRESHOLDS
from tlsbench.run import experiments
from tlsbench.scenarios import modes

STATE_VERSION = 3
# The experiment whose points are the figures: `tlsbench ab`'s default job.
FIGURES_EXPERIMENT = "ab"
DEFAULT_THRESHOLD = DEFAULT_THRESHOLDS["instructions"]


# -- the request ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Threshold:
    """How far a figure may move: a fraction of GOOD's figure, either way (`relative`), or
    a count it must stay at or under (`absolute`)."""

    value: float
    relative: bool

    def crossed(self, figure: float, good: float) -> bool:
        if self.relative:
            return abs(figure - good) > self.value * good
        return figure > self.value

    def describe(self) -> str:
        if self.relative:
            return f"{self.value:.2%} of GOOD's figure, either way"
        return f"above {self.value:,.0f}"


def parse_threshold(text: str | None) -> Threshold:
    """`0.01` or `1%`: a fraction of GOOD's figure; a whole number of 1 or more (`20000000`,
    `20,000,000`): a count the figure must not exceed."""
    if text is None:
        return Threshold(DEFAULT_THRESHOLD, True)
    written = text.strip().replace("_", "")
    problem = (f"--threshold {text!r}: write a fraction of GOOD's figure (0.01, or 1%) or a "
               "whole count the figure must not exceed (20000000)")  # fmt: skip
    try:
        if written.endswith("%"):
            value, relative = float(written[:-1]) / 100, True
        else:
            value = float(written.replace(",", ""))
            relative = value < 1
            if not relative and not value.is_integer():
                raise UserError(f"{problem}; {written} is neither (150% is a fraction above 1)")
    except ValueError:
        raise UserError(problem) from None
    if not value > 0 or math.isinf(value):
        raise UserError(f"{problem}; it must be above 0")
    return Threshold(value, relative)


# What a figure counts per operation: instructions (the default) or atomic operations (the
# bus-locking instructions among them), as instruction mode counts both.
MEASURES = ("instructions", "atomics")


@dataclass(frozen=True)
class Figure:
    """A point of the figures' experiment, the sides judged and what is counted."""

    name: str
    point: RunPoint
    sides: tuple[str, ...]
    measure: str = "instructions"


def figures(spec: str, catalog: Catalog) -> dict[str, Figure]:
    """The figures bisect can judge, by name: each instruction-mode point of `tlsbench ab`'s
    default experiment, both its sides (the point's name, the first the default) or one
    (`POINT:client`, `POINT:server`), its instructions or, with `:atomics` after the name,
    its atomic operations."""
    found: dict[str, Figure] = {}
    for point in experiments.load(FIGURES_EXPERIMENT, catalog, [spec]).points:
        sides = modes.collected_sides(point.scenario)
        if not sides or point.name in found:
            continue
        judged = [(point.name, sides), *((f"{point.name}:{s}", (s,)) for s in sides)]
        for measure in MEASURES:
            suffix = "" if measure == "instructions" else f":{measure}"
            for name, these in judged:
                found[name + suffix] = Figure(name + suffix, point, these, measure)
    return found


@dataclass(frozen=True)
class Request:
    good_spec: str
    bad_spec: str
    variant: Variant  # GOOD's
    source: localsource.LocalSource
    options: str  # the options after the revision, as written (":..."), shared by both
    commits: localsource.CommitRange
    figure: Figure
    threshold: Threshold

    def spec_of(self, sha: str) -> str:
        return f"{self.source.library}@{self.source.path}#{sha}" + (
            f":{self.options}" if self.options else ""
        )


def _split(spec: str, what: str) -> tuple[str, Path, str, str]:
    """LIBRARY@TREE#REV[:OPTIONS] -> (library, tree, rev, options)."""
    head, _, options = spec.strip().partition(":")
    if not localsource.is_local_spec(head):
        raise UserError(f"{what} {spec!r}: name a commit of your git tree, "
                        "LIBRARY@TREE#REV (e.g. mbedtls@../mbedtls#v3.6.0)")  # fmt: skip
    library, path, rev = localsource.parse(head, Path.cwd())
    if rev is None:
        raise UserError(f"{what} {spec!r} names the tree as it is, not a commit: write "
                        f"{head}#REV (a commit, branch or tag)")  # fmt: skip
    return library, path, rev, options.strip()


def check_request(good: str, bad: str, figure: str | None, threshold: str | None,
                  catalog: Catalog) -> Request:  # fmt: skip
    """Everything about the request, checked before anything is built or stored."""
    limit = parse_threshold(threshold)
    good_library, good_path, good_rev, good_options = _split(good, "GOOD")
    bad_library, bad_path, bad_rev, bad_options = _split(bad, "BAD")
    if good_path != bad_path:
        raise UserError(f"GOOD and BAD are two trees ({good_path}, {bad_path}): bisect "
                        "searches the commits of one")  # fmt: skip
    if good_options != bad_options:
        raise UserError(f"GOOD and BAD have other build options ({good_options or 'none'} "
                        f"against {bad_options or 'none'}): bisect builds every commit with "
                        "the same ones")  # fmt: skip
    # Each resolved at its own commit: the library named must be the tree's at both ends.
    variant = catalog.resolve(good)
    bad_variant = catalog.resolve(bad)
    if good_library and bad_library and good_library != bad_library:
        raise UserError(f"GOOD names {good_library}, BAD {bad_library}: one library")
    if bad_variant.library != variant.library:
        raise UserError(f"the tree holds {variant.library} at GOOD and "
                        f"{bad_variant.library} at BAD")  # fmt: skip
    source = variant.line.local
    assert source is not None
    commits = localsource.commit_range(good_path, good_rev, bad_rev)
    for what, rev, sha in (("GOOD", good_rev, commits.good.sha),
                           ("BAD", bad_rev, commits.commits[-1].sha)):  # fmt: skip
        found = localsource.library_at(source.path, sha)
        if found != source.library:
            raise UserError(f"{what} ({rev}): {source.path} holds "
                            f"{f'a {found} tree' if found else 'no library tlsbench knows'} "
                            f"at {sha[:12]}, not {source.library}")  # fmt: skip
    known = figures(variant.name, catalog)
    chosen = figure or next(iter(known))
    if chosen not in known:
        raise UserError(f"unknown figure {chosen!r}; the figures (the instruction-mode points "
                        "of `tlsbench ab`'s default job, both sides or one, their instructions "
                        "or with `:atomics` their atomic operations): "
                        + ", ".join(known))  # fmt: skip
    picked = known[chosen]
    refused = modes.instruction_refusal(picked.point, variant)
    if refused:
        raise UserError(f"{variant.name}: bisect measures instructions, and {refused}")
    return Request(good, bad, variant, source, good_options, commits, picked, limit)


# -- the stored steps ----------------------------------------------------------------------


@dataclass
class Measured:
    """One commit measured, or why not (a skip)."""

    sha: str
    drivers_key: str  # the library build's key and the driver sources
    credentials: str = ""  # the digest of the certificate set the point ran with
    # measure (instructions, atomics) -> side -> count per operation
    counts: dict[str, dict[str, float]] = field(default_factory=dict)
    skipped: str = ""  # why: it does not build, its run failed
    # side -> its cost by function, a file in the state's folder
    costs: dict[str, str] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


class State:
    """The steps of every bisect of one tree, build options and job (the module's
    docstring): read once, rewritten atomically after each step."""

    def __init__(self, request: Request, root: Path | None = None) -> None:
        self.identity = {
            "tree": str(request.source.path),
            "library": request.source.library,
            "options": request.options,
            "point": request.figure.point.name,
            "point_options": request.figure.point.options,
        }
        digest = hashlib.sha256(json.dumps(self.identity, sort_keys=True).encode()).hexdigest()
        self.root = root or paths.cache_root() / "bisect"
        self.path = self.root / f"{digest[:24]}.json"
        self.files = self.root / digest[:24]
        self.steps: dict[str, Measured] = {}
        if self.path.exists():
            self._read()

    def _read(self) -> None:
        try:
            data = json.loads(self.path.read_text())
            if data.get("version") != STATE_VERSION:
                return  # an older layout: measured afresh, overwritten at the first step
            self.steps = {sha: Measured(**entry) for sha, entry in data["steps"].items()}
        except (OSError, ValueError, KeyError, TypeError) as exc:
            raise UserError(f"{self.path}: the stored steps cannot be read ({exc}); move the "
                            "file away to bisect afresh", exit_code=1) from exc  # fmt: skip

    @contextlib.contextmanager
    def held(self) -> Iterator[None]:
        """One bisect of this tree and job at a time (a second one would measure twice)."""
        self.root.mkdir(parents=True, exist_ok=True)
        with (self.root / f".{self.path.stem}.lock").open("w") as lock:
            try:
                fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                raise UserError(f"another bisect of {self.identity['tree']} with this job is "
                                "running; wait for it (its steps are then reused)",
                                exit_code=1) from None  # fmt: skip
            yield

    def known(self, sha: str, drivers_key: str, credentials: str) -> Measured | None:
        step = self.steps.get(sha)
        if step is None or (step.drivers_key, step.credentials) != (drivers_key, credentials):
            return None
        return step

    def store(self, step: Measured, costs: dict[str, SideCosts] | None = None) -> None:
        """The step, with each side's cost by function written first (so that the file never
        names one that is not there), the whole file replaced at once."""
        for side, side_costs in (costs or {}).items():
            self.files.mkdir(parents=True, exist_ok=True)
            name = f"{step.sha[:16]}-{step.drivers_key[:12]}-{step.credentials[:12]}.{side}.json.gz"
            tmp = self.files / f".{name}.tmp-{os.getpid()}"
            tmp.write_bytes(gzip.compress(json.dumps(side_costs.to_json()).encode()))
            os.replace(tmp, self.files / name)
            step.costs[side] = name
        self.steps[step.sha] = step
        data = {"version": STATE_VERSION, "identity": self.identity,
                "steps": {sha: s.to_json() for sha, s in self.steps.items()}}  # fmt: skip
        tmp = self.path.with_name(f".{self.path.name}.tmp-{os.getpid()}")
        tmp.write_text(json.dumps(data, indent=1) + "\n")
        os.replace(tmp, self.path)

    def costs(self, step: Measured) -> dict[str, SideCosts]:
        """The step's cost by function per side, as stored (none where a file is gone)."""
        found = {}
        for side, name in step.costs.items():
            try:
                data = json.loads(gzip.decompress((self.files / name).read_bytes()))
            except (OSError, ValueError):
                continue
            found[side] = SideCosts.from_json(data)
        return found


# -- measuring one commit ------------------------------------------------------------------


# One commit's point measured: (point, build, timeout) -> (each measure's count per
# operation and side, each side's cost by function; or {}, {} and why not).
Measure = Callable[[RunPoint, Build, float],
                   tuple[dict[str, dict[str, float]], dict[str, SideCosts], str]]  # fmt: skip


def measure(point: RunPoint, build: Build, timeout: float
            ) -> tuple[dict[str, dict[str, float]], dict[str, SideCosts], str]:  # fmt: skip
    """One instruction-mode run of the point (no heap run): instructions and atomic
    operations per operation and side with each side's cost by function, or why not."""
    outcome, by_side = modes.count_costs(point, build, timeout)
    if outcome.status != "ok" or outcome.output is None or not by_side:
        message = ((outcome.output or {}).get("error") or {}).get("message")
        last = (outcome.stderr_tail.strip().splitlines() or ["nothing on stderr"])[-1]
        return {}, {}, f"its run {outcome.status} ({message or last})"
    counts = {m: {side: c.per_operation(getattr(c, m)) for side, c in by_side.items()}
              for m in MEASURES}  # fmt: skip
    return counts, by_side, ""


def credentials_of(point: RunPoint) -> str:
    """The digest of the certificate set the point runs with (made if missing)."""
    return certs.digest(str(point.options.get("cert", "rsa2048")))


def first_line(text: str) -> str:
    return (text.strip().splitlines() or [""])[0]


# -- the session ---------------------------------------------------------------------------


@dataclass
class Step:
    """A line of the session: a commit, its figures or why it was skipped, its verdict."""

    sha: str
    subject: str
    verdict: str  # reference (GOOD) | good | bad | skip
    figures: dict[str, float]  # side -> the figure's count per operation
    reason: str = ""
    stored: bool = False


@dataclass
class Result:
    request: Request
    good: Step
    steps: list[Step]
    culprit: Step | None
    parent: Step | None  # the culprit's parent (the commit before it, or GOOD)
    candidates: list[Step]  # where skipped commits hide which one it is
    skipped: list[Step]  # skipped commits the answer could still be
    builds: int  # commits measured now (GOOD included), stored ones not counted
    changes: list[str]  # the culprit's function diff against its parent, as lines
    changes_missing: str  # why there is no function diff
    state: Path  # where the steps are stored

    @property
    def exit_status(self) -> int:
        return 0 if self.culprit is not None else 1


# The function diff of two commits' costs by function: (the parent's per side, the
# culprit's, what is counted, top N) -> lines. The caller gives it (function_diff below).
FunctionDiff = Callable[[dict[str, SideCosts], dict[str, SideCosts], str, int], list[str]]


def function_diff(before: dict[str, SideCosts], after: dict[str, SideCosts], measure: str,
                  top: int) -> list[str]:  # fmt: skip
    """Per side, the `top` functions whose count of `measure` per operation changed most
    between the parent and the culprit (both directions, core/costs.py's diff), each with
    its count before and after and its group, then the groups that moved."""
    lines: list[str] = []
    for side in sorted(after):
        if side not in before:
            continue
        diff = costs.diff_costs(before[side].regrouped(), after[side].regrouped(), top, measure)
        lines.append(f"{side}: {diff.before_total:,.0f} -> {diff.after_total:,.0f} {measure} "
                     "per operation")  # fmt: skip
        for change in diff.functions:
            if change.change(measure) == 0:
                continue
            was, now = change.before[measure], change.after[measure]
            group = costs.label_of(change.label, after[side].scope)
            lines.append(f"  {now - was:+,.0f}  {change.name} ({group}): "
                         f"{was:,.0f} -> {now:,.0f}")  # fmt: skip
        moved = [g for g in diff.groups if g.change(measure) != 0]
        if moved:
            lines.append("  groups: " + ", ".join(f"{g.label} {g.change(measure):+,.0f}"
                                                  for g in moved))  # fmt: skip
    return lines


class Session:
    """One bisect: GOOD measured first (the reference), then the search's questions."""

    def __init__(self, request: Request, catalog: Catalog, builder: Builder,
                 timeout: float, say: Callable[[str], None], state: State | None = None,
                 run: Measure | None = None) -> None:  # fmt: skip
        self.request, self.catalog, self.builder = request, catalog, builder
        self.timeout, self.say = timeout, say
        self.run_point = run or measure
        # The figures depend on the certificate set's keys: a step measured with another is
        # measured again (made first where missing, as a run makes them).
        self.credentials = credentials_of(request.figure.point)
        self.state = state or State(request)
        self.builds = 0
        self.reference: dict[str, float] = {}
        self._variants: dict[str, Variant | str] = {}

    def _variant(self, sha: str) -> Variant | str:
        """The commit's variant, or why the commit holds none (a skip)."""
        if sha not in self._variants:
            library = self.request.source.library
            found = localsource.library_at(self.request.source.path, sha)
            try:
                if found != library:
                    raise UserError(f"{'a ' + found if found else 'no'} tree of a library "
                                    "tlsbench knows")  # fmt: skip
                self._variants[sha] = self.catalog.resolve(self.request.spec_of(sha))
            except UserError as exc:
                self._variants[sha] = f"not a {library} tree here: {first_line(str(exc))}"
        return self._variants[sha]

    def stored(self, sha: str) -> Measured | None:
        """The commit's stored step, if it was measured with the build and drivers it would
        have now."""
        if sha not in self.state.steps:
            return None
        variant = self._variant(sha)
        if isinstance(variant, str):
            return None
        drivers_key = self.builder.drivers_key(self.builder.key(variant))
        return self.state.known(sha, drivers_key, self.credentials)

    def measure(self, sha: str) -> Measured:
        """The commit built (cached by content) and measured now, its step stored."""
        variant = self._variant(sha)
        if isinstance(variant, str):
            return Measured(sha, "", skipped=variant)
        drivers_key = self.builder.drivers_key(self.builder.key(variant))
        point = dataclasses.replace(self.request.figure.point, variant=variant.name)
        self.builds += 1
        try:
            build = self.builder.build(variant)
        except BuildError as exc:
            step = Measured(sha, drivers_key, self.credentials,
                            skipped=f"does not build: {first_line(str(exc))}")  # fmt: skip
            self.state.store(step)
            return step
        counts, by_side, why = self.run_point(point, build, self.timeout)
        step = Measured(sha, drivers_key, self.credentials, counts=counts, skipped=why)
        self.state.store(step, by_side)
        return step

    def figures(self, step: Measured) -> dict[str, float]:
        """The step's figure per side (empty for a skip)."""
        return dict(step.counts.get(self.request.figure.measure, {}))

    def verdict(self, step: Measured) -> bisection.Verdict:
        if step.skipped:
            return bisection.Verdict("skip", step.skipped)
        threshold = self.request.threshold
        figures = self.figures(step)
        moved = any(threshold.crossed(figures[side], self.reference[side])
                    for side in self.request.figure.sides)  # fmt: skip
        return bisection.Verdict("bad" if moved else "good")

    def line(self, label: str, commit: localsource.Commit, step: Step) -> str:
        figures = ", ".join(
            f"{side} {step.figures[side]:,.0f}"
            + ("" if step.verdict == "reference" else
               f" ({_change(step.figures[side], self.reference[side])})")
            for side in self.request.figure.sides if side in step.figures
        )  # fmt: skip
        what = figures if not step.reason else f"skipped: {step.reason}"
        stored = " (stored)" if step.stored else ""
        return f"{label} {commit.sha[:12]} {commit.subject[:60]}: {what}: {step.verdict}{stored}"

    def run(self, function_diff: FunctionDiff | None, top: int = 10) -> Result:
        request = self.request
        commits = request.commits.commits
        sides = request.figure.sides
        with self.state.held():
            good_sha = request.commits.good.sha
            good = self.stored(good_sha)
            good_stored = good is not None
            good = good or self.measure(good_sha)
            if good.skipped:
                raise UserError(f"GOOD ({request.good_spec}) cannot be measured: "
                                f"{good.skipped}; name a GOOD that builds and runs")  # fmt: skip
            self.reference = self.figures(good)
            good_step = Step(good.sha, request.commits.good.subject, "reference",
                             self.reference, stored=good_stored)  # fmt: skip
            self.say(self.line("GOOD", request.commits.good, good_step))
            if not request.threshold.relative:
                past = [s for s in sides if self.reference[s] > request.threshold.value]
                if past:
                    raise UserError(
                        "GOOD is already past the threshold: "
                        + ", ".join(f"{s} {self.reference[s]:,.0f}" for s in past)
                        + f" {request.figure.measure}, above {request.threshold.value:,.0f}; "
                        "raise --threshold or name an earlier GOOD"
                    )  # fmt: skip
            # What earlier sessions measured (an interrupted bisect, an overlapping range).
            measured = {i: m for i, c in enumerate(commits) if (m := self.stored(c.sha))}
            steps: dict[int, Step] = {}

            def ask(index: int) -> bisection.Verdict:
                measured[index] = self.measure(commits[index].sha)
                return self.verdict(measured[index])

            def seen(taken: bisection.Step) -> None:
                entry = measured[taken.index]
                steps[taken.index] = step = Step(
                    entry.sha, commits[taken.index].subject, taken.verdict.verdict,
                    self.figures(entry), taken.verdict.reason, taken.stored)  # fmt: skip
                self.say(self.line(f"[{len(steps)}]", commits[taken.index], step))

            known = {i: self.verdict(m) for i, m in measured.items()}
            outcome = bisection.first_bad(len(commits), ask, known, seen)
            culprit = steps[outcome.culprit] if outcome.culprit is not None else None
            parent: Step | None = None
            changes: list[str] = []
            missing = ""
            if outcome.culprit is not None:
                index = outcome.culprit
                parent = good_step if index == 0 else steps[index - 1]
                before = self.state.costs(good if index == 0 else measured[index - 1])
                after = self.state.costs(measured[index])
                if function_diff is None:
                    missing = "no function diff asked for"
                elif not before or set(before) != set(after):
                    missing = "the cost by function of one of the two commits is not stored"
                else:
                    changes = function_diff(before, after, request.figure.measure, top)
            return Result(
                request, good_step, [steps[s.index] for s in outcome.steps], culprit, parent,
                [steps[i] for i in outcome.candidates] if culprit is None else [],
                [steps[i] for i in outcome.skipped], self.builds, changes, missing,
                self.state.path,
            )  # fmt: skip


def _change(value: float, reference: float) -> str:
    delta = value - reference
    if reference == 0:
        return f"{delta:+,.0f}"
    return f"{delta:+,.0f}, {delta / reference:+.2%}"


def summary(result: Result) -> list[str]:
    """The closing lines: the culprit with its subject, figures and function diff, or why
    none is named; the builds against the bound."""
    request = result.request
    count = len(request.commits.commits)
    n = count + 1  # the range's commits, GOOD included
    lines = [""]
    if result.culprit is not None and result.parent is not None:
        c, p = result.culprit, result.parent
        lines.append(f"first commit past the threshold ({request.threshold.describe()}): "
                     f"{c.sha[:12]} {c.subject}")  # fmt: skip
        lines.append(f"  its parent: {p.sha[:12]} {p.subject}")
        for side in request.figure.sides:
            before, after = p.figures[side], c.figures[side]
            lines.append(f"  {side} {request.figure.measure} {before:,.0f} -> {after:,.0f} "
                         f"({_change(after, before)})")  # fmt: skip
        if result.changes:
            measure = request.figure.measure
            lines.append("  what changed against its parent, per operation (the functions "
                         f"whose {measure} moved most, then the groups):")  # fmt: skip
            lines += [f"    {line}" for line in result.changes]
        else:
            lines.append(f"  function diff: {result.changes_missing}")
    elif result.candidates:
        lines.append("skipped commits hide which commit moved first; it is one of:")
        lines += [f"  {s.sha[:12]} {s.subject}" + (f" (skipped: {s.reason})" if s.reason else "")
                  for s in result.candidates]  # fmt: skip
    else:
        lines.append(f"no commit moved past the threshold ({request.threshold.describe()}) "
                     f"in {request.figure.name}")  # fmt: skip
        if result.skipped:
            lines.append(
                "  but these were skipped, so cannot be told: "
                + ", ".join(f"{s.sha[:12]} ({s.reason})" for s in result.skipped)
            )
    bound = math.ceil(math.log2(n)) + 1
    lines.append(f"{result.builds} commits measured now for {n} commits in the range, GOOD "
                 f"included (at most ceil(log2 {n}) + 1 = {bound} without skips)")  # fmt: skip
    return lines


def to_json(result: Result) -> dict[str, Any]:
    def step(s: Step | None) -> dict[str, Any] | None:
        return None if s is None else dataclasses.asdict(s)

    request = result.request
    return {
        "tree": str(request.source.path),
        "library": request.source.library,
        "options": request.options,
        "figure": request.figure.name,
        "sides": list(request.figure.sides),
        "measure": request.figure.measure,
        "threshold": {"value": request.threshold.value, "relative": request.threshold.relative},
        "commits": len(request.commits.commits) + 1,
        "good": step(result.good),
        "steps": [step(s) for s in result.steps],
        "culprit": step(result.culprit),
        "parent": step(result.parent),
        "candidates": [step(s) for s in result.candidates],
        "skipped": [step(s) for s in result.skipped],
        "builds": result.builds,
        "function_changes": result.changes,
        "function_changes_missing": result.changes_missing,
        "state": str(result.state),
    }
