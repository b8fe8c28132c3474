"""The per-flow fingerprint columns of `paclo.flows(..., features="fingerprints")` against
`paclo.fingerprints()` on the same capture: each flow holds the first value its connection
gets of each method (built frames here; real handshakes in test_fingerprints_crosscheck)."""

from __future__ import annotations

import struct
from pathlib import Path

from _decoder_util import client_hello, dns, dns_name, eth, ipv4, tcp, udp, write_pcap
from _fingerprint_traffic import FLOW_COLUMNS, first_values_by_connection, flow_columns_by_connection

SERVER = bytes([10, 0, 1, 1])
SYN_OPTIONS = bytes([2, 4, 5, 0xB4, 4, 2, 8, 10, 0, 0, 0, 1, 0, 0, 0, 0, 1, 3, 3, 7])


def server_hello(cipher: int) -> bytes:
    """A TLS 1.2 ServerHello record with renegotiation_info and extended_master_secret."""
    exts = bytes([0xFF, 0x01, 0, 1, 0, 0x00, 0x17, 0, 0])
    body = b"\x03\x03" + bytes(32) + b"\x00" + struct.pack("!HB", cipher, 0) + struct.pack("!H", len(exts)) + exts
    hs = b"\x02" + len(body).to_bytes(3, "big") + body
    return b"\x16\x03\x03" + struct.pack("!H", len(hs)) + hs


def connection(n: int, dport: int, client_data: bytes, server_data: bytes) -> list[bytes]:
    """A TCP connection from 10.0.0.n: handshake, one client and one server segment, an ACK."""
    client = bytes([10, 0, 0, n])
    sport = 40000 + n
    c_isn, s_isn = 1000 * n, 7000 * n

    def c(flags: int, payload: bytes = b"", *, seq: int, ack: int, options: bytes = b"") -> bytes:
        seg = tcp(sport, dport, flags, payload, seq=seq, ack=ack, options=options, window=64240)
        return eth(0x0800, ipv4(6, seg, src=client, dst=SERVER, ttl=64))

    def s(flags: int, payload: bytes = b"", *, seq: int, ack: int, options: bytes = b"") -> bytes:
        seg = tcp(dport, sport, flags, payload, seq=seq, ack=ack, options=options, window=65160)
        return eth(0x0800, ipv4(6, seg, src=SERVER, dst=client, ttl=60))

    return [
        c(0x02, seq=c_isn, ack=0, options=SYN_OPTIONS),
        s(0x12, seq=s_isn, ack=c_isn + 1, options=SYN_OPTIONS),
        c(0x10, seq=c_isn + 1, ack=s_isn + 1),
        c(0x18, client_data, seq=c_isn + 1, ack=s_isn + 1),
        s(0x18, server_data, seq=s_isn + 1, ack=c_isn + 1 + len(client_data)),
        c(0x10, seq=c_isn + 1 + len(client_data), ack=s_isn + 1 + len(server_data)),
    ]


def interleave(conns: list[list[bytes]]) -> list[bytes]:
    out = []
    for i in range(max(len(c) for c in conns)):
        out.extend(c[i] for c in conns if i < len(c))
    return out


def test_flow_columns_equal_fingerprints_per_connection(tmp_path: Path) -> None:
    http = b"GET /a HTTP/1.1\r\nHost: example.org\r\nUser-Agent: t\r\nCookie: a=1; b=2\r\n\r\n"
    conns = [
        connection(1, 443, client_hello("example.org", ["h2"]), server_hello(0xC02F)),
        connection(2, 443, client_hello(None, ["http/1.1"]), server_hello(0x1301)),
        connection(3, 80, http, b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n"),
        connection(4, 5000, b"\x00" * 40, b"\x01" * 40),
    ]
    frames = interleave(conns)
    query = dns(7, 0x0100, [(dns_name("example.org"), 1, 1)])
    frames += [eth(0x0800, ipv4(17, udp(53000, 53, query), dst=SERVER)) for _ in range(3)]
    p = tmp_path / "flows.pcap"
    write_pcap(p, frames)
    want = first_values_by_connection(p)
    got = flow_columns_by_connection(p)
    assert got == want
    # Every connection has its handshake's columns; TLS and HTTP their own; DNS nothing.
    assert len(got) == 4
    assert {m for cells in got.values() for m in cells} == set(FLOW_COLUMNS) - {"ja4ssh", "ja4x"}
    assert sorted(len(cells) for cells in got.values()) == [4, 5, 6, 6]
