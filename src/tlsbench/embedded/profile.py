"""Where a firmware handshake's instructions go: every instruction the image executes inside
its measured handshake calls, attributed to a function of the image and grouped by the
library source file the function comes from (`tlsbench cortex-m --split`).

How: a QEMU TCG plugin (profile_plugin.c beside this module: a host program, kept out of
drivers/, whose every file is part of every variant's drivers key; built here against the
plugin API header of the pinned QEMU source, sources/tools.toml) counts the instructions of every
translation block run between the entry of the image's measured call (`fw_step`) and its
return to the caller, per side and per instruction address; the image's symbol table (its
FILE symbols for static functions, the library's archives for global ones, the toolchain's
C library for the rest) names the function and source file of each address, and the rule
table host and firmware share (tlsbench/core/cost_groups.toml) names the group.

The plugin counts each instruction exactly; the handshake count the image reports comes from
SysTick, which ticks once per `instructions_per_1000_ticks / 1000` instructions (40 on the
MPS2 boards' 25 MHz clock) and brackets each measured call a few instructions wider than the
call itself. The split therefore shows the groups (their sum is the plugin's exact count)
and one line "timer rounding" (the reported count less that sum), which must stay within one
tick plus one tick of bracketing per measured call: the groups and that line sum to the count
`cortex-m` reports.
"""

from __future__ import annotations

import bisect
import json
import re
import subprocess
import tempfile
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tlsbench.builds import arches
from tlsbench.builds.firmware import SIDES, TIMEOUT_SECONDS, Core, Job
from tlsbench.core import costs, paths
from tlsbench.core.errors import UserError
from tlsbench.embedded import cycles, qemu, tcg

PLUGIN_SOURCE = Path(__file__).with_name("profile_plugin.c")
MEASURED_CALL = "fw_step"  # firmware_core.c's measured handshake step, per side

# ---------------------------------------------------------------------------- groups

# The groups, in the order the split shows them (key -> label), and the rules that name a
# function's group: the firmware's part of the one table host and firmware share
# (tlsbench/core/cost_groups.toml). `symbol` rules match a function's name (allocators are
# known by name wherever they live); `file` rules the base name of the source file the
# function was compiled from (wolfSSL's and mbedTLS's own file names); `origin` where the
# function was linked from: "libc" (the toolchain's C library and libgcc) or "firmware" (the
# image's own sources, drivers/embedded/cortexm).
SCOPE = "firmware"
GROUPS = costs.group_labels(SCOPE)
GROUP_RULES: tuple[tuple[str, str, str], ...] = tuple(
    (rule.group, rule.subject, rule.pattern) for rule in costs.rule_table().rules
    if SCOPE in rule.scopes
)  # fmt: skip


def group_of(name: str, source: str, origin: str) -> str:
    """The group of a function: the shared table's first firmware rule that matches, else
    "other"."""
    return costs.group_of(name, source, origin, scope=SCOPE)


# ---------------------------------------------------------------------------- symbols


@dataclass(frozen=True)
class Function:
    start: int
    end: int
    name: str
    source: str  # the source file's base name, or "" where the image does not say
    origin: str  # "library", "libc" or "firmware"

    @property
    def group(self) -> str:
        return group_of(self.name, self.source, self.origin)


def _tool(name: str) -> str:
    return f"{arches.CORTEX_M_TRIPLET}-{name}"


def _output(command: list[str]) -> str:
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise UserError(f"{' '.join(command)} failed: {done.stderr.strip()[-500:]}", exit_code=1)
    return done.stdout


def _archive_members(archives: list[Path]) -> dict[str, str]:
    """Global function name -> the source file of the archive member that defines it."""
    found: dict[str, str] = {}
    for archive in archives:
        # nm -A: "ARCHIVE:MEMBER:VALUE TYPE NAME"
        for line in _output([_tool("nm"), "-A", "--defined-only", str(archive)]).splitlines():
            where, _, rest = line.rpartition(":")
            fields = rest.split()
            if len(fields) != 3 or fields[1] not in "TW":
                continue
            member = where.rsplit(":", 1)[-1]
            found.setdefault(fields[2], _member_source(member))
    return found


def _member_source(member: str) -> str:
    """An archive member's source file: wolfSSL's libtool names `src_libwolfssl_la-ecc.o`,
    CMake's `ecp.c.obj` / `ecp.c.o`."""
    base = member.rsplit("-", 1)[-1] if "_la-" in member else member
    base = re.sub(r"\.(obj|o)$", "", base)
    return base if base.endswith((".c", ".S", ".s")) else base + ".c"


def toolchain_archives(core: Core) -> list[Path]:
    """The C library and libgcc the images link, for the core's multilib."""
    flags = list(arches.CORTEX_M_FLAGS[core.arch])
    found = []
    for name in ("libc.a", "libc_nano.a", "libg.a", "libm.a", "libgcc.a"):
        path = _output([_tool("gcc"), *flags, f"-print-file-name={name}"]).strip()
        if path != name and Path(path).is_file():
            found.append(Path(path))
    if not found:
        raise UserError(f"{_tool('gcc')} names no C library for {core.arch}", exit_code=1)
    return found


