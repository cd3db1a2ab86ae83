"""The real peer programs as the machine has them: each one's Debian package, and what the
installed program says its version is."""

from __future__ import annotations

import os
import shutil
import subprocess

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
