"""The newer and older releases pinned beside each library's main line (sources/pins.toml:
mbedtls-3.6.7, wolfssl-5.9.2, wolfssl-5.5.4, gnutls-3.8.13, openssl-3.6.x, openssl-3.0.x):
each builds from its pinned archive, states the release it was built from, and runs real TLS 1.3
handshakes (RSA-2048 and ECDSA P-256) and resumptions whose negotiated parameters are read
back from the library and equal what was asked; records are read back byte for byte; a
wrong CA fails the handshake.

Only the cheap builds run here, to keep `make test` within its budget: mbedtls-3.6.7 and
the two wolfSSL releases take about a minute each on a 2-core machine, gnutls-3.8.13 (with
the nettle 3.10 it builds first, the only line with a `with` pin of its own crypto) about
4.5 CPU minutes (see
bench/build_times.py and docs/results.md), an OpenSSL release several minutes, and `make
test` runs every tier. The OpenSSL lines (openssl-3.6.x, openssl-3.0.x) are checked by the
`releases` experiment (`./tlsbench run releases`, which fails a point that negotiates other
than it asked) and by `./tlsbench drive LINE handshake|resume --json`.
"""

from __future__ import annotations

import subprocess

import pytest

from drivers import run_driver
from tlsbench.builds.sources import load_pins

pytestmark = pytest.mark.slow

# The cheap new lines (see the docstring for the OpenSSL ones).
CHEAP = ["mbedtls-3.6.7", "wolfssl-5.9.2", "wolfssl-5.5.4", "gnutls-3.8.13"]
SIGALG = {"rsa2048": "rsa_pss_rsae_sha256", "ecdsa-p256": "ecdsa_secp256r1_sha256"}
JOB = ["--tls", "1.3", "--suite", "TLS_AES_128_GCM_SHA256", "--group", "x25519"]


def check_release(build_of, spec: str) -> None:
    """Every check of the module on one line."""
    build = build_of(spec)
    release = load_pins()[spec].library_version
    for cert, sigalg in SIGALG.items():
        run = run_driver(build, "handshake", *JOB, "--cert", cert, "--auth", "server",
                         "--iterations", "3", "--warmup", "1")  # fmt: skip
        assert run.code == 0, run.stderr
        assert run.output is not None
        # The driver states the library's own version string: the pinned release was built.
        assert release in run.output["version"], (release, run.output["version"])
        negotiated = run.output["negotiated"]
        assert negotiated["version"] == "1.3"
        assert negotiated["suite"] == "TLS_AES_128_GCM_SHA256"
        assert negotiated["group"] == "x25519"
        assert negotiated["sigalg"] == sigalg
        assert negotiated["peer_verified"]["client"] is True
        assert negotiated["resumed"] is False
    resumed = run_driver(build, "resume", *JOB, "--iterations", "3", "--warmup", "1")
    assert resumed.code == 0, resumed.stderr
    assert resumed.output is not None and resumed.output["negotiated"]["resumed"] is True
    # Records: the receiver checks every byte (a mismatch is an error exit).
    records = run_driver(build, "records", *JOB, "--payload", "256", "--iterations", "50",
                         "--warmup", "5")  # fmt: skip
    assert records.code == 0, records.stderr
    assert records.output is not None and len(records.output["samples"]["read_ns"]) == 50
    # The negative control: a client that trusts another CA refuses the server.
    wrong = run_driver(build, "handshake", *JOB, "--auth", "server", "--wrong-ca",
                       "--iterations", "1", "--warmup", "0")  # fmt: skip
    assert wrong.code != 0
    assert wrong.output is not None and wrong.output.get("error")


@pytest.mark.parametrize("spec", CHEAP)
def test_a_new_release_builds_handshakes_resumes_and_reads_back(build_of, spec: str) -> None:
    check_release(build_of, spec)


def test_gnutls_3_8_13_runs_on_its_pinned_nettle_not_the_machines(build_of) -> None:
    """GnuTLS 3.8.13 needs nettle 3.10 (Debian 12 has 3.8): the recipe builds the `with`
    pin and links its archives; the driver must load no shared nettle of the machine's."""
    build = build_of("gnutls-3.8.13")
    linked = build.manifest["link"]["libraries"]
    assert any(lib.endswith("/lib/libnettle.a") for lib in linked), linked
    assert not any(lib in ("-lnettle", "-lhogweed") for lib in linked), linked
    loaded = subprocess.run(["ldd", str(build.program("tlsbench-driver"))],
                            capture_output=True, text=True, check=True).stdout  # fmt: skip
    assert "libnettle" not in loaded and "libhogweed" not in loaded, loaded
