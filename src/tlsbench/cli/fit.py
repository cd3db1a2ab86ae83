"""`tlsbench fit`: which library and configuration does a TLS job on a microcontroller's RAM and
flash, and how long does its handshake take there. Its arguments beside its handler.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from tlsbench.cli.common import Verb
from tlsbench.core.errors import UserError


def add_arguments(verb: Verb) -> None:
    fitting = verb(
        "fit",
        "Which library and configuration does a TLS job on a microcontroller's RAM and "
        "flash, and how long does its handshake take there",
        "For each library line, configuration (default, no-debug, small) and record-buffer "
        "size, the variant is built for the core and its firmware image measured under QEMU "
        "(cached beside the build): RAM = heap peak + stack high-water + .data + .bss, flash = "
        ".text + .data + the job's credentials, time = the cycle model's handshake on the part "
        "(--part, or the core's default part; --clock, --wait-states) with the model's measured "
        "error. Prints fits / does not fit with the margins, the smallest record buffer that "
        "fits, the Pareto front over RAM, flash and time, and writes a plot.",
    )
    fitting.add_argument("--ram", required=True, metavar="SIZE", help="RAM budget: 64K, 1M, ...")
    fitting.add_argument("--flash", required=True, metavar="SIZE", help="flash budget: 256K, ...")
    fitting.add_argument("--core", help="m0, m3, m4, m7, m33, m55 or rv32imc (default: the part's)")
    fitting.add_argument(
        "--part", metavar="NAME",
        help="the part (STM32F411, STM32F091, nRF52840, ...: docs/embedded.md lists them); "
        "its core and clock unless --core and --clock say otherwise",
    )  # fmt: skip
    fitting.add_argument(
        "--clock",
        type=float,
        metavar="MHZ",
        help="the part's clock (default: the part's own; --mhz is the same)",
    )
    fitting.add_argument(
        "--wait-states", type=int, metavar="N",
        help="flash wait states (default: what the part's flash needs at the clock); with "
        "--core and --clock and no --part, an unlisted part",
    )  # fmt: skip
    fitting.add_argument("--tls", choices=["1.2", "1.3"], default="1.3", help="default 1.3")
    fitting.add_argument("--auth", default="server", help="server (the only one the images run)")
    fitting.add_argument(
        "--kx", choices=["ecdhe", "rsa", "psk", "psk_dhe"], default="ecdhe",
        help="key exchange: ecdhe (certificate; default), psk, psk_dhe; rsa (TLS 1.2)",
    )  # fmt: skip
    fitting.add_argument("--cert", choices=["rsa2048", "ecdsa-p256", "ml-dsa-44"],
                         help="the server's certificate (default ecdsa-p256)")  # fmt: skip
    fitting.add_argument(
        "--sig", choices=["rsa2048", "ecdsa-p256", "ml-dsa-44"],
        help="the signature the client verifies (the server's certificate chain, as --cert): "
        "ml-dsa-44 is TLS 1.3, on the lines whose firmware has it (wolfssl-5.9.2)",
    )  # fmt: skip
    fitting.add_argument("--group", help="(EC)DHE group (default x25519; TLS 1.2: secp256r1)")
    fitting.add_argument("--role", choices=["client", "server"], default="client",
                         help="the device's side (default client)")  # fmt: skip
    fitting.add_argument("--mhz", type=float, help="the clock, as --clock")
    fitting.add_argument(
        "--records", action="append", type=int, metavar="BYTES",
        help="record-buffer sizes to try (repeatable; default 512 1024 2048 4096 16384)",
    )  # fmt: skip
    fitting.add_argument(
        "--config", action="append", metavar="NAME",
        help="configurations to try (repeatable): default, no-debug (mbedTLS), small; default all",
    )  # fmt: skip
    fitting.add_argument("--line", action="append", metavar="LINE",
                         help="library lines to try (repeatable; default all four)")  # fmt: skip
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


def run(args: argparse.Namespace) -> int:
    from tlsbench.builds import firmware
    from tlsbench.embedded import fit, parts, qemu

    clock = args.clock if args.clock is not None else args.mhz
    if clock is not None and clock <= 0:
        raise UserError(f"--clock {clock:g}: give the part's clock in MHz (a positive number)")
    if args.core is None and args.part is None:
        raise UserError("give --core (m0, m3, m4, m7, m33, m55, rv32imc) or --part NAME")
    core = (firmware.core_named(args.core) if args.core is not None
            else firmware.core_of(parts.part_named(args.part).core))  # fmt: skip
    setting = parts.setting(args.part, core=core.arch, clock=clock, wait_states=args.wait_states)
    budget = fit.Budget(
        core,
        fit.parse_bytes(args.ram, "--ram"),
        fit.parse_bytes(args.flash, "--flash"),
        setting.mhz if setting is not None else (clock or core.part.mhz),
        setting,
    )
    if args.auth != "server":
        raise UserError(
            f"--auth {args.auth}: the firmware images authenticate the server only (the client "
            "verifies its chain; or both hold the pre-shared key with --kx psk)"
        )
    if args.kx == "rsa" and args.tls == "1.3":
        raise UserError("--kx rsa: static RSA is TLS 1.2 only")
    if args.sig and args.cert and args.sig != args.cert:
        raise UserError(f"--sig {args.sig} and --cert {args.cert}: they name the same thing, "
                        "the server's certificate; give one")  # fmt: skip
    cert = args.sig or args.cert or ("rsa2048" if args.kx == "rsa" else "ecdsa-p256")
    post_quantum = cert in firmware.TLS13_CERTS
    if post_quantum and (args.tls != "1.3" or args.kx != "ecdhe"):
        raise UserError(f"--sig {cert}: an ML-DSA certificate signs in TLS 1.3 only, with an "
                        "(EC)DHE key exchange (--tls 1.3 --kx ecdhe, the defaults)")  # fmt: skip
    known = (*fit.LINES, *fit.ML_DSA_LINES)
    lines = tuple(args.line or (known if post_quantum else fit.LINES))
    for line in lines:
        if line not in known:
            raise UserError(f"--line {line}: choose among {', '.join(known)}")
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
    outcomes = fit.measure_all(candidates, quiet=args.quiet, setting=setting)
    if args.json:
        projection = (qemu.model_projection(core, setting) if setting is not None
                      else qemu.projection(core))  # fmt: skip
        json.dump({"budget": {"core": core.arch, "ram": budget.ram, "flash": budget.flash,
                              "mhz": budget.mhz, "projection": projection},
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
