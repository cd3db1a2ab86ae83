"""The firmware projection calibrated against real boards: wolfSSL's published per-operation
timings on STM32 parts (IDE/STM32Cube/STM32_Benchmarks.md in the pinned wolfSSL archive)
over tlsbench's exact instruction counts of the same operations (`cortex-m --ops`) give the
cycles per instruction each part achieves; per core and operation kind, the range over the
parts chosen to calibrate is the calibrated CPI range, and the parts held out say how far a
projection with it misses a board it was not fitted to.

Which sections of the table are comparable, and the role of each, is data (boards.toml);
the figures are read from the archive; the result is written to builds/calibration.json,
which builds/firmware.py reads for every projection.
"""

from __future__ import annotations

import hashlib
import json
import re
import statistics
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tlsbench.builds import firmware
from tlsbench.core.errors import UserError

SELECTION = Path(__file__).with_name("boards.toml")
ROLES = ("calibrate", "held-out", "compare")

# wolfCrypt benchmark lines: an operation timed per call, or a throughput.
_TIMED = re.compile(
    r"^(RSA|ECC|ECDHE|ECDSA|CURVE)\s+(?:\[\s*\w+\s*\]\s+)?(\d+)\s+(key gen|agree|sign|verify|"
    r"public|private)\s.*avg\s+([\d.]+)\s+ms"
)
_RATE = re.compile(
    r"^(AES-128-GCM-enc|CHA-POLY|SHA-256)\s+[\d.]+\s+\w+\s+took\s+[\d.]+\s+seconds,\s+"
    r"([\d.]+)\s+(KB|MB|KiB|MiB)/s"
)
_TIMED_OPS = {
    ("RSA", "2048", "public"): "rsa2048_public",
    ("RSA", "2048", "private"): "rsa2048_private",
    ("ECC", "256", "key gen"): "p256_keygen",
    ("ECDHE", "256", "agree"): "p256_ecdh",
    ("ECDSA", "256", "sign"): "p256_sign",
    ("ECDSA", "256", "verify"): "p256_verify",
    ("CURVE", "25519", "key gen"): "x25519_keygen",
    ("CURVE", "25519", "agree"): "x25519_shared",
}
_RATE_OPS = {"AES-128-GCM-enc": "aes128gcm_kib", "CHA-POLY": "chacha20poly1305_kib",
             "SHA-256": "sha256_kib"}  # fmt: skip
_CLOCK = re.compile(r"Cortex[- ]?M(\d+)\+?\s+at\s+(?:up to\s+)?([\d.]+)\s*MHz")
_VERSION = re.compile(r"wolfSSL version ([\d.]+)")


@dataclass(frozen=True)
class Block:
    """One code block of wolfCrypt benchmark output in the table."""

    part: str
    mhz: float
    section: str
    number: int  # 1-based, among the section's blocks of benchmark output
    version: str  # the wolfSSL release that printed it ("" where the block does not say)
    ms: dict[str, float]  # tlsbench's operation name -> board ms per operation (or per KiB)


def read_table(text: str) -> dict[tuple[str, int], Block]:
    """Every benchmark block of the table, by (section heading, block number): each part's
    clock from its heading's text, ms per operation from `avg N ms`, and ms per KiB from
    throughputs (wolfCrypt's benchmark counts KB and MB in units of 1024 bytes)."""
    blocks: dict[tuple[str, int], Block] = {}
    part, mhz, section, number = "", 0.0, "", 0
    inside, lines_in_block = False, list[str]()
    for line in text.splitlines():
        if line.startswith("## "):
            part, mhz, section, number = line[3:].strip(), 0.0, "", 0
        elif line.startswith("### "):
            section, number = line[4:].strip(), 0
        elif line.strip().startswith("```"):
            if inside:
                block = _block(part, mhz, section, number + 1, lines_in_block,
                               blocks.get((section, 1)))  # fmt: skip
                if block.ms:  # a benchmark's output, not a block of build options
                    number += 1
                    blocks[(section, number)] = block
            inside, lines_in_block = not inside, []
        elif inside:
            lines_in_block.append(line.strip())
        elif (found := _CLOCK.search(line)) and not mhz:
            mhz = float(found.group(2))
    return blocks


