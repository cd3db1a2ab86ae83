"""The cycle model: a firmware image's instructions charged their cycles on the part's core and
memory by a QEMU TCG plugin (cycles_plugin.c beside this module), per measurement window.

The plugin decodes every instruction the image executes (capstone), charges it the cycles its
core's Technical Reference Manual gives at zero wait states, completed with what the run shows
(taken branches, registers moved, load pipelining, address dependencies), and adds the wait
states of the part's flash on instruction fetches and data reads, through the part's read width,
prefetch and accelerator caches (parts.toml). A window opens and closes with a store to one
address: firmware_core.c's `current`, which its MEASURED macro sets before and after every
measured call (the global set-up, each side's set-up, then each handshake call in turn; in
`mode=ops` the global set-up, the empty batch, then each operation's batch), so that cycles are
counted over exactly the calls whose instructions the image counts.

The count is exact and the same every run, as the instruction count is; what it is worth as a
board's time is measured on board figures of the same code (samecode.py) and stated beside
every projected figure. The operand-dependent timings (the Cortex-M3's long multiplies, SDIV
and UDIV) are charged at their fewest cycles: `span` is how many more they can take, the
model's bound.
"""

from __future__ import annotations

import json
import subprocess
import tempfile
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

from tlsbench.builds import arches
from tlsbench.builds.firmware import TIMEOUT_SECONDS, Core
from tlsbench.core.errors import UserError
from tlsbench.embedded import tcg
from tlsbench.embedded.parts import Setting

PLUGIN_SOURCE = Path(__file__).with_name("cycles_plugin.c")
# The model's error on same-code board figures, per core: written by `tlsbench model-check
# --write` (samecode.py), read beside every projected figure.
MODEL_CHECK_FILE = Path(__file__).with_name("model_check.json")
# The firmware images' window: firmware_core.c's `current`, stored before and after each
# measured call.
WINDOW_SYMBOL = ("current", "firmware_core.c")
# What the part's linker script puts in flash, as the image's sections name it: code and
# constants (.rodata is in .text), the vector table, the unwind index and the credentials.
FLASH_SECTIONS = (".vectors", ".text", ".ARM.exidx", ".certs")


def plugin() -> Path:
    """The cycle model's plugin, built once per source and QEMU pin under the cache."""
    return tcg.plugin(PLUGIN_SOURCE, "cycles", ("capstone",), needs="libcapstone-dev")


@dataclass(frozen=True)
class Tally:
    """Cycles of one window (or a sum of windows): `cycles` holds the fetch stalls and data
    wait states; the operand-dependent instructions are in it at their fewest cycles, and take
    at most `span` more."""

    instructions: int
    cycles: int
    fetch_stall: int
    data_wait: int
    span: int
    undecoded: int

    def __add__(self, other: Tally) -> Tally:
        return Tally(*(a + b for a, b in zip(self.fields(), other.fields(), strict=True)))

    def fields(self) -> tuple[int, ...]:
        return (self.instructions, self.cycles, self.fetch_stall, self.data_wait, self.span,
                self.undecoded)  # fmt: skip

    @property
    def estimate(self) -> float:
        """The model's figure: the operand-dependent instructions at the middle of their range."""
        return self.cycles + self.span / 2

    def as_dict(self) -> dict[str, Any]:
        return {"instructions": self.instructions, "cycles": self.cycles,
                "fetch_stall": self.fetch_stall, "data_wait": self.data_wait,
                "span": self.span, "undecoded": self.undecoded,
                "estimate": self.estimate}  # fmt: skip


ZERO = Tally(0, 0, 0, 0, 0, 0)


def _tool(name: str) -> str:
    return f"{arches.CORTEX_M_TRIPLET}-{name}"


def _readelf(args: list[str], image: Path) -> str:
    done = subprocess.run([_tool("readelf"), *args, str(image)], capture_output=True, text=True,
                          check=False)  # fmt: skip
    if done.returncode != 0:
        raise UserError(f"readelf {' '.join(args)} {image} failed: {done.stderr}", exit_code=1)
    return done.stdout


def flash_ranges(image: Path) -> list[tuple[int, int]]:
    """The image's addresses the part holds in flash: FLASH_SECTIONS' [start, end)."""
    out = []
    for line in _readelf(["-SW"], image).splitlines():
        fields = line.replace("[ ", "[").split()
        # [Nr] Name Type Address Off Size ...
        if len(fields) > 5 and fields[0].startswith("[") and fields[1] in FLASH_SECTIONS:
            start, size = int(fields[3], 16), int(fields[5], 16)
            if size:
                out.append((start, start + size))
    if not out:
        raise UserError(f"{image}: no code sections to place in flash", exit_code=1)
    return out


def symbol_address(image: Path, name: str, source: str | None = None) -> int:
    """The address of the data object `name` (a static one of `source`, when given: the FILE
    symbol it follows in the symbol table)."""
    file = ""
    for line in _readelf(["-sW"], image).splitlines():
        fields = line.split()
        if len(fields) < 8:
            continue
        if fields[3] == "FILE":
            file = fields[7]
        elif fields[7] == name and fields[3] == "OBJECT" and source in (None, file):
            return int(fields[1], 16)
    raise UserError(f"{image}: no symbol {name} (the cycle model's window)", exit_code=1)


