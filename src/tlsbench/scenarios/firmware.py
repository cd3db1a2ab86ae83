"""Cortex-M firmware images run under QEMU: the family of every point of a firmware variant.

A firmware variant (a Cortex-M core, arches.py) has no driver: builds/firmware.py builds an image of
the library's TLS client and server and runs one handshake of the point's job under
qemu-system-arm, counting each side's instructions (deterministic), heap and stack, and the
one-role images' sizes. The family claims the one-process points of such variants (the
image runs handshakes only; other scenarios are unsupported there, with the reason) and
checks, for every point of such a variant, that its job is one the image can run.

Report: the answer first (does the client fit its core's reference part, how long does its
handshake take), then the detail per side, and the projected handshake time per core.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from tlsbench.builds import arches, firmware
from tlsbench.core.errors import UserError
from tlsbench.core.points import RunPoint
from tlsbench.driver.declaration import Declared
from tlsbench.driver.process import Outcome
from tlsbench.embedded import measured, parts, points
from tlsbench.reportkit.palette import line_colour
from tlsbench.reportkit.reader import RunReader
from tlsbench.reportkit.section import Section, SummaryCell, TableSpec, first_per_variant
from tlsbench.reportkit.views import View, fmt_bytes, fmt_count, fmt_kib, fmt_range, variant_cell
from tlsbench.scenarios import modes
from tlsbench.scenarios.base import Family, PointChecker, RunContext

if TYPE_CHECKING:
    from tlsbench.builds.variants import Variant
    from tlsbench.reportkit.model import RunModel
    from tlsbench.reportkit.plots import Plot
    from tlsbench.reportkit.views import View


class Firmware(Family):
    def accepts(self, scenario: str, declared: Declared) -> tuple[str, ...]:
        return ()  # it owns no scenario: the scenario's family says which keys apply

    def claims(self, variant: Variant) -> bool:
        return arches.arch(variant.arch).firmware

    def check_variant(self, checker: PointChecker, scenario: str, values: dict[str, Any],
                      variant: Variant) -> None:  # fmt: skip
        """A Cortex-M firmware point's job, said wrong before anything runs (firmware.make_job:
        a suite and kx that disagree, a certificate the suite cannot use)."""
        if not self.claims(variant):
            return
        if scenario != "handshake" or "suite" not in values:
            return  # the point is unsupported there, with the reason (points.run_point)
        try:
            points.job_of(values)
        except UserError as exc:
            raise checker.value_error(
                "suite", values["suite"], f"a job the firmware can run: {exc}"
            ) from None

    def run(self, point: RunPoint, ctx: RunContext) -> Outcome:
        """A repetition of a firmware variant (a Cortex-M core): one handshake of its image
        under qemu-system-arm; instructions per side (deterministic), heap and stack per
        side, and the one-role images' sizes (points.run_point)."""
        build = ctx.builds[point.variant]
        if ctx.mode == "instructions":
            return modes.run_instructions(point, build, ctx.timeout)
        started = time.monotonic()
        status, output, message = points.run_point(point.scenario, point.options, build,
                                                    ctx.timeout)  # fmt: skip
        code = {"ok": 0, "unsupported": 3}.get(status, 1)
        return Outcome(status, code, None, time.monotonic() - started, output, message)

    def projected_ms(self, output: dict[str, Any], side: str) -> tuple[float, float] | None:
        """A firmware point's projection of one side's count (low and high), as stored."""
        figures = (output.get("firmware") or {}).get(side) or {}
        projected = figures.get("projected_ms")
        if isinstance(projected, list) and len(projected) == 2:
            return float(projected[0]), float(projected[1])
        return None


# -- the report ------------------------------------------------------------------------------


@dataclass(frozen=True)
class FirmwareRow:
    """A firmware point (a Cortex-M image under QEMU), one side: what a device playing that
    side needs (measured.Measured) and how long its handshake takes on the core's reference
    part. The same figures in every repetition (`identical`)."""

    variant: str
    library: str
    point: str
    core: str  # cortex-m4
    job: str  # TLS 1.3 TLS-AES-128-GCM-SHA256 (ecdsa-p256 chain 1, x25519)
    side: str
    instructions: int
    identical: bool
    ms_low: float
    ms_high: float
    part: str  # the reference part the time is projected to, and its budget
    heap: int  # peak, with what the library's global set-up keeps
    stack: int
    data: int
    bss: int
    ram: int  # heap + stack + data + bss
    text: int
    credentials: int
    flash: int  # text + data + credentials
    part_ram: int
    part_flash: int
    fits: bool
    failed: str = ""  # "2 of 5 repetitions failed" where the figures rest on fewer
    calibration: str = ""  # the CPI range the ms rest on, named (firmware.Core.cpi_range)


