"""The `connections` family (src/tlsbench/scenarios/connections.py) on the fake driver: its
experiment keys and their checks, the shipped experiment, a run that stores both drivers'
series, the report's table, plot, summary and metrics, and instruction mode's refusal."""

from __future__ import annotations

import statistics
from pathlib import Path

import pytest

from tlsbench import scenarios
from tlsbench.core.errors import UserError
from tlsbench.core.store import Store
from tlsbench.report import export, load_run
from tlsbench.reportkit.metrics import metrics
from tlsbench.run import experiments
from tlsbench.run.runner import Runner
from tlsbench.scenarios import connections, modes

HEAP_SERIES = {f"{side}_{figure}_per_connection" for side in ("client", "server")
               for figure in ("heap", "usable", "peak")}  # fmt: skip
RSS_SERIES = {"rss_per_connection", "rss_peak_per_connection"}


def experiment(tmp_path: Path, body: str, name: str = "conns") -> experiments.Experiment:
    path = tmp_path / f"{name}.toml"
    path.write_text('question = "What does an open connection cost?"\nrepetitions = 2\n'
                    'timeout = 60\n' + body)  # fmt: skip
    return experiments.load(str(path))


MATRIX = """
[defaults]
iterations = 50
[[matrix]]
variant = ["null"]
scenario = ["connections"]
connections = [3, 30]
release_buffers = [false, true]
"""


def test_points_are_named_and_passed_to_the_driver(tmp_path: Path) -> None:
    points = experiment(tmp_path, MATRIX).points
    assert [p.name for p in points] == [
        "connections_c3_keep-buffers", "connections_c3_release-buffers",
        "connections_c30_keep-buffers", "connections_c30_release-buffers"]  # fmt: skip
    # iterations from [defaults] is dropped: one measurement per process.
    assert points[1].options == {"connections": 3, "release_buffers": True}
    # A boolean key is the driver's flag: present when true, absent when false.
    assert points[1].driver_args() == ["--connections", "3", "--release-buffers"]
    assert points[0].driver_args() == ["--connections", "3"]
    # The load family's key and this one are one Key (one check, one name part).
    load_key = next(k for k in scenarios.by_scenario("load").keys if k.name == "connections")
    assert connections.FAMILY.keys[0] is load_key


@pytest.mark.parametrize(
    "line, said",
    [("connections = [0]", r"connections = 0 .*a whole number, 1\.\.10000"),
     ("connections = [10001]", r"a whole number, 1\.\.10000"),
     ('release_buffers = ["yes"]', r"release_buffers = .yes.*true or false"),
     ('transport = ["tcp"]', r'transport = .tcp.*"memory" only: connections holds its '
                             r"connections over the in-memory pair"),
     ('io = ["fd"]', r'"callbacks" only'),
     ('kx = ["rsa"]', r'with tls = "1.2" only')],
)  # fmt: skip
def test_bad_values_are_refused_before_anything_runs(tmp_path: Path, line: str,
                                                     said: str) -> None:  # fmt: skip
    body = f'[[matrix]]\nvariant = ["null"]\nscenario = ["connections"]\n{line}\n'
    with pytest.raises(UserError, match=said) as caught:
        experiment(tmp_path, body)
    assert caught.value.exit_code == 2


def test_the_shipped_experiment_covers_every_tls_library_of_libraries() -> None:
    """Every library of `libraries` that runs its TLS 1.3 job (BearSSL runs TLS 1.2 only)."""
    shipped = experiments.load("connections")
    libraries = experiments.load("libraries")
    assert shipped.repetitions == 3 and shipped.timeout >= 900
    assert {p.variant for p in shipped.points} == {
        p.variant for p in libraries.points if p.options.get("tls") == "1.3"
    }
    for variant in {p.variant for p in shipped.points}:
        mine = [p for p in shipped.points if p.variant == variant]
        assert sorted((p.options["connections"], p.options["release_buffers"]) for p in mine) \
            == [(n, on) for n in (1, 10, 100, 1000, 10000) for on in (False, True)]  # fmt: skip
        assert {p.options["suite"] for p in mine} == {"TLS_AES_256_GCM_SHA384"}


@pytest.fixture
def ran(tmp_path: Path) -> tuple[Store, int]:
    """A run on the fake driver (function scope: the unit tier's fake builds are per test)."""
    loaded = experiment(tmp_path, MATRIX + """
[[matrix]]
variant = ["openssl-3.5.x"]
scenario = ["connections"]
connections = [30]
""")  # fmt: skip
    store = Store(tmp_path / "r.db")
    runner = Runner(store, quiet=True)
    run_id = runner.start(loaded, loaded.points, 2, 60)
    tally = runner.execute(run_id, 60)
    bad = [(p.name, r["stderr_tail"]) for p in store.points(run_id) for r in store.results(p.id)
           if r["status"] != "ok"]  # fmt: skip
    assert tally.ok == 10 and not tally.failed, bad
    return store, run_id


