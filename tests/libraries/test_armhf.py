"""32-bit ARM Linux (armhf): cross-built with clang for arm-linux-gnueabihf, run under qemu-user.

Heap figures are exact under emulation; time is not, so no timing series of an armhf point
is stored or reported.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from drivers import tlsbench
from tlsbench.builds.variants import Catalog
from tlsbench.core.errors import UserError
from tlsbench.core.store import Store
from tlsbench.report import load_run

ELF_MACHINE_ARM = 40  # e_machine of a 32-bit ARM ELF file

TINY = """
question = "Does an armhf handshake run under qemu with heap figures only?"
repetitions = 1
timeout = 120

[defaults]
iterations = 2
warmup = 0

[matrix]
variant = ["mbedtls-3.6.6", "mbedtls-3.6.6:armhf"]
scenario = ["handshake", "aead"]
"""


def test_armhf_feature_resolves_and_gnutls_refuses_it(catalog: Catalog) -> None:
    variant = catalog.resolve("mbedtls-2.28.x:armhf")
    assert variant.arch == "armhf"
    assert "--host=arm-linux-gnueabihf" in catalog.resolve("wolfssl-5.7.2:armhf").configure
    with pytest.raises(UserError, match="nettle, gmp and libtasn1 cross-built for armhf"):
        catalog.resolve("gnutls-3.8.x:armhf")


def test_armhf_build_is_32_bit_arm_and_its_probe_runs_under_qemu(build_of) -> None:
    build = build_of("mbedtls-3.6.6:armhf")
    info = build.describe()
    assert info["probe"]["pointer_bits"] == 32  # the probe ran, under qemu-arm
    assert (
        "clang" in info["compiler"]
    )  # Debian 12: gcc-arm-linux-gnueabihf conflicts with gcc-multilib
    header = build.program("tlsbench-driver-heap").read_bytes()[:20]
    assert header[:4] == b"\x7fELF" and header[4] == 1  # ELFCLASS32
    assert int.from_bytes(header[18:20], "little") == ELF_MACHINE_ARM
    assert build.command("tlsbench-driver-heap")[0] == "qemu-arm"
    assert build.key != build_of("mbedtls-3.6.6").key


def test_drive_refuses_time_on_armhf() -> None:
    proc = tlsbench("drive", "--measure", "time", "mbedtls-3.6.6:armhf", "handshake")
    assert proc.returncode == 2
    assert "time is not measured on armhf" in proc.stderr and "--measure heap" in proc.stderr
    proc = tlsbench("drive", "mbedtls-3.6.6:armhf", "aead")
    assert proc.returncode == 3 and "aead measures time only" in proc.stderr


def test_armhf_handshake_under_qemu_heap_only_and_smaller(tmp_path: Path, build_of) -> None:
    """One real handshake of mbedTLS 3.6 on armhf under qemu-user: checked as on x86 (the
    driver compares what was negotiated with what was asked), heap figures stored, every
    timing series absent, and the peak per side smaller than on x86-64 (4-byte pointers
    and size_t make every structure smaller)."""
    for spec in ("mbedtls-3.6.6", "mbedtls-3.6.6:armhf"):
        build_of(spec)
    experiment = tmp_path / "armhf.toml"
    experiment.write_text(TINY)
    db = tmp_path / "r.db"
    proc = tlsbench("run", str(experiment), "--db", str(db))
    assert proc.returncode == 0, proc.stderr
    store = Store(db)
    run = store.run("latest")
    points = {(p.variant, p.scenario): p for p in store.points(run["id"])}
    outputs = {}
    for key, point in points.items():
        (result,) = store.results(point.id)
        outputs[key] = (result["status"], json.loads(result["output"] or "null"))
    # aead is timed only: unsupported on armhf, with the reason.
    status, output = outputs[("mbedtls-3.6.6:armhf", "aead")]
    assert status == "unsupported" and "qemu-user" in output["error"]["message"]
    status, arm = outputs[("mbedtls-3.6.6:armhf", "handshake")]
    assert status == "ok"
    assert arm["negotiated"]["version"] == "1.3" and arm["negotiated"]["group"] == "x25519"
    assert arm["measure"]["time"] is None and "qemu-user" in arm["measure"]["time_not_measured"]
    assert "calibration" not in arm and "tsc_hz" not in arm
    timing = ("client_cpu_ns", "server_cpu_ns", "wall_ns", "handshakes_per_s")
    armhf_point = points[("mbedtls-3.6.6:armhf", "handshake")]
    assert all(store.samples(armhf_point.id, name) == [] for name in timing)
    status, x86 = outputs[("mbedtls-3.6.6", "handshake")]
    x86_point = points[("mbedtls-3.6.6", "handshake")]
    assert status == "ok" and all(store.samples(x86_point.id, name) for name in timing)
    for side in ("client", "server"):
        assert 0 < arm["heap"][side]["peak"] < x86["heap"][side]["peak"]
        assert arm["heap"][side]["handshake_allocs"] > 0
    # The report shows the armhf heap, no armhf time, and says why.
    model = load_run(store, run["id"])
    assert any(r.variant == "mbedtls-3.6.6:armhf" for r in model.memory)
    assert [r.variant for r in model.handshakes] == ["mbedtls-3.6.6"]
    assert any(
        n.subject == "mbedtls-3.6.6:armhf" and n.kind == "time not measured" for n in model.notes
    )


def test_code_size_of_an_armhf_variant_uses_the_cross_tools(build_of) -> None:
    """Linked with the cross tools, measured with arm-linux-gnueabihf-size, and the two
    programs' handshake runs under qemu-user first."""
    from tlsbench.builds import codesize

    build = build_of("mbedtls-3.6.6:armhf")
    arm = codesize.as_rows(build, codesize.measure(build, handshake=True))
    assert {r["target"] for r in arm} == {"armhf"} and {r["role"] for r in arm} == {
        "client",
        "server",
    }
    x86 = codesize.as_rows(build := build_of("mbedtls-3.6.6"), codesize.measure(build))
    # Thumb-2 code is denser than x86-64's.
    assert max(r["text"] for r in arm) < min(r["text"] for r in x86)


def test_instruction_mode_is_unsupported_on_armhf(tmp_path: Path, build_of) -> None:
    """valgrind runs this machine's code: an armhf point says so instead of counting qemu."""
    build_of("mbedtls-3.6.6:armhf")
    experiment = tmp_path / "instr.toml"
    experiment.write_text(
        'question = "Instructions on armhf?"\nrepetitions = 1\n\n[defaults]\n'
        'scenario = "handshake"\niterations = 2\nwarmup = 0\n\n[matrix]\n'
        'variant = ["mbedtls-3.6.6:armhf"]\n'
    )
    db = tmp_path / "r.db"
    proc = tlsbench("run", str(experiment), "--db", str(db), "--mode", "instructions")
    assert proc.returncode == 0, proc.stderr
    store = Store(db)
    [point] = store.points(store.run("latest")["id"])
    [result] = store.results(point.id)
    assert result["status"] == "unsupported"
    assert "valgrind" in json.loads(result["output"])["error"]["message"]
