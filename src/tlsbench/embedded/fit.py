"""`tlsbench fit`: does a TLS job fit a microcontroller's RAM and flash, with which library
and configuration, and how long does its handshake take on that core?

Every candidate (a library line, a named configuration of it, a record-buffer size) is
built for the core and its firmware image measured under QEMU (embedded/qemu.py): nothing is
estimated. A candidate's figures for the device's role:

  RAM   = heap peak (with what the library's global set-up keeps) + stack high-water
          + .data + .bss of the one-role image
  flash = .text + .data of the one-role image + the job's credentials (DER)
  time  = the cycle model's cycles of the handshake at the part's clock, with the model's
          measured error on same-code board figures (a CPI range where no model exists)

Results are cached beside each build's image (measured.measured), so that a second fit with
the same builds only reads them.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tlsbench.builds import firmware, needs
from tlsbench.builds.build import Builder
from tlsbench.builds.variants import Catalog
from tlsbench.core.errors import BuildError, UserError
from tlsbench.embedded import cycles, measured, qemu
from tlsbench.embedded.parts import Setting
from tlsbench.reportkit.palette import line_colour

if TYPE_CHECKING:  # matplotlib loads only when a chart is drawn
    from matplotlib.figure import Figure

KIB = 1024
LINES = ("mbedtls-3.6.6", "mbedtls-2.28.x", "wolfssl-5.7.2", "bearssl-0.6")
# Named configurations tried per library, beside its default: features of variants.toml
# (no-debug: mbedTLS's debug module compiled out; small: what a device build leaves out).
CONFIGURATIONS = {"mbedtls": ("", "no-debug", "small"), "wolfssl": ("", "small"), "bearssl": ("",)}
CONFIGURATION_NAMES = ("default", "no-debug", "small")
# mbedTLS's record buffers are build options (MBEDTLS_SSL_IN/OUT_CONTENT_LEN: a feature per
# size); wolfSSL's grow as records arrive, so its size is the max_fragment_length asked.
MBEDTLS_RECORD_FEATURES = {512: "records-512", 1024: "records-1024", 2048: "records-2048",
                           4096: "records-4096", 16384: ""}  # fmt: skip
# BearSSL's I/O buffer is the caller's, declared by the image: its size is a feature too
# (records-N: N + 325 bytes, half duplex), counted in the one-role image's .bss.
RECORD_FEATURES = {"mbedtls": MBEDTLS_RECORD_FEATURES, "bearssl": MBEDTLS_RECORD_FEATURES}
# What a library line cannot do in any build: left out of the fit with the reason.
NEVER = {"bearssl": {"1.3": "no TLS 1.3 (BearSSL 0.6 implements TLS 1.0 to 1.2)",
                     "psk": "no PSK suites (BearSSL 0.6 has none)"}}  # fmt: skip
# A post-quantum certificate (an ML-DSA-44 chain): the lines whose firmware has it, with the
# configurations (variants.toml features) that run it, and why the others cannot.
ML_DSA_LINES = {"wolfssl-5.9.2": ("ml-dsa-small", "small,ml-dsa-small")}
NO_ML_DSA = {
    "mbedtls": "no ML-DSA (mbedTLS has none)",
    "bearssl": "no ML-DSA (BearSSL has none)",
    "wolfssl": "its ML-DSA is FIPS 204's draft under OQS's code points (5.8.0 brought the "
               "final one): wolfssl-5.9.2 with ml-dsa-small",
}  # fmt: skip
# Memory sizes parts come in, for the smallest budget a candidate fits (KiB).
PART_SIZES = (16, 20, 32, 48, 64, 96, 128, 192, 256, 320, 384, 512, 640, 768, 1024, 1536, 2048)


def parse_bytes(text: str, what: str) -> int:
    """64K, 64KiB, 1M, 65536 -> bytes; a usage error otherwise."""
    value = text.strip().upper().removesuffix("IB").removesuffix("B")
    scale = {"K": KIB, "M": KIB * KIB}.get(value[-1:], 1)
    number = value[:-1] if scale > 1 else value
    try:
        amount = float(number)
    except ValueError:
        amount = -1.0
    if amount <= 0:
        raise UserError(f"{what} {text}: give a size such as 64K, 256K, 1M or 65536 (bytes)")
    return int(amount * scale)


@dataclass(frozen=True)
class Budget:
    core: firmware.Core
    ram: int
    flash: int
    mhz: float
    setting: Setting | None = None  # the part the time is projected to (None: a CPI range)

    def describe(self) -> str:
        return (
            f"{self.core.label}: RAM {kib(self.ram)} KiB, flash {kib(self.flash)} KiB, "
            f"{self.mhz:g} MHz"
        )


@dataclass(frozen=True)
class Candidate:
    spec: str  # the variant built
    library: str
    line: str
    configuration: str  # "default", "no-debug", or a user's variant
    record: int  # record buffer (mbedTLS, BearSSL) / max_fragment_length (wolfSSL) in bytes
    job: firmware.Job


@dataclass
class Outcome:
    """A measured candidate, or why it has no figures (the build lacks the job, or the
    handshake failed: e.g. a record buffer too small for the certificate flight)."""

    candidate: Candidate
    measured: measured.Measured | None = None
    why_not: str = ""
    unsupported: bool = False

    def ram(self, role: str) -> dict[str, int]:
        assert self.measured is not None
        return self.measured.ram(role)

    def flash(self, role: str) -> dict[str, int]:
        assert self.measured is not None
        return self.measured.flash(role)


def job_for(tls: str, kx: str, cert: str, group: str | None, record: int) -> firmware.Job:
    """The job a device does, from the fit's flags: one suite per version and exchange."""
    if tls == "1.3":
        suite = "TLS-AES-128-GCM-SHA256"
    elif kx == "psk":
        suite = "TLS-PSK-WITH-AES-128-GCM-SHA256"
    elif kx == "psk_dhe":
        suite = "TLS-ECDHE-PSK-WITH-AES-128-CBC-SHA256"
    elif cert == "ecdsa-p256":
        suite = "TLS-ECDHE-ECDSA-WITH-AES-128-GCM-SHA256"
    else:
        suite = "TLS-ECDHE-RSA-WITH-AES-128-GCM-SHA256"
    default_group = "x25519" if tls == "1.3" else "secp256r1"
    return firmware.make_job(suite, tls=tls, kx=kx, cert=cert, group=group or default_group,
                            record=record)  # fmt: skip


