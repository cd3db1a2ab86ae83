"""The `tlsbench` command line: one function per command, user errors without tracebacks."""

from __future__ import annotations

import argparse
import contextlib
import json
import signal
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tlsbench.errors import UserError


def cmd_build(args: argparse.Namespace) -> int:
    from tlsbench.build import Builder
    from tlsbench.variants import Catalog

    catalog = Catalog()
    specs = args.variants or catalog.defaults
    variants = [catalog.resolve(spec) for spec in specs]  # all checked before any build
    builder = Builder(quiet=args.quiet)
    described = []
    for variant in variants:
        build = builder.build(variant)
        described.append(build.describe())
        for config in described[-1].get("config_files", []):  # stored whole with runs
            config["lines"] = len(config.pop("text").splitlines())
        if not args.json:
            probe = described[-1]["probe"]
            dirty = " [dirty work tree]" if (described[-1]["source"] or {}).get("dirty") \
                else ""  # fmt: skip
            print(f"{variant.name}: {probe.get('version')}{dirty} ({build.folder})")
    if args.json:
        json.dump(described, sys.stdout, indent=2)
        print()
    return 0


def cmd_code_size(args: argparse.Namespace) -> int:
    from tlsbench import codesize
    from tlsbench.build import Builder
    from tlsbench.variants import Catalog

    catalog = Catalog()
    if args.variants:
        variants = [catalog.resolve(spec) for spec in args.variants]  # all checked first
    else:
        defaults = [catalog.resolve(spec) for spec in catalog.defaults]
        variants = [v for v in defaults if codesize.supported(v.library)]
    for variant in variants:
        if not codesize.supported(variant.library):
            raise UserError(
                f"{variant.name}: code size is measured for mbedtls and wolfssl variants only"
            )
    builder = Builder(quiet=args.quiet)
    rows = []
    for variant in variants:
        build = builder.build(variant)
        rows += codesize.as_rows(build, codesize.measure(build))
    if args.json:
        json.dump(rows, sys.stdout, indent=2)
        print()
        return 0
    print(f"{'variant':<28} {'target':<7} {'role':<7} {'text':>9} {'data':>8} {'bss':>8}")
    for r in rows:
        print(
            f"{r['variant']:<28} {r['target']:<7} {r['role']:<7} "
            f"{r['text']:>9} {r['data']:>8} {r['bss']:>8}"
        )
    return 0


def cmd_cortex_m(args: argparse.Namespace) -> int:
    from tlsbench import cortexm
    from tlsbench.build import Builder
    from tlsbench.variants import Catalog

    catalog = Catalog()
    variants = [catalog.resolve(spec) for spec in args.variants]  # all checked first
    for variant in variants:
        cortexm.check_variant(variant)
    if args.runs < 1:
        raise UserError("--runs must be at least 1")
    suites = args.suite or list(cortexm.DEFAULT_SUITES)
    builder = Builder(quiet=args.quiet)
    rows = []
    for variant in variants:
        image = cortexm.image_of(builder.build(variant))
        for suite in suites:
            result = cortexm.measure(image, suite, args.group, args.runs)
            rows.append({"variant": variant.name, **result})
            if not args.json:
                _print_cortex_m_row(rows[-1], header=len(rows) == 1)
    if args.json:
        json.dump(rows, sys.stdout, indent=2)
        print()
    else:
        print(
            f"projected ms: instructions x CPI {cortexm.CPI} / {cortexm.CLOCK_MHZ:.0f} MHz; "
            f"every count identical over {args.runs} runs"
        )
    return 0


