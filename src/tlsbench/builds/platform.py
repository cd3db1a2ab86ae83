"""The platform a build runs on, which tlsbench provides: the macros of a library's
configuration that say how it reaches the network, a clock, an entropy source, a file
system and threads.

A user's configuration file (config=, user-config=, user-settings=: configfiles.py) is
written for her board's platform layer: her sockets, her clock, her entropy source. On
tlsbench's targets the platform is tlsbench's: QEMU's bare-metal board with the firmware's
own I/O, a deterministic test entropy source and no clock, file system, threads or operating
system; or Linux,
where the native driver reads its credentials from PEM files and the library seeds itself
from the kernel. So the build owns these macros: whatever the file says about them, the
target's values replace it (after the file, so that they win), and each replacement is
named in the build's output and in its stored options. The file's algorithms, sizes and
features are what is measured, as written.

Values as in variants.toml: "" defined empty, "!" left undefined, anything else the value.
"""

from __future__ import annotations

import re
import subprocess
import tempfile
from pathlib import Path

from tlsbench.builds import configfiles

UNDEFINED = configfiles.UNDEFINED

# mbedTLS on the firmware board: what the cortex-m features of variants.toml set, and the
# threading and seed-file options a board's file may carry (newlib has no pthreads).
MBEDTLS_FIRMWARE = {
    "MBEDTLS_NET_C": UNDEFINED,  # sockets: the image's own transport
    "MBEDTLS_TIMING_C": UNDEFINED,  # a clock
    "MBEDTLS_HAVE_TIME": UNDEFINED,
    "MBEDTLS_HAVE_TIME_DATE": UNDEFINED,
    "MBEDTLS_PLATFORM_TIME_ALT": UNDEFINED,
    "MBEDTLS_PLATFORM_MS_TIME_ALT": UNDEFINED,
    "MBEDTLS_FS_IO": UNDEFINED,  # a file system
    "MBEDTLS_PSA_ITS_FILE_C": UNDEFINED,
    "MBEDTLS_PSA_CRYPTO_STORAGE_C": UNDEFINED,
    "MBEDTLS_PSA_CRYPTO_SE_C": UNDEFINED,  # a secure element (and its key storage)
    "MBEDTLS_ENTROPY_NV_SEED": UNDEFINED,  # a seed file
    "MBEDTLS_NO_PLATFORM_ENTROPY": "",  # entropy: the firmware's test source
    "MBEDTLS_ENTROPY_HARDWARE_ALT": "",
    "MBEDTLS_THREADING_C": UNDEFINED,  # threads
    "MBEDTLS_THREADING_PTHREAD": UNDEFINED,
    "MBEDTLS_THREADING_ALT": UNDEFINED,
    "MBEDTLS_AESNI_C": UNDEFINED,  # x86 instructions
    "MBEDTLS_PADLOCK_C": UNDEFINED,
}
# mbedTLS on Linux: the driver reads PEM files (certificates, keys) and the library seeds
# itself from the kernel, not from a board's hardware source or seed file.
MBEDTLS_NATIVE = {
    "MBEDTLS_FS_IO": "",
    "MBEDTLS_PEM_PARSE_C": "",
    "MBEDTLS_BASE64_C": "",
    "MBEDTLS_NO_PLATFORM_ENTROPY": UNDEFINED,
    "MBEDTLS_ENTROPY_HARDWARE_ALT": UNDEFINED,
    "MBEDTLS_ENTROPY_NV_SEED": UNDEFINED,
    "MBEDTLS_PLATFORM_TIME_ALT": UNDEFINED,
    "MBEDTLS_PLATFORM_MS_TIME_ALT": UNDEFINED,
    "MBEDTLS_THREADING_ALT": UNDEFINED,
}
# A board's own hooks for time and randomness, which name functions of her platform layer.
WOLFSSL_BOARD_HOOKS = {
    "XTIME": UNDEFINED,
    "XGMTIME": UNDEFINED,
    "TIME_OVERRIDES": UNDEFINED,
    "USER_TIME": UNDEFINED,
    "USER_TICKS": UNDEFINED,
    "WOLFSSL_USER_CURRTIME": UNDEFINED,
    "WOLFSSL_GMTIME": UNDEFINED,
    "CUSTOM_RAND_TYPE": UNDEFINED,
    "CUSTOM_RAND_GENERATE": UNDEFINED,
    "CUSTOM_RAND_GENERATE_BLOCK": UNDEFINED,
}
# A board's operating system, which selects its threads, sockets and clock (wc_port.h
# includes its headers): tlsbench's targets have none of them (bare metal, or Linux).
WOLFSSL_OPERATING_SYSTEMS = {
    name: UNDEFINED
    for name in (
        "FREERTOS", "FREERTOS_TCP", "WOLFSSL_SAFERTOS", "MICRIUM", "EBSNET",
        "WOLFSSL_CMSIS_RTOS", "WOLFSSL_CMSIS_RTOSv2", "WOLFSSL_MDK_ARM", "WOLFSSL_MDK5",
        "WOLFSSL_KEIL_TCP_NET", "WOLFSSL_TIRTOS", "WOLFSSL_FROSTED", "WOLFSSL_uITRON4",
        "WOLFSSL_uTKERNEL2", "THREADX", "NETX", "WOLFSSL_ZEPHYR", "WOLFSSL_VXWORKS",
        "WOLFSSL_NUCLEUS_1_2", "WOLFSSL_APACHE_MYNEWT", "WOLFSSL_DEOS", "INTIME_RTOS",
        "WOLFSSL_EMBOS", "WOLFSSL_LWIP", "WOLFSSL_CHIBIOS",
    )
}  # fmt: skip
# wolfSSL on the firmware board: what the cortex-m features' -D flags set (no sockets, file
# system, threads or clock; the firmware's test seed).
WOLFSSL_FIRMWARE = {
    **WOLFSSL_BOARD_HOOKS,
    **WOLFSSL_OPERATING_SYSTEMS,
    "WOLFSSL_USER_IO": "",
    "WOLFSSL_NO_SOCK": "",
    "NO_WRITEV": "",
    "NO_DEV_RANDOM": "",
    "NO_FILESYSTEM": "",
    "SINGLE_THREADED": "",
    "NO_ASN_TIME": "",
    "CUSTOM_RAND_GENERATE_SEED": "tlsbench_test_seed",
}
# wolfSSL on Linux: the driver reads PEM files; the library seeds itself from /dev/urandom.
WOLFSSL_NATIVE = {
    **WOLFSSL_BOARD_HOOKS,
    **WOLFSSL_OPERATING_SYSTEMS,
    "NO_FILESYSTEM": UNDEFINED,
    "NO_DEV_RANDOM": UNDEFINED,
    "CUSTOM_RAND_GENERATE_SEED": UNDEFINED,
    "WOLFSSL_NO_SOCK": UNDEFINED,
}
PLATFORMS = {
    ("mbedtls", True): MBEDTLS_FIRMWARE,
    ("mbedtls", False): MBEDTLS_NATIVE,
    ("wolfssl", True): WOLFSSL_FIRMWARE,
    ("wolfssl", False): WOLFSSL_NATIVE,
}


