"""Experiment files: matrix expansion, names, and the errors a user sees."""

from __future__ import annotations

from pathlib import Path

import pytest

from tlsbench.cli import main
from tlsbench.core.errors import UserError
from tlsbench.run import experiments

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
        (
            "[matrix]\nvariant = ['null']\nscenario = ['dance']\n",
            r"exp.toml:4: scenario = 'dance' \(a string\) is not allowed: known: handshake",
        ),
        (
            "[matrix]\nvariant = ['null']\nscenario = ['handshake']\ntls = ['1.1']\n",
            r"exp.toml:5: tls = '1.1' \(a string\) is not allowed: .*known: 1.2, 1.3",
        ),
        ("[matrix\nvariant = ['null']\n", r"exp.toml:2: malformed TOML"),
        (
            "[defaults]\niterations = -1\n[matrix]\nvariant=['null']\nscenario=['handshake']\n",
            r"exp.toml:3: iterations = -1 \(a number\) is not allowed: 1..100000000",
        ),
        # What used to become a stored "unsupported" result or a run-time failure.
        (
            "[matrix]\nvariant = ['null']\nscenario = ['handshake']\n"
            "suite = ['TLS_AES_128_GCM_SHA265']\n",
            r"exp.toml:5: suite = 'TLS_AES_128_GCM_SHA265' .* did you mean TLS_AES_128_GCM_SHA256",
        ),
        (
            "[matrix]\nvariant = ['null']\nscenario = ['handshake']\ngroup = ['x22519']\n",
            r"exp.toml:5: group = 'x22519' .* did you mean x25519\?",
        ),
        (
            "[matrix]\nvariant = ['null']\nscenario = ['handshake']\nsigalg = ['rsa_pss_sha256']\n",
            r"exp.toml:5: sigalg = 'rsa_pss_sha256' .* known: rsa_pkcs1_sha1",
        ),
        (
            "[matrix]\nvariant = ['null']\nscenario = ['records']\nrecord_size = [7]\n",
            r"exp.toml:5: record_size = 7 \(a number\) is not allowed: 64..16384",
        ),
        (
            "[matrix]\nvariant = ['null']\nscenario = ['handshake']\nchain = [9]\n",
            r"exp.toml:5: chain = 9 \(a number\) is not allowed: 1..3",
        ),
        (
            "[defaults]\niterations = 0\n[matrix]\nvariant=['null']\nscenario=['handshake']\n",
            r"exp.toml:3: iterations = 0 .* 1..100000000",
        ),
        (
            "repetitions = -1\n[matrix]\nvariant=['null']\nscenario=['handshake']\n",
            r"exp.toml:2: repetitions = -1 .* a whole number, 1..1000",
        ),
        (
            "repetitions = 0\n[matrix]\nvariant=['null']\nscenario=['handshake']\n",
            r"exp.toml:2: repetitions = 0 .* a whole number, 1..1000",
        ),
        (
            "timeout = -3\n[matrix]\nvariant=['null']\nscenario=['handshake']\n",
            r"exp.toml:2: timeout = -3 .* a number of seconds",
        ),
        (
            "repetitions = '5'\n[matrix]\nvariant=['null']\nscenario=['handshake']\n",
            r"repetitions = '5' \(a string\)",
        ),
        ("defaults = 3\n[matrix]\nvariant=['null']\nscenario=['handshake']\n", r"defaults must"),
        ("[matrix]\nvariant = 'null'\nscenario = ['handshake']\n", r"matrix variant must be"),
        (
            "[matrix]\nvariant = ['null']\nscenario = ['handshake']\ntls = ['1.3']\n"
            "suite = ['TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256']\n",
            r"a TLS 1.3 suite \(TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256 is a TLS 1.2 suite\)",
        ),
        (
            "[matrix]\nvariant = ['null']\nscenario = ['records']\nrecord_size = [1024]\n"
            "payload = [4096]\n",
            r"payload = 4096 .* at most the record size \(1024\)",
        ),
        (
            "[matrix]\nvariant = ['null']\nscenario = ['info']\n",
            r"exp.toml:\d+: scenario = 'info' .* known: handshake, resume, records, bulk, "
            r"scaling-handshake, scaling-resume, aead, interop, code-size, load, connections, "
            r"release-handshake \.\.\. \(16 in all\)$",
        ),
        # A HelloRetryRequest: TLS 1.3, another group than the server's, the client's.
        (
            "[matrix]\nvariant = ['null']\nscenario = ['handshake']\nkey_share = ['x25519']\n",
            r"key_share = 'x25519' .* a group other than `group`",
        ),
        (
            "[matrix]\nvariant = ['null']\nscenario = ['handshake']\ntls = ['1.2']\n"
            "group = ['secp256r1']\nkey_share = ['x25519']\n",
            r"key_share = 'x25519' .* with tls = \"1.3\" only",
        ),
        (
            "[matrix]\nvariant = ['null']\nscenario = ['interop']\nrole = ['server']\n"
            "peer = ['self']\ngroup = ['secp256r1']\nkey_share = ['x25519']\n",
            r"key_share = 'x25519' .* with role = \"client\" only",
        ),
        (
            "[matrix]\nvariant = ['null']\nscenario = ['handshake']\nkey_share = ['x2519']\n",
            r"key_share = 'x2519' .* did you mean x25519",
        ),
        (
            "[matrix]\nvariant = ['null', 'nul']\nscenario = ['handshake']\n",
            r"exp.toml:\d+: variant = 'nul' .* unknown variant 'nul'\. Did you mean null",
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


def test_an_experiment_path_that_is_a_directory_or_not_utf8_is_refused(tmp_path: Path) -> None:
    folder = tmp_path / "dir.toml"
    folder.mkdir()
    with pytest.raises(UserError, match="is not a file"):
        experiments.load(str(folder))
    binary = tmp_path / "bin.toml"
    binary.write_bytes(b'question = "\xff\xfe?"\n')
    with pytest.raises(UserError, match="not UTF-8 text"):
        experiments.load(str(binary))


def test_bad_input_writes_nothing_to_the_database(tmp_path: Path, capsys) -> None:
    db = tmp_path / "results" / "t.db"
    bad = write(tmp_path, "[matrix]\nvariant = ['null']\nscenario = ['handshake']\nx = [1]\n")
    assert main(["run", str(bad), "--db", str(db)]) == 2
    assert "unknown matrix key 'x'" in capsys.readouterr().err
    assert not db.exists()


def test_only_filters_points() -> None:
    exp = experiments.load("quick")
    kept = experiments.only(exp.points, ["library=openssl", "scenario=records"])
    assert [p.variant for p in kept] == ["openssl-3.5.x", "openssl-1.1.1w"]
    with pytest.raises(UserError, match="--only takes KEY=VALUE"):
        experiments.only(exp.points, ["color=red"])
    # A filter that matches nothing says what the experiment has for that key.
    with pytest.raises(
        UserError, match=r"leaves no point .* variant: .*\bnull, .*\bopenssl-3\.5\.x\b"
    ):
        experiments.only(exp.points, ["variant=opensl-3.5.x"])


def test_static_rsa_points_carry_no_group_or_signature_scheme(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        "[defaults]\nscenario = 'handshake'\ntls = '1.2'\n[matrix]\nvariant = ['null']\n"
        "suite = ['TLS_RSA_WITH_AES_128_GCM_SHA256', 'TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256']\n"
        "group = ['x25519', 'secp256r1']\n",
    )
    points = experiments.load(str(path)).points
    static = [p for p in points if "rsa_aes" in p.name and "ecdhe" not in p.name]
    assert len(static) == 1  # one point, not one per group it would not negotiate
    assert "group" not in static[0].options and "sigalg" not in static[0].options
    assert static[0].name == "handshake_1.2_rsa_aes_128_gcm_sha256"
    assert len([p for p in points if "ecdhe" in p.name]) == 2


def test_an_experiment_says_its_mode_and_run_follows_it(tmp_path: Path) -> None:
    body = "[matrix]\nvariant = ['null']\nscenario = ['handshake']\n"
    assert experiments.load(str(write(tmp_path, body))).mode == "time"
    assert experiments.load(str(write(tmp_path, 'mode = "instructions"\n' + body))).mode == \
        "instructions"  # fmt: skip
    with pytest.raises(UserError, match=r"exp.toml:2: mode must be one of time, instructions, "
                                        r"not 'fast'"):  # fmt: skip
        experiments.load(str(write(tmp_path, 'mode = "fast"\n' + body)))


def test_the_explain_experiment_is_the_libraries_job_in_instruction_mode() -> None:
    """`explain` runs the points of `libraries`, point for point, in instruction mode (its
    iterations fewer: callgrind is slow; names and options otherwise the same)."""
    explain, libraries = experiments.load("explain"), experiments.load("libraries")
    assert explain.mode == "instructions" and libraries.mode == "time"

    def job(exp: experiments.Experiment) -> set[tuple[str, str, tuple]]:
        return {(p.variant, p.name, tuple(sorted((k, v) for k, v in p.options.items()
                                                 if k not in ("iterations", "warmup"))))
                for p in exp.points}  # fmt: skip

    assert job(explain) == job(libraries)