def plugin_arguments(setting: Setting, image: Path, window: int, out: Path) -> list[str]:
    part = setting.part
    args = [f"out={out}", f"core={part.model}", f"window={window:x}",
            *(f"flash={lo:x}-{hi:x}" for lo, hi in flash_ranges(image)),
            f"ws={setting.wait_states}", f"line={part.flash_line}",
            f"prefetch={int(part.prefetch)}", f"icache={part.icache[0]}:{part.icache[1]}",
            f"dcache={part.dcache[0]}:{part.dcache[1]}", f"muls={part.muls_cycles}"]  # fmt: skip
    return args


def read_output(path: Path) -> tuple[list[Tally], Tally]:
    """The plugin's windows and its total."""
    windows: list[Tally] = []
    total = None
    try:
        text = path.read_text()
    except OSError:
        raise UserError("the cycle model wrote no counts (QEMU did not finish)", 1) from None
    for line in text.splitlines():
        fields = line.split()
        if fields[0] == "window":
            windows.append(Tally(*map(int, fields[2:8])))
        elif fields[0] == "total":
            total = Tally(*map(int, fields[1:7]))
    if total is None:
        raise UserError(f"the cycle model's output has no total:\n{text[-500:]}", exit_code=1)
    return windows, total


def run(command: list[str], image: Path, setting: Setting,
        window_symbol: tuple[str, str | None] = WINDOW_SYMBOL,
        timeout: float = TIMEOUT_SECONDS) -> tuple[str, int, list[Tally]]:  # fmt: skip
    """Runs QEMU's `command` (qemu.qemu_command's, for `image`) with the cycle model for
    `setting`: what QEMU printed, its exit status, and the cycles of each window, QEMU killed
    after `timeout` seconds (the model runs it some 25 times slower than alone: callers bound
    it by a plain run's time, model_timeout)."""
    window = symbol_address(image, *window_symbol)
    with tempfile.TemporaryDirectory(prefix="tlsbench-cycles-") as tmp:
        out = Path(tmp) / "cycles.txt"
        loaded = ",".join([str(plugin()), *plugin_arguments(setting, image, window, out)])
        try:
            done = subprocess.run([*command, "-plugin", loaded], capture_output=True, text=True,
                                  timeout=timeout, check=False)  # fmt: skip
        except subprocess.TimeoutExpired:
            raise UserError(f"the firmware image did not finish within {timeout:.0f} s "
                            "under the cycle model", exit_code=1) from None  # fmt: skip
        windows, _ = read_output(out) if out.exists() else ([], ZERO)
    return done.stdout + done.stderr, done.returncode, windows


# How much longer than a plain run a modelled one may take (measured: some 25 times; the
# bound leaves room for a machine busier during one run than the other).
MODEL_SLOWDOWN_BOUND = 100


def model_timeout(plain_seconds: float, timeout: float = TIMEOUT_SECONDS) -> float:
    """The time bound of a modelled run, from a plain run of the same image and arguments:
    relative, so that a slow or busy machine is not a failure."""
    return max(timeout, MODEL_SLOWDOWN_BOUND * plain_seconds)


def last_json(text: str) -> dict[str, Any]:
    lines = [x for x in text.splitlines() if x.startswith("{")]
    if not lines:
        raise UserError(f"the firmware image printed nothing under the cycle model: "
                        f"{text[-800:]}", exit_code=1)  # fmt: skip
    return dict(json.loads(lines[-1]))


def call_order(calls: dict[str, int]) -> str:
    """The side of each measured handshake call in turn (firmware_core.c's loop: client and
    server alternate until one is done, then the other goes on alone)."""
    order = []
    for turn in range(max(calls.values(), default=0)):
        order += [side[0] for side in ("client", "server") if turn < calls[side]]
    return "".join(order)


def check_windows(windows: list[Tally], expected: int, what: str) -> None:
    if len(windows) != expected:
        raise UserError(f"the cycle model saw {len(windows)} measured calls, the image's {what} "
                        f"made {expected}", exit_code=1)  # fmt: skip
    undecoded = sum(w.undecoded for w in windows)
    if undecoded:
        raise UserError(f"the cycle model could not decode {undecoded} executed instructions "
                        f"(capstone): their cycles would be guesses", exit_code=1)  # fmt: skip


def handshake_windows(windows: list[Tally], order: str) -> dict[str, Tally]:
    """Per side the cycles of its set-up and of its handshake calls: the image measures the
    global set-up, the client's and the server's set-up, then the handshake calls in `order`
    (c and s, call_order's)."""
    check_windows(windows, 3 + len(order), "handshake")
    sums = {"global": windows[0], "client_setup": windows[1], "server_setup": windows[2],
            "client": ZERO, "server": ZERO}  # fmt: skip
    for w, side in zip(windows[3:], order, strict=True):
        key = "client" if side == "c" else "server"
        sums[key] = sums[key] + w
    return sums


def describe(core: Core, setting: Setting) -> str:
    return f"cycle model of the {core.label} ({setting.part.model}) and {setting.describe()}"


@cache
def _checks() -> dict[str, Any]:
    if not MODEL_CHECK_FILE.exists():
        return {}
    return dict(json.loads(MODEL_CHECK_FILE.read_text()))


def model_error(core_arch: str) -> dict[str, Any]:
    """The model's measured error on same-code board figures of `core_arch` (model-check's):
    the points, the lowest and highest error, and a label for the figures it goes beside."""
    found = _checks().get("cores", {}).get(core_arch)
    if found:
        return dict(found)
    name = core_arch.replace("cortex-m", "Cortex-M")
    return {"points": 0, "low": None, "high": None, "parts": [],
            "label": f"no same-code board figure of a {name} found: the model's error on this "
            "core is not measured"}  # fmt: skip
