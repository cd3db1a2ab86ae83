"""HACL*: the verified ChaCha20-Poly1305 of the hacl-c snapshot, as one static library.

An AEAD-only "library": only the files the AEAD needs are compiled (the snapshot's Makefile
builds NaCl, Ed25519, SHA-2 ... too, and a test harness that tlsbench does not use).

- portable: `Hacl_Chacha20Poly1305.c` as extracted, over the scalar `Hacl_Chacha20.c` and
  the 64-bit Poly1305 (`AEAD_Poly1305_64.c`, which multiplies with `unsigned __int128`).
- vec128: the same AEAD file with its ChaCha20 call bound to `Hacl_Chacha20_Vec128.c` (128-bit
  vectors: SSSE3 on x86). The snapshot has no vectorised AEAD of its own; both ChaCha20s are
  verified against the same specification and have the same signature, so only the name
  of the call changes (in that one file, by the preprocessor). Poly1305 stays 64-bit scalar.

Where the compiler has no `unsigned __int128` (32-bit targets), kremlib's portable 128-bit
arithmetic (`FStar.c`, `KRML_NOUINT128`) stands in for it, as the crate's build.rs does.
"""

from __future__ import annotations

import shutil
import subprocess

from tlsbench.errors import UserError
from tlsbench.recipes.base import BuildContext, LinkInfo
from tlsbench.variants import Variant

AEAD_SOURCES = ("Hacl_Chacha20.c", "AEAD_Poly1305_64.c", "Hacl_Chacha20Poly1305.c",
                "Hacl_Policies.c")  # fmt: skip
VEC128_SOURCE = "Hacl_Chacha20_Vec128.c"
# The one call the vec128 build rebinds, in the AEAD file only.
VEC128_REBIND = "-DHacl_Chacha20_chacha20=Hacl_Chacha20_Vec128_chacha20"


def chacha20_of(variant: Variant) -> str:
    """Which ChaCha20 the AEAD calls: "vec128" or "portable" (the default)."""
    features = set(variant.features)
    if {"portable", "vec128"} <= features:
        raise UserError(
            f"{variant.name}: portable and vec128 are two builds of ChaCha20; choose one"
        )
    return "vec128" if "vec128" in features else "portable"


class HaclRecipe:
    library = "hacl"

    def key_inputs(self, variant: Variant) -> dict[str, str]:
        # The feature name decides which files are compiled: part of the key.
        return {"chacha20": chacha20_of(variant)}

    def build(self, ctx: BuildContext) -> LinkInfo:
        assert ctx.source is not None
        chacha20 = chacha20_of(ctx.variant)
        ctx.tree.mkdir(parents=True, exist_ok=True)
        macros = [
            f"-D{name}" if value == "" else f"-D{name}={value}"
            for name, value in ctx.variant.macros.items()
        ]
        flags = ["-std=gnu11", *ctx.m32, *ctx.variant.cflags, *macros, f"-I{ctx.source}"]
        sources = list(AEAD_SOURCES)
        if not self._has_int128(ctx, flags):
            flags.append("-DKRML_NOUINT128")
            sources.append("FStar.c")
        if chacha20 == "vec128":
            sources.append(VEC128_SOURCE)
        ctx.log.step(f"compile ({chacha20} ChaCha20)")
        objects = []
        for name in sources:
            extra = [VEC128_REBIND] if chacha20 == "vec128" and name == AEAD_SOURCES[2] else []
            obj = ctx.tree / name.replace(".c", ".o")
            ctx.run([ctx.cc, *flags, *extra, "-c", str(ctx.source / name), "-o", str(obj)],
                    cwd=ctx.tree)  # fmt: skip
            objects.append(str(obj))
        lib = ctx.prefix / "lib"
        include = ctx.prefix / "include" / "hacl"
        lib.mkdir(parents=True, exist_ok=True)
        include.mkdir(parents=True, exist_ok=True)
        archive = lib / "libhacl.a"
        ctx.run([ctx.target.tool("ar", "ar"), "rcs", str(archive), *objects], cwd=ctx.tree)
        for header in sorted(ctx.source.glob("*.h")):
            shutil.copy2(header, include / header.name)
        defines = ["KRML_NOUINT128"] if "-DKRML_NOUINT128" in flags else []
        return LinkInfo(
            include_dirs=[str(include)],
            libraries=[str(archive)],
            defines=defines,
            c_flags=list(ctx.m32),
            link_flags=list(ctx.m32),
            library_files=[str(archive)],
        )

    @staticmethod
    def _has_int128(ctx: BuildContext, flags: list[str]) -> bool:
        """Whether the compiler, with these flags, has `unsigned __int128`."""
        proc = subprocess.run(
            [ctx.cc, *flags, "-dM", "-E", "-x", "c", "/dev/null"],
            capture_output=True, text=True, check=False,
        )  # fmt: skip
        if proc.returncode != 0:
            raise ctx.log.fail(f"{ctx.cc} could not list its predefined macros: {proc.stderr}")
        return "__SIZEOF_INT128__" in proc.stdout