def owned(library: str, firmware: bool) -> dict[str, str]:
    """The macros the target's platform owns, with its values (none for a library that takes
    no configuration header)."""
    return dict(PLATFORMS.get((library, firmware), {}))


def replacements(
    files: list[configfiles.ConfigFile], platform: dict[str, str], target: str
) -> list[str]:
    """What each file says about a platform macro that the target says otherwise: one line
    each, naming the file, its setting and the target's."""
    found = []
    for config in files:
        if config.option not in ("config", "user-config", "user-settings"):
            continue
        whole = config.option in ("config", "user-settings")  # not layered on a default
        said = (_preprocessed(config) if whole else None) or configfiles.macros_of(config.text)
        for name, ours in platform.items():
            theirs = said.get(name)
            if theirs == ours or (theirs is None and (ours == UNDEFINED or not whole)):
                continue  # agrees, or is left to the target's value anyway
            was = "left out" if theirs is None else configfiles.setting(name, theirs)
            found.append(f"{config.path}: {was} -> {configfiles.setting(name, ours)} "
                         f"(the {target} platform's)")  # fmt: skip
    return found


def _preprocessed(config: configfiles.ConfigFile) -> dict[str, str] | None:
    """What a whole file defines once its own `#if` blocks are evaluated (the C
    preprocessor, on the file alone), so that a macro of a branch it does not take is not
    named as replaced; None where the file does not preprocess alone (its includes are
    its SDK's): then it is read line by line."""
    with tempfile.TemporaryDirectory(prefix="tlsbench-platform-") as folder:
        header = Path(folder) / "config.h"
        header.write_text(config.text)
        proc = subprocess.run(
            ["gcc", "-E", "-dM", f"-I{Path(config.path).parent}", "-x", "c", str(header)],
            capture_output=True, text=True, check=False,
        )  # fmt: skip
    if proc.returncode != 0:
        return None
    found = {}
    for line in proc.stdout.splitlines():
        match = re.match(r"#define (\w+)(?:\s+(.*))?$", line)
        if match and not match.group(1).startswith("__"):
            found[match.group(1)] = " ".join((match.group(2) or "").split())
    return found
