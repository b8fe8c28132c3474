"""Helpers of the scale-out tests: a set of small captures whose flows span files."""

from __future__ import annotations

import random
from pathlib import Path

import pyarrow as pa
from _flows_util import eth, icmp, ipv4, ipv6, tcp, udp

import paclo

SYN, ACK, FIN, PSH = 0x02, 0x10, 0x01, 0x08


def _frames(rng: random.Random, n_flows: int) -> list[bytes]:
    """One frame template per flow: UDP and TCP over IPv4 and IPv6, VLAN tags, ICMP
    (no ports) and ARP (no IP)."""
    out = []
    for i in range(n_flows):
        a, b = f"10.0.{i // 250}.{i % 250 + 1}", f"192.168.1.{rng.randrange(1, 9)}"
        kind = i % 6
        if kind == 0:
            out.append(eth(0x0800, ipv4(17, a, b, udp(10_000 + i, 53, rng.randrange(4, 60)))))
        elif kind == 1:
            out.append(eth(0x0800, ipv4(6, a, b, tcp(20_000 + i, 443, SYN, rng.randrange(0, 40)))))
        elif kind == 2:
            out.append(eth(0x86DD, ipv6(f"2001:db8::{i:x}", "2001:db8::1", 17, udp(30_000 + i, 123, 12))))
        elif kind == 3:
            out.append(eth(0x0800, ipv4(17, a, b, udp(40_000 + i, 514, 20)), tags=[(0x8100, 100 + i % 3)]))
        elif kind == 4:
            out.append(eth(0x0800, ipv4(1, a, b, icmp())))
        else:
            # The reply direction of a TCP flow, so bidirectional keys merge both ways.
            out.append(eth(0x0800, ipv4(6, b, a, tcp(443, 20_000 + i - 4, ACK, 8))))
    return out


def _with_flags(frame: bytes, flags: int) -> bytes:
    # Ethernet (14) + IPv4 (20) + TCP flags at byte 13 of the TCP header.
    return frame[:47] + bytes([flags]) + frame[48:]


def write_captures(directory: Path, files: int = 5, packets: int = 400, n_flows: int = 30, seed: int = 7) -> list[Path]:
    """``files`` captures of ``packets`` packets each, drawn from ``n_flows`` flows, with
    time running on across files (so most flows have packets in several files) and TCP
    flags that change from file to file (so the merged flag union needs every file)."""
    rng = random.Random(seed)
    frames = _frames(rng, n_flows)
    arp = eth(0x0806, bytes(28))
    directory.mkdir(parents=True, exist_ok=True)
    paths = []
    ts = 1_700_000_000_000_000_000
    for k in range(files):
        items = []
        for _ in range(packets):
            ts += rng.randrange(1_000, 2_000_000)
            if rng.random() < 0.02:
                items.append(paclo.Packet(arp, ts_ns=ts))
                continue
            f = frames[rng.randrange(n_flows)]
            if f[12:14] == b"\x08\x00" and f[23] == 6:
                f = _with_flags(f, rng.choice([SYN, ACK, ACK | PSH, FIN | ACK]) if k else SYN)
            items.append(paclo.Packet(f, ts_ns=ts))
        p = directory / f"part-{k:03d}.pcap"
        paclo.write_pcap(p, items, nanosecond=True)
        paths.append(p)
    return paths


def sort_flows(table: pa.Table) -> pa.Table:
    """Rows in flow-key order, for comparing tables whose row order differs."""
    key = ["ip_version", "protocol", "src_ip", "dst_ip", "src_port", "dst_port", "vlan_id"]
    return table.sort_by([(c, "ascending") for c in key])
