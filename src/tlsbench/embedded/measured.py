"""A firmware job's measured figures, cached per build and job: the fit and the reports read
every figure from one QEMU run per job and build.
"""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tlsbench.builds.firmware import SIDES, TIMEOUT_SECONDS, Job, core_of, credential_bytes
from tlsbench.core.errors import UserError
from tlsbench.embedded import cycles
from tlsbench.embedded.parts import Setting
from tlsbench.embedded.points import job_of
from tlsbench.embedded.qemu import Sizes, Unsupported, image_of, measure, role_sizes

# ---------------------------------------------------------------------------- cached runs


@dataclass
class Measured:
    """One job on one build, every figure the fit and the reports need, per role."""

    variant: str
    core: str
    job: Job
    result: dict[str, Any] = field(repr=False)
    sizes: dict[str, Sizes] = field(repr=False)
    credentials: dict[str, int] = field(repr=False)  # DER bytes the role carries for the job

    def ram(self, role: str) -> dict[str, int]:
        """RAM a device playing `role` needs: heap peak (with what the library's global
        set-up keeps), stack high-water, .data and .bss of its one-role image."""
        side, world = self.result[role], self.result["global"]
        heap = max(world["heap_peak"], world["heap_live"] + side["heap_peak"])
        stack = max(world["stack_high_water"], side["stack_high_water"])
        size = self.sizes[role]
        parts = {"heap": heap, "stack": stack, "data": size.data, "bss": size.bss}
        return {**parts, "total": sum(parts.values())}

    def flash(self, role: str) -> dict[str, int]:
        """Flash of its one-role image: .text and .data, and the job's own credentials."""
        size = self.sizes[role]
        parts = {"text": size.text, "data": size.data, "credentials": self.credentials[role]}
        return {**parts, "total": sum(parts.values())}

    def instructions(self, role: str) -> int:
        return int(self.result[role]["handshake_instructions"])

    def ms(self, role: str, mhz: float | None = None) -> tuple[float, float]:
        """The handshake's milliseconds: the cycle model's (the fewest and the most, equal
        where no operand-dependent instruction ran) where the run was modelled, else the core's
        CPI range at `mhz` (default: the core's reference part's clock)."""
        projected = self.result[role].get("projected_ms")
        if "model" in self.result[role] and projected:
            return float(projected[0]), float(projected[1])
        return core_of(self.core).ms(self.instructions(role), mhz)

    @property
    def projection(self) -> dict[str, Any]:
        """What the milliseconds rest on (qemu.projection / qemu.model_projection)."""
        return dict(self.result.get("projection", {}))

    @classmethod
    def from_output(cls, variant: str, output: dict[str, Any]) -> Measured:
        """The figures of a stored experiment point (point_output)."""
        result = output["firmware"]
        return cls(
            variant, result["core"], job_of(output["params"]), result,
            {role: Sizes(**output["sizes"][role]) for role in SIDES},
            {role: int(output["credentials"][role]) for role in SIDES},
        )  # fmt: skip


def setting_key(setting: Setting | None) -> str:
    """What a modelled result depends on besides the build and the job: the part's row, the
    clock and wait states, and the model's source."""
    if setting is None:
        return ""
    text = repr((setting.part, setting.mhz, setting.wait_states, setting.listed))
    digest = hashlib.sha256(text.encode() + cycles.PLUGIN_SOURCE.read_bytes()).hexdigest()
    return digest[:16]


def measured(build: Any, job: Job, timeout: float = TIMEOUT_SECONDS,
             setting: Setting | None = None) -> Measured:  # fmt: skip
    """A job's figures on a build: run twice (the counts must agree; the first run under the
    cycle model of `setting` where one is given) the first time, then read back from beside
    the image (the drivers folder is keyed by everything that went into the image, so a cached
    result belongs to exactly this build; a modelled one is kept per part, clock and model).
    Raises Unsupported or UserError as `run` does; a failed handshake is remembered too, so
    that it is not run again."""
    core = core_of(build.variant.arch)
    key = setting_key(setting)
    name = f"{job.key()}.{key}.json" if key else f"{job.key()}.json"
    cache = Path(build.drivers_folder) / "results" / name
    result: dict[str, Any] | None = None
    if cache.exists():
        try:
            result = dict(json.loads(cache.read_text()))
        except (OSError, json.JSONDecodeError):
            result = None
    if result is None:
        try:
            result = measure(image_of(build), core, job, runs=2, setting=setting)
        except Unsupported as exc:
            result = {"unsupported": str(exc)}
        except UserError as exc:
            if "did not finish within" in str(exc):
                raise  # the machine's speed, not the job's: never remembered
            result = {"failed": str(exc)}
        cache.parent.mkdir(parents=True, exist_ok=True)
        temporary = cache.with_name(f".{cache.name}.{os.getpid()}")
        temporary.write_text(json.dumps(result, indent=1) + "\n")
        temporary.replace(cache)
    if "unsupported" in result:
        raise Unsupported(result["unsupported"])
    if "failed" in result:
        raise UserError(result["failed"], exit_code=1)
    sizes = {role: role_sizes(build, role) for role in SIDES}
    credentials = {role: credential_bytes(job, role) for role in SIDES}
    return Measured(build.variant.name, core.arch, job, result, sizes, credentials)
