"""Cortex-M7 firmware images: built per variant with arm-none-eabi-gcc and newlib, run on
QEMU's mps2-an500 with -icount; one TLS 1.2 handshake per run, measured per side."""

from __future__ import annotations

import os
import subprocess

import pytest

from tlsbench import arches, cortexm, paths
from tlsbench.errors import UserError
from tlsbench.variants import Catalog

VARIANT = "mbedtls-3.6.6:cortex-m7"
ECDHE = "TLS-ECDHE-RSA-WITH-AES-128-GCM-SHA256"
RSA = "TLS-RSA-WITH-AES-256-CBC-SHA256"
ELF_MACHINE_ARM = 40

pytestmark = pytest.mark.skipif(
    bool(arches.missing_tools("cortex-m7")),
    reason=f"missing {arches.missing_tools('cortex-m7')} (make deps installs them)",
)


@pytest.fixture(scope="module")
def image(build_of):
    return cortexm.image_of(build_of(VARIANT))


def test_feature_is_bare_metal_with_a_test_entropy_source(catalog: Catalog) -> None:
    variant = catalog.resolve(VARIANT)
    assert variant.arch == "cortex-m7"
    assert "MBEDTLS_ENTROPY_HARDWARE_ALT" in variant.macros
    assert variant.macros["MBEDTLS_FS_IO"] == "!" and variant.macros["MBEDTLS_NET_C"] == "!"
    assert "MBEDTLS_DEBUG_C" not in variant.macros  # the library's default: debug module on
    assert catalog.resolve(VARIANT + ",no-debug").macros["MBEDTLS_DEBUG_C"] == "!"


def test_image_is_a_32_bit_arm_elf_whose_vectors_start_it(image) -> None:
    header = image.read_bytes()[:20]
    assert header[:4] == b"\x7fELF" and header[4] == 1  # ELFCLASS32
    assert int.from_bytes(header[18:20], "little") == ELF_MACHINE_ARM
    symbols = subprocess.run(
        ["arm-none-eabi-nm", str(image)], capture_output=True, text=True, check=True
    ).stdout
    assert " T reset_handler" in symbols and "__wrap_calloc" in symbols
    assert "mbedtls_ssl_handshake" in symbols


def test_one_ecdhe_handshake_negotiates_what_was_asked_and_is_measured(image) -> None:
    result = cortexm.run(image, ECDHE, "secp256r1", timeout=60)
    assert (result["version"], result["suite"], result["group"]) == ("TLSv1.2", ECDHE, "secp256r1")
    assert result["library_version"] == "3.6.6"
    for side in cortexm.SIDES:
        figures = result[side]
        assert figures["heap_peak"] > 0 and figures["allocations"] > 0
        assert 0 < figures["stack_high_water"] < 64 * 1024
        # An ECDHE handshake with an RSA 2048 certificate is millions of instructions.
        assert figures["handshake_instructions"] > 1_000_000
        assert figures["projected_ms"] == cortexm.projected_ms(figures["handshake_instructions"])
    # The server signs with RSA 2048 (a private-key operation): it costs more than the client.
    assert result["server"]["handshake_instructions"] > result["client"]["handshake_instructions"]


def test_group_is_read_back_from_the_wire_not_from_the_request(image) -> None:
    default = cortexm.run(image, ECDHE, None, timeout=60)
    assert default["group"] == "x25519"  # mbedTLS 3.6's first preference, unasked
    rsa = cortexm.run(image, RSA, None, timeout=60)
    assert rsa["group"] == "none" and rsa["suite"] == RSA  # static RSA: no key exchange group


def test_instruction_counts_are_identical_across_runs(image) -> None:
    first = cortexm.run(image, RSA, None, timeout=60)
    second = cortexm.run(image, RSA, None, timeout=60)
    for side in cortexm.SIDES:
        assert first[side] == second[side]
    assert cortexm.measure(image, RSA, None, runs=2)["client"] == first["client"]


def test_a_suite_the_build_lacks_fails_and_qemu_is_bounded(image) -> None:
    with pytest.raises(UserError, match="cipher suite not in this build"):
        cortexm.run(image, "TLS-RSA-WITH-NOTHING", None, timeout=60)
    with pytest.raises(UserError, match="did not finish within"):
        cortexm.run(image, RSA, None, timeout=0.2)


