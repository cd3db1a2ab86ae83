"""A run of the results store read into plain rows, one list per report table.

Every figure of every report format comes from here, computed once: the exporters only
format and lay out. Each scenario family's section (src/tlsbench/scenarios/) reads its own
rows through a RunReader (reader.py), in report order; this module adds what every run has
(unsupported and failed points, notes, builds, machines, the environment) and marks the rows
of points that ran on several machines or lost repetitions. Figures follow
docs/methodology.md: a repetition is one driver process, so one figure each; times are
summarised by `tlsbench.core.stats` with the repetition as the unit (the median over
repetitions of each repetition's median, and a 95 % CI that resamples repetitions).
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Sequence
from dataclasses import dataclass, field, fields
from typing import Any

from tlsbench.core.stats import environment_warnings
from tlsbench.core.store import Store
from tlsbench.reportkit.reader import (
    BASELINE_VARIANT,
    SIDES,
    NoteRow,
    RunInfo,
    RunReader,
    case_labels,
    int_or_none,
    signal_name,
)
from tlsbench.reportkit.section import Section, TableSpec

__all__ = ["BASELINE_VARIANT", "SIDES", "NoteRow", "RunInfo", "RunModel", "case_labels",
           "load_run", "load_runs"]  # fmt: skip

STDERR_LINES = 12  # a failed point's stderr tail as reports show it (the store keeps more)


@dataclass(frozen=True)
class EnvironmentRow:
    key: str
    value: str


@dataclass(frozen=True)
class ProblemRow:
    variant: str
    library: str
    point: str
    scenario: str
    status: str  # "unsupported", "failed", or "missing" (no result stored)
    bad_repetitions: int
    repetitions: int
    exit_code: int | None
    signal: int | None
    stage: str
    message: str
    stderr_tail: str


@dataclass(frozen=True)
class BuildRow:
    """One build the run's figures come from: the exact code and how it was compiled."""

    variant: str
    version: str
    cache_key: str
    compile_flags: str
    # Where the code came from: a pinned archive and its sha256, or a local tree or commit
    # (path, commit, tree id or digest of its files, dirty).
    source: str = "-"
    dirty: bool | None = None  # a local work tree with changes not committed
    # The variant's own config files: "config=PATH (sha256 ...)" (ConfigFileRow: the text).
    config: str = "-"


@dataclass(frozen=True)
class ConfigFileRow:
    """A config file a variant was built with (config=FILE...), whole, as stored with the run."""

    variant: str
    option: str  # config, user-config, user-settings, configure-file
    path: str
    sha256: str
    text: str


@dataclass(frozen=True)
class MachineRow:
    """A machine that ran results of the run (host, CPU, kernel, tlsbench commit): one row
    each, side by side, with the CPU flags that set it apart from the others."""

    machine: str  # the label its figures carry where the run spans several machines
    host: str
    cpu_model: str
    cores: int | None
    kernel: str
    commit: str
    cpu_flags: str  # how many, and those only some of the machines have
    points: int
    results: int


@dataclass(frozen=True)
class Table:
    name: str
    title: str
    row_type: type
    rows: Sequence[Any]

    def columns(self) -> list[str]:
        return [f.name for f in fields(self.row_type)]


def figure_tables(sections: Sequence[Section]) -> dict[str, TableSpec]:
    """The sections' tables by their attribute on the model (model.memory), in report
    order."""
    return {t.attr: t for s in sections for t in s.tables}


