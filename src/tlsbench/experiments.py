"""Experiments as data: a TOML file expanded into named run points.

An experiment file (experiments/NAME.toml) opens with the question it answers:

    question = "How does handshake heap grow with record buffer size?"
    repetitions = 5          # driver processes per point (default 5)
    timeout = 120            # seconds per driver process (default 300)

    [defaults]               # options of every point unless the matrix sets them
    scenario = "handshake"
    iterations = 20

    [per_scenario.records]   # options of the points of one scenario (over [defaults])
    iterations = 2000

    [matrix]                 # the cartesian product of these lists
    variant = ["mbedtls-3.6.6", "wolfssl-5.7.2"]
    auth = ["none", "server", "mutual"]

    [[exclude]]              # drop the points matching every key given
                             # (several [[matrix]] blocks may replace the one [matrix])
    variant = "mbedtls-2.28.x"
    tls = "1.3"

    [[include]]              # extra points (defaults apply)
    variant = "null"
    scenario = "records"

Point names are stable and composable: the scenario, then the value of every option the
point sets, in a fixed key order (`handshake_1.3_rsa2048_mutual`); a point is identified by
(variant, name), and two points with the same identity are an error.
"""

from __future__ import annotations

import difflib
import itertools
import re
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tlsbench import paths
from tlsbench.errors import UserError, read_user_file
from tlsbench.scenarios import declared
from tlsbench.variants import Catalog

EXPERIMENTS_DIR = paths.REPO / "experiments"
# What an experiment can measure: the driver's scenarios but `info`, which measures nothing.
SCENARIOS = ("handshake", "resume", "records", "bulk", "aead", "interop", "code-size", "load")

# Option keys of a point, in the order they appear in names; value -> name fragment.
OPTION_ORDER = (
    "tls", "suite", "kx", "group", "key_share", "sigalg", "cert", "chain", "auth", "record_size",
    "payload", "bytes", "aead", "accel", "transport", "io", "role", "peer", "resume", "rtt_ms",
    "loss", "server", "client", "pattern", "connections", "rate", "request_size", "workers",
    "server_host", "generator_hosts", "server_address",
)  # fmt: skip
# Keys that tune a measurement without changing what is measured: not in names.
TUNING_KEYS = ("iterations", "warmup", "duration_s", "heap")
POINT_KEYS = ("variant", "scenario", *OPTION_ORDER, *TUNING_KEYS)
TOP_KEYS = {"question", "description", "repetitions", "timeout", "defaults", "per_scenario",
            "matrix", "include", "exclude"}  # fmt: skip
# Options that mean something to a scenario (others set by [defaults] are dropped).
# key_share: the client's first key share, a group the server does not offer, so that it
# answers with a HelloRetryRequest (TLS 1.3; the driver checks the extra round trip).
# kx: how keys are agreed (ecdhe, rsa, psk = TLS 1.3 psk_ke or a TLS 1.2 PSK suite,
# psk_dhe = psk_dhe_ke or ECDHE-PSK): the driver's --kx, and the job of a Cortex-M firmware
# point (cortexm.py).
TLS_KEYS = ("tls", "suite", "kx", "group", "key_share", "sigalg", "cert", "chain", "auth",
            "record_size", "accel", "transport", "io")  # fmt: skip
