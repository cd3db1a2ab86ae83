"""What the driver declares of its scenarios (`info --json`), read from a real built driver,
against what its runs emit and against what the Python side's families ask of it."""

from __future__ import annotations

import json
import os
import subprocess

import pytest

from drivers import run_driver
from tlsbench import scenarios
from tlsbench.builds.build import Builder
from tlsbench.core import paths
from tlsbench.driver import drive
from tlsbench.driver.declaration import declared
from tlsbench.scenarios import Declared, modes

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
                                                   "handshakes_per_s", "thread_handshakes_per_s",
                                                   "total_handshakes_per_s"]  # fmt: skip
    assert {"threads", "contexts", "locks"} <= set(handshake.options)
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


def test_the_families_run_what_the_driver_declares(table: Declared) -> None:
    """The Python side keeps no list of the driver's scenarios (scenarios/): each family
    names the driver scenarios it runs, every one of them is the driver's, and every
    scenario the driver declares (but `info`, which measures nothing) has its family."""
    run = {name: family.name for family in scenarios.families()
           for name in family.driver_scenarios()}  # fmt: skip
    assert set(run) == set(table.scenarios) - {"info"}, run
    # What the families ask the declaration: TLS (certificates, capability checks), heap
    # figures (both drivers), instruction counts (callgrind), one or two processes. (The
    # releases family runs the tls family's scenarios under names of its own.)
    assert {n for n in table.scenarios if table.scenario(n).has("one_process")} == {
        n for n, f in run.items() if f in ("tls", "scaling", "connections", "releases")
    }
    assert table.scenario("peer").has("two_process") and table.scenario("serve").has("heap")
    assert modes.collected_sides("records") == ("client", "server")
    assert modes.collected_sides("aead") == ("client",) and modes.collected_sides("peer") == ()
    assert [s for s in table.scenarios if modes.has_heap(s)] == [
        "handshake", "resume", "records", "connections", "peer", "serve"]  # fmt: skip
    # What a repetition keeps of the heap run: the series the driver declares of it alone.
    assert modes.heap_driver_series("records") == {"write_allocs", "read_allocs"}
    assert modes.heap_driver_series("connections") == {
        f"{side}_{figure}_per_connection" for side in ("client", "server")
        for figure in ("heap", "usable", "peak")}  # fmt: skip
    assert modes.heap_driver_series("handshake") == frozenset()
    assert modes.collected_sides("connections") == ()  # memory held: no calls to count
    assert drive.timed_only("bulk") and drive.timed_only("aead") and not drive.timed_only("info")


def test_every_experiment_key_the_driver_names_is_declared(table: Declared) -> None:
    """The keys whose names and ranges come from the driver: each is declared, so that an
    experiment is checked against the driver that will run it."""
    for key in ("tls", "kx", "auth", "transport", "io", "role", "pattern", "suite", "group",
                "key_share", "sigalg", "cert", "aead"):  # fmt: skip
        assert table.choices(key), key
    for key in ("chain", "record_size", "payload", "bytes", "iterations", "warmup",
                "connections", "rate", "request_size", "workers", "threads"):  # fmt: skip
        assert key in table.ranges, key
    for family in scenarios.families():
        for scenario in family.scenarios:
            name = family.driver_scenario(scenario)
            if name is None:
                continue
            # The options a point passes to its driver scenario are ones the driver takes.
            driver = table.scenario(name)
            own = set(family.accepts(scenario, table)) & {"payload", "bytes", "aead"}
            assert own <= {o.replace("-", "_") for o in driver.options}, (scenario, own)
    # `tlsbench drive` checks a scenario against the same declaration.
    proc = subprocess.run([str(paths.REPO / "tlsbench"), "drive", "null", "nosuch"],
                          capture_output=True, text=True, check=False)  # fmt: skip
    assert proc.returncode == 2 and "the driver's are handshake, resume" in proc.stderr


# -- the fake driver (tests/fake/) answers as the real one -----------------------------------

FIXTURE = paths.REPO / "tests" / "fixtures" / "declared.json"


def test_the_fake_drivers_declaration_is_the_real_drivers(null) -> None:
    """The unit tier's fake driver declares what the driver declares: regenerate the fixture
    with UPDATE_FIXTURES=1 after a change of the driver's tables."""
    proc = subprocess.run([str(null.program("tlsbench-driver")), "info", "--json"],
                          capture_output=True, text=True, check=True)  # fmt: skip
    real = json.loads(proc.stdout)["declared"]
    if os.environ.get("UPDATE_FIXTURES"):
        FIXTURE.write_text(json.dumps(real, indent=1) + "\n")
    assert json.loads(FIXTURE.read_text()) == real, "UPDATE_FIXTURES=1 regenerates it"


def _shape(value: object, depth: int = 2) -> object:
    """The keys of a JSON object, down to `depth` levels (what orchestration reads)."""
    if isinstance(value, dict) and depth:
        return {k: _shape(v, depth - 1) for k, v in value.items()}
    return type(value).__name__


@pytest.mark.parametrize(
    "scenario, args, measure",
    [("handshake", ["--iterations", "3"], "time"), ("handshake", ["--iterations", "3"], "heap"),
     ("records", ["--iterations", "70", "--payload", "64"], "time"),
     ("records", ["--iterations", "70", "--payload", "64"], "heap"),
     ("bulk", ["--iterations", "2", "--bytes", "100000"], "time"),
     ("connections", ["--connections", "3"], "time"),
     ("connections", ["--connections", "3"], "heap")],
)  # fmt: skip
def test_the_fake_driver_prints_what_the_real_one_prints(null, tmp_path, scenario, args,
                                                         measure) -> None:  # fmt: skip
    """Its output has the real null driver's sections, params and series (the figures are
    made up), so that what the unit tier checks of orchestration holds for the real one."""
    from fake.builds import fake_build

    real = run_driver(null, scenario, *args, measure=measure).output
    fake = run_driver(fake_build(Builder(quiet=True), null.variant, tmp_path), scenario, *args,
                      measure=measure).output  # fmt: skip
    assert real is not None and fake is not None
    wanted = {"schema", "measure", "variant", "library", "scenario", "params", "calibration",
              "tsc_hz", "negotiated", "heap", "samples", "summary", "warnings", "exit"}  # fmt: skip
    assert wanted <= set(real) and wanted <= set(fake)
    for option in args[::2]:  # what the point asks is what both resolve
        key = option.removeprefix("--")
        assert fake["params"][key] == real["params"][key], key
    assert set(fake["samples"]) == set(real["samples"])
    if real["heap"] is None:
        assert fake["heap"] is None
    else:  # the parts it has (not the real driver's warm connections) have the real shape
        assert {k: _shape(v) for k, v in fake["heap"].items()} == {
            k: _shape(real["heap"][k]) for k in fake["heap"]}  # fmt: skip
    assert set(fake["calibration"]) == set(real["calibration"])
    if "connections" in real:  # what the N connections held, per side or for the process
        assert _shape(fake["connections"]) == _shape(real["connections"])
