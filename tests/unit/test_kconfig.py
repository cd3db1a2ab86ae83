"""An SDK's own configuration (kconfig.py): a Kconfig output file read as the macros its
header reads, the header's CONFIG_ options found for a macro the job needs (tried through
the host's preprocessor), the variant option kconfig= beside config=, the SDK's platform
replaced. tests/long/test_real_config_files.py builds the ESP-IDF-style pair of
docs/examples/esp-idf and runs its handshake."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from tlsbench.builds import configfiles, firmware, kconfig, needs, platform
from tlsbench.builds.build import Builder
from tlsbench.builds.recipes.mbedtls import LAYERED_CONFIG, WHOLE_CONFIG, write_config
from tlsbench.builds.variants import Catalog
from tlsbench.core import paths
from tlsbench.core.errors import UserError

EXAMPLES = paths.REPO / "docs" / "examples" / "esp-idf"


def config_file(tmp_path: Path, text: str, name: str = "sdkconfig") -> configfiles.ConfigFile:
    path = tmp_path / name
    path.write_text(text)
    return configfiles.read(f"kconfig={path}", tmp_path)


# -- the file ----------------------------------------------------------------------------


def test_kconfig_lines_become_the_macros_confgen_and_autoconf_write(tmp_path: Path) -> None:
    values = kconfig.parse(
        config_file(
            tmp_path,
            """\
#
# mbedTLS
#
CONFIG_MBEDTLS_TLS_CLIENT=y
CONFIG_MBEDTLS_SSL_IN_CONTENT_LEN=4096
CONFIG_IDF_FIRMWARE_CHIP_ID=0x0000
CONFIG_IDF_TARGET="esp32"
CONFIG_PATH="a \\"quoted\\" name"
CONFIG_MBEDTLS_DEBUG=n
# CONFIG_MBEDTLS_TLS_SERVER is not set
CONFIG_LINUX_MODULE_THING=m
CONFIG_MBEDTLS_SSL_OUT_CONTENT_LEN=16384
CONFIG_MBEDTLS_SSL_OUT_CONTENT_LEN=2048
CONFIG_MBEDTLS_HAVE_TIME=y
# CONFIG_MBEDTLS_HAVE_TIME is not set
""",
        )
    )
    assert values.defined == {
        "CONFIG_MBEDTLS_TLS_CLIENT": "1",
        "CONFIG_MBEDTLS_SSL_IN_CONTENT_LEN": "4096",
        "CONFIG_IDF_FIRMWARE_CHIP_ID": "0x0000",
        "CONFIG_IDF_TARGET": '"esp32"',
        "CONFIG_PATH": '"a \\"quoted\\" name"',
        "CONFIG_LINUX_MODULE_THING_MODULE": "1",
        "CONFIG_MBEDTLS_SSL_OUT_CONTENT_LEN": "2048",  # the last assignment counts
    }
    assert {"CONFIG_MBEDTLS_DEBUG", "CONFIG_MBEDTLS_TLS_SERVER"} <= values.named
    text = kconfig.header_text(values)
    assert "#define CONFIG_MBEDTLS_TLS_CLIENT 1" in text.splitlines()
    assert "CONFIG_MBEDTLS_DEBUG" not in text and "CONFIG_MBEDTLS_HAVE_TIME" not in text


@pytest.mark.parametrize(
    ("text", "said"),
    [
        ("CONFIG_A=y\nCONFIG_B 1\n", ":2: 'CONFIG_B 1' is not a Kconfig line"),
        ("CONFIG_A=y\n\nCONFIG_B=yes\n", ":3: CONFIG_B=yes: a Kconfig value is y, n, m, a number"),
        ('CONFIG_A="unterminated\n', ':1: CONFIG_A="unterminated: a Kconfig value'),
        ("CONFIG_A=\n", ":1: CONFIG_A=: a Kconfig value"),
        ("#define MBEDTLS_SSL_TLS_C\n#include <x.h>\n", ": no CONFIG_NAME=VALUE line"),
        ("#ifdef X\nint x;\n#endif\n", ":2: 'int x;' is not a Kconfig line"),
    ],
)
def test_a_line_that_is_not_kconfig_output_is_refused_with_file_and_line(
    tmp_path: Path, text: str, said: str
) -> None:
    config = config_file(tmp_path, text)
    with pytest.raises(UserError) as refused:
        kconfig.parse(config)
    assert str(refused.value).startswith(config.path)
    assert said in str(refused.value)


# -- the CONFIG_ option that gives a macro, from the header --------------------------------

# A header of Zephyr's form (modules/mbedtls/configs), written for this test: no include of
# the values, derived macros, a value read from an option, an && of two options.
ZEPHYR_STYLE = """\
#if defined(CONFIG_MBEDTLS_TLS_VERSION_1_2)
#define MBEDTLS_SSL_PROTO_TLS1_2
#endif
#if defined(CONFIG_MBEDTLS_TLS_VERSION_1_2) || defined(CONFIG_MBEDTLS_TLS_VERSION_1_3)
#define MBEDTLS_SSL_TLS_C
#define MBEDTLS_SSL_SRV_C
#define MBEDTLS_SSL_CLI_C
#endif
#if defined(CONFIG_MBEDTLS_KEY_EXCHANGE_ECDHE_ECDSA_ENABLED)
#define MBEDTLS_KEY_EXCHANGE_ECDHE_ECDSA_ENABLED
#endif
#if defined(CONFIG_MBEDTLS_KEY_EXCHANGE_RSA_ENABLED)
#define MBEDTLS_KEY_EXCHANGE_RSA_ENABLED
#endif
/* derived, as the header's automatic dependencies are */
#if defined(MBEDTLS_KEY_EXCHANGE_RSA_ENABLED) || \\
    defined(MBEDTLS_KEY_EXCHANGE_ECDHE_ECDSA_ENABLED)
