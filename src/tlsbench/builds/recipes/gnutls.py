"""GnuTLS: configure out of tree against Debian's nettle / gmp / libtasn1, static.

A line whose pin takes a nettle pin along (`with`: GnuTLS 3.8.10 and later need nettle 3.10,
newer than Debian 12's) builds that nettle first, static and with --enable-fat (run-time
selection of its x86-64 AES-NI, SHA-NI and PCLMUL code, as Debian builds it), and links it
by path instead of the machine's."""

from __future__ import annotations

import os
import shlex
import subprocess
from pathlib import Path

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
        nettle = _build_nettle(ctx) if ctx.companions else None
        pc_path = os.pathsep.join(
            [str(ctx.prefix / "lib" / "pkgconfig"), os.environ.get("PKG_CONFIG_PATH", "")]
        )
        ctx.log.step("configure")
        ctx.run(
            [
                str(ctx.source / "configure"), f"--prefix={ctx.prefix}",
                f"--libdir={ctx.prefix / 'lib'}", "--enable-static", "--disable-shared",
                *ctx.variant.configure, f"CC={ctx.cc}", f"CFLAGS={cflags}",
            ],
            cwd=ctx.tree,
            env={"PKG_CONFIG_PATH": pc_path},
        )  # fmt: skip
        ctx.check_configure_accepted()
        ctx.log.step("compile")
        ctx.run(["make", f"-j{ctx.jobs}"], cwd=ctx.tree)
        ctx.run(["make", "install"], cwd=ctx.tree)
        archive = ctx.prefix / "lib" / "libgnutls.a"
        libs = subprocess.run(
            ["pkg-config", "--static", "--libs", "gnutls"],
            env={**os.environ, "PKG_CONFIG_PATH": pc_path},
            capture_output=True, text=True, check=True,
        ).stdout  # fmt: skip
        # Link the archive by path so that no shared libgnutls can be picked instead.
        deps = [f for f in shlex.split(libs) if f not in ("-lgnutls",) and not f.startswith("-L")]
        if nettle:
            # The pinned nettle by path too: -lnettle would find the machine's shared one.
            deps = [str(nettle[f]) if f in nettle else f for f in deps]
        return LinkInfo(
            include_dirs=[str(ctx.prefix / "include")],
            libraries=[str(archive), *deps],
            c_flags=list(ctx.m32),
            link_flags=list(ctx.m32),
            library_files=[str(archive), *map(str, (nettle or {}).values())],
        )


def _build_nettle(ctx: BuildContext) -> dict[str, Path]:
    """The `with` nettle pin, static, installed into the line's prefix (whose pkgconfig
    folder GnuTLS's configure then reads first); its archives by link flag."""
    if len(ctx.companions) != 1:
        raise ctx.log.fail("a gnutls pin's `with` names one nettle pin (sources/pins.toml)")
    source = next(iter(ctx.companions.values()))
    tree = ctx.work / "nettle-tree"
    tree.mkdir(parents=True, exist_ok=True)
    ctx.log.step("nettle")
    ctx.run(
        [
            str(source / "configure"), f"--prefix={ctx.prefix}", f"--libdir={ctx.prefix / 'lib'}",
            "--enable-static", "--disable-shared", "--enable-fat", "--disable-documentation",
            "--disable-openssl", f"CC={ctx.cc}", f"CFLAGS={' '.join(['-O2', *ctx.m32])}",
        ],
        cwd=tree,
    )  # fmt: skip
    ctx.run(["make", f"-j{ctx.jobs}"], cwd=tree)
    ctx.run(["make", "install"], cwd=tree)
    return {f"-l{name}": ctx.prefix / "lib" / f"lib{name}.a" for name in ("nettle", "hogweed")}


# -- At run time (recipes/runtime.py) -------------------------------------------------------
# What GnuTLS does when it runs, not how it is built: nothing below is a build input.

# GNUTLS_CPUID_OVERRIDE=0x1 switches GnuTLS's own code paths off; nettle (which GnuTLS also
# calls, e.g. for AES and GHASH) has its own run-time selection, switched off by
# NETTLE_FAT_OVERRIDE=none.
ACCEL_OFF_ENV = {"GNUTLS_CPUID_OVERRIDE": "0x1", "NETTLE_FAT_OVERRIDE": "none"}