def candidates(
    core: firmware.Core,
    tls: str,
    kx: str,
    cert: str,
    group: str | None,
    lines: tuple[str, ...] = LINES,
    extra: tuple[str, ...] = (),
    records: tuple[int, ...] = firmware.RECORD_SIZES,
    configurations: tuple[str, ...] = CONFIGURATION_NAMES,
) -> tuple[list[Candidate], list[str]]:
    """Every library line x configuration x record size to measure, and notes on the lines
    left out; `extra` variant specs (e.g. one built with a user's own configuration) are
    measured with the default record size."""
    catalog = Catalog()
    out = []
    notes = []
    post_quantum = cert in firmware.TLS13_CERTS
    for line in lines:
        base = catalog.resolve(line)
        if post_quantum and line not in ML_DSA_LINES:
            notes.append(f"{line}: {NO_ML_DSA.get(base.library, 'no ML-DSA firmware')}")
            continue
        if tls == "1.3" and line.startswith("mbedtls-2."):
            notes.append(f"{line}: no TLS 1.3 (the 2.x line has none)")
            continue
        never = NEVER.get(base.library, {})
        why = never.get(tls) or (never.get("psk") if kx in ("psk", "psk_dhe") else None)
        if why:
            notes.append(f"{line}: {why}")
            continue
        try:
            catalog.resolve(f"{line}:{core.arch}")
        except UserError:  # no firmware of this line for the core (BearSSL: Cortex-M only)
            notes.append(f"{line}: no firmware build for {core.arch} (variants.toml)")
            continue
        for configuration in ML_DSA_LINES[line] if post_quantum else CONFIGURATIONS[base.library]:
            if not post_quantum and (configuration or "default") not in configurations:
                continue
            for record in records:
                features = [core.arch, configuration]
                if base.library in RECORD_FEATURES:
                    features.append(RECORD_FEATURES[base.library][record])
                spec = f"{line}:{','.join(f for f in features if f)}"
                variant = catalog.resolve(spec)
                out.append(Candidate(variant.name, base.library, line, configuration or "default",
                                     record, job_for(tls, kx, cert, group, record)))  # fmt: skip
    for spec in extra:
        variant = catalog.resolve(spec)
        if variant.arch != core.arch:
            raise UserError(f"--variant {spec}: not built for {core.arch} (add :{core.arch})")
        qemu.check_variant(variant)
        job = job_for(tls, kx, cert, group, 16384)
        needs.refuse_unfit(variant, job)  # what its config file leaves out, before building
        out.append(Candidate(variant.name, variant.library, variant.line.name, variant.name,
                             16384, job))  # fmt: skip
    return out, notes