def _block(part: str, mhz: float, section: str, number: int, lines: list[str],
           first: Block | None) -> Block:  # fmt: skip
    ms: dict[str, float] = {}
    version = ""
    for line in lines:
        if found := _VERSION.search(line):
            version = found.group(1)
        elif timed := _TIMED.match(line):
            name = _TIMED_OPS.get((timed.group(1), timed.group(2), timed.group(3)))
            if name:
                ms[name] = float(timed.group(4))
        elif rate := _RATE.match(line):
            kib_per_s = float(rate.group(2)) * (1024 if rate.group(3).startswith("M") else 1)
            ms[_RATE_OPS[rate.group(1)]] = 1000.0 / kib_per_s
    if not version and first is not None:
        version = first.version  # a second block of a section continues the first's build
    return Block(part, mhz, section, number, version, ms)


@dataclass(frozen=True)
class Entry:
    part: str
    core: str
    section: str
    block: int
    operations: tuple[str, ...]
    role: str
    note: str


def load_selection(path: Path = SELECTION) -> tuple[dict[str, Any], list[Entry]]:
    data = tomllib.loads(path.read_text())
    entries = []
    for raw in data["board"]:
        entry = Entry(raw["part"], raw["core"], raw["section"], int(raw.get("block", 1)),
                      tuple(raw["operations"]), raw["role"], raw.get("note", ""))  # fmt: skip
        if entry.role not in ROLES or entry.core not in firmware.CORES:
            raise UserError(f"{path}: {entry.part}: role {entry.role} / core {entry.core}")
        unknown = [op for op in entry.operations if op not in firmware.OPERATIONS]
        if unknown:
            raise UserError(f"{path}: {entry.part}: unknown operations {unknown}")
        entries.append(entry)
    return data, entries


def points(entries: list[Entry], table: dict[tuple[str, int], Block],
           counts: dict[str, dict[str, int]]) -> list[dict[str, Any]]:  # fmt: skip
    """Per entry and operation: the board's ms and clock, its cycles (ms x MHz x 1000),
    tlsbench's instructions for the core (`counts[core][operation]`) and their ratio, the
    cycles per instruction. A section, block or operation the table lacks is an error."""
    rows = []
    for entry in entries:
        block = table.get((entry.section, entry.block))
        if block is None or not block.mhz:
            raise UserError(f"the board table has no block {entry.block} with a clock under "
                            f"'### {entry.section}'")  # fmt: skip
        for name in entry.operations:
            if name not in block.ms:
                raise UserError(f"'### {entry.section}' block {entry.block} has no {name}")
            instructions = counts[entry.core][name]
            cycles = block.ms[name] * block.mhz * 1000.0
            rows.append({
                "part": entry.part, "core": entry.core, "role": entry.role,
                "section": entry.section, "block": entry.block, "version": block.version,
                "mhz": block.mhz, "operation": name, "kind": firmware.OPERATIONS[name].kind,
                "board_ms": block.ms[name], "cycles": round(cycles),
                "instructions": instructions, "cpi": cycles / instructions, "note": entry.note,
            })  # fmt: skip
    return rows


