"""The driver core, on the null adapter (no library) and its C unit tests."""

from __future__ import annotations

import os
import subprocess

import pytest

from drivers import run_driver

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def null(build_of):
    return build_of("null")


def test_heap_counters_c_unit_test(null) -> None:
    proc = subprocess.run(
        [str(null.program("tlsbench-test-heap"))], capture_output=True, text=True, check=False
    )
    assert proc.returncode == 0, proc.stderr
    assert "all checks passed" in proc.stdout


def test_null_handshake_output_has_every_section(null) -> None:
    run = run_driver(null, "handshake", "--iterations", "20", "--auth", "mutual", measure="heap")
    assert run.code == 0, run.stderr
    out = run.output
    assert out is not None
    assert out["schema"] == 1 and out["library"] == "null" and out["variant"] == "null"
    assert out["params"]["auth"] == "mutual" and out["params"]["tls"] == "1.3"
    assert out["negotiated"]["suite"] == "TLS_AES_128_GCM_SHA256"
    for side in ("client", "server"):
        heap = out["heap"][side]
        assert heap["peak"] >= heap["retained"] >= heap["ctx"] >= heap["start"]
        assert heap["conn_peak"] == heap["peak"] - heap["ctx"]
    for series in ("client_cpu_ns", "server_cpu_ns", "wall_ns"):
        assert len(out["samples"][series]) == 20
        summary = out["summary"][series]
        assert summary["min"] <= summary["median"] <= summary["p99"] <= summary["max"]
    assert "null adapter: no TLS, the harness baseline" in out["warnings"]


def test_records_are_checked_and_timed(null) -> None:
    args = ["--iterations", "500", "--warmup", "10", "--payload", "300"]
    run = run_driver(null, "records", *args, measure="heap")
    assert run.code == 0, run.stderr
    assert run.output is not None and run.output["measure"] == "heap"
    assert len(run.output["samples"]["write_ns"]) == 500
    assert run.output["summary"]["write_allocs"]["max"] == 0
    # The timing driver has no accounting in the allocation path, so no heap figure at all.
    timed = run_driver(null, "records", *args)
    assert timed.code == 0, timed.stderr
    assert timed.output is not None and timed.output["measure"] == "time"
    assert timed.output["heap"] is None
    assert set(timed.output["samples"]) == {"write_ns", "read_ns", "write_batch_ns",
                                            "read_batch_ns"}  # fmt: skip
    # Then batches of 64 records (300 bytes each: 64 fit 64 KiB), timed as one region each.
    assert len(timed.output["samples"]["write_batch_ns"]) == 500 // 64
    # Single TSC intervals move in the TSC's step, a batch's mean in 1/64 of it; a series
    # not timed by TSC intervals declares no step (compare's threshold depends on it).
    step, summary = timed.output["tsc_step_ns"], timed.output["summary"]
    assert step > 0
    assert summary["write_ns"]["resolution_ns"] == pytest.approx(step)
    assert summary["read_ns"]["resolution_ns"] == pytest.approx(step)
    assert summary["read_batch_ns"]["resolution_ns"] == pytest.approx(step / 64)
    handshake = run_driver(null, "handshake", "--iterations", "5")
    assert handshake.output is not None
    assert "resolution_ns" not in handshake.output["summary"]["client_cpu_ns"]


def test_a_negotiated_mismatch_is_an_error_without_samples(null) -> None:
    env = {**os.environ, "TLSBENCH_NULL_NEGOTIATE_SUITE": "TLS_AES_256_GCM_SHA384"}
    proc = subprocess.run(
        [str(null.program("tlsbench-driver")), "handshake", "--json", "--cert-dir",
         os.path.dirname(str(null.program("x"))), "--auth", "none"],
        capture_output=True, text=True, env=env, check=False,
    )  # fmt: skip
    # --cert-dir points at a folder without certificates: a usage error first.
    assert proc.returncode == 2
    from tlsbench.builds import certs

    proc = subprocess.run(
        [str(null.program("tlsbench-driver")), "handshake", "--json", "--cert-dir",
         str(certs.cert_dir("rsa2048").parent)],
        capture_output=True, text=True, env=env, check=False,
    )  # fmt: skip
    assert proc.returncode == 4, proc.stderr
    assert "suite 'TLS_AES_256_GCM_SHA384'" in proc.stderr
    import json

    out = json.loads(proc.stdout)
    assert "samples" not in out and out["error"]["stage"] == "negotiated parameters"


@pytest.mark.parametrize(
    "args, message",
    [
        (["handshake", "--tls", "1.1"], "--tls must be 1.2 or 1.3"),
        (["handshake", "--auth", "none", "--wrong-ca"], "--wrong-ca needs --auth"),
        (["handshake", "--iterations", "0"], "--iterations takes a whole number from 1 to"),
        (["handshake", "--iterations", "999999999999"], "--iterations takes a whole number"),
        (["handshake", "--chain", "9"], "--chain takes a whole number from 1 to 3, not '9'"),
        (["records", "--record-size", "7"], "--record-size takes a whole number from 64"),
        (["handshake", "--cert", "rsa999"], "unknown --cert 'rsa999'; known: rsa1024"),
        (["handshake", "--suite", "TLS_FOO"], "unknown --suite 'TLS_FOO'"),
        (["handshake", "--group", "x22519"], "unknown --group 'x22519'; known: x25519"),
        (["handshake", "--sigalg", "rsa_sha256"], "unknown --sigalg 'rsa_sha256'"),
        (["records", "--payload", "2000", "--record-size", "1024"], "does not fit one record"),
        (["dance"], "unknown scenario dance"),
        (["handshake", "--bogus"], "unknown or incomplete option --bogus"),
    ],
)
def test_usage_errors_exit_2(null, args: list[str], message: str) -> None:
    proc = subprocess.run(
        [str(null.program("tlsbench-driver")), *args], capture_output=True, text=True, check=False
    )
    assert proc.returncode == 2
    assert message in proc.stderr


def test_resume_unsupported_by_null_exits_3(null) -> None:
    run = run_driver(null, "resume", "--iterations", "2")
    assert run.code == 3
    assert run.output is not None and "no sessions" in run.output["error"]["message"]