@dataclass
class RunModel:
    run: RunInfo
    environment: list[EnvironmentRow] = field(default_factory=list)
    # Each section's rows by table (model.memory, model.interop): what the families read.
    figures: dict[str, list[Any]] = field(default_factory=dict)
    problems: list[ProblemRow] = field(default_factory=list)
    notes: list[NoteRow] = field(default_factory=list)
    builds: list[BuildRow] = field(default_factory=list)
    machines: list[MachineRow] = field(default_factory=list)
    config_files: list[ConfigFileRow] = field(default_factory=list)
    variants: list[str] = field(default_factory=list)  # in point order: stable plot colours
    # A report of several runs side by side (load_runs): every run, the first is `run`.
    runs: list[RunInfo] = field(default_factory=list)
    # The report's sections in report order, as the model was loaded with them (the
    # families' own: src/tlsbench/report/ passes them in).
    sections: tuple[Section, ...] = ()

    def __getattr__(self, name: str) -> list[Any]:
        """A section's table (model.handshakes), empty where the run has no such rows."""
        if name.startswith("__") or name in ("figures", "sections"):
            raise AttributeError(name)
        figures = self.__dict__.get("figures", {})
        if name in figures:
            return figures[name]
        if name in figure_tables(self.__dict__.get("sections", ())):
            return []
        raise AttributeError(f"a run model has no table {name!r}")

    def tables(self) -> list[Table]:
        """Every table, in report order (the run itself is a one-row table)."""
        return [
            Table("run", "Run", RunInfo, [self.run]),
            *(Table(t.name, t.title, t.row_type, getattr(self, t.attr))
              for t in figure_tables(self.sections).values() if t.title is not None),
            Table("problems", "Unsupported and failed points", ProblemRow, self.problems),
            Table("notes", "Notes", NoteRow, self.notes),
            Table("builds", "Builds", BuildRow, self.builds),
            Table("machines", "Machines", MachineRow, self.machines),
            Table("config_files", "Config files", ConfigFileRow, self.config_files),
            Table("environment", "Environment", EnvironmentRow, self.environment),
        ]  # fmt: skip


# -- helpers --------------------------------------------------------------------------------


def describe_compile_flags(recorded: dict[str, Any] | None) -> str:
    """One line for reports: the flags of every compile, then the others with their counts."""
    if not recorded:
        return "not recorded"
    total = recorded["compiles"]
    flags: dict[str, int] = recorded["flags"]
    everywhere = [flag for flag, n in flags.items() if n == total]
    some = [f"{flag} ({n})" for flag, n in flags.items() if n < total]
    text = f"{total} compiles: " + (" ".join(everywhere) or "no flag in all")
    if some:
        text += "; in some: " + " ".join(some[:8]) + (" ..." if len(some) > 8 else "")
    return text


def describe_source(source: dict[str, Any]) -> str:
    """One line naming where a build's code came from (its manifest's `source`)."""
    kind = str(source.get("kind", ""))
    if kind.startswith("local-"):
        where = str(source.get("path"))
        commit = str(source.get("commit") or "")[:12]
        if source.get("tree"):
            content = f"tree {str(source['tree'])[:12]}"
        else:
            content = f"files sha256 {str(source.get('sha256'))[:12]}"
        if kind == "local-commit":
            return f"git {where}#{source.get('rev')}: commit {commit}, {content}"
        if kind == "local-worktree":
            state = "dirty" if source.get("dirty") else "clean"
            return f"git work tree {where} at {commit or 'no commit'}, {state}: {content}"
        return f"folder {where} (not in git): {content}"
    if kind in ("debian", "crate"):
        return f"{source.get('file')} sha256 {str(source.get('sha256'))[:12]}"
    return "-"


def _flatten_environment(env: dict[str, Any], prefix: str = "") -> list[EnvironmentRow]:
    rows: list[EnvironmentRow] = []
    for key, value in env.items():
        name = f"{prefix}{key}"
        if name == "warnings":
            continue  # shown (and exported) as notes, with the other warnings
        if isinstance(value, dict) and value and all(isinstance(v, bool) for v in value.values()):
            # Flag sets (CPU crypto flags, library features) read best as one line.
            present = [k for k, v in value.items() if v]
            absent = [k for k, v in value.items() if not v]
            text = ", ".join(present) or "none"
            if absent:
                text += f" (absent: {', '.join(absent)})"
            rows.append(EnvironmentRow(name, text))
        elif isinstance(value, dict):
            rows.extend(_flatten_environment(value, f"{name}."))
        elif isinstance(value, list):
            sep = "; " if key == "warnings" else " "
            rows.append(EnvironmentRow(name, sep.join(str(v) for v in value) or "none"))
        elif value is None:
            rows.append(EnvironmentRow(name, "unknown"))
        elif isinstance(value, bool):
            rows.append(EnvironmentRow(name, "yes" if value else "no"))
        else:
            rows.append(EnvironmentRow(name, str(value)))
    return rows