def _print_cortex_m_row(r: dict[str, Any], header: bool) -> None:
    if header:
        print(
            f"{'variant':<34} {'suite':<40} {'group':<9} {'client insn':>12} {'ms':>8} "
            f"{'server insn':>12} {'ms':>8} {'heap c/s':>13} {'stack c/s':>11}"
        )
    c, s = r["client"], r["server"]
    print(
        f"{r['variant']:<34} {r['suite']:<40} {r['group']:<9} "
        f"{c['handshake_instructions']:>12} {c['projected_ms']:>8.1f} "
        f"{s['handshake_instructions']:>12} {s['projected_ms']:>8.1f} "
        f"{c['heap_peak']:>6}/{s['heap_peak']:<6} "
        f"{c['stack_high_water']:>5}/{s['stack_high_water']:<5}",
        flush=True,
    )


def cmd_list(args: argparse.Namespace) -> int:
    from tlsbench.variants import Catalog

    listing = Catalog().listing()
    if args.json:
        json.dump(listing, sys.stdout, indent=2)
        print()
        return 0
    print("Lines (LINE[:OPTION,...]; OPTION = feature or MACRO=VALUE):")
    print("  (and your own code: LIBRARY@PATH, LIBRARY@PATH#REV, @PATH; and your config: "
          "config=FILE, user-config=FILE, user-settings=FILE, configure=OPTION, "
          "configure-file=FILE: docs/own-code.md)")  # fmt: skip
    for name, line in listing["lines"].items():
        origin = line["upstream"] or f"machine's {line['system_package']}"
        default = "  (default)" if name in listing["defaults"] else ""
        print(f"  {name:<18} {origin}{default}")
    print("Named variants:")
    for name, spec in listing["named"].items():
        print(f"  {name:<18} = {spec}")
    print("Features:")
    for library, features in listing["features"].items():
        for name, info in features.items():
            note = f"  [unavailable: {info['unsupported']}]" if "unsupported" in info else ""
            print(f"  {library + ':' + name:<32} {info['description']}{note}")
    return 0


def cmd_doctor(args: argparse.Namespace) -> int:
    from tlsbench.doctor import run_doctor

    return run_doctor(as_json=args.json)


def cmd_sources(args: argparse.Namespace) -> int:
    from tlsbench.sources import Sources

    sources = Sources()
    if args.action == "repin":
        if not args.line or not args.version:
            raise UserError("usage: tlsbench sources repin LINE VERSION")
        old = sources.pin(args.line)
        new = sources.repin(args.line, args.version)
        print(f"{args.line}: {old.upstream} -> {new.upstream} ({new.file}, sha256 {new.sha256})")
        print("recorded in sources/pin-moves.log; commit sources/ to keep the move")
        return 0
    lines = [args.line] if args.line else sorted(sources.pins)
    for line in lines:
        if args.action == "fetch":
            path = sources.source_dir(line)
        else:  # list
            pin = sources.pin(line)
            wants_offered = args.offered and pin.kind == "debian"
            offered = sources.apt.offered_versions(pin.package) if wants_offered else []
            extra = f"  offered: {', '.join(offered)}" if offered else ""
            print(f"{line:<16} {pin.package} {pin.upstream}  {pin.file}  {pin.sha256}{extra}")
            continue
        print(f"{line}: {path}")
    return 0


def cmd_drive(args: argparse.Namespace) -> int:
    from tlsbench.drive import drive

    return drive(args.variant, args.scenario, args.driver_args, measure=args.measure)


def cmd_certs(args: argparse.Namespace) -> int:
    from tlsbench import certs

    kinds = args.kinds or list(certs.KINDS)
    for kind, folder in certs.ensure_all(kinds).items():
        print(f"{kind}: {folder}")
    return 0


DEFAULT_DB = "results/tlsbench.db"


def _whole(low: int, high: int) -> Callable[[str], int]:
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
        if not low <= value <= high:
            raise argparse.ArgumentTypeError(f"{value} is outside {low}..{high}")
        return value

    return parse


def _seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds") from None
    if not 0 < value <= 86400:
        raise argparse.ArgumentTypeError(f"{value:g} is outside 0..86400 seconds")
    return value


