"""A run of the results store read into plain rows, one list per report table.

Every figure of every report format comes from here, computed once: the exporters only
format and lay out. Figures follow the README's Methodology section:

- heap (handshake, resume): the median over a point's ok repetitions of each figure the
  driver reports per side (a repetition is one driver process, so one figure each);
- handshake time: client + server CPU ns of each handshake, summarised by `tlsbench.stats`
  with the repetition as the unit (the median over repetitions of each repetition's median,
  and a 95 % CI that resamples repetitions); handshakes per second = 1e9 / that median (the
  CI maps through the same monotone function);
- record latency: write_ns and read_ns per repetition, summarised the same way; p99 only
  where every repetition has enough samples for a tail ("n too small" otherwise);
  allocations per record = the mean of write_allocs / read_allocs;
- bulk: sender_MBps and receiver_MBps per repetition, median and CI as above;
- AEAD: the median over repetitions of the driver's own per-run figures (each already the
  median of its `runs` measurements).
"""

from __future__ import annotations

import dataclasses
import json
import signal
import statistics
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, fields
from typing import Any

import numpy as np

from tlsbench import findings
from tlsbench.stats import StatWarning, Summary, environment_warnings, sample_warnings, summarize
from tlsbench.store import Point, Store

# Driver options that tell two points of one table apart, in the order labels show them.
CASE_KEYS = (
    "tls", "suite", "kx", "group", "key_share", "sigalg", "cert", "chain", "auth", "record_size",
    "payload", "bytes", "aead", "accel", "transport", "io", "rtt_ms", "loss", "rate",
)  # fmt: skip
HEAP_FIGURES = (
    "start", "peak", "retained", "peak_minus_start", "retained_minus_start", "conn_peak",
    "conn_retained", "handshake_allocs",
)  # fmt: skip
SIDES = ("client", "server")
BASELINE_VARIANT = "null"
STDERR_LINES = 12  # a failed point's stderr tail as reports show it (the store keeps more)


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
class EnvironmentRow:
    key: str
    value: str


@dataclass(frozen=True)
class MemoryRow:
    variant: str
    library: str
    line: str
    point: str
    scenario: str
    case: str  # the point's distinguishing options, record size excluded (own column)
    side: str
    record_size: int | None  # params record_size, else mbedTLS's probed IN_CONTENT_LEN
    start: float
    peak: float
    retained: float
    peak_minus_start: float
    retained_minus_start: float
    conn_peak: float
    conn_retained: float
    handshake_allocs: float
    repetitions: int
    stack: float | None = None  # stack high-water of the side's calls, bytes (heap driver)
    # A library's own memory pool (wolfSSL static memory), as the library counts it: what
    # the connection held of it at most and after the handshake.
    pool_peak: float | None = None
    pool_retained: float | None = None
    failed: str = ""  # "2 of 5 repetitions failed" where the figures rest on fewer
    machine: str = ""  # where the run spans several machines: the one(s) this row ran on


@dataclass(frozen=True)
class HandshakeRow:
    variant: str
    library: str
    point: str
    scenario: str
    case: str
    tls: str
    suite: str
    n: int
    ms: float  # median of client + server CPU time per handshake
    ms_ci_low: float
    ms_ci_high: float
    client_ms: float
    server_ms: float
    wall_ms: float | None
    handshakes_per_s: float | None  # None when the median time is 0 (cannot happen for TLS)
    hps_ci_low: float | None
    hps_ci_high: float | None
    failed: str = ""  # "2 of 5 repetitions failed" where the figures rest on fewer
    machine: str = ""  # where the run spans several machines: the one(s) this row ran on


@dataclass(frozen=True)
class WireRow:
    """What one handshake of a one-process point put on the wire, counted by the core at
    its transport (alike in every repetition: the first full and first resumed one)."""

    variant: str
    library: str
    point: str
    case: str
    handshake: str  # "full", "full, ticket issued" (a resume point's first) or "resumed"
    client_hello_bytes: float | None  # the client's first record
    client_bytes: float | None
    server_bytes: float | None
    client_records: float | None
    server_records: float | None
    round_trips: float | None  # server flights the client waited for before it could send
    failed: str = ""  # "2 of 5 repetitions failed" where the figures rest on fewer
    machine: str = ""  # where the run spans several machines: the one(s) this row ran on


@dataclass(frozen=True)
class CodeSizeRow:
    """Bytes of what one role's minimal program links (text / data / bss, as `size` says)."""

    variant: str
    library: str
    point: str
    target: str  # x86-64, i686, armhf, cortex-m7
    role: str  # client or server
    text: int
    data: int
    bss: int
    total: int
    identical: bool  # every repetition measured the same
    failed: str = ""  # "2 of 5 repetitions failed" where the figures rest on fewer
    machine: str = ""  # where the run spans several machines: the one(s) this row ran on


@dataclass(frozen=True)
class LatencyRow:
    variant: str
    library: str
    point: str
    case: str
    payload: int | None
    op: str  # "write" (encrypt + frame) or "read" (decrypt)
    n: int
    min_ns: float
    avg_ns: float
    p50_ns: float
    p99_ns: float | None  # None: too few samples per repetition for a tail
    max_ns: float
    p50_ci_low_ns: float
    p50_ci_high_ns: float
    allocs_per_record: float | None
    # Median of per-record means of batches of records (not quantised by the TSC's step).
    batch_mean_ns: float | None = None
    failed: str = ""  # "2 of 5 repetitions failed" where the figures rest on fewer
    machine: str = ""  # where the run spans several machines: the one(s) this row ran on


