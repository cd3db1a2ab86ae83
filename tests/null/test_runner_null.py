"""The runner with the null variant's real driver: the run order follows the stored seed, stray
library switches are filtered and recorded, and every repetition carries the driver's own
calibration."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from drivers import tlsbench
from tlsbench.core.store import Store
from tlsbench.run.runner import run_order

pytestmark = pytest.mark.slow


def test_run_order_is_shuffled_per_repetition_by_the_stored_seed(tmp_path: Path, build_of) -> None:
    build_of("null")
    experiment = tmp_path / "order.toml"
    experiment.write_text("""
question = "Does the run order follow the seed?"
repetitions = 3

[defaults]
scenario = "records"
iterations = 20
warmup = 1

[matrix]
variant = ["null"]
payload = [16, 32, 64, 128, 256]
""")
    db = tmp_path / "r.db"
    orders = []
    stray = {**os.environ, "OPENSSL_ia32cap": "~0x0", "GNUTLS_CPUID_OVERRIDE": "1"}
    for seed in ("7", "7", "8"):
        proc = tlsbench("run", str(experiment), "--seed", seed, "--db", str(db), "--quiet",
                        env=stray)  # fmt: skip
        assert proc.returncode == 0, proc.stderr
        store = Store(db)
        run = store.run("latest")
        env = json.loads(run["environment"])
        assert env["order_seed"] == int(seed)
        # Stray library switches in the user's shell are recorded as filtered out.
        assert {"OPENSSL_ia32cap", "GNUTLS_CPUID_OVERRIDE"} <= set(env["filtered_env"])
        points = {p.id: p for p in store.points(run["id"])}
        executed = store.execute(
            "SELECT point_id, repetition FROM results WHERE point_id IN "
            f"({','.join('?' * len(points))}) ORDER BY id",
            list(points),
        )
        assert [(r, p.id) for r, p in run_order(list(points.values()), 3, int(seed))] == [
            (rep, pid) for pid, rep in executed
        ]
        # Every round runs every point once before the next round starts.
        assert [rep for _, rep in executed] == [0] * 5 + [1] * 5 + [2] * 5
        orders.append([points[pid].name for pid, _ in executed])
        # Every repetition times the calibration workload before and after its point.
        for pid in points:
            for result in store.results(pid):
                calibration = json.loads(result["output"])["calibration"]
                assert calibration["workload"].startswith("xorshift64*")
                assert calibration["before_ns"] > 0 and calibration["after_ns"] > 0
        store.close()
    assert orders[0] == orders[1] and orders[0] != orders[2]
    rounds = [orders[0][i : i + 5] for i in range(0, 15, 5)]
    assert len({tuple(r) for r in rounds}) > 1  # not the same order in every repetition
