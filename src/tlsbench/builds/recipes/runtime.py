"""What tlsbench knows of a library when it runs, as the library's recipe says it.

Each recipe module (recipes/<library>.py) may end with a run-time section, after the line
`# -- At run time`, of plain constants; build.py hashes a recipe's source up to that line
only, so that knowledge of how a library behaves at run time never rebuilds it. The names a
section may define:

- ACCEL_OFF_ENV: variables that switch the library's CPU crypto acceleration off (accel =
  "off"); ACCEL_OFF_AS: the library whose ACCEL_OFF_ENV it reads (AWS-LC reads OpenSSL's);
- ACCEL_FEATURES: where there is no run-time switch, the build features that are the
  acceleration (a build without them has none to switch off); ACCEL_OFF_NEEDS: (feature,
  reason) a build needs for accel = "off" at all;
- ACCEL_NO_SWITCH: why the library's acceleration cannot be switched off at all;
- VALGRIND_UNDECODABLE: feature -> why valgrind cannot run a build with it;
- NO_RESUME_ACROSS_WORKERS: why a server of several worker processes cannot resume one
  worker's sessions on another;
- RECORD_SIZE_PROBE: the build probe's figure that is the record buffer size when a point
  leaves it at its default (a library that sizes its buffers at build time).

Libraries with no section (null, HACL*'s libcrux tree through its recipe) know nothing
special: every field has its neutral default.
"""

from __future__ import annotations

import functools
import sys
from dataclasses import dataclass, field

from tlsbench.builds.recipes import RECIPES


@dataclass(frozen=True)
class AtRunTime:
    library: str
    accel_off_env: dict[str, str] = field(default_factory=dict)
    accel_features: frozenset[str] | None = None
    accel_off_needs: tuple[str, str] | None = None
    accel_no_switch: str | None = None
    valgrind_undecodable: dict[str, str] = field(default_factory=dict)
    no_resume_across_workers: str | None = None
    record_size_probe: str | None = None

    def accel_off(
        self, variant: str, features: tuple[str, ...]
    ) -> tuple[dict[str, str], str | None]:
        """The environment that runs this build with its acceleration off, or the reason it
        cannot run without it."""
        if self.accel_off_env:
            return dict(self.accel_off_env), None
        if self.accel_features is not None:
            if self.accel_off_needs is not None and self.accel_off_needs[0] not in features:
                return {}, self.accel_off_needs[1]
            active = set(features) & self.accel_features
            if active:
                return {}, f"{variant} is built with {', '.join(sorted(active))}"
            return {}, None  # this build has no acceleration to switch off
        if self.accel_no_switch is not None:
            return {}, self.accel_no_switch
        return {}, None

    def valgrind_refusal(self, features: tuple[str, ...]) -> str | None:
        """Why valgrind cannot run a build with these features, or None."""
        return next((self.valgrind_undecodable[f] for f in features
                     if f in self.valgrind_undecodable), None)  # fmt: skip


@functools.cache
def at_run_time(library: str) -> AtRunTime:
    """The run-time knowledge of a library (by its name: "openssl" for the machine's OpenSSL
    too, whose builds use the system recipe)."""
    recipe = RECIPES.get(library)
    if recipe is None:
        return AtRunTime(library)
    module = sys.modules[type(recipe).__module__]
    section = {name: getattr(module, name) for name in dir(module) if name.isupper()}
    like = section.get("ACCEL_OFF_AS")
    env = at_run_time(like).accel_off_env if like else section.get("ACCEL_OFF_ENV", {})
    features = section.get("ACCEL_FEATURES")
    return AtRunTime(
        library=library,
        accel_off_env=dict(env),
        accel_features=frozenset(features) if features is not None else None,
        accel_off_needs=section.get("ACCEL_OFF_NEEDS"),
        accel_no_switch=section.get("ACCEL_NO_SWITCH"),
        valgrind_undecodable=dict(section.get("VALGRIND_UNDECODABLE", {})),
        no_resume_across_workers=section.get("NO_RESUME_ACROSS_WORKERS"),
        record_size_probe=section.get("RECORD_SIZE_PROBE"),
    )
