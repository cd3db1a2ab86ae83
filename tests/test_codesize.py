"""Code size: real minimal client/server programs linked against real builds."""

from __future__ import annotations

import pytest

from tlsbench import codesize
from tlsbench.errors import UserError


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

    from tlsbench import paths

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
