"""Helpers for the perf tests: an independent, spec-level writer of the perf datasets.

It follows the dataset definition (64-byte UDP, 512-byte TCP SYN, alternating, Ethernet
10:11:12:13:14:15 <- 20:21:22:23:24:25, 10.0.0.1 -> 10.0.0.2, ts 1700000000 s + index µs)
so the runner can be tested on its own, and so the native generator can be checked against it
(classic little-endian microsecond pcap, snaplen 65536, link type 1).
"""

from __future__ import annotations

import struct

CASES = ("udp-64", "tcp-512", "mixed")


def frame(size: int, traffic: str) -> bytes:
    eth = bytes.fromhex("101112131415") + bytes.fromhex("202122232425") + b"\x08\x00"
    proto = 6 if traffic == "tcp" else 17
    ip = struct.pack(
        "!BBHHHBBH4s4s", 0x45, 0, size - 14, 1, 0x4000, 64, proto, 0,
        bytes([10, 0, 0, 1]), bytes([10, 0, 0, 2]),
    )
    if traffic == "udp":
        l4 = struct.pack("!HHHH", 12000, 5300, size - 34, 0)
    else:
        l4 = struct.pack("!HHIIHHHH", 12000, 443, 1, 0, 0x5002, 65535, 0, 0)
    head = eth + ip + l4
    return head + bytes(size - len(head))


def _sizes(case: str, count: int):
    for i in range(count):
        if case == "udp-64":
            yield 64, "udp"
        elif case == "tcp-512":
            yield 512, "tcp"
        elif case == "mixed":
            yield (64, "udp") if i % 2 == 0 else (512, "tcp")
        else:
            raise ValueError(f"unknown case {case!r}")


def expected_bytes(case: str, count: int) -> int:
    return sum(size for size, _ in _sizes(case, count))


def expected_file_size(case: str, count: int) -> int:
    return 24 + 16 * count + expected_bytes(case, count)


def generate(case: str, count: int, path: str, *, progress=None) -> None:
    frames = {("udp"): frame(64, "udp"), ("tcp"): frame(512, "tcp")}
    with open(path, "wb") as f:
        f.write(struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 65536, 1))  # snaplen 65536, Ethernet
        for i, (size, traffic) in enumerate(_sizes(case, count)):
            data = frames[traffic]
            f.write(struct.pack("<IIII", 1700000000, i % 1_000_000, size, size))
            f.write(data)
    if progress is not None:
        progress.update(count, count)
        progress.close()


class SpecDatasets:
    """A stand-in for paclo.perf.datasets built on the functions above."""

    expected_bytes = staticmethod(expected_bytes)
    expected_file_size = staticmethod(expected_file_size)
    generate = staticmethod(generate)


def workers_of(pid: int) -> set[int]:
    """PIDs of the perf worker processes whose parent is `pid` (read from /proc)."""
    from pathlib import Path

    found = set()
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            cmdline = (entry / "cmdline").read_bytes()
        except OSError:
            continue
        ppid = int(stat.rsplit(")", 1)[1].split()[1])
        if ppid == pid and b"paclo.perf.worker" in cmdline:
            found.add(int(entry.name))
    return found


def second_step_started(proc, timeout_s: float = 600) -> set[int]:
    """Wait until the runner `proc` has started its second worker (so its first step has
    finished); return every worker PID seen. Fails the test if the runner ends first."""
    import time

    seen: set[int] = set()
    deadline = time.monotonic() + timeout_s
    while len(seen) < 2 and proc.poll() is None and time.monotonic() < deadline:
        seen |= workers_of(proc.pid)
        time.sleep(0.05)
    assert len(seen) >= 2, "the runner finished or stalled before its second step"
    return seen
