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

from tlsbench.core.dialect import DB_ENV, DEFAULT_DB, db_target, redacted
from tlsbench.core.errors import UserError
from tlsbench.driver import cpuprofile

# What `drive --measure` picks: the timing driver, the heap driver, the timing driver with
# lock counting (drive.PROGRAMS; not imported here, to keep start-up light).
MEASURES = ("time", "heap", "locks")


def cmd_build(args: argparse.Namespace) -> int:
    from tlsbench.builds.build import Builder
    from tlsbench.builds.variants import Catalog

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
    from tlsbench.builds import codesize
    from tlsbench.builds.build import Builder
    from tlsbench.builds.variants import Catalog

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
    from tlsbench.builds import firmware, needs
    from tlsbench.builds.build import Builder
    from tlsbench.builds.variants import Catalog
    from tlsbench.embedded import qemu

    catalog = Catalog()
    variants = [catalog.resolve(spec) for spec in args.variants]  # all checked first
    for variant in variants:
        qemu.check_variant(variant)
    if args.runs < 1:
        raise UserError("--runs must be at least 1")
    suites = args.suite or firmware.default_suites(args.tls, args.kx, args.cert)
    jobs = [
        firmware.make_job(suite, tls=args.tls, kx=args.kx, group=args.group, cert=args.cert,
                         chain=args.chain, record=args.record_size)
        for suite in suites
    ]  # fmt: skip
    for variant in variants:  # what a config file leaves out, before anything is built
        for job in jobs:
            needs.refuse_unfit(variant, job)
    builder = Builder(quiet=args.quiet)
    rows = []
    for variant in variants:
        core = firmware.core_of(variant.arch)
        image = qemu.image_of(builder.build(variant))
        for job in jobs:
            try:
                result = qemu.measure(image, core, job, args.runs)
            except qemu.Unsupported as exc:
                print(f"{variant.name}: unsupported: {exc}", file=sys.stderr)
                continue
            rows.append({"variant": variant.name, "job": job.describe(), **result})
            if not args.json:
                _print_cortex_m_row(rows[-1], header=len(rows) == 1)
    if args.json:
        json.dump(rows, sys.stdout, indent=2)
        print()
    else:
        for arch in dict.fromkeys(v.arch for v in variants):
            print(f"{arch} ms: {qemu.describe_projection(firmware.core_of(arch))}")
        print(f"every count identical over {args.runs} runs")
    return 3 if not rows else 0


def _print_cortex_m_row(r: dict[str, Any], header: bool) -> None:
    if header:
        print(
            f"{'variant':<32} {'job':<56} {'group':<9} {'client insn':>12} {'ms':>13} "
            f"{'server insn':>12} {'ms':>13} {'heap c/s':>13} {'stack c/s':>11}"
        )
    c, s = r["client"], r["server"]
    cms, sms = c["projected_ms"], s["projected_ms"]
    print(
        f"{r['variant']:<32} {r['job']:<56} {r['wire']['group']:<9} "
        f"{c['handshake_instructions']:>12} {cms[0]:>6.1f}-{cms[1]:<6.1f} "
        f"{s['handshake_instructions']:>12} {sms[0]:>6.1f}-{sms[1]:<6.1f} "
        f"{c['heap_peak']:>6}/{s['heap_peak']:<6} "
        f"{c['stack_high_water']:>5}/{s['stack_high_water']:<5}",
        flush=True,
    )


