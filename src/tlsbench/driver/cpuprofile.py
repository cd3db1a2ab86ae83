"""CPU profiles: run the libraries as if this CPU lacked some instruction-set extensions.

A library that picks its code at run time (OpenSSL, AWS-LC, BoringSSL, GnuTLS, nettle,
Botan) takes other paths on another CPU: other speed, and sometimes other heap (AWS-LC's RSA
on an AVX-512 IFMA CPU allocates a work area the generic path does not). A profile removes
extensions through each library's own capability switch, so that a developer can run the
suite, or a run, as on an older CPU before the next machine does it for them.

The profile is named by $TLSBENCH_CPU_PROFILE (`make test CPU_PROFILE=...`); the runner
applies its variables to every library process it starts (drivers, real peer programs,
servers) below what a point asks itself (accel=off is stronger), and records the profile in
the run.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from tlsbench.core.errors import UserError
from tlsbench.core.machine import cpu_flags

ENV_VARIABLE = "TLSBENCH_CPU_PROFILE"

# Linux's name of each extension (/proc/cpuinfo flags) -> its bit in OpenSSL's capability
# words: word 1 is CPUID.1 EDX (bits 0-31) and ECX (32-63), word 2 is CPUID.7 EBX (0-31)
# and ECX (32-63). AWS-LC and BoringSSL read OPENSSL_ia32cap in the same format.
OPENSSL_BITS: dict[str, tuple[int, int]] = {
    "pclmulqdq": (1, 32 + 1),
    "ssse3": (1, 32 + 9),
    "fma": (1, 32 + 12),
    "movbe": (1, 32 + 22),
    "aes": (1, 32 + 25),
    "avx": (1, 32 + 28),
    "bmi1": (2, 3),
    "avx2": (2, 5),
    "bmi2": (2, 8),
    "avx512f": (2, 16),
    "avx512dq": (2, 17),
    "adx": (2, 19),
    "avx512ifma": (2, 21),
    "avx512cd": (2, 28),
    "sha_ni": (2, 29),
    "avx512bw": (2, 30),
    "avx512vl": (2, 31),
    "avx512vbmi": (2, 32 + 1),
    "avx512_vbmi2": (2, 32 + 6),
    "gfni": (2, 32 + 8),
    "vaes": (2, 32 + 9),
    "vpclmulqdq": (2, 32 + 10),
    "avx512_vnni": (2, 32 + 11),
    "avx512_bitalg": (2, 32 + 12),
    "avx512_vpopcntdq": (2, 32 + 14),
}

# GnuTLS's own x86 code (GNUTLS_CPUID_OVERRIDE, lib/accelerated/x86/x86-common.c): the value
# is the set of features GnuTLS may use, each still checked against CPUID; 0x1 is the empty
# set.
GNUTLS_BITS = {"aes": 0x2, "ssse3": 0x4, "pclmulqdq": 0x8, "avx": 0x10, "sha_ni": 0x20}
GNUTLS_EMPTY_SET = 0x1

# nettle's fat dispatch (NETTLE_FAT_OVERRIDE): a list of the features it may use, NOT checked
# against CPUID, so only features this CPU has are ever named.
NETTLE_NAMES = {"aes": "aesni", "pclmulqdq": "pclmul", "sha_ni": "sha_ni"}

AVX512 = frozenset(name for name in OPENSSL_BITS if name.startswith("avx512"))

# Botan's CPUID bits (BOTAN_CLEAR_CPUID, src/lib/utils/cpuid/cpuid_x86): a list of the bits
# Botan must not use, each still checked against CPUID, so naming one this CPU lacks is
# harmless. Botan's "bmi2" needs BMI1 and BMI2, "avx512" its whole AVX-512 profile (F, DQ,
# IFMA, BW, VL, VBMI, VBMI2, BITALG); VAES and VPCLMULQDQ are its avx2_ and avx512_ aes and
# clmul bits; its SHA-512 extension bit goes with the SHA extensions.
BOTAN_NAMES: dict[str, tuple[str, ...]] = {
    "ssse3": ("ssse3",),
    "aes": ("aesni",),
    "pclmulqdq": ("clmul",),
    "avx2": ("avx2",),
    "bmi1": ("bmi2",),
    "bmi2": ("bmi2",),
    "adx": ("adx",),
    "gfni": ("gfni",),
    "sha_ni": ("intel_sha", "intel_sha512"),
    "vaes": ("avx2_aes", "avx512_aes"),
    "vpclmulqdq": ("avx2_clmul", "avx512_clmul"),
    **{name: ("avx512",) for name in AVX512},
}


@dataclass(frozen=True)
class CpuProfile:
    name: str
    summary: str
    absent: frozenset[str]  # extensions the libraries must not use

    def environment(self, present: set[str]) -> dict[str, str]:
        """The libraries' switches that hide `absent` on a CPU whose extensions are `present`
        (empty for a profile that hides nothing this CPU has)."""
        hidden = self.absent & present
        if not hidden:
            return {}
        words = {1: 0, 2: 0}
        for name in hidden:
            if name in OPENSSL_BITS:
                word, bit = OPENSSL_BITS[name]
                words[word] |= 1 << bit
        gnutls = sum(bit for name, bit in GNUTLS_BITS.items() if name in present - hidden)
        nettle = [NETTLE_NAMES[n] for n in sorted(NETTLE_NAMES) if n in present - hidden]
        botan = sorted({bit for name in hidden for bit in BOTAN_NAMES.get(name, ())})
        return {
            "OPENSSL_ia32cap": f"~0x{words[1]:x}:~0x{words[2]:x}",
            "GNUTLS_CPUID_OVERRIDE": hex(gnutls or GNUTLS_EMPTY_SET),
            "NETTLE_FAT_OVERRIDE": ",".join(nettle) or "none",
            **({"BOTAN_CLEAR_CPUID": ",".join(botan)} if botan else {}),
        }


PROFILES = {
    profile.name: profile
    for profile in (
        CpuProfile("native", "this CPU as it is", frozenset()),
        CpuProfile(
            "avx2",
            "an AVX2 CPU without AVX-512, VAES, VPCLMULQDQ, GFNI or SHA extensions (the CPU "
            "valgrind presents, and most servers before 2017)",
            AVX512 | {"vaes", "vpclmulqdq", "gfni", "sha_ni"},
        ),
        CpuProfile(
            "sse4",
            "AES-NI and PCLMULQDQ with SSE4 only: no AVX, AVX2, FMA, BMI, ADX, MOVBE or newer",
            AVX512
            | {"vaes", "vpclmulqdq", "gfni", "sha_ni", "avx", "avx2", "fma", "bmi1", "bmi2"}
            | {"adx", "movbe"},
        ),
        # valgrind 3.19 runs a program on a CPU of its own: on an AVX2 host, amd64 guests see
        # a Haswell's CPUID (GenuineIntel; AVX2, BMI1/2, RDSEED; no ADX, SHA, AVX-512 or
        # anything in CPUID.7 ECX), whatever the host has (tests/libraries/test_cpuprofile.py checks
        # this against valgrind). Under massif or callgrind a library takes that CPU's paths.
        CpuProfile(
            "valgrind",
            "the CPU valgrind presents to the programs it runs: AVX2 without ADX, SHA or AVX-512",
            AVX512 | {"vaes", "vpclmulqdq", "gfni", "sha_ni", "adx"},
        ),
    )
}

# What no profile reaches: code chosen at run time with no switch tlsbench can set.
NOT_FOLLOWED = {
    "wolfssl": "wolfSSL's intelasm builds choose AVX/AVX2/BMI2/ADX code by CPUID, with no "
    "environment switch (the sse4 profile does not reach them; its default build has no "
    "intelasm)",
    "rustls": "ring picks its code by CPUID with no switch (aws-lc-rs follows OPENSSL_ia32cap)",
    "hacl": "HACL*'s vec128/vec256 builds are chosen at build time",
}


def profile_named(name: str) -> CpuProfile:
    try:
        return PROFILES[name]
    except KeyError:
        raise UserError(
            f"CPU profile {name!r} is not known: choose one of {', '.join(PROFILES)} "
            f"(${ENV_VARIABLE} or --cpu-profile)"
        ) from None


def active() -> CpuProfile:
    """The profile $TLSBENCH_CPU_PROFILE names (native when unset)."""
    return profile_named(os.environ.get(ENV_VARIABLE) or "native")


def active_environment() -> dict[str, str]:
    """The active profile's library switches on this machine."""
    return active().environment(set(cpu_flags()))


def under_valgrind_environment() -> dict[str, str]:
    """Switches that make a native run take the paths it takes under valgrind, within the
    active profile: for comparing a native figure with massif's or callgrind's."""
    both = active().absent | PROFILES["valgrind"].absent
    return CpuProfile("valgrind", "", both).environment(set(cpu_flags()))
