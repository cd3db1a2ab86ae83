"""Oracle for the aead scenario: the system OpenSSL variant's AEAD throughput against
`openssl speed -evp` (the same library, measured by OpenSSL's own tool) on this machine.

Usage: .venv/bin/python bench/aead_vs_openssl_speed.py
"""

from __future__ import annotations

import json
import re
import subprocess

from tlsbench.build import Builder
from tlsbench.drive import driver_command
from tlsbench.variants import Catalog

CIPHERS = {"AES-128-GCM": "aes-128-gcm", "AES-256-GCM": "aes-256-gcm",
           "ChaCha20-Poly1305": "chacha20-poly1305"}  # fmt: skip
SIZES = [16, 256, 1350, 16384]


def openssl_speed(cipher: str, size: int) -> float:
    """MB/s (10^6 bytes) that `openssl speed -aead -evp` reports for one block size (with
    AD and tag, as an AEAD is used)."""
    out = subprocess.run(
        ["openssl", "speed", "-seconds", "2", "-bytes", str(size), "-aead", "-evp", cipher],
        capture_output=True, text=True, check=True,
    ).stdout  # fmt: skip
    # The result line ends with the rate in 1000s of bytes per second, e.g. "123456.78k".
    rate = re.findall(r"([\d.]+)k\s*$", out, flags=re.M)[-1]
    return float(rate) * 1000 / 1e6


def main() -> int:
    build = Builder(quiet=True).build(Catalog().resolve("openssl-system"))
    out = subprocess.run(driver_command(build, "aead", ["--iterations", "5000", "--json"]),
                         capture_output=True, text=True, check=True).stdout  # fmt: skip
    ours = {(r["aead"], r["payload"]): r["MBps"] for r in json.loads(out)["aead"]}
    print("| AEAD | bytes | tlsbench MB/s | openssl speed MB/s | ratio |")
    print("| --- | ---: | ---: | ---: | ---: |")
    for name, cipher in CIPHERS.items():
        for size in SIZES:
            theirs = openssl_speed(cipher, size)
            mine = ours[(name, size)]
            print(f"| {name} | {size} | {mine:.0f} | {theirs:.0f} | {mine / theirs:.2f} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
