"""The scenario protocol: what a scenario family says, and the experiment keys they share.

A family (one module of this package each) owns one or more of an experiment's scenarios
and says everything about them that is not the driver's own declaration:

- the experiment keys its points take (`keys`, beyond the COMMON ones) and how each is
  checked and named (a Key), the combinations it refuses (`check`), what a point resolves
  before it runs (`settle`: a peer's canonical name);
- how a point runs (`run`, which the runner calls), which other builds a point needs
  (`peer_variants`, `extra_builds`) and how its build is described;
- its part of the report (`sections`: the rows a loader reads from a run, their views,
  plots, dashboard metrics and the columns a per-library summary takes from them).

The driver's declaration (driver/declaration.py) is the source of scenario names, flags, options and
defaults: a family names the driver scenario it runs (`driver_scenario`) and asks the
declaration the rest (does it run TLS, has it heap figures, does instruction mode count its
calls, which options it takes).

A point's name is its scenario, then the name part of every key it sets in key order: the
COMMON keys, then each family's own in registry order (rustls ci-bench's composable names:
`handshake_1.3_rsa2048_mutual`, `interop_as-server_with-curl`).
"""

from __future__ import annotations

import difflib
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from tlsbench.builds import certs
from tlsbench.core.points import PSK_KX, RunPoint, suite_kx
from tlsbench.driver import allocators
from tlsbench.driver.declaration import Declared
from tlsbench.reportkit.section import Section

if TYPE_CHECKING:
    from tlsbench.builds.build import Build, Builder
    from tlsbench.builds.variants import Catalog, Variant
    from tlsbench.driver.process import Outcome


# -- keys ------------------------------------------------------------------------------------

# A key's check of a value (key name, value, the driver's declaration): None when the value
# is fine, else what is allowed (the error says the rest).
Check = Callable[[str, Any, Declared], str | None]


def _short(choices: tuple[str, ...] | None, limit: int = 12) -> str:
    if not choices:
        return ""
    shown = ", ".join(choices[:limit])
    return shown + (f" ... ({len(choices)} in all)" if len(choices) > limit else "")


def one_of(choices: tuple[str, ...] | None = None) -> Check:
    """A name among `choices`, or among what the driver declares for the key (its names of
    suites, groups..., or the choices of its option) when None."""

    def check(name: str, value: Any, declared: Declared) -> str | None:
        allowed = choices if choices is not None else declared.choices(name)
        if not isinstance(value, str):
            return "a string" + (f", one of {_short(allowed)}" if allowed else "")
        if allowed is not None and value not in allowed:
            close = difflib.get_close_matches(value, allowed, n=3, cutoff=0.6)
            hint = f"did you mean {', '.join(close)}? " if close else ""
            return f"{hint}known: {_short(allowed)}"
        return None

    return check


def declared_whole(name: str, value: Any, declared: Declared) -> str | None:
    """A whole number in the driver's declared range of the option."""
    bounds = declared.ranges[name]
    if not isinstance(value, int) or isinstance(value, bool):
        return f"a whole number, {bounds.min}..{bounds.max}"
    if not bounds.min <= value <= bounds.max:
        return f"{bounds.min}..{bounds.max}"
    return None


def whole(bounds: tuple[int, int] | None = None) -> Check:
    """A whole number in `bounds`, or in the driver's declared range of the key when None."""

    def check(name: str, value: Any, declared: Declared) -> str | None:
        if bounds is None:
            return declared_whole(name, value, declared)
        low, high = bounds
        if not isinstance(value, int) or isinstance(value, bool) or not low <= value <= high:
            return f"a whole number, {low}..{high}"
        return None

    return check


def bounded_whole(bounds: tuple[int, int] | None = None) -> Check:
    """A whole number, `bounds` or the driver's range, said as one rule ("a whole number,
    1..64") whether the value is no number or out of range."""

    def check(name: str, value: Any, declared: Declared) -> str | None:
        low, high = bounds or (declared.ranges[name].min, declared.ranges[name].max)
        if not isinstance(value, int) or isinstance(value, bool) or not low <= value <= high:
            return f"a whole number, {low}..{high}"
        return None

    return check


def number(low: float, high: float) -> Check:
    def check(name: str, value: Any, declared: Declared) -> str | None:
        if not isinstance(value, (int, float)) or isinstance(value, bool) \
                or not low <= value <= high:  # fmt: skip
            return f"a number, {low}..{high}"
        return None

    return check