def cmd_fit(args: argparse.Namespace) -> int:
    from tlsbench.builds import firmware
    from tlsbench.embedded import fit

    core = firmware.core_named(args.core)
    budget = fit.Budget(
        core,
        fit.parse_bytes(args.ram, "--ram"),
        fit.parse_bytes(args.flash, "--flash"),
        args.mhz or core.part.mhz,
    )
    if args.mhz is not None and args.mhz <= 0:
        raise UserError(f"--mhz {args.mhz}: give the core's clock in MHz (a positive number)")
    if args.auth != "server":
        raise UserError(
            f"--auth {args.auth}: the firmware images authenticate the server only (the client "
            "verifies its chain; or both hold the pre-shared key with --kx psk)"
        )
    if args.kx == "rsa" and args.tls == "1.3":
        raise UserError("--kx rsa: static RSA is TLS 1.2 only")
    lines = tuple(args.line or fit.LINES)
    for line in lines:
        if line not in fit.LINES:
            raise UserError(f"--line {line}: choose among {', '.join(fit.LINES)}")
    cert = args.cert or ("rsa2048" if args.kx == "rsa" else "ecdsa-p256")
    job = fit.job_for(args.tls, args.kx, cert, args.group, 16384)  # usage errors first
    records = tuple(args.records or firmware.RECORD_SIZES)
    for record in records:
        if record not in firmware.RECORD_SIZES:
            raise UserError(f"--records {record}: choose among "
                            f"{', '.join(map(str, firmware.RECORD_SIZES))}")  # fmt: skip
    configurations = tuple(args.config or fit.CONFIGURATION_NAMES)
    for name in configurations:
        if name not in fit.CONFIGURATION_NAMES:
            raise UserError(f"--config {name}: choose among {', '.join(fit.CONFIGURATION_NAMES)}")
    candidates, notes = fit.candidates(core, args.tls, args.kx, cert, args.group, lines,
                                       tuple(args.variant or ()), records,
                                       configurations)  # fmt: skip
    outcomes = fit.measure_all(candidates, quiet=args.quiet)
    if args.json:
        json.dump({"budget": {"core": core.arch, "ram": budget.ram, "flash": budget.flash,
                              "mhz": budget.mhz, "cpi": list(core.cpi)},
                   "role": args.role, "job": job.describe(), "notes": notes,
                   "candidates": fit.rows(outcomes, budget, args.role)},
                  sys.stdout, indent=2)  # fmt: skip
        print()
    else:
        print(fit.table(outcomes, budget, args.role, job, notes))
    if args.plot != "none":
        path = fit.plot(
            outcomes, budget, args.role, Path(args.plot or f"results/fit-{core.short}.png")
        )
        if not args.json:
            print(f"\nplot: {path}")
    return 0


def cmd_list(args: argparse.Namespace) -> int:
    from tlsbench.builds.variants import Catalog

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
    from tlsbench.cli.doctor import run_doctor

    return run_doctor(as_json=args.json)


def cmd_sources(args: argparse.Namespace) -> int:
    from tlsbench.builds.sources import Sources

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
    from tlsbench.builds import needs
    from tlsbench.builds.variants import Catalog
    from tlsbench.driver.declaration import declared
    from tlsbench.driver.drive import drive

    known = declared().scenarios
    if args.scenario not in known:
        raise UserError(f"unknown scenario {args.scenario!r}: the driver's are {', '.join(known)}")
    # `--measure` after the scenario is tlsbench's too (the driver has no such option), so
    # that `drive VARIANT handshake --threads 2 --measure locks` reads as it is written.
    driver_args, measure = list(args.driver_args), args.measure
    if "--measure" in driver_args[:-1]:
        at = driver_args.index("--measure")
        measure = driver_args[at + 1]
        del driver_args[at : at + 2]
    if measure not in (None, *MEASURES):
        raise UserError(f"--measure {measure}: choose one of {', '.join(MEASURES)}")
    job = needs.job_of_driver_args(driver_args)
    if job is not None:  # what a config file leaves out of the job, before anything is built
        needs.refuse_unfit(Catalog().resolve(args.variant), job)
    return drive(args.variant, args.scenario, driver_args, measure=measure,
                 replace=args.exec)  # fmt: skip


def cmd_host_info(args: argparse.Namespace) -> int:
    from tlsbench.peers import remote

    json.dump(remote.host_info(args.variants, args.certs or []), sys.stdout, indent=2)
    print()
    return 0


