"""Botan 3: its own configure.py and make file, a minimized static library.

Botan is C++20 and its full build (every algorithm, the command-line tool, the tests) takes
the better part of an hour on two cores. The variant's `configure` options hold
`--minimized-build` with the modules the TLS adapter needs (variants.toml): configure.py
loads those modules and what they require, nothing else; `--build-targets=static` builds
the library alone. The build runs out of tree (`--with-build-dir`): configure links the
headers into the build folder and writes the make file there; the source tree is never
written to. Compiler flags are Botan's own (-O3, its warnings); a variant's cflags and
macros are appended with `--extra-cxxflags`.

The C++ compiler is g++, recorded as the C compiler is (build.py): the flags of every
compile are part of the build's manifest.
"""

from __future__ import annotations

import re
import shlex
import shutil
import sys
from pathlib import Path

from tlsbench.builds.recipes.base import BuildContext, LinkInfo, tool_version
from tlsbench.builds.variants import Variant

CXX = "g++"


def release(variant: Variant) -> str:
    """Botan's release: the pin's (a local tree's is unknown)."""
    pin = variant.line.pin
    return pin.library_version if pin is not None else "unknown (a local tree)"


def recording_cxx(ctx: BuildContext) -> str:
    """A stand-in for g++ that appends each command line to the build's compile log, as the
    C compiler's stand-in does (build.py), then runs g++; the real g++ when no log is kept."""
    real = shutil.which(CXX)
    if real is None:
        raise ctx.log.fail(f"{CXX} is not installed (Botan is C++; make deps installs it)")
    if ctx.compile_log is None or not ctx.tool_path:
        return real
    wrapper = Path(ctx.tool_path) / CXX
    wrapper.write_text(
        "#!/bin/sh\n"
        f"printf '%s\\n' \"$*\" >> {shlex.quote(str(ctx.compile_log))}\n"
        f'exec {shlex.quote(real)} "$@"\n'
    )
    wrapper.chmod(0o755)
    return str(wrapper)


class BotanRecipe:
    library = "botan"

    def key_inputs(self, variant: Variant) -> dict[str, str]:
        return {
            "c++": tool_version([CXX, "--version"]),
            "make": tool_version(["make", "--version"]),
            # configure.py runs under this Python; its module resolution is the build's.
            "python": sys.version.split()[0],
        }

    def build(self, ctx: BuildContext) -> LinkInfo:
        assert ctx.source is not None
        if ctx.target.cross is not None or ctx.m32:
            raise ctx.log.fail("Botan is built for the native x86_64 target only here")
        macros = [
            f"-D{name}" if value == "" else f"-D{name}={value}"
            for name, value in ctx.variant.macros.items()
        ]
        extra = [*ctx.variant.cflags, *macros]
        ctx.tree.mkdir(parents=True, exist_ok=True)
        ctx.log.step("configure.py")
        ctx.run(
            [
                sys.executable, str(ctx.source / "configure.py"),
                f"--with-build-dir={ctx.tree}", f"--prefix={ctx.prefix}", "--libdir=lib",
                "--cc=gcc", f"--cc-bin={recording_cxx(ctx)}",
                *([f"--extra-cxxflags={' '.join(extra)}"] if extra else []),
                *ctx.variant.configure,
            ],
            cwd=ctx.work,
        )  # fmt: skip
        log = ctx.log.path.read_text(errors="replace")
        loaded = re.search(r"Loading modules: (.*)", log)
        ctx.facts["modules"] = loaded.group(1).split() if loaded else []
        # configure.py stops at a module it does not know, but skips a requested one that
        # this compiler or CPU cannot build (sha2_64_x86 needs GCC 14): the manifest says
        # which, and why, rather than a build that silently differs from its options.
        requested = {m for option in ctx.variant.configure
                     if option.startswith("--enable-modules=")
                     for m in option.split("=", 1)[1].split(",")}  # fmt: skip
        skipped = {
            module: reason
            for reason, names in re.findall(r"Skipping \(([^)]*)\): (.*)", log)
            for module in names.split()
            if module in requested
        }
        if skipped:
            ctx.facts["requested_not_built"] = skipped
            ctx.log.step(f"not built: {', '.join(f'{m} ({r})' for m, r in skipped.items())}")
        ctx.log.step(f"compile ({len(ctx.facts['modules'])} modules)")
        make = ["make", "-f", str(ctx.tree / "Makefile"), "-j", str(ctx.jobs)]
        ctx.run([*make, "libs"], cwd=ctx.work)
        ctx.run([*make, "install"], cwd=ctx.work)
        archive = ctx.prefix / "lib" / "libbotan-3.a"
        if not archive.exists():
            raise ctx.log.fail(f"the build installed no {archive.name}")
        return LinkInfo(
            include_dirs=[str(ctx.prefix / "include" / "botan-3")],
            # The release, which the adapter reports beside Botan's own version string.
            defines=[
                *(m.removeprefix("-D") for m in macros),
                f'TB_BOTAN_VERSION="{release(ctx.variant)}"',
            ],
            # Botan is C++: the drivers (C) link the C++ runtime with it.
            libraries=[str(archive), "-lstdc++", "-lpthread"],
            library_files=[str(archive)],
        )


# -- At run time (recipes/runtime.py) -------------------------------------------------------
# What Botan does when it runs, not how it is built: nothing below is a build input.

# Botan picks AES-NI, CLMUL, SSSE3, AVX2, AVX-512, SHA-NI, BMI2, ... by CPUID at run time;
# BOTAN_CLEAR_CPUID (a comma-separated list of its CPUID names, src/lib/utils/cpuid) clears
# them: "simd" is SSE2, the baseline its vector code needs.
ACCEL_OFF_ENV = {
    "BOTAN_CLEAR_CPUID": "simd,ssse3,avx2,avx512,aesni,clmul,intel_sha,intel_sha512,bmi2,adx,"
    "gfni,avx2_aes,avx512_aes,avx2_clmul,avx512_clmul"
}
