"""`cortex-m --split`: a firmware handshake's instructions by function group, counted by the
QEMU profiler plugin, against the count the plain run reports.

One wolfSSL Cortex-M4 image (built for test_cortexm.py too), one TLS 1.3 ECDHE-ECDSA P-256
handshake: the plugin's build, the profiled run and the symbol work take a few seconds."""

from __future__ import annotations

import subprocess

import pytest

from tlsbench.builds import arches, firmware
from tlsbench.core import paths
from tlsbench.core.errors import UserError
from tlsbench.embedded import profile, qemu

VARIANT = "wolfssl-5.7.2:cortex-m4"
M4 = firmware.core_of("cortex-m4")
JOB = firmware.make_job("TLS-AES-128-GCM-SHA256", tls="1.3", kx="ecdhe", group="secp256r1",
                        cert="ecdsa-p256")  # fmt: skip

pytestmark = pytest.mark.skipif(
    bool(arches.missing_tools("cortex-m4")),
    reason=f"missing {arches.missing_tools('cortex-m4')} (make deps installs them)",
)


def test_the_split_sums_to_the_reported_count_and_public_key_leads(build_of) -> None:
    build = build_of(VARIANT)
    image = qemu.image_of(build)
    archives = sorted((build.folder / "prefix" / "lib").glob("*.a"))
    split = profile.split(image, M4, JOB, archives)
    plain = qemu.run(image, JOB)  # the count cortex-m reports, from a run of its own
    assert split["wire"]["group"] == "secp256r1" and split["library_version"] == "5.7.2"
    for side in firmware.SIDES:
        s = split[side]
        counts = {g["group"]: g["instructions"] for g in s["groups"]}
        assert set(counts) == set(profile.GROUPS)
        # The groups are the plugin's exact count; with the timer's rounding they are the
        # reported count, and the rounding is within a tick and a bracket per measured call.
        assert sum(counts.values()) == s["profiled_instructions"]
        reported = plain[side]["handshake_instructions"]
        assert sum(counts.values()) + s["timer_rounding"] == reported == s["handshake_instructions"]
        per_tick = plain["instructions_per_1000_ticks"] / 1000
        assert abs(s["timer_rounding"]) <= 2 * per_tick * plain[side]["handshake_calls"]
        # Every executed address lies in a function of the image.
        assert s["unattributed_addresses_instructions"] == 0
        # ECDHE and ECDSA on P-256: the public-key arithmetic is the largest group, and the
        # TLS 1.3 key schedule and transcript hashes and the AES-GCM records are there too.
        assert max(counts, key=lambda g: counts[g]) == "public_key"
        assert counts["hashing"] > 0 and counts["symmetric"] > 0 and counts["tls"] > 0
        assert s["top_functions"][0]["group"] == "public_key"
    # Only the client parses a certificate in a one-way handshake.
    client = {g["group"]: g["instructions"] for g in split["client"]["groups"]}
    server = {g["group"]: g["instructions"] for g in split["server"]["groups"]}
    assert client["asn1_x509"] > server["asn1_x509"]


def test_cli_split_wants_one_handshake() -> None:
    done = subprocess.run(
        [str(paths.REPO / "tlsbench"), "cortex-m", VARIANT, "--split", "--quiet",
         "--suite", "TLS-AES-128-GCM-SHA256", "--suite", "TLS-AES-256-GCM-SHA384"],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert done.returncode != 0 and "--split profiles one handshake" in done.stderr
    done = subprocess.run(
        [str(paths.REPO / "tlsbench"), "cortex-m", VARIANT, "--split", "--ops", "--quiet"],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert done.returncode == 2, done.stderr
    assert "--ops and --split: choose one" in done.stderr


def test_a_profile_that_does_not_match_the_run_is_refused(build_of, monkeypatch) -> None:
    # One window fewer than the image's measured calls: the plugin sees the extra call and
    # the split refuses, rather than charge that call to no side or to the wrong one.
    build = build_of(VARIANT)
    archives = sorted((build.folder / "prefix" / "lib").glob("*.a"))
    order = profile.call_order
    monkeypatch.setattr(profile, "call_order", lambda calls: order(calls)[:-1])
    with pytest.raises(UserError, match="more measured calls than its run reported"):
        profile.split(qemu.image_of(build), M4, JOB, archives)
