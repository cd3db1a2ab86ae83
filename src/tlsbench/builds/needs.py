"""What a TLS job needs of a library's configuration, checked against a user's config file
before anything is built: a file that leaves out what the job truly needs (ECDSA for an
ECDSA job, the suite it asks for, TLS 1.3) is refused with the list of what is missing and
the smallest change that adds each, never with a compiler log or a handshake failure.

The configuration is read as the library reads it: the library's own configuration header
(mbedTLS build_info.h / config.h, wolfSSL settings.h) run through the C preprocessor with
the variant's config headers (the user's file, then tlsbench's, as the build writes them:
recipes/), so that `#if` blocks, the library's derived macros and the platform's
replacements (platform.py) all count. A file the preprocessor refuses (its own #error) is
refused with that line.

With an SDK's configuration (kconfig=FILE beside the header: kconfig.py) each missing piece
is named by the CONFIG_ option of the kconfig file that gives it, as the user's header reads
it: the candidates the header's blocks name are tried through the preprocessor, the header
with the kconfig file plus that option, and the first that gives the macro is said; where
none does, the header's macro is.
"""

from __future__ import annotations

import dataclasses
import re
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tlsbench.builds import arches, firmware, kconfig
from tlsbench.builds.recipes.mbedtls import LAYERED_CONFIG, WHOLE_CONFIG, write_config
from tlsbench.builds.recipes.wolfssl import (
    YOUR_SETTINGS,
    YOUR_SETTINGS_ASM,
    directives_only,
    user_settings,
)
from tlsbench.builds.sources import Sources
from tlsbench.core.errors import UserError

# A job as the checks see it: the firmware images' (firmware.Job) and the native drivers'.


@dataclass(frozen=True)
class Need:
    """One thing the job needs: satisfied when `test` holds for the configuration."""

    what: str  # "ECDSA (the server's P-256 certificate)"
    macro: str  # the macro to define, or a NAME>=N test
    change: str  # the smallest change that adds it

    def holds(self, macros: dict[str, str]) -> bool:
        found = re.fullmatch(r"(\w+)>=(\d+):(\d+)", self.macro)
        if found:  # NAME>=MIN:DEFAULT
            name, least, default = found.group(1), int(found.group(2)), int(found.group(3))
            return _number(resolved(macros, name), default) >= least
        if self.macro.startswith("!"):
            return self.macro[1:] not in macros
        return self.macro in macros


def _number(text: str | None, default: int) -> int:
    if text is None:
        return default
    found = re.search(r"\d+", text)
    return int(found.group(0)) if found else default


def _define(name: str) -> str:
    return f"#define {name}"


# -- mbedTLS ---------------------------------------------------------------------------------

MBEDTLS_GROUPS = {
    "x25519": "MBEDTLS_ECP_DP_CURVE25519_ENABLED",
    "secp256r1": "MBEDTLS_ECP_DP_SECP256R1_ENABLED",
    "secp384r1": "MBEDTLS_ECP_DP_SECP384R1_ENABLED",
}
MBEDTLS_KX12 = {
    "ECDHE-ECDSA": "MBEDTLS_KEY_EXCHANGE_ECDHE_ECDSA_ENABLED",
    "ECDHE-RSA": "MBEDTLS_KEY_EXCHANGE_ECDHE_RSA_ENABLED",
    "RSA": "MBEDTLS_KEY_EXCHANGE_RSA_ENABLED",
    "PSK": "MBEDTLS_KEY_EXCHANGE_PSK_ENABLED",
    "ECDHE-PSK": "MBEDTLS_KEY_EXCHANGE_ECDHE_PSK_ENABLED",
}
MBEDTLS_KX13 = {
    "ecdhe": "MBEDTLS_SSL_TLS1_3_KEY_EXCHANGE_MODE_EPHEMERAL_ENABLED",
    "psk": "MBEDTLS_SSL_TLS1_3_KEY_EXCHANGE_MODE_PSK_ENABLED",
    "psk_dhe": "MBEDTLS_SSL_TLS1_3_KEY_EXCHANGE_MODE_PSK_EPHEMERAL_ENABLED",
}
PSK_LENGTH = 32  # the images' and drivers' pre-shared key (builds/firmware.py: TEST_PSK)