def measure_all(candidates: list[Candidate], quiet: bool = False,
                setting: Setting | None = None) -> list[Outcome]:  # fmt: skip
    """Builds (or finds) each candidate's variant and measures its job (under the cycle model
    of `setting` where one is given)."""
    catalog = Catalog()
    builder = Builder(quiet=quiet)
    outcomes = []
    for number, candidate in enumerate(candidates, start=1):
        if not quiet:
            print(f"[{number}/{len(candidates)}] {candidate.spec} {candidate.job.describe()}",
                  file=sys.stderr, flush=True)  # fmt: skip
        try:
            build = builder.build(catalog.resolve(candidate.spec))
        except BuildError as exc:  # a candidate that does not build is an answer too
            first = str(exc).splitlines()[0]
            outcomes.append(Outcome(candidate, why_not=f"the build failed: {first}"))
            continue
        try:
            outcomes.append(Outcome(candidate, measured.measured(build, candidate.job,
                                                                 setting=setting)))  # fmt: skip
        except qemu.Unsupported as exc:
            outcomes.append(Outcome(candidate, why_not=str(exc), unsupported=True))
        except UserError as exc:
            if "did not finish within" in str(exc):
                raise
            outcomes.append(Outcome(candidate, why_not=str(exc)))
    return outcomes


@dataclass(frozen=True)
class Verdict:
    fits: bool
    ram_margin: int  # budget - need (negative: over)
    flash_margin: int


def verdict(outcome: Outcome, budget: Budget, role: str) -> Verdict | None:
    if outcome.measured is None:
        return None
    ram = outcome.ram(role)["total"]
    flash = outcome.flash(role)["total"]
    return Verdict(ram <= budget.ram and flash <= budget.flash, budget.ram - ram,
                   budget.flash - flash)  # fmt: skip


# Handshake times closer than this are the same time (the cycle model's error on same-code
# figures, and a CPI range, span more).
SAME_TIME = 0.01


def pareto(outcomes: list[Outcome], role: str) -> list[Outcome]:
    """The measured candidates no other one beats on RAM, flash and handshake instructions
    at once (no worse in all three, better in one; counts within 1 % are the same time).
    Of candidates alike in all three, the one with the smallest record buffer stands for
    them."""
    points = [o for o in outcomes if o.measured is not None]

    def key(o: Outcome) -> tuple[int, int, float]:
        assert o.measured is not None
        return (o.ram(role)["total"], o.flash(role)["total"], _time(o, role))

    def no_worse(a: Outcome, b: Outcome) -> bool:
        (ra, fa, ia), (rb, fb, ib) = key(a), key(b)
        return ra <= rb and fa <= fb and ia <= ib * (1 + SAME_TIME)

    def better(a: Outcome, b: Outcome) -> bool:
        (ra, fa, ia), (rb, fb, ib) = key(a), key(b)
        return ra < rb or fa < fb or ia * (1 + SAME_TIME) < ib

    front: list[Outcome] = []
    # Alike candidates: the one with the smaller record buffer stands for them.
    for o in sorted(points, key=lambda o: (key(o)[:2], o.candidate.record, key(o)[2])):
        if any(no_worse(x, o) and better(x, o) for x in points):
            continue
        if any(no_worse(f, o) and no_worse(o, f) for f in front):
            continue  # alike in all three to one already on the front
        front.append(o)
    return front


