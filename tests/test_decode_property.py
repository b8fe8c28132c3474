"""Property: arbitrary bytes under every link type never raise, and the map stays well formed."""

from __future__ import annotations

import re

from _decoder_util import client_hello, dns, dns_name, eth, ext, frag6, ipv4, ipv6, tcp, udp
from hypothesis import given, settings
from hypothesis import strategies as st

import paclo

LINKTYPES = ["ethernet", "raw", "linux_sll", "linux_sll2", "null", "loop", 12, 14, 147]
ERROR = re.compile(r"(truncated .+ header: need \d+ bytes, have \d+ at offset \d+"
                   r"|invalid .+ header: .+ at offset \d+|unsupported link type \d+)")
SEEDS = [
    eth(0x0800, ipv4(17, udp(1, 53, dns(1, 0x0100, [(dns_name("example.com"), 1, 1)])))),
    eth(0x0800, ipv4(6, tcp(1, 443, 0x18, client_hello("example.org", ["h2"])))),
    eth(0x86DD, ipv6(0, ext(60, b"\x01\x00") + ext(44, b"\x00\x00") + frag6(17, 0, True) + udp(1, 2, b"x"))),
]


def check(m: dict, data: bytes) -> None:
    assert m["data"] == data and m["caplen"] == len(data)
    assert "decoded" in m or "decode_error" in m
    if "decode_error" in m:
        assert ERROR.fullmatch(m["decode_error"]), m["decode_error"]
    if "decoded" in m:
        l3 = m["decoded"]["l3"]
        l4 = l3.get("l4")
        if l4 is not None:
            assert l4["data_len"] == len(l4["payload"])
            key = l3["flow_key"]
            if l4["type"] in ("tcp", "udp"):
                assert (key["proto"], key["src_port"], key["dst_port"]) == \
                    (l4["type"], l4["src_port"], l4["dst_port"])
            elif key is not None and "src_port" in key:
                assert key["src_port"] is None and key["dst_port"] is None
        if l3["type"] == "ipv6":
            assert (l3["next_header"] is None) == (l3["flow_key"] is None)


@settings(max_examples=400, deadline=None)
@given(data=st.binary(max_size=200), linktype=st.sampled_from(LINKTYPES))
def test_arbitrary_bytes_never_raise(data, linktype):
    check(paclo.decode(data, linktype=linktype), data)


@settings(max_examples=400, deadline=None)
@given(seed=st.sampled_from(SEEDS), flips=st.lists(st.tuples(st.integers(0, 200), st.integers(0, 255)),
                                                    max_size=6), cut=st.integers(0, 200))
def test_mutated_frames_never_raise(seed, flips, cut):
    b = bytearray(seed)
    for pos, val in flips:
        if pos < len(b):
            b[pos] = val
    data = bytes(b[:cut])
    check(paclo.decode(data), data)
