"""A network with real round-trip time and loss, without netem: two network namespaces
joined by a user-space delay line.

This kernel has namespaces and TUN but no netem qdisc. So tlsbench makes two namespaces
(client and server), gives each a point-to-point TUN device with an address from the
benchmarking range 198.18.0.0/15 (RFC 2544), and relays every IP packet between the two
devices itself: each one is held for half the round-trip time and dropped with the loss
probability. Both ends run the kernel's real TCP (handshake, retransmission, congestion
control); only the wire is emulated. Traffic never leaves the two namespaces.

The relay runs in a thread of the runner; the namespaces and the relay end together (a
context manager), also on an error or an interrupt. It needs root (CAP_NET_ADMIN) and
/dev/net/tun; without them the message says so.
"""

from __future__ import annotations

import ctypes
import fcntl
import heapq
import itertools
import os
import random
import select
import struct
import subprocess
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from tlsbench.core.errors import UserError

# How the wire is emulated (recorded with every point that uses it; `doctor` says whether
# it is available here).
METHOD = "tlsbench delay line (two network namespaces, TUN devices, user-space relay)"
CLIENT_ADDRESS = "198.18.0.1"
SERVER_ADDRESS = "198.18.0.2"
TUNSETIFF = 0x400454CA
IFF_TUN = 0x0001
IFF_NO_PI = 0x1000
CLONE_NEWNET = 0x40000000
MTU = 1500
# At most this many packets wait in the delay line (a bounded queue, like a real link's).
QUEUE_LIMIT = 10000


@dataclass(frozen=True)
class Link:
    """What the emulated wire does to every packet, in each direction."""

    rtt_ms: float = 0.0
    loss: float = 0.0  # probability of dropping a packet, 0 ... 1

    def describe(self) -> str:
        return f"RTT {self.rtt_ms:g} ms, loss {self.loss * 100:g} %"


@dataclass
class Network:
    client_ns: str
    server_ns: str
    link: Link
    relayed: int = 0
    dropped: int = 0

    def command(self, side: str, command: list[str]) -> list[str]:
        """The command run inside one side's namespace."""
        ns = self.client_ns if side == "client" else self.server_ns
        return ["ip", "netns", "exec", ns, *command]


def _libc() -> ctypes.CDLL:
    return ctypes.CDLL("libc.so.6", use_errno=True)


def _setns(fd: int) -> None:
    if _libc().setns(fd, CLONE_NEWNET) != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"setns: {os.strerror(err)}")


