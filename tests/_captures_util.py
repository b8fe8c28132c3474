"""Capture files shaped like the real ones other tools write, and tshark as a reference
reader, for the real-capture tests."""

from __future__ import annotations

import shutil
import struct
import subprocess

from _foundation_util import Ng, Rec, classic

#: The frame size of the oversized record seen in a real file: an IPv4 packet of 65,535
#: bytes behind a 14-byte Ethernet header, in a file whose snaplen is 65535.
BIG_FRAME = 14 + 65535
OVERSIZED_AT = 57
PACKETS = 245


def tcp_frame(i: int, size: int) -> bytes:
    """An Ethernet/IPv4/TCP frame of ``size`` bytes (IPv4 total length ``size - 14``)."""
    eth = bytes.fromhex("101112131415202122232425") + b"\x08\x00"
    ip = struct.pack("!BBHHHBBH4s4s", 0x45, 0, size - 14, i & 0xFFFF, 0x4000, 64, 6, 0,
                     bytes([10, 0, 0, 1]), bytes([10, 0, 0, 2]))
    tcp = struct.pack("!HHIIHHHH", 40000, 5201, i, 0, 0x5010, 65535, 0, 0)
    return (eth + ip + tcp).ljust(size, bytes([i & 0xFF]))


def oversized_records() -> list[Rec]:
    """245 packets; packet 57 (0-based) has caplen = len = 65549."""
    return [
        Rec(1_700_000_000_000_000_000 + i * 1000, tcp_frame(i, BIG_FRAME if i == OVERSIZED_AT else 100 + i))
        for i in range(PACKETS)
    ]


def oversized_pcap() -> bytes:
    return classic(oversized_records(), snaplen=65535)


def oversized_pcapng() -> bytes:
    ng = Ng().shb().idb(1, snaplen=65535)
    for r in oversized_records():
        ng.epb(0, r.ts_ns // 1000, r.data)
    return ng.bytes()


def tshark() -> str | None:
    return shutil.which("tshark")


def tshark_fields(path: str, *fields: str, extra: tuple[str, ...] = ()) -> list[list[str]]:
    """One row per frame tshark reads from ``path``: the ``-e`` fields, tab-separated
    (several values of one field joined by ``,``)."""
    cmd = ["tshark", "-n", "-r", path, "-T", "fields", "-E", "occurrence=a", "-E", "aggregator=,"]
    cmd += list(extra)
    for f in fields:
        cmd += ["-e", f]
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=120, check=True)
    return [line.split("\t") for line in out.stdout.splitlines()]
