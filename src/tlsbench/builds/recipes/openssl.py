"""OpenSSL: perl Configure out of tree, static libraries (no tests or docs), and for 3.x
native builds the `openssl` program too (interop's pinned s_server / s_client peers)."""

from __future__ import annotations

import shutil
from pathlib import Path

from tlsbench.builds.recipes.base import BuildContext, LinkInfo, tool_version
from tlsbench.builds.variants import Variant

# OpenSSL 1.1.1's Configure refuses these 3.0 options; its `make build_libs` builds neither
# the apps nor the docs anyway, so leaving them out changes nothing that is built.
UNKNOWN_TO_1_1_1 = ("no-apps", "no-docs")
# 3.0 and 3.1's Configure refuse no-docs (3.2 brought it); `make install_dev` installs no docs,
# so leaving it out changes nothing that is built either.
UNKNOWN_BEFORE_3_2 = ("no-docs",)
# Where a build's own `openssl` program is installed (3.x, native builds).
PROGRAM = "bin/openssl"


def release(source: Path) -> tuple[int, int]:
    """(major, minor) of a 3.x tree, from its VERSION.dat (MAJOR=3, MINOR=0)."""
    fields = dict(line.split("=", 1) for line in (source / "VERSION.dat").read_text().split()
                  if "=" in line)  # fmt: skip
    return int(fields.get("MAJOR", 0)), int(fields.get("MINOR", 0))


class OpensslRecipe:
    library = "openssl"

    def key_inputs(self, variant: Variant) -> dict[str, str]:
        return {"perl": tool_version(["perl", "-e", "print $^V"])}

    def build(self, ctx: BuildContext) -> LinkInfo:
        assert ctx.source is not None
        ctx.tree.mkdir(parents=True, exist_ok=True)
        macros = [
            f"-D{name}" if value == "" else f"-D{name}={value}"
            for name, value in ctx.variant.macros.items()
        ]
        configure = list(ctx.variant.configure)
        if not (ctx.source / "VERSION.dat").exists():  # 3.0 introduced VERSION.dat
            configure = [option for option in configure if option not in UNKNOWN_TO_1_1_1]
        elif release(ctx.source) < (3, 2):
            configure = [option for option in configure if option not in UNKNOWN_BEFORE_3_2]
        # A cross build (armhf) uses the target's ar and ranlib too.
        tools = {"AR": ctx.target.tool("ar", "ar"), "RANLIB": ctx.target.tool("ranlib", "ranlib")}
        ctx.log.step("Configure")
        ctx.run(
            [
                "perl", str(ctx.source / "Configure"), ctx.target.openssl_target,
                *configure, f"--prefix={ctx.prefix}", "--libdir=lib",
                f"--openssldir={ctx.prefix / 'ssl'}", *ctx.m32, *ctx.variant.cflags, *macros,
            ],
            cwd=ctx.tree,
            env={"CC": ctx.cc, **(tools if ctx.target.cross else {})},
        )  # fmt: skip
        ctx.log.step("compile")
        ctx.run(["make", f"-j{ctx.jobs}", "build_libs"], cwd=ctx.tree)
        ctx.run(["make", "install_dev"], cwd=ctx.tree)
        if (ctx.source / "VERSION.dat").exists() and not ctx.target.cross \
                and "no-apps" not in configure:  # fmt: skip
            # The program real peers run: statically linked against this very build.
            ctx.log.step("openssl program")
            ctx.run(["make", f"-j{ctx.jobs}", "build_programs"], cwd=ctx.tree)
            (ctx.prefix / "bin").mkdir(exist_ok=True)
            shutil.copy2(ctx.tree / "apps" / "openssl", ctx.prefix / PROGRAM)
        lib = ctx.prefix / "lib"
        files = [str(lib / "libssl.a"), str(lib / "libcrypto.a")]
        return LinkInfo(
            include_dirs=[str(ctx.prefix / "include")],
            libraries=[*files, "-ldl", "-lpthread"],
            c_flags=list(ctx.m32),
            link_flags=list(ctx.m32),
            library_files=files,
        )


# -- At run time (recipes/runtime.py) -------------------------------------------------------
# What OpenSSL does when it runs, not how it is built: nothing below is a build input.

# CPU crypto acceleration switched off: OPENSSL_ia32cap's word 1 is CPUID.1 ECX:EDX, word 2
# CPUID.7 ECX:EBX. Cleared in word 1: AES-NI (57), PCLMULQDQ (33), SSSE3 (41), AVX (60); in
# word 2: BMI1 (3), AVX2 (5), BMI2 (8), AVX-512F/DQ/IFMA/BW/VL (16, 17, 21, 30, 31), ADX (19),
# SHA (29), VAES (41), VPCLMULQDQ (42). With AES-NI left on (an earlier mask), AES-GCM only
# lost its GHASH acceleration: `openssl speed -evp aes-128-gcm` gave 370 MB/s against 77 MB/s
# truly off.
OPENSSL_ACCEL_OFF_MASK = "~0x1200020200000000:~0x600E02B0128"
ACCEL_OFF_ENV = {"OPENSSL_ia32cap": OPENSSL_ACCEL_OFF_MASK}
