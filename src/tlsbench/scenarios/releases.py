"""A library's releases side by side: the `release-*` scenarios of the `releases` experiment.

Each scenario is one of the one-process TLS scenarios (or code-size) under another name:
`release-handshake` runs `handshake`, `release-resume` runs `resume`, `release-records` runs
`records`, `release-bulk` runs `bulk`, `release-code-size` runs `code-size`, each exactly as
its own family runs it (keys, checks, time and heap processes, modes). The names are their
own so that these points get a report of their own: a library's lines in release order, each
figure with the verdict of a release against the one before it, given by `tlsbench ab`'s
own logic (ab.compare_pair and ab.deterministic_verdict: Mann-Whitney on per-repetition
figures with a practical threshold for time; exact comparison for heap and code size).

Report: per library, a table of its figures across its releases (handshake CPU per side for
each certificate, resumption, heap peak per side on the first (cold) and a later (warm)
connection, 256-byte record latency, bulk throughput, code size where measured), each cell
with its change and verdict against the previous release; a plot per figure with the
release on the x axis; and a row per library saying what its newest release changed.
Releases are ordered by the version each build states (1.1.1w < 3.0.22 < 3.5.7 < 3.6.3),
never by the line's name.
"""

from __future__ import annotations

import dataclasses
import re
import statistics
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from tlsbench.core.points import RunPoint
from tlsbench.core.store import Point
from tlsbench.driver.declaration import Declared
from tlsbench.reportkit import ab
from tlsbench.reportkit.reader import RunReader
from tlsbench.reportkit.section import Section, SummaryCell, TableSpec
from tlsbench.reportkit.views import View, fmt_sig
from tlsbench.scenarios import code_size, tls
from tlsbench.scenarios.base import Family, PointChecker, RunContext

if TYPE_CHECKING:
    from tlsbench.builds.variants import Variant
    from tlsbench.driver.process import Outcome
    from tlsbench.reportkit.model import RunModel
    from tlsbench.reportkit.plots import Plot
    from tlsbench.reportkit.views import View

# Each experiment scenario and the scenario it runs.
INNER = {
    "release-handshake": "handshake",
    "release-resume": "resume",
    "release-records": "records",
    "release-bulk": "bulk",
    "release-code-size": "code-size",
}


def _family(scenario: str) -> Family:
    return code_size.FAMILY if INNER[scenario] == "code-size" else tls.FAMILY


class Releases(Family):
    """Delegates every question about a point to the family of the scenario it runs."""

    def driver_scenario(self, scenario: str) -> str | None:
        return _family(scenario).driver_scenario(INNER[scenario])

    def accepts(self, scenario: str, declared: Declared) -> tuple[str, ...]:
        return _family(scenario).accepts(INNER[scenario], declared)

    def check(self, checker: PointChecker, scenario: str, values: dict[str, Any],
              variant: Variant) -> None:  # fmt: skip
        _family(scenario).check(checker, INNER[scenario], values, variant)

    def run(self, point: RunPoint, ctx: RunContext) -> Outcome:
        inner = dataclasses.replace(point, scenario=INNER[point.scenario])
        return _family(point.scenario).run(inner, ctx)


# -- the report -------------------------------------------------------------------------------


@dataclass(frozen=True)
class Figure:
    """One figure of the table: where it comes from and how it reads."""

    label: str
    scenario: str  # the inner scenario of its point
    cert: str | None  # the point's certificate, where the experiment has several
    source: str  # a series (time), "heap:SIDE:FIGURE" or "code-size:ROLE"
    unit: str  # as shown
    scale: float = 1.0  # shown = stored x scale (ns -> ms)