def _suite_parts(suite: str) -> tuple[str | None, str, str]:
    """(TLS 1.2 key exchange or None for TLS 1.3, cipher mode, hash) of an IANA name with
    dashes: TLS-ECDHE-ECDSA-WITH-AES-128-GCM-SHA256 -> ("ECDHE-ECDSA", "GCM", "SHA256")."""
    kx, _, rest = suite.removeprefix("TLS-").partition("-WITH-")
    if not rest:  # TLS 1.3: TLS-AES-128-GCM-SHA256
        kx, rest = "", suite.removeprefix("TLS-")
    mode = next((m for m in ("GCM", "CCM", "CBC", "CHACHA20") if m in rest), "")
    digest = "SHA384" if rest.endswith("SHA384") else "SHA256"
    return (kx or None), mode, digest


def mbedtls_needs(job: Any, major: int) -> list[Need]:
    kx12, mode, digest = _suite_parts(job.suite)
    needs = [
        Need("TLS (the SSL module)", "MBEDTLS_SSL_TLS_C", _define("MBEDTLS_SSL_TLS_C")),
        Need("a TLS client (both sides run)", "MBEDTLS_SSL_CLI_C", _define("MBEDTLS_SSL_CLI_C")),
        Need("a TLS server (both sides run)", "MBEDTLS_SSL_SRV_C", _define("MBEDTLS_SSL_SRV_C")),
        Need("a random generator (CTR_DRBG)", "MBEDTLS_CTR_DRBG_C", _define("MBEDTLS_CTR_DRBG_C")),
        Need(
            "an entropy source for the random generator",
            "MBEDTLS_ENTROPY_C",
            _define("MBEDTLS_ENTROPY_C"),
        ),
    ]
    if job.tls == "1.3":
        needs += [
            Need("TLS 1.3", "MBEDTLS_SSL_PROTO_TLS1_3", _define("MBEDTLS_SSL_PROTO_TLS1_3")),
            Need(
                "PSA crypto (TLS 1.3 runs on it)",
                "MBEDTLS_PSA_CRYPTO_C",
                _define("MBEDTLS_PSA_CRYPTO_C"),
            ),
            Need(
                f"the TLS 1.3 {job.kx} key exchange mode",
                MBEDTLS_KX13[job.kx],
                _define(MBEDTLS_KX13[job.kx]),
            ),
        ]
    else:
        needs.append(
            Need("TLS 1.2", "MBEDTLS_SSL_PROTO_TLS1_2", _define("MBEDTLS_SSL_PROTO_TLS1_2"))
        )
        if kx12 in MBEDTLS_KX12:
            needs.append(
                Need(f"the {kx12} key exchange", MBEDTLS_KX12[kx12], _define(MBEDTLS_KX12[kx12]))
            )
    needs.append(Need("AES", "MBEDTLS_AES_C", _define("MBEDTLS_AES_C")))
    cipher = {
        "GCM": ("AES-GCM", "MBEDTLS_GCM_C"),
        "CCM": ("AES-CCM", "MBEDTLS_CCM_C"),
        "CBC": ("CBC mode", "MBEDTLS_CIPHER_MODE_CBC"),
        "CHACHA20": ("ChaCha20-Poly1305", "MBEDTLS_CHACHAPOLY_C"),
    }.get(mode)
    if cipher:
        needs.append(Need(f"{cipher[0]} (the suite's cipher)", cipher[1], _define(cipher[1])))
    sha = (
        "MBEDTLS_SHA384_C"
        if digest == "SHA384" and major >= 3
        else ("MBEDTLS_SHA512_C" if digest == "SHA384" else "MBEDTLS_SHA256_C")
    )
    needs.append(Need(f"{digest} (the suite's hash)", sha, _define(sha)))
    if job.psk:
        needs.append(
            Need(
                f"a {PSK_LENGTH}-byte pre-shared key (the job's)",
                f"MBEDTLS_PSK_MAX_LEN>={PSK_LENGTH}:32",
                f"#define MBEDTLS_PSK_MAX_LEN {PSK_LENGTH}",
            )
        )
    else:
        needs.append(
            Need(
                "X.509 certificates (the server's chain)",
                "MBEDTLS_X509_CRT_PARSE_C",
                _define("MBEDTLS_X509_CRT_PARSE_C"),
            )
        )
        if job.cert == "ecdsa-p256":
            needs += [
                Need(
                    "ECDSA (the server's P-256 certificate)",
                    "MBEDTLS_ECDSA_C",
                    _define("MBEDTLS_ECDSA_C"),
                ),
                Need(
                    "the P-256 curve (the certificate's)",
                    MBEDTLS_GROUPS["secp256r1"],
                    _define(MBEDTLS_GROUPS["secp256r1"]),
                ),
            ]
        else:
            needs += [
                Need(
                    "RSA (the server's 2048-bit certificate)",
                    "MBEDTLS_RSA_C",
                    _define("MBEDTLS_RSA_C"),
                ),
                Need(
                    "2048-bit numbers (the RSA key)",
                    "MBEDTLS_MPI_MAX_SIZE>=256:1024",
                    "#define MBEDTLS_MPI_MAX_SIZE 256",
                ),
            ]
    group = getattr(job, "group", None)
    if group in MBEDTLS_GROUPS and job.kx != "psk" and kx12 not in ("RSA", "PSK"):
        needs.append(
            Need(
                f"the {group} group (the job's key exchange)",
                MBEDTLS_GROUPS[group],
                _define(MBEDTLS_GROUPS[group]),
            )
        )
    return needs


