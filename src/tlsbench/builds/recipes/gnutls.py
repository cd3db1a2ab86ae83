"""GnuTLS: configure out of tree against Debian's nettle / gmp / libtasn1, static."""

from __future__ import annotations

import os
import shlex
import subprocess

from tlsbench.builds.recipes.base import BuildContext, LinkInfo, tool_version
from tlsbench.builds.variants import Variant


class GnutlsRecipe:
    library = "gnutls"

    def key_inputs(self, variant: Variant) -> dict[str, str]:
        # Debian's nettle and gmp are compiled into every program linked against the build.
        return {
            pkg: tool_version(["pkg-config", "--modversion", pkg])
            for pkg in ("nettle", "hogweed", "gmp", "libtasn1")
        }

    def build(self, ctx: BuildContext) -> LinkInfo:
        assert ctx.source is not None
        ctx.tree.mkdir(parents=True, exist_ok=True)
        macros = [
            f"-D{name}" if value == "" else f"-D{name}={value}"
            for name, value in ctx.variant.macros.items()
        ]
        cflags = " ".join([*ctx.variant.cflags, *macros, *ctx.m32])
        ctx.log.step("configure")
        ctx.run(
            [
                str(ctx.source / "configure"), f"--prefix={ctx.prefix}",
                f"--libdir={ctx.prefix / 'lib'}", "--enable-static", "--disable-shared",
                *ctx.variant.configure, f"CC={ctx.cc}", f"CFLAGS={cflags}",
            ],
            cwd=ctx.tree,
        )  # fmt: skip
        ctx.check_configure_accepted()
        ctx.log.step("compile")
        ctx.run(["make", f"-j{ctx.jobs}"], cwd=ctx.tree)
        ctx.run(["make", "install"], cwd=ctx.tree)
        archive = ctx.prefix / "lib" / "libgnutls.a"
        pc_path = os.pathsep.join(
            [str(ctx.prefix / "lib" / "pkgconfig"), os.environ.get("PKG_CONFIG_PATH", "")]
        )
        libs = subprocess.run(
            ["pkg-config", "--static", "--libs", "gnutls"],
            env={**os.environ, "PKG_CONFIG_PATH": pc_path},
            capture_output=True, text=True, check=True,
        ).stdout  # fmt: skip
        # Link the archive by path so that no shared libgnutls can be picked instead.
        deps = [f for f in shlex.split(libs) if f not in ("-lgnutls",) and not f.startswith("-L")]
        return LinkInfo(
            include_dirs=[str(ctx.prefix / "include")],
            libraries=[str(archive), *deps],
            c_flags=list(ctx.m32),
            link_flags=list(ctx.m32),
            library_files=[str(archive)],
        )


# -- At run time (recipes/runtime.py) -------------------------------------------------------
# What GnuTLS does when it runs, not how it is built: nothing below is a build input.

# GNUTLS_CPUID_OVERRIDE=0x1 switches GnuTLS's own code paths off; nettle (which GnuTLS also
# calls, e.g. for AES and GHASH) has its own run-time selection, switched off by
# NETTLE_FAT_OVERRIDE=none.
ACCEL_OFF_ENV = {"GNUTLS_CPUID_OVERRIDE": "0x1", "NETTLE_FAT_OVERRIDE": "none"}
