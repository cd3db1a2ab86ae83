"""Many cores on real libraries: handshakes in threads that share contexts, every thread's
connections checked, lock counts per side, and the scaling experiment.

Rates are not asserted (the machine is shared); what each run did is: how many handshakes,
in how many threads, checked how, and the exact lock counts of one thread.
"""

from __future__ import annotations

import json

import pytest

from documented_commands import documented, how_to_run
from drivers import TLS_LIBRARIES, offer_args, run_driver, tlsbench

pytestmark = pytest.mark.slow

# Builds without their library's threading option refuse --threads above 1; the `threads`
# feature builds mbedTLS with it (mbedTLS 2.28 has no such variant here). BearSSL has no
# locks at all.
NOT_THREAD_SAFE = {
    "mbedtls-3.6.6": "MBEDTLS_THREADING_C",
    "mbedtls-2.28.x": "MBEDTLS_THREADING_C",
    "bearssl-0.6": "no locks",
}
THREADED = [spec for spec in TLS_LIBRARIES if spec not in NOT_THREAD_SAFE]
THREADED.append("mbedtls-3.6.6:threads")
# The OpenSSL-API lines side by side (the issue's question: what OpenSSL 3.0 takes more of).
OPENSSL_LINES = ["openssl-system", "openssl-3.5.x", "openssl-1.1.1w", "aws-lc-5.12.0"]
LOCK_KINDS = ("mutex", "rwlock_read", "rwlock_write", "once", "cond_wait", "cond_signal")
ITERATIONS = 12


def threaded_run(build_of, spec: str, scenario: str, *args: str):
    build = build_of(spec)
    return run_driver(build, scenario, "--iterations", str(ITERATIONS), "--warmup", "2",
                      *offer_args(spec), *args)  # fmt: skip


@pytest.mark.parametrize("spec", THREADED)
@pytest.mark.parametrize("scenario,contexts", [("handshake", "shared"),
                                               ("resume", "per-thread")])  # fmt: skip
def test_threads_run_every_handshake_checked(spec, scenario, contexts, build_of) -> None:
    run = threaded_run(build_of, spec, scenario, "--threads", "2", "--contexts", contexts)
    assert run.code == 0, run.stderr
    out = run.output
    assert out["params"]["threads"] == 2 and out["params"]["contexts"] == contexts
    # Every thread's measured handshakes are samples (each checked before it counted), a
    # rate per thread and one total; the measured phase ends when the first thread has run
    # its iterations, so the other has run at least one and at most as many.
    assert ITERATIONS < out["summary"]["client_cpu_ns"]["n"] <= 2 * ITERATIONS
    assert out["summary"]["thread_handshakes_per_s"]["n"] == 2
    assert out["summary"]["total_handshakes_per_s"]["n"] == 1
    assert out["negotiated"]["resumed"] == (scenario == "resume")


@pytest.mark.parametrize("spec", ["openssl-3.5.x", "wolfssl-5.7.2", "gnutls-3.8.x",
                                  "mbedtls-3.6.6:threads"])  # fmt: skip
def test_a_thread_that_negotiated_something_else_fails_the_point(spec, build_of) -> None:
    run = threaded_run(build_of, spec, "handshake", "--threads", "2", "--fault", "suite")
    assert run.code == 4, run.stderr
    assert run.output["error"]["stage"] == "negotiated parameters"
    assert "summary" not in run.output


@pytest.mark.parametrize("spec", sorted(NOT_THREAD_SAFE))
def test_a_build_without_threading_refuses_threads(spec, build_of) -> None:
    run = threaded_run(build_of, spec, "handshake", "--threads", "2", "--tls", "1.2")
    assert run.code == 3, run.stderr
    assert NOT_THREAD_SAFE[spec] in run.output["error"]["message"]
    # One thread shares nothing: it runs, timed as the threads are.
    one = threaded_run(build_of, spec, "handshake", "--threads", "1", "--tls", "1.2")
    assert one.code == 0, one.stderr
    assert one.output["summary"]["total_handshakes_per_s"]["n"] == 1


def lock_calls(build_of, spec: str, scenario: str = "handshake") -> dict:
    run = threaded_run(build_of, spec, scenario, "--locks")
    assert run.code == 0, run.stderr
    locks = run.output["locks"]
    assert locks["iterations"] == ITERATIONS
    return locks


@pytest.mark.parametrize("spec", THREADED)
def test_lock_counts_are_exact_on_one_thread(spec, build_of) -> None:
    first, second = lock_calls(build_of, spec), lock_calls(build_of, spec)
    assert first == second
    for side in ("client", "server"):
        assert all(first[side][k]["contended"] == 0 for k in LOCK_KINDS)


