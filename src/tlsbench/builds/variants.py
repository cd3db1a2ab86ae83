"""Variants as data: `variants.toml` parsed, specs resolved into build options.

A spec is `LINE[:OPTION,OPTION...]` or the name of a variant declared in `[variants]`
(optionally followed by more options). LINE is a pin, a `system` line, or a local source
(`LIBRARY@PATH`, `LIBRARY@PATH#REV`, `@PATH`: localsource.py). An OPTION is a named feature
of the library or `MACRO=VALUE`; the value `!` undefines the macro (mbedTLS config) instead.
"""

from __future__ import annotations

import difflib
import os
import re
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tlsbench.builds import arches, configfiles, kconfig, localsource, platform
from tlsbench.builds.sources import Pin, companion_lines, load_pins
from tlsbench.core import paths
from tlsbench.core.errors import UserError, read_user_file

ARCHES = tuple(arches.ARCHES)
FEATURE_KEYS = {"description", "arch", "macros", "configure", "cflags", "unsupported"}
LIBRARY_KEYS = {"recipe", "system", "base", "feature"}
MACRO_OPTION = re.compile(r"^([A-Za-z_][A-Za-z0-9_]*)=(.*)$")


@dataclass(frozen=True)
class Feature:
    name: str
    description: str = ""
    arch: str | None = None
    macros: dict[str, str] = field(default_factory=dict)
    configure: tuple[str, ...] = ()
    cflags: tuple[str, ...] = ()
    unsupported: str | None = None


@dataclass(frozen=True)
class Library:
    name: str
    recipe: str
    system_package: str | None  # Debian -dev package of the `system` line, if any
    base: Feature
    features: dict[str, Feature]


@dataclass(frozen=True)
class Line:
    """A buildable source of a library: a pin, the machine's own package, or a local tree
    or commit (the user's own code)."""

    name: str  # "openssl-3.5.x", "openssl-system", "mbedtls@/src/mbedtls#my-branch"
    library: Library
    pin: Pin | None  # None for a system line and a local source
    system_package: str | None = None
    local: localsource.LocalSource | None = None

    @property
    def from_source(self) -> bool:
        """Built by tlsbench from a source tree (so it takes build options)."""
        return self.pin is not None or self.local is not None

    @property
    def folder_name(self) -> str:
        """How the cache names its builds (a local line's name holds a path)."""
        return f"{self.library.name}-local" if self.local is not None else self.name


@dataclass(frozen=True)
class Variant:
    """A resolved spec: everything that goes into one build."""

    name: str  # canonical spec, e.g. "wolfssl-5.7.2:intelasm,sp-asm"
    line: Line
    features: tuple[str, ...]
    arch: str
    macros: dict[str, str]
    configure: tuple[str, ...]
    cflags: tuple[str, ...]
    # The user's own config files (configfiles.py), whole: their content is built.
    files: tuple[configfiles.ConfigFile, ...] = ()
    # With a config file: the target's platform macros (platform.py), set after the file,
    # and what they replaced of it, one line each.
    platform: dict[str, str] = field(default_factory=dict)
    replaced: tuple[str, ...] = ()

    @property
    def library(self) -> str:
        return self.line.library.name

    def file(self, option: str) -> configfiles.ConfigFile | None:
        """The file given as `option`=FILE (config, user-config, user-settings), if any."""
        return next((f for f in self.files if f.option == option), None)

    def options(self) -> dict[str, Any]:
        """The resolved build options, in a stable JSON-able form (part of the cache key)."""
        return {
            "arch": self.arch,
            "macros": dict(sorted(self.macros.items())),
            "configure": list(self.configure),
            "cflags": list(self.cflags),
            # Only when there are some, so that other variants keep their keys.
            **({"files": [f.key() for f in self.files]} if self.files else {}),
            # The platform's macros set after a config file (platform.py); what they
            # replaced names the file's path, so the stored build carries it (build.py),
            # not the key.
            **({"platform": dict(sorted(self.platform.items()))} if self.platform else {}),
        }