FIGURES = (
    Figure("handshake CPU client, RSA-2048", "handshake", "rsa2048", "client_cpu_ns", "ms", 1e-6),
    Figure("handshake CPU server, RSA-2048", "handshake", "rsa2048", "server_cpu_ns", "ms", 1e-6),
    Figure("handshake CPU client, ECDSA P-256", "handshake", "ecdsa-p256", "client_cpu_ns", "ms",
           1e-6),
    Figure("handshake CPU server, ECDSA P-256", "handshake", "ecdsa-p256", "server_cpu_ns", "ms",
           1e-6),
    Figure("resumption CPU client", "resume", None, "client_cpu_ns", "ms", 1e-6),
    Figure("resumption CPU server", "resume", None, "server_cpu_ns", "ms", 1e-6),
    Figure("heap peak client, cold", "handshake", "rsa2048", "heap:client:peak_minus_start",
           "bytes"),
    Figure("heap peak server, cold", "handshake", "rsa2048", "heap:server:peak_minus_start",
           "bytes"),
    Figure("heap peak client, warm", "handshake", "rsa2048", "heap:client_warm:peak_minus_start",
           "bytes"),
    Figure("heap peak server, warm", "handshake", "rsa2048", "heap:server_warm:peak_minus_start",
           "bytes"),
    Figure("record write, 256 B", "records", None, "write_ns", "ns"),
    Figure("record read, 256 B", "records", None, "read_ns", "ns"),
    Figure("bulk throughput, sender", "bulk", None, "sender_MBps", "MB/s"),
    Figure("bulk throughput, receiver", "bulk", None, "receiver_MBps", "MB/s"),
    Figure("code size, client program", "code-size", None, "code-size:client", "bytes"),
    Figure("code size, server program", "code-size", None, "code-size:server", "bytes"),
)  # fmt: skip

# ab's verdicts as a release note reads them, by the figure's kind.
WORDS = {
    ("time", ab.REGRESSION): "slower",
    ("time", ab.IMPROVEMENT): "faster",
    ("heap", ab.REGRESSION): "heap grew",
    ("heap", ab.IMPROVEMENT): "heap shrank",
    ("code-size", ab.REGRESSION): "bigger",
    ("code-size", ab.IMPROVEMENT): "smaller",
}


def verdict_word(kind: str, verdict: str) -> str:
    return WORDS.get((kind, verdict), verdict)


def version_key(version: str) -> tuple[tuple[int, str], ...]:
    """Natural order of a release: numbers as numbers, letters after ("1.1.1w" < "3.0.22"
    < "3.5.7" < "3.6.3"; a Debian revision "3.7.9-2+deb12u5" sorts by its upstream first)."""
    return tuple(
        (int(p), "") if p.isdigit() else (-1, p) for p in re.findall(r"\d+|[a-z]+", version.lower())
    )


@dataclass(frozen=True)
class ReleaseRow:
    """One figure of one release: its value (median over repetitions of per-repetition
    figures, in `unit`), and the verdict against the library's previous release."""

    library: str
    variant: str
    release: str  # the version the build states
    position: int  # 0 for the library's oldest release in the run
    figure: str
    unit: str
    value: float | None
    against: str  # the previous release's variant ("" for the oldest)
    change: float | None  # value / previous value - 1
    verdict: str  # "" (oldest), faster, slower, heap grew, ..., no change, inconclusive
    how: str
    note: str = ""  # why there is no value: unsupported or failed, with the reason


@dataclass(frozen=True)
class ReleaseChangeRow:
    """What a library's newest release changed against the one before it."""

    library: str
    newest: str
    against: str
    worse: int
    better: int
    unchanged: int
    inconclusive: int
    changes: str  # each figure that moved, with its change


def _point_failure(reader: RunReader, point: Point) -> str:
    results = reader.results[point.id]
    if not results:
        return "not run"
    bad = next((r for r in results if r.status != "ok"), results[0])
    message = ((bad.output or {}).get("error") or {}).get("message") or bad.stderr_tail.strip()
    return f"{bad.status}: {str(message).splitlines()[-1] if message else bad.status}"


def _per_repetition(reader: RunReader, point: Point, source: str) -> list[float]:
    """The figure of each ok repetition of a point: a time series' median, a heap figure, a
    code size."""
    if source.startswith("heap:"):
        _, side, name = source.split(":")
        return [float(h[side][name]) for r in reader.ok(point) if r.output
                and (h := r.output.get("heap") or {}).get(side)]  # fmt: skip
    if source.startswith("code-size:"):
        role = source.split(":")[1]
        return [float(row["total"]) for r in reader.ok(point) if r.output
                for row in r.output.get("code_size") or [] if row.get("role") == role]  # fmt: skip
    reps = reader.store.samples_by_repetition(point.id, source)
    return [statistics.median(rep) for rep in reps if rep]


