"""Running a firmware image under QEMU: the command, one run's parsed and checked output,
repeated runs that must agree to the instruction, and the projection of instructions to
milliseconds at a reference part's clock (src/tlsbench/builds/firmware.py builds the images).
"""

from __future__ import annotations

import json
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tlsbench.builds import arches
from tlsbench.builds.firmware import (
    ADAPTERS,
    CORES,
    IMAGE,
    OPERATION_BATCH,
    OPERATION_KINDS,
    OPERATIONS,
    ROLE_IMAGES,
    SIDES,
    SUITES,
    TIMEOUT_SECONDS,
    Core,
    Job,
    core_of,
)
from tlsbench.core.errors import UserError
from tlsbench.embedded import cycles
from tlsbench.embedded.parts import Setting

# ---------------------------------------------------------------------------- sizes


@dataclass(frozen=True)
class Sizes:
    """Bytes of a one-role image, per section: text (code and constants, the vector table
    included), data (initialised variables: flashed, and copied to RAM), bss (zeroed
    variables), certs (every credential the image carries: counted per job instead)."""

    text: int
    data: int
    bss: int
    certs: int

    @property
    def flash(self) -> int:
        return self.text + self.data

    @property
    def static_ram(self) -> int:
        return self.data + self.bss


def role_sizes(build: Any, role: str) -> Sizes:
    image = Path(build.program(ROLE_IMAGES[role]))
    size = arches.arch(build.variant.arch).tool("size", "size")
    done = subprocess.run([size, "-A", str(image)], capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise UserError(f"{size} -A {image} failed: {done.stderr}", exit_code=1)
    sections: dict[str, int] = {}
    for line in done.stdout.splitlines():
        fields = line.split()
        if len(fields) == 3 and fields[1].isdigit():
            sections[fields[0]] = int(fields[1])
    family = core_of(build.variant.arch).family
    # Thread-local variables (picolibc's errno) are initialised and zeroed data as others are.
    return Sizes(
        text=sum(sections.get(name, 0) for name in family.text_sections),
        data=sections.get(".data", 0) + sections.get(".tdata", 0),
        bss=sections.get(".bss", 0) + sections.get(".tbss", 0),
        certs=sections.get(".certs", 0),
    )  # fmt: skip


# ---------------------------------------------------------------------------- running


def qemu_command(image: Path, core: Core, job: Job | list[str]) -> list[str]:
    """QEMU's command for a run of the image: a job, or the image's own arguments."""
    args = job if isinstance(job, list) else job.args()
    semihosting = ",".join(["enable=on", "target=native",
                            *(f"arg={a}" for a in ["firmware", *args])])  # fmt: skip
    return [
        *core.family.qemu, "-M", core.machine, "-display", "none", "-monitor", "none",
        "-serial", "none", "-nodefaults", "-nic", "none",
        # One instruction = one virtual nanosecond; no sleeping or aligning to the host.
        "-icount", "shift=0,align=off,sleep=off",
        "-semihosting-config", semihosting, "-kernel", str(image),
    ]  # fmt: skip


class Unsupported(UserError):
    """The build lacks what the job needs (a suite, TLS 1.3, PSK): the point's status is
    `unsupported`, with the library's reason."""

    def __init__(self, message: str) -> None:
        super().__init__(message, exit_code=3)


def run(
    image: Path,
    job: Job | str,
    group: str | None = None,
    timeout: float = TIMEOUT_SECONDS,
    core: Core | None = None,
    setting: Setting | None = None,
) -> dict[str, Any]:
    """Runs the image once (killing QEMU after `timeout` seconds), checks what was
    negotiated against the job, and returns its figures. A suite name in place of a job is
    a TLS 1.2 certificate job with that suite, passed to the image unchecked (and `group`
    the client's only group); the core is the one the image was built for by default. With a
    `setting` (a part at a clock) the run is under the cycle model, whose cycles per side are
    the projection; without one the projection is the core's CPI range."""
    if isinstance(job, str):
        job = _suite_job(job, group)
    core = core or _core_of_image(image)
    if setting is None:
        result, windows = _run_image(image, core, job.args(), timeout, job.describe()), None
    else:
        result, windows = _run_modelled(image, core, job.args(), timeout, job.describe(), setting)
    check_negotiated(result, job)
    return with_projection(result, core, setting, windows)


def _run_image(image: Path, core: Core, args: list[str], timeout: float, what: str
               ) -> dict[str, Any]:  # fmt: skip
    """One run of the image with its arguments: the JSON line it printed, or Unsupported or
    UserError with the image's reason (`what` names the job in the message)."""
    command = qemu_command(image, core, args)
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=timeout, check=False)
    except subprocess.TimeoutExpired:
        raise UserError(
            f"the firmware image did not finish within {timeout:.0f} s (QEMU was stopped)",
            exit_code=1,
        ) from None
    # Semihosting output reaches QEMU's stderr or stdout depending on its version.
    return _image_result(done.stdout + done.stderr, done.returncode, what)