def flag(name: str, value: Any, declared: Declared) -> str | None:
    return None if isinstance(value, bool) else "true or false"


def text(allowed: str, empty: bool = False) -> Check:
    """A string (`empty`: may be blank); `allowed` says what it names."""

    def check(name: str, value: Any, declared: Declared) -> str | None:
        if not isinstance(value, str) or (not empty and not value.strip()):
            return allowed
        return None

    return check


@dataclass(frozen=True)
class Key:
    """An experiment key: how a value is checked and how it reads in a point's name."""

    name: str
    check: Check
    # The key's part of a point name (None: a tuning key, which changes how long or how often
    # something is measured but not what: not in names).
    part: Callable[[Any], str] | None = str


def fmt(template: str) -> Callable[[Any], str]:
    """A name part made by a template: fmt("rs{}") names record_size 4096 `rs4096`."""
    return lambda value: template.format(value)


def _suite_part(value: Any) -> str:
    return str(value).removeprefix("TLS_").replace("_WITH_", "_").lower()


# The keys of the driver's options every TLS family shares, in name order: TLS parameters,
# then what is measured (payload, bytes, aead), then how (accel, transport, io).
COMMON_KEYS = (
    Key("tls", one_of()),
    Key("suite", one_of(), _suite_part),
    # kx: how keys are agreed (ecdhe, rsa, psk = TLS 1.3 psk_ke or a TLS 1.2 PSK suite,
    # psk_dhe = psk_dhe_ke or ECDHE-PSK): the driver's --kx, and the job of a Cortex-M
    # firmware point (embedded/points.py).
    Key("kx", one_of()),
    Key("group", one_of()),
    # key_share: the client's first key share, a group the server does not offer, so that it
    # answers with a HelloRetryRequest (TLS 1.3; the driver checks the extra round trip).
    Key("key_share", one_of(), fmt("hrr-from-{}")),
    Key("sigalg", one_of()),
    Key("cert", one_of()),
    Key("chain", whole(), fmt("chain{}")),
    Key("auth", one_of()),
    Key("record_size", whole(), fmt("rs{}")),
    Key("payload", whole(), fmt("{}B")),
    Key("bytes", whole(), fmt("{}bytes")),
    Key("aead", one_of(), lambda value: str(value).lower()),
    # CPU crypto acceleration, switched off by the runner where the library can
    # (recipes/runtime.py).
    Key("accel", one_of(("on", "off")), fmt("accel-{}")),
    # What joins the two sides of a one-process point: in-memory queues or loopback TCP;
    # who does the I/O: tlsbench's callbacks, the library itself on the TCP socket (fd), or
    # tlsbench's callbacks reached through the library's BIO layer (bio).
    Key("transport", one_of()),
    Key("io", one_of()),
)
# The server program of a two-process point: the variant's own driver (self) or nginx
# (interop: serving a real client; load: the server under load).
SERVER_KEY = Key("server", one_of(("self", "nginx")), fmt("on-{}"))
# How many connections a point holds open at once (connections) or a load generator keeps
# (load): the driver's --connections, in its range.
CONNECTIONS_KEY = Key("connections", bounded_whole(), fmt("c{}"))
# Threads at once: of a one-process handshake point (scaling) or of a server (load, the
# threaded model beside worker processes): the driver's --threads, in its range.
THREADS_KEY = Key("threads", bounded_whole(), fmt("t{}"))
# The allocator the driver's process runs on (scaling, load): glibc's malloc, or another
# preloaded (driver/allocators.py); the heap driver and instruction mode keep glibc's.
ALLOCATOR_KEY = Key("allocator", one_of(allocators.NAMES), fmt("alloc-{}"))
# Keys that tune a measurement without changing what is measured.
TUNING_KEYS = (Key("iterations", whole(), None), Key("warmup", whole(), None))
# The TLS keys of a point (a TLS scenario takes all of them).
TLS_KEYS = ("tls", "suite", "kx", "group", "key_share", "sigalg", "cert", "chain", "auth",
            "record_size", "accel", "transport", "io")  # fmt: skip


# -- running ---------------------------------------------------------------------------------


