"""Cortex-M firmware images: built per variant and core with arm-none-eabi-gcc and newlib,
run on the core's QEMU board with -icount; one TLS handshake per run, measured per side.

Images are built once per session (the build cache): the Cortex-M7 ones carry most of the
job tests, one image per other core shows that core's handshake."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from tlsbench.builds import arches, firmware
from tlsbench.core import paths
from tlsbench.core.errors import UserError
from tlsbench.embedded import qemu

VARIANT = "mbedtls-3.6.6:cortex-m7"
WOLFSSL_VARIANT = "wolfssl-5.7.2:cortex-m7"
ECDHE = "TLS-ECDHE-RSA-WITH-AES-128-GCM-SHA256"
RSA = "TLS-RSA-WITH-AES-256-CBC-SHA256"
TLS13 = "TLS-AES-128-GCM-SHA256"
ELF_MACHINE_ARM = 40
M7 = firmware.core_of("cortex-m7")

pytestmark = pytest.mark.skipif(
    bool(arches.missing_tools("cortex-m7")),
    reason=f"missing {arches.missing_tools('cortex-m7')} (make deps installs them)",
)


@pytest.fixture(scope="module")
def image(build_of):
    return qemu.image_of(build_of(VARIANT))


@pytest.fixture(scope="module")
def wolfssl_image(build_of):
    return qemu.image_of(build_of(WOLFSSL_VARIANT))


def run(image: Path, **job: object) -> dict:
    return qemu.run(image, firmware.make_job(**job), timeout=120)  # type: ignore[arg-type]


def elf_attributes(path: Path) -> str:
    return subprocess.run(["arm-none-eabi-readelf", "-A", str(path)], capture_output=True,
                          text=True, check=True).stdout  # fmt: skip


def test_image_is_a_32_bit_arm_elf_whose_vectors_start_it(image) -> None:
    header = image.read_bytes()[:20]
    assert header[:4] == b"\x7fELF" and header[4] == 1  # ELFCLASS32
    assert int.from_bytes(header[18:20], "little") == ELF_MACHINE_ARM
    symbols = subprocess.run(
        ["arm-none-eabi-nm", str(image)], capture_output=True, text=True, check=True
    ).stdout
    assert " T reset_handler" in symbols and "__wrap_calloc" in symbols
    assert "mbedtls_ssl_handshake" in symbols
    # The one-role images hold one side's own code: only the server parses a private key
    # (the library's handshake itself dispatches on the role at run time: both stay).
    client, server = (
        subprocess.run(["arm-none-eabi-nm", str(image.parent / f"{role}.elf")],
                       capture_output=True, text=True, check=True).stdout
        for role in ("client", "server")
    )  # fmt: skip
    assert " T mbedtls_pk_parse_key" in server and " T mbedtls_pk_parse_key" in symbols
    assert "mbedtls_pk_parse_key" not in client and " T mbedtls_ssl_handshake" in client


def test_one_ecdhe_handshake_negotiates_what_was_asked_and_is_measured(image) -> None:
    result = qemu.run(image, ECDHE, "secp256r1")
    assert result["client"]["suite"] == ECDHE and result["wire"]["group"] == "secp256r1"
    assert result["client"]["version"] == "TLSv1.2" and result["client"]["verified"] == 1
    assert result["library_version"] == "3.6.6" and result["core"] == "cortex-m7"
    for side in firmware.SIDES:
        figures = result[side]
        assert figures["heap_peak"] > 0 and figures["allocations"] > 0
        assert 0 < figures["stack_high_water"] < 64 * 1024
        # An ECDHE handshake with an RSA 2048 certificate is millions of instructions.
        assert figures["handshake_instructions"] > 1_000_000
        # A run without a part: the core's CPI range (a cortex-m run has its model, below)
        low, high = figures["projected_ms"]
        assert (low, high) == M7.ms(figures["handshake_instructions"]) and low < high
    # The server signs with RSA 2048 (a private-key operation): it costs more than the client.
    assert result["server"]["handshake_instructions"] > result["client"]["handshake_instructions"]


def test_group_is_read_back_from_the_wire_not_from_the_request(image) -> None:
    default = qemu.run(image, ECDHE, None)
    assert default["wire"]["group"] == "x25519"  # mbedTLS 3.6's first preference, unasked
    rsa = qemu.run(image, RSA, None)
    assert rsa["wire"]["group"] == "none" and rsa["client"]["suite"] == RSA  # static RSA


def test_instruction_counts_are_identical_across_runs(image) -> None:
    first = qemu.run(image, RSA, None)
    second = qemu.run(image, RSA, None)
    for side in firmware.SIDES:
        assert first[side] == second[side]
    job = firmware.make_job(RSA)
    assert qemu.measure(image, M7, job, runs=2)["client"] == first["client"]


def test_a_suite_the_build_lacks_fails_and_qemu_is_bounded(image, monkeypatch) -> None:
    with pytest.raises(UserError, match="cipher suite not in this build"):
        qemu.run(image, "TLS-RSA-WITH-NOTHING", None)
    # A guest whose CPU never starts (QEMU's -S) can end only by the bound, however fast or
    # busy the machine: a short timeout that a fast machine might beat would test its speed.
    command = qemu.qemu_command
    monkeypatch.setattr(qemu, "qemu_command", lambda *args: [*command(*args), "-S"])
    with pytest.raises(UserError, match="did not finish within 1 s"):
        qemu.run(image, RSA, None, timeout=1)


def test_cli_refuses_a_variant_without_the_feature_and_prints_figures() -> None:
    refused = subprocess.run(
        [str(paths.REPO / "tlsbench"), "cortex-m", "mbedtls-3.6.6", "--suite", RSA, "--quiet"],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert refused.returncode == 2 and "Cortex-M feature" in refused.stderr
    done = subprocess.run(
        [str(paths.REPO / "tlsbench"), "cortex-m", VARIANT, "--tls", "1.3", "--kx", "psk",
         "--quiet"],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "TLS 1.3 TLS-AES-128-GCM-SHA256 (PSK)" in done.stdout
    # The milliseconds are the cycle model's for the M7's default part, its error stated
    assert "cortex-m7 ms: cycle model of the Cortex-M7 (m7) and STM32F746 at 216 MHz" in done.stdout
    assert "no same-code board figure of a Cortex-M7 found" in done.stdout
    wrong = subprocess.run(
        [str(paths.REPO / "tlsbench"), "cortex-m", VARIANT, "--suite", ECDHE, "--tls", "1.3"],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert wrong.returncode == 2 and "is a TLS 1.2 suite" in wrong.stderr


def test_a_suite_that_is_no_suite_is_a_usage_error_before_anything_is_built(tmp_path) -> None:
    """A typo is refused with the valid spellings (exit 2), and the cache stays untouched:
    nothing was built or run."""
    cache = tmp_path / "cache"
    done = subprocess.run(
        [str(paths.REPO / "tlsbench"), "cortex-m", VARIANT, "--suite", "NOPE", "--quiet"],
        capture_output=True, text=True, check=False,
        env={**os.environ, "TLSBENCH_CACHE": str(cache)},
    )  # fmt: skip
    assert done.returncode == 2, done.stderr
    assert "--suite NOPE" in done.stderr and ECDHE in done.stderr
    assert "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256" in done.stderr  # the other spelling
    assert "Traceback" not in done.stderr
    assert not (cache / "builds").exists()
    # Both spellings name the same suite.
    assert firmware.check_suite("tls_ecdhe_rsa_with_aes_128_gcm_sha256") == ECDHE


# ---------------------------------------------------------------------------- TLS jobs
# What devices do, on both libraries' Cortex-M7 images: TLS 1.3 and 1.2, ECDSA P-256 and RSA
# 2048 chains of 1 and 2, pre-shared keys (psk_ke, psk_dhe_ke, TLS 1.2 PSK and ECDHE-PSK),
# max_fragment_length.
JOBS = {
    "tls13-ecdsa": dict(suite=TLS13, tls="1.3", cert="ecdsa-p256", group="x25519"),
    "tls13-rsa-chain2": dict(suite=TLS13, tls="1.3", cert="rsa2048", chain=2, group="x25519"),
    "tls13-psk_ke": dict(suite=TLS13, tls="1.3", kx="psk"),
    "tls13-psk_dhe_ke": dict(suite=TLS13, tls="1.3", kx="psk_dhe", group="x25519"),
    "tls12-ecdsa-chain2": dict(suite="TLS-ECDHE-ECDSA-WITH-AES-128-GCM-SHA256",
                               cert="ecdsa-p256", chain=2, group="secp256r1"),
    "tls12-psk": dict(suite="TLS-PSK-WITH-AES-128-GCM-SHA256"),
    "tls12-ecdhe-psk": dict(suite="TLS-ECDHE-PSK-WITH-AES-128-CBC-SHA256", group="secp256r1"),
    "tls13-ecdsa-mfl1024": dict(suite=TLS13, tls="1.3", cert="ecdsa-p256", record=1024),
}  # fmt: skip


@pytest.mark.parametrize("library", ["mbedtls", "wolfssl"])
@pytest.mark.parametrize("name", list(JOBS))
def test_each_tls_job_negotiates_what_was_asked(name, library, image, wolfssl_image) -> None:
    """Version, suite, group, PSK and verification are read back from both libraries and
    from the server's plaintext on the wire (qemu.check_negotiated: a mismatch fails)."""
    job = firmware.make_job(**JOBS[name])  # type: ignore[arg-type]
    result = qemu.run(image if library == "mbedtls" else wolfssl_image, job, timeout=120)
    assert result["library"] == library
    wire, client = result["wire"], result["client"]
    assert wire["suite"] == firmware.SUITES[job.suite].code and not wire["hello_retry"]
    assert wire["version"] == (0x0304 if job.tls == "1.3" else 0x0303)
    assert client["verified"] == (-1 if job.psk else 1)
    assert wire["psk"] == (job.psk and job.tls == "1.3")
    if job.kx == "psk":
        assert wire["group"] == "none"  # psk_ke / plain PSK: no key exchange on the wire
        # Without public-key operations a handshake is a few percent of an ECDHE one.
        assert client["handshake_instructions"] < 3_000_000
    else:
        assert wire["group"] == (job.group or wire["group"]) and wire["group"] != "none"
        assert client["handshake_instructions"] > 1_000_000
    if job.record < 16384:
        assert 0 < client["record"] <= job.record  # max_fragment_length was negotiated