def calibrate(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """Per core and kind: the calibrated range (lowest and highest CPI of the calibration
    points), the parts and operations it came from; the held-out points projected with it;
    and how the manual range compares with every board point."""
    cores: dict[str, Any] = {}
    for core in dict.fromkeys(r["core"] for r in rows):
        mine = [r for r in rows if r["core"] == core]
        kinds: dict[str, Any] = {}
        for kind in firmware.OPERATION_KINDS:
            fit = [r for r in mine if r["kind"] == kind and r["role"] == "calibrate"]
            if not fit:
                continue
            kinds[kind] = {
                "cpi": [round(min(r["cpi"] for r in fit), 3), round(max(r["cpi"] for r in fit), 3)],
                "parts": list(dict.fromkeys(f"{r['part']} ({r['mhz']:g} MHz, wolfSSL "
                                            f"{r['version']})" for r in fit)),
                "operations": list(dict.fromkeys(r["operation"] for r in fit)),
            }  # fmt: skip
        for r in mine:
            if r["kind"] in kinds:
                low, high = kinds[r["kind"]]["cpi"]
                projected = [r["instructions"] * c / (r["mhz"] * 1000.0) for c in (low, high)]
                r["projected_ms"] = [round(v, 3) for v in projected]
                r["miss"] = round(_miss(projected, r["board_ms"]), 4)
                r["mid_error"] = round(sum(projected) / 2 / r["board_ms"] - 1, 4)
        held = [r for r in mine if r["role"] == "held-out" and "miss" in r]
        manual = firmware.CORES[core].cpi
        board = [r["cpi"] for r in mine if r["role"] != "compare"]
        cores[core] = {
            "manual_cpi": list(manual),
            "calibrated": kinds,
            "held_out": {
                "parts": list(dict.fromkeys(r["part"] for r in held)),
                "points": len(held),
                "inside": sum(1 for r in held if r["miss"] == 0),
                "worst_miss": max((abs(r["miss"]) for r in held), default=None),
                "median_mid_error": (round(statistics.median(abs(r["mid_error"]) for r in held),
                                           4) if held else None),
            },
            "board_cpi": [round(min(board), 3), round(max(board), 3)] if board else None,
            "board_cpi_median": round(statistics.median(board), 3) if board else None,
            # How far the boards lie above the manual's high end (1.0: within it).
            "manual_short_by": [round(min(board) / manual[1], 2),
                                round(max(board) / manual[1], 2)] if board else None,
        }  # fmt: skip
    return cores


def _miss(projected: list[float], board: float) -> float:
    """0 when the board's figure is inside the projected range; else the distance to the
    nearer end relative to the board's figure (positive: the projection is too slow)."""
    low, high = projected
    if low <= board <= high:
        return 0.0
    return (low - board) / board if board < low else (high - board) / board


def table_digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def result(selection: dict[str, Any], table_path: Path, rows: list[dict[str, Any]],
           counts_from: dict[str, str]) -> dict[str, Any]:  # fmt: skip
    """What builds/calibration.json holds: the sources, the per-core ranges, every point."""
    return {
        "generated_by": "tlsbench calibrate --write",
        "source": {"library": selection["library"], "file": selection["source"],
                   "sha256": table_digest(table_path)},
        "selection": "src/tlsbench/embedded/boards.toml",
        "instructions_from": counts_from,
        "cores": calibrate(rows),
        "points": rows,
    }  # fmt: skip


def write(data: dict[str, Any], path: Path = firmware.CALIBRATION_FILE) -> None:
    path.write_text(json.dumps(data, indent=1) + "\n")


MARKDOWN_HEADER = (
    "| core | part (clock, wolfSSL) | operation | role | board ms | board cycles "
    "| tlsbench instructions | CPI | projected ms (calibrated) | miss |\n"
    "| --- | --- | --- | --- | ---: | ---: | ---: | ---: | ---: | ---: |"
)


def markdown_table(data: dict[str, Any]) -> str:
    """Every point of a calibration as the Markdown table docs/embedded.md shows (a unit test
    holds the page to the saved calibration.json)."""
    rows = [MARKDOWN_HEADER]
    for r in data["points"]:
        projected = r.get("projected_ms")
        shown = f"{projected[0]:.3f} - {projected[1]:.3f}" if projected else "-"
        miss = (f"{r['miss'] * 100:+.0f} %" if r.get("miss") else "inside") if projected else ""
        rows.append(
            f"| {r['core'].removeprefix('cortex-')} | {r['part']} ({r['mhz']:g} MHz, "
            f"{r['version']}) | {r['operation']} | {r['role']} | {r['board_ms']:.3f} "
            f"| {r['cycles']:,} | {r['instructions']:,} | {r['cpi']:.2f} | {shown} | {miss} |"
        )
    return "\n".join(rows)
