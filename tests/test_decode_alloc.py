"""Building packet maps asks the Rust allocator for nothing per packet (Python objects come
from CPython's own allocator)."""

from __future__ import annotations

from _decoder_util import (
    client_hello,
    dns,
    dns_name,
    eth,
    ext,
    frag6,
    icmp,
    ipv4,
    ipv6,
    tag,
    tcp,
    udp,
    vlan,
    write_pcap,
)

import paclo
from paclo import _paclo

FRAMES = [
    eth(0x0800, ipv4(17, udp(12000, 5300, bytes(22)))),
    eth(0x0800, ipv4(17, udp(1, 53, dns(1, 0x0100, [(dns_name("www.example.com"), 1, 1)])))),
    vlan(0x88A8, 1, 0, 5, 0x8100, tag(0, 0, 6, 0x86DD) + ipv6(0, ext(6, b"\x01\x00") + tcp(1, 2, 0x12))),
    eth(0x86DD, ipv6(44, frag6(17, 9, False) + b"frag")),
    eth(0x0800, ipv4(1, icmp(3, 3, bytes(28)))),
    eth(0x0800, ipv4(6, tcp(1, 2, 0x02)))[:40],
    eth(0x0800, ipv4(6, tcp(50000, 443, 0x18, client_hello("example.org", ["h2", "http/1.1"])))),
    eth(0x0800, ipv4(6, tcp(50000, 443, 0x18, client_hello(None, ["h2", "http/1.1"])))),
]


def _allocs_for(n: int) -> int:
    before = _paclo.native_alloc_counts()[0]
    for i in range(n):
        paclo.decode(FRAMES[i % len(FRAMES)])
    return _paclo.native_alloc_counts()[0] - before


def test_decode_allocates_nothing_native_per_packet():
    _allocs_for(200)  # warm up: interned keys, template dicts
    assert _allocs_for(600) == _allocs_for(6_000) == 0


def test_read_full_native_allocations_do_not_grow(tmp_path):
    small, large = tmp_path / "s.pcap", tmp_path / "l.pcap"
    write_pcap(small, FRAMES * 10)
    write_pcap(large, FRAMES * 1_000)

    def allocs(path):
        before = _paclo.native_alloc_counts()[0]
        for _ in paclo.read(str(path), decode="full"):
            pass
        return _paclo.native_alloc_counts()[0] - before

    allocs(small)
    assert allocs(large) == allocs(small)