def _ab_verdict(verdicts: list[ab.Verdict], figure: Figure) -> ab.Verdict | None:
    """The verdict of `tlsbench ab` on this figure, among a point pair's."""
    if figure.source.startswith("heap:"):
        side, name = figure.source.split(":")[1:]
        wanted = f"{side} {ab.HEAP_FIGURES[name]}"
        return next((v for v in verdicts if v.figure == wanted), None)
    if figure.source.startswith("code-size:"):
        role = figure.source.split(":")[1]
        return next((v for v in verdicts if v.kind == "code-size"
                     and v.figure.startswith(f"{role} program")), None)  # fmt: skip
    return next((v for v in verdicts if v.figure == figure.source), None)


def _warm_verdict(base: list[float], candidate: list[float]) -> tuple[str, str]:
    """ab's verdict on a figure ab does not collect itself (a warm connection's heap)."""
    return ab.deterministic_verdict(base, candidate, ab.DEFAULT_THRESHOLDS["heap"], False,
                                    ab.JITTER.get("heap", 0.0), False)  # fmt: skip


def _point_of(reader: RunReader, points: list[Point], figure: Figure) -> Point | None:
    """A release's point of a figure (its scenario and certificate)."""
    for p in points:
        if INNER[p.scenario] == figure.scenario and (
            figure.cert is None or reader.params(p).get("cert") == figure.cert
        ):
            return p
    return None


def load_releases(reader: RunReader) -> dict[str, list[Any]]:
    points = reader.points_of(FAMILY.scenarios, ok=False)
    if not points:
        return {"releases": [], "release_changes": []}
    by_library: dict[str, dict[str, list[Point]]] = {}
    version: dict[str, str] = {}
    for p in points:
        by_library.setdefault(p.library, {}).setdefault(p.variant, []).append(p)
        version[p.variant] = str(p.build.get("version") or p.variant)
    reps = (reader.run.repetitions, reader.run.repetitions)
    rows: list[ReleaseRow] = []
    changes: list[ReleaseChangeRow] = []
    for library, variants in by_library.items():
        ordered = sorted(variants, key=lambda v: (version_key(version[v]), v))
        pair_verdicts: dict[tuple[str, str], list[ab.Verdict]] = {}
        library_rows: list[ReleaseRow] = []
        for position, variant in enumerate(ordered):
            previous = ordered[position - 1] if position else ""
            for figure in FIGURES:
                point = _point_of(reader, variants[variant], figure)
                if point is None:
                    continue
                values = _per_repetition(reader, point, figure.source)
                if not values and reader.ok(point):
                    continue  # the point ran but has no such figure (code size elsewhere)
                value = statistics.median(values) * figure.scale if values else None
                note = "" if values else _point_failure(reader, point)
                verdict, how, change = "", "", None
                before = _point_of(reader, variants[previous], figure) if previous else None
                if before is not None:
                    verdict, how, change = _against(reader, before, point, figure, reps,
                                                    pair_verdicts)  # fmt: skip
                library_rows.append(ReleaseRow(
                    library, variant, version[variant], position, figure.label, figure.unit,
                    value, previous, change, verdict, how, note))  # fmt: skip
        rows += library_rows
        if len(ordered) > 1:
            changes.append(_changes(library, ordered[-1], ordered[-2], version, library_rows))
    return {"releases": rows, "release_changes": changes}