@dataclass
class RunContext:
    """What a family's run needs beyond its point: the run's builds (a peer is built on first
    use), the builder, the mode and the run's timeout."""

    builds: dict[str, Build]
    builder: Builder
    catalog: Catalog
    mode: str  # time | instructions
    timeout: float

    def build(self, spec: str) -> Build:
        if spec not in self.builds:
            self.builds[spec] = self.builder.build(self.catalog.resolve(spec))
        return self.builds[spec]


class PointChecker:
    """What a family's checks report through: the experiment loader (experiments.py), which
    knows the file and its lines, the driver's declaration and the catalog."""

    declared: Declared
    catalog: Catalog

    def value_error(self, key: str, value: Any, allowed: str) -> Exception:
        raise NotImplementedError

    def error(self, message: str, pattern: str | None = None) -> Exception:
        raise NotImplementedError

    def resolve(self, spec: str) -> Variant:
        """A variant named in the experiment (relative config files from its folder)."""
        raise NotImplementedError


def check_key_share(
    checker: PointChecker, values: dict[str, Any], why_not: str | None = None
) -> None:
    """A HelloRetryRequest asked for (key_share): TLS 1.3, a group other than the offered
    one, the callbacks' I/O; `why_not`: a family's own reason against it, if any."""
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
    else:
        why = why_not
    if why is not None:
        raise checker.value_error("key_share", key_share, why)


def check_cert_version(checker: PointChecker, values: dict[str, Any]) -> None:
    """A certificate whose leaf signs in TLS 1.3 only (ML-DSA, SLH-DSA) with TLS 1.2: no
    library could run it (the driver refuses it too)."""
    cert = values.get("cert")
    if cert is not None and values.get("tls", "1.3") == "1.2" and certs.tls13_only(str(cert)):
        raise checker.value_error("cert", cert, 'with tls = "1.3" only: its leaf signs with '
                                  f"{certs.leaf_algorithm(str(cert))}, which TLS 1.2 has no "
                                  "signature scheme for")  # fmt: skip


def check_allocator(checker: PointChecker, values: dict[str, Any], variant: Variant,
                    why_not: str | None = None) -> None:  # fmt: skip
    """An `allocator` other than glibc's: installed here, for a driver of this machine's
    code (the preloaded objects are x86-64), and nothing the family says against it."""
    name = values.get("allocator")
    if name is None:
        return
    why = allocators.refusal(str(name))
    if why is None and name != "glibc" and variant.arch != "x86_64":
        why = f"an x86-64 variant: the allocators are x86-64 objects, {variant.name} is not"
    if why is None and name != "glibc":
        why = why_not
    if why is not None:
        raise checker.value_error("allocator", name, why)


def check_kx(checker: PointChecker, values: dict[str, Any], resumes: bool = False) -> None:
    """The key exchange against the version, the suite and resumption (`resumes`: the point
    resumes sessions), as the driver checks them (drivers/core/cmdline.c), before anything
    runs; and the certificate against the version (check_cert_version)."""
    check_cert_version(checker, values)
    tls = values.get("tls", "1.3")
    suite = str(values.get("suite", ""))
    if tls == "1.2" and suite.startswith("TLS_RSA_PSK_"):
        why = "a PSK_WITH, ECDHE_PSK or DHE_PSK suite: RSA-PSK (a certificate and a key at "
        raise checker.value_error("suite", suite, why + "once) is not run")
    kx = values.get("kx")
    if kx is None:
        return
    named = suite_kx(suite) if tls == "1.2" and suite else None
    if named is not None and kx != named:
        raise checker.value_error("kx", kx, f'"{named}" with suite {suite} (the suite names '
                                  "its key exchange), or another suite")  # fmt: skip
    if kx == "rsa" and tls == "1.3":
        raise checker.value_error("kx", kx, 'with tls = "1.2" only (TLS 1.3 has no RSA key '
                                  "exchange)")  # fmt: skip
    if kx in PSK_KX and tls == "1.3" and resumes:
        raise checker.value_error("kx", kx, "without TLS 1.3 resumption: a TLS 1.3 resumption "
                                  "is itself a pre-shared key handshake, and the client would "
                                  "offer the ticket and the external key at once; resume TLS "
                                  "1.3 with kx = \"ecdhe\", or a TLS 1.2 PSK suite")  # fmt: skip
    if kx == "psk" and values.get("key_share") is not None:
        raise checker.value_error("kx", kx, '"psk_dhe" with key_share (the key alone sends '
                                  "no key share)")  # fmt: skip


