"""Helpers for the live-capture tests: capture permission, loopback traffic, resource counts.

All traffic goes to 127.0.0.1, bounded in count and time.
"""

from __future__ import annotations

import os
import socket
import struct
import threading
import time
from typing import Self

import pytest

import paclo

LO = "lo"
ETH_IP_UDP = 14 + 20 + 8  # loopback frames are DLT_EN10MB on Linux


def _capture_permitted() -> tuple[bool, str]:
    try:
        with paclo.capture(LO, filter="udp port 9", idle_timeout=0.01):
            pass
    except PermissionError as e:
        return False, str(e)
    return True, ""


_PERMITTED, _WHY = _capture_permitted()

# Skip only when opening the device is genuinely not permitted (found by trying).
live = pytest.mark.skipif(not _PERMITTED, reason=f"live capture not permitted here: {_WHY}")


class Receiver:
    """A bound UDP socket on 127.0.0.1 whose port the capture filters on (so the kernel
    never answers with ICMP port-unreachable)."""

    def __init__(self) -> None:
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1 << 22)
        self.sock.bind(("127.0.0.1", 0))
        self.port = self.sock.getsockname()[1]
        self.filter = f"udp dst port {self.port}"

    def close(self) -> None:
        self.sock.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def payload(i: int, size: int = 16) -> bytes:
    head = b"paclo%08d" % i
    return head + b"." * max(0, size - len(head))


def send(port: int, n: int, *, size: int = 16, pace_every: int = 0, pace_s: float = 0.0, deadline_s: float = 10.0) -> int:
    """Send exactly ``n`` datagrams (payload(i)) to 127.0.0.1:port; returns the count sent."""
    tx = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    end = time.monotonic() + deadline_s
    sent = 0
    try:
        for i in range(n):
            if time.monotonic() > end:
                break
            tx.sendto(payload(i, size), ("127.0.0.1", port))
            sent += 1
            if pace_every and (i + 1) % pace_every == 0:
                time.sleep(pace_s)
    finally:
        tx.close()
    return sent


def send_async(port: int, n: int, **kw: object) -> tuple[threading.Thread, list[int]]:
    out: list[int] = []

    def run() -> None:
        out.append(send(port, n, **kw))  # type: ignore[arg-type]

    t = threading.Thread(target=run, daemon=True)
    t.start()
    return t, out


def udp_payload(pkt: paclo.Packet) -> bytes:
    return bytes(pkt.data)[ETH_IP_UDP:]


def thread_ids() -> set[int]:
    """The ids of this process's threads now."""
    return {int(t) for t in os.listdir("/proc/self/task")}


def new_threads(before: set[int]) -> set[int]:
    """The threads running now that were not in ``before``. Compares ids, not counts, so a
    thread of another library's pool that ends meanwhile does not change the answer."""
    return thread_ids() - before


def fd_count() -> int:
    return len(os.listdir("/proc/self/fd"))


def rss_bytes() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def write_pcap(path: str, frames: list[bytes], *, linktype: int = 1) -> None:
    """A classic microsecond pcap file with the given frames (1 s apart)."""
    with open(path, "wb") as f:
        f.write(struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 65535, linktype))
        for i, fr in enumerate(frames):
            f.write(struct.pack("<IIII", 1_700_000_000 + i, 500, len(fr), len(fr)))
            f.write(fr)


def wait_until(cond, timeout: float = 5.0, step: float = 0.005) -> bool:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if cond():
            return True
        time.sleep(step)
    return cond()