def _against(reader: RunReader, before: Point, point: Point, figure: Figure,
             reps: tuple[int, int], cache: dict[tuple[str, str], list[ab.Verdict]]
             ) -> tuple[str, str, float | None]:  # fmt: skip
    """(verdict, how, change) of a figure of `point` against the same point of the previous
    release, by ab's logic."""
    before_values = _per_repetition(reader, before, figure.source)
    values = _per_repetition(reader, point, figure.source)
    change = None
    if before_values and values and statistics.median(before_values):
        change = statistics.median(values) / statistics.median(before_values) - 1
    key = (f"{before.variant} {before.name}", f"{point.variant} {point.name}")
    if key not in cache:
        # ab reads a point's figures by its scenario's name: give it the one it runs.
        a = dataclasses.replace(before, scenario=INNER[before.scenario])
        b = dataclasses.replace(point, scenario=INNER[point.scenario])
        cache[key] = ab.compare_pair(reader.store, a, b, ab.DEFAULT_THRESHOLDS, reps)
    verdicts = cache[key]
    run = [v for v in verdicts if v.kind == ab.RUN]
    if run:  # a point only one release runs, or that failed: its verdict is the point's
        first = run[0]
        word = {ab.REGRESSION: "no longer supported", ab.IMPROVEMENT: "newly supported"}.get(
            first.verdict, first.verdict
        )
        return word, first.how, change
    if not values:  # neither release runs it (both unsupported): nothing to compare
        return "", "", change
    if figure.source.startswith("heap:") and "_warm" in figure.source:
        if not before_values:
            return "", "", change
        verdict, how = _warm_verdict(before_values, values)
        return verdict_word("heap", verdict), how, change
    found = _ab_verdict(verdicts, figure)
    if found is None:
        return ab.INCONCLUSIVE, "no comparable figure in both releases", change
    return verdict_word(found.kind, found.verdict), found.how, change


NEUTRAL = ("", ab.NO_CHANGE, ab.INCONCLUSIVE)
WORSE = ("slower", "heap grew", "bigger", "no longer supported", ab.FAILED)


def _changes(library: str, newest: str, previous: str, version: dict[str, str],
             rows: list[ReleaseRow]) -> ReleaseChangeRow:  # fmt: skip
    mine = [r for r in rows if r.variant == newest and r.verdict]
    moved = [r for r in mine if r.verdict not in NEUTRAL]
    text = "; ".join(
        f"{r.figure} {r.verdict}" + (f" ({r.change:+.1%})" if r.change is not None else "")
        for r in moved
    )
    return ReleaseChangeRow(
        library=library,
        newest=f"{version[newest]} ({newest})",
        against=f"{version[previous]} ({previous})",
        worse=sum(1 for r in moved if r.verdict in WORSE),
        better=sum(1 for r in moved if r.verdict not in WORSE),
        unchanged=sum(1 for r in mine if r.verdict == ab.NO_CHANGE),
        inconclusive=sum(1 for r in mine if r.verdict == ab.INCONCLUSIVE),
        changes=text or "nothing measured moved",
    )


def _cell(row: ReleaseRow) -> str:
    if row.value is None:
        # The reason is in the view's details, once per release.
        status = row.note.split(":", 1)[0] if row.note else "no figure"
        return f"- ({status})"
    text = fmt_sig(row.value)
    if row.position == 0 or not row.verdict:
        return text
    change = f"{row.change:+.1%}, " if row.change is not None else ""
    return f"{text} ({change}{row.verdict})"


