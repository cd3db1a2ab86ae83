"""Pinned sources: real Debian source packages, checked against the committed sha256."""

from __future__ import annotations

import contextlib
import gzip
import io
import os
import shutil
import tarfile
import threading
from pathlib import Path

import pytest

from tlsbench.builds.sources import (
    Pin,
    Sources,
    _rewrite_pin,
    extract_complete,
    load_pins,
    sha256_of,
    upstream_of,
)
from tlsbench.core import paths
from tlsbench.core.errors import UserError


def _trees(cache: Path) -> list[str]:
    src = cache / "src"
    return (
        sorted(p.name for p in src.iterdir() if not p.name.startswith(".")) if src.exists() else []
    )


def test_every_pinned_archive_matches_its_sha256() -> None:
    sources = Sources()
    for line, pin in sources.pins.items():
        archive = sources.archive(line)
        assert archive.name == pin.file
        assert sha256_of(archive) == pin.sha256, line


def test_a_tampered_archive_is_rejected_and_not_unpacked(tmp_path: Path) -> None:
    real = Sources()
    pin = real.pins["mbedtls-2.28.x"]
    (tmp_path / "archives").mkdir()
    copy = tmp_path / "archives" / pin.file
    shutil.copyfile(real.archive(pin.line), copy)
    with copy.open("r+b") as f:  # flip one byte in the middle
        f.seek(copy.stat().st_size // 2)
        byte = f.read(1)
        f.seek(-1, 1)
        f.write(bytes([byte[0] ^ 0xFF]))
    tampered = Sources(cache=tmp_path)
    with pytest.raises(UserError) as err:
        tampered.source_dir(pin.line)
    message = str(err.value)
    assert pin.file in message
    assert f"expected {pin.sha256}" in message
    assert f"actual   {sha256_of(copy)}" in message
    assert _trees(tmp_path) == []  # nothing unpacked (an unpacker's lock file aside)


def test_a_version_no_longer_offered_lists_what_is(tmp_path: Path) -> None:
    pins = dict(load_pins())
    old = pins["mbedtls-3.6.6"]
    pins["mbedtls-3.6.6"] = Pin(old.line, old.library, old.package, "0.0.1", "x.tar.gz", "0" * 64)
    sources = Sources(cache=tmp_path, pins=pins)
    # Share the apt lists already fetched, so the test does not download the indexes again.
    shutil.copytree(Sources().apt.root, tmp_path / "apt", dirs_exist_ok=True)
    with pytest.raises(UserError) as err:
        sources.archive("mbedtls-3.6.6")
    message = str(err.value)
    assert "mbedtls 0.0.1" in message and "no longer offered" in message
    assert "3.6.6" in message  # the offered versions are listed
    assert "./tlsbench sources repin mbedtls-3.6.6 VERSION" in message


def test_repin_rewrites_only_its_section(tmp_path: Path) -> None:
    pins_file = tmp_path / "pins.toml"
    shutil.copyfile(paths.PINS_FILE, pins_file)
    before = load_pins(pins_file)
    new = Pin(
        "openssl-3.5.x", "openssl", "openssl", "3.5.99", "openssl_3.5.99.orig.tar.gz", "a" * 64
    )
    _rewrite_pin(pins_file, new)
    after = load_pins(pins_file)
    assert after["openssl-3.5.x"] == new
    assert {k: v for k, v in after.items() if k != new.line} == {
        k: v for k, v in before.items() if k != new.line
    }
    assert pins_file.read_text().startswith("# Upstream source archives")


def test_upstream_version_of_a_debian_version() -> None:
    assert upstream_of("1:3.5.7-1~deb13u2") == "3.5.7"
    assert upstream_of("5.7.2-0.1+deb13u2") == "5.7.2"
    assert upstream_of("3.6.6") == "3.6.6"


def test_a_byte_flipped_in_place_is_caught_though_size_and_mtime_are_kept(tmp_path: Path) -> None:
    real = Sources()
    pin = real.pins["mbedtls-2.28.x"]
    (tmp_path / "archives").mkdir()
    copy = tmp_path / "archives" / pin.file
    shutil.copyfile(real.archive(pin.line), copy)
    sources = Sources(cache=tmp_path)
    sources.archive(pin.line)  # verified once, as a previous run would have
    before = copy.stat()
    with copy.open("r+b") as f:
        f.seek(before.st_size // 3)
        byte = f.read(1)
        f.seek(-1, 1)
        f.write(bytes([byte[0] ^ 0x01]))
    os.utime(copy, ns=(before.st_atime_ns, before.st_mtime_ns))
    assert copy.stat().st_size == before.st_size
    assert copy.stat().st_mtime_ns == before.st_mtime_ns
    with pytest.raises(UserError, match="sha256 mismatch"):
        Sources(cache=tmp_path).source_dir(pin.line)
    assert _trees(tmp_path) == []  # nothing unpacked (an unpacker's lock file aside)


def _tar_with_a_corrupt_second_header(path: Path, tmp_path: Path) -> None:
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w", format=tarfile.USTAR_FORMAT) as tar:
        for name in ("top/a.c", "top/b.c", "top/c.c"):
            data = (name * 200).encode()
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    blob = bytearray(raw.getvalue())
    second = 512 + (len("top/a.c" * 200) + 511) // 512 * 512
    blob[second + 148 : second + 156] = b"garbage!"  # its header checksum no longer matches
    with gzip.open(path, "wb") as out:
        out.write(bytes(blob))


def test_extraction_stops_with_an_error_not_silently_at_a_corrupt_block(tmp_path: Path) -> None:
    archive = tmp_path / "corrupt.tar.gz"
    _tar_with_a_corrupt_second_header(archive, tmp_path)
    # The standard library alone stops silently after the first member.
    with tarfile.open(archive) as tar:
        assert [m.name for m in tar.getmembers()] == ["top/a.c"]
    with pytest.raises(UserError, match=r"could not unpack corrupt\.tar\.gz completely"):
        extract_complete(archive, tmp_path / "out")


def test_a_truncated_compressed_archive_is_an_error(tmp_path: Path) -> None:
    real = Sources()
    archive = real.archive("mbedtls-2.28.x")
    cut = tmp_path / archive.name
    cut.write_bytes(archive.read_bytes()[: archive.stat().st_size // 2])
    with pytest.raises(UserError, match="completely"):
        extract_complete(cut, tmp_path / "out")


def test_two_unpacks_of_one_tree_at_once_leave_the_first_tree_in_place(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Builds of two variants of one line run at once: the second must not replace the tree
    the first one already builds from (it waits, then finds it unpacked)."""
    (tmp_path / "archives").mkdir()
    archive = tmp_path / "archives" / "tiny.tar.gz"
    with tarfile.open(archive, "w:gz") as tar:
        tar.add(Path(__file__), arcname="tiny/test_sources.py")
    pin = Pin("tiny-1.x", "tiny", "tiny", "1.0", archive.name, sha256_of(archive))
    import tlsbench.builds.sources as sources_module

    real_extract = sources_module.extract_complete
    entered = threading.Barrier(2, timeout=5)

    def slow_extract(path: Path, dest: Path) -> None:
        with contextlib.suppress(threading.BrokenBarrierError):
            entered.wait()  # both unpackers are inside at once unless one waits for the other
        real_extract(path, dest)

    monkeypatch.setattr(sources_module, "extract_complete", slow_extract)
    trees: list[tuple[Path, int]] = []

    def unpack() -> None:
        tree = Sources(cache=tmp_path, pins={pin.line: pin}).source_dir(pin.line)
        trees.append((tree, (tree / "test_sources.py").stat().st_ino))

    workers = [threading.Thread(target=unpack) for _ in range(2)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    assert len(trees) == 2 and trees[0][0] == trees[1][0]
    # Both got the same files: the tree the first returned was not replaced under it.
    assert trees[0][1] == trees[1][1] == (trees[0][0] / "test_sources.py").stat().st_ino
    assert _trees(tmp_path) == [f"tiny-1.x-{pin.sha256[:12]}"]


def test_a_crate_pin_is_fetched_with_cargo_and_its_tree_is_the_subdir(tmp_path: Path) -> None:
    pin = load_pins()["openssl-1.1.1w"]
    assert pin.kind == "crate"
    fresh = Sources(cache=tmp_path)  # an empty cache: cargo really fetches
    tree = fresh.source_dir(pin.line)
    assert sha256_of(tmp_path / "archives" / pin.file) == pin.sha256
    assert tree.name == "openssl" and (tree / "Configure").is_file()
    with pytest.raises(UserError, match="crate archive"):
        fresh.repin(pin.line, "1.1.1v")


def test_a_crate_that_is_not_the_pinned_one_is_rejected(tmp_path: Path) -> None:
    pin = load_pins()["openssl-1.1.1w"]
    wrong = Pin(pin.line, pin.library, pin.package, pin.upstream, pin.file, "0" * 64,
                kind="crate", subdir="openssl")  # fmt: skip
    with pytest.raises(UserError, match="sha256 mismatch"):
        Sources(cache=tmp_path, pins={pin.line: wrong}).source_dir(pin.line)
    assert _trees(tmp_path) == []


def test_without_cargo_a_crate_comes_from_the_sparse_index_checked_against_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Debian 12's cargo reads the index only through git, which is not reachable: with no
    # cargo on PATH, tlsbench fetches as cargo would, over crates.io's sparse index.
    import tlsbench.builds.sources as sources_module

    real_which = shutil.which
    monkeypatch.setattr(
        sources_module.shutil, "which", lambda name: None if name == "cargo" else real_which(name)
    )
    pin = load_pins()["openssl-1.1.1w"]
    assert Sources(cache=tmp_path / "a").archive(pin.line).name == pin.file
    assert sha256_of(tmp_path / "a" / "archives" / pin.file) == pin.sha256
    wrong = Pin(pin.line, pin.library, pin.package, pin.upstream, pin.file, "0" * 64,
                kind="crate", subdir="openssl")  # fmt: skip
    with pytest.raises(UserError, match=r"index gives openssl-src 111\.28\.2\+1\.1\.1w the sha256"):
        Sources(cache=tmp_path / "b", pins={pin.line: wrong}).archive(pin.line)
    assert not list((tmp_path / "b").rglob("*.crate"))


@pytest.mark.parametrize(
    ("extra", "message"),
    [('kind = "git"', "kind must be one of debian, crate"),
     ('subdir = "../x"', "subdir must be a relative folder"),
     ("library = 3", "library must be a non-empty string"),
     ('version = ""', "version must be a non-empty string")],
)  # fmt: skip
def test_a_wrong_kind_or_subdir_is_a_message(tmp_path: Path, extra: str, message: str) -> None:
    pins_file = tmp_path / "pins.toml"
    pins_file.write_text(
        f'["x-1"]\npackage = "x"\nupstream = "1"\nfile = "x.crate"\nsha256 = "{"0" * 64}"\n'
        f"{extra}\n"
    )
    with pytest.raises(UserError, match=message):
        load_pins(pins_file)


def test_a_crate_whose_version_is_not_the_librarys_names_both() -> None:
    # aws-lc-sys 0.47.0 bundles AWS-LC 5.12.0; the line's first word ("aws") is not the
    # library ("awslc").
    pin = load_pins()["aws-lc-5.12.0"]
    assert (pin.library, pin.package, pin.upstream) == ("awslc", "aws-lc-sys", "0.47.0")
    assert pin.library_version == "5.12.0"
    assert load_pins()["openssl-1.1.1w"].library_version == "1.1.1w"


def test_the_aws_lc_crate_holds_its_tls_library_and_release(tmp_path: Path) -> None:
    # The crate really bundles libssl's sources (ssl/), and the release the pin names.
    tree = Sources(cache=tmp_path).source_dir("aws-lc-5.12.0")
    assert tree.name == "aws-lc" and (tree / "ssl" / "ssl_lib.cc").is_file()
    base = (tree / "include" / "openssl" / "base.h").read_text()
    assert '#define AWSLC_VERSION_NUMBER_STRING "5.12.0"' in base


def test_the_boringssl_crate_tree_carries_its_generated_sources() -> None:
    """boring-sys bundles BoringSSL with `gen/` (perlasm output, error tables): a build
    needs neither Perl nor Go. The tree is the crate's deps/boringssl, not the crate."""
    pin = load_pins()["boringssl-5.4.0"]
    assert (pin.kind, pin.package, pin.subdir) == ("crate", "boring-sys", "deps/boringssl")
    assert pin.library == "boringssl" and pin.library_version == "API version 44"
    tree = Sources().source_dir(pin.line)
    assert tree.parts[-2:] == ("deps", "boringssl")
    assert (tree / "CMakeLists.txt").is_file() and (tree / "gen" / "sources.cmake").is_file()
    assert (tree / "include" / "openssl" / "ssl.h").is_file()


def test_the_rustls_tree_is_pinned_by_the_committed_lock_upstream_tested() -> None:
    import re
    import tomllib

    from tlsbench.builds.recipes.rustls import lock_file, locked_version

    pin = load_pins()["rustls-ffi-0.15.7"]
    assert (pin.kind, pin.package, pin.upstream) == ("crate", "rustls-ffi", "0.15.7")
    lock = lock_file(pin.line)
    packages = tomllib.loads(lock.read_text())["package"]
    assert locked_version(pin.line, "rustls-ffi") == pin.upstream
    assert locked_version(pin.line, "rustls") == "0.23.46"
    # Every crate from the registry carries its sha256: `cargo --locked` checks each one.
    registry = [p for p in packages if "source" in p]
    assert len(registry) > 50
    assert all(re.fullmatch(r"[0-9a-f]{64}", p.get("checksum", "")) for p in registry)
    # The committed lock is the one in the pinned crate archive: the tree upstream tested.
    tree = Sources().source_dir(pin.line)
    assert (tree / "Cargo.lock").read_text() == lock.read_text()
    assert (tree / "src" / "rustls.h").is_file()