#define MBEDTLS_X509_CRT_PARSE_C
#endif
#if defined(CONFIG_MBEDTLS_PSK_MAX_LEN)
#define MBEDTLS_PSK_MAX_LEN CONFIG_MBEDTLS_PSK_MAX_LEN
#endif
#if CONFIG_MBEDTLS_CIPHER_GCM_ENABLED && CONFIG_MBEDTLS_CIPHER_AES_ENABLED
#define MBEDTLS_GCM_C
#endif
#ifndef CONFIG_MBEDTLS_NO_CCM
#define MBEDTLS_CCM_C
#endif
"""


def host_holds(tmp_path: Path, header: str, base: str = ""):
    """A `holds` for kconfig.options_giving: the host's preprocessor on the header with the
    kconfig file `base` plus the trial's settings; true when `macro` comes out at least
    `least` (or defined)."""

    def holds_for(macro: str, least: int | None = None):
        def holds(settings: dict[str, str]) -> bool:
            config = kconfig.with_settings(
                config_file(tmp_path, base or "# none\nCONFIG_Z=n\n"), settings
            )
            (tmp_path / "kconfig.h").write_text(kconfig.header_text(kconfig.parse(config)))
            (tmp_path / "header.h").write_text('#include "kconfig.h"\n' + header)
            out = subprocess.run(
                ["gcc", "-E", "-dM", "-x", "c", str(tmp_path / "header.h")],
                capture_output=True,
                text=True,
                check=True,
            ).stdout
            found = {line.split()[1]: " ".join(line.split()[2:]) for line in out.splitlines()}
            if macro not in found:
                return False
            return least is None or int(needs.resolved(found, macro) or 0) >= least

        return holds

    return holds_for


def test_the_option_that_gives_a_macro_is_read_from_the_header(tmp_path: Path) -> None:
    holds = host_holds(tmp_path, ZEPHYR_STYLE)
    assert kconfig.options_giving(
        ZEPHYR_STYLE, "MBEDTLS_SSL_PROTO_TLS1_2", holds("MBEDTLS_SSL_PROTO_TLS1_2")
    ) == [{"CONFIG_MBEDTLS_TLS_VERSION_1_2": "y"}]
    # Either version gives the server: both are said.
    assert kconfig.options_giving(
        ZEPHYR_STYLE, "MBEDTLS_SSL_SRV_C", holds("MBEDTLS_SSL_SRV_C")
    ) == [{"CONFIG_MBEDTLS_TLS_VERSION_1_2": "y"}, {"CONFIG_MBEDTLS_TLS_VERSION_1_3": "y"}]
    # Through the header's own derived macros.
    assert {"CONFIG_MBEDTLS_KEY_EXCHANGE_RSA_ENABLED": "y"} in kconfig.options_giving(
        ZEPHYR_STYLE, "MBEDTLS_X509_CRT_PARSE_C", holds("MBEDTLS_X509_CRT_PARSE_C")
    )
    # A value read from an option: the number the job needs.
    assert kconfig.options_giving(
        ZEPHYR_STYLE, "MBEDTLS_PSK_MAX_LEN", holds("MBEDTLS_PSK_MAX_LEN", 32), number=32
    ) == [{"CONFIG_MBEDTLS_PSK_MAX_LEN": "32"}]
    # Two options together, where neither alone does.
    assert kconfig.options_giving(ZEPHYR_STYLE, "MBEDTLS_GCM_C", holds("MBEDTLS_GCM_C")) == [
        {"CONFIG_MBEDTLS_CIPHER_GCM_ENABLED": "y", "CONFIG_MBEDTLS_CIPHER_AES_ENABLED": "y"}
    ]
    # An option that takes the macro away gives nothing; a macro no option gives neither.
    assert kconfig.options_giving(ZEPHYR_STYLE, "MBEDTLS_CCM_C", lambda s: False) == []
    assert (
        kconfig.options_giving(ZEPHYR_STYLE, "MBEDTLS_CHACHAPOLY_C", holds("MBEDTLS_CHACHAPOLY_C"))
        == []
    )


def test_an_esp_idf_style_else_branch_is_read_with_its_condition() -> None:
    """`#ifndef CONFIG_A ... #else #define B CONFIG_C #endif`: both A and C decide B."""
    header = (
        "#ifndef CONFIG_MBEDTLS_ASYMMETRIC_CONTENT_LEN\n"
        "#define MBEDTLS_SSL_IN_CONTENT_LEN CONFIG_MBEDTLS_SSL_MAX_CONTENT_LEN\n#else\n"
        "#define MBEDTLS_SSL_IN_CONTENT_LEN CONFIG_MBEDTLS_SSL_IN_CONTENT_LEN\n#endif\n"
    )
    tried = [t.settings for t in kconfig.candidates(header, "MBEDTLS_SSL_IN_CONTENT_LEN")]
    assert (
        ("CONFIG_MBEDTLS_ASYMMETRIC_CONTENT_LEN", False),
        ("CONFIG_MBEDTLS_SSL_IN_CONTENT_LEN", True),
    ) in tried
    assert (("CONFIG_MBEDTLS_SSL_MAX_CONTENT_LEN", True),) in tried


def test_an_option_alone_is_preferred_and_few_are_said() -> None:
    header = "".join(f"#ifdef CONFIG_{n}\n#define MBEDTLS_X\n#endif\n" for n in "ABCDE")
    tries: list[dict[str, str]] = []

    def holds(settings: dict[str, str]) -> bool:
        tries.append(settings)
        return True

    assert kconfig.options_giving(header, "MBEDTLS_X", holds) == [
        {"CONFIG_A": "y"},
        {"CONFIG_B": "y"},
        {"CONFIG_C": "y"},
    ]
    assert len(tries) == 3


# -- the variant option ---------------------------------------------------------------------


def esp_spec(sdkconfig: str = "sdkconfig", target: str = "") -> str:
    return (
        f"mbedtls-3.6.6:{target}kconfig={EXAMPLES / sdkconfig},config={EXAMPLES / 'esp_config.h'}"
    )


def test_kconfig_is_keyed_by_content_and_carried_with_the_build(
    catalog: Catalog, tmp_path: Path
) -> None:
    variant = catalog.resolve(esp_spec())
    assert [f.option for f in variant.files] == ["kconfig", "config"]
    assert variant.options()["files"][0] == {"option": "kconfig", "sha256": variant.files[0].sha256}
    builder = Builder(cache=tmp_path / "cache", quiet=True)
    copy = tmp_path / "sdkconfig"
    copy.write_text((EXAMPLES / "sdkconfig").read_text())
    same = catalog.resolve(f"mbedtls-3.6.6:kconfig={copy},config={EXAMPLES / 'esp_config.h'}")
    assert builder.key(same) == builder.key(variant)
    copy.write_text(copy.read_text().replace("IN_CONTENT_LEN=4096", "IN_CONTENT_LEN=8192"))
    other = catalog.resolve(f"mbedtls-3.6.6:kconfig={copy},config={EXAMPLES / 'esp_config.h'}")
    assert builder.key(other) != builder.key(variant)


def test_the_build_reads_the_values_before_the_header(catalog: Catalog, tmp_path: Path) -> None:
    variant = catalog.resolve(esp_spec(target="cortex-m4,"))
    include = tmp_path / "include"
    write_config(variant, include)
    whole = (include / WHOLE_CONFIG).read_text()
    assert whole == kconfig.prefixed((EXAMPLES / "esp_config.h").read_text())
    generated = (include / kconfig.HEADER).read_text().splitlines()
    assert "#define CONFIG_MBEDTLS_SSL_IN_CONTENT_LEN 4096" in generated
    assert "#define CONFIG_MBEDTLS_HARDWARE_AES 1" in generated
    for alias in kconfig.ALIASES:
        assert kconfig.HEADER in (include / alias).read_text()
    assert "calloc" in (include / "esp_mem.h").read_text()
    assert "SOC_" not in (include / "soc" / "soc_caps.h").read_text().replace("SOC_*", "")


def test_a_layered_header_reads_the_values_too(catalog: Catalog, tmp_path: Path) -> None:
    layer = tmp_path / "layer.h"
    layer.write_text("#define MBEDTLS_SSL_OUT_CONTENT_LEN CONFIG_MBEDTLS_SSL_OUT_CONTENT_LEN\n")
    variant = catalog.resolve(f"mbedtls-3.6.6:kconfig={EXAMPLES / 'sdkconfig'},user-config={layer}")
    include = tmp_path / "include"
    write_config(variant, include)
    assert (include / LAYERED_CONFIG).read_text() == kconfig.prefixed(layer.read_text())
    assert (include / "sdkconfig.h").exists()


def test_the_sdks_engines_and_allocator_are_the_platforms_and_named(catalog: Catalog) -> None:
    variant = catalog.resolve(esp_spec(target="cortex-m4,"))
    for name in (
        "MBEDTLS_AES_ALT",
        "MBEDTLS_SHA256_ALT",
        "MBEDTLS_MPI_EXP_MOD_ALT",
        "MBEDTLS_MPI_EXP_MOD_ALT_FALLBACK",
        "MBEDTLS_PLATFORM_STD_CALLOC",
        "MBEDTLS_PLATFORM_STD_FREE",
    ):
        assert variant.platform[name] == platform.UNDEFINED, name
        assert variant.macros[name] == platform.UNDEFINED  # set after the header
    header = EXAMPLES / "esp_config.h"
    replaced = set(variant.replaced)
    assert (
        f"{header}: #define MBEDTLS_AES_ALT -> MBEDTLS_AES_ALT undefined (the cortex-m4 platform's)"
    ) in replaced
    assert any(
        line.startswith(f'{header}: #include "soc/soc_caps.h" -> the cortex-m4')
        for line in replaced
    )
    assert any(f'{header}: #include "esp_mem.h"' in line for line in replaced)
    # CONFIG_MBEDTLS_HARDWARE_GCM is not set: the header leaves MBEDTLS_GCM_ALT out, and
    # nothing of it is said to be replaced.
    assert not any("MBEDTLS_GCM_ALT" in line for line in replaced)
    # With CONFIG_MBEDTLS_CUSTOM_MEM_ALLOC the header includes no esp_mem.h.


def test_kconfig_needs_the_header_that_reads_it(catalog: Catalog) -> None:
    with pytest.raises(UserError, match="name that header beside it with config=FILE"):
        catalog.resolve(f"mbedtls-3.6.6:kconfig={EXAMPLES / 'sdkconfig'}")
    with pytest.raises(UserError, match="kconfig= is given 2 times"):
        catalog.resolve(f"{esp_spec()},kconfig={EXAMPLES / 'sdkconfig.client-only'}")
    with pytest.raises(UserError, match="kconfig= is an option of mbedtls, not wolfssl"):
        catalog.resolve(f"wolfssl-5.7.2:kconfig={EXAMPLES / 'sdkconfig'}")
    with pytest.raises(UserError, match=r"esp_config\.h:1: .* is not a Kconfig line"):
        catalog.resolve(
            f"mbedtls-3.6.6:kconfig={EXAMPLES / 'esp_config.h'},config={EXAMPLES / 'esp_config.h'}"
        )


def test_a_value_the_header_reads_from_kconfig_is_compared_as_that_value(
    catalog: Catalog,
) -> None:
    """The header's `#define MBEDTLS_SSL_IN_CONTENT_LEN CONFIG_MBEDTLS_SSL_IN_CONTENT_LEN`
    is the sdkconfig's 4096: records-4096 agrees with it, records-2048 does not."""
    catalog.resolve(esp_spec(target="records-4096,"))
    with pytest.raises(
        UserError, match="#define MBEDTLS_SSL_IN_CONTENT_LEN 4096, but feature records-2048"
    ):
        catalog.resolve(esp_spec(target="records-2048,"))