def mbedtls_suite_listed(job: Any, macros: dict[str, str]) -> Need | None:
    """MBEDTLS_SSL_CIPHERSUITES, where a file sets it, is the whole list the library offers
    and accepts: the job's suite must be on it."""
    listed = macros.get("MBEDTLS_SSL_CIPHERSUITES")
    if listed is None:
        return None
    name = job.suite.replace("-", "_")
    name = "MBEDTLS_TLS1_3_" + name.removeprefix("TLS_") if job.tls == "1.3" else "MBEDTLS_" + name
    if name in re.split(r"[\s,]+", listed):
        return None
    return Need(
        f"the job's suite {job.suite} on the file's suite list",
        name,
        f"add {name} to MBEDTLS_SSL_CIPHERSUITES",
    )


# -- wolfSSL ---------------------------------------------------------------------------------


def wolfssl_needs(job: Any, native: bool = False) -> list[Need]:
    kx12, mode, digest = _suite_parts(job.suite)
    needs = [
        Need("a TLS client (both sides run)", "!NO_WOLFSSL_CLIENT", "#undef NO_WOLFSSL_CLIENT"),
        Need("a TLS server (both sides run)", "!NO_WOLFSSL_SERVER", "#undef NO_WOLFSSL_SERVER"),
    ]
    if job.tls == "1.3":
        needs.append(Need("TLS 1.3", "WOLFSSL_TLS13", _define("WOLFSSL_TLS13")))
    else:
        needs.append(Need("TLS 1.2", "!WOLFSSL_NO_TLS12", "#undef WOLFSSL_NO_TLS12"))
    cipher = {
        "GCM": ("AES-GCM", "HAVE_AESGCM"),
        "CCM": ("AES-CCM", "HAVE_AESCCM"),
        "CBC": ("AES-CBC", "HAVE_AES_CBC"),
        "CHACHA20": ("ChaCha20", "HAVE_CHACHA"),
    }.get(mode)
    if cipher:
        needs.append(Need(f"{cipher[0]} (the suite's cipher)", cipher[1], _define(cipher[1])))
    if mode == "CHACHA20":
        needs.append(Need("Poly1305 (the suite's MAC)", "HAVE_POLY1305", _define("HAVE_POLY1305")))
    if digest == "SHA384":
        needs.append(
            Need("SHA-384 (the suite's hash)", "WOLFSSL_SHA384", _define("WOLFSSL_SHA384"))
        )
    if job.psk:
        needs.append(Need("pre-shared keys", "!NO_PSK", "#undef NO_PSK"))
    else:
        if native:  # the native driver's server name is a knob it honours or refuses
            needs.append(Need("SNI (the driver sends the server's name)", "HAVE_SNI",
                              _define("HAVE_SNI")))  # fmt: skip
        if job.cert == "ecdsa-p256":
            needs.append(
                Need("ECC (the server's P-256 certificate)", "HAVE_ECC", _define("HAVE_ECC"))
            )
        else:
            needs.append(
                Need("RSA (the server's 2048-bit certificate)", "!NO_RSA", "#undef NO_RSA")
            )
            if job.tls == "1.3":
                needs.append(
                    Need("RSA-PSS (TLS 1.3's RSA signatures)", "WC_RSA_PSS", _define("WC_RSA_PSS"))
                )
    uses_ecdhe = job.kx in ("ecdhe", "psk_dhe") and kx12 not in ("RSA", "PSK")
    group = getattr(job, "group", None)
    if uses_ecdhe and group == "x25519":
        needs.append(
            Need("X25519 (the job's group)", "HAVE_CURVE25519", _define("HAVE_CURVE25519"))
        )
    elif uses_ecdhe:
        needs.append(Need("ECC (the job's ECDHE group)", "HAVE_ECC", _define("HAVE_ECC")))
    if getattr(job, "record", 16384) < 16384:
        needs.append(
            Need(
                "max_fragment_length (the job's record size)",
                "HAVE_MAX_FRAGMENT",
                _define("HAVE_MAX_FRAGMENT"),
            )
        )
    return [need for i, need in enumerate(needs) if need not in needs[:i]]


