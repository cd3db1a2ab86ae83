"""Helpers to run a variant's driver from the tests."""

from __future__ import annotations

import json
import os
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tlsbench.builds.build import Build
from tlsbench.core import paths
from tlsbench.core.store import Store
from tlsbench.driver.drive import driver_command

# The variants of every TLS library line, pinned and system (the null baseline apart).
TLS_LIBRARIES = [
    "mbedtls-3.6.6",
    "mbedtls-2.28.x",
    "wolfssl-5.7.2",
    "openssl-3.5.x",
    "openssl-system",
    "openssl-1.1.1w",
    "gnutls-3.8.x",
    "gnutls-system",
    "aws-lc-5.12.0",
    "boringssl-5.4.0",
    "rustls-ffi-0.15.7",
    "bearssl-0.6",
    "s2n-tls-1.7.6",
    "nss-3.110",
    "botan-3.x",
]
# Lines without TLS 1.3 (mbedTLS 2.28's is an incomplete prototype; BearSSL has none).
TLS12_ONLY = ("mbedtls-2.28.x", "bearssl-0.6")


def newest_tls(spec: str) -> str:
    """The newest TLS version a line runs."""
    return "1.2" if spec in TLS12_ONLY else "1.3"


# One pinned variant per library.
PINNED = ["mbedtls-3.6.6", "wolfssl-5.7.2", "openssl-3.5.x", "gnutls-3.8.x"]


# rustls-ffi has no API to choose groups or signature schemes (drivers/adapters/rustls.c):
# its runs ask for what a rustls signer and key share produce, i.e. rsa_pss_rsae_sha512 with
# an RSA key and x25519 (the core's TLS 1.2 ECDSA default is the certificate's curve).
HELD_OFFER = {"rustls-": {"rsa": "rsa_pss_rsae_sha512", "group": "x25519"}}


def offer_args(spec: str, cert: str = "rsa2048", tls: str = "1.3") -> list[str]:
    """Driver arguments that ask a library for the offer it can be held to ([] = defaults)."""
    held = next((v for k, v in HELD_OFFER.items() if spec.startswith(k)), None)
    if held is None:
        return []
    args = ["--sigalg", held["rsa"]] if cert.startswith("rsa") else []
    return [*args, "--group", held["group"]] if tls == "1.2" else args


def held_sigalg(spec: str, cert: str, default: str) -> str:
    """The signature scheme a run of `spec` with `cert` asks for (see offer_args)."""
    held = next((v for k, v in HELD_OFFER.items() if spec.startswith(k)), None)
    return held["rsa"] if held is not None and cert.startswith("rsa") else default


@dataclass
class DriverRun:
    code: int
    output: dict[str, Any] | None
    stderr: str


def run_driver(
    build: Build,
    scenario: str,
    *args: str,
    timeout: float = 300,
    env: dict[str, str] | None = None,
    measure: str = "time",
) -> DriverRun:
    proc = subprocess.run(
        [*driver_command(build, scenario, [*args, "--json"], measure)],
        capture_output=True, text=True, timeout=timeout, check=False,
        env={**os.environ, **(env or {})},
    )  # fmt: skip
    output = json.loads(proc.stdout) if proc.stdout.strip() else None
    return DriverRun(proc.returncode, output, proc.stderr)


def tlsbench(
    *args: str,
    cwd: Path | None = None,
    cache: Path | None = None,
    timeout: float = 1200,
    **kwargs: Any,
) -> subprocess.CompletedProcess[str]:
    """The repository's ./tlsbench as a user runs it (from `cwd`; with its build cache at
    `cache`), its output kept, bounded in time. The one copy every test file uses."""
    if cache is not None:
        kwargs["env"] = {**kwargs.get("env", os.environ), "TLSBENCH_CACHE": str(cache)}
    return subprocess.run([str(paths.REPO / "tlsbench"), *args], capture_output=True,
                          text=True, check=False, timeout=timeout, cwd=cwd,
                          **kwargs)  # fmt: skip


def run_experiment(tmp_path: Path, text: str) -> tuple[subprocess.CompletedProcess, Store]:
    """`tlsbench run` of an experiment written from `text`, into a new store in tmp_path."""
    experiment = tmp_path / "interop.toml"
    experiment.write_text(text)
    db = tmp_path / "r.db"
    proc = tlsbench("run", str(experiment), "--db", str(db))
    return proc, Store(db)
