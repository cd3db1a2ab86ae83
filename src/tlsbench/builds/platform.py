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

A board's file may also name her own implementations: mbedTLS's `*_ALT` macros (her crypto
engines, ROM code, zeroize; ESP-IDF's `*_ALT_FALLBACK` and `*_ALT_SOFT_FALLBACK`) and her
allocator (`MBEDTLS_PLATFORM_STD_CALLOC` / `_FREE`, `MBEDTLS_PLATFORM_CALLOC_MACRO` /
`_FREE_MACRO`). tlsbench's targets have none of them: every such macro a file's lines define
(under any condition) is the platform's too, left undefined, so that the library's own code
and the C library's calloc and free (which the firmware's heap accounting wraps) run.

An SDK's header driven by Kconfig (kconfig=: kconfig.py) also includes the SDK's own headers:
those tlsbench knows (SDK_HEADERS: ESP-IDF's chip capabilities and its allocator) are
replaced by the target's, written beside the variant's config headers, and each one the
header includes is named as a replacement too.

Values as in variants.toml: "" defined empty, "!" left undefined, anything else the value.
"""

from __future__ import annotations

import re
import subprocess
import tempfile
from pathlib import Path

from tlsbench.builds import configfiles, kconfig

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
    "MBEDTLS_NO_DEFAULT_ENTROPY_SOURCES": UNDEFINED,  # the test source is a default one
    "MBEDTLS_PSA_CRYPTO_EXTERNAL_RNG": UNDEFINED,  # a board's random generator for PSA
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
    "MBEDTLS_NO_DEFAULT_ENTROPY_SOURCES": UNDEFINED,
    "MBEDTLS_PSA_CRYPTO_EXTERNAL_RNG": UNDEFINED,
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


# A board's own code a file names (see above); mbedTLS's own setters of its platform layer
# (MBEDTLS_PLATFORM_EXIT_ALT gives mbedtls_platform_set_exit()) are not: the library has them.
BOARD_CODE = re.compile(r"MBEDTLS_\w+_ALT(?:_SOFT_FALLBACK|_FALLBACK)?")
LIBRARY_SETTERS = re.compile(r"MBEDTLS_PLATFORM_(?!ZEROIZE_ALT|GMTIME_R_ALT)\w+_ALT")
BOARD_ALLOCATOR = (
    "MBEDTLS_PLATFORM_STD_CALLOC",
    "MBEDTLS_PLATFORM_STD_FREE",
    "MBEDTLS_PLATFORM_CALLOC_MACRO",
    "MBEDTLS_PLATFORM_FREE_MACRO",
)
# The SDK headers an SDK's configuration header includes, as the target provides them.
SDK_HEADERS = {
    "soc/soc_caps.h": (
        "no SOC_* capability: none of an ESP chip's crypto engines",
        "/* tlsbench's soc/soc_caps.h: the target has none of an ESP chip's capabilities (no\n"
        " * SOC_* macro: its AES, SHA, MPI and ECC engines are not there). */\n",
    ),
    "esp_mem.h": (
        "esp_mbedtls_mem_calloc and _free: the C library's calloc and free",
        "/* tlsbench's esp_mem.h: ESP-IDF's mbedTLS allocator is the target's calloc and free\n"
        " * (the platform also leaves MBEDTLS_PLATFORM_STD_CALLOC / _FREE undefined). */\n"
        "#include <stdlib.h>\n"
        "#define esp_mbedtls_mem_calloc calloc\n"
        "#define esp_mbedtls_mem_free free\n",
    ),
}


def owned(
    library: str, firmware: bool, files: list[configfiles.ConfigFile] | None = None
) -> dict[str, str]:
    """The macros the target's platform owns, with its values (none for a library that takes
    no configuration header): its own, and the board's code and allocator that `files` name."""
    found = dict(PLATFORMS.get((library, firmware), {}))
    if library != "mbedtls":
        return found
    for config in files or []:
        if config.option not in ("config", "user-config"):
            continue
        for name in sorted(configfiles.defined_anywhere(config.text)):
            board = BOARD_CODE.fullmatch(name) and not LIBRARY_SETTERS.fullmatch(name)
            if name not in found and (board or name in BOARD_ALLOCATOR):
                found[name] = UNDEFINED
    return found


