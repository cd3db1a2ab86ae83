"""What the driver accepts, as it declares it: the one source of valid names and ranges.

`tlsbench-driver info --json` prints a "declared" object (drivers/core/names.c and the
TB_*_MIN/MAX ranges of core.h): the scenarios, the IANA cipher suites (with the TLS
version each belongs to), groups, signature schemes, AEADs, certificate kinds and the
ranges of the numeric options. The tables live in the driver core, not per library, so
the null variant's driver (the harness baseline, quick to build) answers for all.

Experiments are validated against this before anything runs: a name that is not here is a
typo (exit 2); a name that is here but that one library lacks is that library's
"unsupported" at run time.
"""

from __future__ import annotations

import functools
import json
import subprocess
from dataclasses import dataclass

from tlsbench.errors import UserError


@dataclass(frozen=True)
class Range:
    min: int
    max: int


@dataclass(frozen=True)
class Declared:
    scenarios: tuple[str, ...]
    suites: dict[str, str]  # IANA name -> "1.2" or "1.3"
    groups: tuple[str, ...]
    sigalgs: tuple[str, ...]
    aeads: tuple[str, ...]
    certs: tuple[str, ...]
    ranges: dict[str, Range]  # option (chain, record_size, payload, ...) -> allowed range

    @classmethod
    def from_json(cls, data: dict) -> Declared:
        return cls(
            scenarios=tuple(data["scenarios"]),
            suites={s["name"]: s["tls"] for s in data["suites"]},
            groups=tuple(data["groups"]),
            sigalgs=tuple(data["sigalgs"]),
            aeads=tuple(data["aeads"]),
            certs=tuple(data["certs"]),
            ranges={k: Range(int(v["min"]), int(v["max"])) for k, v in data["ranges"].items()},
        )

    def choices(self, key: str) -> tuple[str, ...] | None:
        """The allowed names of an option that takes a name, else None."""
        return {
            "scenario": self.scenarios,
            "suite": tuple(self.suites),
            "group": self.groups,
            "key_share": self.groups,
            "sigalg": self.sigalgs,
            "aead": self.aeads,
            "cert": self.certs,
        }.get(key)


@functools.cache
def declared() -> Declared:
    """The declaration of the null variant's driver (built on first use, then cached)."""
    from tlsbench.build import Builder
    from tlsbench.variants import Catalog

    build = Builder(quiet=True).build(Catalog().resolve("null"))
    program = build.program("tlsbench-driver")
    proc = subprocess.run(
        [str(program), "info", "--json"], capture_output=True, text=True, check=False
    )
    try:
        return Declared.from_json(json.loads(proc.stdout)["declared"])
    except (json.JSONDecodeError, KeyError, TypeError, ValueError) as exc:
        raise UserError(
            f"{program} info --json gave no declaration of what it accepts ({exc}); "
            f"its stderr: {proc.stderr.strip()[-300:]}",
            1,
        ) from exc
