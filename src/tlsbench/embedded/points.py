"""A firmware experiment's points: their keys, what a core or library cannot run, and the
result a point stores.
"""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

from tlsbench.builds.firmware import SIDES, Job, core_of, credential_bytes, make_job
from tlsbench.core.errors import UserError
from tlsbench.embedded import parts
from tlsbench.embedded.qemu import (
    Sizes,
    Unsupported,
    describe_projection,
    image_of,
    role_sizes,
    run,
)

# ---------------------------------------------------------------------------- experiment points

# Options a firmware point can set (experiments.py) besides the variant and scenario.
POINT_KEYS = ("tls", "suite", "kx", "group", "cert", "chain", "auth", "record_size")


def unsupported_reason(scenario: str, options: dict[str, Any]) -> str | None:
    """Why an experiment point cannot run on the firmware image, or None."""
    if scenario != "handshake":
        return f"the Cortex-M firmware image runs handshakes only, not {scenario}"
    if "suite" not in options:
        return "the Cortex-M firmware image needs a suite"
    if str(options.get("auth", "server")) != "server":
        return f"the Cortex-M firmware image runs auth = server only (asked: {options['auth']})"
    for key in options:
        if key not in (*POINT_KEYS, "iterations", "warmup"):
            return f"the Cortex-M firmware image has no {key} option"
    return None


def job_of(options: dict[str, Any]) -> Job:
    """The job of an experiment point (its suite in the experiment's IANA spelling)."""
    chain = options.get("chain")
    record = options.get("record_size")
    return make_job(
        str(options["suite"]),
        tls=str(options["tls"]) if "tls" in options else None,
        kx=str(options["kx"]) if "kx" in options else None,
        group=str(options["group"]) if "group" in options else None,
        cert=str(options["cert"]) if "cert" in options else None,
        chain=int(chain) if chain is not None else None,
        record=int(record) if record is not None else None,
    )


def run_point(
    scenario: str, options: dict[str, Any], build: Any, timeout: float
) -> tuple[str, dict[str, Any], str]:
    """One repetition of an experiment point on a firmware build: (status, output, message)
    with status ok, unsupported (the point or the build cannot do the job) or failed."""
    reason = unsupported_reason(scenario, options)
    try:
        job = job_of(options) if reason is None else None
    except UserError as exc:
        reason = str(exc)
    if reason is not None or job is None:
        message = reason or "no job"
        return "unsupported", {"error": {"message": message}}, message
    try:
        core = core_of(build.variant.arch)
        # Under the cycle model of the core's default part (none for a core without a model)
        setting = parts.setting(None, core=core.arch)
        result = run(image_of(build), job, timeout=timeout, core=core, setting=setting)
        sizes = {role: role_sizes(build, role) for role in SIDES}
    except Unsupported as exc:
        return "unsupported", {"error": {"message": str(exc)}}, str(exc)
    except UserError as exc:
        return "failed", {"error": {"message": str(exc)}}, str(exc)
    return "ok", point_output(result, options, sizes, job), ""


def point_output(result: dict[str, Any], options: dict[str, Any], sizes: dict[str, Sizes],
                 job: Job) -> dict[str, Any]:  # fmt: skip
    """One firmware run as a stored result: an instruction series per side, heap figures in
    the drivers' shape (a side's heap starts empty: only its own calls are charged), what
    was negotiated, and the one-role images' sizes."""
    samples: dict[str, list[float]] = {}
    summary: dict[str, dict[str, str]] = {}
    heap: dict[str, dict[str, Any]] = {}
    for side in SIDES:
        f = result[side]
        samples[f"{side}_instructions"] = [f["handshake_instructions"]]
        summary[f"{side}_instructions"] = {"unit": "instructions"}
        heap[side] = {
            "start": 0, "peak": f["heap_peak"], "retained": f["heap_live"],
            "peak_minus_start": f["heap_peak"], "retained_minus_start": f["heap_live"],
            "conn_peak": f["heap_peak"], "conn_retained": f["heap_live"],
            "handshake_allocs": f["allocations"], "stack": f["stack_high_water"],
        }  # fmt: skip
    core = core_of(result["core"])
    projection = result.get("projection", {})
    setting = (parts.setting(projection["part"], core=core.arch, clock=projection["clock_mhz"],
                             wait_states=projection["wait_states"])
               if projection.get("kind") == "model" else None)  # fmt: skip
    return {
        "params": options,
        "negotiated": {
            "version": job.tls,
            "suite": job.suite.replace("-", "_"),
            "group": result["wire"]["group"],
            "kx": job.kx,
        },
        "library_version": result["library_version"],
        "samples": samples,
        "summary": summary,
        "heap": heap,
        "measure": {
            "time": None,
            "instructions": f"qemu-system-arm -M {core.machine} -icount shift=0 (virtual clock)",
            "projection": describe_projection(core, setting=setting),
            "heap": "firmware image (wrapped malloc per side)",
            "time_not_measured": "the image runs under system emulation: instructions are "
            "counted and projected to a clock, not timed",
        },
        "firmware": result,
        "sizes": {role: asdict(s) for role, s in sizes.items()},
        "credentials": {role: credential_bytes(job, role) for role in SIDES},
    }