def cmd_certs(args: argparse.Namespace) -> int:
    from tlsbench.builds import certs

    kinds = args.kinds or list(certs.KINDS)
    for kind, folder in certs.ensure_all(kinds).items():
        print(f"{kind}: {folder}")
    return 0


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
    from tlsbench.builds.build import Builder
    from tlsbench.builds.variants import Catalog
    from tlsbench.core.store import Store
    from tlsbench.run import experiments, shards
    from tlsbench.run.runner import (
        Runner,
        check_results_location,
        interleaved,
        refuse_impossible,
        tls_variants,
    )

    target = db_target(args.db)
    shard = shards.parse(args.shard) if args.shard is not None else None
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
                ("--run-key", args.run_key is not None),
            )
            if present
        ]
        if given:
            raise UserError(
                f"--resume {args.resume} runs what the run is missing under its stored "
                f"settings (experiment, points, repetitions, mode, timeout); drop "
                f"{', '.join(given)}, or start a new run"
            )
        store = Store(target)
        run = store.run(args.resume)
        count = int(run["shard_count"] or 1)
        if shard is None and count > 1:
            raise UserError(
                f"run {run['id']} is split into {count} shards: resume one with "
                f"--shard K/{count} (`tlsbench runs` shows which are missing)"
            )
        if shard is not None and shard.count != count:
            raise UserError(
                f"run {run['id']} is split into {count} shards, not {shard.count}: "
                f"give --shard K/{count}"
            )
        index = shard.index if shard else 1
        runner = Runner(store, quiet=args.quiet)
        runner.parallel_waiting = not args.serial
        runner.check_same_builds(run["id"])
        tally = runner.execute(run["id"], stored_timeout(run), index)
        return _summarize_run(run["id"], tally, store, index if count > 1 else None)
    run_key = shards.check_run_key(args.run_key) if args.run_key is not None else None
    # Everything about the request is checked before the store is touched.
    experiment = experiments.load(args.experiment or "quick")
    points = experiments.only(experiment.points, args.only or [])
    repetitions = args.repetitions or experiment.repetitions
    if args.dry_run:
        listed = points
        if shard is not None:  # dealt from the order the run stores its points in
            stored = interleaved(points)
            listed = [stored[i] for i in shards.select(list(range(len(stored))), shard)]
        for point in listed:
            print(f"{point.name:<60} {point.variant}")
        part = f" (shard {shard} of {len(points)})" if shard else ""
        print(f"{len(listed)} points{part} x {repetitions} repetitions", file=sys.stderr)
        return 0
    if shard is not None and run_key is None:
        raise UserError(
            "--shard needs --run-key KEY, the same in every shard of the run (e.g. the CI "
            "pipeline's id): the shards find their one run in the store by it"
        )
    check_results_location(target)
    # What a variant's build declares it can never run is refused before the store is
    # touched (the builds are needed for the run anyway, and cached).
    builder = Builder(quiet=args.quiet)
    catalog = Catalog()
    refuse_impossible(
        points, {spec: builder.build(catalog.resolve(spec)) for spec in tls_variants(points)}
    )
    store = Store(target)
    runner = Runner(store, builder=builder, quiet=args.quiet)
    runner.mode = args.mode or "time"
    runner.parallel_waiting = not args.serial
    timeout = args.timeout if args.timeout is not None else experiment.timeout
    run_id = runner.start(experiment, points, repetitions, timeout, seed=args.seed,
                          shard=shard, run_key=run_key)  # fmt: skip
    # A joined run's timeout is the one its first shard stored.
    timeout = stored_timeout(store.run(run_id))
    index = shard.index if shard else 1
    tally = runner.execute(run_id, timeout, index)
    return _summarize_run(run_id, tally, store, index if shard else None)


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


def _summarize_run(run_id: int, tally: Any, store: Any, shard: int | None = None) -> int:
    part = f" shard {shard}" if shard is not None else ""
    print(
        f"run {run_id}{part}: {tally.ok} ok, {tally.unsupported} unsupported, "
        f"{len(tally.failed)} failed ({store.path})",
        file=sys.stderr,
    )
    for failure in tally.failed:
        print(f"  FAILED {failure}", file=sys.stderr)
    if shard is not None:
        missing = store.missing_shards(run_id)
        count = int(store.run(run_id)["shard_count"])
        if missing:
            print(f"run {run_id}: still missing {', '.join(m.describe(count) for m in missing)}",
                  file=sys.stderr)  # fmt: skip
    return 1 if store.failed_count(run_id, shard) else 0


