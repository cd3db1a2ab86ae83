"""The configuration files the libraries ship, as a user gives them: every mbedTLS
`configs/*.h` of the pinned 3.6.6 archive as `config=`, and wolfSSL's `user_settings.h`
examples for Cortex-M boards (IDE/) as `user-settings=`, each on x86-64 and on the Cortex-M4
with a job it can do. Each one builds and hands back figures, or is refused before anything
is built, with the reason: never a compiler log first.

The jobs: TLS 1.2 ECDHE-ECDSA with AES-128-GCM over P-256 (what Suite B and the boards'
ECC files are for), and the PSK suite with AES-128-CCM-8 for the CCM-PSK configs. Cost: the
files that run build once per target (4 builds, cached by content); the refusals build
nothing (a preprocessor run each).

An SDK's own configuration: the ESP-IDF-style pair of docs/examples/esp-idf (an ESP32 TLS
client's sdkconfig and a header of esp_config.h's form) as kconfig= and config= on the
Cortex-M4, with an ECDHE-RSA handshake (one more build, which the page's command of
docs/own-code.md shares), and its client-only sdkconfig refused before anything is built.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from drivers import tlsbench
from tlsbench.builds import arches
from tlsbench.builds.sources import Sources
from tlsbench.core import paths

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(
        bool(arches.missing_tools("cortex-m4")),
        reason=f"missing {arches.missing_tools('cortex-m4')} (make deps installs them)",
    ),
]

ECDSA = ("TLS-ECDHE-ECDSA-WITH-AES-128-GCM-SHA256", ["--group", "secp256r1"],
         ["--cert", "ecdsa-p256", "--group", "secp256r1"])  # fmt: skip
PSK = ("TLS-PSK-WITH-AES-128-CCM-8", [], ["--kx", "psk"])
# file -> (job, what x86-64 gives, what the Cortex-M4 gives): None when it builds and runs,
# else a line the refusal must hold.
MBEDTLS = {
    "config-suite-b.h": (ECDSA, None, None),
    # tlsbench's pre-shared key is 32 bytes; these files allow 16.
    "config-ccm-psk-tls1_2.h": (PSK, "#define MBEDTLS_PSK_MAX_LEN 32",
                                "#define MBEDTLS_PSK_MAX_LEN 32"),
    "config-ccm-psk-dtls1_2.h": (PSK, "#define MBEDTLS_PSK_MAX_LEN 32",
                                 "#define MBEDTLS_PSK_MAX_LEN 32"),
    # No TLS at all: crypto-only configurations.
    "config-no-entropy.h": (ECDSA, "#define MBEDTLS_SSL_TLS_C", "#define MBEDTLS_SSL_TLS_C"),
    "config-symmetric-only.h": (ECDSA, "#define MBEDTLS_SSL_TLS_C", "#define MBEDTLS_SSL_TLS_C"),
    "config-tfm.h": (ECDSA, "#define MBEDTLS_SSL_TLS_C", "#define MBEDTLS_SSL_TLS_C"),
    "crypto-config-ccm-aes-sha256.h": (ECDSA, "#define MBEDTLS_SSL_TLS_C",
                                       "#define MBEDTLS_SSL_TLS_C"),
    # Thread's EC J-PAKE suite alone.
    "config-thread.h": (ECDSA, "to MBEDTLS_SSL_CIPHERSUITES", "to MBEDTLS_SSL_CIPHERSUITES"),
}  # fmt: skip
# wolfSSL's examples for Cortex-M boards, without a vendor SDK's crypto drivers. The native
# driver sends the server's name (SNI), which none of them turns on.
NO_SNI = "SNI (the driver sends the server's name): #define HAVE_SNI"
WOLFSSL = {
    "GCC-ARM/Header/user_settings.h": (ECDSA, NO_SNI, None),
    # Curve25519 and Ed25519 without their small-memory code, the only one configure
    # compiles for a user_settings.h (wolfSSL 5.7.2): refused, not a link error.
    "ROWLEY-CROSSWORKS-ARM/user_settings.h": (ECDSA, "#define CURVED25519_SMALL",
                                              "#define CURVED25519_SMALL"),
    "MDK5-ARM/Conf/user_settings.h": (ECDSA, NO_SNI, None),
    # A client-only library: the images and drivers run both sides.
    "LPCXPRESSO/lib_wolfssl/user_settings.h": (ECDSA, "#undef NO_WOLFSSL_SERVER",
                                               "#undef NO_WOLFSSL_SERVER"),
    # Neither AES-GCM nor ECC.
    "TRUESTUDIO/wolfssl/user_settings.h": (ECDSA, "#define HAVE_AESGCM", "#define HAVE_AESGCM"),
    # Includes its SDK's device header.
    "SimplicityStudio/user_settings.h": (ECDSA, "em_device.h", "em_device.h"),
}  # fmt: skip


def run_job(cwd: Path, spec: str, target: str, job: tuple) -> subprocess.CompletedProcess[str]:
    suite, firmware_args, driver_args = job
    if target == "cortex-m4":
        return tlsbench("cortex-m", spec.replace(":", ":cortex-m4,", 1), "--suite", suite,
                        *firmware_args, "--runs", "1", cwd=cwd)  # fmt: skip
    return tlsbench("drive", "--measure", "heap", spec, "handshake", "--tls", "1.2", "--suite",
                    suite.replace("-", "_"), *driver_args, "--iterations", "1",
                    cwd=cwd)  # fmt: skip


def check(done: subprocess.CompletedProcess[str], refused: str | None, target: str) -> None:
    said = done.stdout + done.stderr
    if refused is None:
        assert done.returncode == 0, said[-3000:]
        if target == "cortex-m4":
            assert "every count identical over 1 runs" in done.stdout, said[-3000:]
        else:
            assert "negotiated TLS 1.2" in said and "heap client" in said, said[-3000:]
        return
    assert done.returncode == 2, said[-3000:]
    assert refused in done.stderr, done.stderr
    assert "building" not in done.stderr and "Traceback" not in done.stderr, done.stderr


def test_every_mbedtls_config_the_archive_ships_is_classified() -> None:
    shipped = {p.name for p in (Sources().source_dir("mbedtls-3.6.6") / "configs").glob("*.h")}
    assert shipped == set(MBEDTLS)


@pytest.mark.parametrize("target", ["x86_64", "cortex-m4"])
@pytest.mark.parametrize("name", sorted(MBEDTLS))
def test_an_mbedtls_config_file_builds_and_runs_or_is_refused_up_front(
    name: str, target: str, tmp_path: Path
) -> None:
    job, native, firmware = MBEDTLS[name]
    config = Sources().source_dir("mbedtls-3.6.6") / "configs" / name
    done = run_job(tmp_path, f"mbedtls-3.6.6:config={config}", target, job)
    check(done, native if target == "x86_64" else firmware, target)


@pytest.mark.parametrize("target", ["x86_64", "cortex-m4"])
@pytest.mark.parametrize("name", sorted(WOLFSSL))
def test_a_wolfssl_user_settings_example_builds_and_runs_or_is_refused_up_front(
    name: str, target: str, tmp_path: Path
) -> None:
    job, native, firmware = WOLFSSL[name]
    settings = Sources().source_dir("wolfssl-5.7.2") / "IDE" / name
    done = run_job(tmp_path, f"wolfssl-5.7.2:user-settings={settings}", target, job)
    check(done, native if target == "x86_64" else firmware, target)


def test_the_platform_replacements_are_named_and_stored(tmp_path: Path) -> None:
    """Suite B on the Cortex-M4: its sockets and clock are the board's, replaced and named
    in the output, and in the stored build (tlsbench build --json)."""
    config = Sources().source_dir("mbedtls-3.6.6") / "configs" / "config-suite-b.h"
    done = tlsbench("build", f"mbedtls-3.6.6:cortex-m4,config={config}", "--json", cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    line = f"{config}: #define MBEDTLS_NET_C -> MBEDTLS_NET_C undefined (the cortex-m4 platform's)"
    assert line in done.stderr

    (built,) = json.loads(done.stdout)
    assert line in built["platform_replaced"]
    assert built["options"]["platform"]["MBEDTLS_NET_C"] == "!"


ESP_IDF = paths.REPO / "docs" / "examples" / "esp-idf"
ESP32_CLIENT_JOB = "TLS-ECDHE-RSA-WITH-AES-128-GCM-SHA256"


def esp_idf_spec(sdkconfig: str) -> str:
    return (
        f"mbedtls-3.6.6:cortex-m4,kconfig={ESP_IDF / sdkconfig},config={ESP_IDF / 'esp_config.h'}"
    )


def test_an_esp_idf_pair_builds_and_hands_back_heap_per_side(tmp_path: Path) -> None:
    """The sdkconfig's CONFIG_ values reach the library (its 4096-byte fragments are the
    record buffers both sides report), the chip's engines and allocator are replaced and
    named, and each side's heap comes back."""
    done = tlsbench("cortex-m", esp_idf_spec("sdkconfig"), "--suite", ESP32_CLIENT_JOB,
                    "--runs", "1", "--json", cwd=tmp_path)  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    (row,) = json.loads(done.stdout)
    client, server = row["client"], row["server"]
    assert (client["record"], server["record"]) == (4096, 4096)
    assert client["verified"] == 1  # the client checked the server's chain
    assert client["heap_peak"] > 0 and server["heap_peak"] > 0
    header = ESP_IDF / "esp_config.h"
    for replaced in (
        f"{header}: #define MBEDTLS_AES_ALT -> MBEDTLS_AES_ALT undefined (the cortex-m4 "
        "platform's)",
        f"{header}: #define MBEDTLS_PLATFORM_STD_CALLOC esp_mbedtls_mem_calloc -> "
        "MBEDTLS_PLATFORM_STD_CALLOC undefined (the cortex-m4 platform's)",
        f'{header}: #include "esp_mem.h" -> the cortex-m4 platform\'s',
        f'{header}: #include "soc/soc_caps.h" -> the cortex-m4 platform\'s',
    ):
        assert replaced in done.stderr, done.stderr


def test_a_client_only_sdkconfig_is_refused_with_the_option_that_gives_the_server(
    tmp_path: Path,
) -> None:
    """The image runs both sides from one build: the client role alone is refused before
    anything is built, with the CONFIG_ option the header reads for the server."""
    done = tlsbench("cortex-m", esp_idf_spec("sdkconfig.client-only"), "--suite",
                    ESP32_CLIENT_JOB, "--runs", "1", cwd=tmp_path)  # fmt: skip
    check(done, "a TLS server (both sides run): CONFIG_MBEDTLS_TLS_SERVER=y (esp_config.h: "
          "MBEDTLS_SSL_SRV_C", "cortex-m4")  # fmt: skip
