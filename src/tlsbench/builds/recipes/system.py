"""`system` lines: the machine's own OpenSSL / GnuTLS from their Debian -dev packages."""

from __future__ import annotations

import shlex
import subprocess

from tlsbench.builds.recipes.base import BuildContext, LinkInfo
from tlsbench.builds.variants import Variant
from tlsbench.core.errors import BuildError

# The probe and driver also call nettle directly (its version), so it is linked too.
PKG_CONFIG_MODULES = {"openssl": ["libssl", "libcrypto"], "gnutls": ["gnutls", "nettle"]}


def debian_version(package: str) -> str | None:
    proc = subprocess.run(
        ["dpkg-query", "-W", "-f", "${Version}", package],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    return proc.stdout.strip() if proc.returncode == 0 and proc.stdout.strip() else None


class SystemRecipe:
    def __init__(self, library: str) -> None:
        self.library = library

    def key_inputs(self, variant: Variant) -> dict[str, str]:
        package = variant.line.system_package
        assert package is not None
        return {package: debian_version(package) or "missing"}

    def build(self, ctx: BuildContext) -> LinkInfo:
        package = ctx.variant.line.system_package
        assert package is not None
        if debian_version(package) is None:
            raise BuildError(
                f"{ctx.variant.name} links the machine's {self.library}, but {package} is "
                f"not installed. Install it with: apt-get install {package}"
            )
        modules = PKG_CONFIG_MODULES[self.library]

        def pkg_config(*args: str) -> list[str]:
            out = subprocess.run(
                ["pkg-config", *args, *modules], capture_output=True, text=True, check=True
            )
            return shlex.split(out.stdout)

        libdir = pkg_config("--variable=libdir")[0]
        files = [f"{libdir}/lib{m.removeprefix('lib')}.so" for m in modules]
        ctx.log.note(f"system {package} {debian_version(package)}: {files}")
        return LinkInfo(
            include_dirs=[f.removeprefix("-I") for f in pkg_config("--cflags-only-I")],
            libraries=pkg_config("--libs"),
            library_files=files,
        )