def _run_modelled(image: Path, core: Core, args: list[str], timeout: float, what: str,
                  setting: Setting) -> tuple[dict[str, Any], list[cycles.Tally]]:  # fmt: skip
    """One run of the image under the cycle model: its JSON line and the model's windows."""
    text, returncode, windows = cycles.run(qemu_command(image, core, args), image, setting,
                                           timeout=timeout)  # fmt: skip
    return _image_result(text, returncode, what), windows


def _image_result(output: str, returncode: int, what: str) -> dict[str, Any]:
    lines = [line for line in output.splitlines() if line.startswith("{")]
    try:
        result = dict(json.loads(lines[-1]))
    except (IndexError, json.JSONDecodeError):
        raise UserError(
            f"the firmware image printed no JSON (exit status {returncode}):\n{output[-2000:]}",
            exit_code=1,
        ) from None
    if result.get("unsupported"):
        raise Unsupported(f"{what}: {result['error']}")
    if "error" in result or returncode != 0:
        raise UserError(f"the firmware image failed: {result.get('error', result)}", exit_code=1)
    return result


def _suite_job(suite: str, group: str | None) -> Job:
    known = SUITES.get(suite.replace("_", "-"))
    kx = known.kx if known and known.kx else "ecdhe"
    no_group = kx in ("rsa", "psk")
    return Job(suite.replace("_", "-"), "1.2", kx, None if no_group else group,
               known.cert if known and known.cert else "rsa2048")  # fmt: skip


def _core_of_image(image: Path) -> Core:
    """The core an image was built for, as its build recorded it (probe.json)."""
    try:
        recorded = json.loads((image.parent.parent / "probe.json").read_text())
        return core_of(str(recorded["core"]))
    except (OSError, ValueError, KeyError) as exc:
        raise UserError(f"{image}: no record of the core it was built for ({exc})") from None


def check_negotiated(result: dict[str, Any], job: Job) -> None:
    """What both libraries read back, and what the server's plaintext said on the wire,
    must be what the job asked: a mismatch is an error, never a sample."""
    version = {"1.2": "TLSv1.2", "1.3": "TLSv1.3"}[job.tls]
    wire = result["wire"]

    def refuse(what: str) -> None:
        raise UserError(f"{job.describe()}: {what}", exit_code=1)

    for side in SIDES:
        if result[side]["version"] != version:
            refuse(f"the {side} negotiated {result[side]['version']}")
        if result[side]["suite"] != job.suite:
            refuse(f"the {side} negotiated {result[side]['suite']}")
    if wire["version"] != {"1.2": 0x0303, "1.3": 0x0304}[job.tls]:
        refuse(f"the ServerHello says version 0x{wire['version']:04x}")
    if wire["suite"] != SUITES[job.suite].code:
        refuse(f"the ServerHello says suite 0x{wire['suite']:04x}")
    if wire["hello_retry"]:
        refuse("the server answered with a HelloRetryRequest (an extra round trip)")
    if job.tls == "1.3" and wire["psk"] != job.psk:
        refuse("the server " + ("did not take" if job.psk else "took") + " a pre-shared key")
    exchanges_keys = job.kx in ("ecdhe", "psk_dhe")
    if exchanges_keys and wire["group"] in ("none", "unknown"):
        refuse(f"no (EC)DHE group on the wire ({wire['group']})")
    if not exchanges_keys and wire["group"] != "none":
        refuse(f"a {job.kx} key exchange, but the wire has group {wire['group']}")
    if job.group and exchanges_keys and wire["group"] != job.group:
        refuse(f"asked for group {job.group}, the server chose {wire['group']}")
    verified = result["client"]["verified"]
    if not job.psk and verified != 1:
        refuse("the client did not verify the server's chain")
    if job.record < 16384 and result["client"]["record"] > job.record:
        refuse(f"max_fragment_length {job.record} asked, the client sends up to "
               f"{result['client']['record']} bytes")  # fmt: skip


