"""The runner's orchestration, with the fake driver (tests/fake/): failures and hung drivers
kept, kill -9 and resume, one owner per run, SIGTERM, concurrent runs into one store, the
driver's environment and CPU."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import time
from pathlib import Path

import pytest

from fake.builds import run_fake as tlsbench
from fake.builds import start_fake
from tlsbench.core.machine import cpu_flags
from tlsbench.core.store import Store
from tlsbench.driver import cpuprofile
from tlsbench.driver.drive import driver_environment
from tlsbench.driver.process import PINNED_CPU
from tlsbench.driver.process import pin as _pin


def test_an_unwritable_results_location_is_refused_before_running(tmp_path: Path) -> None:
    blocked = tmp_path / "file"
    blocked.write_text("not a folder")
    proc = tlsbench("run", "quick", "--db", str(blocked / "r.db"))
    assert proc.returncode == 2
    assert "cannot write results to" in proc.stderr and "choose another --db" in proc.stderr
    assert "building" not in proc.stderr


def test_a_hung_driver_is_killed_recorded_and_the_run_goes_on(tmp_path: Path) -> None:
    experiment = tmp_path / "hang.toml"
    experiment.write_text("""
question = "Is a driver that does not finish in time recorded as a failure?"
repetitions = 1
timeout = 1

[defaults]
scenario = "records"
warmup = 0

[[include]]
variant = "null"
iterations = 99999999

[[include]]
variant = "null"
payload = 64
iterations = 100
""")
    db = tmp_path / "r.db"
    proc = tlsbench("run", str(experiment), "--db", str(db))
    assert proc.returncode == 1  # a point failed
    assert "FAILED records @ null rep 1: signal 9" in proc.stderr
    store = Store(db)
    run = store.run("latest")
    assert run["status"] == "failed"
    by_name = {p.name: store.results(p.id)[0] for p in store.points(run["id"])}
    hung = by_name["records"]
    assert hung["status"] == "failed" and hung["signal"] == 9
    assert "timeout" in hung["stderr_tail"]
    assert by_name["records_64B"]["status"] == "ok"  # the run went on


HANG = """
question = "Does resume re-run a failure under the run's own timeout?"
repetitions = 2
timeout = 1

[defaults]
scenario = "records"
warmup = 0

[[include]]
variant = "null"
iterations = 98765431

[[include]]
variant = "null"
payload = 64
iterations = 100
"""


def _drivers_running(marker: str) -> list[int]:
    """Processes whose command line holds `marker` (an iteration count no other run uses)."""
    found = []
    for proc in Path("/proc").iterdir():
        if proc.name.isdigit():
            try:
                cmdline = (proc / "cmdline").read_bytes().replace(b"\0", b" ").decode()
            except OSError:
                continue
            if ("tlsbench-driver" in cmdline or "fake/driver.py" in cmdline) \
                    and marker in cmdline:  # fmt: skip
                found.append(int(proc.name))
    return found


def test_resume_reruns_failures_under_the_stored_settings(tmp_path: Path) -> None:
    experiment = tmp_path / "hang.toml"
    experiment.write_text(HANG)
    db = tmp_path / "r.db"
    first = tlsbench("run", str(experiment), "--db", str(db), "--quiet")
    assert first.returncode == 1
    run_id = str(Store(db).run("latest")["id"])
    # Conflicting flags are refused, naming them; nothing runs.
    for extra in (["--only", "payload=64"], ["--repetitions", "5"], ["--mode", "time"],
                  ["--timeout", "60"], [str(experiment)]):  # fmt: skip
        proc = tlsbench("run", "--resume", run_id, *extra, "--db", str(db))
        assert proc.returncode == 2, (extra, proc.stderr)
        assert "stored settings" in proc.stderr and "Traceback" not in proc.stderr
    again = tlsbench("run", "--resume", run_id, "--db", str(db))
    # The failures ran again, with the run's 1 s timeout (not a default of minutes: the
    # stored stderr names the timeout that killed them), and the run is still failed.
    assert again.returncode == 1, again.stderr
    assert again.stderr.count("FAILED records @ null") == 2
    store = Store(db)
    assert store.run(run_id)["status"] == "failed"
    for point in store.points(int(run_id)):
        results = store.results(point.id)
        assert [r["repetition"] for r in results] == [0, 1]  # replaced, not duplicated
        if point.name == "records":
            assert all("1 s timeout" in r["stderr_tail"] for r in results)
    assert store.check_consistent() == []


def test_resume_refuses_a_variant_built_differently(tmp_path: Path) -> None:
    experiment = tmp_path / "hang.toml"
    experiment.write_text(HANG)
    db = tmp_path / "r.db"
    tlsbench("run", str(experiment), "--db", str(db), "--quiet")
    with sqlite3.connect(db) as conn:
        conn.execute("UPDATE points SET build = json_set(build, '$.cache_key', 'f00d')")
    proc = tlsbench("run", "--resume", "latest", "--db", str(db))
    assert proc.returncode == 2, proc.stderr
    assert "variant null was built with cache key f00d" in proc.stderr
    assert "would now be built with" in proc.stderr


def test_resume_refuses_driver_programs_built_from_other_sources(tmp_path: Path) -> None:
    experiment = tmp_path / "hang.toml"
    experiment.write_text(HANG)
    db = tmp_path / "r.db"
    tlsbench("run", str(experiment), "--db", str(db), "--quiet")
    with sqlite3.connect(db) as conn:
        stored = conn.execute("SELECT json_extract(build, '$.drivers_key') FROM points").fetchone()
        assert stored[0] and len(stored[0]) == 16
        conn.execute("UPDATE points SET build = json_set(build, '$.drivers_key', 'beef')")
    proc = tlsbench("run", "--resume", "latest", "--db", str(db))
    assert proc.returncode == 2, proc.stderr
    assert "driver programs were built with drivers key beef" in proc.stderr


def test_a_run_has_one_owner_and_sigterm_stops_it_cleanly(tmp_path: Path) -> None:
    experiment = tmp_path / "long.toml"
    experiment.write_text("""
