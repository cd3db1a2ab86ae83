"""NSS: NSPR and NSS's own make build (coreconf), only the libraries TLS needs.

NSS's make build writes its objects beside the sources and its results into `../dist`, so
the recipe copies the two trees (NSS's nss/ without its tests and docs, NSPR's nspr/) into
the cache entry's build folder and builds there; the unpacked sources are never written to.
NSPR first (its configure and make, as NSS's `build_nspr` target runs them, without NSPR's
tests), then NSS's headers (`export`) and, directory by directory in dependency order, only
the libraries libssl3 needs: util, freebl, softoken, base, dev, pki, certdb, certhigh,
cryptohi, pk11wrap, nss, ssl. Not built: the tools (cmd/), the tests and gtests, libpkix
(NSS_DISABLE_LIBPKIX: the classic verifier is used), the legacy DBM database, S/MIME, the
built-in root module, the bundled SQLite (softoken links the system's: NSS_USE_SYSTEM_SQLITE)
and zlib.

NSS's options are make variables read from the environment (BUILD_OPT=1 USE_64=1 ...): the
sub-makes NSS starts inside `$(shell ...)` see the environment but not make's command line,
so they are passed that way, never as make arguments.

Shared libraries, not static ones: NSS loads its PKCS#11 module (libsoftokn3) and softoken
its crypto core (libfreeblpriv3) with dlopen, found beside libnss3; a static NSS needs
NSS_STATIC_SOFTOKEN, which only the gyp build (not installed here) offers. The drivers link
libssl3, libnss3, libnssutil3 and NSPR's three libraries by path with an RPATH (DT_RPATH,
which also serves the libraries' own dependencies) to the cache entry, so that the machine's
own NSS (libnss3-dev) is never picked up. The heap accounting still sees every allocation:
the driver defines malloc itself, and the dynamic linker binds the shared libraries (the
dlopened ones too) to it.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from tlsbench.builds.recipes.base import BuildContext, LinkInfo, tool_version
from tlsbench.builds.variants import Variant

# NSS's lib/ directories libssl3 needs, in dependency order.
LIB_DIRS = (
    "util", "freebl", "softoken", "base", "dev", "pki", "certdb", "certhigh", "cryptohi",
    "pk11wrap", "nss", "ssl",
)  # fmt: skip
# The libraries the drivers link, in link order (NSPR last).
LINKED = ("ssl3", "nss3", "nssutil3", "plc4", "plds4", "nspr4")
# Loaded by NSS at run time (dlopen), from the folder of libnss3.
LOADED = ("softokn3", "freeblpriv3")
# What of NSS's tree the build reads (the rest is tests, documentation, packaging).
NSS_PARTS = ("coreconf", "lib", "cmd", "Makefile", "manifest.mn")
# The make variables of a release build without what TLS does not need.
NSS_ENV = {
    "BUILD_OPT": "1",
    "USE_64": "1",
    "NSS_DISABLE_GTESTS": "1",
    "NSS_DISABLE_NSPR_TESTS": "1",
    "NSS_DISABLE_LIBPKIX": "1",
    "NSS_DISABLE_DBM": "1",
    "NSS_USE_SYSTEM_SQLITE": "1",
    "NSS_ENABLE_WERROR": "0",
}


def _nspr_tree(ctx: BuildContext) -> Path:
    trees = list(ctx.companions.values())
    if len(trees) != 1:
        raise ctx.log.fail("the nss pin must name its NSPR pin in `with` (sources/pins.toml)")
    return trees[0] / "nspr" if (trees[0] / "nspr").is_dir() else trees[0]


class NssRecipe:
    library = "nss"

    def key_inputs(self, variant: Variant) -> dict[str, str]:
        return {"make": tool_version(["make", "--version"])}

    def build(self, ctx: BuildContext) -> LinkInfo:
        assert ctx.source is not None
        if ctx.variant.arch != "x86_64":
            raise ctx.log.fail(f"the nss recipe builds x86-64 only, not {ctx.variant.arch}")
        nss_src = ctx.source / "nss" if (ctx.source / "nss").is_dir() else ctx.source
        ctx.tree.mkdir(parents=True, exist_ok=True)
        ctx.log.step("copy the NSS and NSPR trees (NSS's make builds in its tree)")
        shutil.copytree(_nspr_tree(ctx), ctx.tree / "nspr", symlinks=True)
        (ctx.tree / "nss").mkdir()
        for part in NSS_PARTS:
            src = nss_src / part
            if src.is_dir():
                shutil.copytree(src, ctx.tree / "nss" / part, symlinks=True)
            else:
                shutil.copyfile(src, ctx.tree / "nss" / part)
        cflags = " ".join(ctx.variant.cflags)
        env = {**NSS_ENV, "CC": ctx.cc, **({"XCFLAGS": cflags} if cflags else {})}
        jobs = f"-j{ctx.jobs}"
        nss = ctx.tree / "nss"
        ctx.log.step("NSPR: configure and make")
        ctx.run(["make", "-C", str(nss), jobs, "build_nspr"], cwd=ctx.work, env=env)
        ctx.log.step("NSS: headers")
        ctx.run(
            ["make", "-C", str(nss / "coreconf" / "nsinstall"), "program"], cwd=ctx.work, env=env
        )
        ctx.run(["make", "-C", str(nss / "lib"), "export"], cwd=ctx.work, env=env)
        # lib/pk11wrap includes cmd/lib's secutil.h, which only cmd/lib's export installs.
        ctx.run(["make", "-C", str(nss / "cmd" / "lib"), "export"], cwd=ctx.work, env=env)
        for folder in LIB_DIRS:
            ctx.log.step(f"NSS: lib/{folder}")
            ctx.run(["make", "-C", str(nss / "lib" / folder), jobs, "libs"], cwd=ctx.work, env=env)
        return self._install(ctx)

    def _install(self, ctx: BuildContext) -> LinkInfo:
        dist = ctx.tree / "dist"
        objdirs = [p for p in dist.iterdir() if p.is_dir() and p.name.endswith(".OBJ")]
        if len(objdirs) != 1:
            raise ctx.log.fail(f"expected one object folder in {dist}, found {objdirs}")
        lib = ctx.prefix / "lib"
        lib.mkdir(parents=True, exist_ok=True)
        for name in (*LINKED, *LOADED):
            shutil.copyfile(objdirs[0] / "lib" / f"lib{name}.so", lib / f"lib{name}.so")
        include = ctx.prefix / "include"
        shutil.copytree(dist / "public" / "nss", include / "nss")
        shutil.copytree(objdirs[0] / "include", include / "nspr")
        linked = [str(lib / f"lib{name}.so") for name in LINKED]
        return LinkInfo(
            include_dirs=[str(include / "nss"), str(include / "nspr")],
            libraries=linked,
            link_flags=["-Wl,--disable-new-dtags", f"-Wl,-rpath,{lib}"],
            library_files=[*linked, *(str(lib / f"lib{name}.so") for name in LOADED)],
        )


# -- At run time (recipes/runtime.py) -------------------------------------------------------
# What NSS does when it runs, not how it is built: nothing below is a build input.

# freebl picks AES-NI, PCLMULQDQ, SHA, AVX, AVX2, ADX and SSSE3/SSE4 code by CPUID when it
# starts, unless these variables are set (lib/freebl/blinit.c, CheckX86CPUSupport).
ACCEL_OFF_ENV = {
    name: "1"
    for name in (
        "NSS_DISABLE_HW_AES", "NSS_DISABLE_PCLMUL", "NSS_DISABLE_HW_SHA", "NSS_DISABLE_AVX",
        "NSS_DISABLE_AVX2", "NSS_DISABLE_ADX", "NSS_DISABLE_SSSE3", "NSS_DISABLE_SSE4_1",
        "NSS_DISABLE_SSE4_2",
    )
}  # fmt: skip
