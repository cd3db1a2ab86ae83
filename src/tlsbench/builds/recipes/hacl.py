"""HACL*: verified ChaCha20-Poly1305 (C extracted from F*), as one static library.

An AEAD-only "library": only the files the AEAD needs are compiled. Two source trees:

- the 2017 `hacl-c` snapshot (crate hacl-star-sys): `Hacl_Chacha20Poly1305.c` over the scalar
  `Hacl_Chacha20.c` and the 64-bit Poly1305 (`AEAD_Poly1305_64.c`). Its vec128 build binds the
  AEAD file's one ChaCha20 call to `Hacl_Chacha20_Vec128.c` (128-bit vectors, SSSE3): the
  snapshot has no vectorised AEAD of its own; both ChaCha20s are verified against the same
  specification and share a signature, so only the name of the call changes (in that one
  file, by the preprocessor). Poly1305 stays 64-bit scalar. Where the compiler has no
  `unsigned __int128` (32-bit targets), kremlib's portable 128-bit arithmetic (`FStar.c`,
  `KRML_NOUINT128`) stands in for it, as the crate's build.rs does.
- the hacl-packages distribution (crate libcrux-hacl, `c/`): its own AEADs
  `Hacl_AEAD_Chacha20Poly1305{,_Simd128,_Simd256}.c`, each with its ChaCha20 and Poly1305.

The vector instruction flags go to the vector files only, so that the portable code is the
same in every build.
"""

from __future__ import annotations

import shutil
import subprocess
import tomllib
from pathlib import Path

from tlsbench.builds.recipes.base import BuildContext, LinkInfo
from tlsbench.builds.variants import Variant
from tlsbench.core.errors import UserError

IMPLEMENTATIONS = ("portable", "vec128", "vec256")

# The 2017 snapshot.
SNAPSHOT_SOURCES = ("Hacl_Chacha20.c", "AEAD_Poly1305_64.c", "Hacl_Chacha20Poly1305.c",
                    "Hacl_Policies.c")  # fmt: skip
SNAPSHOT_VEC128 = ("Hacl_Chacha20_Vec128.c",)
# The one call the vec128 build rebinds, in the AEAD file only.
SNAPSHOT_REBIND = "-DHacl_Chacha20_chacha20=Hacl_Chacha20_Vec128_chacha20"

# hacl-packages: per implementation, its files and the instruction sets they are written
# for (the flags libcrux-hacl's build.rs gives them).
PACKAGES_SOURCES = {
    "portable": ("Hacl_AEAD_Chacha20Poly1305.c", "Hacl_Chacha20.c", "Hacl_MAC_Poly1305.c",
                 "Lib_Memzero0.c"),
    "vec128": ("Hacl_AEAD_Chacha20Poly1305_Simd128.c", "Hacl_Chacha20_Vec128.c",
               "Hacl_MAC_Poly1305_Simd128.c"),
    "vec256": ("Hacl_AEAD_Chacha20Poly1305_Simd256.c", "Hacl_Chacha20_Vec256.c",
               "Hacl_MAC_Poly1305_Simd256.c"),
}  # fmt: skip
PACKAGES_FLAGS = {
    "portable": [],
    "vec128": ["-DHACL_CAN_COMPILE_VEC128=1", "-msse4.1", "-msse4.2", "-mavx"],
    "vec256": ["-DHACL_CAN_COMPILE_VEC256=1", "-mavx", "-mavx2"],
}
PACKAGES_INCLUDES = ("include", "karamel/include", "karamel/krmllib/dist/minimal")


def implementation_of(variant: Variant) -> str:
    """Which ChaCha20-Poly1305 the build provides: one of IMPLEMENTATIONS ("portable" when no
    feature names one)."""
    chosen = [name for name in IMPLEMENTATIONS if name in variant.features]
    if len(chosen) > 1:
        raise UserError(
            f"{variant.name}: {' and '.join(chosen)} are different builds of the AEAD; choose one"
        )
    return chosen[0] if chosen else "portable"


def crate_of(source: Path) -> str:
    """`NAME-VERSION` of the crate whose archive holds the tree, from its Cargo.toml."""
    try:
        package = tomllib.loads((source.parent / "Cargo.toml").read_text())["package"]
        return f"{package['name']}-{package['version']}"
    except (OSError, KeyError, tomllib.TOMLDecodeError) as exc:
        raise UserError(f"{source.parent}: no crate manifest with a name and version ({exc})",
                        1) from exc  # fmt: skip


def is_snapshot(source: Path) -> bool:
    return (source / "Hacl_Chacha20Poly1305.c").exists()