@dataclass(frozen=True)
class ThroughputRow:
    variant: str
    library: str
    point: str
    case: str
    payload: int | None
    bytes: int | None
    baseline: bool  # the null variant: the harness alone, no TLS
    n: int
    sender_mbps: float
    sender_ci_low: float
    sender_ci_high: float
    receiver_mbps: float
    receiver_ci_low: float
    receiver_ci_high: float
    failed: str = ""  # "2 of 5 repetitions failed" where the figures rest on fewer
    machine: str = ""  # where the run spans several machines: the one(s) this row ran on


@dataclass(frozen=True)
class AeadRow:
    variant: str
    library: str
    point: str
    aead: str
    payload: int
    ad: int
    runs: int  # measurements over all repetitions
    repetitions: int
    tsc_cycles_per_byte: float  # seal (encrypt + tag)
    ns_per_byte: float
    mbps: float
    failed: str = ""  # "2 of 5 repetitions failed" where the figures rest on fewer
    machine: str = ""  # where the run spans several machines: the one(s) this row ran on
    open_tsc_cycles_per_byte: float | None = None  # open (decrypt + tag check)
    batch: int | None = None  # operations per timed region (one sample = one batch)


@dataclass(frozen=True)
class InstructionRow:
    """Instruction mode: instructions of one side's measured calls per operation."""

    variant: str
    library: str
    point: str
    side: str  # client (handshake side / record write) or server (record read)
    instructions: float  # median over repetitions
    repetitions: int
    identical: bool  # every repetition gave the same count
    failed: str = ""  # "2 of 5 repetitions failed" where the figures rest on fewer
    machine: str = ""  # where the run spans several machines: the one(s) this row ran on
    # Firmware (Cortex-M) points: the count projected to ms at a reference part's clock, low
    # and high end of the core's CPI range (cortexm.py); the firmware table has the rest.
    projected_ms: float | None = None
    projected_ms_high: float | None = None


@dataclass(frozen=True)
class FirmwareRow:
    """A firmware point (a Cortex-M image under QEMU), one side: what a device playing that
    side needs (cortexm.Measured) and how long its handshake takes on the core's reference
    part. The same figures in every repetition (`identical`)."""

    variant: str
    library: str
    point: str
    core: str  # cortex-m4
    job: str  # TLS 1.3 TLS-AES-128-GCM-SHA256 (ecdsa-p256 chain 1, x25519)
    side: str
    instructions: int
    identical: bool
    ms_low: float
    ms_high: float
    part: str  # the reference part the time is projected to, and its budget
    heap: int  # peak, with what the library's global set-up keeps
    stack: int
    data: int
    bss: int
    ram: int  # heap + stack + data + bss
    text: int
    credentials: int
    flash: int  # text + data + credentials
    part_ram: int
    part_flash: int
    fits: bool
    failed: str = ""  # "2 of 5 repetitions failed" where the figures rest on fewer


@dataclass(frozen=True)
class InteropRow:
    """One client x server pair of an interop point (two processes)."""

    variant: str  # the point's variant (plays `role`)
    point: str
    client: str  # variant or real program
    server: str
    case: str
    result: str  # ok | unsupported | failed
    negotiated: (
        str  # version, suite, PSK mode, group, signature scheme as the tlsbench side read back
    )
    detail: str  # why not ok
    client_wall_ms: float | None  # connect to handshake done, median
    client_cpu_ms: float | None
    server_cpu_ms: float | None
    client_heap_peak: float | None  # connection peak (context excluded), whole process
    server_heap_peak: float | None
    client_bytes: float | None  # sent during the first full handshake
    server_bytes: float | None
    round_trips: float | None
    # Over an emulated network: CPU of both sides + (TCP's + TLS's round trips) x RTT, and
    # what the measured client wall time adds to it.
    model_ms: float | None = None
    residual_ms: float | None = None
    # A download (`bytes`): its size, the client's MB/s (tlsbench's or curl's own figure)
    # and each tlsbench side's CPU seconds per GB in its read / write calls.
    download_bytes: int | None = None
    download_mbps: float | None = None
    client_cpu_s_per_gb: float | None = None
    server_cpu_s_per_gb: float | None = None
    failed: str = ""  # "2 of 5 repetitions failed" where the figures rest on fewer
    machine: str = ""  # where the run spans several machines: the one(s) this row ran on
    # Over an emulated network: its round-trip time and loss, the 90th percentile of the
    # client's wall time (over connections and repetitions), and the case without the
    # network (one line of the latency-vs-RTT plot per such case and loss).
    rtt_ms: float | None = None
    loss: float | None = None
    client_wall_p90_ms: float | None = None
    line: str = ""
    # A failed pair: the known finding that explains it (findings/findings.toml), else
    # findings.UNEXPLAINED; and the command that shows the finding without tlsbench.
    finding: str = ""  # the finding's id, "" when none explains the failure
    verdict: str = ""
    reproduce: str = ""