SCENARIO_KEYS = {
    "handshake": (*TLS_KEYS, *TUNING_KEYS),
    "resume": (*TLS_KEYS, *TUNING_KEYS),
    "records": (*TLS_KEYS, "payload", *TUNING_KEYS),
    "bulk": (*TLS_KEYS, "payload", "bytes", *TUNING_KEYS),
    "aead": ("aead", "payload", "accel", *TUNING_KEYS),
    # Client and server in two processes: the variant plays `role`, `peer` the other side
    # (a variant or a real program, interop.py); payload = the response's bytes.
    "interop": (
        *[k for k in TLS_KEYS if k not in ("accel", "transport", "io")],
        "payload",
        "bytes",
        "role",
        "peer",
        "resume",
        "rtt_ms",
        "loss",
        "server",
        *TUNING_KEYS,
    ),
    # A server under load (load.py): the variant is the server's library, `server` its
    # program (self = the variant's driver, or nginx), `client` the load generator (a
    # variant, self, or h2load); payload = the response's bytes.
    "load": (
        *[k for k in TLS_KEYS if k not in ("key_share", "transport", "io")],
        "payload",
        "server",
        "client",
        "pattern",
        "connections",
        "rate",
        "request_size",
        "workers",
        "duration_s",
        "heap",
        # Other hosts (remote.py): OpenSSH destinations of the server and the generators
        # (comma-separated), and the address the generators connect to.
        "server_host",
        "generator_hosts",
        "server_address",
    ),
    # What the minimal client and server programs link (codesize.py): the runner measures
    # it, no driver runs, and no option applies.
    "code-size": (),
}
INT_KEYS = {"chain", "record_size", "payload", "bytes", "iterations", "warmup"}
# Whole-number keys of load points, with their bounds (the driver's, load.RANGES).
LOAD_INT_KEYS = ("connections", "rate", "workers", "request_size", "duration_s")
# The emulated network of an interop point (netem.py): round-trip time in milliseconds and
# loss in percent of packets, each direction.
NETWORK_RANGES = {"rtt_ms": (0, 10000), "loss": (0, 50)}
# Choices fixed by the experiment format itself; names of suites, groups, signature schemes,
# AEADs, certificates and the numeric ranges come from what the driver declares.
CHOICES = {
    "tls": ("1.2", "1.3"),
    "auth": ("none", "server", "mutual"),
    "accel": ("on", "off"),
    "role": ("client", "server"),
    # What joins the two sides of a one-process point: in-memory queues or loopback TCP.
    "transport": ("memory", "tcp"),
    # Who does the I/O: tlsbench's callbacks, the library itself on the TCP socket (fd), or
    # tlsbench's callbacks reached through the library's BIO layer (bio).
    "io": ("callbacks", "fd", "bio"),
    "resume": ("on", "off"),
    # A load point's transaction pattern and server program (load.py).
    "pattern": ("new", "resume", "keepalive"),
    "server": ("self", "nginx"),
    "kx": ("ecdhe", "rsa", "psk", "psk_dhe"),
}
MAX_REPETITIONS = 1000
MAX_TIMEOUT_S = 24 * 3600


@dataclass(frozen=True)
class RunPoint:
    name: str
    variant: str  # canonical spec
    library: str
    scenario: str
    options: dict[str, Any]  # driver options (no variant, no scenario)

    @property
    def key(self) -> tuple[str, str]:
        return (self.variant, self.name)

    def driver_args(self) -> list[str]:
        """The options as driver command-line arguments (`accel` is the runner's)."""
        args: list[str] = []
        for key, value in self.options.items():
            if key != "accel":
                args += [f"--{key.replace('_', '-')}", str(value)]
        return args


@dataclass
class Experiment:
    name: str
    path: Path
    text: str
    question: str
    repetitions: int
    timeout: float
    points: list[RunPoint] = field(default_factory=list)


def _fragment(key: str, value: Any) -> str:
    if key == "suite":
        return str(value).removeprefix("TLS_").replace("_WITH_", "_").lower()
    if key == "chain":
        return f"chain{value}"
    if key == "key_share":
        return f"hrr-from-{value}"
    if key == "record_size":
        return f"rs{value}"
    if key == "payload":
        return f"{value}B"
    if key == "bytes":
        return f"{value}bytes"
    if key == "accel":
        return f"accel-{value}"
    if key == "role":
        return f"as-{value}"
    if key == "peer":
        return f"with-{value}"
    if key == "resume":
        return f"resume-{value}"
    if key == "rtt_ms":
        return f"rtt{value}ms"
    if key == "loss":
        return f"loss{value}pct"
    if key == "server":
        return f"on-{value}"
    if key == "client":
        return f"by-{value}"
    if key == "connections":
        return f"c{value}"
    if key == "request_size":
        return f"req{value}B"
    if key == "rate":
        return f"{value}tps"
    if key == "workers":
        return f"w{value}"
    if key == "server_host":
        return f"server-on-{value}"
    if key == "generator_hosts":
        return "generators-on-" + "+".join(v.strip() for v in str(value).split(","))
    if key == "server_address":
        return f"via-{value}"
    return str(value).lower() if key == "aead" else str(value)


def point_name(scenario: str, options: dict[str, Any]) -> str:
    parts = [scenario] + [_fragment(k, options[k]) for k in OPTION_ORDER if k in options]
    return "_".join(parts)


