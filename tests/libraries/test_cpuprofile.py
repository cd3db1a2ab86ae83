"""CPU profiles: the libraries' own capability switches really hide what a profile removes,
and the valgrind profile is the CPU valgrind presents (checked against valgrind itself)."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

from drivers import run_driver
from tlsbench.core.errors import UserError
from tlsbench.core.machine import cpu_flags
from tlsbench.driver import cpuprofile

# The leaves and registers of the extensions the profiles name, as CPUID reports them.
CPUID_PROBE = r"""
#include <cpuid.h>
#include <stdio.h>
int main(void) {
  unsigned a, b, c, d;
  __cpuid(1, a, b, c, d);
  printf("%u %u ", d, c);
  __cpuid_count(7, 0, a, b, c, d);
  printf("%u %u\n", b, c);
  return 0;
}
"""


def features_of(words: tuple[int, int]) -> set[str]:
    """The profile extensions set in OpenSSL's two capability words."""
    return {
        name
        for name, (word, bit) in cpuprofile.OPENSSL_BITS.items()
        if (words[word - 1] >> bit) & 1
    }


def test_a_profile_clears_exactly_the_bits_of_what_it_hides_and_this_cpu_has() -> None:
    present = {"aes", "pclmulqdq", "avx", "avx2", "avx512f", "avx512ifma", "sha_ni", "vaes"}
    env = cpuprofile.PROFILES["avx2"].environment(present)
    word1, word2 = (int(w.lstrip("~"), 16) for w in env["OPENSSL_ia32cap"].split(":"))
    assert word1 == 0
    assert features_of((0, word2)) == {"avx512f", "avx512ifma", "sha_ni", "vaes"}
    # GnuTLS and nettle name what they may use; nettle's list is never checked against
    # CPUID, so it holds only extensions this CPU has.
    assert int(env["GNUTLS_CPUID_OVERRIDE"], 16) == 0x2 | 0x8 | 0x10
    assert env["NETTLE_FAT_OVERRIDE"] == "aesni,pclmul"
    no_aes = cpuprofile.PROFILES["sse4"].environment({"avx", "avx2"})
    assert no_aes["NETTLE_FAT_OVERRIDE"] == "none" and no_aes["GNUTLS_CPUID_OVERRIDE"] == "0x1"
    # Botan is told its own names for what is hidden (VAES is its avx2_aes and avx512_aes).
    assert env["BOTAN_CLEAR_CPUID"] == "avx2_aes,avx512,avx512_aes,intel_sha,intel_sha512"
    assert cpuprofile.PROFILES["native"].environment(present) == {}
    assert cpuprofile.PROFILES["avx2"].environment({"aes", "avx2"}) == {}  # nothing to hide


def test_an_unknown_profile_is_a_usage_error_naming_the_profiles(monkeypatch) -> None:
    monkeypatch.setenv(cpuprofile.ENV_VARIABLE, "avx1024")
    with pytest.raises(UserError, match="'avx1024' is not known: choose one of native, avx2"):
        cpuprofile.active()


@pytest.mark.slow
@pytest.mark.parametrize("spec", ["openssl-3.5.x", "aws-lc-5.12.0", "boringssl-5.4.0"])
@pytest.mark.parametrize("profile", ["avx2", "sse4", "valgrind"])
def test_the_library_reads_back_no_hidden_extension(spec: str, profile: str, build_of) -> None:
    """On every CPU: after the profile's switches, the library's own capability vector has
    none of the extensions the profile hides, and keeps AES-NI where the CPU has it."""
    env = cpuprofile.PROFILES[profile].environment(set(cpu_flags()))
    run = run_driver(build_of(spec), "aead", "--iterations", "10", env=env)
    assert run.code == 0 and run.output is not None, run.stderr
    words = re.search(r"ia32cap 0x([0-9a-f]+):0x([0-9a-f]+)", run.output["cpu_paths"])
    assert words is not None, run.output["cpu_paths"]
    active = features_of((int(words[1], 16), int(words[2], 16)))
    assert not active & cpuprofile.PROFILES[profile].absent, (profile, active)
    assert ("aes" in active) == ("aes" in cpu_flags())


@pytest.mark.slow
@pytest.mark.parametrize("profile", ["avx2", "sse4", "valgrind"])
def test_botan_reads_back_no_hidden_extension(profile: str, build_of) -> None:
    """Botan's primitives name the CPU feature their implementation uses (provider()): after
    the profile's BOTAN_CLEAR_CPUID none names a hidden extension, and AES keeps AES-NI where
    the CPU has it."""
    env = cpuprofile.PROFILES[profile].environment(set(cpu_flags()))
    run = run_driver(build_of("botan-3.x"), "aead", "--iterations", "10", env=env)
    assert run.code == 0 and run.output is not None, run.stderr
    paths = run.output["cpu_paths"]
    providers = dict(re.findall(r"([\w-]+) (\w+)(?:,|$)", paths.removeprefix("providers:")))
    primitives = {"AES-128", "GHASH", "ChaCha20", "Poly1305", "SHA-256", "SHA-384"}
    assert primitives <= set(providers), paths
    hidden = cpuprofile.PROFILES[profile].absent & set(cpu_flags())
    names = {bit for name in hidden for bit in cpuprofile.BOTAN_NAMES.get(name, ())}
    assert not set(providers.values()) & names, (profile, paths)
    assert (providers["AES-128"] == "aesni") == ("aes" in cpu_flags()), paths


@pytest.mark.skipif(shutil.which("valgrind") is None, reason="valgrind is not installed")
def test_the_valgrind_profile_is_the_cpu_valgrind_presents(tmp_path: Path) -> None:
    source = tmp_path / "cpuid.c"
    source.write_text(CPUID_PROBE)
    probe = tmp_path / "cpuid"
    subprocess.run(["gcc", "-O1", "-o", str(probe), str(source)], check=True)
    native = subprocess.run([str(probe)], capture_output=True, text=True, check=True).stdout
    under = subprocess.run(["valgrind", "-q", str(probe)], capture_output=True, text=True,
                           check=True, timeout=120).stdout  # fmt: skip

    def named(line: str) -> set[str]:
        edx1, ecx1, ebx7, ecx7 = (int(v) for v in line.split())
        return features_of((edx1 | ecx1 << 32, ebx7 | ecx7 << 32))

    lost = named(native) - named(under)
    # Everything valgrind takes away from this CPU is hidden by the profile, and the profile
    # hides nothing valgrind keeps (so a native run under it takes valgrind's paths).
    assert lost <= cpuprofile.PROFILES["valgrind"].absent, lost
    assert not named(under) & cpuprofile.PROFILES["valgrind"].absent, named(under)