@dataclass(frozen=True)
class LoadRow:
    """One server under one load generator (a load point): medians over repetitions."""

    variant: str  # the server's library
    point: str
    server: str  # the variant's tlsbench server, or nginx
    client: str  # the load generator: a variant's driver, or h2load
    case: str  # what differs between points: version, suite, group, certificate, accel
    pattern: str  # new | resume | keepalive
    connections: int
    result: str  # ok | unsupported | failed
    tps: float | None  # transactions per second
    hps: float | None  # handshakes per second
    mbps: float | None  # response bytes per second (10^6)
    p50_us: float | None
    p99_us: float | None
    server_cpu_ms_per_tx: float | None
    server_heap_per_connection: float | None
    generator_cpu: float | None  # the generator's CPU utilization (fraction of a core)
    saturated: bool  # the generator used 90 % of a core or more in some repetition
    latency_from: str  # "connect" (tlsbench new/resume), "request" (keepalive, h2load)
    detail: str  # why not ok
    failed: str = ""  # "2 of 5 repetitions failed" where the figures rest on fewer
    machine: str = ""  # where the run spans several machines: the one(s) this row ran on


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
class NoteRow:
    subject: str
    kind: str
    message: str


@dataclass(frozen=True)
class LatencySamples:
    """Raw record latencies of one point, for the CDF plot (not a table)."""

    variant: str
    point: str
    payload: int | None
    write_ns: list[float]
    read_ns: list[float]


@dataclass(frozen=True)
class Table:
    name: str
    title: str
    row_type: type
    rows: Sequence[Any]

    def columns(self) -> list[str]:
        return [f.name for f in fields(self.row_type)]


@dataclass
class RunModel:
    run: RunInfo
    environment: list[EnvironmentRow] = field(default_factory=list)
    memory: list[MemoryRow] = field(default_factory=list)
    handshakes: list[HandshakeRow] = field(default_factory=list)
    wire: list[WireRow] = field(default_factory=list)
    code_size: list[CodeSizeRow] = field(default_factory=list)
    latency: list[LatencyRow] = field(default_factory=list)
    throughput: list[ThroughputRow] = field(default_factory=list)
    aead: list[AeadRow] = field(default_factory=list)
    instructions: list[InstructionRow] = field(default_factory=list)
    firmware: list[FirmwareRow] = field(default_factory=list)
    interop: list[InteropRow] = field(default_factory=list)
    load: list[LoadRow] = field(default_factory=list)
    problems: list[ProblemRow] = field(default_factory=list)
    notes: list[NoteRow] = field(default_factory=list)
    builds: list[BuildRow] = field(default_factory=list)
    machines: list[MachineRow] = field(default_factory=list)
    config_files: list[ConfigFileRow] = field(default_factory=list)
    latency_samples: list[LatencySamples] = field(default_factory=list)
    variants: list[str] = field(default_factory=list)  # in point order: stable plot colours
    # A report of several runs side by side (load_runs): every run, the first is `run`.
    runs: list[RunInfo] = field(default_factory=list)

    def tables(self) -> list[Table]:
        """Every table, in report order (the run itself is a one-row table)."""
        return [
            Table("run", "Run", RunInfo, [self.run]),
            Table("memory", "Handshake heap (bytes)", MemoryRow, self.memory),
            Table("handshake_time", "Handshake time", HandshakeRow, self.handshakes),
            Table("wire", "Handshake on the wire", WireRow, self.wire),
            Table("code_size", "Code size (bytes)", CodeSizeRow, self.code_size),
            Table("record_latency", "Record latency (ns)", LatencyRow, self.latency),
            Table("bulk_throughput", "Bulk throughput (MB/s)", ThroughputRow, self.throughput),
            Table("aead", "AEAD cost", AeadRow, self.aead),
            Table("instructions", "Instructions", InstructionRow, self.instructions),
            Table("firmware", "Firmware (Cortex-M)", FirmwareRow, self.firmware),
            Table("interop", "Interop", InteropRow, self.interop),
            Table("load", "Under load", LoadRow, self.load),
            Table("problems", "Unsupported and failed points", ProblemRow, self.problems),
            Table("notes", "Notes", NoteRow, self.notes),
            Table("builds", "Builds", BuildRow, self.builds),
            Table("machines", "Machines", MachineRow, self.machines),
            Table("config_files", "Config files", ConfigFileRow, self.config_files),
            Table("environment", "Environment", EnvironmentRow, self.environment),
        ]


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


@dataclass
class _Result:
    repetition: int
    status: str
    exit_code: int | None
    signal: int | None
    output: dict[str, Any] | None
    stderr_tail: str
    machine_id: int | None = None


def _signal_name(number: int) -> str:
    try:
        return signal.Signals(number).name
    except ValueError:
        return "unknown"


