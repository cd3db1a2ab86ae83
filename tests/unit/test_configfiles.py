"""Config files and build-system options as variant options: resolved, keyed by content,
refused where they contradict the variant. (test_own_code.py builds and runs them.)"""

from __future__ import annotations

from pathlib import Path

import pytest

from tlsbench.builds import configfiles, firmware, platform
from tlsbench.builds.build import Builder
from tlsbench.builds.recipes.mbedtls import USER_CONFIG, WHOLE_CONFIG, write_config
from tlsbench.builds.variants import Catalog
from tlsbench.cli import main
from tlsbench.core.errors import UserError
from tlsbench.embedded import fit


def test_a_config_file_is_an_option_keyed_by_its_content(
    catalog: Catalog, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    boards = tmp_path / "boards"
    boards.mkdir()
    (boards / "my_config.h").write_text("#define MBEDTLS_SSL_IN_CONTENT_LEN 2048\n")
    monkeypatch.chdir(tmp_path)
    variant = catalog.resolve("mbedtls-3.6.6:config=boards/my_config.h")
    assert variant.name == f"mbedtls-3.6.6:config={boards / 'my_config.h'}"
    (config,) = variant.files
    assert (config.option, config.path) == ("config", str(boards / "my_config.h"))
    assert variant.options()["files"] == [{"option": "config", "sha256": config.sha256}]
    # Variants without files keep the options (so the cache keys) they always had.
    assert "files" not in catalog.resolve("mbedtls-3.6.6").options()
    builder = Builder(cache=tmp_path / "cache", quiet=True)
    copy = tmp_path / "elsewhere.h"
    copy.write_text((boards / "my_config.h").read_text())
    assert builder.key(catalog.resolve(f"mbedtls-3.6.6:config={copy}")) == builder.key(variant)
    copy.write_text("#define MBEDTLS_SSL_IN_CONTENT_LEN 4096\n")
    assert builder.key(catalog.resolve(f"mbedtls-3.6.6:config={copy}")) != builder.key(variant)


def test_the_variant_macros_are_layered_on_the_users_file(catalog: Catalog, tmp_path: Path) -> None:
    layered = tmp_path / "layer.h"
    layered.write_text("#define MBEDTLS_SSL_OUT_CONTENT_LEN 4096\n")
    whole = tmp_path / "whole.h"
    whole.write_text("#define MBEDTLS_SSL_TLS_C\n")
    variant = catalog.resolve(f"mbedtls-3.6.6:user-config={layered},config={whole},no-debug")
    include = tmp_path / "include"
    defines = write_config(variant, include)
    assert defines == [f'MBEDTLS_CONFIG_FILE="{WHOLE_CONFIG}"',
                       f'MBEDTLS_USER_CONFIG_FILE="{USER_CONFIG}"']  # fmt: skip
    assert (include / WHOLE_CONFIG).read_text() == whole.read_text()
    generated = (include / USER_CONFIG).read_text().splitlines()
    # The user's layer first, then the variant's own macros (which agree with it) and the
    # platform's (platform.py: on Linux the driver reads PEM files).
    assert generated[1] == '#include "tlsbench_layered_config.h"'
    assert "#undef MBEDTLS_DEBUG_C" in generated[2:]
    assert generated.index("#define MBEDTLS_FS_IO") > 1
    assert variant.platform == platform.MBEDTLS_NATIVE


@pytest.mark.parametrize(
    ("spec", "text", "said"),
    [
        # A record size the file sets otherwise than a feature.
        ("mbedtls-3.6.6:records-4096,config=F", "#define MBEDTLS_SSL_IN_CONTENT_LEN  2048 /* b */",
         "my.h: #define MBEDTLS_SSL_IN_CONTENT_LEN 2048, but feature records-4096: "
         "#define MBEDTLS_SSL_IN_CONTENT_LEN 4096"),
        ("mbedtls-3.6.6:user-config=F,MBEDTLS_SSL_OUT_CONTENT_LEN=4096",
         "#undef MBEDTLS_SSL_OUT_CONTENT_LEN",
         "my.h: MBEDTLS_SSL_OUT_CONTENT_LEN undefined, but option "
         "MBEDTLS_SSL_OUT_CONTENT_LEN=4096: #define MBEDTLS_SSL_OUT_CONTENT_LEN 4096"),
        ("mbedtls-3.6.6:no-debug,user-config=F", "#define MBEDTLS_DEBUG_C",
         "my.h: #define MBEDTLS_DEBUG_C, but feature no-debug: MBEDTLS_DEBUG_C undefined"),
        # wolfSSL: a feature's -D flags count as the variant's macros (the base's do not:
        # a user_settings.h is the whole configuration).
        ("wolfssl-5.7.2:psk,user-settings=F", "#undef WOLFSSL_STATIC_PSK",
         "my.h: WOLFSSL_STATIC_PSK undefined, but feature psk: #define WOLFSSL_STATIC_PSK"),
        # Build-system options: a file against a feature, an option against the base.
        ("gnutls-3.8.x:no-hw-accel,configure-file=F", "--enable-hardware-acceleration # on",
         "gives --enable-hardware-acceleration where feature no-hw-accel gives "
         "--disable-hardware-acceleration"),
        ("wolfssl-5.7.2:configure=--disable-tls13", "",
         "option configure=--disable-tls13 gives --disable-tls13 where [library.wolfssl.base]"),
        ("openssl-3.5.x:no-asm,configure=enable-asm", "",
         "option configure=enable-asm gives enable-asm where feature no-asm gives no-asm"),
        ("aws-lc-5.12.0:configure-file=F", "-DBUILD_TESTING=ON",
         "gives -DBUILD_TESTING=ON where [library.awslc.base] of variants.toml gives "
         "-DBUILD_TESTING=OFF"),
    ],
)  # fmt: skip
def test_an_option_the_file_contradicts_is_refused_with_both_sides(
    catalog: Catalog, tmp_path: Path, spec: str, text: str, said: str
) -> None:
    config = tmp_path / "my.h"
    config.write_text(text + "\n")
    with pytest.raises(UserError, match="the variant contradicts itself") as caught:
        catalog.resolve(spec.replace("=F", f"={config}"))
    assert said in str(caught.value)
    assert caught.value.exit_code == 2


def test_agreeing_files_and_options_resolve(catalog: Catalog, tmp_path: Path) -> None:
    config = tmp_path / "my.h"
    config.write_text("#define MBEDTLS_SSL_IN_CONTENT_LEN 4096 // as the feature says\n"
                      "#define MBEDTLS_PLATFORM_STD_CALLOC(n, s) calloc(n, s)\n")  # fmt: skip
    assert catalog.resolve(f"mbedtls-3.6.6:records-4096,config={config}").files
    options = tmp_path / "configure.txt"
    options.write_text("# Configure options of this product\nno-ec2m enable-ktls\n")
    variant = catalog.resolve(f"openssl-3.5.x:configure-file={options},configure=no-srp")
    assert variant.configure[-3:] == ("no-ec2m", "enable-ktls", "no-srp")


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("wolfssl-5.7.2:config=F", "config= is an option of mbedtls, not wolfssl; wolfssl takes "
         "user-settings=FILE"),
        ("mbedtls-3.6.6:configure=--enable-x", "configure= is an option of wolfssl, gnutls"),
        ("hacl-0.1.0:configure-file=F", "hacl takes no configuration file"),
        ("openssl-system:configure=no-asm", "it takes no options"),
        ("mbedtls-3.6.6:config=no-such-file.h", "cannot read"),
        ("mbedtls-3.6.6:config=", "name a file after 'config='"),
        ("mbedtls-3.6.6:config=D", "is a folder"),
    ],
)  # fmt: skip
def test_bad_config_options_say_what_is_wrong(
    catalog: Catalog, tmp_path: Path, spec: str, message: str
) -> None:
    (tmp_path / "f.h").write_text("#define X 1\n")
    (tmp_path / "d").mkdir()
    spec = spec.replace("=F", f"={tmp_path / 'f.h'}").replace("=D", f"={tmp_path / 'd'}")
    with pytest.raises(UserError, match=message) as caught:
        catalog.resolve(spec.replace("no-such-file.h", str(tmp_path / "no-such-file.h")))
    assert caught.value.exit_code == 2


