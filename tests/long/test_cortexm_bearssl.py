"""BearSSL on Cortex-M: its firmware image (drivers/embedded/cortexm/firmware_bearssl.c) runs
TLS 1.2 handshakes on the M4's QEMU board with no heap at all, its contexts and I/O buffer in
the one-role images' .bss (what `fit` counts as the side's static RAM), and says what BearSSL
0.6 can never do (TLS 1.3, PSK). Two builds (bearssl-0.6:cortex-m4 and its records-512
feature, about 20 s each on two cores), shared with every other test through the cache."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from drivers import tlsbench
from tlsbench.builds import arches, firmware
from tlsbench.embedded import qemu

VARIANT = "bearssl-0.6:cortex-m4"
SMALL = "bearssl-0.6:cortex-m4,records-512"
ECDSA = "TLS-ECDHE-ECDSA-WITH-AES-128-GCM-SHA256"
CHACHA_RSA = "TLS-ECDHE-RSA-WITH-CHACHA20-POLY1305-SHA256"
# BearSSL's half-duplex buffer for 16384-byte records (BR_SSL_BUFSIZE_MONO), and the
# overhead a smaller one keeps beside its records.
MONO = 16384 + 325
OVERHEAD = 325

pytestmark = pytest.mark.skipif(
    bool(arches.missing_tools("cortex-m4")),
    reason=f"missing {arches.missing_tools('cortex-m4')} (make deps installs them)",
)


@pytest.fixture(scope="module")
def image(build_of) -> Path:
    return qemu.image_of(build_of(VARIANT))


def symbols(elf: Path) -> dict[str, tuple[str, int]]:
    """name -> (section letter, size) as `nm -S` prints them."""
    out = subprocess.run(["arm-none-eabi-nm", "-S", str(elf)], capture_output=True, text=True,
                         check=True).stdout  # fmt: skip
    found = {}
    for line in out.splitlines():
        fields = line.split()
        if len(fields) == 4:
            found[fields[3]] = (fields[2], int(fields[1], 16))
    return found


@pytest.mark.parametrize(
    ("suite", "group", "cert", "chain"),
    [(ECDSA, "secp256r1", "ecdsa-p256", 1), (CHACHA_RSA, "x25519", "rsa2048", 2)],
)
def test_a_tls12_handshake_each_side_negotiates_what_was_asked_with_no_heap(
    image, suite, group, cert, chain
) -> None:
    """qemu.run checks what both sides read back and what the wire says against the job (a
    mismatch raises); here the figures: no allocation anywhere, exact counts per side."""
    job = firmware.make_job(suite, tls="1.2", cert=cert, group=group, chain=chain)
    result = qemu.measure(image, firmware.core_of("cortex-m4"), job, runs=2)
    assert result["library"] == "bearssl" and result["library_version"] == "0.6"
    assert result["wire"]["suite"] == firmware.SUITES[suite].code
    assert result["wire"]["group"] == group
    assert result["client"]["verified"] == 1
    for side in (*firmware.SIDES, "global"):
        assert result[side]["heap_peak"] == result[side]["allocations"] == 0
    for side in firmware.SIDES:
        assert result[side]["version"] == "TLSv1.2" and result[side]["suite"] == suite
        assert result[side]["handshake_instructions"] > 1_000_000
        assert 0 < result[side]["stack_high_water"] < 16 * 1024


def test_the_contexts_and_io_buffer_are_the_one_role_images_static_ram(image) -> None:
    """What BearSSL needs instead of heap is in .bss of the side that uses it: the client's
    engine, X.509 engine and buffer only in client.elf, the server's only in server.elf."""
    client, server = (symbols(image.parent / f"{role}.elf") for role in ("client", "server"))
    assert client["client_io"] == ("b", MONO) and server["server_io"] == ("b", MONO)
    for name in ("client", "client_x509"):
        assert client[name][0] == "b" and name not in server
    assert server["server"][0] == "b" and "server" not in client
    assert "client_io" not in server and "server_io" not in client
    size = subprocess.run(["arm-none-eabi-size", "-A", str(image.parent / "client.elf")],
                          capture_output=True, text=True, check=True).stdout  # fmt: skip
    bss = next(int(line.split()[1]) for line in size.splitlines() if line.startswith(".bss "))
    assert bss >= MONO + client["client"][1] + client["client_x509"][1]


def test_what_bearssl_cannot_do_is_unsupported_with_its_reason(image) -> None:
    for job, reason in [
        (firmware.make_job("TLS-AES-128-GCM-SHA256", tls="1.3"), "no TLS 1.3"),
        (firmware.make_job("TLS-PSK-WITH-AES-128-GCM-SHA256", kx="psk"), "no PSK cipher suites"),
        (firmware.make_job(ECDSA, cert="ecdsa-p256", record=512), "build the variant with "
                                                                   "records-512"),
    ]:  # fmt: skip
        with pytest.raises(qemu.Unsupported, match=reason):
            qemu.run(image, job, timeout=120)


