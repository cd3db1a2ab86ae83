"""Code size: real minimal client/server programs linked against real builds."""

from __future__ import annotations

import pytest

from tlsbench.builds import codesize
from tlsbench.core.errors import UserError


def test_mbedtls_client_and_server_sizes_are_measured(build_of) -> None:
    build = build_of("mbedtls-2.28.x")
    rows = codesize.as_rows(build, codesize.measure(build))
    assert [r["role"] for r in rows] == ["client", "server"]
    for row in rows:
        assert row["target"] == "x86-64"
        # A TLS stack with X.509 and a handshake is far more than an empty program's ~2 kB.
        assert row["text"] > 100_000
        assert row["total"] == row["text"] + row["data"] + row["bss"]


def test_wolfssl_sizes_are_measured(build_of) -> None:
    build = build_of("wolfssl-5.7.2")
    sizes = codesize.measure(build)
    assert {s.role for s in sizes} == {"client", "server"}
    assert all(s.text > 100_000 for s in sizes)


def test_a_library_without_a_size_program_is_refused(build_of) -> None:
    with pytest.raises(UserError, match="code size is measured for mbedtls, wolfssl"):
        codesize.measure(build_of("null"))


def test_cli_prints_a_row_per_role_and_refuses_other_libraries() -> None:
    import subprocess

    from tlsbench.core import paths

    tool = str(paths.REPO / "tlsbench")
    done = subprocess.run(
        [tool, "code-size", "--quiet", "mbedtls-2.28.x"], capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].split() == ["variant", "target", "role", "text", "data", "bss"]
    assert [line.split()[2] for line in lines[1:]] == ["client", "server"]
    refused = subprocess.run([tool, "code-size", "null"], capture_output=True, text=True)
    assert refused.returncode == 2
    assert "mbedtls and wolfssl" in refused.stderr
    assert "Traceback" not in refused.stderr


def test_code_size_points_run_store_and_report(tmp_path, build_of) -> None:
    """`scenario = "code-size"` in an experiment: the runner links and measures each
    repetition; the report's table has a row per role, the same in every repetition, and a
    stacked chart; a library without a size program is refused before anything runs."""
    import subprocess

    from tlsbench.core import paths
    from tlsbench.core.store import Store
    from tlsbench.report import load_run
    from tlsbench.reportkit.contents import plots
    from tlsbench.run import experiments

    for spec in ("mbedtls-3.6.6", "wolfssl-5.7.2"):
        build_of(spec)
    experiment = tmp_path / "size.toml"
    experiment.write_text('question = "How big?"\nrepetitions = 2\n[matrix]\n'
                          'variant = ["mbedtls-3.6.6", "wolfssl-5.7.2"]\n'
                          'scenario = ["code-size"]\n')  # fmt: skip
    db = tmp_path / "r.db"
    proc = subprocess.run([str(paths.REPO / "tlsbench"), "run", str(experiment), "--db", str(db)],
                          capture_output=True, text=True, check=False, timeout=600)  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    model = load_run(Store(db))
    rows = model.code_size
    expected = [("mbedtls-3.6.6", "client"), ("mbedtls-3.6.6", "server"),
                ("wolfssl-5.7.2", "client"), ("wolfssl-5.7.2", "server")]  # fmt: skip
    assert sorted((r.variant, r.role) for r in rows) == expected
    mbedtls = build_of("mbedtls-3.6.6")
    direct = {r["role"]: r for r in codesize.as_rows(mbedtls, codesize.measure(mbedtls))}
    for row in rows:
        assert row.identical and row.target == "x86-64" and row.text > 100_000
        if row.variant == "mbedtls-3.6.6":
            assert row.text == direct[row.role]["text"]  # the same bytes as the command's
    assert "code_size" in [p.name for p in plots(model)]
    report = subprocess.run(
        [str(paths.REPO / "tlsbench"), "report", "--db", str(db), "--format", "md"],
        capture_output=True, text=True, check=True,
    )  # fmt: skip
    assert "## Code size (bytes)" in report.stdout
    experiment.write_text('question = "How big?"\n[matrix]\nvariant = ["openssl-3.5.x"]\n'
                          'scenario = ["code-size"]\n')  # fmt: skip
    with pytest.raises(UserError, match='with scenario = "code-size", a variant of mbedtls or'):
        experiments.load(str(experiment))


def test_a_variant_with_two_targets_is_refused_with_the_reason() -> None:
    """cortex-m7 and armhf in one variant: one build cannot be both, so the spec is refused
    (exit 2) instead of printing rows labelled with whichever target came last."""
    import subprocess

    from tlsbench.core import paths

    done = subprocess.run(
        [str(paths.REPO / "tlsbench"), "code-size", "--quiet", "mbedtls-3.6.6:cortex-m7,armhf"],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert done.returncode == 2, done.stdout
    assert "two targets" in done.stderr and "cortex-m7" in done.stderr
    assert "armhf" in done.stderr and "Traceback" not in done.stderr
    assert done.stdout == ""