# -- refused with the CONFIG_ option, through the real preprocessor --------------------------


@pytest.fixture
def library_default(tmp_path: Path) -> Path:
    """A stand-in for the library's source: the header includes its default config, read
    empty here (the long tier reads the pinned one)."""
    (tmp_path / "src" / "include" / "mbedtls").mkdir(parents=True)
    (tmp_path / "src" / "include" / "mbedtls" / "mbedtls_config.h").write_text("")
    return tmp_path / "src"


def test_what_a_client_only_sdkconfig_leaves_out_is_its_config_option(
    catalog: Catalog, library_default: Path
) -> None:
    variant = catalog.resolve(esp_spec("sdkconfig.client-only"))
    job = firmware.make_job("TLS-ECDHE-RSA-WITH-AES-128-GCM-SHA256")
    unmet = [
        needs.Need(
            "a TLS server (both sides run)", "MBEDTLS_SSL_SRV_C", "#define MBEDTLS_SSL_SRV_C"
        ),
        needs.Need(
            "the suite on the list",
            "MBEDTLS_TLS_X",
            "add MBEDTLS_TLS_X to MBEDTLS_SSL_CIPHERSUITES",
        ),
        needs.Need("ChaCha20", "MBEDTLS_CHACHA20_POLY", "#define MBEDTLS_CHACHA20_POLY"),
    ]
    said, header_left = needs.kconfig_changes(variant, library_default, unmet)
    assert said[0].change == (
        "CONFIG_MBEDTLS_TLS_SERVER=y (esp_config.h: MBEDTLS_SSL_SRV_C; sdkconfig.client-only "
        "does not name CONFIG_MBEDTLS_TLS_SERVER: Kconfig sets it from another option, such as "
        "a choice)"
    )
    assert said[1] == unmet[1]  # a suite list's entry: no option gives it
    assert said[2].change == (
        "#define MBEDTLS_CHACHA20_POLY (no CONFIG_ option of esp_config.h "
        "gives MBEDTLS_CHACHA20_POLY)"
    )
    assert header_left
    assert job.suite == "TLS-ECDHE-RSA-WITH-AES-128-GCM-SHA256"


