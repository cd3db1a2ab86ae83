"""Facts of the machine a measurement runs on: CPU model, flags, frequency policy,
virtualisation, and what of them could skew a figure. A leaf module: the runner stores them
with every run, CPU profiles read the flags, and `tlsbench doctor` prints them."""

from __future__ import annotations

import platform
import shutil
import subprocess
from pathlib import Path
from typing import Any

CRYPTO_FLAGS = ["aes", "pclmulqdq", "avx2", "avx512f", "vaes", "sha_ni"]


def _read(path: str) -> str | None:
    try:
        return Path(path).read_text().strip()
    except OSError:
        return None


def cpu_flags() -> list[str]:
    """The CPU feature flags the kernel reports (empty where /proc/cpuinfo has none)."""
    cpuinfo = _read("/proc/cpuinfo") or ""
    line = next((ln for ln in cpuinfo.splitlines() if ln.startswith("flags")), "")
    return line.split(":", 1)[1].split() if line else []


def cpu_facts() -> dict[str, Any]:
    cpuinfo = _read("/proc/cpuinfo") or ""
    model = next(
        (ln.split(":", 1)[1].strip() for ln in cpuinfo.splitlines() if ln.startswith("model name")),
        platform.processor() or "unknown",
    )
    flags = set(cpu_flags())
    virt = None
    if shutil.which("systemd-detect-virt"):
        out = subprocess.run(["systemd-detect-virt"], capture_output=True, text=True, check=False)
        virt = out.stdout.strip() or None
    if virt is None and "hypervisor" in flags:
        virt = "yes (hypervisor flag)"
    governor = _read("/sys/devices/system/cpu/cpu0/cpufreq/scaling_governor")
    no_turbo = _read("/sys/devices/system/cpu/intel_pstate/no_turbo")
    boost = _read("/sys/devices/system/cpu/cpufreq/boost")
    turbo = None
    if no_turbo is not None:
        turbo = no_turbo == "0"
    elif boost is not None:
        turbo = boost == "1"
    return {
        "model": model,
        "cores": len([ln for ln in cpuinfo.splitlines() if ln.startswith("processor")]),
        "crypto_flags": {f: f in flags for f in CRYPTO_FLAGS},
        "invariant_tsc": "constant_tsc" in flags and "nonstop_tsc" in flags,
        "governor": governor,
        "turbo": turbo,
        "virtualization": virt if virt not in ("none", None) else None,
        "aslr": _read("/proc/sys/kernel/randomize_va_space"),
        "kernel": platform.release(),
    }


def measurement_warnings(cpu: dict[str, Any]) -> list[str]:
    """What could skew a measurement on this machine (also stored with every run)."""
    warnings = []
    if not cpu["invariant_tsc"]:
        warnings.append("TSC not invariant: cycle figures drift with frequency")
    if cpu["governor"] not in (None, "performance"):
        warnings.append(f"frequency governor is {cpu['governor']!r}, not 'performance'")
    if cpu["turbo"]:
        warnings.append("turbo boost is on: clock rate varies with load and temperature")
    if cpu["virtualization"]:
        warnings.append(
            f"virtual machine ({cpu['virtualization']}): steal time and shared caches add noise"
        )
    if cpu["governor"] is None:
        warnings.append("frequency governor and turbo are not readable here")
    return warnings