class _Loader(RunReader):
    """The run's own tables beside the sections' (problems, notes, builds, machines)."""

    def __init__(self, store: Store, run_id: int | str, sections: Sequence[Section]) -> None:
        super().__init__(store, run_id)
        self.sections = tuple(sections)
        self.tables = figure_tables(sections)

    def problems(self) -> list[ProblemRow]:
        rows = []
        for p in self.points:
            results = self.results[p.id]
            bad = [r for r in results if r.status != "ok"]
            if results and not bad:
                continue
            first = bad[0] if bad else None
            error = (first.output or {}).get("error", {}) if first else {}
            if first is None:
                status, message = "missing", "no result stored (interrupted run?)"
            else:
                # One failed repetition makes the point suspect even if others passed.
                status = "failed" if any(r.status == "failed" for r in bad) else "unsupported"
                message = str(error.get("message") or "")
                if not message:
                    message = (
                        f"killed by signal {first.signal} ({signal_name(first.signal)})"
                        if first.signal
                        else f"exit {first.exit_code} without a message (see its stderr below)"
                        if first.output is not None
                        else "no JSON output from the driver"
                    )
            tail = first.stderr_tail.rstrip("\n").splitlines()[-STDERR_LINES:] if first else []
            rows.append(
                ProblemRow(
                    variant=p.variant,
                    library=p.library,
                    point=p.name,
                    scenario=p.scenario,
                    status=status,
                    bad_repetitions=len(bad),
                    repetitions=len(results),
                    exit_code=first.exit_code if first else None,
                    signal=first.signal if first else None,
                    stage=str(error.get("stage") or ""),
                    message=message,
                    stderr_tail="\n".join(tail),
                )
            )
        return rows

    def driver_and_environment_notes(self) -> list[NoteRow]:
        notes = []
        stored = self.environment.get("warnings")
        if isinstance(stored, list):
            notes += [NoteRow("environment", "environment", str(w)) for w in stored]
        elif isinstance(self.environment.get("cpu"), dict):
            for w in environment_warnings(self.environment["cpu"]):
                notes.append(NoteRow("environment", w.kind.value, w.message))
        seen: set[tuple[str, str]] = set()
        for p in self.points:
            for result in self.ok(p):
                # The CPU code paths the library selected, as it reports them: shows that
                # accel = "off" is in effect (once per variant and accel setting).
                cpu_paths = (result.output or {}).get("cpu_paths")
                if cpu_paths:
                    subject = p.variant + (" accel-off" if p.params.get("accel") == "off" else "")
                    if (subject, cpu_paths) not in seen:
                        seen.add((subject, cpu_paths))
                        notes.append(NoteRow(subject, "cpu paths", str(cpu_paths)))
                # Emulated targets (armhf under qemu-user): heap only, time not measured.
                # ("measure" is the runner's dict, or the driver's own string in
                # instruction mode.)
                measure = (result.output or {}).get("measure")
                not_timed = measure.get("time_not_measured") if isinstance(measure, dict) else None
                if not_timed and (p.variant, str(not_timed)) not in seen:
                    seen.add((p.variant, str(not_timed)))
                    notes.append(NoteRow(p.variant, "time not measured", str(not_timed)))
                for message in (result.output or {}).get("warnings", []):
                    # The same warning from every point of a variant says one thing once.
                    if (p.variant, message) not in seen:
                        seen.add((p.variant, message))
                        notes.append(NoteRow(p.variant, "driver", str(message)))
        return notes

    def builds(self) -> list[BuildRow]:
        """Each variant's build once (a code-size or firmware point's build too)."""
        rows: dict[str, BuildRow] = {}
        for p in self.points:
            if p.variant in rows or not p.build:
                continue
            source = p.build.get("source") or {}
            rows[p.variant] = BuildRow(
                variant=p.variant,
                version=str(p.build.get("version") or "-"),
                cache_key=str(p.build.get("cache_key") or "-")[:16],
                compile_flags=describe_compile_flags(p.build.get("compile_flags")),
                source=describe_source(source),
                dirty=source.get("dirty"),
                config="; ".join(f"{f['option']}={f['path']} (sha256 {f['sha256'][:12]})"
                                 for f in p.build.get("config_files") or []) or "-",
            )  # fmt: skip
        return list(rows.values())

    def config_files(self) -> list[ConfigFileRow]:
        """Each variant's own config files, once per variant."""
        rows: dict[tuple[str, str], ConfigFileRow] = {}
        for p in self.points:
            for f in p.build.get("config_files") or []:
                rows.setdefault((p.variant, f["option"]), ConfigFileRow(
                    p.variant, str(f["option"]), str(f["path"]), str(f["sha256"]),
                    str(f["text"])))  # fmt: skip
        return list(rows.values())

    def machine_labels(self) -> dict[int, str]:
        """Machine id -> its label: the host name, with the machine's number where one host
        name stands for several machines (another kernel, CPU or commit)."""
        hosts = [str(m["host"]) for m in self.machine_rows]
        return {
            int(m["id"]): str(m["host"]) if hosts.count(str(m["host"])) == 1
            else f"{m['host']} #{m['id']}"
            for m in self.machine_rows
        }  # fmt: skip

    def machines(self) -> list[MachineRow]:
        labels = self.machine_labels()
        flags = {int(m["id"]): set(str(m["cpu_flags"]).split()) for m in self.machine_rows}
        common = set.intersection(*flags.values()) if flags else set()
        rows = []
        for m in self.machine_rows:
            mine = flags[int(m["id"])]
            only = sorted(mine - common)
            facts = json.loads(m["facts"] or "{}")
            points = sum(
                1 for p in self.points
                if any(r.machine_id == m["id"] for r in self.results[p.id])
            )  # fmt: skip
            rows.append(MachineRow(
                machine=labels[int(m["id"])], host=str(m["host"]),
                cpu_model=str(m["cpu_model"]), cores=int_or_none(facts.get("cores")),
                kernel=str(m["kernel"]), commit=str(m["commit_id"]),
                cpu_flags=f"{len(mine)}" + (f"; only here: {' '.join(only)}" if only else ""),
                points=points, results=int(m["results"]),
            ))  # fmt: skip
        return rows

    def mark_machines(self, model: RunModel, always: bool = False) -> None:
        """Where the run's results come from several machines (or `always`), every figure
        row says which machine(s) its point ran on, so that machines read side by side."""
        labels = self.machine_labels()
        if len(labels) < 2 and not (always and labels):
            return
        marks = {}
        for p in self.points:
            ids = sorted({r.machine_id for r in self.results[p.id] if r.machine_id is not None})
            if ids:
                marks[(p.variant, p.name)] = ", ".join(labels[i] for i in ids)
        for name, rows in model.figures.items():
            if _has_field(self.tables[name].row_type, "machine"):
                model.figures[name] = [
                    dataclasses.replace(r, machine=marks.get((r.variant, r.point), ""))
                    for r in rows
                ]

    def model(self) -> RunModel:
        # Sections in report order, so that their statistical notes come in that order too.
        figures: dict[str, list[Any]] = {}
        for section in self.sections:
            figures.update(section.load(self))
        model = RunModel(
            run=self.run,
            environment=_flatten_environment(self.environment),
            figures=figures,
            problems=self.problems(),
            builds=self.builds(),
            machines=self.machines(),
            config_files=self.config_files(),
            variants=list(dict.fromkeys(p.variant for p in self.points)),
            sections=self.sections,
        )
        model.notes = self.driver_and_environment_notes() + self.notes
        self.mark_partly_failed(model)
        self.mark_machines(model)
        return model

    def partly_failed(self) -> dict[tuple[str, str], str]:
        """(variant, point) -> "k of n repetitions failed", for points with figures that
        rest on fewer repetitions than the run asked for."""
        marks = {}
        for p in self.points:
            failed = sum(1 for r in self.results[p.id] if r.status == "failed")
            if failed and self.ok(p):
                marks[(p.variant, p.name)] = (
                    f"{failed} of {self.run.repetitions} repetitions failed"
                )
        return marks

    def mark_partly_failed(self, model: RunModel) -> None:
        marks = self.partly_failed()
        if not marks:
            return
        for name, rows in model.figures.items():
            if _has_field(self.tables[name].row_type, "failed"):
                model.figures[name] = [
                    dataclasses.replace(r, failed=marks[(r.variant, r.point)])
                    if (r.variant, r.point) in marks
                    else r
                    for r in rows
                ]