# -- reading the configuration as the library does -----------------------------------------


def configuration(variant: Any, source: Path) -> dict[str, str]:
    """NAME -> value of every macro the library's configuration header defines for this
    variant, through the C preprocessor."""
    with tempfile.TemporaryDirectory(prefix="tlsbench-needs-") as folder:
        include = Path(folder)
        defines: list[str] = []
        if variant.library == "mbedtls":
            defines = write_config(variant, include)
            header = "mbedtls/ssl.h"  # the API a program includes: all it pulls in
            flags = [f"-D{d}" for d in defines] + [f"-I{source / 'include'}"]
        else:
            settings = variant.file("user-settings")
            (include / YOUR_SETTINGS).write_text(settings.text)
            (include / YOUR_SETTINGS_ASM).write_text(directives_only(settings.text))
            (include / "user_settings.h").write_text(user_settings(variant.platform))
            header = "wolfssl/ssl.h"  # the API a program includes: all it pulls in
            macros = [c for c in variant.cflags if c.startswith(("-D", "-U"))]
            macros += [f"-D{k}" if v == "" else f"-D{k}={v}" for k, v in variant.macros.items()]
            flags = ["-DWOLFSSL_USER_SETTINGS", *macros, f"-I{source}"]
        (include / "tlsbench_needs.c").write_text(f"#include <{header}>\n")
        for config in variant.files:  # the file's own includes, beside it
            flags.append(f"-I{Path(config.path).parent}")
        target = arches.arch(variant.arch)  # the target's compiler and its C library
        compiler = target.cc("gcc")
        proc = subprocess.run(
            [
                compiler,
                *target.flags,
                "-E",
                "-dM",
                f"-I{include}",
                *flags,
                str(include / "tlsbench_needs.c"),
            ],
            capture_output=True,
            text=True,
            check=False,
        )
    if proc.returncode != 0:
        errors = [line for line in proc.stderr.splitlines() if "error" in line]
        first = (errors[0] if errors else proc.stderr.strip()).split("error:", 1)[-1].strip()
        hint = (
            " (a header of your board's SDK or operating system: tlsbench's targets have "
            "neither; leave it out of the file, or guard it)"
            if "No such file" in first
            else ""
        )
        raise UserError(
            f"{variant.name}: the library's headers with your file do not preprocess for "
            f"{variant.arch}: {first}{hint}"
        )
    found = {}
    for line in proc.stdout.splitlines():
        match = re.match(r"#define (\w+)(?:\s+(.*))?$", line)
        if match:
            found[match.group(1)] = match.group(2) or ""
    return found