def with_projection(result: dict[str, Any], core: Core, setting: Setting | None = None,
                    windows: list[cycles.Tally] | None = None) -> dict[str, Any]:  # fmt: skip
    """Adds instructions per side (from timer ticks and the image's own calibration) and
    their projection to milliseconds: the cycle model's cycles at the part's clock where the run
    was modelled (`windows`: the image's measured calls), else the core's CPI range at its
    reference part's clock (a range)."""
    per_kticks = int(result["instructions_per_1000_ticks"])
    if per_kticks <= 0:
        raise UserError("the image's timer calibration failed", exit_code=1)
    for side in (*SIDES, "global"):
        figures = result[side]
        for phase in ("handshake", "setup"):
            ticks = figures[f"{phase}_timer_ticks"]
            figures[f"{phase}_instructions"] = ticks * per_kticks // 1000
        figures["projected_ms"] = list(core.ms(figures["handshake_instructions"]))
    result["core"] = core.arch
    result["machine"] = core.machine
    result["projection"] = projection(core)
    if setting is not None and windows is not None:
        _add_model(result, core, setting, windows, per_kticks)
    return result


def _add_model(result: dict[str, Any], core: Core, setting: Setting,
               windows: list[cycles.Tally], per_kticks: int) -> None:  # fmt: skip
    """Per side the cycle model's cycles of its handshake calls and their milliseconds (the
    fewest and the most, where operand-dependent instructions leave a range), checked against
    the instructions the image counted: the windows must hold the same calls."""
    calls = {side: int(result[side]["handshake_calls"]) for side in SIDES}
    sums = cycles.handshake_windows(windows, cycles.call_order(calls))
    per_tick = per_kticks / 1000
    for side in SIDES:
        figures, tally = result[side], sums[side]
        # The timer brackets each call a few instructions wider than the window (firmware.h's
        # MEASURED): within a tick of rounding and one of bracketing per call.
        apart = figures["handshake_instructions"] - tally.instructions
        if abs(apart) > 2 * per_tick * max(1, calls[side]):
            raise UserError(f"{side}: the cycle model's windows hold {tally.instructions} "
                            f"instructions, the image counted {figures['handshake_instructions']}",
                            exit_code=1)  # fmt: skip
        figures["model"] = tally.as_dict()
        figures["projected_ms"] = model_ms(tally, setting)
    for side, key in (("client", "client_setup"), ("server", "server_setup")):
        result[side]["model_setup"] = sums[key].as_dict()
    result["global"]["model"] = sums["global"].as_dict()
    result["global"]["projected_ms"] = model_ms(sums["global"], setting)
    result["projection"] = model_projection(core, setting)


def model_ms(tally: cycles.Tally, setting: Setting) -> list[float]:
    """The model's milliseconds, the operand-dependent instructions at their fewest cycles and
    at their most (equal where the core has none)."""
    per_ms = setting.mhz * 1000.0
    return [tally.cycles / per_ms, (tally.cycles + tally.span) / per_ms]


def model_projection(core: Core, setting: Setting) -> dict[str, Any]:
    """What a modelled figure rests on: the part, clock and wait states, the model, and the
    model's measured error on same-code board figures."""
    return {"kind": "model", "part": setting.part.name, "listed": setting.listed,
            "clock_mhz": setting.mhz, "wait_states": setting.wait_states,
            "model": cycles.describe(core, setting),
            "error": cycles.model_error(core.arch)}  # fmt: skip


