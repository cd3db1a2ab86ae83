"""Handshakes over an emulated network (netem.py): both sides in namespaces of their own joined
by a delay line that delays and drops, and namespaces that never outlive a run (root:
namespaces and TUN)."""

from __future__ import annotations

import json
import os
import subprocess
import time
from pathlib import Path

import pytest

from drivers import run_experiment
from tlsbench.core import paths

HEADER = """
question = "Do they talk?"
repetitions = 1
timeout = 60

[defaults]
scenario = "interop"
iterations = 2
warmup = 1
"""


@pytest.mark.skipif(os.geteuid() != 0, reason="network namespaces and TUN need root")
def test_an_emulated_network_delays_and_drops_and_is_removed(tmp_path: Path, build_of) -> None:
    """rtt_ms and loss: both sides in their own namespaces (198.18.0.0/15), joined by the
    user-space delay line. A TLS 1.3 handshake then cannot take less than the TCP and TLS
    round trips: 2 x RTT from connect to handshake done."""
    build_of("openssl-3.5.x")
    proc, store = run_experiment(
        tmp_path,
        HEADER + '[[matrix]]\nvariant = ["openssl-3.5.x"]\npeer = ["openssl-3.5.x"]\n'
        "rtt_ms = [60]\nloss = [10]\niterations = [12]\n",
    )
    assert proc.returncode == 0, proc.stderr
    point = store.points(store.run("latest")["id"])[0]
    assert point.name == "interop_with-openssl-3.5.x_rtt60ms_loss10pct"
    output = json.loads(store.results(point.id)[0]["output"])
    network = output["network"]
    assert network["client"].startswith("198.18.") and network["server"].startswith("198.18.")
    assert network["rtt_ms"] == 60 and network["packets_relayed"] > 0
    # 13 connections of about 15 packets each: none dropped at 10 % has odds below 1e-8.
    assert network["packets_relayed"] > 100 and network["packets_dropped"] > 0
    walls = store.samples(point.id, "client_wall_ns")
    assert walls and min(walls) >= 2 * 60e6, walls
    assert output["wire"]["full"]["round_trips"] == 1
    # Nothing is left behind: a namespace still listed belongs to a runner that still runs
    # (another tlsbench run on this machine), never to this one, which has ended.
    assert all(Path(f"/proc/{_owner(name)}").exists() for name in _namespaces()), _namespaces()


@pytest.mark.skipif(os.geteuid() != 0, reason="network namespaces and TUN need root")
def test_a_first_flight_past_the_initial_window_costs_a_round_trip(
    tmp_path: Path, build_of
) -> None:
    """An ML-DSA-87 chain of three (a server flight of about 27 kB, 19 segments) cannot leave
    in TCP's initial window of 10 segments: the handshake takes a round trip more than with
    an ECDSA leaf (1.3 kB), which the report's network table models and measures."""
    from tlsbench.report import load_run

    build_of("openssl-3.5.x")
    proc, store = run_experiment(
        tmp_path,
        HEADER + '[[matrix]]\nvariant = ["openssl-3.5.x"]\npeer = ["openssl-3.5.x"]\n'
        'cert = ["ecdsa-p256"]\nrtt_ms = [100]\niterations = [4]\n'
        '[[matrix]]\nvariant = ["openssl-3.5.x"]\npeer = ["openssl-3.5.x"]\n'
        'cert = ["ml-dsa-87"]\nchain = [3]\nrtt_ms = [100]\niterations = [4]\n',
    )
    assert proc.returncode == 0, proc.stderr
    run_id = store.run("latest")["id"]
    walls = {p.params["cert"]: store.samples(p.id, "client_wall_ns") for p in store.points(run_id)}
    # TCP's handshake and TLS's one round trip: 2 x RTT; the large flight one more.
    assert max(walls["ecdsa-p256"]) < 3 * 100e6 <= min(walls["ml-dsa-87"]), walls
    rows = {r.line: r for r in load_run(store, run_id).interop}
    small, large = rows["ecdsa-p256"], rows["ml-dsa-87 chain 3"]
    assert small.server_flight_segments <= 10 < large.server_flight_segments
    assert (small.window_rounds, large.window_rounds) == (1, 2)
    assert round(small.measured_round_trips) == 2 and round(large.measured_round_trips) == 3


@pytest.mark.skipif(os.geteuid() != 0, reason="network namespaces and TUN need root")
def test_namespaces_are_removed_after_an_interrupt_and_after_a_kill(
    tmp_path: Path, build_of
) -> None:
    """Ctrl-C during an emulated-network point removes its namespaces; a runner killed with
    SIGKILL cannot, so the next emulated network removes what it left."""
    import signal

    from tlsbench.peers import netem

    build_of("openssl-3.5.x")
    experiment = tmp_path / "slow.toml"
    matrix = 'variant = ["openssl-3.5.x"]\npeer = ["openssl-3.5.x"]\nrtt_ms = [200]\n'
    experiment.write_text(HEADER + f"[[matrix]]\n{matrix}iterations = [60]\n")
    for sig in (signal.SIGINT, signal.SIGKILL):
        command = [str(paths.REPO / "tlsbench"), "run", str(experiment), "--db",
                   str(tmp_path / "r.db")]  # fmt: skip
        # A terminal's Ctrl-C reaches a foreground runner; one started from a background job
        # inherits SIGINT ignored (and Python then installs no handler): give the runner the
        # disposition a terminal would, whatever this test was started from.
        proc = subprocess.Popen(
            command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            start_new_session=True, preexec_fn=_sigint_as_in_a_terminal,
        )  # fmt: skip
        deadline = time.monotonic() + 120
        # The launcher execs the runner: its process id is the one in the names.
        while time.monotonic() < deadline and len(_namespaces(proc.pid)) < 2:
            time.sleep(0.1)
        assert len(_namespaces(proc.pid)) == 2, "the point never made its namespaces"
        time.sleep(1.0)  # in the middle of its connections
        os.killpg(proc.pid, sig)  # as a terminal's Ctrl-C (the whole group) or kill -9
        proc.wait(timeout=120)
        if sig == signal.SIGINT:
            assert proc.returncode == 130
            assert _namespaces(proc.pid) == []
        else:
            assert len(_namespaces(proc.pid)) == 2  # nobody was left to clean up
            killed = proc.pid
    left = _namespaces(killed)
    assert set(left) <= set(netem.remove_stale())  # and those of other dead runners, if any
    assert _namespaces(killed) == []


def _namespaces(owner: int | None = None) -> list[str]:
    """tlsbench's namespaces (of the runner with process id `owner`, when given: other runs
    on the machine may have theirs)."""
    listed = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
    names = [line.split()[0] for line in listed.splitlines() if line.startswith("tlsbench-")]
    return [n for n in names if owner is None or _owner(n) == str(owner)]


def _owner(name: str) -> str:
    """The runner's process id in a namespace name (tlsbench-s-PID-THREAD)."""
    return name.split("-")[2]


def _sigint_as_in_a_terminal() -> None:
    import signal

    signal.signal(signal.SIGINT, signal.SIG_DFL)
