"""A run of the results store as the report's loaders read it: its points, their results
and what the driver resolved, with the helpers every section's loader shares (labels of the
options that tell points apart, statistics with their warnings noted).

Each family's section (src/tlsbench/scenarios/) reads its own rows through a RunReader;
reportkit/model.py assembles them with the rows every run has (problems, builds, notes).
"""

from __future__ import annotations

import json
import signal
import statistics
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from tlsbench.core.stats import sample_warnings, summarize  # scipy: for reports only
from tlsbench.core.store import Point, Store

if TYPE_CHECKING:
    from tlsbench.core.stats import StatWarning, Summary

# Driver options that tell two points of one table apart, in the order labels show them.
CASE_KEYS = (
    "tls", "suite", "kx", "group", "key_share", "sigalg", "cert", "chain", "auth", "record_size",
    "payload", "bytes", "aead", "accel", "transport", "io", "rtt_ms", "loss", "rate",
    "allocator",
)  # fmt: skip
SIDES = ("client", "server")
BASELINE_VARIANT = "null"


@dataclass(frozen=True)
class RunInfo:
    id: int
    experiment: str
    question: str
    mode: str
    repetitions: int
    status: str
    started_at: str
    finished_at: str | None
    commit: str


@dataclass(frozen=True)
class NoteRow:
    subject: str
    kind: str
    message: str


@dataclass
class Result:
    repetition: int
    status: str
    exit_code: int | None
    signal: int | None
    output: dict[str, Any] | None
    stderr_tail: str
    machine_id: int | None = None


def signal_name(number: int) -> str:
    try:
        return signal.Signals(number).name
    except ValueError:
        return "unknown"


def int_or_none(value: Any) -> int | None:
    return int(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def format_option(key: str, value: Any) -> str:
    if key == "tls":
        return f"TLS {value}"
    if key == "record_size":  # 0 is the library's default size: nothing worth a label
        return f"records {value}" if value else ""
    if key == "payload":
        return f"{value} B"
    if key == "bytes":
        return f"{int(value):,} bytes"
    if key in ("chain", "auth", "accel", "kx", "allocator"):
        return f"{key} {value}"
    if key == "rtt_ms":
        return f"RTT {value} ms"
    if key == "key_share":
        return f"HRR (key share {value} first)"
    if key == "loss":
        return f"loss {value} %"
    if key == "rate":  # load: transactions offered per second (open loop)
        return f"{value} tx/s offered"
    return str(value)


def case_labels(
    params: dict[int, dict[str, Any]],
    always: Iterable[str] = (),
    skip: Iterable[str] = (),
) -> dict[int, str]:
    """Per point id, the options that differ between the points of one table.

    Options every point shares are left out so that labels stay short; `always` keys are
    shown anyway (handshakes are reported per suite).
    """
    keep = set(always)
    dropped = set(skip)
    shown = [
        key
        for key in CASE_KEYS
        if key not in dropped
        and (
            key in keep
            or len({json.dumps(p.get(key), sort_keys=True) for p in params.values()}) > 1
        )
    ]
    labels = {}
    for point_id, p in params.items():
        parts = [format_option(k, p[k]) for k in shown if p.get(k) not in (None, "")]
        labels[point_id] = " ".join(part for part in parts if part) or "default"
    return labels


class RunReader:
    """One run read from the store: its points and their results."""

    def __init__(self, store: Store, run_id: int | str) -> None:
        self.store = store
        row = store.run(run_id)
        self.run = RunInfo(
            id=int(row["id"]),
            experiment=str(row["experiment"]),
            question=str(row["question"]),
            mode=str(row["mode"]),
            repetitions=int(row["repetitions"]),
            status=store.status_of(row),
            started_at=str(row["started_at"]),
            finished_at=row["finished_at"],
            commit=str(row["commit_id"]),
        )
        self.environment: dict[str, Any] = json.loads(row["environment"] or "{}")
        self.points = store.points(self.run.id)
        self.results: dict[int, list[Result]] = {
            p.id: [
                Result(
                    repetition=int(r["repetition"]),
                    status=str(r["status"]),
                    exit_code=r["exit_code"],
                    signal=r["signal"],
                    output=json.loads(r["output"]) if r["output"] else None,
                    stderr_tail=str(r["stderr_tail"] or ""),
                    machine_id=r["machine_id"],
                )
                for r in store.results(p.id)
            ]
            for p in self.points
        }
        self.notes: list[NoteRow] = []
        count = int(row["shard_count"] or 1)
        missing = store.missing_shards(self.run.id) if count > 1 else []
        if missing:
            self.notes.append(NoteRow(
                "run", "missing shards",
                f"not every shard is done ({', '.join(m.describe(count) for m in missing)}): "
                "their points have no figures yet",
            ))  # fmt: skip
        self.machine_rows = store.machines_of_run(self.run.id)

    def ok(self, point: Point) -> list[Result]:
        return [r for r in self.results[point.id] if r.status == "ok" and r.output is not None]

    def params(self, point: Point) -> dict[str, Any]:
        """What the driver resolved (defaults filled in), with the point's own options on top
        (`accel` exists only in the point)."""
        resolved: dict[str, Any] = {}
        for result in self.results[point.id]:
            if result.output and isinstance(result.output.get("params"), dict):
                resolved = dict(result.output["params"])
                break
        resolved.update(point.params)
        return resolved

    def summarize(self, point: Point, series: str, groups: Sequence[Sequence[float]]) -> Summary:
        summary = summarize(groups)
        self.note_warnings(f"{point.variant} {point.name}", series, sample_warnings(summary))
        return summary

    def note_warnings(self, subject: str, series: str, warnings: list[StatWarning]) -> None:
        for w in warnings:
            self.notes.append(NoteRow(subject, w.kind.value, f"{series}: {w.message}"))

    # -- tables -----------------------------------------------------------------------------

    def points_of(self, scenarios: Iterable[str], ok: bool = True) -> list[Point]:
        """The run's points of these scenarios (with an ok result, unless `ok` is False: then
        those with any result)."""
        wanted = set(scenarios)
        return [p for p in self.points if p.scenario in wanted
                and (self.ok(p) if ok else self.results[p.id])]  # fmt: skip

    def median_of(self, point: Point, series: str) -> float | None:
        """The median of a series over every repetition of a point, None without samples."""
        values = self.store.samples(point.id, series)
        return statistics.median(values) if values else None

    def failure(self, point: Point) -> tuple[str, str]:
        """(result, detail) of a point that ran in two processes: ok, or the first
        repetition's status and message."""
        if self.ok(point):
            return "ok", ""
        bad = self.results[point.id][0]
        error = (bad.output or {}).get("error") or {}
        return bad.status, str(error.get("message") or f"exit {bad.exit_code}")


def number(value: Any) -> float | None:
    return float(value) if value is not None else None