def functions(image: Path, library_archives: list[Path], core: Core) -> list[Function]:
    """The image's functions with their source file and origin, sorted by address.

    Static functions follow their object's FILE symbol in the symbol table; global ones are
    looked up in the library's archives, then the toolchain's libraries; a global function
    in neither is the firmware's own."""
    library = _archive_members(library_archives)
    libc = _archive_members(toolchain_archives(core))
    own_files = {p.name for p in (paths.DRIVERS / "embedded" / "cortexm").glob("*.c")}
    library_files = set(library.values())
    libc_files = set(libc.values())
    found = []
    source = ""
    for line in _output([_tool("readelf"), "-sW", str(image)]).splitlines():
        fields = line.split()
        # Num: Value Size Type Bind Vis Ndx Name
        if len(fields) < 8 or not fields[0].endswith(":") or not fields[0][:-1].isdigit():
            continue
        value, size, kind, bind, name = fields[1], fields[2], fields[3], fields[4], fields[7]
        if kind == "FILE":
            source = name
            continue
        if kind != "FUNC" or fields[6] == "UND":
            continue
        start = int(value, 16) & ~1  # the Thumb bit
        length = int(size, 0) if size.isdigit() or size.startswith("0x") else 0
        if bind == "LOCAL":
            file = source
            # A file the toolchain's libraries have and the library's do not is libc's;
            # anything else unknown is the library's (a file of static functions only).
            origin = ("firmware" if file in own_files else
                      "libc" if file in libc_files and file not in library_files else
                      "library")  # fmt: skip
        elif name in library:
            file, origin = library[name], "library"
        elif name in libc:
            file, origin = libc[name], "libc"
        else:
            file, origin = "", "firmware"
        found.append(Function(start, start + length, name, file, origin))
    found.sort(key=lambda f: (f.start, f.start - f.end))
    # Assembly functions without a size (libgcc's __aeabi_uldivmod) reach the next function.
    return [
        f if f.end > f.start else
        Function(f.start, next((g.start for g in found[i + 1:] if g.start > f.start), f.start + 2),
                 f.name, f.source, f.origin)
        for i, f in enumerate(found)
    ]  # fmt: skip


class Symbolizer:
    """Address -> function, by the functions' address ranges."""

    def __init__(self, funcs: list[Function]) -> None:
        self.funcs = funcs
        self.starts = [f.start for f in funcs]

    def __call__(self, address: int) -> Function | None:
        i = bisect.bisect_right(self.starts, address) - 1
        if i >= 0 and self.funcs[i].start <= address < self.funcs[i].end:
            return self.funcs[i]
        return None


# ---------------------------------------------------------------------------- the plugin


def plugin() -> Path:
    """The profiler plugin, built once per plugin source and QEMU pin under the cache."""
    return tcg.plugin(PLUGIN_SOURCE, "profile")


def measured_call_sites(image: Path) -> tuple[int, list[int]]:
    """The measured call's entry and the return addresses of its calls: the instruction
    after each `bl fw_step` in the disassembly (whatever the call's length)."""
    text = _output([_tool("objdump"), "-d", "--no-show-raw-insn", str(image)])
    entry = re.search(rf"^([0-9a-f]+) <{MEASURED_CALL}>:", text, flags=re.M)
    instructions = re.findall(r"^\s*([0-9a-f]+):\s+(.*)$", text, flags=re.M)
    call = re.compile(rf"blx?\s+[0-9a-f]+ <{MEASURED_CALL}>")
    returns = [int(instructions[i + 1][0], 16) for i, (_, asm) in enumerate(instructions[:-1])
               if call.match(asm)]  # fmt: skip
    if entry is None or not returns:
        raise UserError(f"{image}: no {MEASURED_CALL} and calls to it to profile", exit_code=1)
    return int(entry.group(1), 16), returns


# The side of each measured handshake call in turn (the cycle model reads its windows alike).
call_order = cycles.call_order

# ---------------------------------------------------------------------------- the split


def _run_profiled(image: Path, core: Core, job: Job, calls: dict[str, int], out: Path
                  ) -> dict[str, Any]:  # fmt: skip
    entry, returns = measured_call_sites(image)
    plugin_args = [f"out={out}", f"open={entry:x}", *(f"close={r:x}" for r in returns),
                   f"order={call_order(calls)}"]  # fmt: skip
    loaded = ",".join([str(plugin()), *(f"arg={a}" for a in plugin_args)])
    command = [*qemu.qemu_command(image, core, job), "-plugin", loaded]
    try:
        done = subprocess.run(command, capture_output=True, text=True, check=False,
                              timeout=TIMEOUT_SECONDS)  # fmt: skip
    except subprocess.TimeoutExpired:
        raise UserError(
            f"the profiled firmware run did not finish within {TIMEOUT_SECONDS:.0f} s",
            exit_code=1,
        ) from None
    lines = [line for line in (done.stdout + done.stderr).splitlines() if line.startswith("{")]
    if done.returncode != 0 or not lines or not out.exists():
        raise UserError(
            f"the profiled firmware run failed (exit status {done.returncode}): "
            f"{(done.stdout + done.stderr)[-1000:]}",
            exit_code=1,
        )
    return dict(json.loads(lines[-1]))


