"""wolfSSL: autotools (autogen.sh once per source tree), out-of-tree configure, static."""

from __future__ import annotations

import fcntl
import shutil
from pathlib import Path

from tlsbench.recipes.base import BuildContext, LinkInfo, tool_version
from tlsbench.variants import Variant

# Flags every build needs; the rest comes from variants.toml.
STATIC_ONLY = [
    "--enable-static", "--disable-shared", "--disable-examples", "--disable-crypttests",
    "--disable-benchmark",
]  # fmt: skip


class WolfsslRecipe:
    library = "wolfssl"

    def key_inputs(self, variant: Variant) -> dict[str, str]:
        # The configure script is generated here, so the autotools are inputs.
        return {
            tool: tool_version([tool, "--version"])
            for tool in ("autoconf", "automake", "libtoolize")
        }

    def _autogen(self, ctx: BuildContext) -> None:
        """The Debian .orig of wolfSSL is a git export without configure: generate it once."""
        assert ctx.source is not None
        stamp = ctx.source / ".tlsbench-autogen-done"
        with (ctx.source / ".tlsbench-autogen.lock").open("w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            if not stamp.exists():
                ctx.log.step("autogen.sh (once per source tree)")
                ctx.run(["sh", "./autogen.sh"], cwd=ctx.source)
                stamp.touch()

    def build(self, ctx: BuildContext) -> LinkInfo:
        assert ctx.source is not None
        self._autogen(ctx)
        ctx.tree.mkdir(parents=True, exist_ok=True)
        macros = [
            f"-D{name}" if value == "" else f"-D{name}={value}"
            for name, value in ctx.variant.macros.items()
        ]
        cflags = " ".join([*ctx.variant.cflags, *macros, *ctx.m32])
        host = ["--host=i686-pc-linux-gnu"] if ctx.variant.arch == "i686" else []
        ctx.log.step("configure")
        ctx.run(
            [
                str(ctx.source / "configure"), f"--prefix={ctx.prefix}", "--libdir="
                + str(ctx.prefix / "lib"), *STATIC_ONLY, *ctx.variant.configure, *host,
                f"CC={ctx.cc}", f"CFLAGS={cflags}",
            ],
            cwd=ctx.tree,
        )  # fmt: skip
        ctx.check_configure_accepted()
        ctx.log.step("compile")
        ctx.run(["make", f"-j{ctx.jobs}"], cwd=ctx.tree)
        ctx.run(["make", "install"], cwd=ctx.tree)
        # wolfSSL's public API cannot pin the signature scheme nor read back the negotiated
        # group and signature without OPENSSL_EXTRA; the adapter reads them from the
        # library's own structures, declared in its private header.
        shutil.copyfile(ctx.source / "wolfssl" / "internal.h",
                        ctx.prefix / "include" / "wolfssl" / "internal.h")  # fmt: skip
        archive = str(ctx.prefix / "lib" / "libwolfssl.a")
        return LinkInfo(
            include_dirs=[str(ctx.prefix / "include")],
            libraries=[archive, "-lm", "-lpthread"],
            c_flags=list(ctx.m32),
            link_flags=list(ctx.m32),
            library_files=[archive],
        )


def options_h(prefix: Path) -> Path:
    return prefix / "include" / "wolfssl" / "options.h"