def load_firmware(reader: RunReader) -> dict[str, list[Any]]:
    """Firmware points, a row per side, in point order (points.point_output)."""
    rows = []
    for p in reader.points:
        outputs = [r.output for r in reader.ok(p) if r.output and "firmware" in r.output]
        if not outputs:
            continue
        figures = [measured.Measured.from_output(p.variant, o) for o in outputs]
        first = figures[0]
        core = firmware.core_of(first.core)
        part_name, part_mhz, part_ram, part_flash, label = _projection_part(first, core)
        for side in firmware.SIDES:
            ram, flash = first.ram(side), first.flash(side)
            low, high = first.ms(side)
            identical = all(
                (f.ram(side), f.flash(side), f.instructions(side))
                == (ram, flash, first.instructions(side))
                for f in figures
            )
            rows.append(FirmwareRow(
                variant=p.variant, library=p.library, point=p.name, core=core.arch,
                job=first.job.describe().replace(", records 16384", ""), side=side,
                instructions=first.instructions(side), identical=identical,
                ms_low=low, ms_high=high,
                part=f"{part_name}, {part_mhz:g} MHz",
                heap=ram["heap"], stack=ram["stack"], data=ram["data"], bss=ram["bss"],
                ram=ram["total"], text=flash["text"], credentials=flash["credentials"],
                flash=flash["total"], part_ram=part_ram, part_flash=part_flash,
                fits=ram["total"] <= part_ram and flash["total"] <= part_flash,
                calibration=label,
            ))  # fmt: skip
    return {"firmware": rows}


def _projection_part(first: measured.Measured, core: firmware.Core
                     ) -> tuple[str, float, int, int, str]:  # fmt: skip
    """The part a point's ms are projected to, its clock, RAM and flash, and what the ms rest
    on: the cycle model's part where the point was modelled, else the core's reference part and
    CPI range (points stored before the model)."""
    projection = first.projection
    if projection.get("kind") == "model":
        part = parts.part_named(str(projection["part"]))
        error = projection.get("error", {}).get("label", "")
        return (part.name, float(projection["clock_mhz"]), part.ram, part.flash,
                f"{projection.get('model', 'the cycle model')}; {error}")  # fmt: skip
    return (core.part.name, core.part.mhz, core.part.ram, core.part.flash, core.cpi_range()[1])


def firmware_views(model: RunModel) -> list[View]:
    """The firmware section: the answer first (per core and job, a row per library: what the
    client device needs and whether it fits the core's reference part), then the detail."""
    if not model.firmware:
        return []
    clients = [r for r in model.firmware if r.side == "client"]
    parts = {r.core: r for r in clients}
    answer = View(
        "firmware_answer",
        "Firmware: does the TLS client fit, and how long does its handshake take?",
        "Per core and TLS job, a row per library build: what a device playing the client "
        "needs, measured on its firmware image under QEMU. RAM = heap peak + stack "
        "high-water + .data + .bss of the client-only image; flash = its .text + .data + the "
        "job's credentials (DER); ms = the client's handshake on the core's part: the cycle "
        "model of the core and the part's memory at its clock, with the model's measured error "
        "on same-code board figures (a CPI range where no model exists; docs/embedded.md gives "
        "the sources); fits = within that part's RAM and flash. Parts: "
        + "; ".join(f"{core}: {r.part}, {fmt_kib(r.part_ram)} KiB RAM, "
                    f"{fmt_kib(r.part_flash)} KiB flash; ms: {r.calibration}"
                    for core, r in sorted(parts.items(), key=lambda kv: _core_order(kv[0])))
        + ". The server's figures are in the detail table below.",
        ["core", "job", "variant", "RAM KiB", "flash KiB", "client ms", "fits the part"],
        [False, False, False, True, True, True, False],
        [
            [r.core, r.job, variant_cell(r), fmt_kib(r.ram), fmt_kib(r.flash),
             fmt_range(r.ms_low, r.ms_high), _fits(r.ram, r.part_ram, r.flash, r.part_flash)]
            for r in sorted(clients, key=lambda r: (_core_order(r.core), r.job, r.variant))
        ],
    )  # fmt: skip
    detail = View(
        "firmware",
        "Firmware detail (bytes, instructions)",
        "Per side: handshake instructions (identical in every repetition, or marked), their "
        "projection to ms, and the parts of the RAM and flash figures: heap peak (with the "
        "library's global set-up), stack high-water, .data and .bss of the one-role image; "
        ".text and the job's credentials.",
        ["variant", "core", "job", "side", "instructions", "identical", "ms", "heap", "stack",
         "data", "bss", "RAM", "text", "credentials", "flash"],
        [False, False, False, False, True, False, True] + [True] * 8,
        [
            [variant_cell(r), r.core, r.job, r.side, fmt_count(r.instructions),
             "yes" if r.identical else "no", fmt_range(r.ms_low, r.ms_high), fmt_bytes(r.heap),
             fmt_bytes(r.stack), fmt_bytes(r.data), fmt_bytes(r.bss), fmt_bytes(r.ram),
             fmt_bytes(r.text), fmt_bytes(r.credentials), fmt_bytes(r.flash)]
            for r in model.firmware
        ],
    )  # fmt: skip
    return [answer, detail]