def _time(o: Outcome, role: str) -> float:
    """What a candidate's handshake takes, to compare: the cycle model's cycles where the run
    was modelled, else its instructions (a CPI range scales them all alike)."""
    assert o.measured is not None
    model = o.measured.result[role].get("model")
    return float(model["estimate"]) if model else float(o.measured.instructions(role))


def smallest_fitting_record(outcomes: list[Outcome], budget: Budget,
                            role: str) -> dict[tuple[str, str], int | None]:  # fmt: skip
    """Per library line and configuration: the smallest record buffer whose handshake
    worked and which fits the budget (None: none fits)."""
    smallest: dict[tuple[str, str], int | None] = {}
    for o in outcomes:
        key = (o.candidate.line, o.candidate.configuration)
        smallest.setdefault(key, None)
        v = verdict(o, budget, role)
        if v is not None and v.fits:
            current = smallest[key]
            if current is None or o.candidate.record < current:
                smallest[key] = o.candidate.record
    return smallest


def kib(value: int) -> str:
    return f"{value / KIB:.1f}"


def rows(outcomes: list[Outcome], budget: Budget, role: str) -> list[dict[str, Any]]:
    """One row per candidate, as printed and as --json gives it."""
    out = []
    for o in outcomes:
        c = o.candidate
        row: dict[str, Any] = {"variant": c.spec, "library": c.line,
                               "configuration": c.configuration, "record": c.record}  # fmt: skip
        v = verdict(o, budget, role)
        if o.measured is None or v is None:
            row.update({"status": "unsupported" if o.unsupported else "failed",
                        "why": o.why_not})  # fmt: skip
        else:
            low, high = o.measured.ms(role, budget.mhz)
            row.update({
                "status": "ok", "ram": o.ram(role), "flash": o.flash(role),
                "instructions": o.measured.instructions(role), "ms": [low, high],
                "fits": v.fits, "ram_margin": v.ram_margin, "flash_margin": v.flash_margin,
            })  # fmt: skip
            model = o.measured.result[role].get("model")
            if model is not None:
                row["cycles"] = model["estimate"]
                row["model_error"] = _error(budget)
        out.append(row)
    return out


