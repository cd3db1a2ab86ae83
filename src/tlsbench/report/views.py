"""Tables as people read them: the columns engineers publish, numbers formatted for reading.

Markdown and HTML render these views; CSV and JSON export the model's raw rows instead, so
that no precision is lost there.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from tlsbench import findings
from tlsbench.interop import PROGRAMS
from tlsbench.report.model import InteropRow, RunModel

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


def _p99(value: float | None) -> str:
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


def _variant(row: Any) -> str:
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
    out: list[View] = []
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
    out += _firmware_views(model)
    if model.memory:
        pools = any(r.pool_peak is not None for r in model.memory)
        out.append(
            View(
                "memory",
                "Handshake heap (bytes)",
                "Requested heap bytes per side: `start` before the context exists, `peak` until "
                "the first handshake completes, `retained` after it with the connection open; "
                "`conn` figures exclude the context. `client-warm` / `server-warm`: a second "
                "connection on the same contexts, after the first was closed (what each "
                "further connection costs; start = live bytes before it). `stack`: how deep "
                "the side's calls went during the connection (painted stack, 0.5 KiB "
                "resolution). Median over repetitions."
                + (" `pool peak` / `pool retained`: a library that serves connections from a "
                   "memory pool of its own (wolfSSL's static-memory build) allocates it once "
                   "with the context, so its `conn` figures are near 0; these are the "
                   "connection's use of that pool, as the library counts it." if pools else ""),
                ["variant", "case", "side", "record size", "start", "peak", "retained",
                 "peak - start", "retained - start", "conn peak", "conn retained", "allocs",
                 "stack"] + (["pool peak", "pool retained"] if pools else []),
                [False, False, False, True] + [True] * (9 + (2 if pools else 0)),
                [
                    [_variant(r), _case(r.case, r.scenario), r.side, fmt_size(r.record_size),
                     fmt_bytes(r.start), fmt_bytes(r.peak), fmt_bytes(r.retained),
                     fmt_bytes(r.peak_minus_start), fmt_bytes(r.retained_minus_start),
                     fmt_bytes(r.conn_peak), fmt_bytes(r.conn_retained),
                     fmt_count(r.handshake_allocs), fmt_bytes(r.stack)]
                    + ([fmt_bytes(r.pool_peak), fmt_bytes(r.pool_retained)] if pools else [])
                    for r in model.memory
                ],
            )
        )  # fmt: skip
    if model.handshakes:
        out.append(
            View(
                "handshake_time",
                "Handshake time",
                "CPU time inside both sides' library calls per full handshake (median, with the "
                "bootstrap 95 % CI of the median); handshakes/s = 1e9 / (client + server ns).",
                ["variant", "case", "n", "ms", "95 % CI (ms)", "client ms", "server ms",
                 "wall ms", "handshakes/s"],
                [False, False, True, True, True, True, True, True, True],
                [
                    [_variant(r), _case(r.case, r.scenario), str(r.n), fmt_sig(r.ms),
                     fmt_ci(r.ms_ci_low, r.ms_ci_high), fmt_sig(r.client_ms),
                     fmt_sig(r.server_ms), fmt_sig(r.wall_ms), fmt_sig(r.handshakes_per_s)]
                    for r in model.handshakes
                ],
            )
        )  # fmt: skip
    if model.wire:
        out.append(
            View(
                "wire",
                "Handshake on the wire",
                "Bytes and TLS records each side sent during the point's first full (and first "
                "resumed) handshake, counted at the transport; `ClientHello` = the client's "
                "first record; `round trips` = the server flights the client waited for before "
                "it could send application data (TLS 1.3: 1, 2 after a HelloRetryRequest; TLS "
                "1.2: 2).",
                ["variant", "case", "handshake", "ClientHello", "client bytes", "server bytes",
                 "client records", "server records", "round trips"],
                [False, False, False] + [True] * 6,
                [
                    [_variant(r), r.case, r.handshake, fmt_bytes(r.client_hello_bytes),
                     fmt_bytes(r.client_bytes), fmt_bytes(r.server_bytes),
                     fmt_count(r.client_records), fmt_count(r.server_records),
                     fmt_count(r.round_trips)]
                    for r in model.wire
                ],
            )
        )  # fmt: skip
    if model.code_size:
        out.append(
            View(
                "code_size",
                "Code size (bytes)",
                "What a minimal TLS client and server program (context, certificate, handshake, "
                "one record each way) links from the variant's archives, built with -Os, "
                "-ffunction-sections -fdata-sections and --gc-sections so that only reachable "
                "code counts; `text` (code and constants), `data`, `bss`, as `size` reports "
                "them. `same` = every repetition measured the same bytes.",
                ["variant", "target", "role", "text", "data", "bss", "total", "same"],
                [False, False, False, True, True, True, True, False],
                [
                    [_variant(r), r.target, r.role, fmt_bytes(r.text), fmt_bytes(r.data),
                     fmt_bytes(r.bss), fmt_bytes(r.total), "yes" if r.identical else "no"]
                    for r in model.code_size
                ],
            )
        )  # fmt: skip
    if model.latency:
        out.append(
            View(
                "record_latency",
                "Record latency (ns)",
                "Per application record after warm-up: `write` encrypts and frames, `read` "
                "decrypts; p50 and p99 are medians over repetitions of each repetition's own "
                "(p99 only from repetitions of at least 1,000 records, else \"n too small\"); "
                "`batched` = the median per-record mean of batches of up to 64 records timed "
                "as one region, which the TSC's step does not quantise.",
                ["variant", "case", "payload", "op", "n", "min", "avg", "p50", "p99", "max",
                 "batched", "allocs/record"],
                [False, False, True, False] + [True] * 8,
                [
                    [_variant(r), r.case, fmt_size(r.payload), r.op, str(r.n), fmt_sig(r.min_ns),
                     fmt_sig(r.avg_ns), fmt_sig(r.p50_ns), _p99(r.p99_ns), fmt_sig(r.max_ns),
                     fmt_sig(r.batch_mean_ns), fmt_count(r.allocs_per_record)]
                    for r in model.latency
                ],
            )
        )  # fmt: skip
    if model.throughput:
        baseline = next((r for r in model.throughput if r.baseline), None)
        out.append(
            View(
                "bulk_throughput",
                "Bulk throughput (MB/s)",
                "Application data in the largest records, MB/s = 10^6 bytes per second of each "
                "side's own time (median, 95 % CI)."
                + (" `null` is the harness alone, no TLS: the ceiling." if baseline else ""),
                ["variant", "case", "n", "sender MB/s", "95 % CI", "receiver MB/s", "95 % CI"]
                + (["sender % of null"] if baseline else []),
                [False, False, True, True, True, True, True] + ([True] if baseline else []),
                [
                    [_variant(r) + (" (baseline)" if r.baseline else ""), r.case, str(r.n),
                     fmt_sig(r.sender_mbps), fmt_ci(r.sender_ci_low, r.sender_ci_high),
                     fmt_sig(r.receiver_mbps), fmt_ci(r.receiver_ci_low, r.receiver_ci_high)]
                    + ([fmt_sig(100 * r.sender_mbps / baseline.sender_mbps)]
                       if baseline and baseline.sender_mbps else [])
                    for r in model.throughput
                ],
            )
        )  # fmt: skip
    if model.aead:
        out.append(
            View(
                "aead",
                "AEAD cost",
                "The library's own AEAD API, 12-byte AD; TSC cycles (fixed-rate time-stamp "
                "counter) and ns per byte of payload, median over repetitions; seal = encrypt "
                "+ tag, open = decrypt + tag check; timed in batches of operations long "
                "enough that the timer's steps do not quantise the figure.",
                ["variant", "AEAD", "payload", "runs", "batch", "seal cycles/byte",
                 "open cycles/byte", "seal ns/byte", "seal MB/s"],
                [False, False, True, True, True, True, True, True, True],
                [
                    [_variant(r), r.aead, f"{r.payload:,}", f"{r.runs:,}",
                     "-" if r.batch is None else f"{r.batch:,}",
                     fmt_sig(r.tsc_cycles_per_byte), fmt_sig(r.open_tsc_cycles_per_byte),
                     fmt_sig(r.ns_per_byte), fmt_sig(r.mbps)]
                    for r in model.aead
                ],
            )
        )  # fmt: skip
    if model.instructions:
        projected = any(r.projected_ms is not None for r in model.instructions)
        out.append(
            View(
                "instructions",
                "Instructions (deterministic mode)",
                "Instructions counted by callgrind inside one side's measured library calls, "
                "per operation (handshake, record or bulk pass); `client` is the record "
                "writer, `server` the reader. Median over repetitions, which should agree."
                + (" Firmware points: instructions of each side's handshake calls counted by "
                   "QEMU (-icount), projected to ms as a range: the core's cycles per "
                   "instruction at a reference part's clock (an assumption, not a measurement "
                   "of a board: the firmware section says which)." if projected else ""),
                ["variant", "point", "side", "instructions", "repetitions", "identical",
                 *(["projected ms"] if projected else [])],
                [False, False, False, True, True, False, *([True] if projected else [])],
                [
                    [_variant(r), r.point, r.side, fmt_count(r.instructions), str(r.repetitions),
                     "yes" if r.identical else "no",
                     *([fmt_range(r.projected_ms, r.projected_ms_high)] if projected else [])]
                    for r in model.instructions
                ],
            )
        )  # fmt: skip
    if model.interop:
        out += _interop_views(model)
    if model.load:
        out += _load_views(model)
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


def _firmware_views(model: RunModel) -> list[View]:
    """The firmware section: the answer first (per core and job, a row per library: what the
    client device needs and whether it fits the core's reference part), then the detail."""
    if not model.firmware:
        return []
    clients = [r for r in model.firmware if r.side == "client"]
    parts = {r.core: r for r in clients}
    answer = View(
        "firmware_answer",
        "Firmware: does the TLS client fit, and how long does its handshake take?",
        "Per core and TLS job, a row per library build: what a device playing the client "
        "needs, measured on its firmware image under QEMU. RAM = heap peak + stack "
        "high-water + .data + .bss of the client-only image; flash = its .text + .data + the "
        "job's credentials (DER); ms = the client's handshake instructions x the core's "
        "cycles-per-instruction range at the reference part's clock (docs/embedded.md gives "
        "the sources); fits = within that part's RAM and flash. Reference parts: "
        + "; ".join(f"{core}: {r.part}, {fmt_kib(r.part_ram)} KiB RAM, "
                    f"{fmt_kib(r.part_flash)} KiB flash"
                    for core, r in sorted(parts.items(), key=lambda kv: _core_order(kv[0])))
        + ". The server's figures are in the detail table below.",
        ["core", "job", "variant", "RAM KiB", "flash KiB", "client ms", "fits the part"],
        [False, False, False, True, True, True, False],
        [
            [r.core, r.job, _variant(r), fmt_kib(r.ram), fmt_kib(r.flash),
             fmt_range(r.ms_low, r.ms_high), _fits(r.ram, r.part_ram, r.flash, r.part_flash)]
            for r in sorted(clients, key=lambda r: (_core_order(r.core), r.job, r.variant))
        ],
    )  # fmt: skip
    detail = View(
        "firmware",
        "Firmware detail (bytes, instructions)",
        "Per side: handshake instructions (identical in every repetition, or marked), their "
        "projection to ms, and the parts of the RAM and flash figures: heap peak (with the "
        "library's global set-up), stack high-water, .data and .bss of the one-role image; "
        ".text and the job's credentials.",
        ["variant", "core", "job", "side", "instructions", "identical", "ms", "heap", "stack",
         "data", "bss", "RAM", "text", "credentials", "flash"],
        [False, False, False, False, True, False, True] + [True] * 8,
        [
            [_variant(r), r.core, r.job, r.side, fmt_count(r.instructions),
             "yes" if r.identical else "no", fmt_range(r.ms_low, r.ms_high), fmt_bytes(r.heap),
             fmt_bytes(r.stack), fmt_bytes(r.data), fmt_bytes(r.bss), fmt_bytes(r.ram),
             fmt_bytes(r.text), fmt_bytes(r.credentials), fmt_bytes(r.flash)]
            for r in model.firmware
        ],
    )  # fmt: skip
    return [answer, detail]


def _core_order(core: str) -> tuple[int, str]:
    """Cores by their number (m0 .. m55), whatever their names' sort order."""
    digits = "".join(c for c in core if c.isdigit())
    return (int(digits) if digits else 0, core)


def _fits(ram: int, ram_budget: int, flash: int, flash_budget: int) -> str:
    over = []
    if ram > ram_budget:
        over.append(f"RAM over by {fmt_kib(ram - ram_budget)} KiB")
    if flash > flash_budget:
        over.append(f"flash over by {fmt_kib(flash - flash_budget)} KiB")
    if over:
        return "no: " + ", ".join(over)
    return (f"yes ({fmt_kib(ram_budget - ram)} KiB RAM, {fmt_kib(flash_budget - flash)} KiB "
            "flash left)")  # fmt: skip


def _load_views(model: RunModel) -> list[View]:
    out = [
        View(
            "load",
            "Under load",
            "A server (the variant's tlsbench server, or nginx) under a load generator "
            "(a variant's tlsbench generator, or h2load), each on its own CPU: transactions "
            "and handshakes per second, response MB/s, latency percentiles in µs (from "
            "connect to the last response byte for new and resume under tlsbench's "
            "generator, from the request otherwise, and from each transaction's due time "
            "where a rate was offered (open loop): `from`), the server's CPU ms per "
            "transaction and heap per open connection (heap runs only), and the "
            "generator's CPU (fraction of a core). `saturated`: the generator used 90 % of "
            "its core or more, so it, not the server, may have been the limit. Medians over "
            "repetitions.",
            ["server", "case", "pattern", "conns", "generator", "result", "tx/s",
             "handshakes/s", "MB/s", "p50 µs", "p99 µs", "from", "server CPU ms/tx",
             "heap/conn", "generator CPU", "saturated", "detail"],
            [False, False, False, True, False, False, True, True, True, True, True, False,
             True, True, True, False, False],
            [
                [_variant(r) if r.server == r.variant else f"nginx ({r.variant})", r.case,
                 r.pattern, str(r.connections), r.client, r.result, fmt_sig(r.tps),
                 fmt_sig(r.hps), fmt_sig(r.mbps), fmt_sig(r.p50_us), fmt_sig(r.p99_us),
                 r.latency_from, fmt_sig(r.server_cpu_ms_per_tx),
                 fmt_bytes(r.server_heap_per_connection), fmt_sig(r.generator_cpu),
                 "yes" if r.saturated else "no", r.detail]
                for r in model.load
            ],
        )
    ]  # fmt: skip
    # The same server, pattern and concurrency under h2load and under a tlsbench generator.
    by_cell: dict[tuple[str, str, str, str, int], dict[str, Any]] = {}
    for r in model.load:
        if r.result == "ok":
            by_cell.setdefault((r.variant, r.server, r.case, r.pattern, r.connections),
                               {})[r.client] = r  # fmt: skip
    rows = []
    for (_, server, case, pattern, conns), clients in by_cell.items():
        h2 = clients.get("h2load")
        for name, own in clients.items():
            if h2 is None or name == "h2load":
                continue
            ratio = own.tps / h2.tps if own.tps and h2.tps else None
            rows.append([server, case, pattern, str(conns), name, fmt_sig(own.tps),
                         fmt_sig(h2.tps), fmt_sig(ratio), fmt_sig(own.p50_us),
                         fmt_sig(h2.p50_us), fmt_sig(own.p99_us), fmt_sig(h2.p99_us),
                         _saturation(own, h2)])  # fmt: skip
    if rows:
        out.append(
            View(
                "load_generators",
                "Load generators compared",
                "The same server, pattern and concurrency measured by tlsbench's generator "
                "and by h2load: transactions/s of each and their ratio, and latency "
                "percentiles in µs (h2load's from the request's first byte; tlsbench's from "
                "connect for new and resume, from the request for keepalive). `saturated` "
                "names the generators that used 90 % of their core or more: where one did, "
                "the figures compare the generators, not the server.",
                ["server", "case", "pattern", "conns", "tlsbench generator", "tx/s",
                 "h2load tx/s", "ratio", "p50 µs", "h2load p50 µs", "p99 µs",
                 "h2load p99 µs", "saturated"],
                [False, False, False, True, False, True, True, True, True, True, True, True,
                 False],
                rows,
            )
        )  # fmt: skip
    return out


def _saturation(own: Any, h2: Any) -> str:
    names = [name for name, row in (("tlsbench", own), ("h2load", h2)) if row.saturated]
    return " and ".join(names) or "neither"


def _case(case: str, scenario: str) -> str:
    return f"{case} (resumed)" if scenario == "resume" else case


def _opt(value: int | None) -> str:
    return "-" if value is None else str(value)


INTEROP_MARK = {"ok": "✓", "unsupported": "unsupported"}
# A failed cell says whether a known finding explains it (findings/findings.toml).
FAILED_MARK = {True: "✗ finding", False: "✗ unexplained"}


def interop_mark(row: InteropRow) -> str:
    if row.result == "failed":
        return FAILED_MARK[bool(row.finding)]
    return INTEROP_MARK.get(row.result, "?")


def _interop_views(model: RunModel) -> list[View]:
    """One client x server grid per case (what talks to what), then the figures per pair."""
    out = []
    for case in dict.fromkeys(r.case for r in model.interop):
        rows = [r for r in model.interop if r.case == case]
        # tlsbench variants first, then real programs, each in name order.
        clients = sorted({r.client for r in rows}, key=lambda n: (n in PROGRAMS, n))
        servers = sorted({r.server for r in rows}, key=lambda n: (n in PROGRAMS, n))
        cell = {(r.client, r.server): r for r in rows}

        def title(client: str, server: str, cell: dict = cell) -> str:
            row = cell.get((client, server))
            if row is None:
                return ""
            if row.result == "failed":
                return f"{row.detail} ({row.verdict})"
            return row.negotiated if row.result == "ok" else row.detail

        out.append(
            View(
                "interop_matrix",
                f"Interop: {case}" if case != "default" else "Interop",
                "Client (row) against server (column), each in its own process over loopback "
                "TCP: ✓ = the handshake completed with exactly the requested parameters on "
                "the tlsbench side(s), both sides read back the same, and the HTTP response "
                "arrived intact on every connection; ✗ finding = it failed as a known library "
                "incompatibility explains, ✗ unexplained = it failed and nothing explains it "
                "yet: a harness fault until shown otherwise (both in Interop failures); "
                "unsupported = one side cannot offer the request.",
                ["client \\ server", *servers],
                [False] * (len(servers) + 1),
                [
                    [client]
                    + [
                        interop_mark(cell[(client, server)]) if (client, server) in cell else ""
                        for server in servers
                    ]
                    for client in clients
                ],
                titles=[["", *(title(c, server) for server in servers)] for c in clients],
            )
        )
    failed = [r for r in model.interop if r.result == "failed"]
    if failed:
        out.append(
            View(
                "interop_failures",
                "Interop failures",
                "Each failed pair: the known finding that explains it (findings/findings.toml, "
                "docs/interop.md) with the command, run from the repository root, that shows "
                "the same failure with the libraries' own programs, without tlsbench; or "
                f"\"{findings.UNEXPLAINED}\".",
                ["client", "server", "case", "verdict", "reproduce", "failure"],
                [False] * 6,
                [[r.client, r.server, r.case, r.verdict,
                  r.reproduce or "-", r.detail] for r in failed],
            )
        )  # fmt: skip
    downloads = [r for r in model.interop if r.download_bytes]
    if downloads:
        out.append(
            View(
                "downloads",
                "Downloads",
                "One response of `bytes` per connection after the handshake: the client's "
                "MB/s (10^6 bytes per second from the first to the last response byte; curl's "
                "own figure where curl is the client) and each tlsbench side's CPU seconds per "
                "GB (10^9 bytes) in its library's read or write calls; every byte checked. "
                "Median over connections and repetitions.",
                ["client", "server", "case", "bytes", "result", "MB/s", "client CPU s/GB",
                 "server CPU s/GB"],
                [False, False, False, True, False, True, True, True],
                [
                    [r.client, r.server, r.case, fmt_bytes(r.download_bytes), r.result,
                     fmt_sig(r.download_mbps), fmt_sig(r.client_cpu_s_per_gb),
                     fmt_sig(r.server_cpu_s_per_gb)]
                    for r in downloads
                ],
            )
        )  # fmt: skip
    emulated = any(r.model_ms is not None for r in model.interop)
    out.append(
        View(
            "interop",
            "Interop pairs",
            "Per pair: what the tlsbench side read back; the client's wall time from connect "
            "to handshake done; each tlsbench side's CPU time in its library calls and its "
            "heap peak for the connection (its own process: no attribution between sides); "
            "bytes each side sent during the first full handshake and the client's round "
            "trips. Medians over connections and repetitions; `-` where a side is a real "
            "program (not measured)."
            + (" Over an emulated network, `model ms` = both sides' CPU + (TLS round trips + "
               "1 for TCP's handshake) x RTT, and `residual` = measured - model (a real "
               "program's CPU is not in the model)." if emulated else ""),
            ["client", "server", "case", "result", "negotiated", "client wall ms",
             "client CPU ms", "server CPU ms", "client heap peak", "server heap peak",
             "client bytes", "server bytes", "RTT"]
            + (["model ms", "residual ms"] if emulated else []) + ["detail"],
            [False, False, False, False, False] + [True] * 8 + [True, True] * emulated
            + [False],
            [
                [r.client + (f" (partial: {r.failed})" if r.failed else ""), r.server, r.case,
                 r.result, r.negotiated or "-", fmt_sig(r.client_wall_ms),
                 fmt_sig(r.client_cpu_ms), fmt_sig(r.server_cpu_ms),
                 fmt_bytes(r.client_heap_peak), fmt_bytes(r.server_heap_peak),
                 fmt_bytes(r.client_bytes), fmt_bytes(r.server_bytes),
                 fmt_count(r.round_trips)]
                + ([fmt_sig(r.model_ms), fmt_sig(r.residual_ms)] if emulated else [])
                + [r.detail or "-"]
                for r in model.interop
            ],
        )
    )  # fmt: skip
    return out