def test_a_number_the_job_needs_is_the_options_value(
    catalog: Catalog, library_default: Path, tmp_path: Path
) -> None:
    small = tmp_path / "sdkconfig"
    small.write_text(
        (EXAMPLES / "sdkconfig")
        .read_text()
        .replace(
            "CONFIG_MBEDTLS_SSL_OUT_CONTENT_LEN=4096", "CONFIG_MBEDTLS_SSL_OUT_CONTENT_LEN=512"
        )
    )
    variant = catalog.resolve(f"mbedtls-3.6.6:kconfig={small},config={EXAMPLES / 'esp_config.h'}")
    need = needs.Need(
        "room for the server's flight",
        "MBEDTLS_SSL_OUT_CONTENT_LEN>=4096:16384",
        "#define MBEDTLS_SSL_OUT_CONTENT_LEN 4096",
    )
    (said,), header_left = needs.kconfig_changes(variant, library_default, [need])
    assert said.change == (
        "CONFIG_MBEDTLS_SSL_OUT_CONTENT_LEN=4096 (esp_config.h: MBEDTLS_SSL_OUT_CONTENT_LEN)"
    )
    assert not header_left


def test_a_boards_own_code_is_the_platforms_in_any_config_file(
    catalog: Catalog, tmp_path: Path
) -> None:
    """Not only an SDK's: any mbedTLS file's *_ALT code and allocator are the target's; the
    library's own setters (MBEDTLS_PLATFORM_EXIT_ALT) and features (..._ALT_SUPPORT) are not."""
    board = tmp_path / "board.h"
    board.write_text(
        "#define MBEDTLS_SSL_TLS_C\n#define MBEDTLS_PLATFORM_ZEROIZE_ALT\n"
        "#define MBEDTLS_PLATFORM_EXIT_ALT\n#ifdef BOARD_HAS_ECC\n#define MBEDTLS_ECP_ALT\n"
        "#endif\n#define MBEDTLS_PLATFORM_CALLOC_MACRO pvPortCalloc\n"
        "#define MBEDTLS_PK_RSA_ALT_SUPPORT\n"
    )
    variant = catalog.resolve(f"mbedtls-3.6.6:cortex-m4,config={board}")
    own = {name for name in variant.platform if name not in platform.MBEDTLS_FIRMWARE}
    assert own == {"MBEDTLS_PLATFORM_ZEROIZE_ALT", "MBEDTLS_ECP_ALT",
                   "MBEDTLS_PLATFORM_CALLOC_MACRO"}  # fmt: skip
    replaced = "\n".join(variant.replaced)
    assert (
        "#define MBEDTLS_PLATFORM_ZEROIZE_ALT -> MBEDTLS_PLATFORM_ZEROIZE_ALT undefined" in replaced
    )
    assert "MBEDTLS_PLATFORM_CALLOC_MACRO pvPortCalloc -> " in replaced
    assert "MBEDTLS_ECP_ALT" not in replaced  # a block the file does not take names nothing
    # A file naming none keeps the platform (so the cache key) it had.
    plain = tmp_path / "plain.h"
    plain.write_text("#define MBEDTLS_SSL_TLS_C\n")
    assert catalog.resolve(f"mbedtls-3.6.6:cortex-m4,config={plain}").platform == (
        platform.MBEDTLS_FIRMWARE
    )
