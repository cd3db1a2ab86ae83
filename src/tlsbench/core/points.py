"""A run's points and the TLS vocabulary they are written in: what a point asks (its
variant, scenario and driver options) and what its options mean (the key exchange a suite
names, which points negotiate no key exchange, which authenticate by PSK). Used by the
experiment loader, the scenario families, the driver's processes and the real programs."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


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
        """The options as driver command-line arguments (`accel` and `allocator` are the
        runner's: an environment). A boolean key is one of the driver's flags: present when
        true, absent when false."""
        args: list[str] = []
        for key, value in self.options.items():
            option = f"--{key.replace('_', '-')}"
            if key in ("accel", "allocator") or value is False:
                continue
            args += [option] if value is True else [option, str(value)]
        return args


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