def _core_order(core: str) -> tuple[int, str]:
    """Cores by their number (m0 .. m55), whatever their names' sort order."""
    digits = "".join(c for c in core if c.isdigit())
    return (int(digits) if digits else 0, core)


def _fits(ram: int, ram_budget: int, flash: int, flash_budget: int) -> str:
    over = []
    if ram > ram_budget:
        over.append(f"RAM over by {fmt_kib(ram - ram_budget)} KiB")
    if flash > flash_budget:
        over.append(f"flash over by {fmt_kib(flash - flash_budget)} KiB")
    if over:
        return "no: " + ", ".join(over)
    return (f"yes ({fmt_kib(ram_budget - ram)} KiB RAM, {fmt_kib(flash_budget - flash)} KiB "
            "flash left)")  # fmt: skip


def projected_handshake(model: RunModel) -> Plot | None:
    """Firmware points: the client's handshake time on its core's reference part, as the
    range the core's cycles per instruction allow (a bar from low to high), per core and job,
    a colour per library build; log scale."""
    from tlsbench.reportkit.plots import Plot, figure, legend

    rows = [r for r in model.firmware if r.side == "client"]
    if not rows:
        return None
    ordered = sorted(rows, key=lambda r: (r.job, int("".join(c for c in r.core if c.isdigit()))))
    labels = list(dict.fromkeys(f"{r.core}  {r.job}" for r in ordered))
    # A colour per library line: the same library on every core reads as one.
    lines = list(dict.fromkeys(r.variant.split(":")[0] for r in rows))
    colours = {line: line_colour(line) for line in lines}
    step = 0.8 / max(1, len(lines))
    fig = figure(11.0, 1.5 + 0.2 * len(labels))
    ax = fig.subplots()
    for r in rows:
        offset = (lines.index(r.variant.split(":")[0]) - (len(lines) - 1) / 2) * step
        y = labels.index(f"{r.core}  {r.job}") + offset
        ax.plot([r.ms_low, r.ms_high], [y, y], color=colours[r.variant.split(":")[0]],
                linewidth=3, solid_capstyle="butt")  # fmt: skip
    for line in lines:
        ax.plot([], [], color=colours[line], linewidth=3, label=line)
    ax.set_xscale("log")
    ax.set_xlabel("client handshake ms (projected range)")
    ax.set_yticks(range(len(labels)), labels, fontsize="xx-small")
    ax.invert_yaxis()
    ax.grid(alpha=0.3, axis="x")
    legend(fig, fontsize="x-small")
    ax.set_title("Firmware handshake, client: instructions x the core's CPI range (calibrated "
                 "on boards where the core has been) at its reference part's clock",
                 fontsize="small")  # fmt: skip
    return Plot("projected_handshake", "Firmware projected handshake", "firmware", fig)


def firmware_summary(model: RunModel) -> list[SummaryCell]:
    """Per variant: its first client row's RAM and projected handshake ms."""
    clients = [r for r in model.firmware if r.side == "client"]
    cells = []
    for r in first_per_variant(clients):
        case = f"{r.core} {r.job}"
        cells += [SummaryCell(r.variant, "firmware RAM KiB", r.ram / 1024, fmt_kib(r.ram), case),
                  SummaryCell(r.variant, "firmware client ms", r.ms_low,
                              fmt_range(r.ms_low, r.ms_high), case)]  # fmt: skip
    return cells


FAMILY = Firmware(
    "firmware",
    (),
    sections=(
        Section("firmware", 10,
                (TableSpec("firmware", "firmware", "Firmware (Cortex-M)", FirmwareRow),),
                load_firmware, views=firmware_views,
                plots=lambda model: [p] if (p := projected_handshake(model)) else [],
                summary=firmware_summary),
    ),
)  # fmt: skip
