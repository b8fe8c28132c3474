"""Truncation is data: at every cut the map keeps the earlier layers and names the cut."""

from __future__ import annotations

import re

import pytest
from _decoder_util import arp, eth, ext, frag6, icmp, ipv4, ipv6, tag, tcp, udp, vlan

import paclo

MSG = re.compile(r"truncated (.+) header: need (\d+) bytes, have (\d+) at offset (\d+)")

# (name, linktype, frame, [(layer name, start, end)]): every cut inside [start, end) must be
# reported as that layer, with have = cut - start and need in (have, end - start].
CASES = [
    ("eth-ipv4-tcp", "ethernet",
     eth(0x0800, ipv4(6, tcp(1, 2, 0x10, options=b"\x01\x01\x01\x00"), options=b"\x01\x01\x01\x00")),
     [("Ethernet", 0, 14), ("IPv4", 14, 38), ("TCP", 38, 62)], ["ipv4", "tcp"]),
    ("eth-ipv4-udp", "ethernet", eth(0x0800, ipv4(17, udp(1, 2, b""))),
     [("Ethernet", 0, 14), ("IPv4", 14, 34), ("UDP", 34, 42)], ["ipv4", "udp"]),
    ("eth-ipv4-icmp", "ethernet", eth(0x0800, ipv4(1, icmp(8, 0, b""))),
     [("Ethernet", 0, 14), ("IPv4", 14, 34), ("ICMPv4", 34, 38)], ["ipv4", "icmpv4"]),
    ("qinq-ipv6-chain-icmp6", "ethernet",
     vlan(0x88A8, 0, 0, 5, 0x8100, tag(0, 0, 6, 0x86DD)
          + ipv6(60, ext(43, b"\x01\x00") + ext(44, bytes(14)) + frag6(58, 0, True) + icmp(128, 0, b""))),
     [("Ethernet", 0, 14), ("VLAN", 14, 18), ("VLAN", 18, 22), ("IPv6", 22, 62),
      ("IPv6 destination options", 62, 70), ("IPv6 routing", 70, 86), ("IPv6 fragment", 86, 94),
      ("ICMPv6", 94, 98)], ["ipv6", "icmpv6"]),
    ("arp", "ethernet", eth(0x0806, arp(1, bytes(6), bytes(4), bytes(6), bytes(4))),
     [("Ethernet", 0, 14), ("ARP", 14, 42)], ["arp", None]),
    ("sll-ipv4-udp", "linux_sll",
     bytes.fromhex("0004000100060102030405060000") + b"\x08\x00" + ipv4(17, udp(1, 2, b"")),
     [("Linux SLL", 0, 16), ("IPv4", 16, 36), ("UDP", 36, 44)], ["ipv4", "udp"]),
    ("sll2-ipv6-udp", "linux_sll2",
     b"\x86\xdd\x00\x00" + bytes.fromhex("00000003000100060102030405060000") + ipv6(17, udp(1, 2, b"")),
     [("Linux SLL2", 0, 20), ("IPv6", 20, 60), ("UDP", 60, 68)], ["ipv6", "udp"]),
    ("null-ipv4-tcp", "null", b"\x02\x00\x00\x00" + ipv4(6, tcp(1, 2, 0x02)),
     [("loopback", 0, 4), ("IPv4", 4, 24), ("TCP", 24, 44)], ["ipv4", "tcp"]),
    ("loop-ipv4-udp", "loop", b"\x00\x00\x00\x02" + ipv4(17, udp(1, 2, b"")),
     [("loopback", 0, 4), ("IPv4", 4, 24), ("UDP", 24, 32)], ["ipv4", "udp"]),
    ("raw-ipv6-udp", "raw", ipv6(17, udp(1, 2, b"")),
     [("IP", 0, 1), ("IPv6", 0, 40), ("UDP", 40, 48)], ["ipv6", "udp"]),
]