def _line_of(text: str, pattern: str) -> int | None:
    for number, line in enumerate(text.splitlines(), start=1):
        if re.search(pattern, line):
            return number
    return None


def find(name_or_path: str) -> Path:
    candidate = Path(name_or_path)
    if candidate.suffix == ".toml" or "/" in name_or_path:
        if not candidate.exists():
            raise UserError(f"no experiment file {candidate}")
        if not candidate.is_file():
            raise UserError(f"{candidate} is not a file: give an experiment's .toml file")
        return candidate
    path = EXPERIMENTS_DIR / f"{name_or_path}.toml"
    if not path.exists():
        known = sorted(p.stem for p in EXPERIMENTS_DIR.glob("*.toml"))
        close = difflib.get_close_matches(name_or_path, known, n=3, cutoff=0.5)
        hint = f" Did you mean {', '.join(close)}?" if close else ""
        raise UserError(f"unknown experiment {name_or_path!r}.{hint} Known: {', '.join(known)}")
    return path


def _describe(value: Any) -> str:
    kind = {bool: "a boolean", int: "a number", float: "a number", str: "a string",
            list: "a list", dict: "a table"}.get(type(value), type(value).__name__)  # fmt: skip
    return f"{value!r} ({kind})"


class _Loader:
    def __init__(self, path: Path, catalog: Catalog, variants: list[str] | None = None) -> None:
        self.path = path
        self.catalog = catalog
        self.text = read_user_file(path)
        self.declared = declared()
        # `tlsbench ab`: every point of the experiment for each of these variants instead.
        self.variants = variants

    def error(self, message: str, pattern: str | None = None) -> UserError:
        line = _line_of(self.text, pattern) if pattern else None
        where = f"{self.path}:{line}" if line else str(self.path)
        return UserError(f"{where}: {message}")

    def check_keys(self, table: dict[str, Any], allowed: tuple[str, ...] | set[str],
                   what: str) -> None:  # fmt: skip
        for key in table:
            if key not in allowed:
                close = difflib.get_close_matches(key, list(allowed), n=2, cutoff=0.6)
                hint = f" Did you mean {', '.join(close)}?" if close else ""
                raise self.error(
                    f"unknown {what} key {key!r}.{hint} Allowed: {', '.join(sorted(allowed))}",
                    rf"^\s*{re.escape(key)}\s*=",
                )

    def value_error(self, key: str, value: Any, allowed: str) -> UserError:
        """An error naming the line, the key, the bad value and what is allowed."""
        shown = f'"{value}"' if isinstance(value, str) else str(value).lower()
        line = _line_of(self.text, rf"^\s*{re.escape(key)}\s*=.*{re.escape(shown)}")
        line = line or _line_of(self.text, re.escape(shown))
        line = line or _line_of(self.text, rf"^\s*{re.escape(key)}\s*=")
        where = f"{self.path}:{line}" if line else str(self.path)
        return UserError(f"{where}: {key} = {_describe(value)} is not allowed: {allowed}")

    def check_value(self, key: str, value: Any) -> Any:
        if key in LOAD_INT_KEYS:
            from tlsbench.load import RANGES

            low, high = RANGES[key]
            if not isinstance(value, int) or isinstance(value, bool) or not low <= value <= high:
                raise self.value_error(key, value, f"a whole number, {low}..{high}")
            return value
        if key == "heap":
            if not isinstance(value, bool):
                raise self.value_error(key, value, "true or false")
            return value
        if key in ("server_host", "generator_hosts", "server_address"):  # remote.py
            if not isinstance(value, str) or not value.strip():
                raise self.value_error(key, value, "a string: OpenSSH destinations")
            return value
        if key == "client":  # a variant, self or a program: checked with the point
            if not isinstance(value, str):
                raise self.value_error(key, value, "a variant, self, or h2load")
            return value
        if key in NETWORK_RANGES:
            low, high = NETWORK_RANGES[key]
            if not isinstance(value, (int, float)) or isinstance(value, bool) \
                    or not low <= value <= high:  # fmt: skip
                raise self.value_error(key, value, f"a number, {low}..{high}")
            return value
        if key in INT_KEYS:
            bounds = self.declared.ranges[key]
            if not isinstance(value, int) or isinstance(value, bool):
                raise self.value_error(key, value, f"a whole number, {bounds.min}..{bounds.max}")
            if not bounds.min <= value <= bounds.max:
                raise self.value_error(key, value, f"{bounds.min}..{bounds.max}")
            return value
        choices = CHOICES.get(key) or self.declared.choices(key)
        if key == "scenario" and choices is not None:
            # interop runs the driver's `peer` scenario in two processes.
            driver_side = {"interop": "peer", "load": "serve"}
            choices = tuple(c for c in SCENARIOS
                            if c == "code-size" or driver_side.get(c, c) in choices)  # fmt: skip
        if not isinstance(value, str):
            raise self.value_error(key, value, "a string" + (
                f", one of {_short(choices)}" if choices else ""))  # fmt: skip
        if choices is not None and value not in choices:
            close = difflib.get_close_matches(value, choices, n=3, cutoff=0.6)
            hint = f"did you mean {', '.join(close)}? " if close else ""
            raise self.value_error(key, value, f"{hint}known: {_short(choices)}")
        return value

    def check_number(self, data: dict[str, Any], key: str, default: Any, low: float,
                     high: float, whole: bool) -> Any:  # fmt: skip
        value = data.get(key, default)
        kinds = (int,) if whole else (int, float)
        if not isinstance(value, kinds) or isinstance(value, bool) or not low <= value <= high:
            what = "a whole number" if whole else "a number of seconds"
            raise self.value_error(key, value, f"{what}, {low:g}..{high:g}")
        return value

    def check_table(self, value: Any, key: str, array: bool = False) -> None:
        ok = (isinstance(value, list) and all(isinstance(v, dict) for v in value)) if array \
            else isinstance(value, dict)  # fmt: skip
        if not ok:
            shape = f"[[{key}]] blocks (tables)" if array else f"a [{key}] table"
            raise self.error(f"{key} must be {shape}, not {_describe(value)}",
                             rf"^\s*\[*{re.escape(key)}")  # fmt: skip

    def load(self) -> Experiment:
        try:
            data = tomllib.loads(self.text)
        except tomllib.TOMLDecodeError as exc:
            found = re.search(r"at line (\d+)", str(exc))
            where = f"{self.path}:{found.group(1)}" if found else str(self.path)
            raise UserError(f"{where}: malformed TOML: {exc}") from exc
        self.check_keys(data, TOP_KEYS, "experiment")
        question = data.get("question")
        if not isinstance(question, str) or not question.strip():
            raise self.error('an experiment opens with `question = "..."`: what it answers')
        repetitions = self.check_number(data, "repetitions", 5, 1, MAX_REPETITIONS, True)
        timeout = self.check_number(data, "timeout", 300, 1, MAX_TIMEOUT_S, False)
        defaults = data.get("defaults", {})
        self.check_table(defaults, "defaults")
        per_scenario = data.get("per_scenario", {})
        self.check_table(per_scenario, "per_scenario")
        for name, table in per_scenario.items():
            self.check_table(table, f"per_scenario.{name}")
        for key in ("include", "exclude"):
            self.check_table(data.get(key, []), key, array=True)
        # One [matrix] table, or several [[matrix]] blocks expanded one after another.
        matrices = data.get("matrix", [])
        if not isinstance(matrices, dict):
            self.check_table(matrices, "matrix", array=True)
        matrices = [matrices] if isinstance(matrices, dict) else matrices
        self.check_keys(defaults, POINT_KEYS, "defaults")
        for matrix in matrices:
            self.check_keys(matrix, POINT_KEYS, "matrix")
            for key, values in matrix.items():
                if not isinstance(values, list) or not values:
                    raise self.error(f"matrix {key} must be a non-empty list",
                                     rf"^\s*{key}\s*=")  # fmt: skip
        for entry in [*data.get("include", []), *data.get("exclude", [])]:
            self.check_keys(entry, POINT_KEYS, "include/exclude")
        self.check_keys(per_scenario, SCENARIOS, "per_scenario")
        for table in per_scenario.values():
            self.check_keys(table, POINT_KEYS, "per_scenario")
        # A point's own values (matrix or include) over its scenario's options over
        # [defaults]; exclusions look at the merged point.
        own: list[dict[str, Any]] = []
        for matrix in matrices:
            keys = list(matrix)
            own += [dict(zip(keys, combo, strict=True))
                    for combo in itertools.product(*(matrix[k] for k in keys))]  # fmt: skip
        excludes = data.get("exclude", [])
        raw = [self.merge(defaults, per_scenario, p) for p in own]
        raw = [p for p in raw if not any(_matches(p, ex) for ex in excludes)]
        raw += [self.merge(defaults, per_scenario, inc) for inc in data.get("include", [])]
        if self.variants is not None:
            raw = self.for_variants(raw, self.variants)
        points = []
        seen: dict[tuple[str, str], RunPoint] = {}
        for entry in raw:
            point = self.point(entry)
            if point.key in seen and self.variants is not None:
                continue  # the experiment's variants differed only there
            if point.key in seen:
                if (negotiates_no_key_exchange(point.options)
                        and ("group" in entry or "sigalg" in entry)) or (
                        authenticates_by_psk(point.options)
                        and any(k in entry for k in CERTIFICATE_KEYS)):  # fmt: skip
                    continue  # the same point once its group / sigalg / cert were dropped
                raise self.error(f"two points are the same: {point.name} on {point.variant}")
            seen[point.key] = point
            points.append(point)
        if not points:
            raise self.error("the matrix expands to no point")
        return Experiment(
            name=self.path.stem,
            path=self.path,
            text=self.text,
            question=question.strip(),
            repetitions=repetitions,
            timeout=float(timeout),
            points=points,
        )

    def for_variants(self, raw: list[dict[str, Any]], variants: list[str]) -> list[dict[str, Any]]:
        """Each point once per given variant (in place of the experiment's own), but the
        code-size points of a library that has no code-size programs."""
        from tlsbench import codesize

        libraries = {v: self.catalog.resolve(v).library for v in variants}
        return [
            {**entry, "variant": variant}
            for entry in raw
            for variant in variants
            if entry.get("scenario") != "code-size" or codesize.supported(libraries[variant])
        ]

    @staticmethod
    def merge(
        defaults: dict[str, Any], per_scenario: dict[str, Any], own: dict[str, Any]
    ) -> dict[str, Any]:
        scenario = own.get("scenario", defaults.get("scenario", ""))
        # A scenario of the wrong type is reported by check_value, after the merge.
        scenario_options = per_scenario.get(scenario, {}) if isinstance(scenario, str) else {}
        return {**defaults, **scenario_options, **own}

    def point(self, raw: dict[str, Any]) -> RunPoint:
        if "variant" not in raw:
            raise self.error("a point has no variant (set it in [matrix] or [defaults])")
        if "scenario" not in raw:
            raise self.error("a point has no scenario (set it in [matrix] or [defaults])")
        values = {k: self.check_value(k, v) for k, v in raw.items() if k != "variant"}
        if not isinstance(raw["variant"], str):
            raise self.value_error("variant", raw["variant"], "a variant name (tlsbench list "
                                   "variants)")  # fmt: skip
        try:
            variant = self.catalog.resolve(raw["variant"], self.path.parent)
        except UserError as exc:  # unknown line or feature: say where it is asked for
            raise self.value_error("variant", raw["variant"], str(exc)) from None
        scenario = values["scenario"]
        if scenario == "code-size":
            from tlsbench import codesize

            if not codesize.supported(variant.library):
                allowed = (
                    'with scenario = "code-size", a variant of mbedtls or wolfssl (the '
                    "libraries with a minimal client and server program)"
                )
                raise self.value_error("variant", raw["variant"], allowed)
        self.check_combination(scenario, values)
        self.check_firmware(scenario, values, variant)
        relevant = SCENARIO_KEYS[scenario]
        options = {k: values[k] for k in (*OPTION_ORDER, *TUNING_KEYS)
                   if k in values and k in relevant}  # fmt: skip
        if scenario == "interop":
            options["peer"] = self.interop_peer(options, values, variant.name)
            if options.get("server") == "nginx":
                self.check_two_programs(options, variant)
        if scenario == "load":
            self.check_load(options, values, variant)
        if negotiates_no_key_exchange(options):
            # Static RSA or PSK alone: no group is negotiated and nothing is signed, so neither
            # belongs in the point's name or stored options.
            options.pop("group", None)
            options.pop("sigalg", None)
        if authenticates_by_psk(options):
            # The key authenticates both sides: no certificate is sent or verified.
            for key in CERTIFICATE_KEYS:
                options.pop(key, None)
        return RunPoint(
            name=point_name(scenario, options),
            variant=variant.name,
            library=variant.library,
            scenario=scenario,
            options=options,
        )

    def interop_peer(self, options: dict[str, Any], values: dict[str, Any], variant: str) -> str:
        """The other side of an interop point: a variant (canonical name; `self` = the
        point's own) or a real program that plays the role the point's variant does not."""
        from tlsbench import interop

        peer = values.get("peer")
        role = str(values.get("role", "client"))
        wanted = interop.SERVER_PROGRAMS if role == "client" else interop.CLIENT_PROGRAMS
        allowed = f"a variant, self, or a real {'server' if role == 'client' else 'client'}: " + \
            ", ".join(wanted)  # fmt: skip
        if not isinstance(peer, str):
            raise self.value_error("peer", peer, allowed)
        if peer == "self":
            return variant
        if interop.is_program(peer):
            if peer not in wanted:
                raise self.value_error("peer", peer, f"with role = {role!r}, {allowed}")
            return peer
        try:
            return self.catalog.resolve(peer, self.path.parent).name
        except UserError as exc:
            raise self.value_error("peer", peer, f"{allowed} ({exc})") from None

    def check_two_programs(self, options: dict[str, Any], variant: Any) -> None:
        """An interop point served by nginx to a real client: no tlsbench side at all."""
        from tlsbench import interop, load

        if options.get("role") != "server":
            raise self.value_error(
                "server",
                "nginx",
                'with role = "server" and a real client '
                "as peer (nginx serves; the variant names its library)",
            )
        if not interop.is_program(str(options["peer"])):
            raise self.value_error(
                "peer",
                options["peer"],
                'with server = "nginx", a real client: ' + ", ".join(interop.CLIENT_PROGRAMS),
            )
        if variant.line.name != load.NGINX_LINE:
            raise self.value_error(
                "variant",
                variant.name,
                f'with server = "nginx", {load.NGINX_LINE} (nginx links the machine\'s OpenSSL)',
            )

    def check_load(self, options: dict[str, Any], values: dict[str, Any], variant: Any) -> None:
        """A load point's generator (canonical variant name, or h2load) and what no run of it
        could honour (load.refusal), before anything runs."""
        from tlsbench import load

        client = values.get("client")
        allowed = "a variant, self, or " + ", ".join(load.GENERATOR_PROGRAMS)
        if client is None:
            raise self.error("a load point has no client (the load generator: " + allowed + ")")
        if client == "self":
            options["client"] = variant.name
        elif client not in load.GENERATOR_PROGRAMS:
            try:
                options["client"] = self.catalog.resolve(client, self.path.parent).name
            except UserError as exc:
                raise self.value_error("client", client, f"{allowed} ({exc})") from None
        from tlsbench import remote

        if remote.uses_hosts(options) and (why := remote.refusal(options)):
            key = next(k for k in remote.HOST_KEYS if k in options)
            raise self.value_error(key, options[key], why)
        refused = load.refusal(options, variant.line.name)
        if refused is not None:
            key, why = refused
            raise self.value_error(key, options.get(key, values.get(key, variant.name)), why)

    def check_combination(self, scenario: str, values: dict[str, Any]) -> None:
        """What no library could honour, whatever it supports: a typo in spirit."""
        if values.get("io") == "fd" and values.get("transport") != "tcp" \
                and scenario in TLS_SCENARIO_NAMES:  # fmt: skip
            raise self.value_error("io", "fd", 'with transport = "tcp" only (the library '
                                   "needs a socket of its own)")  # fmt: skip
        self.check_key_share(scenario, values)
        self.check_kx(scenario, values)
        suite = values.get("suite")
        if suite is not None and scenario in (*TLS_SCENARIO_NAMES, "load"):
            tls = values.get("tls", "1.3")
            if self.declared.suites[suite] != tls:
                raise self.value_error(
                    "suite", suite, f"a TLS {tls} suite ({suite} is a TLS "
                    f"{self.declared.suites[suite]} suite)")  # fmt: skip
        if scenario == "records" and "payload" in values:
            limit = values.get("record_size") or self.declared.ranges["record_size"].max
            if values["payload"] > limit:
                raise self.value_error(
                    "payload",
                    values["payload"],
                    f"at most the record size ({limit}): records measures one record per "
                    "write; bulk measures larger writes",
                )

    def check_kx(self, scenario: str, values: dict[str, Any]) -> None:
        """The key exchange against the version, the suite and resumption, as the driver
        checks them (drivers/core/cmdline.c), before anything runs."""
        tls = values.get("tls", "1.3")
        suite = str(values.get("suite", ""))
        if tls == "1.2" and suite.startswith("TLS_RSA_PSK_"):
            why = "a PSK_WITH, ECDHE_PSK or DHE_PSK suite: RSA-PSK (a certificate and a key at "
            raise self.value_error("suite", suite, why + "once) is not run")
        kx = values.get("kx")
        if kx is None:
            return
        named = suite_kx(suite) if tls == "1.2" and suite else None
        if named is not None and kx != named:
            raise self.value_error("kx", kx, f'"{named}" with suite {suite} (the suite names '
                                   "its key exchange), or another suite")  # fmt: skip
        if kx == "rsa" and tls == "1.3":
            raise self.value_error("kx", kx, 'with tls = "1.2" only (TLS 1.3 has no RSA key '
                                   "exchange)")  # fmt: skip
        resumes = (scenario == "resume" or (scenario == "interop" and values.get("resume") == "on")
                   or (scenario == "load" and values.get("pattern") == "resume"))  # fmt: skip
        if kx in PSK_KX and tls == "1.3" and resumes:
            raise self.value_error("kx", kx, "without TLS 1.3 resumption: a TLS 1.3 resumption "
                                   "is itself a pre-shared key handshake, and the client would "
                                   "offer the ticket and the external key at once; resume TLS "
                                   "1.3 with kx = \"ecdhe\", or a TLS 1.2 PSK suite")  # fmt: skip
        if kx == "psk" and values.get("key_share") is not None:
            raise self.value_error("kx", kx, '"psk_dhe" with key_share (the key alone sends '
                                   "no key share)")  # fmt: skip

    def check_firmware(self, scenario: str, values: dict[str, Any], variant: Any) -> None:
        """A Cortex-M firmware point's job, said wrong before anything runs (cortexm.make_job:
        a suite and kx that disagree, a certificate the suite cannot use)."""
        from tlsbench import arches, cortexm

        if not arches.arch(variant.arch).firmware:
            return
        if scenario != "handshake" or "suite" not in values:
            return  # the point is unsupported there, with the reason (cortexm.run_point)
        try:
            cortexm.job_of(values)
        except UserError as exc:
            raise self.value_error(
                "suite", values["suite"], f"a job the firmware can run: {exc}"
            ) from None

    def check_key_share(self, scenario: str, values: dict[str, Any]) -> None:
        key_share = values.get("key_share")
        if key_share is None:
            return
        why = None
        if values.get("tls", "1.3") != "1.3":
            why = 'with tls = "1.3" only (a HelloRetryRequest is TLS 1.3\'s)'
        elif key_share == values.get("group", "x25519"):
            why = "a group other than `group` (the server offers `group` alone, and must ask " \
                "the client for it)"  # fmt: skip
        elif values.get("io") == "fd":
            why = 'with io = "callbacks" only (the extra round trip is counted on the wire)'
        elif scenario == "interop" and values.get("role", "client") != "client":
            why = 'with role = "client" only: it is the tlsbench client\'s first key share'
        if why is not None:
            raise self.value_error("key_share", key_share, why)


