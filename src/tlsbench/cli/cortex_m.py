"""`tlsbench cortex-m`: tLS handshakes of Cortex-M firmware images under QEMU: instructions, heap
and stack per side. Its arguments beside its handler.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from tlsbench.cli.common import Verb
from tlsbench.core.errors import UserError


def add_arguments(verb: Verb) -> None:
    cortex = verb(
        "cortex-m",
        "TLS handshakes of Cortex-M firmware images under QEMU: instructions, heap and stack "
        "per side",
        "Builds each variant's firmware image (a variant with a core's feature, e.g. "
        "mbedtls-3.6.6:cortex-m4; cores cortex-m0, -m3, -m4, -m7, -m33, -m55, and the RISC-V "
        "rv32imc), runs each suite "
        "--runs times on the core's QEMU board with -icount (refusing counts that differ "
        "between runs), and projects the handshake to milliseconds on a part: the cycle model of "
        "its core and memory (the core's default part, or --part), with the model's measured "
        "error on same-code board figures; a CPI range where no model exists (Cortex-M55, "
        "RV32IMC) (docs/embedded.md).",
    )
    cortex.add_argument("variants", nargs="+", metavar="VARIANT",
                        help="firmware variants (Cortex-M or rv32imc)")  # fmt: skip
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
    cortex.add_argument(
        "--cert",
        choices=["rsa2048", "ecdsa-p256", "ml-dsa-44"],
        help="server certificate (ml-dsa-44: TLS 1.3 only)",
    )
    cortex.add_argument("--chain", type=int, choices=[1, 2], help="certificates sent (default 1)")
    cortex.add_argument(
        "--record-size",
        type=int,
        metavar="BYTES",
        help="max_fragment_length the client asks for: 512, 1024, 2048, 4096 (16384: none)",
    )
    cortex.add_argument(
        "--ops",
        action="store_true",
        help="in place of handshakes, the library's own crypto API per operation (P-256 key "
        "generation, ECDH, ECDSA sign and verify, X25519, RSA-2048 public and private, "
        "AES-128-GCM, ChaCha20-Poly1305 and SHA-256 per KiB, HKDF-SHA256): instructions, heap "
        "and stack per operation",
    )
    cortex.add_argument(
        "--library-bench",
        action="store_true",
        help="in place of handshakes, the library's own benchmark program (wolfCrypt's "
        "wolfcrypt/benchmark, built with the variant's configuration) on the same board and "
        "clock, its figures converted to instructions per operation beside --ops' counts of "
        "the same operations and their ratio (wolfSSL Cortex-M variants)",
    )
    cortex.add_argument(
        "--split",
        action="store_true",
        help="where one handshake's instructions go (one job: give one --suite or a --tls/--kx/"
        "--cert that fits one): per side, the instructions of the library's functions grouped "
        "into public-key arithmetic, hashing, symmetric crypto, ASN.1 and certificates, the TLS "
        "state machine, memory management, the C library and the rest, counted by a QEMU "
        "plugin; with the timer's rounding (a few instructions per call) they sum to the "
        "handshake's count",
    )
    cortex.add_argument(
        "--part", metavar="NAME",
        help="the part to project milliseconds to (STM32F411, STM32F091, nRF52840, ...: "
        "`tlsbench model-check` and docs/embedded.md list them); default: the core's",
    )  # fmt: skip
    cortex.add_argument("--clock", type=float, metavar="MHZ",
                        help="the part's clock (default: the part's own)")  # fmt: skip
    cortex.add_argument(
        "--wait-states", type=int, metavar="N",
        help="flash wait states (default: what the part's flash needs at the clock); with "
        "--clock and no --part, an unlisted part of the core",
    )  # fmt: skip
    cortex.add_argument("--runs", type=int, default=2, help="runs per suite (default 2)")
    cortex.add_argument("--json", action="store_true", help="print one JSON object per suite")
    cortex.add_argument("--quiet", action="store_true", help="no build progress lines on stderr")


def run(args: argparse.Namespace) -> int:
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
    settings = {v.arch: _setting(args, v.arch) for v in variants}
    modes = [m for m in ("ops", "library_bench", "split") if getattr(args, m)]
    if len(modes) > 1:
        raise UserError(
            f"{' and '.join('--' + m.replace('_', '-') for m in modes)}: choose one "
            "(--split profiles a handshake; --ops and --library-bench run none)"
        )
    if args.ops or args.library_bench:
        job_flags = ("suite", "tls", "kx", "group", "cert", "chain", "record_size")
        given = [f"--{f.replace('_', '-')}" for f in job_flags if getattr(args, f) is not None]
        if given:
            raise UserError(f"--{modes[0].replace('_', '-')} runs no handshake: "
                            f"{', '.join(given)} do not apply to it")  # fmt: skip
        if args.library_bench:
            return _run_library_bench(args, variants)
        return _run_ops(args, variants, settings)
    suites = args.suite or firmware.default_suites(args.tls, args.kx, args.cert)
    jobs = [
        firmware.make_job(suite, tls=args.tls, kx=args.kx, group=args.group, cert=args.cert,
                         chain=args.chain, record=args.record_size)
        for suite in suites
    ]  # fmt: skip
    for variant in variants:  # what a config file leaves out, before anything is built
        for job in jobs:
            needs.refuse_unfit(variant, job)
    if args.split:
        if len(jobs) != 1:
            raise UserError(f"--split profiles one handshake; {len(jobs)} suites were asked "
                            "(give one --suite)")  # fmt: skip
        return _run_split(args, variants, jobs[0])
    builder = Builder(quiet=args.quiet)
    rows = []
    for variant in variants:
        core = firmware.core_of(variant.arch)
        image = qemu.image_of(builder.build(variant))
        for job in jobs:
            try:
                result = qemu.measure(image, core, job, args.runs, settings[variant.arch])
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
            core = firmware.core_of(arch)
            print(f"{arch} ms: {qemu.describe_projection(core, setting=settings[arch])}")
        print(f"every count identical over {args.runs} runs")
    return 3 if not rows else 0


def _setting(args: argparse.Namespace, arch: str) -> Any:
    """The part a variant's core is projected to (None: no cycle model for the core)."""
    from tlsbench.embedded import parts

    return parts.setting(args.part, core=arch, clock=args.clock, wait_states=args.wait_states)