def cmd_run(args: argparse.Namespace) -> int:
    from tlsbench import experiments
    from tlsbench.build import Builder
    from tlsbench.runner import Runner, check_results_location, refuse_impossible, tls_variants
    from tlsbench.store import Store
    from tlsbench.variants import Catalog

    db_path = Path(args.db)
    if args.resume is not None:
        given = [
            flag
            for flag, present in (
                (f"the experiment {args.experiment!r}", args.experiment is not None),
                ("--only", bool(args.only)),
                ("--repetitions", args.repetitions is not None),
                ("--mode", args.mode is not None),
                ("--timeout", args.timeout is not None),
                ("--seed", args.seed is not None),
                ("--dry-run", args.dry_run),
            )
            if present
        ]
        if given:
            raise UserError(
                f"--resume {args.resume} runs what the run is missing under its stored "
                f"settings (experiment, points, repetitions, mode, timeout); drop "
                f"{', '.join(given)}, or start a new run"
            )
        store = Store(db_path)
        run = store.run(args.resume)
        runner = Runner(store, quiet=args.quiet)
        runner.check_same_builds(run["id"])
        return _summarize_run(run["id"], runner.execute(run["id"], stored_timeout(run)), store)
    # Everything about the request is checked before the store is touched.
    experiment = experiments.load(args.experiment or "quick")
    points = experiments.only(experiment.points, args.only or [])
    repetitions = args.repetitions or experiment.repetitions
    if args.dry_run:
        for point in points:
            print(f"{point.name:<60} {point.variant}")
        print(f"{len(points)} points x {repetitions} repetitions", file=sys.stderr)
        return 0
    check_results_location(db_path)
    # What a variant's build declares it can never run is refused before the store is
    # touched (the builds are needed for the run anyway, and cached).
    builder = Builder(quiet=args.quiet)
    catalog = Catalog()
    refuse_impossible(
        points, {spec: builder.build(catalog.resolve(spec)) for spec in tls_variants(points)}
    )
    store = Store(db_path)
    runner = Runner(store, builder=builder, quiet=args.quiet)
    runner.mode = args.mode or "time"
    timeout = args.timeout if args.timeout is not None else experiment.timeout
    run_id = runner.start(experiment, points, repetitions, timeout, seed=args.seed)
    return _summarize_run(run_id, runner.execute(run_id, timeout), store)


def stored_timeout(run: Any) -> float:
    """The run's own timeout; runs stored before it was kept use their experiment's."""
    if run["timeout"] is not None:
        return float(run["timeout"])
    import tomllib

    with contextlib.suppress(tomllib.TOMLDecodeError):
        value = tomllib.loads(run["experiment_text"]).get("timeout")
        if isinstance(value, int | float) and value > 0:
            return float(value)
    return 300.0


def _summarize_run(run_id: int, tally: Any, store: Any) -> int:
    print(
        f"run {run_id}: {tally.ok} ok, {tally.unsupported} unsupported, "
        f"{len(tally.failed)} failed ({store.path})",
        file=sys.stderr,
    )
    for failure in tally.failed:
        print(f"  FAILED {failure}", file=sys.stderr)
    return 1 if store.failed_count(run_id) else 0


def cmd_compare(args: argparse.Namespace) -> int:
    from tlsbench.compare import compare_runs, run_warnings, table, to_json
    from tlsbench.stats import DEFAULT_THRESHOLD
    from tlsbench.store import Store

    if args.threshold is not None and not 0 <= args.threshold < 1:
        raise UserError(
            f"--threshold {args.threshold}: give a fraction from 0 to below 1 (0.05 = 5 %)"
        )
    store = Store(Path(args.db), readonly=True)
    run_a, run_b = store.run(args.a)["id"], store.run(args.b)["id"]
    variants = None
    if args.variants:
        variants = (_stored_name(args.variants[0]), _stored_name(args.variants[1]))
    rows = compare_runs(store, run_a, run_b, threshold=args.threshold, normalise=args.normalise,
                        variants=variants)  # fmt: skip
    threshold = DEFAULT_THRESHOLD if args.threshold is None else args.threshold
    notes = run_warnings(store, run_a, run_b)
    render = to_json if args.json else table
    print(render(rows, run_a, run_b, threshold, notes, args.normalise),
          end="\n" if not args.json else "")  # fmt: skip
    return 0