def test_fit_lists_bearssl_and_its_buffer_is_the_record_knob(build_of) -> None:
    """The issue's question on the M4 (64 KiB, 256 KiB, TLS 1.2), narrowed to BearSSL: every
    candidate is measured, its heap is 0, and the only RAM a smaller record buffer saves is
    the buffer's own bytes, in .bss; the client asked for max_fragment_length and got it."""
    build_of(VARIANT), build_of(SMALL)
    done = tlsbench("fit", "--core", "m4", "--ram", "64K", "--flash", "256K", "--tls", "1.2",
                    "--line", "bearssl-0.6", "--records", "512", "--records", "16384",
                    "--json", "--quiet", "--plot", "none")  # fmt: skip
    assert done.returncode == 0, done.stderr
    rows = {r["record"]: r for r in json.loads(done.stdout)["candidates"]}
    assert {r["variant"] for r in rows.values()} == {SMALL, VARIANT}
    for row in rows.values():
        assert row["status"] == "ok" and row["library"] == "bearssl-0.6", row
        assert row["ram"]["heap"] == 0 and row["fits"]
    assert rows[16384]["ram"]["bss"] - rows[512]["ram"]["bss"] == MONO - (512 + OVERHEAD)
    assert rows[512]["instructions"] == pytest.approx(rows[16384]["instructions"], rel=0.01)
    job = firmware.make_job(ECDSA, tls="1.2", cert="ecdsa-p256", group="secp256r1", record=512)
    small = qemu.run(qemu.image_of(build_of(SMALL)), job, timeout=120)
    assert small["client"]["record"] == small["server"]["record"] == 512


def test_fit_says_why_bearssl_is_left_out_of_tls13_without_building() -> None:
    done = tlsbench("fit", "--core", "m4", "--ram", "64K", "--flash", "256K", "--tls", "1.3",
                    "--line", "bearssl-0.6", "--quiet", "--plot", "none")  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "bearssl-0.6: no TLS 1.3 (BearSSL 0.6 implements TLS 1.0 to 1.2)" in done.stdout


def test_the_m4_image_runs_bearssls_31_bit_code(image) -> None:
    """A core with a one-cycle UMULL gets BearSSL's defaults without BR_LOMUL: m31 curves and
    i31 big integers (the M0 and M3 builds set BR_ARMEL_CORTEXM_GCC for i15 / m15)."""
    client = symbols(image.parent / "client.elf")
    assert "br_ec_all_m31" in client and "br_i31_modpow_opt" in client
    assert "br_ec_all_m15" not in client and "br_i15_montymul" not in client


def test_every_operation_runs_through_bearssls_own_api_with_no_heap(image) -> None:
    """`cortex-m --ops`: every operation of OPERATIONS but ML-DSA's is counted, exactly
    alike in two runs, with no allocation; and the costs keep their known order."""
    m4 = firmware.core_of("cortex-m4")
    result = qemu.measure_ops(image, m4, runs=2)
    ops = {op["name"]: op for op in result["ops"]}
    assert list(ops) == list(firmware.OPERATIONS)
    for name in firmware.ML_DSA_OPERATIONS:  # BearSSL has no ML-DSA: said, not measured
        assert "instructions" not in ops.pop(name)
    for op in ops.values():
        assert "unsupported" not in op, op
        assert op["heap_peak"] == 0 and op["allocations"] == 0
        assert op["instructions"] > 1_000
    assert ops["rsa2048_private"]["instructions"] > 10 * ops["rsa2048_public"]["instructions"]
    assert ops["p256_verify"]["instructions"] > ops["p256_sign"]["instructions"]
    assert ops["x25519_shared"]["instructions"] < ops["p256_ecdh"]["instructions"]


def test_a_records_feature_without_a_core_is_refused_with_the_reason() -> None:
    """records-N sizes the firmware image's buffer: on a native build it would change
    nothing, so the build says what to do instead of silently ignoring it."""
    done = tlsbench("build", "bearssl-0.6:records-512")
    assert done.returncode == 1 and "Traceback" not in done.stderr
    assert "add a cortex-m feature" in done.stderr and "--record-size" in done.stderr


def test_code_size_of_the_cortex_m4_variant_is_thumb_code_with_the_handshake(build_of) -> None:
    """The code-size programs link for a core with no operating system too (size_io.h's
    stand-in transport), each with BearSSL's handshake engine, and are far smaller than the
    x86-64 ones; running them is for a board, and refused here."""
    from tlsbench.builds import codesize
    from tlsbench.core.errors import UserError

    build = build_of(VARIANT)
    rows = codesize.as_rows(build, codesize.measure(build))
    assert {r["role"] for r in rows} == {"client", "server"}
    assert all(r["target"] == "cortex-m4" and 30_000 < r["text"] < 200_000 for r in rows)
    with pytest.raises(UserError, match="runs on a board, not here"):
        codesize.measure(build, handshake=True)
