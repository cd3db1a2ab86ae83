"""Client and server in separate processes: the peer scenario of the driver, the interop
runner (real builds, real processes, real programs from Debian at the other end)."""

from __future__ import annotations

import json
import subprocess
import time
from pathlib import Path

import pytest

from drivers import PINNED, run_driver, run_experiment, tlsbench
from tlsbench.builds import certs
from tlsbench.core.errors import UserError
from tlsbench.core.store import Store
from tlsbench.driver.drive import driver_command
from tlsbench.peers import programs
from tlsbench.report import load_run
from tlsbench.run.experiments import load


def statuses(store: Store) -> dict[tuple[str, str], str]:
    run = store.run("latest")
    out = {}
    for point in store.points(run["id"]):
        results = store.results(point.id)
        out[(point.variant, str(point.params.get("peer")))] = results[0]["status"]
    return out


HEADER = """
question = "Do they talk?"
repetitions = 1
timeout = 60

[defaults]
scenario = "interop"
iterations = 2
warmup = 1
"""


def test_every_pinned_library_talks_to_every_other_in_two_processes(
    tmp_path: Path, build_of
) -> None:
    for spec in PINNED:
        build_of(spec)
    variants = json.dumps(PINNED)
    proc, store = run_experiment(
        tmp_path, HEADER + f"[[matrix]]\nvariant = {variants}\npeer = {variants}\n"
    )
    assert proc.returncode == 0, proc.stderr
    found = statuses(store)
    assert len(found) == 16 and set(found.values()) == {"ok"}, found
    model = load_run(store)
    assert len(model.interop) == 16
    for row in model.interop:
        assert row.negotiated.startswith("1.3 TLS_AES_128_GCM_SHA256 x25519"), row
        # Each side measured in its own process: CPU, heap and what it sent.
        assert row.client_cpu_ms and row.server_cpu_ms and row.client_wall_ms
        assert row.client_heap_peak and row.server_heap_peak
        assert row.client_bytes and row.server_bytes and row.round_trips == 1
    # The grid and the pairs table are in the report.
    report = tlsbench("report", "--db", str(store.path), "--format", "md")
    assert "| client \\ server |" in report.stdout and "## Interop pairs" in report.stdout


def test_real_programs_at_either_end(tmp_path: Path, build_of) -> None:
    """openssl s_server / gnutls-serv / nginx serve tlsbench clients (nginx serves the
    pattern, so the client checks every byte); openssl s_client / gnutls-cli / curl fetch
    the tlsbench server's response, whose body they must print intact."""
    for spec in ("openssl-3.5.x", "mbedtls-3.6.6"):
        build_of(spec)
    proc, store = run_experiment(
        tmp_path,
        HEADER + '[[matrix]]\nvariant = ["openssl-3.5.x"]\n'
        'peer = ["openssl-s_server", "gnutls-serv", "nginx"]\ntls = ["1.3", "1.2"]\n'
        '[[matrix]]\nvariant = ["mbedtls-3.6.6"]\nrole = ["server"]\n'
        'peer = ["openssl-s_client", "gnutls-cli", "curl"]\ntls = ["1.3", "1.2"]\n'
        'auth = ["mutual"]\n',
    )
    assert proc.returncode == 0, proc.stderr
    run = store.run("latest")
    points = store.points(run["id"])
    assert len(points) == 12
    for point in points:
        result = store.results(point.id)[0]
        assert result["status"] == "ok", (point.name, result["stderr_tail"])
        build = point.build["peer"]
        assert build["program"] in ("openssl-s_server", "gnutls-serv", "nginx",
                                    "openssl-s_client", "gnutls-cli", "curl")  # fmt: skip
        assert build["version"]
        output = json.loads(result["output"])
        # Only the tlsbench side is measured and checked; its readback is the cell's.
        side = "server" if point.params.get("role") == "server" else "client"
        assert output["heap"][side]["conn_peak"] > 0
        verified = output["negotiated"]["peer_verified"]
        assert verified[side] is True  # mutual auth, or the client verifying the server


def test_the_pinned_openssl_program_at_either_end_with_ml_kem(tmp_path: Path, build_of) -> None:
    """The pinned OpenSSL 3.5 build's own `openssl` program (s_server, s_client): the
    hybrid post-quantum group, which the machine's OpenSSL 3.0 does not have, is negotiated
    with a tlsbench client and a tlsbench server; the point traces the program to its
    build."""
    build_of("openssl-3.5.x")
    proc, store = run_experiment(
        tmp_path,
        HEADER + '[[matrix]]\nvariant = ["openssl-3.5.x"]\npeer = ["openssl-3.5.x-s_server"]\n'
        'group = ["X25519MLKEM768"]\n'
        '[[matrix]]\nvariant = ["openssl-3.5.x"]\nrole = ["server"]\n'
        'peer = ["openssl-3.5.x-s_client"]\ngroup = ["X25519MLKEM768"]\n',
    )
    assert proc.returncode == 0, proc.stderr
    run = store.run("latest")
    for point in store.points(run["id"]):
        result = store.results(point.id)[0]
        assert result["status"] == "ok", (point.name, result["stderr_tail"])
        peer = point.build["peer"]
        assert peer["version"].startswith("OpenSSL 3.5"), peer
        assert peer["build"]["name"] == "openssl-3.5.x", peer
        output = json.loads(result["output"])
        assert output["negotiated"]["group"] == "X25519MLKEM768"