def releases_views(model: RunModel) -> list[View]:
    rows: list[ReleaseRow] = model.releases
    if not rows:
        return []
    out = []
    for library in dict.fromkeys(r.library for r in rows):
        mine = [r for r in rows if r.library == library]
        variants = list(dict.fromkeys(r.variant for r in sorted(mine, key=lambda r: r.position)))
        release = {r.variant: r.release for r in mine}
        table: list[list[str]] = []
        order = {f.label: i for i, f in enumerate(FIGURES)}
        for figure in sorted({r.figure for r in mine}, key=lambda label: order[label]):
            cells = {r.variant: r for r in mine if r.figure == figure}
            unit = next(iter(cells.values())).unit
            table.append([figure, unit, *(_cell(cells[v]) if v in cells else "-"
                                          for v in variants)])  # fmt: skip
        out.append(View(
            f"releases_{library}",
            f"Releases: {library}",
            "Each release of the library on the same job, oldest first (by version); a cell "
            "after the first gives its change and `tlsbench ab`'s verdict against the release "
            "before it: time by Mann-Whitney on per-repetition medians with a practical "
            "threshold (inconclusive below four repetitions per side), heap and code size "
            "exactly. CPU is the side's time inside its library calls per handshake; heap "
            "`cold` is the first connection's peak over the start, `warm` a later "
            "connection's on the same contexts.",
            ["figure", "unit", *(f"{release[v]} ({v})" for v in variants)],
            [False, False, *(True for _ in variants)],
            table,
            details=[(f"why {v} has no figure", note) for v, note in dict.fromkeys(
                (r.variant, r.note) for r in mine if r.value is None and r.note)],
        ))  # fmt: skip
    if model.release_changes:
        out.append(View(
            "release_changes",
            "What each newest release changed",
            "The newest release of each library against the one before it: the figures "
            "`tlsbench ab` calls worse (slower, heap grew, bigger, no longer supported) or "
            "better, those with no change, and each figure that moved.",
            ["library", "newest", "against", "worse", "better", "no change", "inconclusive",
             "what moved"],
            [False, False, False, True, True, True, True, False],
            [[r.library, r.newest, r.against, str(r.worse), str(r.better), str(r.unchanged),
              str(r.inconclusive), r.changes] for r in model.release_changes],
        ))  # fmt: skip
    return out


def releases_plots(model: RunModel) -> list[Plot]:
    """A plot per figure: a panel per library, its releases on the x axis, oldest first."""
    from tlsbench.reportkit.plots import Plot, figure

    rows: list[ReleaseRow] = model.releases
    plots = []
    for label in dict.fromkeys(r.figure for r in rows):
        mine = [r for r in rows if r.figure == label and r.value is not None]
        libraries = list(dict.fromkeys(r.library for r in mine))
        if not libraries:
            continue
        fig = figure(3.2 * len(libraries) + 1.0, 3.8)
        axes = fig.subplots(1, len(libraries), squeeze=False)[0]
        for ax, library in zip(axes, libraries, strict=True):
            points = sorted((r for r in mine if r.library == library), key=lambda r: r.position)
            xs = list(range(len(points)))
            ax.plot(xs, [r.value for r in points], marker="o")
            for x, r in zip(xs, points, strict=True):
                if r.verdict not in NEUTRAL:
                    color = "tab:red" if r.verdict in WORSE else "tab:green"
                    ax.annotate(
                        r.verdict,
                        (x, r.value),
                        textcoords="offset points",
                        xytext=(0, 6),
                        ha="center",
                        fontsize="x-small",
                        color=color,
                    )
            ax.set_xticks(xs, [r.release for r in points], rotation=30, fontsize="small")
            ax.set_title(library)
            ax.set_ylabel(points[0].unit)
            ax.set_ylim(bottom=0)
            ax.grid(alpha=0.3)
        fig.suptitle(f"{label} by release")
        slug = re.sub(r"[^a-z0-9]+", "-", label.lower()).strip("-")
        plots.append(Plot(f"releases-{slug}", f"{label} by release", "release_changes", fig))
    return plots


def releases_summary(model: RunModel) -> list[SummaryCell]:
    """Per newest release: how many figures its predecessor did better and worse."""
    cells = []
    for row in model.release_changes:
        variant = row.newest.rsplit("(", 1)[-1].rstrip(")")
        cells.append(SummaryCell(variant, "vs previous release", float(row.worse - row.better),
                                 f"{row.worse} worse, {row.better} better",
                                 f"against {row.against}"))  # fmt: skip
    return cells


FAMILY = Releases(
    "releases",
    tuple(INNER),
    sections=(
        Section("releases", 27,
                (TableSpec("releases", "releases", "Releases", ReleaseRow),
                 TableSpec("release_changes", "release_changes",
                           "What each newest release changed", ReleaseChangeRow)),
                load_releases, views=releases_views, plots=releases_plots,
                summary=releases_summary),
    ),
)  # fmt: skip
