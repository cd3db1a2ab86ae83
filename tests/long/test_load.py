"""A server under load (load.py): tlsbench's server and nginx under tlsbench's generator and
h2load, real processes over loopback TCP, seconds each."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import tempfile
import threading
import time
from pathlib import Path

import numpy as np
import pytest

from drivers import tlsbench
from tlsbench.builds import certs
from tlsbench.core.store import Store
from tlsbench.peers import interop, load
from tlsbench.peers.programs import percentiles_us
from tlsbench.report import load_run

SERVER = "openssl-3.5.x"


HEADER = """
question = "Does it hold?"
repetitions = 1
timeout = 60

[defaults]
scenario = "load"
duration_s = 1
connections = 4
"""


def run_experiment(tmp_path: Path, text: str) -> tuple[subprocess.CompletedProcess, Store]:
    experiment = tmp_path / "load.toml"
    experiment.write_text(HEADER + text)
    db = tmp_path / "r.db"
    return tlsbench("run", str(experiment), "--db", str(db)), Store(db)


def outputs(store: Store) -> dict[str, dict]:
    """Per point name, its first result's output (samples folded in) and status."""
    found = {}
    for point in store.points(store.run("latest")["id"]):
        row = store.results(point.id)[0]
        output = json.loads(row["output"]) if row["output"] else {}
        output["status"] = row["status"]
        output["samples"] = {s: store.samples(point.id, s) for s in store.series_names(point.id)}
        found[point.name] = output
    return found


def test_a_tlsbench_server_and_nginx_under_tlsbench_s_generator(tmp_path: Path, build_of) -> None:
    build_of(SERVER)
    build_of("openssl-system")
    proc, store = run_experiment(tmp_path, f"""
[[matrix]]
variant = ["{SERVER}"]
client = ["self"]
pattern = ["keepalive"]
heap = [true]

[[matrix]]
variant = ["{SERVER}"]
client = ["self"]
pattern = ["new", "resume"]

[[matrix]]
variant = ["openssl-system"]
server = ["nginx"]
client = ["{SERVER}"]
pattern = ["keepalive", "new"]
""")  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    found = outputs(store)
    assert len(found) == 5 and {o["status"] for o in found.values()} == {"ok"}, found
    for name, out in found.items():
        samples = out["samples"]
        assert samples["load_tps"][0] > 10 and samples["load_errors"] == [0.0], name
        p = [samples[f"latency_{k}_us"][0] for k in ("p50", "p90", "p99", "p99.9")]
        assert 0 < p[0] <= p[1] <= p[2] <= p[3] <= samples["latency_max_us"][0], name
        assert samples["server_cpu_ms_per_tx"][0] > 0, name
        assert out["negotiated"]["version"] == "1.3", name
        if os.cpu_count() and len(os.sched_getaffinity(0)) > 1:
            placement = out["placement"]
            assert set(placement["server_cpus"]).isdisjoint(placement["generator_cpus"])
    resumed = next(o for n, o in found.items() if n.endswith("_resume_c4"))
    assert resumed["serve"]["resumed"] > 0
    assert resumed["serve"]["resumed"] == resumed["load"]["resumed"]
    new = next(o for n, o in found.items() if "on-nginx" not in n and n.endswith("_new_c4"))
    assert new["serve"]["resumed"] == 0 and new["samples"]["load_hps"] == new["samples"]["load_tps"]
    # heap = true (keep-alive only): the server's heap per open connection, from the heap
    # driver's run; none for the other points.
    for name, out in found.items():
        if "on-nginx" not in name:
            heap = out["samples"].get("server_heap_per_connection")
            if name.endswith("_keepalive_c4"):
                assert heap and heap[0] > 1000, name
            else:
                assert not heap, name
    # nginx's CPU comes from its process' resource usage (workers included).
    nginx = next(o for n, o in found.items() if "on-nginx" in n and n.endswith("_new_c4"))
    assert nginx["serve"]["program"] == "nginx" and nginx["serve"]["cpu_s"] > 0
    model = load_run(store)
    assert len(model.load) == 5 and all(r.result == "ok" for r in model.load)
    report = tlsbench("report", "--db", str(store.path), "--format", "md")
    assert "## Under load" in report.stdout


