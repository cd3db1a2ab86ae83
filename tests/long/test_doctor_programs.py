"""`tlsbench doctor` against the real peer programs installed here (openssl, gnutls, nginx,
curl, h2load: `make deps` installs them): each listed with the version it reports itself."""

from __future__ import annotations

import json
import subprocess

from peer_programs import EXPECTED, own_answer
from tlsbench.core import paths


def test_doctor_lists_every_peer_program_with_the_version_it_reports() -> None:
    proc = subprocess.run([str(paths.REPO / "tlsbench"), "doctor", "--json"],
                          capture_output=True, text=True, check=False, timeout=300)  # fmt: skip
    assert proc.returncode in (0, 1), proc.stderr  # 1: a build tool is missing, said so
    programs = {p["executable"]: p for p in json.loads(proc.stdout)["programs"]}
    assert {name: p["package"] for name, p in programs.items()} == EXPECTED
    for name, program in programs.items():
        assert program["version"] == own_answer(name), program
    assert programs["openssl"]["uses"] == ["interop openssl-s_server", "interop openssl-s_client"]
    assert programs["nginx"]["uses"] == ["interop nginx", "load nginx"]
    assert programs["h2load"]["uses"] == ["load h2load"]
    text = subprocess.run([str(paths.REPO / "tlsbench"), "doctor"], capture_output=True,
                          text=True, check=False, timeout=300).stdout  # fmt: skip
    for name in EXPECTED:
        assert f"ok       {name:<18} {own_answer(name)} (for " in text, name