question = "Is a run being executed locked, and does SIGTERM leave nothing behind?"
repetitions = 3
timeout = 600

[defaults]
scenario = "records"
warmup = 0

[[include]]
variant = "null"
payload = 64
iterations = 100

[[include]]
variant = "null"
iterations = 98765432
""")
    db = tmp_path / "r.db"
    runner = start_fake("run", str(experiment), "--db", str(db), "--quiet",
                        stderr=subprocess.PIPE)  # fmt: skip
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and not _drivers_running("98765432"):
        time.sleep(0.1)
    assert _drivers_running("98765432"), "the long driver never started"
    second = tlsbench("run", "--resume", "latest", "--db", str(db))
    assert second.returncode == 1
    assert "is being executed by process" in second.stderr
    runs = tlsbench("runs", "--db", str(db))
    assert " running " in runs.stdout
    runner.send_signal(signal.SIGTERM)
    _, err = runner.communicate(timeout=60)
    assert runner.returncode == 143, err
    assert _drivers_running("98765432") == []  # the driver did not outlive the runner
    store = Store(db)
    assert store.run("latest")["status"] == "interrupted", (
        err,
        {k: store.run("latest")[k] for k in ("status", "finished_at", "owner_pid", "heartbeat")},
    )
    assert store.check_consistent() == []
    assert " interrupted " in tlsbench("runs", "--db", str(db)).stdout


def test_a_killed_runner_leaves_a_run_that_reads_as_interrupted(tmp_path: Path) -> None:
    experiment = tmp_path / "long.toml"
    experiment.write_text(HANG.replace("timeout = 1", "timeout = 600").replace(
        "98765431", "98765433"))  # fmt: skip
    db = tmp_path / "r.db"
    runner = start_fake("run", str(experiment), "--db", str(db), "--quiet",
                        start_new_session=True)  # fmt: skip
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and not _drivers_running("98765433"):
        time.sleep(0.1)
    os.kill(runner.pid, signal.SIGKILL)  # the runner only: its driver is orphaned
    runner.wait()
    for pid in _drivers_running("98765433"):
        os.kill(pid, signal.SIGKILL)
    assert " interrupted " in tlsbench("runs", "--db", str(db)).stdout


def test_a_partly_failed_point_is_marked_in_every_format(tmp_path: Path) -> None:
    experiment = tmp_path / "two.toml"
    experiment.write_text("""
question = "Is a point with a failed repetition marked wherever its figures appear?"
repetitions = 3

[defaults]
scenario = "records"
payload = 64
iterations = 200
warmup = 0

