"""The same library, options and 32-bit ARM ABI measured two ways: the firmware image's heap
accounting (bare metal, newlib, QEMU system emulation) against the armhf heap driver (Linux,
glibc, qemu-user), for the same TLS job.

What the two count is the same code path (the allocation counts agree to a few allocations)
and agrees within a few percent. The native figure is the larger by the per-side state its
adapter keeps besides the library's objects (an entropy context per side, where the image
shares one; a ticket context; the harness's wire-observation buffers): about 1.5-2 KB,
which is why the agreement is a few percent and not exact (docs/embedded.md)."""

from __future__ import annotations

import json
import subprocess

import pytest

from tlsbench.builds import arches, firmware
from tlsbench.core import paths
from tlsbench.embedded import qemu

FIRMWARE = "mbedtls-3.6.6:cortex-m0"  # the core test's image: an ARMv6-M build, ILP32 as armhf
NATIVE = "mbedtls-3.6.6:armhf"
JOBS = [
    ("1.3", "TLS_AES_128_GCM_SHA256", "ecdsa-p256", "x25519"),
    ("1.2", "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256", "rsa2048", "secp256r1"),
]

pytestmark = pytest.mark.skipif(
    bool(arches.missing_tools("cortex-m0") or arches.missing_tools("armhf")),
    reason="the Cortex-M or armhf toolchain is missing (make deps installs them)",
)


@pytest.mark.parametrize(("tls", "suite", "cert", "group"), JOBS)
def test_firmware_heap_agrees_with_the_armhf_heap_driver(tls, suite, cert, group, build_of):
    image = qemu.image_of(build_of(FIRMWARE))
    build_of(NATIVE)
    job = firmware.make_job(suite, tls=tls, cert=cert, group=group, chain=1)
    image_result = qemu.run(image, job, timeout=300)
    done = subprocess.run(
        [str(paths.REPO / "tlsbench"), "drive", "--measure", "heap", NATIVE, "handshake",
         "--tls", tls, "--suite", suite, "--cert", cert, "--group", group, "--chain", "1",
         "--auth", "server", "--iterations", "1", "--warmup", "0", "--json"],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    native = json.loads(done.stdout)
    assert native["negotiated"]["version"] == tls and native["negotiated"]["group"] == group
    for side in firmware.SIDES:
        ours, theirs = image_result[side], native["heap"][side]
        # The same allocations, give or take the adapters' own and the key loading's (the
        # image parses its credentials from DER, the driver from PEM files): 2 %.
        assert abs(ours["allocations"] - theirs["handshake_allocs"]) <= 0.02 * ours["allocations"]
        # Within a few percent; the native side the larger (its adapter's extra state).
        assert (
            0 <= theirs["peak_minus_start"] - ours["heap_peak"] < 0.05 * theirs["peak_minus_start"]
        )
    # Library-wide set-up (PSA's key store and RNG) is charged apart in both.
    assert abs(image_result["global"]["heap_peak"] - native["heap"]["global"]["peak"]) < 256