@pytest.mark.parametrize("name,linktype,frame,layers,types", CASES, ids=[c[0] for c in CASES])
def test_every_cut(name, linktype, frame, layers, types):
    full = paclo.decode(frame, linktype=linktype)
    assert "decode_error" not in full
    assert full["decoded"]["l3"]["type"] == types[0]
    if types[1]:
        assert full["decoded"]["l3"]["l4"]["type"] == types[1]
    for cut in range(len(frame)):
        m = paclo.decode(frame[:cut], linktype=linktype)
        assert m["caplen"] == cut and m["data"] == frame[:cut]
        layer, start, end = next((name, s, e) for name, s, e in layers if s <= cut < e)
        match = MSG.fullmatch(m["decode_error"])
        assert match, m["decode_error"]
        got_layer, need, have, offset = match.group(1), *map(int, match.group(2, 3, 4))
        assert (got_layer, offset, have) == (layer, start, cut - start), (cut, m["decode_error"])
        assert have < need <= end - start
        # Earlier layers are kept.
        if start == 0:
            assert "decoded" not in m or m["decoded"]["l3"]["type"] == "unknown_l3"
            continue
        dec = m["decoded"]
        assert dec["type"] == linktype
        l3 = dec["l3"]
        if layer in ("VLAN", "IPv4", "IPv6", "ARP"):
            assert l3["type"] == ("arp" if layer == "ARP" else "unknown_l3")
        else:
            assert l3["type"] == types[0]
            assert l3["l4"]["type"] == "unknown_l4" and l3["l4"]["reason"] == "truncated"
            assert l3["l4"]["data_len"] == len(l3["l4"]["payload"])


def test_cut_ethernet_header_has_no_decoded():
    m = paclo.decode(b"\x01\x02\x03")
    assert m["decode_error"] == "truncated Ethernet header: need 14 bytes, have 3 at offset 0"
    assert "decoded" not in m


def test_truncated_arp_is_bare_arp():
    m = paclo.decode(eth(0x0806, arp(1, bytes(6), bytes(4), bytes(6), bytes(4))[:20]))
    assert m["decoded"]["l3"] == {"type": "arp"}
    assert m["decode_error"] == "truncated ARP header: need 28 bytes, have 20 at offset 14"


def test_truncated_udp_keeps_ip_and_flow_key_without_ports():
    m = paclo.decode(eth(0x0800, ipv4(17, udp(1, 2, b"")))[:37])
    l3 = m["decoded"]["l3"]
    assert l3["l4"] == {"type": "unknown_l4", "proto": 17, "reason": "truncated", "data_len": 3,
                        "payload": bytes([0, 1, 0])}
    assert l3["flow_key"]["src_port"] is None and l3["flow_key"]["proto"] == "udp"
    assert m["decode_error"] == "truncated UDP header: need 8 bytes, have 3 at offset 34"


def test_invalid_headers_are_named():
    bad_ihl = eth(0x0800, b"\x43" + bytes(30))
    m = paclo.decode(bad_ihl)
    assert m["decode_error"] == "invalid IPv4 header: IHL 3 (below 5) at offset 14"
    assert m["decoded"]["l3"] == {"type": "unknown_l3", "eth": 0x0800}
    bad_version = eth(0x0800, b"\x55" + bytes(30))
    assert paclo.decode(bad_version)["decode_error"] == "invalid IPv4 header: IP version 5 at offset 14"
    # The version nibble picks the header: an IPv6 nibble under 0x0800 is read as IPv6.
    assert paclo.decode(eth(0x0800, b"\x65" + bytes(30)))["decode_error"] == \
        "truncated IPv6 header: need 40 bytes, have 31 at offset 14"
    bad_doff = eth(0x0800, ipv4(6, bytes(12) + b"\x30" + bytes(7)))
    m = paclo.decode(bad_doff)
    assert m["decode_error"] == "invalid TCP header: data offset 3 (below 5) at offset 34"
    assert m["decoded"]["l3"]["l4"]["reason"] == "truncated"


def test_too_many_vlan_tags():
    inner = b"".join(tag(0, 0, i, 0x8100) for i in range(2)) + tag(0, 0, 9, 0x0800)
    m = paclo.decode(vlan(0x8100, 0, 0, 1, 0x8100, inner) + bytes(20))
    assert [t["vid"] for t in m["decoded"]["vlan_tags"]] == [1, 0, 1]
    assert m["decode_error"] == "invalid VLAN header: more than 3 tags at offset 26"
    assert m["decoded"]["l3"] == {"type": "unknown_l3", "eth": 0x8100}