def cmd_compare(args: argparse.Namespace) -> int:
    from tlsbench.core.stats import DEFAULT_THRESHOLD
    from tlsbench.core.store import Store
    from tlsbench.report.compare import compare_runs, run_warnings, table, to_json

    if args.threshold is not None and not 0 <= args.threshold < 1:
        raise UserError(
            f"--threshold {args.threshold}: give a fraction from 0 to below 1 (0.05 = 5 %)"
        )
    store = Store(db_target(args.db), readonly=True)
    run_a, run_b = store.run(args.a)["id"], store.run(args.b)["id"]
    if not args.partial:
        for run_id in dict.fromkeys((run_a, run_b)):
            store.check_whole(run_id, "compare")
    variants = None
    if args.variants:
        variants = (_stored_name(args.variants[0]), _stored_name(args.variants[1]))
    rows = compare_runs(store, run_a, run_b, threshold=args.threshold, normalise=args.normalise,
                        pool_machines=args.pool_machines, variants=variants)  # fmt: skip
    threshold = DEFAULT_THRESHOLD if args.threshold is None else args.threshold
    notes = run_warnings(store, run_a, run_b)
    render = to_json if args.json else table
    print(render(rows, run_a, run_b, threshold, notes, args.normalise),
          end="\n" if not args.json else "")  # fmt: skip
    return 0


def _stored_name(spec: str) -> str:
    """A variant as the store names it (canonical: a local source's path made absolute);
    the spec as given when it no longer resolves (a tree since deleted)."""
    from tlsbench.builds.variants import Catalog

    try:
        return Catalog().resolve(spec).name
    except UserError:
        return spec


def cmd_ab(args: argparse.Namespace) -> int:
    from tlsbench.builds.build import Builder
    from tlsbench.builds.variants import Catalog
    from tlsbench.core.store import Store
    from tlsbench.report import ab
    from tlsbench.run import experiments
    from tlsbench.run.runner import Runner, check_results_location, refuse_impossible, tls_variants

    # Everything about the request is checked before anything is built or stored.
    thresholds = ab.parse_thresholds(args.threshold or [])
    fail_on = ab.parse_kinds(args.fail_on)
    db = db_target(args.db)
    if args.run is not None:  # verdicts of a stored run: nothing runs
        store = Store(db, readonly=True)
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
        check_results_location(db)
        builder = Builder(quiet=args.quiet)
        refuse_impossible(
            points, {spec: builder.build(catalog.resolve(spec)) for spec in tls_variants(points)}
        )
        store = Store(db)
        runner = Runner(store, builder=builder, quiet=args.quiet)
        runner.mode = args.mode
        timeout = args.timeout if args.timeout is not None else experiment.timeout
        run_id = runner.start(experiment, points, repetitions, timeout, seed=args.seed)
        tally = runner.execute(run_id, timeout)
        print(f"run {run_id}: {tally.ok} ok, {tally.unsupported} unsupported, "
              f"{len(tally.failed)} failed ({store.path})", file=sys.stderr)  # fmt: skip
    outcome = ab.compare_variants(store, run_id, base, candidate, thresholds, fail_on)
    summary = ab.markdown(outcome, redacted(db))
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
    from tlsbench.core.store import Store
    from tlsbench.report import FORMATS, NAMES, export, load_runs

    fmt = {"md": "markdown"}.get(args.format, args.format)
    if fmt not in NAMES:
        raise UserError(f"unknown --format {args.format}; choose md, csv, json, html, bmf or gab")
    store = Store(db_target(args.db), readonly=True)
    runs = [store.run(r)["id"] for r in args.runs or ["latest"]]
    if not args.partial:
        for run_id in runs:
            store.check_whole(run_id, "report")
    model = load_runs(store, runs)
    out = Path(args.out) if args.out else None
    if args.summary and out is None:  # the answer alone, for a terminal
        from tlsbench.reportkit.summary import text as summary_text

        print(summary_text(model), end="")
        return 0
    text = export(model, fmt, out)
    if out is None:
        print(text)
        return 0
    if fmt not in FORMATS:  # figures for a dashboard: no plots
        print(f"wrote {out}", file=sys.stderr)
        return 0
    from tlsbench.reportkit.contents import write_plots  # matplotlib only when plots are written

    plots = write_plots(model, out.parent / "plots")
    print(f"wrote {out}" + (f" and {len(plots)} plot files in {out.parent / 'plots'}"
                            if plots else ""), file=sys.stderr)  # fmt: skip
    if args.summary:
        from tlsbench.reportkit.summary import text as summary_text

        print(summary_text(model) + f"\nfull report: {out}")
    return 0


