"""Real builds of the pinned libraries: caching, options proven in effect by the probe."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from tlsbench.builds import certs
from tlsbench.builds.build import Builder
from tlsbench.builds.variants import Catalog
from tlsbench.core import paths
from tlsbench.core.errors import BuildError

pytestmark = pytest.mark.slow


def test_every_default_variant_builds_and_reports_its_version(catalog: Catalog, build_of) -> None:
    for spec in catalog.defaults:
        build = build_of(spec)
        info = build.describe()
        assert info["name"] == spec
        assert info["probe"]["library"] == build.variant.library
        assert info["probe"]["pointer_bits"] == 64
        pin = build.variant.line.pin
        if pin is not None:
            assert pin.library_version in info["probe"]["version"], (spec, info["probe"])
            for library_file in info["library_files"]:
                assert library_file.endswith(".a")


def test_a_cached_build_is_reused_and_an_option_change_rebuilds(build_of) -> None:
    first = build_of("mbedtls-3.6.6")
    manifest_time = (first.folder / "manifest.json").stat().st_mtime_ns
    again = Builder(quiet=True).build(first.variant)  # a new builder: nothing in memory
    assert again.folder == first.folder
    assert (first.folder / "manifest.json").stat().st_mtime_ns == manifest_time
    changed = build_of("mbedtls-3.6.6:records-4096")
    assert changed.key != first.key and changed.folder != first.folder
    assert (first.folder / "manifest.json").stat().st_mtime_ns == manifest_time


def test_second_cli_build_prints_json_without_building(build_of) -> None:
    build_of("mbedtls-3.6.6")  # the first build, whichever test (or none) ran before
    out = subprocess.run(
        [str(paths.REPO / "tlsbench"), "build", "--json", "mbedtls-3.6.6"],
        capture_output=True, text=True, check=True,
    )  # fmt: skip
    assert "building" not in out.stderr
    [info] = json.loads(out.stdout)
    assert info["probe"]["MBEDTLS_SSL_IN_CONTENT_LEN"] == 16384


def test_probe_proves_mbedtls_record_buffer_length(build_of) -> None:
    default = build_of("mbedtls-3.6.6").describe()["probe"]
    small = build_of("mbedtls-3.6.6:records-4096").describe()["probe"]
    macro = build_of(
        "mbedtls-3.6.6:MBEDTLS_SSL_IN_CONTENT_LEN=4096,MBEDTLS_SSL_OUT_CONTENT_LEN=4096"
    ).describe()["probe"]
    # Asked of a live SSL context of the compiled library, not of our headers.
    assert default["max_in_record_payload"] == 16384
    assert default["max_out_record_payload"] == 16384
    assert small["max_in_record_payload"] == 4096 == macro["max_in_record_payload"]
    assert small["max_out_record_payload"] == 4096 == macro["max_out_record_payload"]


def _cpu_has_aes() -> bool:
    return " aes " in open("/proc/cpuinfo").read().replace("\n", " ")


def test_probe_proves_wolfssl_intelasm(build_of) -> None:
    plain = build_of("wolfssl-5.7.2").describe()["probe"]
    fast = build_of("wolfssl-5.7.2:intelasm").describe()["probe"]
    assert plain["WOLFSSL_AESNI"] is False and plain["aesni_in_use"] is False
    assert fast["WOLFSSL_AESNI"] is True and fast["USE_INTEL_SPEEDUP"] is True
    if _cpu_has_aes():
        assert fast["aesni_in_use"] is True


def test_probe_proves_wolfssl_large_static_buffers(build_of) -> None:
    assert build_of("wolfssl-5.7.2").describe()["probe"]["LARGE_STATIC_BUFFERS"] is False
    probe = build_of("wolfssl-5.7.2:large-static-buffers").describe()["probe"]
    assert probe["LARGE_STATIC_BUFFERS"] is True


def test_probe_proves_awslc_no_asm(build_of) -> None:
    # The library's own CRYPTO_has_asm, compiled into libcrypto.
    assert build_of("aws-lc-5.12.0").describe()["probe"]["CRYPTO_has_asm"] is True
    probe = build_of("aws-lc-5.12.0:no-asm").describe()["probe"]
    assert probe["CRYPTO_has_asm"] is False and probe["EVP_has_aes_hardware"] is False


def test_a_cmake_option_aws_lc_does_not_read_is_an_error(catalog: Catalog) -> None:
    import dataclasses

    variant = catalog.resolve("aws-lc-5.12.0")
    typo = dataclasses.replace(variant, configure=(*variant.configure, "-DDISABLE_G0=ON"))
    with pytest.raises(BuildError, match="CMake did not use some -D option"):
        Builder(quiet=True).build(typo)


def test_i686_build_of_mbedtls(build_of) -> None:
    info = build_of("mbedtls-2.28.x:i686").describe()
    assert info["probe"]["pointer_bits"] == 32
    assert "2.28" in info["probe"]["version"]


def test_an_option_the_build_rejects_is_an_error(catalog: Catalog) -> None:
    variant = catalog.resolve("mbedtls-3.6.6:MBEDTLS_NOT_A_REAL_OPTION=1")
    with pytest.raises(BuildError, match="MBEDTLS_NOT_A_REAL_OPTION is not a config macro"):
        Builder(quiet=True).build(variant)


def test_cache_prune_removes_only_what_no_current_variant_uses(tmp_path: Path) -> None:
    from tlsbench.builds.build import Builder
    from tlsbench.builds.variants import Catalog
    from tlsbench.run import cache

    catalog = Catalog()
    builder = Builder(cache=tmp_path, quiet=True)
    null = catalog.resolve("null")
    key = builder.key(null)
    current = builder.folder(null, key)
    current_drivers = current / f"drivers-{builder.drivers_key(key)[:16]}"
    old_drivers = current / "drivers-0123456789abcdef"
    gone_build = builder.builds / "mbedtls-3.6.6-00000000deadbeef"
    crashed = builder.builds / "null-1111111111111111.tmp-999999999"
    running = builder.builds / f"null-2222222222222222.tmp-{os.getpid()}"
    old_tree = builder.sources.unpacked / "mbedtls-3.6.6-000000000000"
    pinned = builder.sources.pins["mbedtls-3.6.6"]
    kept_tree = builder.sources.unpacked / f"mbedtls-3.6.6-{pinned.sha256[:12]}"
    old_certs = tmp_path / "certs" / "v1" / "rsa2048"  # random keys: never read again
    current_certs = tmp_path / "certs" / certs.LAYOUT_VERSION / "rsa2048"
    folders = (current_drivers, old_drivers, gone_build, crashed, running, old_tree, kept_tree,
               old_certs, current_certs)  # fmt: skip
    for folder in folders:
        folder.mkdir(parents=True)
        (folder / "file").write_bytes(b"x" * 1000)
    (builder.builds / "mbedtls-3.6.6-00000000deadbeef.failed.log").write_text("failed\n")
    stale = {item.path for item in cache.plan(builder, catalog)}
    assert stale == {
        old_drivers,
        gone_build,
        crashed,
        old_tree,
        builder.builds / "mbedtls-3.6.6-00000000deadbeef.failed.log",
        old_certs.parent,
    }
    cache.remove(cache.plan(builder, catalog))
    assert current_drivers.exists() and running.exists() and kept_tree.exists()
    assert current_certs.exists()
    assert not any(p.exists() for p in stale)


def test_a_build_records_the_flags_its_compiles_really_used(tmp_path: Path) -> None:
    # A fresh build in a cache of its own (the fetched sources are shared, read only), so
    # that the library is compiled here rather than taken from the cache.
    for name in ("apt", "archives", "src", "cargo", "toolchains"):
        if (paths.cache_root() / name).exists():
            (tmp_path / name).symlink_to(paths.cache_root() / name)
    variant = Catalog().resolve("hacl-0.1.0")
    recorded = Builder(cache=tmp_path, quiet=True).build(variant).describe()["compile_flags"]
    compiles = recorded["compiles"]
    assert compiles >= 3, recorded  # the snapshot's C files, one compile each
    # The variant's flags (variants.toml) reached every compile; include paths and warning
    # switches are not code-shaping flags and are left out.
    for flag in variant.cflags:
        assert recorded["flags"][flag] == compiles, (flag, recorded)
    assert not any(flag.startswith(("-I", "-W")) for flag in recorded["flags"])