def test_a_repetition_stores_the_series_of_both_drivers(ran: tuple[Store, int]) -> None:
    store, run_id = ran
    assert modes.heap_driver_series("connections") == HEAP_SERIES
    for point in store.points(run_id):
        assert set(store.series_names(point.id)) == HEAP_SERIES | RSS_SERIES, point.name
        for result in store.results(point.id):
            assert result["status"] == "ok"
        # One sample per series and repetition: the process is the unit.
        assert len(store.samples(point.id, "client_heap_per_connection")) == 2
        assert len(store.samples(point.id, "rss_per_connection")) == 2


def test_the_report_has_memory_per_connection(ran: tuple[Store, int]) -> None:
    store, run_id = ran
    model = load_run(store, run_id)
    rows = model.connections
    # Each variant's rows by buffer setting, then N as a number ("c30" sorts before "c3").
    # Variants as the run has them, each one's rows together.
    assert sorted((r.variant, r.connections, r.release_buffers) for r in rows) == [
        ("null", 3, False), ("null", 3, True), ("null", 30, False), ("null", 30, True),
        ("openssl-3.5.x", 30, False)]  # fmt: skip
    assert [(r.connections, r.release_buffers) for r in rows if r.variant == "null"] == [
        (3, False), (30, False), (3, True), (30, True)]  # fmt: skip
    variants = [r.variant for r in rows]
    assert variants == sorted(variants, key=variants.index)
    for r in rows:
        client = store.samples(next(p.id for p in store.points(run_id)
                                    if p.name == r.point and p.variant == r.variant),
                               "client_heap_per_connection")  # fmt: skip
        assert r.client_heap == statistics.median(client)
        assert r.heap == r.client_heap + r.server_heap and r.rss and r.rss_peak
        assert r.repetitions == 2
    markdown = export(model, "markdown")
    assert "## Memory per open connection" in markdown
    # (The case column is left out where every row's case is the same.)
    assert "| variant | N | release buffers | client heap | server heap | client peak | " \
        "server peak | RSS | RSS peak |" in markdown  # fmt: skip
    assert "| null | 30 | yes |" in markdown
    # The plot: heap and RSS per connection against N, for a run with several N.
    plot = connections.heap_per_connection_plot(model)
    assert plot is not None and plot.figure.axes[0].get_xscale() == "log"
    assert {line.get_label() for line in plot.figure.axes[0].get_lines()} == {
        "null", "null release-buffers", "openssl-3.5.x"}  # fmt: skip
    # The summary: heap per connection at the variant's largest N, buffers kept.
    cells = {c.variant: c for c in connections.connections_summary(model)}
    largest = next(r for r in rows if r.variant == "null" and r.connections == 30
                   and not r.release_buffers)  # fmt: skip
    assert cells["null"].value == largest.heap and cells["null"].case == "N = 30"
    assert cells["null"].column == "heap per connection"
    measures = {(m.benchmark, m.measure) for m in metrics(model)}
    assert (f"null {largest.point} client", "heap-per-connection") in measures
    assert (f"null {largest.point}", "rss-per-connection") in measures


def test_one_n_has_no_plot(tmp_path: Path) -> None:
    loaded = experiment(tmp_path, '[[matrix]]\nvariant = ["null"]\nscenario = ["connections"]\n'
                        "connections = [5]\n")  # fmt: skip
    store = Store(tmp_path / "r.db")
    runner = Runner(store, quiet=True)
    run_id = runner.start(loaded, loaded.points, 1, 60)
    assert runner.execute(run_id, 60).ok == 1
    model = load_run(store, run_id)
    assert len(model.connections) == 1
    assert connections.heap_per_connection_plot(model) is None


def test_instruction_mode_is_refused_with_its_reason(tmp_path: Path) -> None:
    loaded = experiment(tmp_path, '[[matrix]]\nvariant = ["null"]\nscenario = ["connections"]\n'
                        "connections = [5]\n")  # fmt: skip
    store = Store(tmp_path / "r.db")
    runner = Runner(store, quiet=True)
    runner.mode = "instructions"
    run_id = runner.start(loaded, loaded.points, 1, 60)
    tally = runner.execute(run_id, 60)
    assert tally.ok == 0 and not tally.failed
    (point,) = store.points(run_id)
    (result,) = store.results(point.id)
    assert result["status"] == "unsupported"
    assert "measures memory held, not work done" in str(result["stderr_tail"]) + str(
        result["output"])  # fmt: skip
