"""Oracle for the aead scenario: the system OpenSSL variant's AEAD throughput against
`openssl speed` (the same library, measured by OpenSSL's own tool) on this machine.

Both are run in turn, ROUNDS times per configuration; each round gives one ratio (paired,
so that the machine's drift, tens of percent between seconds on a shared virtual machine,
cancels) and the median ratio is reported with the range of the rounds. Compared where the two do
the same work: AES-GCM at every size (`openssl speed -aead` runs the TLS-like sequence:
nonce, AD, encrypt, tag, as the driver does), ChaCha20-Poly1305 at 16384 bytes only (for
it `openssl speed` 3.0 ignores -aead and times bare updates, which at small sizes leaves
out the per-record set-up and the tag).

With CPU acceleration switched off by the runner's mask (accel = "off"), both are measured
again at 16384 bytes: the driver and `openssl speed` must agree there too, which shows the
mask reaches the library the same way.

Usage: .venv/bin/python bench/aead_vs_openssl_speed.py [ROUNDS]
"""

from __future__ import annotations

import json
import os
import re
import statistics
import subprocess
import sys

from tlsbench.builds.build import Builder
from tlsbench.builds.recipes.openssl import OPENSSL_ACCEL_OFF_MASK
from tlsbench.builds.variants import Catalog
from tlsbench.driver.drive import driver_command

CONFIGS = [("AES-128-GCM", "aes-128-gcm", size) for size in (16, 256, 1350, 16384)]
CONFIGS += [("AES-256-GCM", "aes-256-gcm", size) for size in (16, 256, 1350, 16384)]
CONFIGS += [("ChaCha20-Poly1305", "chacha20-poly1305", 16384)]
# (AEAD, openssl speed name, bytes, accel off?)
RUNS = [(*c, False) for c in CONFIGS] + [
    ("AES-128-GCM", "aes-128-gcm", 16384, True),
    ("ChaCha20-Poly1305", "chacha20-poly1305", 16384, True),
]


def openssl_speed(cipher: str, size: int, env: dict[str, str]) -> float:
    """MB/s (10^6 bytes) that `openssl speed -aead -evp` reports for one block size."""
    out = subprocess.run(
        ["openssl", "speed", "-seconds", "1", "-bytes", str(size), "-aead", "-evp", cipher],
        capture_output=True, text=True, check=True, env={**os.environ, **env},
    ).stdout  # fmt: skip
    # The result line ends with the rate in 1000s of bytes per second, e.g. "123456.78k".
    rate = re.findall(r"([\d.]+)k\s*$", out, flags=re.M)[-1]
    return float(rate) * 1000 / 1e6


def driver_speed(command: list[str], name: str, size: int, env: dict[str, str]) -> float:
    # About 0.1 s of work, so that one sample spans more than a scheduler slice.
    iterations = max(3000, min(200_000, 400_000_000 // (size * 30)))
    args = ["--aead", name, "--payload", str(size), "--iterations", str(iterations), "--json"]
    out = subprocess.run(
        command + args, capture_output=True, text=True, check=True, env={**os.environ, **env}
    ).stdout
    row = json.loads(out)["aead"][0]
    # The mean, not the median: `openssl speed` divides all bytes by all the time.
    return size / (row["mean_tsc_cycles"] / json.loads(out)["tsc_hz"]) / 1e6


def main() -> int:
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 5
    build = Builder(quiet=True).build(Catalog().resolve("openssl-system"))
    command = driver_command(build, "aead", [])
    print("| AEAD | bytes | accel | tlsbench MB/s | openssl speed MB/s | ratio (median of "
          "rounds) | ratio range |")  # fmt: skip
    print("| --- | ---: | --- | ---: | ---: | ---: | --- |")
    for name, cipher, size, off in RUNS:
        env = {"OPENSSL_ia32cap": OPENSSL_ACCEL_OFF_MASK} if off else {}
        ours, theirs = [], []
        for _ in range(rounds):
            ours.append(driver_speed(command, name, size, env))
            theirs.append(openssl_speed(cipher, size, env))
        ratios = sorted(a / b for a, b in zip(ours, theirs, strict=True))
        print(f"| {name} | {size} | {'off' if off else 'on'} | {statistics.median(ours):.0f} | "
              f"{statistics.median(theirs):.0f} | {statistics.median(ratios):.2f} | "
              f"{ratios[0]:.2f} - {ratios[-1]:.2f} |", flush=True)  # fmt: skip
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