# Libraries with no configuration-file option (the others' unknown-feature message names
# theirs).
NO_CONFIG_OPTIONS = ("null", "hacl", "rustls", "bearssl", "s2n", "nss", "botan")
CONFIG_HINT = (
    "; or a configuration of your own: config=FILE / user-config=FILE (mbedtls), "
    "user-settings=FILE (wolfssl), configure=OPTION / configure-file=FILE"
)


def _split_options(tail: str) -> list[str]:
    return [o.strip() for o in tail.split(",") if o.strip()]


def _absolute(options: list[str], base: Path) -> list[str]:
    """File options with their path made absolute against `base`."""
    out = []
    for option in options:
        name, sep, value = option.partition("=")
        if sep and name in configfiles.FILE_OPTIONS and value.strip():
            path = Path(value.strip()).expanduser()
            option = f"{name}={os.path.normpath(path if path.is_absolute() else base / path)}"
        out.append(option)
    return out


def _line_of(text: str, pattern: str) -> int | None:
    for number, content in enumerate(text.splitlines(), start=1):
        if re.search(pattern, content):
            return number
    return None


class Catalog:
    """Everything variants.toml and pins.toml declare."""

    def __init__(self, variants_file: Path | None = None, pins: dict[str, Pin] | None = None):
        self.file = variants_file or paths.VARIANTS_FILE
        self.pins = pins if pins is not None else load_pins()
        text = read_user_file(self.file)
        try:
            data = tomllib.loads(text)
        except tomllib.TOMLDecodeError as exc:
            # tomllib says "(at line N, column M)"; lead with the file and line.
            found = re.search(r"at line (\d+)", str(exc))
            where = f"{self.file}:{found.group(1)}" if found else str(self.file)
            raise UserError(f"{where}: malformed TOML: {exc}") from exc
        self._text = text
        self._local_lines: dict[tuple[str, str], Line] = {}
        self._check_types(data)
        self.libraries = {
            name: self._library(name, entry) for name, entry in data.get("library", {}).items()
        }
        self.lines: dict[str, Line] = {}
        companions = companion_lines(self.pins)
        for pin in self.pins.values():
            if pin.line in companions:
                continue  # built with the line that names it (NSPR with NSS)
            library = self.libraries.get(pin.library)
            if library is None:
                raise UserError(
                    f"{self.file}: pinned line {pin.line} has no [library.{pin.library}] table"
                )
            self.lines[pin.line] = Line(pin.line, library, pin)
        for library in self.libraries.values():
            if library.recipe == "null":
                self.lines[library.name] = Line(library.name, library, None)
            if library.system_package:
                name = f"{library.name}-system"
                self.lines[name] = Line(name, library, None, library.system_package)
        self.named: dict[str, str] = dict(data.get("variants", {}))
        for spec in self.named.values():
            self.resolve(spec, self.file.parent)  # a broken alias is reported at load time
        # Canonical names: a local source's path is relative to this file, not to where
        # tlsbench runs.
        self.defaults: list[str] = [
            self.resolve(spec, self.file.parent).name for spec in data.get("defaults", [])
        ]

    def _check_types(self, data: dict[str, Any]) -> None:
        """The shape of the file, so that a wrong type is a message, not a traceback."""

        def expect(ok: bool, pattern: str, what: str, value: Any) -> None:
            if not ok:
                raise self._error(pattern, f"{what}, not {value!r}")

        def strings(value: Any) -> bool:
            return isinstance(value, list) and all(isinstance(v, str) for v in value)

        libraries = data.get("library", {})
        expect(
            isinstance(libraries, dict), r"^\[library", "[library.NAME] must be tables", libraries
        )
        for name, entry in libraries.items():
            where = rf"^\[library\.{re.escape(name)}"
            expect(isinstance(entry, dict), where, f"[library.{name}] must be a table", entry)
            for key in ("recipe", "system"):
                if key in entry:
                    expect(isinstance(entry[key], str), where, f"{name} {key} must be a string",
                           entry[key])  # fmt: skip
            features = entry.get("feature", {})
            expect(isinstance(features, dict), where, f"{name} features must be tables", features)
            tables = [("base", entry.get("base", {})), *features.items()]
            for fname, feature in tables:
                if not isinstance(feature, dict):
                    continue  # _feature names it
                fwhere = rf"^\[library\.{re.escape(name)}\.(feature\.)?{re.escape(fname)}\]"
                for key in ("description", "arch", "unsupported"):
                    if key in feature:
                        expect(isinstance(feature[key], str), fwhere,
                               f"{name} {fname} {key} must be a string", feature[key])  # fmt: skip
                for key in ("configure", "cflags"):
                    if key in feature:
                        expect(strings(feature[key]), fwhere,
                               f"{name} {fname} {key} must be a list of strings",
                               feature[key])  # fmt: skip
                macros = feature.get("macros", {})
                expect(
                    isinstance(macros, dict)
                    and all(
                        isinstance(v, str | int) and not isinstance(v, bool)
                        for v in macros.values()
                    ),
                    fwhere,
                    f"{name} {fname} macros must be a table of NAME = value (string or number)",
                    macros,
                )
        named = data.get("variants", {})
        expect(
            isinstance(named, dict) and all(isinstance(v, str) for v in named.values()),
            r"^\[variants\]",
            "[variants] must map names to variant specs (strings)",
            named,
        )
        expect(strings(data.get("defaults", [])), r"^defaults", "defaults must be a list of "
               "variant specs (strings)", data.get("defaults"))  # fmt: skip

    def _error(self, pattern: str, message: str) -> UserError:
        line = _line_of(self._text, pattern)
        where = f"{self.file}:{line}" if line else str(self.file)
        return UserError(f"{where}: {message}")

    def _feature(self, library: str, name: str, entry: Any) -> Feature:
        header = rf"^\[library\.{re.escape(library)}\.(feature\.)?{re.escape(name)}\]"
        if not isinstance(entry, dict):
            raise self._error(header, f"feature {name!r} of {library} must be a table")
        unknown = set(entry) - FEATURE_KEYS
        if unknown:
            raise self._error(
                header,
                f"unknown key(s) {', '.join(sorted(unknown))} in {library} feature {name!r}; "
                f"allowed: {', '.join(sorted(FEATURE_KEYS))}",
            )
        arch = entry.get("arch")
        if arch is not None and arch not in ARCHES:
            raise self._error(header, f"arch {arch!r} is not one of {', '.join(ARCHES)}")
        return Feature(
            name=name,
            description=str(entry.get("description", "")),
            arch=arch,
            macros={str(k): str(v) for k, v in entry.get("macros", {}).items()},
            configure=tuple(entry.get("configure", ())),
            cflags=tuple(entry.get("cflags", ())),
            unsupported=entry.get("unsupported"),
        )

    def _library(self, name: str, entry: Any) -> Library:
        unknown = set(entry) - LIBRARY_KEYS
        if unknown:
            raise self._error(
                rf"^\[library\.{re.escape(name)}\]",
                f"unknown key(s) {', '.join(sorted(unknown))} in [library.{name}]",
            )
        if "recipe" not in entry:
            raise self._error(rf"^\[library\.{re.escape(name)}\]", f"{name} has no recipe")
        return Library(
            name=name,
            recipe=entry["recipe"],
            system_package=entry.get("system"),
            base=self._feature(name, "base", entry.get("base", {})),
            features={
                fname: self._feature(name, fname, fentry)
                for fname, fentry in entry.get("feature", {}).items()
            },
        )

    # -- resolving specs --------------------------------------------------------------------

    def resolve(self, spec: str, base: Path | None = None) -> Variant:
        """The variant a spec names. Relative paths in it (a local source, a config file)
        are relative to `base` (default: the current folder); a named variant's own, to
        variants.toml's folder."""
        spec = spec.strip()
        base = base or Path.cwd()
        head, _, tail = spec.partition(":")
        extra = _absolute(_split_options(tail), base)
        if head in self.named:
            alias = self.named[head]
            head, _, alias_tail = alias.partition(":")
            extra = _absolute(_split_options(alias_tail), self.file.parent) + extra
            base = self.file.parent
        if localsource.is_local_spec(head):
            return self._apply(self._local_line(head, base), extra)
        line = self.lines.get(head)
        if line is None:
            choices = sorted([*self.lines, *self.named])
            close = difflib.get_close_matches(head, choices, n=3, cutoff=0.5)
            hint = f" Did you mean {', '.join(close)}?" if close else ""
            raise UserError(
                f"unknown variant {head!r}.{hint} Known lines and variants: {', '.join(choices)}"
            )
        return self._apply(line, extra)

    def _local_line(self, head: str, base: Path) -> Line:
        # Resolving reads the tree (git, detection): once per spec and folder.
        memo = (head, str(base))
        if memo not in self._local_lines:
            source = localsource.resolve(head, base, list(self.libraries))
            self._local_lines[memo] = Line(source.spec, self.libraries[source.library], None,
                                           local=source)  # fmt: skip
        return self._local_lines[memo]

    def _apply(self, line: Line, options: list[str]) -> Variant:
        library = line.library
        named: list[str] = []
        user_macros: dict[str, str] = {}
        files: list[configfiles.ConfigFile] = []
        inline_configure: list[str] = []
        # Build-system options of configure= and configure-file=, in the spec's order.
        user_configure: list[tuple[str, str]] = []
        for option in options:
            if configfiles.is_config_option(option):
                configfiles.check_applies(option, library.name)
                if option.startswith("configure="):
                    inline_configure.append(option.partition("=")[2])
                    user_configure.append((inline_configure[-1], f"option {option}"))
                    continue
                files.append(configfiles.read(option, Path("/")))  # made absolute by resolve
                if files[-1].option == "configure-file":
                    words = configfiles.configure_words(files[-1])
                    user_configure += [(word, files[-1].path) for word in words]
                continue
            macro = MACRO_OPTION.match(option)
            if macro:
                user_macros[macro.group(1)] = macro.group(2)
                continue
            feature = library.features.get(option)
            if feature is None:
                close = difflib.get_close_matches(option, list(library.features), n=3, cutoff=0.5)
                hint = f" Did you mean {', '.join(close)}?" if close else ""
                raise UserError(
                    f"unknown feature {option!r} for {library.name}.{hint} Features of "
                    f"{library.name}: {', '.join(sorted(library.features))}; or MACRO=VALUE"
                    f"{'' if library.name in NO_CONFIG_OPTIONS else CONFIG_HINT}."
                )
            if feature.unsupported:
                raise UserError(
                    f"{library.name} feature {option!r} is not available: {feature.unsupported}"
                )
            if option not in named:
                named.append(option)
        if not line.from_source and (named or user_macros or files or inline_configure):
            what = (
                f"the machine's own build ({line.system_package})"
                if line.system_package
                else "the harness baseline"
            )
            raise UserError(f"{line.name} is {what}; it takes no options")
        named.sort()
        targets = {f: library.features[f].arch for f in named if library.features[f].arch}
        if len(set(targets.values())) > 1:
            shown = ", ".join(f"{arch} (feature {f})" for f, arch in targets.items())
            raise UserError(
                f"{line.name}:{','.join(options)} names two targets: {shown}. A variant is "
                "built for one target: keep one of those features"
            )
        arch = "x86_64"
        # Each setting with where it comes from, so that a file contradicting one names it.
        base_origin = f"[library.{library.name}.base] of {self.file.name}"
        macros = {k: (v, base_origin) for k, v in library.base.macros.items()}
        configure = [(c, base_origin) for c in library.base.configure]
        cflags = [(c, base_origin) for c in library.base.cflags]
        for name in named:
            feature = library.features[name]
            arch = feature.arch or arch
            origin = f"feature {name}"
            macros.update({k: (v, origin) for k, v in feature.macros.items()})
            configure += [(c, origin) for c in feature.configure
                          if c not in [known for known, _ in configure]]  # fmt: skip
            cflags += [(c, origin) for c in feature.cflags
                       if c not in [known for known, _ in cflags]]  # fmt: skip
        macros.update({k: (v, f"option {k}={v}") for k, v in user_macros.items()})
        if any(f.option == "user-settings" for f in files):
            # A user_settings.h is wolfSSL's whole configuration (configure drops its own
            # feature macros): the base's macros, there for the project's own builds, are
            # left out too; its other flags (-O2) and the features' stay.
            cflags = [(c, origin) for c, origin in cflags
                      if not (origin == base_origin and c.startswith("-D"))]  # fmt: skip
        settings = self._kconfig_of(files)
        owned: dict[str, str] = {}
        replaced: list[str] = []
        if any(f.option in ("config", "user-config", "user-settings") for f in files):
            owned = platform.owned(library.name, arches.arch(arch).firmware, files)
            replaced = platform.replacements(files, owned, arch)
        self._refuse_contradictions(library.name, files, macros, configure, user_configure,
                                    cflags, set(owned), settings)  # fmt: skip
        configure += user_configure
        if library.name == "mbedtls":  # set in tlsbench's user config, after the file
            macros.update({k: (v, "the platform") for k, v in owned.items()})
        suffix = [
            *named,
            *(f"{k}={v}" for k, v in sorted(user_macros.items())),
            *(config.spec for config in files),
            *(f"configure={c}" for c in inline_configure),
        ]
        canonical = line.name + (":" + ",".join(suffix) if suffix else "")
        return Variant(
            name=canonical,
            line=line,
            features=tuple(named),
            arch=arch,
            macros={k: v for k, (v, _) in macros.items()},
            configure=tuple(dict.fromkeys(c for c, _ in configure)),
            cflags=tuple(c for c, _ in cflags),
            files=tuple(files),
            platform=owned,
            replaced=tuple(replaced),
        )

    @staticmethod
    def _kconfig_of(files: list[configfiles.ConfigFile]) -> dict[str, str]:
        """The CONFIG_ values of a kconfig= file (kconfig.py), which needs the header that
        reads them beside it; {} without one."""
        given = [f for f in files if f.option == "kconfig"]
        if not given:
            return {}
        if len(given) > 1:
            raise UserError(f"kconfig= is given {len(given)} times: a build reads one Kconfig "
                            "output file; merge them into one")  # fmt: skip
        if not any(f.option in ("config", "user-config") for f in files):
            raise UserError(
                f"{given[0].spec}: kconfig=FILE gives the CONFIG_ values an SDK's mbedTLS "
                "configuration header reads; name that header beside it with config=FILE "
                "(ESP-IDF's esp_config.h, Zephyr's config-tls-generic.h) or user-config=FILE"
            )
        return kconfig.parse(given[0]).defined

    @staticmethod
    def _refuse_contradictions(
        library: str,
        files: list[configfiles.ConfigFile],
        macros: dict[str, tuple[str, str]],
        configure: list[tuple[str, str]],
        user_configure: list[tuple[str, str]],
        cflags: list[tuple[str, str]],
        owned: set[str],
        settings: dict[str, str] | None = None,
    ) -> None:
        """A config file or build-system option of the user's that says otherwise than the
        variant's own options: refused with both sides named, since the build would silently
        keep only one of them. The variant's own options (base, features) override one
        another by design and are never refused here; nor are the platform's macros (the
        build owns them: platform.py), which replace the file's."""
        found = configfiles.flag_contradictions(configure, user_configure, library)
        # wolfSSL and the others get macros as -D flags; mbedTLS in its config header.
        defined = {**configfiles.cflag_macros(cflags), **macros}
        defined = {name: said for name, said in defined.items() if name not in owned}
        kconfig_file = next((f for f in files if f.option == "kconfig"), None)
        for config in files:
            if config.option in ("config", "user-config", "user-settings"):
                evaluated = (platform.evaluated(config, kconfig_file) if kconfig_file is not None
                             else None)  # fmt: skip
                found += configfiles.macro_contradictions(config, defined, owned, settings,
                                                          evaluated)  # fmt: skip
        if found:
            raise UserError(
                "the variant contradicts itself:\n  "
                + "\n  ".join(found)
                + "\nDrop the option, or change the file, so that only one of them says it."
            )

    def listing(self) -> dict[str, Any]:
        """What `tlsbench list variants` shows."""
        return {
            "defaults": self.defaults,
            "lines": {
                name: {
                    "library": line.library.name,
                    "upstream": line.pin.upstream if line.pin else None,
                    "system_package": line.system_package,
                }
                for name, line in sorted(self.lines.items())
            },
            "named": self.named,
            "features": {
                lib.name: {
                    f.name: {
                        "description": f.description,
                        **({"unsupported": f.unsupported} if f.unsupported else {}),
                    }
                    for f in lib.features.values()
                }
                for lib in self.libraries.values()
            },
        }
