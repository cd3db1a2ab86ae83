"""rustls through its C API: the rustls-ffi crate built by cargo as a static library.

The dependency tree is pinned by the Cargo.lock committed under sources/cargo/<line>/ (one
checksum per crate), copied over the crate's own before building; `--locked` refuses any
other tree. The registry crates are fetched once into the cache's CARGO_HOME; builds are
`--offline`.

A variant's `configure` entries are rustls-ffi cargo features. The crypto provider is one of
them: `aws-lc-rs` (the default) or `ring`, which replaces it.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import subprocess
import tomllib
from pathlib import Path

from tlsbench.builds.recipes.base import BuildContext, LinkInfo, tool_version
from tlsbench.builds.variants import Variant
from tlsbench.core import paths

PROVIDERS = ("aws-lc-rs", "ring")
LOCKS = paths.REPO / "sources" / "cargo"


def lock_file(line: str) -> Path:
    return LOCKS / line / "Cargo.lock"


def locked_version(line: str, crate: str) -> str:
    """The version of one crate in a line's committed Cargo.lock ("" when absent)."""
    lock = tomllib.loads(lock_file(line).read_text())
    return next((p["version"] for p in lock.get("package", []) if p["name"] == crate), "")


def features(variant: Variant) -> list[str]:
    """The cargo features of a variant: exactly one provider (`ring` replaces aws-lc-rs)."""
    chosen = list(variant.configure) or ["aws-lc-rs"]
    if "ring" in chosen:
        chosen = [f for f in chosen if f != "aws-lc-rs"]
    elif "aws-lc-rs" not in chosen:
        chosen.insert(0, "aws-lc-rs")
    return chosen


def provider(variant: Variant) -> str:
    return "ring" if "ring" in features(variant) else "aws-lc-rs"


class RustlsRecipe:
    library = "rustls"

    def key_inputs(self, variant: Variant) -> dict[str, str]:
        lock = lock_file(variant.line.name)
        return {
            "cargo": tool_version(["cargo", "--version"]),
            "rustc": tool_version(["rustc", "--version"]),
            "Cargo.lock": hashlib_of(lock),
            # The build description: which rustls and which crypto provider this is.
            "rustls": locked_version(variant.line.name, "rustls"),
            "crypto_provider": provider(variant),
            "cargo_features": ",".join(features(variant)),
        }

    def build(self, ctx: BuildContext) -> LinkInfo:
        assert ctx.source is not None
        if "ring" in features(ctx.variant) and "prefer-post-quantum" in features(ctx.variant):
            raise ctx.log.fail("prefer-post-quantum needs the aws-lc-rs provider, not ring")
        line = ctx.variant.line.name
        crate = ctx.tree / "crate"
        shutil.copytree(ctx.source, crate)
        shutil.copyfile(lock_file(line), crate / "Cargo.lock")
        home = paths.cache_root() / "cargo" / "home"
        env = {"CARGO_HOME": str(home), "CARGO_TARGET_DIR": str(ctx.tree / "target")}
        manifest = ["--manifest-path", str(crate / "Cargo.toml")]
        ctx.log.step("cargo fetch (the locked tree, once per cache)")
        offline = subprocess.run(
            ["cargo", "fetch", "--locked", "--offline", *manifest],
            cwd=crate,
            env={**os.environ, **env},
            capture_output=True,
            check=False,
        )
        if offline.returncode != 0:  # not all in the cache yet: the one online step
            ctx.run(["cargo", "fetch", "--locked", *manifest], cwd=crate, env=env)
        ctx.log.step("cargo build")
        # One crate type (staticlib), release profile, exactly the locked tree, offline; the
        # native libraries the static library needs are printed by rustc itself.
        ctx.run(
            [
                "cargo", "rustc", "--release", "--locked", "--offline", "--lib",
                "--crate-type", "staticlib", "--no-default-features",
                f"--features={','.join(features(ctx.variant))}", "-j", str(ctx.jobs),
                *manifest, "--", "--print", "native-static-libs",
            ],
            cwd=crate,
            env=env,
        )  # fmt: skip
        native = re.findall(r"native-static-libs: (.*)$", ctx.log.path.read_text(), flags=re.M)
        if not native:
            raise ctx.log.fail("rustc printed no native-static-libs line")
        lib = ctx.prefix / "lib"
        include = ctx.prefix / "include"
        lib.mkdir(parents=True, exist_ok=True)
        include.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(
            ctx.tree / "target" / "release" / "librustls_ffi.a", lib / "librustls_ffi.a"
        )
        shutil.copyfile(crate / "src" / "rustls.h", include / "rustls.h")
        files = [str(lib / "librustls_ffi.a")]
        pq = "prefer-post-quantum" in features(ctx.variant)
        return LinkInfo(
            include_dirs=[str(include)],
            libraries=[*files, *native[-1].split()],
            defines=[
                f'TB_RUSTLS_PROVIDER="{provider(ctx.variant)}"',
                f"TB_RUSTLS_PREFER_PQ={int(pq)}",
            ],
            library_files=files,
        )


def hashlib_of(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest() if path.exists() else "missing"


# -- At run time (recipes/runtime.py) -------------------------------------------------------
# What rustls does when it runs, not how it is built: nothing below is a build input.

ACCEL_NO_SWITCH = (
    "rustls' crypto providers (aws-lc-rs, ring) pick CPU code paths at run time with no "
    "switch that rustls-ffi exposes or reports"
)