def _stored_name(spec: str) -> str:
    """A variant as the store names it (canonical: a local source's path made absolute);
    the spec as given when it no longer resolves (a tree since deleted)."""
    from tlsbench.variants import Catalog

    try:
        return Catalog().resolve(spec).name
    except UserError:
        return spec


def cmd_ab(args: argparse.Namespace) -> int:
    from tlsbench import ab, experiments
    from tlsbench.build import Builder
    from tlsbench.runner import Runner, check_results_location, refuse_impossible, tls_variants
    from tlsbench.store import Store
    from tlsbench.variants import Catalog

    # Everything about the request is checked before anything is built or stored.
    thresholds = ab.parse_thresholds(args.threshold or [])
    fail_on = ab.parse_kinds(args.fail_on)
    db_path = Path(args.db)
    if args.run is not None:  # verdicts of a stored run: nothing runs
        store = Store(db_path, readonly=True)
        base, candidate = _stored_name(args.base), _stored_name(args.candidate)
        run_id = int(store.run(args.run)["id"])
    else:
        catalog = Catalog()
        base, candidate = catalog.resolve(args.base).name, catalog.resolve(args.candidate).name
        if base == candidate:
            raise UserError(
                f"BASE and CANDIDATE are the same variant ({base}); to measure the noise of "
                "identical code, name one commit twice by two names (e.g. #main and #HEAD)"
            )
        experiment = experiments.load(args.experiment or "ab", catalog, [base, candidate])
        points = experiments.only(experiment.points, args.only or [])
        repetitions = args.repetitions or experiment.repetitions
        check_results_location(db_path)
        builder = Builder(quiet=args.quiet)
        refuse_impossible(
            points, {spec: builder.build(catalog.resolve(spec)) for spec in tls_variants(points)}
        )
        store = Store(db_path)
        runner = Runner(store, builder=builder, quiet=args.quiet)
        runner.mode = args.mode
        timeout = args.timeout if args.timeout is not None else experiment.timeout
        run_id = runner.start(experiment, points, repetitions, timeout, seed=args.seed)
        tally = runner.execute(run_id, timeout)
        print(f"run {run_id}: {tally.ok} ok, {tally.unsupported} unsupported, "
              f"{len(tally.failed)} failed ({store.path})", file=sys.stderr)  # fmt: skip
    outcome = ab.compare_variants(store, run_id, base, candidate, thresholds, fail_on)
    summary = ab.markdown(outcome, str(db_path))
    if args.summary:
        _write_text(Path(args.summary), summary, "--summary")
    print(ab.to_json(outcome) if args.json else summary, end="")
    return outcome.exit_status


def _write_text(path: Path, text: str, flag: str) -> None:
    try:
        with path.open("a", encoding="utf-8") as out:  # a CI job summary is appended to
            out.write(text)
    except OSError as exc:
        raise UserError(f"{flag} {path}: cannot write there ({exc.strerror or exc})") from exc


def cmd_report(args: argparse.Namespace) -> int:
    from tlsbench.report import EXPORTERS, FORMATS, export, load_run
    from tlsbench.report.plots import write_plots
    from tlsbench.store import Store

    fmt = {"md": "markdown"}.get(args.format, args.format)
    if fmt not in EXPORTERS:
        raise UserError(f"unknown --format {args.format}; choose md, csv, json, html, bmf or gab")
    model = load_run(Store(Path(args.db), readonly=True), args.run)
    out = Path(args.out) if args.out else None
    text = export(model, fmt, out)
    if out is None:
        print(text)
        return 0
    if fmt not in FORMATS:  # figures for a dashboard: no plots
        print(f"wrote {out}", file=sys.stderr)
        return 0
    plots = write_plots(model, out.parent / "plots")
    print(f"wrote {out}" + (f" and {len(plots)} plot files in {out.parent / 'plots'}"
                            if plots else ""), file=sys.stderr)  # fmt: skip
    return 0