def test_a_longer_chain_costs_the_server_more_heap_and_the_client_more_work(image) -> None:
    one = run(image, suite=TLS13, tls="1.3", cert="rsa2048", chain=1)
    two = run(image, suite=TLS13, tls="1.3", cert="rsa2048", chain=2)
    assert two["server"]["heap_peak"] > one["server"]["heap_peak"]  # the intermediate kept
    # The client verifies one more signature (RSA public key: tens of thousands of instructions).
    assert two["client"]["handshake_instructions"] > one["client"]["handshake_instructions"]


def test_every_check_fires_on_a_real_result(image) -> None:
    """check_negotiated refuses what the job did not ask for: each check, made to fire by
    changing one fact of a real run's result."""
    job = firmware.make_job(TLS13, tls="1.3", kx="psk_dhe", group="x25519")
    good = qemu.run(image, job, timeout=120)
    qemu.check_negotiated(good, job)  # as run: passes
    changes = {
        "the client negotiated TLSv1.2": ("client", "version", "TLSv1.2"),
        "the server negotiated TLS-AES-256": ("server", "suite", "TLS-AES-256-GCM-SHA384"),
        "ServerHello says version": ("wire", "version", 0x0303),
        "ServerHello says suite": ("wire", "suite", 0x1302),
        "HelloRetryRequest": ("wire", "hello_retry", True),
        "did not take a pre-shared key": ("wire", "psk", False),
        "the server chose secp256r1": ("wire", "group", "secp256r1"),
        "no (EC)DHE group": ("wire", "group", "none"),
    }
    for message, (where, key, value) in changes.items():
        bad = {k: dict(v) if isinstance(v, dict) else v for k, v in good.items()}
        bad[where][key] = value
        with pytest.raises(UserError, match=message.replace("(", r"\(").replace(")", r"\)")):
            qemu.check_negotiated(bad, job)
    cert_job = firmware.make_job(TLS13, tls="1.3", cert="ecdsa-p256")
    verified = qemu.run(image, cert_job, timeout=120)
    verified["client"]["verified"] = 0
    with pytest.raises(UserError, match="did not verify"):
        qemu.check_negotiated(verified, cert_job)


