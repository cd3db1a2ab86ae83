"""What the driver accepts, as it declares it: the one source of valid names and ranges.

`tlsbench-driver info --json` prints a "declared" object, written from the driver core's
own tables (drivers/core/declare.c): the scenarios, the IANA cipher suites (with the TLS
version each belongs to), groups, signature schemes, AEADs, certificate kinds, the ranges
of the numeric options, and each scenario's declaration ("scenario_table": its flags, the
options it takes beyond the common ones, its defaults and the series of samples it may
emit; drivers/core/scenarios/). The tables live in the driver core, not per library, so
the null variant's driver (the harness baseline, quick to build) answers for all.

Experiments are validated against this before anything runs: a name that is not here is a
typo (exit 2); a name that is here but that one library lacks is that library's
"unsupported" at run time.
"""

from __future__ import annotations

import contextlib
import functools
import json
import os
import subprocess
from dataclasses import dataclass

from tlsbench.builds.build import Builder
from tlsbench.builds.variants import Catalog
from tlsbench.core.errors import UserError


@dataclass(frozen=True)
class Range:
    min: int
    max: int


@dataclass(frozen=True)
class SeriesDecl:
    name: str
    unit: str
    when: str | None  # None: always; else the condition, e.g. "--role client", "heap driver"


@dataclass(frozen=True)
class OptionDecl:
    """One driver option as the driver declares it (drivers/core/options.c)."""

    name: str  # command-line name without the dashes: "record-size"
    scope: str  # all (every scenario), tls (TLS scenarios), named (those that list it)
    choices: tuple[str, ...] | None  # the names it takes, where it takes a fixed set
    default: int | str | None

    @classmethod
    def from_json(cls, data: dict) -> OptionDecl:
        choices = data.get("choices")
        return cls(data["name"], data["scope"], tuple(choices) if choices else None,
                   data.get("default"))  # fmt: skip


@dataclass(frozen=True)
class ScenarioDecl:
    """One scenario as the driver declares it (drivers/core/scenario.h)."""

    name: str
    summary: str
    # tls (takes the TLS options), one_process (both sides here), tcp (takes --transport
    # tcp), two_process (the other side is another process), heap (the heap driver has
    # figures of its own), instructions (deterministic mode counts its measured calls)
    flags: frozenset[str]
    options: tuple[str, ...]  # command-line names of the options beyond the common ones
    defaults: dict[str, int | str]  # option (command-line name) -> the scenario's default
    series: tuple[SeriesDecl, ...]

    @classmethod
    def from_json(cls, data: dict) -> ScenarioDecl:
        return cls(
            name=data["name"],
            summary=data["summary"],
            flags=frozenset(k for k, on in data["flags"].items() if on),
            options=tuple(data["options"]),
            defaults=dict(data["defaults"]),
            series=tuple(SeriesDecl(x["name"], x["unit"], x.get("when")) for x in data["series"]),
        )

    def has(self, flag: str) -> bool:
        return flag in self.flags


@dataclass(frozen=True)
class Declared:
    scenarios: tuple[str, ...]
    suites: dict[str, str]  # IANA name -> "1.2" or "1.3"
    groups: tuple[str, ...]
    sigalgs: tuple[str, ...]
    aeads: tuple[str, ...]
    certs: tuple[str, ...]
    ranges: dict[str, Range]  # option (chain, record_size, payload, ...) -> allowed range
    scenario_table: dict[str, ScenarioDecl]  # name -> declaration, in the driver's order
    options: dict[str, OptionDecl]  # command-line name -> declaration, in the driver's order

    @classmethod
    def from_json(cls, data: dict) -> Declared:
        table = [ScenarioDecl.from_json(x) for x in data["scenario_table"]]
        return cls(
            scenarios=tuple(data["scenarios"]),
            suites={s["name"]: s["tls"] for s in data["suites"]},
            groups=tuple(data["groups"]),
            sigalgs=tuple(data["sigalgs"]),
            aeads=tuple(data["aeads"]),
            certs=tuple(data["certs"]),
            ranges={k: Range(int(v["min"]), int(v["max"])) for k, v in data["ranges"].items()},
            scenario_table={x.name: x for x in table},
            options={o["name"]: OptionDecl.from_json(o) for o in data.get("options", [])},
        )

    def scenario(self, name: str) -> ScenarioDecl:
        """The declaration of one of the driver's scenarios (KeyError for another name)."""
        return self.scenario_table[name]

    def with_flag(self, flag: str) -> tuple[str, ...]:
        """The scenarios that have `flag`, in the driver's order."""
        return tuple(s.name for s in self.scenario_table.values() if s.has(flag))

    def choices(self, key: str) -> tuple[str, ...] | None:
        """The allowed names of an option that takes a name (an experiment key: `key_share`
        for --key-share), else None."""
        named = {
            "scenario": self.scenarios,
            "suite": tuple(self.suites),
            "group": self.groups,
            "key_share": self.groups,
            "sigalg": self.sigalgs,
            "aead": self.aeads,
            "cert": self.certs,
        }.get(key)
        if named is not None:
            return named
        option = self.options.get(key.replace("_", "-"))
        return option.choices if option is not None else None


@functools.cache
def declared() -> Declared:
    """The declaration of the null variant's driver (built on first use, then cached; kept
    beside the driver program, whose folder is keyed by the driver sources, so that a
    process reads it instead of running the driver again)."""
    build = Builder(quiet=True).build(Catalog().resolve("null"))
    program = build.program("tlsbench-driver")
    kept = build.drivers_folder / "declared.json"
    with contextlib.suppress(OSError, json.JSONDecodeError, KeyError, TypeError, ValueError):
        return Declared.from_json(json.loads(kept.read_text()))
    proc = subprocess.run(
        [str(program), "info", "--json"], capture_output=True, text=True, check=False
    )
    try:
        data = json.loads(proc.stdout)["declared"]
        table = Declared.from_json(data)
    except (json.JSONDecodeError, KeyError, TypeError, ValueError) as exc:
        raise UserError(
            f"{program} info --json gave no declaration of what it accepts ({exc}); "
            f"its stderr: {proc.stderr.strip()[-300:]}",
            1,
        ) from exc
    with contextlib.suppress(OSError):  # a read-only cache: asked again next time
        partial = kept.with_name(f".declared.json.{os.getpid()}")
        partial.write_text(json.dumps(data))
        partial.replace(kept)
    return table
