"""Tables as people read them: the columns engineers publish, numbers formatted for reading.

Markdown and HTML render these views; CSV and JSON export the model's raw rows instead, so
that no precision is lost there.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from tlsbench.reportkit.model import RunModel

SIGNIFICANT = 3  # digits kept for times and rates: more than a benchmark can resolve anyway


@dataclass(frozen=True)
class View:
    name: str  # the model table it shows
    title: str
    intro: str  # one sentence on what the figures are
    headers: list[str]
    numeric: list[bool]  # right-aligned columns
    rows: list[list[str]]
    # (heading, preformatted text) shown after the table, e.g. a failed point's stderr tail
    # ("stderr of VARIANT POINT") or a variant's config file
    details: list[tuple[str, str]] = field(default_factory=list)
    # Per cell, text shown on hover in HTML (same shape as rows; "" for none).
    titles: list[list[str]] = field(default_factory=list)


def fmt_bytes(value: float | None) -> str:
    """Whole bytes with thousands separators: 16536 -> 16,536."""
    return "-" if value is None else f"{value:,.0f}"


def p99_cell(value: float | None) -> str:
    return "n too small" if value is None else fmt_sig(value)


def fmt_sig(value: float | None, digits: int = SIGNIFICANT) -> str:
    """`digits` significant digits, never fewer than the integer part: 0.01234 -> 0.0123,
    1.234 -> 1.23, 123.4 -> 123, 12345.6 -> 12,346."""
    if value is None or not math.isfinite(value):
        return "-"
    if value == 0:
        return "0"
    if abs(value) >= 10 ** (digits - 1) - 0.5:
        return f"{value:,.0f}"
    # Round to significant digits first, so that a carry (9.996 -> 10.0) sets the decimals.
    rounded = float(f"{value:.{digits - 1}e}")
    decimals = max(0, digits - 1 - math.floor(math.log10(abs(rounded))))
    return f"{rounded:,.{decimals}f}"


def fmt_count(value: float | None) -> str:
    """Counts (allocations): whole when whole, else two decimals."""
    if value is None:
        return "-"
    return f"{value:,.0f}" if float(value).is_integer() else f"{value:,.2f}"


def fmt_ci(low: float | None, high: float | None) -> str:
    return f"{fmt_sig(low)} - {fmt_sig(high)}"


def fmt_range(low: float | None, high: float | None) -> str:
    """A projection's range: 794-1,191."""
    if low is None or high is None:
        return "-"
    return f"{fmt_sig(low)}-{fmt_sig(high)}"


def fmt_kib(value: float | None) -> str:
    return "-" if value is None else f"{value / 1024:,.1f}"


def fmt_size(value: int | None) -> str:
    return "default" if not value else f"{value:,}"


def variant_cell(row: Any) -> str:
    """The variant cell, marked where the row's figures rest on fewer repetitions, and with
    its machine where the run spans several."""
    failed = getattr(row, "failed", "")
    machine = getattr(row, "machine", "")
    variant = str(row.variant)
    if machine and not variant.endswith(f" @ {machine}"):  # a report of several runs has it
        variant += f" @ {machine}"
    return variant + (f" (partial: {failed})" if failed else "")


def _without_default_case(view: View) -> View:
    """Drops the `case` column when no point sets an option of its own: it would read
    "default" on every row."""
    if "case" not in view.headers:
        return view
    i = view.headers.index("case")
    if any(row[i] != "default" for row in view.rows):
        return view
    return View(
        view.name,
        view.title,
        view.intro,
        view.headers[:i] + view.headers[i + 1 :],
        view.numeric[:i] + view.numeric[i + 1 :],
        [row[:i] + row[i + 1 :] for row in view.rows],
        view.details,
        [row[:i] + row[i + 1 :] for row in view.titles],
    )


def views(model: RunModel) -> list[View]:
    """The report's tables in order; tables without rows are left out."""
    return [_without_default_case(v) for v in _views(model)]


