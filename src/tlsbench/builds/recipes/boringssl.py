"""BoringSSL: cmake out of tree, static libssl and libcrypto only.

The tree bundled in the boring-sys crate carries the generated sources (`gen/`: the
assembly perlasm would produce, the error tables, the symbol lists), so a build of the two
libraries needs neither Perl nor Go; Go is only needed for BoringSSL's tests and its FIPS
build, neither of which is built here (BUILD_TESTING=OFF, no FIPS). The crate's optional
patches (its `patches/` folder, applied by its Rust build script for some cargo features)
are not applied: this is upstream BoringSSL as the crate bundles it.
"""

from __future__ import annotations

import shutil

from tlsbench.builds.recipes.base import BuildContext, LinkInfo, tool_version
from tlsbench.builds.variants import Variant

# Only the two libraries the drivers link (`bssl`, libpki and libdecrepit are not built).
TARGETS = ("crypto", "ssl")


class BoringsslRecipe:
    library = "boringssl"

    def key_inputs(self, variant: Variant) -> dict[str, str]:
        # libssl is C++: the C++ compiler is an input as well as cmake and ninja.
        return {
            "cmake": tool_version(["cmake", "--version"]),
            "ninja": tool_version(["ninja", "--version"]),
            "c++": tool_version(["g++", "--version"]),
        }

    def build(self, ctx: BuildContext) -> LinkInfo:
        assert ctx.source is not None
        ctx.tree.mkdir(parents=True, exist_ok=True)
        macros = [
            f"-D{name}" if value == "" else f"-D{name}={value}"
            for name, value in ctx.variant.macros.items()
        ]
        flags = " ".join([*ctx.variant.cflags, *macros, *ctx.m32])
        i686 = ["-DCMAKE_SYSTEM_NAME=Linux", "-DCMAKE_SYSTEM_PROCESSOR=x86"] if ctx.m32 else []
        ctx.log.step("cmake")
        ctx.run(
            [
                "cmake", "-S", str(ctx.source), "-B", str(ctx.tree), "-G", "Ninja",
                # Release: -O3 -DNDEBUG (BoringSSL refuses nothing else without asserts).
                "-DCMAKE_BUILD_TYPE=Release", "-DBUILD_TESTING=OFF", "-DBUILD_SHARED_LIBS=OFF",
                f"-DCMAKE_C_COMPILER={ctx.cc}", f"-DCMAKE_C_FLAGS={flags}",
                f"-DCMAKE_CXX_FLAGS={flags}", f"-DCMAKE_ASM_FLAGS={' '.join(ctx.m32)}",
                *i686, *ctx.variant.configure,
            ],
            cwd=ctx.tree,
        )  # fmt: skip
        ctx.log.step("compile")
        ctx.run(
            ["cmake", "--build", str(ctx.tree), "-j", str(ctx.jobs), "--target", *TARGETS],
            cwd=ctx.tree,
        )
        lib = ctx.prefix / "lib"
        lib.mkdir(parents=True)
        shutil.copytree(ctx.source / "include", ctx.prefix / "include")
        files = []
        for name in ("libssl.a", "libcrypto.a"):
            shutil.copyfile(ctx.tree / name, lib / name)
            files.append(str(lib / name))
        # OPENSSL_NO_ASM is a cmake option that becomes a compile definition of the library
        # only; the drivers get it too, so that the probe and the adapter report it.
        no_asm = any(o.startswith("-DOPENSSL_NO_ASM=") and not o.endswith(("=0", "=OFF"))
                     for o in ctx.variant.configure)  # fmt: skip
        return LinkInfo(
            include_dirs=[str(ctx.prefix / "include")],
            defines=["OPENSSL_NO_ASM"] if no_asm else [],
            # libssl is C++ built without exceptions or RTTI, yet it still calls the C++
            # runtime (operator new/delete of its own containers, guard variables).
            libraries=[*files, "-lstdc++", "-lpthread"],
            c_flags=list(ctx.m32),
            link_flags=list(ctx.m32),
            library_files=files,
        )


# -- At run time (recipes/runtime.py) -------------------------------------------------------
# What BoringSSL does when it runs, not how it is built: nothing below is a build input.

# BoringSSL reads OPENSSL_ia32cap, in OpenSSL's two-word format, at its CPU probe.
ACCEL_OFF_AS = "openssl"
