"""Scenarios: what the driver declares (driver/declaration.py) and the families that run them, one
module each (base.py says what a family says). This file is the registry: one line per
family; nothing else names a scenario (the runner, the experiments and the report ask
here).
"""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING

from tlsbench.driver.declaration import Declared, OptionDecl, ScenarioDecl, declared
from tlsbench.reportkit.section import Section
from tlsbench.scenarios import (
    aead,
    by_function,
    code_size,
    connections,
    firmware,
    interop,
    load,
    releases,
    scaling,
    tls,
)
from tlsbench.scenarios.base import COMMON_KEYS, TUNING_KEYS, Family, Key
from tlsbench.scenarios.modes import instructions_section

if TYPE_CHECKING:
    from tlsbench.builds.variants import Variant

__all__ = ["Declared", "OptionDecl", "ScenarioDecl", "declared", "families"]


@functools.cache
def families() -> tuple[Family, ...]:
    """Every family, in the order experiments list their scenarios."""
    return (
        tls.FAMILY,  # handshake, resume, records, bulk: both sides in one process
        scaling.FAMILY,  # handshakes in T threads or T processes at once
        aead.FAMILY,  # the library's own AEAD
        interop.FAMILY,  # client and server in two processes, real programs as peers
        code_size.FAMILY,  # what a minimal client and server link
        load.FAMILY,  # a server under a load generator
        connections.FAMILY,  # memory per open connection, N held open in one process
        releases.FAMILY,  # a library's releases side by side, each against the one before
        firmware.FAMILY,  # Cortex-M firmware images under QEMU (claims their variants)
    )


def scenario_names() -> tuple[str, ...]:
    """The scenarios an experiment can name, in family order."""
    return tuple(name for family in families() for name in family.scenarios)


def by_scenario(scenario: str) -> Family:
    """The family that owns an experiment scenario (KeyError for another name)."""
    for family in families():
        if scenario in family.scenarios:
            return family
    raise KeyError(scenario)


def family_for(scenario: str, variant: Variant) -> Family:
    """The family that runs a point: its scenario's, unless that family runs in the
    driver's own process and another family claims the variant (firmware images)."""
    family = by_scenario(scenario)
    if family.claimable:
        for other in families():
            if other.claims(variant):
                return other
    return family


@functools.cache
def experiment_keys() -> dict[str, Key]:
    """Every experiment key by name: the COMMON ones, then each family's, then the tuning
    ones, in the order point names show them (a key two families share is one Key)."""
    found: dict[str, Key] = {}
    named = [*COMMON_KEYS, *(k for f in families() for k in f.keys if k.part is not None)]
    tuning = [*TUNING_KEYS, *(k for f in families() for k in f.keys if k.part is None)]
    for key in (*named, *tuning):
        if found.setdefault(key.name, key) is not key:
            raise ValueError(f"two families declare the experiment key {key.name} differently")
    return found


def named_keys() -> tuple[str, ...]:
    """The keys that make a point's name, in name order."""
    return tuple(name for name, key in experiment_keys().items() if key.part is not None)


def sections() -> tuple[Section, ...]:
    """Every family's report sections, and the instruction counts and costs by function any
    point may have, in report order."""
    every = [s for f in families() for s in f.sections] + [instructions_section(families()),
                                                            by_function.SECTION]  # fmt: skip
    return tuple(sorted(every, key=lambda s: s.rank))