def cmd_runs(args: argparse.Namespace) -> int:
    from tlsbench.store import Store

    store = Store(Path(args.db), readonly=True)
    for run in store.runs():
        print(
            f"{run['id']:>4}  {run['started_at']}  {store.status_of(run):<11} {run['experiment']}"
            f"  ({run['repetitions']} repetitions)"
        )
    return 0


def cmd_cache(args: argparse.Namespace) -> int:
    from tlsbench import cache
    from tlsbench.build import Builder
    from tlsbench.variants import Catalog

    builder = Builder(quiet=True)
    stale = cache.plan(builder, Catalog())
    for item in stale:
        print(f"{item.bytes / 2**20:9.1f} MiB  {item.path}  ({item.reason})")
    total = sum(item.bytes for item in stale) / 2**20
    if args.dry_run:
        print(f"would remove {len(stale)} entries, {total:.1f} MiB (dry run)", file=sys.stderr)
        return 0
    cache.remove(stale)
    print(f"removed {len(stale)} entries, {total:.1f} MiB from {builder.cache}", file=sys.stderr)
    return 0


def cmd_migrate(args: argparse.Namespace) -> int:
    from tlsbench.store import SCHEMA_VERSION, Store

    Store(Path(args.db)).close()  # opening for writing migrates
    print(f"{args.db}: schema version {SCHEMA_VERSION}")
    return 0


COMMANDS: dict[str, Callable[[argparse.Namespace], int]] = {
    "run": cmd_run,
    "runs": cmd_runs,
    "compare": cmd_compare,
    "ab": cmd_ab,
    "report": cmd_report,
    "drive": cmd_drive,
    "certs": cmd_certs,
    "build": cmd_build,
    "code-size": cmd_code_size,
    "cortex-m": cmd_cortex_m,
    "list": cmd_list,
    "doctor": cmd_doctor,
    "sources": cmd_sources,
    "migrate": cmd_migrate,
    "cache": cmd_cache,
}


def _db_option(parser: argparse.ArgumentParser, reads_only: bool) -> None:
    note = (
        "read only: never created, migrated or changed"
        if reads_only
        else "created with its folder if missing"
    )
    parser.add_argument(
        "--db",
        default=DEFAULT_DB,
        metavar="FILE",
        help=f"results store ({note}; default {DEFAULT_DB})",
    )