[matrix]
variant = ["null"]
""")
    db = tmp_path / "r.db"
    assert tlsbench("run", str(experiment), "--db", str(db), "--quiet").returncode == 0
    # One repetition's driver failing is simulated in the store: the reports are under test.
    with sqlite3.connect(db) as conn:
        conn.execute("DELETE FROM samples WHERE result_id = (SELECT MAX(id) FROM results)")
        conn.execute("UPDATE results SET status = 'failed', exit_code = 1, output = NULL "
                     "WHERE id = (SELECT MAX(id) FROM results)")  # fmt: skip
    for fmt in ("md", "csv", "json", "html"):
        out = tlsbench("report", "latest", "--format", fmt, "--db", str(db))
        assert out.returncode == 0, out.stderr
        assert "1 of 3 repetitions failed" in out.stdout, fmt


def test_driver_environment_drops_library_switches(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENSSL_ia32cap", "~0x200000000000000")
    monkeypatch.setenv("NETTLE_FAT_OVERRIDE", "none")
    monkeypatch.setenv("GLIBC_TUNABLES", "glibc.malloc.tcache_count=0")
    monkeypatch.setenv(cpuprofile.ENV_VARIABLE, "native")  # whatever the suite runs under
    env = driver_environment({"NETTLE_FAT_OVERRIDE": "x86_64"})
    assert "OPENSSL_ia32cap" not in env and "GLIBC_TUNABLES" not in env
    assert env["NETTLE_FAT_OVERRIDE"] == "x86_64"  # what the point asks for stays
    assert env["PATH"] == os.environ["PATH"]
    # Under a CPU profile the drivers get the profile's switches, never the shell's.
    monkeypatch.setenv(cpuprofile.ENV_VARIABLE, "sse4")
    env = driver_environment({})
    expected = cpuprofile.PROFILES["sse4"].environment(set(cpu_flags()))
    assert env.get("OPENSSL_ia32cap") == expected.get("OPENSSL_ia32cap") != "~0x200000000000000"
    assert driver_environment({"OPENSSL_ia32cap": "~0x1"})["OPENSSL_ia32cap"] == "~0x1"


def test_a_cpu_profile_makes_another_machine_in_the_store(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """A run under a profile records the extensions the libraries may use, not the CPU's:
    its results belong to another machine than a native run's, which `compare` names."""
    from tlsbench.builds.build import Builder
    from tlsbench.run import runner

    monkeypatch.setattr(runner, "cpu_flags", lambda: ["sse2", "avx2", "avx512f", "vaes"])
    monkeypatch.setenv(cpuprofile.ENV_VARIABLE, "native")
    native = runner.machine_facts(runner.environment(Builder()))
    monkeypatch.setenv(cpuprofile.ENV_VARIABLE, "avx2")
    profiled = runner.machine_facts(runner.environment(Builder()))
    assert native["cpu_flags"].split() == ["sse2", "avx2", "avx512f", "vaes"]
    assert profiled["cpu_flags"].split() == ["sse2", "avx2"]
    assert (native["cpu_profile"], profiled["cpu_profile"]) == ("native", "avx2")
    store = Store(tmp_path / "r.db")
    assert store.machine(native) != store.machine(profiled)


def test_drivers_are_pinned_to_one_cpu_where_allowed() -> None:
    if PINNED_CPU is None:
        pytest.skip("one CPU only, or pinning not allowed: nothing to pin")
    proc = subprocess.run(["grep", "Cpus_allowed_list", "/proc/self/status"],
                          capture_output=True, text=True, check=True, preexec_fn=_pin)  # fmt: skip
    assert proc.stdout.split()[-1] == str(PINNED_CPU)


def test_without_a_terminal_progress_is_a_line_per_finished_point(tmp_path: Path) -> None:
    """A CI log: one line per point once all its repetitions are stored (with how they
    ended), status lines at most every 10 s, the final tally; no redrawn bar."""
    experiment = tmp_path / "log.toml"
    experiment.write_text("""
question = "How many lines does a run write to a log?"
repetitions = 3

[defaults]
scenario = "records"
iterations = 50
warmup = 0

[matrix]
variant = ["null"]
payload = [16, 64, 256, 1024]
""")
    started = time.monotonic()
    proc = tlsbench("run", str(experiment), "--db", str(tmp_path / "r.db"))
    elapsed = time.monotonic() - started
    assert proc.returncode == 0, proc.stderr
    lines = proc.stderr.splitlines()
    assert not any("\r" in line for line in lines)
    finished = [line for line in lines if ": 3 ok" in line]
    assert len(finished) == 4, proc.stderr
    assert {line.split("  ", 1)[1].split(":")[0] for line in finished} == {
        f"records_{size}B @ null" for size in (16, 64, 256, 1024)
    }
    status = [line for line in lines if line.startswith("[") and line not in finished
              and "done" not in line.rsplit("  ", 1)[-1]]  # fmt: skip
    assert len(status) <= elapsed / 10 + 1, proc.stderr
    assert "run 1: 12 ok, 0 unsupported, 0 failed" in proc.stderr


HANDSHAKE = """
question = "Does a run store the digest of the certificates it used?"
repetitions = 1

[defaults]
scenario = "handshake"
tls = "1.3"
cert = "rsa2048"
iterations = 3
warmup = 0

[matrix]
variant = ["null"]
"""


def test_a_run_stores_its_credentials_digest_and_resume_refuses_other_ones(
    tmp_path: Path,
) -> None:
    """The digest stored is the one `tlsbench certs` prints; a run whose stored digest is not
    this machine's set is not resumed (its figures would mix two sets)."""
    experiment = tmp_path / "handshake.toml"
    experiment.write_text(HANDSHAKE)
    db = tmp_path / "r.db"
    proc = tlsbench("run", str(experiment), "--db", str(db), "--quiet")
    assert proc.returncode == 0, proc.stderr
    stored = json.loads(Store(db).run("latest")["environment"])["credentials"]
    printed = json.loads(tlsbench("certs", "rsa2048", "--json").stdout)
    assert stored["layout"] == printed["layout"]
    assert stored["kinds"] == {"rsa2048": printed["kinds"]["rsa2048"]["sha256"]}
    with sqlite3.connect(db) as conn:
        conn.execute("UPDATE runs SET status = 'failed', environment = json_set(environment, "
                     "'$.credentials.kinds.rsa2048', 'f00d')")  # fmt: skip
    again = tlsbench("run", "--resume", "latest", "--db", str(db))
    assert again.returncode == 2, again.stderr
    assert "its rsa2048 certificates had other bytes than this machine's" in again.stderr