def check_suite_version(checker: PointChecker, values: dict[str, Any]) -> None:
    """A suite of the point's TLS version (the driver would refuse it)."""
    suite = values.get("suite")
    if suite is None:
        return
    tls = values.get("tls", "1.3")
    if checker.declared.suites[suite] != tls:
        raise checker.value_error(
            "suite", suite, f"a TLS {tls} suite ({suite} is a TLS "
            f"{checker.declared.suites[suite]} suite)")  # fmt: skip


# -- a family --------------------------------------------------------------------------------


@dataclass
class Family:
    """A scenario family. Subclasses override what their scenarios do differently; the
    defaults are those of a scenario the driver runs in one process."""

    name: str
    scenarios: tuple[str, ...]
    keys: tuple[Key, ...] = ()
    sections: tuple[Section, ...] = field(default=())
    # Its points run in the driver's own process, so that a family that claims a variant
    # (firmware images, which have no driver) runs them instead.
    claimable: bool = False

    # -- experiments --

    def driver_scenario(self, scenario: str) -> str | None:
        """The driver scenario a point runs (its declaration applies), None for none."""
        return scenario

    def driver_scenarios(self) -> tuple[str, ...]:
        """Every driver scenario its points run."""
        names = (self.driver_scenario(s) for s in self.scenarios)
        return tuple(dict.fromkeys(n for n in names if n is not None))

    def runs_tls(self, scenario: str, declared: Declared) -> bool:
        """Whether its points run TLS: they need certificates, and a build that declares no
        TLS version cannot run them."""
        name = self.driver_scenario(scenario)
        return name is not None and name in declared.scenario_table \
            and declared.scenario(name).has("tls")  # fmt: skip

    def accepts(self, scenario: str, declared: Declared) -> tuple[str, ...]:
        """The keys that mean something to its points (others set by [defaults] are
        dropped from them)."""
        raise NotImplementedError

    def check(self, checker: PointChecker, scenario: str, values: dict[str, Any],
              variant: Variant) -> None:  # fmt: skip
        """What no library could honour, whatever it supports: a typo in spirit."""
        check_key_share(checker, values)
        check_kx(checker, values)

    def check_variant(self, checker: PointChecker, scenario: str, values: dict[str, Any],
                      variant: Variant) -> None:  # fmt: skip
        """Rules of this family that every point of an experiment passes, whatever its
        scenario (the firmware family's: what a Cortex-M variant can be asked)."""

    def settle(self, checker: PointChecker, scenario: str, options: dict[str, Any],
               values: dict[str, Any], variant: Variant) -> None:  # fmt: skip
        """What a point resolves once its options are known (a peer's canonical name)."""

    def runs_on(self, variant: Variant) -> bool:
        """Whether a variant can run its points at all (`tlsbench ab` leaves the others'
        points out; an experiment that asks for them is refused)."""
        return True

    def claims(self, variant: Variant) -> bool:
        """Whether it runs every point of this variant, whatever the scenario."""
        return False

    def available(self, scenario: str, declared: Declared) -> bool:
        """Whether this driver has what the scenario runs (its driver scenario)."""
        name = self.driver_scenario(scenario)
        return name is None or name in declared.scenarios

    # -- running --

    def peer_variants(self, point: RunPoint) -> list[str]:
        """The other variants whose drivers a point runs (an interop peer, a generator)."""
        return []

    def extra_builds(self, point: RunPoint) -> list[str]:
        """Builds a point needs besides its variants' (a pinned program's)."""
        return []

    def describe(self, point: RunPoint, builds: dict[str, Build]) -> dict[str, Any]:
        """What its point's figures come from beyond the variant's build."""
        return {}

    def waits(self, params: dict[str, Any], mode: str) -> bool:
        """Whether a point mostly waits (parallel.py), so that several run at once."""
        return False

    def run(self, point: RunPoint, ctx: RunContext) -> Outcome:
        """One repetition of one point."""
        raise NotImplementedError

    # -- the report --

    def projected_ms(self, output: dict[str, Any], side: str) -> tuple[float, float] | None:
        """A projection of an instruction count to ms, where its points store one."""
        return None