def test_small_record_buffers_shrink_the_heap_and_a_build_without_tls13_is_unsupported(
    build_of, image
) -> None:
    """mbedTLS's record buffers are a build option: 1024-byte buffers (with
    max_fragment_length 1024 asked) take at least the two buffers' difference (2 x 15 KiB)
    less heap per side than the default 16 KiB ones; mbedTLS 2.28 has no TLS 1.3, which its
    image says (unsupported, not failed)."""
    job = firmware.make_job(TLS13, tls="1.3", cert="ecdsa-p256", group="x25519", record=1024)
    small = qemu.run(qemu.image_of(build_of(VARIANT + ",records-1024")), job, timeout=120)
    default = qemu.run(image, job, timeout=120)
    for side in firmware.SIDES:
        saved = default[side]["heap_peak"] - small[side]["heap_peak"]
        assert saved > 2 * (16384 - 1024)
    old = qemu.image_of(build_of("mbedtls-2.28.x:cortex-m7"))
    with pytest.raises(qemu.Unsupported, match="not in this build"):
        qemu.run(old, firmware.make_job(TLS13, tls="1.3", kx="psk"), timeout=120)


# ---------------------------------------------------------------------------- the other cores
# One image per core (the library chosen so that both are shown on ARMv6-M, v7-M, v7E-M and
# v8-M): its code is that core's (the ELF attributes), and a TLS 1.3 handshake runs on the
# core's board with identical counts in two runs.
CORE_CASES = {
    "cortex-m0": ("mbedtls-3.6.6", "v6S-M"),
    "cortex-m3": ("wolfssl-5.7.2", "v7"),
    "cortex-m4": ("wolfssl-5.7.2", "v7E-M"),
    "cortex-m33": ("mbedtls-3.6.6", "v8-M.mainline"),
    "cortex-m55": ("wolfssl-5.7.2", "v8.1-M.mainline"),
}