def _run_ops(args: argparse.Namespace, variants: list[Any], settings: dict[str, Any]) -> int:
    from tlsbench.builds import firmware
    from tlsbench.builds.build import Builder
    from tlsbench.embedded import qemu

    builder = Builder(quiet=args.quiet)
    rows = []
    for variant in variants:
        core = firmware.core_of(variant.arch)
        image = qemu.image_of(builder.build(variant))
        setting = settings[variant.arch]
        result = {"variant": variant.name,
                  **qemu.measure_ops(image, core, args.runs, setting=setting)}  # fmt: skip
        rows.append(result)
        if not args.json:
            _print_ops(result, core, setting)
    return _end_of_counts(rows, args)


def _end_of_counts(rows: list[dict[str, Any]], args: argparse.Namespace) -> int:
    """--ops' and --library-bench's ending: the rows as JSON, or the line under the tables."""
    if args.json:
        json.dump(rows, sys.stdout, indent=2)
        print()
    else:
        print(f"every count identical over {args.runs} runs")
    return 0


def _run_library_bench(args: argparse.Namespace, variants: list[Any]) -> int:
    from tlsbench.builds import firmware
    from tlsbench.builds.build import Builder
    from tlsbench.embedded import libbench, qemu

    programs = [libbench.program_of(v) for v in variants]  # every refusal before a build
    builder = Builder(quiet=args.quiet)
    rows = []
    for variant, program in zip(variants, programs, strict=True):
        core = firmware.core_of(variant.arch)
        build = builder.build(variant)
        ops = qemu.measure_ops(qemu.image_of(build), core, args.runs)
        bench_image = libbench.image(build, core)
        runs = [libbench.run(bench_image, core, program) for _ in range(args.runs)]
        if any(r != runs[0] for r in runs[1:]):
            raise UserError("two runs of the library's benchmark differ; the count is not "
                            "deterministic", exit_code=1)  # fmt: skip
        result = {"variant": variant.name, "library": ops["library"],
                  "library_version": ops["library_version"], "core": core.arch,
                  "machine": core.machine, "program": program.source,
                  "switches": list(program.switches), "defines": list(program.defines),
                  "instructions_per_second": runs[0]["instructions_per_second"],
                  "ops": libbench.compare(runs[0], ops, program), "runs": args.runs}  # fmt: skip
        rows.append(result)
        if not args.json:
            _print_library_bench(result)
    return _end_of_counts(rows, args)


def _print_library_bench(r: dict[str, Any]) -> None:
    print(f"{r['variant']} ({r['library']} {r['library_version']}, {r['core']} on "
          f"{r['machine']}): {r['program']} ({' '.join(r['switches'])}; one benchmark second = "
          f"{r['instructions_per_second']:,} instructions) against --ops")  # fmt: skip
    print(f"  {'operation':<44} {'benchmark':>12} {'--ops':>12} {'ratio':>7}  benchmark ran")
    for op in r["ops"]:
        what = op["label"] + (" per KiB" if op["per"] == "KiB" else "")
        print(f"  {what:<44} {op['library_bench_instructions']:>12,} {op['ops_instructions']:>12,} "
              f"{op['ratio']:>7.4f}  {op['library_bench_amount']}")  # fmt: skip
    for op in r["ops"]:
        if op["difference"]:
            print(f"  {op['label']}: the benchmark differs: {op['difference']}")


