"""A small, deterministic capture to try paclo on: office-like traffic between IPv4 and IPv6
clients and a few servers (HTTPS, DNS, mail, NTP, ping, ARP), with one large transfer in
the middle.

    import paclo.demo
    paclo.demo.write_demo_capture("demo.pcap")          # 20,000 packets over 60 seconds

The notebooks and docs/quickstart.md use it so that every example runs on data it made.
Frames are Ethernet, with IPv4/IPv6 headers, TCP/UDP/ICMP headers and zero payloads;
checksums are left 0 (paclo does not verify them).
"""

from __future__ import annotations

import ipaddress
import os
import random
import struct
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = ["write_demo_capture"]

T0_NS = 1_767_268_800 * 10**9  # 2026-01-01 12:00:00 UTC

MAC_CLIENT = bytes.fromhex("02000000aa01")
MAC_ROUTER = bytes.fromhex("02000000bb01")

SYN, ACK, PSH, FIN = 0x02, 0x10, 0x08, 0x01


@dataclass(frozen=True)
class _Service:
    address: str
    protocol: int  # 6 tcp, 17 udp, 1/58 icmp
    port: int
    weight: float  # share of sessions
    reply_bytes: tuple[int, int]  # bytes a session returns: (typical, heavy-tail maximum)


SERVICES = (
    _Service("192.0.2.10", 6, 443, 0.30, (20_000, 2_000_000)),
    _Service("2001:db8:ffff::443", 6, 443, 0.12, (20_000, 1_000_000)),
    _Service("198.51.100.53", 17, 53, 0.35, (120, 400)),
    _Service("2001:db8:ffff::53", 17, 53, 0.08, (120, 400)),
    _Service("203.0.113.25", 6, 25, 0.05, (2_000, 50_000)),
    _Service("192.0.2.123", 17, 123, 0.05, (48, 48)),
    _Service("192.0.2.1", 1, 0, 0.05, (64, 64)),
)
BACKUP_CLIENT = "10.1.0.99"
BACKUP_SERVER = "203.0.113.200"


def _ip_header(src: str, dst: str, protocol: int, payload_len: int) -> tuple[int, bytes]:
    a, b = ipaddress.ip_address(src), ipaddress.ip_address(dst)
    if a.version == 4:
        return 0x0800, struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + payload_len, 0, 0x4000, 64, protocol, 0,
                                   a.packed, b.packed)
    nxt = 58 if protocol == 1 else protocol
    return 0x86DD, struct.pack("!IHBB16s16s", 0x60000000, payload_len, nxt, 64, a.packed, b.packed)


NAMES = ("example.com", "www.example.org", "mail.example.net", "intranet.example", "updates.example.com",
         "cdn.example.org", "time.example.net")


def _dns(ident: int, name: str, response: bool) -> bytes:
    """A DNS query for ``name`` (type A, class IN), or its answer (one A record)."""
    qname = b"".join(bytes([len(label)]) + label.encode() for label in name.split(".")) + b"\x00"
    question = qname + struct.pack("!HH", 1, 1)
    if not response:
        return struct.pack("!HHHHHH", ident, 0x0100, 1, 0, 0, 0) + question
    answer = struct.pack("!HHHIH4s", 0xC00C, 1, 1, 300, 4, bytes([192, 0, 2, 80 + ident % 100]))
    return struct.pack("!HHHHHH", ident, 0x8180, 1, 1, 0, 0) + question + answer


def _frame(src: str, dst: str, protocol: int, sport: int, dport: int, *, flags: int = 0, data: int = 0,
           outbound: bool = True, payload: bytes | None = None) -> bytes:
    body = bytes(data) if payload is None else payload
    if protocol == 6:
        l4 = struct.pack("!HHIIBBHHH", sport, dport, 1, 1, 5 << 4, flags, 65535, 0, 0) + body
    elif protocol == 17:
        l4 = struct.pack("!HHHH", sport, dport, 8 + len(body), 0) + body
    else:
        version = ipaddress.ip_address(src).version
        kind = (8 if outbound else 0) if version == 4 else (128 if outbound else 129)
        l4 = struct.pack("!BBHHH", kind, 0, 0, sport, dport) + bytes(data)
    ethertype, ip = _ip_header(src, dst, protocol, len(l4))
    macs = MAC_ROUTER + MAC_CLIENT if outbound else MAC_CLIENT + MAC_ROUTER
    return macs + struct.pack("!H", ethertype) + ip + l4


