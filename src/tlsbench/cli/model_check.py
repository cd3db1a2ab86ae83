"""`tlsbench model-check`: the cycle model against board figures of the same code, and why
wolfSSL's STM32 table checks nothing. Its arguments beside its handler.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from tlsbench.cli.common import Verb


def add_arguments(verb: Verb) -> None:
    check = verb(
        "model-check",
        "The cycle model against board figures of the same code: p256-m's four operations on "
        "an STM32F091 (Cortex-M0) and an STM32F411 (Cortex-M4)",
        "Reads the board figures from the README of the pinned mbedTLS archive's "
        "3rdparty/p256-m, builds p256-m's benchmark from the same archive for each board's "
        "core, runs it under the cycle model of the board's part at its clock, and prints per "
        "operation the board's ms, the model's and its error; then every section of wolfSSL's "
        "STM32 table with why it cannot check the model (docs/embedded.md).",
    )
    check.add_argument(
        "--write",
        action="store_true",
        help="save the points and the error per core (src/tlsbench/embedded/model_check.json): "
        "every projected figure then carries it",
    )
    check.add_argument("--json", action="store_true", help="print the points as JSON")


def run(args: argparse.Namespace) -> int:
    from tlsbench.embedded import cycles, samecode

    rows = samecode.check()
    wolfssl = samecode.wolfssl_rows()
    if args.write:
        samecode.write(rows)
    if args.json:
        json.dump({"points": rows, "summary": samecode.summary(rows), "wolfssl": wolfssl},
                  sys.stdout, indent=1)  # fmt: skip
        print()
        return 0
    print(_text(rows, wolfssl))
    if args.write:
        print(f"written: {cycles.MODEL_CHECK_FILE.name} (src/tlsbench/embedded)")
    return 0


def _text(rows: list[dict[str, Any]], wolfssl: list[dict[str, Any]]) -> str:
    from tlsbench.embedded import samecode

    first = rows[0]
    lines = [f"Same-code points: {first['library']}, board figures from {first['source']} "
             "(Mbed OS 6 boards); the model at each board's part and clock"]  # fmt: skip
    for code, what in samecode.CODES.items():
        lines.append(f"  code {code}: {what}")
    lines += ["", f"{'part':<10} {'core':<10} {'MHz':>4} {'code':<6} {'operation':<19} "
              f"{'board ms':>9} {'model ms':>9} {'error':>7} {'instructions':>12} "
              f"{'cycles':>11} {'CPI':>5}"]  # fmt: skip
    for r in rows:
        lines.append(
            f"{r['part']:<10} {r['core']:<10} {r['mhz']:>4g} {r['code']:<6} {r['label']:<19} "
            f"{r['board_ms']:>9.1f} {r['model_ms']:>9.1f} {100 * r['error']:>+6.1f}% "
            f"{r['instructions']:>12,} {round(r['estimate']):>11,} {r['cpi']:>5.3f}"
        )
    lines += ["", "The model's error on the boards' code, per part:"]
    for part, s in samecode.summary(rows).items():
        lines.append(f"  {part}: worst {100 * s['worst']:+.1f} %, mean of magnitudes "
                     f"{100 * s['mean_abs']:.1f} % ({s['points']:g} points)")  # fmt: skip
    lines += ["  Cortex-M3, M7, M33, M0+: no same-code board figure found", "",
              "wolfSSL's STM32 table (IDE/STM32Cube/STM32_Benchmarks.md): what each section "
              "can check"]  # fmt: skip
    for w in wolfssl:
        verdict = "checks the model" if w["checks"] else "checks nothing"
        lines.append(f"  {w['part']} ({w['mhz']:g} MHz) '{w['section']}' block {w['block']}: "
                     f"{verdict}: {w['why_not']}")  # fmt: skip
    return "\n".join(lines)
