"""Same-code checks of the cycle model: board figures of code tlsbench can rebuild, set beside
the model's figures for that code on the same part at the same clock. They check the model and
set none of its values (every value of parts.toml and of the plugin comes from a document).

The one source of such figures found: p256-m, which mbedTLS 3.6 ships (3rdparty/p256-m in the
pinned archive), whose README gives its four operations in milliseconds on an STM32F091
(Cortex-M0, 48 MHz) and an STM32F411 (Cortex-M4, 100 MHz) running Mbed OS 6, from one C source
and its on-target benchmark program. The figures are read from the pinned archive's README, not
copied; samecode_p256m.c is the benchmark program's port (the same four calls, in its order).

What differs from the boards' build, and how it is handled:
  - the code: mbedTLS 3.6's copy of p256-m.c unrolls u288_muladd where u32_muladd64 is one
    instruction (the M4's UMAAL; upstream p256-m commit "Try basic unrolling in u288_muladd()",
    2022), after the README's figures were measured (2020, with the loop): the compared build
    takes the loop back (`board` code: the one #define that selects the unrolling removed, checked
    to apply once); the pinned file as is (`pinned`) is measured beside it. On the M0 the two
    are the same code;
  - the compiler: Debian's arm-none-eabi-gcc 12 where the boards' was Arm's GCC 9; the flags of
    Mbed OS's release profile (MBED_RELEASE_FLAGS);
  - the library around it: p256-m's two calls into mbedTLS are given back their original forms
    (rand() for the random bytes, a volatile byte loop for the zeroisation).
"""

from __future__ import annotations

import hashlib
import json
import re
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tlsbench.builds import arches
from tlsbench.builds.firmware import FIRMWARE, TIMEOUT_SECONDS, core_of, linker_script
from tlsbench.builds.sources import Sources
from tlsbench.core import paths
from tlsbench.core.errors import UserError
from tlsbench.embedded import calibrate, cycles, parts, qemu

LINE = "mbedtls-3.6.6"
P256M = "3rdparty/p256-m/p256-m"
PORT = Path(__file__).with_name("samecode_p256m.c")
WINDOW = ("fw_window", None)
# Mbed OS 6's release profile for GCC_ARM (tools/profiles/release.json): what the boards' build
# compiled with, besides the core's own flags.
MBED_RELEASE_FLAGS = ("-Os", "-ffunction-sections", "-fdata-sections", "-funsigned-char",
                      "-fomit-frame-pointer", "-fno-exceptions", "-DNDEBUG")  # fmt: skip
# The 2022 unrolling the boards' code had not: its one selector in mbedTLS 3.6's p256-m.c.
UNROLLED = "#define MULADD64_ASM\n#define MULADD64_SMALL\n\n#else /* __ARM_FEATURE_DSP */"
ROLLED = "#define MULADD64_ASM\n\n#else /* __ARM_FEATURE_DSP */"
CODES = {
    "board": "p256-m.c as the boards ran it: mbedTLS 3.6.6's file with u288_muladd's loop kept",
    "pinned": "mbedTLS 3.6.6's p256-m.c as it is (u288_muladd unrolled on cores with UMAAL)",
}
OPERATIONS = ("keygen", "ecdh", "sign", "verify")
README_ROWS = {"p256_gen_keypair": "keygen", "p256_ecdh_shared_secret": "ecdh",
               "p256_ecdsa_sign": "sign", "p256_ecdsa_verify": "verify"}  # fmt: skip
LABELS = {"keygen": "key generation", "ecdh": "ECDH shared secret", "sign": "ECDSA sign",
          "verify": "ECDSA verify"}  # fmt: skip


@dataclass(frozen=True)
class Board:
    core: str  # cortex-m0
    part: str  # parts.toml's name
    mhz: float
    system: str  # what the board ran: Mbed OS 6
    ms: dict[str, float]  # operation -> the README's milliseconds


_BOARD_LINE = re.compile(r"^- Cortex-(M\d+\+?) at\s+(\d+) MHz: (\S+) board running (.+)$")


