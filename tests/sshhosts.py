"""Hosts for the remote-load tests, without other machines: network namespaces that the test
makes, each running its own sshd (Debian's openssh-server) with throw-away host and user
keys, on one Ethernet segment (a bridge in a namespace of its own) addressed from the
benchmarking range 198.18.0.0/15. The runner's ssh runs in a control namespace on the same
segment, so no address or route of the machine's own namespace is touched. Everything is
removed at the end.

Every host shares this machine's file system, so the same tlsbench checkout and build cache
are "there": the commit and build-key check passes as on a well-kept fleet.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

SSHD = "/usr/sbin/sshd"
SUBNET = "198.18.1"
CONTROL_ADDRESS = f"{SUBNET}.100"


def missing_reason() -> str | None:
    if os.geteuid() != 0:
        return "network namespaces and an sshd per host need root"
    if not Path(SSHD).exists():
        return "sshd is not installed (Debian package openssh-server, in `make deps`)"
    if shutil.which("ssh") is None or shutil.which("ssh-keygen") is None:
        return "ssh is not installed (Debian package openssh-client)"
    return None


def _ip(*args: str) -> None:
    subprocess.run(["ip", *args], check=True, capture_output=True)


class Lab:
    """`count` hosts: addresses 198.18.1.1 ... and destinations root@ADDRESS."""

    def __init__(self, count: int) -> None:
        self.tag = f"tlsbench-lab-{os.getpid()}"
        self.folder = Path(tempfile.mkdtemp(prefix="tlsbench-lab-"))
        self.count = count
        self.namespaces: list[str] = []
        self.sshds: list[subprocess.Popen[bytes]] = []
        self.addresses = [f"{SUBNET}.{i}" for i in range(1, count + 1)]

    @property
    def destinations(self) -> list[str]:
        return [f"root@{a}" for a in self.addresses]

    @property
    def ssh_command(self) -> str:
        """TLSBENCH_SSH for the runner: ssh from the control namespace with the lab's keys."""
        return f"ip netns exec {self.tag}-ctl ssh -F {self.folder / 'ssh_config'}"

    def _namespace(self, name: str) -> str:
        ns = f"{self.tag}-{name}"
        _ip("netns", "add", ns)
        self.namespaces.append(ns)
        _ip("-n", ns, "link", "set", "lo", "up")
        return ns

    def start(self) -> None:
        switch = self._namespace("sw")
        _ip("-n", switch, "link", "add", "br0", "type", "bridge")
        _ip("-n", switch, "link", "set", "br0", "up")
        members = [("ctl", CONTROL_ADDRESS)] + [(f"h{i}", a) for i, a in
                                                enumerate(self.addresses, 1)]  # fmt: skip
        for index, (name, address) in enumerate(members):
            ns = self._namespace(name)
            _ip("link", "add", "eth0", "netns", ns, "type", "veth", "peer", "name",
                f"port{index}", "netns", switch)  # fmt: skip
            _ip("-n", switch, "link", "set", f"port{index}", "master", "br0", "up")
            _ip("-n", ns, "addr", "add", f"{address}/24", "dev", "eth0")
            _ip("-n", ns, "link", "set", "eth0", "up")
        self._keys()
        # sshd's privilege separation needs its folder (Debian's service makes it at start).
        Path("/run/sshd").mkdir(mode=0o755, exist_ok=True)
        for i, address in enumerate(self.addresses, 1):
            config = self.folder / f"sshd_config.{i}"
            config.write_text(
                f"ListenAddress {address}\nPort 22\nHostKey {self.folder / 'host_key'}\n"
                f"PidFile {self.folder / f'sshd.{i}.pid'}\n"
                f"AuthorizedKeysFile {self.folder / 'authorized_keys'}\n"
                "PasswordAuthentication no\nKbdInteractiveAuthentication no\nUsePAM no\n"
                "StrictModes no\nPermitRootLogin prohibit-password\nLogLevel ERROR\n"
            )
            self.sshds.append(subprocess.Popen(
                ["ip", "netns", "exec", f"{self.tag}-h{i}", SSHD, "-D", "-e", "-f", str(config)],
                stdout=subprocess.DEVNULL, stderr=(self.folder / f"sshd.{i}.log").open("wb"),
                start_new_session=True,
            ))  # fmt: skip
        self._wait_for_sshds()

    def _keys(self) -> None:
        for name in ("host_key", "id"):
            subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "tlsbench lab",
                            "-f", str(self.folder / name)], check=True)  # fmt: skip
        shutil.copy(self.folder / "id.pub", self.folder / "authorized_keys")
        host_key = (self.folder / "host_key.pub").read_text().split()
        (self.folder / "known_hosts").write_text(
            f"{','.join(self.addresses)} {host_key[0]} {host_key[1]}\n"
        )
        (self.folder / "ssh_config").write_text(
            f"Host *\n  IdentityFile {self.folder / 'id'}\n  IdentitiesOnly yes\n"
            f"  UserKnownHostsFile {self.folder / 'known_hosts'}\n"
            "  StrictHostKeyChecking yes\n  BatchMode yes\n  ConnectTimeout 10\n"
            "  LogLevel ERROR\n"
        )

    def _wait_for_sshds(self) -> None:
        deadline = time.monotonic() + 60
        for destination in self.destinations:
            while True:
                probe = subprocess.run([*self.ssh_command.split(), destination, "true"],
                                       capture_output=True, text=True)  # fmt: skip
                if probe.returncode == 0:
                    break
                if time.monotonic() > deadline:
                    raise RuntimeError(f"sshd of {destination} does not answer: {probe.stderr}")
                time.sleep(0.2)

    def stop(self) -> None:
        for sshd in self.sshds:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(sshd.pid, 15)
            sshd.wait()
        for ns in reversed(self.namespaces):
            subprocess.run(["ip", "netns", "delete", ns], capture_output=True)
        shutil.rmtree(self.folder, ignore_errors=True)


@contextlib.contextmanager
def lab(count: int) -> Iterator[Lab]:
    made = Lab(count)
    try:
        made.start()
        yield made
    finally:
        made.stop()
