"""The parts the cycle model knows (parts.toml beside this module): a microcontroller's core,
clock, memories and flash accelerator, each value with its document, and a part at a clock
(`Setting`: the wait states its flash needs there, or what the user gives for an unlisted part).

Bad input is refused with the parts that are known: an unknown part, a clock above the part's
maximum, wait states its flash cannot run with at that clock or its latency register cannot
hold, a core the part does not have.
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

from tlsbench.core.errors import UserError

TABLE = Path(__file__).with_name("parts.toml")
MODELS = ("m0", "m0plus", "m3", "m4", "m33", "m7")
KIB = 1024
# The part a core's projection uses when none is named: the reference parts of the CPI ranges
# before the model where the table has them (STM32F103, STM32F401, STM32F746), else the part of
# the core's same-code check (STM32F091 for the M0, whose reference was the micro:bit's
# nRF51822) or a current one (STM32U585 for the M33, whose reference was the STM32L552).
DEFAULT_PARTS = {
    "cortex-m0": "STM32F091",
    "cortex-m3": "STM32F103",
    "cortex-m4": "STM32F401",
    "cortex-m7": "STM32F746",
    "cortex-m33": "STM32U585",
}


@dataclass(frozen=True)
class Part:
    name: str
    title: str
    aliases: tuple[str, ...]
    core: str  # the variant's core: cortex-m4
    model: str  # the cycle model's core: m4, m0plus
    clock_mhz: float
    max_mhz: float
    ram: int  # bytes
    flash: int
    flash_line: int
    wait_states: tuple[tuple[float, int], ...]  # (up to MHz, wait states), by clock
    max_wait_states: int
    prefetch: bool
    icache: tuple[int, int]  # lines, ways
    dcache: tuple[int, int]
    muls_cycles: int
    data: str  # "sram" or "tcm": where data, heap and stack live (zero wait states either way)
    sources: dict[str, str]
    unverified: tuple[str, ...]

    def wait_states_at(self, mhz: float) -> int:
        """The flash wait states the part needs at `mhz` (its reference manual's table)."""
        for up_to, states in self.wait_states:
            if mhz <= up_to + 1e-9:
                return states
        return self.wait_states[-1][1]


@dataclass(frozen=True)
class Setting:
    """A part at a clock, with the flash wait states used there."""

    part: Part
    mhz: float
    wait_states: int
    listed: bool = True  # False: an unlisted part (the default part's memory, the user's clock)

    def describe(self) -> str:
        name = self.part.name if self.listed else f"an unlisted {self.part.core} part"
        what = f"{name} at {self.mhz:g} MHz, {self.wait_states} flash wait state"
        what += "" if self.wait_states == 1 else "s"
        accel = []
        if self.part.prefetch:
            accel.append("prefetch")
        if self.part.icache[0]:
            accel.append(f"I-cache {self.part.icache[0]} x {self.part.flash_line} B")
        if self.part.dcache[0]:
            accel.append(f"D-cache {self.part.dcache[0]} x {self.part.flash_line} B")
        memory = f"flash reads {self.part.flash_line} B" + (
            f", {', '.join(accel)}" if accel else ""
        )
        return f"{what} ({memory})" + ("" if self.listed else f", memory as {self.part.name}'s")


def _size(value: Any, what: str) -> int:
    return int(float(value) * KIB)


@cache
def parts() -> dict[str, Part]:
    """Every part of the table, by name (checked: a malformed table is an error)."""
    data = tomllib.loads(TABLE.read_text())
    out = {}
    for name, raw in data.items():
        try:
            part = Part(
                name=name, title=str(raw["title"]), aliases=tuple(raw.get("aliases", ())),
                core=str(raw["core"]), model=str(raw["model"]),
                clock_mhz=float(raw["clock_mhz"]), max_mhz=float(raw["max_mhz"]),
                ram=_size(raw["ram_kib"], "ram"), flash=_size(raw["flash_kib"], "flash"),
                flash_line=int(raw["flash_line"]),
                wait_states=tuple((float(m), int(w)) for m, w in raw["wait_states"]),
                max_wait_states=int(raw["max_wait_states"]), prefetch=bool(raw["prefetch"]),
                icache=(int(raw["icache"][0]), int(raw["icache"][1])),
                dcache=(int(raw["dcache"][0]), int(raw["dcache"][1])),
                muls_cycles=int(raw.get("muls_cycles", 1)), data=str(raw.get("data", "sram")),
                sources=dict(raw.get("sources", {})),
                unverified=tuple(raw.get("unverified", ())),
            )  # fmt: skip
        except (KeyError, TypeError, ValueError, IndexError) as exc:
            raise UserError(f"{TABLE.name}: part {name}: {exc!r}", exit_code=1) from None
        if part.model not in MODELS or part.flash_line & (part.flash_line - 1):
            raise UserError(f"{TABLE.name}: part {name}: model {part.model}, flash line "
                            f"{part.flash_line}", exit_code=1)  # fmt: skip
        out[name] = part
    return out


def known() -> str:
    return ", ".join(f"{p.name} ({p.core.removeprefix('cortex-')}, {p.max_mhz:g} MHz)"
                     for p in parts().values())  # fmt: skip


def part_named(name: str) -> Part:
    """A part by its name or an alias, in any case; a usage error naming the known parts."""
    wanted = name.strip().lower()
    for part in parts().values():
        if wanted == part.name.lower() or wanted in (a.lower() for a in part.aliases):
            return part
    raise UserError(f"--part {name}: not a part tlsbench models; known parts: {known()}. For "
                    "another part give its --core, --clock and --wait-states")  # fmt: skip


def default_part(core: str) -> Part | None:
    """The part a core's projection uses when none is named (None: no model for the core)."""
    name = DEFAULT_PARTS.get(core)
    return parts()[name] if name else None


def setting(
    part_name: str | None,
    core: str | None = None,
    clock: float | None = None,
    wait_states: int | None = None,
) -> Setting | None:
    """The part (named, or the core's default) at a clock, every usage error said: None when
    the core has no model (its projection stays a CPI range)."""
    if clock is not None and clock <= 0:
        raise UserError(f"--clock {clock:g}: give the part's clock in MHz (a positive number)")
    if wait_states is not None and wait_states < 0:
        raise UserError(f"--wait-states {wait_states}: give a number of flash wait states (0 or "
                        "more)")  # fmt: skip
    if part_name is None and core is not None and default_part(core) is None:
        # No model for the core: its CPI range scales with a clock, and wait states mean nothing
        if wait_states is not None:
            raise UserError(f"--wait-states sets the cycle model's part, and {core} has no "
                            f"cycle model (its projection is a CPI range); known parts: "
                            f"{known()}")  # fmt: skip
        return None
    if part_name is None and (clock is not None or wait_states is not None):
        return _unlisted(core, clock, wait_states)
    if part_name is not None:
        part = part_named(part_name)
        if core is not None and core != part.core:
            raise UserError(f"--part {part.name} has a {part.core.replace('cortex-m', 'Cortex-M')} "
                            f"core, not {core}: give --core {part.core.removeprefix('cortex-')} "
                            f"or another part; known parts: {known()}")  # fmt: skip
    else:
        if core is None:
            raise UserError("give --part NAME, or --core with --clock and --wait-states")
        found = default_part(core)
        if found is None:
            return None
        part = found
    mhz = clock if clock is not None else part.clock_mhz
    if mhz > part.max_mhz + 1e-9:
        raise UserError(f"--clock {mhz:g}: {part.name} runs at up to {part.max_mhz:g} MHz "
                        f"({part.sources.get('max_mhz', 'its datasheet')}); known parts: "
                        f"{known()}")  # fmt: skip
    needed = part.wait_states_at(mhz)
    states = needed if wait_states is None else wait_states
    if states < needed:
        raise UserError(f"--wait-states {states}: at {mhz:g} MHz the flash of {part.name} needs "
                        f"at least {needed} ({part.sources.get('wait_states', '')}); known "
                        f"parts: {known()}")  # fmt: skip
    if states > part.max_wait_states:
        raise UserError(f"--wait-states {states}: {part.name}'s flash latency register holds at "
                        f"most {part.max_wait_states}; known parts: {known()}")  # fmt: skip
    return Setting(part, mhz, states)


# The most wait states an unlisted part is taken to have: the 4-bit latency fields of the
# STM32 and NXP parts listed.
MAX_UNLISTED_WAIT_STATES = 15


def _unlisted(core: str | None, clock: float | None, wait_states: int | None) -> Setting:
    """A part the table does not list: the core's default part's memory and accelerator at the
    user's clock and wait states (both needed: nothing says what an unknown flash needs)."""
    if core is None:
        raise UserError("--clock and --wait-states describe an unlisted part: give its --core "
                        f"too, or a --part (known parts: {known()})")  # fmt: skip
    found = default_part(core)
    if found is None:
        raise UserError(f"--clock and --wait-states set the cycle model's part, and {core} has "
                        f"no cycle model (its projection is a CPI range); known parts: "
                        f"{known()}")  # fmt: skip
    if clock is None or wait_states is None:
        missing = "--wait-states (its flash wait states at that clock)" if clock else "--clock"
        raise UserError(f"an unlisted {core} part: give {missing} too, or a --part "
                        f"(known parts: {known()})")  # fmt: skip
    if wait_states > MAX_UNLISTED_WAIT_STATES:
        raise UserError(f"--wait-states {wait_states}: a flash latency of more than "
                        f"{MAX_UNLISTED_WAIT_STATES} wait states is no part's; known parts: "
                        f"{known()}")  # fmt: skip
    return Setting(found, clock, wait_states, listed=False)