def test_macros_of_a_header() -> None:
    text = (
        "#define A 1\n  #  define B\t2 /* two */\n#define F(x) x\n// #define C 3\n"
        "#undef D\n#define E\n#define A 5\n"
    )
    assert configfiles.macros_of(text) == {"A": "5", "B": "2", "D": "!", "E": ""}


def test_cli_names_the_contradiction_with_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = tmp_path / "my_config.h"
    config.write_text("#define MBEDTLS_SSL_IN_CONTENT_LEN 2048\n")
    assert main(["build", f"mbedtls-3.6.6:records-4096,config={config}"]) == 2
    err = capsys.readouterr().err
    assert "records-4096" in err and str(config) in err and "Traceback" not in err


@pytest.mark.parametrize("core", sorted(firmware.CORES))
@pytest.mark.parametrize(("tls", "kx"), [("1.3", "ecdhe"), ("1.2", "psk")])
def test_every_fit_candidate_resolves_on_every_core(core: str, tls: str, kx: str) -> None:
    """The features of variants.toml override the base and one another by design (wolfSSL's
    `small` gives --disable-dh over the base's --enable-dh, --enable-sp=small over a core's
    --enable-sp): every configuration `fit` tries is a variant, not a contradiction."""
    found, _ = fit.candidates(firmware.CORES[core], tls, kx, "ecdsa-p256", None)
    assert {c.configuration for c in found} == {"default", "no-debug", "small"}


def test_the_later_feature_wins_over_the_base(catalog: Catalog) -> None:
    configure = catalog.resolve("wolfssl-5.7.2:cortex-m4,small").configure
    # configure takes the last of two flags for one setting: the feature's, after the base's.
    assert configure.index("--disable-dh") > configure.index("--enable-dh")
    assert configure.index("--enable-sp=small") > configure.index("--enable-sp")


