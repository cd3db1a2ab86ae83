"""The parts table of the cycle model (src/tlsbench/embedded/parts.toml): every value with its
document, a part at a clock, and bad input refused before anything is built (exit 2, the known
parts listed)."""

from __future__ import annotations

import pytest

from drivers import tlsbench
from tlsbench.builds import firmware
from tlsbench.core.errors import UserError
from tlsbench.embedded import cycles, parts

# The values a part's time depends on: each must name its document and section.
SOURCED = ("clock_mhz", "max_mhz", "flash_line", "wait_states", "prefetch", "code")


def test_every_part_names_the_document_of_each_value() -> None:
    table = parts.parts()
    assert {"STM32F091", "STM32F411"} <= set(table)
    # The parts a user meets (the list): every family is there.
    for family in ("STM32F0", "STM32F1", "STM32F4", "STM32F7", "STM32L4", "STM32G0", "STM32H5",
                   "STM32U5", "nRF52840", "nRF5340", "K64F", "RP2040", "RP2350", "LPC55S69",
                   "SAMD21"):  # fmt: skip
        assert any(p.name.startswith(family) or family.lower() in p.aliases
                   for p in table.values()), family  # fmt: skip
    for part in table.values():
        for key in SOURCED:
            assert part.sources.get(key), (part.name, key)
        assert part.core in firmware.CORES and part.core.startswith("cortex-m")
        needed = set(part.unverified) | {"max_wait_states"}
        needed |= {"icache"} if part.icache[0] else set()
        needed |= {"dcache"} if part.dcache[0] else set()
        needed |= {"muls_cycles"} if part.model in ("m0", "m0plus") else set()
        assert needed <= set(part.sources), (part.name, needed - set(part.sources))
        clocks = [mhz for mhz, _ in part.wait_states]
        states = [ws for _, ws in part.wait_states]
        assert clocks == sorted(clocks) and states == sorted(states), part.name
        assert clocks[-1] >= part.max_mhz and part.clock_mhz <= part.max_mhz, part.name
        assert part.max_wait_states >= states[-1], part.name


def test_a_part_at_its_clock_and_at_another() -> None:
    f411 = parts.setting("stm32f411re")
    assert f411 is not None and (f411.part.name, f411.mhz, f411.wait_states) == (
        "STM32F411",
        100,
        3,
    )
    slower = parts.setting("STM32F411", clock=60)
    assert slower is not None and slower.wait_states == 1
    slowed = parts.setting("STM32F411", clock=60, wait_states=2)  # more than needed: allowed
    assert slowed is not None and slowed.wait_states == 2
    default = parts.setting(None, core="cortex-m4")
    assert default is not None and default.part.name == parts.DEFAULT_PARTS["cortex-m4"]
    assert parts.setting(None, core="cortex-m55") is None  # no model: a CPI range
    assert parts.setting(None, core="rv32imc") is None
    assert parts.setting(None, core="rv32imc", clock=80) is None  # its CPI range at 80 MHz
    unlisted = parts.setting(None, core="cortex-m4", clock=120, wait_states=5)
    assert unlisted is not None and not unlisted.listed and "unlisted" in unlisted.describe()


@pytest.mark.parametrize(
    "args, message",
    [
        (("STM32F999",), "--part STM32F999: not a part tlsbench models; known parts: STM32F091"),
        (("STM32F411", None, 120), "--clock 120: STM32F411 runs at up to 100 MHz"),
        (
            ("STM32F411", None, 100, 2),
            "--wait-states 2: at 100 MHz the flash of STM32F411 needs at least 3",
        ),
        (
            ("STM32F091", None, None, 2),
            "--wait-states 2: STM32F091's flash latency register holds at most 1",
        ),
        (("STM32F411", "cortex-m0"), "--part STM32F411 has a Cortex-M4 core, not cortex-m0"),
        ((None, "cortex-m4", 120), "an unlisted cortex-m4 part: give --wait-states"),
        ((None, "cortex-m55", 100, 1), "cortex-m55 has no cycle model"),
        ((None, "rv32imc", None, 2), "rv32imc has no cycle model"),
        (("STM32F411", None, -5), "--clock -5: give the part's clock in MHz"),
    ],
)
def test_bad_parts_clocks_and_wait_states_are_refused(args: tuple, message: str) -> None:
    with pytest.raises(UserError) as caught:
        parts.setting(*args)
    assert message in str(caught.value)
    assert caught.value.exit_code == 2


@pytest.mark.parametrize(
    "argv, message",
    [
        (["cortex-m", "mbedtls-3.6.6:cortex-m4", "--part", "stm32f999"],
         "not a part tlsbench models; known parts: STM32F091"),
        (["cortex-m", "mbedtls-3.6.6:cortex-m4", "--part", "stm32f091"],
         "has a Cortex-M0 core, not cortex-m4"),
        (["fit", "--ram", "64K", "--flash", "256K", "--part", "stm32f411", "--clock", "200"],
         "STM32F411 runs at up to 100 MHz"),
        (["fit", "--ram", "64K", "--flash", "256K", "--part", "stm32f411", "--wait-states", "1"],
         "needs at least 3"),
        (["fit", "--ram", "64K", "--flash", "256K", "--core", "m0", "--part", "stm32f411"],
         "has a Cortex-M4 core, not cortex-m0"),
    ],
)  # fmt: skip
def test_the_commands_refuse_them_before_building(argv: list[str], message: str) -> None:
    proc = tlsbench(*argv, timeout=120)
    assert proc.returncode == 2, proc.stderr
    assert message in proc.stderr and "known parts" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_the_model_error_beside_every_figure_comes_from_the_saved_check() -> None:
    for core in ("cortex-m0", "cortex-m4"):
        error = cycles.model_error(core)
        assert error["points"] == 4 and abs(error["low"]) <= 0.25 and abs(error["high"]) <= 0.25
        assert "p256-m" in error["label"] and "none used to set the model" in error["label"]
    for core in ("cortex-m3", "cortex-m7", "cortex-m33"):
        assert cycles.model_error(core)["points"] == 0
        assert "not measured" in cycles.model_error(core)["label"]
