"""`tlsbench run` of `connections` points with the null variant's real driver: a repetition
stores the heap driver's per-connection heap and the timing driver's resident set, the
release of buffers the null adapter cannot do is unsupported with its reason, and the report
has the section."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from drivers import tlsbench
from tlsbench.core.store import Store

pytestmark = pytest.mark.slow

HEAP_SERIES = {f"{side}_{figure}_per_connection" for side in ("client", "server")
               for figure in ("heap", "usable", "peak")}  # fmt: skip
RSS_SERIES = {"rss_per_connection", "rss_peak_per_connection"}


def test_a_connections_run_stores_both_drivers_series(tmp_path: Path, build_of) -> None:
    build_of("null")
    experiment = tmp_path / "held.toml"
    experiment.write_text("""
question = "What does an open null connection cost?"
repetitions = 2
timeout = 120

[[matrix]]
variant = ["null"]
scenario = ["connections"]
connections = [4, 40]
release_buffers = [false, true]
""")
    db = tmp_path / "r.db"
    proc = tlsbench("run", str(experiment), "--db", str(db), "--quiet")
    assert proc.returncode == 0, proc.stderr
    store = Store(db)
    run = store.run("latest")
    points = {p.name: p for p in store.points(run["id"])}
    assert set(points) == {f"connections_c{n}_{buffers}" for n in (4, 40)
                           for buffers in ("keep-buffers", "release-buffers")}  # fmt: skip
    for n in (4, 40):
        kept = points[f"connections_c{n}_keep-buffers"]
        assert set(store.series_names(kept.id)) == HEAP_SERIES | RSS_SERIES
        for result in store.results(kept.id):
            assert result["status"] == "ok"
            output = json.loads(result["output"])
            assert output["params"]["connections"] == n
            assert output["measure"]["heap"] == "tlsbench-driver-heap"
            assert set(output["measure"]["heap_series"]) == HEAP_SERIES
        # The null adapter's connection holds its record buffer (16 KiB) and a little more:
        # both sides' heap per connection is that, whatever N (no shared state grows).
        for side in ("client", "server"):
            heap = store.samples(kept.id, f"{side}_heap_per_connection")
            usable = store.samples(kept.id, f"{side}_usable_per_connection")
            assert len(heap) == 2 and all(16384 <= h <= 17000 for h in heap), heap
            assert all(u >= h for u, h in zip(usable, heap, strict=True))
        assert all(r > 0 for r in store.samples(kept.id, "rss_peak_per_connection"))
        released = points[f"connections_c{n}_release-buffers"]
        for result in store.results(released.id):
            assert result["status"] == "unsupported"
            assert "record buffer is part of its connection" in result["stderr_tail"]
    report = tlsbench("report", "--db", str(db))
    assert report.returncode == 0, report.stderr
    assert "## Memory per open connection" in report.stdout
