"""Pinned sources: real Debian source packages, checked against the committed sha256."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tlsbench import paths
from tlsbench.errors import UserError
from tlsbench.sources import Pin, Sources, _rewrite_pin, load_pins, sha256_of, upstream_of


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
    assert not (tmp_path / "src").exists() or not any((tmp_path / "src").iterdir())


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