def test_real_programs_are_offered_the_group_the_tlsbench_side_checks(
    tmp_path: Path, build_of
) -> None:
    """Left to GnuTLS's NORMAL groups (secp256r1 first), gnutls-cli made a rustls server,
    which cannot be held to one group, and a TLS 1.2 wolfSSL server, which takes the client's
    first curve, agree on secp256r1 while the point asked for x25519 (the driver's default).
    Every real client is now offered the point's group alone, named or by default."""
    for spec in ("rustls-ffi-0.15.7", "wolfssl-5.7.2"):
        build_of(spec)
    proc, store = run_experiment(
        tmp_path,
        HEADER + '[[matrix]]\nvariant = ["rustls-ffi-0.15.7"]\nrole = ["server"]\n'
        'peer = ["gnutls-cli", "openssl-s_client"]\nsigalg = ["rsa_pss_rsae_sha512"]\n'
        '[[matrix]]\nvariant = ["wolfssl-5.7.2"]\nrole = ["server"]\n'
        'peer = ["gnutls-cli", "openssl-s_client"]\ntls = ["1.2"]\n'
        '[[matrix]]\nvariant = ["wolfssl-5.7.2"]\nrole = ["server"]\npeer = ["gnutls-cli"]\n'
        'tls = ["1.2"]\ngroup = ["secp384r1"]\n',
    )
    assert proc.returncode == 0, proc.stderr
    rows = load_run(store).interop
    assert len(rows) == 5 and all(r.result == "ok" for r in rows), [r.detail for r in rows]
    for row in rows:
        group = "secp384r1" if "secp384r1" in row.case else "x25519"
        assert f" {group} " in f"{row.negotiated} ", row


@pytest.mark.parametrize(
    ("options", "groups", "signs"),
    [
        ({}, ["X25519"], None),
        ({"tls": "1.2", "cert": "ecdsa-p256"}, ["SECP256R1"], None),
        ({"group": "ffdhe2048", "tls": "1.2"}, ["FFDHE2048"], None),
        ({"sigalg": "rsa_pss_rsae_sha512"}, ["X25519"], ["SIGN-RSA-PSS-RSAE-SHA512"]),
        ({"sigalg": "ecdsa_secp256r1_sha256", "cert": "ecdsa-p256"}, ["X25519"],
         ["SIGN-ECDSA-SECP256R1-SHA256"]),
        ({"sigalg": "ecdsa_secp256r1_sha256", "tls": "1.2", "cert": "ecdsa-p256"},
         ["SECP256R1"], ["SIGN-ECDSA-SHA256"]),
    ],
)  # fmt: skip
def test_gnutls_programs_accept_the_priority_that_pins_the_point(
    options: dict[str, str], groups: list[str], signs: list[str] | None
) -> None:
    """The priority string given to gnutls-cli / gnutls-serv is one the machine's GnuTLS
    takes, and it enables the point's group (and signature scheme) alone."""
    priority = programs.gnutls_priority(options)
    assert priority is not None
    listed = subprocess.run(["gnutls-cli", "--priority", priority, "--list"],
                            capture_output=True, text=True, check=False, timeout=30)  # fmt: skip
    assert listed.returncode == 0, (priority, listed.stderr)
    lines = {line.split(":", 1)[0]: line.split(":", 1)[1].replace(",", " ").split()
             for line in listed.stdout.splitlines() if ":" in line}  # fmt: skip
    assert lines["Groups"] == [f"GROUP-{g}" for g in groups], priority
    if signs is not None:
        assert lines["PK-signatures"] == signs, priority
    assert programs.gnutls_priority({"group": "X25519MLKEM768"}) is None  # GnuTLS 3.7 has none


def test_a_rustls_client_reads_a_response_that_ends_with_close_notify(
    tmp_path: Path, build_of
) -> None:
    """openssl s_server -www and gnutls-serv --http send no Content-Length: a client reads
    until the server's close_notify. rustls reports that alert as a read of no bytes, which
    the adapter once took for "nothing yet", reading on into the TCP close ("EOF without
    close_notify")."""
    build_of("rustls-ffi-0.15.7")
    proc, store = run_experiment(
        tmp_path,
        HEADER + '[[matrix]]\nvariant = ["rustls-ffi-0.15.7"]\n'
        'peer = ["openssl-s_server", "gnutls-serv"]\nsigalg = ["rsa_pss_rsae_sha512"]\n',
    )
    assert proc.returncode == 0, proc.stderr
    assert set(statuses(store).values()) == {"ok"}, statuses(store)


