"""A user's own configuration as variant options: config files and build-system options.

Written OPTION=VALUE in a spec, like a feature (`mbedtls-3.6.6:config=boards/my_config.h`):

- `config=FILE` (mbedtls): the whole config (MBEDTLS_CONFIG_FILE), in place of
  mbedtls_config.h;
- `user-config=FILE` (mbedtls): a file layered on the default (MBEDTLS_USER_CONFIG_FILE);
- `kconfig=FILE` (mbedtls, beside config= or user-config=): the Kconfig output (an SDK's
  `sdkconfig` or `.config`) whose CONFIG_ values that header reads (kconfig.py);
- `user-settings=FILE` (wolfssl): its user_settings.h (configure --enable-usersettings);
- `configure=OPTION` (wolfssl, gnutls: configure; openssl: Configure; awslc, boringssl:
  cmake -D): one option of the library's build system;
- `configure-file=FILE` (the same libraries): such options, as shell words, `#` comments.

A file's content (not its path) is in the build's cache key, and it is stored with every
point of a run (its path, sha256 and text) so that a report can show it. What the variant
sets besides (its library's base options, features, MACRO=VALUE) is layered on the file;
where the file says otherwise about the same macro or option (`#define
MBEDTLS_SSL_IN_CONTENT_LEN 2048` with the feature records-4096) the variant is refused
with both sides named: a build that silently dropped one of them would not be the variant.

A file's macros are read line by line (`#define NAME [VALUE]`, `#undef NAME`), without
evaluating `#if` blocks: a macro defined only under a condition still counts as set.
"""

from __future__ import annotations

import hashlib
import re
import shlex
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tlsbench.core.errors import UserError

CONFIGURE_LIBRARIES = ("wolfssl", "gnutls", "openssl", "awslc", "boringssl")
# Options naming a file, and the libraries that take each.
FILE_OPTIONS = {
    "config": ("mbedtls",),
    "user-config": ("mbedtls",),
    "kconfig": ("mbedtls",),
    "user-settings": ("wolfssl",),
    "configure-file": CONFIGURE_LIBRARIES,
}
INLINE_OPTIONS = {"configure": CONFIGURE_LIBRARIES}
# An option the file options replace, for the message to a library that lacks one.
WHAT_INSTEAD = {
    "mbedtls": "config=FILE or user-config=FILE (a config header, with kconfig=FILE where an "
    "SDK's sdkconfig or .config drives it), or MACRO=VALUE",
    "wolfssl": "user-settings=FILE, configure=OPTION or configure-file=FILE",
}
DEFINE = re.compile(r"^\s*#\s*define\s+([A-Za-z_]\w*)\b(?!\()[ \t]*(.*?)\s*(?://.*|/\*.*)?$")
UNDEF = re.compile(r"^\s*#\s*undef\s+([A-Za-z_]\w*)")
UNDEFINED = "!"  # a macro's value when it is left undefined (as in MACRO=! options)


@dataclass(frozen=True)
class ConfigFile:
    """One file a variant names: kept whole, since its content is what is built."""

    option: str  # "config", "user-config", "kconfig", "user-settings", "configure-file"
    path: str  # absolute
    text: str

    @property
    def sha256(self) -> str:
        return hashlib.sha256(self.text.encode()).hexdigest()

    @property
    def spec(self) -> str:
        return f"{self.option}={self.path}"

    def key(self) -> dict[str, str]:
        """The cache key's part: the option and the content, not where the file lies."""
        return {"option": self.option, "sha256": self.sha256}

    def describe(self) -> dict[str, Any]:
        """What a stored point carries of it: enough for a report to show it whole."""
        return {"option": self.option, "path": self.path, "sha256": self.sha256,
                "text": self.text}  # fmt: skip


def is_config_option(option: str) -> bool:
    name, sep, _ = option.partition("=")
    return bool(sep) and (name in FILE_OPTIONS or name in INLINE_OPTIONS)


def check_applies(option: str, library: str) -> None:
    name = option.partition("=")[0]
    takers = FILE_OPTIONS.get(name) or INLINE_OPTIONS.get(name) or ()
    if library not in takers:
        instead = WHAT_INSTEAD.get(library, "configure=OPTION or configure-file=FILE")
        raise UserError(
            f"{option}: {name}= is an option of {', '.join(takers)}, not {library}; "
            f"{library} takes {instead}"
            if library in (*WHAT_INSTEAD, *CONFIGURE_LIBRARIES)
            else f"{option}: {name}= is an option of {', '.join(takers)}; {library} takes no "
            "configuration file"
        )


def read(option: str, base: Path) -> ConfigFile:
    """The file an OPTION=FILE names (relative to `base`), read whole."""
    name, _, value = option.partition("=")
    if not value.strip():
        raise UserError(f"{option}: name a file after '{name}='")
    path = Path(value.strip()).expanduser()
    path = (path if path.is_absolute() else base / path).resolve()
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        raise UserError(f"{option}: {path} is not UTF-8 text") from None
    except IsADirectoryError:
        raise UserError(f"{option}: {path} is a folder; name a file") from None
    except OSError as exc:
        raise UserError(f"{option}: cannot read {path} ({exc.strerror or exc})") from exc
    return ConfigFile(name, str(path), text)