def _read_profile(out: Path, expected_windows: int) -> tuple[list[int], dict[int, dict[int, int]]]:
    """The plugin's totals per side and instructions per address per side."""
    totals = [0] * len(SIDES)
    per_address: dict[int, dict[int, int]] = {i: defaultdict(int) for i in range(len(SIDES))}
    windows = -1
    for line in out.read_text().splitlines():
        fields = line.split()
        if fields[0] == "windows":
            if len(fields) > 2:
                raise UserError("the image made more measured calls than its run reported", 1)
            windows = int(fields[1])
        elif fields[0] == "total":
            totals[int(fields[1])] = int(fields[2])
        elif fields[0] == "tb":
            side, runs = int(fields[1]), int(fields[2])
            for address in fields[3:]:
                per_address[side][int(address, 16)] += runs
    if windows != expected_windows:
        raise UserError(f"the profile saw {windows} measured calls, the run reported "
                        f"{expected_windows}", exit_code=1)  # fmt: skip
    return totals, per_address


def split(image: Path, core: Core, job: Job, library_archives: list[Path], runs: int = 1
          ) -> dict[str, Any]:  # fmt: skip
    """The handshake's instructions per side by group (and the top functions), beside the
    count the normal run reports; raises UserError where they do not add up."""
    if not core.arch.startswith("cortex-m"):
        raise UserError(f"--split profiles Cortex-M images (qemu-system-arm, the "
                        f"{arches.CORTEX_M_TRIPLET} tools); {core.arch} is none")  # fmt: skip
    result = qemu.measure(image, core, job, runs)
    calls = {side: int(result[side]["handshake_calls"]) for side in SIDES}
    per_tick = int(result["instructions_per_1000_ticks"]) / 1000
    with tempfile.TemporaryDirectory(prefix="tlsbench-profile-") as tmp:
        out = Path(tmp) / "profile.txt"
        profiled = _run_profiled(image, core, job, calls, out)
        totals, per_address = _read_profile(out, sum(calls.values()))
    # The plugin must not change what the image measures.
    profiled = qemu.with_projection(profiled, core)
    for side in SIDES:
        if profiled[side] != result[side]:
            raise UserError(f"the profiled run's {side} figures differ from the plain run's: "
                            f"the plugin perturbed the image", exit_code=1)  # fmt: skip
    symbolize = Symbolizer(functions(image, library_archives, core))
    sides: dict[str, Any] = {}
    for index, side in enumerate(SIDES):
        groups: dict[str, int] = dict.fromkeys(GROUPS, 0)
        by_function: dict[tuple[str, str], int] = defaultdict(int)
        by_file: dict[str, int] = defaultdict(int)
        unknown = 0
        for address, count in per_address[index].items():
            func = symbolize(address)
            if func is None:
                unknown += count
                groups["other"] += count
                continue
            groups[func.group] += count
            by_function[(func.name, func.group)] += count
            by_file[func.source or func.origin] += count
        counted = sum(groups.values())
        if counted != totals[index]:
            raise UserError(f"{side}: the groups sum to {counted}, the plugin counted "
                            f"{totals[index]}", exit_code=1)  # fmt: skip
        reported = int(result[side]["handshake_instructions"])
        rounding = reported - counted
        bound = calls[side] * 2 * per_tick  # one tick of rounding, one of bracketing, per call
        if abs(rounding) > bound:
            raise UserError(
                f"{side}: the profile counts {counted} instructions, the run reports "
                f"{reported}: more apart than the timer's resolution over {calls[side]} calls "
                f"({bound:g})",
                exit_code=1,
            )
        top = sorted(by_function.items(), key=lambda kv: -kv[1])[:12]
        sides[side] = {
            "handshake_instructions": reported,
            "profiled_instructions": counted,
            "timer_rounding": rounding,
            "timer_rounding_bound": bound,
            "handshake_calls": calls[side],
            "groups": [{"group": g, "label": GROUPS[g], "instructions": n,
                        "share": n / counted if counted else 0.0} for g, n in groups.items()],
            "unattributed_addresses_instructions": unknown,
            "top_functions": [{"function": name, "group": group, "instructions": n}
                              for (name, group), n in top],
            "by_source_file": dict(sorted(by_file.items(), key=lambda kv: -kv[1])),
        }  # fmt: skip
    return {
        "library": result["library"], "library_version": result["library_version"],
        "core": core.arch, "machine": core.machine, "wire": result["wire"],
        "instructions_per_1000_ticks": result["instructions_per_1000_ticks"],
        "rules": [{"group": g, "match": w, "pattern": p} for g, w, p in GROUP_RULES],
        **sides,
    }  # fmt: skip
