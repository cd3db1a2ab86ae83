"""Candidates of `tlsbench fit` with figures chosen for a test (no build, no run)."""

from __future__ import annotations

from tlsbench.builds import firmware
from tlsbench.embedded import fit, measured, qemu


def made_up(
    line: str, record: int, heap: int, text: int, instructions: int | None = None
) -> fit.Outcome:
    """A candidate with figures chosen for the test (no build, no run)."""
    job = fit.job_for("1.3", "psk", "ecdsa-p256", None, record)
    count = heap * 10 if instructions is None else instructions
    side = {"heap_peak": heap, "heap_live": 0, "stack_high_water": 1000,
            "handshake_instructions": count}  # fmt: skip
    result = {"client": side, "server": side,
              "global": {"heap_peak": 0, "heap_live": 0, "stack_high_water": 0}}  # fmt: skip
    sizes = {role: qemu.Sizes(text=text, data=100, bss=200, certs=0) for role in firmware.SIDES}
    one = measured.Measured(f"{line}:cortex-m4", "cortex-m4", job, result, sizes,
                                {"client": 50, "server": 50})  # fmt: skip
    candidate = fit.Candidate(f"{line}:cortex-m4", line.split("-")[0], line, "default", record,
                              job)  # fmt: skip
    return fit.Outcome(candidate, one)
