"""The report's certificate section (scenarios/tls_certificates.py): TCP segments and slow
start's rounds for a flight (pure logic), and on the fake driver the section a run of two
certificates gets, opening the report, and none for a run of one."""

from __future__ import annotations

from pathlib import Path

import pytest

from tlsbench.core.store import Store
from tlsbench.report import export, load_run
from tlsbench.run import experiments
from tlsbench.run.runner import Runner
from tlsbench.scenarios.tls_certificates import INITIAL_WINDOW, MSS, segments, window_rounds


@pytest.mark.parametrize(
    ("flight", "expected"),
    [(1, 1), (MSS, 1), (MSS + 1, 2), (INITIAL_WINDOW * MSS, 10), (INITIAL_WINDOW * MSS + 1, 11)],
)
def test_segments_are_the_flight_over_the_mss_rounded_up(flight: int, expected: int) -> None:
    assert segments(flight) == expected


@pytest.mark.parametrize(
    ("flight_segments", "rounds"),
    # 10 segments leave at once; 11..30 need a second round (10 + 20), 31..70 a third.
    [(1, 1), (10, 1), (11, 2), (30, 2), (31, 3), (70, 3), (71, 4)],
)
def test_slow_start_doubles_the_window_each_round(flight_segments: int, rounds: int) -> None:
    assert window_rounds(flight_segments) == rounds


def run_of(tmp_path: Path, variant: str, certs: list[str]) -> tuple[Store, int]:
    path = tmp_path / "exp.toml"
    path.write_text(
        'question = "What does a chain cost?"\nrepetitions = 1\ntimeout = 60\n'
        f"[defaults]\niterations = 3\n[[matrix]]\nvariant = [{variant!r}]\n"
        f"scenario = ['handshake']\ncert = {certs!r}\nchain = [1, 2]\n"
    )
    store = Store(tmp_path / "r.db")
    return store, execute(store, path)


def execute(store: Store, path: Path) -> int:
    loaded = experiments.load(str(path))
    runner = Runner(store, quiet=True)
    run_id = runner.start(loaded, loaded.points, 1, 60)
    runner.execute(run_id, 60)
    return run_id


def test_a_run_of_several_certificates_opens_with_their_costs(tmp_path: Path) -> None:
    # Classical kinds: the unit tier makes no post-quantum set (the pinned OpenSSL does).
    store, run_id = run_of(tmp_path, "openssl-3.5.x", ["ecdsa-p256", "rsa2048"])
    model = load_run(store, run_id)
    rows = model.certificates
    assert [(r.cert, r.chain) for r in rows] == [
        ("rsa2048", 1), ("rsa2048", 2), ("ecdsa-p256", 1), ("ecdsa-p256", 2)]  # fmt: skip
    # The fake driver's flights: a 1,500-byte server flight, two segments, one round.
    assert {(r.server_flight_bytes, r.server_flight_segments, r.exceeds_window,
             r.window_rounds) for r in rows} == {(1500.0, 2, False, 1)}  # fmt: skip
    assert all(r.status == "ok" and r.client_ms is not None for r in rows)
    text = export(model, "markdown")
    assert "What a certificate chain costs a handshake" in text
    # It opens the report: before the handshake section's tables.
    assert text.index("What a certificate chain costs") < text.index("Handshake heap")


def test_the_baseline_alone_has_no_rows(tmp_path: Path) -> None:
    store, run_id = run_of(tmp_path, "null", ["ecdsa-p256", "rsa2048"])
    assert load_run(store, run_id).certificates == []


def test_one_certificate_and_chain_has_no_section(tmp_path: Path) -> None:
    path = tmp_path / "exp.toml"
    path.write_text(
        'question = "q?"\nrepetitions = 1\ntimeout = 60\n[defaults]\niterations = 3\n'
        "[[matrix]]\nvariant = ['null']\nscenario = ['handshake']\n"
    )
    store = Store(tmp_path / "r.db")
    assert load_run(store, execute(store, path)).certificates == []