TLS_SCENARIO_NAMES = ("handshake", "resume", "records", "bulk")


def check_capabilities(points: list[RunPoint], infos: dict[str, dict[str, Any]]) -> None:
    """Refuses, before anything runs, the points a variant's driver declares it can never
    run: a TLS scenario (an interop peer included) on a build whose `info` declares no TLS
    version, i.e. an AEAD-only library. `infos` maps a variant to its driver's `info`
    object; what one library merely lacks (a suite, a group) stays its "unsupported" at
    run time."""
    refused: dict[str, list[str]] = {}
    for point in points:
        if point.scenario not in (*TLS_SCENARIO_NAMES, "interop", "load"):
            continue
        sides = [point.variant]
        if point.scenario == "interop":
            sides.append(str(point.options.get("peer", "")))
        if point.scenario == "load":
            sides.append(str(point.options.get("client", "")))
        for variant in sides:
            info = infos.get(variant)
            if info is not None and not info.get("versions"):
                refused.setdefault(variant, []).append(point.name)
    if refused:
        lines = []
        for variant, names in refused.items():
            reason = infos[variant].get("no_tls") or "its driver declares no TLS version"
            shown = ", ".join(names[:4]) + (f" ... ({len(names)} in all)" if len(names) > 4
                                             else "")  # fmt: skip
            lines.append(f"  {variant}: {reason}; asked for {shown}")
        raise UserError(
            "these variants cannot run TLS scenarios (handshake, resume, records, bulk, "
            "interop):\n" + "\n".join(lines) + "\nUse them in aead points only: remove them "
            "from those points or add an [[exclude]]."
        )


