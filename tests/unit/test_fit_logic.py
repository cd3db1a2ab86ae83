"""`tlsbench fit`'s logic on figures chosen for the test (no build, no run): budgets read from
the command line, the Pareto front, the smallest record buffer that fits, what is closest
when nothing fits. tests/long/test_fit.py runs it on real builds."""

from __future__ import annotations

import pytest

from fit_outcomes import made_up
from tlsbench.builds import firmware
from tlsbench.core.errors import UserError
from tlsbench.embedded import fit


def test_parse_bytes() -> None:
    assert fit.parse_bytes("64K", "--ram") == 65536
    assert fit.parse_bytes("1M", "--flash") == 1048576
    assert fit.parse_bytes("256KiB", "--flash") == 262144
    assert fit.parse_bytes("20000", "--ram") == 20000
    for bad in ("", "K", "-1K", "0", "abc"):
        with pytest.raises(UserError):
            fit.parse_bytes(bad, "--ram")


def test_pareto_front_and_smallest_fitting_record() -> None:
    budget = fit.Budget(firmware.core_of("cortex-m4"), ram=30_000, flash=200_000, mhz=84.0)
    a512 = made_up("a-1", 512, heap=10_000, text=150_000, instructions=900)
    a1024 = made_up("a-1", 1024, heap=12_000, text=150_000, instructions=900)  # dominated
    a16k = made_up("a-1", 16384, heap=40_000, text=150_000, instructions=800)  # faster, too big
    b = made_up("b-1", 16384, heap=9_000, text=250_000, instructions=2000)  # least RAM
    outcomes = [a512, a1024, a16k, b]
    front = fit.pareto(outcomes, "client")
    assert a1024 not in front and {id(o) for o in front} == {id(a512), id(a16k), id(b)}
    assert fit.smallest_fitting_record(outcomes, budget, "client") == {
        ("a-1", "default"): 512, ("b-1", "default"): None}  # fmt: skip
    verdict = fit.verdict(a16k, budget, "client")
    assert verdict is not None and not verdict.fits
    assert verdict.ram_margin == 30_000 - (40_000 + 1000 + 100 + 200)
    text = fit.nothing_fits([a16k, b], budget, "client")
    # b is over on flash only (50 KiB), a16k on RAM only (11.1 KiB): the closest is a16k.
    assert "The closest is a-1 default with 16384-byte records: RAM 40.3 KiB" in text
    over = text.split("records:")[1].split(" The smallest part")[0]
    assert "flash" not in over
    # And the smallest part it fits: RAM and flash rounded up to the sizes parts come in.
    assert text.endswith("The smallest part it fits has 48 KiB of RAM and 192 KiB of flash.")
