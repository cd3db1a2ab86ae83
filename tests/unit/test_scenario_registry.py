"""The scenario families' registry (src/tlsbench/scenarios/): one owner per scenario and per
key, names composed from the keys in key order, report sections in rank order, and a family
that is only registered is run, named, checked and reported like the others."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import pytest

from tlsbench import scenarios
from tlsbench.core.errors import UserError
from tlsbench.core.points import RunPoint
from tlsbench.core.store import Store
from tlsbench.driver.process import Outcome
from tlsbench.peers import programs
from tlsbench.report import export, load_run
from tlsbench.reportkit.section import Section, SummaryCell, TableSpec
from tlsbench.run import experiments
from tlsbench.run.runner import Runner
from tlsbench.scenarios import base
from tlsbench.scenarios.base import Key, RunContext


def test_every_scenario_key_and_table_has_one_owner() -> None:
    names = scenarios.scenario_names()
    assert len(names) == len(set(names))
    assert names == ("handshake", "resume", "records", "bulk", "scaling-handshake",
                     "scaling-resume", "aead", "interop", "code-size", "load",
                     "connections", "release-handshake", "release-resume", "release-records",
                     "release-bulk", "release-code-size")  # fmt: skip
    keys = scenarios.experiment_keys()
    assert list(keys)[:3] == ["tls", "suite", "kx"] and list(keys)[-2:] == ["duration_s", "heap"]
    # Interop and load share the server program key: one Key, one check, one name part; load
    # and connections the connections key.
    assert scenarios.by_scenario("interop").keys[-1] is scenarios.by_scenario("load").keys[0]
    assert scenarios.by_scenario("connections").keys[0] in scenarios.by_scenario("load").keys
    attrs = [t.attr for s in scenarios.sections() for t in s.tables]
    assert len(attrs) == len(set(attrs))
    assert [s.rank for s in scenarios.sections()] == sorted(s.rank for s in scenarios.sections())


def test_a_point_name_is_its_scenario_then_its_keys_in_key_order() -> None:
    options = {"pattern": "new", "tls": "1.2", "client": "h2load", "record_size": 4096,
               "server": "nginx", "suite": "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256"}  # fmt: skip
    assert experiments.point_name("load", options) == (
        "load_1.2_ecdhe_rsa_aes_128_gcm_sha256_rs4096_on-nginx_by-h2load_new"
    )
    # Tuning keys change how long, not what: not in names.
    assert experiments.point_name("records", {"payload": 64, "iterations": 9}) == "records_64B"


def test_a_key_says_what_is_allowed(tmp_path: Path) -> None:
    table = scenarios.declared()
    keys = scenarios.experiment_keys()
    assert keys["tls"].check("tls", "2", table) == "known: 1.2, 1.3"  # the driver's choices
    assert keys["workers"].check("workers", 0, table) == "a whole number, 1..64"
    assert keys["chain"].check("chain", 9, table) == "1..3"
    assert keys["heap"].check("heap", "yes", table) == "true or false"
    assert keys["loss"].check("loss", 60, table) == "a number, 0..50"
    assert keys["suite"].check("suite", "TLS_AES_128_GCM_SHA265", table).startswith(
        "did you mean TLS_AES_128_GCM_SHA256")  # fmt: skip


def test_the_programs_are_one_registry() -> None:
    assert programs.playing("server", "interop") == (
        "openssl-s_server",
        "openssl-3.5.x-s_server",
        "gnutls-serv",
        "nginx",
    )
    assert programs.playing("client", "interop") == (
        "openssl-s_client",
        "openssl-3.5.x-s_client",
        "gnutls-cli",
        "curl",
    )
    assert programs.playing("generator", "load") == ("h2load",)
    assert programs.program("nginx").uses == ("interop", "load")
    # A program says what it cannot do for a point, whatever its command line.
    refused = programs.program("gnutls-cli").refusal({"chain": 2})
    assert refused == "gnutls-cli is run with a one-certificate chain only"
    assert "no HelloRetryRequest" in str(programs.program("gnutls-serv").command(
        {"key_share": "secp256r1"}, 1, 1, Path("."), "127.0.0.1"))  # fmt: skip


# -- a family added by registration alone ------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class EchoRow:
    variant: str
    point: str
    words: int
    failed: str = ""
    machine: str = ""


class Echo(base.Family):
    """A made-up family: its points echo `words` words, run by no driver."""

    def driver_scenario(self, scenario: str) -> str | None:
        return None

    def accepts(self, scenario: str, declared: Any) -> tuple[str, ...]:
        return ("words",)

    def check(self, checker: Any, scenario: str, values: dict[str, Any], variant: Any) -> None:
        if values.get("words", 1) == 13:
            raise checker.value_error("words", 13, "anything but 13")

    def run(self, point: RunPoint, ctx: RunContext) -> Outcome:
        words = int(point.options.get("words", 1))
        return Outcome("ok", 0, None, 0.0, {"echo": ["word"] * words, "exit": 0}, "")


def _echo_rows(reader: Any) -> dict[str, list[Any]]:
    return {"echo": [EchoRow(p.variant, p.name, len(r.output["echo"]))
                     for p in reader.points_of(("echo",)) for r in reader.ok(p)[:1]]}  # fmt: skip


def _echo_views(model: Any) -> list[Any]:
    from tlsbench.reportkit.views import View

    rows = [[r.variant, str(r.words)] for r in model.echo]
    return [View("echo", "Echo", "Words echoed.", ["variant", "words"], [False, True], rows)]


ECHO = Echo(
    "echo", ("echo",), keys=(Key("words", base.whole((1, 100)), base.fmt("{}w")),),
    sections=(Section("echo", 90, (TableSpec("echo", "echo", "Echo", EchoRow),), _echo_rows,
                      views=_echo_views,
                      summary=lambda model: [SummaryCell(r.variant, "words", r.words,
                                                         str(r.words)) for r in model.echo]),),
)  # fmt: skip


@pytest.fixture
def with_echo(monkeypatch: pytest.MonkeyPatch):
    every = scenarios.families()
    for cached in (scenarios.families, scenarios.experiment_keys):
        cached.cache_clear()
    monkeypatch.setattr(scenarios, "families", lambda: (*every, ECHO))
    yield
    scenarios.experiment_keys.cache_clear()


def test_a_registered_family_is_loaded_run_and_reported(with_echo, tmp_path: Path) -> None:
    path = tmp_path / "echo.toml"
    path.write_text('question = "Echo?"\nrepetitions = 2\n[matrix]\nvariant = ["null"]\n'
                    'scenario = ["echo"]\nwords = [2, 3]\n')  # fmt: skip
    experiment = experiments.load(str(path))
    assert [p.name for p in experiment.points] == ["echo_2w", "echo_3w"]
    store = Store(tmp_path / "r.db")
    runner = Runner(store, quiet=True)
    run_id = runner.start(experiment, experiment.points, 2, 10)
    tally = runner.execute(run_id, 10)
    assert tally.ok == 4 and not tally.failed
    model = load_run(store, run_id)
    assert [(r.point, r.words) for r in model.echo] == [("echo_2w", 2), ("echo_3w", 3)]
    assert "## Echo" in export(model, "markdown")
    cells = [c for s in scenarios.sections() for c in s.summary(model)]
    assert [(c.variant, c.column, c.text) for c in cells] == [("null", "words", "2"),
                                                             ("null", "words", "3")]  # fmt: skip
    path.write_text(path.read_text().replace("[2, 3]", "[13]"))
    with pytest.raises(UserError, match=r"words = 13 .* anything but 13"):
        experiments.load(str(path))


def test_every_section_gives_the_summary_cells_of_its_rows(tmp_path: Path) -> None:
    """The per-library summary's hook, on the golden report's store: every variant of a
    table with rows has its cells, each from one of its rows."""
    from test_report import build_store

    store, run_id = build_store(tmp_path / "golden.db")
    model = load_run(store, run_id)
    cells = [c for s in scenarios.sections() for c in s.summary(model)]
    columns = {c.column for c in cells}
    assert {"handshake ms", "client heap peak bytes", "record write p50 ns", "bulk MB/s",
            "AEAD cycles/byte", "load tx/s"} <= columns  # fmt: skip
    handshake = {c.variant: c for c in cells if c.column == "handshake ms"}
    assert set(handshake) == {r.variant for r in model.handshakes}
    first = model.handshakes[0]
    assert handshake[first.variant].value == first.ms
