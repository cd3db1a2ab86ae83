"""The cycle model (src/tlsbench/embedded/cycles_plugin.c) on instruction kernels whose cycles the
cores' manuals state, on every modelled core, and on the same-code board figures of p256-m.

The kernels (cycle_kernels.c beside this file) run each in two lengths; the difference of their
windows is a steady-state count, free of the call around them. Expected counts:
  - Cortex-M0 TRM (DDI 0432C) table 3-1: data processing 1, LDR 2, LDM 1 + N, B taken 3 (a
    SUBS/BNE loop turn 4, as measured on an STM32F072 and an LPC11C24: xpcc pull request 66);
  - Cortex-M0+ TRM (DDI 0484C) table 3-1: B taken 2;
  - Cortex-M3 TRM (DDI 0337) and Cortex-M4 TRM (100166) table 3-1 and "Load/store timings":
    a taken branch with an immediate 1 + 1 ("normally 1 cycle of pipeline reload"), LDR 2 and 1
    when pipelined, the four pipelining examples, LDM 1 + N, UMULL 3 to 5 and UMLAL 4 to 7 on
    the M3 (1 on the M4);
  - flash: RM0383 (STM32F411) section 3.4.2 and RM0091 (STM32F0) section 3.2.2: a fetch that
    neither the current line, the prefetched one nor the accelerator's cache holds waits the
    flash's wait states.
"""

from __future__ import annotations

import dataclasses
import subprocess
from pathlib import Path

import pytest

from tlsbench.builds import arches, firmware
from tlsbench.builds.firmware import FIRMWARE, core_of, linker_script
from tlsbench.embedded import cycles, parts, qemu, samecode

KERNELS = Path(__file__).with_name("cycle_kernels.c")
# The model's core -> the build whose code runs on it.
BUILDS = {"m0": "cortex-m0", "m0plus": "cortex-m0", "m3": "cortex-m3", "m4": "cortex-m4",
          "m33": "cortex-m33", "m7": "cortex-m7"}  # fmt: skip