def read_readme(text: str) -> list[Board]:
    """The README's Cortex-M boards and their milliseconds per operation (its first table of
    "Runtime performance", one column per core)."""
    section = text.split("## Runtime performance", 1)
    if len(section) != 2:
        raise UserError("p256-m's README has no 'Runtime performance' section", exit_code=1)
    body = section[1].split("\n## ", 1)[0]
    boards = {}
    for line in body.splitlines():
        if found := _BOARD_LINE.match(line.strip()):
            boards[found.group(1)] = (found.group(3), float(found.group(2)), found.group(4))
    header: list[str] = []
    ms: dict[str, dict[str, float]] = {}
    for line in body.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) > 1 and cells[0] == "Function":
            header = cells
        elif header and cells and cells[0].strip("`") in README_ROWS:
            for name, value in zip(header[1:], cells[1:], strict=False):
                ms.setdefault(name, {})[README_ROWS[cells[0].strip("`")]] = float(value)
    out = []
    for core, (board, mhz, system) in boards.items():
        column = f"Cortex-{core}"
        if column not in ms:
            continue
        part = parts.part_named(board.replace(" board", ""))
        out.append(Board(f"cortex-{core.lower()}", part.name, mhz, system, ms[column]))
    if not out:
        raise UserError("p256-m's README names no Cortex-M board with figures", exit_code=1)
    return out


def source_tree() -> Path:
    return Sources().source_dir(LINE)


def boards() -> list[Board]:
    return read_readme((source_tree() / P256M / "README.md").read_text())


def board_source(pinned: str) -> str:
    """mbedTLS 3.6's p256-m.c with u288_muladd's loop kept: the code of the README's figures."""
    if pinned.count(UNROLLED) != 1:
        raise UserError(f"{LINE}'s p256-m.c no longer selects its unrolling where tlsbench "
                        "expects it: the board's code cannot be rebuilt", exit_code=1)  # fmt: skip
    return pinned.replace(UNROLLED, ROLLED)


def image(core_arch: str, code: str) -> Path:
    """The benchmark image of p256-m for a core, built once per input under the cache."""
    if code not in CODES:
        raise UserError(f"p256-m code {code}: choose one of {', '.join(CODES)}")
    root = source_tree()
    pinned = (root / P256M / "p256-m.c").read_text()
    source = board_source(pinned) if code == "board" else pinned
    core = core_of(core_arch)
    target = arches.arch(core_arch)
    inputs = [source.encode(), PORT.read_bytes(), linker_script(core).encode(),
              " ".join((*target.flags, *MBED_RELEASE_FLAGS)).encode(),
              *((FIRMWARE / n).read_bytes() for n in ("startup.c", "semihost.c"))]  # fmt: skip
    key = hashlib.sha256(b"\0".join(inputs)).hexdigest()[:16]
    folder = paths.cache_root() / "samecode" / f"p256m-{core_arch}-{code}-{key}"
    built = folder / "p256m.elf"
    if built.exists():
        return built
    with paths.building_folder(folder, built, ".p256m-") as tmp:
        (tmp / "p256-m.c").write_text(source)
        (tmp / "firmware.ld").write_text(linker_script(core))
        command = [
            target.cc("cc"), *target.flags, *MBED_RELEASE_FLAGS, "-g",
            "-DMBEDTLS_PSA_P256M_DRIVER_ENABLED", f"-I{root / 'include'}", f"-I{root / P256M}",
            f"-I{FIRMWARE}", str(FIRMWARE / "startup.c"), str(FIRMWARE / "semihost.c"),
            str(PORT), str(tmp / "p256-m.c"), "-T", str(tmp / "firmware.ld"), "-nostartfiles",
            "-Wl,--gc-sections", "-o", str(tmp / "p256m.elf"),
        ]  # fmt: skip
        done = subprocess.run(command, capture_output=True, text=True, check=False)
        if done.returncode != 0:
            raise UserError(f"building p256-m's benchmark for {core_arch} failed:\n"
                            f"{done.stderr[-3000:]}", exit_code=1)  # fmt: skip
    return built


def measure(core_arch: str, code: str, setting: parts.Setting,
            timeout: float = TIMEOUT_SECONDS) -> dict[str, cycles.Tally]:  # fmt: skip
    """The model's cycles of each of p256-m's four operations on `setting`."""
    path = image(core_arch, code)
    core = core_of(core_arch)
    text, _, windows = cycles.run(qemu.qemu_command(path, core, []), path, setting, WINDOW,
                                  timeout)  # fmt: skip
    result = cycles.last_json(text)
    if result.get("returns") != [0, 0, 0, 0]:
        raise UserError(f"p256-m's benchmark failed on {core_arch}: {result}", exit_code=1)
    cycles.check_windows(windows, len(OPERATIONS), "p256-m benchmark")
    return dict(zip(OPERATIONS, windows, strict=True))