def write_sdk_headers(include: Path) -> None:
    """The target's versions of the SDK headers tlsbench knows, into `include`."""
    for name, (_, text) in SDK_HEADERS.items():
        path = include / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)


def replacements(
    files: list[configfiles.ConfigFile], platform: dict[str, str], target: str
) -> list[str]:
    """What each file says about a platform macro that the target says otherwise: one line
    each, naming the file, its setting and the target's."""
    found = []
    settings = next((f for f in files if f.option == "kconfig"), None)
    for config in files:
        if config.option not in ("config", "user-config", "user-settings"):
            continue
        whole = config.option in ("config", "user-settings")  # not layered on a default
        evaluated = _preprocessed(config, settings) if whole or settings else None
        said = evaluated[0] if evaluated else configfiles.macros_of(config.text)
        if settings is not None:  # the SDK's headers it includes: the target's
            included = evaluated[1] if evaluated else _includes(config.text)
            for name, (what, _) in SDK_HEADERS.items():
                if name in included:
                    found.append(f'{config.path}: #include "{name}" -> the {target} '
                                 f"platform's ({what})")  # fmt: skip
        for name, ours in platform.items():
            theirs = said.get(name)
            if theirs == ours or (theirs is None and (ours == UNDEFINED or not whole)):
                continue  # agrees, or is left to the target's value anyway
            was = "left out" if theirs is None else configfiles.setting(name, theirs)
            found.append(f"{config.path}: {was} -> {configfiles.setting(name, ours)} "
                         f"(the {target} platform's)")  # fmt: skip
    return found


# The library's default configuration an SDK's header includes first (ESP-IDF's does): read
# empty here, so that what is named is what the header's own lines say, as for a layered
# user-config= file.
LIBRARY_DEFAULTS = ("mbedtls/mbedtls_config.h", "mbedtls/config.h")


def _preprocessed(
    config: configfiles.ConfigFile, settings: configfiles.ConfigFile | None = None
) -> tuple[dict[str, str], set[str]] | None:
    """What a file defines once its own `#if` blocks are evaluated (the C preprocessor, on
    the file alone; with an SDK's kconfig= values, the target's SDK headers and the
    library's default config read empty), and the headers it includes, so that a macro of
    a branch it does not take is not named as replaced; None where the file does not
    preprocess so (its includes are its SDK's): then it is read line by line."""
    with tempfile.TemporaryDirectory(prefix="tlsbench-platform-") as folder:
        include = Path(folder)
        header = include / "config.h"
        header.write_text(config.text)
        if settings is not None:
            kconfig.write_headers(settings, include)
            write_sdk_headers(include)
            for name in LIBRARY_DEFAULTS:
                (include / name).parent.mkdir(parents=True, exist_ok=True)
                (include / name).write_text("")
            header.write_text(kconfig.prefixed(config.text))
        proc = subprocess.run(
            ["gcc", "-E", "-dM", "-H", f"-I{include}", f"-I{Path(config.path).parent}",
             "-x", "c", str(header)],
            capture_output=True, text=True, check=False,
        )  # fmt: skip
    if proc.returncode != 0:
        return None
    found = {}
    for line in proc.stdout.splitlines():
        match = re.match(r"#define (\w+)(?:\s+(.*))?$", line)
        if match and not match.group(1).startswith("__"):
            found[match.group(1)] = " ".join((match.group(2) or "").split())
    included = set()
    for line in proc.stderr.splitlines():  # -H: ". path", ".. path" per included header
        match = re.match(r"\.+ (.+)$", line)
        if match and match.group(1).startswith(folder + "/"):
            included.add(match.group(1)[len(folder) + 1 :])
    return found, included


def evaluated(
    config: configfiles.ConfigFile, settings: configfiles.ConfigFile
) -> dict[str, str] | None:
    """What an SDK's header defines under its kconfig= values (as `_preprocessed` reads it);
    None where it does not preprocess so."""
    found = _preprocessed(config, settings)
    return found[0] if found else None


def _includes(text: str) -> set[str]:
    """The headers a file's lines include, read line by line."""
    return set(re.findall(r'^\s*#\s*include\s*[<"]([^>"]+)[>"]', text, flags=re.M))