@pytest.fixture(scope="module")
def images(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    folder = tmp_path_factory.mktemp("kernels")
    out = {}
    for arch in dict.fromkeys(BUILDS.values()):
        target = arches.arch(arch)
        script = folder / f"{arch}.ld"
        script.write_text(linker_script(core_of(arch)))
        image = folder / f"{arch}.elf"
        subprocess.run(
            [target.cc("cc"), *target.flags, "-O1", f"-I{FIRMWARE}", str(FIRMWARE / "startup.c"),
             str(FIRMWARE / "semihost.c"), str(KERNELS), "-T", str(script), "-nostartfiles",
             "-o", str(image)],
            check=True,
        )  # fmt: skip
        out[arch] = image
    return out


def zero_wait(model: str) -> parts.Setting:
    """A part of the model's core whose memory is all zero wait states."""
    part = next(p for p in parts.parts().values() if p.model == model)
    return parts.Setting(dataclasses.replace(part, prefetch=False, icache=(0, 0), dcache=(0, 0),
                                             muls_cycles=1), part.clock_mhz, 0)  # fmt: skip


def per_rep(images: dict[str, Path], model: str, setting: parts.Setting | None = None
            ) -> dict[str, tuple[float, float]]:  # fmt: skip
    """Per kernel, the steady-state cycles of one repetition (one turn for the loops), at the
    fewest and at the most (the operand-dependent instructions' range)."""
    arch = BUILDS[model]
    image = images[arch]
    text, _, windows = cycles.run(qemu.qemu_command(image, core_of(arch), []), image,
                                  setting or zero_wait(model), ("fw_window", None))  # fmt: skip
    result = cycles.last_json(text)
    names = result["kernels"]
    cycles.check_windows(windows, 2 * len(names), "kernels")
    out = {}
    for number, name in enumerate(names):
        short, long = windows[2 * number], windows[2 * number + 1]
        count = result["turns"] if name.startswith("loop") else result["reps"]
        low = (long.cycles - short.cycles) / count
        out[name] = (low, low + (long.span - short.span) / count)
    return out


@pytest.mark.parametrize("model", [m for m in BUILDS if m != "m7"])
def test_kernels_give_the_manuals_counts(images: dict[str, Path], model: str) -> None:
    got = per_rep(images, model)
    v6m = model in ("m0", "m0plus")
    branch = {"m0": 3, "m0plus": 2}.get(model, 2)  # a taken B / Bcc with an immediate
    assert got["loop_branch"] == (1 + branch, 1 + branch)
    assert got["loop_lines"] == (22 + 1 + branch, 22 + 1 + branch)
    assert got["alu_pair"] == (2, 2)  # one instruction a cycle
    assert got["chain"] == (2, 2)  # a dependent LDR is never pipelined
    assert got["ldm8"] == (9, 9)  # 1 + N
    if v6m:
        return
    # TRM examples, each group closed by a one-cycle MOVS
    assert got["trm_ldr_ldr"] == (3 + 1, 3 + 1)
    assert got["trm_ldr_str_imm"] == (3 + 1, 3 + 1)
    assert got["trm_ldr_str_reg"] == (3 + 1, 3 + 1)
    assert got["trm_ldr3"] == (4 + 1, 4 + 1)
    if model == "m3":
        # QEMU 7.2's plugins read no registers: the range the TRM gives, whatever the operands
        assert got["umull_short"] == (3, 5) and got["umull_long"] == (3, 5)
        assert got["umlal_long"] == (4, 7)
    else:
        assert got["umull_short"] == got["umull_long"] == got["umlal_long"] == (1, 1)


def test_m7_kernels_follow_llvms_model(images: dict[str, Path]) -> None:
    """Arm gives no cycle table for the Cortex-M7: the kernels check the model's rules, which are
    LLVM's ARMScheduleM7.td (IssueWidth 2, two ALUs, LoadLatency 2, one MAC with the
    accumulator read late, predicted branches free once learnt)."""
    got = per_rep(images, "m7")
    assert got["loop_branch"] == (2, 2)  # SUBS, then BNE on its flags the next cycle
    assert got["loop_lines"] == (23, 23)  # 22 dependent ADDS; SUBS pairs with the last
    assert got["alu_pair"] == (1, 1)  # dual issue
    assert got["chain"] == (2, 2)  # LoadLatency 2
    assert got["ldm8"] == (5, 5)  # single issue, two registers a cycle (the model's reading)
    assert got["umull_long"] == (1, 1) and got["umlal_long"] == (1, 1)


def flash_setting(name: str, **changes: object) -> parts.Setting:
    setting = parts.setting(name)
    assert setting is not None
    return dataclasses.replace(setting, part=dataclasses.replace(setting.part, **changes))


def test_a_loop_from_flash_with_and_without_the_accelerator(images: dict[str, Path]) -> None:
    # STM32F411 at 100 MHz, 3 wait states, 16-byte lines; a loop turn of three lines (25 cycles
    # at zero wait states): the ART's cache holds them all; the prefetch hides the sequential
    # lines but not the branch back; without either every line waits 3 cycles.
    f411 = "STM32F411"
    assert per_rep(images, "m4", flash_setting(f411))["loop_lines"][0] == 25
    no_cache = flash_setting(f411, icache=(0, 0), dcache=(0, 0))
    assert per_rep(images, "m4", no_cache)["loop_lines"][0] == 25 + 3
    bare = flash_setting(f411, icache=(0, 0), dcache=(0, 0), prefetch=False)
    assert per_rep(images, "m4", bare)["loop_lines"][0] == 25 + 3 * 3
    # STM32F091 at 48 MHz, 1 wait state, 4-byte lines (12 per turn), its prefetch buffer only
    f091 = "STM32F091"
    assert per_rep(images, "m0", flash_setting(f091))["loop_lines"][0] == 26 + 1
    bare = flash_setting(f091, prefetch=False)
    assert per_rep(images, "m0", bare)["loop_lines"][0] == 26 + 12


def test_p256m_within_a_quarter_of_the_boards() -> None:
    rows = samecode.check(codes=("board",))
    parts_seen = {r["part"] for r in rows}
    assert parts_seen == {"STM32F091", "STM32F411"}
    assert len(rows) == 8
    for row in rows:
        assert abs(row["error"]) <= 0.25, row
        assert row["undecoded"] == 0


def test_a_handshake_and_the_operations_under_the_model(build_of) -> None:
    """The model counts over the image's measured calls (its windows' instructions are the
    image's own count, checked in qemu), the same in every run, and its cycles per side and per
    operation are what the milliseconds are."""
    build = build_of("wolfssl-5.7.2:cortex-m4")
    image = qemu.image_of(build)
    setting = parts.setting("STM32F411")
    assert setting is not None
    job = firmware.make_job("TLS-AES-128-GCM-SHA256", tls="1.3", kx="psk")
    first = qemu.run(image, job, core=core_of("cortex-m4"), setting=setting)
    second = qemu.run(image, job, core=core_of("cortex-m4"), setting=setting)
    assert first["projection"]["kind"] == "model" and first["projection"]["part"] == "STM32F411"
    for side in firmware.SIDES:
        model = first[side]["model"]
        assert model == second[side]["model"]
        assert model["undecoded"] == 0
        assert model["instructions"] <= model["cycles"] < 3 * model["instructions"]
        assert first[side]["projected_ms"][0] == model["cycles"] / 100_000
    ops = qemu.run_ops(image, core_of("cortex-m4"), setting=setting)
    for op in ops["ops"]:
        if "unsupported" in op:  # ML-DSA's, on a build without it: no window, no figure
            assert op["name"] in firmware.ML_DSA_OPERATIONS and "model" not in op, op
            continue
        assert op["model"]["cycles"] >= op["instructions"] > 0, op
        assert op["projected_ms"][0] == pytest.approx(op["model"]["cycles"] / 100_000)
