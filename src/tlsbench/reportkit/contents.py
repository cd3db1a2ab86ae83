"""The whole report's contents in order, whatever the sections: its tables (the summary
first, then the run, each section's, and what every run has) and its plots (the overview,
then each section's). The exporters lay these out; the pieces come from views.py, plots.py,
summary.py and the sections the model was loaded with."""

from __future__ import annotations

from pathlib import Path

from tlsbench.reportkit.model import RunModel
from tlsbench.reportkit.plots import Plot, png_bytes, svg_text
from tlsbench.reportkit.summary import overview_plot, summary_view
from tlsbench.reportkit.views import View


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
    for section in model.sections:
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


def plots(model: RunModel) -> list[Plot]:
    """Every plot the run has data for, in report order (each family's section makes its
    own: src/tlsbench/scenarios/)."""
    overview = overview_plot(model)
    return ([overview] if overview else []) + [
        plot for section in model.sections for plot in section.plots(model)
    ]


def write_plots(model: RunModel, out_dir: Path) -> list[Path]:
    """Writes NAME.png and NAME.svg per plot into out_dir; returns the files written."""
    out_dir.mkdir(parents=True, exist_ok=True)
    written = []
    for plot in plots(model):
        png = out_dir / f"{plot.name}.png"
        png.write_bytes(png_bytes(plot.figure))
        svg = out_dir / f"{plot.name}.svg"
        svg.write_text(svg_text(plot.figure))
        written += [png, svg]
    return written


def _opt(value: int | None) -> str:
    return "-" if value is None else str(value)