class HaclRecipe:
    library = "hacl"

    def key_inputs(self, variant: Variant) -> dict[str, str]:
        # The feature decides which files are compiled: part of the key.
        return {"implementation": implementation_of(variant)}

    def build(self, ctx: BuildContext) -> LinkInfo:
        assert ctx.source is not None
        implementation = implementation_of(ctx.variant)
        ctx.tree.mkdir(parents=True, exist_ok=True)
        macros = [
            f"-D{name}" if value == "" else f"-D{name}={value}"
            for name, value in ctx.variant.macros.items()
        ]
        flags = ["-std=gnu11", *ctx.m32, *ctx.variant.cflags, *macros]
        int128 = self._has_int128(ctx, flags)
        lib = ctx.prefix / "lib"
        include = ctx.prefix / "include" / "hacl"
        lib.mkdir(parents=True, exist_ok=True)
        include.mkdir(parents=True, exist_ok=True)
        if is_snapshot(ctx.source):
            compiled, defines = self._snapshot(ctx, implementation, flags, int128)
            for header in sorted(ctx.source.glob("*.h")):
                shutil.copy2(header, include / header.name)
            include_dirs = [str(include)]
        else:
            compiled, defines = self._packages(ctx, implementation, flags, int128)
            include_dirs = []
            for folder in PACKAGES_INCLUDES:
                shutil.copytree(ctx.source / folder, include / folder, dirs_exist_ok=True)
                include_dirs.append(str(include / folder))
        archive = lib / "libhacl.a"
        ctx.run([ctx.target.tool("ar", "ar"), "rcs", str(archive), *compiled], cwd=ctx.tree)
        # The release, as the crate that bundles the tree states it (the tree has none).
        defines.append(f"TLSBENCH_HACL_CRATE={crate_of(ctx.source)}")
        return LinkInfo(
            include_dirs=include_dirs,
            libraries=[str(archive)],
            defines=defines,
            c_flags=list(ctx.m32),
            link_flags=list(ctx.m32),
            library_files=[str(archive)],
        )

    def _compile(self, ctx: BuildContext, source: Path, flags: list[str]) -> str:
        obj = ctx.tree / source.name.replace(".c", ".o")
        ctx.run([ctx.cc, *flags, "-c", str(source), "-o", str(obj)], cwd=ctx.tree)
        return str(obj)

    def _snapshot(self, ctx: BuildContext, implementation: str, flags: list[str],
                  int128: bool) -> tuple[list[str], list[str]]:  # fmt: skip
        source = ctx.source
        assert source is not None
        if implementation == "vec256":
            raise UserError(
                f"{ctx.variant.name}: the hacl-c snapshot has no 256-bit ChaCha20 (vec256 is "
                "a feature of the hacl-packages line)"
            )
        flags = [*flags, f"-I{source}"]
        defines = []
        sources = list(SNAPSHOT_SOURCES)
        if not int128:
            flags.append("-DKRML_NOUINT128")
            defines.append("KRML_NOUINT128")
            sources.append("FStar.c")
        ctx.log.step(f"compile the hacl-c snapshot's AEAD ({implementation} ChaCha20)")
        compiled = []
        for name in sources:
            rebind = (
                [SNAPSHOT_REBIND]
                if implementation == "vec128" and name == SNAPSHOT_SOURCES[2]
                else []
            )
            compiled.append(self._compile(ctx, source / name, [*flags, *rebind]))
        if implementation == "vec128":
            for name in SNAPSHOT_VEC128:
                compiled.append(self._compile(ctx, source / name, [*flags, "-mssse3"]))
        return compiled, defines

    def _packages(self, ctx: BuildContext, implementation: str, flags: list[str],
                  int128: bool) -> tuple[list[str], list[str]]:  # fmt: skip
        source = ctx.source
        assert source is not None
        if ctx.variant.arch != "x86_64" and implementation != "portable":
            raise UserError(f"{ctx.variant.name}: the vector AEADs are built for x86-64 here")
        flags = [*flags, *(f"-I{source / d}" for d in PACKAGES_INCLUDES)]
        if int128:
            flags.append("-DHACL_CAN_COMPILE_UINT128=1")
        ctx.log.step(f"compile hacl-packages' {implementation} AEAD")
        compiled = [self._compile(ctx, source / "src" / name, flags)
                    for name in PACKAGES_SOURCES["portable"]]  # fmt: skip
        if implementation != "portable":
            vector = [*flags, *PACKAGES_FLAGS[implementation]]
            for name in PACKAGES_SOURCES[implementation]:
                compiled.append(self._compile(ctx, source / "src" / name, vector))
        simd = {"portable": "0", "vec128": "128", "vec256": "256"}[implementation]
        return compiled, ["TLSBENCH_HACL_PACKAGES", f"TLSBENCH_HACL_SIMD={simd}"]

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


# -- At run time (recipes/runtime.py) -------------------------------------------------------
# What HACL* does when it runs, not how it is built: nothing below is a build input.

# No run-time switch: these build features are its vectorised code.
ACCEL_FEATURES = ("vec128", "vec256")
# Builds whose code valgrind cannot run (it stops them with SIGILL), by feature.
VALGRIND_UNDECODABLE = {
    "vec256": "valgrind 3.19 cannot decode the register form of VMOVQ (VEX 66 0F D6) that "
    "HACL*'s AVX2 Poly1305 uses (SIGILL in Hacl_MAC_Poly1305_Simd256_load_acc4)",
}