def _run_split(args: argparse.Namespace, variants: list[Any], job: Any) -> int:
    from tlsbench.builds import firmware
    from tlsbench.builds.build import Builder
    from tlsbench.embedded import profile, qemu

    builder = Builder(quiet=args.quiet)
    rows = []
    for variant in variants:
        core = firmware.core_of(variant.arch)
        build = builder.build(variant)
        archives = sorted((build.folder / "prefix" / "lib").glob("*.a"))
        try:
            result = profile.split(qemu.image_of(build), core, job, archives, args.runs)
        except qemu.Unsupported as exc:
            print(f"{variant.name}: unsupported: {exc}", file=sys.stderr)
            continue
        rows.append({"variant": variant.name, "job": job.describe(), **result})
        if not args.json:
            _print_split(rows[-1])
    if args.json:
        json.dump(rows, sys.stdout, indent=2)
        print()
    return 3 if not rows else 0


def _print_split(r: dict[str, Any]) -> None:
    print(f"{r['variant']} ({r['library']} {r['library_version']}, {r['core']} on "
          f"{r['machine']}): {r['job']}, group {r['wire']['group']}")  # fmt: skip
    for side in ("client", "server"):
        s = r[side]
        print(f"  {side}: {s['handshake_instructions']:,} instructions in "
              f"{s['handshake_calls']} measured calls")  # fmt: skip
        for g in s["groups"]:
            print(f"    {g['label']:<44} {g['instructions']:>12,} {100 * g['share']:>6.1f} %")
        print(f"    {'timer rounding (reported less profiled)':<44} {s['timer_rounding']:>12,} "
              f"(within +-{s['timer_rounding_bound']:g})")  # fmt: skip
        print(f"    {'total (as cortex-m reports it)':<44} {s['handshake_instructions']:>12,}")
        top = ", ".join(f"{f['function']} {f['instructions']:,}" for f in s["top_functions"][:5])
        print(f"    top functions: {top}")


def _fmt_ms(pair: list[float], digits: int = 1) -> str:
    """A projection: one figure (the cycle model's), or low-high (a CPI range, or the model
    with operand-dependent instructions)."""
    low, high = (f"{v:.{digits}f}" for v in pair)
    return low if low == high else f"{low}-{high}"


def _print_ops(r: dict[str, Any], core: Any, setting: Any) -> None:
    from tlsbench.embedded import qemu

    print(f"{r['variant']} ({r['library']} {r['library_version']}, {core.arch} on "
          f"{r['machine']}): instructions per operation, exact to "
          f"{r['resolution_instructions']:g} (batches of {r['batch']}, less the loop's own "
          f"{r['loop_instructions']} per batch)")  # fmt: skip
    print(f"  {'operation':<44} {'instructions':>13} {'cycles':>13} {'ms':>17} {'heap':>7} "
          f"{'allocs':>7} {'stack':>6}")  # fmt: skip
    for op in r["ops"]:
        what = op["label"] + (" per KiB" if op["per"] == "KiB" else "")
        if "unsupported" in op:
            print(f"  {what:<44} unsupported: {op['unsupported']}")
            continue
        cycles = f"{round(op['model']['estimate']):,}" if "model" in op else "-"
        print(
            f"  {what:<44} {op['instructions']:>13,} {cycles:>13} "
            f"{_fmt_ms(op['projected_ms'], 3):>17} "
            f"{op['heap_peak']:>7} {op['allocations']:>7g} {op['stack_high_water']:>6}"
        )
    if setting is not None:
        print(f"  ms: {qemu.describe_projection(core, setting=setting)}")
        return
    for kind in ("public", "symmetric"):
        print(f"  ms ({kind}): {qemu.describe_projection(core, kind)}")


def _print_cortex_m_row(r: dict[str, Any], header: bool) -> None:
    if header:
        print(
            f"{'variant':<32} {'job':<56} {'group':<9} {'client insn':>12} {'ms':>13} "
            f"{'server insn':>12} {'ms':>13} {'heap c/s':>13} {'stack c/s':>11}"
        )
    c, s = r["client"], r["server"]
    print(
        f"{r['variant']:<32} {r['job']:<56} {r['wire']['group']:<9} "
        f"{c['handshake_instructions']:>12} {_fmt_ms(c['projected_ms']):>13} "
        f"{s['handshake_instructions']:>12} {_fmt_ms(s['projected_ms']):>13} "
        f"{c['heap_peak']:>6}/{s['heap_peak']:<6} "
        f"{c['stack_high_water']:>5}/{s['stack_high_water']:<5}",
        flush=True,
    )
