"""BearSSL: upstream's own makefile (its `lib` target), out of tree, one static library.

BearSSL has no configure step: its build is a generated make file (mk/Rules.mk) over every
source file, with the platform's settings in conf/Unix.mk. The recipe runs that make file's
`lib` target with BUILD pointing into the cache entry (the source tree is never written
to), with the variant's compiler and archiver, and conf/Unix.mk's flags (`-W -Wall -fPIC`,
and the base options' `-Os`) plus the variant's. BearSSL's options (src/config.h: BR_64,
BR_AES_X86NI, BR_SSE2, BR_RDRAND, BR_USE_URANDOM, ...) are macros that config.h and inner.h
define only where the build has not: a variant's macros are passed as -D flags. The
T0-generated C files (ssl_hs_client.c, x509_minimal.c, ...) ship in the tree; the T0
compiler (C#) is not run.

The library itself allocates no memory at all: every context and buffer is the caller's.

Cortex-M builds (the cortex-m* features) compile the same sources with arm-none-eabi-gcc, the
core's flags and no -fPIC (position-independent code would cost a GOT indirection that no
firmware build has). `TLSBENCH_BEARSSL_RECORD` is no BearSSL option but the firmware image's
record size (the I/O buffer it declares, builds/firmware.py): it reaches the image only.
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path

from tlsbench.builds.recipes.base import BuildContext, LinkInfo, tool_version
from tlsbench.builds.variants import Variant

# Macros of the firmware image, not of the library (see the top of the file).
IMAGE_MACROS = frozenset({"TLSBENCH_BEARSSL_RECORD"})


def known_macros(source: Path) -> set[str]:
    """The BR_* options the tree's config.h and inner.h test or define."""
    names: set[str] = set()
    for header in (source / "src" / "config.h", source / "src" / "inner.h"):
        names |= set(re.findall(r"\b(BR_[A-Z0-9_]+)\b", header.read_text(errors="replace")))
    return names


def release(variant: Variant) -> str:
    """BearSSL's release: the pin's (a local tree's is unknown)."""
    pin = variant.line.pin
    return pin.library_version if pin is not None else "unknown (a local tree)"


class BearsslRecipe:
    library = "bearssl"

    def key_inputs(self, variant: Variant) -> dict[str, str]:
        return {"make": tool_version(["make", "--version"])}

    def build(self, ctx: BuildContext) -> LinkInfo:
        assert ctx.source is not None
        image_only = {n: v for n, v in ctx.variant.macros.items() if n in IMAGE_MACROS}
        library_macros = {n: v for n, v in ctx.variant.macros.items() if n not in image_only}
        if image_only and not ctx.target.firmware:
            raise ctx.log.fail(
                f"{', '.join(image_only)} sizes a firmware image's I/O buffer (the records-N "
                "features): add a cortex-m feature; a native driver takes --record-size instead"
            )
        unknown = sorted(set(library_macros) - known_macros(ctx.source))
        if unknown:
            raise ctx.log.fail(
                f"{', '.join(unknown)} is not an option of this BearSSL (src/config.h and "
                "src/inner.h do not mention it)"
            )
        macros = [
            f"-D{name}" if value == "" else f"-D{name}={value}"
            for name, value in library_macros.items()
        ]
        pic = [] if ctx.target.firmware else ["-fPIC"]
        flags = ["-W", "-Wall", *pic, *ctx.variant.cflags, *macros, *ctx.m32]
        ctx.tree.mkdir(parents=True, exist_ok=True)
        ctx.log.step("make lib")
        ctx.run(
            [
                "make", "-C", str(ctx.source), "-j", str(ctx.jobs), "lib", "CONF=Unix",
                f"BUILD={ctx.tree}", f"CC={ctx.cc}", f"CFLAGS={' '.join(flags)}",
                f"AR={ctx.target.tool('ar', 'ar')}",
            ],
            cwd=ctx.work,
        )  # fmt: skip
        lib = ctx.prefix / "lib"
        lib.mkdir(parents=True, exist_ok=True)
        archive = lib / "libbearssl.a"
        shutil.copyfile(ctx.tree / "libbearssl.a", archive)
        shutil.copytree(ctx.source / "inc", ctx.prefix / "include")
        return LinkInfo(
            include_dirs=[str(ctx.prefix / "include")],
            libraries=[str(archive)],
            # The same options reach the drivers, so that the probe reports them; and the
            # release, which the tree states nowhere (no version macro, no version call).
            defines=[
                *(m.removeprefix("-D") for m in macros),
                *(f"{n}={v}" if v else n for n, v in image_only.items()),
                f'TB_BEARSSL_VERSION="{release(ctx.variant)}"',
            ],
            c_flags=list(ctx.m32),
            link_flags=list(ctx.m32),
            library_files=[str(archive)],
        )


# -- At run time (recipes/runtime.py) -------------------------------------------------------
# What BearSSL does when it runs, not how it is built: nothing below is a build input.

# BearSSL's default engine set-up picks AES-NI, PCLMULQDQ (GHASH) and SSE2 (ChaCha20) by
# CPUID at run time, with no switch; a build without them (the no-simd feature) is the way.
ACCEL_FEATURES = ()
ACCEL_OFF_NEEDS = ("no-simd", "BearSSL has no run-time switch: use the bearssl no-simd variant")
