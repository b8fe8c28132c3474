"""Packet maps share ints below 65,536 and the text of recent addresses between packets:
every value still equals what the packet holds, whatever was decoded before it."""

from __future__ import annotations

import ipaddress
import random

from _decoder_util import eth, ipv4, ipv6, tcp, udp

import paclo


def _mac(b: bytes) -> str:
    return ":".join(f"{x:02x}" for x in b)


def _v6_full(b: bytes) -> str:
    # Every group, without leading zeros and without `::`.
    return ":".join(f"{int.from_bytes(b[i:i + 2], 'big'):x}" for i in range(0, 16, 2))


def _v6(rnd: random.Random) -> bytes:
    # Random groups, about a third of them zero, so compact forms have runs to shorten.
    return b"".join(bytes(2) if rnd.random() < 0.35 else rnd.randbytes(2) for _ in range(8))


def test_addresses_stay_right_when_many_share_the_tables():
    # More distinct addresses than the tables have slots, revisited in a shuffled order, so
    # slots are replaced and earlier addresses come back after being evicted.
    rnd = random.Random(17)
    hosts = [(rnd.randbytes(4), _v6(rnd), rnd.randbytes(6)) for _ in range(1500)]
    order = list(range(len(hosts))) * 3
    rnd.shuffle(order)
    for n, i in enumerate(order):
        v4, v6, mac = hosts[i]
        o4, o6, omac = hosts[order[n - 1]]
        m4 = paclo.decode(eth(0x0800, ipv4(17, udp(1, 2, b""), src=v4, dst=o4), src=mac, dst=omac))
        d = m4["decoded"]
        assert (d["src"], d["dst"]) == (_mac(mac), _mac(omac))
        l3 = d["l3"]
        assert (l3["src"], l3["dst"]) == (str(ipaddress.IPv4Address(v4)), str(ipaddress.IPv4Address(o4)))
        assert (l3["flow_key"]["src_ip"], l3["flow_key"]["dst_ip"]) == (l3["src"], l3["dst"])
        m6 = paclo.decode(eth(0x86DD, ipv6(17, udp(1, 2, b""), src=v6, dst=o6)))["decoded"]["l3"]
        a, b = ipaddress.IPv6Address(v6), ipaddress.IPv6Address(o6)
        assert (m6["src"], m6["dst"]) == (_v6_full(v6), _v6_full(o6))
        assert (m6["src_compact"], m6["dst_compact"]) == (a.compressed, b.compressed)


def test_ints_on_both_sides_of_the_shared_range():
    for v in (0, 1, 255, 256, 257, 65534, 65535):
        l4 = paclo.decode(eth(0x0800, ipv4(6, tcp(v, 65535 - v, 0x10, seq=v, ack=v + 1, window=v,
                                                  checksum=v, urgent=v))))["decoded"]["l3"]["l4"]
        assert (l4["src_port"], l4["dst_port"], l4["window"], l4["checksum"], l4["urgent_pointer"]) == \
            (v, 65535 - v, v, v, v)
        assert (l4["seq"], l4["ack"]) == (v, v + 1)
        assert all(type(l4[k]) is int for k in ("src_port", "seq", "ack", "window"))
    for v in (65536, 65537, 2**31, 2**32 - 1):
        l4 = paclo.decode(eth(0x0800, ipv4(6, tcp(1, 2, 0x10, seq=v, ack=v - 1))))["decoded"]["l3"]["l4"]
        assert (l4["seq"], l4["ack"]) == (v, v - 1)
    # A value read again after many others is the same number.
    ids = [paclo.decode(eth(0x0800, ipv4(17, udp(1, 2, b""), ident=i)))["decoded"]["l3"]["id"]
           for i in range(0, 65536, 7)]
    assert ids == list(range(0, 65536, 7))


def test_tcp_flags_text_of_every_flags_byte():
    letters = "CEUAPRSF"
    for byte in range(256):
        l4 = paclo.decode(eth(0x0800, ipv4(6, tcp(1, 2, byte))))["decoded"]["l3"]["l4"]
        assert l4["flags_str"] == "".join(c for i, c in enumerate(letters) if byte & (0x80 >> i)), byte