def table(
    outcomes: list[Outcome], budget: Budget, role: str, job: firmware.Job, notes: list[str]
) -> str:
    """The answer as a user reads it: the budget and job, one line per candidate, the
    smallest record buffer that fits per configuration, and the Pareto front."""
    if budget.setting is not None:
        lines = [
            f"Budget: {budget.describe()} ({role}; ms = the cycle model's cycles / "
            f"{budget.mhz:g} MHz)",
            f"Time: {qemu.describe_projection(budget.core, setting=budget.setting)}",
        ]
    else:
        (low, high), calibration = budget.core.cpi_range()
        lines = [
            f"Budget: {budget.describe()} ({role}; ms = instructions x CPI {low:g}..{high:g} / "
            f"{budget.mhz:g} MHz)",
            f"CPI: {calibration}",
        ]
    # The model's measured error beside every time; no column where the time is a CPI range.
    error = f" {_error(budget):>13}" if budget.setting is not None else ""
    lines += [
        f"Job: {job.describe().replace(', records 16384', '')}, {role} side",
        "",
        f"{'library':<15} {'configuration':<14} {'records':>7} {'RAM KiB':>8} "
        f"{'(heap+stack+data+bss)':<24} {'flash KiB':>9} {'ms':>15}"
        + (f" {'model error':>13}" if error else "")
        + "  fits",
    ]
    for row in rows(outcomes, budget, role):
        head = f"{row['library']:<15} {row['configuration']:<14} {row['record']:>7}"
        if row["status"] != "ok":
            lines.append(f"{head} {row['status']}: {_short(row['why'])}")
            continue
        ram, flash = row["ram"], row["flash"]
        parts = "+".join(kib(ram[k]) for k in ("heap", "stack", "data", "bss"))
        fits = (
            f"yes (margin {kib(row['ram_margin'])} KiB RAM, {kib(row['flash_margin'])} KiB flash)"
            if row["fits"]
            else "no: " + _over(row)
        )
        lines.append(f"{head} {kib(ram['total']):>8} {parts:<24} {kib(flash['total']):>9} "
                     f"{fmt_ms(row['ms']):>15}{error}  {fits}")  # fmt: skip
    lines.append("")
    smallest = smallest_fitting_record(outcomes, budget, role)
    lines.append("Smallest record buffer that fits:")
    for (line, configuration), record in smallest.items():
        lines.append(f"  {line} {configuration}: "
                     + (f"{record} bytes" if record else "none fits"))  # fmt: skip
    lines += [f"  {note}" for note in notes]
    front = pareto(outcomes, role)
    lines.append("")
    lines.append("Pareto front (no other candidate needs less RAM, flash and time at once):")
    for o in front:
        assert o.measured is not None
        v = verdict(o, budget, role)
        lines.append(
            f"  {o.candidate.line} {o.candidate.configuration} records {o.candidate.record}: "
            f"RAM {kib(o.ram(role)['total'])} KiB, flash {kib(o.flash(role)['total'])} KiB, "
            f"{fmt_ms(list(o.measured.ms(role, budget.mhz)))} ms"
            + (" (fits)" if v and v.fits else "")
        )
    if not any((verdict(o, budget, role) or Verdict(False, 0, 0)).fits for o in outcomes):
        lines += ["", nothing_fits(outcomes, budget, role)]
    return "\n".join(lines)


def fmt_ms(pair: list[float]) -> str:
    """One figure where the model gives one, else low-high (a CPI range, or the model with
    operand-dependent instructions)."""
    low, high = (f"{v:,.0f}" for v in pair)
    return low if low == high else f"{low}-{high}"


def _error(budget: Budget) -> str:
    """The model's measured error on same-code board figures of the budget's core, short:
    "+2..+3 %" ("uncalibrated" where the projection is a CPI range, "not measured" where no
    same-code figure of the core exists)."""
    if budget.setting is None:
        return "CPI range"
    error = cycles.model_error(budget.core.arch)
    if not error["points"]:
        return "not measured"
    return f"{100 * error['low']:+.0f}..{100 * error['high']:+.0f} %"


def nothing_fits(outcomes: list[Outcome], budget: Budget, role: str) -> str:
    """Why no candidate fits, from the measured figures: the one that comes closest, and
    by how much it is over."""
    measured = [o for o in outcomes if o.measured is not None]
    if not measured:
        return "Nothing fits: no candidate could run the job (see the reasons above)."

    def over(o: Outcome) -> tuple[int, int]:
        return (max(0, o.ram(role)["total"] - budget.ram),
                max(0, o.flash(role)["total"] - budget.flash))  # fmt: skip

    closest = min(measured, key=lambda o: sum(over(o)))
    ram_over, flash_over = over(closest)
    ram = closest.ram(role)
    what = []
    if ram_over:
        what.append(
            f"RAM {kib(ram['total'])} KiB (heap {kib(ram['heap'])} + stack "
            f"{kib(ram['stack'])} + data {kib(ram['data'])} + bss {kib(ram['bss'])}), "
            f"{kib(ram_over)} KiB over the {kib(budget.ram)} KiB budget"
        )
    if flash_over:
        what.append(f"flash {kib(closest.flash(role)['total'])} KiB, {kib(flash_over)} KiB over "
                    f"the {kib(budget.flash)} KiB budget")  # fmt: skip
    c = closest.candidate
    ram_part = next((k for k in PART_SIZES if k * KIB >= ram["total"]), None)
    flash_part = next((k for k in PART_SIZES if k * KIB >= closest.flash(role)["total"]), None)
    smallest = (f" The smallest part it fits has {ram_part} KiB of RAM and {flash_part} KiB of "
                "flash." if ram_part and flash_part else "")  # fmt: skip
    return (f"Nothing fits. The closest is {c.line} {c.configuration} with {c.record}-byte "
            f"records: " + "; ".join(what) + "." + smallest)  # fmt: skip