def _views(model: RunModel) -> list[View]:
    from tlsbench.reportkit.summary import summary_view

    # The answer first (the headline figures per variant), then the run, then the details.
    first = summary_view(model)
    out: list[View] = [first] if first is not None else []
    out.append(
        View(
            "run",
            "Run",
            "",
            ["run", "experiment", "mode", "repetitions", "status", "started", "finished", "commit"],
            [True, False, False, True, False, False, False, False],
            [
                [
                    str(run.id),
                    run.experiment,
                    run.mode,
                    str(run.repetitions),
                    run.status,
                    run.started_at,
                    run.finished_at or "-",
                    run.commit,
                ]
                for run in (model.runs or [model.run])
            ],
        )
    )
    for section in _sections():
        out += section.views(model)
    if model.problems:
        out.append(
            View(
                "problems",
                "Unsupported and failed points",
                "`unsupported`: the library cannot honour the point (exit 3), never run with "
                "something else instead; `failed`: any other exit, a signal or a timeout.",
                ["variant", "point", "status", "repetitions", "exit", "signal", "stage",
                 "message"],
                [False, False, False, True, True, True, False, False],
                [
                    [r.variant, r.point, r.status, f"{r.bad_repetitions} of {r.repetitions}",
                     _opt(r.exit_code), _opt(r.signal), r.stage or "-", r.message]
                    for r in model.problems
                ],
                [(f"stderr of {r.variant} {r.point}", r.stderr_tail) for r in model.problems
                 if r.stderr_tail],
            )
        )  # fmt: skip
    if model.notes:
        out.append(
            View(
                "notes",
                "Notes",
                "What could make a figure less trustworthy: statistical warnings per series, "
                "driver warnings, and what could skew measurements on this machine.",
                ["subject", "kind", "message"],
                [False, False, False],
                [[n.subject, n.kind, n.message] for n in model.notes],
            )
        )
    if model.builds:
        out.append(
            View(
                "builds",
                "Builds",
                "The build of each variant: where its code came from (a pinned archive and "
                "its sha256, or a local tree or git commit: path, commit, tree id or digest "
                "of its files, and `dirty` for a work tree with changes not committed), its "
                "cache key (source hash, options, compiler, recipe) and the code-shaping "
                "flags its compiles really used, as recorded from the compiler's command "
                "lines (flags of every compile, then the others with how many compiles had "
                "them); a variant's own config files are shown whole below the table.",
                ["variant", "version", "source", "config", "cache key", "compile flags"],
                [False, False, False, False, False, False],
                [
                    [b.variant, b.version, b.source, b.config, b.cache_key, b.compile_flags]
                    for b in model.builds
                ],
                [
                    (f"{c.variant}: {c.option}={c.path} (sha256 {c.sha256[:12]})", c.text)
                    for c in model.config_files
                ],
            )
        )
    if model.machines:
        out.append(
            View(
                "machines",
                "Machines",
                "The machines that ran this run's results, side by side (a sharded run can "
                "span several; then each figure's variant says where it ran, as `variant @ "
                "machine`). CPU flags: how many, and those the other machines lack.",
                ["machine", "host", "CPU", "cores", "kernel", "tlsbench commit", "CPU flags",
                 "points", "results"],
                [False, False, False, True, False, False, False, True, True],
                [[m.machine, m.host, m.cpu_model, str(m.cores or "-"), m.kernel, m.commit,
                  m.cpu_flags, str(m.points), str(m.results)] for m in model.machines],
            )
        )  # fmt: skip
    if model.environment:
        out.append(
            View(
                "environment",
                "Environment",
                "Recorded with the run, so that every figure traces to its machine and code.",
                ["key", "value"],
                [False, False],
                [[e.key, e.value] for e in model.environment],
            )
        )
    return out


def _sections() -> tuple[Any, ...]:
    from tlsbench.scenarios import sections

    return sections()


def _opt(value: int | None) -> str:
    return "-" if value is None else str(value)