@pytest.mark.parametrize("arch", list(CORE_CASES))
def test_a_handshake_on_each_core(arch, build_of) -> None:
    line, tag = CORE_CASES[arch]
    build = build_of(f"{line}:{arch}")
    image = qemu.image_of(build)
    assert f"Tag_CPU_arch: {tag}\n" in elf_attributes(image)
    core = firmware.core_of(arch)
    job = firmware.make_job(TLS13, tls="1.3", cert="ecdsa-p256", group="x25519")
    result = qemu.measure(image, core, job, runs=2)  # refuses counts that differ
    assert result["machine"] == core.machine and result["core"] == arch
    for side in firmware.SIDES:
        assert result[side]["handshake_instructions"] > 1_000_000
        assert result[side]["heap_peak"] > 0 and result[side]["stack_high_water"] > 0
    sizes = {role: qemu.role_sizes(build, role) for role in firmware.SIDES}
    assert all(50_000 < s.text < 1_000_000 and s.bss > 0 for s in sizes.values())
    if line.startswith("wolfssl") and arch != "cortex-m0":
        # wolfSSL's Cortex-M (Thumb-2) assembly is what is built, not its ARM-mode one.
        members = subprocess.run(
            ["arm-none-eabi-ar", "t", build.manifest["link"]["library_files"][0]],
            capture_output=True, text=True, check=True,
        ).stdout  # fmt: skip
        assert "sp_cortexm.o" in members and "sp_arm32.o" not in members


