"""Both sides in one process: the `handshake`, `resume`, `records` and `bulk` scenarios.

The driver runs both sides of the connection over its in-memory pair (or loopback TCP) and
times each side's library calls; its heap program counts each side's heap. A point takes
every TLS key, and the options its driver scenario declares among payload and bytes. It
runs as modes.py says (time and heap in separate processes, heap only under emulation,
instructions under callgrind).

Report: the certificate section (tls_certificates.py: what a chain costs, where the points
differ in certificate or chain), the handshake section (tls_handshakes.py: heap per side,
handshake time, what went over the wire) and the records section (tls_records.py: record
latency with its CDF, bulk throughput).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from tlsbench.core.points import RunPoint
from tlsbench.driver.declaration import Declared
from tlsbench.driver.process import Outcome
from tlsbench.scenarios import base, modes
from tlsbench.scenarios.base import TLS_KEYS, Family, PointChecker, RunContext

if TYPE_CHECKING:
    from tlsbench.builds.variants import Variant
from tlsbench.scenarios import tls_certificates, tls_handshakes, tls_records


class OneProcess(Family):
    def accepts(self, scenario: str, declared: Declared) -> tuple[str, ...]:
        own = set(declared.scenario(scenario).options) & {"payload", "bytes"}
        return (*TLS_KEYS, *sorted(own), "iterations", "warmup")

    def check(self, checker: PointChecker, scenario: str, values: dict[str, Any],
              variant: Variant) -> None:  # fmt: skip
        if values.get("io") == "fd" and values.get("transport") != "tcp":
            raise checker.value_error("io", "fd", 'with transport = "tcp" only (the library '
                                      "needs a socket of its own)")  # fmt: skip
        base.check_key_share(checker, values)
        base.check_kx(checker, values, resumes=scenario == "resume")
        base.check_suite_version(checker, values)
        if scenario == "records" and "payload" in values:
            limit = values.get("record_size") or checker.declared.ranges["record_size"].max
            if values["payload"] > limit:
                raise checker.value_error(
                    "payload",
                    values["payload"],
                    f"at most the record size ({limit}): records measures one record per "
                    "write; bulk measures larger writes",
                )

    def run(self, point: RunPoint, ctx: RunContext) -> Outcome:
        build = ctx.builds[point.variant]
        if ctx.mode == "instructions":
            return modes.run_instructions(point, build, ctx.timeout)
        return modes.run_measured(point, build, ctx.timeout)


FAMILY = OneProcess(
    "tls",
    ("handshake", "resume", "records", "bulk"),
    claimable=True,
    sections=(tls_certificates.SECTION, tls_handshakes.SECTION, tls_records.SECTION),
)  # fmt: skip