def macros_of(text: str) -> dict[str, str]:
    """NAME -> value ("" when defined empty, "!" when #undef'd), the last word counting."""
    found: dict[str, str] = {}
    for line in re.sub(r"\\\n", " ", text).splitlines():  # a continued line is one
        define = DEFINE.match(line)
        if define:
            found[define.group(1)] = " ".join(define.group(2).split())
            continue
        undef = UNDEF.match(line)
        if undef:
            found[undef.group(1)] = UNDEFINED
    return found


def defined_anywhere(text: str) -> set[str]:
    """Every macro a `#define` line of the file names, whatever follows it (an `#undef`
    after it, an `#else` around it)."""
    return {m.group(1) for line in re.sub(r"\\\n", " ", text).splitlines()
            if (m := DEFINE.match(line))}  # fmt: skip


def configure_words(config: ConfigFile) -> list[str]:
    """The options of a configure-file: shell words, `#` starting a comment."""
    try:
        return shlex.split(config.text, comments=True)
    except ValueError as exc:
        raise UserError(f"{config.spec}: not a list of options ({exc})") from exc


def cflag_macros(cflags: list[tuple[str, str]]) -> dict[str, tuple[str, str]]:
    """-DNAME[=VALUE] among (flag, origin) pairs -> NAME -> (value, origin)."""
    found = {}
    for flag, origin in cflags:
        if flag.startswith("-D") and len(flag) > 2:
            name, _, value = flag[2:].partition("=")
            found[name] = (value, origin)
    return found


def macro_contradictions(
    config: ConfigFile,
    variant: dict[str, tuple[str, str]],
    owned: set[str] | frozenset[str] = frozenset(),
    settings: dict[str, str] | None = None,
    evaluated: dict[str, str] | None = None,
) -> list[str]:
    """Where the file sets a macro the variant sets to something else (NAME -> (value,
    origin) for the variant); a whole mbedTLS config that merely lacks a macro the variant
    undefines agrees with it. The platform's macros (`owned`: platform.py) are never a
    contradiction: the build replaces them. An SDK's header driven by kconfig= values
    (`settings`: CONFIG_X -> value) is read as they evaluate it (`evaluated`: what it
    defines; a macro its lines name that is not there is undefined), a value that reads a
    CONFIG_ value compared as that value."""
    said = macros_of(config.text)
    if evaluated is not None:
        said = {name: evaluated.get(name, UNDEFINED) for name in said}
    found = []
    for name, theirs in said.items():
        if name not in variant or name in owned:
            continue
        if settings:
            theirs = re.sub(r"\b[A-Za-z_]\w*\b", lambda m: settings.get(m.group(0), m.group(0)),
                            theirs)  # fmt: skip
        ours, origin = variant[name]
        if " ".join(ours.split()) != theirs:
            found.append(f"{config.path}: {setting(name, theirs)}, but {origin}: "
                         f"{setting(name, ours)}")  # fmt: skip
    return found


def setting(name: str, value: str) -> str:
    if value == UNDEFINED:
        return f"{name} undefined"
    return f"#define {name} {value}".rstrip()


def _flag_setting(flag: str, library: str) -> tuple[str, str] | None:
    """What one build-system option sets: (setting, value), e.g. --disable-tls13 ->
    ("tls13", "no"), no-asm -> ("asm", "no"), -DOPENSSL_NO_ASM=1 -> ("OPENSSL_NO_ASM", "1")."""
    if library in ("awslc", "boringssl"):
        found = re.fullmatch(r"-D([^=:]+)(?::\w+)?=(.*)", flag)
        return (found.group(1), found.group(2)) if found else None
    if library == "openssl":
        found = re.fullmatch(r"(no|enable)-(.+)", flag)
        return (found.group(2), "no" if found.group(1) == "no" else "yes") if found else None
    found = re.fullmatch(r"--(enable|disable|with|without)-([^=]+)(?:=(.*))?", flag)
    if not found:
        return None
    kind, name, value = found.groups()
    family = "enable" if kind in ("enable", "disable") else "with"
    if kind in ("disable", "without"):
        value = "no"
    return f"{family}-{name}", value if value is not None else "yes"


def flag_contradictions(
    own: list[tuple[str, str]], user: list[tuple[str, str]], library: str
) -> list[str]:
    """A user's build-system option (configure=, a configure-file's) that sets a setting
    otherwise than the variant's own options (base and features of variants.toml, as
    `(flag, origin)`), or than another of her options: the build would silently keep one.

    Among the variant's own options the later one wins, deliberately: a feature of
    variants.toml is written to override the base or a feature before it (wolfSSL's `small`
    gives --disable-dh over the base's --enable-dh, --enable-sp=small over a core's
    --enable-sp); that is what the feature is, not a contradiction."""
    settled: dict[str, tuple[str, str, str]] = {}
    for flag, origin in own:
        parsed = _flag_setting(flag, library)
        if parsed is not None:
            settled[parsed[0]] = (flag, parsed[1], origin)
    found = []
    said: dict[str, tuple[str, str, str]] = {}
    for flag, origin in user:
        parsed = _flag_setting(flag, library)
        if parsed is None:
            continue
        name, value = parsed
        for other in (said.get(name), settled.get(name)):
            if other is not None and other[1] != value:
                found.append(f"{origin} gives {flag} where {other[2]} gives {other[0]}")
                break
        said.setdefault(name, (flag, value, origin))
    return found