def cmd_runs(args: argparse.Namespace) -> int:
    from tlsbench.core.store import Store

    store = Store(db_target(args.db), readonly=True)
    for run in store.runs():
        count = int(run["shard_count"] or 1)
        shards = ""
        if count > 1:
            missing = store.missing_shards(run["id"])
            shards = f", {count - len(missing)}/{count} shards done"
            if missing:
                shards += "; missing " + ", ".join(m.describe(count) for m in missing)
        key = f" [{run['run_key']}]" if run["run_key"] else ""
        print(
            f"{run['id']:>4}  {run['started_at']}  {store.status_of(run):<11} {run['experiment']}"
            f"{key}  ({run['repetitions']} repetitions{shards})"
        )
    return 0


def cmd_cache(args: argparse.Namespace) -> int:
    from tlsbench.builds.build import Builder
    from tlsbench.builds.variants import Catalog
    from tlsbench.run import cache

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
    from tlsbench.core.store import SCHEMA_VERSION, Store

    store = Store(db_target(args.db))  # opening for writing migrates
    print(f"{store.path}: schema version {SCHEMA_VERSION}")
    store.close()
    return 0


COMMANDS: dict[str, Callable[[argparse.Namespace], int]] = {
    "run": cmd_run,
    "runs": cmd_runs,
    "compare": cmd_compare,
    "ab": cmd_ab,
    "report": cmd_report,
    "drive": cmd_drive,
    "host-info": cmd_host_info,
    "certs": cmd_certs,
    "build": cmd_build,
    "code-size": cmd_code_size,
    "cortex-m": cmd_cortex_m,
    "fit": cmd_fit,
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
        default=None,
        metavar="FILE|URL",
        help=f"results store: an SQLite file or a PostgreSQL URL (postgresql://...) that "
        f"several machines share ({note}; default {DEFAULT_DB}, or ${DB_ENV} where set)",
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
        "TLS handshakes of Cortex-M firmware images under QEMU: instructions, heap and stack "
        "per side",
        "Builds each variant's firmware image (a variant with a Cortex-M feature, e.g. "
        "mbedtls-3.6.6:cortex-m4; cores cortex-m0, -m3, -m4, -m7, -m33, -m55), runs each suite "
        "--runs times on the core's QEMU board with -icount (refusing counts that differ "
        "between runs), and projects instructions to milliseconds as a range: the core's "
        "cycles per instruction at a reference part's clock (docs/embedded.md).",
    )
    cortex.add_argument("variants", nargs="+", metavar="VARIANT", help="Cortex-M variants")
    cortex.add_argument(
        "--suite",
        action="append",
        metavar="SUITE",
        help="a suite, IANA name with dashes or underscores (repeatable; default: TLS 1.2 RSA "
        "and ECDHE-RSA with AES-128/256 CBC/GCM, or one suite fitting --tls/--kx/--cert)",
    )
    cortex.add_argument("--tls", choices=["1.2", "1.3"], help="TLS version (default: the suite's)")
    cortex.add_argument(
        "--kx",
        choices=["ecdhe", "rsa", "psk", "psk_dhe"],
        help="key exchange: ecdhe (certificate), psk (psk_ke; TLS 1.2 PSK suites), psk_dhe "
        "(psk_dhe_ke; ECDHE-PSK suites); TLS 1.2 suites name their own",
    )
    cortex.add_argument("--group", help="the client's only group (x25519, secp256r1, secp384r1)")
    cortex.add_argument("--cert", choices=["rsa2048", "ecdsa-p256"], help="server certificate")
    cortex.add_argument("--chain", type=int, choices=[1, 2], help="certificates sent (default 1)")
    cortex.add_argument(
        "--record-size",
        type=int,
        metavar="BYTES",
        help="max_fragment_length the client asks for: 512, 1024, 2048, 4096 (16384: none)",
    )
    cortex.add_argument("--runs", type=int, default=2, help="runs per suite (default 2)")
    cortex.add_argument("--json", action="store_true", help="print one JSON object per suite")
    cortex.add_argument("--quiet", action="store_true", help="no build progress lines on stderr")

    fitting = verb(
        "fit",
        "Which library and configuration does a TLS job on a microcontroller's RAM and "
        "flash, and how long does its handshake take there",
        "For each library line, configuration (default, no-debug, small) and record-buffer "
        "size, the variant is built for the core and its firmware image measured under QEMU "
        "(cached beside the build): RAM = heap peak + stack high-water + .data + .bss, flash = "
        ".text + .data + the job's credentials, time = instructions x the core's CPI range at "
        "--mhz. Prints fits / does not fit with the margins, the smallest record buffer that "
        "fits, the Pareto front over RAM, flash and time, and writes a plot.",
    )
    fitting.add_argument("--ram", required=True, metavar="SIZE", help="RAM budget: 64K, 1M, ...")
    fitting.add_argument("--flash", required=True, metavar="SIZE", help="flash budget: 256K, ...")
    fitting.add_argument("--core", required=True, help="m0, m3, m4, m7, m33 or m55")
    fitting.add_argument("--tls", choices=["1.2", "1.3"], default="1.3", help="default 1.3")
    fitting.add_argument("--auth", default="server", help="server (the only one the images run)")
    fitting.add_argument(
        "--kx", choices=["ecdhe", "rsa", "psk", "psk_dhe"], default="ecdhe",
        help="key exchange: ecdhe (certificate; default), psk, psk_dhe; rsa (TLS 1.2)",
    )  # fmt: skip
    fitting.add_argument("--cert", choices=["rsa2048", "ecdsa-p256"],
                         help="the server's certificate (default ecdsa-p256)")  # fmt: skip
    fitting.add_argument("--group", help="(EC)DHE group (default x25519; TLS 1.2: secp256r1)")
    fitting.add_argument("--role", choices=["client", "server"], default="client",
                         help="the device's side (default client)")  # fmt: skip
    fitting.add_argument("--mhz", type=float, help="the core's clock (default: a reference part's)")
    fitting.add_argument(
        "--records", action="append", type=int, metavar="BYTES",
        help="record-buffer sizes to try (repeatable; default 512 1024 2048 4096 16384)",
    )  # fmt: skip
    fitting.add_argument(
        "--config", action="append", metavar="NAME",
        help="configurations to try (repeatable): default, no-debug (mbedTLS), small; default all",
    )  # fmt: skip
    fitting.add_argument("--line", action="append", metavar="LINE",
                         help="library lines to try (repeatable; default all three)")  # fmt: skip
    fitting.add_argument(
        "--variant", action="append", metavar="SPEC",
        help="a further candidate variant built for the core (repeatable), e.g. one with a "
        "configuration of your own",
    )  # fmt: skip
    fitting.add_argument(
        "--plot", metavar="FILE", help="the plot's PNG (default results/fit-CORE.png; none: none)"
    )
    fitting.add_argument("--json", action="store_true", help="print the candidates as JSON")
    fitting.add_argument("--quiet", action="store_true", help="no progress lines on stderr")

    drive = verb(
        "drive",
        "Run one scenario with one variant's driver (built if needed)",
        "Options after the scenario go to the driver unchanged; `tlsbench drive null info "
        "--help` lists them.",
    )
    drive.add_argument(
        "--measure",
        choices=MEASURES,
        default=None,
        help="time (default): the timing driver, no heap accounting in the allocation path; "
        "heap: the driver that accounts heap per side (its times are not comparable); "
        "locks: the timing driver counting each side's pthread lock calls and contentions "
        "(--locks; handshake and resume); armhf variants run under qemu-user and take heap "
        "only (their default). May also follow the scenario",
    )
    drive.add_argument(
        "--exec",
        action="store_true",
        help="become the driver (exec it) instead of running it as a child: a signal sent "
        "to this process reaches the driver (how a runner on another host stops a server)",
    )
    drive.add_argument("variant", help="a variant, e.g. openssl-3.5.x or wolfssl-5.7.2:intelasm")
    drive.add_argument(
        "scenario",
        help="one of the driver's scenarios (`tlsbench drive null info --json` declares them)",
    )
    drive.add_argument("driver_args", nargs=argparse.REMAINDER, help="options for the driver")

    host_info = verb(
        "host-info",
        "Print this host's tlsbench commit and the build keys of variants, as JSON",
        "Builds the variants (and makes the certificate kinds) that are missing first. A "
        "runner asks each host of a point with server_host / generator_hosts for it over "
        "ssh, and refuses a host whose commit or build keys differ from its own.",
    )
    host_info.add_argument("variants", nargs="*", metavar="VARIANT")
    host_info.add_argument("--cert", dest="certs", action="append", metavar="KIND",
                           help="a certificate kind the points use (repeatable)")  # fmt: skip

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
    run.add_argument(
        "--shard",
        metavar="K/N",
        help="run only shard K of N: a deterministic share of the points, so that N machines "
        "(a CI matrix) fill one run in a shared store; needs --run-key (with --resume: the "
        "shard to resume)",
    )
    run.add_argument(
        "--run-key",
        metavar="KEY",
        help="the name every shard of a run gives (e.g. the CI pipeline's id): the first "
        "makes the run, the others join it; run again with the same key, a shard resumes",
    )
    run.add_argument(
        "--serial",
        action="store_true",
        help="run every point alone; by default points that mostly wait (an emulated link of "
        "RTT >= 20 ms or with loss) run several at a time, 4 per CPU, each other point alone "
        "(docs/store-and-shards.md)",
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
        "--pool-machines",
        action="store_true",
        help="pool a point's repetitions measured on different machines (refused otherwise), "
        "with a warning on each such row",
    )
    cmp.add_argument(
        "--partial",
        action="store_true",
        help="compare a sharded run before all its shards are done (what is there)",
    )
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
        "Tables and plots of a run (or of several runs side by side)",
        "Markdown goes to the terminal unless --out is given; plots (PNG and SVG) go beside "
        "the --out file in plots/.",
    )
    report.add_argument(
        "runs",
        nargs="*",
        metavar="RUN",
        help="a run number or 'latest' (default); several runs (the same experiment on "
        "several machines, say) are reported side by side, each row as `variant @ machine`",
    )
    report.add_argument(
        "--format",
        default="md",
        help="md (default), csv, json, html (one self-contained page), or the figures for a "
        "dashboard: bmf (Bencher Metric Format), gab (github-action-benchmark, "
        "customSmallerIsBetter)",
    )
    report.add_argument("--out", metavar="FILE", help="write to FILE instead of the terminal")
    report.add_argument(
        "--summary",
        action="store_true",
        help="print the summary in plain text (one row per variant, the headline figure of "
        "each kind the run measured) instead of the whole report; with --out, the report "
        "is written there and the summary printed with where it is",
    )
    report.add_argument(
        "--partial",
        action="store_true",
        help="report a sharded run before all its shards are done (the missing ones are noted)",
    )
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
        cpuprofile.active()  # a misspelt $TLSBENCH_CPU_PROFILE is refused before any work
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
