"""AWS-LC: CMake, static libssl.a and libcrypto.a, from the pre-generated sources it ships.

The tree ships its assembly and error tables pre-generated (generated-src/), so the build
needs neither Go nor Perl; with either installed, AWS-LC would regenerate them, and the
build would depend on the machine's tools: both are switched off in variants.toml.
"""

from __future__ import annotations

from tlsbench.builds.recipes.base import BuildContext, LinkInfo, tool_version
from tlsbench.builds.variants import Variant

# CMake only warns about a -D the project never reads; the build would differ silently.
UNUSED_WARNING = "Manually-specified variables were not used by the project"


class AwslcRecipe:
    library = "awslc"

    def key_inputs(self, variant: Variant) -> dict[str, str]:
        # libssl is C++: the C++ compiler is an input beside CMake.
        return {
            "cmake": tool_version(["cmake", "--version"]),
            "c++": tool_version(["g++", "--version"]),
        }

    def build(self, ctx: BuildContext) -> LinkInfo:
        assert ctx.source is not None
        if ctx.target.cross is not None or ctx.m32:
            raise ctx.log.fail("AWS-LC is built for the native x86_64 target only")
        macros = [
            f"-D{name}" if value == "" else f"-D{name}={value}"
            for name, value in ctx.variant.macros.items()
        ]
        flags = " ".join([*ctx.variant.cflags, *macros])
        ctx.log.step("cmake configure")
        ctx.run(
            [
                "cmake", "-S", str(ctx.source), "-B", str(ctx.tree), "-G", "Ninja",
                "-DCMAKE_BUILD_TYPE=Release", f"-DCMAKE_C_FLAGS={flags}",
                f"-DCMAKE_CXX_FLAGS={flags}", f"-DCMAKE_C_COMPILER={ctx.cc}",
                f"-DCMAKE_INSTALL_PREFIX={ctx.prefix}", "-DCMAKE_INSTALL_LIBDIR=lib",
                *ctx.variant.configure,
            ],
            cwd=ctx.work,
        )  # fmt: skip
        if UNUSED_WARNING in ctx.log.path.read_text(errors="replace"):
            raise ctx.log.fail(
                "CMake did not use some -D option(s) of the variant; the build would "
                "silently differ from the variant"
            )
        ctx.log.step("compile")
        ctx.run(["cmake", "--build", str(ctx.tree), "-j", str(ctx.jobs)], cwd=ctx.work)
        ctx.run(["cmake", "--install", str(ctx.tree)], cwd=ctx.work)
        lib = ctx.prefix / "lib"
        files = [str(lib / "libssl.a"), str(lib / "libcrypto.a")]
        return LinkInfo(
            include_dirs=[str(ctx.prefix / "include")],
            # libssl is C++ (no exceptions or RTTI, but operator new/delete and the
            # runtime's helpers come from libstdc++).
            libraries=[*files, "-lstdc++", "-lpthread", "-ldl"],
            library_files=files,
        )


# -- At run time (recipes/runtime.py) -------------------------------------------------------
# What AWS-LC does when it runs, not how it is built: nothing below is a build input.

# AWS-LC reads OPENSSL_ia32cap in OpenSSL's format (crypto/fipsmodule/cpucap): OpenSSL's
# switch switches its acceleration off.
ACCEL_OFF_AS = "openssl"