def test_lock_counts_reach_static_and_shared_builds(build_of) -> None:
    """openssl-system is Debian's shared libssl, openssl-3.5.x a static build: the driver's
    wrappers see both (a wrapper the dynamic linker missed would read 0)."""
    for spec in ("openssl-system", "openssl-3.5.x"):
        locks = lock_calls(build_of, spec)
        assert locks["client"]["rwlock_read"]["calls"] > ITERATIONS, spec


def test_openssl_3_0_takes_more_locks_than_3_5_and_3_5_more_than_aws_lc(build_of) -> None:
    def acquisitions(spec: str) -> int:
        locks = lock_calls(build_of, spec)
        return sum(locks[side][k]["calls"] for side in ("client", "server")
                   for k in ("mutex", "rwlock_read", "rwlock_write"))  # fmt: skip

    counts = {spec: acquisitions(spec) for spec in OPENSSL_LINES}
    assert counts["openssl-system"] > counts["openssl-3.5.x"] > counts["aws-lc-5.12.0"], counts


def test_drive_measure_locks_as_the_issue_writes_it(build_of) -> None:
    build_of("openssl-system")
    proc = tlsbench("drive", "openssl-system", "handshake", "--threads", "2", "--iterations",
                    "8", "--measure", "locks", "--json")  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert out["params"]["locks"] is True and out["params"]["threads"] == 2
    assert 8 < out["locks"]["iterations"] <= 16
    assert out["locks"]["server"]["rwlock_read"]["calls"] > 0


def test_scaling_experiment_reports_rates_efficiency_baseline_and_locks(tmp_path, build_of):
    build_of("openssl-3.5.x")
    db = tmp_path / "scaling.db"
    proc = tlsbench("run", "scaling", "--only", "variant=openssl-3.5.x", "--only",
                    "scenario=scaling-handshake", "--only", "cert=rsa2048", "--only", "threads=1",
                    "--repetitions", "1", "--db", str(db))  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    report = tlsbench("report", "latest", "--db", str(db), "--format", "json")
    assert report.returncode == 0, report.stderr
    rows = json.loads(report.stdout)["tables"]["scaling"]
    assert {row["model"] for row in rows} == {"shared", "per-thread", "processes"}
    for row in rows:
        assert row["threads"] == 1 and row["efficiency"] == 1.0
        assert row["total_per_s"] > 0
        assert (row["client_locks"] is None) == (row["model"] == "processes")
        # Atomic operations beside the locks: counted once for the job under callgrind (the
        # same for both thread models), more than the read locks alone take.
        assert (row["client_atomics"] is None) == (row["model"] == "processes")
    threaded = [row for row in rows if row["model"] != "processes"]
    assert len({(row["client_atomics"], row["server_atomics"]) for row in threaded}) == 1
    assert threaded[0]["client_atomics"] > threaded[0]["client_locks"] > 0
    locks = json.loads(report.stdout)["tables"]["locks_per_handshake"]
    shared = {row["side"]: row["atomics"] for row in locks if row["model"] == "shared"}
    assert shared == {side: threaded[0][f"{side}_atomics"] for side in ("client", "server")}


def test_an_adapter_s_read_back_holds_in_many_threads_with_contexts_of_their_own(build_of):
    """rustls' adapter reads the signature scheme off the wire with buffers of its own: one
    shared between threads made 2 of 3 repetitions of the scaling run fail their check. Many
    handshakes per thread give a race the chance to show again."""
    spec = "rustls-ffi-0.15.7"
    run = run_driver(build_of(spec), "handshake", "--iterations", "300", "--warmup", "0",
                     "--threads", "2", "--contexts", "per-thread", *offer_args(spec))  # fmt: skip
    assert run.code == 0, run.stderr
    assert run.output["summary"]["client_cpu_ns"]["n"] > 300


DRIVE = [doc for doc in documented() if how_to_run(doc.written)[1][0] == "drive"]


@pytest.mark.parametrize("doc", DRIVE, ids=lambda doc: doc.id)
def test_documented_drive_commands_run_as_written(doc, build_of) -> None:
    """`tlsbench drive ...` as the README and docs write it (a short run each)."""
    _, argv = how_to_run(doc.written)
    build_of(argv[1])
    proc = tlsbench(*argv)
    assert proc.returncode == 0, f"tlsbench {doc.written}: exit {proc.returncode}\n{proc.stderr}"