def test_a_hello_retry_costs_one_round_trip_with_real_servers(tmp_path: Path, build_of) -> None:
    """A tlsbench client offers x25519 first, with its only key share; openssl s_server,
    nginx and a tlsbench server offer secp256r1 alone and must ask again (HelloRetryRequest).
    gnutls-serv, which accepts any group here, is refused with the reason."""
    for spec in ("openssl-3.5.x", "wolfssl-5.7.2"):
        build_of(spec)
    proc, store = run_experiment(
        tmp_path,
        HEADER + '[[matrix]]\nvariant = ["openssl-3.5.x", "wolfssl-5.7.2"]\n'
        'peer = ["openssl-s_server", "nginx", "openssl-3.5.x", "gnutls-serv"]\n'
        'group = ["secp256r1"]\nkey_share = ["x25519"]\n',
    )
    assert proc.returncode == 0, proc.stderr
    found = statuses(store)
    assert found[("wolfssl-5.7.2", "gnutls-serv")] == "unsupported"
    rows = [r for r in load_run(store).interop if r.result == "ok"]
    assert len(rows) == 6, rows
    for row in rows:
        assert " secp256r1 " in row.negotiated and row.round_trips == 2, row


def test_heap_of_a_side_alone_in_its_process_agrees_with_the_side_tags(
    build_of, tmp_path: Path
) -> None:
    """The independent check of side attribution: a process that holds one side needs no
    tags, and must find the connection heap that the one-process run charged to that side
    (within 2 %: the bytes arrive in TCP segments rather than from one queue, which changes
    a library's buffering a little)."""
    cert_dir = str(certs.cert_dir("rsa2048").parent)
    for spec in PINNED:
        build = build_of(spec)
        in_process = run_driver(build, "handshake", "--iterations", "1", "--warmup", "0",
                                measure="heap").output  # fmt: skip
        assert in_process is not None
        port_file = tmp_path / f"port-{spec}"  # this test's own: another suite may run too
        common = ["--iterations", "1", "--warmup", "0", "--cert-dir", cert_dir, "--json"]
        server = subprocess.Popen(
            driver_command(build, "peer", ["--role", "server", "--port-file", str(port_file),
                                           *common], "heap"),
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        )  # fmt: skip
        deadline = time.monotonic() + 300  # a bound against hanging, not a speed target
        while not port_file.exists() and server.poll() is None and time.monotonic() < deadline:
            time.sleep(0.02)
        assert port_file.exists(), server.communicate()[1]
        port = port_file.read_text().strip()
        port_file.unlink()
        client = subprocess.run(
            driver_command(build, "peer", ["--role", "client", "--connect", f"127.0.0.1:{port}",
                                           *common], "heap"),
            capture_output=True, text=True, timeout=60, check=False,
        )  # fmt: skip
        server_out, server_err = server.communicate(timeout=60)
        assert client.returncode == 0 and server.returncode == 0, (client.stderr, server_err)
        alone = {
            "client": json.loads(client.stdout)["heap"]["client"],
            "server": json.loads(server_out)["heap"]["server"],
        }
        for side in ("client", "server"):
            tagged = in_process["heap"][side]["conn_peak"]
            own = alone[side]["conn_peak"]
            assert abs(own - tagged) <= 0.02 * tagged, (spec, side, own, tagged)


def test_a_side_that_cannot_honour_the_request_makes_the_pair_unsupported(
    tmp_path: Path, build_of
) -> None:
    for spec in ("openssl-3.5.x", "wolfssl-5.7.2"):
        build_of(spec)
    proc, store = run_experiment(
        tmp_path,
        HEADER + '[[matrix]]\nvariant = ["openssl-3.5.x"]\npeer = ["wolfssl-5.7.2"]\n'
        'group = ["X25519MLKEM768"]\n',
    )
    assert proc.returncode == 0, proc.stderr
    # wolfSSL 5.7.2 (the server, started first) has no ML-KEM: it says so and the client is
    # never started; no wait for a timeout (the message is the server's, not a timeout's).
    point = store.points(store.run("latest")["id"])[0]
    result = store.results(point.id)[0]
    assert result["status"] == "unsupported"
    message = json.loads(result["output"])["error"]["message"]
    assert message.startswith("server (wolfssl-5.7.2): group X25519MLKEM768"), message