def check(codes: tuple[str, ...] = ("board", "pinned")) -> list[dict[str, Any]]:
    """Every same-code point: per board, code and operation, the board's ms, the model's cycles
    and ms at the board's part and clock, and the model's error (model / board - 1)."""
    rows = []
    for board in boards():
        setting = parts.setting(board.part, core=board.core, clock=board.mhz)
        assert setting is not None
        for code in codes:
            measured = measure(board.core, code, setting)
            for op in OPERATIONS:
                tally = measured[op]
                model_ms = tally.estimate / (setting.mhz * 1000.0)
                rows.append({
                    "library": "p256-m", "source": f"{LINE} {P256M}/README.md",
                    "part": board.part, "core": board.core, "mhz": board.mhz,
                    "system": board.system, "code": code, "operation": op,
                    "label": LABELS[op], "board_ms": board.ms[op],
                    "board_cycles": round(board.ms[op] * board.mhz * 1000),
                    "model_ms": model_ms, "error": model_ms / board.ms[op] - 1,
                    "wait_states": setting.wait_states, **tally.as_dict(),
                    "cpi": tally.estimate / tally.instructions,
                })  # fmt: skip
    return rows


def summary(rows: list[dict[str, Any]], code: str = "board") -> dict[str, dict[str, float]]:
    """Per part, the model's errors on the compared code: the worst, the mean of magnitudes."""
    out: dict[str, dict[str, float]] = {}
    for part in dict.fromkeys(r["part"] for r in rows):
        errors = [r["error"] for r in rows if r["part"] == part and r["code"] == code]
        out[part] = {"points": len(errors), "worst": max(errors, key=abs),
                     "mean_abs": sum(abs(e) for e in errors) / len(errors)}  # fmt: skip
    return out


def wolfssl_rows() -> list[dict[str, Any]]:
    """wolfSSL's STM32 benchmark table (the pinned archive's IDE/STM32Cube/STM32_Benchmarks.md),
    one row per part and section, and why each cannot check the model: a same-code point needs
    the row's release rebuilt with its configuration, and no row's release is one tlsbench can
    fetch (pinned, or offered by Debian's archive)."""
    selection, _ = calibrate.load_selection()
    table_path = Sources().source_dir(selection["library"]) / selection["source"]
    table = calibrate.read_table(table_path.read_text())
    pinned = sorted(p.upstream for p in Sources().pins.values() if p.package == "wolfssl")
    rows = []
    for (section, number), block in table.items():
        why = (f"wolfSSL {block.version or 'of no stated release'}: not a release tlsbench can "
               f"rebuild (pinned, as Debian offers them: {', '.join(pinned)})")  # fmt: skip
        if block.version in pinned:
            why = "its release is pinned: its configuration is to be rebuilt"
        rows.append({"part": block.part, "mhz": block.mhz, "section": section, "block": number,
                     "version": block.version, "operations": sorted(block.ms),
                     "checks": block.version in pinned, "why_not": why})  # fmt: skip
    return rows


def write(rows: list[dict[str, Any]], path: Path = cycles.MODEL_CHECK_FILE) -> dict[str, Any]:
    """model_check.json: every same-code point, and per core the model's error on the board's
    code, with the label every projected figure carries."""
    cores: dict[str, Any] = {}
    compared = [r for r in rows if r["code"] == "board"]
    for core in dict.fromkeys(r["core"] for r in compared):
        mine = [r for r in compared if r["core"] == core]
        low, high = min(r["error"] for r in mine), max(r["error"] for r in mine)
        where = ", ".join(dict.fromkeys(f"{r['library']} on {r['part']}" for r in mine))
        cores[core] = {
            "points": len(mine), "low": round(low, 4), "high": round(high, 4),
            "parts": list(dict.fromkeys(r["part"] for r in mine)),
            "label": f"the model's error on same-code board figures: {where} "
                     f"{100 * low:+.1f} % to {100 * high:+.1f} % ({len(mine)} points, none "
                     "used to set the model)",
        }  # fmt: skip
    data = {"generated_by": "tlsbench model-check --write", "cores": cores,
            "points": [{k: (round(v, 6) if isinstance(v, float) else v) for k, v in r.items()}
                       for r in rows]}  # fmt: skip
    path.write_text(json.dumps(data, indent=1) + "\n")
    return data
