"""Experiment files: matrix expansion, names, and the errors a user sees."""

from __future__ import annotations

from pathlib import Path

import pytest

from tlsbench import experiments
from tlsbench.cli import main
from tlsbench.errors import UserError

HEAD = 'question = "What does this test?"\n'


def write(tmp_path: Path, body: str) -> Path:
    path = tmp_path / "exp.toml"
    path.write_text(HEAD + body)
    return path


def test_matrix_include_exclude_and_stable_names(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        """
[defaults]
scenario = "handshake"
tls = "1.3"
iterations = 7

[matrix]
variant = ["null", "mbedtls-3.6.6"]
auth = ["server", "mutual"]
cert = ["rsa2048", "ecdsa-p256"]

[[exclude]]
variant = "null"
cert = "ecdsa-p256"

[[include]]
variant = "null"
scenario = "records"
payload = 512
""",
    )
    exp = experiments.load(str(path))
    names = [(p.variant, p.name) for p in exp.points]
    assert len(names) == 2 * 2 * 2 - 2 + 1
    assert ("mbedtls-3.6.6", "handshake_1.3_rsa2048_mutual") in names
    assert ("null", "handshake_1.3_ecdsa-p256_server") not in names
    assert ("null", "records_1.3_512B") in names
    point = next(p for p in exp.points if p.name == "handshake_1.3_ecdsa-p256_mutual")
    assert point.options["iterations"] == 7  # tuning values are not part of names
    assert point.driver_args() == ["--tls", "1.3", "--cert", "ecdsa-p256", "--auth", "mutual",
                                   "--iterations", "7"]  # fmt: skip
    assert experiments.load(str(path)).points == exp.points  # stable


def test_several_matrices_and_per_scenario_options(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        """
[defaults]
iterations = 3
cert = "rsa2048"

[per_scenario.records]
iterations = 500

[[matrix]]
variant = ["null"]
scenario = ["records", "aead"]

[[matrix]]
variant = ["null"]
scenario = ["handshake"]
suite = ["TLS_AES_256_GCM_SHA384"]
""",
    )
    points = {p.name: p for p in experiments.load(str(path)).points}
    assert points["records_rsa2048"].options["iterations"] == 500
    assert points["aead"].options == {"iterations": 3}  # TLS options mean nothing to aead
    assert "handshake_aes_256_gcm_sha384_rsa2048" in points


def test_duplicate_points_are_rejected(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        """
[matrix]
variant = ["null"]
scenario = ["handshake"]

[[include]]
variant = "null"
scenario = "handshake"
iterations = 9
""",
    )
    with pytest.raises(UserError, match="two points are the same: handshake on null"):
        experiments.load(str(path))


@pytest.mark.parametrize(
    "body, message",
    [
        (
            "[matrix]\nvariant = ['null']\nscenario = ['handshake']\nautth = ['none']\n",
            r"exp.toml:5: unknown matrix key 'autth'. Did you mean auth",
        ),
        ("[matrix]\nvariant = ['nul']\nscenario = ['handshake']\n", r"unknown variant 'nul'"),
        ("[matrix]\nvariant = ['null']\nscenario = ['dance']\n", r"scenario 'dance' is not"),
        (
            "[matrix]\nvariant = ['null']\nscenario = ['handshake']\ntls = ['1.1']\n",
            r"tls '1.1' is not one of 1.2, 1.3",
        ),
        ("[matrix\nvariant = ['null']\n", r"exp.toml:2: malformed TOML"),
        (
            "[defaults]\niterations = -1\n[matrix]\nvariant=['null']\nscenario=['handshake']\n",
            r"iterations must be a non-negative integer",
        ),
    ],
)
def test_bad_experiments_say_what_and_where(tmp_path: Path, body: str, message: str) -> None:
    with pytest.raises(UserError, match=message):
        experiments.load(str(write(tmp_path, body)))


def test_missing_question_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "exp.toml"
    path.write_text("[matrix]\nvariant = ['null']\nscenario = ['handshake']\n")
    with pytest.raises(UserError, match="opens with `question"):
        experiments.load(str(path))


def test_unknown_experiment_lists_close_names() -> None:
    with pytest.raises(UserError, match=r"unknown experiment 'quik'\. Did you mean quick"):
        experiments.load("quik")


def test_every_shipped_experiment_expands() -> None:
    for path in sorted(experiments.EXPERIMENTS_DIR.glob("*.toml")):
        exp = experiments.load(str(path))
        assert exp.points and exp.question.endswith("?"), path.name


def test_bad_input_writes_nothing_to_the_database(tmp_path: Path, capsys) -> None:
    db = tmp_path / "results" / "t.db"
    bad = write(tmp_path, "[matrix]\nvariant = ['null']\nscenario = ['handshake']\nx = [1]\n")
    assert main(["run", str(bad), "--db", str(db)]) == 2
    assert "unknown matrix key 'x'" in capsys.readouterr().err
    assert not db.exists()


def test_only_filters_points() -> None:
    exp = experiments.load("quick")
    kept = experiments.only(exp.points, ["library=openssl", "scenario=records"])
    assert [p.variant for p in kept] == ["openssl-3.5.x"]
    with pytest.raises(UserError, match="--only takes KEY=VALUE"):
        experiments.only(exp.points, ["color=red"])