def _over(row: dict[str, Any]) -> str:
    parts = []
    if row["ram_margin"] < 0:
        parts.append(f"RAM over by {kib(-row['ram_margin'])} KiB")
    if row["flash_margin"] < 0:
        parts.append(f"flash over by {kib(-row['flash_margin'])} KiB")
    return ", ".join(parts)


def _short(text: str, limit: int = 90) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


def plot(outcomes: list[Outcome], budget: Budget, role: str, path: Path) -> Path:
    """Writes chart() as a PNG."""
    from tlsbench.reportkit.plots import png_bytes

    fig = chart(outcomes, budget, role)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(png_bytes(fig))
    return path


def chart(outcomes: list[Outcome], budget: Budget, role: str) -> Figure:
    """RAM against flash per measured candidate (marker size: handshake time), the budget as
    a box, the Pareto front ringed."""
    from matplotlib.figure import Figure

    from tlsbench.reportkit.plots import legend

    measured = [o for o in outcomes if o.measured is not None]
    front = {id(o) for o in pareto(outcomes, role)}
    fig = Figure(figsize=(9.0, 6.0), layout="constrained")
    ax = fig.subplots()
    lines = list(dict.fromkeys(o.candidate.line for o in measured))
    colours = {line: line_colour(line) for line in lines}  # as in every report's plots
    slowest = max((_time(o, role) for o in measured if o.measured), default=1.0)
    labels: dict[tuple[str, str, float, float], list[int]] = {}
    for o in measured:
        assert o.measured is not None
        x, y = o.ram(role)["total"] / KIB, o.flash(role)["total"] / KIB
        size = 30 + 300 * _time(o, role) / slowest
        ax.scatter([x], [y], s=size, color=colours.get(o.candidate.line, "grey"), alpha=0.6,
                   edgecolors="black" if id(o) in front else "none", linewidths=1.5)  # fmt: skip
        spot = (o.candidate.line, o.candidate.configuration, round(x, 1), round(y, 1))
        labels.setdefault(spot, []).append(o.candidate.record)
    # One label per spot: candidates alike in RAM and flash share it ("small 512-16384").
    for (_, configuration, x, y), records in labels.items():
        span = str(records[0]) if len(records) == 1 else f"{min(records)}-{max(records)}"
        ax.annotate(f"{configuration} {span}", (x, y), fontsize="x-small", xytext=(4, 4),
                    textcoords="offset points")  # fmt: skip
    ax.axvline(budget.ram / KIB, color="black", linestyle="--", linewidth=0.8)
    ax.axhline(budget.flash / KIB, color="black", linestyle="--", linewidth=0.8)
    for line in lines:
        ax.scatter([], [], color=colours[line], label=line)
    legend(fig, title="marker size: handshake time; ringed: Pareto front")
    ax.set_xlabel(f"RAM KiB ({role}: heap + stack + data + bss)")
    ax.set_ylabel("flash KiB (text + data + credentials)")
    ax.set_title(f"Does it fit? {budget.describe()} (dashed: the budget)", fontsize="small")
    ax.grid(alpha=0.3)
    return fig
