"""The split's group rules and the side order of the measured calls (no image needed)."""

from __future__ import annotations

from tlsbench.embedded import profile


def test_group_rules_follow_the_source_files_of_both_libraries() -> None:
    assert profile.group_of("sp_256_mont_mul_8", "sp_cortexm.c", "library") == "public_key"
    assert profile.group_of("mbedtls_mpi_core_mla", "bignum_core.c", "library") == "public_key"
    assert profile.group_of("Transform_Sha256", "sha256.c", "library") == "hashing"
    assert profile.group_of("mbedtls_gcm_update", "gcm.c", "library") == "symmetric"
    assert profile.group_of("ParseCertRelative", "asn.c", "library") == "asn1_x509"
    assert profile.group_of("mbedtls_x509_crt_parse_der", "x509_crt.c", "library") == "asn1_x509"
    assert profile.group_of("DoTls13HandShakeMsg", "tls13.c", "library") == "tls"
    assert profile.group_of("mbedtls_ssl_handshake_step", "ssl_tls.c", "library") == "tls"
    # Allocators by name wherever they are linked from, before the C library's rule.
    assert profile.group_of("__wrap_malloc", "", "firmware") == "memory"
    assert profile.group_of("_malloc_r", "lib_a-mallocr.c", "libc") == "memory"
    assert profile.group_of("memcpy", "lib_a-memcpy.c", "libc") == "libc"
    assert profile.group_of("fw_send", "firmware_core.c", "firmware") == "harness"
    assert profile.group_of("wc_RNG_GenerateBlock", "random.c", "library") == "other"


def test_measured_calls_alternate_until_one_side_is_done() -> None:
    assert profile.call_order({"client": 2, "server": 2}) == "cscs"
    assert profile.call_order({"client": 4, "server": 2}) == "cscscc"
    assert profile.call_order({"client": 1, "server": 3}) == "csss"