def test_cli_refuses_a_variant_without_the_feature_and_prints_figures() -> None:
    refused = subprocess.run(
        [str(paths.REPO / "tlsbench"), "cortex-m", "mbedtls-3.6.6", "--suite", RSA, "--quiet"],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert refused.returncode != 0 and "cortex-m7 feature" in refused.stderr
    done = subprocess.run(
        [str(paths.REPO / "tlsbench"), "cortex-m", VARIANT, "--suite", ECDHE, "--quiet"],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert ECDHE in done.stdout and "CPI 1.0 / 216 MHz" in done.stdout


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
    assert cortexm.check_suite("tls_ecdhe_rsa_with_aes_128_gcm_sha256") == ECDHE


TINY = """
question = "Does a Cortex-M7 firmware point run and store like the others?"
repetitions = 2
timeout = 120

[defaults]
scenario = "handshake"
tls = "1.2"
cert = "rsa2048"
auth = "server"
chain = 1
group = "secp256r1"

[matrix]
variant = ["mbedtls-3.6.6:cortex-m7"]
suite = ["TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256"]

[[include]]
variant = "mbedtls-3.6.6:cortex-m7"
suite = "TLS_AES_128_GCM_SHA256"
tls = "1.3"
"""


def test_experiment_point_stores_identical_counts_and_refuses_what_the_image_cannot_do(
    tmp_path,
) -> None:
    from tlsbench.store import Store

    experiment = tmp_path / "tiny-cortexm.toml"
    experiment.write_text(TINY)
    db = tmp_path / "t.db"
    done = subprocess.run(
        [str(paths.REPO / "tlsbench"), "run", str(experiment), "--db", str(db), "--quiet"],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    store = Store(db)
    points = {p.name: p for p in store.points(1)}
    ecdhe = next(p for n, p in points.items() if "ecdhe" in n)
    counts = store.samples(ecdhe.id, "client_instructions")
    assert len(counts) == 2 and counts[0] == counts[1] > 1_000_000
    assert (
        store.samples(ecdhe.id, "client_projected_ms") == [cortexm.projected_ms(int(counts[0]))] * 2
    )
    tls13 = next(p for n, p in points.items() if "1.3" in n)
    assert store.done_repetitions(tls13.id)  # stored as unsupported, with its reason
    assert not store.samples(tls13.id, "client_instructions")
    report = subprocess.run(
        [str(paths.REPO / "tlsbench"), "report", "latest", "--db", str(db), "--format", "md"],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert report.returncode == 0, report.stderr
    assert "projected ms" in report.stdout and "runs tls = 1.2 only" in report.stdout


def test_code_size_of_a_cortex_m7_variant_is_thumb_code(build_of) -> None:
    from tlsbench import codesize

    build = build_of(VARIANT)
    rows = codesize.as_rows(build, codesize.measure(build))
    assert {r["role"] for r in rows} == {"client", "server"}
    assert all(r["target"] == "cortex-m7" and 100_000 < r["text"] < 1_000_000 for r in rows)


# ---------------------------------------------------------------------------- wolfSSL
WOLFSSL_VARIANT = "wolfssl-5.7.2:cortex-m7"


@pytest.fixture(scope="module")
def wolfssl_image(build_of):
    return cortexm.image_of(build_of(WOLFSSL_VARIANT))


def test_wolfssl_feature_is_bare_metal_with_a_test_seed(catalog: Catalog) -> None:
    variant = catalog.resolve(WOLFSSL_VARIANT)
    assert variant.arch == "cortex-m7"
    assert "--disable-filesystem" in variant.configure
    assert "--enable-singlethreaded" in variant.configure
    assert "-DWOLFSSL_USER_IO" in variant.cflags
    assert "-DCUSTOM_RAND_GENERATE_SEED=tlsbench_test_seed" in variant.cflags


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
    result = cortexm.run(wolfssl_image, ECDHE, "secp256r1", timeout=60)
    assert (result["version"], result["suite"], result["group"]) == ("TLSv1.2", ECDHE, "secp256r1")
    assert result["library"] == "wolfssl" and result["library_version"] == "5.7.2"
    for side in cortexm.SIDES:
        figures = result[side]
        assert figures["heap_peak"] > 0 and figures["allocations"] > 0
        assert 0 < figures["stack_high_water"] < 64 * 1024
        assert figures["handshake_instructions"] > 1_000_000
    # The server signs with RSA 2048 (a private-key operation): it costs more than the client.
    assert result["server"]["handshake_instructions"] > result["client"]["handshake_instructions"]


def test_wolfssl_static_rsa_counts_are_identical_across_runs(wolfssl_image) -> None:
    first = cortexm.run(wolfssl_image, RSA, None, timeout=60)
    assert first["suite"] == RSA and first["group"] == "none"
    second = cortexm.run(wolfssl_image, RSA, None, timeout=60)
    for side in cortexm.SIDES:
        assert first[side] == second[side]
        assert first[side]["heap_peak"] > 0


def test_wolfssl_suite_the_build_lacks_fails(wolfssl_image) -> None:
    with pytest.raises(UserError, match="cipher suite not in this build"):
        cortexm.run(wolfssl_image, "TLS-RSA-WITH-NOTHING", None, timeout=60)


def test_wolfssl_code_size_of_the_cortex_m7_variant_is_thumb_code(build_of) -> None:
    from tlsbench import codesize

    build = build_of(WOLFSSL_VARIANT)
    rows = codesize.as_rows(build, codesize.measure(build))
    assert {r["role"] for r in rows} == {"client", "server"}
    assert all(r["target"] == "cortex-m7" and 50_000 < r["text"] < 1_000_000 for r in rows)
