"""`tlsbench doctor` lists the real programs the interop and load scenarios run: each with
the version it reports, or, when missing, the Debian package that provides it."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from tlsbench.cli import doctor
from tlsbench.core import paths
from tlsbench.peers import programs

# Every program the two runners can start, by executable, and its Debian package.
EXPECTED = {"openssl": "openssl", "gnutls-cli": "gnutls-bin", "gnutls-serv": "gnutls-bin",
            "nginx": "nginx-light", "curl": "curl", "h2load": "nghttp2-client"}  # fmt: skip


def own_answer(executable: str) -> str:
    """What the installed program itself says about its version (first line)."""
    where = shutil.which(executable, path=os.pathsep.join([os.environ["PATH"], "/usr/sbin"]))
    assert where is not None, f"{executable} is not installed: `make deps` installs it"
    command = next(
        p.version_command(where) for p in programs.PROGRAMS if p.executable == executable
    )
    proc = subprocess.run(command, capture_output=True, text=True,
                          check=False, timeout=30)  # fmt: skip
    return next(line.strip() for line in (proc.stdout or proc.stderr).splitlines() if line.strip())


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