def resolved(macros: dict[str, str], name: str) -> str | None:
    """A macro's value with the object-like macros it names replaced by theirs: -dM prints a
    definition as written (`#define MBEDTLS_PSK_MAX_LEN CONFIG_MBEDTLS_PSK_MAX_LEN`, as an
    SDK's header reads a number from its kconfig values), and the number is what counts."""

    def value(word: str, seen: frozenset[str]) -> str:
        def substitute(match: re.Match[str]) -> str:
            inner = match.group(0)
            return value(inner, seen | {inner}) if inner in macros and inner not in seen else inner

        return re.sub(r"\b[A-Za-z_]\w*\b", substitute, macros[word])

    return value(name, frozenset({name})) if name in macros else None


def missing(variant: Any, job: Any, macros: dict[str, str]) -> list[Need]:
    """What the job needs that the configuration lacks, each macro once."""
    if variant.library == "mbedtls":
        major = _number(macros.get("MBEDTLS_VERSION_MAJOR"), 3)
        unmet = [need for need in mbedtls_needs(job, major) if not need.holds(macros)]
        listed = mbedtls_suite_listed(job, macros)
        unmet += [listed] if listed else []
    else:
        native = not arches.arch(variant.arch).firmware
        unmet = [need for need in wolfssl_needs(job, native) if not need.holds(macros)]
        # configure --enable-usersettings compiles only the small-memory curve25519 and
        # ed25519 code (wolfSSL 5.7.2): a file that turns them on must ask for that code.
        for on, small in (
            ("HAVE_CURVE25519", "CURVE25519_SMALL"),
            ("HAVE_ED25519", "ED25519_SMALL"),
        ):
            if on in macros and small not in macros:
                unmet.append(Need(f"{small} (with {on}, the only {on[5:].lower()} code a "
                                  "user_settings.h build compiles)", small,
                                  "#define CURVED25519_SMALL"))  # fmt: skip
    return [need for i, need in enumerate(unmet)
            if need.macro not in [n.macro for n in unmet[:i]]]  # fmt: skip


def _header_macros(variant: Any, source: Path, settings: Any) -> dict[str, str]:
    """What the variant's own mbedTLS header defines (alone: not the library's derived
    macros, nor tlsbench's), with `settings` as its kconfig file: the test of a CONFIG_
    option. A header that does not preprocess so defines nothing."""
    files = tuple(settings if f.option == "kconfig" else f for f in variant.files)
    trial = dataclasses.replace(variant, files=files)
    with tempfile.TemporaryDirectory(prefix="tlsbench-kconfig-") as folder:
        include = Path(folder)
        write_config(trial, include)
        header = WHOLE_CONFIG if variant.file("config") is not None else LAYERED_CONFIG
        (include / "tlsbench_header.c").write_text(f'#include "{header}"\n')
        target = arches.arch(variant.arch)
        proc = subprocess.run(
            [target.cc("gcc"), *target.flags, "-E", "-dM", f"-I{include}",
             f"-I{source / 'include'}", *(f"-I{Path(f.path).parent}" for f in variant.files),
             str(include / "tlsbench_header.c")],
            capture_output=True, text=True, check=False,
        )  # fmt: skip
    if proc.returncode != 0:
        return {}
    return {m.group(1): m.group(2) or "" for line in proc.stdout.splitlines()
            if (m := re.match(r"#define (\w+)(?:\s+(.*))?$", line))}  # fmt: skip