# The key exchanges keyed by the pre-shared key, and what no point of them has.
PSK_KX = ("psk", "psk_dhe")
CERTIFICATE_KEYS = ("cert", "chain", "sigalg", "auth")


def suite_kx(suite: str) -> str:
    """The key exchange a TLS 1.2 suite names (as the driver reads it)."""
    if suite.startswith("TLS_PSK_WITH_"):
        return "psk"
    if suite.startswith(("TLS_ECDHE_PSK_", "TLS_DHE_PSK_")):
        return "psk_dhe"
    return "rsa" if suite.startswith("TLS_RSA_WITH_") else "ecdhe"


def point_kx(options: dict[str, Any]) -> str:
    """The key exchange a point runs: its kx, else its TLS 1.2 suite's, else ecdhe."""
    suite = str(options.get("suite") or "")
    if "kx" in options:
        return str(options["kx"])
    return suite_kx(suite) if options.get("tls") == "1.2" and suite else "ecdhe"


def negotiates_no_key_exchange(options: dict[str, Any]) -> bool:
    """TLS 1.2 static-RSA and PSK suites, TLS 1.3 psk_ke: no group, no signature."""
    suite = str(options.get("suite", ""))
    return options.get("kx") == "psk" or (
        options.get("tls") == "1.2" and suite.startswith(("TLS_RSA_WITH_", "TLS_PSK_WITH_"))
    )