def _has_field(row_type: type, name: str) -> bool:
    return any(f.name == name for f in fields(row_type))


def load_run(store: Store, run_id: int | str, sections: Sequence[Section]) -> RunModel:
    """Reads run `run_id` (a number or "latest") of `store` into a RunModel, with the
    tables of `sections` (the report's: tlsbench.report.load_run passes them)."""
    return _Loader(store, run_id, sections).model()


def load_runs(store: Store, run_ids: Sequence[int | str], sections: Sequence[Section]) -> RunModel:
    """Several runs side by side (the same experiment on several machines, say): one model
    whose every figure row is labelled `variant @ machine`, so that tables and plots keep
    the machines apart. A run's label is its machine's host name (with its run number where
    two runs share a host). One run: load_run."""
    if len(run_ids) == 1:
        return load_run(store, run_ids[0], sections)
    loaders = [_Loader(store, r, sections) for r in run_ids]
    hosts = [", ".join(sorted(loader.machine_labels().values())) or f"run {loader.run.id}"
             for loader in loaders]  # fmt: skip
    labels = [h if hosts.count(h) == 1 else f"{h} run {loader.run.id}"
              for h, loader in zip(hosts, loaders, strict=True)]  # fmt: skip
    models = []
    for loader, label in zip(loaders, labels, strict=True):
        model = loader.model()
        for name, rows in model.figures.items():
            row_type = loaders[0].tables[name].row_type
            mark = {"machine": label} if _has_field(row_type, "machine") else {}
            model.figures[name] = [dataclasses.replace(r, variant=f"{r.variant} @ {label}", **mark)
                                   for r in rows]  # fmt: skip
        model.variants = [f"{v} @ {label}" for v in model.variants]
        model.notes = [dataclasses.replace(n, subject=f"{n.subject} ({label})")
                       for n in model.notes]  # fmt: skip
        models.append(model)
    first = models[0]
    combined = RunModel(run=first.run, runs=[m.run for m in models],
                        environment=first.environment, sections=first.sections)  # fmt: skip
    for name in loaders[0].tables:
        combined.figures[name] = [row for m in models for row in m.figures.get(name, [])]
    for name in ("problems", "notes", "variants"):
        setattr(combined, name, [row for m in models for row in getattr(m, name)])
    combined.builds = list({(b.variant, b.cache_key): b for m in models for b in m.builds}.values())
    combined.machines = list({(r.host, r.cpu_model, r.kernel, r.commit): r
                              for m in models for r in m.machines}.values())  # fmt: skip
    return combined