def kconfig_changes(variant: Any, source: Path, unmet: list[Need]) -> tuple[list[Need], bool]:
    """The unmet needs of a variant with a kconfig= file, each change said as the CONFIG_
    option(s) that give its macro in the user's header (kconfig.py); and whether any is
    left a change of the header (no CONFIG_ option of it gives the macro)."""
    settings = variant.file("kconfig")
    header = variant.file("config") or variant.file("user-config")
    values = kconfig.parse(settings)
    tried: dict[tuple[tuple[str, str], ...], dict[str, str]] = {}

    def defined_with(extra: dict[str, str]) -> dict[str, str]:
        memo = tuple(sorted(extra.items()))
        if memo not in tried:
            tried[memo] = _header_macros(variant, source, kconfig.with_settings(settings, extra))
        return tried[memo]

    said: list[Need] = []
    header_left = False
    header_name = Path(header.path).name
    for need in unmet:
        found = re.fullmatch(r"(\w+)(?:>=(\d+):\d+)?", need.macro)
        if found is None or not need.change.startswith("#define"):
            said.append(need)  # not a macro a CONFIG_ option defines (a suite list's entry)
            header_left = True
            continue
        macro, number = found.group(1), found.group(2)

        def holds(extra: dict[str, str], need: Need = need) -> bool:
            return need.holds(defined_with(extra))

        options = kconfig.options_giving(header.text, macro, holds,
                                         int(number) if number else None)  # fmt: skip
        if not options:
            said.append(dataclasses.replace(
                need, change=f"{need.change} (no CONFIG_ option of {header_name} gives "
                f"{macro})"))  # fmt: skip
            header_left = True
            continue
        hidden = sorted({n for o in options for n in o} - values.named)
        hint = (f"; {Path(settings.path).name} does not name {', '.join(hidden)}: Kconfig sets "
                "it from another option, such as a choice" if hidden else "")  # fmt: skip
        change = " or ".join(kconfig.written(o) for o in options)
        said.append(dataclasses.replace(need, change=f"{change} ({header_name}: {macro}{hint})"))
    return said, header_left


def refuse_unfit(variant: Any, job: Any) -> None:
    """Raises a UserError naming what the job needs and the variant's config file leaves
    out, before anything is built; a variant without a config file is the project's own
    and needs no check."""
    if (
        variant.library not in ("mbedtls", "wolfssl")
        or variant.line.pin is None  # a local tree: its headers are read when it is built
        or not any(f.option in ("config", "user-config", "user-settings") for f in variant.files)
    ):
        return
    source = Sources().source_dir(variant.line.name)
    unmet = missing(variant, job, configuration(variant, source))
    if unmet:
        files = ", ".join(f.path for f in variant.files)
        ending = "Add them to the file, or ask for a job it can do."
        settings = variant.file("kconfig")
        if settings is not None:
            unmet, header_left = kconfig_changes(variant, source, unmet)
            where = f"{Path(settings.path).name} (or with menuconfig)"
            ending = (f"Set the CONFIG_ options in {where} and add the #define lines to the "
                      "header, or ask for a job it can do." if header_left
                      else f"Set them in {where}, or ask for a job it can do.")  # fmt: skip
        lines = [f"  {need.what}: {need.change}" for need in unmet]
        raise UserError(
            f"{variant.name} cannot do the job {job.describe()}: the configuration "
            f"({files}) leaves out\n" + "\n".join(lines) + "\n" + ending
        )


def job_of_driver_args(args: list[str]) -> Any | None:
    """The job a native driver's options name (--suite, --tls, --kx, --cert, --group), as a
    firmware job, where the suite is one the firmware table knows; else None (not checked:
    the driver itself reports what a build cannot do)."""
    options: dict[str, str] = {}
    for i, arg in enumerate(args):
        name, sep, value = arg.partition("=")
        if name in ("--suite", "--tls", "--kx", "--cert", "--group"):
            options[name] = value if sep else (args[i + 1] if i + 1 < len(args) else "")
    if "--suite" not in options:
        return None
    try:
        return firmware.make_job(options["--suite"], tls=options.get("--tls"),
                                kx=options.get("--kx"), group=options.get("--group"),
                                cert=options.get("--cert"))  # fmt: skip
    except UserError:
        return None