def test_h2load_against_a_tlsbench_server_and_nginx(tmp_path: Path, build_of) -> None:
    build_of(SERVER)
    build_of("openssl-system")
    proc, store = run_experiment(tmp_path, f"""
[[matrix]]
variant = ["{SERVER}"]
client = ["h2load", "self"]
pattern = ["keepalive"]

[[matrix]]
variant = ["{SERVER}"]
client = ["h2load"]
pattern = ["resume"]

[[matrix]]
variant = ["openssl-system"]
server = ["nginx"]
client = ["h2load"]
pattern = ["new"]
""")  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    found = outputs(store)
    assert {o["status"] for o in found.values()} == {"ok"}, found
    for name, out in found.items():
        if "h2load" not in name:
            continue
        assert out["sides"]["generator"]["program"] == "h2load"
        assert out["load"]["latency_from"] == "request"
        # Percentiles from h2load's per-request log, beside its own min / mean / max / sd.
        assert out["samples"]["latency_p50_us"][0] <= out["samples"]["latency_p99_us"][0]
        assert out["samples"]["latency_sd_us"], name
    resumed = next(o for n, o in found.items() if n.endswith("_by-h2load_resume_c4"))
    serve = resumed["serve"]
    assert serve["resumed"] > 0 and serve["handshakes"] - serve["resumed"] <= 8
    assert resumed["load"]["calibration"]["requests"] > 0
    # The two generators against the same server are compared in the report.
    report = tlsbench("report", "--db", str(store.path), "--format", "md")
    assert "## Load generators compared" in report.stdout, report.stdout


def test_a_threaded_server_beside_worker_processes(tmp_path: Path, build_of) -> None:
    """The two server models under the same generator: one process of two event-loop threads
    sharing a context (new handshakes and resumptions across threads) and two processes."""
    build_of(SERVER)
    proc, store = run_experiment(tmp_path, f"""
[[matrix]]
variant = ["{SERVER}"]
client = ["self"]
pattern = ["new", "resume"]
threads = [2]

[[matrix]]
variant = ["{SERVER}"]
client = ["self"]
pattern = ["new"]
workers = [2]
""")  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    found = outputs(store)
    assert {o["status"] for o in found.values()} == {"ok"}, found
    for name, out in found.items():
        assert out["samples"]["load_tps"][0] > 10 and out["samples"]["load_errors"] == [0.0]
        assert out["samples"]["server_cpu_ms_per_tx"][0] > 0, name
        model = ("threads", 2) if "_t2" in name else ("workers", 2)
        assert out["serve"][model[0]] == model[1] and out["params"].get(model[0]) == 2, name
    # A session made on one thread resumes on another: one cache, one ticket key.
    resumed = next(o for n, o in found.items() if "_resume_" in n)
    assert resumed["serve"]["resumed"] > 0 and resumed["serve"]["resumed"] == resumed["load"][
        "resumed"]  # fmt: skip
    rows = load_run(store).load
    assert {r.model for r in rows} == {"2 threads", "2 processes"}


def test_a_server_that_is_not_thread_safe_refuses_threads(build_of) -> None:
    build_of("mbedtls-3.6.6")
    proc = tlsbench("drive", "mbedtls-3.6.6", "serve", "--threads", "2", "--duration", "5",
                    "--json")  # fmt: skip
    assert proc.returncode == 3, proc.stderr
    assert "MBEDTLS_THREADING_C" in json.loads(proc.stdout)["error"]["message"]
    both = tlsbench("drive", "openssl-3.5.x", "serve", "--threads", "2", "--workers", "2")
    assert both.returncode == 2 and "choose one" in both.stderr


def test_a_server_killed_mid_load_fails_the_point_in_bounded_time(
    build_of, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The generator reports the errors it saw and exits non-zero; nothing hangs."""
    build = build_of(SERVER)
    certs.ensure_all(["rsa2048"], progress=False)
    servers: list[interop.Side] = []
    start = interop.Side.start

    def remember(side: interop.Side, *args, **kwargs) -> None:
        start(side, *args, **kwargs)
        if side.role == "server":
            servers.append(side)

    monkeypatch.setattr(interop.Side, "start", remember)

    def kill_server() -> None:
        time.sleep(1.5)
        assert servers and servers[0].proc is not None
        os.killpg(servers[0].proc.pid, signal.SIGKILL)

    for client, pattern in ((SERVER, "keepalive"), (SERVER, "new"), ("h2load", "keepalive"),
                            ("h2load", "resume")):  # fmt: skip
        servers.clear()
        killer = threading.Thread(target=kill_server)
        killer.start()
        options = {"client": client, "pattern": pattern, "connections": 4, "duration_s": 6}
        result = load.run_point(options, build, build if client == SERVER else None, 60, {}, {})
        killer.join()
        assert result.status == "failed", result
        message = result.output["error"]["message"]
        if client == SERVER:
            assert f"the generator ({SERVER}) saw" in message and "errors; the first:" in message
        elif pattern == "resume":
            assert "requests failed" in message, message
        else:
            # h2load's keep-alive run by duration counts no failed request once its
            # connections are refused: the server's death fails the point.
            assert f"the server ({SERVER}) printed no result" in message, message


def test_histogram_percentiles_agree_with_the_raw_latencies(build_of, tmp_path: Path) -> None:
    """Oracle: the generator's p50 / p90 / p99 / p99.9 (log-linear histogram, 3 significant
    digits) against numpy's percentiles of every latency it wrote with --latencies."""
    build = build_of(SERVER)
    certs.ensure_all(["rsa2048"], progress=False)
    for pattern in ("keepalive", "new"):
        with tempfile.TemporaryDirectory(dir=tmp_path) as tmp:
            scratch = Path(tmp)
            server = interop.Side(
                "server", SERVER, load.serve_command(build, {}, "time", scratch / "port", 30)
            )
            server.start({})
            try:
                port = interop.wait_for_port(server, scratch / "port", time.monotonic() + 10)
                assert port is not None
                raw = scratch / "latencies"
                proc = subprocess.run(
                    load.load_command(build, {"pattern": pattern, "connections": 8},
                                      f"127.0.0.1:{port}", 1, raw),
                    capture_output=True, text=True, check=False, timeout=60,
                )  # fmt: skip
            finally:
                server.kill("test over")
                server.proc.wait()  # type: ignore[union-attr]
            assert proc.returncode == 0, proc.stderr
            report = json.loads(proc.stdout)["load"]
            values_us = np.loadtxt(raw) / 1e3
            assert len(values_us) == report["transactions"] > 100
            assert sum(n for _, n in report["histogram"]) == len(values_us)
            exact = percentiles_us(values_us)
            for key, value in exact.items():
                hist = report["latency_us"][key]
                # The histogram gives its bucket's upper bound (at most the maximum): never
                # below the exact value and within the resolution of 3 significant digits.
                assert value <= hist + 1e-3, (pattern, key, value, hist)
                assert hist - value <= value * 2e-3 + 1e-3, (pattern, key, value, hist)


