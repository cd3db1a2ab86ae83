"""`tlsbench calibrate`: the firmware projection's cycles per instruction, calibrated against
wolfSSL's published STM32 benchmarks. Its arguments beside its handler.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from tlsbench.cli.common import Verb


def add_arguments(verb: Verb) -> None:
    cal = verb(
        "calibrate",
        "Cycles per instruction of Cortex-M parts, from wolfSSL's STM32 benchmarks over "
        "tlsbench's instruction counts",
        "Reads the per-operation timings of STM32 parts in the pinned wolfSSL archive "
        "(IDE/STM32Cube/STM32_Benchmarks.md; which sections compare with tlsbench's build: "
        "src/tlsbench/embedded/boards.toml), counts the same operations in wolfSSL's firmware "
        "image per core (`cortex-m --ops`), and prints per part and operation the board's "
        "cycles over tlsbench's instructions, the calibrated CPI range per core and operation "
        "kind, and the error on the parts held out (docs/embedded.md).",
    )
    cal.add_argument(
        "--write",
        action="store_true",
        help="save the calibration (src/tlsbench/builds/calibration.json): every projection "
        "then uses it",
    )
    cal.add_argument("--json", action="store_true", help="print the calibration as JSON")
    cal.add_argument(
        "--markdown",
        action="store_true",
        help="print every point as the Markdown table docs/embedded.md shows",
    )
    cal.add_argument("--quiet", action="store_true", help="no build progress lines on stderr")


def run(args: argparse.Namespace) -> int:
    from tlsbench.builds import firmware
    from tlsbench.builds.build import Builder
    from tlsbench.builds.sources import Sources
    from tlsbench.builds.variants import Catalog
    from tlsbench.embedded import calibrate, qemu

    selection, entries = calibrate.load_selection()
    table_path = Sources().source_dir(selection["library"]) / selection["source"]
    table = calibrate.read_table(table_path.read_text())
    catalog = Catalog()
    builder = Builder(quiet=args.quiet)
    counts: dict[str, dict[str, int]] = {}
    counts_from: dict[str, str] = {}
    for core in dict.fromkeys(e.core for e in entries):
        variant = catalog.resolve(f"{selection['library']}:{core}")
        image = qemu.image_of(builder.build(variant))
        measured = qemu.measure_ops(image, firmware.core_of(core), runs=2)
        counts[core] = {op["name"]: op["instructions"] for op in measured["ops"]
                        if "instructions" in op}  # fmt: skip
        counts_from[core] = variant.name
    rows = calibrate.points(entries, table, counts)
    data = calibrate.result(selection, table_path, rows, counts_from)
    if args.write:
        calibrate.write(data)
    if args.json:
        json.dump(data, sys.stdout, indent=1)
        print()
    elif args.markdown:
        print(calibrate.markdown_table(data))
    else:
        print(_text(data))
        if args.write:
            print(f"written: {firmware.CALIBRATION_FILE.name} (src/tlsbench/builds)")
    return 0


def _text(data: dict[str, Any]) -> str:
    source = data["source"]
    lines = [
        f"Boards: {source['file']} in the pinned {source['library']} (sha256 "
        f"{source['sha256'][:16]}...); tlsbench's instructions: "
        + ", ".join(data["instructions_from"].values()),
        "",
        f"{'core':<10} {'part':<12} {'wolfSSL':<7} {'MHz':>4} {'operation':<21} "
        f"{'role':<9} {'board ms':>9} {'cycles':>11} {'instructions':>12} {'CPI':>5} "
        f"{'projected ms':>17} {'miss':>6}",
    ]
    for r in data["points"]:
        projected = r.get("projected_ms")
        shown = f"{projected[0]:.3f}-{projected[1]:.3f}" if projected else "-"
        miss = f"{r['miss'] * 100:+.0f}%" if r.get("miss") else "in"
        lines.append(
            f"{r['core']:<10} {r['part']:<12} {r['version']:<7} {r['mhz']:>4g} "
            f"{r['operation']:<21} {r['role']:<9} {r['board_ms']:>9.3f} {r['cycles']:>11,} "
            f"{r['instructions']:>12,} {r['cpi']:>5.2f} {shown:>17} "
            f"{miss if projected else '':>6}"
        )
    lines += ["", "Calibrated CPI (range over the calibration points), per core and kind:"]
    for core, c in data["cores"].items():
        manual = c["manual_cpi"]
        for kind, k in c["calibrated"].items():
            lines.append(f"  {core:<10} {kind:<9} {k['cpi'][0]:.2f}..{k['cpi'][1]:.2f} from "
                         f"{', '.join(k['parts'])}; {', '.join(k['operations'])}")  # fmt: skip
        short = c["manual_short_by"]
        lines.append(f"  {core:<10} manual    {manual[0]:g}..{manual[1]:g}: the boards' CPI "
                     f"{c['board_cpi'][0]:.2f}..{c['board_cpi'][1]:.2f} (median "
                     f"{c['board_cpi_median']:.2f}), "
                     f"{short[0]:.2f}x..{short[1]:.2f}x the manual's high end")  # fmt: skip
        held = c["held_out"]
        if held["points"]:
            lines.append(
                f"  {core:<10} held out  {', '.join(held['parts'])}: {held['inside']} of "
                f"{held['points']} inside the range, worst miss {held['worst_miss'] * 100:.0f}%, "
                f"median error of the range's middle {held['median_mid_error'] * 100:.0f}%"
            )
        else:
            lines.append(f"  {core:<10} held out  none (one part only)")
    return "\n".join(lines)