@pytest.mark.parametrize(
    ("spec", "said"),
    [
        # The user's option against a feature's deliberate override of the base: refused,
        # naming the feature (the setting that would be in force), not the base.
        ("wolfssl-5.7.2:small,configure=--enable-dh",
         "option configure=--enable-dh gives --enable-dh where feature small gives --disable-dh"),
        # Two options of the user's own that disagree.
        ("wolfssl-5.7.2:configure=--enable-foo,configure=--disable-foo",
         "option configure=--disable-foo gives --disable-foo where option configure=--enable-foo "
         "gives --enable-foo"),
    ],
)  # fmt: skip
def test_a_users_option_against_a_feature_or_herself_is_still_refused(
    catalog: Catalog, spec: str, said: str
) -> None:
    with pytest.raises(UserError, match="the variant contradicts itself") as caught:
        catalog.resolve(spec)
    assert said in str(caught.value)


def test_a_users_option_that_agrees_with_the_features_override_resolves(catalog: Catalog) -> None:
    assert catalog.resolve("wolfssl-5.7.2:small,configure=--disable-dh").configure


def test_a_user_settings_file_is_the_whole_wolfssl_configuration(
    catalog: Catalog, tmp_path: Path
) -> None:
    """The base's -D macros (static RSA, FFDHE 3072/4096 for the project's own scenarios) are
    not laid on a user_settings.h, which configure takes as the whole configuration."""
    settings = tmp_path / "user_settings.h"
    settings.write_text("#undef WOLFSSL_STATIC_RSA\n#define NO_DH\n")
    variant = catalog.resolve(f"wolfssl-5.7.2:user-settings={settings}")
    assert "-O2" in variant.cflags
    assert not [flag for flag in variant.cflags if flag.startswith("-D")]


@pytest.mark.parametrize(
    ("spec", "text", "replaced"),
    [
        ("mbedtls-3.6.6:cortex-m4,config=F", "#define MBEDTLS_NET_C\n#define MBEDTLS_HAVE_TIME",
         ["#define MBEDTLS_NET_C -> MBEDTLS_NET_C undefined (the cortex-m4 platform's)",
          "#define MBEDTLS_HAVE_TIME -> MBEDTLS_HAVE_TIME undefined (the cortex-m4 platform's)",
          "left out -> #define MBEDTLS_NO_PLATFORM_ENTROPY (the cortex-m4 platform's)"]),
        ("mbedtls-3.6.6:config=F", "#define MBEDTLS_ENTROPY_HARDWARE_ALT",
         ["#define MBEDTLS_ENTROPY_HARDWARE_ALT -> MBEDTLS_ENTROPY_HARDWARE_ALT undefined (the "
          "x86_64 platform's)", "left out -> #define MBEDTLS_FS_IO (the x86_64 platform's)"]),
        ("wolfssl-5.7.2:cortex-m4,user-settings=F",
         "#undef NO_ASN_TIME\n#define XTIME my_time\n#define CUSTOM_RAND_GENERATE my_seed\n"
         "#if 0\n#define CUSTOM_RAND_GENERATE_BLOCK my_block\n#endif",
         ["left out -> #define NO_ASN_TIME (the cortex-m4 platform's)",
          "#define XTIME my_time -> XTIME undefined (the cortex-m4 platform's)",
          "#define CUSTOM_RAND_GENERATE my_seed -> CUSTOM_RAND_GENERATE undefined"]),
    ],
)  # fmt: skip
def test_the_platform_macros_of_a_file_are_replaced_and_named(
    catalog: Catalog, tmp_path: Path, spec: str, text: str, replaced: list[str]
) -> None:
    """A board's file sets sockets, a clock and an entropy source of its own: not a
    contradiction of the target's, which replaces them (platform.py), each named; a macro
    only a branch the file does not take defines is not."""
    config = tmp_path / "board.h"
    config.write_text(text + "\n")
    variant = catalog.resolve(spec.replace("=F", f"={config}"))
    said = "\n".join(variant.replaced)
    for line in replaced:
        assert f"{config}: {line}" in said, said
    assert "my_block" not in said
    assert variant.options()["platform"] == variant.platform


def test_a_non_platform_macro_of_the_file_still_contradicts_a_feature(
    catalog: Catalog, tmp_path: Path
) -> None:
    config = tmp_path / "board.h"
    config.write_text("#define MBEDTLS_NET_C\n#define MBEDTLS_SSL_IN_CONTENT_LEN 2048\n")
    with pytest.raises(UserError, match="the variant contradicts itself") as caught:
        catalog.resolve(f"mbedtls-3.6.6:cortex-m4,records-4096,config={config}")
    assert "MBEDTLS_SSL_IN_CONTENT_LEN" in str(caught.value)
    assert "MBEDTLS_NET_C" not in str(caught.value)
