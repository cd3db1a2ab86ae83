"""`tlsbench compare`: verdicts from per-repetition figures, warnings, --json, --threshold.

The stores are written through the store's own API with the shape the driver produces
(statistics of figures, no driver involved); the CLI is run as a user runs it.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from drivers import tlsbench
from tlsbench.core.errors import UserError
from tlsbench.core.stats import MACHINE_DRIFT, NO_DIFFERENCE, SLOWER, TOO_FEW
from tlsbench.core.store import Store
from tlsbench.reportkit.compare import check_same_credentials, compare_runs, run_warnings

CREDENTIALS = {"layout": "v2", "kinds": {"rsa2048": "a" * 64, "ecdsa-p256": "b" * 64}}
ENV = {"cpu": {"model": "Test CPU"}, "cpu_flags": "aes sse2", "credentials": CREDENTIALS}
BUILD = {"library": "null", "cache_key": "k1"}


def _run(
    store: Store,
    centres: list[float],
    *,
    text: str = "# experiment\n",
    env: dict[str, Any] | None = None,
    build: dict[str, Any] | None = None,
    failed: int = 0,
    calibration: list[float] | None = None,
    seed: int = 0,
    step: float | None = None,
    machines: list[int] | None = None,
) -> int:
    """One point, one repetition per centre: 50 handshake times around that centre (with
    `step`: rounded to multiples of it, declared as the series' resolution, as TSC series)."""
    rng = np.random.default_rng(seed)
    run = store.new_run("t", "?", "measure", len(centres) + failed, env or ENV, text, "c0")
    point = {"name": "handshake_1.3", "variant": "null", "library": "null",
             "scenario": "handshake", "params": {}, "build": build or BUILD}  # fmt: skip
    store.add_points(run, [point])
    point = store.points(run)[0]
    for rep, centre in enumerate(centres):
        samples = rng.normal(centre, 5, 50)
        summary: dict[str, Any] = {"unit": "ns"}
        if step is not None:
            # Each process calibrates its own TSC rate: its step in ns differs a little.
            own = step * (1 + rep * 1e-6)
            samples, summary["resolution_ns"] = np.round(samples / own) * own, own
        output: dict[str, Any] = {
            "summary": {"client_cpu_ns": summary},
            "samples": {"client_cpu_ns": [float(x) for x in samples]},
        }
        if calibration:
            output["calibration"] = {"workload": "test", "before_ns": calibration[rep],
                                     "after_ns": calibration[rep]}  # fmt: skip
        machine = machines[rep] if machines else None
        store.add_result(point.id, rep, "ok", 0, None, 0.1, "t", output, "", machine)
    for rep in range(len(centres), len(centres) + failed):
        store.add_result(point.id, rep, "failed", 1, None, 0.1, "t", None, "boom")
    store.finish_run(run, "done")
    return run


def test_same_machine_state_is_no_difference_and_slowdown_is_slower(tmp_path: Path) -> None:
    store = Store(tmp_path / "s.db")
    a = _run(store, [1000, 1010, 990, 1005, 995], seed=1)
    b = _run(store, [1003, 992, 1008, 998, 1001], seed=2)
    c = _run(store, [1200, 1210, 1190, 1205, 1195], seed=3)
    (same,) = compare_runs(store, a, b)
    assert (same.verdict, same.repetitions_a, same.warnings) == (NO_DIFFERENCE, 5, [])
    (slow,) = compare_runs(store, a, c)
    assert slow.verdict == SLOWER and slow.ratio == pytest.approx(1.2, rel=0.01)
    assert slow.p_value is not None and slow.p_value < 0.05
    # The same 20 % is "no difference" under a 25 % threshold.
    assert compare_runs(store, a, c, threshold=0.25)[0].verdict == NO_DIFFERENCE


def test_three_repetitions_cannot_decide(tmp_path: Path) -> None:
    store = Store(tmp_path / "s.db")
    a, b = _run(store, [1000, 1000, 1000]), _run(store, [2000, 2000, 2000])
    assert compare_runs(store, a, b)[0].verdict == TOO_FEW


def test_calibration_moving_with_the_series_is_machine_drift(tmp_path: Path) -> None:
    store = Store(tmp_path / "s.db")
    a = _run(store, [1000, 1010, 990, 1005, 995], calibration=[500.0] * 5)
    b = _run(store, [1200, 1210, 1190, 1205, 1195], calibration=[590.0] * 5)
    c = _run(store, [1200, 1210, 1190, 1205, 1195], calibration=[501.0] * 5)
    (drift,) = compare_runs(store, a, b)
    assert drift.verdict == MACHINE_DRIFT and drift.calibration_ratio == pytest.approx(1.18)
    assert compare_runs(store, a, c)[0].verdict == SLOWER  # the machine held still


def test_normalise_divides_each_repetition_by_its_calibration(tmp_path: Path) -> None:
    store = Store(tmp_path / "s.db")
    a = _run(store, [1000, 1010, 990, 1005, 995], calibration=[500.0] * 5, seed=1)
    # The machine ran 18 % slower for the whole of B: drift by default, nothing normalised.
    b = _run(store, [1200, 1210, 1190, 1205, 1195], calibration=[590.0] * 5, seed=2)
    (row,) = compare_runs(store, a, b, normalise=True)
    assert row.normalised and row.verdict == NO_DIFFERENCE
    assert row.median_b == pytest.approx(1200 * 500 / 590, rel=0.01)
    assert compare_runs(store, a, b)[0].verdict == MACHINE_DRIFT
    # Per repetition: two slow repetitions of B, each with its own slow calibration.
    c = _run(store, [1000, 1200, 1000, 1200, 1000], calibration=[500, 600, 500, 600, 500])
    (mixed,) = compare_runs(store, a, c, normalise=True)
    assert mixed.median_b == pytest.approx(1000, rel=0.01) and mixed.verdict == NO_DIFFERENCE
    # A real slowdown on a steady machine stays one.
    d = _run(store, [1200, 1210, 1190, 1205, 1195], calibration=[501.0] * 5, seed=3)
    assert compare_runs(store, a, d, normalise=True)[0].verdict == SLOWER
    # Without a calibration in every repetition nothing is normalised, and the row says so.
    e = _run(store, [1200, 1210, 1190, 1205, 1195], seed=4)
    (raw,) = compare_runs(store, a, e, normalise=True)
    assert not raw.normalised and raw.verdict == SLOWER
    assert "not normalised: a repetition has no calibration" in raw.warnings


def test_a_median_of_a_few_tsc_steps_needs_a_change_of_two_steps(tmp_path: Path) -> None:
    store = Store(tmp_path / "s.db")
    # Three 20 ns steps against four: +33 %, but one step, which the timer alone can give.
    a = _run(store, [60.0] * 5, step=20.0, seed=1)
    b = _run(store, [80.0] * 5, step=20.0, seed=2)
    (row,) = compare_runs(store, a, b)
    assert row.ratio == pytest.approx(4 / 3)
    assert row.threshold == pytest.approx(2 * 20 / 60, rel=1e-4)
    assert row.resolution == pytest.approx(20.0, rel=1e-4)
    assert row.verdict == NO_DIFFERENCE
    # Three steps (60 -> 120 ns) are a change; so is one step where none is declared.
    c = _run(store, [120.0] * 5, step=20.0, seed=3)
    assert compare_runs(store, a, c)[0].verdict == SLOWER
    d, e = _run(store, [60.0] * 5, seed=1), _run(store, [80.0] * 5, seed=2)
    (plain,) = compare_runs(store, d, e)
    assert (plain.verdict, plain.threshold, plain.resolution) == (SLOWER, 0.05, None)
    # A long series on the same step keeps the default threshold.
    f = _run(store, [10_000.0] * 5, step=20.0, seed=4)
    assert compare_runs(store, f, f)[0].threshold == 0.05


def test_warnings_for_what_is_not_comparable(tmp_path: Path) -> None:
    store = Store(tmp_path / "s.db")
    a = _run(store, [1000] * 5)
    b = _run(
        store, [1000] * 4, text="# other\n", env={"cpu": {"model": "Other"}, "cpu_flags": "sse2"},
        build={"library": "null", "cache_key": "k2"}, failed=1,
    )  # fmt: skip
    notes = run_warnings(store, a, b)
    assert any("different CPUs" in n for n in notes)
    assert any("different CPU flags" in n for n in notes)
    assert any("different experiment texts" in n for n in notes)
    (row,) = compare_runs(store, a, b)
    assert any("built differently (k1 / k2)" in w for w in row.warnings)
    assert any("1 of 5 repetitions failed in B" in w for w in row.warnings)


def test_runs_made_with_other_certificates_are_not_judged(tmp_path: Path) -> None:
    store = Store(tmp_path / "s.db")
    a = _run(store, [1000] * 5)
    other = {"layout": "v2", "kinds": {"rsa2048": "c" * 64}}
    b = _run(store, [1000] * 5, env={**ENV, "credentials": other})
    with pytest.raises(UserError, match=r"runs 1 and 2 were made with different certificate "
                       r"sets \(rsa2048: other keys\)"):  # fmt: skip
        check_same_credentials(store, a, b)
    # Kinds one run used and the other did not are no conflict.
    c = _run(store, [1000] * 5, env={**ENV, "credentials": {"layout": "v2", "kinds": {}}})
    check_same_credentials(store, a, c)
    assert not [n for n in run_warnings(store, a, c) if "certificate" in n]


def test_a_run_that_names_no_certificate_set_is_warned_about(tmp_path: Path) -> None:
    store = Store(tmp_path / "s.db")
    a = _run(store, [1000] * 5)
    old = _run(store, [1000] * 5, env={k: v for k, v in ENV.items() if k != "credentials"})
    check_same_credentials(store, a, old)  # not refused: it cannot be known
    [note] = [n for n in run_warnings(store, a, old) if "certificate" in n]
    assert note.startswith(f"run {old} names no certificate set")


def _machine(store: Store, host: str) -> int:
    return store.machine({"host": host, "cpu_model": f"CPU of {host}", "cpu_flags": "aes",
                          "kernel": "6.1", "commit_id": "c0"})  # fmt: skip


def test_repetitions_of_several_machines_are_pooled_only_when_asked(tmp_path: Path) -> None:
    db = tmp_path / "s.db"
    store = Store(db)
    one, two = _machine(store, "alpha"), _machine(store, "beta")
    a = _run(store, [1000] * 5, machines=[one, one, two, two, one])
    b = _run(store, [1000] * 5, machines=[one] * 5, seed=1)
    c = _run(store, [1000] * 5, machines=[two] * 5, seed=2)
    with pytest.raises(
        UserError, match=r"on 2 machines, which differ in host \(alpha, beta\); CPU"
    ):
        compare_runs(store, a, b)
    (row,) = compare_runs(store, a, b, pool_machines=True)
    assert "A pools repetitions of 2 machines" in row.warnings
    # Two runs of two machines are compared (that is what comparing machines is), and said.
    (row,) = compare_runs(store, b, c)
    assert any("A and B measured on machines that differ in host (alpha / beta)" in w
               for w in row.warnings)  # fmt: skip
    assert any("differ in host (alpha / beta); CPU (CPU of alpha / CPU of beta)" in n
               for n in run_warnings(store, b, c))  # fmt: skip
    store.close()
    refused = tlsbench("compare", str(a), str(b), "--db", str(db))
    assert refused.returncode == 2 and "--pool-machines" in refused.stderr
    assert "Traceback" not in refused.stderr
    pooled = tlsbench("compare", str(a), str(b), "--pool-machines", "--db", str(db))
    assert pooled.returncode == 0 and "A pools repetitions of 2 machines" in pooled.stdout


def test_cli_json_and_markdown(tmp_path: Path) -> None:
    db = tmp_path / "s.db"
    store = Store(db)
    _run(store, [1000, 1010, 990, 1005, 995], seed=1)
    _run(store, [1200, 1210, 1190, 1205, 1195], seed=2)
    store.close()
    proc = tlsbench("compare", "1", "2", "--json", "--threshold", "0.1", "--db", str(db))
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    assert doc["threshold"] == 0.1
    (series,) = doc["series"]
    assert series["verdict"] == "slower" and series["threshold"] == 0.1
    assert series["ci_low"] <= series["ratio"] <= series["ci_high"]
    assert {"p_value", "warnings", "point", "series", "variant", "resolution"} <= set(series)
    assert doc["quantum_steps"] == 2 and doc["instruction_threshold"] == 0.01
    md = tlsbench("compare", "1", "2", "--db", str(db))
    assert md.returncode == 0 and "practical threshold of 5.0%" in md.stdout
    assert "| slower |" in md.stdout and "normalised" not in md.stdout
    assert doc["normalised"] is None and series["normalised"] is False
    # The test runs have no calibration: --normalise says it did nothing to them.
    md = tlsbench("compare", "1", "2", "--normalise", "--db", str(db))
    assert md.returncode == 0 and "Time figures normalised (--normalise)" in md.stdout
    assert "not normalised: a repetition has no calibration" in md.stdout
    doc = json.loads(tlsbench("compare", "1", "2", "--normalise", "--json", "--db", str(db)).stdout)
    assert "--normalise" in doc["normalised"]


@pytest.mark.parametrize("value", ["-0.1", "1.5", "nan", "x"])
def test_cli_bad_threshold(tmp_path: Path, value: str) -> None:
    db = tmp_path / "s.db"
    store = Store(db)
    _run(store, [1000] * 5)
    store.close()
    before = db.read_bytes()
    proc = tlsbench("compare", "1", "1", "--threshold", value, "--db", str(db))
    assert proc.returncode == 2 and "threshold" in proc.stderr
    assert "Traceback" not in proc.stderr and db.read_bytes() == before