def parser() -> argparse.ArgumentParser:
    top = argparse.ArgumentParser(
        prog="tlsbench",
        description="A benchmark lab for TLS libraries: builds pinned variants, runs "
        "experiments into a results store, reports and compares them. "
        "`tlsbench VERB --help` describes each verb.",
    )
    sub = top.add_subparsers(dest="command", required=True, metavar="VERB")

    def verb(name: str, summary: str, details: str = "") -> argparse.ArgumentParser:
        return sub.add_parser(name, help=summary, description=f"{summary}. {details}".strip())

    build = verb(
        "build",
        "Build variants from their pinned sources, cached by a key of everything that goes "
        "into them",
        "Prints each variant's version and build folder (or, with --json, its options, cache "
        "key, library files and probe output). A variant is LINE[:FEATURE,...,MACRO=VALUE]; "
        "`tlsbench list variants` lists them.",
    )
    build.add_argument(
        "variants", nargs="*", metavar="VARIANT", help="default: the defaults of variants.toml"
    )
    build.add_argument("--json", action="store_true", help="print a JSON description per variant")
    build.add_argument("--quiet", action="store_true", help="no progress lines on stderr")

    size = verb(
        "code-size",
        "Bytes (text/data/bss) a minimal TLS client and server link, per variant",
        "Each role's program is linked with section garbage collection against the "
        "variant's archives (mbedTLS and wolfSSL variants).",
    )
    size.add_argument(
        "variants", nargs="*", metavar="VARIANT", help="default: the mbedTLS/wolfSSL defaults"
    )
    size.add_argument("--json", action="store_true", help="print one JSON row per role")
    size.add_argument("--quiet", action="store_true", help="no build progress lines on stderr")

    cortex = verb(
        "cortex-m",
        "TLS 1.2 handshakes of a Cortex-M7 firmware image under QEMU: instructions, heap and "
        "stack per side",
        "Builds the variant's firmware image (a variant with the cortex-m7 feature, e.g. "
        "mbedtls-3.6.6:cortex-m7), runs each suite --runs times on QEMU's mps2-an500 with "
        "-icount (refusing counts that differ between runs), and projects instructions to "
        "milliseconds at 216 MHz with a CPI of 1.0.",
    )
    cortex.add_argument("variants", nargs="+", metavar="VARIANT", help="cortex-m7 variants")
    cortex.add_argument(
        "--suite",
        action="append",
        metavar="SUITE",
        help="a TLS 1.2 suite, mbedTLS spelling (repeatable; default: RSA and ECDHE-RSA with "
        "AES-128/256 CBC/GCM)",
    )
    cortex.add_argument("--group", help="the client's only group (x25519, secp256r1, secp384r1)")
    cortex.add_argument("--runs", type=int, default=2, help="runs per suite (default 2)")
    cortex.add_argument("--json", action="store_true", help="print one JSON object per suite")
    cortex.add_argument("--quiet", action="store_true", help="no build progress lines on stderr")

    drive = verb(
        "drive",
        "Run one scenario with one variant's driver (built if needed)",
        "Options after the scenario go to the driver unchanged; `tlsbench drive null info "
        "--help` lists them.",
    )
    drive.add_argument(
        "--measure",
        choices=["time", "heap"],
        default=None,
        help="time (default): the timing driver, no heap accounting in the allocation path; "
        "heap: the driver that accounts heap per side (its times are not comparable); "
        "armhf variants run under qemu-user and take heap only (their default)",
    )
    drive.add_argument("variant", help="a variant, e.g. openssl-3.5.x or wolfssl-5.7.2:intelasm")
    drive.add_argument(
        "scenario",
        choices=["handshake", "resume", "records", "bulk", "aead", "info", "peer", "serve", "load"],
    )
    drive.add_argument("driver_args", nargs=argparse.REMAINDER, help="options for the driver")

    certs = verb("certs", "Generate the test certificates (cached)", "Prints each kind's folder.")
    certs.add_argument("kinds", nargs="*", metavar="KIND", help="default: every kind")

    run = verb(
        "run",
        "Run an experiment into the results store",
        "Builds what it needs, runs every point in separate driver processes with a progress "
        "line, and stores each result as it finishes. Exit 1 when a point failed, 2 for bad "
        "input (nothing stored), 130/143 when interrupted (the run is marked interrupted; "
        "--resume finishes it).",
    )
    run.add_argument(
        "experiment",
        nargs="?",
        help="a name in experiments/ or a path to a .toml file (default: quick)",
    )
    _db_option(run, reads_only=False)
    run.add_argument(
        "--resume",
        metavar="RUN",
        help="run what run RUN (a number or 'latest') is missing or failed, under its stored "
        "settings",
    )
    run.add_argument(
        "--only",
        action="append",
        metavar="KEY=VALUE",
        help="keep the points whose KEY (variant, library, scenario, name or an option) is "
        "VALUE; repeatable, all must match",
    )
    run.add_argument("--dry-run", action="store_true", help="list the points, run nothing")
    run.add_argument(
        "--repetitions",
        type=_whole(1, 1000),
        help="driver processes per point (default: the experiment's `repetitions`, else 5)",
    )
    run.add_argument(
        "--timeout",
        type=_seconds,
        help="seconds per driver process (default: the experiment's `timeout`, else 300)",
    )
    run.add_argument(
        "--mode",
        choices=["time", "instructions"],
        help="time (default): the driver's clocks; instructions: instructions of the measured "
        "calls counted under callgrind, identical run to run",
    )
    run.add_argument(
        "--seed",
        type=_whole(0, 2**32 - 1),
        help="seed of the run order: each repetition runs the points in an order shuffled by "
        "it (default: a random seed; stored in the run, shown in its environment)",
    )
    run.add_argument("--quiet", action="store_true", help="no progress line")

    cmp = verb(
        "compare",
        "Compare run B against run A, per point and series",
        "Prints the ratio B/A with its 95 % confidence interval and a verdict from the "
        "per-repetition figures, with warnings where the runs are not comparable.",
    )
    cmp.add_argument("a", metavar="A", help="the baseline run: a number or 'latest'")
    cmp.add_argument("b", metavar="B", help="the run compared with it: a number or 'latest'")
    cmp.add_argument(
        "--threshold",
        type=float,
        default=None,
        help="practical threshold as a fraction: smaller changes are 'no difference' even when "
        "significant (default 0.05; instruction counts 0.01)",
    )
    cmp.add_argument("--json", action="store_true", help="one JSON object per point and series")
    cmp.add_argument(
        "--variants",
        nargs=2,
        metavar=("BASE", "CANDIDATE"),
        help="pair the points of variant BASE in A with the same points of variant CANDIDATE "
        "in B (A and B may be one run, e.g. tlsbench ab's); default: the same variant, or, "
        "when each run holds one variant, those two",
    )
    cmp.add_argument(
        "--normalise",
        action="store_true",
        help="divide each repetition's time figures by its calibration workload time (relative "
        "to A's median) before comparing, instead of reporting 'machine drift'",
    )
    _db_option(cmp, reads_only=True)

    abv = verb(
        "ab",
        "Build BASE and CANDIDATE, run an experiment's points for both interleaved in one "
        "run, and give every figure a verdict",
        "BASE and CANDIDATE are any two variants: two commits (mbedtls@REPO#main, "
        "mbedtls@REPO#HEAD), two config files, two pins, a pin and a tree. Times are judged "
        "by their statistics; instructions, heap, stack, allocations, wire bytes and code "
        "size as figures that should not move (equal, or changed by how much). Prints a "
        "Markdown summary (regressions first). Exit 0: no regression of a kind in "
        "--fail-on; 1: a regression beyond its threshold, or a failed point; 2: bad input.",
    )
    abv.add_argument("base", metavar="BASE", help="the baseline variant")
    abv.add_argument("candidate", metavar="CANDIDATE", help="the variant judged against it")
    abv.add_argument(
        "experiment",
        nargs="?",
        help="an experiment (a name in experiments/ or a .toml file) whose points run for both "
        "in place of its own variants (default: ab)",
    )
    abv.add_argument(
        "--mode",
        choices=["time", "instructions"],
        default="time",
        help="time (default): clocks, heap and the rest; instructions: instruction counts "
        "under callgrind in place of times (heap and the rest as in time mode)",
    )
    abv.add_argument(
        "--fail-on",
        default="all",
        metavar="KINDS",
        help="figure kinds whose regression exits 1, comma-separated: time, instructions, heap, "
        "stack, allocations, wire, code-size, or all (default), none (a failed point always "
        "exits 1)",
    )
    abv.add_argument(
        "--threshold",
        action="append",
        metavar="KIND=FRACTION",
        help="practical threshold of a kind, a fraction of the base's figure (repeatable); "
        "defaults: time=0.05, instructions=0.01, every other kind 0 (any change beyond the "
        "figure's run-to-run spread)",
    )
    abv.add_argument(
        "--repetitions",
        type=_whole(1, 1000),
        help="driver processes per point and variant (default: the experiment's); a time or "
        "a varying figure needs 4 per side for a verdict",
    )
    abv.add_argument(
        "--only",
        action="append",
        metavar="KEY=VALUE",
        help="keep the experiment's points whose KEY is VALUE (as tlsbench run --only)",
    )
    abv.add_argument("--timeout", type=_seconds, help="seconds per driver process")
    abv.add_argument("--seed", type=_whole(0, 2**32 - 1), help="seed of the run order")
    abv.add_argument("--json", action="store_true", help="print the verdicts as JSON")
    abv.add_argument(
        "--summary",
        metavar="FILE",
        help="also append the Markdown summary to FILE (e.g. $GITHUB_STEP_SUMMARY)",
    )
    abv.add_argument(
        "--run",
        metavar="RUN",
        help="judge the variants of stored run RUN (a number or 'latest') instead of running "
        "anything (e.g. with other thresholds)",
    )
    abv.add_argument("--quiet", action="store_true", help="no progress line")
    _db_option(abv, reads_only=False)

    report = verb(
        "report",
        "Tables and plots of a run",
        "Markdown goes to the terminal unless --out is given; plots (PNG and SVG) go beside "
        "the --out file in plots/.",
    )
    report.add_argument(
        "run", nargs="?", default="latest", help="a run number or 'latest' (default)"
    )
    report.add_argument(
        "--format",
        default="md",
        help="md (default), csv, json, html (one self-contained page), or the figures for a "
        "dashboard: bmf (Bencher Metric Format), gab (github-action-benchmark, "
        "customSmallerIsBetter)",
    )
    report.add_argument("--out", metavar="FILE", help="write to FILE instead of the terminal")
    _db_option(report, reads_only=True)

    runs = verb(
        "runs",
        "List the runs in the store",
        "A run whose runner is gone shows as interrupted.",
    )
    _db_option(runs, reads_only=True)

    cache = verb(
        "cache",
        "Prune the build cache",
        "Removes library builds no current variant uses (defaults, named variants, shipped "
        "experiments), drivers of older driver sources, unpacked trees and archives that are "
        "no longer pinned, and what interrupted builds left. Certificates are kept.",
    )
    cache.add_argument("action", choices=["prune"])
    cache.add_argument("--dry-run", action="store_true", help="list what would go, remove nothing")

    migrate = verb(
        "migrate",
        "Bring a results store written by an older tlsbench up to date",
        "Reading verbs (runs, report, compare) never migrate; writing ones (run) migrate "
        "on their own.",
    )
    _db_option(migrate, reads_only=False)

    lst = verb("list", "List lines, named variants and features")
    lst.add_argument("what", choices=["variants"])
    lst.add_argument("--json", action="store_true", help="print JSON")

    doctor = verb(
        "doctor",
        "Check tools and what could skew measurements",
        "Prints what is missing with the command that installs it; exit 1 when something is.",
    )
    doctor.add_argument("--json", action="store_true", help="print JSON")

    sources = verb(
        "sources",
        "Pinned library sources: list, fetch, repin",
        "fetch downloads, hashes in full and unpacks; repin moves a line to another upstream "
        "version Debian offers and records the move in sources/pin-moves.log.",
    )
    sources.add_argument("action", choices=["list", "fetch", "repin"])
    sources.add_argument("line", nargs="?", help="a pinned line, e.g. openssl-3.5.x (default: all)")
    sources.add_argument("version", nargs="?", help="repin: the upstream version to move to")
    sources.add_argument("--offered", action="store_true", help="list: versions Debian offers")
    return top


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    signal.signal(signal.SIGTERM, _on_sigterm)
    try:
        return COMMANDS[args.command](args)
    except UserError as exc:
        print(f"tlsbench: error: {exc}", file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        print("tlsbench: interrupted", file=sys.stderr)
        return 130
    except Terminated:
        print("tlsbench: terminated", file=sys.stderr)
        return 143


class Terminated(Exception):
    """SIGTERM, raised in the main thread so that a run stops as on Ctrl-C: its driver is
    killed and the run is marked interrupted."""


def _on_sigterm(signum: int, frame: Any) -> None:
    raise Terminated()