def _int_or_none(value: Any) -> int | None:
    return int(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def _format_option(key: str, value: Any) -> str:
    if key == "tls":
        return f"TLS {value}"
    if key == "record_size":  # 0 is the library's default size: nothing worth a label
        return f"records {value}" if value else ""
    if key == "payload":
        return f"{value} B"
    if key == "bytes":
        return f"{int(value):,} bytes"
    if key in ("chain", "auth", "accel", "kx"):
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
        parts = [_format_option(k, p[k]) for k in shown if p.get(k) not in (None, "")]
        labels[point_id] = " ".join(part for part in parts if part) or "default"
    return labels


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


def _record_size(point: Point, params: dict[str, Any]) -> int | None:
    """The record buffer size a heap figure belongs to.

    An explicit record_size option wins; mbedTLS sizes its record buffers at build time
    (MBEDTLS_SSL_IN_CONTENT_LEN), so for its variants the probe's figure (what the compiled
    library really uses) stands in when the point leaves the option at its default.
    """
    explicit = _int_or_none(params.get("record_size"))
    if explicit:
        return explicit
    if point.library == "mbedtls":
        return _int_or_none((point.build.get("probe") or {}).get("MBEDTLS_SSL_IN_CONTENT_LEN"))
    return None


class _Loader:
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
        self.results: dict[int, list[_Result]] = {
            p.id: [
                _Result(
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

    def ok(self, point: Point) -> list[_Result]:
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

    def memory(self) -> list[MemoryRow]:
        points = [p for p in self.points if p.scenario in ("handshake", "resume") and self.ok(p)]
        cases = case_labels({p.id: self.params(p) for p in points}, skip=("record_size",))
        rows = []
        for p in points:
            heaps = [r.output["heap"] for r in self.ok(p) if r.output and r.output.get("heap")]
            if not heaps:
                continue
            # The first (cold) connection per side, then, where measured, a later (warm)
            # connection on the same contexts: "client-warm", "server-warm".
            warm = [f"{s}_warm" for s in SIDES if all(h.get(f"{s}_warm") for h in heaps)]
            for side in (*SIDES, *warm):
                figures: dict[str, Any] = {
                    name: statistics.median(float(h[side][name]) for h in heaps)
                    for name in HEAP_FIGURES
                }
                rows.append(
                    MemoryRow(
                        variant=p.variant,
                        library=p.library,
                        line=str(p.build.get("line") or p.library),
                        point=p.name,
                        scenario=p.scenario,
                        case=cases[p.id],
                        side=side.replace("_", "-"),
                        record_size=_record_size(p, self.params(p)),
                        repetitions=len(heaps),
                        stack=_median_side_figure(heaps, side, "stack"),
                        pool_peak=_median_side_figure(heaps, side, "pool_peak"),
                        pool_retained=_median_side_figure(heaps, side, "pool_retained"),
                        **figures,
                    )
                )
        return rows

    def handshakes(self) -> list[HandshakeRow]:
        points = [p for p in self.points if p.scenario in ("handshake", "resume") and self.ok(p)]
        params = {p.id: self.params(p) for p in points}
        cases = case_labels(params, always=("suite",))
        rows = []
        for p in points:
            client_reps = self.store.samples_by_repetition(p.id, "client_cpu_ns")
            server_reps = self.store.samples_by_repetition(p.id, "server_cpu_ns")
            client = [x for rep in client_reps for x in rep]
            server = [x for rep in server_reps for x in rep]
            if not client or len(client) != len(server):
                continue  # both series are written per handshake, so this means no data
            total = self.summarize(
                p,
                "client + server CPU ns",
                [
                    [c + s for c, s in zip(cr, sr, strict=True)]
                    for cr, sr in zip(client_reps, server_reps, strict=True)
                ],
            )
            wall = self.store.samples(p.id, "wall_ns")
            rows.append(
                HandshakeRow(
                    variant=p.variant,
                    library=p.library,
                    point=p.name,
                    scenario=p.scenario,
                    case=cases[p.id],
                    tls=str(params[p.id].get("tls", "")),
                    suite=str(params[p.id].get("suite", "")),
                    n=total.n,
                    ms=total.median / 1e6,
                    ms_ci_low=total.ci_low / 1e6,
                    ms_ci_high=total.ci_high / 1e6,
                    client_ms=statistics.median(client) / 1e6,
                    server_ms=statistics.median(server) / 1e6,
                    wall_ms=statistics.median(wall) / 1e6 if wall else None,
                    handshakes_per_s=1e9 / total.median if total.median > 0 else None,
                    # A faster upper time bound is a higher rate: the bounds swap.
                    hps_ci_low=1e9 / total.ci_high if total.ci_high > 0 else None,
                    hps_ci_high=1e9 / total.ci_low if total.ci_low > 0 else None,
                )
            )
        return rows

    def code_size(self) -> list[CodeSizeRow]:
        rows = []
        for p in [p for p in self.points if p.scenario == "code-size"]:
            outputs = [r.output for r in self.ok(p) if r.output]
            if not outputs:
                continue
            measured = [o.get("code_size") or [] for o in outputs]
            for row in measured[0]:
                rows.append(
                    CodeSizeRow(
                        variant=p.variant,
                        library=p.library,
                        point=p.name,
                        target=str(row.get("target", "")),
                        role=str(row["role"]),
                        text=int(row["text"]),
                        data=int(row["data"]),
                        bss=int(row["bss"]),
                        total=int(row["total"]),
                        identical=all(m == measured[0] for m in measured),
                    )
                )
        return rows

    def wire(self) -> list[WireRow]:
        points = [p for p in self.points if p.scenario in ("handshake", "resume") and self.ok(p)]
        params = {p.id: self.params(p) for p in points}
        cases = case_labels(params, always=("suite",))
        rows = []
        for p in points:
            outputs = [r.output for r in self.ok(p) if r.output]
            wire = (outputs[0].get("wire") or {}) if outputs else {}
            for kind in ("full", "resumed"):
                figures = wire.get(kind)
                if not figures:
                    continue
                client, server = figures.get("client") or {}, figures.get("server") or {}
                rows.append(
                    WireRow(
                        variant=p.variant,
                        library=p.library,
                        point=p.name,
                        case=cases[p.id],
                        # A resume point's full handshake issues a ticket: more bytes.
                        handshake="full, ticket issued"
                        if kind == "full" and p.scenario == "resume"
                        else kind,
                        client_hello_bytes=_number(figures.get("client_hello_bytes")),
                        client_bytes=_number(client.get("bytes_sent")),
                        server_bytes=_number(server.get("bytes_sent")),
                        client_records=_number(client.get("records_sent")),
                        server_records=_number(server.get("records_sent")),
                        round_trips=_number(figures.get("round_trips")),
                    )
                )
        return rows

    def latency(self) -> tuple[list[LatencyRow], list[LatencySamples]]:
        points = [p for p in self.points if p.scenario == "records" and self.ok(p)]
        params = {p.id: self.params(p) for p in points}
        cases = case_labels(params, skip=("payload",))
        rows: list[LatencyRow] = []
        samples: list[LatencySamples] = []
        for p in points:
            payload = _int_or_none(params[p.id].get("payload"))
            by_op: dict[str, list[float]] = {}
            for op in ("write", "read"):
                groups = self.store.samples_by_repetition(p.id, f"{op}_ns")
                values = [x for rep in groups for x in rep]
                if not values:
                    continue
                by_op[op] = values
                s = self.summarize(p, f"{op} ns", groups)
                allocs = self.store.samples(p.id, f"{op}_allocs")
                batches = self.store.samples(p.id, f"{op}_batch_ns")
                rows.append(
                    LatencyRow(
                        variant=p.variant,
                        library=p.library,
                        point=p.name,
                        case=cases[p.id],
                        payload=payload,
                        op=op,
                        n=s.n,
                        min_ns=s.min,
                        avg_ns=s.mean,
                        p50_ns=s.median,
                        p99_ns=s.p99,
                        max_ns=s.max,
                        p50_ci_low_ns=s.ci_low,
                        p50_ci_high_ns=s.ci_high,
                        allocs_per_record=statistics.fmean(allocs) if allocs else None,
                        batch_mean_ns=statistics.median(batches) if batches else None,
                    )
                )
            if by_op:
                samples.append(
                    LatencySamples(
                        p.variant, p.name, payload, by_op.get("write", []), by_op.get("read", [])
                    )
                )
        return rows, samples

    def throughput(self) -> list[ThroughputRow]:
        points = [p for p in self.points if p.scenario == "bulk" and self.ok(p)]
        params = {p.id: self.params(p) for p in points}
        cases = case_labels(params)
        rows = []
        for p in points:
            sender = self.store.samples_by_repetition(p.id, "sender_MBps")
            receiver = self.store.samples_by_repetition(p.id, "receiver_MBps")
            if not any(sender) or not any(receiver):
                continue
            s = self.summarize(p, "sender MB/s", sender)
            r = self.summarize(p, "receiver MB/s", receiver)
            rows.append(
                ThroughputRow(
                    variant=p.variant,
                    library=p.library,
                    point=p.name,
                    case=cases[p.id],
                    payload=_int_or_none(params[p.id].get("payload")),
                    bytes=_int_or_none(params[p.id].get("bytes")),
                    baseline=p.variant == BASELINE_VARIANT,
                    n=s.n,
                    sender_mbps=s.median,
                    sender_ci_low=s.ci_low,
                    sender_ci_high=s.ci_high,
                    receiver_mbps=r.median,
                    receiver_ci_low=r.ci_low,
                    receiver_ci_high=r.ci_high,
                )
            )
        # The baseline first: every other row reads against it.
        return sorted(rows, key=lambda row: not row.baseline)

    def instructions(self) -> list[InstructionRow]:
        rows = []
        for p in self.points:
            for series in self.store.series_names(p.id):
                if not series.endswith("_instructions"):
                    continue
                counts = self.store.samples(p.id, series)
                side = series.removesuffix("_instructions")
                projected = _projected_ms(self.ok(p), side)
                if counts:
                    rows.append(InstructionRow(
                        variant=p.variant, library=p.library, point=p.name, side=side,
                        instructions=statistics.median(counts), repetitions=len(counts),
                        identical=len(set(counts)) == 1,
                        projected_ms=projected[0] if projected else None,
                        projected_ms_high=projected[1] if projected else None,
                    ))  # fmt: skip
        return rows

    def firmware(self) -> list[FirmwareRow]:
        """Firmware points, a row per side, in point order (cortexm.point_output)."""
        from tlsbench import cortexm

        rows = []
        for p in self.points:
            outputs = [r.output for r in self.ok(p) if r.output and "firmware" in r.output]
            if not outputs:
                continue
            figures = [cortexm.Measured.from_output(p.variant, o) for o in outputs]
            first = figures[0]
            core = cortexm.core_of(first.core)
            for side in cortexm.SIDES:
                ram, flash = first.ram(side), first.flash(side)
                low, high = first.ms(side)
                identical = all(
                    (f.ram(side), f.flash(side), f.instructions(side))
                    == (ram, flash, first.instructions(side))
                    for f in figures
                )
                rows.append(FirmwareRow(
                    variant=p.variant, library=p.library, point=p.name, core=core.arch,
                    job=first.job.describe().replace(", records 16384", ""), side=side,
                    instructions=first.instructions(side), identical=identical,
                    ms_low=low, ms_high=high,
                    part=f"{core.part.name}, {core.part.mhz:g} MHz",
                    heap=ram["heap"], stack=ram["stack"], data=ram["data"], bss=ram["bss"],
                    ram=ram["total"], text=flash["text"], credentials=flash["credentials"],
                    flash=flash["total"], part_ram=core.part.ram, part_flash=core.part.flash,
                    fits=ram["total"] <= core.part.ram and flash["total"] <= core.part.flash,
                ))  # fmt: skip
        return rows

    def aead(self) -> list[AeadRow]:
        rows = []
        for p in self.points:
            if p.scenario != "aead":
                continue
            measured: dict[tuple[str, int], list[dict[str, Any]]] = {}
            for result in self.ok(p):
                for item in (result.output or {}).get("aead", []):
                    measured.setdefault((str(item["aead"]), int(item["payload"])), []).append(item)
            for (name, payload), items in measured.items():
                rows.append(
                    AeadRow(
                        variant=p.variant,
                        library=p.library,
                        point=p.name,
                        aead=name,
                        payload=payload,
                        ad=int(items[0].get("ad", 0)),
                        runs=sum(int(i.get("runs", 0)) for i in items),
                        repetitions=len(items),
                        tsc_cycles_per_byte=statistics.median(
                            float(i["tsc_cycles_per_byte"]) for i in items
                        ),
                        ns_per_byte=statistics.median(float(i["ns_per_byte"]) for i in items),
                        mbps=statistics.median(float(i["MBps"]) for i in items),
                        open_tsc_cycles_per_byte=(
                            statistics.median(float(i["open_tsc_cycles_per_byte"]) for i in items)
                            if all("open_tsc_cycles_per_byte" in i for i in items)
                            else None
                        ),
                        batch=min(int(i["batch"]) for i in items)
                        if all("batch" in i for i in items)
                        else None,
                    )
                )
        # Points come in name order, where "16384B" sorts before "16B": order each variant's
        # rows by AEAD and payload size (as a number), variants as the run has them.
        order = {v: i for i, v in enumerate(dict.fromkeys(p.variant for p in self.points))}
        return sorted(rows, key=lambda r: (order[r.variant], r.aead, r.payload))

    def interop(self) -> list[InteropRow]:
        points = [p for p in self.points if p.scenario == "interop" and self.results[p.id]]
        # From the points' own options: a pair that never ran (unsupported) has no resolved
        # parameters, and must land in the same grid as those that did.
        cases = case_labels({p.id: dict(p.params) for p in points})
        lines = case_labels({p.id: dict(p.params) for p in points}, skip=("rtt_ms", "loss"))
        known = findings.load() if points else []
        rows = []
        for p in points:
            role = str(p.params.get("role", "client"))
            peer = str(p.params.get("peer", "?"))
            client, server = (p.variant, peer) if role == "client" else (peer, p.variant)
            if p.params.get("server") == "nginx":
                server = f"nginx ({p.variant})"
            ok = self.ok(p)
            results = self.results[p.id]
            if ok:
                result, detail = "ok", ""
            else:
                bad = results[0]
                result = bad.status
                error = (bad.output or {}).get("error") or {}
                detail = str(error.get("message") or f"exit {bad.exit_code}")
            outputs = [r.output for r in ok if r.output]
            negotiated = ""
            if outputs:
                n = outputs[0].get("negotiated") or {}
                # The pre-shared key's mode (psk, psk_dhe) where one keyed the handshake.
                parts = [n.get("version"), n.get("suite"), n.get("psk"), n.get("group"),
                         n.get("sigalg")]  # fmt: skip
                negotiated = " ".join(str(x) for x in parts if x) + (
                    " resumed" if n.get("resumed") else ""
                )

            def median_of(series: str, point: Point = p) -> float | None:
                values = self.store.samples(point.id, series)
                return statistics.median(values) if values else None

            def median_ms(series: str) -> float | None:
                value = median_of(series)
                return value / 1e6 if value is not None else None

            client_wall = median_ms("client_wall_ns")
            walls = self.store.samples(p.id, "client_wall_ns")
            wall_p90 = (
                float(np.percentile(walls, 90, method="inverted_cdf")) / 1e6 if walls else None
            )
            round_trips = _first_wire(outputs, None, "round_trips")
            rtt = float(p.params.get("rtt_ms") or 0)
            model_ms = residual_ms = None
            if rtt > 0 and round_trips is not None and client_wall is not None:
                cpu = (median_ms("client_cpu_ns") or 0.0) + (median_ms("server_cpu_ns") or 0.0)
                model_ms = cpu + (round_trips + 1) * rtt  # + 1: TCP's own handshake
                residual_ms = client_wall - model_ms
            finding = verdict = reproduce = ""
            if result == "failed":
                match = findings.explain(known, client, server, dict(p.params), detail)
                if match is None:
                    verdict = findings.UNEXPLAINED
                else:
                    finding, reproduce = match.id, match.reproduce
                    verdict = f"finding {match.id}: {match.title}"
            case, line = cases[p.id], lines[p.id]
            if p.params.get("resume") == "on":
                case = f"{case} resumed" if case != "default" else "resumed"
                line = f"{line} resumed" if line != "default" else "resumed"
            rows.append(
                InteropRow(
                    variant=p.variant,
                    point=p.name,
                    client=client,
                    server=server,
                    case=case,
                    result=result,
                    negotiated=negotiated,
                    detail=detail,
                    client_wall_ms=client_wall,
                    client_cpu_ms=median_ms("client_cpu_ns"),
                    server_cpu_ms=median_ms("server_cpu_ns"),
                    client_heap_peak=_heap_peak(outputs, "client"),
                    server_heap_peak=_heap_peak(outputs, "server"),
                    client_bytes=_first_wire(outputs, "client", "bytes_sent"),
                    server_bytes=_first_wire(outputs, "server", "bytes_sent"),
                    round_trips=round_trips,
                    model_ms=model_ms,
                    residual_ms=residual_ms,
                    rtt_ms=float(p.params["rtt_ms"]) if "rtt_ms" in p.params else None,
                    loss=float(p.params.get("loss") or 0) if "rtt_ms" in p.params else None,
                    client_wall_p90_ms=wall_p90,
                    line=line,
                    finding=finding,
                    verdict=verdict,
                    reproduce=reproduce,
                    download_bytes=_int_or_none(p.params.get("bytes")),
                    download_mbps=median_of("download_MBps"),
                    client_cpu_s_per_gb=median_of("client_cpu_s_per_GB"),
                    server_cpu_s_per_gb=median_of("server_cpu_s_per_GB"),
                )
            )
        return rows

    def load(self) -> list[LoadRow]:
        points = [p for p in self.points if p.scenario == "load" and self.results[p.id]]
        # Cases from the points' own TLS options (the load keys have columns of their own).
        load_keys = ("client", "server", "pattern", "connections", "duration_s",
                     "heap", "workers", "request_size")  # fmt: skip
        cases = case_labels({p.id: {k: v for k, v in p.params.items() if k not in load_keys}
                             for p in points})  # fmt: skip
        rows = []
        for p in points:
            ok = self.ok(p)
            if ok:
                result, detail = "ok", ""
            else:
                bad = self.results[p.id][0]
                result = bad.status
                error = (bad.output or {}).get("error") or {}
                detail = str(error.get("message") or f"exit {bad.exit_code}")

            def median_of(series: str, point: Point = p) -> float | None:
                values = self.store.samples(point.id, series)
                return statistics.median(values) if values else None

            outputs = [r.output for r in ok if r.output]
            pattern = str(p.params.get("pattern", "keepalive"))
            client = str(p.params.get("client", "?"))
            from_request = pattern == "keepalive" or client == "h2load"
            rows.append(
                LoadRow(
                    variant=p.variant,
                    point=p.name,
                    server="nginx" if p.params.get("server") == "nginx" else p.variant,
                    client=client,
                    case=cases[p.id],
                    pattern=pattern,
                    connections=int(p.params.get("connections", 1)),
                    result=result,
                    tps=median_of("load_tps"),
                    hps=median_of("load_hps"),
                    mbps=median_of("load_MBps"),
                    p50_us=median_of("latency_p50_us"),
                    p99_us=median_of("latency_p99_us"),
                    server_cpu_ms_per_tx=median_of("server_cpu_ms_per_tx"),
                    server_heap_per_connection=median_of("server_heap_per_connection"),
                    generator_cpu=median_of("generator_cpu_utilization"),
                    saturated=any((o.get("load") or {}).get("saturated") for o in outputs),
                    # --rate: each transaction's latency counts from when it was due.
                    latency_from="due time"
                    if p.params.get("rate")
                    else "request"
                    if from_request
                    else "connect",
                    detail=detail,
                )
            )
        order = {v: i for i, v in enumerate(dict.fromkeys(p.variant for p in self.points))}
        return sorted(rows, key=lambda r: (order[r.variant], r.server, r.case, r.pattern,
                                           r.client, r.connections))  # fmt: skip

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
                        f"killed by signal {first.signal} ({_signal_name(first.signal)})"
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
                cpu_model=str(m["cpu_model"]), cores=_int_or_none(facts.get("cores")),
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
        for name in ("memory", "handshakes", "wire", "code_size", "latency", "throughput", "aead",
                     "instructions", "interop", "load"):  # fmt: skip
            setattr(model, name, [
                dataclasses.replace(r, machine=marks.get((r.variant, r.point), ""))
                for r in getattr(model, name)
            ])  # fmt: skip

    def model(self) -> RunModel:
        # Tables in report order, so that their statistical notes come in that order too.
        memory = self.memory()
        handshakes = self.handshakes()
        latency, latency_samples = self.latency()
        model = RunModel(
            run=self.run,
            environment=_flatten_environment(self.environment),
            memory=memory,
            handshakes=handshakes,
            wire=self.wire(),
            code_size=self.code_size(),
            latency=latency,
            throughput=self.throughput(),
            aead=self.aead(),
            instructions=self.instructions(),
            firmware=self.firmware(),
            interop=self.interop(),
            load=self.load(),
            problems=self.problems(),
            builds=self.builds(),
            machines=self.machines(),
            config_files=self.config_files(),
            latency_samples=latency_samples,
            variants=list(dict.fromkeys(p.variant for p in self.points)),
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
        for name in ("memory", "handshakes", "wire", "code_size", "latency", "throughput", "aead",
                     "instructions", "firmware", "interop", "load"):  # fmt: skip
            rows = getattr(model, name)
            setattr(
                model,
                name,
                [
                    dataclasses.replace(r, failed=marks[(r.variant, r.point)])
                    if (r.variant, r.point) in marks
                    else r
                    for r in rows
                ],
            )


def _median_side_figure(heaps: list[dict[str, Any]], side: str, name: str) -> float | None:
    """Median of one side's optional figure (stack, pool use), where the driver gave it."""
    values = [float(h[side][name]) for h in heaps if (h.get(side) or {}).get(name) is not None]
    return statistics.median(values) if values else None


def _heap_peak(outputs: list[dict[str, Any]], side: str) -> float | None:
    """Median connection heap peak of one side over the repetitions that measured it."""
    peaks = [
        float(o["heap"][side]["conn_peak"])
        for o in outputs
        if o.get("heap") and (o["heap"].get(side) or {}).get("conn_peak") is not None
    ]
    return statistics.median(peaks) if peaks else None


def _projected_ms(results: list[_Result], side: str) -> tuple[float, float] | None:
    """A firmware point's projection of one side's count (low and high), as stored."""
    for result in results:
        figures = ((result.output or {}).get("firmware") or {}).get(side) or {}
        projected = figures.get("projected_ms")
        if isinstance(projected, list) and len(projected) == 2:
            return float(projected[0]), float(projected[1])
    return None


def _number(value: Any) -> float | None:
    return float(value) if value is not None else None


def _first_wire(outputs: list[dict[str, Any]], side: str | None, key: str) -> float | None:
    """A wire figure of the first full handshake (alike in every repetition)."""
    full = ((outputs[0].get("wire") or {}).get("full") or {}) if outputs else {}
    value = (full.get(side) or {}).get(key) if side else full.get(key)
    return float(value) if value is not None else None


def load_run(store: Store, run_id: int | str = "latest") -> RunModel:
    """Reads run `run_id` (a number or "latest") of `store` into a RunModel."""
    return _Loader(store, run_id).model()


FIGURE_TABLES = ("memory", "handshakes", "wire", "code_size", "latency", "throughput", "aead",
                 "instructions", "interop", "load")  # fmt: skip


def load_runs(store: Store, run_ids: Sequence[int | str]) -> RunModel:
    """Several runs side by side (the same experiment on several machines, say): one model
    whose every figure row is labelled `variant @ machine`, so that tables and plots keep
    the machines apart. A run's label is its machine's host name (with its run number where
    two runs share a host). One run: load_run."""
    if len(run_ids) == 1:
        return load_run(store, run_ids[0])
    loaders = [_Loader(store, r) for r in run_ids]
    hosts = [", ".join(sorted(loader.machine_labels().values())) or f"run {loader.run.id}"
             for loader in loaders]  # fmt: skip
    labels = [h if hosts.count(h) == 1 else f"{h} run {loader.run.id}"
              for h, loader in zip(hosts, loaders, strict=True)]  # fmt: skip
    models = []
    for loader, label in zip(loaders, labels, strict=True):
        model = loader.model()
        for name in FIGURE_TABLES:
            setattr(model, name, [
                dataclasses.replace(r, variant=f"{r.variant} @ {label}", machine=label)
                for r in getattr(model, name)
            ])  # fmt: skip
        model.latency_samples = [dataclasses.replace(s, variant=f"{s.variant} @ {label}")
                                 for s in model.latency_samples]  # fmt: skip
        model.variants = [f"{v} @ {label}" for v in model.variants]
        model.notes = [dataclasses.replace(n, subject=f"{n.subject} ({label})")
                       for n in model.notes]  # fmt: skip
        models.append(model)
    first = models[0]
    combined = RunModel(run=first.run, runs=[m.run for m in models],
                        environment=first.environment)  # fmt: skip
    for name in (*FIGURE_TABLES, "problems", "notes", "latency_samples", "variants"):
        setattr(combined, name, [row for m in models for row in getattr(m, name)])
    combined.builds = list({(b.variant, b.cache_key): b for m in models for b in m.builds}.values())
    combined.machines = list({(r.host, r.cpu_model, r.kernel, r.commit): r
                              for m in models for r in m.machines}.values())  # fmt: skip
    return combined