def _arp(i: int) -> bytes:
    sender = bytes([10, 1, 0, 10 + i % 30])
    return (b"\xff" * 6 + MAC_CLIENT + b"\x08\x06" + bytes.fromhex("0001080006040001") + MAC_CLIENT + sender
            + bytes(6) + bytes([10, 1, 0, 1]))


def _session(rng: random.Random, start_ns: int, client: str, service: _Service, sport: int) -> list[tuple[int, bytes]]:
    """The packets of one session, (ts_ns, frame), starting at ``start_ns``."""
    out: list[tuple[int, bytes]] = []
    t = start_ns
    rtt = int(rng.uniform(2, 40) * 1e6)
    server, proto, dport = service.address, service.protocol, service.port

    def send(outbound: bool, **kw: Any) -> None:
        nonlocal t
        if outbound:
            out.append((t, _frame(client, server, proto, sport, dport, outbound=True, **kw)))
        else:
            out.append((t, _frame(server, client, proto, dport, sport, outbound=False, **kw)))
        t += int(rng.expovariate(1 / (rtt / 4))) + 1000

    typical, heavy = service.reply_bytes
    size = min(heavy, int(rng.paretovariate(1.2) * typical / 3)) if heavy > typical else typical
    if proto == 6:
        send(True, flags=SYN)
        send(False, flags=SYN | ACK)
        send(True, flags=ACK)
        send(True, flags=PSH | ACK, data=rng.randint(100, 600))
        left = size
        while left > 0:
            chunk = min(1448, left)
            send(False, flags=ACK | (PSH if chunk < 1448 else 0), data=chunk)
            left -= chunk
            if rng.random() < 0.5:
                send(True, flags=ACK)
        send(True, flags=FIN | ACK)
        send(False, flags=FIN | ACK)
        send(True, flags=ACK)
    elif proto == 17 and dport == 53:
        ident, name = rng.randrange(65536), rng.choice(NAMES)
        send(True, payload=_dns(ident, name, False))
        send(False, payload=_dns(ident, name, True))
    elif proto == 17:
        send(True, data=48)
        send(False, data=size)
    else:
        for _ in range(4):
            send(True, data=56)
            send(False, data=56)
    return out


def _clients() -> list[str]:
    v4 = [f"10.1.0.{i}" for i in range(10, 40)]
    v6 = [f"2001:db8:1::{i:x}" for i in range(0x10, 0x1a)]
    return v4 + v6


def write_demo_capture(path: str | os.PathLike[str], *, packets: int = 20_000, seconds: float = 60.0,
                       seed: int = 1) -> Path:
    """Write about ``packets`` packets (exactly that many, cut at the end) of demo traffic
    spread over ``seconds`` to a classic pcap file at ``path``; the same arguments always
    give the same file. Returns the path."""
    from . import PcapWriter

    if isinstance(packets, bool) or not isinstance(packets, int) or packets < 1:
        raise ValueError(f"packets must be a positive integer, not {packets!r}")
    if not isinstance(seconds, (int, float)) or seconds <= 0:
        raise ValueError(f"seconds must be a positive number, not {seconds!r}")
    rng = random.Random(seed)
    clients = _clients()
    span = int(seconds * 1e9)
    frames: list[tuple[int, bytes]] = []
    # A large transfer in the middle third: one client backs up to one server.
    backup = _Service(BACKUP_SERVER, 6, 873, 0.0, (1, 1))
    t = T0_NS + span // 3
    sport = 40_000
    frames += [(t, _frame(BACKUP_CLIENT, backup.address, 6, sport, 873, flags=SYN))]
    budget = packets // 5
    for i in range(budget):
        ts = t + (i + 1) * (span // 3) // budget
        frames.append((ts, _frame(BACKUP_CLIENT, backup.address, 6, sport, 873, flags=ACK | PSH, data=1400)))
    weights = [s.weight for s in SERVICES]
    n_arp = 0
    while len(frames) < packets:
        start = T0_NS + int(rng.random() * span)
        if rng.random() < 0.01:
            frames.append((start, _arp(n_arp)))
            n_arp += 1
            continue
        service = rng.choices(SERVICES, weights)[0]
        v6 = ipaddress.ip_address(service.address).version == 6
        pool = [c for c in clients if (":" in c) == v6]
        end = T0_NS + span
        frames += [f for f in _session(rng, start, rng.choice(pool), service, rng.randint(32768, 60999)) if f[0] < end]
    frames.sort(key=lambda f: f[0])
    frames = frames[:packets]
    out = Path(os.fspath(path))
    with PcapWriter(out) as writer:
        for ts, data in frames:
            writer.write(data, ts_ns=ts)
    return out