# ---------------------------------------------------------------------------- the RISC-V core
# One image per library on rv32imc (riscv64-unknown-elf-gcc, picolibc, qemu-system-riscv32's
# virt board): its code is RV32IMC's, a TLS 1.3 handshake's counts agree in two runs, and
# wolfSSL's per-operation benchmarks run in its portable C maths.
ELF_MACHINE_RISCV = 243
EF_RISCV_RVC, EF_RISCV_FLOAT_ABI = 0x1, 0x6
RV32IMC = firmware.core_of("rv32imc")
needs_riscv = pytest.mark.skipif(
    bool(arches.missing_tools("rv32imc")),
    reason=f"missing {arches.missing_tools('rv32imc')} (make deps installs them)",
)


@needs_riscv
@pytest.mark.parametrize("line", ["mbedtls-3.6.6", "wolfssl-5.7.2"])
def test_a_handshake_on_rv32imc(line, build_of) -> None:
    build = build_of(f"{line}:rv32imc")
    image = qemu.image_of(build)
    header = image.read_bytes()[:40]
    assert header[:4] == b"\x7fELF" and header[4] == 1  # ELFCLASS32
    assert int.from_bytes(header[18:20], "little") == ELF_MACHINE_RISCV
    flags = int.from_bytes(header[36:40], "little")
    assert flags & EF_RISCV_RVC and not flags & EF_RISCV_FLOAT_ABI  # compressed, soft-float
    job = firmware.make_job(TLS13, tls="1.3", cert="ecdsa-p256", group="x25519")
    result = qemu.measure(image, RV32IMC, job, runs=2)
    assert result["machine"] == "virt" and result["core"] == "rv32imc"
    # minstret counts instructions themselves: the calibration loop reads one per tick.
    assert result["instructions_per_1000_ticks"] == 1000
    assert result["wire"]["group"] == "x25519" and result["client"]["verified"] == 1
    for side in firmware.SIDES:
        assert result[side]["handshake_instructions"] > 1_000_000
        assert result[side]["heap_peak"] > 0 and 0 < result[side]["stack_high_water"] < 64 * 1024
    assert "uncalibrated" in result["projection"]["calibration"]
    sizes = {role: qemu.role_sizes(build, role) for role in firmware.SIDES}
    assert all(50_000 < s.text < 1_000_000 and s.bss > 0 for s in sizes.values())
    if line.startswith("wolfssl"):
        # The portable C single-precision maths, no ARM assembly.
        members = subprocess.run(
            ["riscv64-unknown-elf-ar", "t", build.manifest["link"]["library_files"][0]],
            capture_output=True, text=True, check=True,
        ).stdout  # fmt: skip
        assert "sp_c32.o" in members and "sp_cortexm.o" not in members


@needs_riscv
def test_ops_on_rv32imc_are_exact_to_the_instruction(build_of) -> None:
    image = qemu.image_of(build_of("wolfssl-5.7.2:rv32imc"))
    result = qemu.measure_ops(image, RV32IMC, runs=2)
    assert result["resolution_instructions"] == 1 / firmware.OPERATION_BATCH
    ops = {op["name"]: op for op in result["ops"]}
    assert not [name for name, op in ops.items()
                if "instructions" not in op and name not in firmware.ML_DSA_OPERATIONS]  # fmt: skip
    assert all("ML-DSA" in ops[name]["unsupported"] for name in firmware.ML_DSA_OPERATIONS)
    assert ops["rsa2048_private"]["instructions"] > 10 * ops["rsa2048_public"]["instructions"]
    assert ops["p256_verify"]["instructions"] > ops["p256_sign"]["instructions"]
    assert all("uncalibrated" in p["calibration"] for p in result["projection"].values())