def test_a_silent_peer_fails_after_the_peer_timeout(build_of) -> None:
    """Every socket wait is bounded: a server nobody connects to gives up by itself."""
    build = build_of("openssl-3.5.x")
    run = run_driver(build, "peer", "--role", "server", "--peer-timeout", "1", timeout=300)
    assert run.code == 5 and "no client connected within 1 s" in run.stderr
    run = run_driver(build, "peer", "--role", "client")
    assert run.code == 2 and "needs --connect HOST:PORT" in run.stderr
    run = run_driver(build, "handshake", "--role", "client")
    assert run.code == 2 and "are for the peer scenario" in run.stderr


BAD_PEERS = [
    ('peer = ["wolfsl-5.7.2"]',
     r"peer = 'wolfsl-5.7.2' \(a string\) is not allowed: a variant, self, or a real server: "
     r"openssl-s_server, openssl-3.5.x-s_server, gnutls-serv, nginx \(unknown variant .*Did "
     r"you mean wolfssl-5.7.2"),
    ('peer = ["openssl-s_client"]', r"with role = 'client', a variant, self, or a real server"),
    ('role = ["server"]\npeer = ["gnutls-serv"]',
     r"with role = 'server', a variant, self, or a real client: openssl-s_client, "
     r"openssl-3.5.x-s_client, gnutls-cli, curl"),
    ('peer = ["gnutls-serv"]\nrtt_ms = [-5]', r"rtt_ms = -5 \(a number\) is not allowed: a "
                                             r"number, 0..10000"),
    ('role = ["middle"]\npeer = ["gnutls-serv"]',
     r"role = 'middle' \(a string\) is not allowed: known: client, server"),
]  # fmt: skip


@pytest.mark.parametrize(("lines", "message"), BAD_PEERS)
def test_an_interop_peer_is_checked_before_anything_runs(
    tmp_path: Path, lines: str, message: str
) -> None:
    experiment = tmp_path / "bad.toml"
    experiment.write_text(HEADER + f'[[matrix]]\nvariant = ["openssl-3.5.x"]\n{lines}\n')
    with pytest.raises(UserError, match=message):
        load(str(experiment))


def test_a_peer_that_closes_mid_handshake_fails_cleanly(build_of) -> None:
    """A server that reads the ClientHello and hangs up: the client fails at once with the
    library's words, neither hanging nor reporting a sample."""
    import socket
    import threading

    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.bind(("127.0.0.1", 0))
    listener.listen(8)
    port = listener.getsockname()[1]

    def hang_up() -> None:
        for _ in range(len(PINNED)):
            conn, _ = listener.accept()
            conn.recv(5)  # a record header of the ClientHello
            conn.close()

    threading.Thread(target=hang_up, daemon=True).start()
    try:
        for spec in PINNED:
            # A peer timeout far beyond the test's bound: a client that waited for it instead
            # of failing on the hang-up would be killed by the bound and fail the test.
            run = run_driver(build_of(spec), "peer", "--role", "client", "--connect",
                             f"127.0.0.1:{port}", "--peer-timeout", "900", timeout=300)  # fmt: skip
            assert run.code == 5, (spec, run.stderr)
            assert run.output is not None and run.output["error"]["stage"] == "handshake"
            assert "samples" not in run.output
    finally:
        listener.close()


def test_a_port_already_in_use_is_a_clear_error(build_of) -> None:
    import socket

    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        port = taken.getsockname()[1]
        run = run_driver(build_of("openssl-3.5.x"), "peer", "--role", "server", "--listen",
                         f"127.0.0.1:{port}")  # fmt: skip
    assert run.code == 1
    assert f"listen failed (exit 1): 127.0.0.1:{port}: Address already in use" in run.stderr


def test_a_download_is_checked_and_measured_on_both_sides(tmp_path: Path, build_of) -> None:
    """`bytes`: the client's MB/s and each side's CPU per GB; curl's body checked too."""
    build_of("openssl-3.5.x")
    proc, store = run_experiment(
        tmp_path,
        HEADER + "bytes = 8388608\n"
        '[[matrix]]\nvariant = ["openssl-3.5.x"]\nrole = ["server"]\npeer = ["self", "curl"]\n',
    )
    assert proc.returncode == 0, proc.stderr
    points = {str(p.params["peer"]): p for p in store.points(store.run("latest")["id"])}
    own, curl = points["openssl-3.5.x"], points["curl"]
    for series in ("download_MBps", "client_cpu_s_per_GB", "server_cpu_s_per_GB"):
        assert len(store.samples(own.id, series)) == 2, series
    assert all(v > 0 for v in store.samples(own.id, "download_MBps"))
    assert len(store.samples(curl.id, "download_MBps")) == 2  # curl's own figure
    assert len(store.samples(curl.id, "server_cpu_s_per_GB")) == 2
    report = tlsbench("report", "--db", str(store.path), "--format", "md").stdout
    assert "## Downloads" in report and "8,388,608" in report