def _ip(*args: str) -> None:
    proc = subprocess.run(["ip", *args], capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        raise UserError(
            f"cannot set up the emulated network (ip {' '.join(args)}): {proc.stderr.strip()}; "
            "tlsbench needs root and a kernel with network namespaces and TUN",
            exit_code=1,
        )


def _open_tun(name: str) -> int:
    fd = os.open("/dev/net/tun", os.O_RDWR | os.O_CLOEXEC)
    fcntl.ioctl(fd, TUNSETIFF, struct.pack("16sH", name.encode(), IFF_TUN | IFF_NO_PI))
    os.set_blocking(fd, False)
    return fd


def check_possible() -> str | None:
    """Why an emulated network cannot be made here, or None."""
    if os.geteuid() != 0:
        return "an emulated network (rtt_ms, loss) needs root: network namespaces and TUN"
    if not Path("/dev/net/tun").exists():
        return "an emulated network needs /dev/net/tun (the kernel's TUN driver)"
    return None


def _relay(fds: tuple[int, int], link: Link, net: Network, stop: threading.Event) -> None:
    """Moves packets between the two TUN devices, each held rtt/2 and dropped with `loss`."""
    delay = link.rtt_ms / 2000.0
    due: list[tuple[float, int, int, bytes]] = []  # (release time, order, to fd, packet)
    order = 0
    rng = random.Random()
    while not stop.is_set():
        timeout = 0.05
        if due:
            timeout = max(0.0, min(timeout, due[0][0] - time.monotonic()))
        readable, _, _ = select.select(list(fds), [], [], timeout)
        now = time.monotonic()
        for fd in readable:
            while True:
                try:
                    packet = os.read(fd, MTU + 64)
                except BlockingIOError:
                    break
                if not packet:
                    break
                if rng.random() < link.loss or len(due) >= QUEUE_LIMIT:
                    net.dropped += 1
                    continue
                other = fds[1] if fd == fds[0] else fds[0]
                heapq.heappush(due, (now + delay, order, other, packet))
                order += 1
        now = time.monotonic()
        while due and due[0][0] <= now:
            _, _, to, packet = heapq.heappop(due)
            try:
                os.write(to, packet)
                net.relayed += 1
            except OSError:
                net.dropped += 1


NAMESPACE_PREFIX = "tlsbench-"
# Numbers the networks of this process: several can exist at once (parallel.py).
_NETWORKS = itertools.count(1)


def remove_stale() -> list[str]:
    """Removes the namespaces of runners that are gone (killed with SIGKILL, so that their
    clean-up never ran): the runner's process id is in each name. Returns what it removed."""
    listed = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True,
                            check=False).stdout  # fmt: skip
    removed = []
    for line in listed.splitlines():
        name = line.split()[0] if line.split() else ""
        parts = name.split("-")
        if not name.startswith(NAMESPACE_PREFIX) or len(parts) < 4 or not parts[2].isdigit():
            continue
        if Path(f"/proc/{parts[2]}").exists():
            continue  # its runner still runs (possibly a concurrent run)
        subprocess.run(["ip", "netns", "delete", name], capture_output=True, check=False)
        removed.append(name)
    return removed


@contextmanager
def emulated(link: Link) -> Iterator[Network]:
    """Two namespaces joined by the delay line, removed on exit whatever happens (and those
    a killed runner left behind, before new ones are made)."""
    reason = check_possible()
    if reason:
        raise UserError(reason, exit_code=1)
    remove_stale()
    tag = f"{os.getpid()}-{next(_NETWORKS)}"  # unique among this runner's networks at once
    net = Network(f"{NAMESPACE_PREFIX}c-{tag}", f"{NAMESPACE_PREFIX}s-{tag}", link)
    made: list[str] = []
    fds: list[int] = []
    stop = threading.Event()
    thread = None
    root = os.open("/proc/self/ns/net", os.O_RDONLY | os.O_CLOEXEC)
    try:
        for ns in (net.client_ns, net.server_ns):
            _ip("netns", "add", ns)
            made.append(ns)
        # A TUN device is created in the namespace the creating thread is in; its file
        # descriptor keeps working from anywhere.
        for ns, dev in ((net.client_ns, "tbc"), (net.server_ns, "tbs")):
            ns_fd = os.open(f"/run/netns/{ns}", os.O_RDONLY | os.O_CLOEXEC)
            try:
                _setns(ns_fd)
                fds.append(_open_tun(dev))
            finally:
                _setns(root)
                os.close(ns_fd)
        for ns, dev, here, there in (
            (net.client_ns, "tbc", CLIENT_ADDRESS, SERVER_ADDRESS),
            (net.server_ns, "tbs", SERVER_ADDRESS, CLIENT_ADDRESS),
        ):
            _ip("-n", ns, "link", "set", "lo", "up")
            _ip("-n", ns, "addr", "add", here, "peer", there, "dev", dev)
            _ip("-n", ns, "link", "set", dev, "mtu", str(MTU), "up")
        thread = threading.Thread(
            target=_relay, args=((fds[0], fds[1]), link, net, stop), daemon=True
        )
        thread.start()
        yield net
    finally:
        stop.set()
        if thread is not None:
            thread.join()
        for fd in fds:
            os.close(fd)
        os.close(root)
        for ns in made:
            subprocess.run(["ip", "netns", "delete", ns], capture_output=True, check=False)
