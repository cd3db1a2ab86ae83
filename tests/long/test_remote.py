"""A load point with its server and generators on other hosts, over OpenSSH: hosts are
network namespaces with an sshd each (tests/sshhosts.py); generators' results are merged
(rates summed, latency histograms added, never averaged)."""

from __future__ import annotations

import json
import os
import stat
import subprocess
from pathlib import Path

import pytest

from tlsbench.core import paths
from tlsbench.core.store import Store
from tlsbench.peers import remote


def _load(latencies_us: dict[float, int], tps: float, cpu: float) -> dict:
    n = sum(latencies_us.values())
    return {
        "pattern": "keepalive", "connections": 2, "rate": None, "transactions": n,
        "handshakes": 2, "resumed": 0, "errors": 0, "first_error": None, "wall_s": 2.0,
        "tps": tps, "hps": 1.0, "MBps": 0.5, "cpu_s": cpu, "cpu_utilization": cpu / 2,
        "saturated": False,
        "latency_us": {"min": min(latencies_us), "max": max(latencies_us),
                       "mean": sum(v * c for v, c in latencies_us.items()) / n},
        "histogram": [[v, c] for v, c in sorted(latencies_us.items())],
    }  # fmt: skip


def test_generators_are_merged_by_histogram_not_by_averaging_percentiles() -> None:
    fast = _load({100.0: 90}, tps=45.0, cpu=1.0)  # every transaction 100 us
    slow = _load({100.0: 5, 1000.0: 5}, tps=5.0, cpu=1.9)  # half of them 1 ms
    merged = remote.merge_loads([fast, slow])
    assert merged["tps"] == 50.0 and merged["transactions"] == 100
    assert merged["connections"] == 4 and merged["generators"] == 2
    assert merged["histogram"] == [[100.0, 95], [1000.0, 5]]
    lat = merged["latency_us"]
    # Of 100 transactions 95 took 100 us: p90 is 100 us, p99 1 ms (an average of the two
    # generators' p99s would say 550 us, a latency no transaction had).
    assert (lat["p50"], lat["p90"], lat["p99"], lat["max"]) == (100.0, 100.0, 1000.0, 1000.0)
    assert lat["mean"] == pytest.approx((95 * 100 + 5 * 1000) / 100)
    assert merged["cpu_utilization"] == 0.95  # the busiest generator's


def test_destinations_and_what_a_remote_point_cannot_do() -> None:
    assert remote.host_of("root@198.18.1.1") == "198.18.1.1"
    assert remote.host_of("ssh://bench@[2001:db8::1]:2222") == "2001:db8::1"
    assert remote.host_of("lab-server:2222") == "lab-server"
    assert remote.check_destination("a; rm -rf /") is not None
    base = {"server_host": "root@198.18.1.1", "generator_hosts": "root@198.18.1.2",
            "client": "openssl-3.5.x"}  # fmt: skip
    assert remote.refusal(base) is None
    assert "both" in (remote.refusal({"server_host": "x"}) or "")
    assert "no nginx" in (remote.refusal({**base, "client": "h2load"}) or "")
    assert "heap" in (remote.refusal({**base, "heap": True}) or "")
    assert "not an OpenSSH" in (remote.refusal({**base, "generator_hosts": "a,$(x)"}) or "")


def test_a_host_with_another_commit_or_build_is_refused(tmp_path: Path, build_of) -> None:
    """check_hosts against a stand-in ssh that runs the command here and a stand-in tlsbench
    that answers with another commit, then with another build key."""
    build = build_of("null")
    fake_ssh = tmp_path / "ssh"
    fake_ssh.write_text('#!/bin/sh\nshift 3\n[ "$1" = "--" ] && shift\nexec sh -c "$1"\n')
    answer = tmp_path / "answer.json"
    fake_tlsbench = tmp_path / "tlsbench"
    fake_tlsbench.write_text(f"#!/bin/sh\ncat {answer}\n")
    for script in (fake_ssh, fake_tlsbench):
        script.chmod(script.stat().st_mode | stat.S_IXUSR)
    key = remote.build_key(build)
    env = {remote.SSH_ENV: str(fake_ssh), remote.REMOTE_ENV: str(fake_tlsbench)}
    old = {k: os.environ.get(k) for k in env}
    os.environ.update(env)
    try:
        answer.write_text(json.dumps({"commit": "other", "builds": {"null": key}}))
        problem = remote.check_hosts(["lab1"], {"null": build}, "rsa2048", "mine", 1e12)
        assert problem and "lab1 has tlsbench commit other, this runner mine" in problem
        answer.write_text(json.dumps({"commit": "mine", "builds": {"null": "k/d"}}))
        problem = remote.check_hosts(["lab1"], {"null": build}, "rsa2048", "mine", 1e12)
        assert problem and f"lab1 builds null as k/d, this runner as {key}" in problem
        answer.write_text(json.dumps({"commit": "mine", "builds": {"null": key}}))
        assert remote.check_hosts(["lab1"], {"null": build}, "rsa2048", "mine", 1e12) is None
    finally:
        for k, v in old.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


EXPERIMENT = """
question = "Does a server on one host stand the load of generators on two others?"
repetitions = 1
timeout = 300

[[include]]
scenario = "load"
variant = "openssl-3.5.x"
client = "self"
pattern = "keepalive"
connections = 2
duration_s = 2
server_host = "{server}"
generator_hosts = "{generators}"
"""


@pytest.mark.slow
def test_one_server_and_two_generators_on_three_hosts_over_ssh(tmp_path: Path, build_of) -> None:
    import sshhosts

    if reason := sshhosts.missing_reason():
        pytest.skip(reason)
    build_of("openssl-3.5.x")
    with sshhosts.lab(3) as lab:
        server, *generators = lab.destinations
        experiment = tmp_path / "hosts.toml"
        experiment.write_text(EXPERIMENT.format(server=server, generators=",".join(generators)))
        db = tmp_path / "r.db"
        env = {**os.environ, remote.SSH_ENV: lab.ssh_command,
               remote.REMOTE_ENV: str(paths.REPO / "tlsbench")}  # fmt: skip
        proc = subprocess.run([str(paths.REPO / "tlsbench"), "run", str(experiment), "--db",
                               str(db), "--quiet"], capture_output=True, text=True, env=env,
                              timeout=900)  # fmt: skip
        assert proc.returncode == 0, proc.stderr
    store = Store(db, readonly=True)
    [point] = store.points(1)
    assert "server-on-root@198.18.1.1" in point.name
    [result] = store.results(point.id)
    output = json.loads(result["output"])
    hosts = output["hosts"]
    assert hosts["server"] == server and [g["host"] for g in hosts["generators"]] == generators
    each = hosts["generators"]
    assert all(g["transactions"] > 0 and g["errors"] == 0 for g in each)
    merged = output["load"]
    assert merged["generators"] == 2
    assert merged["tps"] == pytest.approx(sum(g["tps"] for g in each))
    assert merged["transactions"] == sum(g["transactions"] for g in each)
    assert sum(c for _, c in output["histogram"]) == merged["transactions"]
    # The merged percentiles are read from the merged histogram.
    assert merged["latency_us"]["p99"] == remote.percentile(
        output["histogram"], 99.0, merged["latency_us"]["max"])  # fmt: skip
    # The server on its host saw every generator's transactions.
    assert output["serve"]["transactions"] >= merged["transactions"]
    assert store.samples(point.id, "load_tps") == [pytest.approx(merged["tps"])]