def run_generator(build, server_options: dict, load_options: dict, scratch: Path) -> dict:
    """One tlsbench server and one run of its generator for a second; the generator's JSON."""
    scratch = Path(tempfile.mkdtemp(dir=scratch))  # a port file of its own
    server = interop.Side(
        "server", SERVER, load.serve_command(build, server_options, "time", scratch / "port", 30)
    )
    server.start({})
    try:
        port = interop.wait_for_port(server, scratch / "port", time.monotonic() + 10)
        assert port is not None
        proc = subprocess.run(load.load_command(build, load_options, f"127.0.0.1:{port}", 1),
                              capture_output=True, text=True, check=False, timeout=60)  # fmt: skip
    finally:
        server.kill("test over")
        server.proc.wait()  # type: ignore[union-attr]
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def test_an_open_loop_rate_is_kept_and_charges_the_queue_to_latency(
    build_of, tmp_path: Path
) -> None:
    """--rate starts transactions on a schedule: never more than asked, and when the server
    cannot keep up, each transaction's latency counts from when it was due (the queue), not
    from when a connection got free (coordinated omission)."""
    build = build_of(SERVER)
    certs.ensure_all(["rsa2048"], progress=False)
    paced = run_generator(build, {}, {"pattern": "keepalive", "connections": 4, "rate": 40},
                          tmp_path)  # fmt: skip
    assert paced["params"]["rate"] == 40 and paced["load"]["rate"] == 40
    # One second at 40/s: never more than asked; on a machine too busy to keep up, what came
    # due and never started is counted (at most `connections` were still in flight).
    done, unstarted = paced["load"]["transactions"], paced["load"]["unstarted"]
    assert done <= 41 and 40 - 4 <= done + unstarted <= 41, paced["load"]
    # Far more new handshakes asked for than one connection can do: those due wait.
    closed = run_generator(build, {}, {"pattern": "new", "connections": 1}, tmp_path)
    flooded = run_generator(build, {}, {"pattern": "new", "connections": 1, "rate": 1000000},
                            tmp_path)  # fmt: skip
    assert flooded["load"]["transactions"] <= closed["load"]["transactions"] * 2
    # The closed loop's p99 is a few handshakes; the flooded one's is most of the second.
    assert flooded["load"]["latency_us"]["p99"] > 10 * closed["load"]["latency_us"]["p99"], (
        closed["load"]["latency_us"],
        flooded["load"]["latency_us"],
    )


def test_nginx_serves_curl_with_no_tlsbench_side(tmp_path: Path, build_of) -> None:
    """An interop download between two real programs (the `download` experiment's nginx to
    curl): curl checks every byte; its MB/s are the point's series."""
    build_of("openssl-system")
    experiment = tmp_path / "download.toml"
    experiment.write_text("""
question = "nginx to curl?"
repetitions = 1
timeout = 60
[defaults]
scenario = "interop"
bytes = 5000000
iterations = 2
warmup = 1
[[matrix]]
variant = ["openssl-system"]
role = ["server"]
server = ["nginx"]
peer = ["curl"]
tls = ["1.3", "1.2"]
""")
    db = tmp_path / "r.db"
    proc = tlsbench("run", str(experiment), "--db", str(db))
    assert proc.returncode == 0, proc.stderr
    store = Store(db)
    model = load_run(store)
    assert [r.server for r in model.interop] == ["nginx (openssl-system)"] * 2
    assert all(r.result == "ok" and r.download_mbps and r.download_mbps > 1
               for r in model.interop), model.interop  # fmt: skip
    for point in store.points(store.run("latest")["id"]):
        assert len(store.samples(point.id, "download_MBps")) == 2  # after the warm-up
        assert point.build["server"]["program"] == "nginx"
