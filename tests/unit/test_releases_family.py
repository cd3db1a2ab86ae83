"""The `releases` family (src/tlsbench/scenarios/releases.py) on the fake driver: its points
run as the scenarios they name, releases are ordered by version, and the report gives each
figure of a release with `tlsbench ab`'s verdict against the release before it, a plot per
figure and a row per library on what its newest release changed."""

from __future__ import annotations

from pathlib import Path

from tlsbench.core.store import Store
from tlsbench.report import export, load_run
from tlsbench.reportkit import ab
from tlsbench.reportkit.contents import plots
from tlsbench.run import experiments
from tlsbench.run.runner import Runner
from tlsbench.scenarios import releases

EXPERIMENT = """question = "What changed?"
repetitions = 4
timeout = 60
[defaults]
tls = "1.3"
cert = "rsa2048"
iterations = 20
[[matrix]]
variant = ["mbedtls-3.6.7", "mbedtls-3.6.6"]
scenario = ["release-handshake"]
cert = ["rsa2048", "ecdsa-p256"]
[[matrix]]
variant = ["mbedtls-3.6.7", "mbedtls-3.6.6"]
scenario = ["release-resume", "release-records", "release-bulk"]
"""


def test_releases_are_ordered_by_version_not_by_name() -> None:
    names = ["3.6.3", "1.1.1w", "3.0.22", "3.5.7", "3.10.0", "3.7.9-2+deb12u5", "3.8.13"]
    assert sorted(names, key=releases.version_key) == [
        "1.1.1w", "3.0.22", "3.5.7", "3.6.3", "3.7.9-2+deb12u5", "3.8.13", "3.10.0"]  # fmt: skip


def test_a_run_gives_each_release_its_figures_and_verdicts(tmp_path: Path) -> None:
    path = tmp_path / "releases.toml"
    path.write_text(EXPERIMENT)
    experiment = experiments.load(str(path))
    assert {p.scenario for p in experiment.points} == {
        "release-handshake", "release-resume", "release-records", "release-bulk"}  # fmt: skip
    store = Store(tmp_path / "r.db")
    runner = Runner(store, quiet=True)
    run_id = runner.start(experiment, experiment.points, 4, 60)
    tally = runner.execute(run_id, 60)
    assert tally.ok == 5 * 2 * 4 and not tally.failed
    model = load_run(store, run_id)
    rows = model.releases
    # The fake builds state one version: the line's name orders them then.
    assert [r.variant for r in rows if r.position == 0][:1] == ["mbedtls-3.6.6"]
    newest = {r.figure: r for r in rows if r.variant == "mbedtls-3.6.7"}
    for label in ("handshake CPU client, RSA-2048", "handshake CPU server, ECDSA P-256",
                  "resumption CPU server", "heap peak client, cold",
                  "record write, 256 B", "bulk throughput, receiver"):  # fmt: skip
        row = newest[label]
        assert row.against == "mbedtls-3.6.6" and row.value is not None
        assert row.verdict in {"slower", "faster", "heap grew", "heap shrank", ab.NO_CHANGE,
                               ab.INCONCLUSIVE}, (label, row.verdict)  # fmt: skip
    assert all(not r.verdict for r in rows if r.position == 0)
    [change] = model.release_changes
    assert change.library == "mbedtls" and "mbedtls-3.6.7" in change.newest
    assert change.worse + change.better + change.unchanged + change.inconclusive == len(
        [r for r in rows if r.variant == "mbedtls-3.6.7"]
    )
    text = export(model, "markdown")
    assert "Releases: mbedtls" in text and "What each newest release changed" in text
    names = {p.name for p in plots(model)}
    assert {"releases-handshake-cpu-client-rsa-2048", "releases-heap-peak-server-cold"} <= names
