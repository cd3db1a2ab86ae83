"""The board calibration's pure logic: reading wolfCrypt benchmark output as wolfSSL's STM32
table prints it, and ranges and held-out errors from points (no build, no QEMU)."""

from __future__ import annotations

import json

import pytest

from tlsbench.builds import firmware
from tlsbench.core import paths
from tlsbench.core.errors import UserError
from tlsbench.embedded import calibrate

TABLE = """# Benchmarks

## PARTA
CPU: Cortex-M4 at 100 MHz

### PARTA (SP-ASM)

```c
#define WOLFSSL_SP_SMALL
```

```
 wolfSSL version 5.6.0
wolfCrypt Benchmark (block bytes 1024, min 1.0 sec each)
SHA-256                      2 MiB took 1.000 seconds,    2.000 MiB/s
CHA-POLY           500 KB took 1.000 seconds,  500.000 KB/s
AES-128-GCM-enc-no_AAD       9 MiB took 1.000 seconds,    9.000 MiB/s
RSA     2048   public        36 ops took 1.008 sec, avg 20.000 ms, 35.714 ops/sec
ECC   [      SECP256R1]   256  key gen        32 ops took 1.000 sec, avg 10.000 ms, 32.000 ops/sec
ECDSA    256 verify         36 ops took 1.004 sec, avg 30.000 ms, 35.857 ops/sec
```

Without the option:
```
RSA     2048   public        14 ops took 1.016 sec, avg 15.000 ms, 13.780 ops/sec
```

## PARTB
Cortex M0+ at up to 50MHz.
"""


def test_the_table_gives_clock_version_and_ms_per_operation_or_per_kib() -> None:
    blocks = calibrate.read_table(TABLE)
    first = blocks[("PARTA (SP-ASM)", 1)]  # the build options' block is no benchmark
    assert (first.part, first.mhz, first.version) == ("PARTA", 100.0, "5.6.0")
    assert first.ms["rsa2048_public"] == 20.0 and first.ms["p256_keygen"] == 10.0
    assert first.ms["p256_verify"] == 30.0
    assert first.ms["sha256_kib"] == pytest.approx(1000 / 2048)  # 2 MiB/s: 2048 KiB/s
    assert first.ms["chacha20poly1305_kib"] == pytest.approx(2.0)  # KB: 1024 bytes
    assert "aes128gcm_kib" not in first.ms  # the no-AAD line is another measurement
    second = blocks[("PARTA (SP-ASM)", 2)]
    assert second.version == "5.6.0" and second.ms == {"rsa2048_public": 15.0}


def point(part: str, role: str, op: str, cpi: float, instructions: int = 1_000_000) -> dict:
    mhz = 100.0
    return {"part": part, "core": "cortex-m4", "role": role, "section": "s", "block": 1,
            "version": "5.6.0", "mhz": mhz, "operation": op,
            "kind": firmware.OPERATIONS[op].kind, "board_ms": instructions * cpi / (mhz * 1000),
            "cycles": round(instructions * cpi), "instructions": instructions, "cpi": cpi,
            "note": ""}  # fmt: skip


def test_the_range_spans_the_calibration_points_and_held_out_parts_are_projected() -> None:
    rows = [
        point("A", "calibrate", "p256_sign", 2.0),
        point("B", "calibrate", "p256_verify", 2.5),
        point("A", "calibrate", "sha256_kib", 3.0),
        point("C", "held-out", "p256_sign", 2.2),  # inside
        point("C", "held-out", "p256_verify", 3.0),  # 2.5 / 3.0 - 1: 17 % too fast
        point("D", "compare", "p256_ecdh", 9.0),  # shown only
    ]
    core = calibrate.calibrate(rows)["cortex-m4"]
    assert core["calibrated"]["public"]["cpi"] == [2.0, 2.5]
    assert core["calibrated"]["public"]["operations"] == ["p256_sign", "p256_verify"]
    assert core["calibrated"]["symmetric"]["cpi"] == [3.0, 3.0]
    held = core["held_out"]
    assert (held["parts"], held["points"], held["inside"]) == (["C"], 2, 1)
    assert held["worst_miss"] == pytest.approx(1 - 2.5 / 3.0, abs=1e-3)
    assert rows[4]["miss"] < 0  # the board is slower than the projection's high end
    # The manual's M4 range ends at 1.5: the boards (compare excluded) lie 1.33x..2x above it.
    assert core["manual_short_by"] == [round(2.0 / 1.5, 2), 2.0]


def test_a_section_the_table_lacks_is_an_error() -> None:
    entry = calibrate.Entry("PARTA", "cortex-m4", "nope", 1, ("p256_sign",), "calibrate", "")
    with pytest.raises(UserError, match="nope"):
        calibrate.points([entry], calibrate.read_table(TABLE), {"cortex-m4": {"p256_sign": 1}})


def test_the_shipped_selection_names_known_operations_cores_and_roles() -> None:
    selection, entries = calibrate.load_selection()
    assert selection["source"].endswith("STM32_Benchmarks.md")
    for core in {e.core for e in entries}:
        roles = {e.role for e in entries if e.core == core}
        assert "calibrate" in roles, core


def test_projections_use_the_calibration_where_a_core_has_one_and_name_it() -> None:
    saved = calibrate.json.loads(firmware.CALIBRATION_FILE.read_text())
    for arch, core in firmware.CORES.items():
        calibrated = core.calibrated_cpi
        (low, high), label = core.cpi_range()
        if arch not in saved["cores"]:
            assert not calibrated and (low, high) == core.cpi and label.startswith("manual")
            continue
        for kind, c in calibrated.items():
            assert core.cpi_range(kind) == (c.cpi, c.label())
            assert c.cpi == tuple(saved["cores"][arch]["calibrated"][kind]["cpi"])
            assert all(part.split(" (")[0] in c.label() for part in c.parts)
        # A handshake mixes both kinds: the span of their ranges.
        assert low == min(c.cpi[0] for c in calibrated.values())
        assert high == max(c.cpi[1] for c in calibrated.values())
        assert core.ms(1_000_000, 100.0) == pytest.approx((low * 10.0, high * 10.0))
    assert "cortex-m3" not in saved["cores"]  # no board of the table has an M3


def test_the_pages_table_is_the_saved_calibration() -> None:
    """docs/embedded.md's table of every point is what `calibrate --markdown` prints for the
    saved calibration.json, so the page moves when the calibration is written anew."""
    saved = json.loads(firmware.CALIBRATION_FILE.read_text())
    page = (paths.REPO / "docs" / "embedded.md").read_text()
    start = page.index(calibrate.MARKDOWN_HEADER)
    end = page.index("\n\n", start)
    assert page[start:end] == calibrate.markdown_table(saved)