def projection(core: Core, kind: str | None = None) -> dict[str, Any]:
    """What a projected figure rests on: the part and clock, the CPI range used and its
    calibration's name, and the manual's range beside it."""
    cpi, calibration = core.cpi_range(kind)
    return {"kind": "cpi", "part": core.part.name, "clock_mhz": core.part.mhz, "cpi": list(cpi),
            "calibration": calibration, "manual_cpi": list(core.cpi)}  # fmt: skip


def describe_projection(core: Core, kind: str | None = None,
                        setting: Setting | None = None) -> str:  # fmt: skip
    if setting is not None:
        return f"{cycles.describe(core, setting)}; {cycles.model_error(core.arch)['label']}"
    (low, high), calibration = core.cpi_range(kind)
    return (f"instructions x CPI {low:g}..{high:g} / {core.part.mhz:g} MHz "
            f"({core.part.name}); {calibration}")  # fmt: skip


def measure(image: Path, core: Core, job: Job, runs: int, setting: Setting | None = None
            ) -> dict[str, Any]:  # fmt: skip
    """`runs` runs of one job, and one more under the cycle model where a `setting` is given
    (first in the result: its figures are the projection); the counts and figures must agree
    to the instruction."""
    results = []
    for _ in range(runs):
        started = time.monotonic()
        results.append(run(image, job, core=core))
        plain = time.monotonic() - started
    if setting is not None:  # the model's run, bounded by the plain run's time
        results.insert(0, run(image, job, core=core, setting=setting,
                              timeout=cycles.model_timeout(plain)))  # fmt: skip
    first = results[0]
    for other in results[1:]:
        for side in (*SIDES, "global"):
            if _counted(other[side]) != _counted(first[side]):
                raise UserError(
                    f"{job.describe()}: two runs of the image differ ({side}: "
                    f"{first[side]} vs {other[side]}); the count is not deterministic",
                    exit_code=1,
                )
    first["runs"] = runs
    return first


def _counted(figures: dict[str, Any]) -> dict[str, Any]:
    """A side's figures the image counts itself (not the projection)."""
    return {k: v for k, v in figures.items()
            if k not in ("projected_ms", "model", "model_setup")}  # fmt: skip


def check_variant(variant: Any) -> None:
    """Refuses, before anything is built, a variant that yields no firmware image."""
    if not arches.arch(variant.arch).firmware:
        raise UserError(
            f"{variant.name} is no firmware variant: add a Cortex-M feature or the RISC-V "
            f"one ({variant.line.name}:cortex-m4; cores: {', '.join(CORES)})"
        )
    if variant.library not in ADAPTERS:
        raise UserError(
            f"firmware images exist for {', '.join(sorted(ADAPTERS))}, not {variant.library}"
        )


def image_of(build: Any) -> Path:
    """The firmware image of a built firmware variant."""
    check_variant(build.variant)
    return Path(build.program(IMAGE))


# ---------------------------------------------------------------------------- operations


