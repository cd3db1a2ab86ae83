"""`tlsbench doctor` lists the real programs the interop and load scenarios run: each with
the version it reports, or, when missing, the Debian package that provides it."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from peer_programs import EXPECTED, own_answer
from tlsbench.cli import doctor
from tlsbench.peers import programs


def test_the_runners_programs_are_all_listed() -> None:
    """A program added to the registry (programs.py) shows up in doctor by itself; one that
    tlsbench builds (the pinned openssl's) is not the machine's to install."""
    listed = {p.executable for p in doctor.peer_programs()}
    assert listed == {p.executable for p in programs.PROGRAMS if p.package}


def test_a_missing_program_is_named_with_its_debian_package(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A search path that holds only openssl: the others are missing, each with the package
    that provides it, and the install command at the end names those packages."""
    where = shutil.which("openssl")
    assert where is not None
    (tmp_path / "openssl").symlink_to(where)
    programs = {p.executable: p for p in doctor.peer_programs(str(tmp_path))}
    assert programs["openssl"].version == own_answer("openssl")
    assert all(p.version is None for name, p in programs.items() if name != "openssl")
    code = doctor.run_doctor(program_path=str(tmp_path))
    out = capsys.readouterr().out
    assert code == 1
    for name, package in EXPECTED.items():
        if name != "openssl":
            assert f"MISSING  {name:<18} (Debian package {package}; for " in out, name
    install = next(line for line in out.splitlines() if line.strip().startswith("apt-get"))
    for package in ("gnutls-bin", "nginx-light", "curl", "nghttp2-client"):
        assert package in install.split()
    assert f"ok       {'openssl':<18} {own_answer('openssl')}" in out


def test_the_json_form_carries_every_fact_the_text_prints(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """`doctor --json` against the text form, line by line: the CPU, its crypto flags, the
    TSC, the CPU profile, the governor, the notes and the network delay line each have their
    facts in the JSON."""
    doctor.run_doctor(as_json=False)
    text = capsys.readouterr().out
    doctor.run_doctor(as_json=True)
    data = json.loads(capsys.readouterr().out)
    lines = {line[:9].strip(): line[9:] for line in text.splitlines() if line[:9].strip() and
             line[8:9] == " " and not line.startswith(("ok ", "MISSING"))}  # fmt: skip
    notes = [line[9:] for line in text.splitlines() if line.startswith("note     ")]
    assert notes and notes == data["notes"]
    profile = data["cpu_profile"]
    assert lines["profile"].startswith(f"{profile['name']}: {profile['summary']}")
    network = data["network"]
    said = "available" if network["available"] else network["reason"]
    assert lines["network"] == f"{network['what']}: {network['method']}: {said}"
    cpu = data["cpu"]
    assert lines["CPU"] == f"{cpu['model']} ({cpu['cores']} logical cores)"
    for flag, on in cpu["crypto_flags"].items():
        assert f"{flag}{'+' if on else '-'}" in lines["crypto"].split()
    assert ("NOT" in lines["TSC"]) != cpu["invariant_tsc"]
    assert cpu["kernel"] in lines["virtual"]
