"""Variants as data: parsing, canonical names, and the errors a user sees."""

from __future__ import annotations

from pathlib import Path

import pytest

from tlsbench.builds.variants import Catalog
from tlsbench.cli import main
from tlsbench.core import paths
from tlsbench.core.errors import UserError


def test_spec_resolves_features_and_macros(catalog: Catalog) -> None:
    v = catalog.resolve("wolfssl-5.7.2:large-static-buffers,intelasm")
    assert v.name == "wolfssl-5.7.2:intelasm,large-static-buffers"  # canonical order
    assert "--enable-intelasm" in v.configure and "--enable-aesni" in v.configure
    assert "-DLARGE_STATIC_BUFFERS" in v.cflags
    m = catalog.resolve("mbedtls-3.6.6:MBEDTLS_SSL_IN_CONTENT_LEN=4096")
    assert m.macros["MBEDTLS_SSL_IN_CONTENT_LEN"] == "4096"
    assert catalog.resolve("mbedtls-2.28.x:i686").arch == "i686"
    assert "no-asm" in catalog.resolve("openssl-3.5.x:no-asm").configure


def test_named_variant_expands_and_takes_more_options(catalog: Catalog) -> None:
    v = catalog.resolve("wolfssl-tuned:i686")
    assert v.line.name == "wolfssl-5.7.2"
    assert set(v.features) == {"intelasm", "sp-asm", "singlethreaded", "no-harden", "i686"}


def test_unknown_variant_lists_close_matches(catalog: Catalog) -> None:
    with pytest.raises(UserError, match=r"unknown variant 'mbedtls-3\.6'.*mbedtls-3\.6\.6"):
        catalog.resolve("mbedtls-3.6")


def test_unknown_feature_lists_close_matches(catalog: Catalog) -> None:
    with pytest.raises(UserError, match=r"unknown feature 'intelasmm'.*Did you mean intelasm"):
        catalog.resolve("wolfssl-5.7.2:intelasmm")


def test_a_refused_feature_says_why(catalog: Catalog) -> None:
    with pytest.raises(UserError, match="multiarch"):
        catalog.resolve("gnutls-3.8.x:i686")


def test_system_lines_take_no_options(catalog: Catalog) -> None:
    with pytest.raises(UserError, match="takes no options"):
        catalog.resolve("openssl-system:FOO=1")


def test_malformed_variants_file_names_file_and_line(tmp_path: Path) -> None:
    broken = tmp_path / "variants.toml"
    text = paths.VARIANTS_FILE.read_text().replace('recipe = "openssl"', 'recipe = "openssl" oops')
    broken.write_text(text)
    line = text.splitlines().index('recipe = "openssl" oops') + 1
    with pytest.raises(UserError, match=rf"{broken}:{line}: malformed TOML"):
        Catalog(broken)


def test_unknown_key_in_a_feature_names_file_and_line(tmp_path: Path) -> None:
    broken = tmp_path / "variants.toml"
    text = paths.VARIANTS_FILE.read_text().replace(
        'description = "no assembly: portable C for every algorithm"',
        'descripton = "typo"',
    )
    broken.write_text(text)
    line = text.splitlines().index("[library.openssl.feature.no-asm]") + 1
    with pytest.raises(UserError, match=rf"{broken}:{line}: unknown key\(s\) descripton"):
        Catalog(broken)


def test_cli_unknown_variant_exits_2_with_a_clear_message(capsys: pytest.CaptureFixture) -> None:
    assert main(["build", "wolfssl-5.7"]) == 2
    err = capsys.readouterr().err
    assert "unknown variant 'wolfssl-5.7'" in err and "wolfssl-5.7.2" in err
    assert "Traceback" not in err


def test_list_variants_json(capsys: pytest.CaptureFixture) -> None:
    assert main(["list", "variants", "--json"]) == 0
    out = capsys.readouterr().out
    for feature in (
        "intelasm",
        "large-static-buffers",
        "singlethreaded",
        "no-harden",
        "sp-asm",
        "static-memory",
        "no-asm",
        "i686",
        "records-4096",
    ):
        assert f'"{feature}"' in out


def test_boringssl_variants_are_cmake_options_or_refused(catalog: Catalog) -> None:
    assert "-DOPENSSL_NO_ASM=1" in catalog.resolve("boringssl-5.4.0:no-asm").configure
    assert catalog.resolve("boringssl-5.4.0").configure == ()
    with pytest.raises(UserError, match="g\\+\\+-multilib"):
        catalog.resolve("boringssl-5.4.0:i686")


def test_a_rustls_variant_names_one_crypto_provider(catalog: Catalog) -> None:
    from tlsbench.builds.recipes.rustls import features, provider

    default = catalog.resolve("rustls-ffi-0.15.7")
    assert features(default) == ["aws-lc-rs"] and provider(default) == "aws-lc-rs"
    ring = catalog.resolve("rustls-ffi-0.15.7:ring")
    assert features(ring) == ["ring"] and provider(ring) == "ring"  # replaces aws-lc-rs
    pq = catalog.resolve("rustls-ffi-0.15.7:pq")
    assert features(pq) == ["aws-lc-rs", "prefer-post-quantum"] and provider(pq) == "aws-lc-rs"
    assert "rustls-ffi-0.15.7" in catalog.defaults
