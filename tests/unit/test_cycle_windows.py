"""The cycle model's windows read back as sides and batches (pure logic: the plugin's output and
an image's result made up here; tests/long/test_cycle_model.py runs the real plugin)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tlsbench.builds import firmware
from tlsbench.core.errors import UserError
from tlsbench.embedded import cycles, parts, qemu


def tally(instructions: int, cycles_: int, span: int = 0) -> cycles.Tally:
    return cycles.Tally(instructions, cycles_, 0, 0, span, 0)


def test_the_plugins_output_reads_back(tmp_path: Path) -> None:
    out = tmp_path / "cycles.txt"
    out.write_text("windows 2\nwindow 0 10 15 1 2 0 0\nwindow 1 20 31 0 0 4 0\n"
                   "total 100 160 5 6 4 0\n")  # fmt: skip
    windows, total = cycles.read_output(out)
    assert windows == [cycles.Tally(10, 15, 1, 2, 0, 0), cycles.Tally(20, 31, 0, 0, 4, 0)]
    assert total.cycles == 160 and windows[1].estimate == 33.0
    with pytest.raises(UserError, match="no total"):
        out.write_text("windows 0\n")
        cycles.read_output(out)


def test_handshake_windows_go_to_their_sides_in_the_images_order() -> None:
    # global, client set-up, server set-up, then the calls: client and server alternate until
    # one is done (3 client calls, 2 server calls: c s c s c)
    order = cycles.call_order({"client": 3, "server": 2})
    assert order == "cscsc"
    windows = [tally(1, 1), tally(2, 2), tally(3, 3), tally(10, 12), tally(20, 30),
               tally(11, 13), tally(21, 31), tally(12, 14, span=10)]  # fmt: skip
    sums = cycles.handshake_windows(windows, order)
    assert sums["global"] == tally(1, 1) and sums["server_setup"] == tally(3, 3)
    assert sums["client"] == cycles.Tally(33, 39, 0, 0, 10, 0)
    assert sums["server"] == cycles.Tally(41, 61, 0, 0, 0, 0)
    with pytest.raises(UserError, match="saw 7 measured calls, the image's handshake made 8"):
        cycles.handshake_windows(windows[:-1], order)
    undecoded = [*windows[:-1], cycles.Tally(1, 1, 0, 0, 0, 3)]
    with pytest.raises(UserError, match="could not decode 3 executed instructions"):
        cycles.handshake_windows(undecoded, order)


def _result(client: int, server: int) -> dict:
    side = {"handshake_calls": 0, "handshake_timer_ticks": 0, "setup_timer_ticks": 0}
    return {"instructions_per_1000_ticks": 1000,
            "client": {**side, "handshake_calls": 2, "handshake_timer_ticks": client},
            "server": {**side, "handshake_calls": 1, "handshake_timer_ticks": server},
            "global": dict(side)}  # fmt: skip


def test_the_model_is_the_projection_and_must_hold_the_images_count() -> None:
    core = firmware.core_of("cortex-m4")
    setting = parts.setting("STM32F411")
    assert setting is not None
    windows = [tally(5, 5), tally(6, 6), tally(7, 7), tally(1000, 1500), tally(800, 1000),
               tally(1000, 1500, span=100)]  # fmt: skip
    result = qemu.with_projection(_result(2000, 800), core, setting, windows)
    client = result["client"]
    assert client["model"]["cycles"] == 3000 and client["model"]["span"] == 100
    assert client["projected_ms"] == [3000 / 100_000, 3100 / 100_000]
    assert result["server"]["projected_ms"] == [0.01, 0.01]
    assert result["projection"]["kind"] == "model" and result["projection"]["part"] == "STM32F411"
    assert result["projection"]["error"]["points"] == 4
    # Windows that hold other calls than the image counted are refused, never a figure.
    with pytest.raises(UserError, match="windows hold 2000 instructions, the image counted 2100"):
        qemu.with_projection(_result(2100, 800), core, setting, windows)
    # Without a model: the core's CPI range, said so.
    plain = qemu.with_projection(_result(2000, 800), core)
    assert plain["projection"]["kind"] == "cpi"
    assert plain["client"]["projected_ms"] == list(core.ms(2000))
