"""s2n-tls: CMake, one static libs2n.a, over the aws-lc line's own build of AWS-LC.

s2n-tls needs a libcrypto; tlsbench gives it the pinned AWS-LC. Rather than compiling
AWS-LC a second time inside this build (five minutes on two cores), the recipe names the
aws-lc line's build as one it builds on (`builds_on`): the builder builds it first, or finds
it in the cache, puts its key into this build's key, and hands its installed prefix here.
s2n's CMake finds AWS-LC's libcrypto there (its crypto-config.cmake, AWS::crypto) and runs
its feature probes against it; the drivers link libs2n.a and that libcrypto.a.
"""

from __future__ import annotations

import re
import shutil

from tlsbench.builds.recipes.base import BuildContext, LinkInfo, tool_version
from tlsbench.builds.variants import Variant

# The line whose build s2n-tls is built over (a line of sources/pins.toml, as built by its
# own recipe with the base options of variants.toml).
AWSLC = "aws-lc-5.12.0"
# CMake only warns about a -D the project never reads; the build would differ silently.
UNUSED_WARNING = "Manually-specified variables were not used by the project"


def release(variant: Variant) -> str:
    """s2n-tls's release: the pin's (a local tree's is unknown)."""
    pin = variant.line.pin
    return pin.library_version if pin is not None else "unknown (a local tree)"


class S2nRecipe:
    library = "s2n"
    builds_on = (AWSLC,)

    def key_inputs(self, variant: Variant) -> dict[str, str]:
        return {"cmake": tool_version(["cmake", "--version"])}

    def build(self, ctx: BuildContext) -> LinkInfo:
        assert ctx.source is not None
        if ctx.target.cross is not None or ctx.m32:
            raise ctx.log.fail("s2n-tls is built for the native x86_64 target only (as AWS-LC)")
        awslc = ctx.builds_on[AWSLC]
        macros = [
            f"-D{name}" if value == "" else f"-D{name}={value}"
            for name, value in ctx.variant.macros.items()
        ]
        flags = " ".join([*ctx.variant.cflags, *macros])
        ctx.log.step(f"cmake configure (libcrypto: {AWSLC} at {awslc.prefix})")
        ctx.run(
            [
                "cmake", "-S", str(ctx.source), "-B", str(ctx.tree), "-G", "Ninja",
                "-DCMAKE_BUILD_TYPE=Release", f"-DCMAKE_C_FLAGS={flags}",
                f"-DCMAKE_C_COMPILER={ctx.cc}", f"-DCMAKE_PREFIX_PATH={awslc.prefix}",
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
        # s2n's feature probes (which libcrypto calls exist, kTLS, ...) as the configure
        # step found them: macros of the library's compiles, which its internal headers
        # read too.
        features = re.findall(r"feature (S2N_\w+): TRUE", ctx.log.path.read_text(errors="replace"))
        ctx.facts["features"] = sorted(set(features))
        # s2n-tls has no public API to build a security policy (which suites, groups and
        # schemes to offer): only named policies. The adapter builds its own policy from
        # s2n's own tables with s2n's internal headers, installed here beside the API (the
        # library's folders, headers only).
        internal = ctx.prefix / "include" / "s2n-internal"
        for folder in ("api", "crypto", "error", "stuffer", "tls", "utils"):
            shutil.copytree(
                ctx.source / folder,
                internal / folder,
                ignore=lambda _, names: [n for n in names if n.endswith((".c", ".S"))],
            )
        s2n = ctx.prefix / "lib" / "libs2n.a"
        libcrypto = next(f for f in awslc.link.library_files if f.endswith("libcrypto.a"))
        ctx.facts["libcrypto"] = {"line": AWSLC, "file": libcrypto}
        return LinkInfo(
            include_dirs=[str(ctx.prefix / "include"), *awslc.link.include_dirs],
            # The internal headers as system headers: their own warnings are not the
            # drivers' (api/ too: they include "unstable/events.h").
            c_flags=[f"-isystem{internal}", f"-isystem{internal / 'api'}"],
            # The library's own macros (its internal headers depend on them), and the release,
            # which the tree states nowhere.
            defines=[
                *(f"{name}=1" for name in sorted(set(features))),
                "S2N_BUILD_RELEASE=1",
                f'TB_S2N_VERSION="{release(ctx.variant)}"',
            ],
            # AWS-LC's libcrypto is C (its libssl, the C++ one, is not linked).
            libraries=[str(s2n), libcrypto, "-lpthread", "-ldl", "-lm"],
            # What the drivers link of AWS-LC is part of s2n-tls's code here.
            library_files=[str(s2n), libcrypto],
        )


# -- At run time (recipes/runtime.py) -------------------------------------------------------
# What s2n-tls does when it runs, not how it is built: nothing below is a build input.

# s2n's crypto is AWS-LC's, which reads OPENSSL_ia32cap in OpenSSL's format.
ACCEL_OFF_AS = "openssl"