def run_ops(image: Path, core: Core | None = None, batch: int = OPERATION_BATCH,
            timeout: float = TIMEOUT_SECONDS, setting: Setting | None = None
            ) -> dict[str, Any]:  # fmt: skip
    """Runs the image's per-operation benchmarks once (`mode=ops`): per operation of
    OPERATIONS, the instructions of one call (a batch of `batch` calls, less a batch of an
    empty call timed the same way, divided by `batch`), its heap peak, allocations and stack
    high-water, and its projection to milliseconds (the cycle model's cycles of one call,
    likewise, with a `setting`); an operation the build lacks is `unsupported` with the
    image's reason."""
    core = core or _core_of_image(image)
    args = ["mode=ops", f"batch={batch}"]
    what = "per-operation benchmarks"
    windows: list[cycles.Tally] | None = None
    if setting is None:
        result = _run_image(image, core, args, timeout, what)
    else:
        result, windows = _run_modelled(image, core, args, timeout, what, setting)
    per_kticks = int(result["instructions_per_1000_ticks"])
    if per_kticks <= 0:
        raise UserError("the image's timer calibration failed", exit_code=1)
    loop = int(result["loop"]["ticks"])
    names = [op["name"] for op in result["ops"]]
    if names != list(OPERATIONS):
        raise UserError(f"the image's operations {names} are not {list(OPERATIONS)}", exit_code=1)
    measured_ops = [op for op in result["ops"] if "unsupported" not in op]
    op_windows: dict[str, cycles.Tally] = {}
    loop_window = cycles.ZERO
    if windows is not None:
        # The global set-up, the empty batch, then each operation's batch.
        cycles.check_windows(windows, 2 + len(measured_ops), "per-operation benchmarks")
        loop_window = windows[1]
        op_windows = {op["name"]: w for op, w in zip(measured_ops, windows[2:], strict=True)}
    ops = []
    for op in result["ops"]:
        spec = OPERATIONS[op["name"]]
        row: dict[str, Any] = {"name": spec.name, "label": spec.label, "kind": spec.kind,
                               "per": spec.per}  # fmt: skip
        if "unsupported" in op:
            row["unsupported"] = op["unsupported"]
        else:
            ticks = int(op["ticks"]) - loop
            row["instructions"] = round(ticks * per_kticks / 1000 / result["batch"])
            row["heap_peak"] = int(op["heap_peak"])
            row["allocations"] = int(op["allocations"]) / result["batch"]
            row["stack_high_water"] = int(op["stack_high_water"])
            row["projected_ms"] = list(core.ms(row["instructions"], kind=spec.kind))
            if setting is not None and spec.name in op_windows:
                w = op_windows[spec.name]
                n = result["batch"]
                one = {"cycles": (w.cycles - loop_window.cycles) / n,
                       "span": (w.span - loop_window.span) / n,
                       "fetch_stall": (w.fetch_stall - loop_window.fetch_stall) / n,
                       "data_wait": (w.data_wait - loop_window.data_wait) / n,
                       "instructions": (w.instructions - loop_window.instructions) / n}  # fmt: skip
                one["estimate"] = one["cycles"] + one["span"] / 2
                row["model"] = one
                per_ms = setting.mhz * 1000.0
                row["projected_ms"] = [one["cycles"] / per_ms,
                                       (one["cycles"] + one["span"]) / per_ms]  # fmt: skip
        ops.append(row)
    kinds = {kind: projection(core, kind) for kind in OPERATION_KINDS}
    if setting is not None:
        kinds = {kind: model_projection(core, setting) for kind in OPERATION_KINDS}
    return {
        "library": result["library"], "library_version": result["library_version"],
        "core": core.arch, "machine": core.machine, "batch": result["batch"],
        "instructions_per_1000_ticks": per_kticks,
        # A count is exact to the timer's tick divided by the batch.
        "resolution_instructions": per_kticks / 1000 / result["batch"],
        "loop_instructions": loop * per_kticks // 1000, "ops": ops,
        "projection": kinds,
    }  # fmt: skip


def measure_ops(image: Path, core: Core, runs: int, batch: int = OPERATION_BATCH,
                setting: Setting | None = None) -> dict[str, Any]:  # fmt: skip
    """`runs` runs of the per-operation benchmarks, and one more under the cycle model where a
    `setting` is given (first in the result); every count must agree."""
    results = []
    for _ in range(runs):
        started = time.monotonic()
        results.append(run_ops(image, core, batch))
        plain = time.monotonic() - started
    if setting is not None:  # the model's run, bounded by the plain run's time
        results.insert(0, run_ops(image, core, batch, setting=setting,
                                  timeout=cycles.model_timeout(plain)))  # fmt: skip
    counted = [[{k: v for k, v in op.items() if k not in ("projected_ms", "model")}
                for op in r["ops"]] for r in results]  # fmt: skip
    for other in counted[1:]:
        if other != counted[0]:
            raise UserError("two runs of the per-operation benchmarks differ; the count is not "
                            "deterministic", exit_code=1)  # fmt: skip
    results[0]["runs"] = runs
    return results[0]
