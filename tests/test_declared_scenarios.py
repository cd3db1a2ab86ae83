"""What the driver declares of its scenarios (`info --json`), read from a real built driver,
against what its runs emit and against the Python side's own lists of scenarios."""

from __future__ import annotations

import argparse
import json
import subprocess

import pytest

from drivers import run_driver
from tlsbench import cli, drive, experiments, runner
from tlsbench.scenarios import Declared, declared

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def null(build_of):
    return build_of("null")


@pytest.fixture(scope="module")
def table(null) -> Declared:
    """Read here from the null driver itself, as scenarios.declared() does."""
    proc = subprocess.run([str(null.program("tlsbench-driver")), "info", "--json"],
                          capture_output=True, text=True, check=True)  # fmt: skip
    return Declared.from_json(json.loads(proc.stdout)["declared"])


def test_every_scenario_is_declared_with_its_kind(table: Declared) -> None:
    assert tuple(table.scenario_table) == table.scenarios
    assert declared().scenario_table == table.scenario_table  # the accessor's own reading
    handshake = table.scenario("handshake")
    assert {"tls", "one_process", "tcp", "heap", "instructions"} <= handshake.flags
    assert handshake.defaults == {"iterations": 100, "warmup": 5}
    assert [s.name for s in handshake.series] == ["client_cpu_ns", "server_cpu_ns", "wall_ns",
                                                   "handshakes_per_s"]  # fmt: skip
    assert table.scenario("records").defaults["payload"] == 256
    assert table.scenario("load").defaults["pattern"] == "keepalive"
    assert "role" in table.scenario("peer").options
    assert not table.scenario("aead").has("tls") and table.scenario("aead").options == (
        "aead", "payload")  # fmt: skip
    for name in ("peer", "serve", "load"):
        assert table.scenario(name).has("two_process") and not table.scenario(name).has("tcp")
    # Every numeric option has its range, the experiments' keys among them.
    assert {"chain", "record_size", "payload", "bytes", "iterations", "warmup"} <= set(
        table.ranges)  # fmt: skip


@pytest.mark.parametrize(
    "scenario, args, measure",
    [("handshake", ["--iterations", "3"], "heap"),
     ("resume", ["--iterations", "3"], "time"),  # the null adapter cannot: nothing emitted
     ("records", ["--iterations", "70", "--payload", "64"], "heap"),
     ("connections", ["--connections", "3"], "heap"),
     ("connections", ["--connections", "3"], "time"),
     ("bulk", ["--iterations", "2", "--bytes", "100000"], "time"),
     ("aead", ["--iterations", "10", "--payload", "64"], "time"),
     ("info", [], "time")],
)  # fmt: skip
def test_a_run_emits_only_declared_series(null, table, scenario, args, measure) -> None:
    """The driver refuses to emit a series its scenario does not declare, so what `info`
    says a scenario emits is what its runs emit."""
    run = run_driver(null, scenario, *args, measure=measure)
    assert run.output is not None, run.stderr
    names = {s.name for s in table.scenario(scenario).series}
    assert set(run.output.get("samples", {})) <= names
    if run.code == 0 and table.scenario(scenario).has("one_process"):
        assert run.output["samples"], "a one-process run that emits no series"


def _drive_choices() -> tuple[str, ...]:
    """The scenarios `tlsbench drive` accepts (cli.py's own list)."""
    verbs = next(a for a in cli.parser()._actions if isinstance(a, argparse._SubParsersAction))
    scenario = next(a for a in verbs.choices["drive"]._actions if a.dest == "scenario")
    assert scenario.choices is not None
    return tuple(scenario.choices)


def test_the_python_side_lists_the_drivers_scenarios(table: Declared) -> None:
    """Until the Python side reads the declaration, its own lists must say the same."""
    assert _drive_choices() == table.scenarios
    assert set(table.with_flag("tls")) == drive.TLS_SCENARIOS
    # The runner measures these in one process: heap ones with both drivers, the rest
    # with the timing driver only; deterministic mode counts exactly these.
    measured = set(table.with_flag("instructions"))
    assert measured & set(table.with_flag("heap")) == runner.HEAP_SCENARIOS
    assert measured - set(table.with_flag("heap")) == drive.TIMED_ONLY
    assert set(runner.COLLECT_SIDES) == measured
    # Experiments: every scenario but code-size is one of the driver's (interop runs peer,
    # load runs serve and load), and the one-process ones take the options the driver says.
    driver_side = {"interop": "peer", "load": "serve"}
    for name in experiments.SCENARIOS:
        assert name == "code-size" or driver_side.get(name, name) in table.scenarios
    for name in measured:
        keys = set(experiments.SCENARIO_KEYS[name]) & {"payload", "bytes", "aead"}
        assert keys == set(table.scenario(name).options) & {"payload", "bytes", "aead"}, name