def authenticates_by_psk(options: dict[str, Any]) -> bool:
    """PSK key exchanges (kx psk or psk_dhe, TLS 1.2 PSK, ECDHE-PSK and DHE-PSK suites): no
    certificate."""
    suite = str(options.get("suite", ""))
    return options.get("kx") in PSK_KX or (
        options.get("tls") == "1.2"
        and suite.startswith(("TLS_PSK_WITH_", "TLS_ECDHE_PSK_", "TLS_DHE_PSK_"))
    )


def _short(choices: tuple[str, ...] | None, limit: int = 12) -> str:
    if not choices:
        return ""
    shown = ", ".join(choices[:limit])
    return shown + (f" ... ({len(choices)} in all)" if len(choices) > limit else "")


def _matches(point: dict[str, Any], pattern: dict[str, Any]) -> bool:
    return all(point.get(k) == v for k, v in pattern.items())


def load(
    name_or_path: str, catalog: Catalog | None = None, variants: list[str] | None = None
) -> Experiment:
    """The experiment's points; with `variants` (canonical names), its points once for each
    of them in place of the variants it names (what `tlsbench ab` runs)."""
    return _Loader(find(name_or_path), catalog or Catalog(), variants).load()


def _fields(p: RunPoint) -> dict[str, str]:
    return {"variant": p.variant, "library": p.library, "scenario": p.scenario, "name": p.name,
            **{k: str(v) for k, v in p.options.items()}}  # fmt: skip


def only(points: list[RunPoint], filters: list[str]) -> list[RunPoint]:
    """--only KEY=VALUE filters (all must match; variant matches its canonical name)."""
    parsed = []
    for f in filters:
        key, sep, value = f.partition("=")
        if not sep or key not in (*POINT_KEYS, "library", "name"):
            raise UserError(
                f"--only takes KEY=VALUE with KEY among {', '.join((*POINT_KEYS, 'library'))}"
            )
        parsed.append((key, value))

    kept = [p for p in points if all(_fields(p).get(k) == v for k, v in parsed)]
    if not kept:
        # Say what the experiment has for each key asked about (what --only could match).
        present = []
        for key in dict.fromkeys(k for k, _ in parsed if k != "name"):
            values = sorted({_fields(p)[key] for p in points if key in _fields(p)})
            present.append(f"{key}: {', '.join(values) if values else '(no point sets it)'}")
        raise UserError(
            f"--only {' '.join(filters)} leaves no point of the experiment"
            + (f"; it has {'; '.join(present)}" if present else "")
        )
    return kept