TINY = """
question = "Does a firmware point run and store like the others?"
repetitions = 2
timeout = 120

[defaults]
scenario = "handshake"
auth = "server"
chain = 1

[matrix]
variant = ["mbedtls-3.6.6:cortex-m7"]
tls = ["1.2"]
suite = ["TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256"]
cert = ["rsa2048"]
group = ["secp256r1"]

[[include]]
variant = "mbedtls-3.6.6:cortex-m7"
suite = "TLS_AES_128_GCM_SHA256"
tls = "1.3"
kx = "psk"

[[include]]
variant = "mbedtls-2.28.x:cortex-m7"
suite = "TLS_AES_128_GCM_SHA256"
tls = "1.3"
kx = "psk"

[[include]]
variant = "mbedtls-3.6.6:cortex-m7"
suite = "TLS_AES_128_GCM_SHA256"
tls = "1.3"
auth = "mutual"
"""


def test_experiment_point_stores_identical_counts_and_refuses_what_the_image_cannot_do(
    tmp_path, build_of
) -> None:
    from tlsbench.core.store import Store

    build_of("mbedtls-2.28.x:cortex-m7")
    experiment = tmp_path / "tiny-cortexm.toml"
    experiment.write_text(TINY)
    db = tmp_path / "t.db"
    done = subprocess.run(
        [str(paths.REPO / "tlsbench"), "run", str(experiment), "--db", str(db), "--quiet"],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    store = Store(db)
    points = {(p.variant, p.name): p for p in store.points(1)}
    ecdhe = next(p for (v, n), p in points.items() if "ecdhe_rsa" in n)
    counts = store.samples(ecdhe.id, "client_instructions")
    assert len(counts) == 2 and counts[0] == counts[1] > 1_000_000
    psk = points[("mbedtls-3.6.6:cortex-m7", "handshake_1.3_aes_128_gcm_sha256_psk")]
    assert 0 < store.samples(psk.id, "client_instructions")[0] < counts[0]
    for key, reason in [
        (("mbedtls-2.28.x:cortex-m7", "handshake_1.3_aes_128_gcm_sha256_psk"),
         "not in this build"),
        (("mbedtls-3.6.6:cortex-m7", "handshake_1.3_aes_128_gcm_sha256_chain1_mutual"),
         "auth = server only"),
    ]:  # fmt: skip
        results = store.results(points[key].id)
        assert {r["status"] for r in results} == {"unsupported"}
        assert reason in results[0]["output"]
    report = subprocess.run(
        [str(paths.REPO / "tlsbench"), "report", "latest", "--db", str(db), "--format", "md"],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert report.returncode == 0, report.stderr
    text = report.stdout
    # The firmware section answers first: RAM, flash, ms and whether it fits, per library.
    assert text.index("Firmware: does the TLS client fit") < text.index("Firmware detail")
    # The M7's ms are the cycle model's for its default part (no same-code point measures it).
    assert "cycle model of the Cortex-M7 (m7) and STM32F746 at 216 MHz" in text
    assert "auth = server only" in text
    assert text.index("Firmware: does the TLS client fit") < text.index("Handshake heap")


def test_code_size_of_a_cortex_m7_variant_is_thumb_code(build_of) -> None:
    from tlsbench.builds import codesize

    build = build_of(VARIANT)
    rows = codesize.as_rows(build, codesize.measure(build))
    assert {r["role"] for r in rows} == {"client", "server"}
    assert all(r["target"] == "cortex-m7" and 100_000 < r["text"] < 1_000_000 for r in rows)


# ---------------------------------------------------------------------------- wolfSSL


def test_wolfssl_image_is_thumb_code_with_the_library_and_the_wrapped_heap(wolfssl_image) -> None:
    header = wolfssl_image.read_bytes()[:20]
    assert header[:4] == b"\x7fELF" and header[4] == 1
    assert int.from_bytes(header[18:20], "little") == ELF_MACHINE_ARM
    symbols = subprocess.run(
        ["arm-none-eabi-nm", str(wolfssl_image)], capture_output=True, text=True, check=True
    ).stdout
    assert " T reset_handler" in symbols and "__wrap_malloc" in symbols
    assert "wolfSSL_connect" in symbols and "wolfSSL_accept" in symbols
    assert "mbedtls_ssl_handshake" not in symbols


def test_wolfssl_ecdhe_handshake_negotiates_what_was_asked_and_is_measured(wolfssl_image) -> None:
    result = qemu.run(wolfssl_image, ECDHE, "secp256r1")
    assert result["client"]["suite"] == ECDHE and result["wire"]["group"] == "secp256r1"
    assert result["library"] == "wolfssl" and result["library_version"] == "5.7.2"
    for side in firmware.SIDES:
        figures = result[side]
        assert figures["heap_peak"] > 0 and figures["allocations"] > 0
        assert 0 < figures["stack_high_water"] < 64 * 1024
        assert figures["handshake_instructions"] > 1_000_000
    # The server signs with RSA 2048 (a private-key operation): it costs more than the client.
    assert result["server"]["handshake_instructions"] > result["client"]["handshake_instructions"]


def test_wolfssl_static_rsa_counts_are_identical_across_runs(wolfssl_image) -> None:
    first = qemu.run(wolfssl_image, RSA, None)
    assert first["client"]["suite"] == RSA and first["wire"]["group"] == "none"
    second = qemu.run(wolfssl_image, RSA, None)
    for side in firmware.SIDES:
        assert first[side] == second[side]
        assert first[side]["heap_peak"] > 0


def test_wolfssl_suite_the_build_lacks_fails(wolfssl_image) -> None:
    with pytest.raises(UserError, match="cipher suite not in this build"):
        qemu.run(wolfssl_image, "TLS-RSA-WITH-NOTHING", None)


def test_wolfssl_code_size_of_the_cortex_m7_variant_is_thumb_code(build_of) -> None:
    from tlsbench.builds import codesize

    build = build_of(WOLFSSL_VARIANT)
    rows = codesize.as_rows(build, codesize.measure(build))
    assert {r["role"] for r in rows} == {"client", "server"}
    assert all(r["target"] == "cortex-m7" and 50_000 < r["text"] < 1_000_000 for r in rows)


def test_wolfssl_client_key_share_is_counted_in_the_handshake_not_the_set_up(build_of) -> None:
    """Issue 33: wolfSSL_UseKeyShare generates the client's TLS 1.3 key pair when it is
    called; in the set-up it left a key generation (~820,000 instructions for P-256 on the
    M4) out of the handshake's count. It is now the handshake's first step, so the client's
    set-up is the same with or without a key share, and asking for the library's default
    group (secp256r1) by name costs the handshake what not naming it does. And a psk_ke
    client generates no key share at all (wolfSSL sends one by default: NoKeyShares), so it
    does about the server's work (before: 1,484,240 instructions against 633,320)."""
    image = qemu.image_of(build_of("wolfssl-5.7.2:cortex-m4"))
    psk = run(image, suite=TLS13, tls="1.3", kx="psk")["client"]
    named = run(image, suite=TLS13, tls="1.3", kx="psk_dhe", group="secp256r1")
    default = run(image, suite=TLS13, tls="1.3", kx="psk_dhe")
    assert named["wire"]["group"] == default["wire"]["group"] == "secp256r1"
    # Set-up: configuration and the connection object only (a few hundred instructions
    # apart for wolfSSL_set_groups), never a key generation.
    assert abs(named["client"]["setup_instructions"] - psk["setup_instructions"]) < 5_000
    hs_named, hs_default = (r["client"]["handshake_instructions"] for r in (named, default))
    assert abs(hs_named - hs_default) < hs_default // 100, (hs_named, hs_default)
    server = run(image, suite=TLS13, tls="1.3", kx="psk")["server"]
    assert psk["handshake_instructions"] < 1.25 * server["handshake_instructions"]
    # psk_dhe_ke costs the client its key generation and ECDH, in the handshake.
    assert hs_named - psk["handshake_instructions"] > 1_000_000


# -- per-operation benchmarks (mode=ops) -----------------------------------------------------


def test_ops_counts_are_identical_run_to_run_and_independent_of_the_batch(wolfssl_image) -> None:
    first = qemu.run_ops(wolfssl_image, M7)
    second = qemu.run_ops(wolfssl_image, M7)
    assert first["ops"] == second["ops"]
    ops = {op["name"]: op for op in first["ops"]}
    assert list(ops) == list(firmware.OPERATIONS)
    for name in firmware.ML_DSA_OPERATIONS:  # the default build has no ML-DSA: said why
        assert "ML-DSA" in ops.pop(name)["unsupported"]
    assert not [name for name, op in ops.items() if "instructions" not in op]  # the rest counted
    # A batch of 2 counts the same operation: the loop's own cost is subtracted, and what is
    # left differs by the two batches' resolutions, and by what the keys do to code that needs
    # not be constant-time (verification): the DRBG has run on differently by then.
    halves = {op["name"]: op for op in qemu.run_ops(wolfssl_image, M7, batch=2)["ops"]}
    slack = first["resolution_instructions"] + first["instructions_per_1000_ticks"] / 1000 / 2
    for name, op in ops.items():
        difference = abs(op["instructions"] - halves[name]["instructions"])
        assert difference <= slack + op["instructions"] / 1000, name
    # wolfSSL's SP code: ECDSA verify (a base-point and a variable-point multiplication) costs
    # more than sign; an RSA private operation (CRT, 1024-bit exponents) far more than public.
    assert ops["p256_verify"]["instructions"] > ops["p256_sign"]["instructions"]
    assert ops["rsa2048_private"]["instructions"] > 10 * ops["rsa2048_public"]["instructions"]
    for op in ops.values():
        low, high = op["projected_ms"]
        assert 0 < low < high and op["stack_high_water"] > 0


def test_mbedtls_ops_and_an_operation_the_build_lacks_is_unsupported_with_its_reason(
    image, build_of
) -> None:
    ops = {op["name"]: op for op in qemu.measure_ops(image, M7, runs=2)["ops"]}
    assert ops["rsa2048_private"]["instructions"] > 10 * ops["rsa2048_public"]["instructions"]
    assert ops["p256_verify"]["instructions"] > ops["p256_sign"]["instructions"]
    # mbedTLS allocates its bignums: the heap per operation is seen.
    assert ops["p256_ecdh"]["heap_peak"] > 0 and ops["p256_ecdh"]["allocations"] > 0
    small = qemu.run_ops(qemu.image_of(build_of(VARIANT + ",small")), M7)
    lacking = {op["name"]: op for op in small["ops"]}["chacha20poly1305_kib"]
    assert "instructions" not in lacking
    assert "MBEDTLS_CHACHAPOLY_C" in lacking["unsupported"]


def test_the_ops_command_prints_instructions_per_operation(build_of) -> None:
    build_of(WOLFSSL_VARIANT)
    done = subprocess.run(
        [str(paths.REPO / "tlsbench"), "cortex-m", WOLFSSL_VARIANT, "--ops", "--quiet"],
        capture_output=True, text=True, timeout=600, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "ECDSA P-256 verify" in done.stdout and "SHA-256 per KiB" in done.stdout
    refused = subprocess.run(
        [str(paths.REPO / "tlsbench"), "cortex-m", WOLFSSL_VARIANT, "--ops", "--tls", "1.3"],
        capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert refused.returncode == 2 and "--tls" in refused.stderr
